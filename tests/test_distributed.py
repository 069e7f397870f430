"""The distributed build (solver.distributed): slices, request routing,
checkpoints, and, under mpiexec (marked mpi), the same tables as one process
whatever the number of processes, and a job that dies cleanly."""

import hashlib
import json
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mpi_support import MPIEXEC, mpi_ready

from solver import (
    build,
    distributed,
    distributed_lean,
    exits,
    index,
    layer_state,
    lean,
    plan,
    retrograde,
    rules,
    stages,
    tables,
)
from solver.errors import BuildError

HASHES = json.load(open(os.path.join(os.path.dirname(__file__), "data", "layer_sha256.json")))["sha256"]
HERE = os.path.dirname(os.path.abspath(__file__))


def _digest(values):
    return hashlib.sha256(np.ascontiguousarray(values).tobytes()).hexdigest()


def _check_hashes(directory, top):
    for seeds in range(top + 1):
        assert _digest(tables.load_values(directory, seeds)) == HASHES[str(seeds)], f"layer {seeds}"


def _check_distances(directory, expected, top):
    """Every layer 0..top of `directory` holds the distances `expected`'s files (one process, in memory) hold."""
    for seeds in range(top + 1):
        size = index.layer_size(seeds)
        (got, got_rows), (want, want_rows) = tables.load_distances(directory, seeds), tables.load_distances(expected,
                                                                                                            seeds)
        assert np.array_equal(got[:size], want[:size]) and np.array_equal(got_rows, want_rows), f"layer {seeds}"


def _awele(*args, env=None, timeout=600):
    return subprocess.run([sys.executable, "-m", "solver", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


# Slices and routing ------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**12), st.integers(1, 4096))
def test_slices_cover_the_layer_in_block_aligned_near_equal_parts(size, processes):
    bounds = distributed.slice_bounds(size, processes)
    assert bounds[0] == 0 and bounds[-1] == size and len(bounds) == processes + 1
    assert (np.diff(bounds) >= 0).all()
    assert (bounds[:-1] % layer_state.BLOCK == 0).all()
    assert np.diff(bounds).max() <= size // processes + 2 * layer_state.BLOCK


def _key(seeds, where):
    return (seeds << exits.RANK_BITS) | int(where * index.layer_size(seeds))


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 7), st.lists(st.lists(st.tuples(st.integers(0, 16), st.floats(0, 1, exclude_max=True)),
                                            max_size=8), max_size=40),
       st.integers(8, 10))
def test_requests_go_to_the_owner_of_their_child_and_keep_their_order(processes, blocks, stride):
    # Keys as exit_requests leaves them: block b's requests from b * stride
    # on, asked[b] of them, and the rest of its room not read (here -7).
    bounds = distributed.all_bounds(16, processes)
    keys = np.full(max(1, len(blocks)) * stride, -7, dtype=np.int64)
    asked = np.array([len(picks) for picks in blocks], dtype=np.int64)
    written = []
    for block, picks in enumerate(blocks):
        for j, pick in enumerate(picks):
            keys[block * stride + j] = _key(*pick)
            written.append(block * stride + j)
    requests, slots, counts = distributed.route_requests(keys, asked, stride, bounds, processes)
    owners = []
    for key in keys[written]:
        seeds, rank = key >> exits.RANK_BITS, key & ((1 << exits.RANK_BITS) - 1)
        owners.append(int(np.searchsorted(bounds[seeds, : processes + 1], rank, side="right")) - 1)
    order = np.argsort(np.array(owners, dtype=np.int64), kind="stable")  # stable: their order kept within a group
    assert slots.tolist() == np.array(written, dtype=np.int64)[order].tolist()
    assert requests.tolist() == keys[slots].tolist()
    assert counts.tolist() == np.bincount(np.array(owners, dtype=np.int64), minlength=processes).tolist()
    for p, (first, last) in enumerate(zip(np.cumsum(counts) - counts, np.cumsum(counts))):
        for key in requests[first:last]:
            seeds, rank = key >> exits.RANK_BITS, key & ((1 << exits.RANK_BITS) - 1)
            assert bounds[seeds, p] <= rank < bounds[seeds, p + 1]


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 7), st.lists(st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.booleans()), max_size=30),
                                   min_size=1, max_size=3))
