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
from collections import namedtuple

import numba
import numpy as np
from numba import njit, prange

from . import index
from .prefetch import prefetch_row
from .rules import LAP_MASKS, RANGE_MASKS, ROW, ROW_ONES, legal_mask, play, terminal_value

VALUE, MARK = 0, 1  # columns of the per-position state array
MARK_BYTES = np.uint64(0xFF00FF00FF00FF00)  # the mark bytes of four state rows read as one word
UNKNOWN = -128  # value byte of a position not resolved yet
NO_EXIT = -128  # exit byte of a position without capturing moves (E = -infinity)
CHECK = 1  # mark: a child was resolved (or a stage starts); re-evaluate
WIN = 2  # mark: a child was resolved at -stage, so this position is +stage
FRESH = 3  # mark of a position resolved in the last evaluate sweep (its owner's only)

BLOCK = 1 << 8  # ranks per block: the unit of work one thread owns
CHUNK_BLOCKS = 64  # blocks handed to a thread at a time (dynamic scheduling)
WALK_LIMIT = 8
BATCH = 64  # predecessor ranks gathered before marking them
EVALUATION_BATCH = 16  # positions whose children are ranked before they are pulled
MAX_PREDECESSORS = 6 * 5 * 11  # a bound on the predecessors of one position  # step with the successor walk over gaps up to this, else unrank
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
def init_exits(seeds, state, exits, lower, lower_start, rows):
    """Fill the exit byte of every position and set every value to UNKNOWN."""
    size = exits.shape[0]
    blocks = (size + BLOCK - 1) // BLOCK
    for block in prange(blocks):
        start = block * BLOCK
        stop = min(size, start + BLOCK)
        mover, opponent = index.unrank_fast(seeds, start, rows[0], rows[1], rows[2], rows[3])
        for rank in range(start, stop):
            state[rank, VALUE] = UNKNOWN
            exits[rank] = exit_value(mover, opponent, seeds, lower, lower_start)
            ok, mover, opponent = index.next_packed(mover, opponent, seeds)


@njit(cache=True, parallel=True)
def seed_stage(stage, state, exits, marked_blocks):
    """Mark every unresolved position whose exit value is +stage or -stage."""
    size = exits.shape[0]
    blocks = (size + BLOCK - 1) // BLOCK
    for block in prange(blocks):
        start = block * BLOCK
        stop = min(size, start + BLOCK)
        any_marked = False
        for rank in range(start, stop):
            exit = exits[rank]
            if state[rank, VALUE] == UNKNOWN and (exit == stage or exit == -stage):
                state[rank, MARK] = CHECK
                any_marked = True
        if any_marked:
            marked_blocks[block] = 1


@njit(cache=True, inline="always")
def _settle_batch(stage, state, exits, pending, pending_count, children, child_counts):
    """Resolve the pending positions of a batch from their (prefetched) children.

    A position is +stage if the best of its exit and -d(child) over resolved
    children reaches stage; it is -stage if every child is resolved and that
    best is at most -stage. Returns how many resolved.
    """
    resolved = 0
    for i in range(pending_count):
        rank = pending[i]
        best = np.int64(exits[rank])
        open_child = False
        for j in range(child_counts[i]):
            child_value = state[children[i, j], VALUE]
            if child_value == UNKNOWN:
                open_child = True
            elif -child_value > best:
                best = -child_value
        if best >= stage:
            state[rank, VALUE] = stage
        elif not open_child:
            state[rank, VALUE] = -stage
        else:
            continue
        state[rank, MARK] = FRESH
        resolved += 1
    return resolved


