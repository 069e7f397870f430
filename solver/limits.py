"""Limits shared by the command line and the API, in a module that imports
nothing of the kernels, so that the command line can state them in its options without
loading the kernels (`awele --help` stays quick)."""

MAX_SEEDS = 48  # seeds in the game
MAX_PLY = 120  # deepest search iteration; the search's stack has room for this plus the history
MAX_PERFT_DEPTH = 40  # perft's kernel recurses once a ply; deeper counts would take years anyway
DEFAULT_QUIESCENCE = 0  # plies beyond the horizon in which a search still tries captures
MAX_QUIESCENCE = 16
MAX_FIT_GAMES = 1_000_000  # playouts of a fit: each keeps up to 300 boards of 12 bytes (3.6 GB at this many)
MAX_FIT_PER_LAYER = 100_000_000  # positions valued a layer (the largest layers built have billions)
MAX_FIT_SEED = 2**32 - 1  # the playouts' random seed (numba's np.random.seed takes 32 bits)
CYCLES = ("own", "split")  # the repetition rules a search can be asked for: the true rule, the tables' convention


def check_limits(depth: object, time: object, nodes: object, cycles: object) -> None:
    """Raise SearchError for limits a search or an answer cannot take."""
    import math
    import numbers

    from .errors import SearchError

    def whole(value: object) -> bool:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)

    if cycles not in CYCLES:
        raise SearchError(f"cycles must be one of {', '.join(CYCLES)}, got {cycles!r}")
    if depth is not None and not whole(depth):
        raise SearchError(f"depth must be an integer, got {depth!r}")
    if time is not None and (isinstance(time, bool) or not isinstance(time, (int, float))
                             or not math.isfinite(time)):
        raise SearchError(f"time must be a finite number of seconds, got {time!r}")
    if depth is not None and not 1 <= depth <= MAX_PLY:  # type: ignore[operator]
        raise SearchError(f"depth must be 1..{MAX_PLY}, got {depth}")
    if time is not None and not time > 0:
        raise SearchError(f"time must be positive, got {time}")
    if nodes is not None and not whole(nodes):
        raise SearchError(f"nodes must be an integer, got {nodes!r}")
    if nodes is not None and not nodes > 0:  # type: ignore[operator]
        raise SearchError(f"nodes must be positive, got {nodes}")
