"""The Romein-Bal index: one dense rank per position of a seed-count layer.

Layer n holds every distribution of exactly n seeds over the twelve houses,
seen from the side to move (houses 0..5 the mover's, 6..11 the opponent's),
except those where all six opponent houses are occupied: after any move the
previous mover's origin house is empty, so such positions never arise in play
(the opening apart). Layer n therefore has C(n+11, 11) - C(n+5, 11) positions.

Order. Positions are grouped by the seeds m on the mover's row (m = 0..n);
inside a group the rank is ``row_rank(mover) * opponent_rows(n - m) +
row_rank(opponent)``, where row ranks are lexicographic (house 0 most
significant) among the rows holding that many seeds: every row for the mover,
only rows with an empty house for the opponent. So

    rank = LAYER_OFFSET[n, m] + row_rank(mover) * OPPONENT_ROWS[n - m] + row_rank(opponent)

which splits into two six-house problems: ranking is ten table lookups on the
packed words, and unranking is a search over at most 49 offsets, one divmod and
two lookups in tables of all rows (:class:`RowTables`), fast enough for the
retrograde sweeps that unrank scattered positions.

The successor walk (:func:`next_packed`) steps from a position to the next one
in rank order without ranking, so a sweep over a range of ranks unranks only
its first position.
"""

from collections.abc import Iterator
from math import comb
from typing import NamedTuple

import numpy as np
from numba import njit
from numpy.typing import ArrayLike

from .errors import InvalidPositionError
from .rules import (
    HOUSES,
    LANE_BITS,
    LANE_MASK,
    ROW,
    TOTAL_SEEDS,
    legal_mask,
    pack,
    play,
    row_seeds,
    terminal_value,
    unpack,
    unpack_into,
)

INDEX_SCHEME = "romein-bal-rows"
INDEX_VERSION = 1
MAX_SEEDS = TOTAL_SEEDS
ANY_ROW = 1  # "zero seen" already true: every row counts (the mover's)
OPPONENT_ROW = 0  # a row counts only if one of its houses is empty (the opponent's)


def _build_tables():
    """ROW_PREFIX[h, r, x, f]: rows whose houses h..5 hold r seeds that sort before
    value x at house h, given f (an empty house already seen, or no constraint);
    row counts; and the offset of each mover-seed group in each layer."""
    seeds = MAX_SEEDS + 1
    completions = np.zeros((ROW + 1, seeds, 2), dtype=np.int64)
    completions[ROW, 0, 1] = 1
    prefix = np.zeros((ROW, seeds, seeds + 1, 2), dtype=np.int64)
    for house in range(ROW - 1, -1, -1):
        for left in range(seeds):
            for seen in range(2):
                total = 0
                for value in range(left + 1):
                    prefix[house, left, value, seen] = total
                    total += completions[house + 1, left - value, 1 if (seen or value == 0) else 0]
                prefix[house, left, left + 1 :, seen] = total
                completions[house, left, seen] = total
    any_rows = completions[0, :, ANY_ROW].copy()
    opponent_rows = completions[0, :, OPPONENT_ROW].copy()
    offsets = np.zeros((seeds, seeds + 1), dtype=np.int64)
    for layer in range(seeds):
        for mover in range(layer + 1):
            offsets[layer, mover + 1] = offsets[layer, mover] + any_rows[mover] * opponent_rows[layer - mover]
    return prefix, any_rows, opponent_rows, offsets


ROW_PREFIX, ANY_ROWS, OPPONENT_ROWS, LAYER_OFFSET = _build_tables()

