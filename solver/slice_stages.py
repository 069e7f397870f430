"""The stages of a slice of a layer (solver.distributed, solver.disk), depth first.

A slice of a layer (the distributed build) runs its stages depth first too
(propagate_slice_stage), its updates for other slices sent in rounds
between the passes (see the comment above that kernel and solver.distributed).
"""

import numba
import numpy as np
from numba import njit, prange

# The kernels take index's tables (rank offsets, the distance order of
# 2026-12-05: bands interleaved) into their code as constants, and numba's
# cache is keyed on each file alone: a change to those tables must come
# with a change to this file, or a cached kernel keeps the old ones
# (retrograde.check_compiled_order finds that).
from . import index
from .intrinsics import compare_and_swap, prefetch
from .layer_state import (
    BATCH,
    BLOCK,
    BYTE_ONES,
    LINE,
    LINE_RANKS,
    LINE_VALUE_WORDS,
    MAX_PREDECESSORS,
    RANK_CHUNK,
    SEED_CHUNK,
    WORK_SLOTS,
    has_byte,
    hot_kernel,
    order_fingerprint,
    pending,
    predecessors,
    take,
    value_at,
)
from .stages import Scratch, claim, flag_fresh, seed_value

# The stages of a slice (the distributed build), depth first. A process runs
# each stage as propagate_stage does, on its slice in the lined layout (local
# rank 0, rank lo of the order, starting the first line): a
# seed or a predecessor resolved here is told of at once, from the stack,
# with the words un-sowing gave it; a predecessor in another slice goes to
# the thread's outbox. The outboxes are then exchanged and what arrives is
# claimed and told of depth first in turn (tell_received_slice), round after
# round, until no process has anything to send: one exchange for each time
# a chain of resolutions crosses a cut, not one for every step of it. A
# position that finds the stack full, or the outbox too full to take its
# predecessors, is flagged FRESH and left to propagate() sweeps.


@njit(cache=True, inline="always")
def _tell_slice(stage, lo, size, values, counts, next_flags, found, movers, opponents, told, count, stack,
                stack_movers, stack_opponents, depth, outbox, sent, tally):
    """Tell a batch of predecessors: one held here (local rank found[i] - lo,
    lined layout) is claimed and, resolved, pushed on the stack with
    its words (flagged FRESH when the stack is full); one held elsewhere
    goes into `outbox` as (rank << 1) | (child lost). Returns (stack depth,
    outbox length)."""
    for i in range(count):
        local = found[i] - lo
        if local < 0 or local >= size:
            outbox[sent] = (found[i] << 1) | (1 if told[i] < 0 else 0)
            sent += 1
            continue
        accesses, value = claim(local, told[i], stage, values, counts, True)
        tally[1] += accesses
        if value == 0:
            continue
        if depth < stack.shape[0]:
            stack[depth] = (local << 1) | (1 if value < 0 else 0)
            stack_movers[depth] = movers[i]
            stack_opponents[depth] = opponents[i]
            depth += 1
        else:
            flag_fresh(local, counts, True, next_flags)
    tally[0] += count
    return depth, sent


@njit(cache=True, inline="always")
def _drain_slice(stage, seeds, lo, size, values, counts, next_flags, found, movers, opponents, told, count, stack,
                 stack_movers, stack_opponents, depth, outbox, sent, room, tally, final, order):
    """_drain for a slice: tell of the positions on the stack, and of those
    they resolve in turn, a batch at a time. Once the outbox could not take
    another position's predecessors (`room`), what is left on the stack is
    flagged FRESH instead. Returns (batch count, stack depth, outbox length,
    positions taken off the stack)."""
    taken = 0
    while True:
        while depth > 0 and count < BATCH:
            if sent + count > room:
                while depth > 0:
                    depth -= 1
                    flag_fresh(stack[depth] >> 1, counts, True, next_flags)
                break
            depth -= 1
            value = -stage if stack[depth] & 1 else stage
            added = predecessors(stack_movers[depth], stack_opponents[depth], seeds, lo, size, values, counts, True,
                                 value > 0, found, count, movers, opponents, order)
            told[count:added] = value
            count = added
            taken += 1
        if count == 0 or (count < BATCH and not final):
            return count, depth, sent, taken
        depth, sent = _tell_slice(stage, lo, size, values, counts, next_flags, found, movers, opponents, told, count,
                                  stack, stack_movers, stack_opponents, depth, outbox, sent, tally)
        count = 0


