"""Retrograde analysis: the exact value of every position of one layer.

Layer n holds the positions with n seeds on the board (see solver.index).
Capturing moves leave the layer for a smaller one, already solved; the best
of them is the position's *exit* value E(s) = max(captured - d(child)).
Terminal positions have E = +n (rule 5) or -n (rule 6) and no moves.
Non-capturing moves stay in the layer and can cycle, which is what makes the
layer hard.

Staged algorithm (the widening window of Romein and Bal, one pass per layer).
For k = n, n-1, ..., 1, stage k resolves exactly the positions with |d| = k,
given that every position with |d| > k is already resolved:

* s gets d = +k when E(s) >= k or a non-capturing move reaches a child with
  d = -k;
* s gets d = -k when E(s) <= -k and every non-capturing child is resolved
  (necessarily with d >= k).

Once stage 1 ends, what is left is endless play: d = 0.

Parallel scheme, race-free without atomics. Inside a stage the work alternates
between two sweeps, both split into fixed blocks of ranks that one thread owns
at a time:

* evaluate: each marked, unresolved position of the block is re-evaluated by
  pulling its children's values. If it resolves, it is written (by the
  owner only) and flagged FRESH in its exit byte, which nobody else reads.
* mark: for each FRESH position of the block, its predecessors are generated
  by un-sowing and marked for the next evaluate sweep. Marks are byte stores
  of the constant 1, so two threads marking the same position agree.

A stage is seeded by marking every unresolved position with E = +-k and
ends when an evaluate sweep resolves nothing. Reading a child's value while
another thread may be writing it is harmless: a value is only ever written
once, with its final value, so a position either sees it or sees it later.

Memory: one value byte, one exit byte and one mark byte per position of the
layer (3 bytes), plus a byte per block, plus the smaller layers at one byte per
position.
"""

import time

import numba
import numpy as np
from numba import njit, prange

from . import index
from .rules import LAP_MASKS, RANGE_MASKS, ROW, legal_mask, play, terminal_value

UNKNOWN = -128  # value byte of a position not resolved yet
NO_EXIT = -128  # exit byte of a position without capturing moves (E = -infinity)
FRESH = 127  # exit byte of a position resolved in the last evaluate sweep
DONE = 126  # exit byte of a resolved position whose predecessors were marked

BLOCK = 1 << 14  # ranks per block: the unit of work one thread owns
WALK_LIMIT = 8  # step with the successor walk over gaps up to this, else unrank
HIGH_BITS = np.uint64(0x0000808080808080)  # bit 7 of each house lane: borrow detector


@njit(cache=True, inline="always")
def _position_at(rank, current, mover, opponent, seeds, rows):
    """Words of `rank`, stepping from (current, mover, opponent) when it is close."""
    if current >= 0 and 0 <= rank - current <= WALK_LIMIT:
        while current < rank:
            ok, mover, opponent = index.next_packed(mover, opponent, seeds)
            current += 1
        return mover, opponent
    return index.unrank_fast(seeds, rank, rows[0], rows[1], rows[2], rows[3])


@njit(cache=True, inline="always")
def exit_value(mover, opponent, seeds, lower, lower_start):
    """E(s): best capturing move (captured - d(child)), the terminal value, or NO_EXIT."""
    mask = legal_mask(mover, opponent)
    if mask == 0:
        return terminal_value(mover, opponent)
    best = NO_EXIT
    for house in range(ROW):
        if mask & (1 << house):
            captured, child_mover, child_opponent = play(mover, opponent, house)
            if captured > 0:
                child_seeds = seeds - captured
                child = index.rank_packed(child_mover, child_opponent, child_seeds)
                value = captured - lower[lower_start[child_seeds] + child]
                if value > best:
                    best = value
    return best