# The sliced build's order ---------------------------------------------------------
#
# The file order groups a layer by the seeds m on the mover's row, m = 0..n. A
# move swaps the rows (the mover's row of a parent is the opponent's row of its
# child), so a parent with m seeds on its mover's row has a child with about
# n - m: the file order sends nearly every move from one half of the layer to
# the other (0.8 of the in-layer moves cross the middle rank at layers 18..26).
# What a non-capturing move changes little is how far the split is from even,
# |2m - n|: a move that sows nothing into the opponent's row keeps it. The
# distance order keeps m and n - m side by side, a *band* of the order
# (band b: |2m - n| // 2 = b), so that slices cut at band edges keep most
# moves inside one slice.
#
# Which bands go together matters too: the stages resolve a lopsided
# position (its mover's row much fuller or emptier than the other) early,
# at a large |d|, and a balanced one late, so slices holding the bands in
# the order of their distance worked unevenly, stage by stage (two slices:
# the busier one had 1.14-1.22 times the mean work of a stage at layers
# 14..20, counted). The bands are therefore listed by their number with its
# bits reversed (BAND_BITS of them): even bands, then odd ones for two
# slices; by the number modulo 4 for four. Each slice holds near and far
# bands alike: 1.00-1.08 times the mean at layers 14..20 for two slices,
# with 0.16-0.19 of the in-layer moves told of crossing the cut (0.11-0.14
# with the bands by distance). Inside a group the order and the file agree.
FILE_ORDER = 0  # ranks as in the files
DISTANCE_ORDER = 1  # the bands (m and n - m) in bit-reversed order of |2m - n| // 2, then m
BAND_BITS = 5  # bits of a band's number (|2m - n| // 2 <= 24), reversed to order the bands


def band_key(mover_seeds: int, seeds: int) -> int:
    """Where the band of group m (mover_seeds) comes in layer n's distance
    order: its number |2m - n| // 2 with its BAND_BITS bits reversed.

    >>> [band_key(m, 8) for m in range(9)]  # bands 4 3 2 1 0 1 2 3 4
    [4, 24, 8, 16, 0, 16, 8, 24, 4]
    >>> [int(m) for m in ORDER_GROUPS[8, :9]]  # bands 0, 4, 2 (even), then 1, 3
    [4, 0, 8, 2, 6, 3, 5, 1, 7]
    """
    band = abs(2 * mover_seeds - seeds) // 2
    return int(format(band, f"0{BAND_BITS}b")[::-1], 2)


def _build_distance_order():
    """ORDER_OFFSET[n, m]: where group m starts in layer n's distance order;
    ORDER_STARTS[n, j] and ORDER_GROUPS[n, j]: the j-th group of that order
    and where it starts (ORDER_STARTS[n, n + 1:] the layer's size)."""
    seeds = MAX_SEEDS + 1
    offsets = np.zeros((seeds, seeds + 1), dtype=np.int64)
    starts = np.zeros((seeds, seeds + 1), dtype=np.int64)
    groups = np.zeros((seeds, seeds + 1), dtype=np.int64)
    for layer in range(seeds):
        at = 0
        for j, mover in enumerate(sorted(range(layer + 1), key=lambda m: (band_key(m, layer), m))):
            offsets[layer, mover] = starts[layer, j] = at
            groups[layer, j] = mover
            at += LAYER_OFFSET[layer, mover + 1] - LAYER_OFFSET[layer, mover]
        offsets[layer, layer + 1 :] = starts[layer, layer + 1 :] = at
        groups[layer, layer + 1 :] = layer + 1
    return offsets, starts, groups


ORDER_OFFSET, ORDER_STARTS, ORDER_GROUPS = _build_distance_order()


def layer_size(seeds: int) -> int:
    """Positions in layer `seeds`: C(n+11, 11) - C(n+5, 11).

    >>> layer_size(16), layer_size(20)
    (12685179, 80214915)
    """
    seeds = _check_seeds(seeds)
    return comb(seeds + 11, 11) - comb(seeds + 5, 11)


def total_positions() -> int:
    """Positions reachable in the 48-seed game counted as Romein and Bal did:
    layers 0..46 and 48 (47 seeds cannot occur: a capture takes at least 2)
    plus the opening, which lies outside its layer.

    >>> total_positions()
    889063398406
    """
    return sum(layer_size(n) for n in range(MAX_SEEDS + 1) if n != MAX_SEEDS - 1) + 1


