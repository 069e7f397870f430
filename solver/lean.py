"""Lean stages: a layer's stages in half a byte a position.

The in-memory stages (solver.retrograde) hold 1.52 bytes a position: a value
byte that carries the exit value until the position is resolved, and a
nibble of counts. But what a stage needs at random is much less. While
stage k runs, a position is either resolved or still counting its unrefuted
in-layer children (0..6), and when its count reaches zero the only thing
asked of its exits is whether the best one is at most -k. So each position
keeps one 4-bit *code*, two a byte, and everything else lives on disk in
rank order, read and written once a stage, sequentially:

    code 0..6    unresolved, that many unrefuted children, best exit > -k
    code 9..14   unresolved, code - 8 unrefuted children, best exit <= -k
    code 8       lost at -k this stage (no unrefuted child, best exit <= -k:
                 "count 0 with the exit bit" is exactly the rule's -k)
    code 15      won at +k this stage
    code 7       resolved at an earlier stage (its value is on disk)

The *state file* holds a byte a position in rank order, the in-memory
builder's value byte: the exit value as a pending code (layer_state.pending)
while the position is unresolved, its value once it is resolved and its
stage is over. The exit bit only goes from clear to set as k decreases, when
E = -k, so one sequential pass over the state file at the start of each
stage (settle_chunk) both writes the previous stage's results into it (codes
15 and 8 become +-(k+1), and code 7) and reads this stage's exits: it sets
the exit bit where E = -k (at the first stage, where E <= -k, no exit at all
included), and finds the stage's seeds (E = +k: won; E = -k with no
unrefuted child: lost). Then the seeds are told of, depth first, as
stages.propagate_stage does (tell_ranks, drain_stack): un-sowing gives the
predecessors (layer_state.predecessors), a lost child makes an unresolved
predecessor won, a won child takes one from its count, and a count that
reaches zero with the exit bit set is lost. What resolves goes on an
in-memory stack with its words; when the stack fills, its older half goes
to an overflow of ranks and from there to a queue file in the scratch
folder, read back in order (the sign is in the code, so a rank is all an
entry needs). The seeds wait in the same queue. After stage 1 the last pass writes
stage 1's results, and what is still unresolved is endless play (or an
exit of 0): 0, as stages.settle_endless says.

The exits are made as in the disk mode, a slice of ranks at a time with the
same kernel (exits.exit_pass, the plain layout: value bytes and count
nibbles apart), a pass over the layer for each group of smaller layers that
fits in memory (plan.lean_plan): the value bytes go to the state file (each
group's pass reads the last and writes a new one) and the counts of the first
pass, already in the code's layout, to a counts file, read back as the
stages' codes once the smaller layers are dropped. So the layer's own
state is never resident beside its smaller layers, and the stages hold half
a byte a position, their stack and a chunk of the state file.

The exit passes use every thread; the passes and the propagation one by
default (measured: docs/DISK.md). The propagation can take several
(tell_threads), each with a stack of its own, updating a code with a
compare-and-swap of the byte it shares with its neighbour. Files are created
exclusively (never through a link), checked by a checksum as they are read
(not zlib's CRC-32: it was the stages' bottleneck) and removed once used; a
full disk stops the build in one line (BuildError). A killed build restarts
the layer from its exits: the lean stages keep no journal yet (docs/DISK.md).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import resource
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit, prange

from . import exits, index, layer_state, stages
from .errors import BuildError
from .intrinsics import atomic_add, compare_and_swap, prefetch
from .layers import LayerStore

EARLIER = 7  # resolved at an earlier stage: its value is in the state file
LOST = 8  # lost at -k this stage: no unrefuted child and the exit bit set
WON = 15  # won at +k this stage
EXIT_BIT = 8  # set in an unresolved code once its best exit is at most -k
CODE = 0xF
CHUNK = 1 << 19  # ranks a sequential pass over the state file takes at a time (a multiple of BLOCK)
EXIT_SLICE = 1 << 22  # ranks an exit pass takes at a time (a multiple of BLOCK)
STACK = 1 << 19  # resolved positions held in memory to tell of (24 bytes each), shared by the threads' stacks;
# more go to the queue file
ENTRY_BYTES = 8  # a queued entry: the rank (int64)
# Bytes the lean stages hold beside the codes (the stack, a chunk of the state file and its seeds, a batch)
# and the exit passes beside the smaller layers (a slice's bytes and counts, exit_pass's buffers):
STAGE_BUFFERS = STACK * (24 + 2 * ENTRY_BYTES) + CHUNK * (1 + ENTRY_BYTES) + (4 << 20)
EXIT_BUFFERS = EXIT_SLICE * 3 // 2 + layer_state.WORK_SLOTS * layer_state.BLOCK * 6 * 24 + (4 << 20)
MIN_STACK = 2 * (layer_state.BATCH + layer_state.MAX_PREDECESSORS) + 2  # a batch's pushes and a refill fit


# Codes -----------------------------------------------------------------------------


@njit(cache=True, inline="always")
def code_of(codes: np.ndarray, rank: int) -> int:
    """The 4-bit code of `rank` (two a byte, the low nibble the even rank)."""
    return (np.int64(codes[rank >> 1]) >> ((rank & 1) << 2)) & CODE


@njit(cache=True, inline="always")
def set_code(codes: np.ndarray, rank: int, code: int) -> None:
    """Give `rank` the 4-bit `code`, its neighbour's nibble kept."""
    shift = (rank & 1) << 2
    codes[rank >> 1] = np.uint8((np.int64(codes[rank >> 1]) & ~(CODE << shift) & 0xFF) | (code << shift))