@njit(cache=True, parallel=True)
def init_exits(seeds, values, exits, lower, lower_start, rows):
    """Fill the exit byte of every position and set every value to UNKNOWN."""
    size = values.shape[0]
    blocks = (size + BLOCK - 1) // BLOCK
    for block in prange(blocks):
        start = block * BLOCK
        stop = min(size, start + BLOCK)
        mover, opponent = index.unrank_fast(seeds, start, rows[0], rows[1], rows[2], rows[3])
        for rank in range(start, stop):
            values[rank] = UNKNOWN
            exits[rank] = exit_value(mover, opponent, seeds, lower, lower_start)
            ok, mover, opponent = index.next_packed(mover, opponent, seeds)


@njit(cache=True, parallel=True)
def seed_stage(stage, values, exits, marks, marked_blocks):
    """Mark every unresolved position whose exit value is +stage or -stage."""
    size = values.shape[0]
    blocks = (size + BLOCK - 1) // BLOCK
    for block in prange(blocks):
        start = block * BLOCK
        stop = min(size, start + BLOCK)
        any_marked = False
        for rank in range(start, stop):
            exit = exits[rank]
            if values[rank] == UNKNOWN and (exit == stage or exit == -stage):
                marks[rank] = 1
                any_marked = True
        if any_marked:
            marked_blocks[block] = 1


@njit(cache=True, parallel=True)
def evaluate_marked(stage, seeds, values, exits, marks, marked_blocks, fresh_blocks, rows):
    """Re-evaluate marked positions by pulling their children; return how many resolved."""
    size = values.shape[0]
    blocks = marked_blocks.shape[0]
    resolved = np.zeros(blocks, dtype=np.int64)
    for block in prange(blocks):
        if marked_blocks[block] == 0:
            continue
        marked_blocks[block] = 0
        start = block * BLOCK
        stop = min(size, start + BLOCK)
        current = -1
        mover = np.uint64(0)
        opponent = np.uint64(0)
        count = 0
        for rank in range(start, stop):
            if marks[rank] == 0:
                continue
            marks[rank] = 0
            if values[rank] != UNKNOWN:
                continue
            mover, opponent = _position_at(rank, current, mover, opponent, seeds, rows)
            current = rank
            best = np.int64(exits[rank])
            if best >= stage:
                values[rank] = stage
                exits[rank] = FRESH
                count += 1
                continue
            mask = legal_mask(mover, opponent)
            open_child = False
            for house in range(ROW):
                if mask & (1 << house):
                    captured, child_mover, child_opponent = play(mover, opponent, house)
                    if captured == 0:
                        child_value = values[index.rank_packed(child_mover, child_opponent, seeds)]
                        if child_value == UNKNOWN:
                            open_child = True
                        elif -child_value > best:
                            best = -child_value
            if best >= stage:
                values[rank] = stage
            elif not open_child and best <= -stage:
                values[rank] = -stage
            else:
                continue
            exits[rank] = FRESH
            count += 1
        if count:
            fresh_blocks[block] = 1
        resolved[block] = count
    return resolved.sum()


