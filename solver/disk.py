"""A layer past memory: its exits computed a slice at a time through disk.

A layer needs in memory its working state (1.52 bytes a position, the lined
layout of solver.retrograde) and, for its exits, its smaller layers
n-15..n-2 at a byte a position, a group at a time (solver.plan). Past layer
34 on a 24 GiB machine the two no longer fit together, while the working
state alone still does (layer 36: 20.2 GiB). So the disk mode takes the
exits apart from the stages (docs/DISK.md says why, with the figures):

1. Exits, in slices. The layer's ranks are cut into K slices (at multiples
   of SLICE_UNIT, so that a slice is whole lines and whole blocks). For
   each group of smaller layers that fits in memory beside one slice, each
   slice in turn is read from the scratch folder, given its exit pass over
   that group (retrograde.exit_pass on ranks lo..hi, the same kernel as in
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

import errno
import json
import os
import re
import shutil
import time
import zlib
from collections.abc import Callable
from typing import Any

import numpy as np

from . import index, retrograde, tables
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


class DiskLayer:
    """The disk-mode build of layer `seeds` (module docstring), to the point
    where its values are in their slot of `store`; the caller writes the
    file and then calls clear().

    `layout` is plan.disk_plan's: slices (their bounds) and exit groups.
    `load(m)` puts smaller layer m in `store` (checked), as the in-memory
    build does. `kill_after` (tests): SIGKILL this process after that many
    steps of this run have been recorded."""

    def __init__(self, seeds: int, scratch: str, store: LayerStore, rows: tuple[np.ndarray, ...],
                 layout: dict[str, Any], load: Callable[[int], None], kill_after: int | None = None) -> None:
        self.seeds = seeds
        self.scratch = scratch
        self.store = store
        self.rows = rows
        self.bounds = [int(b) for b in layout["bounds"]]
        self.groups = [[int(m) for m in g] for g in layout["groups"]]
        self.parts = len(self.bounds) - 1
        self.load = load
        self.kill_after = kill_after
        self.steps = 0
        self.started = time.perf_counter()
        self.load_seconds = 0.0

    # The journal --------------------------------------------------------------------

    def _fresh_journal(self) -> dict[str, Any]:
        return {"seeds": self.seeds, "bounds": self.bounds, "groups": self.groups, "done": [-1] * self.parts,
                "crc32": [0] * self.parts, "exit_lookups": 0, "exit_seconds": 0.0}

    def _commit(self, journal: dict[str, Any]) -> None:
        try:
            tables.write_file_exclusively(journal_path(self.scratch, self.seeds), (json.dumps(journal).encode(),))
        except OSError as error:
            raise _full(error, self.scratch, self.seeds) from None
        self.steps += 1
        if self.kill_after is not None and self.steps >= self.kill_after:
            os.kill(os.getpid(), 9)  # fault injection for the tests: a kill right after a step

    def _own_files(self) -> list[str]:
        pattern = re.compile(rf"awele-{self.seeds:02d}\.(slice-\d+-of-\d+\.group-\d+\.lines|disk\.json)"
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
                    or journal.get("bounds") != self.bounds or journal.get("groups") != self.groups):
                journal = None
        except (OSError, ValueError):
            journal = None
        journal = journal or self._fresh_journal()
        keep = {os.path.basename(journal_path(self.scratch, self.seeds))} | {
            os.path.basename(slice_path(self.scratch, self.seeds, part, self.parts, group))
            for part, group in enumerate(journal["done"]) if group >= 0}
        for name in self._own_files():
            path = os.path.join(self.scratch, name)
            if name not in keep and not os.path.islink(path):
                os.remove(path)
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
        return (hi - lo + retrograde.LINE_RANKS - 1) // retrograde.LINE_RANKS

    def solve(self, progress: Callable[[str, float], None] | None = None) -> dict[str, Any]:
        """Exits through the scratch folder, then the stages in memory; the
        values end in the layer's slot of the store. Returns the stats of
        LayerSolver.solve with the disk traffic added."""
        journal = self.resume()
        seeds, store = self.seeds, self.store
        written = read = 0
        resident: tuple[int, np.ndarray] | None = None  # the slice still in memory from the last step
        started = self.started = time.perf_counter()
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
                    resident = None  # its memory goes before the next slice's comes
                    state = np.zeros(self._lines(part) * retrograde.LINE, dtype=np.int8)
                    if number > 0:
                        read_lines(slice_path(self.scratch, seeds, part, self.parts, number - 1), state,
                                   journal["crc32"][part])
                        read += state.nbytes
                tick = time.perf_counter()
                with retrograde.thread_count(1 if hi - lo < retrograde.SERIAL_SIZE else None):
                    lookups = retrograde.exit_pass(seeds, hi - lo, state, state.view(np.uint8), store.flat,
                                                   store.starts, use, number == 0, self.rows, True, lo)
                journal["exit_seconds"] += time.perf_counter() - tick
                journal["exit_lookups"] += int(lookups)
                crc = write_lines(slice_path(self.scratch, seeds, part, self.parts, number), state, self.scratch,
                                  seeds)
                written += state.nbytes
                journal["done"][part] = number
                journal["crc32"][part] = crc
                self._commit(journal)
                if number > 0:
                    os.remove(slice_path(self.scratch, seeds, part, self.parts, number - 1))
                resident = (part, state)
        resident = None
        for m in store.layers():
            store.drop(m)
        exits_wall = time.perf_counter() - started
        solver = retrograde.LayerSolver(seeds, store, self.rows)
        last = len(self.groups) - 1
        for part in range(self.parts):
            first_line = self.bounds[part] // retrograde.LINE_RANKS
            lines = self._lines(part)
            read_lines(slice_path(self.scratch, seeds, part, self.parts, last),
                       solver.values[first_line * retrograde.LINE : (first_line + lines) * retrograde.LINE],
                       journal["crc32"][part])
            read += lines * retrograde.LINE
        solver.exits_done(len(self.groups), journal["exit_seconds"], journal["exit_lookups"])
        stats = solver.solve(progress)
        stats.update(disk_bytes_written=written, disk_bytes_read=read, slices=self.parts,
                     exit_wall_seconds=exits_wall)
        return stats


def free_bytes(scratch: str) -> int:
    """Bytes free for this user in the file system of folder `scratch`."""
    return shutil.disk_usage(scratch).free