def _check_seeds(seeds: object) -> int:
    if isinstance(seeds, bool) or not isinstance(seeds, (int, np.integer)) or not 0 <= seeds <= MAX_SEEDS:
        raise InvalidPositionError(f"a layer has 0..{MAX_SEEDS} seeds, got {seeds!r}")
    return int(seeds)


_HASH_A = np.uint64(0x9E3779B97F4A7C15)
_HASH_B = np.uint64(0xC2B2AE3D27D4EB4F)


@njit(cache=True, inline="always")
def position_hash(mover: np.uint64, opponent: np.uint64) -> np.uint64:
    """A 64-bit hash of a packed position (both rows), for hash tables keyed
    by position: the search's transposition table and a component's nodes.
    Its low bits pick a slot; callers needing a check word multiply it again."""
    h = mover * _HASH_A ^ (opponent * _HASH_B)
    return h ^ (h >> np.uint64(29))


@njit(cache=True, inline="always")
def in_index(board: np.ndarray) -> bool:
    """False when all six opponent houses hold seeds (outside every layer)."""
    for house in range(ROW, HOUSES):  # noqa: SIM110 (a numba kernel: no generator in any())
        if board[house] == 0:
            return True
    return False


@njit(cache=True, inline="always")
def packed_in_index(opponent: np.uint64) -> bool:
    """False when all six lanes of the opponent's row word hold seeds."""
    for lane in range(ROW):  # noqa: SIM110 (a numba kernel: no generator in any())
        if (opponent >> np.uint64(LANE_BITS * lane)) & LANE_MASK == 0:
            return True
    return False


@njit(cache=True, inline="always")
def row_rank(word: np.uint64, seeds: int | np.integer, seen: int | np.integer) -> int:
    """Lexicographic rank of a row word among rows of `seeds` seeds (seen=1: all
    rows; seen=0: rows with an empty house)."""
    rank = np.int64(0)
    left = np.int64(seeds)
    for lane in range(ROW - 1):
        value = np.int64((word >> np.uint64(LANE_BITS * lane)) & LANE_MASK)
        rank += ROW_PREFIX[lane, left, value, seen]
        left -= value
        if value == 0:
            seen = 1
    return rank


@njit(cache=True)
def row_unrank(seeds: int | np.integer, rank: int | np.integer, seen: int | np.integer) -> np.uint64:
    """The row word of `rank` among rows of `seeds` seeds (see row_rank)."""
    word = np.uint64(0)
    left = seeds
    for lane in range(ROW - 1):
        value = 0
        while value < left and ROW_PREFIX[lane, left, value + 1, seen] <= rank:
            value += 1
        rank -= ROW_PREFIX[lane, left, value, seen]
        word |= np.uint64(value) << np.uint64(LANE_BITS * lane)
        left -= value
        if value == 0:
            seen = 1
    return word | (np.uint64(left) << np.uint64(LANE_BITS * (ROW - 1)))


@njit(cache=True, inline="always")
def rank_packed(mover: np.uint64, opponent: np.uint64, seeds: int | np.integer) -> int:
    """Rank of a packed position (see solver.rules) with `seeds` seeds."""
    mover_seeds = row_seeds(mover)
    return (
        LAYER_OFFSET[seeds, mover_seeds]
        + row_rank(mover, mover_seeds, ANY_ROW) * OPPONENT_ROWS[seeds - mover_seeds]
        + row_rank(opponent, seeds - mover_seeds, OPPONENT_ROW)
    )


@njit(cache=True, inline="always")
def order_offsets(order: int | np.integer) -> np.ndarray:
    """Where each mover-seed group starts in each layer, in `order`
    (FILE_ORDER: LAYER_OFFSET; DISTANCE_ORDER: ORDER_OFFSET)."""
    return ORDER_OFFSET if order == DISTANCE_ORDER else LAYER_OFFSET


