"""The build's memory model and plans: what a layer needs, how its exits are
grouped into passes, and what a build of layers 0..N takes on one machine or
many.

Every figure about a build's memory is made here from one model: the
working state of the layer solved (solver.retrograde keeps it:
layer_state.working_bytes), the smaller layers its exits read (all at once,
or a group at a time when the budget is short: exit_groups), and the
process itself (BASE_BYTES). The build driver (solver.build) budgets by it,
`awele plan` prints it, and a missing table's advice quotes it. Rates and
file sizes come from the tables already built in a folder when there are
some (measured_rates, measured_exchange), else from the defaults below,
measured on this project's machine (docs/CLUSTER.md).
"""

from __future__ import annotations

import itertools
import math
import os
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from . import (
    distance,
    distributed,
    distributed_lean,
    index,
    layer_state,
    lean,
    lean_distance,
    lean_exits,
    tables,
    verify_layer,
)
from .errors import BuildError
from .layers import BASE_BYTES, available_memory, first_fit
from .rules import ROW

MEMORY_MARGIN = 1 << 30  # left to the system when the budget is not given
DEFAULT_RATE = 6.0e6  # positions/s a layer is built at on 2 cores when none was measured (33, 34 here: 6.4, 6.2 M)
DEFAULT_FILE_BYTES = 0.45  # bytes a position on disk when no file has been measured
DEFAULT_BANDWIDTH = 1.25e9  # bytes a second a process can exchange: 10 Gb/s Ethernet, one process a node
# Measured on layer 24 with `python benchmarks/build.py --processes 2 --max-seeds 24` (docs/CLUSTER.md):
DEFAULT_EXCHANGE = 54.0  # bytes exchanged a position as processes grow many: 26.8 at P = 2, times P / (P - 1),
# with slices in the file's order; in the distance order 2 processes exchange 3.4-4.4 (layers 13..18), but many thin
# slices approach the file order's crossing (docs/CLUSTER.md), so this stays the upper bound
DEFAULT_OVERHEAD = 1.22  # distributed / single-process seconds on the same cores (2 x 1 thread against 1 x 2), 0..24
# The disk mode (solver.disk, docs/DISK.md):
SLICE_UNIT = 5376  # a slice of a layer starts at a multiple of this: lcm(LINE_RANKS, BLOCK), whole lines and blocks
MAX_SLICES = 16  # the most slices a layer's exits are cut into
DISK_BANDWIDTH = 1.7e9  # bytes a second the scratch disk reads or writes sequentially (dd, direct I/O, here)
EXIT_SCAN_SECONDS = 3.0e-8  # seconds a position an exit pass over one more group adds, 2 cores (layer 20, DISK.md)
MAX_SLICED = 256  # the most slices of a layer whose stages run a slice at a time
STAGE_BUFFER_BYTES = 48 << 20  # sliced stages: outboxes, the updates read a chunk at a time, block flags
# The lean stages (solver.lean, docs/DISK.md):
LEAN_BASE_BYTES = 240 << 20  # the process in the lean stages (numba, its threads, the writer) beside its row tables
# (lean_base_bytes): a build to 8 seeds peaks at 188 MB once its kernels are cached, and BASE_BYTES (512 MiB) would
# refuse a 500 MiB budget
LEAN_QUEUE_BYTES = 0.6  # bytes a position the lean stages' queue file may reach, planned high: its peak was 0.40 to
# 0.49 on layers 13..22 and 0.41 on layer 24 (docs/PERFORMANCE.md "Lean stages"), more only on layers of under a million
# positions (0.75 on layer 8), which QUEUE_FLOOR covers
QUEUE_FLOOR = 64 << 20  # bytes the queue is planned at, at least
JOURNAL_ROOM = 1 << 20  # the lean stages' journal and its temporary copy
LEAN_SLOWDOWN = 1.4  # lean over in-memory seconds on the same layer, 2 threads (layer 24 quiet, alternated: 1.42 and
# 1.26, docs/PERFORMANCE.md "Lean stages"; 2.2 before their passes and telling used both threads)
LEAN_SLICE_SLOWDOWN = 2.2  # the same for the MPI build's lean slices, whose stages run one thread a process (layer
# 24 under 500M in one process, alternated: 2.21 and 2.18, before the lean passes and telling took every thread)
# The streamed exits (solver.lean_exits, docs/DISK.md "Streamed exits"), measured:
LOOKUPS_A_POSITION = 0.8  # requests a position (captures into smaller layers), planned high: 0.44-0.71 sampled on
# layers 14..48 (benchmarks/captures.py: 0.71 at 34, 0.69 at 48), 0.63 over the whole of layer 22 (docs/PERFORMANCE.md)
STREAMED_EXIT_SECONDS = 2.7e-8  # seconds a position the streamed exits add to the resident ones and their loading (one
# slice; layer 22, alternated, 2 threads under a load of 7-8: 23.4 s against 14.8 + 3.8, docs/PERFORMANCE.md)
TABLE_READ_SECONDS = 1.8e-8  # seconds a position of a smaller layer read again for each slice past the first (its
# chunks read, checked and inflated: layer 22's 216 million in 3.8 s, the same runs)
MAX_BATCH = 1 << 26  # ranks the streamed exits ask at a time at most (10 GB of requests: fewer appends a bucket)
# Sliced stages, measured on layer 16 in 2 and 4 slices (docs/DISK.md): a chain of won and lost positions
# crosses between slices at nearly every ply, so a stage visits each slice about 20 times.
VISITS_A_STAGE = 20.0  # visits of each slice a stage, each a read and a write of it
UPDATES_BYTES = 20  # bytes a position of updates between slices over the stages (2.4 updates of 8 bytes)
PENDING_BYTES = 1  # bytes a position of updates waiting in files at once, planned high (layers 21, 22: < 0.05)
SLICED_SLOWDOWN = 2.0  # sweeps in place of the depth-first pass (as the distributed build)
VISIT_SECONDS = 0.37  # what a visit costs beside its traffic and work (its CRCs, syncs, start-up): layer 21 in
# 4 slices, 1 thread, took 797 s where the rest of the model gives 145 (1,754 visits; layer 16: 0.06 s a visit)


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