@njit(cache=True, parallel=True)
def evaluate_marked(stage, seeds, state, words, exits, marked_blocks, fresh_blocks, rows, scratch):
    """Resolve marked positions; return how many were resolved.

    A WIN mark (a child was resolved at -stage) or an exit reaching stage
    resolves to +stage at once. A position whose exit is at most -stage may
    be -stage: its non-capturing children are ranked and prefetched, a batch
    at a time, then pulled (see _settle_batch). Other marks are dropped.
    """
    size = exits.shape[0]
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
        thread = numba.get_thread_id()
        pending = scratch.pending[thread]
        children = scratch.children[thread]
        child_counts = scratch.child_counts[thread]
        pending_count = 0
        for rank in range(start, stop):
            if rank & 3 == 0 and words[rank >> 2] & MARK_BYTES == 0:
                continue  # none of these four positions is marked (rank + 3 < stop)
            mark = state[rank, MARK]
            if mark == 0:
                continue
            state[rank, MARK] = 0
            if state[rank, VALUE] != UNKNOWN:
                continue
            best = np.int64(exits[rank])
            if mark == WIN or best >= stage:
                state[rank, VALUE] = stage
                state[rank, MARK] = FRESH
                count += 1
                continue
            if best > -stage:
                continue
            mover, opponent = _position_at(rank, current, mover, opponent, seeds, rows)
            current = rank
            mask = legal_mask(mover, opponent)
            found = 0
            for house in range(ROW):
                if mask & (1 << house):
                    captured, child_mover, child_opponent = play(mover, opponent, house)
                    if captured == 0:
                        child = index.rank_packed(child_mover, child_opponent, seeds)
                        prefetch_row(state, child)
                        children[pending_count, found] = child
                        found += 1
            pending[pending_count] = rank
            child_counts[pending_count] = found
            pending_count += 1
            if pending_count == EVALUATION_BATCH:
                count += _settle_batch(stage, state, exits, pending, pending_count, children, child_counts)
                pending_count = 0
        count += _settle_batch(stage, state, exits, pending, pending_count, children, child_counts)
        if count:
            fresh_blocks[block] = 1
        resolved[block] = count
    return resolved.sum()


