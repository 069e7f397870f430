"""awele: exact solver and endgame tables for Awele (Oware, Abapa rules).

>>> from solver import Position, perft
>>> perft(Position.initial(), 3)
190
"""

__version__ = "0.1.0"

from .errors import (  # noqa: E402
    AweleError,
    GameOverError,
    IllegalMoveError,
    InvalidPositionError,
    InvalidRecordError,
)

# Every class but the errors loads numba kernels (and the tables HDF5):
# imported on first use, so `import solver` and `awele --version` stay quick.
_LAZY = {"Game": "position", "Position": "position", "perft": "position", "Tablebase": "probe",
         "Searcher": "search", "SearchResult": "search", "LayerStore": "layers"}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'solver' has no attribute {name!r}")


__all__ = [
    "AweleError",
    "Game",
    "GameOverError",
    "IllegalMoveError",
    "InvalidPositionError",
    "InvalidRecordError",
    "LayerStore",
    "Position",
    "SearchResult",
    "Searcher",
    "Tablebase",
    "perft",
    "__version__",
]
