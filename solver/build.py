"""The build driver: which layers are built, in what memory, and checked.

Layers are built in order 0..N. Layer n is solved in its slot of a
LayerStore (solver.layers) by solver.retrograde, at 1.5 bytes a position;
its exits need the smaller layers n-15..n-2, which are read from their
files (every chunk's CRC checked) a group at a time when they do not all fit
in the memory budget beside the layer: one exit pass over layer n per group.
Layers stay in memory from one layer to the next while the budget holds
them, so a build that fits reads nothing back.

One build at a time per folder: a lock file (``.awele-build.lock``) held
with flock for the build's life. A layer whose file exists and checks out is
reused, so a killed build resumes at the first layer it had not written.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import resource
import time
from collections.abc import Callable

import numba

from . import index, retrograde, tables
from .errors import BuildError, CorruptTableError, TableMismatchError, TableWriteError
from .layers import LayerStore, available_memory

BASE_BYTES = 512 << 20  # the process itself: interpreter, numba, HDF5, row tables
MEMORY_MARGIN = 1 << 30  # left to the system when the budget is not given
DEFAULT_RATE = 4.0e6  # positions/s a layer is built at on 2 cores when no build has been measured
DEFAULT_FILE_BYTES = 0.45  # bytes a position on disk when no file has been measured
LOCK_NAME = ".awele-build.lock"
PLAN_LIMIT = index.MAX_SEEDS


# Memory ----------------------------------------------------------------------------


def parse_memory(text: str) -> int:
    """Bytes of a size such as '20G', '20GiB', '512M', '1.5T' or a plain number of bytes.

    >>> parse_memory("20G") == 20 * 2**30, parse_memory("512MiB") == 512 * 2**20
    (True, True)
    """
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", str(text), re.IGNORECASE)
    if not match or len(match.group(1)) > 20:
        raise ValueError(f"a memory size is a number with an optional K, M, G or T suffix, not {text!r}")
    scale = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}[match.group(2).lower()]
    value = int(float(match.group(1)) * scale)
    if value <= 0:
        raise ValueError(f"a memory size must be positive, not {text!r}")
    return value


def default_budget():
    """The machine's available memory less a margin."""
    return max(BASE_BYTES, available_memory() - MEMORY_MARGIN)


def working_bytes(seeds):
    """Memory of the layer in work: 1.5 bytes a position (see solver.retrograde)."""
    size = index.layer_size(seeds)
    return size + (size + 1) // 2 + 2 * ((size + retrograde.BLOCK - 1) // retrograde.BLOCK)


def least_bytes(seeds):
    """The smallest budget that builds layer `seeds`: the process, the working
    state and the largest smaller layer (one exit pass per smaller layer)."""
    largest = max((index.layer_size(m) for m in retrograde.exit_layers(seeds)), default=0)
    return BASE_BYTES + working_bytes(seeds) + largest


def largest_layer(budget):
    """The largest layer a budget can build (-1 if none)."""
    best = -1
    for seeds in range(index.MAX_SEEDS + 1):
        if least_bytes(seeds) <= budget:
            best = seeds
    return best


def exit_groups(seeds, budget):
    """The smaller layers of layer `seeds` grouped so that each group fits in
    the budget beside the working state (first fit, largest first); one exit
    pass per group. Raises BuildError when the budget cannot hold the layer."""
    room = budget - BASE_BYTES - working_bytes(seeds)
    layers = sorted(retrograde.exit_layers(seeds), key=index.layer_size, reverse=True)
    if least_bytes(seeds) > budget:
        raise BuildError(memory_message(seeds, budget))
    groups = []
    for layer in layers:
        size = index.layer_size(layer)
        for group in groups:
            if group[0] + size <= room:
                group[0] += size
                group[1].append(layer)
                break
        else:
            groups.append([size, [layer]])
    return [sorted(group) for _, group in groups] or [[]]


def memory_message(seeds, budget):
    """One line: what layer `seeds` needs and the largest layer the budget allows."""
    allowed = largest_layer(budget)
    return (
        f"layer {seeds} needs at least {least_bytes(seeds) / 2**30:.1f} GiB "
        f"({working_bytes(seeds) / 2**30:.1f} GiB working state, the largest smaller layer and the process); "
        f"the memory budget of {budget / 2**30:.1f} GiB builds layers up to {allowed}"
    )


