"""The build driver: which layers are built, in what memory, and checked.

Layers are built in order 0..N. Layer n is solved in its slot of a
LayerStore (solver.layers) by solver.retrograde, at 1.5 bytes a position;
its exits need the smaller layers n-15..n-2, which are read from their
files (every chunk's CRC checked) a group at a time when they do not all fit
in the memory budget beside the layer: one exit pass over layer n per group.
Layers stay in memory from one layer to the next while the budget holds
them, so a build that fits reads nothing back.

One build at a time per folder: a lock file (``.awele-build.lock``) held
with flock for the build's life, in the tables folder and in the scratch
and checkpoint folders the build works in. A layer whose file exists and checks out is
reused, so a killed build resumes at the first layer it had not written.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import os
import resource
import secrets
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar, TypeVar, cast

import numba
import numpy as np

from . import (
    disk,
    distance,
    distributed,
    distributed_lean,
    index,
    layer_state,
    lean,
    lean_distance,
    retrograde,
    tables,
    verify_layer,
)
from .errors import BuildError, CorruptTableError, ScratchError, TableMismatchError, TableWriteError
from .layers import LayerStore
from .plan import (
    BASE_BYTES,
    default_budget,
    disk_least_bytes,
    disk_plan,
    distance_groups,
    exit_groups,
    lean_plan,
    lean_slice_layout,
    lean_slice_scratch_bytes,
    least_bytes,
    memory_message,
    mode,
    process_bytes,
    process_memory_message,
    verify_bytes,
    verify_groups,
    working_bytes,
)
from .resume import LayerCheckpoints, remove_checkpoint_files
from .rules import ROW

LOCK_NAME = ".awele-build.lock"
SCRATCH_NAME = "awele-scratch"  # the disk mode's scratch folder inside the tables folder, unless --scratch
DISK_KILL_VARIABLE = "AWELE_TEST_DISK_KILL"  # "seeds:steps": SIGKILL after that many disk-mode steps (tests)
UNREACHABLE = 47  # the one layer no game reaches: the first capture takes at least 2 of the 48 seeds


def peak_memory_bytes() -> int:
    """Peak resident memory of this process so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# Lock ------------------------------------------------------------------------------


