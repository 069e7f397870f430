"""The exits of a layer: every position's best capture into the smaller layers.

Exits need the smaller layers n-15..n-2 (a capture takes at least 2 seeds
and at most 15: five opponent houses of 3). They are
found in one or more passes over the layer, each with a group of smaller
layers in memory, keeping the best so far; the stages then need layer n
alone. That is what lets a layer be built when its smaller layers do not
all fit in memory beside it.

Each pass (exit_pass) writes or raises the positions' pending codes
(solver.layer_state) and, on the first, their counts of non-capturing
children. The exit pass gathers a block's captures and prefetches their
children's values before it reads them, so those misses in the smaller
layers overlap. A slice whose smaller layers are spread over processes
asks their owners instead (exit_requests, raise_exits: solver.distributed).
"""

import numpy as np
from numba import njit, prange

# The kernels take index's tables (rank offsets, the distance order of
# 2026-12-05: bands interleaved) into their code as constants, and numba's
# cache is keyed on each file alone: a change to those tables must come
# with a change to this file, or a cached kernel keeps the old ones
# (retrograde.check_compiled_order finds that).
from . import index
from .intrinsics import prefetch, trailing_zeros
from .layer_state import (
    BLOCK,
    NO_EXIT,
    WORK_SLOTS,
    count_at,
    hot_kernel,
    order_fingerprint,
    pending,
    pending_exit,
    take,
    value_at,
)
from .layers import move_value
from .rules import LAP_MASKS, RANGE_MASKS, REACH, ROW, capture_candidates, legal_mask, play, row_seeds, terminal_value

MOVES_IN = np.array([bin(bits).count("1") for bits in range(1 << ROW)], dtype=np.int64)  # moves in a 6-bit mask


@njit(cache=True, inline="always")
def best_capture(
    mover: np.uint64,
    opponent: np.uint64,
    seeds: int | np.integer,
    flat: np.ndarray,
    starts: np.ndarray,
    use: np.ndarray,
) -> tuple[int | np.int64, int]:
    """(best over the capturing moves whose layer is in `use` of captured -
    d(child), or NO_EXIT; the number of non-capturing moves)."""
    mask = legal_mask(mover, opponent)
    best: int | np.int64 = NO_EXIT
    children = 0
    for house in range(ROW):
        if mask & (1 << house):
            captured, child_mover, child_opponent = play(mover, opponent, house)
            if captured > 0:
                value = move_value(captured, child_mover, child_opponent, seeds, flat, starts, use)
                if value > best:  # never NOT_IN_USE: it is below NO_EXIT
                    best = value
            else:
                children += 1
    return best, children


@njit(cache=True, inline="always")
def exit_value(
    mover: np.uint64,
    opponent: np.uint64,
    seeds: int | np.integer,
    flat: np.ndarray,
    starts: np.ndarray,
    use: np.ndarray,
) -> int | np.int64:
    """E(s): the terminal value when there is no move, else the best capture
    into the layers in `use`, or NO_EXIT."""
    if legal_mask(mover, opponent) == 0:
        return terminal_value(mover, opponent)
    return best_capture(mover, opponent, seeds, flat, starts, use)[0]


@njit(cache=True, inline="always")
def lowest_bit(bits):
    """The index of the lowest set bit of a non-zero move mask."""
    return trailing_zeros(np.uint64(bits))  # type: ignore[call-arg]  # numba's @intrinsic passes typingctx


PLAN_WORDS = 4 * ROW  # a run's plan for _exit_block: four numbers for each of the mover's houses


