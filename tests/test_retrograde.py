"""The retrograde builder and its tables: exact values, files, damage, resume."""

import collections
import os
import signal
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import all_boards, naive_legal_moves, naive_play, naive_sow
from naive_solver import naive_solve

from solver import build, index, layer_state, layers, retrograde, rules, stages, tables
from solver.cli import cli
from solver.errors import CorruptTableError, MissingTableError, TableMismatchError
from solver.layers import LayerStore

NAIVE_LAYERS = 8


@pytest.fixture(scope="module")
def solved():
    return retrograde.solve_up_to(NAIVE_LAYERS)


@pytest.mark.parametrize("seeds", range(NAIVE_LAYERS + 1))
def test_every_value_matches_the_naive_solver(solved, seeds):
    reference = naive_solve(NAIVE_LAYERS)[seeds]
    boards = index.layer_boards(seeds, 0, index.layer_size(seeds))
    values = solved.layer(seeds)
    wrong = [(tuple(b), int(v), reference[tuple(int(x) for x in b)])
             for b, v in zip(boards, values) if reference[tuple(int(x) for x in b)] != v]
    assert wrong == []


def test_values_stay_in_range_and_no_position_is_left_unknown(solved):
    for seeds in range(NAIVE_LAYERS + 1):
        values = solved.layer(seeds)
        assert values.min() >= -seeds and values.max() <= seeds
        assert all(layer_state.resolved(v) for v in np.unique(values))


def test_one_and_two_threads_give_the_same_layer():
    lower_one = retrograde.solve_up_to(11, threads=1)
    lower_two = retrograde.solve_up_to(11, threads=2)
    assert all(np.array_equal(lower_one.layer(n), lower_two.layer(n)) for n in range(12))


@pytest.mark.parametrize("stack", [0, 1, 3])
def test_a_full_stack_leaves_positions_to_the_sweeps_and_the_values_do_not_change(monkeypatch, solved, stack):
    """propagate_stage tells of what it resolves depth first, from a stack;
    a position that finds the stack full is flagged FRESH and told of by a
    sweep instead. With no room or nearly none, every layer comes out the
    same, with the same positions resolved in each stage."""
    monkeypatch.setattr(stages, "STACK", stack)
    store = LayerStore(NAIVE_LAYERS)
    for seeds in range(NAIVE_LAYERS + 1):
        values, stats = retrograde.solve_layer(seeds, store, threads=2)
        assert np.array_equal(values, solved.layer(seeds))
        if seeds == NAIVE_LAYERS:
            assert sum(sweeps for _stage, _found, sweeps in stats["stages"]) > len(stats["stages"])
            monkeypatch.setattr(stages, "STACK", 1 << 10)
            roomy = retrograde.solve_layer(seeds, store, threads=2)[1]
            assert [found for _s, found, _w in stats["stages"]] == [found for _s, found, _w in roomy["stages"]]


@pytest.mark.parametrize("threads", [1, 2])
def test_the_kernels_count_the_scattered_accesses_they_make(threads):
    # Layer 8 is above SERIAL_SIZE, so with two threads its exit pass is shared.
    store = LayerStore(8)
    for seeds in range(8):
        retrograde.solve_layer(seeds, store)
    values, stats = retrograde.solve_layer(8, store, threads=threads)
    captures = told = lost_child = 0
    for board in index.layer_boards(8, 0, index.layer_size(8)):
        board = [int(x) for x in board]
        for house in naive_legal_moves(board):
            captured, child = naive_play(board, house)
            if captured:
                captures += 1
                continue
            # Every non-capturing edge into a child resolved in a stage (d != 0) is told once.
            child_value = values[index.rank_board(np.array(child, dtype=np.uint8), 8)]
            if child_value != 0:
                told += 1
                lost_child += child_value > 0
    assert stats["exit_lookups"] == captures
    assert stats["predecessors_told"] == told
    # One line per tell: the value byte, and the count nibble in the same line
    # when the child was won (the layer's lined layout).
    assert lost_child > 0
    assert stats["stage_accesses"] == told


def _may_capture_naive(board, house):
    """Whether sowing `house` leaves its last seed on an opponent house now holding 2 or 3 (naive sowing)."""
    new_board, last = naive_sow(list(board), house)
    return last >= 6 and new_board[last] in (2, 3)


def _candidates_say(board, house):
    mover, opponent = rules.pack(np.array(board, dtype=np.uint8))
    return bool(rules.capture_candidates(mover, opponent) >> house & 1)


