"""A layer past memory: its exits computed a slice at a time through disk.

A layer needs in memory its working state (1.52 bytes a position, the lined
layout of solver.layer_state) and, for its exits, its smaller layers
n-15..n-2 at a byte a position, a group at a time (solver.plan). Past layer
34 on a 24 GiB machine the two no longer fit together, while the working
state alone still does (layer 36: 20.2 GiB). So the disk mode takes the
exits apart from the stages (docs/DISK.md says why, with the figures):

1. Exits, in slices. The layer's ranks are cut into K slices (at multiples
   of SLICE_UNIT, so that a slice is whole lines and whole blocks). For
   each group of smaller layers that fits in memory beside one slice, each
   slice in turn is read from the scratch folder, given its exit pass over
   that group (exits.exit_pass on ranks lo..hi, the same kernel as in
   memory) and written back: one sequential read and write of the working
   state a group, never a random access to disk.
2. Stages, in memory. The smaller layers are dropped, the slices read back
   into one working state, and the stages run as in memory
   (retrograde.LayerSolver.solve): the fast, depth-first stages, at the
   in-memory rate.

Nothing half-done is trusted. Every slice file is created exclusively and
synced, under a name that says which group it has been through, and a
journal (awele-NN.disk.json, written atomically) names each slice's file
and its CRC-32 after every step. A build killed at any moment resumes at
the last step the journal records, re-checking every file it reads; files
the journal does not name are left-overs and are removed. The scratch
folder's peak size is planned (plan.disk_plan) and checked against its
free space before the layer starts, and a disk that fills up stops the
build in one line (BuildError), the journal and the finished layers intact.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import time
import zlib
from collections.abc import Callable
from typing import Any

import numba
import numpy as np

from . import exits, index, layer_state, retrograde, stages, tables
from .errors import BuildError
from .layers import LayerStore

IO_PIECE = 64 << 20  # bytes read or written (and CRC'd) per call


def journal_path(scratch: str, seeds: int) -> str:
    return os.path.join(scratch, f"awele-{seeds:02d}.disk.json")


def slice_path(scratch: str, seeds: int, part: int, parts: int, group: int) -> str:
    """The file of slice `part` of `parts` of layer `seeds` once the exit passes
    of groups 0..`group` are in it."""
    return os.path.join(scratch, f"awele-{seeds:02d}.slice-{part}-of-{parts}.group-{group}.lines")


def _full(error: OSError, scratch: str, seeds: int) -> BuildError:
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return BuildError(f"the scratch folder {scratch} is full (layer {seeds}, disk mode); the layers built are "
                          "kept: free some space (or give another --scratch) and build again to resume")
    return BuildError(f"cannot write in the scratch folder {scratch}: {error.strerror}")


def write_lines(path: str, data: np.ndarray, scratch: str, seeds: int) -> int:
    """Write `data` to a new file `path` (created exclusively, never through a
    link), synced; returns its CRC-32. Removes the partial file on failure."""
    view = memoryview(data.view(np.uint8))  # type: ignore[arg-type]  # an ndarray is a buffer (stubs: 3.12 on)
    crc = 0
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise _full(error, scratch, seeds) from None
    try:
        for start in range(0, len(view), IO_PIECE):
            piece = view[start : start + IO_PIECE]
            done = 0
            while done < len(piece):
                done += os.write(descriptor, piece[done:])
            crc = zlib.crc32(piece, crc)
        os.fsync(descriptor)
        os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)  # the data is on disk: leave the cache alone
    except OSError as error:
        os.close(descriptor)
        os.remove(path)
        raise _full(error, scratch, seeds) from None
    except BaseException:
        os.close(descriptor)
        os.remove(path)
        raise
    os.close(descriptor)
    return crc


def read_lines(path: str, out: np.ndarray, crc: int) -> None:
    """Read file `path` into `out` (its exact size), checking its CRC-32; a
    file that is missing, a link, of another size or damaged raises BuildError."""
    view = memoryview(out.view(np.uint8))  # type: ignore[arg-type]  # an ndarray is a buffer (stubs: 3.12 on)
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        raise BuildError(f"cannot read {path}: {error.strerror}") from None
    found = 0
    try:
        if os.fstat(descriptor).st_size != len(view):
            raise BuildError(f"{path} has {os.fstat(descriptor).st_size} bytes, not {len(view)}")
        for start in range(0, len(view), IO_PIECE):
            piece = view[start : start + IO_PIECE]
            done = 0
            while done < len(piece):
                got = os.readv(descriptor, [piece[done:]])
                if got == 0:
                    raise BuildError(f"{path} ended early")
                done += got
            found = zlib.crc32(piece, found)
        os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError as error:
        raise BuildError(f"cannot read {path}: {error.strerror}") from None
    finally:
        os.close(descriptor)
    if found != crc:
        raise BuildError(f"{path} does not match its CRC-32: damaged")


def visit_path(scratch: str, seeds: int, part: int, parts: int, visit: int) -> str:
    """The file of slice `part` of layer `seeds` as stage visit `visit` left it (sliced stages)."""
    return os.path.join(scratch, f"awele-{seeds:02d}.slice-{part}-of-{parts}.visit-{visit}.lines")


def updates_name(seeds: int, part: int, visit: int) -> str:
    """The name of the updates stage visit `visit` sent to slice `part`."""
    return f"awele-{seeds:02d}.to-{part}.visit-{visit}.updates"


INBOX_CHUNK = 1 << 20  # updates read (and applied) at a time
STAGE_OUTBOX = 1 << 18  # updates a thread gathers for other slices before its sweep pauses (sliced stages)


class DiskLayer:
    """The disk-mode build of layer `seeds` (module docstring): solve()
    leaves its values in their slot of `store` (stages in memory) or in
    the slice files (sliced stages), and values() gives them to
    tables.write_table either way; the caller then calls clear().

    `layout` is plan.disk_plan's: slices (their bounds), exit groups, and
    whether the stages run in slices. `load(m)` puts smaller layer m in
    `store` (checked), as the in-memory build does. Stages in memory save
    their state at most every `checkpoint_interval` seconds (_checkpoint).
    `kill_after` (tests): SIGKILL this process after that many steps of
    this run are recorded."""

    def __init__(self, seeds: int, scratch: str, store: LayerStore, rows: tuple[np.ndarray, ...],
                 layout: dict[str, Any], load: Callable[[int], None], kill_after: int | None = None,
                 checkpoint_interval: float = 600.0) -> None:
        self.seeds = seeds
        self.scratch = scratch
        self.store = store
        self.rows = rows
        self.bounds = [int(b) for b in layout["bounds"]]
        self.groups = [[int(m) for m in g] for g in layout["groups"]]
        self.sliced = bool(layout.get("sliced_stages", False))
        self.parts = len(self.bounds) - 1
        self.load = load
        self.kill_after = kill_after
        self.steps = 0
        self.started = time.perf_counter()
        self.load_seconds = 0.0
        self.written = self.read = 0
        self.journal: dict[str, Any] = {}
        self.checkpoint_interval = checkpoint_interval
        self.last_checkpoint = time.perf_counter()

    # The journal --------------------------------------------------------------------

    def _fresh_journal(self) -> dict[str, Any]:
        return {"seeds": self.seeds, "bounds": self.bounds, "groups": self.groups, "sliced": self.sliced,
                "done": [-1] * self.parts, "files": [None] * self.parts, "crc32": [0] * self.parts,
                "exit_lookups": 0, "exit_seconds": 0.0, "seeds_at": [0] * self.parts,
                "stage": None, "need_seed": [False] * self.parts, "inbox": [[] for _ in range(self.parts)],
                "visits": 0, "last": -1, "stage_visits": 0}

    def _commit(self, journal: dict[str, Any]) -> None:
        try:
            tables.write_file_exclusively(journal_path(self.scratch, self.seeds), (json.dumps(journal).encode(),))
        except OSError as error:
            raise _full(error, self.scratch, self.seeds) from None
        self.steps += 1
        if self.kill_after is not None and self.steps >= self.kill_after:
            os.kill(os.getpid(), 9)  # fault injection for the tests: a kill right after a step

    def _own_files(self) -> list[str]:
        pattern = re.compile(rf"awele-{self.seeds:02d}\.(slice-\d+-of-\d+\.(group|visit)-\d+\.lines"
                             rf"|stage-\d+\.lines"
                             rf"|to-\d+\.visit-\d+\.updates|disk\.json)"
                             rf"({re.escape(tables.TEMPORARY_SUFFIX)}-\d+)?")
        try:
            return [name for name in os.listdir(self.scratch) if pattern.fullmatch(name)]
        except FileNotFoundError:
            return []

    def resume(self) -> dict[str, Any]:
        """The journal to go on from: the recorded one when it is this layer's
        with this layout, else a fresh one; files it does not name are
        removed (left-overs of a killed step, or of another layout)."""
        journal = None
        try:
            journal = json.loads(tables.read_file_nofollow(journal_path(self.scratch, self.seeds), 1 << 20))
            if (not isinstance(journal, dict) or journal.get("seeds") != self.seeds
                    or journal.get("bounds") != self.bounds or journal.get("groups") != self.groups
                    or journal.get("sliced") != self.sliced):
                journal = None
        except (OSError, ValueError):
            journal = None
        journal = journal or self._fresh_journal()
        keep = {os.path.basename(journal_path(self.scratch, self.seeds))}
        keep |= {name for name in journal["files"] if name} | ({journal["checkpoint"][0]}
                                                                if journal.get("checkpoint") else set())
        keep |= {entry[0] for inbox in journal["inbox"] for entry in inbox}
        for name in self._own_files():
            path = os.path.join(self.scratch, name)
            if name not in keep and not os.path.islink(path):
                os.remove(path)
        self.journal = journal
        return journal

    def scratch_bytes(self) -> int:
        """Bytes this layer's files take in the scratch folder now."""
        return sum(os.lstat(os.path.join(self.scratch, name)).st_size for name in self._own_files())

    def clear(self) -> None:
        """Remove every scratch file of this layer (its table is written)."""
        for name in self._own_files():
            os.remove(os.path.join(self.scratch, name))

    # The build ----------------------------------------------------------------------

    def _lines(self, part: int) -> int:
        lo, hi = self.bounds[part], self.bounds[part + 1]
        return (hi - lo + layer_state.LINE_RANKS - 1) // layer_state.LINE_RANKS

    def _path(self, name: str) -> str:
        return os.path.join(self.scratch, name)

    def _read_slice(self, part: int, out: np.ndarray | None = None) -> np.ndarray:
        state = np.zeros(self._lines(part) * layer_state.LINE, dtype=np.int8) if out is None else out
        read_lines(self._path(self.journal["files"][part]), state, self.journal["crc32"][part])
        self.read += state.nbytes
        return state

    def _write_slice(self, part: int, state: np.ndarray, name: str) -> None:
        """Write slice `part` as `name` and record it in the journal (not yet committed)."""
        crc = write_lines(self._path(name), state, self.scratch, self.seeds)
        self.written += state.nbytes
        self.journal["files"][part] = name
        self.journal["crc32"][part] = crc

    def solve(self, progress: Callable[[str, float], None] | None = None) -> dict[str, Any]:
        """Exits through the scratch folder, then the stages, in memory or in
        slices. Returns the stats of LayerSolver.solve (or their like) with
        the disk traffic added."""
        journal = self.resume()
        self.started = time.perf_counter()
        self._exits()
        for m in self.store.layers():
            self.store.drop(m)
        exits_wall = time.perf_counter() - self.started
        if self.sliced:
            stats = self._sliced_stages(progress)
        else:
            solver = retrograde.LayerSolver(self.seeds, self.store, self.rows)
            resumed = journal.get("checkpoint")
            if resumed:
                read_lines(self._path(resumed[0]), solver.values, resumed[1])
                self.read += solver.values.nbytes
            else:
                for part in range(self.parts):
                    first_line = self.bounds[part] // layer_state.LINE_RANKS
                    lines = self._lines(part)
                    self._read_slice(part, solver.values[first_line * layer_state.LINE:(first_line + lines)
                                                         * layer_state.LINE])
            solver.exits_done(len(self.groups), journal["exit_seconds"], journal["exit_lookups"])
            stats = solver.solve(progress, first_stage=resumed[2] if resumed else None,
                                 after_stage=lambda stage: self._checkpoint(solver, stage))
            stats["resumed_at_stage"] = resumed[2] if resumed else None
        stats.update(disk_bytes_written=self.written, disk_bytes_read=self.read, slices=self.parts,
                     exit_wall_seconds=exits_wall, sliced_stages=self.sliced)
        return stats

    def _exits(self) -> None:
        """Every slice through every group's exit pass, a step (one slice, one
        group) committed at a time."""
        journal, seeds, store = self.journal, self.seeds, self.store
        resident: tuple[int, np.ndarray] | None = None  # the slice still in memory from the last step
        last = len(self.groups) - 1
        for number, group in enumerate(self.groups):
            if all(done >= number for done in journal["done"]):
                continue
            for m in store.layers():
                if m not in group:
                    store.drop(m)
            tick = time.perf_counter()
            for m in group:
                if not store.loaded[m]:
                    self.load(m)
            self.load_seconds += time.perf_counter() - tick
            use = np.zeros(index.MAX_SEEDS + 1, dtype=np.bool_)
            use[group] = True
            order = range(self.parts) if number % 2 == 0 else range(self.parts - 1, -1, -1)
            for part in order:
                if journal["done"][part] >= number:
                    continue
                lo, hi = self.bounds[part], self.bounds[part + 1]
                if resident is not None and resident[0] == part:
                    state = resident[1]
                else:
                    # The last slice's memory goes before the next slice's comes: both
                    # names let go of it (with `state` still holding it, layer 36's
                    # exits held two slices, 4.3 GB over the budget, and were killed).
                    resident = None
                    state = np.zeros(0, dtype=np.int8)
                    if number > 0:
                        state = self._read_slice(part)
                    else:
                        state = np.zeros(self._lines(part) * layer_state.LINE, dtype=np.int8)
                tick = time.perf_counter()
                with layer_state.thread_count(1 if hi - lo < layer_state.SERIAL_SIZE else None):
                    lookups = exits.exit_pass(seeds, hi - lo, state, state.view(np.uint8), store.flat,
                                              store.starts, use, number == 0, self.rows, True, lo)
                journal["exit_seconds"] += time.perf_counter() - tick
                journal["exit_lookups"] += int(lookups)
                if number == last:
                    # The stages whose seeds this slice may hold: those of its pending codes.
                    codes = stages.line_histogram(state, hi - lo)
                    journal["seeds_at"][part] = sum(1 << k for k in range(1, seeds + 1) if codes[
                        np.int64(layer_state.pending(k)) & 0xFF] or codes[np.int64(layer_state.pending(-k)) & 0xFF])
                before = journal["files"][part]
                self._write_slice(part, state, os.path.basename(slice_path(self.scratch, seeds, part, self.parts,
                                                                           number)))
                journal["done"][part] = number
                self._commit(journal)
                if before:
                    os.remove(self._path(before))
                resident = (part, state)

    def _checkpoint(self, solver: retrograde.LayerSolver, stage: int) -> None:
        """After stage `stage` of stages in memory: at most every
        `checkpoint_interval` seconds, and only when the scratch folder has
        room for another copy of the working state, save it (one file), so
        that a kill resumes at stage - 1; the exits' files, or the previous
        checkpoint, are removed once it is recorded."""
        if stage <= 1 or time.perf_counter() - self.last_checkpoint < self.checkpoint_interval:
            return
        if free_bytes(self.scratch) < solver.values.nbytes + (1 << 26):
            return  # no room for two copies: a kill resumes from the last checkpoint there is
        journal = self.journal
        name = f"awele-{self.seeds:02d}.stage-{stage - 1:02d}.lines"
        crc = write_lines(self._path(name), solver.values, self.scratch, self.seeds)
        self.written += solver.values.nbytes
        replaced = [name for name in journal["files"] if name] + ([journal["checkpoint"][0]]
                                                                   if journal.get("checkpoint") else [])
        journal["checkpoint"] = [name, crc, stage - 1]
        journal["files"] = [None] * self.parts
        self._commit(journal)
        for old in replaced:
            os.remove(self._path(old))
        self.last_checkpoint = time.perf_counter()

    # Sliced stages ------------------------------------------------------------------

    def _sliced_stages(self, progress: Callable[[str, float], None] | None) -> dict[str, Any]:
        """The stages with one slice in memory at a time: a visit of a slice
        applies the updates the others sent it, seeds the stage there (once
        a stage) and propagates until nothing in it is FRESH, sending the
        updates for other slices to files; a stage ends when no slice has
        seeds or updates left. Each visit is one committed step."""
        journal, seeds = self.journal, self.seeds
        started = time.perf_counter()
        if journal["stage"] is None:
            journal["stage"] = seeds
            journal["need_seed"] = [bool(mask >> seeds & 1) for mask in journal["seeds_at"]]
            self._commit(journal)
        scratch = stages.make_scratch(numba.get_num_threads(), STAGE_OUTBOX)
        told = 0
        while journal["stage"] >= 1:
            stage = journal["stage"]
            while True:
                work = [part for part in range(self.parts) if journal["need_seed"][part] or journal["inbox"][part]]
                if not work:
                    break
                after = [part for part in work if part > journal["last"]]
                told += self._visit(after[0] if after else work[0], stage, scratch)
            journal["stage"] = stage - 1
            journal["need_seed"] = [bool(mask >> (stage - 1) & 1) for mask in journal["seeds_at"]]
            journal["last"] = -1
            self._commit(journal)
            if progress:
                progress(f"stage {stage}", (seeds - stage + 1) / seeds)
        return {"positions": index.layer_size(seeds), "exit_seconds": journal["exit_seconds"],
                "exit_passes": len(self.groups), "stage_seconds": time.perf_counter() - started,
                "seconds": journal["exit_seconds"] + time.perf_counter() - started,
                "working_bytes": max(self._lines(part) for part in range(self.parts)) * layer_state.LINE,
                "exit_lookups": journal["exit_lookups"], "predecessors_told": int(scratch.tally[:, 0].sum()),
                "stage_accesses": int(scratch.tally[:, 1].sum()), "stage_visits": journal["stage_visits"],
                "updates_sent": told}

    def _visit(self, part: int, stage: int, scratch: Any) -> int:
        """One visit of slice `part` in stage `stage`; returns the updates it sent."""
        journal, seeds = self.journal, self.seeds
        lo, hi = self.bounds[part], self.bounds[part + 1]
        size = hi - lo
        state = self._read_slice(part)
        counts = state.view(np.uint8)
        blocks = (size + layer_state.BLOCK - 1) // layer_state.BLOCK
        flags = np.zeros(blocks, dtype=np.uint8)
        next_flags = np.zeros(blocks, dtype=np.uint8)
        small = size < layer_state.SERIAL_SIZE
        previous_chunk = numba.set_parallel_chunksize(0)  # the kernels share their work themselves (run_stages)
        try:
            for name, crc, count in journal["inbox"][part]:
                self._apply(name, crc, count, stage, lo, state, counts, flags)
            if journal["need_seed"][part]:
                with layer_state.thread_count(1 if small else None):
                    stages.seed_stage(stage, size, state, counts, state.view(np.uint64), flags, True)
            outgoing = _Outgoing(self, journal["visits"])
            while True:
                active = np.flatnonzero(flags)
                if active.shape[0] == 0:
                    break
                flags[active] = 0
                scratch.sent[:] = 0
                with layer_state.thread_count(1 if active.shape[0] <= layer_state.SERIAL_BLOCKS else None):
                    stages.propagate(stage, seeds, lo, state, counts, active, next_flags, self.rows, scratch, size,
                                     index.FILE_ORDER)
                outgoing.send(np.concatenate([scratch.outbox[t, : scratch.sent[t]]
                                              for t in range(scratch.sent.shape[0])]))
                flags, next_flags = next_flags, flags
        finally:
            numba.set_parallel_chunksize(previous_chunk)
        sent = outgoing.close()
        consumed = [entry[0] for entry in journal["inbox"][part]]
        before = journal["files"][part]
        self._write_slice(part, state, os.path.basename(visit_path(self.scratch, seeds, part, self.parts,
                                                                   journal["visits"])))
        for target, entry in sent.items():
            journal["inbox"][target].append(entry)
        journal["inbox"][part] = []
        journal["need_seed"][part] = False
        journal["visits"] += 1
        journal["stage_visits"] += 1
        journal["last"] = part
        self._commit(journal)
        for name in [*consumed, before]:
            os.remove(self._path(name))
        return sum(entry[2] for entry in sent.values())

    def _apply(self, name: str, crc: int, count: int, stage: int, lo: int, state: np.ndarray, counts: np.ndarray,
               flags: np.ndarray) -> None:
        """Apply the `count` updates of file `name` to the slice, a chunk at a time, checking its CRC-32."""
        path = self._path(name)
        try:
            descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as error:
            raise BuildError(f"cannot read {path}: {error.strerror}") from None
        found = 0
        buffer = np.empty(min(count, INBOX_CHUNK), dtype=np.int64)
        try:
            if os.fstat(descriptor).st_size != 8 * count:
                raise BuildError(f"{path} has {os.fstat(descriptor).st_size} bytes, not {8 * count}")
            for first in range(0, count, INBOX_CHUNK):
                piece = buffer[: min(count, first + INBOX_CHUNK) - first]
                view = memoryview(piece.view(np.uint8))  # type: ignore[arg-type]  # an ndarray is a buffer
                done = 0
                while done < len(view):
                    got = os.preadv(descriptor, [view[done:]], 8 * first + done)
                    if got == 0:
                        raise BuildError(f"{path} ended early")
                    done += got
                found = zlib.crc32(view, found)
                # Applied before the whole file is checked: a damaged one raises below, and the visit,
                # never committed, leaves its slice's file as it was.
                with layer_state.thread_count(1 if piece.shape[0] < layer_state.RANK_CHUNK else None):
                    stages.tell_received(stage, lo, piece, state, counts, flags, True)
            os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
        except OSError as error:
            raise BuildError(f"cannot read {path}: {error.strerror}") from None
        finally:
            os.close(descriptor)
        self.read += 8 * count
        if found != crc:
            raise BuildError(f"{path} does not match its CRC-32: damaged")

    def values(self) -> Any:
        """The layer's values for tables.write_table, and their histogram: the
        store's slot (stages in memory), or read from the slice files a
        window at a time, endless play settled to 0 (sliced stages)."""
        if not self.sliced:
            return self.store.layer(self.seeds), None
        source = _SlicedValues(self)
        return source, source.histogram()


