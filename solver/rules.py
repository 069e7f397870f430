"""The Abapa rules of Awele as numba kernels on packed positions.

This module is the only place the rules live (see RULES.md). Everything else
(index, retrograde, probe, search) calls these kernels.

Packed form
-----------
A position is seen from the side to move and held in two uint64 words, one per
row, with one 8-bit lane per house::

    mover     (lo word): house 0 in bits 0..7, house 1 in bits 8..15, ... house 5
    opponent  (hi word): house 6 in bits 0..7, ...                    ... house 11

Houses 0..5 are the mover's in sowing order (A..F for South, a..f for North),
6..11 the opponent's. Lanes 6 and 7 of each word are always zero. A lane holds
up to 255, so every position of the 48-seed game fits, and adding up to 48
seeds into a lane can never carry into the next one.

Sowing is O(1): ``k`` seeds from house ``h`` go round the 11 other houses, so
each of them gets ``k // 11`` (a lap mask times the number of laps) and the
``k % 11`` houses after ``h`` one more (a precomputed range mask).

Flipping the point of view (after a move the opponent is to move) is a swap of
the two words.
"""

import numpy as np
from numba import njit

LANE_BITS = 8
LANE_MASK = np.uint64(0xFF)
ROW_ONES = np.uint64(0x0000010101010101)  # one seed in each of the six houses of a row
SUM_LANES = np.uint64(0x0101010101010101)  # multiplier that adds all lanes into the top byte

TOTAL_SEEDS = 48
HOUSES = 12
ROW = 6

# Value returned by terminal_value() for a position where the game goes on.
NOT_TERMINAL = 127


