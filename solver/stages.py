"""The stages of a layer on one process, and the loop that runs them.

A layer built by one process runs each stage as one pass, depth first
(propagate_stage): a thread scans its blocks for the stage's seeds, claims
each, tells its predecessors, and pushes every predecessor it resolves on
a stack of its own together with the words un-sowing gave it, to be told
of in turn. So a position resolved by propagation is never unranked and
never looked for again; the order inside a stage does not matter, since
whatever stage k resolves it resolves at +-k. The measured effect, on
layers 24..28 against the sweeps alone: see README (Performance).

The sweeps remain for what a stack or an outbox cannot hold: a resolved position is flagged FRESH
in its block, and a sweep takes the flagged blocks and, for each FRESH
position, tells its predecessors. FRESH is cleared only by the block's
owner, so every resolved position is propagated exactly once. Sweeps
repeat until one finds nothing FRESH; flags for the next sweep go to a
second array, so none is lost while a sweep reads the first.

run_stages runs the stages, seeded and swept, for a layer (solver.retrograde),
a slice of one (solver.distributed) and an explicit graph (solver.graph_stages).
The disk mode (solver.disk) runs seed_stage, propagate and tell_received on
its slices, one at a time.
"""

import time
from collections import namedtuple
from collections.abc import Callable

import numba
import numpy as np
from numba import njit, prange

# The kernels take index's tables (rank offsets, the distance order of
# 2026-12-05: bands interleaved) into their code as constants, and numba's
# cache is keyed on each file alone: a change to those tables must come
# with a change to this file, or a cached kernel keeps the old ones
# (retrograde.check_compiled_order finds that).
from . import index
from .intrinsics import atomic_and, atomic_or, atomic_sub, compare_and_swap
from .layer_state import (
    BATCH,
    BLOCK,
    BYTE_ONES,
    CHILDREN,
    COUNT_HEAD,
    FRESH,
    FRESH_NIBBLES,
    LINE,
    LINE_RANKS,
    LINE_VALUE_WORDS,
    MAX_PREDECESSORS,
    RANK_CHUNK,
    SEED_CHUNK,
    SERIAL_BLOCKS,
    SERIAL_SIZE,
    WORK_SLOTS,
    count_at,
    has_byte,
    hot_kernel,
    order_fingerprint,
    pending,
    pending_exit,
    predecessors,
    resolved,
    take,
    thread_count,
    value_at,
)
from .layers import byte_histogram

WALK_LIMIT = 8  # step with the successor walk over gaps up to this, else unrank
TALLY_STRIDE = 16  # int64 columns of a thread's row of tallies: two cache lines, of which it uses 2 words, so
# the threads' counters, bumped at every predecessor told, never share a line (they did: layer 22's stages
# took 10.4 s against 8.9 s with the rows apart, two threads, in one process, alternating)


@njit(cache=True, inline="always")
def _nibble(counts, lined, rank):
    return (np.int64(counts[count_at(lined, rank)]) >> ((rank & 1) << 2)) & 0xF


@njit(cache=True, inline="always")
def _position_at(rank, current, mover, opponent, seeds, rows):
    """Words of `rank`, stepping from (current, mover, opponent) when it is close."""
    if current >= 0 and 0 <= rank - current <= WALK_LIMIT:
        while current < rank:
            _ok, mover, opponent = index.next_packed(mover, opponent, seeds)
            current += 1
        return mover, opponent
    return index.unrank_fast(seeds, rank, rows[0], rows[1], rows[2], rows[3])


@njit(cache=True, inline="always")
def seed_value(stage, code, counts, lined, rank):
    """The value `rank` (value byte `code`) is a seed of the stage at: +stage
    for an exit of +stage, -stage for an exit of -stage and no unresolved
    child; else 0."""
    if code == pending(stage):
        return stage
    if code == pending(-stage) and _nibble(counts, lined, rank) & CHILDREN == 0:
        return -stage
    return 0


@njit(cache=True, inline="always")
def _seed_rank(stage, rank, values, counts, lined):
    """Resolve `rank` if it is a seed of the stage (flagged FRESH); 1 if it was."""
    at = value_at(lined, rank)
    value = seed_value(stage, values[at], counts, lined, rank)
    if value == 0:
        return 0
    values[at] = value
    counts[count_at(lined, rank)] |= np.uint8(FRESH << ((rank & 1) << 2))
    return 1


