"""Retrograde analysis: the exact value of every position of one layer.

Layer n holds the positions with n seeds on the board (see solver.index).
Capturing moves leave the layer for a smaller one, already solved; the best
of them is the position's *exit* value E(s) = max(captured - d(child)).
Terminal positions have E = +n (rule 5) or -n (rule 6) and no moves.
Non-capturing moves stay in the layer and can cycle, which is what makes the
layer hard.

Staged algorithm (the widening window of Romein and Bal, one pass per layer).
For k = n, n-1, ..., 1, stage k resolves exactly the positions with |d| = k,
given that every position with |d| > k is already resolved. Each position
keeps a count of its non-capturing children not yet resolved (all resolved
children of an unresolved position are positive: a negative one would have
resolved it).

* Seeds: an unresolved s with E(s) = k is +k; one with E(s) = -k and no
  unresolved child is -k.
* Propagation: when c is resolved at -k, every unresolved predecessor is +k;
  when c is resolved at +k, each unresolved predecessor counts one child
  less, and one left with none and E <= -k is -k.

Once stage 1 ends, what is left is endless play: d = 0.

Parallel scheme. Work is split into blocks of ranks. A propagation sweep
takes the blocks flagged in the last sweep; for each FRESH position of its
block, a thread generates the predecessors by un-sowing and updates them
wherever they are, with byte atomics: a compare-and-swap claims an
unresolved position (so exactly one thread resolves it and flags it FRESH),
and an atomic decrement counts down its children. FRESH is cleared only by
the block's owner, so every resolved position is propagated exactly once.
Sweeps repeat until one finds nothing FRESH; flags for the next sweep go to
a second array, so none is lost while a sweep reads the first.

Memory: a (value, count) pair and an exit byte per position of the layer (3
bytes), a byte per block, and the smaller layers at one byte per position.
"""

import time
from collections import namedtuple

import numba
import numpy as np
from numba import njit, prange

from . import index
from .intrinsics import atomic_and, atomic_or, atomic_sub, compare_and_swap, prefetch_row
from .rules import LAP_MASKS, RANGE_MASKS, ROW, ROW_ONES, legal_mask, play, terminal_value

VALUE, COUNT = 0, 1  # columns of the per-position state array
UNKNOWN = -128  # value of a position not resolved yet
NO_EXIT = -128  # exit byte of a position without capturing moves (E = -infinity)
FRESH = 0x40  # bit of the count byte: resolved, predecessors not yet told
CHILDREN = 0x0F  # bits of the count byte: non-capturing children not resolved

BLOCK = 1 << 8  # ranks per block: the unit of work one thread owns
WALK_LIMIT = 8  # step with the successor walk over gaps up to this, else unrank
BATCH = 64  # predecessor ranks gathered (and prefetched) before they are updated
MAX_PREDECESSORS = 6 * 5 * 11  # a bound on the predecessors of one position
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
    """(E(s), non-capturing moves): E is the best capturing move (captured -
    d(child)), the terminal value when there is no move, or NO_EXIT."""
    mask = legal_mask(mover, opponent)
    if mask == 0:
        return terminal_value(mover, opponent), 0
    best = NO_EXIT
    children = 0
    for house in range(ROW):
        if mask & (1 << house):
            captured, child_mover, child_opponent = play(mover, opponent, house)
            if captured > 0:
                child_seeds = seeds - captured
                child = index.rank_packed(child_mover, child_opponent, child_seeds)
                value = captured - lower[lower_start[child_seeds] + child]
                if value > best:
                    best = value
            else:
                children += 1
    return best, children


@njit(cache=True, parallel=True)
def init_layer(seeds, state, exits, lower, lower_start, rows):
    """Every value UNKNOWN; exit bytes; counts of non-capturing children."""
    size = exits.shape[0]
    blocks = (size + BLOCK - 1) // BLOCK
    for block in prange(blocks):
        start = block * BLOCK
        stop = min(size, start + BLOCK)
        mover, opponent = index.unrank_fast(seeds, start, rows[0], rows[1], rows[2], rows[3])
        for rank in range(start, stop):
            best, children = exit_value(mover, opponent, seeds, lower, lower_start)
            state[rank, VALUE] = UNKNOWN
            state[rank, COUNT] = children
            exits[rank] = best
            ok, mover, opponent = index.next_packed(mover, opponent, seeds)


