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
(solver.retrograde.predecessors):

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

Storage: a byte a position (uint8), ``DISTANCE_CAP`` (253) meaning "253 or
more", the exact distance of each such position in a small overflow table
of (rank, distance) rows sorted by rank; NO_DISTANCE (254) where v = 0;
255 never (the HDF5 fill value, and the working "not settled yet").

Working memory beside the layer's values (which are in the LayerStore
already): the distance byte and a nibble of counts a position (1.5 bytes a
position, the value build's working state is 1.52), two flag bytes a block
of 256 positions, and the overflow rows; the smaller layers n-15..n-2 are
read where a v > 0 position captures, as the value build's exit pass reads
them.

The frontiers' kernels share their work as the builder's do (blocks taken
from a shared counter): a v > 0 predecessor is claimed with a
compare-and-swap of its distance byte, a v < 0 one counted down with an
atomic decrement of its nibble, so each position is settled exactly once by
one thread. The result does not depend on the order or the threads: it is a
function of the values.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import numpy as np
from numba import njit, prange

from . import index
from .errors import BuildError
from .intrinsics import atomic_add, atomic_sub, compare_and_swap, prefetch
from .layers import LayerStore
from .retrograde import (
    BATCH,
    BLOCK,
    BYTE_ONES,
    MAX_PREDECESSORS,
    SERIAL_SIZE,
    WORK_SLOTS,
    _has_byte,
    _position_at,
    exit_layers,
    predecessors,
    thread_count,
)
from .rules import ROW, legal_mask, play

DISTANCE_CAP = 253  # a stored byte of 253 means "253 or more": the exact distance is in the overflow table
NO_DISTANCE = 254  # the byte of a position whose value is 0 (no distance)
UNSETTLED = 255  # never in finished data: the working "not settled yet", and the files' fill value
DISTANCE_VERSION = 1
DISTANCE_METRIC = ("plies to the next capture or end of the game, the side ahead converting as fast as it can and "
                   "the side behind holding out as long as it can, the value kept; none where the value is 0")
WORKING_BYTES = 1.5  # a distance byte and a nibble of counts a position, beside its value byte
COUNT = 0xF  # a position's nibble: its keeping quiet children not yet settled (v < 0)


class LayerDistances(NamedTuple):
    """A layer's distances as stored: a byte a position (DISTANCE_CAP: see
    `overflow`, NO_DISTANCE: value 0) and the (rank, distance) rows, sorted
    by rank, of the positions at DISTANCE_CAP or more."""

    distance: np.ndarray
    overflow: np.ndarray
    stats: dict[str, Any]


def distance_at(distance: np.ndarray, overflow: np.ndarray, rank: int, cap: int = DISTANCE_CAP) -> int | None:
    """The exact distance of `rank` from a layer's bytes and overflow rows (None for a value of 0)."""
    byte = int(distance[rank])
    if byte == NO_DISTANCE:
        return None
    if byte < cap:
        return byte
    row = int(np.searchsorted(overflow[:, 0], rank)) if overflow.shape[0] else 0
    if row >= overflow.shape[0] or int(overflow[row, 0]) != rank:
        raise BuildError(f"rank {rank} is stored as {cap} or more but has no overflow row")
    return int(overflow[row, 1])


def working_bytes(size: int) -> int:
    """Memory of the distance pass over `size` positions beside their values:
    the distance bytes (padded to whole words), the count nibbles and two
    flag bytes a block."""
    return (size + 7) // 8 * 8 + (size + 1) // 2 + 2 * ((size + BLOCK - 1) // BLOCK)


# Kernels ----------------------------------------------------------------------------


@njit(cache=True)
def _start_block(seeds, start, stop, values, flat, starts, use, first, distance, counts, rows, flags_zero, flags_one):
    """Step 1 for ranks start..stop-1 (a whole number of count bytes).

    With `first`, every position gets its start: NO_DISTANCE (v = 0), 0 (no
    move), 1 (v > 0 with a keeping capture into a layer of `use`, or v < 0
    without a keeping quiet move), else UNSETTLED with its count of keeping
    quiet children (v < 0). A later pass (another group of smaller layers in
    `use`) only looks for keeping captures of v > 0 positions still
    UNSETTLED. Blocks holding a 0 or a 1 are flagged in flags_zero and
    flags_one; returns the positions settled here.
    """
    settled = 0
    run_first = 0
    run_length = 0
    run_start = 0
    mover = np.uint64(0)
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
        keeping_capture = False
        keeping_quiet = 0
        for house in range(ROW):
            if not mask & (1 << house):
                continue
            if value > 0:
                # Only captures matter: a quiet move of a v > 0 position costs at least 2.
                captured, child_mover, child_opponent = play(mover, opponent, house)
                if captured > 0 and use[seeds - captured]:
                    child = index.rank_packed(child_mover, child_opponent, seeds - captured)
                    if captured - np.int64(flat[starts[seeds - captured] + child]) == value:
                        keeping_capture = True
                        break
            else:
                captured, child_mover, child_opponent = play(mover, opponent, house)
                if captured == 0 and -np.int64(values[index.rank_packed(child_mover, child_opponent, seeds)]) == value:
                    keeping_quiet += 1
        if (value > 0 and keeping_capture) or (value < 0 and keeping_quiet == 0):
            distance[rank] = 1
            flags_one[rank // BLOCK] = 1
            settled += 1
        elif first:
            distance[rank] = UNSETTLED
            if value < 0:
                counts[rank >> 1] |= np.uint8(keeping_quiet << ((rank & 1) << 2))
    return settled


@njit(cache=True, parallel=True)
def start_pass(seeds: int, size: int, values: np.ndarray, flat: np.ndarray, starts: np.ndarray, use: np.ndarray,
               first: bool, distance: np.ndarray, counts: np.ndarray, rows: tuple[np.ndarray, ...],
               flags_zero: np.ndarray, flags_one: np.ndarray) -> int:
    """Step 1 over the `size` positions of layer `seeds` (values: its int8
    values; flat/starts: the store, with the smaller layers marked in `use`
    loaded): see _start_block. Returns the positions settled at 0 or 1."""
    blocks = (size + BLOCK - 1) // BLOCK
    counter = np.zeros(1, dtype=np.int64)
    settled = np.zeros(WORK_SLOTS, dtype=np.int64)
    for slot in prange(WORK_SLOTS):
        while True:
            block = atomic_add(counter, 0, np.int64(1))
            if block >= blocks:
                break
            settled[slot] += _start_block(seeds, block * BLOCK, min(size, block * BLOCK + BLOCK), values, flat, starts,
                                          use, first, distance, counts, rows, flags_zero, flags_one)
    return settled.sum()


@njit(cache=True, inline="always")
def _settle_batch(found, told, count, new, cap, values, distance, counts, next_flags, listing, listed):
    """Tell a batch of predecessors found[i] that a child worth told[i] was
    settled this frontier; those settled get `new` (capped at `cap`), their
    block flagged, and are appended to `listing` (counter listed[0]) when
    new >= cap. Returns the positions settled."""
    for i in range(count):
        prefetch(distance, found[i])  # type: ignore[call-arg, arg-type]  # numba's @intrinsic passes typingctx
    settled = 0
    byte = np.uint8(min(new, cap))
    for i in range(count):
        parent = found[i]
        parent_value = np.int64(values[parent])
        if parent_value != -told[i] or distance[parent] != UNSETTLED:
            continue  # the move does not keep the parent's value, or the parent is settled
        if parent_value > 0:
            if not compare_and_swap(distance, parent, np.uint8(UNSETTLED), byte):  # type: ignore[call-arg, arg-type]
                continue  # another thread settled it this frontier
        else:
            shift = (parent & 1) << 2
            old = atomic_sub(counts, parent >> 1, np.uint8(1 << shift))
            if (np.int64(old) >> shift) & COUNT != 1:
                continue
            distance[parent] = byte
        settled += 1
        next_flags[parent // BLOCK] = 1
        if new >= cap:
            listing[atomic_add(listed, 0, np.int64(1))] = parent
    return settled


@njit(cache=True)
def _frontier_block(seeds, size, frontier, cap, start, stop, ranks, values, distance, words, counts, next_flags, rows,
                    found, movers, opponents, told, listing, listed):
    """Tell the predecessors of the positions settled at `frontier` among
    ranks start..stop-1 (found by their distance byte, eight at a time), or,
    with `ranks` not empty, of ranks[start:stop] (the frontiers at the cap
    and beyond, listed). Returns the positions settled at frontier + 1."""
    pattern = np.uint64(min(frontier, cap)) * BYTE_ONES
    settled = 0
    count = 0
    current = -1
    mover = np.uint64(0)
    opponent = np.uint64(0)
    listed_mode = ranks.shape[0] > 0
    position = start
    while position < stop:
        if listed_mode:
            rank = ranks[position]
            position += 1
        else:
            if position % 8 == 0 and not _has_byte(words[position // 8], pattern):
                position += 8
                continue
            rank = position
            position += 1
            if distance[rank] != frontier:
                continue
        mover, opponent = _position_at(rank, current, mover, opponent, seeds, rows)
        current = rank
        added = predecessors(mover, opponent, seeds, 0, size, values, counts, False, True, found, count, movers,
                             opponents)
        told[count:added] = values[rank]
        count = added
        if count >= BATCH:
            settled += _settle_batch(found, told, count, frontier + 1, cap, values, distance, counts, next_flags,
                                     listing, listed)
            count = 0
    settled += _settle_batch(found, told, count, frontier + 1, cap, values, distance, counts, next_flags, listing,
                             listed)
    return settled


@njit(cache=True, parallel=True)
def frontier_pass(seeds: int, size: int, frontier: int, cap: int, active: np.ndarray, ranks: np.ndarray,
                  values: np.ndarray, distance: np.ndarray, counts: np.ndarray, next_flags: np.ndarray,
                  rows: tuple[np.ndarray, ...], listing: np.ndarray, listed: np.ndarray) -> int:
    """Step 2 for one frontier: the predecessors of every position settled
    at `frontier` are told (see _frontier_block), those it settles getting
    frontier + 1. The positions are looked for in the `active` blocks, or,
    when `ranks` is not empty, are the ranks listed there. Returns how many
    were settled."""
    words = distance.view(np.uint64)  # distance is padded to whole words
    listed_mode = ranks.shape[0] > 0
    items = ranks.shape[0] if listed_mode else active.shape[0]
    step = BLOCK if listed_mode else 1
    counter = np.zeros(1, dtype=np.int64)
    settled = np.zeros(WORK_SLOTS, dtype=np.int64)
    batch = BATCH + MAX_PREDECESSORS
    for slot in prange(WORK_SLOTS):
        found = np.empty(batch, dtype=np.int64)
        movers = np.empty(batch, dtype=np.uint64)
        opponents = np.empty(batch, dtype=np.uint64)
        told = np.empty(batch, dtype=np.int8)
        while True:
            item = atomic_add(counter, 0, np.int64(step))
            if item >= items:
                break
            if listed_mode:
                first, last = item, min(items, item + step)
            else:
                first, last = active[item] * BLOCK, min(size, active[item] * BLOCK + BLOCK)
            settled[slot] += _frontier_block(seeds, size, frontier, cap, first, last, ranks, values, distance, words,
                                             counts, next_flags, rows, found, movers, opponents, told, listing, listed)
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
        self.counts = np.zeros((self.size + 1) // 2, dtype=np.uint8)
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
                                           self.passes == 0, self.distance, self.counts, self.rows, self.flags_zero,
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
            with thread_count(1 if (active.shape[0] <= 8 and ranks.shape[0] < BLOCK) else None):
                settled = int(frontier_pass(seeds, size, frontier, cap, active, ranks, self.values, self._padded,
                                            self.counts, next_flags, self.rows, listing, listed))
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


def distance_groups(seeds: int, budget: int) -> list[list[int]] | None:
    """The smaller layers of layer `seeds` grouped for its distance pass
    within `budget` (first fit, largest first), beside the layer's values
    and the pass's working state; None when the largest does not fit."""
    from .plan import BASE_BYTES, _first_fit

    size = index.layer_size(seeds)
    room = budget - BASE_BYTES - size - working_bytes(size)
    if max((index.layer_size(m) for m in exit_layers(seeds)), default=0) > room:
        return None
    return _first_fit(exit_layers(seeds), room)


def build_distances(seeds: int, store: LayerStore, budget: int, rows: tuple[np.ndarray, ...] | None,
                    load: Callable[[int], None], make_room: Callable[[set[int], int, int], None]
                    ) -> LayerDistances | None:
    """The distances of layer `seeds`, its values loaded in `store`, within
    `budget`: the smaller layers a group at a time, those already held
    first (load(m) reads layer m into the store; make_room(keep, need,
    working) drops others until `need` more bytes fit beside `working`).
    What solver.build calls; None when the budget cannot hold the pass."""
    groups = distance_groups(seeds, budget)
    if groups is None:
        return None
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


__all__ = ["DISTANCE_CAP", "NO_DISTANCE", "DistanceSolver", "LayerDistances", "build_distances", "distance_at",
           "distance_histogram", "layer_distances"]
