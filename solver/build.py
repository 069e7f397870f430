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

from . import distributed, index, retrograde, tables
from .errors import BuildError, CorruptTableError, TableMismatchError, TableWriteError
from .layers import LayerStore, available_memory
from .rules import ROW

BASE_BYTES = 512 << 20  # the process itself: interpreter, numba, HDF5, row tables
MEMORY_MARGIN = 1 << 30  # left to the system when the budget is not given
DEFAULT_RATE = 4.0e6  # positions/s a layer is built at on 2 cores when no build has been measured
DEFAULT_FILE_BYTES = 0.45  # bytes a position on disk when no file has been measured
DEFAULT_BANDWIDTH = 1.25e9  # bytes a second a process can exchange: 10 Gb/s Ethernet, one process a node
# Measured on layer 24 with `python benchmarks/build.py --processes 2 --max-seeds 24` (docs/CLUSTER.md):
DEFAULT_EXCHANGE = 54.0  # bytes exchanged a position as processes grow many: 26.8 at P = 2, times P / (P - 1)
DEFAULT_OVERHEAD = 1.15  # distributed / single-process seconds on the same cores (2 x 1 thread against 1 x 2)
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
    """Memory of the layer in work: 1.5 bytes a position (tables.working_bytes)."""
    return tables.working_bytes(seeds)


def least_bytes(seeds):
    """The smallest budget that builds layer `seeds`: the process, the working
    state and the largest smaller layer (tables.build_memory_bytes, which the
    missing-table advice quotes)."""
    return BASE_BYTES + tables.build_memory_bytes(seeds)


