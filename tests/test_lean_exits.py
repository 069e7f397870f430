"""The streamed exits (solver.lean_exits): the resident exits' values with no smaller layer resident,
through the lean stages and the build; and the plan that uses them for the opening."""

import hashlib
import json
import os

import numpy as np
import pytest
from click.testing import CliRunner

from solver import build, exits, index, layer_state, lean, lean_exits, plan, retrograde, tables
from solver.cli import cli
from solver.errors import BuildError, ScratchError
from solver.layers import LayerStore

HASHES = {int(seeds): digest for seeds, digest in json.load(
    open(os.path.join(os.path.dirname(__file__), "data", "layer_sha256.json")))["sha256"].items()}
LAYERS = 14


@pytest.fixture(scope="module")
def reference():
    """Layers 0..14 by the in-memory stages."""
    return retrograde.solve_up_to(LAYERS, threads=1)


def _resident(seeds, reference):
    """The first resident exit pass over every smaller layer: (values, counts)."""
    size = index.layer_size(seeds)
    values = np.zeros(size, dtype=np.int8)
    counts = np.zeros((size + 1) // 2, dtype=np.uint8)
    use = np.zeros(index.MAX_SEEDS + 1, dtype=np.bool_)
    use[layer_state.exit_layers(seeds)] = True
    exits.exit_pass(seeds, size, values, counts, reference.flat, reference.starts, use, True,
                    index.RowTables(seeds).arrays, False)
    return values, counts


def _streamed(seeds, reference, scratch, slices, window, batch=lean_exits.BATCH):
    size = index.layer_size(seeds)
    values = np.zeros(size, dtype=np.int8)
    counts = np.zeros((size + 1) // 2, dtype=np.uint8)
    step = -(-size // slices // layer_state.BLOCK) * layer_state.BLOCK
    rows = index.RowTables(seeds).arrays
    read = []
    lookups = 0
    for lo in range(0, size, step):
        hi = min(size, lo + step)
        found = lean_exits.slice_exits(seeds, lo, values[lo:hi], counts[lo // 2 : (hi + 1) // 2], rows, str(scratch),
                                       lambda m, a, b: read.append((m, a, b)) or reference.layer(m)[a:b], window,
                                       batch=batch, piece=1000)
        lookups += found["lookups"]
        assert os.listdir(scratch) == []  # every bucket file read and removed
    return values, counts, read, lookups


@pytest.mark.parametrize("seeds", range(2, LAYERS + 1))
def test_the_streamed_exits_give_the_resident_exits_values_and_counts(reference, tmp_path, seeds):
    # 1 to 5 slices, windows from a few hundred ranks to the largest smaller layer, batches of one block or many.
    slices = 1 + seeds % 5
    largest = max(index.layer_size(m) for m in layer_state.exit_layers(seeds))
    window = max(1, largest // (1 + 3 * (seeds % 4)))
    batch = layer_state.BLOCK * (1 if seeds % 2 else 64)
    values, counts = _resident(seeds, reference)
    got_values, got_counts, read, lookups = _streamed(seeds, reference, tmp_path, slices, window, batch)
    assert np.array_equal(got_values, values) and np.array_equal(got_counts, counts)
    assert lookups > 0 or seeds < 4  # the smallest layers capture nothing
    # Each slice reads each child window at most once, in rank order: sequential.
    for m in layer_state.exit_layers(seeds):
        starts = [a for child, a, _ in read if child == m]
        assert len(starts) <= slices * -(-index.layer_size(m) // window)
        assert all(stop - start <= window for child, start, stop in read if child == m)


def test_a_request_holds_the_child_s_offset_and_its_parent(reference):
    keys = np.array([(12 << exits.RANK_BITS) | 7, (5 << exits.RANK_BITS) | 3, (12 << exits.RANK_BITS) | 2],
                    dtype=np.int64)
    owners = np.array([11, 22, 33], dtype=np.int64)
    first = lean_exits.buckets(14, window=5)
    out = np.empty(3, dtype=np.int64)
    offsets = np.zeros(first[-1] + 1, dtype=np.int64)
    lean_exits.distribute(keys, owners, np.array([3]), 3, first, 5, out, offsets)
    # Layer 5's bucket comes first; layer 12's ranks 2 and 7 fall in its windows 0 and 1.
    assert list(out) == [(3 << lean_exits.OWNER_BITS) | 22, (2 << lean_exits.OWNER_BITS) | 33,
                         (2 << lean_exits.OWNER_BITS) | 11]
    assert list(np.flatnonzero(np.diff(offsets))) == [first[5], first[12], first[12] + 1]


@pytest.mark.parametrize("seeds", [9, 12, LAYERS])
def test_the_lean_stages_with_streamed_exits_give_the_recorded_values(reference, tmp_path, seeds):
    size = index.layer_size(seeds)
    step = -(-size // 3 // layer_state.BLOCK) * layer_state.BLOCK
    layer = lean.LeanLayer(seeds, str(tmp_path), LayerStore(seeds), index.RowTables(seeds).arrays,
                           [layer_state.exit_layers(seeds)], lambda m: pytest.fail("no smaller layer is loaded"),
                           stack=lean.MIN_STACK, streamed={"slice": step, "window": 4096},
                           read=lambda m, a, b: reference.layer(m)[a:b])
    stats = layer.solve()
    values = layer.values()[0][0:size]
    layer.clear()
    assert hashlib.sha256(values.tobytes()).hexdigest() == HASHES[seeds]
    assert stats["exit_slices"] == 3 and stats["exit_passes"] == 1 and stats["requests_peak_bytes"] > 0


def test_a_build_forced_through_the_streamed_exits_hashes_as_recorded(tmp_path):
    rows = []
    build.build(LAYERS, str(tmp_path), threads=2, memory=400 << 20, report=rows.append, streamed_exits=True)
    assert [row["mode"] for row in rows] == ["lean"] * (LAYERS + 1)
    assert [row["exit_slices"] > 0 for row in rows] == [False, False] + [True] * (LAYERS - 1)
    for seeds in range(LAYERS + 1):
        values = tables.load_values(str(tmp_path), seeds)
        assert hashlib.sha256(values.tobytes()).hexdigest() == HASHES[seeds], f"layer {seeds}"


def test_a_streamed_exit_killed_half_way_leaves_what_the_next_run_removes(reference, tmp_path, monkeypatch):
    seeds = 12
    size = index.layer_size(seeds)
    step = -(-size // 2 // layer_state.BLOCK) * layer_state.BLOCK
    calls = []

    def read(m, a, b):
        calls.append(m)
        if len(calls) == 5:
            raise KeyboardInterrupt  # stopped half way through the first slice's answers
        return reference.layer(m)[a:b]

    def layer(read):
        return lean.LeanLayer(seeds, str(tmp_path), LayerStore(seeds), index.RowTables(seeds).arrays,
                              [layer_state.exit_layers(seeds)], lambda m: None, stack=lean.MIN_STACK,
                              streamed={"slice": step, "window": 1 << 14}, read=read)

    with pytest.raises(KeyboardInterrupt):
        layer(read).solve()
    assert lean.own_files(str(tmp_path), seeds) == []  # the bucket files and the unfinished state file removed
    # What a kill -9 there leaves (no journal yet): the next run removes it and starts the exits over.
    for name in (lean_exits.bucket_name(seeds, 3), lean.state_name(seeds), lean.counts_name(seeds)):
        (tmp_path / name).write_bytes(b"left by a kill")
    again = layer(lambda m, a, b: reference.layer(m)[a:b])
    again.solve()
    assert hashlib.sha256(again.values()[0][0:size].tobytes()).hexdigest() == HASHES[seeds]
    again.clear()


# The plan --------------------------------------------------------------------------

GIB = 1 << 30


def test_streamed_exits_plan_every_layer_whose_stages_fit():
    budget = 22 * GIB
    assert [plan.mode(n, budget) for n in (37, 39, 40, 41)] == ["lean", "lean", "lean", "too big"]
    layout = plan.lean_plan(40, budget)
    assert layout is not None and layout["streamed"] is not None and layout["memory_bytes"] <= budget
    assert layout["memory_bytes"] >= plan.LEAN_BASE_BYTES + (index.layer_size(40) + 1) // 2  # the stages' half byte
    assert layout["streamed"]["slices"] > 1 and layout["table_read_bytes"] == layout["streamed"]["slices"] * sum(
        index.layer_size(m) for m in layer_state.exit_layers(40))  # the smaller layers read once a slice
    assert plan.lean_plan(38, budget)["streamed"] is None  # its smaller layers fit: resident exits, faster
    assert plan.lean_plan(38, budget, streamed=True)["streamed"] is not None


@pytest.mark.parametrize("seeds", [20, 30, 46, 48])
def test_the_streamed_layout_fits_its_budget_and_scratch(seeds):
    size = index.layer_size(seeds)
    for budget in (600 << 20, 8 * GIB, 120 * GIB):
        for room in (None, int(2.2 * size), 10 * size):
            layout = plan.streamed_layout(seeds, budget, room)
            if layout is None:
                continue
            assert layout["slice"] % layer_state.BLOCK == 0 and layout["slice"] <= lean_exits.MAX_SLICE
            assert layout["slices"] == -(-size // layout["slice"])
            assert 0 < layout["window"] <= lean_exits.MAX_WINDOW
            assert plan.LEAN_BASE_BYTES + plan.streamed_exit_bytes(layout["slice"], layout["window"]) <= budget
            if room is not None:
                assert size + (size + 1) // 2 + plan.request_bytes(layout["slice"]) + plan.JOURNAL_ROOM <= room


def test_the_opening_plans_on_one_workstation(tmp_path):
    """`awele plan --max-seeds 48 --memory 120G --disk 1T --threads 16 --leave-out-47`: every layer built,
    within the memory and the disk, in under 7 days."""
    result = plan.plan(48, 120 * GIB, str(tmp_path), leave_out=(47,), disk=1 << 40, threads=16)
    rows = result["layers"]
    assert all(row["fits"] and row["fits_disk"] for row in rows)
    assert rows[47]["mode"] == "left out"
    assert all(row["peak_bytes"] <= 120 * GIB for row in rows if row["mode"] != "left out")
    assert all(row["disk_peak_bytes"] <= 1 << 40 for row in rows)
    assert [row["seeds"] for row in rows if row.get("streamed_exits")] == [48]  # 46 (137 GB) fits no 120 GiB
    assert [row["mode"] for row in rows[43:47]] == ["disk", "lean", "lean", "lean"]  # none in slices
    assert rows[48]["mode"] == "lean" and rows[48]["exit_slices"] > 1
    assert sum(row["seconds"] for row in rows) < 7 * 86400
    text = CliRunner().invoke(cli, ["plan", "--max-seeds", "48", "--memory", "120G", "--disk", "1T", "--threads", "16",
                                    "--leave-out-47", "--dir", str(tmp_path)])
    assert text.exit_code == 0, text.output
    assert "do not fit" not in text.output and "streamed" in text.output


def test_a_disk_too_small_is_marked_and_slices_the_streamed_exits_finer(tmp_path):
    wide = plan.plan(48, 120 * GIB, str(tmp_path), leave_out=(47,), disk=1 << 40)["layers"][48]
    narrow = plan.plan(48, 120 * GIB, str(tmp_path), leave_out=(47,), disk=931 * GIB)["layers"][48]
    assert narrow["fits_disk"] and narrow["exit_slices"] > wide["exit_slices"]  # fewer requests a slice on disk
    assert narrow["scratch_bytes"] < wide["scratch_bytes"] and narrow["seconds"] > wide["seconds"]
    short = plan.plan(48, 120 * GIB, str(tmp_path), leave_out=(47,), disk=500 * GIB)["layers"]
    assert not short[48]["fits_disk"]
    text = CliRunner().invoke(cli, ["plan", "--max-seeds", "48", "--memory", "120G", "--disk", "500G", "--dir",
                                    str(tmp_path), "--leave-out-47"])
    assert text.exit_code == 0 and "do not fit the disk" in text.output
    assert CliRunner().invoke(cli, ["plan", "--disk", "lots"]).exit_code == 2
    assert CliRunner().invoke(cli, ["plan", "--disk", "1T", "--processes", "2"]).exit_code == 2


def test_the_cluster_plan_models_the_lean_state_beside_the_in_memory_one(tmp_path):
    """`awele plan --processes 4 --memory-per-process 64G --max-seeds 48`."""
    result = plan.cluster_plan(48, 4, 64 * GIB, str(tmp_path), threads=16)
    row = result["layers"][48]
    assert not row["fits"] and row["lean_fits"]  # 1.5 bytes a position and the smaller layers, against half a byte
    share = plan.slice_share(48, 4)  # the codes, beside a group of the smaller layers' slices in the exits
    assert share // 2 + plan.slice_share(46, 4) < row["lean_process_bytes"] <= 64 * GIB
    assert row["lean_seconds"] > row["seconds"]
    assert result["smallest_lean_cluster"]["48"] <= 4 < result["smallest_cluster"]["48"]
    least = result["smallest_lean_cluster"]["48"]
    assert plan.lean_process_bytes(48, least, 16) <= 64 * GIB < plan.lean_process_bytes(48, least - 1, 16)
    text = CliRunner().invoke(cli, ["plan", "--processes", "4", "--memory-per-process", "64G", "--max-seeds", "48",
                                    "--dir", str(tmp_path)])
    assert text.exit_code == 0, text.output
    assert f"layer 48 in the lean state needs at least {least} processes of 64.0 GiB" in text.output


def test_a_bucket_file_is_read_back_as_appended_and_a_damaged_one_refused(tmp_path):
    files = lean_exits.Buckets(str(tmp_path), 12, 3)
    files.append(1, np.arange(10, dtype=np.int64))
    files.append(1, np.arange(100, 105, dtype=np.int64))  # reopened to append, its checksum added up
    got = []
    files.read(1, lambda piece: got.extend(piece.tolist()), np.empty(4, dtype=np.int64))
    assert got == [*range(10), *range(100, 105)] and os.listdir(tmp_path) == []
    files.append(2, np.arange(10, dtype=np.int64))
    with open(files.path(2), "r+b") as file:
        file.seek(17)
        file.write(b"\x7f")
    with pytest.raises(ScratchError, match="does not match its checksum"):
        files.read(2, lambda piece: None, np.empty(4, dtype=np.int64))
    files.remove()
    assert os.listdir(tmp_path) == []
    os.symlink(tmp_path / "elsewhere", tmp_path / lean_exits.bucket_name(12, 0))
    with pytest.raises(BuildError):
        files.append(0, np.arange(3, dtype=np.int64))  # never through a link
