"""The distributed build's lean slices: a process's slice of a layer in half a byte a position.

solver.distributed holds a process's slice of the layer being built in the
in-memory state (the lined layout, 1.52 bytes a position) beside its
slices of the smaller layers. Where that does not fit the memory of a
process (plan.lean_slice_layout), the build holds the slice as the lean
stages (solver.lean) hold a whole layer: a 4-bit code a position resident
(lean_kernels: unresolved with its count of unrefuted children and the
exit bit, won or lost this stage, resolved earlier), and the slice's value
bytes (its pending exit codes, then its values) in a *state file* of this
process's own in the scratch folder, read and rewritten in rank order once
a stage, a block at a time.

Exits. As solver.distributed makes them (exit_rounds: a batch of the
slice's ranks a round, every capture asked of its child's owner in one
all-to-all and answered in another), a group of smaller layers at a time
(plan.lean_slice_layout: as many as fit beside the codes, first fit): the
first group's pass writes the state file in order and the counts straight
into the codes; a later one reads each batch of the state file back and
raises its pending codes where a capture into the group does better. The
slices of the smaller layers are read from their files (Slices.load: every
chunk's CRC checked, the histogram summed over the processes) for each
group and dropped once it is done: nothing but the codes stays resident
between layers.

Stages. A stage begins with a pass over the state file (lean_kernels.
settle_chunk, with local ranks: rank lo + i of the slice's order is i):
the previous stage's results written as values, the exit bit set where the
best exit is at most -k, the stage's seeds found. They wait in a queue
file (lean_files.RankQueue) and are told of depth first (tell_slice): a
predecessor in the slice has its code updated at once and, resolved, is
pushed on the stack; one in another slice goes to the outbox as
(rank << 1) | (child lost), exactly as the in-memory slices send it. The
outbox is packed by owner (distributed.pack_updates) and exchanged in one
all-to-all that also ends the stage when no process sends
(Exchange.alltoallv_unless_quiet); what arrives is told (apply_updates)
and what it resolves queued. A process stops taking work when its outbox
could not take another batch's predecessors, so that the outbox is sent
before it overflows. The last pass (stage 0) writes the values; endless
play is 0.

Values. The values of a stage k are exactly the positions with |d| = k
whatever the order their updates arrive in, so the files are the same as
one process's, byte for byte. Process 0 writes the file from the state
files (SlicedValues: each process reads its runs of each window back).

Resuming: with a checkpoint folder, the slice is saved after its exits
and at stage boundaries (SliceCheckpoint: the codes and a copy of the state
file), and a rerun with as many processes goes on from there; without one,
or when the checkpoint does not check out, a killed build starts the layer
over, its files replaced (those of a run with another number of processes
removed by process 0). The files are created exclusively, never through a
link (a link planted at one of their names is removed, never written
through).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import time
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from numba import njit

from . import distributed, index, layer_state, lean, lean_kernels, tables
from .disk import own_files, remove_own
from .errors import ScratchError
from .intrinsics import prefetch
from .lean_files import RankQueue, create_exclusive, pread_into, read_window, write_error
from .lean_kernels import LOST, WON, code_of, set_code, told, unresolved

STACK = 1 << 16  # resolved positions a process holds to tell of (24 bytes each); more wait in the queue file
STATE_BLOCK = 1 << 22  # ranks of the state file a pass reads and rewrites at a time (a multiple of lean.CHUNK)
ROOM = layer_state.BATCH + layer_state.MAX_PREDECESSORS  # what one batch of the stack may add


def file_names(seeds: int, rank: int, processes: int) -> tuple[str, str]:
    """This process's state file and queue file of layer `seeds` (scratch folder)."""
    stem = f"awele-{seeds:02d}.slice-{rank}-of-{processes}"
    return f"{stem}.lean-state", f"{stem}.lean-queue"


def slice_pattern(seeds: int) -> re.Pattern[str]:
    """Every name file_names gives a file of layer `seeds`, whatever the process and their number."""
    return re.compile(rf"awele-{seeds:02d}\.slice-\d+-of-\d+\.lean-(state|queue)")


def _kill_point(seeds: int, stage: int, rank: int) -> None:
    """Fault injection for the tests (distributed.KILL_VARIABLE, "seeds:stage:process"):
    that process kills itself once its pass of that stage is done."""
    if os.environ.get(distributed.KILL_VARIABLE, "") == f"{seeds}:{stage}:{rank}":
        os.kill(os.getpid(), signal.SIGKILL)


