"""Distance to conversion: how many plies a position's value takes to cash in.

For a position s of layer n with table value v (DESIGN.md, "Distance to
conversion"; issue 51 is binding):

* v = 0: no distance (neither side has a conversion to force);
* s has no legal move (rules 5 and 6): distance 0;
* a move keeps the value when ``captured - d(child) == v``; its cost is 1
  when it captures, else 1 + the child's distance (the child is in layer n
  with value -v);
* v > 0: the least cost over the moves that keep the value; v < 0: the
  greatest.

So it is the number of plies to the next capture (or end of the game) when
the side ahead converts as fast as it can and the side behind holds out as
long as it can, neither giving up any value: the Oware analogue of
Syzygy's DTZ. It is finite wherever v != 0.

It depends only on layer n's finished values and on the values of the
layers its captures reach (n-15..n-2), so it is a second retrograde pass,
over finished values, with the builder's move generation and un-sowing
(solver.layer_state.predecessors):

1. Start (``_start_block``, one pass over the layer, or one per group of
   smaller layers when they do not all fit beside it). v = 0 gets
   NO_DISTANCE; a position with no move gets 0; v > 0 with a capture that
   keeps the value gets 1 (nothing is cheaper: a quiet child of a v > 0
   position has v < 0 and so a move, costing 1 + at least 1); v < 0 gets
   the count of its quiet moves that keep the value, and 1 when there is
   none (then a capture keeps it: the value is attained by some move).
2. Frontiers, ply by ply (``_frontier_block``): every position settled at
   distance k tells its in-layer predecessors p whose move to it keeps p's
   value (v_p == -v). A v_p > 0 predecessor not yet settled is settled at
   k + 1, the first frontier that reaches it (least cost); a v_p < 0 one
   counts one keeping child less and is settled at k + 1 when none is left
   (its last keeping child is its slowest: greatest cost). Order matters
   here, unlike the value stages: a frontier is a ply, and frontier k + 1
   starts only once frontier k is done.

Every position with v != 0 ends settled; one that does not means the values
are not the tables' fixed point (BuildError).

Storage: a byte a position (uint8), ``DISTANCE_CAP`` (240) meaning "240 or
more", the exact distance of each such position in a small overflow table
of (rank, distance) rows sorted by rank; NO_DISTANCE (254) where v = 0;
241..252 and 255 never (255 is the HDF5 fill value). The files store
DERIVED (253) for every distance the value and at most one ply of look-up
give back (for_file), and so never 254.

Working memory beside the layer's values (which are in the LayerStore
already): the distance byte itself, which holds the working state of a
position not yet settled (UNSETTLED for v > 0, COUNTED + its keeping quiet
children not settled for v < 0: one miss a predecessor told fewer than a
count array beside it would cost), two flag bytes a block of 256
positions, and the overflow rows: 1.01 bytes a position, against the value
build's 1.52. The smaller layers n-15..n-2 are read where a v > 0 position
captures, as the value build's exit pass reads them.

The frontiers' kernels share their work as the builder's do (blocks taken
from a shared counter): a v > 0 predecessor is claimed with a
compare-and-swap of its distance byte, a v < 0 one counted down with an
atomic decrement of that byte, so each position is settled exactly once by
one thread. The result does not depend on the order or the threads: it is a
function of the values.

numba keys its cache on this file alone: the kernels take index's tables
and retrograde's un-sowing into their code, so a change there must come
with a change here (as retrograde's own docstring says of index).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import numpy as np
from numba import njit, prange

from . import index
from .errors import BuildError, CorruptTableError
from .exits import PLAN_WORDS, lowest_bit, plan_run
from .intrinsics import atomic_add, atomic_sub, compare_and_swap, prefetch
from .layer_state import (
    BATCH,
    BLOCK,
    BYTE_ONES,
    MAX_PREDECESSORS,
    SERIAL_SIZE,
    WORK_SLOTS,
    exit_layers,
    has_byte,
    hot_kernel,
    predecessors,
    thread_count,
)
from .layers import LayerStore
from .rules import ROW, capture_candidates, legal_mask, play

DISTANCE_CAP = 240  # a stored byte of 240 means "240 or more": the exact distance is in the overflow rows
COUNTED = 247  # working: a v < 0 position not settled yet holds COUNTED + its keeping quiet children not settled (1..6)
DERIVED = 253  # in the files: the distance follows from the value and at most one ply (for_file)
NO_DISTANCE = 254  # the byte of a position whose value is 0 (no distance)
DERIVE = -1  # what distance_at answers for a DERIVED byte
UNSETTLED = 255  # working: a v > 0 position not settled yet; never in finished data (the files' fill value)
DISTANCE_VERSION = 1
DISTANCE_METRIC = ("plies to the next capture or end of the game, the side ahead converting as fast as it can and "
                   "the side behind holding out as long as it can, the value kept; none where the value is 0")
WORKING_BYTES = 1  # a distance byte a position (the count of a v < 0 one in it until it is settled), beside its value


class LayerDistances(NamedTuple):
    """A layer's distances as stored: a byte a position (DISTANCE_CAP: see
    `overflow`, NO_DISTANCE: value 0) and the (rank, distance) rows, sorted
    by rank, of the positions at DISTANCE_CAP or more."""

    distance: np.ndarray
    overflow: np.ndarray
    stats: dict[str, Any]


def distance_at(distance: np.ndarray, overflow: np.ndarray, rank: int, cap: int = DISTANCE_CAP,
                at: int | None = None) -> int | None:
    """The exact distance of `rank` from a layer's bytes and overflow rows
    (None for a value of 0, DERIVE for a DERIVED byte of a file: see
    for_file); its byte is distance[at] when `at` is given (a chunk of the
    bytes), else distance[rank]."""
    byte = int(distance[rank if at is None else at])
    if byte == NO_DISTANCE:
        return None
    if byte == DERIVED:
        return DERIVE
    if byte < cap:
        return byte
    row = int(np.searchsorted(overflow[:, 0], rank)) if overflow.shape[0] else 0
    if row >= overflow.shape[0] or int(overflow[row, 0]) != rank:
        raise CorruptTableError(f"rank {rank} is stored as {cap} or more but has no overflow row")
    return int(overflow[row, 1])


def working_bytes(size: int) -> int:
    """Memory of the distance pass over `size` positions beside their values:
    the distance bytes (padded to whole words) and two flag bytes a block."""
    return (size + 7) // 8 * 8 + 2 * ((size + BLOCK - 1) // BLOCK)


# Kernels ----------------------------------------------------------------------------


@hot_kernel
def _start_block(seeds, start, stop, values, flat, starts, use, first, distance, rows, flags_zero, flags_one, where,
                 wanted, owners, plan):
    """Step 1 for ranks start..stop-1 of layer `seeds` (its values at
    flat[starts[seeds]:], the same bytes as `values`).

    With `first`, every position gets its start: NO_DISTANCE (v = 0), 0 (no
    move), 1 (v > 0 with a keeping capture into a layer of `use`, or v < 0
    without a keeping quiet move), else UNSETTLED (v > 0) or COUNTED + its
    keeping quiet moves (v < 0). A later pass (another group of smaller
    layers in `use`) only looks for keeping captures of v > 0 positions
    still UNSETTLED. The children a block needs are gathered first, their
    value bytes prefetched, and read only then, so that those misses
    overlap (as the builder's exit pass does): where[j] is a child's byte in
    `flat`, wanted[j] the value that keeps its parent's, owners[j] the
    parent. Blocks holding a 0 or a 1 are flagged in flags_zero and
    flags_one; returns the positions settled here.
    """
    settled = 0
    asked = 0
    run_first = 0
    run_length = 0
    run_start = 0
    mover = np.uint64(0)
    planned = -1  # the run whose plan `plan` holds
    layer = starts[seeds]
    for rank in range(start, stop):
        value = np.int64(values[rank])
        if value == 0:
            if first:
                distance[rank] = NO_DISTANCE
            continue
        if not first and (value < 0 or distance[rank] != UNSETTLED):
            continue
        if not run_first <= rank < run_first + run_length:
            mover, run_first, run_length, run_start = index.unrank_row(seeds, rank, rows[0], rows[1], rows[3])
        opponent = rows[2][run_start + rank - run_first]
        mask = legal_mask(mover, opponent)
        if mask == 0:
            distance[rank] = 0
            flags_zero[rank // BLOCK] = 1
            settled += 1
            continue
        if first:
            distance[rank] = UNSETTLED if value > 0 else COUNTED
        # A v > 0 position needs its captures alone (a quiet move of it costs at least 2), a v < 0 one its quiet moves.
        candidates = mask & capture_candidates(mover, opponent)
        moves = candidates if value > 0 else mask
        general = opponent == 0 or mover == 0
        if value < 0 and not general:
            # Quiet moves that land nowhere near a capture: the child's rank from the run's plan, without sowing.
            if planned != run_first:
                plan_run(mover, plan)
                planned = run_first
            quiet = mask & ~candidates
            moves = candidates
            while quiet:
                house = lowest_bit(quiet)
                quiet &= quiet - 1
                left = plan[2 * ROW + house]
                child_mover = opponent + np.uint64(plan[ROW + house])
                at = (layer + index.LAYER_OFFSET[seeds, seeds - left]
                      + index.row_rank(child_mover, seeds - left, index.ANY_ROW) * index.OPPONENT_ROWS[left]
                      + plan[3 * ROW + house])
                prefetch(flat, at)  # type: ignore[call-arg]  # numba's @intrinsic passes typingctx
                where[asked] = at
                wanted[asked] = -value
                owners[asked] = rank
                asked += 1
        for house in range(ROW):
            if not moves & (1 << house):
                continue
            captured, child_mover, child_opponent = play(mover, opponent, house)
            if value > 0 and captured > 0 and use[seeds - captured]:
                at = starts[seeds - captured] + index.rank_packed(child_mover, child_opponent, seeds - captured)
                want = captured - value
            elif value < 0 and captured == 0:
                at = layer + index.rank_packed(child_mover, child_opponent, seeds)
                want = -value
            else:
                continue
            prefetch(flat, at)  # type: ignore[call-arg]  # numba's @intrinsic passes typingctx
            where[asked] = at
            wanted[asked] = want
            owners[asked] = rank
            asked += 1
    for j in range(asked):
        if np.int64(flat[where[j]]) != wanted[j]:
            continue
        rank = owners[j]
        if values[rank] < 0:
            distance[rank] += 1  # one more keeping quiet move
        elif distance[rank] == UNSETTLED:
            distance[rank] = 1
            flags_one[rank // BLOCK] = 1
            settled += 1
    if first:
        for rank in range(start, stop):
            if distance[rank] == COUNTED:  # v < 0 without a keeping quiet move: a capture keeps it
                distance[rank] = 1
                flags_one[rank // BLOCK] = 1
                settled += 1
    return settled


@njit(cache=True, parallel=True)
def start_pass(seeds: int, size: int, values: np.ndarray, flat: np.ndarray, starts: np.ndarray, use: np.ndarray,
               first: bool, distance: np.ndarray, rows: tuple[np.ndarray, ...], flags_zero: np.ndarray,
               flags_one: np.ndarray) -> int:
    """Step 1 over the `size` positions of layer `seeds` (values: its int8
    values, in its slot of the store flat/starts, with the smaller layers
    marked in `use` loaded): see _start_block. Returns the positions
    settled at 0 or 1."""
    blocks = (size + BLOCK - 1) // BLOCK
    counter = np.zeros(1, dtype=np.int64)
    settled = np.zeros(WORK_SLOTS, dtype=np.int64)
    for slot in prange(WORK_SLOTS):
        where = np.empty(BLOCK * ROW, dtype=np.int64)
        wanted = np.empty(BLOCK * ROW, dtype=np.int64)
        owners = np.empty(BLOCK * ROW, dtype=np.int64)
        plan = np.zeros(PLAN_WORDS, dtype=np.int64)
        while True:
            block = atomic_add(counter, 0, np.int64(1))
            if block >= blocks:
                break
            settled[slot] += _start_block(seeds, block * BLOCK, min(size, block * BLOCK + BLOCK), values, flat, starts,
                                          use, first, distance, rows, flags_zero, flags_one, where, wanted, owners,
                                          plan)
    return settled.sum()


@njit(cache=True, inline="always")
def _settle_batch(found, told, count, new, cap, values, distance, next_flags, listing, listed):
    """Tell a batch of predecessors found[i] that a child worth told[i] was
    settled this frontier; those settled get `new` (capped at `cap`), their
    block flagged, and are appended to `listing` (counter listed[0]) when
    new >= cap. Returns the positions settled. The predecessors whose move
    keeps their value (their value byte prefetched by un-sowing) are kept
    first and their distance bytes prefetched, then told."""
    kept = 0
    for i in range(count):
        if np.int64(values[found[i]]) == -np.int64(told[i]):
            found[kept] = found[i]
            told[kept] = told[i]
            prefetch(distance, found[kept])  # type: ignore[call-arg]  # numba's @intrinsic passes typingctx
            kept += 1
    settled = 0
    byte = np.uint8(min(new, cap))
    for i in range(kept):
        parent = found[i]
        code = np.int64(distance[parent])
        if told[i] < 0:  # the parent is ahead: settled by its first keeping child
            if code != UNSETTLED:
                continue
            if not compare_and_swap(distance, parent, np.uint8(UNSETTLED), byte):  # type: ignore[call-arg]
                continue  # another thread settled it this frontier
        else:  # the parent is behind: settled by its last keeping child
            if not COUNTED < code <= COUNTED + ROW:
                continue
            if np.int64(atomic_sub(distance, parent, np.uint8(1))) != COUNTED + 1:
                continue
            distance[parent] = byte
        settled += 1
        next_flags[parent // BLOCK] = 1
        if new >= cap:
            listing[atomic_add(listed, 0, np.int64(1))] = parent
    return settled


@hot_kernel
def _frontier_chunk(seeds, size, frontier, cap, ranks, count_ranks, values, distance, next_flags, rows, found, movers,
                    opponents, told, listing, listed):
    """Tell the predecessors of ranks[:count_ranks], settled at `frontier`
    (ascending: the rows' runs are walked, not searched). Returns the
    positions settled at frontier + 1."""
    settled = 0
    count = 0
    mover = np.uint64(0)
    run_first = 0
    run_length = 0
    run_start = 0
    for position in range(count_ranks):
        rank = ranks[position]
        if not run_first <= rank < run_first + run_length:
            mover, run_first, run_length, run_start = index.unrank_row(seeds, rank, rows[0], rows[1], rows[3])
        opponent = rows[2][run_start + rank - run_first]
        added = predecessors(mover, opponent, seeds, 0, size, values, distance, False, False, found, count, movers,
                             opponents)
        told[count:added] = values[rank]
        count = added
        if count >= BATCH:
            settled += _settle_batch(found, told, count, frontier + 1, cap, values, distance, next_flags, listing,
                                     listed)
            count = 0
    settled += _settle_batch(found, told, count, frontier + 1, cap, values, distance, next_flags, listing, listed)
    return settled


@hot_kernel
def _frontier_ranks(frontier, first_item, last_item, active, size, words, distance, out):
    """The ranks settled at `frontier` (below the cap) in blocks
    active[first_item:last_item] into `out`, found eight at a time by their
    distance bytes (`words`); returns how many."""
    pattern = np.uint64(frontier) * BYTE_ONES
    found = 0
    for item in range(first_item, last_item):
        start = active[item] * BLOCK
        stop = min(size, start + BLOCK)
        for word in range(start // 8, (stop + 7) // 8):
            if not has_byte(words[word], pattern):
                continue
            for rank in range(word * 8, min(stop, word * 8 + 8)):
                if distance[rank] == frontier:
                    out[found] = rank
                    found += 1
    return found


SERIAL_FRONTIER = 1 << 21  # a frontier in this few ranks' blocks runs on one thread: a busy core makes a parallel
# loop wait for its time slice at its end, and a layer has dozens of thin frontiers (layer 18: 76)
FRONTIER_CHUNK = 16  # active blocks (or BLOCK times as many listed ranks) a thread takes at once


@njit(cache=True, parallel=True)
def frontier_pass(seeds: int, size: int, frontier: int, cap: int, active: np.ndarray, ranks: np.ndarray,
                  values: np.ndarray, distance: np.ndarray, next_flags: np.ndarray, rows: tuple[np.ndarray, ...],
                  listing: np.ndarray, listed: np.ndarray) -> int:
    """Step 2 for one frontier: the predecessors of every position settled
    at `frontier` are told (see _settle_batch), those it settles getting
    frontier + 1. The positions are looked for in the `active` blocks, or,
    when `ranks` is not empty, are the (sorted) ranks listed there. Threads
    take FRONTIER_CHUNK blocks at a time, so that a thin frontier still
    fills the batches whose misses overlap. Returns how many were settled."""
    words = distance.view(np.uint64)  # distance is padded to whole words
    listed_mode = ranks.shape[0] > 0
    items = ranks.shape[0] if listed_mode else active.shape[0]
    step = FRONTIER_CHUNK * BLOCK if listed_mode else FRONTIER_CHUNK
    counter = np.zeros(1, dtype=np.int64)
    settled = np.zeros(WORK_SLOTS, dtype=np.int64)
    batch = BATCH + MAX_PREDECESSORS
    for slot in prange(WORK_SLOTS):
        found = np.empty(batch, dtype=np.int64)
        movers = np.empty(batch, dtype=np.uint64)
        opponents = np.empty(batch, dtype=np.uint64)
        told = np.empty(batch, dtype=np.int8)
        todo = np.empty(FRONTIER_CHUNK * BLOCK, dtype=np.int64)
        while True:
            item = atomic_add(counter, 0, np.int64(step))
            if item >= items:
                break
            last = min(items, item + step)
            if listed_mode:
                todo[: last - item] = ranks[item:last]
                count = last - item
            else:
                count = _frontier_ranks(frontier, item, last, active, size, words, distance, todo)
            settled[slot] += _frontier_chunk(seeds, size, frontier, cap, todo, count, values, distance, next_flags,
                                             rows, found, movers, opponents, told, listing, listed)
    return settled.sum()


# Driver -----------------------------------------------------------------------------


class DistanceSolver:
    """The distance pass of one layer whose values are finished in its slot
    of `store`, step by step: ``starts(layers)`` once per group of smaller
    layers (loaded in the store; every layer of exit_layers(seeds) in some
    group), then ``solve()``. :func:`layer_distances` is the all-in-memory
    path."""

    def __init__(self, seeds: int, store: LayerStore, rows: tuple[np.ndarray, ...] | None = None,
                 cap: int = DISTANCE_CAP) -> None:
        if not store.loaded[seeds]:
            raise ValueError(f"layer {seeds} is not loaded: its distances need its values")
        if not 2 <= cap <= DISTANCE_CAP:
            raise ValueError(f"the cap is 2..{DISTANCE_CAP}, got {cap}")
        self.seeds = seeds
        self.store = store
        self.cap = cap
        self.rows = rows if rows is not None else index.RowTables(seeds).arrays
        self.size = index.layer_size(seeds)
        self.values = store.layer(seeds)
        self._padded = np.full((self.size + 7) // 8 * 8, UNSETTLED, dtype=np.uint8)
        self.distance = self._padded[: self.size]
        blocks = (self.size + BLOCK - 1) // BLOCK
        self.flags_zero = np.zeros(blocks, dtype=np.uint8)
        self.flags_one = np.zeros(blocks, dtype=np.uint8)
        self.done: set[int] = set()
        self.passes = 0
        self.settled = 0
        self.start_seconds = 0.0

    def starts(self, layers: Iterable[int]) -> None:
        """One pass of step 1 with the smaller `layers` (loaded in the store)."""
        layers = [m for m in layers if m not in self.done]
        if any(m not in exit_layers(self.seeds) or not self.store.loaded[m] for m in layers):
            raise ValueError(f"layer {self.seeds}: distance pass over layers {layers}, not all loaded smaller layers")
        if self.passes and not layers:
            return
        use = np.zeros(index.MAX_SEEDS + 1, dtype=np.bool_)
        use[layers] = True
        started = time.perf_counter()
        with thread_count(1 if self.size < SERIAL_SIZE else None):
            self.settled += int(start_pass(self.seeds, self.size, self.values, self.store.flat, self.store.starts, use,
                                           self.passes == 0, self.distance, self.rows, self.flags_zero,
                                           self.flags_one))
        self.start_seconds += time.perf_counter() - started
        self.passes += 1
        self.done.update(layers)

    def solve(self, progress: Callable[[str, float], None] | None = None) -> LayerDistances:
        """The frontiers, ply by ply, until one settles nothing; returns the
        layer's distances. Raises BuildError when a position with a value
        other than 0 is left without a distance."""
        missing = [m for m in exit_layers(self.seeds) if m not in self.done]
        if missing or not self.passes:
            raise ValueError(f"layer {self.seeds}: no distance start pass yet over layers {missing}")
        started = time.perf_counter()
        seeds, size, cap = self.seeds, self.size, self.cap
        needed = _nonzero(self.values)
        left = needed - self.settled
        flags, next_flags = self.flags_zero, self.flags_one
        empty = np.zeros(0, dtype=np.int64)
        listing = empty
        listed = np.zeros(1, dtype=np.int64)
        ranks = empty
        overflow: list[np.ndarray] = []
        frontier = 0
        frontiers = []
        while True:
            active = np.flatnonzero(flags) if frontier < cap else empty
            if frontier >= cap and ranks.shape[0] == 0:
                break
            if frontier < cap and active.shape[0] == 0 and not next_flags.any():
                break
            if frontier + 1 >= cap:
                listing = np.empty(max(1, left), dtype=np.int64)  # at most every position not yet settled
                listed[0] = 0
            with thread_count(1 if max(active.shape[0] * BLOCK, ranks.shape[0]) <= SERIAL_FRONTIER else None):
                settled = int(frontier_pass(seeds, size, frontier, cap, active, ranks, self.values, self._padded,
                                            next_flags, self.rows, listing, listed))
            left -= settled
            frontiers.append(settled)
            if frontier + 1 >= cap:
                ranks = np.sort(listing[: listed[0]])
                if ranks.shape[0]:
                    overflow.append(np.stack([ranks, np.full(ranks.shape[0], frontier + 1, dtype=np.int64)], axis=1))
            flags[:] = 0
            flags, next_flags = next_flags, flags
            frontier += 1
            if progress:
                progress(f"distance {frontier}", 1.0 - left / max(1, needed))
        if left:
            raise BuildError(f"layer {seeds}: {left} positions with a value other than 0 have no finite distance "
                             "to conversion: the values are not the tables' fixed point")
        rows = np.concatenate(overflow) if overflow else np.zeros((0, 2), dtype=np.int64)
        rows = rows[np.argsort(rows[:, 0], kind="stable")]
        seconds = time.perf_counter() - started
        stats = {
            "distance_seconds": self.start_seconds + seconds,
            "distance_start_seconds": self.start_seconds,
            "distance_frontier_seconds": seconds,
            "distance_passes": self.passes,
            "longest_distance": _longest(self.distance, rows, cap),
            "distance_overflow": int(rows.shape[0]),
            "distance_working_bytes": working_bytes(size),
            "distance_frontiers": len(frontiers),
        }
        return LayerDistances(self.distance, rows, stats)


@njit(cache=True)
def _nonzero(values: np.ndarray) -> int:
    """The positions whose value is not 0 (without numpy's temporary of a byte a position)."""
    count = 0
    for value in values:
        if value != 0:
            count += 1
    return count


def _longest(distance: np.ndarray, overflow: np.ndarray, cap: int) -> int:
    """The largest distance of a layer (0 when none has one)."""
    if overflow.shape[0]:
        return int(overflow[:, 1].max())
    counts = np.bincount(distance[: 1 << 24], minlength=256) if distance.shape[0] <= 1 << 24 else _byte_counts(
        distance)
    present = [byte for byte in range(cap) if counts[byte]]
    return max(present, default=0)


@njit(cache=True)
def _byte_counts(data: np.ndarray) -> np.ndarray:
    counts = np.zeros(256, dtype=np.int64)
    for byte in data:
        counts[byte] += 1
    return counts


def distance_histogram(distance: np.ndarray) -> np.ndarray:
    """Counts of each byte 0..255 of a layer's distance bytes (int64[256])."""
    if distance.shape[0] <= 1 << 24:
        return np.bincount(distance, minlength=256).astype(np.int64)
    return _byte_counts(distance)


def layer_distances(seeds: int, store: LayerStore, rows: tuple[np.ndarray, ...] | None = None,
                    cap: int = DISTANCE_CAP, threads: int | None = None,
                    progress: Callable[[str, float], None] | None = None) -> LayerDistances:
    """The distances of layer `seeds`, its values and every layer its
    captures reach (exit_layers) being loaded in `store`. `cap` below
    DISTANCE_CAP stores less in the bytes and more in the overflow rows
    (tests)."""
    missing = [m for m in exit_layers(seeds) if not store.loaded[m]]
    if missing:
        raise ValueError(f"layer {seeds}: its distances need layers {missing} loaded")
    with thread_count(threads):
        solver = DistanceSolver(seeds, store, rows, cap)
        solver.starts(exit_layers(seeds))
        return solver.solve(progress)


@njit(cache=True)
def _derive(distance: np.ndarray, values: np.ndarray) -> int:
    """DERIVED in place of every distance for_file leaves out; returns how many."""
    count = 0
    for rank in range(distance.shape[0]):
        value = values[rank]
        if value == 0 or (value > 0 and distance[rank] == 1) or (value < 0 and distance[rank] != 0):
            distance[rank] = DERIVED
            count += 1
    return count


def for_file(found: LayerDistances, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The bytes and overflow rows a layer's file stores, made from its
    distances in place (`found` is spent). Every byte the value and at most
    one ply give back is DERIVED: a value of 0 (no distance), a value above
    0 whose distance is 1 (a capture keeps it), and a value below 0 with a
    move (1 + the greatest distance of the quiet moves' children that keep
    it, those children being ahead and so stored or at 1; 1 when no quiet
    move keeps it). One symbol for all three is what makes the bytes
    compress: layer 20 deflated takes 0.55 of its values' size so, 0.97
    with every distance stored (chess's Syzygy DTZ tables leave out one side
    in the same spirit). What is stored: 0 for no move, the distances of 2
    or more of the side ahead, its overflow rows."""
    _derive(found.distance, values)
    rows = found.overflow
    return found.distance, rows[values[rows[:, 0]] > 0] if rows.shape[0] else rows


class DistanceSpread(NamedTuple):
    """Every distance of a layer, counted: `ahead[d]` positions with a value
    above 0 and distance d, `behind[d]` those below 0; the longest of each
    side with the rank of the first position (in rank order) that has it
    (both -1 when the side has no position)."""

    ahead: np.ndarray
    behind: np.ndarray
    longest_ahead: int
    rank_ahead: int
    longest_behind: int
    rank_behind: int


@njit(cache=True)
def _stored_ahead(rank, distance, over_ranks, over_distances, cap):
    """The distance of a position worth more than 0 from a file's byte
    (DERIVED is 1); -1 when a byte at the cap has no overflow row."""
    byte = distance[rank]
    if byte == DERIVED:
        return 1
    if byte < cap:
        return np.int64(byte)
    row = np.searchsorted(over_ranks, rank)
    if row >= over_ranks.shape[0] or over_ranks[row] != rank:
        return -1
    return over_distances[row]


@njit(cache=True)
def _spread(seeds, values, distance, over_ranks, over_distances, cap, ahead, behind, out):
    """Counts every distance of a layer into `ahead` and `behind` from its
    values and its file's bytes and overflow rows (for_file), giving back
    what the file leaves out: 1 for a DERIVED byte of a value above 0, and
    for one below 0 one ply: 1 + the greatest distance of the quiet moves'
    children that keep the value (stored or 1), 1 when no quiet move keeps
    it. out = [longest ahead, its rank, longest behind, its rank]; returns
    the first rank whose data are not what the files hold, or -1."""
    mover, opponent = index.unrank_packed(seeds, 0)
    for rank in range(values.shape[0]):
        if rank:
            _, mover, opponent = index.next_packed(mover, opponent, seeds)
        value = values[rank]
        if value == 0:
            if distance[rank] != DERIVED:
                return rank
            continue
        if value > 0:
            found = _stored_ahead(rank, distance, over_ranks, over_distances, cap)
            if found < 0 or (found == 0) != (legal_mask(mover, opponent) == 0):
                return rank
            ahead[found] += 1
            if found > out[0]:
                out[0], out[1] = found, rank
            continue
        if distance[rank] != DERIVED:
            if distance[rank] != 0 or legal_mask(mover, opponent) != 0:
                return rank
            found = 0
        else:
            found = 1
            mask = legal_mask(mover, opponent)
            for house in range(ROW):
                if mask & (1 << house):
                    taken, child_mover, child_opponent = play(mover, opponent, house)
                    if taken == 0:
                        child = index.rank_packed(child_mover, child_opponent, seeds)
                        if values[child] == -value:
                            child_distance = _stored_ahead(child, distance, over_ranks, over_distances, cap)
                            if child_distance < 0:
                                return child
                            found = max(found, 1 + child_distance)
        behind[found] += 1
        if found > out[2]:
            out[2], out[3] = found, rank
    return -1


def distance_spread(seeds: int, values: np.ndarray, distance: np.ndarray, overflow: np.ndarray) -> DistanceSpread:
    """Every distance of layer `seeds` counted from its values and its file's
    distance bytes and overflow rows (tables.load_values, load_distances):
    what scripts/distance_findings.py publishes. Raises CorruptTableError
    where the bytes are not what a file of these values holds."""
    size = index.layer_size(seeds)
    if values.shape != (size,) or distance.shape[0] < size:
        raise ValueError(f"layer {seeds} has {size} positions: got {values.shape[0]} values, {distance.shape[0]} bytes")
    longest = int(overflow[:, 1].max()) if overflow.shape[0] else DISTANCE_CAP
    ahead = np.zeros(longest + 2, dtype=np.int64)
    behind = np.zeros(longest + 2, dtype=np.int64)
    out = np.array([-1, -1, -1, -1], dtype=np.int64)
    over_ranks = np.ascontiguousarray(overflow[:, 0], dtype=np.int64)
    over_distances = np.ascontiguousarray(overflow[:, 1], dtype=np.int64)
    wrong = _spread(seeds, values, distance, over_ranks, over_distances, DISTANCE_CAP, ahead, behind, out)
    if wrong >= 0:
        raise CorruptTableError(f"layer {seeds}: the distance data of rank {wrong} do not fit its value")
    return DistanceSpread(ahead, behind, int(out[0]), int(out[1]), int(out[2]), int(out[3]))


def build_distances(seeds: int, store: LayerStore, groups: list[list[int]], rows: tuple[np.ndarray, ...] | None,
                    load: Callable[[int], None], make_room: Callable[[set[int], int, int], None]) -> LayerDistances:
    """The distances of layer `seeds`, its values loaded in `store`: the
    smaller layers a group at a time (`groups`, plan.distance_groups), those
    already held first (load(m) reads layer m into the store;
    make_room(keep, need, working) drops others until `need` more bytes fit
    beside `working`). What solver.build calls."""
    solver = DistanceSolver(seeds, store, rows)
    groups.sort(key=lambda group: -sum(1 for m in group if store.loaded[m]))
    for group in groups:
        make_room(set(group) | {seeds}, sum(index.layer_size(m) for m in group if not store.loaded[m]),
                  working_bytes(solver.size))
        for m in group:
            if not store.loaded[m]:
                load(m)
        solver.starts(group)
    return solver.solve()


__all__ = ["DERIVE", "DERIVED", "DISTANCE_CAP", "NO_DISTANCE", "DistanceSolver", "DistanceSpread", "LayerDistances",
           "build_distances", "distance_at", "distance_histogram", "distance_spread", "for_file", "layer_distances"]