@njit(cache=True, inline="always")
def plan_run(mover, plan):
    """What sowing each house of `mover` does, for every position of a run
    (the ranks sharing that mover row, their opponent rows in rank order):
    plan[h] is REACH[h, seeds of h] (where the last seed lands and what it
    adds there), plan[6 + h] the seeds it adds to the opponent's row (a
    word), plan[12 + h] the seeds left on the mover's row and plan[18 + h]
    that row's part of the child's rank (it is the child's opponent row).
    Returns the houses that hold seeds (the legal moves while the opponent
    has seeds)."""
    mask = 0
    for house in range(ROW):
        sown = (mover >> np.uint64(8 * house)) & np.uint64(0xFF)
        if sown == 0:
            continue
        mask |= 1 << house
        laps = sown // np.uint64(11)
        rest = np.int64(sown % np.uint64(11))
        row = (mover & ~(np.uint64(0xFF) << np.uint64(8 * house))) + laps * LAP_MASKS[house, 0] + RANGE_MASKS[
            house, rest, 0]
        row_left = row_seeds(row)
        plan[house] = REACH[house, sown]
        plan[ROW + house] = np.int64(laps * LAP_MASKS[house, 1] + RANGE_MASKS[house, rest, 1])
        plan[2 * ROW + house] = row_left
        plan[3 * ROW + house] = index.row_rank(row, row_left, index.OPPONENT_ROW)
    return mask


@hot_kernel
def _exit_block(seeds, lo, start, stop, values, counts, lined, flat, starts, use, first, rows, where, gains, owners,
                plan, offsets, order, base, ask):
    """The exits of file ranks start..stop-1, held at rank - lo (see
    exit_pass); returns the look-ups made. A child is found at starts[its
    layer] + its rank in `order` (offsets: index.order_offsets(order)).
    With `ask` nothing is looked up: the captures are left in where, gains
    and owners from index `base` on, for their children's owners to answer
    (exit_requests); the returned count says how many.

    The ranks come in runs that share the mover's row (index.unrank_row):
    what each house's sowing does to that row, where its last seed lands,
    what it adds to the opponent's row and the child's rank part from the
    sown row are worked out once a run (plan_run); a position then costs
    its capture tests (the landing house holding 2 or 3 once sown, for all
    houses at once, as rules.capture_candidates does), and a capture the
    chain taken back from the landing house and one row rank. The opponent
    words come from the run's table in order. A run whose opponent row is
    empty (one position) or whose mover row is empty (terminal) goes the
    general way (rules.legal_mask, rules.play).

    The block's captures are gathered first, their children's value bytes
    prefetched as they are found, and only then read: the misses of those
    scattered reads in the smaller layers overlap instead of following one
    another. The best capture is kept as best_capture keeps it.
    """
    asked = 0
    run = start  # the first rank of this block in the run
    while run < stop:
        mover, run_first, run_length, run_start = index.unrank_row(seeds, run, rows[0], rows[1], rows[3])
        run_stop = min(stop, run_first + run_length)
        opponent_seeds = seeds - row_seeds(mover)
        general = mover == 0 or opponent_seeds == 0
        moves = 0 if general else plan_run(mover, plan)
        for rank in range(run, run_stop):
            opponent = rows[2][run_start + rank - run_first]
            at_value = value_at(lined, rank - lo)
            if general:
                mask = legal_mask(mover, opponent)
                if mask == 0:
                    if first:
                        values[at_value] = pending(terminal_value(mover, opponent))
                    continue
                candidates = capture_candidates(mover, opponent) & mask
            else:
                mask = moves
                candidates = 0
                for house in range(ROW):
                    reach = plan[house]
                    after = np.int64((opponent >> np.uint64(reach & 0xFF)) & np.uint64(0xFF)) + (reach >> 8)
                    candidates |= np.int64(np.uint64(after - 2) < np.uint64(2)) << house  # after is 2 or 3
                candidates &= mask
            children = MOVES_IN[mask & ~candidates]
            while candidates:
                house = lowest_bit(candidates)
                candidates &= candidates - 1
                at = 0
                if general:
                    captured, child_mover, child_opponent = play(mover, opponent, house)
                    if captured > 0 and use[seeds - captured]:
                        at = starts[seeds - captured] + index.rank_packed_in(child_mover, child_opponent,
                                                                             seeds - captured, order)
                else:
                    # Sown, the opponent's row; the chain of 2s and 3s back from the landing lane is taken,
                    # unless that is every seed of the row (a grand slam captures nothing).
                    sown = opponent + np.uint64(plan[ROW + house])
                    lane = (plan[house] & 0xFF) >> 3
                    captured = 0
                    taken = np.uint64(0)
                    while lane >= 0:
                        held = np.int64((sown >> np.uint64(8 * lane)) & np.uint64(0xFF))
                        if held != 2 and held != 3:
                            break
                        captured += held
                        taken |= np.uint64(0xFF) << np.uint64(8 * lane)
                        lane -= 1
                    child_mover = sown & ~taken
                    if child_mover == 0:
                        captured = 0
                    if captured > 0 and use[seeds - captured]:
                        child_seeds = seeds - captured
                        left = plan[2 * ROW + house]
                        child_mover_seeds = child_seeds - left
                        at = (starts[child_seeds] + offsets[child_seeds, child_mover_seeds]
                              + index.row_rank(child_mover, child_mover_seeds, index.ANY_ROW)
                              * index.OPPONENT_ROWS[left] + plan[3 * ROW + house])
                if captured == 0:
                    children += 1  # a grand slam: it captures nothing
                elif use[seeds - captured]:
                    if not ask:
                        prefetch(flat, at)  # type: ignore[call-arg, arg-type]  # numba's @intrinsic passes typingctx
                    where[base + asked] = at
                    gains[base + asked] = captured
                    owners[base + asked] = at_value
                    asked += 1
            if first:
                values[at_value] = pending(NO_EXIT)
                counts[count_at(lined, rank - lo)] |= np.uint8(children << (((rank - lo) & 1) << 2))
        run = run_stop
    if ask:
        return asked
    for j in range(asked):
        exit = gains[j] - np.int64(flat[where[j]])
        if exit > pending_exit(values[owners[j]]):
            values[owners[j]] = pending(exit)
    return asked