@njit(cache=True, inline="always")
def unresolved(code: int) -> bool:
    return code != EARLIER and code != LOST and code != WON


@njit(cache=True, inline="always")
def told(code: int, child_lost: bool) -> int:
    """The code of an unresolved position once told that a child was lost
    (-k: it is won) or won (+k: one unrefuted child less; none left with the
    exit bit set is LOST, code 9 - 1)."""
    return WON if child_lost else code - 1


@njit(cache=True, inline="always")
def exit_seen(code: int, exit: int | np.integer, stage: int) -> int:
    """The code of an unresolved position at the start of stage `stage`, its
    best exit being `exit`: WON at +stage, the exit bit set at or below
    -stage (LOST with no unrefuted child left): below only at the first
    stage, where it is set for no exit at all (NO_EXIT)."""
    if exit == stage:
        return WON
    if exit <= -stage:
        return code | EXIT_BIT
    return code


# Kernels ---------------------------------------------------------------------------


SETTLE_PIECE = 1 << 15  # ranks of a chunk a thread settles at a time (even: whole bytes of codes)
NIBBLE_LOW = np.uint64(0x1111111111111111)  # the low bit of each nibble of a word
BYTE_ONES = np.uint64(0x0101010101010101)
BYTE_HIGH = np.uint64(0x8080808080808080)


@njit(cache=True, inline="always")
def _any_byte(word, pattern):
    """Whether any byte of `word` equals the byte repeated in `pattern`."""
    diff = word ^ pattern
    return ((diff - BYTE_ONES) & ~diff & BYTE_HIGH) != 0


@njit(cache=True, inline="always")
def _any_resolved_now(word):
    """Whether any nibble of a word of codes is WON (15) or LOST (8)."""
    won = word & (word >> np.uint64(1)) & (word >> np.uint64(2)) & (word >> np.uint64(3))
    lost = (word >> np.uint64(3)) & ~(word >> np.uint64(2)) & ~(word >> np.uint64(1)) & ~word
    return ((won | lost) & NIBBLE_LOW) != 0


@njit(cache=True, inline="always")
def _settle_rank(stage, rank, i, state, codes, seeds_found, found):
    code = code_of(codes, rank)
    if code in (WON, LOST):
        state[i] = np.int8(stage + 1 if code == WON else -(stage + 1))
        set_code(codes, rank, EARLIER)
    elif code != EARLIER:
        if stage == 0:
            state[i] = 0
            return found
        new = exit_seen(code, layer_state.pending_exit(state[i]), stage)
        if new != code:
            set_code(codes, rank, new)
            if new in (WON, LOST):
                seeds_found[found] = rank
                found += 1
    return found


@njit(cache=True, inline="always")
def _settle_piece(stage, lo, start, stop, state, codes, seeds_found, state_words, code_words, patterns):
    """settle_chunk for ranks lo+start..lo+stop-1; the seeds go to
    seeds_found[start:], returns how many. Sixteen ranks at a time whose
    codes hold no result of the last stage and whose state bytes hold none
    of the stage's exits (`patterns`) are passed in three tests: most are."""
    found = start
    i = start
    while i < stop:
        if stage > 0 and i + 16 <= stop and (lo + i) % 16 == 0:
            words = state_words[i >> 3], state_words[(i >> 3) + 1]
            if not _any_resolved_now(code_words[(lo + i) >> 4]) and not (
                    _any_byte(words[0], patterns[0]) or _any_byte(words[0], patterns[1])
                    or _any_byte(words[0], patterns[2]) or _any_byte(words[1], patterns[0])
                    or _any_byte(words[1], patterns[1]) or _any_byte(words[1], patterns[2])):
                i += 16
                continue
            for j in range(i, i + 16):
                found = _settle_rank(stage, lo + j, j, state, codes, seeds_found, found)
            i += 16
            continue
        found = _settle_rank(stage, lo + i, i, state, codes, seeds_found, found)
        i += 1
    return found - start