@hot_kernel
def _seed_block(stage, start, stop, values, counts, lined, value_words, plus, minus):
    """The seeds of ranks start..stop-1, looked for in the words holding a
    pending code of +stage or -stage (in the lined layout, the words of a
    line's value bytes; the last of them also holds count bytes, which can
    only make a word looked into for nothing)."""
    count = 0
    if lined:
        for line in range(start // LINE_RANKS, (stop - 1) // LINE_RANKS + 1):
            for word in range(LINE_VALUE_WORDS):
                bits = value_words[line * (LINE // 8) + word]
                if not (has_byte(bits, plus) or has_byte(bits, minus)):
                    continue
                for slot in range(8 * word, min(8 * word + 8, LINE_RANKS)):
                    rank = line * LINE_RANKS + slot
                    if start <= rank < stop:
                        count += _seed_rank(stage, rank, values, counts, lined)
        return count
    for word in range(start // 8, (stop + 7) // 8):
        bits = value_words[word]
        if not (has_byte(bits, plus) or has_byte(bits, minus)):
            continue
        for rank in range(word * 8, min(stop, word * 8 + 8)):
            count += _seed_rank(stage, rank, values, counts, lined)
    return count


@njit(cache=True, parallel=True)
def seed_stage(
    stage: int, size: int, values: np.ndarray, counts: np.ndarray, value_words: np.ndarray, flags: np.ndarray,
    lined: bool,
) -> int:
    """Resolve the stage's seeds among the `size` ranks in place (E = +stage,
    or E = -stage with no unresolved child) and flag their blocks; return
    how many.

    The value bytes are scanned eight at a time (as words of `value_words`),
    looking only into words that hold the pending code of +stage or -stage.
    """
    blocks = flags.shape[0]
    plus = np.uint64(np.int64(pending(stage)) & 0xFF) * BYTE_ONES
    minus = np.uint64(np.int64(pending(-stage)) & 0xFF) * BYTE_ONES
    counter = np.zeros(1, dtype=np.int64)
    found = np.zeros(WORK_SLOTS, dtype=np.int64)
    for slot in prange(WORK_SLOTS):
        while True:
            first = take(counter, SEED_CHUNK)
            if first >= blocks:
                break
            for block in range(first, min(blocks, first + SEED_CHUNK)):
                start = block * BLOCK
                count = _seed_block(stage, start, min(size, start + BLOCK), values, counts, lined, value_words, plus,
                                    minus)
                if count:
                    flags[block] = 1
                found[slot] += count
    return found.sum()


@njit(cache=True, inline="always")
def claim(rank, child_value, stage, values, counts, lined):
    """A child of `rank` was resolved at child_value (+-stage); update `rank`.

    At -stage the predecessor is won (+stage). At +stage it has one unresolved
    child less, and with none left and an exit at most -stage it is lost
    (-stage). The compare-and-swap of the pending code makes exactly one
    thread the resolver. Returns (scattered accesses made, the value `rank`
    was resolved at by this call or 0). The accesses are 1 (the value byte)
    or 2 (the value byte and the count nibble, which lie in different
    arrays, or in one line in the lined layout: 1); the resolver's writes go
    to lines it has just read.
    """
    at_value = value_at(lined, rank)
    code = values[at_value]
    if resolved(code):
        return 1, 0
    both = 1 if lined or child_value < 0 else 2
    if child_value < 0:
        value = stage
    else:
        shift = (rank & 1) << 2
        old = atomic_sub(counts, count_at(lined, rank), np.uint8(1 << shift))
        if (np.int64(old) >> shift) & CHILDREN != 1:
            return both, 0
        code = values[at_value]
        if resolved(code) or pending_exit(code) > -stage:
            return both, 0
        value = -stage
    if compare_and_swap(values, at_value, code, np.int8(value)):  # type: ignore[call-arg, arg-type]  # numba's @intrinsic passes typingctx
        return both, value
    return both, 0


@njit(cache=True, inline="always")
def flag_fresh(rank, counts, lined, next_flags):
    """Mark a resolved `rank` FRESH (its predecessors to be told by a sweep) and flag its block."""
    atomic_or(counts, count_at(lined, rank), np.uint8(FRESH << ((rank & 1) << 2)))
    next_flags[rank // BLOCK] = 1


@njit(cache=True, inline="always")
def tell(rank, child_value, stage, values, counts, lined, next_flags):
    """claim, a position it resolves flagged FRESH; returns the accesses made."""
    accesses, value = claim(rank, child_value, stage, values, counts, lined)
    if value != 0:
        flag_fresh(rank, counts, lined, next_flags)
    return accesses


@njit(cache=True, inline="always")
def _tell_batch(found, told, count, lo, size, stage, values, counts, lined, next_flags, outbox, sent):
    """Tell a batch of predecessors: those held here at once, the others
    (another process's slice) into `outbox` as (rank << 1) | (child lost).
    Returns the new outbox length and the scattered accesses made here."""
    accesses = 0
    for i in range(count):
        local = found[i] - lo
        if 0 <= local < size:
            accesses += tell(local, told[i], stage, values, counts, lined, next_flags)
        else:
            outbox[sent] = (found[i] << 1) | (1 if told[i] < 0 else 0)
            sent += 1
    return sent, accesses


@njit(cache=True, inline="always")
def _line_fresh(words, line):
    """Whether any position of a line (lined layout; `words`: the array as
    uint64) is FRESH: its count bytes are bytes 42..63, in words 5..7."""
    at = line * (LINE // 8)
    return ((words[at + 5] & COUNT_HEAD) | words[at + 6] | words[at + 7]) & FRESH_NIBBLES != 0


@hot_kernel
def _propagate_block(stage, seeds, lo, size, block, values, counts, lined, words, next_flags, rows, found, movers,
                     opponents, told, outbox, sent, room, tally, order):
    """propagate() for one block: (FRESH positions processed, new outbox length);
    tally[0] gains the predecessors told here, tally[1] the scattered accesses.
    In the lined layout a line with nothing FRESH is passed in one test."""
    start = block * BLOCK
    stop = min(size, start + BLOCK)
    current = -1
    mover = np.uint64(0)
    opponent = np.uint64(0)
    count = 0
    done = 0
    local = start - 1
    while True:
        local += 1
        if local >= stop:
            break
        if lined and (local == start or local % LINE_RANKS == 0) and not _line_fresh(words, local // LINE_RANKS):
            local = (local // LINE_RANKS + 1) * LINE_RANKS - 1
            continue
        shift = (local & 1) << 2
        at_count = count_at(lined, local)
        if (np.int64(counts[at_count]) >> shift) & FRESH == 0:
            continue
        if sent > room:
            next_flags[block] = 1  # outbox full: the rest of the block next sweep
            break
        atomic_and(counts, at_count, np.uint8(~(FRESH << shift) & 0xFF))
        done += 1
        at = index.file_rank(seeds, lo + local, order)  # unranked, or walked to, in the file's order
        mover, opponent = _position_at(at, current, mover, opponent, seeds, rows)
        current = at
        value = values[value_at(lined, local)]
        added = predecessors(mover, opponent, seeds, lo, size, values, counts, lined, value > 0, found, count, movers,
                             opponents, order)
        told[count:added] = value
        count = added
        if count >= BATCH:
            tally[0] += count
            sent, accesses = _tell_batch(found, told, count, lo, size, stage, values, counts, lined, next_flags, outbox,
                                         sent)
            tally[1] += accesses
            count = 0
    tally[0] += count
    sent, accesses = _tell_batch(found, told, count, lo, size, stage, values, counts, lined, next_flags, outbox, sent)
    tally[1] += accesses
    return done, sent


@njit(cache=True, parallel=True)
def propagate(
    stage: int,
    seeds: int,
    lo: int,
    values: np.ndarray,
    counts: np.ndarray,
    active: np.ndarray,
    next_flags: np.ndarray,
    rows: tuple[np.ndarray, ...],
    scratch: "Scratch",
    lined_ranks: int = 0,
    order: int = index.FILE_ORDER,
) -> int:
    """Tell the predecessors of every FRESH position of the `active` blocks.

    The arrays hold a slice of the layer: values[i] is rank lo + i in
    `order` (lo a multiple of BLOCK; the whole layer when one process
    builds it). With
    `lined_ranks`, values and counts are one array holding that many ranks
    in the lined layout (value_at, count_at).
    Predecessors outside the slice go to the threads' outboxes
    (scratch.outbox[thread, :scratch.sent[thread]]) for their owners; a
    thread whose outbox has no room for another position's predecessors
    stops its block and flags it again in `next_flags`, so nothing is lost.
    Returns how many FRESH positions were processed; scratch.tally[thread]
    counts the predecessors told and the scattered accesses made.
    Predecessor ranks are gathered (and prefetched) in batches before they
    are updated, so the cache misses of those scattered updates overlap.
    Threads take the active blocks one at a time as they become free.
    """
    lined = lined_ranks > 0
    size = lined_ranks if lined else values.shape[0]
    words = counts[: counts.shape[0] // 8 * 8].view(np.uint64)  # read only in the lined layout (whole lines)
    processed = np.zeros(WORK_SLOTS, dtype=np.int64)
    capacity = scratch.outbox.shape[1]
    room = capacity - BATCH - MAX_PREDECESSORS if capacity > 0 else size * MAX_PREDECESSORS
    # Taken out of the tuple before the parallel loop: numba loses writes
    # made inside a prange through a tuple's field (found with a test).
    outboxes = scratch.outbox
    sent_counts = scratch.sent
    tallies = scratch.tally
    founds = scratch.found
    movers = scratch.movers
    opponents = scratch.opponents
    tolds = scratch.told
    counter = np.zeros(1, dtype=np.int64)
    for slot in prange(WORK_SLOTS):
        thread = numba.get_thread_id()  # the scratch rows are the threads' (a thread runs its slots in turn)
        sent = sent_counts[thread]
        while True:
            item = take(counter, 1)
            if item >= active.shape[0]:
                break
            done, sent = _propagate_block(stage, seeds, lo, size, active[item], values, counts, lined, words,
                                          next_flags, rows, founds[thread], movers[thread], opponents[thread],
                                          tolds[thread], outboxes[thread], sent, room, tallies[thread], order)
            processed[slot] += done
        sent_counts[thread] = sent
    return processed.sum()


STACK = 1 << 14  # resolved positions a thread holds to tell of (propagate_stage); more are flagged FRESH


@njit(cache=True, inline="always")
def _tell_stacking(stage, values, counts, next_flags, found, movers, opponents, told, count, stack, stack_movers,
                   stack_opponents, depth, tally):
    """Tell a batch of predecessors (all held here, lined layout) and push
    each one resolved on the thread's stack with its words, or flag it
    FRESH for a later sweep when the stack is full. Returns the new depth."""
    for i in range(count):
        rank = found[i]
        accesses, value = claim(rank, told[i], stage, values, counts, True)
        tally[1] += accesses
        if value == 0:
            continue
        if depth < stack.shape[0]:
            stack[depth] = (rank << 1) | (1 if value < 0 else 0)
            stack_movers[depth] = movers[i]
            stack_opponents[depth] = opponents[i]
            depth += 1
        else:
            flag_fresh(rank, counts, True, next_flags)
    tally[0] += count
    return depth


@njit(cache=True, inline="always")
def _drain(stage, seeds, size, values, counts, next_flags, found, movers, opponents, told, count, stack, stack_movers,
           stack_opponents, depth, tally, final):
    """Tell of the positions on the stack, a batch at a time, and of those
    they resolve in turn. Stops with a partial batch once the stack is
    empty, unless `final`: then the batch is told too, until both are
    empty. Returns (batch count, stack depth, positions taken off the stack)."""
    taken = 0
    while True:
        while depth > 0 and count < BATCH:
            depth -= 1
            entry = stack[depth]
            value = -stage if entry & 1 else stage
            added = predecessors(stack_movers[depth], stack_opponents[depth], seeds, 0, size, values, counts, True,
                                 value > 0, found, count, movers, opponents)
            told[count:added] = value
            count = added
            taken += 1
        if count == 0 or (count < BATCH and not final):
            return count, depth, taken
        depth = _tell_stacking(stage, values, counts, next_flags, found, movers, opponents, told, count, stack,
                               stack_movers, stack_opponents, depth, tally)
        count = 0


@hot_kernel
def _stage_block(stage, seeds, size, start, stop, values, counts, value_words, next_flags, rows, plus, minus, found,
                 movers, opponents, told, stack, stack_movers, stack_opponents, tally):
    """propagate_stage for ranks start..stop-1: resolve the block's seeds and
    tell of them, and of every position that resolves, depth first; returns
    the positions told of."""
    mover = np.uint64(0)
    run_first = run_length = run_start = 0  # the ranks sharing `mover` (index.unrank_row): none yet
    count = 0
    depth = 0
    done = 0
    for line in range(start // LINE_RANKS, (stop - 1) // LINE_RANKS + 1):
        for word in range(LINE_VALUE_WORDS):
            bits = value_words[line * (LINE // 8) + word]
            if not (has_byte(bits, plus) or has_byte(bits, minus)):
                continue
            for slot in range(8 * word, min(8 * word + 8, LINE_RANKS)):
                rank = line * LINE_RANKS + slot
                if rank < start or rank >= stop:
                    continue
                at = line * LINE + slot
                code = values[at]
                value = seed_value(stage, code, counts, True, rank)
                if value == 0:
                    continue
                # Another thread may resolve it first, telling of one of its children.
                if not compare_and_swap(values, at, code, np.int8(value)):  # type: ignore[call-arg, arg-type]  # numba's @intrinsic passes typingctx
                    continue
                if not run_first <= rank < run_first + run_length:
                    mover, run_first, run_length, run_start = index.unrank_row(seeds, rank, rows[0], rows[1], rows[3])
                opponent = rows[2][run_start + rank - run_first]
                added = predecessors(mover, opponent, seeds, 0, size, values, counts, True, value > 0, found, count,
                                     movers, opponents)
                told[count:added] = value
                count = added
                done += 1
                if count >= BATCH:
                    depth = _tell_stacking(stage, values, counts, next_flags, found, movers, opponents, told, count,
                                           stack, stack_movers, stack_opponents, depth, tally)
                    count, depth, taken = _drain(stage, seeds, size, values, counts, next_flags, found, movers,
                                                 opponents, told, 0, stack, stack_movers, stack_opponents, depth,
                                                 tally, False)
                    done += taken
    count, depth, taken = _drain(stage, seeds, size, values, counts, next_flags, found, movers, opponents, told, count,
                                 stack, stack_movers, stack_opponents, depth, tally, True)
    return done + taken


@njit(cache=True, parallel=True)
def propagate_stage(
    stage: int,
    seeds: int,
    size: int,
    values: np.ndarray,
    value_words: np.ndarray,
    next_flags: np.ndarray,
    rows: tuple[np.ndarray, ...],
    scratch: "Scratch",
) -> int:
    """A stage's seeding and its propagation at once, for a whole layer in
    the lined layout: returns the positions resolved and told of.

    Threads take chunks of blocks as they become free and scan them for the
    stage's seeds as seed_stage does, but each seed is claimed with a
    compare-and-swap and told of at once; every predecessor that resolves is
    pushed on the thread's stack with the words predecessors() un-sowed for
    it, and told of in turn (depth first), so no position is unranked again
    and no sweep has to look for it. Order inside a stage does not matter:
    whatever resolves in stage k resolves at +-k. A position that finds the
    stack full is flagged FRESH in `next_flags`, for propagate() sweeps.
    """
    counts = values.view(np.uint8)
    blocks = next_flags.shape[0]
    plus = np.uint64(np.int64(pending(stage)) & 0xFF) * BYTE_ONES
    minus = np.uint64(np.int64(pending(-stage)) & 0xFF) * BYTE_ONES
    processed = np.zeros(WORK_SLOTS, dtype=np.int64)
    founds = scratch.found
    movers = scratch.movers
    opponents = scratch.opponents
    tolds = scratch.told
    tallies = scratch.tally
    stacks = scratch.stack
    stack_movers = scratch.stack_movers
    stack_opponents = scratch.stack_opponents
    counter = np.zeros(1, dtype=np.int64)
    for slot in prange(WORK_SLOTS):
        thread = numba.get_thread_id()
        while True:
            first = take(counter, SEED_CHUNK)
            if first >= blocks:
                break
            stop = min(size, (first + SEED_CHUNK) * BLOCK)
            processed[slot] += _stage_block(stage, seeds, size, first * BLOCK, stop, values, counts, value_words,
                                            next_flags, rows, plus, minus, founds[thread], movers[thread],
                                            opponents[thread], tolds[thread], stacks[thread], stack_movers[thread],
                                            stack_opponents[thread], tallies[thread])
    return processed.sum()


@njit(cache=True, parallel=True)
def tell_received(
    stage: int, lo: int, updates: np.ndarray, values: np.ndarray, counts: np.ndarray, next_flags: np.ndarray,
    lined: bool = False,
) -> None:
    """Apply updates from other processes (or, in the disk mode, from other
    slices): each is (rank << 1) | (child lost), for a rank of this slice,
    as tell would have applied it here. With `lined`, values and counts
    are one array in the lined layout."""
    total = updates.shape[0]
    counter = np.zeros(1, dtype=np.int64)
    for _slot in prange(WORK_SLOTS):
        while True:
            first = take(counter, RANK_CHUNK)
            if first >= total:
                break
            for i in range(first, min(total, first + RANK_CHUNK)):
                update = updates[i]
                tell((update >> 1) - lo, -stage if update & 1 else stage, stage, values, counts, lined, next_flags)


@njit(cache=True, parallel=True)
def settle_endless(values: np.ndarray) -> None:
    """What no stage resolved is endless play: value 0."""
    size = values.shape[0]
    counter = np.zeros(1, dtype=np.int64)
    for _slot in prange(WORK_SLOTS):
        while True:
            first = take(counter, RANK_CHUNK)
            if first >= size:
                break
            for rank in range(first, min(size, first + RANK_CHUNK)):
                if not resolved(values[rank]):
                    values[rank] = 0


@njit(cache=True)
def line_histogram(cells: np.ndarray, size: int) -> np.ndarray:
    """byte_histogram of the value bytes of `size` ranks in the lined layout."""
    counts = np.zeros(256, dtype=np.int64)
    for line in range((size + LINE_RANKS - 1) // LINE_RANKS):
        for slot in range(min(LINE_RANKS, size - line * LINE_RANKS)):
            counts[np.uint8(cells[line * LINE + slot])] += 1
    return counts


@njit(cache=True, parallel=True)
def compact_lines(cells: np.ndarray, size: int, out: np.ndarray, first_line: int, last_line: int) -> None:
    """The value bytes of lines first_line..last_line-1 (of `size` ranks in
    the lined layout) into out[rank], in rank order: the layer's slot of
    the store. What no stage resolved is endless play: 0 (settle_endless)."""
    counter = np.zeros(1, dtype=np.int64)
    lines = last_line - first_line
    step = RANK_CHUNK // LINE_RANKS
    for _slot in prange(WORK_SLOTS):
        while True:
            first = take(counter, step)
            if first >= lines:
                break
            for line in range(first_line + first, first_line + min(lines, first + step)):
                base = line * LINE_RANKS
                for slot in range(min(LINE_RANKS, size - base)):
                    code = cells[line * LINE + slot]
                    out[base + slot] = code if resolved(code) else 0


Scratch = namedtuple("Scratch", "found movers opponents told outbox sent tally stack stack_movers stack_opponents")


def make_scratch(threads: int, outbox: int = 0, stack: int = 0) -> Scratch:
    """Per-thread buffers, allocated once per layer rather than per block:
    a batch of predecessors (ranks, words, the value each is told of), an
    outbox of `outbox` updates for other processes' ranks (none when one
    process holds the whole layer), each thread's tally of predecessors
    told and scattered accesses made (columns 0 and 1 of a row padded to
    its own cache lines: TALLY_STRIDE), and a stack of `stack` resolved
    positions still to be told of (rank and value in `stack`, words beside
    it; see propagate_stage)."""
    outbox = outbox and outbox + BATCH + MAX_PREDECESSORS
    batch = BATCH + MAX_PREDECESSORS
    return Scratch(
        np.empty((threads, batch), dtype=np.int64),
        np.empty((threads, batch), dtype=np.uint64),
        np.empty((threads, batch), dtype=np.uint64),
        np.empty((threads, batch), dtype=np.int8),
        np.empty((threads, outbox), dtype=np.int64),
        np.zeros(threads, dtype=np.int64),
        np.zeros((threads, TALLY_STRIDE), dtype=np.int64),
        np.empty((threads, stack), dtype=np.int64),
        np.empty((threads, stack), dtype=np.uint64),
        np.empty((threads, stack), dtype=np.uint64),
    )


class StageReport:
    """What one stage did: positions resolved and propagation sweeps."""

    def __init__(self, stage: int, resolved: int, sweeps: int) -> None:
        self.stage = stage
        self.resolved = resolved
        self.sweeps = sweeps


def run_stages(
    seeds: int,
    values: np.ndarray,
    value_words: np.ndarray,
    counts: np.ndarray,
    sweep: Callable[[int, np.ndarray, np.ndarray], int],
    progress: Callable[[str, float], None] | None = None,
    first_stage: int | None = None,
    everywhere: Callable[[int], int] | None = None,
    after_stage: Callable[[int], None] | None = None,
    lined_ranks: int = 0,
    seed_and_tell: Callable[[int, np.ndarray], int] | None = None,
) -> tuple[list[StageReport], float]:
    """The staged algorithm over positions whose value bytes hold pending codes
    and whose nibbles hold child counts: stages seeds..1, each seeded and then
    swept until nothing is FRESH, then endless play settled to 0.

    `sweep(stage, active_blocks, next_flags)` tells the predecessors of the
    FRESH positions of the active blocks and returns how many it processed;
    it is the only part that differs between a layer (predecessors by
    un-sowing) and an explicit graph (predecessor lists). A distributed
    build holds a slice here: `everywhere(count)` then sums a count over
    the processes (a stage ends when no process has anything FRESH), every
    process sweeps as often as the busiest, and `first_stage` resumes after
    a checkpoint that `after_stage(stage)` took; there a stage is seeded on
    every process when any holds its seeds, as seeding (seed_and_tell)
    exchanges. Returns the stage reports
    and the seconds spent seeding. With `lined_ranks`, values and counts
    are one array holding that many ranks in the lined layout, and endless
    play is left pending: compact_lines settles it as it moves the values.
    With `seed_and_tell(stage, flags)`, a stage's seeds are found and told
    of at once (propagate_stage: it returns the positions it told of and
    flags the blocks it left FRESH), and sweeps run only for those; the
    seconds it takes count as seeding.
    """
    lined = lined_ranks > 0
    size = lined_ranks if lined else values.shape[0]
    blocks = (size + BLOCK - 1) // BLOCK
    flags = np.zeros(blocks, dtype=np.uint8)
    next_flags = np.zeros(blocks, dtype=np.uint8)
    codes = line_histogram(values, size) if lined else byte_histogram(values)
    seed_seconds = 0.0
    stages = []
    # The kernels share their work through a counter (take), one loop
    # iteration a thread: numba must not cut that loop into chunks itself.
    # A sweep over a few blocks, or a scan of a small layer, runs on one
    # thread: starting the others would cost more than it saves, and much
    # more when a busy core makes every parallel loop wait for a time slice.
    previous_chunk = numba.set_parallel_chunksize(0)
    small = size < SERIAL_SIZE
    try:
        for stage in range(seeds if first_stage is None else first_stage, 0, -1):
            tick = time.perf_counter()
            found = 0
            seeded = int(codes[np.int64(pending(stage)) & 0xFF] or codes[np.int64(pending(-stage)) & 0xFF])
            if seed_and_tell is not None and everywhere is not None:
                seeded = everywhere(seeded)  # seed_and_tell is collective when it exchanges
            if seeded:
                with thread_count(1 if small else None):
                    if seed_and_tell is None:
                        seed_stage(stage, size, values, counts, value_words, flags, lined)
                    else:
                        found += seed_and_tell(stage, flags)
            seed_seconds += time.perf_counter() - tick
            sweeps = 0
            while True:
                sweeps += 1
                active = np.flatnonzero(flags)
                if (active.shape[0] if everywhere is None else everywhere(active.shape[0])) == 0:
                    break
                flags[active] = 0
                with thread_count(1 if active.shape[0] <= SERIAL_BLOCKS else None):
                    found += int(sweep(stage, active, next_flags))
                flags, next_flags = next_flags, flags
            stages.append(StageReport(stage, found, sweeps))
            if after_stage:
                after_stage(stage)
            if progress:
                progress(f"stage {stage}", (seeds - stage + 1) / seeds)
        if not lined:
            with thread_count(1 if small else None):
                settle_endless(values)
    finally:
        numba.set_parallel_chunksize(previous_chunk)
    return stages, seed_seconds


@njit(cache=True)
def compiled_order_fingerprint() -> int:
    """index.ORDER_OFFSET as this file's kernels were compiled with it (a
    constant): retrograde.check_compiled_order compares it with index's."""
    return order_fingerprint(index.ORDER_OFFSET)