@njit(cache=True, inline="always")
def rank_packed_in(mover: np.uint64, opponent: np.uint64, seeds: int | np.integer, order: int | np.integer) -> int:
    """rank_packed in `order` (FILE_ORDER gives rank_packed's rank)."""
    mover_seeds = row_seeds(mover)
    return (
        order_offsets(order)[seeds, mover_seeds]
        + row_rank(mover, mover_seeds, ANY_ROW) * OPPONENT_ROWS[seeds - mover_seeds]
        + row_rank(opponent, seeds - mover_seeds, OPPONENT_ROW)
    )


@njit(cache=True, inline="always")
def file_run(seeds: int | np.integer, rank: int | np.integer, order: int | np.integer) -> tuple[int, int]:
    """(the file rank of the position at `rank` in `order` of layer `seeds`,
    the end in `order` of the run of consecutive file ranks it lies in)."""
    if order != DISTANCE_ORDER:
        return int(rank), 1 << 62
    low, high = 0, seeds  # the last group of the order starting at or before rank
    while low < high:
        middle = (low + high + 1) // 2
        if ORDER_STARTS[seeds, middle] <= rank:
            low = middle
        else:
            high = middle - 1
    mover_seeds = ORDER_GROUPS[seeds, low]
    return LAYER_OFFSET[seeds, mover_seeds] + rank - ORDER_STARTS[seeds, low], ORDER_STARTS[seeds, low + 1]


@njit(cache=True, inline="always")
def file_rank(seeds: int | np.integer, rank: int | np.integer, order: int | np.integer) -> int:
    """The file rank of the position at `rank` in `order` of layer `seeds`."""
    return file_run(seeds, rank, order)[0]


@njit(cache=True, inline="always")
def rank_in(seeds: int | np.integer, rank: int | np.integer, order: int | np.integer) -> int:
    """The rank in `order` of the position at file rank `rank` of layer `seeds`."""
    if order != DISTANCE_ORDER:
        return int(rank)
    mover_seeds = 0
    while LAYER_OFFSET[seeds, mover_seeds + 1] <= rank:
        mover_seeds += 1
    return ORDER_OFFSET[seeds, mover_seeds] + rank - LAYER_OFFSET[seeds, mover_seeds]


def order_pieces(seeds: int, start: int, stop: int, order: int) -> list[tuple[int, int, int]]:
    """Ranks start..stop-1 of layer `seeds` in `order` as runs of the file:
    (first rank in the order, first file rank, length), in the order's order."""
    if order != DISTANCE_ORDER:
        return [(start, start, stop - start)] if stop > start else []
    pieces = []
    for j in range(seeds + 1):
        low, high = max(start, int(ORDER_STARTS[seeds, j])), min(stop, int(ORDER_STARTS[seeds, j + 1]))
        if low < high:
            mover_seeds = int(ORDER_GROUPS[seeds, j])
            pieces.append((low, int(LAYER_OFFSET[seeds, mover_seeds]) + low - int(ORDER_STARTS[seeds, j]), high - low))
    return pieces


def file_pieces(seeds: int, start: int, stop: int, order: int) -> list[tuple[int, int, int]]:
    """File ranks start..stop-1 of layer `seeds` as runs of `order`:
    (first rank in the order, first file rank, length), in file order."""
    if order != DISTANCE_ORDER:
        return [(start, start, stop - start)] if stop > start else []
    pieces = []
    for mover_seeds in range(seeds + 1):
        first = int(LAYER_OFFSET[seeds, mover_seeds])
        low, high = max(start, first), min(stop, int(LAYER_OFFSET[seeds, mover_seeds + 1]))
        if low < high:
            pieces.append((int(ORDER_OFFSET[seeds, mover_seeds]) + low - first, low, high - low))
    return pieces


@njit(cache=True)
def rank_board(board: np.ndarray, seeds: int | np.integer) -> int:
    """Rank of a board (12 counts, mover view, summing to `seeds`, in_index)."""
    mover, opponent = pack(board)
    return rank_packed(mover, opponent, seeds)