@njit(cache=True, inline="always")
def _mark(rank, win, state, marked_blocks):
    """Tell an unresolved predecessor that one of its children was resolved.

    A child at -stage wins the predecessor outright (WIN); a child at +stage
    asks for a re-evaluation (CHECK), which never overwrites a WIN. Resolved
    positions are left alone: their FRESH mark belongs to their owner.
    """
    if state[rank, VALUE] != UNKNOWN:
        return
    if win:
        state[rank, MARK] = WIN
    elif state[rank, MARK] == 0:
        state[rank, MARK] = CHECK
    else:
        return
    marked_blocks[rank // BLOCK] = 1


@njit(cache=True)
def predecessors(mover, opponent, seeds, state, found, count):
    """Append the ranks of the in-layer predecessors of a position (words of
    the child) to found[count:]; return the new count. Each rank's state row
    is prefetched, so the caller can mark a batch with its misses overlapped.

    Un-sowing. The parent's own row after the move is the child's opponent
    row, and its origin house h is empty there. Sowing k = 11q + r seeds from
    h added q to each of the 11 other houses and 1 to the r after h, so the
    parent is the child minus those masks with k put back in h, provided no
    house goes negative (checked for all lanes at once by borrowing from bit
    7 of each lane). Ranges grow with r, so the first r that fails ends the
    loop, and a q that fails even with r = 0 ends the search. A candidate
    must be in the index, the move legal (it feeds an empty opponent), and
    the move must not capture: only a last seed landing on an opponent house
    now holding 2 or 3 can capture, and then the move is played forward,
    which also settles grand slams (no capture, the seeds stay).
    """
    after_mover = opponent
    after_opponent = mover
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
                if ((parent_opponent - ROW_ONES) & ~parent_opponent & HIGH_BITS) == 0:
                    continue  # every opponent house occupied: outside the index
                if parent_opponent == 0 and sown < ROW - house:
                    continue  # the opponent is empty and this move does not feed him
                last = house + (rest if rest > 0 else 11)
                if ROW <= last < 2 * ROW:
                    landed = (after_opponent >> np.uint64(8 * (last - ROW))) & np.uint64(0xFF)
                    if landed == 2 or landed == 3:
                        # It captures, unless it is a grand slam: play it to know.
                        captured, child_mover, child_opponent = play(parent_mover, parent_opponent, house)
                        if captured != 0 or child_mover != mover or child_opponent != opponent:
                            continue
                parent = index.rank_packed(parent_mover, parent_opponent, seeds)
                prefetch_row(state, parent)
                found[count] = parent
                count += 1
            if lap_failed:
                break
    return count


@njit(cache=True, parallel=True)
def mark_predecessors(seeds, state, words, exits, marked_blocks, fresh_blocks, rows, scratch):
    """For each FRESH position, mark its unresolved predecessors and clear FRESH.

    Predecessor ranks are gathered (and prefetched) in batches before any is
    marked: the marks land at random places in the layer, and batching lets
    those cache misses overlap instead of being paid one after another.
    """
    size = exits.shape[0]
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
        thread = numba.get_thread_id()
        found = scratch.found[thread]
        wins = scratch.wins[thread]
        count = 0
        for rank in range(start, stop):
            if rank & 3 == 0 and words[rank >> 2] & MARK_BYTES == 0:
                continue  # none of these four positions is marked
            if state[rank, MARK] != FRESH:
                continue
            state[rank, MARK] = 0
            mover, opponent = _position_at(rank, current, mover, opponent, seeds, rows)
            current = rank
            added = predecessors(mover, opponent, seeds, state, found, count)
            wins[count:added] = state[rank, VALUE] < 0
            count = added
            if count >= BATCH or rank == stop - 1:
                for i in range(count):
                    _mark(found[i], wins[i], state, marked_blocks)
                count = 0
        for i in range(count):
            _mark(found[i], wins[i], state, marked_blocks)


@njit(cache=True, parallel=True)
def settle_endless(state):
    """What no stage resolved is endless play: value 0."""
    for rank in prange(state.shape[0]):
        if state[rank, VALUE] == UNKNOWN:
            state[rank, VALUE] = 0


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


Scratch = namedtuple("Scratch", "pending children child_counts found wins")


def make_scratch(threads):
    """Per-thread batch buffers, allocated once per layer rather than per block."""
    return Scratch(
        np.empty((threads, EVALUATION_BATCH), dtype=np.int64),
        np.empty((threads, EVALUATION_BATCH, ROW), dtype=np.int64),
        np.empty((threads, EVALUATION_BATCH), dtype=np.int64),
        np.empty((threads, BATCH + MAX_PREDECESSORS), dtype=np.int64),
        np.empty((threads, BATCH + MAX_PREDECESSORS), dtype=np.bool_),
    )


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
    # The value and mark of a position side by side: the predecessor sweep
    # reads one and writes the other, so a random access costs one miss.
    # Rows padded to a multiple of four so that `words` (the same bytes as
    # uint64) lets sweeps skip four unmarked positions with one test.
    state = np.zeros(((size + 3) // 4 * 4, 2), dtype=np.int8)
    words = state.reshape(-1).view(np.uint64)
    exits = np.empty(size, dtype=np.int8)
    marked_blocks = np.zeros(blocks, dtype=np.uint8)
    fresh_blocks = np.zeros(blocks, dtype=np.uint8)

    # Marked blocks cluster in parts of the rank space: hand them out in
    # small chunks rather than one contiguous half per thread.
    previous_chunk = numba.set_parallel_chunksize(CHUNK_BLOCKS)
    scratch = make_scratch(numba.get_num_threads())
    started = time.perf_counter()
    init_exits(seeds, state, exits, lower.flat, lower.starts, rows)
    exits_seconds = time.perf_counter() - started
    if progress:
        progress("exits", 1.0)

    stages = []
    for stage in range(seeds, 0, -1):
        seed_stage(stage, state, exits, marked_blocks)
        resolved = 0
        rounds = 0
        while True:
            rounds += 1
            new = evaluate_marked(stage, seeds, state, words, exits, marked_blocks, fresh_blocks, rows, scratch)
            if new == 0:
                break
            resolved += int(new)
            mark_predecessors(seeds, state, words, exits, marked_blocks, fresh_blocks, rows, scratch)
        stages.append(StageReport(stage, resolved, rounds))
        if progress:
            progress(f"stage {stage}", (seeds - stage + 1) / seeds)
    settle_endless(state)
    numba.set_parallel_chunksize(previous_chunk)
    del exits
    values = state[:size, VALUE].copy()
    del state
    seconds = time.perf_counter() - started
    stats = {
        "positions": size,
        "seconds": seconds,
        "exit_seconds": exits_seconds,
        "stages": [(s.stage, s.resolved, s.rounds) for s in stages],
        "working_bytes": 3 * size + marked_blocks.nbytes + fresh_blocks.nbytes,
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