@njit(cache=True, inline="always")
def _mark(rank, values, marks, marked_blocks):
    if values[rank] == UNKNOWN:
        marks[rank] = 1
        marked_blocks[rank // BLOCK] = 1


@njit(cache=True)
def for_each_predecessor(mover, opponent, seeds, values, marks, marked_blocks):
    """Mark the unresolved in-layer predecessors of a position (words of the child).

    Un-sowing. The parent's own row after the move is the child's opponent
    row, and its origin house h is empty there. Sowing k = 11q + r seeds from
    h added q to each of the 11 other houses and 1 to the r after h, so the
    parent is the child minus those masks with k put back in h, provided no
    house goes negative (checked for all lanes at once by borrowing from bit
    7 of each lane). Ranges grow with r, so the first r that fails ends the
    loop, and a q that fails even with r = 0 ends the search. Each candidate
    is then played forward: it must be in the index, the move legal, and
    land on this child without capturing (which also settles grand slams).
    """
    after_mover = opponent
    after_opponent = mover
    found = 0
    for house in range(ROW):
        if (after_mover >> np.uint64(8 * house)) & np.uint64(0xFF) != 0:
            continue
        for laps in range(5):
            lap_failed = False
            lap_mover = np.uint64(laps) * LAP_MASKS[house, 0]
            lap_opponent = np.uint64(laps) * LAP_MASKS[house, 1]
            for rest in range(11):
                if laps == 0 and rest == 0:
                    continue
                take_mover = lap_mover + RANGE_MASKS[house, rest, 0]
                take_opponent = lap_opponent + RANGE_MASKS[house, rest, 1]
                left_mover = (after_mover | HIGH_BITS) - take_mover
                left_opponent = (after_opponent | HIGH_BITS) - take_opponent
                if (left_mover & HIGH_BITS) != HIGH_BITS or (left_opponent & HIGH_BITS) != HIGH_BITS:
                    lap_failed = rest == 0
                    break
                sown = laps * 11 + rest
                parent_mover = (left_mover ^ HIGH_BITS) | (np.uint64(sown) << np.uint64(8 * house))
                parent_opponent = left_opponent ^ HIGH_BITS
                if not index.packed_in_index(parent_opponent):
                    continue
                if not legal_mask(parent_mover, parent_opponent) & (1 << house):
                    continue
                captured, child_mover, child_opponent = play(parent_mover, parent_opponent, house)
                if captured != 0 or child_mover != mover or child_opponent != opponent:
                    continue
                found += 1
                _mark(index.rank_packed(parent_mover, parent_opponent, seeds), values, marks, marked_blocks)
            if lap_failed:
                break
    return found


@njit(cache=True, parallel=True)
def mark_predecessors(seeds, values, exits, marks, marked_blocks, fresh_blocks, rows):
    """For each FRESH position, mark its unresolved predecessors; FRESH becomes DONE."""
    size = values.shape[0]
    blocks = fresh_blocks.shape[0]
    for block in prange(blocks):
        if fresh_blocks[block] == 0:
            continue
        fresh_blocks[block] = 0
        start = block * BLOCK
        stop = min(size, start + BLOCK)
        current = -1
        mover = np.uint64(0)
        opponent = np.uint64(0)
        for rank in range(start, stop):
            if exits[rank] != FRESH:
                continue
            exits[rank] = DONE
            mover, opponent = _position_at(rank, current, mover, opponent, seeds, rows)
            current = rank
            for_each_predecessor(mover, opponent, seeds, values, marks, marked_blocks)


@njit(cache=True, parallel=True)
def settle_endless(values):
    """What no stage resolved is endless play: value 0."""
    for rank in prange(values.shape[0]):
        if values[rank] == UNKNOWN:
            values[rank] = 0


@njit(cache=True, parallel=True)
def bellman_mismatches(seeds, values, lower, lower_start, rows, limit):
    """Ranks (up to `limit`) whose value is not the best over their moves.

    d(s) must equal max(captured - d(child)) over capturing moves,
    -d(child) over the others, or the terminal value when there is no move.
    """
    size = values.shape[0]
    blocks = (size + BLOCK - 1) // BLOCK
    bad = np.full(blocks, -1, dtype=np.int64)
    counts = np.zeros(blocks, dtype=np.int64)
    for block in prange(blocks):
        start = block * BLOCK
        stop = min(size, start + BLOCK)
        mover, opponent = index.unrank_fast(seeds, start, rows[0], rows[1], rows[2], rows[3])
        for rank in range(start, stop):
            best = np.int64(exit_value(mover, opponent, seeds, lower, lower_start))
            mask = legal_mask(mover, opponent)
            for house in range(ROW):
                if mask & (1 << house):
                    captured, child_mover, child_opponent = play(mover, opponent, house)
                    if captured == 0:
                        value = -np.int64(values[index.rank_packed(child_mover, child_opponent, seeds)])
                        if value > best:
                            best = value
            if best != values[rank]:
                counts[block] += 1
                if bad[block] < 0:
                    bad[block] = rank
            ok, mover, opponent = index.next_packed(mover, opponent, seeds)
    found = bad[bad >= 0]
    return counts.sum(), found[:limit]


class LowerLayers:
    """Values of layers 0..n-1 held in one flat int8 array (1 byte a position).

    Kernels take (flat, starts) and read layer m, rank r at flat[starts[m] + r].
    """

    def __init__(self, max_seeds):
        self.max_seeds = max_seeds
        self.starts = np.zeros(max_seeds + 2, dtype=np.int64)
        for seeds in range(max_seeds + 1):
            self.starts[seeds + 1] = self.starts[seeds] + index.layer_size(seeds)
        self.flat = np.zeros(max(1, int(self.starts[max_seeds + 1])), dtype=np.int8)
        self.loaded = set()

    def layer(self, seeds):
        """The (writable) slice of layer `seeds`."""
        return self.flat[self.starts[seeds] : self.starts[seeds + 1]]

    def put(self, seeds, values):
        self.layer(seeds)[:] = values
        self.loaded.add(seeds)

    def nbytes(self):
        return int(self.starts[max(self.loaded) + 1]) if self.loaded else 0


class StageReport:
    """What one stage did: positions resolved and evaluate/mark rounds."""

    def __init__(self, stage, resolved, rounds):
        self.stage = stage
        self.resolved = resolved
        self.rounds = rounds


def solve_layer(seeds, lower, threads=None, rows=None, progress=None):
    """Values (int8 array in index order) of every position of layer `seeds`.

    `lower` is a LowerLayers holding every layer below `seeds`. `progress`, if
    given, is called as progress(stage_name, done_fraction) between steps.
    Returns (values, stats) with stats a dict of timings and stage reports.
    """
    if threads:
        numba.set_num_threads(int(threads))
    missing = [m for m in range(max(0, seeds - 15), seeds) if m not in lower.loaded]
    if missing:
        raise ValueError(f"layer {seeds} needs the values of layers {missing} first")
    if rows is None:
        rows = index.RowTables(seeds).arrays
    size = index.layer_size(seeds)
    blocks = (size + BLOCK - 1) // BLOCK
    values = np.empty(size, dtype=np.int8)
    exits = np.empty(size, dtype=np.int8)
    marks = np.zeros(size, dtype=np.uint8)
    marked_blocks = np.zeros(blocks, dtype=np.uint8)
    fresh_blocks = np.zeros(blocks, dtype=np.uint8)

    started = time.perf_counter()
    init_exits(seeds, values, exits, lower.flat, lower.starts, rows)
    exits_seconds = time.perf_counter() - started
    if progress:
        progress("exits", 1.0)

    stages = []
    for stage in range(seeds, 0, -1):
        seed_stage(stage, values, exits, marks, marked_blocks)
        resolved = 0
        rounds = 0
        while True:
            rounds += 1
            new = evaluate_marked(stage, seeds, values, exits, marks, marked_blocks, fresh_blocks, rows)
            if new == 0:
                break
            resolved += int(new)
            mark_predecessors(seeds, values, exits, marks, marked_blocks, fresh_blocks, rows)
        stages.append(StageReport(stage, resolved, rounds))
        if progress:
            progress(f"stage {stage}", (seeds - stage + 1) / seeds)
    settle_endless(values)
    seconds = time.perf_counter() - started
    stats = {
        "positions": size,
        "seconds": seconds,
        "exit_seconds": exits_seconds,
        "stages": [(s.stage, s.resolved, s.rounds) for s in stages],
        "working_bytes": values.nbytes + exits.nbytes + marks.nbytes + marked_blocks.nbytes + fresh_blocks.nbytes,
    }
    return values, stats


def solve_up_to(max_seeds, threads=None):
    """Values of every layer 0..max_seeds, in memory (for tests and small builds)."""
    lower = LowerLayers(max_seeds)
    rows = index.RowTables(max_seeds).arrays
    for seeds in range(max_seeds + 1):
        values, _ = solve_layer(seeds, lower, threads=threads, rows=rows)
        lower.put(seeds, values)
    return lower