@njit(cache=True, inline="always")
def _split_rank(seeds, rank):
    """(seeds on the mover's row, mover row rank, opponent row rank) of a rank."""
    mover_seeds = 0
    while LAYER_OFFSET[seeds, mover_seeds + 1] <= rank:
        mover_seeds += 1
    rank -= LAYER_OFFSET[seeds, mover_seeds]
    count = OPPONENT_ROWS[seeds - mover_seeds]
    return mover_seeds, rank // count, rank % count


@njit(cache=True)
def unrank_packed(seeds: int | np.integer, rank: int | np.integer) -> tuple[np.uint64, np.uint64]:
    """(mover, opponent) words of `rank` in layer `seeds` (no tables needed)."""
    mover_seeds, mover_rank, opponent_rank = _split_rank(seeds, rank)
    return (
        row_unrank(mover_seeds, mover_rank, ANY_ROW),
        row_unrank(seeds - mover_seeds, opponent_rank, OPPONENT_ROW),
    )


@njit(cache=True)
def _all_rows(max_seeds, seen):
    """Every row word of 0..max_seeds seeds in rank order, and where each seed count starts."""
    starts = np.zeros(max_seeds + 2, dtype=np.int64)
    for seeds in range(max_seeds + 1):
        starts[seeds + 1] = starts[seeds] + ROW_PREFIX[0, seeds, seeds + 1, seen]
    words = np.empty(starts[max_seeds + 1], dtype=np.uint64)
    for seeds in range(max_seeds + 1):
        word = row_unrank(seeds, 0, seen)
        for i in range(starts[seeds], starts[seeds + 1]):
            words[i] = word
            _ok, word = next_row(word, seen)
    return words, starts


class RowTables:
    """Every row word up to `max_seeds` seeds, for table-driven unranking.

    Holds C(max_seeds+6, 6) words of each kind (1.9 million for 30 seeds).
    Pass ``tables.arrays`` to :func:`unrank_fast`.
    """

    def __init__(self, max_seeds: int) -> None:
        self.max_seeds = _check_seeds(max_seeds)
        any_words, any_starts = _all_rows(self.max_seeds, ANY_ROW)
        opponent_words, opponent_starts = _all_rows(self.max_seeds, OPPONENT_ROW)
        self.arrays = (any_words, any_starts, opponent_words, opponent_starts)


@njit(cache=True, inline="always")
def unrank_fast(
    seeds: int | np.integer,
    rank: int | np.integer,
    any_words: np.ndarray,
    any_starts: np.ndarray,
    opponent_words: np.ndarray,
    opponent_starts: np.ndarray,
) -> tuple[np.uint64, np.uint64]:
    """(mover, opponent) words of `rank` in layer `seeds`, through RowTables arrays."""
    mover, first, _length, start = unrank_row(seeds, rank, any_words, any_starts, opponent_starts)
    return mover, opponent_words[start + rank - first]


@njit(cache=True, inline="always")
def unrank_row(
    seeds: int | np.integer,
    rank: int | np.integer,
    any_words: np.ndarray,
    any_starts: np.ndarray,
    opponent_starts: np.ndarray,
) -> tuple[np.uint64, int, int, int]:
    """The run of ranks that share the mover's row with `rank` (RowTables
    arrays): (the mover's word, the run's first rank, its length, where in
    opponent_words its opponents' words start). Rank first + i of the run
    has the opponent word opponent_words[start + i]: a scan unranks a rank
    in the run it has found with one look-up, no search and no division.
    """
    mover_seeds, mover_rank, opponent_rank = _split_rank(seeds, rank)
    return (
        any_words[any_starts[mover_seeds] + mover_rank],
        rank - opponent_rank,
        OPPONENT_ROWS[seeds - mover_seeds],
        opponent_starts[seeds - mover_seeds],
    )


