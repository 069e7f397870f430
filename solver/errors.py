"""Named errors raised by the public API.

Every error a user can cause subclasses ValueError (bad input) or KeyError /
LookupError (missing data), so callers can catch them the natural way.
"""


class AweleError(Exception):
    """Base class of every error this package raises on purpose."""


class InvalidPositionError(AweleError, ValueError):
    """A position that breaks the rules: wrong number of houses, negative counts,
    more than 48 seeds, an unknown side to move, unparsable text."""


class IllegalMoveError(AweleError, ValueError):
    """A move that is not legal in the position it is played in."""


class GameOverError(IllegalMoveError):
    """A move was asked for in a position where the game has already ended."""


class InvalidRecordError(AweleError, ValueError):
    """A game record that cannot be read."""


class IllegalRecordMoveError(InvalidRecordError):
    """A record's move that is not legal where it is played: `number` (1 for
    the record's first move), `move` (its letter) and `reason` (why it is not
    legal) let each face word it its own way."""

    def __init__(self, number: int, move: str, reason: str) -> None:
        super().__init__(f"move {number} ({move}) of the record: {reason}")
        self.number, self.move, self.reason = number, move, reason


class TableError(AweleError):
    """Base class of the errors about endgame table files."""


class MissingTableError(TableError, KeyError):
    """A table (layer) that is needed has not been built."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "missing table"


class MissingDistanceError(MissingTableError):
    """A layer whose file has values but no distances to conversion (built
    with --no-distance, or before distances were written)."""


class CorruptTableError(TableError, OSError, ValueError):
    """A table file that is truncated, damaged or fails its checksum. An
    OSError (the file is bad, as python-chess reports it) whose message names
    the path, and a ValueError for callers that caught it as one before."""


class TableMismatchError(TableError, ValueError):
    """A table file built for other rules, another index or another format."""


class TablebaseClosedError(TableError, ValueError):
    """A probe of a Tablebase (or a chunk reader) that was closed, before the
    probe or while it ran (another thread closed it): like a read of a closed
    file, a ValueError."""


class TableWriteError(TableError, OSError):
    """A table file that cannot be written: the folder is missing, read-only or full."""


class BuildError(AweleError, RuntimeError):
    """A build that cannot run as asked: another build holds the folder, or the
    memory budget cannot hold a layer."""


class InvalidArgumentError(AweleError, ValueError):
    """An argument of the wrong type or out of range: a boolean or float depth,
    a depth beyond what the kernels allow, a non-finite time."""


class SearchError(AweleError, ValueError):
    """A search was asked for something it cannot do (bad limits or mode, a
    transposition table larger than the memory there is)."""


class EvaluationError(AweleError, ValueError):
    """Evaluation weights that cannot be used: a missing or damaged weights
    file, another version, or a fit asked for without the tables it needs."""


class ScratchError(BuildError):
    """A working file of a layer being built (the disk mode's scratch, a
    checkpoint) or its journal that cannot be used: missing, cut short,
    damaged, planted (a link, a folder), or a journal that fails its CRC-32
    or its schema. The builder sets that layer's files aside and starts the
    layer over; raised out of it only when a fresh start meets one too."""