def peak_memory_bytes():
    """Peak resident memory of this process so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# Plan ------------------------------------------------------------------------------


def measured_rates(directory):
    """(positions a second, bytes a position on disk) of the largest layer built
    in `directory` with a recorded build time, or the defaults."""
    rate, file_bytes, source = DEFAULT_RATE, DEFAULT_FILE_BYTES, "default"
    for seeds in reversed(tables.built_layers(directory)):
        info = tables.table_info(directory, seeds)
        if info["status"] == "ok" and info.get("build_seconds", 0) > 1.0:
            rate = info["positions"] / info["build_seconds"]
            file_bytes = info["bytes_per_position"]
            source = f"layer {seeds} in {directory}"
            break
    return rate, file_bytes, source


def plan(max_seeds: int, budget: int | None = None, directory: str | None = None) -> dict:
    """Per layer 0..max_seeds: positions, working and peak memory, exit passes,
    file size and build time estimates under `budget` (dicts), and what the
    estimates rest on."""
    budget = budget or default_budget()
    directory = directory or tables.default_directory()
    rate, file_bytes, source = measured_rates(directory)
    rows = []
    for seeds in range(max_seeds + 1):
        size = index.layer_size(seeds)
        lower = sum(index.layer_size(m) for m in retrograde.exit_layers(seeds))
        row = {
            "seeds": seeds,
            "positions": size,
            "working_bytes": working_bytes(seeds),
            "smaller_layer_bytes": lower,
            "least_bytes": least_bytes(seeds),
            "file_bytes": int(size * file_bytes),
            "seconds": size / rate,
            "fits": least_bytes(seeds) <= budget,
        }
        if row["fits"]:
            groups = exit_groups(seeds, budget)
            row["exit_passes"] = len(groups)
            row["peak_bytes"] = BASE_BYTES + working_bytes(seeds) + max(
                sum(index.layer_size(m) for m in g) for g in groups
            )
        rows.append(row)
    return {"budget_bytes": budget, "rate": rate, "file_bytes_per_position": file_bytes, "measured_on": source,
            "largest_layer": largest_layer(budget), "layers": rows}


# Lock ------------------------------------------------------------------------------


class BuildLock:
    """The folder's build lock: flock on .awele-build.lock, released on exit."""

    def __init__(self, directory):
        self.path = os.path.join(directory, LOCK_NAME)
        self.descriptor = None

    def __enter__(self):
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
            raise BuildError(f"another awele build is running in {os.path.dirname(self.path) or '.'}{who}; "
                             "wait for it to finish or build in another --dir") from None
        os.ftruncate(self.descriptor, 0)
        os.pwrite(self.descriptor, f"{os.getpid()}\n".encode(), 0)
        return self

    def __exit__(self, *exc):
        if self.descriptor is not None:
            os.ftruncate(self.descriptor, 0)
            os.close(self.descriptor)  # closing releases the flock
            self.descriptor = None


def prepare_directory(directory):
    """Create the tables folder if needed; one clear error if it cannot be used."""
    if os.path.lexists(directory) and not os.path.isdir(directory):
        raise TableWriteError(f"{directory} exists and is not a folder")
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as error:
        raise TableWriteError(f"cannot create the tables folder {directory}: {error.strerror}") from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise TableWriteError(f"the tables folder {directory} is not writable")


# Build -----------------------------------------------------------------------------


def _existing_layer_ok(directory, seeds):
    """Whether layer `seeds` has a valid file (header and checksums); raises
    for a damaged or mismatched one, naming it."""
    path = tables.table_path(directory, seeds)
    if not os.path.lexists(path):
        return False
    try:
        with tables.open_table(directory, seeds) as handle:
            tables.chunk_checksums(handle, path)
    except (CorruptTableError, TableMismatchError) as error:
        raise type(error)(f"{error}; delete that file and build again to rebuild it") from None
    return True


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


