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
from .position import Game, Position, perft  # noqa: E402

__all__ = [
    "AweleError",
    "Game",
    "GameOverError",
    "IllegalMoveError",
    "InvalidPositionError",
    "InvalidRecordError",
    "Position",
    "perft",
    "__version__",
]