@njit(cache=True, parallel=True)
def settle_chunk(stage: int, first: bool, lo: int, size: int, state: np.ndarray, codes: np.ndarray,
                 seeds_found: np.ndarray) -> int:
    """The pass over the state-file bytes of ranks lo..lo+size-1 (in
    state[:size]) at the start of stage `stage`: stage + 1's results
    written as values (their codes become EARLIER), the exit bit set where
    E <= -stage (E = -stage, or at the `first` stage no exit at all), the
    stage's seeds resolved (WON, or LOST) and their ranks put in
    seeds_found, in rank order; returns how many. Stage 0 is the end:
    stage 1's results, and 0 for what no stage resolved. `lo` is a multiple
    of 16 and state and codes are whole words (len a multiple of 8). Threads
    take pieces of an even number of ranks as they become free (a busy core
    takes fewer), so no two write one byte of codes."""
    pieces = (size + SETTLE_PIECE - 1) // SETTLE_PIECE
    found = np.zeros(pieces, dtype=np.int64)
    state_words = state.view(np.uint64)
    code_words = codes.view(np.uint64)
    exits = (stage, -stage, layer_state.NO_EXIT if first else -stage)
    patterns = (np.uint64(np.int64(layer_state.pending(exits[0])) & 0xFF) * BYTE_ONES,
                np.uint64(np.int64(layer_state.pending(exits[1])) & 0xFF) * BYTE_ONES,
                np.uint64(np.int64(layer_state.pending(exits[2])) & 0xFF) * BYTE_ONES)
    counter = np.zeros(1, dtype=np.int64)
    for _slot in prange(layer_state.WORK_SLOTS):
        while True:
            piece = atomic_add(counter, 0, np.int64(1))
            if piece >= pieces:
                break
            start = piece * SETTLE_PIECE
            found[piece] = _settle_piece(stage, lo, start, min(size, start + SETTLE_PIECE), state, codes,
                                         seeds_found, state_words, code_words, patterns)
    total = 0
    for piece in range(pieces):
        start = piece * SETTLE_PIECE
        for k in range(found[piece]):
            seeds_found[total + k] = seeds_found[start + k]
        total += found[piece]
    return total


@njit(cache=True)
def fill_stack(seeds: int, ranks: np.ndarray, stack: np.ndarray, stack_movers: np.ndarray,
               stack_opponents: np.ndarray, depth: int, rows: tuple[np.ndarray, ...]) -> int:
    """Push `ranks` (resolved this stage) on the stack with their words; returns the new depth."""
    for i in range(ranks.shape[0]):
        mover, opponent = index.unrank_fast(seeds, ranks[i], rows[0], rows[1], rows[2], rows[3])
        stack[depth] = ranks[i]
        stack_movers[depth] = mover
        stack_opponents[depth] = opponent
        depth += 1
    return depth


@njit(cache=True, inline="always")
def _tell(codes, rank, child_lost, shared):
    """Tell unresolved `rank` that a child was lost or won (told()); when
    the codes are `shared` by threads, with a compare-and-swap of its byte:
    a neighbour's nibble may change under another thread at the same time.
    Returns whether this resolved it."""
    at = rank >> 1
    shift = (rank & 1) << 2
    if not shared:
        code = code_of(codes, rank)
        if not unresolved(code):
            return False
        code = told(code, child_lost)
        set_code(codes, rank, code)
        return code in (WON, LOST)
    while True:
        old = codes[at]
        code = (np.int64(old) >> shift) & CODE
        if not unresolved(code):
            return False
        new = told(code, child_lost)
        byte = np.uint8((np.int64(old) & ~(CODE << shift) & 0xFF) | (new << shift))
        if compare_and_swap(codes, at, old, byte):  # type: ignore[call-arg]  # numba: @intrinsic
            return new in (WON, LOST)


@njit(cache=True)
def drain_stack(stage: int, seeds: int, codes: np.ndarray, stack: np.ndarray, stack_movers: np.ndarray,
                stack_opponents: np.ndarray, depth: int, found: np.ndarray, movers: np.ndarray,
                opponents: np.ndarray, child_lost: np.ndarray, tally: np.ndarray, shared: bool) -> int:
    """Tell the predecessors of the positions on the stack, a batch at a time,
    and push those they resolve. Returns the depth left: 0 when all is told,
    or more when the stack has no room for another batch's pushes (the
    caller moves some of it elsewhere and calls again). tally[0] counts the
    predecessors told. With `shared`, other threads update the codes too."""
    room = stack.shape[0] - layer_state.BATCH - layer_state.MAX_PREDECESSORS
    while depth > 0 and depth <= room:
        count = 0
        while depth > 0 and count < layer_state.BATCH:
            depth -= 1
            lost = code_of(codes, stack[depth]) == LOST
            added = layer_state.predecessors(stack_movers[depth], stack_opponents[depth], seeds, 0, 0, codes, codes,
                                            False, False, found, count, movers, opponents)
            child_lost[count:added] = lost
            count = added
        # The batch's codes are fetched at once, so their misses overlap.
        for i in range(count):
            prefetch(codes, found[i] >> 1)  # type: ignore[call-arg]  # numba's @intrinsic passes typingctx
        for i in range(count):
            if _tell(codes, found[i], child_lost[i], shared):
                stack[depth] = found[i]
                stack_movers[depth] = movers[i]
                stack_opponents[depth] = opponents[i]
                depth += 1
        tally[0] += count
    return depth


