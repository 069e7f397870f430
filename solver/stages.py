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

The build with distances runs a layer's stages breadth first instead,
ply by ply (run_stages_by_ply: seed_ply, ply_pass), writing each
position's distance to conversion as it resolves it; see the section
above seed_ply's kernels and docs/DISTANCES.md, "Building them".

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
from .intrinsics import atomic_add, atomic_and, atomic_or, atomic_sub, compare_and_swap, prefetch
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
from .rules import legal_mask

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


# Breadth first: the stages ply by ply (the build with distances) -------------------------------------------------
#
# In ply order a stage resolves each position at the ply that is its distance to conversion (issue 51's metric):
# a +k position by its exit (a capture: 1) or by its first child lost at -k (1 + that child's distance, the least
# cost), a -k one by its exit of -k with no child left (1: only the capture keeps -k) or by its last child won at
# +k (1 + the greatest), a position without a move at 0 (the last stage's seeds with no legal move). So ply p of
# stage k tells the predecessors of the positions resolved at ±k with distance p, and whatever it resolves gets
# p + 1: the distance byte, written at resolution, is the ply. Children resolved at earlier stages (|value| > k)
# keep no value; they only counted down, as in the depth-first stages.

PLY_ROWS = 3 << 19  # rows (a position's words, its sign in the mover's top bit: 16 bytes) a ply carries to the
# next at least, twice: 48 MiB, as the separate pass's carried rows (distance.working_bytes counts them)
PLY_SHARE = 32  # and at most 1/32 of the layer, when the budget holds them (a byte a position, both buffers): the
# largest ply of layer 24 holds 2.2% of it (8.4 M positions); a ply beyond the rows is found by a scan of its
# blocks, at about half the rate (layer 24: 55 plies scanned took 28.8 s for 151 M positions, 1,171 told from
# rows 6.9 s for 67 M)
ROW_BYTES = 32  # a row in both buffers
PLY_ROWS_CHUNK = 1 << 10  # carried rows (or listed ranks) a thread takes at once
PLY_BLOCKS_CHUNK = 16  # flagged blocks a thread scans at once
SERIAL_PLY_ROWS = 1 << 13  # a ply of this few rows runs on one thread (waking the other costs more)
SERIAL_PLY_BLOCKS = 1 << 13  # a ply scanning this few blocks runs on one thread
SEED_ROWS = SEED_CHUNK * BLOCK  # ranks seed_ply scans at once: the rows of each thread's stack it gathers them in
LOST = np.uint64(1) << np.uint64(63)  # a carried row's mover word with this bit: the position was lost (-stage)