def default_budget() -> int:
    """The machine's available memory less a margin."""
    return max(BASE_BYTES, available_memory() - MEMORY_MARGIN)


def working_bytes(seeds: int) -> int:
    """Memory of layer `seeds` while it is built: its value bytes, a nibble of
    counts a position and two flag bytes a block (the state solver.retrograde
    keeps, layer_state.working_bytes)."""
    return layer_state.working_bytes(index.layer_size(seeds))


def least_bytes(seeds: int) -> int:
    """The smallest budget that builds layer `seeds`: the process, the working
    state and the largest smaller layer (build_memory_bytes, which the
    missing-table advice quotes)."""
    return BASE_BYTES + build_memory_bytes(seeds)


def process_bytes(seeds: int, processes: int, threads: int = 1, outbox: int | None = None,
                  batch: int | None = None) -> int:
    """Memory of one of `processes` processes building layer `seeds`
    (solver.distributed): the process, its slice of the working state, its
    slices of layers n-15..n-1 (the smaller layers are partitioned, and the
    one just below is kept for the next layer) and its exchange buffers."""
    share = lambda size: -(-size // processes)  # noqa: E731
    smaller = sum(share(index.layer_size(m)) for m in range(max(0, seeds - layer_state.MAX_CAPTURE), seeds))
    return BASE_BYTES + share(working_bytes(seeds)) + smaller + exchange_buffer_bytes(processes, threads, outbox, batch)


def exchange_buffer_bytes(processes: int, threads: int = 1, outbox: int | None = None, batch: int | None = None) -> int:
    """The exchange buffers of one of `processes` processes (process_bytes)."""
    outbox = distributed.OUTBOX if outbox is None else outbox
    batch = distributed.EXIT_BATCH if batch is None else batch
    buffers = 0
    if processes > 1:
        # Outboxes, their concatenation and grouping, and what arrives (as much again).
        buffers = 4 * 8 * threads * (outbox + layer_state.BATCH + layer_state.MAX_PREDECESSORS)
    # Exit requests: keys, gains and owners; routed keys and slots; those received; answers both ways.
    return buffers + batch * ROW * ((8 + 1 + 8) + 2 * 8 + 8 + 2)


EXACT_SHARES = 4096  # processes up to which slice_share cuts the slices to find the largest


def slice_share(seeds: int, processes: int) -> int:
    """The largest slice of layer `seeds` among `processes` processes
    (distributed.slice_bounds); past EXACT_SHARES processes, a bound (a cut
    moves at most BAND_SNAP of a slice to a band's edge, then to a block)."""
    if processes == 1:
        return index.layer_size(seeds)
    if processes > EXACT_SHARES:
        return int(-(-index.layer_size(seeds) // processes) * (1 + 2 * distributed.BAND_SNAP)) + layer_state.BLOCK
    return int(np.diff(distributed.slice_bounds(index.layer_size(seeds), processes, seeds)).max())


def lean_slice_layout(seeds: int, processes: int, budget: int, outbox: int | None = None,
                      batch: int | None = None) -> dict | None:
    """The lean slices' plan of layer `seeds` on `processes` processes of
    `budget` bytes each (solver.distributed_lean), or None when they cannot
    build it: each process holds half a byte a position of its slice (the
    codes) throughout; beside them, the stages hold their buffers
    (distributed_lean.buffer_bytes) and the exits a group of the smaller
    layers' slices (first fit, largest first) and their exchange buffers.
    Returns groups (the smaller layers by exit pass), memory_bytes (the peak
    of either phase), scratch_bytes (this process's state file and its
    queue, planned as the lean stages' is: LEAN_QUEUE_BYTES)."""
    outbox = distributed.OUTBOX if outbox is None else outbox
    batch = distributed.EXIT_BATCH if batch is None else batch
    share = slice_share(seeds, processes)
    codes = ((share + 1) // 2 + 7) // 8 * 8
    base = lean_base_bytes(seeds)
    stages = base + codes + distributed_lean.buffer_bytes(share, outbox)
    # The exits: their requests and answers (exchange_buffer_bytes without outboxes), a batch of values both ways.
    exits = base + codes + exchange_buffer_bytes(processes, 0, outbox, batch) + 3 * batch
    shares = {m: slice_share(m, processes) for m in layer_state.exit_layers(seeds)}
    room = budget - exits
    if stages > budget or max(shares.values(), default=0) > room:
        return None
    groups: list[list[int]] = []
    held: list[int] = []
    for m in sorted(shares, key=lambda m: -shares[m]):
        number = next((k for k, taken in enumerate(held) if taken + shares[m] <= room), len(groups))
        if number == len(groups):
            groups.append([])
            held.append(0)
        groups[number].append(m)
        held[number] += shares[m]
    return {"groups": [sorted(g) for g in groups] or [[]], "memory_bytes": max(stages, exits + max(held, default=0)),
            "scratch_bytes": lean_slice_scratch_bytes(seeds, processes)}


def lean_slice_scratch_bytes(seeds: int, processes: int) -> int:
    """The scratch a process's lean slice of layer `seeds` takes at most: its
    state file (a byte a position) and its queue, planned as the lean
    stages' is (LEAN_QUEUE_BYTES, at least QUEUE_FLOOR)."""
    share = slice_share(seeds, processes)
    return share + max((share + 1) // 2, int(share * LEAN_QUEUE_BYTES) + QUEUE_FLOOR)


def lean_process_bytes(seeds: int, processes: int, threads: int = 1) -> int:
    """The least memory of one of `processes` processes building layer
    `seeds` with lean slices (lean_slice_layout, one smaller layer an exit
    pass). `threads` does not change it: the lean stages run on one."""
    outbox, batch = distributed.OUTBOX, distributed.EXIT_BATCH
    share = slice_share(seeds, processes)
    codes = ((share + 1) // 2 + 7) // 8 * 8
    largest = max((slice_share(m, processes) for m in layer_state.exit_layers(seeds)), default=0)
    base = lean_base_bytes(seeds)
    return max(base + codes + distributed_lean.buffer_bytes(share, outbox),
               base + codes + exchange_buffer_bytes(processes, 0, outbox, batch) + 3 * batch + largest)


def lean_slice_seconds(seeds: int, processes: int, layout: dict | None, compute: float, exchanged: float,
                       bandwidth: float) -> float:
    """The lean slices' time for layer `seeds` (a model): the in-memory
    slices' compute times LEAN_SLICE_SLOWDOWN, each exit pass past the first
    (EXIT_SCAN_SECONDS a position of the slice: its requests made again),
    the smaller layers' slices read from their files (TABLE_READ_SECONDS),
    the state file read and written once a stage and an exit pass
    (DISK_BANDWIDTH), and the exchange as the in-memory slices'."""
    share = slice_share(seeds, processes)
    passes = len(layout["groups"]) if layout else 1
    smaller = sum(slice_share(m, processes) for m in layer_state.exit_layers(seeds))
    return (compute * LEAN_SLICE_SLOWDOWN + (passes - 1) * share * EXIT_SCAN_SECONDS + smaller * TABLE_READ_SECONDS
            + 2 * share * (seeds + 1 + passes) / DISK_BANDWIDTH + exchanged / processes / bandwidth)


def largest_layer(budget: int, disk: bool = True) -> int:
    """The largest layer a budget can build (-1 if none), in memory or, with
    `disk`, in either mode."""
    best = -1
    for seeds in range(index.MAX_SEEDS + 1):
        if least_bytes(seeds) <= budget or (disk and (disk_plan(seeds, budget) is not None
                                                      or lean_plan(seeds, budget) is not None)):
            best = seeds
    return best


def mode(seeds: int, budget: int) -> str:
    """How a build under `budget` makes layer `seeds`: "memory", "disk",
    "lean" or "too big". The lean stages come before the disk mode's stages
    in slices, which are many times slower (docs/DISK.md)."""
    if least_bytes(seeds) <= budget:
        return "memory"
    layout = disk_plan(seeds, budget)
    if layout is not None and not layout["sliced_stages"]:
        return "disk"
    if lean_plan(seeds, budget) is not None:
        return "lean"
    return "disk" if layout is not None else "too big"


def lean_base_bytes(seeds: int) -> int:
    """The process beside a lean layer of `seeds` seeds: LEAN_BASE_BYTES
    (measured where its row tables are a few KB) and the row tables every
    kernel unranks through (index.RowTables: C(seeds + 6, 6) words of each of
    two kinds and seeds + 2 starts of each, 8 bytes each, planned as if both
    kinds of words were that many: 98 MB for 37 seeds (79 MB held), 413 MB for
    48 (315 MB held)). Layer 37's exits, planned without them, peaked 33 MB
    above their plan."""
    return LEAN_BASE_BYTES + 16 * (math.comb(seeds + 6, 6) + seeds + 2)


def lean_least_bytes(seeds: int) -> int:
    """The least budget the lean stages build layer `seeds` in (lean_plan):
    their stages, or their exits, resident or streamed in the smallest
    slice and window, whichever of the two exits needs less."""
    largest = max((index.layer_size(m) for m in layer_state.exit_layers(seeds)), default=0)
    size = index.layer_size(seeds)
    resident = largest + lean.exit_buffer_bytes(size)
    least_slice = min(size, SLICE_UNIT)
    return lean_base_bytes(seeds) + max((size + 1) // 2 + lean.stage_buffer_bytes(size),
                                        min(resident, streamed_exit_bytes(least_slice, 1) if largest else resident))


def streamed_exit_bytes(slice_ranks: int, window: int, batch: int = lean_exits.BATCH) -> int:
    """Memory the streamed exits (solver.lean_exits) hold beside the process:
    a slice's values and count nibbles, a window of a smaller layer, a batch's
    requests and a piece of a bucket file."""
    return slice_ranks + (slice_ranks + 1) // 2 + window + lean_exits.batch_bytes(batch)


def request_bytes(ranks: int) -> int:
    """Bytes the requests of `ranks` positions take in the scratch folder, planned high (LOOKUPS_A_POSITION)."""
    return int(ranks * LOOKUPS_A_POSITION) * lean_exits.REQUEST_BYTES


def streamed_layout(seeds: int, budget: int, scratch_room: int | None = None) -> dict | None:
    """The streamed exits' slices and window for layer `seeds` under `budget`
    (and, with `scratch_room`, the bytes the scratch folder may take), or
    None when no slice fits: the window an eighth of what the budget leaves
    (at most lean_exits.MAX_WINDOW and the largest smaller layer), the
    slices the fewest whose 1.5 bytes a position fit beside it (at most
    lean_exits.MAX_SLICE ranks), and whose requests fit the scratch room
    beside the state and counts files, evened out. The batch of ranks asked
    at a time holds a sixteenth of the budget (at least lean_exits.BATCH
    ranks, at most MAX_BATCH): the bigger, the fewer appends to each bucket
    file."""
    size = index.layer_size(seeds)
    largest = max((index.layer_size(m) for m in layer_state.exit_layers(seeds)), default=0)
    base = lean_base_bytes(seeds)
    batch = max(lean_exits.BATCH, min(MAX_BATCH, (budget - base) // 16 // lean_exits.ASKED_BYTES
                                      // layer_state.BLOCK * layer_state.BLOCK))
    free = budget - base - lean_exits.batch_bytes(batch)
    window = max(1, min(lean_exits.MAX_WINDOW, largest, free // 8))
    room = (free - window) * 2 // 3
    if scratch_room is not None:
        room = min(room, int((scratch_room - size - (size + 1) // 2 - JOURNAL_ROOM)
                             / (LOOKUPS_A_POSITION * lean_exits.REQUEST_BYTES)))
    whole = -(-size // layer_state.BLOCK) * layer_state.BLOCK  # the layer in one slice, whole blocks
    step = min(room, lean_exits.MAX_SLICE, whole)
    step = whole if step >= whole else step // SLICE_UNIT * SLICE_UNIT
    if step <= 0:
        return None
    slices = -(-size // step)
    step = min(step, -(-size // slices // SLICE_UNIT) * SLICE_UNIT) if slices > 1 else step
    return {"slice": step, "window": window, "batch": batch, "slices": -(-size // step)}


def lean_plan(seeds: int, budget: int, streamed: bool = False, scratch_room: int | None = None) -> dict | None:
    """The lean stages' plan of layer `seeds` under `budget` (solver.lean), or
    None when they cannot build it: the stages hold half a byte a position
    and their buffers, the exits a slice beside a group of smaller layers,
    or, when the largest smaller layer does not fit beside a block (or with
    `streamed`), the exits streamed (solver.lean_exits: streamed_layout,
    within `scratch_room` when given). Returns groups (smaller layers by exit
    pass; one, streamed), streamed (None, or the slices and window),
    memory_bytes (the peak of either phase), scratch_bytes (the state file,
    rewritten in place, beside the counts file and a slice's requests in the
    exits and the queue in the stages, planned from measurement:
    LEAN_QUEUE_BYTES, LOOKUPS_A_POSITION), traffic_bytes (scratch read and
    written) and table_read_bytes (the smaller layers' values read by the
    exits: once a group, or once a slice)."""
    size = index.layer_size(seeds)
    base = lean_base_bytes(seeds)
    stages = base + (size + 1) // 2 + lean.stage_buffer_bytes(size)
    room = budget - base - lean.exit_buffer_bytes(size)
    largest = max((index.layer_size(m) for m in layer_state.exit_layers(seeds)), default=0)
    smaller = sum(index.layer_size(m) for m in layer_state.exit_layers(seeds))
    queue = max((size + 1) // 2, int(size * LEAN_QUEUE_BYTES) + QUEUE_FLOOR)
    stage_traffic = size * (1 + 2 * (seeds + 1))
    if stages > budget:
        return None
    if largest <= room and not streamed:
        groups = first_fit(layer_state.exit_layers(seeds), room)
        group_bytes = max(sum(index.layer_size(m) for m in g) for g in groups)
        return {"groups": groups, "streamed": None,
                "memory_bytes": max(stages, base + lean.exit_buffer_bytes(size) + group_bytes),
                "scratch_bytes": size + queue + JOURNAL_ROOM,
                "traffic_bytes": size * 2 * len(groups) + stage_traffic, "table_read_bytes": smaller}
    layout = streamed_layout(seeds, budget, scratch_room)
    if layout is None or not layer_state.exit_layers(seeds):
        return None
    asks = request_bytes(min(size, layout["slice"]))
    return {"groups": [layer_state.exit_layers(seeds)], "streamed": layout,
            "memory_bytes": max(stages, base + streamed_exit_bytes(layout["slice"], layout["window"],
                                                                                layout["batch"])),
            "scratch_bytes": size + max((size + 1) // 2 + asks, queue) + JOURNAL_ROOM,
            "traffic_bytes": size * 2 + 2 * request_bytes(size) + stage_traffic,
            "table_read_bytes": smaller * layout["slices"]}


def disk_bounds(size: int, parts: int) -> list[int]:
    """Where each of `parts` slices of a layer of `size` positions starts (and
    the end), cut at multiples of SLICE_UNIT."""
    return [size * part // parts // SLICE_UNIT * SLICE_UNIT for part in range(parts)] + [size]


def _slice_lines(bounds: list[int]) -> list[int]:
    return [(hi - lo + layer_state.LINE_RANKS - 1) // layer_state.LINE_RANKS for lo, hi in itertools.pairwise(bounds)]


def disk_plan(seeds: int, budget: int, parts: int | None = None, sliced_stages: bool = False) -> dict | None:
    """The disk mode's layout of layer `seeds` under `budget` (solver.disk), or
    None when it cannot build it: the working state must fit for the stages
    (BASE_BYTES + working_bytes), and one slice beside the largest smaller
    layer for the exits. The slices are cut to give the fewest exit groups,
    and then as many as MAX_SLICES allows (the smaller a slice, the less
    memory and scratch disk beside the others); `parts` forces their
    number (tests).

    Returns slices, bounds, groups (smaller layers by exit pass),
    memory_bytes (the peak of either phase), scratch_bytes (the peak in the
    scratch folder: every slice, and the next file of one) and
    traffic_bytes (scratch read and written; the smaller layers' files are
    read as in memory, once a group)."""
    size = index.layer_size(seeds)
    stages = BASE_BYTES + working_bytes(seeds)
    sliced = stages > budget or bool(sliced_stages)
    if size < SLICE_UNIT * 2:
        return None
    largest = max((index.layer_size(m) for m in layer_state.exit_layers(seeds)), default=0)
    best = None
    for count in [parts] if parts else range(2, (MAX_SLICED if sliced else MAX_SLICES) + 1):
        bounds = disk_bounds(size, count)
        if min(hi - lo for lo, hi in itertools.pairwise(bounds)) <= 0:
            break
        piece = max(_slice_lines(bounds)) * layer_state.LINE
        room = budget - BASE_BYTES - piece
        if largest > room or (sliced and BASE_BYTES + piece + STAGE_BUFFER_BYTES > budget):
            continue
        groups = first_fit(layer_state.exit_layers(seeds), room)
        # As few exit passes as can be; then, stages in memory, the smallest slices (the least memory and
        # scratch beside the others); sliced stages, the fewest slices (the fewest visits a stage).
        if best is None or len(groups) < len(best[2]) or (len(groups) == len(best[2]) and not sliced):
            best = (count, bounds, groups, piece)
    if best is None:
        return None
    count, bounds, groups, piece = best
    state = sum(_slice_lines(bounds)) * layer_state.LINE
    group_bytes = max(sum(index.layer_size(m) for m in g) for g in groups)
    # Sliced stages: each stage visits each slice about VISITS_A_STAGE times (read and written), and the
    # updates between slices go through files (written and read once).
    stage_traffic = int(seeds * VISITS_A_STAGE * 2 * state + 2 * size * UPDATES_BYTES) if sliced else state
    return {"slices": count, "bounds": bounds, "groups": groups, "sliced_stages": sliced,
            "memory_bytes": max(BASE_BYTES + piece + STAGE_BUFFER_BYTES if sliced else stages,
                                BASE_BYTES + piece + group_bytes),
            "scratch_bytes": state + piece + (size * PENDING_BYTES if sliced else 0),
            "traffic_bytes": 2 * len(groups) * state + stage_traffic}


def disk_least_bytes(seeds: int) -> int:
    """The least budget the disk mode builds layer `seeds` in: the process,
    its largest smaller layer beside a slice (the exits; in as many slices
    as the sliced stages take), and no less than the sliced stages need."""
    bounds = disk_bounds(index.layer_size(seeds), MAX_SLICED)
    piece = max(_slice_lines(bounds)) * layer_state.LINE
    largest = max((index.layer_size(m) for m in layer_state.exit_layers(seeds)), default=0)
    return BASE_BYTES + piece + max(largest, STAGE_BUFFER_BYTES)


def disk_seconds(seeds: int, layout: dict, rate: float) -> float:
    """The disk mode's time for layer `seeds` (a model): the in-memory time at
    `rate` (SLICED_SLOWDOWN times it for sliced stages, and VISIT_SECONDS a
    visit), an exit scan more for each group past the first, and the
    scratch traffic at DISK_BANDWIDTH."""
    size = index.layer_size(seeds)
    visits = seeds * VISITS_A_STAGE * layout["slices"] if layout["sliced_stages"] else 0
    return (size / rate * (SLICED_SLOWDOWN if layout["sliced_stages"] else 1.0) + visits * VISIT_SECONDS
            + (len(layout["groups"]) - 1) * size * EXIT_SCAN_SECONDS + layout["traffic_bytes"] / DISK_BANDWIDTH)


def lean_seconds(seeds: int, layout: dict, rate: float) -> float:
    """The lean stages' time for layer `seeds` with `layout` (lean_plan), a
    model: the in-memory time at `rate` times LEAN_SLOWDOWN, the scratch
    traffic at DISK_BANDWIDTH, and for streamed exits what they add to the
    resident ones (STREAMED_EXIT_SECONDS a position) and the smaller layers
    read again for each slice past the first (TABLE_READ_SECONDS a position)."""
    size = index.layer_size(seeds)
    seconds = size / rate * LEAN_SLOWDOWN + layout["traffic_bytes"] / DISK_BANDWIDTH
    if layout["streamed"] is not None:
        slices = layout["streamed"]["slices"]
        seconds += (size * STREAMED_EXIT_SECONDS
                    + layout["table_read_bytes"] * (slices - 1) / slices * TABLE_READ_SECONDS)
    return seconds



def exit_groups(seeds: int, budget: int) -> list[list[int]]:
    """The smaller layers of layer `seeds` grouped so that each group fits in
    the budget beside the working state (first fit, largest first); one exit
    pass per group. Raises BuildError when the budget cannot hold the layer."""
    if least_bytes(seeds) > budget:
        raise BuildError(memory_message(seeds, budget))
    return first_fit(layer_state.exit_layers(seeds), budget - BASE_BYTES - working_bytes(seeds))


def verify_bytes(seeds: int) -> int:
    """Memory `awele verify` holds for layer `seeds` beside its smaller
    layers: the layer at a byte a position and its two bits a position
    (solver.verify_layer.check_moves)."""
    return index.layer_size(seeds) + verify_layer.VERIFY_BITS * ((index.layer_size(seeds) + 7) // 8)


def verify_groups(seeds: int, budget: int) -> list[list[int]]:
    """The smaller layers of layer `seeds` grouped for `awele verify` (first
    fit, largest first): one pass over the layer per group, each group in
    memory beside verify_bytes. Raises BuildError when the budget cannot
    hold the layer and its largest smaller layer."""
    room = budget - BASE_BYTES - verify_bytes(seeds)
    largest = max((index.layer_size(m) for m in layer_state.exit_layers(seeds)), default=0)
    if largest > room:
        raise BuildError(
            f"verifying layer {seeds} needs at least {size_text(BASE_BYTES + verify_bytes(seeds) + largest, up=True)} "
            f"(the layer, two bits a position, its largest smaller layer and the process); "
            f"the memory budget is {size_text(budget)}")
    return first_fit(layer_state.exit_layers(seeds), room)


def size_text(count: int, up: bool = False) -> str:
    """A number of bytes for people, to a tenth of its unit (rounded up with
    `up`, for a least need): '1 KiB', '512 MiB', '512.1 MiB', '21.3 GiB'.

    >>> size_text(1024), size_text(512 << 20), size_text((512 << 20) + 1, up=True), size_text(int(21.3 * 2**30))
    ('1 KiB', '512 MiB', '512.1 MiB', '21.3 GiB')
    """
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= scale:
            tenths = -(-count * 10 // scale) if up else round(count * 10 / scale)
            return f"{tenths / 10:.1f}".removesuffix(".0") + f" {unit}"
    return f"{count} bytes"


def budget_too_small(budget: int) -> str | None:
    """Why `budget` builds no layer at all (one line), or None if it builds one."""
    if least_bytes(0) <= budget or lean_plan(0, budget) is not None:
        return None
    return (f"the memory budget of {size_text(budget)} builds no layer: layer 0 needs at least "
            f"{size_text(min(least_bytes(0), lean_least_bytes(0)), up=True)} (the process itself takes "
            f"{size_text(LEAN_BASE_BYTES)})")


def memory_message(seeds: int, budget: int) -> str:
    """One line: what layer `seeds` needs and the largest layer the budget allows."""
    allowed = largest_layer(budget)
    reach = budget_too_small(budget) or f"the memory budget of {size_text(budget)} builds layers up to {allowed}"
    return (
        f"layer {seeds} needs at least {size_text(least_bytes(seeds), up=True)} "
        f"({size_text(working_bytes(seeds), up=True)} working state, the largest smaller layer and the process); "
        + reach
    )


def build_memory_bytes(seeds: int) -> int:
    """Least memory that builds layer `seeds`, the process aside: its working
    state and its largest smaller layer at one byte a position (the exit
    passes take the smaller layers a group at a time). The build driver's
    budget (least_bytes) adds the process to it."""
    largest = max((index.layer_size(m) for m in layer_state.exit_layers(seeds)), default=0)
    return working_bytes(seeds) + largest


def process_memory_message(seeds: int, processes: int, budget: int, threads: int = 1) -> str:
    """One line: what each process needs for layer `seeds` against its budget."""
    need = process_bytes(seeds, processes, threads)
    lean_need = lean_process_bytes(seeds, processes)
    allowed = max((n for n in range(index.MAX_SEEDS + 1) if min(process_bytes(n, processes, threads),
                                                                lean_process_bytes(n, processes)) <= budget),
                  default=-1)
    reach = f"builds layers up to {allowed}" if allowed >= 0 else "builds no layer"
    return (f"layer {seeds} needs {need / 2**30:.1f} GiB in each of {processes} processes "
            f"({lean_need / 2**30:.1f} GiB with lean slices); the budget of "
            f"{budget / 2**30:.1f} GiB a process {reach} (use more processes, or more memory each)")


# Plans -----------------------------------------------------------------------------


RATE_POSITIONS = 1_000_000  # the smallest layer whose recorded build time gives a rate (layer 12 has 1.3 million)


def damaged_layers(directory: str | os.PathLike[str]) -> dict[str, str]:
    """The layers of `directory` that the measured figures leave out because
    their files do not check out (a damaged attribute, say), by seed count:
    what is wrong, naming the file."""
    found = {}
    for seeds in tables.built_layers(directory):
        info = tables.table_info(directory, seeds)
        if info["status"] not in ("ok", "header ok"):
            found[str(seeds)] = info.get("error", info["status"])
    return found


def measured_rates(directory: str | os.PathLike[str]) -> tuple[float, float, str]:
    """(positions a second, bytes a position on disk) of the largest layer built
    in `directory` with a recorded build time and at least RATE_POSITIONS
    positions, or the defaults. The floor is a size, not a time: a small
    layer's rate is start-up, and whether a layer took a second depends on
    the machine and its load."""
    rate, file_bytes, source = DEFAULT_RATE, DEFAULT_FILE_BYTES, "default"
    for seeds in reversed(tables.built_layers(directory)):
        info = tables.table_info(directory, seeds)
        if (info["status"] in ("ok", "header ok") and info["positions"] >= RATE_POSITIONS
                and info.get("build_seconds", 0) > 0):
            rate = info["positions"] / info["build_seconds"]
            file_bytes = info["bytes_per_position"]
            source = f"layer {seeds} in {directory}"
            break
    return rate, file_bytes, source


def plan(max_seeds: int, budget: int | None = None, directory: str | None = None,
         leave_out: tuple[int, ...] = (), disk: int | None = None, threads: int | None = None) -> dict:
    """Per layer 0..max_seeds: positions, the mode it is built in (memory,
    disk, lean, too big), working and peak memory, exit passes, scratch disk,
    file size and build time estimates under `budget` (dicts), and what the
    estimates rest on. Layers in `leave_out` (47: it cannot arise in a game)
    are planned as not built, and `saved` says what that saves. With `disk`
    (bytes), the tables and the scratch folder share a disk of that size:
    each layer's peak on it is the tables before it and its scratch (or its
    scratch's state file and its own file, written from it), the streamed
    exits' slices are cut to fit it, and a layer that does not fit is
    marked (fits_disk). `threads` is recorded, not used: the rates are those
    measured (on 2 cores here), and no measurement supports scaling them by
    cores (docs/OPENING.md)."""
    budget = budget or default_budget()
    directory = directory or tables.default_directory()
    rate, file_bytes, source = measured_rates(directory)
    on_disk = 0  # the tables of the layers before
    rows = []
    saved: dict[str, float] = {"positions": 0, "seconds": 0.0, "file_bytes": 0}
    for seeds in range(max_seeds + 1):
        size = index.layer_size(seeds)
        lower = sum(index.layer_size(m) for m in layer_state.exit_layers(seeds))
        row = {
            "seeds": seeds,
            "positions": size,
            "working_bytes": working_bytes(seeds),
            "smaller_layer_bytes": lower,
            "least_bytes": least_bytes(seeds),
            "file_bytes": int(size * file_bytes),
            "seconds": size / rate,
            "mode": mode(seeds, budget),
            "scratch_bytes": 0,
        }
        row["distance_pass"], row["distance_bytes"] = distance_plan(seeds, budget)
        row["fits"] = row["mode"] != "too big"
        if row["mode"] == "memory":
            groups = exit_groups(seeds, budget)
            row["exit_passes"] = len(groups)
            row["peak_bytes"] = BASE_BYTES + working_bytes(seeds) + max(
                sum(index.layer_size(m) for m in g) for g in groups
            )
        elif row["mode"] == "disk":
            layout = disk_plan(seeds, budget)
            assert layout is not None, "mode() said disk"
            row.update(exit_passes=len(layout["groups"]), peak_bytes=layout["memory_bytes"], slices=layout["slices"],
                       sliced_stages=layout["sliced_stages"],
                       scratch_bytes=layout["scratch_bytes"], disk_traffic_bytes=layout["traffic_bytes"],
                       seconds=disk_seconds(seeds, layout, rate))
        elif row["mode"] == "lean":
            lean_layout = lean_plan(seeds, budget, scratch_room=None if disk is None else disk - on_disk)
            lean_layout = lean_layout or lean_plan(seeds, budget)
            assert lean_layout is not None, "mode() said lean"
            streamed = lean_layout["streamed"]
            row.update(exit_passes=len(lean_layout["groups"]), peak_bytes=lean_layout["memory_bytes"],
                       scratch_bytes=lean_layout["scratch_bytes"], disk_traffic_bytes=lean_layout["traffic_bytes"],
                       streamed_exits=streamed is not None, exit_slices=streamed["slices"] if streamed else 0,
                       table_read_bytes=lean_layout["table_read_bytes"], seconds=lean_seconds(seeds, lean_layout, rate))
        else:
            row["disk_least_bytes"] = disk_least_bytes(seeds)
            row["lean_least_bytes"] = lean_least_bytes(seeds)
        if seeds in leave_out:
            saved["positions"] += size
            saved["seconds"] += float(row["seconds"])  # type: ignore[arg-type]  # a number in this row
            saved["file_bytes"] += int(size * file_bytes)
            row.update(mode="left out", seconds=0.0, file_bytes=0, scratch_bytes=0, fits=True)
        written = 0 if seeds in leave_out else int(size * file_bytes)
        if disk is not None:
            scratch = 0 if seeds in leave_out else int(row["scratch_bytes"])  # type: ignore[call-overload]  # an int
            peak = on_disk + max(scratch, (size if row["mode"] == "lean" else 0) + written)
            row.update(disk_peak_bytes=peak, fits_disk=peak <= disk)
        on_disk += written
        rows.append(row)
    return {"budget_bytes": budget, "rate": rate, "file_bytes_per_position": file_bytes, "measured_on": source,
            "largest_layer": largest_layer(budget), "largest_in_memory": largest_layer(budget, disk=False),
            "disk_bandwidth": DISK_BANDWIDTH, "left_out": damaged_layers(directory), "leave_out": sorted(leave_out),
            "saved": saved, "layers": rows, "disk_bytes": disk, "threads": threads}


def measured_exchange(directory: str | os.PathLike[str]) -> tuple[float, float, str]:
    """(bytes exchanged a position as the processes grow many, overhead of the
    distributed build on the same cores, what they rest on): from the largest
    layer in `directory` built by several processes, else the defaults."""
    for seeds in reversed(tables.built_layers(directory)):
        info = tables.table_info(directory, seeds)
        if info["status"] not in ("ok", "header ok"):
            continue
        processes, exchanged = info["processes"], info["bytes_exchanged"]  # checked (tables.recorded)
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
    A layer whose in-memory slices do not fit goes in lean slices (`mode`,
    lean_slice_layout: the build picks them the same way) when those fit;
    their memory, exit passes, scratch and time (lean_slice_seconds) are
    given for every layer.
    """
    directory = directory or tables.default_directory()
    rate, file_bytes, source = measured_rates(directory)
    exchange, overhead, exchange_source = measured_exchange(directory)
    rows: list[dict[str, Any]] = []
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
        layout = lean_slice_layout(seeds, processes, memory_per_process)
        rows[-1].update(
            mode="memory" if need <= memory_per_process else ("lean" if layout else "too big"),
            lean_process_bytes=layout["memory_bytes"] if layout else lean_process_bytes(seeds, processes, threads),
            lean_fits=layout is not None,
            lean_exit_passes=len(layout["groups"]) if layout else None,
            lean_scratch_bytes=layout["scratch_bytes"] if layout else None,
            lean_seconds=lean_slice_seconds(seeds, processes, layout, compute, exchanged, bandwidth))
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
        "smallest_lean_cluster": {str(seeds): least_processes(seeds, memory_per_process, threads, lean_process_bytes)
                                  for seeds in sorted({max_seeds, index.MAX_SEEDS})},
        "left_out": damaged_layers(directory),
        "layers": rows,
    }


def least_processes(seeds: int, memory_per_process: int, threads: int = 1,
                    need: Callable[[int, int, int], int] | None = None) -> int | None:
    """The fewest processes of `memory_per_process` bytes that build layer
    `seeds` (None if none can), each needing need(seeds, processes, threads)
    (process_bytes, or lean_process_bytes)."""
    need = need or process_bytes
    if need(seeds, 1 << 30, threads) > memory_per_process:
        return None
    low, high = 1, 1 << 30
    while low < high:
        middle = (low + high) // 2
        if need(seeds, middle, threads) <= memory_per_process:
            high = middle
        else:
            low = middle + 1
    return low


def distance_groups(seeds: int, budget: int) -> list[list[int]] | None:
    """The smaller layers of layer `seeds` grouped for its distance pass
    within `budget` (first fit, largest first), beside the layer's values
    and the pass's working state; None when the largest does not fit."""
    size = index.layer_size(seeds)
    room = budget - BASE_BYTES - size - distance.working_bytes(size)
    if max((index.layer_size(m) for m in layer_state.exit_layers(seeds)), default=0) > room:
        return None
    return first_fit(layer_state.exit_layers(seeds), room)


def distance_plan(seeds: int, budget: int) -> tuple[str, int]:
    """How layer `seeds` gains its distances within `budget` from its file
    (build.add_distances: a folder of values alone, the disk mode, the
    lean stages), and the pass's peak memory: 'memory' (its values and
    distance bytes, its smaller layers a group at a time beside them),
    'sliced' (the same, its start a slice of values at a time), 'lean'
    (the distance bytes alone, solver.lean_distance, its start's bytes
    spilled to a file when they do not fit beside its smaller layers), or
    'none' with the least that would do."""
    size = index.layer_size(seeds)
    largest = max((index.layer_size(m) for m in layer_state.exit_layers(seeds)), default=0)

    def beside(groups: list[list[int]]) -> int:
        return max((sum(index.layer_size(m) for m in group) for group in groups), default=0)

    groups = distance_groups(seeds, budget)
    if groups is not None:
        return "memory", BASE_BYTES + size + distance.working_bytes(size) + beside(groups)
    sliced = distance.sliced_plan(seeds, budget)
    if sliced is not None:
        working = distance.working_bytes(size)
        piece = max(hi - lo for lo, hi in itertools.pairwise(sliced[0]))
        return "sliced", BASE_BYTES + max(size + working, working + piece + beside(sliced[1]))
    lean = lean_distance.plan(seeds, budget)
    working = lean_distance.working_bytes(size)
    if lean is not None:
        piece = max(hi - lo for lo, hi in itertools.pairwise(lean.bounds))
        start = lean_distance.spilled_bytes(size, piece) if lean.spilled else working + piece
        return "lean", BASE_BYTES + max(working, start + beside(lean.groups))
    least = lean_distance.spilled_bytes(size, min(size, lean_distance.SPILL_SLICE)) + largest
    return "none", BASE_BYTES + max(working, least)
