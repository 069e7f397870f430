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

The exits are made as in the disk mode, a block of ranks at a time with the
same kernel (exits.exit_pass, the plain layout: value bytes and count
nibbles apart), a pass over the layer for each group of smaller layers that
fits in memory (plan.lean_plan): the first writes the state file and the
counts, already in the code's layout, to a counts file, read back as the
stages' codes once the smaller layers are dropped; each later one raises the
state file's pending codes in place. So the layer's own state is never
resident beside its smaller layers, and the stages hold half a byte a
position, their stack and a few blocks of the state file.

One state file, rewritten in place: a pass reads a block, works on it in
memory and writes it back where it was. Doing a block twice gives what
doing it once gives (a result is written where the codes say, an exit raised
to the best so far), which is what makes a kill at any moment resumable:
each block is recorded in the journal (LeanLayer, docs/DISK.md) before it is
written back (that step not synced: the blocks are not either), and the
codes, never saved, are rebuilt from the state file (rebuild_mark,
rebuild_counts, rebuild_seeds).

Every part uses every thread by default (measured: docs/DISK.md). A
stage's pass is read and settled a block a thread, each thread taking the
next block as it becomes free, while this one records the blocks' steps and
writes them back in order (_rewrite): one block in flight, as on one thread,
and no thread waits for another at each block's end. The propagation's
threads (tell_threads) each have a stack of their own, updating a code with
a compare-and-swap of the byte it shares with its neighbour. Files are created
exclusively (never through a link), checked by a checksum as they are read
(not zlib's CRC-32: it was the stages' bottleneck) and removed once used; a
full disk stops the build in one line (BuildError), the last step kept.

