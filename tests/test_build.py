"""The lean builder: the same tables as the builder it replaced, in any memory
budget that holds a layer, one build per folder, and the plan."""

import hashlib
import json
import os
import subprocess
import sys

import numba
import numpy as np
import pytest
from click.testing import CliRunner
from naive import naive_legal_moves, naive_play, naive_terminal_value

from solver import build, index, layer_state, plan, retrograde, tables
from solver.cli import cli
from solver.errors import BuildError
from solver.layers import LayerStore

HASHES = {
    int(seeds): digest
    for seeds, digest in json.load(
        open(os.path.join(os.path.dirname(__file__), "data", "layer_sha256.json"))
    )["sha256"].items()
}
DEFAULT_RUN_LAYERS = 16


def _digest(values):
    return hashlib.sha256(np.ascontiguousarray(values).tobytes()).hexdigest()


@pytest.fixture(scope="module")
def built16(tables16):
    """The session's layers 0..16 (conftest.py: 13..16 built on two threads over the layers to 12)."""
    return tables16, None


def test_layers_to_16_reproduce_the_recorded_hashes(built16):
    directory, _ = built16
    for seeds in range(DEFAULT_RUN_LAYERS + 1):
        assert _digest(tables.load_values(directory, seeds)) == HASHES[seeds], f"layer {seeds}"


@pytest.mark.slow  # 30 s: CI runs it on its slow line (.ci/run); the hashes of 13..16 are checked by default
def test_larger_layers_verify_and_do_not_depend_on_threads(built16):
    directory, _ = built16
    for seeds in range(13, 17):
        assert build.verify(directory, seeds)[0] == 0
    store = build.load_layers(directory, layer_state.exit_layers(16), LayerStore(16))
    single, _ = retrograde.solve_layer(16, store, threads=1)
    assert _digest(single) == HASHES[16]


def _naive_mismatches(layers, seeds):
    """Ranks of layer `seeds` whose value is not the best over its moves, by
    the naive rules (tests/naive.py): `layers[m]` holds layer m's values."""
    wrong = []
    for rank, board in enumerate(index.layer_boards(seeds, 0, index.layer_size(seeds)).tolist()):
        terminal = naive_terminal_value(board)
        if terminal is not None:
            best = terminal
        else:
            best = -seeds - 1
            for house in naive_legal_moves(board):
                captured, child = naive_play(board, house)
                best = max(best, captured - int(layers[seeds - captured][index.rank(child)]))
        if best != layers[seeds][rank]:
            wrong.append(rank)
    return wrong


