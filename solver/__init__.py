"""awele: exact solver and endgame tables for Awele (Oware, Abapa rules).

>>> from solver import Position, perft
>>> perft(Position.initial(), 3)
190
"""

from typing import TYPE_CHECKING, Any

from .errors import (
    AweleError,
    GameOverError,
    IllegalMoveError,
    InvalidPositionError,
    InvalidRecordError,
)
from .version import __version__

# Every class but the errors loads numba kernels (and the tables HDF5):
# imported on first use, so `import solver` and `awele --version` stay quick.
_LAZY = {"Game": "position", "Position": "position", "perft": "position", "Tablebase": "probe",
         "Searcher": "search", "SearchResult": "search", "LayerStore": "layers"}


if TYPE_CHECKING:  # what the lazy names are, for type checkers (nothing is imported at run time)
    from .layers import LayerStore
    from .position import Game, Position, perft
    from .probe import Tablebase
    from .search import Searcher, SearchResult


def __getattr__(name: str) -> Any:
    """The lazy names of _LAZY, imported from their module on first use."""
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
    "__version__",
    "perft",
]
