"""Retrograde analysis: the exact value of every position of one layer.

Layer n holds the positions with n seeds on the board (see solver.index).
Capturing moves leave the layer for a smaller one, already solved; the best
of them is the position's *exit* value E(s) = max(captured - d(child)).
Terminal positions have E = +n (rule 5) or -n (rule 6) and no moves.
Non-capturing moves stay in the layer and can cycle, which is what makes the
layer hard.

Exits need the smaller layers n-15..n-2 (a capture takes at least 2 seeds
and at most 15: five opponent houses of 3). They are
found in one or more passes over the layer, each with a group of smaller
layers in memory, keeping the best so far; the stages then need layer n
alone. That is what lets a layer be built when its smaller layers do not
all fit in memory beside it.

Staged algorithm (the widening window of Romein and Bal, one pass per layer).
For k = n, n-1, ..., 1, stage k resolves exactly the positions with |d| = k,
given that every position with |d| > k is already resolved. Each position
keeps a count of its non-capturing children not yet resolved (all resolved
children of an unresolved position are positive: a negative one would have
resolved it).

* Seeds: an unresolved s with E(s) = k is +k; one with E(s) = -k and no
  unresolved child is -k.
* Propagation: when c is resolved at -k, every unresolved predecessor is +k;
  when c is resolved at +k, each unresolved predecessor counts one child
  less, and one left with none and E <= -k is -k.

Once stage 1 ends, what is left is endless play: d = 0.

The layer's build is made of rooms of one job each, which this module
drives (LayerSolver, solve_layer):

* solver.layer_state: the working state (pending codes, child counts, the
  lined layout), the constants and helpers every pass shares, un-sowing;
* solver.exits: the exit passes (and a slice's exit requests);
* solver.stages: the stages on one process, and the loop that runs them;
* solver.slice_stages: the stages on a slice (solver.distributed, solver.disk);
* solver.graph_stages: the stages on an explicit graph (a search component);
* solver.verify_layer: the check of a built layer (`awele verify`).
"""

import contextlib
import mmap
import os
import time
from collections.abc import Callable, Iterable
from typing import Any

import numba
import numpy as np

from . import distance, exits, index, slice_stages, stages, verify_layer
from .errors import BuildError
from .exits import exit_pass
from .layer_state import (
    COMPACT_LINES,
    LINE,
    LINE_RANKS,
    SERIAL_SIZE,
    exit_layers,
    order_fingerprint,
    thread_count,
    working_bytes,
)
from .layers import LayerStore, release, reserve
from .stages import compact_lines, make_scratch, propagate, propagate_stage, run_stages, run_stages_by_ply

COMPILE_SECONDS = 30  # numba's first compilation of the builder's kernels on 2 cores, measured

# The modules whose kernels take index's tables into their code (see the
# note at their import of index), each cached by numba on its own file.
KERNEL_MODULES = (exits, stages, slice_stages, verify_layer)


def kernels_cached() -> bool:
    """Whether numba's cache holds the builder's kernels (else the first build compiles them)."""
    # Numba's own idea of where the cache is ($NUMBA_CACHE_DIR or __pycache__).
    # propagate_stage: every build of a layer calls it (the sweeps only when its stack fills).
    folder = getattr(getattr(propagate_stage, "_cache", None), "_cache_path", None) or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "__pycache__")
    try:
        return any(name.startswith("stages.propagate_stage-") and name.endswith(".nbi")
                   for name in os.listdir(folder))
    except OSError:
        return False


def check_compiled_order() -> None:
    """Raise BuildError when the builder's cached kernels were compiled with
    another distance order than index's (numba keys its cache on each file
    alone, see their import of index): they would cut and rank slices
    by the old order and build wrong values."""
    stale = [module.__name__.rsplit(".", 1)[-1] for module in KERNEL_MODULES
             if module.compiled_order_fingerprint() != order_fingerprint(index.ORDER_OFFSET)]
    if stale:
        folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")
        files = ", ".join(f"{name}.*" for name in stale)
        raise BuildError(f"numba's cache holds the builder's kernels compiled with another version's slice order: "
                         f"delete the {files} files in {os.environ.get('NUMBA_CACHE_DIR') or folder}")


