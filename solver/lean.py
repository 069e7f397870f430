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
builder's value byte: the exit value as a pending code (retrograde.pending)
while the position is unresolved, its value once it is resolved and its
stage is over. The exit bit only goes from clear to set as k decreases, when
E = -k, so one sequential pass over the state file at the start of each
stage (settle_chunk) both writes the previous stage's results into it (codes
15 and 8 become +-(k+1), and code 7) and reads this stage's exits: it sets
the exit bit where E = -k (at the first stage, where E <= -k, no exit at all
included), and finds the stage's seeds (E = +k: won; E = -k with no
unrefuted child: lost). Then the seeds are told of, depth first, as
retrograde.propagate_stage does (drain_stack): un-sowing gives the
predecessors (retrograde.predecessors), a lost child makes an unresolved
predecessor won, a won child takes one from its count, and a count that
reaches zero with the exit bit set is lost. What resolves goes on an
in-memory stack with its words; when the stack fills, ranks go to a
queue file in the scratch folder, read back in order (the sign is in the
code, so a rank is all an entry needs). After stage 1 the last pass writes
stage 1's results, and what is still unresolved is endless play (or an
exit of 0): 0, as retrograde.settle_endless says.

The exits are made as in the disk mode, a slice of ranks at a time with the
same kernel (retrograde.exit_pass, the plain layout: value bytes and count
nibbles apart), a pass over the layer for each group of smaller layers that
fits in memory (plan.lean_plan): the value bytes go to the state file (each
group's pass reads the last and writes a new one) and the counts of the first
pass, already in the code's layout, to a counts file, read back as the
stages' codes once the smaller layers are dropped. So the layer's own
state is never resident beside its smaller layers, and the stages hold half
a byte a position, their stack and a chunk of the state file.

The propagation runs on one thread (no two threads ever update the nibbles
of one byte); the exit passes use every thread. Files are created
exclusively (never through a link), checked by CRC-32 as they are read, and
removed once used; a full disk stops the build in one line (BuildError). A
killed build restarts the layer from its exits: the lean stages keep no
journal yet (docs/DISK.md).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import time
import zlib
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import njit

from . import index, retrograde
from .errors import BuildError
from .intrinsics import prefetch
from .layers import LayerStore

EARLIER = 7  # resolved at an earlier stage: its value is in the state file
LOST = 8  # lost at -k this stage: no unrefuted child and the exit bit set
WON = 15  # won at +k this stage
EXIT_BIT = 8  # set in an unresolved code once its best exit is at most -k
CODE = 0xF
CHUNK = 1 << 20  # ranks a sequential pass over the state file takes at a time (a multiple of BLOCK)
EXIT_SLICE = 1 << 22  # ranks an exit pass takes at a time (a multiple of BLOCK)
STACK = 1 << 20  # resolved positions held in memory to tell of (24 bytes each); more go to the queue file
ENTRY_BYTES = 8  # a queued entry: the rank (int64)
# Bytes the lean stages hold beside the codes (the stack, a chunk of the state file and its seeds, a batch)
# and the exit passes beside the smaller layers (a slice's bytes and counts, exit_pass's buffers):
STAGE_BUFFERS = STACK * 24 + CHUNK * (1 + ENTRY_BYTES) + (4 << 20)
EXIT_BUFFERS = EXIT_SLICE * 3 // 2 + retrograde.WORK_SLOTS * retrograde.BLOCK * 6 * 24 + (4 << 20)
MIN_STACK = 2 * (retrograde.BATCH + retrograde.MAX_PREDECESSORS) + 2  # a batch's pushes and a refill fit


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


@njit(cache=True)
def settle_chunk(stage: int, lo: int, state: np.ndarray, codes: np.ndarray, seeds_found: np.ndarray) -> int:
    """The pass over state-file bytes of ranks lo..lo+len(state)-1 at the
    start of stage `stage`: stage + 1's results written as values (their
    codes become EARLIER), the exit bit set where E <= -stage, the stage's
    seeds resolved (WON, or LOST) and their ranks put in seeds_found; returns
    how many. Stage 0 is the end: stage 1's results, and 0 for what no stage
    resolved."""
    found = 0
    for i in range(state.shape[0]):
        rank = lo + i
        code = code_of(codes, rank)
        if code in (WON, LOST):
            state[i] = np.int8(stage + 1 if code == WON else -(stage + 1))
            set_code(codes, rank, EARLIER)
        elif code != EARLIER:
            if stage == 0:
                state[i] = 0
                continue
            new = exit_seen(code, retrograde.pending_exit(state[i]), stage)
            if new != code:
                set_code(codes, rank, new)
                if new in (WON, LOST):
                    seeds_found[found] = rank
                    found += 1
    return found


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


@njit(cache=True)
def drain_stack(stage: int, seeds: int, codes: np.ndarray, stack: np.ndarray, stack_movers: np.ndarray,
                stack_opponents: np.ndarray, depth: int, found: np.ndarray, movers: np.ndarray,
                opponents: np.ndarray, child_lost: np.ndarray, tally: np.ndarray) -> int:
    """Tell the predecessors of the positions on the stack, a batch at a time,
    and push those they resolve. Returns the depth left: 0 when all is told,
    or more when the stack has no room for another batch's pushes (the
    caller moves some of it to the queue file and calls again). tally[0]
    counts the predecessors told."""
    room = stack.shape[0] - retrograde.BATCH - retrograde.MAX_PREDECESSORS
    while depth > 0 and depth <= room:
        count = 0
        while depth > 0 and count < retrograde.BATCH:
            depth -= 1
            lost = code_of(codes, stack[depth]) == LOST
            added = retrograde.predecessors(stack_movers[depth], stack_opponents[depth], seeds, 0, 0, codes, codes,
                                            False, False, found, count, movers, opponents)
            child_lost[count:added] = lost
            count = added
        # The batch's codes are fetched at once, so their misses overlap.
        for i in range(count):
            prefetch(codes, found[i] >> 1)  # type: ignore[call-arg]  # numba's @intrinsic passes typingctx
        for i in range(count):
            rank = found[i]
            code = code_of(codes, rank)
            if not unresolved(code):
                continue
            code = told(code, child_lost[i])
            set_code(codes, rank, code)
            if code in (WON, LOST):
                stack[depth] = rank
                stack_movers[depth] = movers[i]
                stack_opponents[depth] = opponents[i]
                depth += 1
        tally[0] += count
    return depth


@njit(cache=True)
def value_counts(state: np.ndarray, seeds: int, counts: np.ndarray) -> None:
    """Add the values of `state` (settled, in -seeds..seeds) to counts[d + seeds]."""
    for i in range(state.shape[0]):
        counts[np.int64(state[i]) + seeds] += 1


# Scratch files ---------------------------------------------------------------------


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
    """Write `data` at `offset` (or where the file is); return its CRC-32 from 0."""
    view = memoryview(np.ascontiguousarray(data).view(np.uint8))  # type: ignore[arg-type]  # a buffer
    done = 0
    while done < len(view):
        if offset is None:
            done += os.write(descriptor, view[done:])
        else:
            done += os.pwrite(descriptor, view[done:], offset + done)
    return zlib.crc32(view)


class StreamWriter:
    """A scratch file written in order, a piece at a time, as disk.write_lines
    writes one whole: created exclusively, never through a link, synced when
    closed; its CRC-32 kept. A failure removes it."""

    def __init__(self, path: str, scratch: str, seeds: int) -> None:
        self.path, self.scratch, self.seeds = path, scratch, seeds
        self.descriptor: int | None = _create(path, scratch, seeds)
        self.crc = 0
        self.bytes = 0

    def write(self, data: np.ndarray) -> None:
        assert self.descriptor is not None, "written after close"
        try:
            view = memoryview(np.ascontiguousarray(data).view(np.uint8))  # type: ignore[arg-type]  # a buffer
            done = 0
            while done < len(view):
                done += os.write(self.descriptor, view[done:])
        except OSError as error:
            self.abandon()
            raise _disk_error(error, self.scratch, self.seeds) from None
        self.crc = zlib.crc32(view, self.crc)
        self.bytes += len(view)

    def close(self) -> int:
        """Sync and close; returns the CRC-32."""
        assert self.descriptor is not None, "closed twice"
        try:
            os.fsync(self.descriptor)
            os.posix_fadvise(self.descriptor, 0, 0, os.POSIX_FADV_DONTNEED)  # on disk: leave the cache alone
        except OSError as error:
            self.abandon()
            raise _disk_error(error, self.scratch, self.seeds) from None
        os.close(self.descriptor)
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
    opened and its CRC-32 once read to the end (finish), as disk.read_lines
    checks a whole one. What was read before a damage is found is used only
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
        self.found = zlib.crc32(view, self.found)

    def finish(self) -> None:
        """Close; raise BuildError if what was read does not match the CRC-32."""
        self.close()
        if self.found != self.crc:
            raise BuildError(f"{self.path} does not match its CRC-32: damaged")

    def close(self) -> None:
        if self.descriptor is not None:
            with contextlib.suppress(OSError):
                os.posix_fadvise(self.descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(self.descriptor)
            self.descriptor = None


class RankQueue:
    """Ranks resolved this stage and not yet told of, beyond what the stack
    holds: one file, appended to and read from its start in segments of at
    most `segment` ranks, each with its CRC-32. Only this stage's work
    depends on it (a killed build restarts the layer), so it is not synced;
    once read to its end it is emptied."""

    def __init__(self, path: str, scratch: str, seeds: int, segment: int) -> None:
        self.path, self.scratch, self.seeds, self.segment = path, scratch, seeds, segment
        self.descriptor = _create(path, scratch, seeds)
        self.segments: deque[tuple[int, int, int]] = deque()  # (offset, count, crc)
        self.end = 0
        self.peak = 0  # the file's largest size
        self.written = 0

    def push(self, ranks: np.ndarray) -> None:
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

    def pop(self) -> np.ndarray | None:
        """The oldest segment, or None when the queue is empty."""
        if not self.segments:
            return None
        offset, count, crc = self.segments.popleft()
        out = np.empty(count, dtype=np.int64)
        view = memoryview(out.view(np.uint8))  # type: ignore[arg-type]  # an ndarray is a buffer
        done = 0
        try:
            while done < len(view):
                got = os.preadv(self.descriptor, [view[done:]], offset + done)
                if got == 0:
                    raise BuildError(f"{self.path} ended early")
                done += got
        except OSError as error:
            raise BuildError(f"cannot read {self.path}: {error.strerror}") from None
        if zlib.crc32(view) != crc:
            raise BuildError(f"{self.path} does not match its CRC-32: damaged")
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
    `load(m)` puts smaller layer m in `store` (checked)."""

    def __init__(self, seeds: int, scratch: str, store: LayerStore, rows: tuple[np.ndarray, ...],
                 groups: list[list[int]], load: Callable[[int], None], stack: int = STACK,
                 chunk: int = CHUNK, exit_slice: int = EXIT_SLICE) -> None:
        if stack < MIN_STACK or chunk % retrograde.BLOCK or exit_slice % retrograde.BLOCK:
            raise ValueError(f"a stack of at least {MIN_STACK} and chunks of whole blocks, not {stack}, {chunk}, "
                             f"{exit_slice}")
        self.seeds, self.scratch, self.store, self.rows = seeds, scratch, store, rows
        self.groups = [list(group) for group in groups]
        self.load = load
        self.stack_size, self.chunk, self.exit_slice = stack, chunk, exit_slice
        self.size = index.layer_size(seeds)
        self.state: tuple[str, int] | None = None  # the state file and its CRC-32
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
        for m in self.store.layers():
            self.store.drop(m)
        exit_seconds = time.perf_counter() - started
        if progress:
            progress("exits", 1.0)
        tick = time.perf_counter()
        codes = np.empty((self.size + 1) // 2, dtype=np.uint8)
        reader = StreamReader(*counts_file)
        reader.read_into(codes)
        reader.finish()
        os.remove(counts_file[0])
        self.read += codes.nbytes
        stages = self._stages(codes, progress)
        return {"positions": self.size, "seconds": time.perf_counter() - started, "exit_seconds": exit_seconds,
                "exit_passes": len(self.groups), "stage_seconds": time.perf_counter() - tick,
                "working_bytes": codes.nbytes, "exit_lookups": lookups, "stages": stages,
                "predecessors_told": self.stats["told"], "stage_accesses": self.stats["told"],
                "disk_bytes_read": self.read, "disk_bytes_written": self.written,
                "queue_peak_bytes": self.stats["queue_peak"], "queued_bytes": self.stats["queued"]}

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
                    with retrograde.thread_count(1 if count < retrograde.SERIAL_SIZE else None):
                        lookups += int(retrograde.exit_pass(seeds, count, values, counts, store.flat, store.starts,
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
        Returns (stage, seeds, predecessors told) a stage."""
        seeds, size = self.seeds, self.size
        capacity = self.stack_size
        stack = np.empty(capacity, dtype=np.int64)
        stack_movers = np.empty(capacity, dtype=np.uint64)
        stack_opponents = np.empty(capacity, dtype=np.uint64)
        batch = retrograde.BATCH + retrograde.MAX_PREDECESSORS
        found = np.empty(batch, dtype=np.int64)
        movers = np.empty(batch, dtype=np.uint64)
        opponents = np.empty(batch, dtype=np.uint64)
        child_lost = np.empty(batch, dtype=np.bool_)
        tally = np.zeros(1, dtype=np.int64)
        room = capacity - batch  # drain_stack's room: the depth it tells from
        keep = room // 2  # what the stack keeps when it spills
        state = np.empty(min(self.chunk, max(size, 1)), dtype=np.int8)
        seeds_found = np.empty(state.shape[0], dtype=np.int64)
        queue = RankQueue(self._path("queue", "queue"), self.scratch, seeds, segment=room)
        assert self.state is not None, "exits first"
        reports = []
        try:
            for stage in range(seeds, -1, -1):
                before = tally[0]
                seeded = self._pass(stage, codes, state, seeds_found, queue)
                if stage == 0:
                    break
                depth = 0
                while True:
                    if depth == 0:
                        ranks = queue.pop()
                        if ranks is None:
                            break
                        depth = fill_stack(seeds, ranks, stack, stack_movers, stack_opponents, 0, self.rows)
                    depth = drain_stack(stage, seeds, codes, stack, stack_movers, stack_opponents, depth, found,
                                        movers, opponents, child_lost, tally)
                    if depth > room:
                        # The stack's bottom goes to the queue; its top (the most recent) stays, moved down.
                        queue.push(stack[: depth - keep])
                        for array in (stack, stack_movers, stack_opponents):
                            array[:keep] = array[depth - keep : depth]
                        depth = keep
                reports.append((stage, seeded, int(tally[0] - before)))
                if progress:
                    progress(f"stage {stage}", (seeds - stage + 1) / max(seeds, 1))
        finally:
            self.stats = {"told": int(tally[0]), "queue_peak": queue.peak, "queued": queue.written}
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
                found = settle_chunk(stage, lo, piece, codes, seeds_found)
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
    checked against the file's CRC-32 once the last is read."""

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
        if start == self.next and stop > start:
            self.found = zlib.crc32(view, self.found)
            self.next = stop
            if stop == self.shape[0] and self.found != self.crc:
                raise BuildError(f"{self.path} does not match its CRC-32: damaged")
        return out