def buffer_bytes(size: int, outbox: int = distributed.OUTBOX, stack: int = STACK) -> int:
    """Bytes a lean slice of `size` positions holds beside its codes in the
    stages: the stack (a rank and two words an entry), the batch's buffers,
    a block of the state file and its seeds, the outbox and its packing, and
    what arrives (as much again)."""
    block = min(STATE_BLOCK, max(size, 1))
    return stack * 24 + ROOM * 33 + block + min(lean.CHUNK, block) * 8 + outbox * 8 * 4


# Kernels ---------------------------------------------------------------------------


@njit(cache=True)
def _push(seeds, lo, order, local, stack, stack_movers, stack_opponents, depth, rows):
    mover, opponent = index.unrank_fast(seeds, index.file_rank(seeds, lo + local, order), rows[0], rows[1], rows[2],
                                        rows[3])
    stack[depth] = local
    stack_movers[depth] = mover
    stack_opponents[depth] = opponent
    return depth + 1


@njit(cache=True)
def tell_slice(seeds: int, lo: int, size: int, codes: np.ndarray, ranks: np.ndarray, counter: np.ndarray,
               stack: np.ndarray, stack_movers: np.ndarray, stack_opponents: np.ndarray, found: np.ndarray,
               movers: np.ndarray, opponents: np.ndarray, child_lost: np.ndarray, outbox: np.ndarray, sent: int,
               tally: np.ndarray, rows: tuple[np.ndarray, ...], order: int) -> tuple[int, int]:
    """Tell of `ranks` (local ranks of the slice, resolved this stage: WON or
    LOST) and of what they resolve in turn, depth first, as lean_kernels.
    drain_stack does for a whole layer: the predecessors (ranks in `order`)
    in the slice (lo..lo+size-1) are told (lean_kernels.told) and pushed
    once resolved; those elsewhere go to outbox[sent:] as (rank << 1) |
    (child lost). Ranks are taken from counter[0] on. Stops when all is
    told, or when the stack or the outbox could not take another batch:
    returns (stack depth, outbox length); the caller queues stack[:depth]
    and ranks[counter[0]:]. tally[0] counts the predecessors told."""
    depth = 0
    while True:
        if depth == 0:
            if counter[0] >= ranks.shape[0] or sent + ROOM > outbox.shape[0]:
                break
            first = counter[0]
            counter[0] = min(ranks.shape[0], first + lean_kernels.SEED_TAKE)
            for i in range(first, counter[0]):
                depth = _push(seeds, lo, order, ranks[i], stack, stack_movers, stack_opponents, depth, rows)
        if depth + ROOM > stack.shape[0] or sent + ROOM > outbox.shape[0]:
            break
        count = 0
        while depth > 0 and count < layer_state.BATCH:
            depth -= 1
            lost = code_of(codes, stack[depth]) == LOST
            added = layer_state.predecessors(stack_movers[depth], stack_opponents[depth], seeds, 0, 0, codes, codes,
                                             False, False, found, count, movers, opponents, order)
            child_lost[count:added] = lost
            count = added
        for i in range(count):  # the batch's codes fetched at once, so that their misses overlap
            local = found[i] - lo
            if 0 <= local < size:
                prefetch(codes, local >> 1)  # type: ignore[call-arg]  # numba's @intrinsic passes typingctx
        for i in range(count):
            local = found[i] - lo
            if local < 0 or local >= size:
                outbox[sent] = (found[i] << 1) | (1 if child_lost[i] else 0)
                sent += 1
                continue
            code = code_of(codes, local)
            if not unresolved(code):
                continue
            code = told(code, child_lost[i])
            set_code(codes, local, code)
            if code in (WON, LOST):
                stack[depth] = local
                stack_movers[depth] = movers[i]
                stack_opponents[depth] = opponents[i]
                depth += 1
        tally[0] += count
    return depth, sent


@njit(cache=True)
def apply_updates(lo: int, codes: np.ndarray, updates: np.ndarray, resolved: np.ndarray) -> int:
    """Tell the slice's positions of what other slices sent ((rank << 1) |
    (child lost), ranks of this slice from `lo`); the local ranks this
    resolves go to resolved[:n]; returns n."""
    n = 0
    for j in range(updates.shape[0]):
        local = (updates[j] >> 1) - lo
        code = code_of(codes, local)
        if not unresolved(code):
            continue
        code = told(code, (updates[j] & 1) == 1)
        set_code(codes, local, code)
        if code in (WON, LOST):
            resolved[n] = local
            n += 1
    return n