class _Outgoing:
    """The updates a visit sends to other slices: one file a target slice,
    appended to as the sweeps go, synced and named in the journal once the
    visit is committed."""

    def __init__(self, layer: DiskLayer, visit: int) -> None:
        self.layer = layer
        self.visit = visit
        self.files: dict[int, list[Any]] = {}  # target: [descriptor, crc, count]

    def send(self, updates: np.ndarray) -> None:
        if updates.shape[0] == 0:
            return
        layer = self.layer
        owners = np.searchsorted(np.asarray(layer.bounds), updates >> 1, side="right") - 1
        order = np.argsort(owners, kind="stable")
        updates, owners = updates[order], owners[order]
        cuts = np.flatnonzero(np.diff(owners)) + 1
        for target, piece in zip(owners[np.concatenate(([0], cuts))].tolist(), np.split(updates, cuts)):
            entry = self.files.get(target)
            path = layer._path(updates_name(layer.seeds, target, self.visit))
            try:
                if entry is None:
                    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                                         0o644)
                    entry = self.files[target] = [descriptor, 0, 0]
                view = memoryview(np.ascontiguousarray(piece).view(np.uint8))  # type: ignore[arg-type]
                done = 0
                while done < len(view):
                    done += os.write(entry[0], view[done:])
            except OSError as error:
                self.abandon()
                raise _full(error, layer.scratch, layer.seeds) from None
            entry[1] = zlib.crc32(view, entry[1])
            entry[2] += piece.shape[0]
            layer.written += len(view)

    def close(self) -> dict[int, list[Any]]:
        """Sync and close the files; returns {target: [name, crc, count]}."""
        sent = {}
        try:
            for target, (descriptor, crc, count) in self.files.items():
                os.fsync(descriptor)
                os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
                sent[target] = [updates_name(self.layer.seeds, target, self.visit), crc, count]
        except OSError as error:
            self.abandon()
            raise _full(error, self.layer.scratch, self.layer.seeds) from None
        for descriptor, _, _ in self.files.values():
            os.close(descriptor)
        self.files = {}
        return sent

    def abandon(self) -> None:
        for target, (descriptor, _, _) in self.files.items():
            os.close(descriptor)
            with contextlib.suppress(OSError):
                os.remove(self.layer._path(updates_name(self.layer.seeds, target, self.visit)))
        self.files = {}