@hot_kernel
def _slice_stage_block(stage, seeds, lo, size, start, stop, values, counts, value_words, next_flags, rows, plus, minus,
                       found, movers, opponents, told, stack, stack_movers, stack_opponents, outbox, sent, room, tally,
                       order):
    """propagate_slice_stage for local ranks start..stop-1: (positions told
    of, outbox length). The value bytes are scanned a word at a time, as
    _stage_block scans them."""
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
                local = line * LINE_RANKS + slot
                if local < start or local >= stop:
                    continue
                at = line * LINE + slot
                code = values[at]
                value = seed_value(stage, code, counts, True, local)
                if value == 0:
                    continue
                # Another thread may resolve it first, telling of one of its children.
                if not compare_and_swap(values, at, code, np.int8(value)):  # type: ignore[call-arg, arg-type]  # numba's @intrinsic passes typingctx
                    continue
                if sent + count > room:
                    flag_fresh(local, counts, True, next_flags)
                    continue
                rank = index.file_rank(seeds, lo + local, order)  # the runs are the file's
                if not run_first <= rank < run_first + run_length:
                    mover, run_first, run_length, run_start = index.unrank_row(seeds, rank, rows[0], rows[1], rows[3])
                opponent = rows[2][run_start + rank - run_first]
                added = predecessors(mover, opponent, seeds, lo, size, values, counts, True, value > 0, found, count,
                                     movers, opponents, order)
                told[count:added] = value
                count = added
                done += 1
                if count >= BATCH:
                    depth, sent = _tell_slice(stage, lo, size, values, counts, next_flags, found, movers, opponents,
                                              told, count, stack, stack_movers, stack_opponents, depth, outbox, sent,
                                              tally)
                    count, depth, sent, taken = _drain_slice(stage, seeds, lo, size, values, counts, next_flags,
                                                             found, movers, opponents, told, 0, stack, stack_movers,
                                                             stack_opponents, depth, outbox, sent, room, tally, False,
                                                             order)
                    done += taken
    count, depth, sent, taken = _drain_slice(stage, seeds, lo, size, values, counts, next_flags, found, movers,
                                             opponents, told, count, stack, stack_movers, stack_opponents, depth,
                                             outbox, sent, room, tally, True, order)
    return done + taken, sent


RECEIVED_AHEAD = 16  # received updates whose lines are prefetched ahead of their claim


@hot_kernel
def _received_chunk(stage, seeds, lo, size, updates, first, last, values, counts, next_flags, rows, found, movers,
                    opponents, told, stack, stack_movers, stack_opponents, outbox, sent, room, tally, order):
    """tell_received_slice for updates[first:last]: (positions told of, outbox length).
    The lines of the updates RECEIVED_AHEAD further on are prefetched, so
    their cache misses overlap (the updates name ranks scattered over the
    slice, and each claim's atomic operations would otherwise wait for its
    miss alone)."""
    count = 0
    depth = 0
    done = 0
    for i in range(first, min(last, first + RECEIVED_AHEAD)):
        prefetch(values, value_at(True, (updates[i] >> 1) - lo))  # type: ignore[call-arg, arg-type]  # numba's @intrinsic passes typingctx
    for i in range(first, last):
        if i + RECEIVED_AHEAD < last:
            prefetch(values, value_at(True, (updates[i + RECEIVED_AHEAD] >> 1) - lo))  # type: ignore[call-arg, arg-type]  # numba's @intrinsic passes typingctx
        update = updates[i]
        local = (update >> 1) - lo
        accesses, value = claim(local, -stage if update & 1 else stage, stage, values, counts, True)
        tally[1] += accesses
        if value == 0:
            continue
        if depth >= stack.shape[0] or sent + count > room:
            flag_fresh(local, counts, True, next_flags)
            continue
        mover, opponent = index.unrank_fast(seeds, index.file_rank(seeds, lo + local, order), rows[0], rows[1], rows[2],
                                            rows[3])
        stack[depth] = (local << 1) | (1 if value < 0 else 0)
        stack_movers[depth] = mover
        stack_opponents[depth] = opponent
        depth += 1
        count, depth, sent, taken = _drain_slice(stage, seeds, lo, size, values, counts, next_flags, found, movers,
                                                 opponents, told, count, stack, stack_movers, stack_opponents, depth,
                                                 outbox, sent, room, tally, False, order)
        done += taken
    count, depth, sent, taken = _drain_slice(stage, seeds, lo, size, values, counts, next_flags, found, movers,
                                             opponents, told, count, stack, stack_movers, stack_opponents, depth,
                                             outbox, sent, room, tally, True, order)
    return done + taken, sent


@njit(cache=True, inline="always")
def _outbox_room(size, capacity):
    """The outbox length past which a thread takes no more positions'
    predecessors (propagate's rule); no limit without an outbox (one process)."""
    return capacity - BATCH - MAX_PREDECESSORS if capacity > 0 else size * MAX_PREDECESSORS


