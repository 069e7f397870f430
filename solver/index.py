"""The Romein-Bal index: one dense rank per position of a seed-count layer.

Layer n holds every distribution of exactly n seeds over the twelve houses,
seen from the side to move (houses 0..5 the mover's, 6..11 the opponent's),
except those where all six opponent houses are occupied: after any move the
previous mover's origin house is empty, so such positions never arise in play
(the opening apart). Layer n therefore has C(n+11, 11) - C(n+5, 11) positions.

Positions are ranked in lexicographic order of (house 0, house 1, ..., house
11), house 0 most significant. Ranking is a walk over the houses that adds, at
each house, how many valid completions sort before the value found there. The
counts depend on the seeds left and on whether an empty opponent house has
been seen yet (the exclusion rule), so they come from a table
``PREFIX[house, seeds_left, value, zero_seen]`` built once at import.

The successor walk (:func:`next_board`) steps from a position to the next one
in rank order without ranking, so a sweep over a range of ranks unranks only
its first position.
"""

from math import comb

import numpy as np
from numba import njit

from .errors import InvalidPositionError
from .rules import HOUSES, ROW, TOTAL_SEEDS, pack

INDEX_SCHEME = "romein-bal-lex"
INDEX_VERSION = 1
MAX_SEEDS = TOTAL_SEEDS


def _build_tables():
    """COMPLETIONS[i, r, f]: valid fillings of houses i..11 with r seeds, given
    f (an empty opponent house already seen); PREFIX[i, r, x, f]: the sum of
    COMPLETIONS over the values v < x of house i."""
    seeds = MAX_SEEDS + 1
    completions = np.zeros((HOUSES + 1, seeds, 2), dtype=np.int64)
    completions[HOUSES, 0, 1] = 1
    prefix = np.zeros((HOUSES, seeds, seeds + 1, 2), dtype=np.int64)
    for house in range(HOUSES - 1, -1, -1):
        for left in range(seeds):
            for seen in range(2):
                total = 0
                for value in range(left + 1):
                    prefix[house, left, value, seen] = total
                    now_seen = 1 if seen or (house >= ROW and value == 0) else 0
                    total += completions[house + 1, left - value, now_seen]
                prefix[house, left, left + 1 :, seen] = total
                completions[house, left, seen] = total
    return completions, prefix


COMPLETIONS, PREFIX = _build_tables()


def layer_size(seeds):
    """Positions in layer `seeds`: C(n+11, 11) - C(n+5, 11).

    >>> layer_size(16), layer_size(20)
    (12685179, 80214915)
    """
    seeds = _check_seeds(seeds)
    return comb(seeds + 11, 11) - comb(seeds + 5, 11)


def total_positions():
    """Positions reachable in the 48-seed game counted as Romein and Bal did:
    layers 0..46 and 48 (47 seeds cannot occur: a capture takes at least 2)
    plus the opening, which lies outside its layer.

    >>> total_positions()
    889063398406
    """
    return sum(layer_size(n) for n in range(MAX_SEEDS + 1) if n != MAX_SEEDS - 1) + 1


def _check_seeds(seeds):
    if isinstance(seeds, bool) or not isinstance(seeds, (int, np.integer)) or not 0 <= seeds <= MAX_SEEDS:
        raise InvalidPositionError(f"a layer has 0..{MAX_SEEDS} seeds, got {seeds!r}")
    return int(seeds)


@njit(cache=True, inline="always")
def in_index(board):
    """False when all six opponent houses hold seeds (outside every layer)."""
    for house in range(ROW, HOUSES):
        if board[house] == 0:
            return True
    return False


@njit(cache=True)
def rank_board(board, seeds):
    """Rank of a board (12 counts, mover view, summing to `seeds`, in_index)."""
    rank = np.int64(0)
    left = seeds
    seen = 0
    for house in range(HOUSES - 1):
        value = np.int64(board[house])
        rank += PREFIX[house, left, value, seen]
        left -= value
        if house >= ROW and value == 0:
            seen = 1
    return rank


@njit(cache=True)
def rank_packed(mover, opponent, seeds):
    """Rank of a packed position (see solver.rules) with `seeds` seeds."""
    rank = np.int64(0)
    left = seeds
    for house in range(ROW):
        value = np.int64((mover >> np.uint64(8 * house)) & np.uint64(0xFF))
        rank += PREFIX[house, left, value, 0]
        left -= value
    seen = 0
    for house in range(ROW - 1):
        value = np.int64((opponent >> np.uint64(8 * house)) & np.uint64(0xFF))
        rank += PREFIX[ROW + house, left, value, seen]
        left -= value
        if value == 0:
            seen = 1
    return rank