class LayerSolver:
    """The build of one layer, for its slot of a LayerStore, step by step.

    ``exits(layers)`` runs one exit pass with those smaller layers (they must
    be loaded in the store); once every layer of :func:`exit_layers` has
    been through a pass, ``solve()`` runs the stages, moves the values into
    the layer's slot settling endless play, and marks the layer loaded in
    the store. The caller decides which smaller layers are resident during
    which pass (solver.build does, by its memory budget); :func:`solve_layer`
    is the all-in-memory path.

    The working state is in the lined layout (value_at, count_at): each
    64-byte line holds 42 positions' value bytes and their 21 count bytes,
    so that telling a predecessor its child was won touches one line, not
    one in each of two arrays. The lines are an anonymous mapping of their
    own; solve() moves them into the slot a piece at a time, giving each
    piece back to the system once moved, so the two are never both whole.
    """

    def __init__(self, seeds: int, store: LayerStore, rows: tuple[np.ndarray, ...] | None = None) -> None:
        self.seeds = seeds
        self.store = store
        self.rows = rows if rows is not None else index.RowTables(seeds).arrays
        self.size = index.layer_size(seeds)
        if seeds > store.max_seeds:
            raise ValueError(f"layer {seeds} has no slot in a store of layers 0..{store.max_seeds}")
        store.loaded[seeds] = False
        self.lines = (self.size + LINE_RANKS - 1) // LINE_RANKS
        self._area, self.values = reserve(self.lines * LINE)
        # Huge pages where the system gives them: the updates land anywhere in
        # the lines, and with 4 KiB pages nearly every one also misses the TLB.
        with contextlib.suppress(OSError, AttributeError):
            self._area.madvise(mmap.MADV_HUGEPAGE)
        self.counts = self.values.view(np.uint8)
        self.value_words = self.values.view(np.uint64)
        self.done: set[int] = set()
        self.exit_seconds = 0.0
        self.passes = 0
        self.exit_lookups = 0
        self.distances: distance.LayerDistances | None = None

    @property
    def working_bytes(self) -> int:
        return working_bytes(self.size)

    def exits(self, layers: Iterable[int]) -> None:
        """One exit pass with the smaller `layers` (loaded in the store)."""
        layers = [m for m in layers if m not in self.done]
        missing = [m for m in layers if not self.store.loaded[m]]
        if missing or any(m not in exit_layers(self.seeds) for m in layers):
            raise ValueError(f"layer {self.seeds}: exit pass over {layers}, not loaded: {missing}")
        if self.passes and not layers:
            return
        use = np.zeros(index.MAX_SEEDS + 1, dtype=np.bool_)
        use[layers] = True
        started = time.perf_counter()
        with thread_count(1 if self.size < SERIAL_SIZE else None):
            self.exit_lookups += int(exit_pass(self.seeds, self.size, self.values, self.counts, self.store.flat,
                                               self.store.starts, use, self.passes == 0, self.rows, True, 0))
        self.exit_seconds += time.perf_counter() - started
        self.passes += 1
        self.done.update(layers)

    def exits_done(self, passes: int, seconds: float, lookups: int) -> None:
        """The exits of every smaller layer were put in `self.values` by other
        means (solver.disk computes them a slice at a time, through disk):
        record them as `passes` passes that took `seconds` and made `lookups`."""
        self.done.update(exit_layers(self.seeds))
        self.passes = max(1, passes)
        self.exit_seconds = seconds
        self.exit_lookups = lookups

    def solve(self, progress: Callable[[str, float], None] | None = None, first_stage: int | None = None,
              after_stage: Callable[[int], None] | None = None, distance_cap: int | None = None,
              spare: int = 0) -> dict[str, Any]:
        """Run the stages; return stats. The layer is then loaded in the store.
        `first_stage` resumes at that stage a state `after_stage(stage)` saw
        (solver.disk checkpoints it there: self.values is the state).
        With `distance_cap` (distance.DISTANCE_CAP, or less in tests) the
        stages run breadth first, ply by ply, and write the layer's distances
        to conversion as they resolve each position (stages.run_stages_by_ply):
        they are then in `self.distances` (distance.LayerDistances), the same
        as distance.layer_distances gives; a resumed state has lost them.
        `spare`: bytes of the budget the plies may carry more rows in."""
        missing = [m for m in exit_layers(self.seeds) if m not in self.done]
        if missing or not self.passes:
            raise ValueError(f"layer {self.seeds}: no exit pass yet over layers {missing}")
        if distance_cap is not None and first_stage is not None:
            raise ValueError(f"layer {self.seeds}: a state resumed at stage {first_stage} holds no distances")
        size, seeds = self.size, self.seeds
        if progress:
            progress("exits", 1.0)
        started = time.perf_counter()
        # stages.STACK read here: tests set it. The stages ply by ply gather a chunk's seeds in the stacks.
        scratch = make_scratch(numba.get_num_threads(),
                               stack=stages.STACK if distance_cap is None else max(stages.STACK, stages.SEED_ROWS))

        def sweep(stage, active, next_flags):
            return propagate(stage, seeds, 0, self.values, self.counts, active, next_flags, self.rows, scratch, size,
                             index.FILE_ORDER)

        def seed_and_tell(stage, flags):
            return propagate_stage(stage, seeds, size, self.values, self.value_words, flags, self.rows, scratch)

        if distance_cap is None:
            reports, seed_seconds = run_stages(seeds, self.values, self.value_words, self.counts, sweep, progress,
                                               lined_ranks=size, seed_and_tell=seed_and_tell,
                                               first_stage=first_stage, after_stage=after_stage)
        else:
            padded = np.full((size + 7) // 8 * 8, distance.UNSETTLED, dtype=np.uint8)
            reports, seed_seconds, overflow = run_stages_by_ply(seeds, self.values, self.value_words, size, padded,
                                                                self.rows, scratch, distance_cap, progress,
                                                                after_stage, spare)
        working = self.working_bytes
        slot = self.store.layer(seeds)
        with thread_count(1 if size < SERIAL_SIZE else None):
            for first in range(0, self.lines, COMPACT_LINES):
                last = min(self.lines, first + COMPACT_LINES)
                compact_lines(self.values, size, slot, first, last)
                with contextlib.suppress(OSError):  # no madvise: the pages go when the mapping does
                    self._area.madvise(mmap.MADV_DONTNEED, first * LINE, (last - first) * LINE)
        # Freed once solved (solve() runs once): the arrays first, as they hold the mapping's buffer.
        self.values = self.counts = self.value_words = None  # type: ignore[assignment]
        release(self._area)
        self.store.mark_loaded(seeds)
        if distance_cap is not None:
            self.distances = distance.by_ply(seeds, slot, padded, overflow, sum(s.sweeps for s in reports),
                                             distance_cap)
        stage_seconds = time.perf_counter() - started
        return {
            "positions": size,
            "seconds": self.exit_seconds + stage_seconds,
            "exit_seconds": self.exit_seconds,
            "exit_passes": self.passes,
            "seed_seconds": seed_seconds,
            "stage_seconds": stage_seconds,
            "stages": [(s.stage, s.resolved, s.sweeps) for s in reports],
            "working_bytes": working,
            # Scattered accesses, counted by the kernels: a value read in a smaller
            # layer per capture, and a line (its value byte and count nibble) per
            # predecessor told.
            "exit_lookups": self.exit_lookups,
            "predecessors_told": int(scratch.tally[:, 0].sum()),
            "stage_accesses": int(scratch.tally[:, 1].sum()),
        }


def solve_layer(
    seeds: int,
    store: LayerStore,
    threads: int | None = None,
    rows: tuple[np.ndarray, ...] | None = None,
    progress: Callable[[str, float], None] | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Solve layer `seeds` in its slot of `store`, every smaller layer it
    needs being loaded there; return (values, stats), values being the slot.

    `progress`, if given, is called as progress(step_name, done_fraction).
    Numba's thread count is restored afterwards.
    """
    with thread_count(threads):
        solver = LayerSolver(seeds, store, rows)
        solver.exits(exit_layers(seeds))
        stats = solver.solve(progress)
    return store.layer(seeds), stats


def solve_up_to(max_seeds: int, threads: int | None = None) -> LayerStore:
    """Every layer 0..max_seeds solved in one LayerStore (for tests and small builds)."""
    store = LayerStore(max_seeds)
    rows = index.RowTables(max_seeds).arrays
    for seeds in range(max_seeds + 1):
        solve_layer(seeds, store, threads=threads, rows=rows)
    return store