def ply_rows(size: int, spare: int = 0) -> int:
    """The rows a ply of a layer of `size` positions carries to the next:
    PLY_ROWS, and as many more as `spare` bytes hold (beyond those
    distance.working_bytes counts), up to 1/PLY_SHARE of the layer."""
    return min(max(1, size), max(3 << 11, size // PLY_SHARE), PLY_ROWS + max(0, spare) // ROW_BYTES)


@njit(cache=True, inline="always")
def _tell_ply(found, movers, opponents, told, count, stage, values, counts, distance, byte, flags, listing, listed,
              carried_movers, carried_opponents, carry, tally):
    """Tell a batch of predecessors (lined layout) that a child was resolved
    at told[i] this ply: each one resolved gets the distance byte `byte`,
    its block flagged, is listed in `listing` when that is not empty (a
    ply at the cap: listed[0] counts), and is carried to the next ply with
    its words (the mover's with LOST when it was lost) as far as the
    carried rows hold (carry[0] counts every one, beyond the rows too).
    Returns how many. The distance bytes of the predecessors of a lost
    child are prefetched first: those not resolved yet all resolve."""
    for i in range(count):
        if told[i] < 0:
            prefetch(distance, found[i])  # type: ignore[call-arg]  # numba's @intrinsic passes typingctx
    done = 0
    for i in range(count):
        rank = found[i]
        accesses, value = claim(rank, told[i], stage, values, counts, True)
        tally[1] += accesses
        if value == 0:
            continue
        distance[rank] = byte
        flags[rank // BLOCK] = 1
        if listing.shape[0]:
            listing[atomic_add(listed, 0, np.int64(1))] = rank
        movers[done] = movers[i] | LOST if value < 0 else movers[i]
        opponents[done] = opponents[i]
        done += 1
    tally[0] += count
    if done:
        # One atomic add a batch reserves its rows (not one a position: the counter's line would bounce).
        first = atomic_add(carry, 0, np.int64(done))
        for i in range(min(done, max(0, carried_movers.shape[0] - first))):
            carried_movers[first + i] = movers[i]
            carried_opponents[first + i] = opponents[i]
    return done


@hot_kernel
def _ply_rows(stage, seeds, size, items, first, last, with_words, item_movers, item_opponents, values, counts,
              distance, byte, flags, rows, found, movers, opponents, told, listing, listed, carried_movers,
              carried_opponents, carry, tally):
    """A ply told from rows: rows first..last-1 the last ply carried (words
    in item_movers and item_opponents, see _tell_ply) when `with_words`,
    else the ranks items[first:last] listed at the cap (ascending: unranked
    by walking the rows' runs, their values read). Returns the positions
    resolved at the next ply."""
    done = 0
    count = 0
    mover = np.uint64(0)
    opponent = np.uint64(0)
    run_first = run_length = run_start = 0
    for item in range(first, last):
        if with_words:
            mover = item_movers[item]
            value = -stage if mover & LOST else stage
            mover &= ~LOST
            opponent = item_opponents[item]
        else:
            rank = items[item]
            value = np.int64(values[value_at(True, rank)])
            if not run_first <= rank < run_first + run_length:
                mover, run_first, run_length, run_start = index.unrank_row(seeds, rank, rows[0], rows[1], rows[3])
            opponent = rows[2][run_start + rank - run_first]
        added = predecessors(mover, opponent, seeds, 0, size, values, counts, True, value > 0, found, count, movers,
                             opponents)
        told[count:added] = value
        count = added
        if count >= BATCH:
            done += _tell_ply(found, movers, opponents, told, count, stage, values, counts, distance, byte, flags,
                              listing, listed, carried_movers, carried_opponents, carry, tally)
            count = 0
    done += _tell_ply(found, movers, opponents, told, count, stage, values, counts, distance, byte, flags, listing,
                      listed, carried_movers, carried_opponents, carry, tally)
    return done


@hot_kernel
def _ply_blocks(stage, seeds, size, ply, active, first, last, values, counts, words, distance, byte, flags, rows,
                found, movers, opponents, told, listing, listed, carried_movers, carried_opponents, carry,
                tally):
    """A ply told from a scan of blocks active[first:last]: its positions
    are those whose distance byte is `ply` (below the cap) and whose value
    is ±stage, found eight distance bytes at a time. Returns the positions
    resolved at the next ply."""
    pattern = np.uint64(ply) * BYTE_ONES
    plus = np.int8(stage)
    minus = np.int8(-stage)
    done = 0
    count = 0
    mover = np.uint64(0)
    run_first = run_length = run_start = 0
    for item in range(first, last):
        start = active[item] * BLOCK
        stop = min(size, start + BLOCK)
        for word in range(start // 8, (stop + 7) // 8):
            if not has_byte(words[word], pattern):
                continue
            for rank in range(word * 8, min(stop, word * 8 + 8)):
                if distance[rank] != ply:
                    continue
                code = values[value_at(True, rank)]
                if code != plus and code != minus:
                    continue  # resolved at another stage
                if not run_first <= rank < run_first + run_length:
                    mover, run_first, run_length, run_start = index.unrank_row(seeds, rank, rows[0], rows[1],
                                                                               rows[3])
                opponent = rows[2][run_start + rank - run_first]
                added = predecessors(mover, opponent, seeds, 0, size, values, counts, True, code > 0, found, count,
                                     movers, opponents)
                told[count:added] = code
                count = added
                if count >= BATCH:
                    done += _tell_ply(found, movers, opponents, told, count, stage, values, counts, distance, byte,
                                      flags, listing, listed, carried_movers, carried_opponents, carry,
                                      tally)
                    count = 0
    done += _tell_ply(found, movers, opponents, told, count, stage, values, counts, distance, byte, flags, listing,
                      listed, carried_movers, carried_opponents, carry, tally)
    return done


@njit(cache=True, parallel=True)
def ply_pass(
    stage: int, seeds: int, size: int, ply: int, byte: int, items: np.ndarray, with_words: bool,
    item_movers: np.ndarray, item_opponents: np.ndarray, active: np.ndarray, values: np.ndarray,
    distance: np.ndarray, flags: np.ndarray, rows: tuple[np.ndarray, ...], scratch: "Scratch", listing: np.ndarray,
    listed: np.ndarray, carried_movers: np.ndarray, carried_opponents: np.ndarray, carry: np.ndarray,
) -> int:
    """Ply `ply` of a stage over a whole layer in the lined layout
    (`size` ranks; `distance` its distance bytes, padded to whole words):
    the predecessors of its positions are told, and those resolved get the
    distance byte `byte` (the next ply, or the cap), their blocks flagged in
    `flags`, and are carried or listed (see _tell_ply). Its positions are
    the rows item_movers, item_opponents when `with_words`, the ranks
    `items` when that is not empty (see _ply_rows), else found in the
    `active` blocks (see _ply_blocks). Returns the positions resolved."""
    counts = values.view(np.uint8)
    words = distance.view(np.uint64)
    listed_mode = with_words or items.shape[0] > 0
    total = item_movers.shape[0] if with_words else items.shape[0] if listed_mode else active.shape[0]
    step = PLY_ROWS_CHUNK if listed_mode else PLY_BLOCKS_CHUNK
    done = np.zeros(WORK_SLOTS, dtype=np.int64)
    founds = scratch.found
    movers = scratch.movers
    opponents = scratch.opponents
    tolds = scratch.told
    tallies = scratch.tally
    counter = np.zeros(1, dtype=np.int64)
    for slot in prange(WORK_SLOTS):
        thread = numba.get_thread_id()
        while True:
            first = take(counter, step)
            if first >= total:
                break
            last = min(total, first + step)
            if listed_mode:
                done[slot] += _ply_rows(stage, seeds, size, items, first, last, with_words, item_movers,
                                        item_opponents, values, counts, distance, byte, flags, rows, founds[thread],
                                        movers[thread], opponents[thread], tolds[thread], listing, listed,
                                        carried_movers, carried_opponents, carry, tallies[thread])
            else:
                done[slot] += _ply_blocks(stage, seeds, size, ply, active, first, last, values, counts, words,
                                          distance, byte, flags, rows, founds[thread], movers[thread],
                                          opponents[thread], tolds[thread], listing, listed, carried_movers,
                                          carried_opponents, carry, tallies[thread])
    return done.sum()


@hot_kernel
def _seed_ply_block(stage, seeds, start, stop, values, counts, value_words, distance, flags, rows, plus, minus,
                    first_stage, local_movers, local_opponents, carried_movers, carried_opponents, carry):
    """The seeds of ranks start..stop-1 (lined layout), resolved with
    distance 1, or 0 for one without a legal move (looked for only in the
    layer's first stage, `first_stage`: rules 5 and 6 end the game at
    ±seeds), their blocks flagged. Past the first stage each is carried to
    ply 1 as _tell_ply carries (its words gathered in local_movers and
    local_opponents, which hold a row a rank, then reserved at once).
    Returns how many."""
    count = 0
    mover = np.uint64(0)
    run_first = run_length = run_start = 0
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
                value = seed_value(stage, values[at], counts, True, rank)
                if value == 0:
                    continue
                values[at] = value
                if not run_first <= rank < run_first + run_length:
                    mover, run_first, run_length, run_start = index.unrank_row(seeds, rank, rows[0], rows[1], rows[3])
                opponent = rows[2][run_start + rank - run_first]
                byte = 1
                if first_stage:
                    if legal_mask(mover, opponent) == 0:
                        byte = 0
                else:
                    local_movers[count] = mover | LOST if value < 0 else mover
                    local_opponents[count] = opponent
                distance[rank] = byte
                flags[rank // BLOCK] = 1
                count += 1
    if count and not first_stage:
        first = atomic_add(carry, 0, np.int64(count))
        for i in range(min(count, max(0, carried_movers.shape[0] - first))):
            carried_movers[first + i] = local_movers[i]
            carried_opponents[first + i] = local_opponents[i]
    return count


@njit(cache=True, parallel=True)
def seed_ply(stage: int, seeds: int, size: int, values: np.ndarray, value_words: np.ndarray, distance: np.ndarray,
             flags: np.ndarray, rows: tuple[np.ndarray, ...], scratch: "Scratch", carried_movers: np.ndarray,
             carried_opponents: np.ndarray, carry: np.ndarray) -> int:
    """Resolve the stage's seeds (as seed_stage, lined layout) with their
    distances, 1 (0 without a legal move), and flag their blocks; returns
    how many. Nothing is told: ply 1 takes them from the rows carried here
    (past the layer's first stage, when they all fit), else finds them in
    their blocks (ply 0 and 1 in the first stage)."""
    counts = values.view(np.uint8)
    blocks = flags.shape[0]
    plus = np.uint64(np.int64(pending(stage)) & 0xFF) * BYTE_ONES
    minus = np.uint64(np.int64(pending(-stage)) & 0xFF) * BYTE_ONES
    counter = np.zeros(1, dtype=np.int64)
    found = np.zeros(WORK_SLOTS, dtype=np.int64)
    local_movers = scratch.stack_movers  # make_scratch(stack=SEED_ROWS) at least
    local_opponents = scratch.stack_opponents
    for slot in prange(WORK_SLOTS):
        thread = numba.get_thread_id()
        while True:
            first = take(counter, SEED_CHUNK)
            if first >= blocks:
                break
            stop = min(size, (first + SEED_CHUNK) * BLOCK)
            found[slot] += _seed_ply_block(stage, seeds, first * BLOCK, stop, values, counts, value_words, distance,
                                           flags, rows, plus, minus, stage == seeds, local_movers[thread],
                                           local_opponents[thread], carried_movers, carried_opponents, carry)
    return found.sum()


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


def run_stages_by_ply(
    seeds: int,
    values: np.ndarray,
    value_words: np.ndarray,
    size: int,
    distance: np.ndarray,
    rows: tuple[np.ndarray, ...],
    scratch: Scratch,
    cap: int,
    progress: Callable[[str, float], None] | None = None,
    after_stage: Callable[[int], None] | None = None,
    spare: int = 0,
) -> tuple[list[StageReport], float, np.ndarray]:
    """The stages of a whole layer in the lined layout (`size` ranks) run
    breadth first, ply by ply, each position's distance to conversion
    written in `distance` (a byte a position, padded to whole words) as it
    is resolved: the values are those of run_stages, and the bytes those of
    the separate pass (solver.distance) for every position resolved (`cap`
    and more: `cap`, the exact distance in the overflow rows). A ply's
    positions are told from the rows the last ply carried when they all
    fit (ply_rows: more with `spare` bytes of the budget), else found again in the flagged blocks by their
    distance byte and value, or past the cap from the ranks it listed.
    Endless play is left pending, as with `lined_ranks` (compact_lines),
    and its bytes untouched. Returns (the stage reports, their sweeps being
    plies; the seconds seeding; the overflow rows (rank, distance) sorted by
    rank)."""
    blocks = (size + BLOCK - 1) // BLOCK
    flags = np.zeros(blocks, dtype=np.uint8)
    codes = line_histogram(values, size)
    room = ply_rows(size, spare)
    carried = (np.empty(room, dtype=np.uint64), np.empty(room, dtype=np.uint64))
    given = (np.empty(room, dtype=np.uint64), np.empty(room, dtype=np.uint64))
    carry = np.zeros(1, dtype=np.int64)
    listed = np.zeros(1, dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64)
    no_words = np.zeros(0, dtype=np.uint64)
    overflow: list[np.ndarray] = []
    resolved_total = 0
    seed_seconds = 0.0
    stages = []
    previous_chunk = numba.set_parallel_chunksize(0)  # the kernels share their work through take (run_stages)
    try:
        for stage in range(seeds, 0, -1):
            found = plies = seeded = 0
            carry[0] = 0
            if codes[np.int64(pending(stage)) & 0xFF] or codes[np.int64(pending(-stage)) & 0xFF]:
                tick = time.perf_counter()
                with thread_count(1 if size < SERIAL_SIZE else None):
                    seeded = int(seed_ply(stage, seeds, size, values, value_words, distance, flags, rows, scratch,
                                          *carried, carry))
                seed_seconds += time.perf_counter() - tick
            found = seeded
            resolved_total += seeded
            ply = 0 if stage == seeds else 1  # ply 0: the first stage's positions without a move
            # The rows carried to this ply, every one of its positions; -1: not all (its blocks are scanned).
            given_rows = int(carry[0]) if stage < seeds and carry[0] <= room else -1
            carried, given = given, carried
            ranks = empty  # past the cap without the rows: the ranks the last ply listed
            while seeded and given_rows != 0:
                with_words = given_rows > 0
                active = empty
                items = ranks if not with_words and ply >= cap else empty
                if not with_words and ply < cap:
                    active = np.flatnonzero(flags)
                    if ply:  # ply 0 leaves its blocks flagged: they hold ply 1's seeds too
                        flags[active] = 0
                if with_words:
                    serial = given_rows <= SERIAL_PLY_ROWS
                elif items.shape[0] == 0 and active.shape[0] == 0:
                    break
                else:
                    serial = (items.shape[0] <= SERIAL_PLY_ROWS) if items.shape[0] else (
                        active.shape[0] <= SERIAL_PLY_BLOCKS)
                at_cap = ply + 1 >= cap
                listing = np.empty(max(1, size - resolved_total), dtype=np.int64) if at_cap else empty
                listed[0] = 0
                carry[0] = 0
                with thread_count(1 if serial else None):
                    told = int(ply_pass(stage, seeds, size, ply, min(ply + 1, cap), items, with_words,
                                        given[0][:given_rows] if with_words else no_words,
                                        given[1][:given_rows] if with_words else no_words,
                                        active, values, distance, flags, rows, scratch, listing, listed, *carried,
                                        carry))
                found += told
                resolved_total += told
                plies += 1
                if at_cap:
                    ranks = np.sort(listing[: listed[0]])
                    if ranks.shape[0]:
                        overflow.append(np.stack([ranks, np.full(ranks.shape[0], ply + 1, dtype=np.int64)], axis=1))
                # Ply 0 carries what it resolved, not ply 1's seeds: ply 1 scans for both.
                given_rows = int(carry[0]) if ply and carry[0] <= room else -1
                carried, given = given, carried
                ply += 1
            flags[:] = 0
            stages.append(StageReport(stage, found, plies))
            if after_stage:
                after_stage(stage)
            if progress:
                progress(f"stage {stage}", (seeds - stage + 1) / seeds)
    finally:
        numba.set_parallel_chunksize(previous_chunk)
    over = np.concatenate(overflow) if overflow else np.zeros((0, 2), dtype=np.int64)
    return stages, seed_seconds, over[np.argsort(over[:, 0], kind="stable")]


@njit(cache=True)
def compiled_order_fingerprint() -> int:
    """index.ORDER_OFFSET as this file's kernels were compiled with it (a
    constant): retrograde.check_compiled_order compares it with index's."""
    return order_fingerprint(index.ORDER_OFFSET)