@njit(cache=True, inline="always")
def _has_byte(word, byte_pattern):
    """Whether any byte of `word` equals the byte repeated in `byte_pattern`."""
    diff = word ^ byte_pattern
    return ((diff - np.uint64(0x0101010101010101)) & ~diff & np.uint64(0x8080808080808080)) != 0


@njit(cache=True)
def _seed_block(stage, start, stop, state, exits, exit_words, plus, minus):
    count = 0
    for word in range(start // 8, (stop + 7) // 8):
        bits = exit_words[word]
        if not (_has_byte(bits, plus) or _has_byte(bits, minus)):
            continue
        for rank in range(word * 8, min(stop, word * 8 + 8)):
            best = exits[rank]
            if state[rank, VALUE] == UNKNOWN and (
                best == stage or (best == -stage and state[rank, COUNT] & CHILDREN == 0)
            ):
                state[rank, VALUE] = best
                state[rank, COUNT] = state[rank, COUNT] | FRESH
                count += 1
    return count


@njit(cache=True, parallel=True)
def seed_stage(stage, state, exits, exit_words, flags):
    """Resolve the stage's seeds in place (E = +stage, or E = -stage with no
    unresolved child) and flag their blocks; return how many.

    The exit bytes are scanned eight at a time (as words of `exit_words`),
    looking only into words that hold +stage or -stage somewhere.
    """
    size = exits.shape[0]
    blocks = flags.shape[0]
    plus = np.uint64(stage & 0xFF) * np.uint64(0x0101010101010101)
    minus = np.uint64((-stage) & 0xFF) * np.uint64(0x0101010101010101)
    resolved = np.zeros(blocks, dtype=np.int64)
    for block in prange(blocks):
        start = block * BLOCK
        count = _seed_block(stage, start, min(size, start + BLOCK), state, exits, exit_words, plus, minus)
        if count:
            flags[block] = 1
        resolved[block] = count
    return resolved.sum()


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


@njit(cache=True, inline="always")
def _tell(rank, child_value, stage, state, exits, next_flags):
    """A child of `rank` was resolved at child_value (+-stage); update `rank`.

    At -stage the predecessor is won (+stage). At +stage it has one unresolved
    child less, and with none left and an exit at most -stage it is lost
    (-stage). The compare-and-swap makes exactly one thread the resolver.
    Returns 1 if this call resolved the position.
    """
    if state[rank, VALUE] != UNKNOWN:
        return 0
    if child_value < 0:
        value = stage
    else:
        left = (atomic_sub(state, rank, COUNT, np.int8(1)) & CHILDREN) - 1
        if left != 0 or exits[rank] > -stage:
            return 0
        value = -stage
    if not compare_and_swap(state, rank, VALUE, np.int8(UNKNOWN), np.int8(value)):
        return 0
    atomic_or(state, rank, COUNT, np.int8(FRESH))
    next_flags[rank // BLOCK] = 1
    return 1


@njit(cache=True, parallel=True)
def propagate(stage, seeds, state, exits, active, next_flags, rows, scratch):
    """Tell the predecessors of every FRESH position of the `active` blocks.

    Returns how many FRESH positions were processed. Predecessor ranks are
    gathered (and prefetched) in batches before they are updated, so the cache
    misses of those scattered updates overlap.
    """
    size = exits.shape[0]
    processed = np.zeros(active.shape[0], dtype=np.int64)
    for item in prange(active.shape[0]):
        block = active[item]
        thread = numba.get_thread_id()
        found = scratch.found[thread]
        told = scratch.told[thread]
        start = block * BLOCK
        stop = min(size, start + BLOCK)
        current = -1
        mover = np.uint64(0)
        opponent = np.uint64(0)
        count = 0
        done = 0
        for rank in range(start, stop):
            if state[rank, COUNT] & FRESH == 0:
                continue
            atomic_and(state, rank, COUNT, np.int8(~FRESH))
            done += 1
            mover, opponent = _position_at(rank, current, mover, opponent, seeds, rows)
            current = rank
            added = predecessors(mover, opponent, seeds, state, found, count)
            told[count:added] = state[rank, VALUE]
            count = added
            if count >= BATCH:
                for i in range(count):
                    _tell(found[i], told[i], stage, state, exits, next_flags)
                count = 0
        for i in range(count):
            _tell(found[i], told[i], stage, state, exits, next_flags)
        processed[item] = done
    return processed.sum()


@njit(cache=True)
def byte_histogram(values):
    """Counts of each byte value (index: the byte as unsigned) of an int8
    array, without the 8-bytes-a-position temporary np.bincount would make."""
    counts = np.zeros(256, dtype=np.int64)
    for value in values:
        counts[np.uint8(value)] += 1
    return counts


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
            best = np.int64(exit_value(mover, opponent, seeds, lower, lower_start)[0])
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




Scratch = namedtuple("Scratch", "found told")


def make_scratch(threads):
    """Per-thread batch buffers, allocated once per layer rather than per block."""
    return Scratch(
        np.empty((threads, BATCH + MAX_PREDECESSORS), dtype=np.int64),
        np.empty((threads, BATCH + MAX_PREDECESSORS), dtype=np.int8),
    )


class LowerLayers:
    """Values of layers 0..max_seeds held in one flat int8 array (1 byte a position).

    Kernels take (flat, starts) and read layer m, rank r at flat[starts[m] + r];
    `starts` covers every seed count 0..48 (layers above max_seeds are empty).
    The array is allocated zeroed, so only the pages of layers put in it take
    memory.
    """

    def __init__(self, max_seeds):
        self.max_seeds = max_seeds
        self.starts = np.zeros(index.MAX_SEEDS + 2, dtype=np.int64)
        for seeds in range(index.MAX_SEEDS + 1):
            size = index.layer_size(seeds) if seeds <= max_seeds else 0
            self.starts[seeds + 1] = self.starts[seeds] + size
        self.flat = np.zeros(max(1, int(self.starts[max_seeds + 1])), dtype=np.int8)
        self.loaded = set()

    def layer(self, seeds):
        """The (writable) slice of layer `seeds`."""
        return self.flat[self.starts[seeds] : self.starts[seeds + 1]]

    def put(self, seeds, values):
        self.layer(seeds)[:] = values
        self.loaded.add(seeds)


class StageReport:
    """What one stage did: positions resolved and propagation sweeps."""

    def __init__(self, stage, resolved, sweeps):
        self.stage = stage
        self.resolved = resolved
        self.sweeps = sweeps


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
    # The value and count of a position side by side: telling a predecessor
    # reads one and updates the other, so a random access costs one miss.
    state = np.empty((size, 2), dtype=np.int8)
    exits = np.zeros((size + 7) // 8 * 8, dtype=np.int8)[:size]  # padded for exit_words
    exit_words = exits.base.view(np.uint64)
    flags = np.zeros(blocks, dtype=np.uint8)
    next_flags = np.zeros(blocks, dtype=np.uint8)

    # Each sweep runs over the list of flagged blocks only, split evenly
    # between the threads (static scheduling: numba's dynamic chunks cost
    # more in scheduling than they save in balance here).
    previous_chunk = numba.set_parallel_chunksize(0)
    try:
        threads_used = numba.get_num_threads()
        scratch = make_scratch(threads_used)
        started = time.perf_counter()
        init_layer(seeds, state, exits, lower.flat, lower.starts, rows)
        exits_seconds = time.perf_counter() - started
        if progress:
            progress("exits", 1.0)
        exit_counts = byte_histogram(exits)
        seed_seconds = 0.0
        stages = []
        for stage in range(seeds, 0, -1):
            tick = time.perf_counter()
            if exit_counts[stage] or exit_counts[(-stage) & 0xFF]:
                seed_stage(stage, state, exits, exit_words, flags)
            seed_seconds += time.perf_counter() - tick
            resolved = 0
            sweeps = 0
            while True:
                sweeps += 1
                active = np.flatnonzero(flags)
                if active.shape[0] == 0:
                    break
                flags[active] = 0
                resolved += int(propagate(stage, seeds, state, exits, active, next_flags, rows, scratch))
                flags, next_flags = next_flags, flags
            stages.append(StageReport(stage, resolved, sweeps))
            if progress:
                progress(f"stage {stage}", (seeds - stage + 1) / seeds)
        settle_endless(state)
    finally:
        numba.set_parallel_chunksize(previous_chunk)
    del exits, exit_words
    values = state[:, VALUE].copy()
    del state
    seconds = time.perf_counter() - started
    stats = {
        "positions": size,
        "seconds": seconds,
        "exit_seconds": exits_seconds,
        "seed_seconds": seed_seconds,
        "stages": [(s.stage, s.resolved, s.sweeps) for s in stages],
        "working_bytes": 3 * size + flags.nbytes + next_flags.nbytes,
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