def test_verify_in_passes_finds_exactly_the_wrong_positions(built16, tmp_path):
    """Under a budget too small for every smaller layer at once, verify takes
    them a group at a time and says what one pass says: the layer right, and
    once values are planted wrong (raised, lowered, a terminal position's
    changed), exactly the positions the naive rules find wrong."""
    directory, _ = built16
    seeds = 7
    budget = plan.BASE_BYTES + plan.verify_bytes(seeds) + index.layer_size(5) + index.layer_size(3)
    groups = plan.verify_groups(seeds, budget)
    assert len(groups) >= 2 and sorted(m for g in groups for m in g) == layer_state.exit_layers(seeds)
    assert plan.verify_groups(seeds, 1 << 40) == [layer_state.exit_layers(seeds)]
    assert build.verify(directory, seeds, memory=budget) == (0, [])
    folder = str(tmp_path)
    layers = [tables.load_values(directory, m) for m in range(seeds + 1)]
    terminal = next(r for r, board in enumerate(index.layer_boards(seeds, 0, 1000)) if not board[:6].any())
    values = layers[seeds]
    values[terminal] = -values[terminal] if values[terminal] else 1
    for rank in (101, 7777, 20000, 30001):
        values[rank] = values[rank] + 3 if values[rank] + 3 <= seeds else values[rank] - 3
    for m, layer in enumerate(layers):
        tables.write_table(folder, m, layer)
    wrong = _naive_mismatches(layers, seeds)
    assert len(wrong) >= 5
    whole = build.verify(folder, seeds, limit=len(wrong))
    split = build.verify(folder, seeds, limit=len(wrong), memory=budget)
    assert whole == split and whole[0] == len(wrong)
    first_of_each_block = sorted({rank // layer_state.BLOCK: rank for rank in reversed(wrong)}.values())
    assert [board for board, _ in whole[1]] == [index.unrank(seeds, r).tolist() for r in first_of_each_block]
    with pytest.raises(BuildError, match=f"verifying layer {seeds} needs"):
        plan.verify_groups(seeds, plan.BASE_BYTES + plan.verify_bytes(seeds))


def test_a_sampled_verify_finds_exactly_the_wrong_positions_it_draws(built16, tmp_path):
    """verify_sample reads each value from one checked chunk and finds, among
    the positions it draws, exactly those the naive rules find wrong."""
    directory, _ = built16
    seeds = 7
    assert build.verify_sample(directory, 15, 3000, seed=5) == (0, [])
    layers = [tables.load_values(directory, m) for m in range(seeds + 1)]
    values = layers[seeds]
    for rank in range(0, values.shape[0], 997):
        values[rank] = values[rank] + 2 if values[rank] + 2 <= seeds else values[rank] - 2
    folder = str(tmp_path)
    for m, layer in enumerate(layers):
        tables.write_table(folder, m, layer)
    wrong = set(_naive_mismatches(layers, seeds))
    drawn = set(np.unique(np.random.default_rng(3).integers(0, values.shape[0], 5000)).tolist())
    count, examples = build.verify_sample(folder, seeds, 5000, seed=3, limit=1000)
    assert count == len(wrong & drawn) > 0
    assert sorted(index.rank(board) for board, _ in examples) == sorted(wrong & drawn)
    result = CliRunner().invoke(cli, ["verify", "--dir", folder, "--seeds", "7", "--sample", "5000",
                                      "--sample-seed", "3"])
    assert result.exit_code == 1 and f"layer  7: {count:,} MISMATCHES, 5,000 positions drawn" in result.output
    ok = CliRunner().invoke(cli, ["verify", "--dir", directory, "--seeds", "15", "--sample", "400", "--json"])
    assert ok.exit_code == 0
    report = json.loads(ok.output)
    assert report["ok"] and report["layers"][0]["sample"] == 400 and report["layers"][0]["mismatches"] == 0


def test_cli_verify_takes_a_budget_and_refuses_one_too_small(built16):
    directory, _ = built16
    budget = plan.BASE_BYTES + plan.verify_bytes(15) + index.layer_size(13)
    ok = CliRunner().invoke(cli, ["verify", "--dir", directory, "--seeds", "15", "--memory", str(budget)])
    assert ok.exit_code == 0 and "layer 15: ok" in ok.output
    small = CliRunner().invoke(cli, ["verify", "--dir", directory, "--seeds", "15", "--memory", "100M"])
    assert small.exit_code == 2 and small.output.count("\n") == 1 and "verifying layer 15 needs" in small.output


@pytest.mark.slow  # 0..15 from nothing (10-30 s): CI's slow line (.ci/run); every grouping of one layer is below
def test_a_tight_budget_splits_the_exits_into_passes_and_gives_the_same_tables(tmp_path):
    budget = plan.least_bytes(15) + index.layer_size(11)
    groups = plan.exit_groups(15, budget)
    assert len(groups) >= 2 and sorted(m for g in groups for m in g) == layer_state.exit_layers(15)
    rows = []
    build.build(15, str(tmp_path), memory=budget, report=rows.append)
    assert rows[-1]["exit_passes"] == len(groups)
    for seeds in range(16):
        assert _digest(tables.load_values(str(tmp_path), seeds)) == HASHES[seeds], f"layer {seeds}"


def test_every_pass_order_and_grouping_gives_the_same_layer(table_dir):
    """Exit passes keep the best capture so far: any split of the smaller
    layers into passes, in any order, gives the same values."""
    rng = np.random.default_rng(7)
    layers = layer_state.exit_layers(12)
    for trial in range(3):
        store = build.load_layers(table_dir, layers, LayerStore(12))
        order = list(rng.permutation(layers))
        cuts = sorted(rng.choice(range(1, len(order)), size=trial + 1, replace=False))
        groups = [order[a:b] for a, b in zip([0] + cuts, cuts + [len(order)])]
        solver = retrograde.LayerSolver(12, store)
        for group in groups:
            solver.exits([int(m) for m in group])
        solver.solve()
        assert _digest(store.layer(12)) == HASHES[12]


def test_stages_refuse_to_start_before_every_exit_layer_is_done(table_dir):
    store = build.load_layers(table_dir, [5, 6], LayerStore(9))
    solver = retrograde.LayerSolver(9, store)
    solver.exits([5, 6])
    with pytest.raises(ValueError, match="no exit pass"):
        solver.solve()


def test_solve_layer_restores_the_thread_count():
    before = numba.get_num_threads()
    store = LayerStore(4)
    for seeds in range(5):
        retrograde.solve_layer(seeds, store, threads=1)
    assert numba.get_num_threads() == before


def test_a_pending_code_keeps_its_exit_and_is_never_a_value():
    codes = set()
    for exit in range(layer_state.NO_EXIT, layer_state.MAX_VALUE + 1):  # every exit there is
        code = layer_state.pending(exit)
        assert layer_state.pending_exit(code) == exit
        assert not layer_state.resolved(np.int8(code))  # int8, as the values hold codes (and as below: one compile)
        codes.add(int(code))
    assert len(codes) == layer_state.MAX_VALUE - layer_state.NO_EXIT + 1
    assert all(layer_state.resolved(np.int8(value)) for value in range(-48, 49))


def test_a_budget_too_small_stops_before_any_work_in_one_line(tmp_path):
    directory = str(tmp_path / "small")
    budget = plan.BASE_BYTES + plan.working_bytes(14) - 1  # not even the disk mode's working state
    assert plan.least_bytes(13) <= budget and plan.mode(14, budget) == "lean"  # half a byte a position
    assert plan.mode(24, budget) == "lean" and plan.mode(25, budget) == "too big"
    with pytest.raises(BuildError, match=r"layer 25 needs .* builds layers up to 24"):
        build.build(26, directory, memory=budget)
    assert tables.built_layers(directory) == []
    result = CliRunner().invoke(cli, ["build", "--max-seeds", "26", "--dir", directory, "--memory", "520M"])
    assert result.exit_code == 2
    assert "needs at least" in result.output and "builds layers up to" in result.output


def test_the_memory_option_reads_sizes_and_refuses_nonsense():
    assert plan.parse_memory("20G") == 20 << 30
    assert plan.parse_memory("1.5 GiB") == 3 << 29
    assert plan.parse_memory("4096") == 4096
    for bad in ("", "lots", "-3G", "0", "1" * 5000, "2X"):
        with pytest.raises(ValueError):
            plan.parse_memory(bad)
    result = CliRunner().invoke(cli, ["plan", "--memory", "lots"])
    assert result.exit_code == 2 and "--memory" in result.output


def test_largest_layer_and_least_bytes_agree():
    for seeds in (10, 20, 30, 32):
        budget = plan.least_bytes(seeds)
        assert plan.largest_layer(budget, disk=False) == seeds
        assert plan.largest_layer(budget - 1, disk=False) == seeds - 1
        assert plan.largest_layer(budget - 1) >= seeds  # the disk mode builds it (and maybe more)


def test_the_disk_mode_holds_one_slice_beside_the_largest_smaller_layer():
    for seeds in (20, 30, 36):
        stages = plan.BASE_BYTES + plan.working_bytes(seeds)
        layout = plan.disk_plan(seeds, plan.least_bytes(seeds) - 1)
        assert layout is not None and layout["memory_bytes"] <= plan.least_bytes(seeds) - 1
        assert layout["memory_bytes"] >= stages and not layout["sliced_stages"]
        below = plan.disk_plan(seeds, stages - 1)  # the working state does not fit: stages in slices
        assert below is not None and below["sliced_stages"] and below["memory_bytes"] <= stages - 1
        assert sorted(m for g in layout["groups"] for m in g) == layer_state.exit_layers(seeds)
        bounds = layout["bounds"]
        assert bounds[0] == 0 and bounds[-1] == index.layer_size(seeds)
        assert all(b % plan.SLICE_UNIT == 0 for b in bounds[:-1]) and sorted(bounds) == bounds


def test_plan_prints_every_layer_with_passes_and_estimates(built16):
    directory, _ = built16
    runner = CliRunner()
    result = runner.invoke(cli, ["plan", "--max-seeds", "48", "--memory", "20G", "--dir", directory, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    layers = data["layers"]
    assert [row["seeds"] for row in layers] == list(range(49))
    assert layers[32]["positions"] == index.layer_size(32) and layers[32]["mode"] == "memory"
    assert layers[32]["peak_bytes"] <= 20 << 30
    assert layers[40]["fits"] and layers[40]["streamed_exits"] and not layers[41]["fits"]  # 40: its exits streamed
    assert data["largest_layer"] == plan.largest_layer(20 << 30)
    assert data["measured_on"].startswith("layer 16")
    text = runner.invoke(cli, ["plan", "--max-seeds", "34", "--memory", "20G", "--dir", directory])
    assert text.exit_code == 0 and "too big" not in text.output.splitlines()[-3]


def test_a_second_build_in_the_same_folder_is_refused(tmp_path):
    directory = str(tmp_path)
    with build.BuildLock(directory):
        with pytest.raises(BuildError, match="another awele build is running"):
            build.build(3, directory)
        code = (
            "import sys\n"
            "from solver.cli import main\n"
            f"sys.argv = ['awele', 'build', '--max-seeds', '3', '--dir', {directory!r}]\n"
            "main()\n"
        )
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert result.returncode == 2
        assert result.stderr.strip().count("\n") == 0 and "another awele build is running" in result.stderr
    build.build(3, directory)
    assert tables.built_layers(directory) == [0, 1, 2, 3]


def test_a_planted_link_at_the_temporary_name_is_not_followed(tmp_path):
    target = tmp_path / "victim"
    target.write_text("keep me")
    directory = tmp_path / "db"
    directory.mkdir()
    values = np.zeros(index.layer_size(3), dtype=np.int8)
    os.symlink(target, directory / f"awele-03.h5{tables.TEMPORARY_SUFFIX}-{os.getpid()}")
    with pytest.raises(tables.TableWriteError):
        tables.write_table(str(directory), 3, values)
    assert target.read_text() == "keep me"
    assert not (directory / "awele-03.h5").exists()


@pytest.mark.slow
def test_layers_to_24_reproduce_the_recorded_hashes(tmp_path):
    directory = str(tmp_path)
    build.build(24, directory)
    for seeds in range(25):
        assert _digest(tables.load_values(directory, seeds)) == HASHES[seeds], f"layer {seeds}"