@njit(cache=True)
def raise_pending(old: np.ndarray, new: np.ndarray) -> None:
    """old[i] = new[i] where new's pending exit is the better (a later exit pass)."""
    for i in range(old.shape[0]):
        if layer_state.pending_exit(new[i]) > layer_state.pending_exit(old[i]):
            old[i] = new[i]


# The slice -------------------------------------------------------------------------


class LeanSliceSolver:
    """This process's part in the build of layer `seeds` with lean slices
    (module docstring; collective calls). `groups`: the smaller layers by
    exit pass (plan.lean_slice_layout); their slices are read from the
    tables in `directory`. solve() makes the slice's values in the state
    file; values() gives them to the file's writer; clear() removes the
    files."""

    def __init__(self, seeds: int, exchange: distributed.Exchange, slices: distributed.Slices,
                 rows: tuple[np.ndarray, ...], directory: str, scratch: str, groups: list[list[int]],
                 outbox: int = distributed.OUTBOX, batch: int = distributed.EXIT_BATCH, stack: int = STACK,
                 chunk: int = lean.CHUNK, block: int = STATE_BLOCK) -> None:
        if chunk % layer_state.BLOCK or block % chunk or stack < lean.MIN_STACK or outbox <= ROOM:
            raise ValueError(f"chunks of whole blocks, blocks of whole chunks, a stack of at least {lean.MIN_STACK} "
                             f"and an outbox above {ROOM}, not {chunk}, {block}, {stack}, {outbox}")
        self.seeds, self.exchange, self.slices, self.rows = seeds, exchange, slices, rows
        self.directory, self.scratch, self.groups = directory, scratch, [list(g) for g in groups]
        self.bounds = slices.bounds[seeds, : exchange.size + 1]
        self.lo, self.hi = slices.span(seeds)
        self.size = self.hi - self.lo
        self.batch = max(layer_state.BLOCK, batch // layer_state.BLOCK * layer_state.BLOCK)
        self.outbox_size, self.stack_size, self.chunk, self.block = outbox, stack, chunk, block
        state, queue = file_names(seeds, exchange.rank, exchange.size)
        self.state_path, self.queue_path = os.path.join(scratch, state), os.path.join(scratch, queue)
        self.histogram = np.zeros(2 * seeds + 1, dtype=np.int64)
        self.read = self.written = 0
        self.codes = np.zeros(0, dtype=np.uint8)
        self.saved: SliceCheckpoint | None = None

    def clear(self, others: bool = False) -> None:
        """Remove this process's files of the layer (a run killed before left
        them, or the table is written): a file, or a link planted at its name
        (the link itself). With `others`, those of a run with another number
        of processes too (process 0 does so before the layer begins)."""
        mine = {os.path.basename(self.state_path), os.path.basename(self.queue_path)}
        ours = f"-of-{self.exchange.size}."
        names = [name for name in own_files(self.scratch, slice_pattern(self.seeds))
                 if name in mine or (others and ours not in name)]
        remove_own(self.scratch, names, self.seeds)
        if self.saved is not None:
            self.saved.remove()

    def _write(self, descriptor: int, data: np.ndarray, offset: int) -> None:
        view = memoryview(np.ascontiguousarray(data).view(np.uint8))  # type: ignore[arg-type]  # a buffer
        done = 0
        try:
            while done < len(view):
                done += os.pwrite(descriptor, view[done:], offset + done)
        except OSError as error:
            raise write_error(error, self.scratch, self.seeds) from None
        self.written += len(view)

    def solve(self, progress: Callable[[str, float], None] | None = None,
              checkpoints: distributed.Checkpoints | None = None) -> dict[str, Any]:
        """The exits (unless a checkpoint has them), then the stages; returns
        stats as SliceSolver.solve's. With `checkpoints` (a folder), the
        codes and the state file are saved after the exits and after a
        stage (SliceCheckpoint), and a rerun with as many processes resumes
        at the last one saved."""
        started = time.perf_counter()
        before = self.exchange.bytes_sent
        self.clear(others=self.exchange.rank == 0)
        # Whole words of codes (settle_chunk reads them a word at a time).
        self.codes = np.zeros(((self.size + 1) // 2 + 7) // 8 * 8, dtype=np.uint8)
        saved = SliceCheckpoint(checkpoints, self) if checkpoints is not None and checkpoints.directory else None
        self.saved = saved
        descriptor = create_exclusive(self.state_path, self.scratch, self.seeds)
        try:
            resumed = saved.resume(descriptor) if saved else None
            if resumed is None:
                for number, group in enumerate(self.groups):
                    self._exit_pass(descriptor, number, group)
                if saved:
                    saved.save(self.seeds, descriptor)
            self.slices.keep_only(())
            exit_seconds = time.perf_counter() - started
            exit_bytes = self.exchange.bytes_sent - before
            if progress:
                progress("exits", 1.0)
            tick = time.perf_counter()
            reports, rounds = self._stages(descriptor, progress, self.seeds if resumed is None else resumed, saved)
        finally:
            os.close(descriptor)
        self.codes = np.zeros(0, dtype=np.uint8)
        return {"exit_bytes": exit_bytes, "stage_bytes": self.exchange.bytes_sent - before - exit_bytes,
                "exit_seconds": exit_seconds, "stage_seconds": time.perf_counter() - tick, "seed_seconds": 0.0,
                "resumed_at_stage": resumed, "stage_rounds": rounds, "stages": reports,
                "exit_passes": len(self.groups), "disk_bytes_read": self.read, "disk_bytes_written": self.written}

    def _exit_pass(self, descriptor: int, number: int, group: list[int]) -> None:
        """Exit pass `number` over the slice, with the slices of the smaller
        layers of `group` read from their files (collective): the first
        writes the state file and the counts (into the codes), a later one
        raises the state file's pending codes."""
        self.slices.keep_only(set(group))
        for m in group:
            if m not in self.slices.values:
                self.slices.load(self.directory, m)
        use = np.zeros(index.MAX_SEEDS + 1, dtype=np.bool_)
        use[group] = True
        values = np.empty(self.batch, dtype=np.int8)
        scratch_counts = np.zeros((self.batch + 1) // 2, dtype=np.uint8)
        old = np.empty(self.batch if number else 0, dtype=np.int8)

        def place(start: int, stop: int) -> tuple[int, np.ndarray, np.ndarray, bool]:
            values[: stop - start] = 0
            if number == 0:
                return start, values, self.codes[(start - self.lo) // 2 :], False
            scratch_counts[:] = 0
            return start, values, scratch_counts, False

        def done(start: int, stop: int, raised: np.ndarray) -> None:
            piece = raised[: stop - start]
            if number:
                pread_into(descriptor, old[: stop - start], start - self.lo, self.state_path)
                self.read += stop - start
                raise_pending(old[: stop - start], piece)
                piece = old[: stop - start]
            self._write(descriptor, piece, start - self.lo)

        distributed.exit_rounds(self.seeds, self.exchange, self.slices, self.rows, self.lo, self.hi, self.batch,
                                place, done, use)

    def _stages(self, descriptor: int, progress: Callable[[str, float], None] | None, first: int,
                saved: SliceCheckpoint | None) -> tuple[list, int]:
        """Stages `first` down to 1, each a pass over the state file then its
        propagation and exchanges (saved after it when a checkpoint is due),
        and the last pass (stage 0); returns (stage, seeds found,
        predecessors told) a stage and the exchanges."""
        seeds, exchange = self.seeds, self.exchange
        stack = np.empty(self.stack_size, dtype=np.int64)
        stack_movers = np.empty(self.stack_size, dtype=np.uint64)
        stack_opponents = np.empty(self.stack_size, dtype=np.uint64)
        found = np.empty(ROOM, dtype=np.int64)
        movers = np.empty(ROOM, dtype=np.uint64)
        opponents = np.empty(ROOM, dtype=np.uint64)
        child_lost = np.empty(ROOM, dtype=np.bool_)
        outbox = np.empty((1, self.outbox_size), dtype=np.int64)
        sent = np.zeros(1, dtype=np.int64)
        tally = np.zeros(1, dtype=np.int64)
        counter = np.zeros(1, dtype=np.int64)
        reports = []
        rounds = 0
        queue = RankQueue(self.queue_path, self.scratch, seeds, segment=self.stack_size)
        try:
            for stage in range(first, -1, -1):
                seeded = self._pass(descriptor, stage, queue)
                _kill_point(seeds, stage, exchange.rank)
                if stage == 0:
                    break
                before = int(tally[0])
                while True:
                    while sent[0] + ROOM <= self.outbox_size:  # tell of what waits, until the outbox is full
                        ranks = queue.pop(self.stack_size)
                        if ranks is None:
                            break
                        counter[0] = 0
                        depth, sent[0] = tell_slice(seeds, self.lo, self.size, self.codes, ranks, counter, stack,
                                                    stack_movers, stack_opponents, found, movers, opponents,
                                                    child_lost, outbox[0], int(sent[0]), tally, self.rows,
                                                    distributed.ORDER)
                        queue.push(ranks[counter[0] :])
                        queue.push(stack[:depth])
                    updates, counts = distributed.pack_updates(outbox, sent, self.bounds)
                    sent[0] = 0
                    received = exchange.alltoallv_unless_quiet(updates, counts)
                    if received is None:  # nobody sent: every queue is empty
                        break
                    rounds += 1
                    resolved = np.empty(received.shape[0], dtype=np.int64)
                    queue.push(resolved[: apply_updates(self.lo, self.codes, received, resolved)])
                reports.append((stage, exchange.sum(seeded), exchange.sum(int(tally[0]) - before)))
                if saved and stage > 1 and saved.checkpoints.due():
                    saved.save(stage - 1, descriptor)
                if progress:
                    progress(f"stage {stage}", (seeds - stage + 1) / max(seeds, 1))
        finally:
            queue.close()
        return reports, rounds

    def _pass(self, descriptor: int, stage: int, queue: RankQueue) -> int:
        """The pass over the state file at the start of `stage` (lean_kernels.
        settle_chunk on local ranks): stage + 1's results written, the seeds
        found queued; at stage 0 the values settled and counted. Returns the
        seeds."""
        block = np.empty((min(self.block, max(self.size, 1)) + 7) // 8 * 8, dtype=np.int8)
        seeds_found = np.empty(min(self.chunk, block.shape[0]), dtype=np.int64)
        total = 0
        for lo in range(0, self.size, self.block):
            piece = block[: min(self.block, self.size - lo)]
            pread_into(descriptor, piece, lo, self.state_path)
            for start in range(0, piece.shape[0], self.chunk):
                count = min(self.chunk, piece.shape[0] - start)
                part = block[start : start + (count + 7) // 8 * 8]  # whole words (settle_chunk)
                with layer_state.thread_count(1):
                    found = lean_kernels.settle_chunk(stage, stage == self.seeds, lo + start, count, part, self.codes,
                                                      seeds_found)
                queue.push(seeds_found[:found])
                total += found
                if stage == 0:
                    lean_kernels.value_counts(part[:count], self.seeds, self.histogram)
            self._write(descriptor, piece, lo)
            self.read += piece.shape[0]
        return total

    def values(self) -> SliceFile:
        """The slice's values (after solve()), read from the state file as asked."""
        return SliceFile(self.state_path, self.size)


LAYOUT_NAME = "lean-slices"  # in a checkpoint's manifest (distributed.Checkpoints'): the in-memory slices' is "lined"


class SliceCheckpoint:
    """A lean slice's checkpoints, in the folder of `checkpoints`
    (distributed.Checkpoints: its manifest's name and interval): at a stage
    boundary, each process's codes and a copy of its state file (1.5 bytes
    a position of its slice), process 0's manifest naming the stage whose
    pass comes next, the groups and each file's CRC-32. The state file
    holds the values resolved before that stage and the pending codes, the
    codes what that stage's pass needs, so a rerun with as many processes
    copies the state file back, reads the codes and goes on with that
    pass; anything that does not check out is ignored and the layer starts
    over. Files created exclusively and renamed into place
    (tables.write_file_exclusively), never written through a link."""

    def __init__(self, checkpoints: distributed.Checkpoints, solver: LeanSliceSolver) -> None:
        self.checkpoints, self.solver = checkpoints, solver
        self.exchange = solver.exchange

    def _path(self, stage: int, kind: str) -> str:
        assert self.checkpoints.directory is not None, "a checkpoint folder"
        return os.path.join(self.checkpoints.directory, f"awele-{self.solver.seeds:02d}.stage-{stage:02d}.process-"
                                                        f"{self.exchange.rank}-of-{self.exchange.size}.{kind}")

    def _manifest(self) -> dict[str, Any]:
        solver = self.solver
        return {"seeds": solver.seeds, "processes": self.exchange.size, "order": distributed.ORDER_NAME,
                "layout": LAYOUT_NAME, "bounds": [int(b) for b in solver.bounds], "groups": solver.groups}

    def _state_pieces(self, descriptor: int, path: str | None = None) -> Iterator[np.ndarray]:
        """The bytes of a state file (open as `descriptor`) a block at a time, in one buffer."""
        solver = self.solver
        piece = np.empty(min(solver.block, max(solver.size, 1)), dtype=np.int8)
        for lo in range(0, solver.size, solver.block):
            part = piece[: min(solver.block, solver.size - lo)]
            pread_into(descriptor, part, lo, path or solver.state_path)
            yield part

    def save(self, stage: int, descriptor: int) -> None:
        """Save the slice before the pass of `stage` (collective)."""
        crcs = (tables.write_file_exclusively(self._path(stage, "lean-codes"), (self.solver.codes,)),
                tables.write_file_exclusively(self._path(stage, "lean-state"), self._state_pieces(descriptor)))
        gathered = self.exchange.gather(crcs)
        if self.exchange.rank == 0:
            manifest = {**self._manifest(), "stage": stage, "crc32": gathered}
            tables.write_file_exclusively(self.checkpoints.manifest_path(self.solver.seeds),
                                          (json.dumps(manifest).encode(),))
        self.exchange.barrier()
        self.remove(above=stage)
        self.checkpoints.last = time.monotonic()

    def remove(self, above: int = -1) -> None:
        """Remove this process's checkpoint files of the stages above `above` (all by default)."""
        for stage in range(above + 1, self.solver.seeds + 1):
            for kind in ("lean-codes", "lean-state"):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(self._path(stage, kind))

    def resume(self, descriptor: int) -> int | None:
        """The stage whose pass comes next, the codes read and the state file
        copied back into `descriptor`, or None (collective)."""
        manifest = self.checkpoints.recorded(self.solver.seeds, self._manifest())
        if manifest is None:
            return None
        try:
            stage = int(manifest["stage"])
            codes_crc, state_crc = (int(crc) for crc in manifest["crc32"][self.exchange.rank])
            ok = 0 <= stage <= self.solver.seeds and self._read_back(stage, descriptor, codes_crc, state_crc)
        except (KeyError, TypeError, ValueError, IndexError):  # a manifest of another shape: not ours
            ok = False
        if self.exchange.sum(int(ok)) == self.exchange.size:
            return stage
        self.solver.codes[:] = 0  # the exits start over: their first pass writes every byte of the state file
        return None

    def _read_back(self, stage: int, descriptor: int, codes_crc: int, state_crc: int) -> bool:
        """Whether this process's files of `stage` check out, the codes read
        and the state file copied back a block at a time (never whole)."""
        solver = self.solver
        try:
            data = tables.read_file_nofollow(self._path(stage, "lean-codes"), solver.codes.nbytes + 1)
            if len(data) != solver.codes.nbytes or zlib.crc32(data) != codes_crc:
                return False
            source = os.open(self._path(stage, "lean-state"), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            if os.fstat(source).st_size != solver.size:
                return False
            crc = 0
            for part in self._state_pieces(source, self._path(stage, "lean-state")):
                crc = zlib.crc32(memoryview(part.view(np.uint8)), crc)  # type: ignore[arg-type]  # a buffer
            if crc != state_crc:
                return False
            for lo, part in zip(range(0, solver.size, solver.block), self._state_pieces(source, "")):
                solver._write(descriptor, part, lo)
        except ScratchError:
            return False
        finally:
            os.close(source)
        solver.codes[:] = np.frombuffer(data, dtype=np.uint8)
        return True



class SliceFile:
    """A process's values in its state file: values[a:b] reads those bytes
    (GatheredLayer and send_layer take it as they take an array)."""

    def __init__(self, path: str, size: int) -> None:
        self.path = path
        self.shape = (size,)
        self.dtype = np.dtype(np.int8)

    def __getitem__(self, window: slice) -> np.ndarray:
        start, stop, _ = window.indices(self.shape[0])
        return read_window(self.path, start, stop)
