"""Distance to conversion (solver.distance): every distance against the naive
reference, lines that follow the distances, the overflow rows, the files and
the read side."""

import hashlib
import itertools
import json
import math
import os

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import naive_legal_moves, naive_play, naive_terminal_value
from naive_distance import naive_distances

from solver import Position, build, distance, index, layer_state, lean_distance, plan, retrograde, stages, tables
from solver.cli import cli
from solver.distance import DISTANCE_CAP, NO_DISTANCE, distance_at, layer_distances
from solver.errors import CorruptTableError, MissingDistanceError
from solver.layers import LayerStore
from solver.probe import Tablebase

NAIVE_LAYERS = 8  # every position against the naive reference in the default run; 9 and 10 are marked slow
LAYERS = 12


@pytest.fixture(scope="module")
def solved():
    store = retrograde.solve_up_to(LAYERS)
    found = {n: layer_distances(n, store) for n in range(LAYERS + 1)}
    return store, found


def board_values(store, seeds):
    """{board tuple: d} of layer `seeds` of `store`."""
    boards = index.layer_boards(seeds, 0, index.layer_size(seeds))
    return dict(zip((tuple(int(x) for x in b) for b in boards), (int(v) for v in store.layer(seeds))))


def layer_dicts(store, seeds):
    return [board_values(store, n) for n in range(seeds + 1)]


def distances_of(found, seeds, cap=DISTANCE_CAP):
    """[distance or None] of layer `seeds` in rank order."""
    layer = found[seeds]
    return [distance_at(layer.distance, layer.overflow, rank, cap) for rank in range(index.layer_size(seeds))]


def check_against_naive(store, found, seeds):
    layers = layer_dicts(store, seeds)
    reference = naive_distances(seeds, layers)
    boards = index.layer_boards(seeds, 0, index.layer_size(seeds))
    got = distances_of(found, seeds)
    wrong = [(tuple(int(x) for x in b), d, reference[tuple(int(x) for x in b)])
             for b, d in zip(boards, got) if reference[tuple(int(x) for x in b)] != d]
    assert wrong[:10] == []
    assert not any(d == math.inf for d in reference.values()), "a value other than 0 without a finite distance"


@pytest.mark.parametrize("seeds", range(NAIVE_LAYERS + 1))
def test_every_distance_matches_the_naive_reference(solved, seeds):
    store, found = solved
    check_against_naive(store, found, seeds)


@pytest.mark.slow
@pytest.mark.parametrize("seeds", [9, 10])
def test_every_distance_matches_the_naive_reference_to_layer_10(seeds):
    store = retrograde.solve_up_to(seeds)
    check_against_naive(store, {seeds: layer_distances(seeds, store)}, seeds)
    check_against_naive(store, {seeds: solve_by_ply(seeds, store)}, seeds)  # the build's way: the stages ply by ply


def solve_by_ply(seeds, store, rows=None, cap=DISTANCE_CAP, threads=None, spare=0):
    """Layer `seeds` solved again in `store` with its stages ply by ply: the distances they wrote."""
    with layer_state.thread_count(threads):
        solver = retrograde.LayerSolver(seeds, store, rows)
        solver.exits(layer_state.exit_layers(seeds))
        stats = solver.solve(distance_cap=cap, spare=spare)
    assert len(stats["stages"]) == seeds and solver.distances.stats["distance_by_ply"]
    return solver.distances


def test_the_stages_run_ply_by_ply_give_the_values_and_distances_of_the_separate_pass(solved):
    store, found = solved
    again = LayerStore(LAYERS)
    rows = index.RowTables(LAYERS).arrays
    for seeds in range(LAYERS + 1):
        got = solve_by_ply(seeds, again, rows)
        assert np.array_equal(again.layer(seeds), store.layer(seeds)), seeds
        assert np.array_equal(got.distance, found[seeds].distance), seeds
        assert np.array_equal(got.overflow, found[seeds].overflow), seeds
        assert got.stats["longest_distance"] == found[seeds].stats["longest_distance"]


@pytest.mark.parametrize("seeds", range(NAIVE_LAYERS + 1))
def test_the_stages_ply_by_ply_match_the_naive_reference(solved, seeds):
    store, _ = solved
    check_against_naive(store, {seeds: solve_by_ply(seeds, store)}, seeds)