@njit(cache=True)
def unrank_into(seeds, rank, board):
    """Write the board of `rank` in layer `seeds` into board (length 12)."""
    left = seeds
    seen = 0
    for house in range(HOUSES - 1):
        value = 0
        while value < left and PREFIX[house, left, value + 1, seen] <= rank:
            value += 1
        rank -= PREFIX[house, left, value, seen]
        board[house] = value
        left -= value
        if house >= ROW and value == 0:
            seen = 1
    board[HOUSES - 1] = left


@njit(cache=True)
def unrank_board(seeds, rank):
    """The board (uint8[12], mover view) of `rank` in layer `seeds`."""
    board = np.zeros(HOUSES, dtype=np.uint8)
    unrank_into(seeds, rank, board)
    return board


@njit(cache=True)
def next_board(board):
    """Step board (in place) to the next position of its layer in rank order.

    Returns False, leaving board unchanged, after the last one. The next
    composition in lexicographic order moves one seed from the last non-empty
    house j to house j-1 and puts the rest of house j in house 11; positions
    with every opponent house occupied are stepped over.
    """
    while True:
        last = HOUSES - 1
        while last > 0 and board[last] == 0:
            last -= 1
        if last == 0:
            return False
        rest = board[last]
        board[last] = 0
        board[last - 1] += 1
        board[HOUSES - 1] = rest - 1
        if in_index(board):
            return True


@njit(cache=True)
def rank_boards(boards, seeds):
    """Ranks of an (N, 12) array of boards, all in layer `seeds`."""
    ranks = np.empty(boards.shape[0], dtype=np.int64)
    for i in range(boards.shape[0]):
        ranks[i] = rank_board(boards[i], seeds)
    return ranks


@njit(cache=True)
def unrank_boards(seeds, ranks):
    """Boards (N, 12 uint8) of an array of ranks in layer `seeds`."""
    boards = np.zeros((ranks.shape[0], HOUSES), dtype=np.uint8)
    for i in range(ranks.shape[0]):
        unrank_into(seeds, ranks[i], boards[i])
    return boards


@njit(cache=True)
def layer_boards(seeds, start, count):
    """`count` consecutive boards of layer `seeds` from rank `start`, walked in order."""
    boards = np.zeros((count, HOUSES), dtype=np.uint8)
    if count == 0:
        return boards
    board = np.zeros(HOUSES, dtype=np.uint8)
    unrank_into(seeds, start, board)
    for i in range(count):
        boards[i] = board
        next_board(board)
    return boards


# Checked Python entry points ---------------------------------------------------------


def _as_board(board):
    array = np.asarray(board)
    if array.shape != (HOUSES,):
        raise InvalidPositionError(f"a board has 12 houses, got shape {array.shape}")
    if array.dtype.kind not in "iu" or (array < 0).any() or (array > MAX_SEEDS).any():
        raise InvalidPositionError(f"house counts must be integers 0..{MAX_SEEDS}: {board!r}")
    return array.astype(np.uint8)


def rank(board):
    """Rank of a mover-view board (12 counts) in the layer of its seed count.

    Raises InvalidPositionError for a board outside the index (all opponent
    houses occupied) or with more than 48 seeds.

    >>> rank([0] * 11 + [5]), rank([5] + [0] * 11) == layer_size(5) - 1
    (0, True)
    """
    array = _as_board(board)
    seeds = int(array.sum(dtype=np.int64))
    _check_seeds(seeds)
    if not in_index(array):
        raise InvalidPositionError("all six opponent houses are occupied: this position is outside the index")
    return int(rank_board(array, seeds))


def unrank(seeds, rank):
    """The mover-view board (uint8[12]) of `rank` in layer `seeds`."""
    seeds = _check_seeds(seeds)
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or not 0 <= rank < layer_size(seeds):
        raise IndexError(f"rank {rank!r} is outside layer {seeds} (0..{layer_size(seeds) - 1})")
    return unrank_board(seeds, np.int64(rank))


def iter_layer(seeds, start=0, stop=None):
    """Yield the boards of layer `seeds` with ranks start..stop-1, in rank order."""
    seeds = _check_seeds(seeds)
    stop = layer_size(seeds) if stop is None else min(stop, layer_size(seeds))
    if start >= stop:
        return
    board = unrank(seeds, start)
    for _ in range(start, stop):
        yield board.copy()
        next_board(board)


__all__ = [
    "INDEX_SCHEME",
    "INDEX_VERSION",
    "in_index",
    "iter_layer",
    "layer_boards",
    "layer_size",
    "next_board",
    "pack",
    "rank",
    "rank_board",
    "rank_boards",
    "rank_packed",
    "total_positions",
    "unrank",
    "unrank_board",
    "unrank_boards",
]