SEED_TAKE = 64  # ranks a thread takes at once from those it is given to tell of


@njit(cache=True, parallel=True)
def tell_ranks(stage: int, seeds: int, codes: np.ndarray, ranks: np.ndarray, counter: np.ndarray,
               stacks: np.ndarray, stack_movers: np.ndarray, stack_opponents: np.ndarray, depths: np.ndarray,
               overflow: np.ndarray, overflowed: np.ndarray, found: np.ndarray, movers: np.ndarray,
               opponents: np.ndarray, child_lost: np.ndarray, tallies: np.ndarray, rows: tuple[np.ndarray, ...],
               shared: bool) -> None:
    """Tell of `ranks` (resolved this stage) and of all they resolve in turn,
    depth first, on as many threads as `stacks` has rows (with `shared`, as
    numba has them): each takes SEED_TAKE ranks at a time from counter[0]
    as it becomes free and drains its stack (row t of the 2-D arrays). A
    stack without room gives its older half to its thread's `overflow`
    (ranks; overflowed[t] of them); a thread whose overflow cannot take it
    stops, its stack left at depths[t]. The caller queues what is left:
    the overflows, the stacks, and ranks[counter[0]:] if a thread stopped
    before they were taken. One call waits for its threads once."""
    size = ranks.shape[0]
    for thread in prange(stacks.shape[0]):
        stack, stack_mover, stack_opponent = stacks[thread], stack_movers[thread], stack_opponents[thread]
        depth = depths[thread]
        while True:
            if depth == 0:
                first = atomic_add(counter, 0, np.int64(SEED_TAKE))
                if first >= size:
                    break
                depth = fill_stack(seeds, ranks[first : min(size, first + SEED_TAKE)], stack, stack_mover,
                                   stack_opponent, 0, rows)
            depth = drain_stack(stage, seeds, codes, stack, stack_mover, stack_opponent, depth, found[thread],
                                movers[thread], opponents[thread], child_lost[thread], tallies[thread], shared)
            if depth == 0:
                continue
            half = depth // 2
            if overflowed[thread] + half > overflow.shape[1]:
                break
            for i in range(half):
                overflow[thread, overflowed[thread] + i] = stack[i]
            overflowed[thread] += half
            for i in range(depth - half):
                stack[i] = stack[half + i]
                stack_mover[i] = stack_mover[half + i]
                stack_opponent[i] = stack_opponent[half + i]
            depth -= half
        depths[thread] = depth


@njit(cache=True)
def value_counts(state: np.ndarray, seeds: int, counts: np.ndarray) -> None:
    """Add the values of `state` (settled, in -seeds..seeds) to counts[d + seeds]."""
    for i in range(state.shape[0]):
        counts[np.int64(state[i]) + seeds] += 1


# Scratch files ---------------------------------------------------------------------

WEIGHT = np.uint64(0x9E3779B97F4A7C15)  # an odd multiplier: word j of a file weighs (j * WEIGHT) | 1