@pytest.mark.parametrize("cap", [2, 5])
def test_the_stages_ply_by_ply_past_a_low_cap_list_the_overflow_rows_of_the_separate_pass(solved, cap):
    store, _ = solved
    again = LayerStore(LAYERS)
    listed = 0
    for seeds in range(LAYERS + 1):
        got = solve_by_ply(seeds, again, cap=cap)
        capped = layer_distances(seeds, store, cap=cap)
        assert np.array_equal(got.distance, capped.distance), seeds
        assert np.array_equal(got.overflow, capped.overflow), seeds
        listed += got.overflow.shape[0]
    assert listed


def test_the_stages_ply_by_ply_agree_whatever_rows_a_ply_carries_and_the_threads(solved, monkeypatch):
    # A ply that does not fit the rows carried to it is found again in its blocks (and past the cap, listed): a
    # handful of rows makes most plies do so; on one thread or two, the values and distances are the same.
    store, found = solved
    monkeypatch.setattr(stages, "PLY_ROWS", 7)
    for threads in (1, 2):
        again = LayerStore(LAYERS)
        for seeds in range(LAYERS + 1):
            got = solve_by_ply(seeds, again, threads=threads)
            assert np.array_equal(again.layer(seeds), store.layer(seeds)), seeds
            assert np.array_equal(got.distance, found[seeds].distance), (threads, seeds)
    # Rows the budget spares beside the stages: a ply carries more of them (here 7 + 100), the rest scanned.
    again = LayerStore(LAYERS)
    for seeds in range(LAYERS + 1):
        got = solve_by_ply(seeds, again, threads=2, spare=100 * stages.ROW_BYTES)
        assert np.array_equal(got.distance, found[seeds].distance), seeds
    again = LayerStore(LAYERS)
    for seeds in range(LAYERS + 1):
        got = solve_by_ply(seeds, again, cap=3)
        assert np.array_equal(got.overflow, layer_distances(seeds, store, cap=3).overflow), seeds


def test_a_ply_carries_as_many_rows_as_the_budget_spares_up_to_a_share_of_its_layer():
    size = 1 << 34
    assert stages.ply_rows(size) == stages.ply_rows(size, -1) == stages.PLY_ROWS
    assert stages.ply_rows(size, 64 << 20) == stages.PLY_ROWS + (64 << 20) // stages.ROW_BYTES
    assert stages.ply_rows(size, 1 << 50) == size // stages.PLY_SHARE
    assert stages.ply_rows(1000, 1 << 50) == 1000  # a small layer: every position at once


def test_a_resumed_state_cannot_run_ply_by_ply():
    store = retrograde.solve_up_to(6)
    solver = retrograde.LayerSolver(6, store)
    solver.exits(layer_state.exit_layers(6))
    with pytest.raises(ValueError, match="holds no distances"):
        solver.solve(first_stage=3, distance_cap=DISTANCE_CAP)


def lookup(store, found, board):
    """(value, distance) of a board in the index."""
    seeds = sum(board)
    rank = index.rank(np.array(board, dtype=np.uint8))
    layer = found[seeds]
    return int(store.layer(seeds)[rank]), distance_at(layer.distance, layer.overflow, rank)


@settings(max_examples=300, deadline=None)
@given(seeds=st.integers(1, LAYERS), fraction=st.floats(0, 1, exclude_max=True))
def test_a_line_following_the_distances_converts_in_exactly_that_many_plies(solved, seeds, fraction):
    """From a position with v != 0, the side ahead plays a keeping move of
    least cost and the side behind one of greatest cost: the line keeps the
    value at every ply and reaches a capture or an end of the game in
    exactly the distance's plies."""
    store, found = solved
    rank = int(fraction * index.layer_size(seeds))
    board = tuple(int(x) for x in index.unrank(seeds, rank))
    value, start = lookup(store, found, board)
    if value == 0:
        assert start is None
        return
    plies = 0
    while True:
        assert plies <= start
        if naive_terminal_value(board) is not None:
            assert naive_terminal_value(board) == value
            break
        options = []
        for house in naive_legal_moves(board):
            captured, child = naive_play(board, house)
            child_value, child_distance = lookup(store, found, child)
            if captured - child_value == value:
                options.append((1 if captured else 1 + child_distance, captured, child, child_value))
        assert options, "no move keeps the value"
        cost, captured, child, child_value = (min if value > 0 else max)(options, key=lambda o: o[0])
        _, here = lookup(store, found, board)
        assert cost == here
        plies += 1
        if captured:
            break
        assert child_value == -value
        board, value = child, child_value
    assert plies == start