@pytest.mark.parametrize("seeds", [2, 4, 6])
def test_capture_candidates_are_the_last_seed_on_a_two_or_three_and_miss_no_capture(seeds):
    """The exit pass plays only the moves rules.capture_candidates lets
    through: over every board of a few seeds (in the index or not), it says
    exactly where the last seed lands on a 2 or a 3, so no capture is missed."""
    for board in all_boards(seeds):
        for house in range(6):
            if board[house] == 0:
                continue
            may = _candidates_say(board, house)
            assert may == _may_capture_naive(board, house), (board, house)
            assert may or naive_play(list(board), house)[0] == 0, (board, house)


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=12, max_size=12), st.integers(0, 5))
def test_capture_candidates_agree_with_naive_sowing_over_laps(houses, house):
    while sum(houses) > 48:
        houses[houses.index(max(houses))] //= 2
    if houses[house] == 0:
        houses[house] = 1 + sum(houses) % 40
    may = _candidates_say(houses, house)
    assert may == _may_capture_naive(houses, house)
    assert may or naive_play(list(houses), house)[0] == 0


def test_capture_candidates_never_name_an_empty_house():
    """An empty house sows nothing: its bit is clear, whatever the opponent holds."""
    for opponent_board in ([2] * 6, [3, 2, 1, 0, 2, 3], [1] * 6):
        board = [0, 5, 0, 0, 9, 0] + opponent_board
        mover, opponent = rules.pack(np.array(board, dtype=np.uint8))
        candidates = rules.capture_candidates(mover, opponent)
        assert candidates & 0b101101 == 0, (board, bin(candidates))


def _predecessors(seeds, board):
    """layer_state.predecessors of a board: (ranks, boards of the words it gave), nothing held here."""
    mover, opponent = index.pack(np.array(board, dtype=np.uint8))
    room = layer_state.MAX_PREDECESSORS
    found = np.empty(room, np.int64)
    movers = np.empty(room, np.uint64)
    opponents = np.empty(room, np.uint64)
    nothing = np.zeros(64, np.int8)
    count = layer_state.predecessors(mover, opponent, seeds, 0, 0, nothing, nothing.view(np.uint8), True, True, found,
                                     0, movers, opponents)
    words = [[int(x) for x in index.unpack(m, o)] for m, o in zip(movers[:count], opponents[:count])]
    return [int(r) for r in found[:count]], words


@pytest.mark.parametrize("seeds", [2, 5, 8])
def test_predecessors_are_exactly_the_positions_a_quiet_move_leads_from(seeds):
    """Un-sowing against the naive rules played forward over a whole layer:
    every position's predecessors are the ranks from which a legal move
    that captures nothing leads to it, each once, with their words."""
    expected = collections.defaultdict(list)
    boards = [[int(x) for x in board] for board in index.layer_boards(seeds, 0, index.layer_size(seeds))]
    for rank, board in enumerate(boards):
        for house in naive_legal_moves(board):
            captured, child = naive_play(board, house)
            if not captured:
                expected[index.rank(child)].append(rank)
    for rank, board in enumerate(boards):
        found, words = _predecessors(seeds, board)
        assert sorted(found) == sorted(expected[rank]), (board, found, expected[rank])
        assert words == [boards[parent] for parent in found]


@settings(max_examples=300, deadline=None)
@given(st.integers(20, 48).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, index.layer_size(n) - 1))))
def test_each_predecessor_reaches_the_position_by_a_quiet_move(seeds_rank):
    """In the big layers, where a whole layer cannot be played forward here:
    each parent found has a legal move that captures nothing and leads to
    the position, and its rank is the rank of its words."""
    seeds, rank = seeds_rank
    board = [int(x) for x in index.unrank(seeds, rank)]
    found, words = _predecessors(seeds, board)
    assert len(set(found)) == len(found)
    for parent, parent_board in zip(found, words):
        assert index.rank(parent_board) == parent
        assert any(naive_play(parent_board, house) == (0, tuple(board)) for house in naive_legal_moves(parent_board))