def test_updates_go_to_the_owner_of_their_rank_and_keep_their_order(processes, outboxes):
    # Each thread's outbox (its first sent[thread] updates; the rest of its
    # room not read, here -7), updates (rank << 1) | (child lost) of layer 16.
    bounds = distributed.all_bounds(16, processes)[16, : processes + 1]
    room = max(1, max(len(sent) for sent in outboxes)) + 2
    outbox = np.full((len(outboxes), room), -7, dtype=np.int64)
    sent = np.array([len(box) for box in outboxes], dtype=np.int64)
    written = []
    for thread, box in enumerate(outboxes):
        for i, (where, lost) in enumerate(box):
            outbox[thread, i] = (int(where * bounds[-1]) << 1) | lost
            written.append(int(outbox[thread, i]))
    updates, counts = distributed.pack_updates(outbox, sent, bounds)
    owners = [int(np.searchsorted(bounds, update >> 1, side="right")) - 1 for update in written]
    order = np.argsort(np.array(owners, dtype=np.int64), kind="stable")
    assert updates.tolist() == np.array(written, dtype=np.int64)[order].tolist()
    assert counts.tolist() == np.bincount(np.array(owners, dtype=np.int64), minlength=processes).tolist()


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 30), st.integers(1, 9), st.floats(0, 1, exclude_max=True), st.floats(0, 1))
def test_a_window_of_the_file_is_runs_of_the_slices_each_held_by_its_owner(seeds, processes, where, share):
    # What process 0 lays into a window of the file, run by run, is each
    # position's value in the slice that owns it (slices cut in the distance order).
    size = index.layer_size(seeds)
    bounds = distributed.slice_bounds(size, processes)
    start = int(where * size)
    stop = min(size, start + int(share * size) + 1)
    pieces = distributed.window_pieces(seeds, bounds, start, stop)
    assert sum(length for _owner, _first, length in pieces) == stop - start
    at = start
    for owner, first, length in pieces:
        assert bounds[owner] <= first and first + length <= bounds[owner + 1]
        for offset in (0, length - 1):  # a run of the order is a run of the file
            assert index.file_rank(seeds, first + offset, index.DISTANCE_ORDER) == at + offset
        at += length