The kernels (codes, passes, propagation, rebuilding) are in solver.lean_kernels,
the scratch files (names, checksum, readers, the queue) in solver.lean_files;
this module drives them: the journal, the exit passes and the stages.
"""

from __future__ import annotations

import contextlib
import functools
import os
import queue as queues
import re
import resource
import shutil
import threading
import time
from collections.abc import Callable
from typing import Any

import numba
import numpy as np

from . import exits, index, layer_state, lean_exits, stages, tables
from .disk import (
    COUNT_MAX,
    check_int,
    check_keys,
    check_list,
    check_name,
    check_seconds,
    encode_journal,
    recorded_journal,
    same,
    say,
)
from .errors import ScratchError
from .layers import LayerStore, byte_histogram
from .lean_files import (
    RankQueue,
    StreamReader,
    checksum,
    codes_name,
    counts_name,
    create_exclusive,
    journal_path,
    own_files,
    piece_sum,
    pread_into,
    queue_name,
    read_window,
    remove_layer_files,
    state_name,
    write_at,
    write_error,
)
from .lean_kernels import (
    EARLIER,
    EXIT_BIT,
    LOST,
    WON,
    code_of,
    exit_seen,
    rebuild_counts,
    rebuild_mark,
    rebuild_seeds,
    set_code,
    settle_block,
    tell_ranks,
    told,
    unresolved,
    value_counts,
)

# Re-exported: the tests and tools know them as lean's.
__all__ = ["EARLIER", "EXIT_BIT", "LOST", "WON", "LeanLayer", "RankQueue", "StreamReader", "StreamWriter", "checksum",
           "code_of", "codes_name", "counts_name", "exit_seen", "journal_path", "own_files", "remove_layer_files",
           "set_code", "state_name", "told", "unresolved"]

CHUNK = 1 << 19  # seeds a thread of a pass lists at a time (a multiple of BLOCK; a block is whole chunks)
EXIT_SLICE = 1 << 22  # the fewest ranks a block of the state file has (block_ranks)
BLOCKS_A_PASS = 1024  # a pass over the state file records a step (the journal) this many times at most: five
# blocks (PASS_THREADS + 1) held at once come to 0.005 bytes a position
STACK = 1 << 19  # resolved positions held in memory to tell of (24 bytes each), shared by the threads' stacks;
# more go to the queue file
ENTRY_BYTES = 8  # a queued entry: the rank (int64)
# Bytes the lean stages hold beside the codes (the stack, a chunk of the state file and its seeds, a batch)
# and the exit passes beside the smaller layers (a slice's bytes and counts, exit_pass's buffers):
PASS_THREADS = 4  # the most threads a stage's pass reads and settles blocks with (each a block and a list of seeds)
STAGE_BUFFERS = STACK * (24 + 2 * ENTRY_BYTES) + PASS_THREADS * CHUNK * ENTRY_BYTES + (4 << 20)
EXIT_BUFFERS = layer_state.WORK_SLOTS * layer_state.BLOCK * 6 * 24 + (4 << 20)
MIN_STACK = 2 * (layer_state.BATCH + layer_state.MAX_PREDECESSORS) + 2  # a batch's pushes and a refill fit
CODES_EVERY = 600.0  # seconds of stages after which every stage saves its codes as it begins (the codes file): a
# kill then costs that stage's telling, where it cost a count of every pending position's children (layer 36 at
# stage 8: about 1.8 hours here, more than the exits and the 28 stages before it took). A save is dropped when the
# next pass starts, so one saved only every ten minutes left long stages unguarded (36's stage 8, begun a minute
# after stage 9's save, had none); the first stages, quick, save nothing
CODES_SPARE = 0.6  # bytes a position the scratch disk must keep free beside a codes file (the queue's planned peak,
# plan.LEAN_QUEUE_BYTES): with less, no codes file is saved


def write_piece(descriptor: int, view: memoryview) -> None:
    """Write all of `view` where the file is (the tests make it fail)."""
    done = 0
    while done < len(view):
        done += os.write(descriptor, view[done:])


class StreamWriter:
    """A scratch file written in order, a piece at a time, as disk.write_lines
    writes one whole: created exclusively, never through a link; its
    checksum kept. A failure removes it. Synced when closed with `sync` (a
    file the journal names: a later run may read it)."""

    def __init__(self, path: str, scratch: str, seeds: int) -> None:
        self.path, self.scratch, self.seeds = path, scratch, seeds
        self.descriptor: int | None = create_exclusive(path, scratch, seeds)
        self.crc = 0
        self.bytes = 0

    def write(self, data: np.ndarray) -> None:
        assert self.descriptor is not None, "written after close"
        view = memoryview(np.ascontiguousarray(data).view(np.uint8))  # type: ignore[arg-type]  # a buffer
        try:
            write_piece(self.descriptor, view)
        except OSError as error:
            self.abandon()
            raise write_error(error, self.scratch, self.seeds) from None
        self.crc = (self.crc + piece_sum(view, self.bytes)) & 0xFFFFFFFFFFFFFFFF
        self.bytes += len(view)

    def close(self, sync: bool = False) -> int:
        """Close (synced first with `sync`); returns the checksum."""
        assert self.descriptor is not None, "closed twice"
        try:
            if sync:
                os.fsync(self.descriptor)
            os.close(self.descriptor)
        except OSError as error:
            self.descriptor = None
            with contextlib.suppress(OSError):
                os.remove(self.path)
            raise write_error(error, self.scratch, self.seeds) from None
        self.descriptor = None
        return self.crc

    def abandon(self) -> None:
        if self.descriptor is not None:
            os.close(self.descriptor)
            self.descriptor = None
            with contextlib.suppress(OSError):
                os.remove(self.path)


# The layer -------------------------------------------------------------------------

KILL_VARIABLE = "AWELE_TEST_LEAN_KILL"  # "seeds:steps" (tests): SIGKILL right after that many steps are recorded
SUM_MAX = (1 << 64) - 1  # a checksum (lean.checksum) is a 64-bit word
MASK = SUM_MAX


def block_ranks(size: int) -> int:
    """Ranks of a block of the state file of a layer of `size` positions: a
    pass reads one, rewrites it in place and records that step, so a pass
    records at most BLOCKS_A_PASS steps; whole chunks, EXIT_SLICE at least."""
    share = -(-size // BLOCKS_A_PASS)
    return max(EXIT_SLICE, -(-share // CHUNK) * CHUNK)


def stage_buffer_bytes(size: int) -> int:
    """Bytes the stages hold beside the codes (STAGE_BUFFERS and a block for
    each thread of a pass and one being written back)."""
    return STAGE_BUFFERS + (PASS_THREADS + 1) * block_ranks(size)


def exit_buffer_bytes(size: int) -> int:
    """Bytes the exit passes hold beside the smaller layers: exit_pass's, and
    two blocks (the first pass a block's values and counts, a later one the
    block it raises and the one it writes back: _rewrite's buffers[:2])."""
    return EXIT_BUFFERS + block_ranks(size) * 2



def stage_fits(found: np.ndarray, stage: int, in_flight: bool) -> bool:
    """Whether a state file whose bytes have histogram `found` (index: the
    byte as unsigned) can be the one from which stage `stage` goes on: every
    value resolved beyond +-stage (at +-stage too while the pass that writes
    them is `in_flight`), 0 only from the last pass, and no pending exit
    above `stage` (it would have been won at that stage). At stage 0 nothing
    is pending. The stage a journal records is so checked against the file
    it names, as the disk mode checks its checkpoints (disk.stage_fits)."""
    lowest = stage if in_flight else stage + 1
    for value in range(1, layer_state.MAX_VALUE + 1):
        if value < lowest and (found[value] or found[-value & 0xFF]):
            return False
        if value > stage and found[np.int64(layer_state.pending(value)) & 0xFF]:
            return False
    if found[0] and not (stage == 0 or (stage == 1 and in_flight)):
        return False
    return stage > 0 or all(found[np.int64(layer_state.pending(value)) & 0xFF] == 0
                            for value in range(layer_state.NO_EXIT, layer_state.MAX_VALUE + 1))


class LeanLayer:
    """The lean build of layer `seeds` (module docstring): solve() makes its
    values, values() gives them to tables.write_table, clear() removes its
    files. `groups` are the smaller layers by exit pass (plan.lean_plan);
    `load(m)` puts smaller layer m in `store` (checked). `stack`, `chunk`
    and `block` (default: STACK, CHUNK, block_ranks) are the stack's
    entries, the most seeds a pass lists at a time and the ranks of a block
    of the state file (a recorded step). `tell_threads` tell of the stages'
    resolutions at once, and `settle_threads` (PASS_THREADS at most) read
    and settle the blocks of a stage's pass at once, a block each (_rewrite);
    both by default as many as numba has threads (the build's --threads),
    1 for one thread (docs/DISK.md has what each costs).

    The journal (awele-NN.lean.json, written atomically, as the disk mode's:
    disk.encode_journal) records each step: an exit pass done, a stage
    begun, a block of a pass about to be rewritten in place (its checksum
    before and after, and those of the blocks before and after it). A
    rerun (resume) goes on from the last step recorded: the exits from the
    next pass, the stages from the stage in progress, its codes read back
    from the codes file when the journal names one for that stage, else
    rebuilt from the state file (_rebuild: every pending position's
    children counted, as long as an exit pass). Once `codes_every` seconds
    of stages have gone by in this run (at once after a rebuild), each
    stage saves its codes file as it begins; the next stage's pass drops
    it. `kill_after` (tests): SIGKILL this
    process after that many steps of this run are recorded.

    With `streamed` ({"slice": ranks, "window": ranks}, plan.lean_plan), the
    exits are streamed (solver.lean_exits): no smaller layer is loaded, and
    `read(m, start, stop)` gives ranks start..stop-1 of smaller layer m,
    checked. `groups` is then the one group of every smaller layer: the
    state and counts files are those of one resident exit pass over them,
    made in steps the journal's `streamed` field records (a slice asked, a
    smaller layer's answers to it, a slice done: lean_exits.StreamedExits),
    and a kill in them goes on from the last."""

    def __init__(self, seeds: int, scratch: str, store: LayerStore, rows: tuple[np.ndarray, ...],
                 groups: list[list[int]], load: Callable[[int], None], stack: int | None = None,
                 chunk: int | None = None, block: int | None = None, tell_threads: int | None = None,
                 settle_threads: int | None = None, kill_after: int | None = None,
                 streamed: dict[str, int] | None = None,
                 read: Callable[[int, int, int], np.ndarray] | None = None, codes_every: float = CODES_EVERY) -> None:
        self.size = index.layer_size(seeds)
        if streamed is not None and (read is None or len(groups) != 1 or streamed["slice"] % layer_state.BLOCK):
            raise ValueError("streamed exits read the smaller layers (`read`) in one group, in slices of whole blocks")
        stack, chunk = stack or STACK, chunk or CHUNK
        block = block or block_ranks(self.size)
        if stack < MIN_STACK or chunk % layer_state.BLOCK or block % chunk:
            raise ValueError(f"a stack of at least {MIN_STACK}, chunks of whole blocks and blocks of whole chunks, "
                             f"not {stack}, {chunk}, {block}")
        self.seeds, self.scratch, self.store, self.rows = seeds, scratch, store, rows
        self.groups = [[int(m) for m in group] for group in groups]
        self.load = load
        self.streamed, self.read_window = streamed, read
        self.stack_size, self.chunk, self.block = stack, chunk, block
        self.tell_threads = max(1, tell_threads or numba.get_num_threads())
        self.settle_threads = min(PASS_THREADS, max(1, settle_threads or numba.get_num_threads()))
        self.kill_after = kill_after
        self.codes_every = codes_every
        self.codes_saved = 0  # codes files saved by this run
        self.resumed_from: str | None = None  # a resumed stage's codes: "codes" (read back) or "count" (rebuilt)
        self.steps = 0
        self.journal: dict[str, Any] | None = None
        self.resumed = False  # whether resume() went on from a recorded journal
        self.state_sum = 0  # the state file's checksum as it is now
        self.expect: tuple[int, int] | None = None  # (block, checksum) the resumed pass must give that block
        self.histogram = np.zeros(2 * seeds + 1, dtype=np.int64)
        self.read = self.written = 0
        self.stats: dict[str, Any] = {}
        self.exit_stats = {"slices": 0, "peak": 0}  # streamed exits: slices, the peak of their requests
        self.buffers: list[np.ndarray] = []  # a block's bytes for each thread of a pass and one written back
        self.buffer = np.empty(0, dtype=np.int8)  # the first: what a check of the state file reads into

    # The journal --------------------------------------------------------------------

    def _fresh(self) -> dict[str, Any]:
        return {"seeds": self.seeds, "groups": self.groups, "block": self.block, "exits_done": -1, "stage": None,
                "sum": 0, "pass": None, "counts": None, "exit_seconds": 0.0, "exit_lookups": 0, "streamed": None}

    def _blocks(self) -> int:
        return max(1, -(-self.size // self.block))

    def check_journal(self, journal: dict[str, Any]) -> None:
        """ScratchError (why) unless `journal` is one this layer's build with
        these groups and blocks can have written: every field of its type and
        in its range, every file it names under the exact name the build
        gives it."""
        fresh = self._fresh()
        check_keys(journal, set(fresh) - {"streamed"}, ("streamed", "codes"))  # absent: an older journal, none
        for key in ("seeds", "groups", "block"):
            if not same(journal[key], fresh[key]):
                raise ScratchError(f"it was made for another layout ({key})")
        progress = journal.get("streamed")
        if progress is not None:  # streamed exits in progress: their own record, nothing else yet
            if self.streamed is None:
                raise ScratchError("it was made for another layout (streamed exits)")
            lean_exits.check_progress(progress, self.seeds, self.streamed)
            if (journal["exits_done"], journal["stage"], journal["counts"], journal["pass"]) != (-1, None, None, None):
                raise ScratchError("it records streamed exits in progress beside later steps")
            check_int(journal["sum"], 0, SUM_MAX, "sum")
            check_seconds(journal["exit_seconds"], "exit_seconds")
            check_int(journal["exit_lookups"], 0, COUNT_MAX, "exit_lookups")
            return
        groups = len(self.groups)
        done = check_int(journal["exits_done"], 0, groups - 1, "exits_done")
        stage = journal["stage"]
        if stage is not None:
            check_int(stage, 0, self.seeds, "stage")
            if done != groups - 1 or journal["counts"] is not None:
                raise ScratchError("it records a stage before the exits are done, or beside the counts file")
        else:
            name, total = check_list(journal["counts"], 2, "counts")
            check_name(name, re.escape(counts_name(self.seeds)), "the counts file")
            check_int(total, 0, SUM_MAX, "the counts file's checksum")
        check_int(journal["sum"], 0, SUM_MAX, "sum")
        saved = journal.get("codes")
        if saved is not None:  # a codes file, saved as the stage in progress began, before any of its pass
            name, total, at = check_list(saved, 3, "codes")
            check_name(name, re.escape(codes_name(self.seeds)), "the codes file")
            check_int(total, 0, SUM_MAX, "the codes file's checksum")
            check_int(at, 1, self.seeds, "the codes file's stage")
            if at != stage or journal["pass"] is not None:
                raise ScratchError("it records a codes file of another stage than the one in progress, or in a pass")
        step = journal["pass"]
        if step is not None:
            check_list(step, 5, "pass")
            check_int(step[0], 0, self._blocks() - 1, "the pass's block")
            for value in step[1:]:
                check_int(value, 0, SUM_MAX, "a checksum of the pass")
            if stage == 0 or (stage is None and done == groups - 1):
                raise ScratchError("it records a pass where none is left")
        check_seconds(journal["exit_seconds"], "exit_seconds")
        check_int(journal["exit_lookups"], 0, COUNT_MAX, "exit_lookups")

    def _named(self, journal: dict[str, Any]) -> list[str]:
        """The files a (checked) journal names."""
        progress = journal.get("streamed")
        if progress is not None:
            return [state_name(self.seeds), counts_name(self.seeds), *lean_exits.progress_files(self.seeds, progress)]
        return ([state_name(self.seeds)] + ([journal["counts"][0]] if journal["counts"] is not None else [])
                + ([journal["codes"][0]] if journal.get("codes") is not None else []))

    def resume(self) -> dict[str, Any]:
        """The journal to go on from: the recorded one when it passes its
        checks (disk.recorded_journal), else a fresh one, the layer's files
        removed in one line that says why; files it does not name (the
        queue, what a killed step left) are removed. `resumed` says which."""
        if self.journal is None:
            journal = recorded_journal(self.scratch, journal_path(self.scratch, self.seeds), self.seeds,
                                       self.check_journal, self._named, lambda: own_files(self.scratch, self.seeds))
            self.resumed = journal is not None
            self.journal = journal or self._fresh()
        return self.journal

    def start_over(self, why: str) -> None:
        """Remove every file of this layer and forget its journal: the next
        solve() starts from the exits, and says so (`why`) in one line."""
        say(f"{why}: layer {self.seeds} starts over, its scratch files removed")
        self.clear()
        self.journal = None
        self.resumed = False
        self.expect = None

    def scratch_bytes(self) -> int:
        """Bytes this layer's files take in the scratch folder now."""
        total = 0
        for name in own_files(self.scratch, self.seeds):
            with contextlib.suppress(FileNotFoundError):
                total += os.lstat(os.path.join(self.scratch, name)).st_size
        return total

    def clear(self) -> None:
        """Remove every lean file of this layer (its table is written, or it starts over)."""
        remove_layer_files(self.scratch, self.seeds)

    def _commit(self, sync: bool = True) -> None:
        """Write the journal (atomically: a kill leaves the old one or the new);
        synced unless not `sync` (a block's step: the blocks are not synced
        either, and what a power cut loses of either, the checksums find)."""
        assert self.journal is not None, "resume() first"
        try:
            tables.write_file_exclusively(journal_path(self.scratch, self.seeds), (encode_journal(self.journal),),
                                          sync=sync)
        except OSError as error:
            raise write_error(error, self.scratch, self.seeds) from None
        self.steps += 1
        if self.kill_after is not None and self.steps >= self.kill_after:
            os.kill(os.getpid(), 9)  # fault injection for the tests: a kill right after a step

    def _path(self, name: str) -> str:
        return os.path.join(self.scratch, name)

    def _make_buffers(self) -> None:
        """The blocks' buffers (whole words: settle_chunk), made once."""
        if not self.buffers:
            self.buffers = [np.empty((min(self.block, max(self.size, 1)) + 7) // 8 * 8, dtype=np.int8)
                            for _ in range(self.settle_threads + 1)]
            self.buffer = self.buffers[0]

    def _open_state(self, write: bool) -> int:
        path = self._path(state_name(self.seeds))
        try:
            descriptor = os.open(path, (os.O_RDWR if write else os.O_RDONLY) | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as error:
            raise ScratchError(f"cannot read {path}: {error.strerror}") from None
        if os.fstat(descriptor).st_size != self.size:
            found = os.fstat(descriptor).st_size
            os.close(descriptor)
            raise ScratchError(f"{path} has {found} bytes, not {self.size}")
        return descriptor

    # The build ----------------------------------------------------------------------

    def solve(self, progress: Callable[[str, float], None] | None = None) -> dict[str, Any]:
        """The exits, then the stages, from the last step recorded (resume);
        returns stats as LayerSolver.solve's, `resumed_at_stage` the stage a
        resumed layer went on from (None: from its exits, or not resumed)."""
        journal = self.resume()
        started = time.perf_counter()
        codes = np.zeros(((self.size + 1) // 2 + 7) // 8 * 8, dtype=np.uint8)  # whole words (settle_chunk)
        self._make_buffers()
        seeds_found = np.empty(max(16, min(self.chunk, self.buffer.shape[0])), dtype=np.int64)  # settle_block: 16
        resumed_at = journal["stage"] if self.resumed else None
        queue = RankQueue(self._path(queue_name(self.seeds)), self.scratch, self.seeds, segment=self.stack_size)
        try:
            if journal["stage"] is None:
                if journal["exits_done"] >= 0:
                    self._check_state(None)
                self._exits()
                for m in self.store.layers():
                    self.store.drop(m)
                self._load_counts(codes)
                rebuilt = None
            else:
                rebuilt = self._rebuild(codes, seeds_found, queue)
            exit_seconds = time.perf_counter() - started if resumed_at is None else 0.0
            exit_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            if progress:
                progress("exits", 1.0)
            tick = time.perf_counter()
            stages = self._stages(codes, seeds_found, queue, rebuilt, progress)
        finally:
            queue.close()
        journal = self.resume()
        return {"positions": self.size, "seconds": time.perf_counter() - started,
                "exit_seconds": journal["exit_seconds"] if resumed_at is not None else exit_seconds,
                "exit_passes": len(self.groups),
                "exit_slices": self.exit_stats["slices"], "requests_peak_bytes": self.exit_stats["peak"],
                "stage_seconds": time.perf_counter() - tick,
                "working_bytes": codes.nbytes, "exit_lookups": journal["exit_lookups"], "stages": stages,
                "predecessors_told": self.stats["told"], "stage_accesses": self.stats["told"],
                "disk_bytes_read": self.read, "disk_bytes_written": self.written,
                "queue_peak_bytes": self.stats["queue_peak"], "queued_bytes": self.stats["queued"],
                "pass_seconds": self.stats["pass_seconds"], "tell_seconds": self.stats["tell_seconds"],
                "tell_rounds": self.stats["rounds"], "exit_peak_bytes": exit_peak, "resumed_at_stage": resumed_at,
                "resumed_codes_from": self.resumed_from, "codes_files_saved": self.codes_saved}

    def _exits(self) -> None:
        """The exit passes not yet recorded, a group of smaller layers at a
        time: the first writes the state file (pending codes) and the counts
        file (the codes before the first stage), each later one raises the
        state file's pending codes in place, a block at a time (_rewrite:
        raising twice gives what raising once does)."""
        journal, seeds, store = self.journal, self.seeds, self.store
        assert journal is not None, "resume() first"
        if self.streamed is not None and journal["exits_done"] < 0:
            self._streamed_exits()
            return
        for number in range(journal["exits_done"] + 1, len(self.groups)):
            group = self.groups[number]
            for m in store.layers():
                if m not in group:
                    store.drop(m)
            for m in group:
                if not store.loaded[m]:
                    self.load(m)
            use = np.zeros(index.MAX_SEEDS + 1, dtype=np.bool_)
            use[group] = True
            tick = time.perf_counter()
            lookups = [0]
            if number == 0:
                counts_sum = self._write_state_and_counts(
                    self.block, functools.partial(self._raise_exits, use, lookups, True))
                journal.update(counts=[counts_name(seeds), counts_sum])
            else:
                self._rewrite(functools.partial(self._raise_exits, use, lookups, False, np.zeros(1, dtype=np.uint8)),
                              None)
            journal.update(exits_done=number, sum=self.state_sum, exit_seconds=journal["exit_seconds"] + (
                time.perf_counter() - tick), exit_lookups=journal["exit_lookups"] + lookups[0])
            self._commit()

    def _write_state_and_counts(self, step: int, fill: Callable[[np.ndarray, int, np.ndarray], None]) -> int:
        """The state file and the counts file written in rank order, `step`
        ranks at a time, each block's values and counts made by
        fill(counts, lo, values); both synced, or both abandoned on any error. Sets
        state_sum; returns the counts file's sum."""
        writer = StreamWriter(self._path(state_name(self.seeds)), self.scratch, self.seeds)
        counts_writer = StreamWriter(self._path(counts_name(self.seeds)), self.scratch, self.seeds)
        try:
            for lo in range(0, self.size, step):
                values = np.zeros(min(step, self.size - lo), dtype=np.int8)
                counts = np.zeros((values.shape[0] + 1) // 2, dtype=np.uint8)
                fill(counts, lo, values)
                writer.write(values)
                counts_writer.write(counts)
                del values, counts
            self.state_sum = writer.close(sync=True)
            counts_sum = counts_writer.close(sync=True)
        except BaseException:
            writer.abandon()
            counts_writer.abandon()
            raise
        self.written += writer.bytes + counts_writer.bytes
        return counts_sum

    def _streamed_exits(self) -> None:
        """The exits streamed (solver.lean_exits), a slice of the layer at a
        time in the steps the journal's `streamed` field records
        (lean_exits.StreamedExits): the state file and the counts file
        written as the first resident pass over every smaller layer writes
        them, then recorded as that pass done. A kill goes on from the last
        step: a slice asked, a smaller layer's answers, a slice done."""
        journal, seeds = self.journal, self.seeds
        assert journal is not None and self.streamed is not None and self.read_window is not None, "resume() first"
        recorded = journal.get("streamed") is not None
        if not recorded:
            journal["streamed"] = lean_exits.fresh_progress(self.streamed)
        tick = [time.perf_counter()]

        def commit(lookups: int) -> None:
            now = time.perf_counter()
            journal.update(exit_seconds=journal["exit_seconds"] + now - tick[0],
                           exit_lookups=journal["exit_lookups"] + lookups)
            tick[0] = now
            self._commit()

        opened: list[tuple[int, str]] = []
        try:
            for name in (state_name(seeds), counts_name(seeds)):
                opened.append((self._open_exits(self._path(name), recorded), self._path(name)))
            run = lean_exits.StreamedExits(seeds, self.rows, self.scratch, self.read_window, self.streamed,
                                           journal["streamed"], commit, (opened[0], opened[1]))
            try:
                self.state_sum, counts_sum = run.run()
            finally:
                self.read += run.read
                self.written += run.written
                self.exit_stats.update(slices=-(-self.size // self.streamed["slice"]), peak=run.peak)
        finally:
            for descriptor, _ in opened:
                os.close(descriptor)
        journal.update(counts=[counts_name(seeds), counts_sum], exits_done=0, sum=self.state_sum, streamed=None)
        commit(0)

    def _open_exits(self, path: str, recorded: bool) -> int:
        """A file the streamed exits write in place: created (exclusively,
        never through a link), or opened as a journal left it (`recorded`)."""
        if not recorded:
            return create_exclusive(path, self.scratch, self.seeds)
        try:
            return os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as error:
            raise ScratchError(f"cannot read {path}: {error.strerror}") from None

    def _raise_exits(self, use: np.ndarray, lookups: list[int], first: bool, counts: np.ndarray, lo: int,
                     piece: np.ndarray) -> None:
        """The exit pass of the smaller layers in `use` over ranks lo.. (their
        bytes `piece`; the first pass writes their counts), lookups[0] counting."""
        with layer_state.thread_count(1 if piece.shape[0] < layer_state.SERIAL_SIZE else None):
            lookups[0] += int(exits.exit_pass(self.seeds, piece.shape[0], piece, counts, self.store.flat,
                                              self.store.starts, use, first, self.rows, False, lo))

    def _load_counts(self, codes: np.ndarray) -> None:
        """The counts file read (checked) as the codes before the first stage;
        the stages are recorded as begun, and the file removed."""
        journal = self.journal
        assert journal is not None and journal["counts"] is not None, "the exits first"
        name, total = journal["counts"]
        reader = StreamReader(self._path(name), (self.size + 1) // 2, total)
        try:
            reader.read_into(codes[: (self.size + 1) // 2])
            reader.finish()
        finally:
            reader.close()
        self.read += (self.size + 1) // 2
        journal.update(stage=self.seeds, counts=None)
        self._commit()
        os.remove(self._path(name))

    def _rewrite(self, work: Callable[[int, np.ndarray], None], stage: int | None, workers: int = 1) -> None:
        """One pass over the state file, rewritten in place a block at a time:
        work(lo, piece) changes the block's bytes (ranks lo..) in memory;
        before a changed block is written back, the step is recorded (the
        journal's `pass`: the block, the checksums of the blocks before it as
        written, of those after it as they were, and of the block before and
        after), so that a kill at any moment leaves a file the journal
        describes. `stage`: the stage in progress whose pass this is (None:
        an exit pass). A block the resumed journal had in flight must come
        out as recorded (`expect`); the caller records the pass as done. The
        blocks are not synced: a kill -9 leaves them in the page cache, and
        what a power cut loses is found by the checksums (the layer then
        starts over), where a sync a pass would write out each small layer's
        file, otherwise kept in the page cache, once a stage.

        With `workers` threads (a stage's pass: settle_threads), the blocks
        are read and worked on by them at once, each taking the next block
        as it becomes free, `work` called from them (for blocks of its own);
        this thread records the steps and writes the blocks back in order, one
        block in flight at a time, as a pass on one thread does, while they
        go on. So a thread that another process keeps waiting holds up only
        its block, not each block's end (as a parallel loop a block did)."""
        journal = self.journal
        assert journal is not None, "resume() first"
        path = self._path(state_name(self.seeds))
        descriptor = self._open_state(write=True)
        total_old, before_old, done = self.state_sum, 0, 0
        expect, self.expect = self.expect, None
        starts = range(0, self.size, self.block)
        free: queues.SimpleQueue[np.ndarray | None] = queues.SimpleQueue()
        for buffer in self.buffers[: workers + 1]:
            free.put(buffer)
        finished: queues.SimpleQueue[tuple[int, np.ndarray, int, int, BaseException | None]] = queues.SimpleQueue()
        taken = [0]
        lock = threading.Lock()
        stop = threading.Event()

        threads = numba.get_num_threads()  # numba's count is a thread's own: theirs as this one's

        def read_and_work() -> None:
            numba.set_num_threads(threads)
            while True:
                buffer = free.get()
                if buffer is None or stop.is_set():
                    return
                with lock:
                    number = taken[0]
                    taken[0] += 1
                if number >= len(starts):
                    free.put(buffer)
                    return
                lo = starts[number]
                piece = buffer[: min(self.block, self.size - lo)]
                try:
                    pread_into(descriptor, piece, lo, path)
                    old = int(checksum(piece, lo))
                    work(lo, piece)
                    finished.put((number, buffer, old, int(checksum(piece, lo)), None))
                except BaseException as error:  # raised by the recording thread
                    finished.put((number, buffer, 0, 0, error))
                    return

        readers = [threading.Thread(target=read_and_work, name=f"lean-pass-{n}", daemon=True) for n in range(workers)]
        for thread in readers:
            thread.start()
        waiting: dict[int, tuple[int, np.ndarray, int, int, BaseException | None]] = {}
        try:
            for number, lo in enumerate(starts):
                while number not in waiting:
                    item = finished.get()
                    if item[4] is not None:
                        raise item[4]
                    waiting[item[0]] = item
                _, buffer, old, new, _ = waiting.pop(number)
                piece = buffer[: min(self.block, self.size - lo)]
                before_old = (before_old + old) & MASK
                if expect is not None and expect[0] == number and new != expect[1]:
                    raise ScratchError(f"{path} is not what its journal says (block {number}): damaged")
                if new != old:
                    journal.update(stage=stage, **{"pass": [number, done, (total_old - before_old) & MASK, old, new]})
                    self._commit(sync=False)
                    try:
                        write_at(descriptor, piece, lo)
                    except OSError as error:
                        raise write_error(error, self.scratch, self.seeds) from None
                    self.written += piece.shape[0]
                done = (done + new) & MASK
                free.put(buffer)
        finally:
            stop.set()
            for _ in readers:
                free.put(None)
            for thread in readers:
                thread.join()
            os.close(descriptor)
        self.read += self.size
        self.state_sum = done
        journal.update(sum=done, **{"pass": None})

    def _check_state(self, marks: np.ndarray | None) -> None:
        """Read the state file (a resumed layer's) and check it against the
        journal: its checksum, or, with a pass in flight, those of the blocks
        before and after the block in flight (which the pass must then turn
        into what was recorded: `expect`). With `marks` (the codes), the
        first sweep of rebuild_codes is made as it is read; at stage 0 the
        values are counted."""
        journal = self.journal
        assert journal is not None, "resume() first"
        self._make_buffers()  # a check may come before solve() (the exits' tests)
        path = self._path(state_name(self.seeds))
        step = journal["pass"]
        descriptor = self._open_state(write=False)
        if journal["stage"] == 0:
            self.histogram[:] = 0
        total = before = after = 0
        found_bytes = np.zeros(256, dtype=np.int64)
        try:
            for number, lo in enumerate(range(0, self.size, self.block)):
                piece = self.buffer[: min(self.block, self.size - lo)]
                pread_into(descriptor, piece, lo, path)
                found = int(checksum(piece, lo))
                total = (total + found) & MASK
                if step is not None and number < step[0]:
                    before = (before + found) & MASK
                if step is not None and number > step[0]:
                    after = (after + found) & MASK
                found_bytes += byte_histogram(piece)
                if marks is not None:
                    rebuild_mark(lo, piece.shape[0], piece, marks)
                if journal["stage"] == 0:
                    value_counts(piece, self.seeds, self.histogram)
        finally:
            os.close(descriptor)
        self.read += self.size
        if step is None and total != journal["sum"]:
            raise ScratchError(f"{path} does not match its checksum: damaged")
        if step is not None and (before != step[1] or after != step[2]):
            raise ScratchError(f"{path} does not match its journal: damaged")
        stage = journal["stage"]
        if stage is not None and not stage_fits(found_bytes, stage, step is not None):
            raise ScratchError(f"{path} is not the state file of stage {stage}, as its journal says: damaged")
        self.state_sum = total
        self.expect = (step[0], step[4]) if step is not None else None

    def _rebuild(self, codes: np.ndarray, seeds_found: np.ndarray, queue: RankQueue) -> int:
        """The codes of a resumed layer at the stage in progress, rebuilt from
        the state file (checked: _check_state), and that stage's seeds queued,
        what is resolved in the file standing for what was told of before the
        kill; returns the seeds (nothing at stage 0: the values are all in
        the file).

        What the file holds resolved is EARLIER, and a pending position's
        code is counted again from its in-layer children: those won in the
        file are refuted, one lost there makes it won; its exit bit is its
        exit <= -stage. Its seeds are what the stage's pass and propagation
        would resolve from there: E = +stage or a lost child (won), no
        unrefuted child with the exit bit (lost). The stage's results that a
        pass killed half way wrote into the file are so taken as told of;
        the rest follows by telling of the seeds, and the values are those
        of a run never killed (the stages' rule has one fixed point).

        When the journal names a codes file (saved as this stage began, its
        pass done: _save_codes), the codes are read back from it and only
        the seeds are looked for (the last sweep): what the count costs
        (the children of every pending position, as long as an exit pass)
        is spared. A codes file that does not read back is counted again."""
        journal = self.journal
        assert journal is not None, "resume() first"
        stage = journal["stage"]
        saved = journal.get("codes") is not None  # of this stage, before its pass (check_journal)
        if saved:
            self._check_state(None)
            saved = self._read_codes(codes)
            if not saved:
                self._drop_codes()
        if not saved:
            self._check_state(codes if stage > 0 else None)
        if stage == 0:
            return 0
        self.resumed_from = "codes" if saved else "count"
        path = self._path(state_name(self.seeds))
        descriptor = self._open_state(write=False)
        total = 0
        try:
            for sweep in (2,) if saved else (1, 2):
                for lo in range(0, self.size, self.block):
                    piece = self.buffer[: min(self.block, self.size - lo)]
                    pread_into(descriptor, piece, lo, path)
                    if sweep == 1:
                        rebuild_counts(self.seeds, stage, lo, piece.shape[0], piece, codes, self.rows)
                        continue
                    for start in range(0, piece.shape[0], self.chunk):
                        part = piece[start : start + self.chunk]
                        found = rebuild_seeds(lo + start, part.shape[0], part, codes, seeds_found)
                        queue.push(seeds_found[:found])
                        total += found
        finally:
            os.close(descriptor)
        self.read += (1 if saved else 2) * self.size
        return total

    def _stages(self, codes: np.ndarray, seeds_found: np.ndarray, queue: RankQueue, rebuilt: int | None,
                progress: Callable[[str, float], None] | None) -> list[tuple[int, int, int]]:
        """Stages from the one recorded in progress down to 1, each a pass over
        the state file (its seeds: rebuilt ones for a resumed stage) then its
        propagation, and the last pass (stage 0) that settles the values.
        Returns (stage, seeds, predecessors told) a stage.

        A stage's seeds, and what did not fit the stacks, wait in the queue
        file; they are told of SEED_BATCH at a time (tell_ranks), each of
        `tell_threads` taking them as it becomes free, updating the codes
        with a compare-and-swap of their byte when there are several."""
        journal = self.journal
        assert journal is not None, "resume() first"
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
        reports = []
        pass_seconds = tell_seconds = 0.0
        rounds = 0
        # Codes rebuilt by counting are saved at once: the count is what a codes file spares a later run.
        began = -float("inf") if self.resumed_from == "count" else time.perf_counter()
        try:
            for stage in range(journal["stage"], -1, -1):
                before = int(tallies[:, 0].sum())
                tick = time.perf_counter()
                if rebuilt is not None:
                    seeded, rebuilt = rebuilt, None  # the resumed stage: its seeds are queued
                else:
                    seeded = self._pass(stage, codes, seeds_found, queue)
                pass_seconds += time.perf_counter() - tick
                if stage == 0:
                    break
                if journal.get("codes") is None and time.perf_counter() - began >= self.codes_every:
                    self._save_codes(codes, stage)
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
        return reports

    def _pass(self, stage: int, codes: np.ndarray, seeds_found: np.ndarray, queue: RankQueue) -> int:
        """The pass over the state file at the start of `stage` (settle_chunk),
        in place (_rewrite): stage + 1's results written, the seeds found
        queued (the last pass, stage 0, counts the values instead), then the
        stage recorded as begun. Returns the seeds."""
        journal = self.journal
        assert journal is not None, "resume() first"
        seeds, first = self.seeds, stage == self.seeds
        total = [0]
        if stage == 0:
            self.histogram[:] = 0

        lock = threading.Lock()
        lists: queues.SimpleQueue[np.ndarray] = queues.SimpleQueue()  # a list of seeds for each thread at work
        lists.put(seeds_found)
        for _ in range(self.settle_threads - 1):
            lists.put(np.empty_like(seeds_found))

        def settle(lo: int, piece: np.ndarray) -> None:
            count = piece.shape[0]
            words = piece  # whole words (settle_block): the last block's piece of its buffer, padded
            if count % 8:
                assert isinstance(piece.base, np.ndarray), "a piece of a pass's buffer"
                words = piece.base[: (count + 7) // 8 * 8]
            found_list = lists.get()
            try:
                at = 0
                while at < count:
                    found, at = settle_block(stage, first, lo, at, count, words, codes, found_list)
                    if found:
                        with lock:
                            queue.push(found_list[:found])
                            total[0] += found
            finally:
                lists.put(found_list)
            if stage == 0:
                with lock:
                    value_counts(piece, seeds, self.histogram)

        self._drop_codes()
        self._rewrite(settle, stage + 1, self.settle_threads)
        if journal["stage"] != stage:
            journal["stage"] = stage
            self._commit()
        return total[0]

    def _save_codes(self, codes: np.ndarray, stage: int) -> None:
        """The codes as stage `stage` begins (its pass done, its seeds WON and
        LOST, nothing told yet) saved in the codes file, synced, and recorded
        in the journal, so that a kill before the next pass reads them back
        instead of counting every pending position's children (_rebuild).
        Left out, in one line, when the scratch disk would keep less than
        CODES_SPARE bytes a position free beside it, or cannot write it: the
        codes file only saves time."""
        journal = self.journal
        assert journal is not None, "resume() first"
        length = (self.size + 1) // 2
        try:
            free = shutil.disk_usage(self.scratch).free
        except OSError:
            free = 0
        if free < length + int(self.size * CODES_SPARE):
            say(f"layer {self.seeds}: no codes file at stage {stage} ({free / 1e9:.1f} GB free in {self.scratch}, "
                f"{(length + self.size * CODES_SPARE) / 1e9:.1f} GB wanted): a kill now costs a count of its codes")
            return
        writer = StreamWriter(self._path(codes_name(self.seeds)), self.scratch, self.seeds)
        try:
            for lo in range(0, length, self.block):
                writer.write(codes[lo : min(length, lo + self.block)])
            total = writer.close(sync=True)
        except ScratchError as error:
            writer.abandon()
            say(f"layer {self.seeds}: no codes file at stage {stage} ({error}): a kill now costs a count of its codes")
            return
        self.written += length
        journal["codes"] = [codes_name(self.seeds), total, stage]
        self._commit()
        self.codes_saved += 1

    def _drop_codes(self) -> None:
        """Forget the codes file (a pass is about to change the state file it
        goes with): out of the journal first, then removed."""
        journal = self.journal
        assert journal is not None, "resume() first"
        saved = journal.pop("codes", None)
        if saved is not None:
            self._commit()
            with contextlib.suppress(FileNotFoundError):
                os.remove(self._path(saved[0]))

    def _read_codes(self, codes: np.ndarray) -> bool:
        """The codes file the journal names read into `codes` (checked);
        False, in one line, when it cannot be (the caller counts them again)."""
        journal = self.journal
        assert journal is not None and journal.get("codes") is not None, "a codes file recorded"
        name, total, _ = journal["codes"]
        length = (self.size + 1) // 2
        try:
            reader = StreamReader(self._path(name), length, total)
            try:
                reader.read_into(codes[:length])
                reader.finish()
            finally:
                reader.close()
        except ScratchError as error:
            say(f"layer {self.seeds}: {error}: its codes are counted again")
            return False
        self.read += length
        return True

    def values(self) -> tuple[Any, np.ndarray]:
        """The layer's values for tables.write_table (read from the state file
        a window at a time) and their histogram."""
        return _StateValues(self._path(state_name(self.seeds)), self.size, self.state_sum), self.histogram


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
        out = read_window(self.path, start, stop)
        view = memoryview(out.view(np.uint8))  # type: ignore[arg-type]  # an ndarray is a buffer
        if start == self.next and stop > start and start % 8 == 0:
            self.found = (self.found + piece_sum(view, start)) & 0xFFFFFFFFFFFFFFFF
            self.next = stop
            if stop == self.shape[0] and self.found != self.crc:
                raise ScratchError(f"{self.path} does not match its checksum: damaged")
        return out