@njit(cache=True, parallel=True)
def exit_pass(
    seeds: int,
    size: int,
    values: np.ndarray,
    counts: np.ndarray,
    flat: np.ndarray,
    starts: np.ndarray,
    use: np.ndarray,
    first: bool,
    rows: tuple[np.ndarray, ...],
    lined: bool,
    lo: int = 0,
) -> int:
    """One pass of exits over the layer, with the smaller layers marked in `use`.

    The first pass writes every position's pending code (terminal value, or
    its best capture into `use`) and its count of non-capturing children;
    a later one raises the pending code where a capture into `use` does
    better. Threads take whole blocks, hence whole count bytes, as they
    become free. Returns the look-ups made in the smaller layers. With
    `lined`, values and counts are one array in the lined layout
    (value_at, count_at) and `size` ranks are solved. With `lo`, they are
    ranks lo..lo+size-1 of the layer, held from index 0 (a slice of the
    layer: solver.disk; lo a multiple of BLOCK, and of LINE_RANKS when
    `lined`).
    """
    blocks = (size + BLOCK - 1) // BLOCK
    counter = np.zeros(1, dtype=np.int64)
    asked = np.zeros(WORK_SLOTS, dtype=np.int64)
    where = np.empty((WORK_SLOTS, BLOCK * ROW), dtype=np.int64)
    gains = np.empty((WORK_SLOTS, BLOCK * ROW), dtype=np.int64)
    owners = np.empty((WORK_SLOTS, BLOCK * ROW), dtype=np.int64)
    plans = np.zeros((WORK_SLOTS, PLAN_WORDS), dtype=np.int64)
    for slot in prange(WORK_SLOTS):
        while True:
            block = take(counter, 1)
            if block >= blocks:
                break
            start = lo + block * BLOCK
            asked[slot] += _exit_block(seeds, lo, start, min(lo + size, start + BLOCK), values, counts, lined, flat,
                                       starts, use, first, rows, where[slot], gains[slot], owners[slot], plans[slot],
                                       index.LAYER_OFFSET, index.FILE_ORDER, 0, False)
    return asked.sum()