@njit(cache=True, inline="always")
def _next_composition(word):
    """The next row of the same seed count in lexicographic order, ignoring the
    empty-house rule: move one seed from the last non-empty house j to house
    j-1 and the rest of house j to house 5. (False, word) after the last."""
    last = ROW - 1
    while last > 0 and (word >> np.uint64(LANE_BITS * last)) & LANE_MASK == 0:
        last -= 1
    if last == 0:
        return False, word
    shift = np.uint64(LANE_BITS * last)
    rest = (word >> shift) & LANE_MASK
    word &= ~(LANE_MASK << shift)
    word += np.uint64(1) << np.uint64(LANE_BITS * (last - 1))
    word += (rest - np.uint64(1)) << np.uint64(LANE_BITS * (ROW - 1))
    return True, word


@njit(cache=True, inline="always")
def next_row(word: np.uint64, seen: int | np.integer) -> tuple[bool, np.uint64]:
    """The next row in rank order (see row_rank); (False, word) after the last."""
    while True:
        ok, word = _next_composition(word)
        if not ok:
            return False, word
        if seen or packed_in_index(word):
            return True, word


@njit(cache=True, inline="always")
def next_packed(mover: np.uint64, opponent: np.uint64, seeds: int | np.integer) -> tuple[bool, np.uint64, np.uint64]:
    """The next position of layer `seeds` in rank order: (True, mover, opponent),
    or (False, mover, opponent) unchanged after the last one."""
    ok, next_opponent = next_row(opponent, OPPONENT_ROW)
    if ok:
        return True, mover, next_opponent
    mover_seeds = row_seeds(mover)
    ok, next_mover = next_row(mover, ANY_ROW)
    if ok:
        return True, next_mover, np.uint64(seeds - mover_seeds) << np.uint64(LANE_BITS * (ROW - 1))
    if mover_seeds == seeds:
        return False, mover, opponent
    first_mover = np.uint64(mover_seeds + 1) << np.uint64(LANE_BITS * (ROW - 1))
    return True, first_mover, np.uint64(seeds - mover_seeds - 1) << np.uint64(LANE_BITS * (ROW - 1))


@njit(cache=True)
def next_board(board: np.ndarray) -> bool:
    """Step board (in place) to the next position of its layer in rank order.

    Returns False, leaving board unchanged, after the last one.
    """
    mover, opponent = pack(board)
    ok, mover, opponent = next_packed(mover, opponent, row_seeds(mover) + row_seeds(opponent))
    if ok:
        unpack_into(mover, opponent, board)
    return ok


@njit(cache=True)
def unrank_into(seeds: int | np.integer, rank: int | np.integer, board: np.ndarray) -> None:
    """Write the board of `rank` in layer `seeds` into board (length 12)."""
    mover, opponent = unrank_packed(seeds, rank)
    unpack_into(mover, opponent, board)


@njit(cache=True)
def unrank_board(seeds: int | np.integer, rank: int | np.integer) -> np.ndarray:
    """The board (uint8[12], mover view) of `rank` in layer `seeds`."""
    mover, opponent = unrank_packed(seeds, rank)
    return unpack(mover, opponent)


@njit(cache=True)
def rank_boards(boards: np.ndarray, seeds: int | np.integer) -> np.ndarray:
    """Ranks of an (N, 12) array of boards, all in layer `seeds`."""
    ranks = np.empty(boards.shape[0], dtype=np.int64)
    for i in range(boards.shape[0]):
        ranks[i] = rank_board(boards[i], seeds)
    return ranks


@njit(cache=True)
def unrank_boards(seeds: int | np.integer, ranks: np.ndarray) -> np.ndarray:
    """Boards (N, 12 uint8) of an array of ranks in layer `seeds`."""
    boards = np.zeros((ranks.shape[0], HOUSES), dtype=np.uint8)
    for i in range(ranks.shape[0]):
        unrank_into(seeds, ranks[i], boards[i])
    return boards