def build_layer(seeds, directory, store, budget, rows, progress=None):
    """Solve layer `seeds` in `store` within `budget` and write its file; return stats."""
    working = working_bytes(seeds)
    wanted = set(retrograde.exit_layers(seeds))
    # Layers no longer needed by this layer or the next go first; the one just
    # below stays if it fits (the next layer needs it).
    for m in store.layers():
        if m not in wanted and m != seeds - 1:
            store.drop(m)
    groups = exit_groups(seeds, budget)
    solver = retrograde.LayerSolver(seeds, store, rows)
    load_seconds = 0.0
    # Resident layers first: a pass over them costs no reading.
    groups.sort(key=lambda g: -sum(1 for m in g if store.loaded[m]))
    for group in groups:
        need = sum(index.layer_size(m) for m in group if not store.loaded[m])
        _make_room(store, set(group), need, budget, working)
        started = time.perf_counter()
        for m in group:
            if not store.loaded[m]:
                _load(directory, store, m)
        load_seconds += time.perf_counter() - started
        solver.exits(group)
    stats = solver.solve(progress)
    started = time.perf_counter()
    tables.write_table(
        directory,
        seeds,
        store.layer(seeds),
        build_seconds=stats["seconds"],
        extra={"threads": numba.get_num_threads(), "peak_bytes": peak_memory_bytes(),
               "exit_passes": stats["exit_passes"]},
    )
    stats["write_seconds"] = time.perf_counter() - started
    stats["load_seconds"] = load_seconds
    return stats


def build(max_seeds: int, directory: str | None = None, threads: int | None = None, memory: int | None = None,
          report: Callable[[dict], None] | None = None, progress: Callable | None = None,
          store: LayerStore | None = None) -> LayerStore:
    """Build every missing layer 0..max_seeds in order; reuse the valid ones.

    `memory` is the budget in bytes (default: available memory less a
    margin); a layer that cannot fit raises BuildError before any work on it
    starts, and before any layer is built if that layer is known up front.
    A corrupt or mismatched file raises, naming it: delete it to rebuild.

    report(dict) is called after each layer with: seeds, positions, seconds,
    positions_per_second, peak_bytes, built (False when the file was there),
    and for a built layer exit_passes, exit/load/stage/write seconds.
    progress(seeds, step, fraction) follows the stages of a layer. Returns
    the LayerStore (holding whatever layers were last resident).
    """
    directory = directory or tables.default_directory()
    budget = int(memory or default_budget())
    prepare_directory(directory)
    with BuildLock(directory):
        tables.remove_stale_temporaries(directory)
        missing = [n for n in range(max_seeds + 1) if not _existing_layer_ok(directory, n)]
        too_big = [n for n in missing if least_bytes(n) > budget]
        if too_big:
            raise BuildError(memory_message(too_big[0], budget))
        store = store if store is not None and store.max_seeds >= max_seeds else LayerStore(max_seeds)
        rows = index.RowTables(max_seeds).arrays
        with retrograde.thread_count(threads):
            for seeds in range(max_seeds + 1):
                started = time.perf_counter()
                row = {"seeds": seeds, "positions": index.layer_size(seeds), "built": seeds in missing}
                if seeds in missing:
                    step = progress and (lambda step, fraction, n=seeds: progress(n, step, fraction))
                    stats = build_layer(seeds, directory, store, budget, rows, progress=step)
                    row.update({k: stats[k] for k in ("exit_passes", "exit_seconds", "stage_seconds",
                                                      "load_seconds", "write_seconds")})
                    row["working_bytes"] = stats["working_bytes"]
                seconds = time.perf_counter() - started
                row.update(
                    seconds=seconds,
                    positions_per_second=row["positions"] / seconds if seconds > 0 else None,
                    peak_bytes=peak_memory_bytes(),
                )
                if report:
                    report(row)
    return store


def load_layers(directory, layers, store=None):
    """A LayerStore holding `layers` read from `directory` (checked)."""
    layers = sorted(set(layers))
    store = store if store is not None and store.max_seeds >= max(layers, default=0) else LayerStore(
        max(layers, default=0))
    for seeds in layers:
        if not store.loaded[seeds]:
            _load(directory, store, seeds)
    return store


def verify(directory: str, seeds: int, store: LayerStore | None = None, limit: int = 10) -> tuple[int, list]:
    """Re-check every position of layer `seeds` against its moves.

    d(s) must be the best over moves of captured - d(child) (children in the
    smaller tables) or -d(child) (children in this layer), or the terminal
    value. Needs layer `seeds` and its smaller layers n-15..n-2 in memory.
    Returns (mismatch count, up to `limit` mismatching boards with stored value).
    """
    needed = retrograde.exit_layers(seeds) + [seeds]
    if store is not None:
        for m in store.layers():
            if m not in needed:
                store.drop(m)
    store = load_layers(directory, needed, store)
    values = store.layer(seeds)
    rows = index.RowTables(seeds).arrays
    count, ranks = retrograde.bellman_mismatches(seeds, values, store.flat, store.starts, rows, limit)
    examples = [(index.unrank(seeds, int(r)).tolist(), int(values[r])) for r in ranks]
    return int(count), examples