class _SlicedValues:
    """Layer values read from the slice files of sliced stages, for
    tables.write_table: values[start:stop] reads the lines of those ranks
    and settles endless play (a pending code) to 0."""

    def __init__(self, layer: DiskLayer) -> None:
        self.layer = layer
        self.shape = (index.layer_size(layer.seeds),)
        self.dtype = np.dtype(np.int8)

    def histogram(self) -> np.ndarray:
        """The values' histogram, each slice file read whole and its CRC-32 checked."""
        layer = self.layer
        counts = np.zeros(256, dtype=np.int64)
        for part in range(layer.parts):
            state = layer._read_slice(part)
            size = layer.bounds[part + 1] - layer.bounds[part]
            counts += stages.line_histogram(state, size)
        seeds = layer.seeds
        settled = [counts[d & 0xFF] for d in range(-seeds, seeds + 1)]
        settled[seeds] += sum(int(counts[code & 0xFF]) for code in range(-128, 128) if not -seeds <= code <= seeds)
        return np.array(settled, dtype=np.int64)

    def __getitem__(self, window: slice) -> np.ndarray:
        start, stop, _ = window.indices(self.shape[0])
        layer = self.layer
        out = np.empty(stop - start, dtype=np.int8)
        for part in range(layer.parts):
            lo, hi = layer.bounds[part], layer.bounds[part + 1]
            first, last = max(lo, start), min(hi, stop)
            if first >= last:
                continue
            line_first = (first - lo) // layer_state.LINE_RANKS
            line_last = (last - lo - 1) // layer_state.LINE_RANKS + 1
            cells = np.empty((line_last - line_first) * layer_state.LINE, dtype=np.int8)
            path = layer._path(layer.journal["files"][part])
            descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                view = memoryview(cells.view(np.uint8))  # type: ignore[arg-type]  # an ndarray is a buffer
                done = 0
                while done < len(view):
                    got = os.preadv(descriptor, [view[done:]], line_first * layer_state.LINE + done)
                    if got == 0:
                        raise BuildError(f"{path} ended early")
                    done += got
            finally:
                os.close(descriptor)
            codes = cells.reshape(-1, layer_state.LINE)[:, : layer_state.LINE_RANKS].reshape(-1)
            codes = codes[first - lo - line_first * layer_state.LINE_RANKS :][: last - first]
            out[first - start : last - start] = np.where((codes >= -layer.seeds) & (codes <= layer.seeds), codes, 0)
        return out


def free_bytes(scratch: str) -> int:
    """Bytes free for this user in the file system of folder `scratch`."""
    return shutil.disk_usage(scratch).free