@njit(cache=True)
def layer_boards(seeds: int | np.integer, start: int | np.integer, count: int | np.integer) -> np.ndarray:
    """`count` consecutive boards of layer `seeds` from rank `start`, walked in order."""
    boards = np.zeros((count, HOUSES), dtype=np.uint8)
    if count == 0:
        return boards
    mover, opponent = unrank_packed(seeds, start)
    for i in range(count):
        unpack_into(mover, opponent, boards[i])
        _ok, mover, opponent = next_packed(mover, opponent, seeds)
    return boards


class Expansion(NamedTuple):
    """A mover-view board and its moves, one ply deep (see expand)."""

    legal: int  # mask of the legal houses 0..5
    terminal: int  # the terminal value, or NOT_TERMINAL
    seeds: int  # on the board
    rank: int  # in its layer, or -1 outside the index (every opponent house occupied)
    captured: np.ndarray  # [6]: seeds each legal move captures
    children: np.ndarray  # [6, 12]: the board after each legal move, seen by the side that moves next
    child_ranks: np.ndarray  # [6]: each child's rank in its layer


def expand(board: np.ndarray) -> Expansion:
    """Everything the user-facing layers need about a mover-view board (uint8
    [12]), in one compiled call, as an Expansion."""
    return Expansion(*_expand(board))


@njit(cache=True)
def _expand(board):
    """(legal mask, terminal value or NOT_TERMINAL, seeds, rank or -1,
    captured[6], children[6, 12], child ranks[6]) of a mover-view board. One
    compiled entry point keeps a command's start-up short: numba loads each
    cached function separately, at a cost of a tenth of a second.
    """
    mover, opponent = pack(board)
    seeds = row_seeds(mover) + row_seeds(opponent)
    rank = rank_packed(mover, opponent, seeds) if packed_in_index(opponent) else -1
    mask = legal_mask(mover, opponent)
    captured = np.zeros(ROW, dtype=np.int64)
    children = np.zeros((ROW, HOUSES), dtype=np.uint8)
    child_ranks = np.zeros(ROW, dtype=np.int64)
    for house in range(ROW):
        if mask & (1 << house):
            taken, child_mover, child_opponent = play(mover, opponent, house)
            captured[house] = taken
            unpack_into(child_mover, child_opponent, children[house])
            child_ranks[house] = rank_packed(child_mover, child_opponent, seeds - taken)
    return mask, terminal_value(mover, opponent), seeds, rank, captured, children, child_ranks


# Checked Python entry points ---------------------------------------------------------


def _as_board(board: ArrayLike) -> np.ndarray:
    array = np.asarray(board)
    if array.shape != (HOUSES,):
        raise InvalidPositionError(f"a board has 12 houses, got shape {array.shape}")
    if array.dtype.kind not in "iu" or (array < 0).any() or (array > MAX_SEEDS).any():
        raise InvalidPositionError(f"house counts must be integers 0..{MAX_SEEDS}: {board!r}")
    return array.astype(np.uint8)


def rank(board: ArrayLike) -> int:
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


def unrank(seeds: int, rank: int) -> np.ndarray:
    """The mover-view board (uint8[12]) of `rank` in layer `seeds`."""
    seeds = _check_seeds(seeds)
    if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or not 0 <= rank < layer_size(seeds):
        raise IndexError(f"rank {rank!r} is outside layer {seeds} (0..{layer_size(seeds) - 1})")
    return unrank_board(seeds, np.int64(rank))


def iter_layer(seeds: int, start: int = 0, stop: int | None = None) -> Iterator[np.ndarray]:
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
    "Expansion",
    "RowTables",
    "expand",
    "in_index",
    "iter_layer",
    "layer_boards",
    "layer_size",
    "next_board",
    "next_packed",
    "pack",
    "rank",
    "rank_board",
    "rank_boards",
    "rank_packed",
    "total_positions",
    "unrank",
    "unrank_board",
    "unrank_boards",
    "unrank_fast",
    "unrank_packed",
]
