"""Distances to conversion holding one byte a position: the pass for layers too big for solver.distance.

solver.distance holds a layer's values and its distance bytes together,
2.01 bytes a position, because its frontiers ask, for every predecessor
told, whether the move keeps the predecessor's value (v_p == -v_child).
This pass asks the same question of the distance byte alone, one value
class at a time, and reads the values only in rank order, streamed (from
the layer's file a slice at a time): a layer of n positions keeps n bytes
resident (and three flag bytes a block of 256, the carried rows and a
slice of values: 1.02 to 1.04 bytes a position from layer 30 on), so layer 37
(18.3 billion positions) fits the default budget of a 24 GiB machine,
where solver.distance stops at 35.

The byte (``distance[rank]``):

* 0..cap settled (cap = DISTANCE_CAP, 240: "240 or more", the exact
  distance in the overflow rows, as solver.distance stores it);
  NO_DISTANCE (254) where v = 0; OPEN (255) not settled, of a class not
  yet done;
* the working codes 241..252 of the one class k being done (positions
  worth +k or -k): PLUS_OPEN (+k, not settled), MINUS_MARK (-k, its quiet
  moves not counted yet), MINUS_COUNTED + c (-k, c = 1..6 keeping quiet
  moves whose child is not settled), and the frontier codes
  FRONT_PLUS + p, FRONT_MINUS + p (settled at a frontier of parity p, its
  predecessors not told yet: the frontier d tells those of parity d % 2
  and settles at parity (d + 1) % 2, so the two never mix).

The classes are independent: a move that keeps the value leads from v to
-v (captured - v_child == v with no capture: v_child = -v), so a frontier
of class k only ever settles positions of class k, and the total telling
work is one tell per position worth other than 0, as in solver.distance.

Steps (lean_distances):

1. **The start**, once, the only step that reads the smaller layers
   (solver.distance.start_pass, START_SLICE then START_CAPTURES: the
   smaller layers a group at a time, the layer's values a slice at a time
   beside them): NO_DISTANCE for v = 0, 0 for no legal move, 1 for v > 0
   with a capture that keeps v, OPEN for the rest (solver.distance's
   COUNTED of a v < 0 position turned to OPEN: the class passes read the
   sign from the values). When the distance bytes and the largest smaller
   layer do not fit together (plan: layer 37 on 22 GiB), the start keeps
   the bytes in a scratch file between the groups, a slice at a time
   beside them (a spilled start), and reads them whole once the smaller
   layers are dropped. The values it reads first may be copied,
   uncompressed, to a file the classes read back (`raw`): a table's chunks
   are then inflated once, not once a class.
2. **Per class k = 1..max |v|**, the values streamed once (``_mark``):
   v = +k: 0 -> FRONT_PLUS + 0, 1 -> FRONT_PLUS + 1, OPEN -> PLUS_OPEN;
   v = -k: 0 -> FRONT_MINUS + 0, OPEN -> MINUS_MARK. Then the count
   (``_count``, the byte alone, the blocks holding a MINUS_MARK): each -k
   position's quiet moves are played and those whose child's byte is a
   +k code (PLUS_OPEN, FRONT_PLUS + 0 or 1: v_child = +k, the move keeps
   -k) counted: MINUS_COUNTED + c, or FRONT_MINUS + 1 when c = 0 (a
   capture keeps it: distance 1).
3. **The frontiers of the class**, ply by ply, as solver.distance's: a
   position of code FRONT_* + d % 2 gets its distance d and tells its
   in-layer predecessors (layer_state.predecessors, un-sowing): a +k
   teller counts its MINUS_COUNTED predecessors down (settled at d + 1 by
   the last: greatest cost), a -k teller settles its PLUS_OPEN ones at
   d + 1 (the first: least cost), with the same byte atomics (a
   compare-and-swap, an atomic decrement), so each is settled once by one
   thread. A frontier finds its tellers in the blocks the last one flagged
   or, when it is thin (CARRIED_TOLD), in the rows the last one carried
   (rank and the words un-sowing gave), as solver.distance's. A class is done when a frontier
   settles nothing; every position of the class must be settled then,
   else BuildError (the values are not the tables' fixed point).

Why flags and carried rows, not frontier rank lists overflowing to
scratch files: the frontier codes in the byte say everything a list
would, at no cost; scanning a flagged block costs 32 word reads, and a
thin frontier (the long tail of a layer's plies) is carried in memory. A
large frontier is told in rank order, from its blocks, even when its rows
were carried: its predecessors are then reached with better locality
(layer 20, one thread: 12.0 s of telling against 17.1 s with up to 1 Mi
rows carried). Nothing is read from disk after the start but the values,
sequentially, once a class (from the raw copy when there is one) and
twice more for the file.

The bytes and the overflow rows are those of solver.distance
(tests/test_lean_distance.py holds it to that, byte for byte); the time
1.8 to 2.9 times its (layers 20..24 under load, docs/PERFORMANCE.md).
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Iterable
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from . import index
from .distance import (
    CARRIED_CHUNK,
    DISTANCE_CAP,
    FRONTIER_CHUNK,
    SERIAL_CARRIED,
    SERIAL_FRONTIER,
    SLICE_ALIGN,
    START_CAPTURES,
    START_SLICE,
    LayerDistances,
    carried_rows,
    carry_rows,
    distance_histogram,
    for_file,
    start_pass,
)
from .errors import BuildError, ScratchError
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
from .layers import BASE_BYTES, LayerStore, first_fit
from .rules import ROW, legal_mask, play

OPEN = 255  # not settled, of a class not done yet (the start's UNSETTLED, and its COUNTED turned to it)
START_COUNTED = 247  # solver.distance's COUNTED: what its START_SLICE leaves in a v < 0 position with a move
PLUS_OPEN = 241  # class k: +k, not settled
MINUS_MARK = 242  # class k: -k, its keeping quiet moves not counted yet; MINUS_MARK + c (c = 1..6): c left
MINUS_COUNTED = MINUS_MARK
FRONT_PLUS = 249  # class k: +k settled at a frontier of parity p (FRONT_PLUS + p), not told yet
FRONT_MINUS = 251  # class k: -k settled at a frontier of parity p (FRONT_MINUS + p), not told yet
VALUE_SLICE = 1 << 24  # ranks of values streamed at once (16 MiB)
CARRIED_TOLD = 1 << 16  # a frontier of at most this many carried rows is told from them, a larger one in rank order

ValueReader = Callable[[int, int], np.ndarray]  # read(lo, hi): the layer's values of ranks lo..hi-1 (int8)


def working_bytes(size: int) -> int:
    """Memory of this pass over `size` positions: the distance bytes (padded
    to whole words), three flag bytes a block, the rows two frontiers carry
    (carried_rows, 24 bytes each) and one slice of values streamed."""
    return ((size + 7) // 8 * 8 + 3 * ((size + BLOCK - 1) // BLOCK) + 2 * 24 * carried_rows(size)
            + min(size, VALUE_SLICE))


# Kernels ----------------------------------------------------------------------------


@njit(cache=True, parallel=True)
def _open_counted(distance: np.ndarray) -> None:
    """The start's COUNTED (a v < 0 position with a move) turned to OPEN."""
    chunks = (distance.shape[0] + VALUE_SLICE - 1) // VALUE_SLICE
    for chunk in prange(chunks):
        for rank in range(chunk * VALUE_SLICE, min(distance.shape[0], chunk * VALUE_SLICE + VALUE_SLICE)):
            if distance[rank] == START_COUNTED:
                distance[rank] = OPEN