@njit(cache=True, parallel=True)
def propagate_slice_stage(
    stage: int,
    seeds: int,
    lo: int,
    size: int,
    values: np.ndarray,
    counts: np.ndarray,
    value_words: np.ndarray,
    next_flags: np.ndarray,
    rows: tuple[np.ndarray, ...],
    scratch: "Scratch",
    counter: np.ndarray,
    order: int = index.FILE_ORDER,
) -> int:
    """propagate_stage for a slice of the layer in the lined layout (values,
    counts and value_words views of one array; local rank i is rank lo + i
    in `order`, lo a multiple of BLOCK): a stage's seeds
    found and told of depth first; predecessors in other slices go to the
    threads' outboxes (scratch.outbox[thread, :scratch.sent[thread]]), and
    a position the stack or the outbox cannot take is flagged FRESH in
    `next_flags`. Returns the positions resolved and told of.

    The scan goes on from block counter[0] (zero to start a stage), and a
    thread whose outbox is half full takes no more blocks: the scan stops
    there, to be called again once the outboxes are sent, until
    counter[0] reaches the blocks of the slice. So an outbox seldom fills
    and leaves positions to the sweeps."""
    blocks = next_flags.shape[0]
    plus = np.uint64(np.int64(pending(stage)) & 0xFF) * BYTE_ONES
    minus = np.uint64(np.int64(pending(-stage)) & 0xFF) * BYTE_ONES
    room = _outbox_room(size, scratch.outbox.shape[1])
    half = scratch.outbox.shape[1] // 2 if scratch.outbox.shape[1] > 0 else room
    processed = np.zeros(WORK_SLOTS, dtype=np.int64)
    # Taken out of the tuple before the parallel loop (see propagate).
    outboxes = scratch.outbox
    sent_counts = scratch.sent
    founds = scratch.found
    movers = scratch.movers
    opponents = scratch.opponents
    tolds = scratch.told
    tallies = scratch.tally
    stacks = scratch.stack
    stack_movers = scratch.stack_movers
    stack_opponents = scratch.stack_opponents
    for slot in prange(WORK_SLOTS):
        thread = numba.get_thread_id()
        sent = sent_counts[thread]
        while sent <= half:
            first = take(counter, SEED_CHUNK)
            if first >= blocks:
                break
            stop = min(size, (first + SEED_CHUNK) * BLOCK)
            done, sent = _slice_stage_block(stage, seeds, lo, size, first * BLOCK, stop, values, counts, value_words,
                                            next_flags, rows, plus, minus, founds[thread], movers[thread],
                                            opponents[thread], tolds[thread], stacks[thread], stack_movers[thread],
                                            stack_opponents[thread], outboxes[thread], sent, room, tallies[thread],
                                            order)
            processed[slot] += done
        sent_counts[thread] = sent
    return processed.sum()


@njit(cache=True, parallel=True)
def tell_received_slice(
    stage: int,
    seeds: int,
    lo: int,
    size: int,
    updates: np.ndarray,
    values: np.ndarray,
    counts: np.ndarray,
    next_flags: np.ndarray,
    rows: tuple[np.ndarray, ...],
    scratch: "Scratch",
    order: int = index.FILE_ORDER,
) -> int:
    """Apply updates from other processes ((rank << 1) | (child lost), for
    ranks of this slice in `order`, held in the lined layout) as tell would, and tell of every position they
    resolve depth first, as propagate_slice_stage does (its outboxes and
    FRESH flags alike). Returns the positions told of. `size`: the
    slice's ranks."""
    total = updates.shape[0]
    room = _outbox_room(size, scratch.outbox.shape[1])
    processed = np.zeros(WORK_SLOTS, dtype=np.int64)
    outboxes = scratch.outbox
    sent_counts = scratch.sent
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
        sent = sent_counts[thread]
        while True:
            first = take(counter, RANK_CHUNK)
            if first >= total:
                break
            done, sent = _received_chunk(stage, seeds, lo, size, updates, first, min(total, first + RANK_CHUNK),
                                         values, counts, next_flags, rows, founds[thread], movers[thread],
                                         opponents[thread], tolds[thread], stacks[thread], stack_movers[thread],
                                         stack_opponents[thread], outboxes[thread], sent, room, tallies[thread], order)
            processed[slot] += done
        sent_counts[thread] = sent
    return processed.sum()


@njit(cache=True)
def compiled_order_fingerprint() -> int:
    """index.ORDER_OFFSET as this file's kernels were compiled with it (a
    constant): retrograde.check_compiled_order compares it with index's."""
    return order_fingerprint(index.ORDER_OFFSET)