@pytest.mark.parametrize("cap", [2, 3, 5])
def test_a_low_cap_moves_the_long_distances_to_the_overflow_rows_and_changes_none(solved, cap):
    store, found = solved
    for seeds in range(LAYERS + 1):
        capped = layer_distances(seeds, store, cap=cap)
        exact = distances_of(found, seeds)
        assert [distance_at(capped.distance, capped.overflow, r, cap) for r in range(len(exact))] == exact
        over = [r for r, d in enumerate(exact) if d is not None and d >= cap]
        assert capped.overflow[:, 0].tolist() == over
        assert (capped.distance[over] == cap).all() and capped.distance.max() <= NO_DISTANCE
    assert any(layer_distances(n, store, cap=2).overflow.shape[0] for n in range(LAYERS + 1))


def test_the_bytes_say_none_exactly_where_the_value_is_0(solved):
    store, found = solved
    for seeds in range(LAYERS + 1):
        values, bytes_ = store.layer(seeds), found[seeds].distance
        assert ((bytes_ == NO_DISTANCE) == (values == 0)).all()
        assert (bytes_ != distance.UNSETTLED).all()


def test_one_and_two_threads_give_the_same_distances(solved):
    store, found = solved
    for threads in (1, 2):
        again = layer_distances(LAYERS, store, threads=threads)
        assert np.array_equal(again.distance, found[LAYERS].distance)
        assert np.array_equal(again.overflow, found[LAYERS].overflow)