MARK_CHUNK = 1 << 16  # ranks a thread marks at once


@njit(cache=True, parallel=True)
def _mark(values: np.ndarray, lo: int, k: int, distance: np.ndarray, flags_even: np.ndarray, flags_odd: np.ndarray,
          minus_blocks: np.ndarray) -> np.ndarray:
    """Step 2's marks for class `k` over ranks lo..lo + len(values) - 1
    (values[rank - lo]); returns [positions of the class, those settled
    here at 0 or 1, those worth -k left to count]. Blocks holding a 0 are
    flagged in flags_even, a 1 in flags_odd, a MINUS_MARK in minus_blocks
    (a flag is only ever set to 1: two threads on one block agree)."""
    chunks = (values.shape[0] + MARK_CHUNK - 1) // MARK_CHUNK
    counts = np.zeros((chunks, 3), dtype=np.int64)
    for chunk in prange(chunks):
        for at in range(chunk * MARK_CHUNK, min(values.shape[0], chunk * MARK_CHUNK + MARK_CHUNK)):
            value = np.int64(values[at])
            if value != k and value != -k:
                continue
            rank = lo + at
            byte = distance[rank]
            counts[chunk, 0] += 1
            if byte == 0:
                distance[rank] = FRONT_PLUS if value > 0 else FRONT_MINUS
                flags_even[rank // BLOCK] = 1
                counts[chunk, 1] += 1
            elif value > 0 and byte == 1:
                distance[rank] = FRONT_PLUS + 1
                flags_odd[rank // BLOCK] = 1
                counts[chunk, 1] += 1
            elif value > 0:
                distance[rank] = PLUS_OPEN
            else:
                distance[rank] = MINUS_MARK
                minus_blocks[rank // BLOCK] = 1
                counts[chunk, 2] += 1
    return counts.sum(axis=0)


@njit(cache=True, inline="always")
def _plus_code(byte):
    """Whether a byte is that of a position worth +k of the class being done, before its frontiers."""
    return byte == PLUS_OPEN or FRONT_PLUS <= byte <= FRONT_PLUS + 1


@hot_kernel
def _count_block(seeds, start, stop, distance, rows, flags_odd, where, owners, kept):
    """The keeping quiet moves of each MINUS_MARK position of ranks
    start..stop-1: MINUS_COUNTED + their number, or FRONT_MINUS + 1 (and its
    block flagged) when none. Returns the positions settled so. The
    children a block asks about are gathered first (where[j] the child's
    rank, owners[j] its parent's offset in the block), their bytes
    prefetched, and read only then, so that those misses overlap; kept[i]
    counts offset i's. Reads only +k codes of other positions, which no
    thread changes here."""
    settled = 0
    asked = 0
    run_first = 0
    run_length = 0
    run_start = 0
    mover = np.uint64(0)
    pattern = np.uint64(MINUS_MARK) * BYTE_ONES
    words = distance.view(np.uint64)
    for word in range(start // 8, (stop + 7) // 8):
        if not has_byte(words[word], pattern):
            continue
        for rank in range(word * 8, min(stop, word * 8 + 8)):
            if distance[rank] != MINUS_MARK:
                continue
            kept[rank - start] = 0
            if not run_first <= rank < run_first + run_length:
                mover, run_first, run_length, run_start = index.unrank_row(seeds, rank, rows[0], rows[1], rows[3])
            opponent = rows[2][run_start + rank - run_first]
            mask = legal_mask(mover, opponent)
            for house in range(ROW):
                if not mask & (1 << house):
                    continue
                captured, child_mover, child_opponent = play(mover, opponent, house)
                if captured == 0:
                    child = index.rank_packed(child_mover, child_opponent, seeds)
                    prefetch(distance, child)  # type: ignore[call-arg, arg-type]  # numba's @intrinsic passes typingctx
                    where[asked] = child
                    owners[asked] = rank - start
                    asked += 1
    for j in range(asked):
        if _plus_code(distance[where[j]]):
            kept[owners[j]] += 1
    for rank in range(start, stop):
        if distance[rank] != MINUS_MARK:
            continue
        if kept[rank - start]:
            distance[rank] = MINUS_COUNTED + kept[rank - start]
        else:
            distance[rank] = FRONT_MINUS + 1
            flags_odd[rank // BLOCK] = 1
            settled += 1
    return settled


@njit(cache=True, parallel=True)
def _count(seeds: int, size: int, active: np.ndarray, distance: np.ndarray, rows: tuple[np.ndarray, ...],
           flags_odd: np.ndarray) -> int:
    """Step 2's count over the `active` blocks (those holding a MINUS_MARK);
    returns the positions it settles at 1. `distance` is padded to whole words."""
    counter = np.zeros(1, dtype=np.int64)
    settled = np.zeros(WORK_SLOTS, dtype=np.int64)
    for slot in prange(WORK_SLOTS):
        where = np.empty(BLOCK * ROW, dtype=np.int64)
        owners = np.empty(BLOCK * ROW, dtype=np.int64)
        kept = np.empty(BLOCK, dtype=np.int64)
        while True:
            item = atomic_add(counter, 0, np.int64(1))
            if item >= active.shape[0]:
                break
            start = active[item] * BLOCK
            settled[slot] += _count_block(seeds, start, min(size, start + BLOCK), distance, rows, flags_odd, where,
                                          owners, kept)
    return settled.sum()


@njit(cache=True, inline="always")
def _settle_batch(found, told, movers, opponents, count, parity, distance, next_flags, carried, carried_movers,
                  carried_opponents, carry):
    """Tell a batch of predecessors found[i] (words movers[i], opponents[i])
    that a child worth +k (told[i] > 0) or -k was settled this frontier:
    a MINUS_COUNTED one counts down, settled (FRONT_MINUS + parity) by its
    last keeping child; a PLUS_OPEN one is settled (FRONT_PLUS + parity) by
    the first. Those settled have their block flagged and are carried with
    their words as far as the rows hold (carry[0] beyond their length: not
    all carried). Every other byte (settled, another class, not keeping)
    is left alone. Returns the positions settled."""
    settled = 0
    for i in range(count):
        parent = found[i]
        code = np.int64(distance[parent])
        if told[i] < 0:  # the parent is worth +k: settled by its first keeping child
            if code != PLUS_OPEN:
                continue
            if not compare_and_swap(distance, parent, np.uint8(PLUS_OPEN),  # type: ignore[call-arg]
                                    np.uint8(FRONT_PLUS + parity)):
                continue  # another thread settled it this frontier
        else:  # the parent is worth -k: settled by its last keeping child
            if not MINUS_COUNTED < code <= MINUS_COUNTED + ROW:
                continue
            if np.int64(atomic_sub(distance, parent, np.uint8(1))) != MINUS_COUNTED + 1:
                continue
            distance[parent] = FRONT_MINUS + parity
        next_flags[parent // BLOCK] = 1
        found[settled] = parent
        movers[settled] = movers[i]
        opponents[settled] = opponents[i]
        settled += 1
    carry_rows(settled, found, movers, opponents, carried, carried_movers, carried_opponents, carry)
    return settled


@hot_kernel
def _tell_chunk(seeds, size, frontier, cap, ranks, first, last, with_words, rank_movers, rank_opponents, distance,
                next_flags, rows, found, movers, opponents, told, listing, listed, carried, carried_movers,
                carried_opponents, carry):
    """The tellers ranks[first:last] of `frontier` (bytes FRONT_* + its
    parity) get their distance (capped at `cap`, listed in `listing` when
    at it: sign in bit 0, rank above) and tell their predecessors; their
    words are rank_movers, rank_opponents when `with_words`, else unranked
    (ascending ranks). Returns the positions settled at frontier + 1."""
    parity = frontier & 1
    settled = 0
    count = 0
    mover = np.uint64(0)
    opponent = np.uint64(0)
    run_first = 0
    run_length = 0
    run_start = 0
    byte = np.uint8(min(frontier, cap))
    for position in range(first, last):
        rank = ranks[position]
        code = np.int64(distance[rank])
        if code == FRONT_PLUS + parity:
            sign = 1
        elif code == FRONT_MINUS + parity:
            sign = -1
        else:
            continue
        distance[rank] = byte
        if frontier >= cap:
            listing[atomic_add(listed, 0, np.int64(1))] = 2 * rank + (1 if sign > 0 else 0)
        if with_words:
            mover = rank_movers[position]
            opponent = rank_opponents[position]
        else:
            if not run_first <= rank < run_first + run_length:
                mover, run_first, run_length, run_start = index.unrank_row(seeds, rank, rows[0], rows[1], rows[3])
            opponent = rows[2][run_start + rank - run_first]
        # The distance bytes are what a predecessor's test reads: prefetched as un-sowing finds them.
        added = predecessors(mover, opponent, seeds, 0, size, distance, distance, False, False, found, count, movers,
                             opponents)
        told[count:added] = sign
        count = added
        if count >= BATCH:
            settled += _settle_batch(found, told, movers, opponents, count, 1 - parity, distance, next_flags, carried,
                                     carried_movers, carried_opponents, carry)
            count = 0
    settled += _settle_batch(found, told, movers, opponents, count, 1 - parity, distance, next_flags, carried,
                             carried_movers, carried_opponents, carry)
    return settled


@hot_kernel
def _teller_ranks(parity, first_item, last_item, active, size, words, distance, out):
    """The ranks of code FRONT_PLUS + parity or FRONT_MINUS + parity in
    blocks active[first_item:last_item] into `out`; returns how many."""
    plus = np.uint64(FRONT_PLUS + parity) * BYTE_ONES
    minus = np.uint64(FRONT_MINUS + parity) * BYTE_ONES
    found = 0
    for item in range(first_item, last_item):
        start = active[item] * BLOCK
        stop = min(size, start + BLOCK)
        for word in range(start // 8, (stop + 7) // 8):
            if not (has_byte(words[word], plus) or has_byte(words[word], minus)):
                continue
            for rank in range(word * 8, min(stop, word * 8 + 8)):
                code = distance[rank]
                if code == FRONT_PLUS + parity or code == FRONT_MINUS + parity:
                    out[found] = rank
                    found += 1
    return found


@njit(cache=True, parallel=True)
def _tell_pass(seeds: int, size: int, frontier: int, cap: int, active: np.ndarray, ranks: np.ndarray,
               rank_movers: np.ndarray, rank_opponents: np.ndarray, distance: np.ndarray, next_flags: np.ndarray,
               rows: tuple[np.ndarray, ...], listing: np.ndarray, listed: np.ndarray, carried: np.ndarray,
               carried_movers: np.ndarray, carried_opponents: np.ndarray, carry: np.ndarray) -> int:
    """One frontier of the class: its tellers are found in the `active`
    blocks, or, when `ranks` is not empty, are those rows (carried by the
    last frontier, with their words). Threads take chunks of blocks or
    rows from a shared counter. Returns the positions settled at
    frontier + 1. `distance` is padded to whole words."""
    words = distance.view(np.uint64)
    with_words = ranks.shape[0] > 0
    items = ranks.shape[0] if with_words else active.shape[0]
    step = CARRIED_CHUNK if with_words else FRONTIER_CHUNK
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
            if with_words:
                settled[slot] += _tell_chunk(seeds, size, frontier, cap, ranks, item, last, True, rank_movers,
                                             rank_opponents, distance, next_flags, rows, found, movers, opponents,
                                             told, listing, listed, carried, carried_movers, carried_opponents, carry)
            else:
                count = _teller_ranks(frontier & 1, item, last, active, size, words, distance, todo)
                settled[slot] += _tell_chunk(seeds, size, frontier, cap, todo, 0, count, False, rank_movers,
                                             rank_opponents, distance, next_flags, rows, found, movers, opponents,
                                             told, listing, listed, carried, carried_movers, carried_opponents, carry)
    return settled.sum()


# Driver -----------------------------------------------------------------------------


def slices_of(size: int, step: int = VALUE_SLICE) -> list[tuple[int, int]]:
    """(lo, hi) of each slice of `step` ranks of a layer of `size`."""
    return [(lo, min(size, lo + step)) for lo in range(0, size, step)] or [(0, 0)]


class StartPlan(NamedTuple):
    """How the start of a layer's pass goes: its values a slice of `bounds`
    at a time beside each group of `groups` of smaller layers, its distance
    bytes held whole beside them, or, `spilled`, a slice at a time beside
    them too, the rest in a scratch file (start)."""

    bounds: list[int]
    groups: list[list[int]]
    spilled: bool


SPILL_SLICE = 1 << 26  # ranks of a spilled start's slices (64 MiB of values and as many distance bytes)


def plan(seeds: int, budget: int, slices: int | None = None) -> StartPlan | None:
    """The start of this pass for layer `seeds` within `budget`: the fewest
    slices (or `slices`), cut at multiples of SLICE_ALIGN as
    distance.sliced_plan cuts them, for which its largest smaller layer fits
    beside this pass's working state (working_bytes: no value byte of the
    layer held) and a slice of values; else, spilled, beside a slice of
    values and one of distance bytes alone (the layer 37 of a 24 GiB
    machine: 17.1 GiB of distance bytes, 10.3 GiB for layer 35). None
    when the classes (working_bytes) or a spilled start do not fit."""
    size = index.layer_size(seeds)
    working = working_bytes(size)
    if BASE_BYTES + working > budget:
        return None
    largest = max((index.layer_size(m) for m in exit_layers(seeds)), default=0)
    parts = slices or 1
    while True:
        bounds = _bounds(size, parts, not slices)
        piece = max(hi - lo for lo, hi in itertools.pairwise(bounds))
        room = budget - BASE_BYTES - working - piece
        if largest <= room:
            return StartPlan(bounds, first_fit(exit_layers(seeds), room), False)
        if slices or piece <= SLICE_ALIGN:
            break
        parts *= 2
    bounds = _bounds(size, slices or -(-size // SPILL_SLICE), not slices)
    piece = max(hi - lo for lo, hi in itertools.pairwise(bounds))
    room = budget - BASE_BYTES - spilled_bytes(size, piece)
    if largest <= room:
        return StartPlan(bounds, first_fit(exit_layers(seeds), room), True)
    return None


def _bounds(size: int, parts: int, aligned: bool) -> list[int]:
    step = -(-size // parts)
    step = -(-step // SLICE_ALIGN) * SLICE_ALIGN if aligned else step
    return sorted({min(size, part * step) for part in range(parts + 1)})


def spilled_bytes(size: int, piece: int) -> int:
    """Memory of a spilled start beside its smaller layers: a slice of
    values and one of distance bytes, and start_pass's two flag bytes a
    block."""
    return 2 * piece + 2 * ((size + BLOCK - 1) // BLOCK)


def start(seeds: int, store: LayerStore, bounds: list[int], groups: list[list[int]], rows: tuple[np.ndarray, ...],
          read: ValueReader, load: Callable[[int], None] | None = None,
          make_room: Callable[[set[int], int, int], None] | None = None, spill: str | None = None,
          copy: int = -1) -> np.ndarray:
    """Step 1: the distance bytes (padded to whole words) of layer `seeds`
    after its start: NO_DISTANCE, 0, 1 or OPEN. The smaller layers a group
    of `groups` at a time (load(m) reads layer m into the store,
    make_room(keep, need, working) drops others until `need` more bytes
    fit), the layer's values read(lo, hi) a slice of `bounds` at a time.
    With `spill` (a path), the distance bytes are kept in that file between
    the groups, a slice at a time beside them (a file already there, or a
    link planted at the name, removed first; the file removed at the end),
    and read whole once the smaller layers are dropped (make_room with
    nothing to keep). With `copy` (an open file descriptor), the values
    read are written there too, at their ranks, as they are first read."""
    size = index.layer_size(seeds)
    if bounds[0] != 0 or bounds[-1] != size or any(lo >= hi for lo, hi in itertools.pairwise(bounds)):
        raise ValueError(f"layer {seeds}: slice bounds {bounds} do not cut its {size} ranks")
    if sorted(m for group in groups for m in group) != exit_layers(seeds):
        raise ValueError(f"layer {seeds}: the groups {groups} are not its smaller layers {exit_layers(seeds)}")
    groups = groups or [[]]  # a layer with no smaller layer still takes its start
    padded = None if spill else np.full((size + 7) // 8 * 8, OPEN, dtype=np.uint8)
    blocks = (size + BLOCK - 1) // BLOCK
    flags = (np.zeros(blocks, dtype=np.uint8), np.zeros(blocks, dtype=np.uint8))  # start_pass's, unused here
    piece = max(hi - lo for lo, hi in itertools.pairwise(bounds))
    working = spilled_bytes(size, piece) if spill else working_bytes(size) + piece
    descriptor = _spill_file(spill) if spill else -1
    try:
        groups = sorted(groups, key=lambda group: -sum(1 for m in group if store.loaded[m]))
        for number, group in enumerate(groups):
            need = sum(index.layer_size(m) for m in group if not store.loaded[m])
            if make_room is not None:
                make_room(set(group), need, working)
            for m in group:
                if not store.loaded[m]:
                    if load is None:
                        raise ValueError(f"layer {seeds}: its distances need layer {m} loaded")
                    load(m)
            use = np.zeros(index.MAX_SEEDS + 1, dtype=np.bool_)
            use[group] = True
            for lo, hi in itertools.pairwise(bounds):
                values = read(lo, hi)
                if values.shape != (hi - lo,) or values.dtype != np.int8:
                    raise ValueError(f"layer {seeds}: ranks {lo}..{hi - 1} read as {values.shape} {values.dtype}")
                if copy >= 0 and number == 0:
                    _write_spill(copy, lo, np.ascontiguousarray(values).view(np.uint8))
                if padded is not None:
                    part = padded[lo:hi]
                elif number == 0:
                    part = np.full(hi - lo, OPEN, dtype=np.uint8)
                else:
                    part = _read_spill(descriptor, lo, hi - lo)
                with thread_count(1 if hi - lo < SERIAL_SIZE else None):
                    start_pass(seeds, lo, hi, lo, values, store.flat, store.starts, use,
                               START_SLICE if number == 0 else START_CAPTURES, part, rows, *flags)
                if padded is None:
                    _write_spill(descriptor, lo, part)
                del values, part  # before the next slice is read: never two slices held
        if padded is None:
            if make_room is not None:
                make_room(set(), 0, working_bytes(size))
            padded = np.empty((size + 7) // 8 * 8, dtype=np.uint8)
            padded[size:] = OPEN
            for lo in range(0, size, SPILL_SLICE):
                padded[lo : min(size, lo + SPILL_SLICE)] = _read_spill(descriptor, lo, min(size, lo + SPILL_SLICE) - lo)
    finally:
        if spill:
            os.close(descriptor)
            if os.path.lexists(spill):
                os.remove(spill)
    with thread_count(1 if size < SERIAL_SIZE else None):
        _open_counted(padded[:size])
    return padded


def _spill_file(path: str) -> int:
    """A new file at `path` for a spilled start, never through a link (one planted there is removed, not followed)."""
    if os.path.lexists(path):
        os.remove(path)
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise ScratchError(f"cannot write {path}: {error.strerror}") from None


def _write_spill(descriptor: int, lo: int, part: np.ndarray) -> None:
    view = memoryview(part).cast("B")  # type: ignore[arg-type]  # an ndarray is a buffer (stubs: 3.12 on)
    done = 0
    try:
        while done < len(view):
            done += os.pwrite(descriptor, view[done:], lo + done)
    except OSError as error:
        raise ScratchError(f"the distance start's scratch file cannot be written: {error.strerror}") from None


def _read_spill(descriptor: int, lo: int, count: int) -> np.ndarray:
    part = np.empty(count, dtype=np.uint8)
    view = memoryview(part).cast("B")  # type: ignore[arg-type]  # an ndarray is a buffer (stubs: 3.12 on)
    done = 0
    while done < count:
        got = os.preadv(descriptor, [view[done:]], lo + done)
        if got <= 0:
            raise ScratchError("the distance start's scratch file was cut short")
        done += got
    return part


class ClassStats(NamedTuple):
    """What the frontiers of one value class did."""

    positions: int
    frontiers: int


def solve_classes(seeds: int, padded: np.ndarray, read: ValueReader, rows: tuple[np.ndarray, ...],
                  classes: Iterable[int], cap: int = DISTANCE_CAP, slice_ranks: int = VALUE_SLICE,
                  progress: Callable[[str, float], None] | None = None) -> tuple[np.ndarray, list[ClassStats]]:
    """Steps 2 and 3 for each class k of `classes` (the |v| > 0 the layer
    holds), in place on the bytes `padded` left by start(), the values
    read(lo, hi) a slice of `slice_ranks` at a time, once a class. Returns
    the overflow rows (rank, distance), every one of both signs, sorted by
    rank, and each class's stats. Raises BuildError when a position of a
    class is left unsettled."""
    size = index.layer_size(seeds)
    if padded.shape != ((size + 7) // 8 * 8,) or padded.dtype != np.uint8:
        raise ValueError(f"layer {seeds}: {padded.shape} {padded.dtype} distance bytes, not its padded uint8 ones")
    if not 2 <= cap <= DISTANCE_CAP:
        raise ValueError(f"the cap is 2..{DISTANCE_CAP}, got {cap}")
    blocks = (size + BLOCK - 1) // BLOCK
    flags = (np.zeros(blocks, dtype=np.uint8), np.zeros(blocks, dtype=np.uint8))  # by parity
    minus_blocks = np.zeros(blocks, dtype=np.uint8)
    room = carried_rows(size)
    carried = (np.empty(room, dtype=np.int64), np.empty(room, dtype=np.uint64), np.empty(room, dtype=np.uint64))
    given = (np.empty(room, dtype=np.int64), np.empty(room, dtype=np.uint64), np.empty(room, dtype=np.uint64))
    carry = np.zeros(1, dtype=np.int64)
    listed = np.zeros(1, dtype=np.int64)
    empty = np.zeros(0, dtype=np.int64)
    no_words = np.zeros(0, dtype=np.uint64)
    overflow: list[np.ndarray] = []
    stats = []
    classes = sorted(classes)
    for number, k in enumerate(classes):
        minus_blocks[:] = 0
        found = np.zeros(3, dtype=np.int64)
        for lo, hi in slices_of(size, slice_ranks):
            values = read(lo, hi)
            if values.shape != (hi - lo,) or values.dtype != np.int8:
                raise ValueError(f"layer {seeds}: ranks {lo}..{hi - 1} read as {values.shape} {values.dtype}")
            with thread_count(1 if hi - lo < SERIAL_SIZE else None):
                found += _mark(values, lo, k, padded, flags[0], flags[1], minus_blocks)
            del values  # before the next slice is read
        positions, settled = int(found[0]), int(found[1])
        active = np.flatnonzero(minus_blocks)
        with thread_count(1 if active.shape[0] * BLOCK <= SERIAL_FRONTIER else None):
            settled += int(_count(seeds, size, active, padded, rows, flags[1]))
        frontier = 0
        given_rows = -1  # rows the last frontier carried, all of those it settled; -1: not all (scan its blocks)
        last_settled = 0
        while True:
            parity = frontier & 1
            if given_rows >= 0:
                if given_rows == 0:
                    break
                todo, active = given[0][:given_rows], empty
                serial = given_rows <= SERIAL_CARRIED
            else:
                todo = empty
                active = np.flatnonzero(flags[parity])
                if active.shape[0] == 0 and (frontier > 0 or not flags[1 - parity].any()):
                    break
                serial = active.shape[0] * BLOCK <= SERIAL_FRONTIER
            listing = np.empty(max(1, last_settled if frontier >= cap else 0), dtype=np.int64)
            listed[0] = 0
            carry[0] = 0
            with thread_count(1 if serial else None):
                told = int(_tell_pass(seeds, size, frontier, cap, active, todo,
                                      given[1] if given_rows >= 0 else no_words,
                                      given[2] if given_rows >= 0 else no_words, padded, flags[1 - parity], rows,
                                      listing, listed, *carried, carry))
            if frontier >= cap and listed[0]:
                coded = np.sort(listing[: listed[0]])
                overflow.append(np.stack([coded >> 1, np.full(coded.shape[0], frontier, dtype=np.int64)], axis=1))
            settled += told
            last_settled = told
            # Frontiers 0 and 1 hold positions the marks and the count settled: only from frontier 1 on are the
            # next frontier's positions all carried (when they fit).
            given_rows = int(carry[0]) if frontier >= 1 and carry[0] <= min(room, CARRIED_TOLD) else -1
            carried, given = given, carried
            flags[parity][:] = 0
            frontier += 1
        if settled != positions:
            raise BuildError(f"layer {seeds}: {positions - settled} positions worth {k} or {-k} have no finite "
                             "distance to conversion: the values are not the tables' fixed point")
        stats.append(ClassStats(positions, frontier))
        if progress:
            progress(f"distance class {k}", (number + 1) / len(classes))
    rows_found = np.concatenate(overflow) if overflow else np.zeros((0, 2), dtype=np.int64)
    return rows_found[np.argsort(rows_found[:, 0], kind="stable")], stats


def value_classes(histogram: np.ndarray, seeds: int) -> list[int]:
    """The classes k > 0 a layer holds, from its value histogram (counts of
    -seeds..seeds, tables.histogram)."""
    return [k for k in range(1, seeds + 1) if histogram[seeds + k] + histogram[seeds - k]]


def lean_distances(seeds: int, store: LayerStore, read: ValueReader, histogram: np.ndarray,
                   bounds: list[int] | None = None, groups: list[list[int]] | None = None,
                   rows: tuple[np.ndarray, ...] | None = None, cap: int = DISTANCE_CAP,
                   load: Callable[[int], None] | None = None,
                   make_room: Callable[[set[int], int, int], None] | None = None,
                   slice_ranks: int = VALUE_SLICE, threads: int | None = None,
                   progress: Callable[[str, float], None] | None = None,
                   after_start: Callable[[], None] | None = None, spill: str | None = None,
                   raw: str | None = None) -> LayerDistances:
    """The distances of layer `seeds` holding a byte a position: its values
    read(lo, hi) from wherever they are (its file: tables.load_slice),
    `histogram` their counts (-seeds..seeds), its smaller layers in `store`
    or loaded a group of `groups` at a time (default: one group, the whole
    layer one slice; with `spill`, the start's distance bytes kept in that
    file between the groups: start); after_start() is called once the start is done (the
    build drops the smaller layers there: the classes need none). With
    `raw` (a path), the values are copied there as the start reads them,
    uncompressed, and the classes read them back from it (a file's chunks
    are inflated once, not once a class: at layer 24 under load 8.4 s a
    class, most of the classes' time), the file removed at the end. The same
    LayerDistances as distance.layer_distances (its overflow rows of both
    signs)."""
    size = index.layer_size(seeds)
    rows = rows if rows is not None else index.RowTables(seeds).arrays
    bounds = bounds if bounds is not None else [0, size]
    groups = groups if groups is not None else [exit_layers(seeds)]
    with thread_count(threads):
        began = time.perf_counter()
        copy = _spill_file(raw) if raw else -1
        try:
            padded = start(seeds, store, bounds, groups, rows, read, load, make_room, spill, copy)
            if after_start is not None:
                after_start()
            started = time.perf_counter()
            overflow, classes = solve_classes(
                seeds, padded, read if copy < 0 else lambda lo, hi: _read_spill(copy, lo, hi - lo).view(np.int8), rows,
                value_classes(histogram, seeds), cap, slice_ranks, progress)
            ended = time.perf_counter()
        finally:
            if raw:
                os.close(copy)
                if os.path.lexists(raw):
                    os.remove(raw)
    distance = padded[:size]
    longest = int(overflow[:, 1].max()) if overflow.shape[0] else max(
        (byte for byte, count in enumerate(distance_histogram(distance)[:cap]) if count), default=0)
    return LayerDistances(distance, overflow, {
        "distance_seconds": ended - began,
        "distance_start_seconds": started - began,
        "distance_frontier_seconds": ended - started,
        "distance_passes": len(groups),
        "longest_distance": longest,
        "distance_overflow": int(overflow.shape[0]),
        "distance_working_bytes": working_bytes(size),
        "distance_frontiers": sum(c.frontiers for c in classes),
        "distance_classes": len(classes),
        "distance_lean": True,
    })


def file_distances(found: LayerDistances, read: ValueReader, slice_ranks: int = VALUE_SLICE
                   ) -> tuple[np.ndarray, np.ndarray]:
    """distance.for_file without the layer's values resident: the bytes and
    overflow rows a file stores, made in place (`found` is spent) a slice
    of values read(lo, hi) at a time."""
    size = found.distance.shape[0]
    rows = found.overflow
    kept = []
    for lo, hi in slices_of(size, slice_ranks):
        inside = rows[(rows[:, 0] >= lo) & (rows[:, 0] < hi)] - np.array([lo, 0], dtype=np.int64)
        _, local = for_file(LayerDistances(found.distance[lo:hi], inside, {}), read(lo, hi))
        kept.append(local + np.array([lo, 0], dtype=np.int64))
    stored = np.concatenate(kept) if kept else np.zeros((0, 2), dtype=np.int64)
    return found.distance, stored


class FileValues:
    """A layer's values as tables.write_table takes them, read from its file
    a slice at a time (each chunk checked, tables.load_slice) rather than
    held: shape, dtype and slicing."""

    def __init__(self, read: ValueReader, size: int) -> None:
        self.read = read
        self.shape = (size,)
        self.dtype = np.dtype(np.int8)

    def __getitem__(self, where: slice) -> np.ndarray:
        lo, hi, _ = where.indices(self.shape[0])
        return self.read(lo, max(lo, hi))


__all__ = [
    "OPEN",
    "VALUE_SLICE",
    "FileValues",
    "StartPlan",
    "file_distances",
    "lean_distances",
    "plan",
    "solve_classes",
    "spilled_bytes",
    "start",
    "value_classes",
    "working_bytes",
]
