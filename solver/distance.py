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

A layer built in memory from its start gets its distances from its value
stages run ply by ply (solver.stages.run_stages_by_ply; by_ply here
finishes them): the ply at which a stage resolves a position is its
distance. This module's pass is for the others (a resumed layer, the disk
mode, MPI, a folder of values alone, a budget too small beside the stages)
and for the tests, and gives the same bytes.

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
   starts only once frontier k is done. A frontier finds its positions in
   the blocks the last one flagged (their bytes equal k), or, from the
   third on, takes the rows the last one carried: each position it settled
   with the words un-sowing gave it, as the value stages' stacks do, so a
   thin frontier scans no block and unranks nothing (when they do not fit
   carried_rows, the blocks are scanned).

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
positions, the carried rows (at most 1/64 of the layer's positions, 24
bytes each, twice; 48 MiB) and the overflow rows: 1.01 bytes a position
and the rows, against the value build's 1.52. The smaller layers
n-15..n-2 are read where a v > 0 position captures, as the value build's
exit pass reads them: beside the layer whole, or, when they do not fit
beside it (the disk mode's layers), a group at a time beside a slice of
the layer's values (sliced_plan, build_distances_sliced), the quiet moves
of the positions below 0 counted once the layer is whole again.

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

import itertools
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
    pending_exit,
    predecessors,
    thread_count,
    value_at,
)
from .layers import BASE_BYTES, LayerStore, first_fit
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
    the distance bytes (padded to whole words), two flag bytes a block, and
    the rows two frontiers carry (carried_rows, 24 bytes each)."""
    return (size + 7) // 8 * 8 + 2 * ((size + BLOCK - 1) // BLOCK) + 2 * 24 * carried_rows(size)


def carried_rows(size: int) -> int:
    """The rows a frontier of a layer of `size` positions carries to the
    next (CARRIED_ROWS at most, else 1/64 of the layer: 0.75 bytes a
    position for the two sets at most; the thin frontiers of a layer's tail,
    where carrying pays, hold far fewer)."""
    return min(CARRIED_ROWS, max(1 << 12, size >> 6), size)


# Kernels ----------------------------------------------------------------------------


START_ALL = 0  # a position's whole start: the first pass, every value's start with the captures into `use`
START_CAPTURES = 1  # a later pass: keeping captures into `use` of the v > 0 positions still UNSETTLED
START_SLICE = 2  # the first pass over a slice (disk mode): the start but the v < 0 positions' quiet moves
START_QUIET = 3  # after START_SLICE over every slice: the quiet moves of the v < 0 positions, the layer whole
START_EXITS = 4  # the whole start from each position's exit value E, held in its distance byte: no capture played


@hot_kernel
def _start_block(seeds, start, stop, lo, values, flat, starts, use, mode, distance, rows, flags_zero, flags_one,
                 where, wanted, owners, plan):
    """Step 1 for ranks start..stop-1 of layer `seeds` (values[rank - lo]
    and distance[rank - lo]: the whole layer with lo = 0, or a slice; its
    values also at flat[starts[seeds]:] for START_ALL and START_QUIET, which
    read the quiet moves' children there).

    START_ALL: every position gets its start: NO_DISTANCE (v = 0), 0 (no
    move), 1 (v > 0 with a keeping capture into a layer of `use`, or v < 0
    without a keeping quiet move), else UNSETTLED (v > 0) or COUNTED + its
    keeping quiet moves (v < 0). START_CAPTURES (another group of smaller
    layers in `use`) only looks for keeping captures of v > 0 positions
    still UNSETTLED. START_SLICE is START_ALL without the quiet moves (a v <
    0 position with a move is left at COUNTED), START_QUIET then counts them
    and gives 1 to those without: the two make START_ALL. START_EXITS is
    START_ALL from the exit values E the distance bytes hold (as int8s): a
    v > 0 position gets 1 when E = v (0 when it has no move), else
    UNSETTLED, with no capture played and no smaller layer read. The children a
    block needs are gathered first, their value bytes prefetched, and read
    only then, so that those misses overlap (as the builder's exit pass
    does): where[j] is a child's byte in `flat`, wanted[j] the value that
    keeps its parent's, owners[j] the parent. Blocks holding a 0 or a 1
    are flagged in flags_zero and flags_one; returns the positions settled
    here.
    """
    settled = 0
    asked = 0
    run_first = 0
    run_length = 0
    run_start = 0
    mover = np.uint64(0)
    planned = -1  # the run whose plan `plan` holds
    layer = starts[seeds]
    first = mode != START_CAPTURES and mode != START_QUIET  # START_ALL, START_SLICE, START_EXITS
    captures = mode <= START_SLICE  # START_ALL, START_CAPTURES, START_SLICE
    quiet = mode != START_CAPTURES and mode != START_SLICE  # START_ALL, START_QUIET, START_EXITS
    for rank in range(start, stop):
        value = np.int64(values[rank - lo])
        if value == 0:
            if first:
                distance[rank - lo] = NO_DISTANCE
            continue
        if mode == START_EXITS and value > 0:
            # A capture keeps v exactly when the best of them, E, is v (v >= E: v is the best of all moves). A
            # position with no move has E = v = +-seeds (rules 5 and 6), and only then is its move mask looked at.
            exit = np.int64(np.int8(distance[rank - lo]))
            if exit != value:
                distance[rank - lo] = UNSETTLED
                continue
            if value == seeds:
                if not run_first <= rank < run_first + run_length:
                    mover, run_first, run_length, run_start = index.unrank_row(seeds, rank, rows[0], rows[1], rows[3])
                if legal_mask(mover, rows[2][run_start + rank - run_first]) == 0:
                    distance[rank - lo] = 0
                    flags_zero[rank // BLOCK] = 1
                    settled += 1
                    continue
            distance[rank - lo] = 1
            flags_one[rank // BLOCK] = 1
            settled += 1
            continue
        if mode == START_CAPTURES and (value < 0 or distance[rank - lo] != UNSETTLED):
            continue
        if mode == START_QUIET and (value > 0 or distance[rank - lo] != COUNTED):
            continue
        if not run_first <= rank < run_first + run_length:
            mover, run_first, run_length, run_start = index.unrank_row(seeds, rank, rows[0], rows[1], rows[3])
        opponent = rows[2][run_start + rank - run_first]
        mask = legal_mask(mover, opponent)
        if first and mask == 0:
            distance[rank - lo] = 0
            flags_zero[rank // BLOCK] = 1
            settled += 1
            continue
        if first:
            distance[rank - lo] = UNSETTLED if value > 0 else COUNTED
        if value > 0 and not captures:
            continue
        if value < 0 and not quiet:
            continue
        # A v > 0 position needs its captures alone (a quiet move of it costs at least 2), a v < 0 one its quiet moves.
        candidates = mask & capture_candidates(mover, opponent)
        moves = candidates if value > 0 else mask
        general = opponent == 0 or mover == 0
        if value < 0 and not general:
            # Quiet moves that land nowhere near a capture: the child's rank from the run's plan, without sowing.
            if planned != run_first:
                plan_run(mover, plan)
                planned = run_first
            quiet_moves = mask & ~candidates
            moves = candidates
            while quiet_moves:
                house = lowest_bit(quiet_moves)
                quiet_moves &= quiet_moves - 1
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
        if values[rank - lo] < 0:
            distance[rank - lo] += 1  # one more keeping quiet move
        elif distance[rank - lo] == UNSETTLED:
            distance[rank - lo] = 1
            flags_one[rank // BLOCK] = 1
            settled += 1
    if quiet:
        for rank in range(start, stop):
            if values[rank - lo] < 0 and distance[rank - lo] == COUNTED:  # no keeping quiet move: a capture keeps it
                distance[rank - lo] = 1
                flags_one[rank // BLOCK] = 1
                settled += 1
    return settled


COPY_CHUNK = 1 << 16  # ranks copy_exits takes at once


@njit(cache=True, parallel=True)
def copy_exits(lined: np.ndarray, size: int, out: np.ndarray) -> None:
    """out[rank] = the exit value E of each of `size` positions (as an int8's
    byte), from a layer's working state in the lined layout once its exit
    passes are done and before its stages (every value byte a pending code)."""
    chunks = (size + COPY_CHUNK - 1) // COPY_CHUNK
    for chunk in prange(chunks):
        for rank in range(chunk * COPY_CHUNK, min(size, chunk * COPY_CHUNK + COPY_CHUNK)):
            out[rank] = np.uint8(pending_exit(lined[value_at(True, rank)]) & 0xFF)



@njit(cache=True, parallel=True)
def start_pass(seeds: int, start: int, stop: int, lo: int, values: np.ndarray, flat: np.ndarray, starts: np.ndarray,
               use: np.ndarray, mode: int, distance: np.ndarray, rows: tuple[np.ndarray, ...], flags_zero: np.ndarray,
               flags_one: np.ndarray) -> int:
    """Step 1 (`mode`: see _start_block) over ranks start..stop-1 of layer
    `seeds`, whose values and distance bytes are values[rank - lo] and
    distance[rank - lo] (the layer's values also in its slot of the store
    flat/starts for START_ALL and START_QUIET), with the smaller layers
    marked in `use` loaded. Returns the positions settled at 0 or 1."""
    blocks = (stop - start + BLOCK - 1) // BLOCK
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
            first = start + block * BLOCK
            settled[slot] += _start_block(seeds, first, min(stop, first + BLOCK), lo, values, flat, starts, use, mode,
                                          distance, rows, flags_zero, flags_one, where, wanted, owners, plan)
    return settled.sum()


@njit(cache=True, inline="always")
def _settle_batch(found, told, movers, opponents, count, new, cap, values, distance, next_flags, listing, listed,
                  carried, carried_movers, carried_opponents, carry):
    """Tell a batch of predecessors found[i] (words movers[i], opponents[i])
    that a child worth told[i] was settled this frontier; those settled get
    `new` (capped at `cap`), their block flagged, are appended to `listing`
    (counter listed[0]) when new >= cap, and are carried to the next
    frontier with their words: rows carry[0].. of carried,
    carried_movers, carried_opponents, as far as those hold (carry[0]
    beyond their length says the carried rows are not complete). Returns
    the positions settled. The predecessors whose move keeps their value
    (their value byte prefetched by un-sowing) are kept first and their
    distance bytes prefetched, then told."""
    kept = 0
    for i in range(count):
        if np.int64(values[found[i]]) == -np.int64(told[i]):
            found[kept] = found[i]
            told[kept] = told[i]
            movers[kept] = movers[i]
            opponents[kept] = opponents[i]
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
        next_flags[parent // BLOCK] = 1
        if new >= cap:
            listing[atomic_add(listed, 0, np.int64(1))] = parent
        found[settled] = parent
        movers[settled] = movers[i]
        opponents[settled] = opponents[i]
        settled += 1
    carry_rows(settled, found, movers, opponents, carried, carried_movers, carried_opponents, carry)
    return settled


@njit(cache=True, inline="always")
def carry_rows(settled, found, movers, opponents, carried, carried_movers, carried_opponents, carry):
    """The `settled` positions of a batch (found, with their words) carried
    to the next frontier where carried has room: one atomic add a batch
    reserves their rows (not one a position: the counter's line would
    bounce); `carry` counts every one, so a frontier that outgrew the rows
    knows to scan its blocks instead."""
    if settled:
        first = atomic_add(carry, 0, np.int64(settled))
        room = carried.shape[0]
        for i in range(min(settled, max(0, room - first))):
            carried[first + i] = found[i]
            carried_movers[first + i] = movers[i]
            carried_opponents[first + i] = opponents[i]


@hot_kernel
def _frontier_chunk(seeds, size, frontier, cap, ranks, first, last, with_words, rank_movers, rank_opponents, values,
                    distance, next_flags, rows, found, movers, opponents, told, listing, listed, carried,
                    carried_movers, carried_opponents, carry):
    """Tell the predecessors of ranks[first:last], settled at `frontier`:
    their words are rank_movers, rank_opponents when `with_words` (rows
    carried from the last frontier), else unranked (ascending ranks: the
    rows' runs are walked, not searched). Returns the positions settled at
    frontier + 1."""
    settled = 0
    count = 0
    mover = np.uint64(0)
    opponent = np.uint64(0)
    run_first = 0
    run_length = 0
    run_start = 0
    for position in range(first, last):
        rank = ranks[position]
        if with_words:
            mover = rank_movers[position]
            opponent = rank_opponents[position]
        else:
            if not run_first <= rank < run_first + run_length:
                mover, run_first, run_length, run_start = index.unrank_row(seeds, rank, rows[0], rows[1], rows[3])
            opponent = rows[2][run_start + rank - run_first]
        added = predecessors(mover, opponent, seeds, 0, size, values, distance, False, False, found, count, movers,
                             opponents)
        told[count:added] = values[rank]
        count = added
        if count >= BATCH:
            settled += _settle_batch(found, told, movers, opponents, count, frontier + 1, cap, values, distance,
                                     next_flags, listing, listed, carried, carried_movers, carried_opponents, carry)
            count = 0
    settled += _settle_batch(found, told, movers, opponents, count, frontier + 1, cap, values, distance, next_flags,
                             listing, listed, carried, carried_movers, carried_opponents, carry)
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
SERIAL_CARRIED = 1 << 13  # a frontier of this few carried rows runs on one thread, for the same reason
FRONTIER_CHUNK = 16  # active blocks (or BLOCK times as many listed ranks) a thread takes at once
CARRIED_CHUNK = 1 << 10  # carried rows a thread takes at once
CARRIED_ROWS = 1 << 20  # rows (rank and words: 24 bytes) a frontier carries to the next, twice: 48 MiB at most
# A frontier settled by the last one (past the first two) and no larger than this is told from its carried rows,
# its words un-sowing gave: no block scanned, no rank unranked. The thin frontiers of a layer's tail settle a few
# positions per block, scattered, where scanning and unranking cost more than telling (layer 18: the 64 frontiers
# past 12, under 11% of the positions, took a third of the frontiers' time).


@njit(cache=True, parallel=True)
def frontier_pass(seeds: int, size: int, frontier: int, cap: int, active: np.ndarray, ranks: np.ndarray,
                  with_words: bool, rank_movers: np.ndarray, rank_opponents: np.ndarray,
                  values: np.ndarray, distance: np.ndarray, next_flags: np.ndarray, rows: tuple[np.ndarray, ...],
                  listing: np.ndarray, listed: np.ndarray, carried: np.ndarray, carried_movers: np.ndarray,
                  carried_opponents: np.ndarray, carry: np.ndarray) -> int:
    """Step 2 for one frontier: the predecessors of every position settled
    at `frontier` are told (see _settle_batch), those it settles getting
    frontier + 1 and carried (with their words) to the next frontier as far
    as `carried` holds. The positions are looked for in the `active` blocks,
    or, when `ranks` is not empty, are the ranks listed there, with their
    words in rank_movers and rank_opponents when `with_words` (rows the
    last frontier carried), else unranked (sorted ranks). Threads take
    chunks of blocks or ranks, so that a thin frontier still fills the
    batches whose misses overlap. Returns how many were settled."""
    words = distance.view(np.uint64)  # distance is padded to whole words
    listed_mode = ranks.shape[0] > 0
    items = ranks.shape[0] if listed_mode else active.shape[0]
    step = (CARRIED_CHUNK if with_words else FRONTIER_CHUNK * BLOCK) if listed_mode else FRONTIER_CHUNK
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
                settled[slot] += _frontier_chunk(seeds, size, frontier, cap, ranks, item, last, with_words,
                                                 rank_movers, rank_opponents, values, distance, next_flags, rows,
                                                 found, movers, opponents, told, listing, listed, carried,
                                                 carried_movers, carried_opponents, carry)
            else:
                count = _frontier_ranks(frontier, item, last, active, size, words, distance, todo)
                settled[slot] += _frontier_chunk(seeds, size, frontier, cap, todo, 0, count, False, rank_movers,
                                                 rank_opponents, values, distance, next_flags, rows, found, movers,
                                                 opponents, told, listing, listed, carried, carried_movers,
                                                 carried_opponents, carry)
    return settled.sum()


# Driver -----------------------------------------------------------------------------


class DistanceSolver:
    """The distance pass of one layer whose values are finished in its slot
    of `store`, step by step: ``starts(layers)`` once per group of smaller
    layers (loaded in the store; every layer of exit_layers(seeds) in some
    group), then ``solve()``. :func:`layer_distances` is the all-in-memory
    path.

    `sliced` (the disk mode's way, when the layer's values, its distance
    bytes and its largest smaller layer do not fit together): the layer's
    values need not be in the store for the starts, which read them a
    slice at a time (``sliced_starts``); once every group is done and the
    smaller layers are dropped, the values are put in the slot and
    ``quiet()`` counts the quiet moves of the positions below 0 (the part
    of the start that reads the layer itself), then ``solve()``. The
    distances are the same either way."""

    def __init__(self, seeds: int, store: LayerStore, rows: tuple[np.ndarray, ...] | None = None,
                 cap: int = DISTANCE_CAP, sliced: bool = False, exits: np.ndarray | None = None) -> None:
        if not sliced and not store.loaded[seeds]:
            raise ValueError(f"layer {seeds} is not loaded: its distances need its values")
        if not 2 <= cap <= DISTANCE_CAP:
            raise ValueError(f"the cap is 2..{DISTANCE_CAP}, got {cap}")
        self.seeds = seeds
        self.store = store
        self.cap = cap
        self.rows = rows if rows is not None else index.RowTables(seeds).arrays
        self.size = index.layer_size(seeds)
        self.values = store.layer(seeds)
        padded = (self.size + 7) // 8 * 8
        if exits is not None and exits.shape != (padded,):
            raise ValueError(f"layer {seeds}: {exits.shape[0]} exit bytes, not {padded}")
        self._padded = np.full(padded, UNSETTLED, dtype=np.uint8) if exits is None else exits
        self.distance = self._padded[: self.size]
        self.exits_held = exits is not None  # the bytes hold each position's exit value until starts_from_exits()
        blocks = (self.size + BLOCK - 1) // BLOCK
        self.flags_zero = np.zeros(blocks, dtype=np.uint8)
        self.flags_one = np.zeros(blocks, dtype=np.uint8)
        self.done: set[int] = set()
        self.passes = 0
        self.settled = 0
        self.start_seconds = 0.0
        self.sliced = sliced
        self.quiet_left = sliced  # sliced: the quiet moves are counted by quiet(), once the starts are done

    def _layers_to_do(self, layers: Iterable[int]) -> tuple[list[int], np.ndarray]:
        layers = [m for m in layers if m not in self.done]
        if any(m not in exit_layers(self.seeds) or not self.store.loaded[m] for m in layers):
            raise ValueError(f"layer {self.seeds}: distance pass over layers {layers}, not all loaded smaller layers")
        use = np.zeros(index.MAX_SEEDS + 1, dtype=np.bool_)
        use[layers] = True
        return layers, use

    def _start(self, start: int, stop: int, lo: int, values: np.ndarray, use: np.ndarray, mode: int) -> None:
        began = time.perf_counter()
        with thread_count(1 if stop - start < SERIAL_SIZE else None):
            self.settled += int(start_pass(self.seeds, start, stop, lo, values, self.store.flat, self.store.starts,
                                           use, mode, self.distance[lo : lo + values.shape[0]], self.rows,
                                           self.flags_zero, self.flags_one))
        self.start_seconds += time.perf_counter() - began

    def starts_from_exits(self) -> None:
        """Step 1 in one pass from the exit values the bytes hold (the `exits`
        given, exit_bytes): no smaller layer read, no capture played."""
        if not self.exits_held or self.passes:
            raise ValueError(f"layer {self.seeds}: no exit values held for its distance start")
        self._start(0, self.size, 0, self.values, np.zeros(index.MAX_SEEDS + 1, dtype=np.bool_), START_EXITS)
        self.passes += 1
        self.done.update(exit_layers(self.seeds))
        self.exits_held = False

    def starts(self, layers: Iterable[int]) -> None:
        """One pass of step 1 with the smaller `layers` (loaded in the store)."""
        if self.exits_held:
            raise ValueError("the bytes hold exit values: starts_from_exits() is the start")
        if self.sliced:
            raise ValueError("a sliced distance pass takes its starts a slice at a time (sliced_starts)")
        layers, use = self._layers_to_do(layers)
        if self.passes and not layers:
            return
        self._start(0, self.size, 0, self.values, use, START_ALL if self.passes == 0 else START_CAPTURES)
        self.passes += 1
        self.done.update(layers)

    def sliced_starts(self, layers: Iterable[int], bounds: list[int], read: Callable[[int, int], np.ndarray]) -> None:
        """One pass of step 1 with the smaller `layers` (loaded in the store),
        a slice of the layer at a time: read(lo, hi) gives the values of
        ranks lo..hi-1 for each slice of `bounds` (0 = bounds[0] < ... <
        bounds[-1] = the layer's size)."""
        if not self.sliced or not self.quiet_left:
            raise ValueError("sliced_starts is for a sliced distance pass, before quiet()")
        if bounds[0] != 0 or bounds[-1] != self.size or any(lo >= hi for lo, hi in itertools.pairwise(bounds)):
            raise ValueError(f"layer {self.seeds}: slice bounds {bounds} do not cut its {self.size} ranks")
        layers, use = self._layers_to_do(layers)
        if self.passes and not layers:
            return
        mode = START_SLICE if self.passes == 0 else START_CAPTURES
        for lo, hi in itertools.pairwise(bounds):
            values = read(lo, hi)
            if values.shape != (hi - lo,) or values.dtype != np.int8:
                raise ValueError(f"layer {self.seeds}: ranks {lo}..{hi - 1} read as {values.shape} {values.dtype}")
            self._start(lo, hi, lo, values, use, mode)
        self.passes += 1
        self.done.update(layers)

    def quiet(self) -> None:
        """The quiet moves of a sliced pass, once every group is done and the
        layer's values are in its slot of the store (loaded)."""
        missing = [m for m in exit_layers(self.seeds) if m not in self.done]
        if not self.quiet_left or missing or not self.passes:
            raise ValueError(f"layer {self.seeds}: quiet() comes once, after the sliced starts over every smaller "
                             f"layer (left: {missing})")
        if not self.store.loaded[self.seeds]:
            raise ValueError(f"layer {self.seeds} is not loaded: its quiet moves need its values")
        self._start(0, self.size, 0, self.values, np.zeros(index.MAX_SEEDS + 1, dtype=np.bool_), START_QUIET)
        self.quiet_left = False

    def solve(self, progress: Callable[[str, float], None] | None = None) -> LayerDistances:
        """The frontiers, ply by ply, until one settles nothing; returns the
        layer's distances. Raises BuildError when a position with a value
        other than 0 is left without a distance."""
        missing = [m for m in exit_layers(self.seeds) if m not in self.done]
        if missing or not self.passes:
            raise ValueError(f"layer {self.seeds}: no distance start pass yet over layers {missing}")
        if self.quiet_left:
            raise ValueError(f"layer {self.seeds}: a sliced distance pass counts its quiet moves (quiet()) first")
        started = time.perf_counter()
        seeds, size, cap = self.seeds, self.size, self.cap
        needed = _nonzero(self.values)
        left = needed - self.settled
        flags, next_flags = self.flags_zero, self.flags_one
        empty = np.zeros(0, dtype=np.int64)
        no_words = np.zeros(0, dtype=np.uint64)
        listing = empty
        listed = np.zeros(1, dtype=np.int64)
        ranks = empty
        # The rows a frontier carries to the next (rank and words), and those it was given.
        room = carried_rows(size)
        carried = (np.empty(room, dtype=np.int64), np.empty(room, dtype=np.uint64), np.empty(room, dtype=np.uint64))
        given = (np.empty(room, dtype=np.int64), np.empty(room, dtype=np.uint64), np.empty(room, dtype=np.uint64))
        carry = np.zeros(1, dtype=np.int64)
        given_rows = -1  # the rows the last frontier carried, all of its settled ones; -1: not all (scan its blocks)
        overflow: list[np.ndarray] = []
        frontier = 0
        frontiers = []
        while True:
            if frontier >= cap and ranks.shape[0] == 0 and given_rows <= 0:
                break
            with_words = given_rows >= 0
            if with_words:
                if given_rows == 0:
                    break  # the last frontier settled nothing
                todo = given[0][:given_rows]
                active = empty
                serial = given_rows <= SERIAL_CARRIED
            else:
                active = np.flatnonzero(flags) if frontier < cap else empty
                if frontier < cap and active.shape[0] == 0 and not next_flags.any():
                    break
                todo = ranks if frontier >= cap else empty
                serial = max(active.shape[0] * BLOCK, todo.shape[0]) <= SERIAL_FRONTIER
            if frontier + 1 >= cap:
                listing = np.empty(max(1, left), dtype=np.int64)  # at most every position not yet settled
                listed[0] = 0
            carry[0] = 0
            with thread_count(1 if serial else None):
                settled = int(frontier_pass(seeds, size, frontier, cap, active, todo, with_words,
                                            given[1] if with_words else no_words,
                                            given[2] if with_words else no_words, self.values, self._padded,
                                            next_flags, self.rows, listing, listed, *carried, carry))
            left -= settled
            frontiers.append(settled)
            if frontier + 1 >= cap:
                ranks = np.sort(listing[: listed[0]])
                if ranks.shape[0]:
                    overflow.append(np.stack([ranks, np.full(ranks.shape[0], frontier + 1, dtype=np.int64)], axis=1))
            # Frontiers 0 and 1 settle what the start pass left flagged too: only from frontier 1 on are a
            # frontier's settled positions all carried (when they fit).
            given_rows = int(carry[0]) if frontier >= 1 and carry[0] <= room else -1
            carried, given = given, carried
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


SETTLE_CHUNK = 1 << 16  # ranks settle_by_ply takes at once


@njit(cache=True, parallel=True)
def _settle_by_ply(values: np.ndarray, distance: np.ndarray) -> int:
    """NO_DISTANCE where the value is 0; returns how many positions with
    another value are left UNSETTLED (none, when the values are right)."""
    chunks = (values.shape[0] + SETTLE_CHUNK - 1) // SETTLE_CHUNK
    left = np.zeros(chunks, dtype=np.int64)
    for chunk in prange(chunks):
        for rank in range(chunk * SETTLE_CHUNK, min(values.shape[0], chunk * SETTLE_CHUNK + SETTLE_CHUNK)):
            if values[rank] == 0:
                distance[rank] = NO_DISTANCE
            elif distance[rank] == UNSETTLED:
                left[chunk] += 1
    return left.sum()


def by_ply(seeds: int, values: np.ndarray, padded: np.ndarray, overflow: np.ndarray, plies: int,
           cap: int = DISTANCE_CAP) -> LayerDistances:
    """The distances of layer `seeds` as its stages run ply by ply wrote
    them (stages.run_stages_by_ply: every position resolved has its byte,
    `cap` for one whose exact distance is in the `overflow` rows) once its
    finished `values` are in its slot: NO_DISTANCE where the value is 0, as
    the separate pass gives. `padded` is the bytes padded to whole words.
    Raises BuildError when a position with a value other than 0 has none."""
    started = time.perf_counter()
    size = values.shape[0]
    distance = padded[:size]
    with thread_count(1 if size < SERIAL_SIZE else None):
        left = int(_settle_by_ply(values, distance))
    if left:
        raise BuildError(f"layer {seeds}: {left} positions with a value other than 0 have no distance to conversion "
                         "after the stages ran ply by ply")
    stats = {
        "distance_seconds": time.perf_counter() - started,  # the plies' own cost is in the stages' time
        "distance_by_ply": True,
        "distance_plies": plies,
        "longest_distance": _longest(distance, overflow, cap),
        "distance_overflow": int(overflow.shape[0]),
        "distance_working_bytes": working_bytes(size),
    }
    return LayerDistances(distance, overflow, stats)


def exit_bytes(lined: np.ndarray, size: int) -> np.ndarray:
    """The exit values of a layer's `size` positions, from its working state
    in the lined layout between its exit passes and its stages, as the
    distance bytes DistanceSolver(exits=...) starts from (padded)."""
    out = np.empty((size + 7) // 8 * 8, dtype=np.uint8)
    with thread_count(1 if size < SERIAL_SIZE else None):
        copy_exits(lined, size, out)
    out[size:] = UNSETTLED
    return out


def build_distances(seeds: int, store: LayerStore, groups: list[list[int]], rows: tuple[np.ndarray, ...] | None,
                    load: Callable[[int], None], make_room: Callable[[set[int], int, int], None],
                    exits: np.ndarray | None = None) -> LayerDistances:
    """The distances of layer `seeds`, its values loaded in `store`: the
    smaller layers a group at a time (`groups`, plan.distance_groups), those
    already held first (load(m) reads layer m into the store;
    make_room(keep, need, working) drops others until `need` more bytes fit
    beside `working`); or, given the layer's `exits` (exit_bytes, kept from
    its build), none of them. What solver.build calls."""
    if exits is not None:
        solver = DistanceSolver(seeds, store, rows, exits=exits)
        solver.starts_from_exits()
        return solver.solve()
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


SLICE_ALIGN = 1 << 18  # the sliced starts cut the layer at multiples of this many ranks (a file chunk's)
MAX_SLICES = 1024  # the most slices the sliced starts cut a layer into


def sliced_plan(seeds: int, budget: int, slices: int | None = None) -> tuple[list[int], list[list[int]]] | None:
    """(slice bounds, groups of smaller layers) of a sliced distance pass of
    layer `seeds` within `budget`: the fewest slices (or `slices`) such that
    the largest smaller layer fits beside the distance bytes and one slice
    of values, and the frontiers (values and distance bytes) fit at all;
    None when they do not."""

    size = index.layer_size(seeds)
    working = working_bytes(size)
    if BASE_BYTES + size + working > budget:
        return None
    largest = max((index.layer_size(m) for m in exit_layers(seeds)), default=0)
    for parts in [slices] if slices else range(1, MAX_SLICES + 1):
        step = -(-size // parts)
        step = step if slices else -(-step // SLICE_ALIGN) * SLICE_ALIGN
        bounds = sorted({min(size, part * step) for part in range(parts + 1)})
        piece = max(hi - lo for lo, hi in itertools.pairwise(bounds))
        room = budget - BASE_BYTES - working - piece
        if largest <= room:
            return bounds, first_fit(exit_layers(seeds), room)
        if slices or piece <= SLICE_ALIGN:
            return None
    return None


def build_distances_sliced(seeds: int, store: LayerStore, bounds: list[int], groups: list[list[int]],
                           rows: tuple[np.ndarray, ...] | None, read: Callable[[int, int], np.ndarray],
                           load: Callable[[int], None], make_room: Callable[[set[int], int, int], None]
                           ) -> LayerDistances:
    """The distances of layer `seeds` when its values, its distance bytes and
    its smaller layers do not fit together (sliced_plan): the smaller layers
    a group at a time, the layer's values read a slice of `bounds` at a time
    beside them (read(lo, hi)); then, the smaller layers dropped, its values
    loaded (load(seeds)) for the quiet moves and the frontiers. The same
    distances as build_distances."""
    store.drop(seeds)  # the values come a slice at a time until the smaller layers are gone
    solver = DistanceSolver(seeds, store, rows, sliced=True)
    piece = max(hi - lo for lo, hi in itertools.pairwise(bounds))
    groups.sort(key=lambda group: -sum(1 for m in group if store.loaded[m]))
    for group in groups:
        make_room(set(group), sum(index.layer_size(m) for m in group if not store.loaded[m]),
                  working_bytes(solver.size) + piece)
        for m in group:
            if not store.loaded[m]:
                load(m)
        solver.sliced_starts(group, bounds, read)
    make_room({seeds}, solver.size, working_bytes(solver.size))
    load(seeds)
    solver.quiet()
    return solver.solve()


__all__ = ["DERIVE", "DERIVED", "DISTANCE_CAP", "NO_DISTANCE", "DistanceSolver", "DistanceSpread", "LayerDistances",
           "build_distances", "build_distances_sliced", "by_ply", "distance_at", "distance_histogram",
           "distance_spread", "exit_bytes", "for_file", "layer_distances", "sliced_plan"]