class BuildLock:
    """A folder's build lock: flock on .awele-build.lock, released on exit.
    `role` names the folder in the refusal ("tables folder", "scratch
    folder", "checkpoint folder"), with the option that gives another one;
    with `remove`, the lock file goes on exit (a folder that is to go once empty)."""

    OPTIONS: ClassVar[dict[str, str]] = {"scratch folder": "--scratch", "checkpoint folder": "--checkpoint-dir"}

    def __init__(self, directory: str, role: str = "tables folder", remove: bool = False) -> None:
        self.path = os.path.join(directory, LOCK_NAME)
        self.role = role
        self.remove = remove
        self.descriptor: int | None = None

    def __enter__(self) -> BuildLock:
        try:
            self.descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise BuildError(f"{self.path} is a symbolic link: refusing to follow it") from None
            raise TableWriteError(f"cannot create {self.path}: {error.strerror}") from None
        try:
            fcntl.flock(self.descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(self.descriptor, 32, 0).decode(errors="replace").strip()
            os.close(self.descriptor)
            self.descriptor = None
            who = f" (process {holder})" if holder.isdigit() else ""
            folder = os.path.dirname(self.path) or "."
            where, advice = (folder, "build in another --dir") if self.role == "tables folder" else (
                f"the {self.role} {folder}", f"give another {self.OPTIONS[self.role]}")
            raise BuildError(f"another awele build is running in {where}{who}; wait for it to finish or {advice}") \
                from None
        os.ftruncate(self.descriptor, 0)
        os.pwrite(self.descriptor, f"{os.getpid()}\n".encode(), 0)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.descriptor is not None:
            os.ftruncate(self.descriptor, 0)
            if self.remove:
                with contextlib.suppress(OSError):
                    os.remove(self.path)
            os.close(self.descriptor)  # closing releases the flock
            self.descriptor = None


# Signals ---------------------------------------------------------------------------

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
_Function = TypeVar("_Function", bound=Callable[..., Any])


class Stopped(KeyboardInterrupt):
    """A build stopped by a signal (SIGTERM, SIGHUP, or Ctrl-C's SIGINT),
    raised where the build is, as Ctrl-C's KeyboardInterrupt is: what it
    was writing is removed on the way out."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


_RECEIVED: list[int] = []  # the stop signals heard since stopping_signals() took them


def _stop(signum, frame):
    _RECEIVED.append(signum)
    raise Stopped(signum)


@contextlib.contextmanager
def stopping_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP end a build as Ctrl-C does (Stopped, a
    KeyboardInterrupt): the temporary file of the layer being written is
    removed and the lock released. Then the signal is sent again with its
    default action, so that the process ends as killed by it (a shell sees
    128 + the signal), as it would have without the build. Only where the
    signal's action is the default (SIGINT: Python's KeyboardInterrupt), and
    only in the main thread (Python runs handlers there alone); a compiled
    kernel hears it when it returns. Python can swallow what a handler
    raises (inside one of h5py's weakref callbacks, for one) and the build
    then goes on to its end: the stop is then honoured there. What no
    handler can clean up (SIGKILL) the next build removes
    (tables.remove_stale_temporaries)."""
    caught = []
    if threading.current_thread() is threading.main_thread():
        caught = [signum for signum in STOP_SIGNALS if signal.getsignal(signum) is signal.SIG_DFL]
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            caught.append(signal.SIGINT)
    if caught:
        _RECEIVED.clear()
    previous = {}
    stopped = False
    unraisable = sys.unraisablehook
    if caught:
        # A stop raised inside a callback Python cannot raise from (a weakref's)
        # would print "Exception ignored ... Traceback": it is honoured below instead.
        def quiet_stops(info: Any) -> None:
            if not isinstance(info.exc_value, KeyboardInterrupt):
                unraisable(info)

        sys.unraisablehook = quiet_stops
    try:
        for signum in caught:
            previous[signum] = signal.signal(signum, _stop)
        yield
    except Stopped:
        stopped = True
        raise
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        sys.unraisablehook = unraisable
        heard = [signum for signum in _RECEIVED if signum != signal.SIGINT] if caught else []
        if heard:
            sys.stderr.flush()
            os.kill(os.getpid(), heard[0])  # the default action now: the process ends here
        if caught and _RECEIVED and not stopped:
            raise KeyboardInterrupt  # Ctrl-C, swallowed on its way: heard now


def _stops_on_signals(function: _Function) -> _Function:
    """`function` run under stopping_signals()."""

    @functools.wraps(function)
    def stopping(*args: Any, **kwargs: Any) -> Any:
        with stopping_signals():
            return function(*args, **kwargs)

    return cast(_Function, stopping)


def _remove_leftovers(directory: str) -> None:
    """Remove (and name on stderr) the temporary files stopped builds left in `directory` (under its lock)."""
    for name in tables.remove_stale_temporaries(directory):
        print(f"awele: removed {os.path.join(directory, name)}, left behind by a build that was stopped",
              file=sys.stderr)


def prepare_directory(directory: str) -> None:
    """Create the tables folder if needed; one clear error if it cannot be used."""
    _usable_folder(directory, "tables folder")


def _usable_folder(directory: str, name: str) -> None:
    """Create folder `directory` (the `name` the messages give it) if needed;
    TableWriteError (one line) if it is not a folder or cannot be written."""
    if os.path.lexists(directory) and not os.path.isdir(directory):
        raise TableWriteError(f"the {name} {directory} exists and is not a folder")
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as error:
        raise TableWriteError(f"cannot create the {name} {directory}: {error.strerror}") from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise TableWriteError(f"the {name} {directory} is not writable")


# Build -----------------------------------------------------------------------------


def _existing_layer_ok(directory, seeds):
    """Whether layer `seeds` has a valid file: the layout awele writes and
    every chunk's CRC-32 read and checked (tables.check_values), so that
    values rewritten in place are not reused; raises for a damaged or
    mismatched one, naming it."""
    path = tables.table_path(directory, seeds)
    if not os.path.lexists(path):
        return False
    try:
        tables.check_values(directory, seeds)
    except (CorruptTableError, TableMismatchError) as error:
        raise type(error)(f"{error}; delete that file and build again to rebuild it") from None
    return True


def _existing_distances_ok(directory, seeds):
    """Whether layer `seeds`' valid file holds distances, every chunk of them
    checked (tables.check_distances); raises for damaged ones, naming the file."""
    try:
        return tables.check_distances(directory, seeds)
    except (CorruptTableError, TableMismatchError) as error:
        raise type(error)(f"{error}; delete that file and build again to rebuild it") from None


def _load(directory, store, seeds):
    try:
        tables.load_values(directory, seeds, out=store.layer(seeds))
    except (CorruptTableError, TableMismatchError) as error:
        store.drop(seeds)
        raise type(error)(f"{error}; delete that file and build again to rebuild it") from None
    store.mark_loaded(seeds)


def _make_room(store, keep, need, budget, working):
    """Drop resident layers not in `keep`, largest first, until `need` more bytes fit."""
    for seeds in sorted((m for m in store.layers() if m not in keep), key=index.layer_size, reverse=True):
        if BASE_BYTES + working + store.resident_bytes() + need <= budget:
            return
        store.drop(seeds)


def build_layer(seeds: int, directory: str, store: LayerStore, budget: int, rows: tuple[np.ndarray, ...],
                progress: Callable | None = None, checkpoints: LayerCheckpoints | None = None,
                distances: bool = False) -> dict[str, Any]:
    """Solve layer `seeds` in `store` within `budget` and write its file; return
    stats. With `checkpoints`, a state they saved is resumed (no exit passes)
    and the stages' state is saved as they say (solver.resume); a resumed
    layer is checked (check_resumed) before its file is written, and built
    again from the start, in one line that says so, when the check fails.
    With `distances`, the file holds the layer's distances too (solver.distance)."""
    while True:
        stats, load_seconds, found = _solve_in_memory(seeds, directory, store, budget, rows, progress, checkpoints,
                                                      distances)
        first_stage = stats["resumed_at_stage"]
        if first_stage is None or checkpoints is None:
            break
        problem = check_resumed(directory, seeds, store, budget)
        if not problem:
            break
        disk.say(f"layer {seeds}, resumed from its checkpoint in {checkpoints.folder}, fails its check "
                 f"({problem}): it is built again from the start, its checkpoint removed")
        checkpoints.clear()
        store.drop(seeds)
    if distances and found is None:  # resumed, or no room beside the stages: the separate pass
        found = _distances(seeds, directory, store, budget, rows)
    stats.update(found.stats if found else {})
    started = time.perf_counter()
    tables.write_table(
        directory,
        seeds,
        store.layer(seeds),
        build_seconds=stats["seconds"],
        extra={"threads": numba.get_num_threads(), "peak_bytes": peak_memory_bytes(),
               "exit_passes": stats["exit_passes"], **({"distance_seconds": found.stats["distance_seconds"]}
                                                       if found else {})},
        distances=distance.for_file(found, store.layer(seeds)) if found else None,
    )
    stats["write_seconds"] = time.perf_counter() - started
    stats["load_seconds"] = load_seconds
    if checkpoints is not None:
        checkpoints.clear()
    return stats


def _solve_in_memory(seeds: int, directory: str, store: LayerStore, budget: int, rows: tuple[np.ndarray, ...],
                     progress: Callable | None, checkpoints: LayerCheckpoints | None, distances: bool = False
                     ) -> tuple[dict[str, Any], float, distance.LayerDistances | None]:
    """Layer `seeds` solved in its slot of `store` (build_layer), resumed where
    `checkpoints` say; (stats, seconds spent loading smaller layers, its
    distances: with `distances`, when the layer is built from its start
    and the budget holds its distance bytes beside the stages, these run
    ply by ply and write them; else None)."""
    working = working_bytes(seeds)
    wanted = set(layer_state.exit_layers(seeds))
    # Layers no longer needed by this layer or the next go first; the one just
    # below stays if it fits (the next layer needs it).
    for m in store.layers():
        if m not in wanted and m != seeds - 1:
            store.drop(m)
    groups = exit_groups(seeds, budget)
    solver = retrograde.LayerSolver(seeds, store, rows)
    load_seconds = 0.0
    first_stage = checkpoints.resume(solver) if checkpoints is not None else None
    # Resident layers first: a pass over them costs no reading.
    groups.sort(key=lambda g: -sum(1 for m in g if store.loaded[m]))
    for group in groups if first_stage is None else []:
        need = sum(index.layer_size(m) for m in group if not store.loaded[m])
        _make_room(store, set(group), need, budget, working)
        started = time.perf_counter()
        for m in group:
            if not store.loaded[m]:
                _load(directory, store, m)
        load_seconds += time.perf_counter() - started
        solver.exits(group)
    # The stages ply by ply write the distances as they go (a byte a position beside them): no separate pass.
    # What the budget leaves beside them carries the large plies' rows (stages.ply_rows).
    spare = budget - (BASE_BYTES + working + store.resident_bytes() + distance.working_bytes(solver.size))
    by_ply = distances and first_stage is None and spare >= 0
    stats = solver.solve(progress, first_stage=first_stage,
                         after_stage=None if checkpoints is None else checkpoints.after_stage(solver),
                         distance_cap=distance.DISTANCE_CAP if by_ply else None, spare=spare)
    stats["resumed_at_stage"] = first_stage
    return stats, load_seconds, solver.distances


RESUMED_SAMPLE = 10_000  # positions of a resumed layer checked, when it is too large to check whole
WHOLE_CHECK_POSITIONS = 200_000_000  # a resumed layer up to this size (layers 0..22) is checked whole


def check_resumed(directory: str, seeds: int, store: LayerStore, budget: int, values: Any = None) -> str:
    """'' when layer `seeds`, solved from a checkpoint or a journal it did not
    write itself in this run, agrees with its moves one move deep (verify's
    rule: its value the best of captured - d(child) over its moves, or its
    terminal value); else what was found. A layer of up to
    WHOLE_CHECK_POSITIONS positions is checked whole when the budget holds
    `awele verify` for it (verify_layer.check_moves, its smaller layers read
    a group at a time), a larger one on RESUMED_SAMPLE positions drawn at
    random (verify_sample). The layer's values are its slot in `store`, or
    `values` (sliced stages: read from their files, and put in the slot
    for a whole check)."""
    size = index.layer_size(seeds)
    whole = size <= WHOLE_CHECK_POSITIONS
    if whole:
        try:
            verify_groups(seeds, budget)
        except BuildError:
            whole = False
    if whole:
        if values is not None:
            slot = store.layer(seeds)
            for start in range(0, size, tables.CHUNK * 64):
                slot[start : start + tables.CHUNK * 64] = values[start : start + tables.CHUNK * 64]
            store.mark_loaded(seeds)
        wrong, _ = verify(directory, seeds, store, memory=budget)
        return f"{wrong:,} of its {size:,} positions disagree with their moves" if wrong else ""
    own = store.layer(seeds) if values is None else values
    wrong, _ = verify_sample(directory, seeds, RESUMED_SAMPLE, seed=secrets.randbits(32), values=own)
    return f"{wrong:,} of {RESUMED_SAMPLE:,} positions drawn disagree with their moves" if wrong else ""


def _distances(seeds, directory, store, budget, rows):
    """The distances of layer `seeds`, solved in `store`, by the separate pass
    (solver.distance), or None when the budget cannot hold them."""
    groups = distance_groups(seeds, budget)
    if groups is None:
        return None
    return distance.build_distances(seeds, store, groups, rows, lambda m: _load(directory, store, m),
                                    lambda keep, need, working: _make_room(store, keep, need, budget, working))


def add_distances(seeds: int, directory: str, store: LayerStore, budget: int, rows: tuple[np.ndarray, ...],
                  slices: int | None = None) -> dict[str, Any] | None:
    """Give the file of layer `seeds`, which holds values alone, its distances
    (its values and smaller layers read, checked, into `store`); return
    their stats, or None when the budget cannot hold the pass. When the
    layer's values, its distance bytes and its largest smaller layer do not
    fit together, the starts read its values a slice at a time
    (distance.sliced_plan; `slices` forces that many, as the disk mode's
    tests do); when its values and its distance bytes do not fit together,
    the pass holds the distance bytes alone (solver.lean_distance)."""
    groups = distance_groups(seeds, budget) if slices is None else None
    sliced = distance.sliced_plan(seeds, budget, slices) if groups is None else None
    if groups is None and sliced is None:
        return _add_lean_distances(seeds, directory, store, budget, rows)
    for m in store.layers():
        if m not in layer_state.exit_layers(seeds) and m not in (seeds, seeds - 1):
            store.drop(m)
    if sliced is not None:
        bounds, sliced_groups = sliced
        found = distance.build_distances_sliced(
            seeds, store, bounds, sliced_groups, rows, lambda lo, hi: tables.load_slice(directory, seeds, lo, hi)[0],
            lambda m: _load(directory, store, m), lambda keep, need, working: _make_room(store, keep, need, budget,
                                                                                         working))
    else:
        if not store.loaded[seeds]:
            _make_room(store, {seeds}, index.layer_size(seeds), budget, 0)
            _load(directory, store, seeds)
        found = _distances(seeds, directory, store, budget, rows)
    if found is None:
        return None
    started = time.perf_counter()
    tables.add_distances(directory, seeds, store.layer(seeds), *distance.for_file(found, store.layer(seeds)),
                         extra={"distance_seconds": found.stats["distance_seconds"]})
    return {**found.stats, "write_seconds": time.perf_counter() - started}


def _add_lean_distances(seeds, directory, store, budget, rows):
    """add_distances holding a byte a position (lean_distance), its values
    read from its file a slice at a time (its start's distance bytes in a
    file beside it when they do not fit beside its smaller layers; its
    values copied uncompressed beside it for the classes when the disk
    holds them twice over); None when even that does not fit."""
    layout = lean_distance.plan(seeds, budget)
    if layout is None:
        return None
    path, size = tables.table_path(directory, seeds), index.layer_size(seeds)
    store.drop(seeds)  # its values come a slice at a time; the smaller layers make room as the groups need

    def read(lo, hi):
        return tables.load_slice(directory, seeds, lo, hi)[0]

    def drop_all() -> None:  # once the start is done: the classes need no smaller layer
        for m in store.layers():
            store.drop(m)

    found = lean_distance.lean_distances(
        seeds, store, read, tables.load_slice(directory, seeds, 0, 0)[1], layout.bounds, layout.groups, rows,
        spill=f"{path}.distance-start" if layout.spilled else None,
        raw=f"{path}.distance-values" if shutil.disk_usage(directory).free > size * (2 + layout.spilled) else None,
        load=lambda m: _load(directory, store, m),
        make_room=lambda keep, need, working: _make_room(store, keep, need, budget, working),
        after_start=drop_all)
    started = time.perf_counter()
    tables.add_distances(directory, seeds, lean_distance.FileValues(read, size),
                         *lean_distance.file_distances(found, read),
                         extra={"distance_seconds": found.stats["distance_seconds"]})
    return {**found.stats, "write_seconds": time.perf_counter() - started}


def _warm_up(max_seeds, distances=False):
    """Compile (or load from numba's cache) the builder's kernels on small layers
    and a few bytes, and start numba's threads, so that no layer's time includes it."""
    store = retrograde.solve_up_to(min(8, max_seeds))
    if distances:
        distance.layer_distances(min(8, max_seeds), store)  # the separate pass (disk mode, a folder of values)
        solver = retrograde.LayerSolver(min(8, max_seeds), store)  # the stages ply by ply
        solver.exits(layer_state.exit_layers(solver.seeds))
        solver.solve(distance_cap=distance.DISTANCE_CAP)
    tables.fletcher32(np.frombuffer(bytes(2), dtype=np.uint8))  # read-only, as the writer passes it
    tables.byte_histogram(np.zeros(1, dtype=np.int8))


def build_layer_on_disk(seeds: int, directory: str, scratch: str, store: LayerStore, layout: dict[str, Any],
                        rows: tuple[np.ndarray, ...], progress: Callable | None = None,
                        checkpoint_interval: float = 600.0, locked: bool = False,
                        budget: int | None = None) -> dict[str, Any]:
    """Solve layer `seeds` in the disk mode (solver.disk) with `layout`
    (plan.disk_plan), its scratch files in `scratch`, and write its file;
    return stats. The scratch folder's free space is checked first against
    the layout's peak, less what a killed run of this layer left there to
    resume from. `locked`: the caller holds the scratch folder's lock (else
    it is taken here). A layer resumed from a journal is checked
    (check_resumed, within `budget`) before its file is written; a damaged
    or planted scratch file, or a failed check, starts the layer over once,
    in one line that says so."""
    _usable_folder(scratch, "scratch folder")
    budget = budget if budget is not None else default_budget()
    with _no_lock() if locked else BuildLock(scratch, "scratch folder"):
        planned = os.environ.get(DISK_KILL_VARIABLE, "").split(":")
        kill_after = int(planned[1]) if len(planned) == 2 and planned[0] == str(seeds) else None
        layer = disk.DiskLayer(seeds, scratch, store, rows, layout, lambda m: _load(directory, store, m),
                               kill_after=kill_after, checkpoint_interval=checkpoint_interval)
        layer.resume()
        need = layout["scratch_bytes"] - layer.scratch_bytes()
        free = disk.free_bytes(scratch)
        if free < need:
            raise BuildError(f"layer {seeds} needs {need / 1e9:.1f} GB in the scratch folder {scratch} (disk mode), "
                             f"which has {free / 1e9:.1f} GB free: free some space or give another --scratch")
        for attempt in (0, 1):
            try:
                stats = layer.solve(progress)
                values, counts = layer.values()
                if layer.resumed:
                    problem = check_resumed(directory, seeds, store, budget, values if layer.sliced else None)
                    if store.loaded[seeds]:
                        values, counts = store.layer(seeds), None
                    if problem:
                        raise ScratchError(f"layer {seeds}, resumed from its journal in {scratch}, fails its check "
                                           f"({problem})")
                break
            except ScratchError as error:
                if attempt:
                    raise BuildError(f"{error}, even built again from the start") from None
                layer.start_over(str(error))
        started = time.perf_counter()
        tables.write_table(
            directory, seeds, values, counts=counts, build_seconds=time.perf_counter() - layer.started,
            extra={"threads": numba.get_num_threads(), "peak_bytes": peak_memory_bytes(),
                   "exit_passes": stats["exit_passes"], "disk_slices": layout["slices"]})
        stats["write_seconds"] = time.perf_counter() - started
        stats["load_seconds"] = layer.load_seconds
        layer.clear()
    return stats


def build_layer_lean(seeds: int, directory: str, scratch: str, store: LayerStore, layout: dict[str, Any],
                     rows: tuple[np.ndarray, ...], progress: Callable | None = None, locked: bool = False,
                     budget: int | None = None) -> dict[str, Any]:
    """Solve layer `seeds` in the lean stages (solver.lean) with `layout`
    (plan.lean_plan), its scratch files in `scratch`, and write its file;
    return stats. As in the disk mode: the scratch folder's free space is
    checked first against the layout's peak, less what a killed run of this
    layer left there to resume from; `locked`: the caller holds the scratch
    folder's lock (else it is taken here); a layer resumed from its journal
    is checked (check_resumed, within `budget`) before its file is written;
    a damaged or planted scratch file, or a failed check, starts the layer
    over once, in one line that says so."""
    _usable_folder(scratch, "scratch folder")
    budget = budget if budget is not None else default_budget()
    with _no_lock() if locked else BuildLock(scratch, "scratch folder"):
        planned = os.environ.get(lean.KILL_VARIABLE, "").split(":")
        kill_after = int(planned[1]) if len(planned) == 2 and planned[0] == str(seeds) else None
        layer = lean.LeanLayer(seeds, scratch, store, rows, layout["groups"], lambda m: _load(directory, store, m),
                               kill_after=kill_after, streamed=layout["streamed"],
                               read=lambda m, start, stop: tables.load_slice(directory, m, start, stop)[0])
        layer.resume()
        need = layout["scratch_bytes"] - layer.scratch_bytes()
        free = disk.free_bytes(scratch)
        if free < need:
            raise BuildError(f"layer {seeds} needs {need / 1e9:.1f} GB in the scratch folder {scratch} (lean stages), "
                             f"which has {free / 1e9:.1f} GB free: free some space or give another --scratch")
        started = time.perf_counter()
        for attempt in (0, 1):
            try:
                stats = layer.solve(progress)
                values, counts = layer.values()
                if layer.resumed:
                    problem = check_resumed(directory, seeds, store, budget, values)
                    store.drop(seeds)
                    values, counts = layer.values()  # read again from the start: checked against its checksum
                    if problem:
                        raise ScratchError(f"layer {seeds}, resumed from its journal in {scratch}, fails its check "
                                           f"({problem})")
                break
            except ScratchError as error:
                if attempt:
                    raise BuildError(f"{error}, even built again from the start") from None
                layer.start_over(str(error))
        written = time.perf_counter()
        tables.write_table(directory, seeds, values, counts=counts, build_seconds=written - started,
                           extra={"threads": numba.get_num_threads(), "peak_bytes": peak_memory_bytes(),
                                  "exit_passes": stats["exit_passes"]})
        stats["write_seconds"] = time.perf_counter() - written
        stats["load_seconds"] = 0.0
        layer.clear()
    return stats


class _no_lock:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


@_stops_on_signals
def build(max_seeds: int, directory: str | None = None, threads: int | None = None, memory: int | None = None,
          report: Callable[[dict], None] | None = None, progress: Callable | None = None,
          store: LayerStore | None = None, scratch: str | None = None, leave_out: Iterable[int] = (),
          disk_slices: int | None = None, disk_sliced_stages: bool = False,
          checkpoint_interval: float = 600.0, checkpoint_dir: str | None = None, distances: bool = True,
          streamed_exits: bool = False) -> LayerStore:
    """Build every missing layer 0..max_seeds in order; reuse the valid ones.

    `memory` is the budget in bytes (default: available memory less a
    margin). A layer whose in-memory need exceeds it is built in the disk
    mode (solver.disk), its scratch files in `scratch` (default: a folder
    awele-scratch in the tables folder); a layer that fits neither way
    raises BuildError before any work on it starts, and before any layer is
    built if that layer is known up front. A corrupt or mismatched file
    raises, naming it: delete it to rebuild. Layers in `leave_out` are not
    built (47, for a build aimed at the opening: no game reaches it).
    A layer in the disk mode saves its stages' state in the scratch folder
    at most every `checkpoint_interval` seconds, where there is room; with
    `checkpoint_dir`, a layer in memory does the same there (solver.resume),
    and a rerun goes on from the last such state.
    `disk_slices` forces the disk mode, in that many slices, on every layer
    it can take, and `disk_sliced_stages` its stages in slices (tests).
    `streamed_exits` streams the exits of every layer built in the lean
    stages (solver.lean_exits), as they are when the budget cannot hold a
    smaller layer (tests).
    With `distances` (the default) each layer's file holds its distances to
    conversion too (solver.distance), and a valid file that holds values
    alone gains them, its values read rather than built again. A layer in
    the disk mode or the lean stages gains them once its values are
    written (add_distances: its smaller layers beside a slice of it at a
    time when they do not fit beside it whole, its distance bytes alone
    resident when its values do not fit beside them, lean_distance); one
    whose distance pass does not fit the budget even so is written without
    (the row's "distances" says so).

    report(dict) is called after each layer with: seeds, positions, seconds,
    positions_per_second, peak_bytes, built (False when the file was there),
    and for a built layer exit_passes, exit/load/stage/write seconds and the
    scattered accesses the kernels counted (exit_lookups, predecessors_told,
    stage_accesses).
    progress(seeds, step, fraction) follows the stages of a layer. Returns
    the LayerStore (holding whatever layers were last resident).
    """
    directory = directory or tables.default_directory()
    budget = int(memory or default_budget())
    scratch = scratch or os.path.join(directory, SCRATCH_NAME)
    leave_out = _checked_leave_out(max_seeds, leave_out)
    prepare_directory(directory)
    if checkpoint_dir:
        _check_checkpoint_folder(checkpoint_dir)
    default_scratch = scratch == os.path.join(directory, SCRATCH_NAME)
    with contextlib.ExitStack() as locks:
        # Every folder the build works in is locked, each once (they may be the same folder).
        locks.enter_context(BuildLock(directory))
        held = {os.path.realpath(directory)}
        if checkpoint_dir is not None and os.path.realpath(checkpoint_dir) not in held:
            try:
                locks.enter_context(BuildLock(checkpoint_dir, "checkpoint folder"))
                held.add(os.path.realpath(checkpoint_dir))
            except TableWriteError as error:  # not even room for its lock: the layers need no checkpoint
                disk.say(f"{error}: the layers built in memory go on without checkpoints")
                checkpoint_dir = None
        _remove_leftovers(directory)
        missing = [n for n in range(max_seeds + 1) if n not in leave_out and not _existing_layer_ok(directory, n)]
        undistanced = [n for n in range(max_seeds + 1) if distances and n not in leave_out and n not in missing
                       and not _existing_distances_ok(directory, n)]
        too_big = [n for n in missing if mode(n, budget) == "too big"]
        if too_big:
            raise BuildError(f"{memory_message(too_big[0], budget)}; the disk mode needs "
                             f"{disk_least_bytes(too_big[0]) / 2**30:.1f} GiB for it (docs/DISK.md)")
        layouts = {n: _layer_layouts(n, budget, disk_slices, disk_sliced_stages, streamed_exits) for n in missing}
        on_disk = any(layout is not None for pair in layouts.values() for layout in pair)
        if on_disk:
            _usable_folder(scratch, "scratch folder")
        scratch_held = _lock_scratch(locks, scratch, held, default_scratch, on_disk)
        for n in range(max_seeds + 1):
            if n not in missing and n not in leave_out:  # a kill after its table was written left these
                _clear_layer_files(n, scratch if scratch_held else None, checkpoint_dir, "its table is written")
        store = store if store is not None and store.max_seeds >= max_seeds else LayerStore(max_seeds)
        rows = index.RowTables(max_seeds).arrays
        told: list[str] = []  # checkpoints that could not be taken: said once
        with layer_state.thread_count(threads):
            if missing or undistanced:
                _warm_up(max_seeds, distances)
            for seeds in range(max_seeds + 1):
                started = time.perf_counter()
                row: dict[str, Any] = {"seeds": seeds, "positions": index.layer_size(seeds), "built": seeds in missing}
                if seeds in leave_out:
                    continue
                if seeds in missing:
                    step = progress and (lambda step, fraction, n=seeds: progress(n, step, fraction))
                    layout, lean_layout = layouts[seeds]
                    if lean_layout is not None:
                        stats = build_layer_lean(seeds, directory, scratch, store, lean_layout, rows, progress=step,
                                                 locked=True, budget=budget)
                        _clear_layer_files(seeds, scratch if scratch_held else None, checkpoint_dir,
                                           "it was built in the lean stages")
                        added = add_distances(seeds, directory, store, budget, rows) if distances else None
                        row.update({k: v for k, v in (added or {}).items() if "distance" in k})
                        row.update(mode="lean", distances=added is not None, scratch_bytes=lean_layout["scratch_bytes"],
                                   resumed_at_stage=stats["resumed_at_stage"],
                                   queue_peak_bytes=stats["queue_peak_bytes"],
                                   exit_slices=stats["exit_slices"],
                                   disk_bytes_read=stats["disk_bytes_read"],
                                   disk_bytes_written=stats["disk_bytes_written"])
                    elif layout is None:
                        checkpoints = (LayerCheckpoints(seeds, checkpoint_dir, checkpoint_interval, told)
                                       if checkpoint_dir else None)
                        stats = build_layer(seeds, directory, store, budget, rows, progress=step,
                                            checkpoints=checkpoints, distances=distances)
                        if distances and "distance_seconds" not in stats:  # not beside its smaller layers whole
                            added = add_distances(seeds, directory, store, budget, rows)
                            stats.update({k: v for k, v in (added or {}).items() if "distance" in k})
                        _clear_layer_files(seeds, scratch if scratch_held else None, None, "it was built in memory")
                        row.update(mode="memory", resumed_at_stage=stats["resumed_at_stage"],
                                   distances="distance_seconds" in stats,
                                   **{k: v for k, v in stats.items() if "distance" in k})
                    else:
                        stats = build_layer_on_disk(seeds, directory, scratch, store, layout, rows, progress=step,
                                                    checkpoint_interval=checkpoint_interval, locked=True,
                                                    budget=budget)
                        _clear_layer_files(seeds, scratch if scratch_held else None, checkpoint_dir,
                                           "it was built in the disk mode")
                        added = (add_distances(seeds, directory, store, budget, rows,
                                               layout["slices"] if disk_slices else None) if distances else None)
                        row.update({k: v for k, v in (added or {}).items() if "distance" in k})
                        row.update(mode="disk", distances=added is not None, slices=layout["slices"],
                                   scratch_bytes=layout["scratch_bytes"],
                                   sliced_stages=layout["sliced_stages"],
                                   resumed_at_stage=stats.get("resumed_at_stage"),
                                   disk_bytes_read=stats["disk_bytes_read"],
                                   disk_bytes_written=stats["disk_bytes_written"])
                    row.update({k: stats[k] for k in ("exit_passes", "exit_seconds", "stage_seconds",
                                                      "load_seconds", "write_seconds", "exit_lookups",
                                                      "predecessors_told", "stage_accesses")})
                    row["working_bytes"] = stats["working_bytes"]
                elif seeds in undistanced:
                    added = add_distances(seeds, directory, store, budget, rows)
                    row.update(distances=added is not None, distances_added=added is not None, **(added or {}))
                seconds = time.perf_counter() - started
                row.update(
                    seconds=seconds,
                    positions_per_second=row["positions"] / seconds if seconds > 0 else None,
                    peak_bytes=peak_memory_bytes(),
                )
                if report:
                    report(row)
    return store



def _checked_leave_out(max_seeds: int, leave_out: Iterable[int]) -> set[int]:
    """`leave_out` as a set, checked: no layer built may capture into a layer left out."""
    leave_out = set(leave_out)
    for seeds in range(max_seeds + 1):
        needed = sorted(leave_out & set(layer_state.exit_layers(seeds)))
        if needed and seeds not in leave_out:
            raise BuildError(f"layer {seeds} needs layer {needed[0]}: only a layer no later one captures into "
                             f"(47, for 48) can be left out")
    return leave_out


def _lock_scratch(locks: contextlib.ExitStack, scratch: str, held: set[str], default_scratch: bool,
                  on_disk: bool) -> bool:
    """Lock the scratch folder in `locks` where the build needs it or it exists (unless a folder in
    `held` is it); whether the build holds it. The default folder is removed once empty."""
    if os.path.realpath(scratch) in held and os.path.isdir(scratch):
        return True
    if not (on_disk or os.path.isdir(scratch)):
        return False
    if default_scratch:
        locks.callback(_remove_if_empty, scratch)  # after its lock goes: the default folder goes once empty
    try:
        locks.enter_context(BuildLock(scratch, "scratch folder", remove=default_scratch))
        return True
    except (BuildError, TableWriteError):
        if on_disk:
            raise  # another build works there (a folder not needed is only left alone)
        return False

def _layer_layouts(seeds: int, budget: int, disk_slices: int | None, sliced_stages: bool,
                   streamed_exits: bool = False) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """How layer `seeds` is built: (the disk mode's layout, plan.disk_plan; the
    lean stages' layout, plan.lean_plan), both None for a layer built in
    memory. Slices asked for (`disk_slices`) force the disk mode; the lean
    stages come before the disk mode's stages in slices (plan.mode), their
    exits streamed where a smaller layer does not fit (or `streamed_exits`)."""
    layout = disk_plan(seeds, budget, disk_slices, sliced_stages) if disk_slices else None
    if layout is None and mode(seeds, budget) == "lean":
        return None, lean_plan(seeds, budget, streamed=streamed_exits) or lean_plan(seeds, budget)
    if layout is None and least_bytes(seeds) > budget:
        layout = disk_plan(seeds, budget)
    return layout, None


def _remove_if_empty(folder: str) -> None:
    with contextlib.suppress(OSError):
        os.rmdir(folder)


def _clear_layer_files(seeds: int, scratch: str | None, checkpoint_dir: str | None, why: str) -> None:
    """Remove what layer `seeds` left in the scratch folder (disk mode) and the
    checkpoint folder (memory), saying so: a layer whose table is written, or
    that was built in the other mode, needs none of it."""
    for folder, remove in ((scratch, disk.remove_layer_files), (scratch, lean.remove_layer_files),
                           (checkpoint_dir, remove_checkpoint_files)):
        if folder is not None:
            names = remove(folder, seeds)
            if names:
                disk.say(f"removed {len(names)} file{'s' if len(names) > 1 else ''} of layer {seeds} from {folder} "
                         f"({', '.join(names[:3])}{', ...' if len(names) > 3 else ''}): {why}")


def _check_checkpoint_folder(directory):
    """Create the checkpoint folder if needed; TableWriteError (one line) if it cannot be used."""
    _usable_folder(directory, "checkpoint folder")


class CollectiveError(BuildError):
    """An error every process of a distributed build raises alike (process 0 reports it)."""


def _lean_slice_groups(missing: list[int], processes: int, budget: int, threads: int, outbox: int, batch: int,
                       forced: bool) -> dict[int, list[list[int]]]:
    """The layers of `missing` a distributed build makes with lean slices
    (those whose in-memory slices do not fit `budget`, or all when `forced`),
    with their exit passes' groups of smaller layers (plan.lean_slice_layout;
    one layer a pass when forced, so that every pass is exercised); BuildError
    (one line) for a layer that fits neither way."""
    groups = {}
    for n in missing:
        if not forced and process_bytes(n, processes, threads, outbox, batch) <= budget:
            continue
        if forced:
            groups[n] = [[m] for m in layer_state.exit_layers(n)] or [[]]
            continue
        layout = lean_slice_layout(n, processes, budget, outbox, batch)
        if layout is None:
            raise BuildError(process_memory_message(n, processes, budget, threads))
        groups[n] = layout["groups"]
    return groups


def _check_slice_scratch(exchange: distributed.Exchange, seeds: int, scratch: str, sharing: int) -> None:
    """CollectiveError (one line) unless every process's scratch folder has
    room for the lean slices of layer `seeds` of the `sharing` processes of
    its machine (plan.lean_slice_scratch_bytes), checked before the layer
    starts (collective)."""
    need = sharing * lean_slice_scratch_bytes(seeds, exchange.size)
    free = disk.free_bytes(scratch)
    if exchange.sum(int(free < need)):
        raise CollectiveError(f"layer {seeds} needs {need / 1e9:.1f} GB in the scratch folder {scratch} (lean slices, "
                              f"{sharing} process{'es' if sharing > 1 else ''} of a machine), which has "
                              f"{free / 1e9:.1f} GB free on process {exchange.rank}: free some space or give another "
                              "--scratch")


def _slice_working_bytes(seeds: int, processes: int, lean_slices: bool) -> int:
    """The working state a process holds of its slice of layer `seeds`: the
    lined layout's 1.52 bytes a position, or the lean slices' codes."""
    if lean_slices:
        return (-(-index.layer_size(seeds) // processes) + 1) // 2
    return -(-working_bytes(seeds) // processes)


@_stops_on_signals
def build_distributed(max_seeds: int, directory: str | None = None, exchange: distributed.Exchange | None = None,
                      threads: int | None = None, memory: int | None = None, checkpoint_dir: str | None = None,
                      checkpoint_interval: float = 0.0,
                      report: Callable[[dict], None] | None = None, progress: Callable | None = None,
                      outbox: int | None = None, batch: int | None = None, distances: bool = True,
                      scratch: str | None = None, lean_slices: dict[str, int] | None = None) -> None:
    """build() on the processes of `exchange` (solver.distributed; every one
    calls this): each holds its slice of each layer, process 0 writes the
    files, which are the same as build()'s. `memory` is the budget of one
    process; a layer whose slices do not fit in memory is built with lean
    slices (solver.distributed_lean, each process's state file in `scratch`,
    default: SCRATCH_NAME in `directory`) when those fit, else raises before
    any work on it. With `lean_slices` (tests), every layer is built so,
    one smaller layer an exit pass, with those LeanSliceSolver options
    (stack, chunk, block).
    With `checkpoint_dir`, the working state is saved at stage boundaries
    (at most every `checkpoint_interval` seconds) and a rerun with as many
    processes resumes a layer there. report(row), on process 0 only, adds
    to build()'s fields the processes, bytes exchanged and seconds spent
    communicating. With `distances` (the default), process 0 then gives
    each layer's file its distances (add_distances, from the files, within
    `memory`), as one process would: the same distances whatever the
    process count; a layer already built gains them the same way.
    """
    exchange = exchange or distributed.world()
    processes, rank = exchange.size, exchange.rank
    directory = directory or tables.default_directory()
    sharing = exchange.processes_per_node()
    budget = int(memory or default_budget() // sharing)
    threads = threads or max(1, (os.cpu_count() or 1) // sharing)
    outbox = distributed.OUTBOX if outbox is None else outbox
    batch = distributed.EXIT_BATCH if batch is None else batch
    scratch = scratch or os.path.join(directory, SCRATCH_NAME)
    lock = BuildLock(directory)
    decision: dict[str, Any] | None = None
    try:
        if rank == 0:
            try:
                prepare_directory(directory)
                if checkpoint_dir:
                    _check_checkpoint_folder(checkpoint_dir)
                lock.__enter__()
                _remove_leftovers(directory)
                missing = [n for n in range(max_seeds + 1) if not _existing_layer_ok(directory, n)]
                lean_groups = _lean_slice_groups(missing, processes, budget, threads, outbox, batch,
                                                 lean_slices is not None)
                if lean_groups:
                    _usable_folder(scratch, "scratch folder")
                undistanced = [n for n in range(max_seeds + 1) if distances and n not in missing
                               and not _existing_distances_ok(directory, n)]
                decision = {"missing": missing, "undistanced": undistanced, "lean": lean_groups}
            except (BuildError, TableWriteError, CorruptTableError, TableMismatchError) as error:
                decision = {"error": str(error)}
        decision = exchange.broadcast(decision)
        if "error" in decision:
            raise CollectiveError(decision["error"])
        missing = decision["missing"]
        undistanced = decision["undistanced"]
        lean_groups = decision["lean"]
        own = LayerStore(max_seeds) if rank == 0 and distances else None  # process 0's, for the distances
        with layer_state.thread_count(threads):
            slices = distributed.Slices(exchange, distributed.all_bounds(max_seeds, processes))
            checkpoints = distributed.Checkpoints(checkpoint_dir, exchange, checkpoint_interval)
            rows = index.RowTables(max_seeds).arrays
            for seeds in range(max_seeds + 1):
                started = time.perf_counter()
                sent, talking = exchange.bytes_sent, exchange.seconds
                row = {"seeds": seeds, "positions": index.layer_size(seeds), "built": seeds in missing,
                       "processes": processes, "threads": threads}
                if seeds in missing:
                    step = progress and rank == 0 and (lambda step, fraction, n=seeds: progress(n, step, fraction))
                    values: Any  # the slice's values: an array, or its lean state file (SliceFile)
                    if seeds in lean_groups:
                        _check_slice_scratch(exchange, seeds, scratch, sharing)
                        lean_solver = distributed_lean.LeanSliceSolver(seeds, exchange, slices, rows, directory,
                                                                       scratch, lean_groups[seeds], outbox, batch,
                                                                       **(lean_slices or {}))
                        stats = lean_solver.solve(step or None, checkpoints)
                        values, counts = lean_solver.values(), exchange.sum(lean_solver.histogram)
                    else:
                        wanted = layer_state.exit_layers(seeds)
                        slices.keep_only(set(wanted) | {seeds - 1})
                        for m in wanted:
                            if m not in slices.values:
                                slices.load(directory, m)
                        solver = distributed.SliceSolver(seeds, exchange, slices, rows, outbox, batch)
                        stats = solver.solve(checkpoints, step or None)
                        values, counts = solver.values, exchange.sum(tables.histogram(solver.values, seeds))
                    peak = exchange.maximum(peak_memory_bytes())
                    layer_bytes = exchange.sum(exchange.bytes_sent - sent)
                    exit_bytes = exchange.sum(stats["exit_bytes"])
                    layer_talk = exchange.sum(int(1e6 * (exchange.seconds - talking))) / 1e6 / processes
                    written = time.perf_counter()
                    build_seconds = written - started
                    bounds = slices.bounds[seeds, : processes + 1]
                    passes = stats.get("exit_passes", 1)
                    if rank == 0:
                        source = distributed.GatheredLayer(exchange, values, bounds, seeds)
                        tables.write_table(directory, seeds, source, build_seconds=build_seconds, counts=counts,
                                           extra={"threads": threads, "processes": processes, "peak_bytes": peak,
                                                  "exit_passes": passes, "bytes_exchanged": layer_bytes,
                                                  "communication_seconds": layer_talk})
                    else:
                        distributed.send_layer(exchange, values, bounds, seeds)
                    checkpoints.clear(seeds)
                    if seeds in lean_groups:
                        lean_solver.clear()
                    else:
                        slices.values[seeds] = solver.values
                    row.update(exit_seconds=stats["exit_seconds"], stage_seconds=stats["stage_seconds"],
                               write_seconds=time.perf_counter() - written, exit_passes=passes,
                               resumed_at_stage=stats["resumed_at_stage"], exit_bytes_exchanged=exit_bytes,
                               stage_rounds=stats["stage_rounds"], lean_slices=seeds in lean_groups,
                               working_bytes=_slice_working_bytes(seeds, processes, seeds in lean_groups))
                if own is not None and (seeds in missing or seeds in undistanced):
                    added = add_distances(seeds, directory, own, budget, rows)
                    row.update({k: v for k, v in (added or {}).items() if "distance" in k}, distances=added is not None)
                    for m in own.layers():  # nothing held between layers beside the slices
                        own.drop(m)
                seconds = time.perf_counter() - started
                shared = exchange.gather((exchange.bytes_sent - sent, exchange.seconds - talking, peak_memory_bytes()))
                if rank == 0:
                    assert shared is not None, "process 0 gathers"
                    exchanged = sum(s[0] for s in shared)
                    talk = sum(s[1] for s in shared) / processes
                    row.update(
                        seconds=seconds,
                        positions_per_second=row["positions"] / seconds if seconds > 0 else None,
                        peak_bytes=max(s[2] for s in shared),
                        bytes_exchanged=exchanged,
                        bytes_exchanged_per_position=exchanged / row["positions"],
                        communication_seconds=talk,
                        communication_share=talk / seconds if seconds > 0 else 0.0,
                    )
                    if report:
                        report(row)
    finally:
        lock.__exit__()


def load_layers(directory: str, layers: Iterable[int], store: LayerStore | None = None) -> LayerStore:
    """A LayerStore holding `layers` read from `directory` (checked)."""
    layers = sorted(set(layers))
    store = store if store is not None and store.max_seeds >= max(layers, default=0) else LayerStore(
        max(layers, default=0))
    for seeds in layers:
        if not store.loaded[seeds]:
            _load(directory, store, seeds)
    return store


def verify_sample(directory: str, seeds: int, count: int, seed: int = 0, limit: int = 10,
                  values: Any = None) -> tuple[int, list]:
    """Check `count` positions of layer `seeds`, drawn uniformly by rank (from
    `seed`), against their moves as verify() checks every position: d(s) the
    best over moves of captured - d(child), or the terminal value. Every
    value comes from one chunk of its file, CRC checked (tables.ChunkReader),
    so a layer of any size is checked in a few MiB a layer read; with
    `values` (anything whose values[r:r + 1] gives rank r's), layer `seeds`'
    own values come from there (a layer not yet written: check_resumed).
    Returns (mismatch count, up to `limit` mismatching boards with stored value)."""
    size = index.layer_size(seeds)
    ranks = np.unique(np.random.default_rng(seed).integers(0, size, count)) if size else np.zeros(0, dtype=np.int64)
    readers: dict[int, tables.ChunkReader] = {}

    def stored(layer: int, rank: int) -> int:
        if layer == seeds and values is not None:
            return int(values[rank : rank + 1][0])
        if layer not in readers:
            readers[layer] = tables.ChunkReader(directory, layer)
        return readers[layer].value(rank)

    mismatches = 0
    examples: list[tuple[list[int], int]] = []
    try:
        for rank in ranks:
            board = index.unrank(seeds, int(rank))
            moves = index.expand(board)
            if moves.legal == 0:
                expected = int(moves.terminal)
            else:
                expected = max(int(moves.captured[house]) - stored(seeds - int(moves.captured[house]),
                                                                    int(moves.child_ranks[house]))
                               for house in range(ROW) if moves.legal >> house & 1)
            value = stored(seeds, int(rank))
            if value != expected:
                mismatches += 1
                if len(examples) < limit:
                    examples.append((board.tolist(), value))
    finally:
        for reader in readers.values():
            reader.close()
    return mismatches, examples


def verify(directory: str, seeds: int, store: LayerStore | None = None, limit: int = 10,
           memory: int | None = None) -> tuple[int, list]:
    """Re-check every position of layer `seeds` against its moves.

    d(s) must be the best over moves of captured - d(child) (children in the
    smaller tables) or -d(child) (children in this layer), or the terminal
    value. Needs layer `seeds` in memory and its smaller layers n-15..n-2,
    all at once when the budget (`memory`, default: as build's) holds them,
    else a group at a time: one pass over the layer per group, two bits a
    position kept between passes (verify_layer.check_moves).
    Returns (mismatch count, up to `limit` mismatching boards with stored value).
    """
    budget = int(memory or default_budget())
    groups = verify_groups(seeds, budget)
    needed = set(layer_state.exit_layers(seeds)) | {seeds}
    if store is not None:
        for m in store.layers():
            if m not in needed:
                store.drop(m)
    store = store if store is not None and store.max_seeds >= seeds else LayerStore(seeds)
    held = verify_bytes(seeds) - index.layer_size(seeds)  # the bits
    _make_room(store, {seeds}, 0 if store.loaded[seeds] else index.layer_size(seeds), budget, held)
    load_layers(directory, [seeds], store)
    size = index.layer_size(seeds)
    attained = np.zeros((size + 7) // 8, dtype=np.uint8)
    beaten = np.zeros((size + 7) // 8, dtype=np.uint8)
    rows = index.RowTables(seeds).arrays
    groups.sort(key=lambda g: -sum(1 for m in g if store.loaded[m]))  # resident layers first
    for number, group in enumerate(groups):
        _make_room(store, set(group) | {seeds}, sum(index.layer_size(m) for m in group if not store.loaded[m]), budget,
                   held)
        load_layers(directory, group, store)
        use = np.zeros(seeds + 1, dtype=np.bool_)
        use[group] = True
        verify_layer.check_moves(seeds, store.layer(seeds), store.flat, store.starts, rows, use, number == 0, attained,
                                 beaten)
    count, ranks = verify_layer.mismatches(attained, beaten, size, limit)
    values = store.layer(seeds)
    examples = [(index.unrank(seeds, int(r)).tolist(), int(values[r])) for r in ranks]
    return int(count), examples