@njit(cache=True)
def checksum(data: np.ndarray, offset: int) -> np.uint64:
    """The checksum of bytes `data` lying at byte `offset` (a multiple of 8)
    of a file: the sum, wrapping at 2**64, of each 8-byte word times an odd
    weight of its place. Files are summed a piece at a time, in any pieces
    (the sums add up), inside a kernel at several GB/s, where zlib's CRC-32
    ran at 0.7 GB/s here: the stages pass their state file once a stage.
    A word changed, or two words swapped, changes the sum."""
    words = data.shape[0] // 8
    view = data[: words * 8].view(np.uint64)
    first = np.uint64(offset // 8)
    total = np.uint64(0)
    for j in range(words):
        total += view[j] * (((first + np.uint64(j)) * WEIGHT) | np.uint64(1))
    if data.shape[0] > words * 8:
        tail = np.uint64(0)
        for i in range(data.shape[0] - words * 8):
            tail |= np.uint64(data[words * 8 + i]) << np.uint64(8 * i)
        total += tail * (((first + np.uint64(words)) * WEIGHT) | np.uint64(1))
    return total


def _sum(view: memoryview, offset: int) -> int:
    if offset % 8:
        raise ValueError(f"a piece of a file is summed from a multiple of 8 bytes, not {offset}")
    return int(checksum(np.frombuffer(view, dtype=np.uint8), offset))



def _disk_error(error: OSError, scratch: str, seeds: int) -> BuildError:
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return BuildError(f"the scratch folder {scratch} is full (layer {seeds}, lean stages); the layers built are "
                          "kept: free some space (or give another --scratch) and build again")
    return BuildError(f"cannot write in the scratch folder {scratch}: {error.strerror}")


def _create(path: str, scratch: str, seeds: int) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise _disk_error(error, scratch, seeds) from None


def _write_all(descriptor: int, data: np.ndarray, offset: int | None = None) -> int:
    """Write `data` at `offset` (or where the file is); return its checksum as a file of its own."""
    view = memoryview(np.ascontiguousarray(data).view(np.uint8))  # type: ignore[arg-type]  # a buffer
    done = 0
    while done < len(view):
        if offset is None:
            done += os.write(descriptor, view[done:])
        else:
            done += os.pwrite(descriptor, view[done:], offset + done)
    return _sum(view, 0)


def write_piece(descriptor: int, view: memoryview) -> None:
    """Write all of `view` where the file is (the tests make it fail)."""
    done = 0
    while done < len(view):
        done += os.write(descriptor, view[done:])


class StreamWriter:
    """A scratch file written in order, a piece at a time, as disk.write_lines
    writes one whole: created exclusively, never through a link; its
    checksum kept. A failure removes it. Not synced: no later run reads it
    (a killed lean layer starts over), and a file read back at once is best
    left in the page cache."""

    def __init__(self, path: str, scratch: str, seeds: int) -> None:
        self.path, self.scratch, self.seeds = path, scratch, seeds
        self.descriptor: int | None = _create(path, scratch, seeds)
        self.crc = 0
        self.bytes = 0

    def write(self, data: np.ndarray) -> None:
        assert self.descriptor is not None, "written after close"
        view = memoryview(np.ascontiguousarray(data).view(np.uint8))  # type: ignore[arg-type]  # a buffer
        try:
            write_piece(self.descriptor, view)
        except OSError as error:
            self.abandon()
            raise _disk_error(error, self.scratch, self.seeds) from None
        self.crc = (self.crc + _sum(view, self.bytes)) & 0xFFFFFFFFFFFFFFFF
        self.bytes += len(view)

    def close(self) -> int:
        """Close; returns the checksum."""
        assert self.descriptor is not None, "closed twice"
        try:
            os.close(self.descriptor)
        except OSError as error:
            self.descriptor = None
            with contextlib.suppress(OSError):
                os.remove(self.path)
            raise _disk_error(error, self.scratch, self.seeds) from None
        self.descriptor = None
        return self.crc

    def abandon(self) -> None:
        if self.descriptor is not None:
            os.close(self.descriptor)
            self.descriptor = None
            with contextlib.suppress(OSError):
                os.remove(self.path)


class StreamReader:
    """A scratch file read in order, a piece at a time; its size checked when
    opened and its checksum once read to the end (finish), as disk.read_lines
    checks a whole one's CRC-32. What was read before a damage is found is used only
    by work that is not kept: the step that reads it raises before it ends."""

    def __init__(self, path: str, size: int, crc: int) -> None:
        self.path, self.crc = path, crc
        try:
            self.descriptor: int | None = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as error:
            raise BuildError(f"cannot read {path}: {error.strerror}") from None
        if os.fstat(self.descriptor).st_size != size:
            found = os.fstat(self.descriptor).st_size
            self.close()
            raise BuildError(f"{path} has {found} bytes, not {size}")
        self.found = 0
        self.offset = 0

    def read_into(self, out: np.ndarray) -> None:
        assert self.descriptor is not None, "read after close"
        view = memoryview(out.view(np.uint8))  # type: ignore[arg-type]  # an ndarray is a buffer
        done = 0
        try:
            while done < len(view):
                got = os.readv(self.descriptor, [view[done:]])
                if got == 0:
                    raise BuildError(f"{self.path} ended early")
                done += got
        except OSError as error:
            raise BuildError(f"cannot read {self.path}: {error.strerror}") from None
        self.found = (self.found + _sum(view, self.offset)) & 0xFFFFFFFFFFFFFFFF
        self.offset += len(view)

    def finish(self) -> None:
        """Close; raise BuildError if what was read does not match the checksum."""
        self.close()
        if self.found != self.crc:
            raise BuildError(f"{self.path} does not match its checksum: damaged")

    def close(self) -> None:
        if self.descriptor is not None:
            os.close(self.descriptor)
            self.descriptor = None


class RankQueue:
    """Ranks resolved this stage and not yet told of, beyond what the stack
    holds: one file, appended to and read from its start in segments of at
    most `segment` ranks, each with its checksum. Only this stage's work
    depends on it (a killed build restarts the layer), so it is not synced;
    once read to its end it is emptied."""

    def __init__(self, path: str, scratch: str, seeds: int, segment: int) -> None:
        self.path, self.scratch, self.seeds, self.segment = path, scratch, seeds, segment
        self.descriptor = _create(path, scratch, seeds)
        self.segments: deque[tuple[int, int, int]] = deque()  # (offset, count, checksum)
        self.end = 0
        self.peak = 0  # the file's largest size
        self.written = 0

    def push(self, ranks: np.ndarray) -> None:
        """Append `ranks`, in segments of at most `segment`."""
        for first in range(0, ranks.shape[0], self.segment):
            piece = ranks[first : first + self.segment]
            try:
                crc = _write_all(self.descriptor, piece, self.end)
            except OSError as error:
                raise _disk_error(error, self.scratch, self.seeds) from None
            self.segments.append((self.end, piece.shape[0], crc))
            self.end += piece.nbytes
            self.written += piece.nbytes
            self.peak = max(self.peak, self.end)

    def pop(self, most: int) -> np.ndarray | None:
        """The oldest segments, as many as `most` ranks hold (one at least),
        or None when the queue is empty."""
        if not self.segments:
            return None
        taken = [self.segments.popleft()]
        while self.segments and sum(entry[1] for entry in taken) + self.segments[0][1] <= most:
            taken.append(self.segments.popleft())
        out = np.empty(sum(entry[1] for entry in taken), dtype=np.int64)
        at = 0
        for offset, count, crc in taken:
            view = memoryview(out[at : at + count].view(np.uint8))  # type: ignore[arg-type]  # a buffer
            done = 0
            try:
                while done < len(view):
                    got = os.preadv(self.descriptor, [view[done:]], offset + done)
                    if got == 0:
                        raise BuildError(f"{self.path} ended early")
                    done += got
            except OSError as error:
                raise BuildError(f"cannot read {self.path}: {error.strerror}") from None
            if _sum(view, 0) != crc:
                raise BuildError(f"{self.path} does not match its checksum: damaged")
            at += count
        if not self.segments:
            os.ftruncate(self.descriptor, 0)
            self.end = 0
        return out

    def close(self) -> None:
        os.close(self.descriptor)
        with contextlib.suppress(OSError):
            os.remove(self.path)


# The layer -------------------------------------------------------------------------


def own_files(scratch: str, seeds: int) -> list[str]:
    """The lean stages' files of layer `seeds` in `scratch` (names)."""
    pattern = re.compile(rf"awele-{seeds:02d}\.lean-[a-z]+-\d+\.(state|counts|queue)")
    try:
        return [name for name in os.listdir(scratch) if pattern.fullmatch(name)]
    except FileNotFoundError:
        return []


class LeanLayer:
    """The lean build of layer `seeds` (module docstring): solve() makes its
    values, values() gives them to tables.write_table, clear() removes its
    files. `groups` are the smaller layers by exit pass (plan.lean_plan);
    `load(m)` puts smaller layer m in `store` (checked). `stack`, `chunk`
    and `exit_slice` (default: the module's STACK, CHUNK, EXIT_SLICE) are
    the stack's entries and the ranks a stage's pass and an exit pass take
    at a time. `tell_threads` tell of the stages' resolutions at once (1 by
    default: on this 2-core machine, busy with other work, two threads that
    wait for each other at every share-out took 8 times as long, docs/DISK.md),
    and `settle_threads` settle each chunk of a stage's pass (1 by default,
    for the same reason: a pass is hundreds of parallel calls)."""

    def __init__(self, seeds: int, scratch: str, store: LayerStore, rows: tuple[np.ndarray, ...],
                 groups: list[list[int]], load: Callable[[int], None], stack: int | None = None,
                 chunk: int | None = None, exit_slice: int | None = None, tell_threads: int = 1,
                 settle_threads: int = 1) -> None:
        stack, chunk, exit_slice = stack or STACK, chunk or CHUNK, exit_slice or EXIT_SLICE
        if stack < MIN_STACK or chunk % layer_state.BLOCK or exit_slice % layer_state.BLOCK:
            raise ValueError(f"a stack of at least {MIN_STACK} and chunks of whole blocks, not {stack}, {chunk}, "
                             f"{exit_slice}")
        self.seeds, self.scratch, self.store, self.rows = seeds, scratch, store, rows
        self.groups = [list(group) for group in groups]
        self.load = load
        self.stack_size, self.chunk, self.exit_slice = stack, chunk, exit_slice
        self.tell_threads = tell_threads
        self.settle_threads = settle_threads
        self.size = index.layer_size(seeds)
        self.state: tuple[str, int] | None = None  # the state file and its checksum
        self.histogram = np.zeros(2 * seeds + 1, dtype=np.int64)
        self.read = self.written = 0
        self.serial = 0  # files made: each gets a new name
        self.stats: dict[str, Any] = {}

    def _path(self, kind: str, suffix: str) -> str:
        self.serial += 1
        return os.path.join(self.scratch, f"awele-{self.seeds:02d}.lean-{kind}-{self.serial}.{suffix}")

    def clear(self) -> None:
        """Remove every lean file of this layer (left by a killed run, or done with)."""
        for name in own_files(self.scratch, self.seeds):
            path = os.path.join(self.scratch, name)
            if not os.path.islink(path):
                os.remove(path)

    def solve(self, progress: Callable[[str, float], None] | None = None) -> dict[str, Any]:
        """The exits, then the stages; returns stats as LayerSolver.solve's."""
        self.clear()
        started = time.perf_counter()
        counts_file, lookups = self._exits()
        exit_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        for m in self.store.layers():
            self.store.drop(m)
        exit_seconds = time.perf_counter() - started
        if progress:
            progress("exits", 1.0)
        tick = time.perf_counter()
        codes = np.zeros(((self.size + 1) // 2 + 7) // 8 * 8, dtype=np.uint8)  # whole words (settle_chunk)
        reader = StreamReader(*counts_file)
        reader.read_into(codes[: (self.size + 1) // 2])
        reader.finish()
        os.remove(counts_file[0])
        self.read += codes.nbytes
        stages = self._stages(codes, progress)
        return {"positions": self.size, "seconds": time.perf_counter() - started, "exit_seconds": exit_seconds,
                "exit_passes": len(self.groups), "stage_seconds": time.perf_counter() - tick,
                "working_bytes": codes.nbytes, "exit_lookups": lookups, "stages": stages,
                "predecessors_told": self.stats["told"], "stage_accesses": self.stats["told"],
                "disk_bytes_read": self.read, "disk_bytes_written": self.written,
                "queue_peak_bytes": self.stats["queue_peak"], "queued_bytes": self.stats["queued"],
                "pass_seconds": self.stats["pass_seconds"], "tell_seconds": self.stats["tell_seconds"],
                "tell_rounds": self.stats["rounds"], "exit_peak_bytes": exit_peak}

    def _exits(self) -> tuple[tuple[str, int, int], int]:
        """The exit passes, a group of smaller layers and a slice of ranks at a
        time: the state file (pending codes) and the counts file (the codes
        before the first stage), as (path, size, crc)."""
        seeds, size, store = self.seeds, self.size, self.store
        lookups = 0
        counts_file: tuple[str, int, int] | None = None
        previous: tuple[str, int] | None = None
        for number, group in enumerate(self.groups):
            for m in store.layers():
                if m not in group:
                    store.drop(m)
            for m in group:
                if not store.loaded[m]:
                    self.load(m)
            use = np.zeros(index.MAX_SEEDS + 1, dtype=np.bool_)
            use[group] = True
            first = number == 0
            writer = StreamWriter(self._path("state", "state"), self.scratch, seeds)
            counts_writer = StreamWriter(self._path("counts", "counts"), self.scratch, seeds) if first else None
            reader = StreamReader(previous[0], size, previous[1]) if previous else None
            try:
                for lo in range(0, size, self.exit_slice):
                    count = min(self.exit_slice, size - lo)
                    values = np.zeros(count, dtype=np.int8)
                    counts = np.zeros((count + 1) // 2, dtype=np.uint8)
                    if reader is not None:
                        reader.read_into(values)
                    with layer_state.thread_count(1 if count < layer_state.SERIAL_SIZE else None):
                        lookups += int(exits.exit_pass(seeds, count, values, counts, store.flat, store.starts,
                                                            use, first, self.rows, False, lo))
                    writer.write(values)
                    if counts_writer is not None:
                        counts_writer.write(counts)
                if reader is not None:
                    reader.finish()
                crc = writer.close()
                if counts_writer is not None:
                    counts_file = (counts_writer.path, counts_writer.bytes, counts_writer.close())
            except BaseException:
                writer.abandon()
                if counts_writer is not None:
                    counts_writer.abandon()
                raise
            finally:
                if reader is not None:
                    reader.close()
            self.written += writer.bytes + (counts_writer.bytes if counts_writer is not None else 0)
            if previous:
                self.read += size
                os.remove(previous[0])
            previous = (writer.path, crc)
        assert previous is not None and counts_file is not None, "one exit pass at least"
        self.state = previous
        return counts_file, lookups

    def _stages(self, codes: np.ndarray, progress: Callable[[str, float], None] | None) -> list[tuple[int, int, int]]:
        """Stages seeds..1, each a pass over the state file then its
        propagation, and the last pass (stage 0) that settles the values.
        Returns (stage, seeds, predecessors told) a stage.

        A stage's seeds, and what did not fit the stacks, wait in the queue
        file; they are told of SEED_BATCH at a time (tell_ranks), each of
        `tell_threads` taking them as it becomes free, updating the codes
        with a compare-and-swap of their byte when there are several."""
        seeds = self.seeds
        threads = self.tell_threads
        capacity = max(MIN_STACK, self.stack_size // threads)
        stacks = np.empty((threads, capacity), dtype=np.int64)
        stack_movers = np.empty((threads, capacity), dtype=np.uint64)
        stack_opponents = np.empty((threads, capacity), dtype=np.uint64)
        overflow = np.empty((threads, capacity), dtype=np.int64)
        overflowed = np.zeros(threads, dtype=np.int64)
        batch = layer_state.BATCH + layer_state.MAX_PREDECESSORS
        found = np.empty((threads, batch), dtype=np.int64)
        movers = np.empty((threads, batch), dtype=np.uint64)
        opponents = np.empty((threads, batch), dtype=np.uint64)
        child_lost = np.empty((threads, batch), dtype=np.bool_)
        tallies = np.zeros((threads, stages.TALLY_STRIDE), dtype=np.int64)
        depths = np.zeros(threads, dtype=np.int64)
        counter = np.zeros(1, dtype=np.int64)
        state = np.empty((min(self.chunk, max(self.size, 1)) + 7) // 8 * 8, dtype=np.int8)
        seeds_found = np.empty(state.shape[0], dtype=np.int64)
        queue = RankQueue(self._path("queue", "queue"), self.scratch, seeds, segment=self.stack_size)
        reports = []
        pass_seconds = tell_seconds = 0.0
        rounds = 0
        try:
            for stage in range(seeds, -1, -1):
                before = int(tallies[:, 0].sum())
                tick = time.perf_counter()
                seeded = self._pass(stage, codes, state, seeds_found, queue)
                pass_seconds += time.perf_counter() - tick
                if stage == 0:
                    break
                tick = time.perf_counter()
                while True:
                    ranks = queue.pop(self.stack_size)
                    if ranks is None:
                        break
                    counter[0] = 0
                    overflowed[:] = 0
                    rounds += 1
                    with layer_state.thread_count(threads):
                        tell_ranks(stage, seeds, codes, ranks, counter, stacks, stack_movers, stack_opponents, depths,
                                   overflow, overflowed, found, movers, opponents, child_lost, tallies, self.rows,
                                   threads > 1)
                    if counter[0] < ranks.shape[0]:
                        queue.push(ranks[counter[0] :])
                    for thread in range(threads):
                        queue.push(overflow[thread, : overflowed[thread]])
                        queue.push(stacks[thread, : depths[thread]])
                    depths[:] = 0
                tell_seconds += time.perf_counter() - tick
                reports.append((stage, seeded, int(tallies[:, 0].sum()) - before))
                if progress:
                    progress(f"stage {stage}", (seeds - stage + 1) / max(seeds, 1))
        finally:
            self.stats = {"told": int(tallies[:, 0].sum()), "queue_peak": queue.peak, "queued": queue.written,
                          "pass_seconds": pass_seconds, "tell_seconds": tell_seconds, "rounds": rounds}
            queue.close()
        return reports

    def _pass(self, stage: int, codes: np.ndarray, state: np.ndarray, seeds_found: np.ndarray,
              queue: RankQueue) -> int:
        """One sequential pass over the state file at the start of `stage`
        (settle_chunk) into a new one; the seeds found go to the queue (the
        last pass, stage 0, counts the values instead). Returns the seeds."""
        assert self.state is not None, "exits first"
        size, seeds = self.size, self.seeds
        path, crc = self.state
        reader = StreamReader(path, size, crc)
        writer = StreamWriter(self._path("state", "state"), self.scratch, seeds)
        total = 0
        try:
            for lo in range(0, size, self.chunk):
                piece = state[: min(self.chunk, size - lo)]
                reader.read_into(piece)
                with layer_state.thread_count(self.settle_threads):
                    found = settle_chunk(stage, stage == seeds, lo, piece.shape[0], state, codes, seeds_found)
                if found:
                    queue.push(seeds_found[:found])
                    total += found
                if stage == 0:
                    value_counts(piece, seeds, self.histogram)
                writer.write(piece)
            reader.finish()
            new_crc = writer.close()
        except BaseException:
            writer.abandon()
            raise
        finally:
            reader.close()
        self.read += size
        self.written += size
        os.remove(path)
        self.state = (writer.path, new_crc)
        return total

    def values(self) -> tuple[Any, np.ndarray]:
        """The layer's values for tables.write_table (read from the last
        state file a window at a time) and their histogram."""
        assert self.state is not None, "solved first"
        return _StateValues(self.state[0], self.size, self.state[1]), self.histogram


class _StateValues:
    """Settled values read from a state file: values[start:stop] reads those
    bytes. Windows read in order (as tables.write_table reads them) are
    checked against the file's checksum once the last is read."""

    def __init__(self, path: str, size: int, crc: int) -> None:
        self.path, self.crc = path, crc
        self.shape = (size,)
        self.dtype = np.dtype(np.int8)
        self.next = 0  # where the windows read in order have reached
        self.found = 0

    def __getitem__(self, window: slice) -> np.ndarray:
        start, stop, _ = window.indices(self.shape[0])
        out = np.empty(max(0, stop - start), dtype=np.int8)
        try:
            descriptor = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as error:
            raise BuildError(f"cannot read {self.path}: {error.strerror}") from None
        try:
            view = memoryview(out.view(np.uint8))  # type: ignore[arg-type]  # an ndarray is a buffer
            done = 0
            while done < len(view):
                got = os.preadv(descriptor, [view[done:]], start + done)
                if got == 0:
                    raise BuildError(f"{self.path} ended early")
                done += got
        finally:
            os.close(descriptor)
        if start == self.next and stop > start and start % 8 == 0:
            self.found = (self.found + _sum(view, start)) & 0xFFFFFFFFFFFFFFFF
            self.next = stop
            if stop == self.shape[0] and self.found != self.crc:
                raise BuildError(f"{self.path} does not match its checksum: damaged")
        return out