@pytest.mark.slow  # 10-50 s: CI runs it on its own line (.ci/run)
def test_the_stage_kernels_count_no_array_references_in_their_loops():
    """The kernels a layer's stages and exits run per block are compiled
    without numba's runtime, so their inlined helpers do not incref and
    decref the arrays they take (an atomic on a counter both threads share,
    several times a predecessor told): the machine code calls neither.
    In a process with numba's cache empty, so that the kernels are compiled
    through their dispatchers (loaded from the cache, they have no signature)."""
    check = (
        "from solver import exits, retrograde, stages\n"
        "retrograde.solve_up_to(6)\n"
        "for kernel in (stages._stage_block, exits._exit_block):\n"
        "    assert kernel.signatures, kernel\n"
        "    for signature in kernel.signatures:\n"
        "        code = kernel.inspect_asm(signature)\n"
        "        assert 'NRT_incref' not in code and 'NRT_decref' not in code, kernel\n"
    )
    with tempfile.TemporaryDirectory() as cache:
        done = subprocess.run([sys.executable, "-c", check], env={**os.environ, "NUMBA_CACHE_DIR": cache},
                              capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_build_leaves_the_kernels_cached_so_the_next_one_says_nothing_of_compiling():
    """kernels_cached() looks for the cache file of a kernel every layer's
    build calls (a kernel only some builds call would leave a warm cache
    looking cold, and `awele build` would say it compiles)."""
    retrograde.solve_up_to(4)
    assert retrograde.kernels_cached()


def test_the_lined_layout_gives_each_rank_its_own_bytes_in_one_line():
    """value_at and count_at: every rank its own value byte, two ranks a
    count byte (the even one in the low nibble), both in the rank's 64-byte
    line, the line's count bytes after its value bytes, and no byte shared
    between a value and a count."""
    size = 5 * layer_state.LINE_RANKS + 7
    values = [layer_state.value_at(True, r) for r in range(size)]
    counts = [layer_state.count_at(True, r) for r in range(size)]
    assert len(set(values)) == size and not set(values) & set(counts)
    for rank in range(size):
        line = rank // layer_state.LINE_RANKS
        assert values[rank] // layer_state.LINE == counts[rank] // layer_state.LINE == line
        assert values[rank] % layer_state.LINE < layer_state.LINE_RANKS <= counts[rank] % layer_state.LINE
        assert rank ^ 1 >= size or counts[rank] == counts[rank ^ 1]
    assert max(values + counts) < layer_state.working_bytes(size)
    assert layer_state.value_at(False, 77) == 77 and layer_state.count_at(False, 77) == 38


@pytest.mark.parametrize("seeds", range(13))
def test_verify_passes_on_built_layers(table_dir, seeds):
    count, examples = build.verify(table_dir, seeds)
    assert count == 0, examples


def test_verify_reports_a_planted_error(table_dir, tmp_path):
    for seeds in range(11):
        values = tables.load_values(table_dir, seeds)
        if seeds == 10:
            values[12345] = -values[12345] if values[12345] else 1
        tables.write_table(str(tmp_path), seeds, values)
    count, examples = build.verify(str(tmp_path), 10)
    assert count >= 1
    assert any(board == index.unrank(10, 12345).tolist() for board, _ in examples) or count > len(examples)


def test_files_carry_their_attributes_and_stay_small(table_dir):
    info = tables.table_info(table_dir, 12, full=True)
    assert info["status"] == "ok"
    assert info["value_bytes"] / info["positions"] <= 0.5
    assert info["distance_bytes"] <= 0.8 * info["value_bytes"]  # 0.72x at 12 seeds, 0.57x over 0..20
    assert info["bytes_per_position"] <= 0.85
    assert sum(info["histogram"]) == index.layer_size(12)
    with h5py.File(tables.table_path(table_dir, 12), "r") as handle:
        assert handle.attrs["rules"].decode() == tables.RULES
        assert handle.attrs["index_scheme"].decode() == index.INDEX_SCHEME
        assert handle.attrs["format_version"] == tables.FORMAT_VERSION == 2
        assert handle[tables.CRC_DATASET].shape == ((index.layer_size(12) + tables.CHUNK - 1) // tables.CHUNK,)
        assert handle["values"].fletcher32
        assert handle["values"].compression == "gzip"


def _copy_layer(table_dir, tmp_path, seeds):
    values = tables.load_values(table_dir, seeds)
    return tables.write_table(str(tmp_path), seeds, values), values


def test_missing_table_names_the_build_command(tmp_path):
    with pytest.raises(MissingTableError, match="awele build --max-seeds 7"):
        tables.load_values(str(tmp_path), 7)


def test_truncated_file_is_refused(table_dir, tmp_path):
    path, _ = _copy_layer(table_dir, tmp_path, 11)
    size = os.path.getsize(path)
    with open(path, "r+b") as handle:
        handle.truncate(size // 2)
    with pytest.raises(CorruptTableError, match="awele-11.h5"):
        tables.load_values(str(tmp_path), 11)


def test_bit_flip_in_the_values_is_refused(table_dir, tmp_path):
    path, _ = _copy_layer(table_dir, tmp_path, 11)
    with h5py.File(path, "r") as handle:
        offset = handle["values"].id.get_chunk_info(0).byte_offset
    with open(path, "r+b") as handle:
        handle.seek(offset + 1000)
        byte = handle.read(1)
        handle.seek(offset + 1000)
        handle.write(bytes([byte[0] ^ 0x10]))
    with pytest.raises(CorruptTableError, match="awele-11.h5"):
        tables.load_values(str(tmp_path), 11)


def test_mismatched_rules_or_index_are_refused(table_dir, tmp_path):
    path, _ = _copy_layer(table_dir, tmp_path, 9)
    with h5py.File(path, "r+") as handle:
        handle.attrs["index_version"] = 999
    with pytest.raises(TableMismatchError, match="index_version"):
        tables.open_table(str(tmp_path), 9)
    path, _ = _copy_layer(table_dir, tmp_path, 8)
    with h5py.File(path, "r+") as handle:
        handle.attrs["rules"] = "kalah"
    with pytest.raises(TableMismatchError, match="rules"):
        tables.open_table(str(tmp_path), 8)


def test_unfinished_file_is_refused(table_dir, tmp_path):
    path, _ = _copy_layer(table_dir, tmp_path, 6)
    with h5py.File(path, "r+") as handle:
        del handle.attrs["complete"]
    with pytest.raises(CorruptTableError, match="not finished"):
        tables.open_table(str(tmp_path), 6)


def test_a_killed_build_leaves_no_finished_looking_file_and_resumes(tmp_path):
    directory = str(tmp_path / "db")
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    process = subprocess.Popen(
        [sys.executable, "-m", "solver.cli", "build", "--max-seeds", "15", "--dir", directory, "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True,
    )
    # Wait until some layers exist, then kill it hard in the middle of the build.
    deadline = time.time() + 120
    while time.time() < deadline:
        if os.path.isdir(directory) and len(tables.built_layers(directory)) >= 12:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    finished = tables.built_layers(directory)
    assert len(finished) < 16, "the build finished before it could be killed"
    for seeds in finished:  # every file that looks finished is complete and valid
        assert tables.table_info(directory, seeds, full=True)["status"] == "ok"
    rows = []
    build.build(15, directory, report=rows.append)
    assert [row["built"] for row in rows[: len(finished)]] == [False] * len(finished)
    assert all(row["built"] for row in rows[len(finished):])
    assert not [name for name in os.listdir(directory) if tables.TEMPORARY_SUFFIX in name]
    assert build.verify(directory, 15)[0] == 0


def test_cli_build_info_verify(tmp_path):
    runner = CliRunner()
    directory = str(tmp_path / "cli")
    result = runner.invoke(cli, ["build", "--max-seeds", "9", "--dir", directory, "--quiet"])
    assert result.exit_code == 0, result.output
    assert "layer  9:" in result.output and "positions/s" in result.output
    again = runner.invoke(cli, ["build", "--max-seeds", "9", "--dir", directory, "--quiet"])
    assert again.exit_code == 0 and "present" in again.output
    info = runner.invoke(cli, ["info", "--dir", directory, "--full"])
    assert info.exit_code == 0 and info.output.count(" ok") == 10
    verify = runner.invoke(cli, ["verify", "--dir", directory, "--seeds", "9"])
    assert verify.exit_code == 0 and "layer  9: ok" in verify.output


def test_cli_reports_damaged_tables_in_one_line(table_dir, tmp_path):
    for seeds in range(7):
        _copy_layer(table_dir, tmp_path, seeds)
    path, _ = _copy_layer(table_dir, tmp_path, 7)
    with open(path, "r+b") as handle:
        handle.truncate(100)
    runner = CliRunner()
    result = runner.invoke(cli, ["verify", "--dir", str(tmp_path), "--seeds", "7"])
    assert result.exit_code == 2
    assert len(result.output.strip().splitlines()) == 1 and "awele-07.h5" in result.output


def test_a_working_area_is_released_even_while_a_cycle_still_holds_a_view():
    # The working state's mapping is closed once its arrays are dropped; a view
    # a reference cycle still holds (so alive until the next collection) made
    # close() raise BufferError and failed a build that had finished its layer.
    import gc

    area, values = layers.reserve(1 << 16)
    values[:] = 7

    class Holder:
        pass

    holder = Holder()
    holder.view, holder.me = values[10:20], holder  # a cycle: only the collector frees it
    del holder, values
    gc.disable()
    try:
        layers.release(area)
    finally:
        gc.enable()
    assert area.closed
    # A view nobody drops leaves the mapping to its end, and no error.
    area, values = layers.reserve(1 << 16)
    layers.release(area)
    assert not area.closed and int(values.sum()) == 0