def test_the_slices_hold_most_moves_of_a_layer_in_one_slice():
    # The reason for the distance order: of the in-layer moves of layer 16,
    # few cross the cut of two slices of the order, most cross the file's middle.
    seeds = 16
    size = index.layer_size(seeds)
    cuts = {index.FILE_ORDER: size // 2, index.DISTANCE_ORDER: int(distributed.slice_bounds(size, 2, seeds)[1])}
    boards = index.unrank_boards(seeds, np.random.default_rng(7).integers(0, size, 4000))
    crossing = {index.FILE_ORDER: 0, index.DISTANCE_ORDER: 0}
    moves = 0
    for board in boards:
        mover, opponent = map(np.uint64, rules.pack(board))  # the kernels' type (Python ints compile again as int64)
        for house in range(6):
            if not rules.legal_mask(mover, opponent) >> house & 1:
                continue
            captured, child_mover, child_opponent = rules.play(mover, opponent, house)
            if captured:
                continue
            child_mover, child_opponent = np.uint64(child_mover), np.uint64(child_opponent)
            moves += 1
            for order in crossing:
                parent = index.rank_in(seeds, index.rank_packed(mover, opponent, seeds), order)
                child = index.rank_in(seeds, index.rank_packed(child_mover, child_opponent, seeds), order)
                crossing[order] += (parent < cuts[order]) != (child < cuts[order])
    assert crossing[index.FILE_ORDER] > 0.6 * moves
    assert crossing[index.DISTANCE_ORDER] < 0.25 * moves


def _stage_work(table_dir, seeds, owner, sample=20_000):
    """A stage's work in each of two slices, counted on a sample of the
    in-layer moves parent -> child of layer `seeds`: the child, resolved at
    stage |d|, has its predecessors found by its slice's owner (one unit)
    and the parent is told of it by its own (one unit). `owner(rank)` gives
    the slice of a file rank. Returns work[slice, stage]."""
    size = index.layer_size(seeds)
    values, _ = tables.load_slice(table_dir, seeds, 0, size)
    work = np.zeros((2, seeds + 1), dtype=np.int64)
    for board in index.unrank_boards(seeds, np.random.default_rng(5).integers(0, size, sample)):
        mover, opponent = rules.pack(board)
        parent = index.rank_packed(mover, opponent, seeds)
        for house in range(6):
            if not rules.legal_mask(mover, opponent) >> house & 1:
                continue
            captured, child_mover, child_opponent = rules.play(mover, opponent, house)
            child = index.rank_packed(child_mover, child_opponent, seeds)
            stage = abs(int(values[child]))
            if captured or stage == 0:
                continue
            work[owner(child), stage] += 1
            work[owner(parent), stage] += 1
    return work


def test_two_slices_share_every_stage_of_a_layer_evenly(table_dir):
    # A stage ends when its busier slice is done, so the sum over the stages
    # of the busier slice's work, against half the whole, is what the stages
    # take against an even share. The distance order lists its bands (m and
    # n - m) even ones first, then odd ones, so that each slice holds
    # balanced and lopsided positions alike; bands listed by |2m - n| put
    # the lopsided positions, resolved at the high stages, in one slice.
    seeds = 12
    size = index.layer_size(seeds)
    cut = int(distributed.slice_bounds(size, 2, seeds)[1])
    work = _stage_work(table_dir, seeds, lambda rank: int(index.rank_in(seeds, rank, index.DISTANCE_ORDER) >= cut))
    assert work.max(axis=0).sum() / (work.sum() / 2) < 1.04
    by_distance = sorted(range(seeds + 1), key=lambda m: (abs(2 * m - seeds), m))  # the bands by distance
    starts, at = {}, 0
    for m in by_distance:
        starts[m], at = at, at + int(index.LAYER_OFFSET[seeds, m + 1] - index.LAYER_OFFSET[seeds, m])
    middle = min((starts[m] for m in by_distance), key=lambda start: abs(start - size // 2))  # a group's edge

    def distance_owner(rank):
        m = int(np.searchsorted(index.LAYER_OFFSET[seeds, : seeds + 2], rank, side="right")) - 1
        return int(starts[m] + rank - int(index.LAYER_OFFSET[seeds, m]) >= middle)

    unbalanced = _stage_work(table_dir, seeds, distance_owner)
    assert unbalanced.max(axis=0).sum() / (unbalanced.sum() / 2) > 1.08


def test_kernels_compiled_with_another_order_are_refused(monkeypatch):
    # numba's cache is keyed on each kernel's file alone: kernels cached before
    # index's order changed keep the old one. Seen here as an order that
    # differs from the one the kernels were compiled with.
    retrograde.check_compiled_order()  # the same order: nothing to say
    other = index.ORDER_OFFSET.copy()
    other[20, [3, 4]] = other[20, [4, 3]]
    monkeypatch.setattr(index, "ORDER_OFFSET", other)
    with pytest.raises(BuildError, match="another version's slice order: delete the exits"):
        retrograde.check_compiled_order()


@pytest.mark.slow  # 32 s from a fresh clone: CI runs it on its slow line (.ci/run), and -m mpi builds by this path
def test_the_slice_path_alone_gives_the_recorded_tables(tmp_path):
    # One process through the distributed code: requests, answers and rounds
    # of exits (a small batch makes many), the stage loop with its hooks.
    rows = []
    build.build_distributed(12, str(tmp_path), distributed.Exchange(), threads=1, batch=4096, report=rows.append)
    _check_hashes(str(tmp_path), 12)
    assert [row["seeds"] for row in rows] == list(range(13)) and all(row["built"] for row in rows)
    with tables.open_table(str(tmp_path), 12) as handle:
        assert int(handle.attrs["processes"]) == 1


def test_the_slice_path_writes_the_distances_one_process_in_memory_writes(tmp_path, table_dir):
    rows = []
    build.build_distributed(9, str(tmp_path), distributed.Exchange(), threads=1, report=rows.append)
    assert all(row["distances"] for row in rows)
    _check_hashes(str(tmp_path), 9)
    _check_distances(str(tmp_path), table_dir, 9)
    # A folder of values alone (--no-distance) gains them, its values kept.
    values_alone = str(tmp_path / "values")
    build.build_distributed(9, values_alone, distributed.Exchange(), threads=1, distances=False)
    assert not any(tables.check_distances(values_alone, n) for n in range(10))
    rows.clear()
    build.build_distributed(9, values_alone, distributed.Exchange(), threads=1, report=rows.append)
    assert all(not row["built"] and row["distances"] for row in rows)
    _check_distances(values_alone, table_dir, 9)


def test_a_slice_runs_each_stage_depth_first_and_a_full_stack_leaves_the_rest_to_sweeps(tmp_path):
    # Depth first, a stage needs no sweep but the one that finds nothing
    # FRESH (the sweeps of old took one for every step of a chain); with a
    # stack of one position, what it cannot hold is swept, to the same values.
    build.build(10, str(tmp_path), threads=1)
    exchange = distributed.Exchange()
    slices = distributed.Slices(exchange, distributed.all_bounds(12, 1))
    for seeds in layer_state.exit_layers(12):
        slices.load(str(tmp_path), seeds)
    rows = index.RowTables(12).arrays
    sweeps = {}
    for stack in (stages.STACK, 1):
        solver = distributed.SliceSolver(12, exchange, slices, rows, stack=stack)
        with layer_state.thread_count(1):
            stats = solver.solve()
        in_file_order = distributed.GatheredLayer(exchange, solver.values, solver.bounds, 12)[:]
        assert _digest(in_file_order) == HASHES["12"]
        sweeps[stack] = sum(sweeps for _stage, _resolved, sweeps in stats["stages"])
    assert sweeps[stages.STACK] == len(stats["stages"]) == 12
    assert sweeps[1] > 2 * 12


def test_a_slice_read_back_is_checked_like_a_whole_layer(tmp_path):
    build.build(11, str(tmp_path), threads=1)
    whole = tables.load_values(str(tmp_path), 11)
    values, stored = tables.load_slice(str(tmp_path), 11, 1000, 300_000)
    assert (values == whole[1000:300_000]).all() and (stored == tables.histogram(whole, 11)).all()
    assert tables.load_slice(str(tmp_path), 11, 5, 5)[0].shape == (0,)


def test_process_memory_falls_with_more_processes():
    for seeds in (20, 30, 40, 48):
        one, eight, many = (plan.process_bytes(seeds, p) for p in (1, 8, 512))
        assert one > eight > many >= plan.BASE_BYTES
    assert plan.process_bytes(30, 1) >= plan.BASE_BYTES + plan.working_bytes(30)


# Lean slices ---------------------------------------------------------------------------


SMALL_LEAN = {"stack": lean.MIN_STACK, "chunk": 512, "block": 2048}  # the queue file, many chunks and blocks


def test_lean_slices_give_the_recorded_tables_through_every_exit_pass(tmp_path):
    # One process through the lean slices' code: an exit pass a smaller layer
    # (the later ones raising the state file's pending codes), a stack that
    # overflows to the queue file, passes of many chunks and blocks.
    rows = []
    build.build_distributed(12, str(tmp_path), distributed.Exchange(), threads=1, lean_slices=SMALL_LEAN,
                            outbox=3000, batch=4096, report=rows.append, distances=False)
    _check_hashes(str(tmp_path), 12)
    assert all(row["lean_slices"] for row in rows)
    assert [row["exit_passes"] for row in rows] == [max(1, len(layer_state.exit_layers(n))) for n in range(13)]
    assert rows[12]["working_bytes"] == (index.layer_size(12) + 1) // 2
    assert os.listdir(tmp_path / build.SCRATCH_NAME) == []  # each layer's files removed once its table is written


def test_lean_slices_check_their_scratch_before_a_layer_starts(tmp_path, monkeypatch):
    directory = str(tmp_path)
    build.build_distributed(8, directory, distributed.Exchange(), threads=1, distances=False)
    need = plan.lean_slice_scratch_bytes(9, 1)
    assert need >= index.layer_size(9) + plan.QUEUE_FLOOR
    monkeypatch.setattr(build.disk, "free_bytes", lambda folder: need - 1)
    with pytest.raises(BuildError, match=r"layer 9 needs .* GB in the scratch folder .*lean slices.* GB free"):
        build.build_distributed(9, directory, distributed.Exchange(), threads=1, lean_slices={}, distances=False)
    assert not os.path.exists(tables.table_path(directory, 9))
    monkeypatch.setattr(build.disk, "free_bytes", lambda folder: need)
    build.build_distributed(9, directory, distributed.Exchange(), threads=1, lean_slices={}, distances=False)
    _check_hashes(directory, 9)


def test_lean_slices_resume_at_their_last_checkpoint(tmp_path, monkeypatch):
    # A stage boundary saves the codes and a copy of the state file; a build
    # stopped in a later stage resumes there, to the recorded values. One
    # damaged file of the checkpoint makes the layer start over.
    directory, checkpoints = str(tmp_path / "tables"), str(tmp_path / "checkpoints")
    build.build_distributed(9, directory, distributed.Exchange(), threads=1, distances=False)

    def stop(seeds, stage, rank):
        if (seeds, stage) == (10, 5):
            raise KeyboardInterrupt("stopped")

    monkeypatch.setattr(distributed_lean, "_kill_point", stop)
    run = {"threads": 1, "lean_slices": SMALL_LEAN, "checkpoint_dir": checkpoints, "distances": False}
    with pytest.raises(KeyboardInterrupt):
        build.build_distributed(10, directory, distributed.Exchange(), **run)
    names = os.listdir(checkpoints)
    assert "awele-10.stage-05.process-0-of-1.lean-state" in names and "awele-10.checkpoint.json" in names
    monkeypatch.undo()
    rows = []
    build.build_distributed(10, directory, distributed.Exchange(), report=rows.append, **run)
    assert [r["resumed_at_stage"] for r in rows if r["built"]] == [5]
    _check_hashes(directory, 10)
    assert [name for name in os.listdir(checkpoints) if name != build.LOCK_NAME] == []
    # A damaged copy of the state file: the layer starts over, to the same values.
    os.remove(tables.table_path(directory, 10))
    monkeypatch.setattr(distributed_lean, "_kill_point", stop)
    with pytest.raises(KeyboardInterrupt):
        build.build_distributed(10, directory, distributed.Exchange(), **run)
    monkeypatch.undo()
    with open(os.path.join(checkpoints, "awele-10.stage-05.process-0-of-1.lean-state"), "r+b") as handle:
        handle.seek(100)
        byte = handle.read(1)
        handle.seek(100)
        handle.write(bytes([byte[0] ^ 0x40]))
    rows.clear()
    build.build_distributed(10, directory, distributed.Exchange(), report=rows.append, **run)
    assert [r["resumed_at_stage"] for r in rows if r["built"]] == [None]
    _check_hashes(directory, 10)


def test_a_lean_slice_tells_its_own_predecessors_and_sends_the_others():
    # Layer 12 cut in two: what the first slice resolves tells its own
    # predecessors at once, and those of the second go to the outbox, as the
    # in-memory slices send them: (rank << 1) | (child lost).
    seeds = 12
    bounds = distributed.slice_bounds(index.layer_size(seeds), 2, seeds)
    lo, hi = int(bounds[0]), int(bounds[1])
    rows = index.RowTables(seeds).arrays
    codes = np.zeros((hi - lo + 1) // 2 + 8, dtype=np.uint8)
    for local in range(hi - lo):
        lean.set_code(codes, local, 6)  # six unrefuted children each: nobody resolves but by a lost child
    won = next(r for r in range(lo, hi) if index.expand(index.unrank(seeds, index.file_rank(seeds, r,
                                                                                              distributed.ORDER))).legal)
    lean.set_code(codes, won - lo, lean.LOST)
    room = distributed_lean.ROOM
    stack = np.empty(lean.MIN_STACK, dtype=np.int64)
    words = np.empty(lean.MIN_STACK, dtype=np.uint64), np.empty(lean.MIN_STACK, dtype=np.uint64)
    batch = np.empty(room, dtype=np.int64), np.empty(room, dtype=np.uint64), np.empty(room, dtype=np.uint64)
    outbox = np.empty(4 * room, dtype=np.int64)
    depth, sent = distributed_lean.tell_slice(seeds, lo, hi - lo, codes, np.array([won - lo]), np.zeros(1, np.int64),
                                              stack, *words, *batch, np.empty(room, dtype=np.bool_), outbox, 0,
                                              np.zeros(1, np.int64), rows, distributed.ORDER)
    mover, opponent = index.unrank_fast(seeds, index.file_rank(seeds, won, distributed.ORDER), *rows)
    parents = np.empty(room, dtype=np.int64)
    count = layer_state.predecessors(mover, opponent, seeds, 0, 0, codes, codes, False, False, parents, 0, batch[1],
                                     batch[2], distributed.ORDER)
    mine = [int(p) for p in parents[:count] if lo <= p < hi]
    assert all(lean.code_of(codes, p - lo) == lean.WON for p in mine)  # a lost child: each parent won
    # Each won parent told its own predecessors of a won child: here, or in the outbox.
    grandparents = []
    for parent in mine:
        words = index.unrank_fast(seeds, index.file_rank(seeds, parent, distributed.ORDER), *rows)
        more = layer_state.predecessors(*words, seeds, 0, 0, codes, codes, False, False, parents, 0, batch[1],
                                        batch[2], distributed.ORDER)
        grandparents += [int(p) for p in parents[:more]]
    parents_again = layer_state.predecessors(mover, opponent, seeds, 0, 0, codes, codes, False, False, parents, 0,
                                             batch[1], batch[2], distributed.ORDER)
    elsewhere = [int(p) << 1 | 1 for p in parents[:parents_again] if not lo <= p < hi]
    elsewhere += [p << 1 for p in grandparents if not lo <= p < hi]
    assert depth == 0 and sorted(outbox[:sent].tolist()) == sorted(elsewhere)
    # What another slice sends is told the same way: a won child takes one from the count.
    quiet = next(r for r in range(hi - lo) if lean.code_of(codes, r) == 6)
    resolved = np.empty(2, dtype=np.int64)
    assert distributed_lean.apply_updates(lo, codes, np.array([(lo + quiet) << 1] * 2), resolved) == 0
    assert lean.code_of(codes, quiet) == 4
    assert distributed_lean.apply_updates(lo, codes, np.array([(lo + quiet) << 1 | 1]), resolved) == 1
    assert resolved[0] == quiet and lean.code_of(codes, quiet) == lean.WON


def test_a_later_exit_pass_keeps_the_better_pending_exit():
    old = np.array([layer_state.pending(e) for e in (layer_state.NO_EXIT, 3, -2, 5)], dtype=np.int8)
    new = np.array([layer_state.pending(e) for e in (2, 1, -1, layer_state.NO_EXIT)], dtype=np.int8)
    distributed_lean.raise_pending(old, new)
    assert [int(layer_state.pending_exit(c)) for c in old] == [2, 3, -1, 5]


def test_the_build_takes_lean_slices_only_where_the_in_memory_ones_do_not_fit():
    budget = 600 << 20  # below the in-memory slices' process (BASE_BYTES and its exchange buffers)
    outbox, batch = distributed.OUTBOX, distributed.EXIT_BATCH
    assert plan.process_bytes(0, 2, 1) > budget
    groups = build._lean_slice_groups(list(range(21)), 2, budget, 1, outbox, batch, False)
    assert sorted(groups) == list(range(21))
    for n, layout in groups.items():
        assert sorted(m for g in layout for m in g) == layer_state.exit_layers(n)
        assert plan.lean_slice_layout(n, 2, budget)["memory_bytes"] <= budget
    roomy = 64 << 30
    assert build._lean_slice_groups(list(range(21)), 2, roomy, 1, outbox, batch, False) == {}
    assert build._lean_slice_groups([1, 3], 2, roomy, 1, outbox, batch, True) == {1: [[]], 3: [[0], [1]]}
    with pytest.raises(BuildError, match=r"layer 30 needs .* GiB in each of 2 processes \(.* GiB with lean slices\)"):
        build._lean_slice_groups([30], 2, budget, 1, outbox, batch, False)


def test_the_lean_slices_plan_groups_the_smaller_layers_within_the_budget():
    for seeds, processes, each in ((48, 4, 64 << 30), (44, 4, 64 << 30), (30, 2, 2 << 30), (24, 3, 600 << 20)):
        layout = plan.lean_slice_layout(seeds, processes, each)
        assert layout is not None and layout["memory_bytes"] <= each
        assert sorted(m for g in layout["groups"] for m in g) == layer_state.exit_layers(seeds)
        share = plan.slice_share(seeds, processes)
        assert layout["memory_bytes"] >= plan.LEAN_BASE_BYTES + share // 2
        assert plan.lean_process_bytes(seeds, processes) <= layout["memory_bytes"]
        # One group more would not have been needed: no two groups fit together.
        shares = [sum(plan.slice_share(m, processes) for m in g) for g in layout["groups"]]
        room = each - (layout["memory_bytes"] - max(shares)) if len(shares) > 1 else None
        assert room is None or min(a + b for i, a in enumerate(shares) for b in shares[i + 1:]) > room - (1 << 30)
    assert plan.slice_share(20, 3) == max(np.diff(distributed.slice_bounds(index.layer_size(20), 3, 20)))
    assert plan.lean_slice_layout(48, 3, 64 << 30) is None  # its codes and layer 46's slice do not fit


# Checkpoints -------------------------------------------------------------------------


def test_one_process_with_a_checkpoint_folder_checkpoints_a_slice_of_one(tmp_path):
    # The sliced build's own checkpoints, one process holding the one slice
    # (the CLI builds in one process through build.build: tests/test_resume.py).
    directory, checkpoints = str(tmp_path / "tables"), str(tmp_path / "checkpoints")
    build.build_distributed(10, directory, distributed.Exchange(), threads=1, checkpoint_dir=checkpoints,
                            checkpoint_interval=0.0)
    assert [name for name in os.listdir(checkpoints) if name != build.LOCK_NAME] == []
    _check_hashes(directory, 10)


# Under mpiexec -------------------------------------------------------------------------

mpi_required = pytest.mark.skipif(not mpi_ready(), reason="needs mpiexec and mpi4py (awele[mpi])")


def _mpiexec(processes, *command, env=None, timeout=600):
    return subprocess.run([MPIEXEC, "-n", str(processes), *command], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


@pytest.mark.mpi
@mpi_required
@pytest.mark.parametrize("processes", [2, 3, 8])  # 8: more processes than cores (and than this machine's 2)
def test_mpi_builds_the_same_tables_as_one_process(tmp_path, table_dir, processes):
    directory = str(tmp_path)
    result = _mpiexec(processes, sys.executable, "-m", "solver", "build", "--max-seeds", "14", "--dir", directory,
                      "--threads", "1", "--json")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["seeds"] for r in rows] == list(range(15))
    assert all(r["processes"] == processes for r in rows)
    assert rows[-1]["bytes_exchanged"] > 0
    _check_hashes(directory, 14)
    _check_distances(directory, table_dir, 12)
    # The slices are uneven: no process count here divides the layer into whole blocks.
    assert index.layer_size(14) % (processes * layer_state.BLOCK) != 0
    with tables.open_table(directory, 14) as handle:
        assert int(handle.attrs["processes"]) == processes
        solving = int(handle.attrs["bytes_exchanged"])  # the solve's traffic; the row adds the file's gathering
    assert 0 < solving < rows[-1]["bytes_exchanged"]
    per_position, _, source = plan.measured_exchange(directory)
    assert source.endswith(f"({processes} processes)")
    assert per_position == pytest.approx(solving / index.layer_size(14) * processes / (processes - 1))


@pytest.mark.mpi
@mpi_required
@pytest.mark.parametrize("processes", [2, 3])
def test_mpi_with_lean_slices_builds_the_same_tables_as_one_process(tmp_path, table_dir, processes):
    # A budget below what the in-memory slices need: every layer in lean slices.
    directory = str(tmp_path)
    result = _mpiexec(processes, sys.executable, "-m", "solver", "build", "--max-seeds", "14", "--dir", directory,
                      "--threads", "1", "--memory", "600M", "--json")
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["seeds"] for r in rows] == list(range(15)) and all(r["lean_slices"] for r in rows)
    assert rows[-1]["bytes_exchanged"] > 0 and rows[-1]["stage_rounds"] > 0
    _check_hashes(directory, 14)
    _check_distances(directory, table_dir, 12)
    assert os.listdir(os.path.join(directory, build.SCRATCH_NAME)) == []


@pytest.mark.mpi
@mpi_required
def test_mpi_lean_slices_with_small_buffers_and_a_pass_a_layer_still_agree(tmp_path):
    result = _mpiexec(3, sys.executable, os.path.join(HERE, "mpi_build.py"), str(tmp_path), "13", "3000", "2048",
                      json.dumps(SMALL_LEAN))
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert all(r["lean_slices"] for r in rows) and rows[13]["exit_passes"] == len(layer_state.exit_layers(13))
    _check_hashes(str(tmp_path), 13)


@pytest.mark.mpi
@mpi_required
def test_mpi_a_killed_lean_slice_build_starts_the_layer_over(tmp_path):
    # No checkpoint of a lean slice: the rerun builds the layer again, the
    # files a killed run left (and those of another process count) removed,
    # a link planted at one of their names removed, never written through.
    directory = str(tmp_path / "tables")
    scratch = os.path.join(directory, build.SCRATCH_NAME)
    args = [sys.executable, "-m", "solver", "build", "--max-seeds", "13", "--dir", directory, "--threads", "1",
            "--memory", "600M", "--no-distance", "--quiet"]
    killed = _mpiexec(2, *args, env={distributed.KILL_VARIABLE: "13:7:1"}, timeout=300)
    assert killed.returncode != 0
    assert not os.path.exists(tables.table_path(directory, 13)) and os.path.exists(tables.table_path(directory, 12))
    assert "awele-13.slice-1-of-2.lean-state" in os.listdir(scratch)
    target = tmp_path / "target"
    target.write_bytes(b"kept")
    planted = os.path.join(scratch, "awele-13.slice-0-of-2.lean-state")
    if os.path.lexists(planted):
        os.remove(planted)
    os.symlink(target, planted)
    (tmp_path / "tables" / build.SCRATCH_NAME / "awele-13.slice-2-of-3.lean-queue").write_bytes(b"old")
    rerun = _mpiexec(2, *args[:-1], "--json")
    assert rerun.returncode == 0, rerun.stderr
    rows = [json.loads(line) for line in rerun.stdout.splitlines()]
    assert [r["seeds"] for r in rows if r["built"]] == [13] and rows[-1]["lean_slices"]
    _check_hashes(directory, 13)
    assert os.listdir(scratch) == [] and target.read_bytes() == b"kept"


@pytest.mark.mpi
@mpi_required
def test_mpi_a_killed_lean_slice_build_resumes_at_its_checkpoint(tmp_path):
    directory, checkpoints = str(tmp_path / "tables"), str(tmp_path / "checkpoints")
    args = [sys.executable, "-m", "solver", "build", "--max-seeds", "13", "--dir", directory, "--threads", "1",
            "--memory", "600M", "--no-distance", "--checkpoint-dir", checkpoints, "--checkpoint-interval", "0"]
    killed = _mpiexec(3, *args, "--quiet", env={distributed.KILL_VARIABLE: "13:7:2"}, timeout=300)
    assert killed.returncode != 0
    assert not os.path.exists(tables.table_path(directory, 13))
    rerun = _mpiexec(3, *args, "--json")
    assert rerun.returncode == 0, rerun.stderr
    rows = [json.loads(line) for line in rerun.stdout.splitlines()]
    assert [r["resumed_at_stage"] for r in rows if r["built"]] == [7] and rows[-1]["lean_slices"]
    _check_hashes(directory, 13)
    assert [name for name in os.listdir(checkpoints) if name != build.LOCK_NAME] == []


@pytest.mark.mpi
@mpi_required
def test_mpi_with_small_buffers_fills_outboxes_and_still_agrees(tmp_path):
    result = _mpiexec(3, sys.executable, os.path.join(HERE, "mpi_build.py"), str(tmp_path), "13", "3000", "2048")
    assert result.returncode == 0, result.stderr
    _check_hashes(str(tmp_path), 13)


@pytest.mark.mpi
@mpi_required
def test_mpi_a_killed_process_ends_the_job_and_the_rerun_resumes(tmp_path):
    directory, checkpoints = str(tmp_path / "tables"), str(tmp_path / "checkpoints")
    args = [sys.executable, "-m", "solver", "build", "--max-seeds", "13", "--dir", directory, "--threads", "1",
            "--checkpoint-dir", checkpoints, "--checkpoint-interval", "0", "--quiet"]
    killed = _mpiexec(3, *args, env={distributed.KILL_VARIABLE: "13:7:1"}, timeout=300)
    assert killed.returncode != 0
    assert "Killed" in killed.stdout + killed.stderr or "signal 9" in killed.stdout + killed.stderr
    assert not os.path.exists(tables.table_path(directory, 13))
    assert os.path.exists(tables.table_path(directory, 12))
    resumed = _mpiexec(3, *args, "--json")
    assert resumed.returncode == 0, resumed.stderr
    rows = [json.loads(line) for line in resumed.stdout.splitlines()]
    assert [r["resumed_at_stage"] for r in rows if r["built"]] == [7]
    _check_hashes(directory, 13)


@pytest.mark.mpi
@mpi_required
def test_mpi_a_process_meeting_a_damaged_file_stops_the_job_in_one_line(tmp_path):
    directory = str(tmp_path)
    assert _mpiexec(2, sys.executable, "-m", "solver", "build", "--max-seeds", "11", "--dir", directory,
                    "--threads", "1", "--quiet").returncode == 0
    # Damage the last data chunk of layer 10: only the process whose slice reads it meets the damage.
    path = tables.table_path(directory, 10)
    with h5py.File(path, "r") as handle:
        chunk = handle[tables.DATASET].id.get_chunk_info(1)
    assert distributed.slice_bounds(index.layer_size(10), 2)[1] < tables.CHUNK  # chunk 1 is process 1's alone
    with open(path, "r+b") as handle:
        handle.seek(chunk.byte_offset + chunk.size // 2)
        data = handle.read(64)
        handle.seek(chunk.byte_offset + chunk.size // 2)
        handle.write(bytes(b ^ 0xFF for b in data))
    result = _mpiexec(2, sys.executable, "-m", "solver", "build", "--max-seeds", "12", "--dir", directory,
                      "--threads", "1", "--quiet", timeout=300)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.startswith("awele:")]
    assert len(lines) == 1 and "awele-10.h5" in lines[0] and "process" in lines[0], result.stderr
    assert not os.path.exists(tables.table_path(directory, 12))



@pytest.mark.mpi
@mpi_required
def test_mpi_the_slurm_script_builds_and_resumes(tmp_path):
    # srun stands in for Slurm's: it starts the job's processes with mpiexec.
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "srun").write_text(f'#!/bin/sh\nshift\nexec {MPIEXEC} -n "$SLURM_JOB_NUM_NODES" "$@"\n')
    (shim / "srun").chmod(0o755)
    env = {"PATH": f"{shim}:{os.path.dirname(sys.executable)}:{os.environ['PATH']}", "SLURM_JOB_NUM_NODES": "2",
           "SLURM_CPUS_ON_NODE": "1", "AWELE_DATABASES": str(tmp_path / "tables")}
    script = os.path.join(HERE, os.pardir, "scripts", "slurm-build.sh")
    for _ in range(2):  # the second run finds every layer built
        result = subprocess.run(["bash", script, "10"], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                                env={**os.environ, **env})
        assert result.returncode == 0, result.stderr
    _check_hashes(str(tmp_path / "tables"), 10)


# The plan ------------------------------------------------------------------------------


def test_the_cluster_plan_follows_its_model(tmp_path):
    each = 24 * 2**30
    result = plan.cluster_plan(48, 46, each, str(tmp_path), threads=2)
    assert result["rate_measured_on"] == "default" and result["exchange_measured_on"] == "default"
    for row in result["layers"]:
        size = index.layer_size(row["seeds"])
        assert row["process_bytes"] == plan.process_bytes(row["seeds"], 46, 2)
        assert row["fits"] == (row["process_bytes"] <= each)
        exchanged = size * result["exchange_bytes_per_position"] * 45 / 46
        assert row["bytes_exchanged"] == int(exchanged)
        assert row["seconds"] == pytest.approx(size * result["overhead"] / (result["rate"] * 46)
                                               + exchanged / 46 / result["bandwidth_bytes_per_second"])
    least = result["smallest_cluster"]["48"]
    assert plan.process_bytes(48, least, 2) <= each < plan.process_bytes(48, least - 1, 2)
    assert plan.least_processes(48, 2**20) is None


def test_the_cluster_plan_reads_its_rates_from_a_distributed_build(tmp_path):
    directory = str(tmp_path)
    build.build_distributed(10, directory, distributed.Exchange(), threads=1)
    # One process exchanges nothing: the plan keeps its default traffic until a build by several says otherwise.
    assert plan.measured_exchange(directory)[2] == "default"
    result = _awele("plan", "--max-seeds", "48", "--processes", "9", "--memory-per-process", "128G",
                    "--threads", "2", "--dir", directory)
    assert result.returncode == 0, result.stderr
    assert "layer 48 needs at least 9 processes of 128.0 GiB" in result.stdout
    assert _awele("plan", "--memory-per-process", "2G").returncode == 2