def process_bytes(seeds, processes, threads=1, outbox=None, batch=None):
    """Memory of one of `processes` processes building layer `seeds`
    (solver.distributed): the process, its slice of the working state, its
    slices of layers n-15..n-1 (the smaller layers are partitioned, and the
    one just below is kept for the next layer) and its exchange buffers."""
    outbox = distributed.OUTBOX if outbox is None else outbox
    batch = distributed.EXIT_BATCH if batch is None else batch
    share = lambda size: -(-size // processes)  # noqa: E731
    smaller = sum(share(index.layer_size(m)) for m in range(max(0, seeds - retrograde.MAX_CAPTURE), seeds))
    buffers = 0
    if processes > 1:
        # Outboxes, their concatenation and grouping, and what arrives (as much again).
        buffers = 4 * 8 * threads * (outbox + retrograde.BATCH + retrograde.MAX_PREDECESSORS)
    buffers += batch * ROW * (8 + 1) * 3  # exit requests: keys and gains, asked, answered
    return BASE_BYTES + share(working_bytes(seeds)) + smaller + buffers


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


def measured_exchange(directory):
    """(bytes exchanged a position as the processes grow many, overhead of the
    distributed build on the same cores, what they rest on): from the largest
    layer in `directory` built by several processes, else the defaults."""
    for seeds in reversed(tables.built_layers(directory)):
        info = tables.table_info(directory, seeds)
        if info["status"] != "ok":
            continue
        with tables.open_table(directory, seeds) as handle:
            processes = int(handle.attrs.get("processes", 1))
            exchanged = handle.attrs.get("bytes_exchanged")
        if processes > 1 and exchanged is not None:
            # X_P = c (P - 1) / P: a random predecessor or capture is elsewhere with odds (P - 1) / P.
            per_position = float(exchanged) / info["positions"] * processes / (processes - 1)
            return per_position, DEFAULT_OVERHEAD, f"layer {seeds} in {directory} ({processes} processes)"
    return DEFAULT_EXCHANGE, DEFAULT_OVERHEAD, "default"


def cluster_plan(max_seeds: int, processes: int, memory_per_process: int, directory: str | None = None,
                 threads: int = 1, bandwidth: float = DEFAULT_BANDWIDTH) -> dict:
    """The distributed build of layers 0..max_seeds on `processes` processes
    with `memory_per_process` bytes each, as a model (see docs/CLUSTER.md):
    per layer, the memory of each process, whether it fits, the bytes
    exchanged, the file size and the wall time; the smallest number of such
    processes that builds the largest layer; and what the figures rest on.

    Time of a layer: positions x overhead / (rate x processes), the rate
    being one machine's like this one's (measured_rates) and the overhead the
    distributed build's on the same cores, plus its exchange at `bandwidth`
    bytes a second a process. Bytes exchanged: c (P - 1) / P a position.
    """
    directory = directory or tables.default_directory()
    rate, file_bytes, source = measured_rates(directory)
    exchange, overhead, exchange_source = measured_exchange(directory)
    rows = []
    for seeds in range(max_seeds + 1):
        size = index.layer_size(seeds)
        need = process_bytes(seeds, processes, threads)
        exchanged = size * exchange * (processes - 1) / processes
        compute = size * (overhead if processes > 1 else 1.0) / (rate * processes)
        rows.append({
            "seeds": seeds,
            "positions": size,
            "process_bytes": need,
            "fits": need <= memory_per_process,
            "bytes_exchanged": int(exchanged),
            "file_bytes": int(size * file_bytes),
            "seconds": compute + exchanged / processes / bandwidth,
        })
    return {
        "processes": processes,
        "memory_per_process_bytes": memory_per_process,
        "threads_per_process": threads,
        "bandwidth_bytes_per_second": bandwidth,
        "rate": rate,
        "rate_measured_on": source,
        "exchange_bytes_per_position": exchange,
        "overhead": overhead,
        "exchange_measured_on": exchange_source,
        "file_bytes_per_position": file_bytes,
        "smallest_cluster": {str(seeds): least_processes(seeds, memory_per_process, threads)
                             for seeds in sorted({max_seeds, index.MAX_SEEDS})},
        "layers": rows,
    }


def least_processes(seeds, memory_per_process, threads=1):
    """The fewest processes of `memory_per_process` bytes that build layer `seeds` (None if none can)."""
    if process_bytes(seeds, 1 << 30, threads) > memory_per_process:
        return None
    low, high = 1, 1 << 30
    while low < high:
        middle = (low + high) // 2
        if process_bytes(seeds, middle, threads) <= memory_per_process:
            high = middle
        else:
            low = middle + 1
    return low


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
    and for a built layer exit_passes, exit/load/stage/write seconds and the
    scattered accesses the kernels counted (exit_lookups, predecessors_told,
    stage_accesses).
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
                                                      "load_seconds", "write_seconds", "exit_lookups",
                                                      "predecessors_told", "stage_accesses")})
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


def process_memory_message(seeds, processes, budget, threads=1):
    """One line: what each process needs for layer `seeds` against its budget."""
    need = process_bytes(seeds, processes, threads)
    allowed = max((n for n in range(index.MAX_SEEDS + 1) if process_bytes(n, processes, threads) <= budget),
                  default=-1)
    reach = f"builds layers up to {allowed}" if allowed >= 0 else "builds no layer"
    return (f"layer {seeds} needs {need / 2**30:.1f} GiB in each of {processes} processes; the budget of "
            f"{budget / 2**30:.1f} GiB a process {reach} (use more processes, or more memory each)")


class CollectiveError(BuildError):
    """An error every process of a distributed build raises alike (process 0 reports it)."""