def _build_masks() -> tuple[np.ndarray, np.ndarray]:
    """Lap and range masks for sowing from each of the mover's houses.

    lap[h, w]: one seed in every house of word w except the origin h.
    ranges[h, r, w]: one seed in each of the r houses that follow h (r = 0..10).
    """
    lap = np.zeros((ROW, 2), dtype=np.uint64)
    ranges = np.zeros((ROW, 11, 2), dtype=np.uint64)
    for origin in range(ROW):
        for house in range(HOUSES):
            if house != origin:
                lap[origin, house // ROW] |= np.uint64(1) << np.uint64(LANE_BITS * (house % ROW))
        for count in range(11):
            for step in range(1, count + 1):
                house = (origin + step) % HOUSES
                ranges[origin, count, house // ROW] |= np.uint64(1) << np.uint64(LANE_BITS * (house % ROW))
    return lap, ranges


LAP_MASKS, RANGE_MASKS = _build_masks()


def _build_reach() -> np.ndarray:
    """REACH[h, k]: where sowing k seeds from the mover's house h leaves its
    last seed, for capture_candidates: the bit offset of that house's lane in
    the opponent's word, plus (the seeds the sowing adds to it) << 8. Sowing
    whose last seed stays in the mover's row, or no seeds, points at lane 6
    (always empty) and adds 64: never 2 or 3 seeds."""
    nowhere = LANE_BITS * ROW | 64 << 8
    reach = np.full((ROW, TOTAL_SEEDS + 1), nowhere, dtype=np.int64)
    for origin in range(ROW):
        for seeds in range(1, TOTAL_SEEDS + 1):
            last = (origin + 1 + (seeds - 1) % 11) % HOUSES
            if last >= ROW:
                added = seeds // 11 + (1 if seeds % 11 else 0)  # the laps, and one more unless k is a multiple of 11
                reach[origin, seeds] = LANE_BITS * (last - ROW) | added << 8
    return reach


REACH = _build_reach()


@njit(cache=True, inline="always")
def house_seeds(word: np.uint64, lane: int) -> np.int64:
    """Seeds in lane 0..5 of one row word."""
    return np.int64((word >> np.uint64(LANE_BITS * lane)) & LANE_MASK)


@njit(cache=True, inline="always")
def row_seeds(word: np.uint64) -> np.int64:
    """Total seeds in one row word (at most 48, so the lane sum fits in a byte)."""
    return np.int64((word * SUM_LANES) >> np.uint64(56))


@njit(cache=True, inline="always")
def board_seeds(mover: np.uint64, opponent: np.uint64) -> np.int64:
    """Total seeds on the board."""
    return np.int64(((mover + opponent) * SUM_LANES) >> np.uint64(56))


@njit(cache=True)
def pack(board: np.ndarray) -> tuple[np.uint64, np.uint64]:
    """Pack 12 house counts (mover view, uint8/int array) into (mover, opponent) words."""
    mover = np.uint64(0)
    opponent = np.uint64(0)
    for lane in range(ROW):
        mover |= np.uint64(board[lane]) << np.uint64(LANE_BITS * lane)
        opponent |= np.uint64(board[ROW + lane]) << np.uint64(LANE_BITS * lane)
    return mover, opponent


@njit(cache=True)
def unpack_into(mover: np.uint64, opponent: np.uint64, board: np.ndarray) -> None:
    """Write the 12 house counts of a packed position into board (length >= 12)."""
    for lane in range(ROW):
        board[lane] = (mover >> np.uint64(LANE_BITS * lane)) & LANE_MASK
        board[ROW + lane] = (opponent >> np.uint64(LANE_BITS * lane)) & LANE_MASK


@njit(cache=True)
def unpack(mover: np.uint64, opponent: np.uint64) -> np.ndarray:
    """The 12 house counts of a packed position as a new uint8 array."""
    board = np.zeros(HOUSES, dtype=np.uint8)
    unpack_into(mover, opponent, board)
    return board


@njit(cache=True, inline="always")
def sow(mover: np.uint64, opponent: np.uint64, house: int) -> tuple[np.uint64, np.uint64, int]:
    """Sow the seeds of the mover's house 0..5 (which must be non-empty).

    Returns (mover, opponent, last) with last the house 0..11 that got the last
    seed. No capture is made here.
    """
    seeds = house_seeds(mover, house)
    laps = np.uint64(seeds // 11)
    rest = seeds % 11
    mover &= ~(LANE_MASK << np.uint64(LANE_BITS * house))
    mover += laps * LAP_MASKS[house, 0] + RANGE_MASKS[house, rest, 0]
    opponent += laps * LAP_MASKS[house, 1] + RANGE_MASKS[house, rest, 1]
    last = (house + 1 + (seeds - 1) % 11) % HOUSES
    return mover, opponent, last


@njit(cache=True, inline="always")
def capture(opponent: np.uint64, last: int) -> tuple[int, np.uint64]:
    """Apply the capture chain ending at house `last` to the opponent's row.

    Returns (captured, opponent). The chain walks back from the last house while
    the house is the opponent's and holds 2 or 3 seeds. A grand slam (every seed
    of the opponent taken) captures nothing.
    """
    if last < ROW:
        return 0, opponent
    captured = 0
    taken = np.uint64(0)
    lane = last - ROW
    while lane >= 0:
        seeds = house_seeds(opponent, lane)
        if seeds != 2 and seeds != 3:
            break
        captured += seeds
        taken |= LANE_MASK << np.uint64(LANE_BITS * lane)
        lane -= 1
    if captured == 0 or (opponent & ~taken) == 0:
        return 0, opponent
    return captured, opponent & ~taken


@njit(cache=True, inline="always")
def capture_candidates(mover: np.uint64, opponent: np.uint64) -> int:
    """Bit h set when sowing the mover's non-empty house h leaves its last
    seed on an opponent house that then holds 2 or 3: what a capture needs
    (play() says whether it is one: a grand slam captures nothing). All six
    houses at once, without sowing and without a branch: REACH gives each
    house's last house and what sowing adds to it (k // 11 from the laps,
    and one more unless k is a multiple of 11, when the last seed falls on
    the house before the origin)."""
    candidates = 0
    for house in range(ROW):
        reach = REACH[house, (mover >> np.uint64(LANE_BITS * house)) & LANE_MASK]
        after = np.int64((opponent >> np.uint64(reach & 0xFF)) & LANE_MASK) + (reach >> 8)
        candidates |= np.int64(np.uint64(after - 2) < np.uint64(2)) << house  # after is 2 or 3
    return candidates


@njit(cache=True, inline="always")
def legal_mask(mover: np.uint64, opponent: np.uint64) -> int:
    """Bit h set when the mover may play house h (RULES.md rules 1 and 5)."""
    mask = 0
    for house in range(ROW):
        seeds = house_seeds(mover, house)
        if seeds > 0 and (opponent != 0 or seeds >= ROW - house):
            mask |= 1 << house
    return mask


@njit(cache=True, inline="always")
def terminal_value(mover: np.uint64, opponent: np.uint64) -> np.int64 | int:
    """Value d for the mover if the game ends before he moves, else NOT_TERMINAL.

    Rule 6: the mover's side is empty, so the opponent takes the seeds on his
    side: d = -n. Rule 5: the opponent's side is empty and no move feeds him, so
    the mover takes every seed left: d = +n.
    """
    if mover == 0:
        return -row_seeds(opponent)
    if opponent == 0 and legal_mask(mover, opponent) == 0:
        return row_seeds(mover)
    return NOT_TERMINAL


@njit(cache=True)
def play(mover: np.uint64, opponent: np.uint64, house: int) -> tuple[int, np.uint64, np.uint64]:
    """Play the mover's house 0..5 (which must be legal).

    Returns (captured, child_mover, child_opponent): the seeds captured and the
    child position seen from the side that moves next (the rows swapped).
    """
    mover, opponent, last = sow(mover, opponent, house)
    captured, opponent = capture(opponent, last)
    return captured, opponent, mover


@njit(cache=True)
def _perft(mover: np.uint64, opponent: np.uint64, mover_store: int, opponent_store: int, depth: int) -> int:
    """Leaves at `depth` plies below a packed position with capture counts.

    A node where the game is over (rules 5 and 6, 25 captured seeds or 24-24)
    has no children. At depth 1 the legal moves are counted, not played (bulk
    counting).
    """
    if mover_store >= 25 or opponent_store >= 25 or (mover_store == 24 and opponent_store == 24):
        return 0
    mask = legal_mask(mover, opponent)
    if depth == 1:
        count = 0
        while mask:
            mask &= mask - 1
            count += 1
        return count
    leaves = 0
    for house in range(ROW):
        if mask & (1 << house):
            captured, child_mover, child_opponent = play(mover, opponent, house)
            leaves += _perft(child_mover, child_opponent, opponent_store, mover_store + captured, depth - 1)
    return leaves


@njit(cache=True, nogil=True)  # nogil: the CLI runs it in a thread it can abandon on Ctrl-C
def perft_packed(mover: np.uint64, opponent: np.uint64, mover_store: int, opponent_store: int, depth: int) -> int:
    """Perft on a packed position; depth 0 counts the position itself."""
    if depth == 0:
        return 1
    return _perft(mover, opponent, mover_store, opponent_store, depth)