def test_a_sliced_pass_gives_the_same_distances(solved):
    # The disk mode's way: the smaller layers a group at a time beside a slice of the layer's values, then the
    # quiet moves and the frontiers with the layer whole.
    store, found = solved
    for seeds in range(LAYERS + 1):
        values = store.layer(seeds).copy()
        size = values.shape[0]
        layers = layer_state.exit_layers(seeds)
        for parts in (1, 3):
            bounds = sorted({size * k // parts for k in range(parts + 1)})
            solver = distance.DistanceSolver(seeds, store, sliced=True)
            for group in (layers[::2], layers[1::2]):
                solver.sliced_starts(group, bounds, lambda lo, hi: values[lo:hi].copy())
            with pytest.raises(ValueError, match="quiet"):
                solver.solve()
            solver.quiet()
            again = solver.solve()
            assert np.array_equal(again.distance, found[seeds].distance), (seeds, parts)
            assert np.array_equal(again.overflow, found[seeds].overflow)


def test_the_start_from_a_layers_exit_values_gives_the_same_distances(solved):
    # The build keeps each layer's exit values between its exit passes and its stages: the start then plays no
    # capture and reads no smaller layer.
    store, found = solved
    for seeds in range(LAYERS + 1):
        solver = retrograde.LayerSolver(seeds, store)
        solver.exits(layer_state.exit_layers(seeds))
        exits = distance.exit_bytes(solver.values, solver.size)
        solver.solve()
        again = distance.DistanceSolver(seeds, store, exits=exits)
        with pytest.raises(ValueError, match="exit values"):
            again.starts([])
        again.starts_from_exits()
        result = again.solve()
        assert np.array_equal(result.distance, found[seeds].distance), seeds
        assert np.array_equal(result.overflow, found[seeds].overflow)


def test_frontiers_told_from_carried_rows_or_from_their_blocks_agree(solved, monkeypatch):
    # A frontier that does not fit the rows carried to it is found again in its blocks: a handful of rows makes
    # most frontiers do so, and the distances are the same.
    store, found = solved
    monkeypatch.setattr(distance, "CARRIED_ROWS", 7)
    for seeds in range(LAYERS + 1):
        again = layer_distances(seeds, store)
        assert np.array_equal(again.distance, found[seeds].distance), seeds
        assert np.array_equal(again.overflow, found[seeds].overflow)


def test_the_sliced_plan_cuts_a_layer_only_as_far_as_its_smaller_layers_need():
    seeds = 20
    size = index.layer_size(seeds)
    largest = index.layer_size(seeds - 2)
    whole = plan.BASE_BYTES + size + distance.working_bytes(size)
    assert distance.sliced_plan(seeds, whole - 1) is None  # the frontiers hold the layer whole
    bounds, groups = distance.sliced_plan(seeds, whole + largest + size)
    assert bounds == [0, size] and sorted(m for g in groups for m in g) == layer_state.exit_layers(seeds)
    budget = whole + largest - 1  # the largest smaller layer no longer fits beside the layer's values whole
    bounds, groups = distance.sliced_plan(seeds, budget)
    assert len(bounds) == 3 and bounds[0] == 0 and bounds[-1] == size and bounds[1] % distance.SLICE_ALIGN == 0
    widest = max(b - a for a, b in itertools.pairwise(bounds))
    assert plan.BASE_BYTES + distance.working_bytes(size) + widest + largest <= budget
    assert sorted(m for g in groups for m in g) == layer_state.exit_layers(seeds)
    assert distance.sliced_plan(seeds, whole + largest, slices=4)[0] == [0, *(-(-size // 4) * k for k in (1, 2, 3)),
                                                                         size]


DISTANCE_HASHES = json.load(open(os.path.join(os.path.dirname(__file__), "data", "distance_sha256.json")))["sha256"]


def _distance_digest(bytes_, rows):
    return hashlib.sha256(np.ascontiguousarray(bytes_, np.uint8).tobytes()
                          + np.ascontiguousarray(rows, "<i8").tobytes()).hexdigest()


def test_every_distance_is_the_one_recorded(solved, table_dir):
    # tests/data/distance_sha256.json: the distances of 0..20 as the pass computed them before its rewrite.
    _, found = solved
    for seeds in range(LAYERS + 1):
        assert _distance_digest(found[seeds].distance, found[seeds].overflow) == DISTANCE_HASHES[str(seeds)]["pass"]
        stored, rows = tables.load_distances(table_dir, seeds)
        assert _distance_digest(stored[: index.layer_size(seeds)], rows) == DISTANCE_HASHES[str(seeds)]["file"]


def test_a_layer_without_its_smaller_layers_is_refused():
    store = retrograde.solve_up_to(6)
    store.drop(3)
    with pytest.raises(ValueError, match="need layers"):
        layer_distances(6, store)


# Files ---------------------------------------------------------------------------


def test_the_built_files_hold_the_distances_the_pass_computes(solved, table_dir):
    store, found = solved
    for seeds in range(LAYERS + 1):
        stored, overflow = tables.load_distances(table_dir, seeds)
        values, full = store.layer(seeds), found[seeds].distance
        derived = (values == 0) | ((values > 0) & (full == 1)) | ((values < 0) & (full != 0))
        assert (stored[derived] == distance.DERIVED).all()
        assert np.array_equal(stored[~derived], found[seeds].distance[~derived]) and overflow.shape == (0, 2)
        assert tables.check_distances(table_dir, seeds)


def test_the_files_leave_out_only_what_one_ply_gives_back(solved):
    store, _ = solved
    for seeds in (6, LAYERS):
        values = store.layer(seeds)
        capped = layer_distances(seeds, store, cap=3)
        full = [distance_at(capped.distance, capped.overflow, r, 3) for r in range(values.shape[0])]
        stored, rows = distance.for_file(capped, values)
        assert rows[:, 0].tolist() == [r for r, d in enumerate(full) if d is not None and d >= 3 and values[r] > 0]
        assert [distance_at(stored, rows, r, 3) for r in range(values.shape[0])] == [
            distance.DERIVE if v == 0 or (v > 0 and d == 1) or (v < 0 and d != 0) else d for v, d in zip(values, full)]


@pytest.mark.parametrize("seeds", [5, 8])
def test_the_tablebase_gives_back_every_distance_of_a_layer(solved, table_dir, seeds):
    _, found = solved
    with Tablebase(table_dir) as tablebase:
        got = [tablebase._distance_lookup(seeds, rank) for rank in range(index.layer_size(seeds))]
    assert got == distances_of(found, seeds)


def test_a_folder_of_values_alone_gains_its_distances_without_new_values(tmp_path, table_dir):
    directory = str(tmp_path)
    build.build(9, directory, distances=False)
    with pytest.raises(MissingDistanceError, match="no distances"):
        tables.load_distances(directory, 9)
    with Tablebase(directory) as tablebase:
        position = Position.from_string("2-0-1-0-3-1/0-2-0-0-0-0 S")
        with pytest.raises(MissingDistanceError):
            tablebase.distance(position)
        assert all(m.distance is None for m in tablebase.moves(position))
    before = {n: tables.table_info(directory, n)["build_seconds"] for n in range(10)}
    values = {n: tables.load_values(directory, n) for n in range(10)}
    rows = []
    build.build(9, directory, report=rows.append)
    assert [r["distances_added"] for r in rows] == [True] * 10 and not any(r["built"] for r in rows)
    for n in range(10):
        assert np.array_equal(tables.load_values(directory, n), values[n])
        assert tables.table_info(directory, n)["build_seconds"] == before[n]
        assert np.array_equal(tables.load_distances(directory, n)[0], tables.load_distances(table_dir, n)[0])
    rows.clear()
    build.build(9, directory, report=rows.append)
    assert not any(r.get("distances_added") for r in rows)


def test_the_build_in_memory_writes_the_distances_its_stages_found_ply_by_ply(tmp_path, table_dir):
    rows = []
    build.build(9, str(tmp_path), report=rows.append)
    assert [r["distance_by_ply"] for r in rows] == [True] * 10  # no separate distance pass
    for n in range(10):
        assert np.array_equal(tables.load_distances(str(tmp_path), n)[0], tables.load_distances(table_dir, n)[0])


def test_a_damaged_distance_chunk_is_refused_by_the_reader_and_the_build(tmp_path):
    directory = str(tmp_path)
    build.build(8, directory)
    path = tables.table_path(directory, 8)
    with h5py.File(path, "r+") as handle:  # HDF5 writes the chunk again with valid filters: only the CRC sees it
        stored = handle["distance"][0]
        handle["distance"][0] = (stored + 1) % 200
    with pytest.raises(CorruptTableError, match="chunk 0 fails its CRC-32"):
        tables.load_distances(directory, 8)
    with pytest.raises(CorruptTableError, match="delete that file"):
        build.build(8, directory)


def test_build_without_distances_from_the_command_line(tmp_path):
    runner = CliRunner()
    result = runner.invoke(cli, ["build", "--max-seeds", "6", "--dir", str(tmp_path), "--no-distance", "--json"])
    assert result.exit_code == 0, result.output
    assert not tables.check_distances(str(tmp_path), 6)
    result = runner.invoke(cli, ["build", "--max-seeds", "6", "--dir", str(tmp_path)])
    assert result.exit_code == 0 and "distances added" in result.output
    assert tables.check_distances(str(tmp_path), 6)


# Read side -----------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(seeds=st.integers(1, LAYERS), fraction=st.floats(0, 1, exclude_max=True), south=st.booleans())
def test_the_tablebase_answers_every_distance_and_every_move_cost(solved, table_dir, seeds, fraction, south):
    _, found = solved
    rank = int(fraction * index.layer_size(seeds))
    board = [int(x) for x in index.unrank(seeds, rank)]
    if south:
        position = Position.from_string(f"{'-'.join(map(str, board[:6]))}/{'-'.join(map(str, board[6:]))} S")
    else:
        position = Position.from_string(f"{'-'.join(map(str, board[6:]))}/{'-'.join(map(str, board[:6]))} N")
    with Tablebase(table_dir) as tablebase:
        assert tablebase.distance(position) == distance_at(found[seeds].distance, found[seeds].overflow, rank)
        for move in tablebase.moves(position):
            child, captured = position.play_capture(move.move)
            if move.value == 0:
                assert move.distance is None
            elif captured:
                assert move.distance == 1
            else:
                assert move.distance == 1 + tablebase.distance(child)


def test_a_position_outside_the_index_is_answered_by_one_ply(table_dir):
    position = Position.from_string("1-0-0-0-0-0/1-1-1-1-1-1 S")  # every opponent house occupied
    with Tablebase(table_dir) as tablebase:
        value = tablebase.value(position)
        keeping = [m.distance for m in tablebase.moves(position) if m.value == value]
        assert tablebase.distance(position) == (None if value == 0 else min(keeping) if value > 0 else max(keeping))


def test_best_shows_each_move_s_distance(table_dir):
    runner = CliRunner()
    result = runner.invoke(cli, ["best", "2-0-1-0-3-1/0-2-0-1-0-1 S", "--dir", table_dir, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    with Tablebase(table_dir) as tablebase:
        position = Position.from_string("2-0-1-0-3-1/0-2-0-1-0-1 S")
        assert data["distance"] == tablebase.distance(position)
        assert [row["distance"] for row in data["moves"]] == [m.distance for m in tablebase.moves(position)]
    text = runner.invoke(cli, ["best", "2-0-1-0-3-1/0-2-0-1-0-1 S", "--dir", table_dir]).output
    assert f"in {data['distance']} plies" in text


def test_a_layer_whose_distances_do_not_fit_the_budget_is_written_with_its_values_alone(tmp_path, monkeypatch):
    # Layer 8's pass made to need more than any budget: neither whole, nor sliced, nor from its exit values, nor
    # holding its distance bytes alone (lean_distance).
    for module in (distance, lean_distance):
        monkeypatch.setattr(module, "working_bytes", lambda size, working=module.working_bytes: 1 << 60
                            if size == index.layer_size(8) else working(size))
    rows = []
    build.build(8, str(tmp_path), report=rows.append)
    assert [r["distances"] for r in rows] == [True] * 8 + [False]
    assert not tables.check_distances(str(tmp_path), 8) and tables.check_distances(str(tmp_path), 7)
    with Tablebase(str(tmp_path)) as tablebase, pytest.raises(MissingDistanceError, match="awele build"):
        tablebase.distance(Position.from_string("2-0-1-0-3-1/0-0-0-0-0-1 S"))
    rows.clear()
    build.build(8, str(tmp_path), report=rows.append)  # still no room: said so, nothing rewritten
    assert rows[-1]["distances_added"] is False


def test_moves_without_distances_look_none_up(table_dir):
    position = Position.from_string("2-0-1-0-3-1/0-2-0-1-0-1 S")
    with Tablebase(table_dir) as tablebase:
        with_distances = tablebase.moves(position)
        without = tablebase.moves(position, distances=False)
        assert any(m.distance is not None for m in with_distances) and all(m.distance is None for m in without)
        assert [m.value for m in without] == [m.value for m in with_distances]
        assert tablebase.best_move(position).move in {m.move for m in with_distances if m.value == -1}


@pytest.mark.parametrize("seeds", range(LAYERS + 1))
def test_the_spread_from_the_files_counts_every_distance_the_pass_computes(solved, table_dir, seeds):
    """distance_spread gives back from a file's bytes (DERIVED where the value
    and one ply say it) every distance of the layer, per side, with the first
    position of the longest."""
    store, found = solved
    values = store.layer(seeds)
    every = np.array([-1 if d is None else d for d in distances_of(found, seeds)])
    spread = distance.distance_spread(seeds, tables.load_values(table_dir, seeds),
                                      *tables.load_distances(table_dir, seeds))
    for counts, side, longest, rank in ((spread.ahead, values > 0, spread.longest_ahead, spread.rank_ahead),
                                        (spread.behind, values < 0, spread.longest_behind, spread.rank_behind)):
        expected = np.bincount(every[side], minlength=counts.shape[0]) if side.any() else np.zeros_like(counts)
        assert np.array_equal(counts, expected[: counts.shape[0]]) and expected[counts.shape[0]:].sum() == 0
        if side.any():
            assert longest == every[side].max() and rank == int(np.flatnonzero(side & (every == longest))[0])
        else:
            assert longest == rank == -1


def test_the_spread_refuses_bytes_that_do_not_fit_the_values(table_dir):
    values = tables.load_values(table_dir, 8)
    stored, overflow = tables.load_distances(table_dir, 8)
    behind = int(np.flatnonzero((values < 0) & (stored == distance.DERIVED))[0])
    stored[behind] = 5  # the files leave every distance of the side behind to one ply
    with pytest.raises(CorruptTableError, match=f"rank {behind}"):
        distance.distance_spread(8, values, stored, overflow)