def build_distributed(max_seeds: int, directory: str | None = None, exchange=None, threads: int | None = None,
                      memory: int | None = None, checkpoint_dir: str | None = None, checkpoint_interval: float = 0.0,
                      report: Callable[[dict], None] | None = None, progress: Callable | None = None,
                      outbox: int | None = None, batch: int | None = None) -> None:
    """build() on the processes of `exchange` (solver.distributed; every one
    calls this): each holds its slice of each layer, process 0 writes the
    files, which are the same as build()'s. `memory` is the budget of one
    process; a layer whose slices do not fit raises before any work on it.
    With `checkpoint_dir`, the working state is saved at stage boundaries
    (at most every `checkpoint_interval` seconds) and a rerun with as many
    processes resumes a layer there. report(row), on process 0 only, adds
    to build()'s fields the processes, bytes exchanged and seconds spent
    communicating.
    """
    exchange = exchange or distributed.world()
    processes, rank = exchange.size, exchange.rank
    directory = directory or tables.default_directory()
    budget = int(memory or default_budget() // exchange.processes_per_node())
    threads = threads or max(1, (os.cpu_count() or 1) // exchange.processes_per_node())
    outbox = distributed.OUTBOX if outbox is None else outbox
    batch = distributed.EXIT_BATCH if batch is None else batch
    lock = BuildLock(directory)
    decision = None
    try:
        if rank == 0:
            try:
                prepare_directory(directory)
                lock.__enter__()
                tables.remove_stale_temporaries(directory)
                missing = [n for n in range(max_seeds + 1) if not _existing_layer_ok(directory, n)]
                too_big = [n for n in missing if process_bytes(n, processes, threads, outbox, batch) > budget]
                if too_big:
                    raise BuildError(process_memory_message(too_big[0], processes, budget, threads))
                decision = {"missing": missing}
            except (BuildError, TableWriteError, CorruptTableError, TableMismatchError) as error:
                decision = {"error": str(error)}
        decision = exchange.broadcast(decision)
        if "error" in decision:
            raise CollectiveError(decision["error"])
        missing = decision["missing"]
        with retrograde.thread_count(threads):
            slices = distributed.Slices(exchange, distributed.all_bounds(max_seeds, processes))
            checkpoints = distributed.Checkpoints(checkpoint_dir, exchange, checkpoint_interval)
            rows = index.RowTables(max_seeds).arrays
            for seeds in range(max_seeds + 1):
                started = time.perf_counter()
                sent, talking = exchange.bytes_sent, exchange.seconds
                row = {"seeds": seeds, "positions": index.layer_size(seeds), "built": seeds in missing,
                       "processes": processes, "threads": threads}
                if seeds in missing:
                    wanted = retrograde.exit_layers(seeds)
                    slices.keep_only(set(wanted) | {seeds - 1})
                    for m in wanted:
                        if m not in slices.values:
                            slices.load(directory, m)
                    solver = distributed.SliceSolver(seeds, exchange, slices, rows, outbox, batch)
                    step = progress and rank == 0 and (lambda step, fraction, n=seeds: progress(n, step, fraction))
                    stats = solver.solve(checkpoints, step or None)
                    counts = exchange.sum(tables.histogram(solver.values, seeds))
                    peak = exchange.maximum(peak_memory_bytes())
                    layer_bytes = exchange.sum(exchange.bytes_sent - sent)
                    exit_bytes = exchange.sum(stats["exit_bytes"])
                    layer_talk = exchange.sum(int(1e6 * (exchange.seconds - talking))) / 1e6 / processes
                    written = time.perf_counter()
                    build_seconds = written - started
                    if rank == 0:
                        source = distributed.GatheredLayer(exchange, solver.values, solver.bounds, seeds)
                        tables.write_table(directory, seeds, source, build_seconds=build_seconds, counts=counts,
                                           extra={"threads": threads, "processes": processes, "peak_bytes": peak,
                                                  "exit_passes": 1, "bytes_exchanged": layer_bytes,
                                                  "communication_seconds": layer_talk})
                    else:
                        distributed.send_layer(exchange, solver.values, solver.bounds, seeds)
                    checkpoints.clear(seeds)
                    slices.values[seeds] = solver.values
                    row.update(exit_seconds=stats["exit_seconds"], stage_seconds=stats["stage_seconds"],
                               write_seconds=time.perf_counter() - written, exit_passes=1,
                               resumed_at_stage=stats["resumed_at_stage"], exit_bytes_exchanged=exit_bytes,
                               working_bytes=-(-working_bytes(seeds) // processes))
                seconds = time.perf_counter() - started
                shared = exchange.gather((exchange.bytes_sent - sent, exchange.seconds - talking, peak_memory_bytes()))
                if rank == 0:
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