RANK_BITS = 40  # an exit request names the child as layer << RANK_BITS | rank (a layer has < 2**38 positions)


@njit(cache=True, parallel=True)
def exit_requests(
    seeds: int,
    lo: int,
    start: int,
    stop: int,
    values: np.ndarray,
    counts: np.ndarray,
    rows: tuple[np.ndarray, ...],
    keys: np.ndarray,
    gains: np.ndarray,
    owners: np.ndarray,
    asked: np.ndarray,
    order: int = index.FILE_ORDER,
    lined: bool = True,
) -> None:
    """The exit pass of a slice whose smaller layers are spread over processes,
    or not resident (the lean stages' streamed exits: solver.lean_exits).

    For ranks start..stop-1 in `order` (values and counts one array in the
    lined layout, or apart as exit_pass has them without `lined`; local rank
    0 being rank lo; start - lo a multiple of BLOCK; children ranked in the
    same order) it writes what the first exit_pass writes, except that the
    captures are not looked up: a terminal position gets its value's
    pending code, any other NO_EXIT's and its count of non-capturing children, and each capture becomes a
    request for its child's owner. Block b (ranks start + b * BLOCK..)
    leaves asked[b] requests from index b * BLOCK * ROW on: keys[j] = child
    layer << RANK_BITS | child rank, gains[j] = seeds captured, owners[j] =
    where the capturing position's pending code lies in `values`.
    raise_exits() then applies the answers. The positions are generated as
    exit_pass generates them (_exit_block, a run of the mover's row at a
    time), over the runs of the file that `order` is made of.
    """
    blocks = (stop - start + BLOCK - 1) // BLOCK
    counter = np.zeros(1, dtype=np.int64)
    starts = np.arange(index.MAX_SEEDS + 1, dtype=np.int64) << RANK_BITS  # a child's key: its layer, then its rank
    use = np.ones(index.MAX_SEEDS + 1, dtype=np.bool_)
    flat = np.zeros(1, dtype=np.int8)  # nothing is read
    offsets = index.order_offsets(order)
    plans = np.zeros((WORK_SLOTS, PLAN_WORDS), dtype=np.int64)
    for slot in prange(WORK_SLOTS):
        while True:
            block = take(counter, 1)
            if block >= blocks:
                break
            rank = start + block * BLOCK
            last = min(stop, rank + BLOCK)
            base = block * BLOCK * ROW
            found = 0
            while rank < last:  # the block's runs of the file
                first_in_file, run_end = index.file_run(seeds, rank, order)
                end = min(last, run_end)
                found += _exit_block(seeds, first_in_file - (rank - lo), first_in_file, first_in_file + end - rank,
                                     values, counts, lined, flat, starts, use, True, rows, keys, gains, owners,
                                     plans[slot], offsets, order, base + found, True)
                rank = end
            asked[block] = found


@njit(cache=True)
def raise_exits(values: np.ndarray, slots: np.ndarray, gains: np.ndarray, owners: np.ndarray,
                answers: np.ndarray) -> None:
    """Apply answered exit requests: request slots[j] of exit_requests (its
    position's pending code at values[owners[slots[j]]], in the lined
    layout) captured gains[slots[j]] seeds into a child worth answers[j];
    the pending code is raised to the best capture (as best_capture keeps
    it)."""
    for j in range(slots.shape[0]):
        exit = np.int64(gains[slots[j]]) - np.int64(answers[j])
        at = owners[slots[j]]
        if exit > pending_exit(values[at]):
            values[at] = pending(exit)


@njit(cache=True)
def compiled_order_fingerprint() -> int:
    """index.ORDER_OFFSET as this file's kernels were compiled with it (a
    constant): retrograde.check_compiled_order compares it with index's."""
    return order_fingerprint(index.ORDER_OFFSET)
