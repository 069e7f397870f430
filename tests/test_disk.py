"""The disk mode (solver.disk): a layer's exits a slice at a time through a
scratch folder, then its stages in memory. The same values as in memory
(the recorded hashes) for any cut into slices and groups, a kill at any
step resumed, a full or small disk stopped in one line."""

import gc
import hashlib
import json
import os
import shutil
import subprocess
import sys
import weakref

import numpy as np
import pytest
from click.testing import CliRunner

from solver import build, disk, index, plan, retrograde, tables
from solver.cli import cli
from solver.errors import BuildError
from solver.layers import LayerStore

HASHES = {int(seeds): digest for seeds, digest in json.load(
    open(os.path.join(os.path.dirname(__file__), "data", "layer_sha256.json")))["sha256"].items()}


def _digest(values):
    return hashlib.sha256(np.ascontiguousarray(values).tobytes()).hexdigest()


def _copy_layers(source, target, layers):
    os.makedirs(target, exist_ok=True)
    for seeds in layers:
        shutil.copy(tables.table_path(source, seeds), tables.table_path(target, seeds))
    return str(target)


def _layout(seeds, parts, groups):
    bounds = plan.disk_bounds(index.layer_size(seeds), parts)
    return {"slices": parts, "bounds": bounds, "groups": groups, "scratch_bytes": 0}


def _on_disk(directory, seeds, layout, scratch=None):
    store = LayerStore(seeds)
    rows = index.RowTables(seeds).arrays
    scratch = scratch or os.path.join(directory, build.SCRATCH_NAME)
    with retrograde.thread_count(1):  # small layers: one thread, as a busy machine runs them fastest
        return build.build_layer_on_disk(seeds, directory, scratch, store, layout, rows)


def test_a_build_forced_on_disk_reproduces_the_recorded_hashes(tmp_path):
    rows = []
    build.build(14, str(tmp_path), threads=2, report=rows.append, disk_slices=3)
    on_disk = [row["seeds"] for row in rows if row.get("mode") == "disk"]
    assert on_disk == list(range(7, 15))  # every layer of at least 3 slice units
    assert all(row["slices"] == 3 and row["disk_bytes_written"] > 0 for row in rows if row.get("mode") == "disk")
    for seeds in range(15):
        assert _digest(tables.load_values(str(tmp_path), seeds)) == HASHES[seeds], f"layer {seeds}"
    assert not os.path.exists(tmp_path / build.SCRATCH_NAME)  # the default scratch folder goes once empty


@pytest.mark.parametrize("parts, groups", [
    (2, [[11, 9, 7, 5, 3, 1], [10, 8, 6, 4, 2, 0]]),
    (5, [[0, 1, 2], [3, 4, 5, 6, 7], [8, 9], [10], [11]]),
    (7, [[11, 10], list(range(10))]),
])
def test_every_cut_into_slices_and_groups_gives_the_same_layer(table_dir, tmp_path, parts, groups):
    directory = _copy_layers(table_dir, tmp_path / "db", range(12))
    stats = _on_disk(directory, 13, _layout(13, parts, groups))
    assert stats["exit_passes"] == len(groups) and stats["slices"] == parts
    # Each slice written once a group, read back once a group after the first and once for the stages.
    state = sum(-(-(hi - lo) // retrograde.LINE_RANKS) for lo, hi in
                zip(plan.disk_bounds(index.layer_size(13), parts), plan.disk_bounds(index.layer_size(13), parts)[1:]))
    assert stats["disk_bytes_written"] == len(groups) * state * retrograde.LINE
    assert _digest(tables.load_values(directory, 13)) == HASHES[13]
    assert build.verify(directory, 13, memory=2 << 30)[0] == 0
    assert not os.listdir(os.path.join(directory, build.SCRATCH_NAME))


def _killed_build(directory, seeds, steps, parts=3, sliced=False, interval=600.0):
    code = ("import sys\nfrom solver import build\n"
            f"build.build({seeds}, {directory!r}, threads=1, disk_slices={parts}, disk_sliced_stages={sliced}, "
            f"checkpoint_interval={interval})\n")
    env = dict(os.environ, **{build.DISK_KILL_VARIABLE: f"{seeds}:{steps}"})
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("steps", [1, 2])
def test_a_build_killed_at_any_step_resumes_there_and_loses_nothing(table_dir, tmp_path, steps):
    directory = _copy_layers(table_dir, tmp_path / "db", range(13))
    killed = _killed_build(directory, 13, steps)
    assert killed.returncode == -9, killed.stderr
    scratch = os.path.join(directory, build.SCRATCH_NAME)
    journal = json.load(open(disk.journal_path(scratch, 13)))
    assert sum(done >= 0 for done in journal["done"]) == steps  # one slice recorded a step
    assert not os.path.exists(tables.table_path(directory, 13))
    # What a kill in the middle of the next step leaves: a partial slice file and a journal's temporary.
    open(disk.slice_path(scratch, 13, 2, 3, 0), "wb").write(b"partial")
    open(disk.journal_path(scratch, 13) + f"{tables.TEMPORARY_SUFFIX}-12345", "wb").write(b"{")
    rows = []
    build.build(13, directory, threads=1, disk_slices=3, report=rows.append)
    row = rows[-1]
    assert row["mode"] == "disk" and row["built"]
    full = sum(-(-(hi - lo) // retrograde.LINE_RANKS) for lo, hi in
               zip(journal["bounds"], journal["bounds"][1:])) * retrograde.LINE
    assert row["disk_bytes_written"] < full  # the recorded steps were not done again
    assert _digest(tables.load_values(directory, 13)) == HASHES[13]
    assert not os.path.exists(scratch)


def test_a_kill_after_the_exits_resumes_at_the_stages(table_dir, tmp_path):
    directory = _copy_layers(table_dir, tmp_path / "db", range(13))
    assert _killed_build(directory, 13, 3, parts=3).returncode == -9  # every slice through the one group
    rows = []
    build.build(13, directory, threads=1, disk_slices=3, report=rows.append)
    assert rows[-1]["disk_bytes_written"] == 0 and rows[-1]["disk_bytes_read"] > 0
    assert _digest(tables.load_values(directory, 13)) == HASHES[13]


@pytest.mark.parametrize("parts, groups", [(2, [list(range(9))]), (3, [[8, 7, 6], list(range(6))])])
def test_stages_in_slices_give_the_same_layer(table_dir, tmp_path, parts, groups):
    """The stages a slice at a time (a budget that cannot hold the working
    state): updates between slices through files, each slice visited until
    no slice has seeds or updates left in the stage."""
    directory = _copy_layers(table_dir, tmp_path / "db", range(10))
    layout = dict(_layout(10, parts, groups), sliced_stages=True)
    stats = _on_disk(directory, 10, layout)
    assert stats["sliced_stages"] and stats["stage_visits"] >= parts and stats["updates_sent"] > 0
    assert _digest(tables.load_values(directory, 10)) == HASHES[10]
    assert not os.listdir(os.path.join(directory, build.SCRATCH_NAME))


@pytest.mark.parametrize("steps", [5, 40])
def test_a_build_killed_in_its_sliced_stages_resumes_at_the_last_visit(table_dir, tmp_path, steps):
    directory = _copy_layers(table_dir, tmp_path / "db", range(10))
    assert _killed_build(directory, 10, steps, sliced=True).returncode == -9
    scratch = os.path.join(directory, build.SCRATCH_NAME)
    journal = json.load(open(disk.journal_path(scratch, 10)))
    assert journal["sliced"] and journal["stage"] is not None and journal["visits"] > 0
    build.build(10, directory, threads=1, disk_slices=3, disk_sliced_stages=True)
    assert _digest(tables.load_values(directory, 10)) == HASHES[10]
    assert not os.path.exists(scratch)


def test_a_build_killed_in_its_stages_resumes_at_the_last_stage_checkpoint(table_dir, tmp_path):
    directory = _copy_layers(table_dir, tmp_path / "db", range(13))
    # 3 steps for the exits (3 slices, 1 group), then a checkpoint after every stage: killed after the second.
    assert _killed_build(directory, 13, 5, interval=0.0).returncode == -9
    scratch = os.path.join(directory, build.SCRATCH_NAME)
    journal = json.load(open(disk.journal_path(scratch, 13)))
    assert journal["checkpoint"][2] == 11 and journal["files"] == [None, None, None]
    # Killed right after the record: the checkpoint it replaced is still there, for the rerun to remove.
    assert sorted(name for name in os.listdir(scratch) if name.endswith(".lines")) == [
        "awele-13.stage-11.lines", "awele-13.stage-12.lines"]
    rows = []
    build.build(13, directory, threads=1, disk_slices=3, report=rows.append, checkpoint_interval=0.0)
    assert rows[-1]["resumed_at_stage"] == 11
    assert _digest(tables.load_values(directory, 13)) == HASHES[13]
    assert not os.path.exists(scratch)


def test_a_damaged_slice_file_is_refused_not_used(table_dir, tmp_path):
    directory = _copy_layers(table_dir, tmp_path / "db", range(13))
    assert _killed_build(directory, 13, 2).returncode == -9
    scratch = os.path.join(directory, build.SCRATCH_NAME)
    with open(disk.slice_path(scratch, 13, 0, 3, 0), "r+b") as handle:
        handle.seek(100)
        byte = handle.read(1)
        handle.seek(100)
        handle.write(bytes([byte[0] ^ 1]))
    with pytest.raises(BuildError, match="does not match its CRC-32"):
        build.build(13, directory, threads=1, disk_slices=3)
    assert not os.path.exists(tables.table_path(directory, 13))


def test_a_full_scratch_disk_stops_in_one_line_and_the_rerun_resumes(table_dir, tmp_path, monkeypatch):
    directory = _copy_layers(table_dir, tmp_path / "db", range(13))
    real_write = os.write
    calls = []

    def filling(descriptor, data):
        calls.append(len(data))
        if len(calls) > 3:
            raise OSError(28, "No space left on device")
        return real_write(descriptor, data)

    monkeypatch.setattr(disk.os, "write", filling)
    with pytest.raises(BuildError) as caught:
        build.build(13, directory, threads=1, disk_slices=3)
    message = str(caught.value)
    assert "is full" in message and "\n" not in message and "build again to resume" in message
    monkeypatch.setattr(disk.os, "write", real_write)
    scratch = os.path.join(directory, build.SCRATCH_NAME)
    assert all(not name.endswith(".lines") or os.path.getsize(os.path.join(scratch, name)) > 100
               for name in os.listdir(scratch))  # no partial slice file left
    assert tables.built_layers(directory) == list(range(13))
    build.build(13, directory, threads=1, disk_slices=3)
    assert _digest(tables.load_values(directory, 13)) == HASHES[13]


def test_a_scratch_disk_too_small_is_refused_before_the_layer_starts(table_dir, tmp_path, monkeypatch):
    directory = _copy_layers(table_dir, tmp_path / "db", range(13))
    monkeypatch.setattr(disk, "free_bytes", lambda folder: 1000)
    scratch = str(tmp_path / "elsewhere")
    with pytest.raises(BuildError, match=r"layer 13 needs .* GB in the scratch folder .* has 0.0 GB free"):
        build.build(13, directory, threads=1, disk_slices=3, scratch=scratch)
    assert [name for name in os.listdir(scratch) if not name.startswith(".")] == []
    assert tables.built_layers(directory) == list(range(13))


def test_a_budget_below_a_layers_memory_need_builds_it_on_disk_from_the_command_line(table_dir, tmp_path):
    directory = _copy_layers(table_dir, tmp_path / "db", range(13))
    budget = plan.least_bytes(14) - 1
    assert plan.mode(14, budget) == "disk" and plan.mode(13, budget) == "memory"
    scratch = str(tmp_path / "scratch")
    result = CliRunner().invoke(cli, ["build", "--max-seeds", "14", "--dir", directory, "--memory", str(budget),
                                      "--scratch", scratch, "--quiet"])
    assert result.exit_code == 0, result.output
    assert "layer 14:" in result.output and "disk mode: 16 slices" in result.output
    for seeds in (13, 14):
        assert _digest(tables.load_values(directory, seeds)) == HASHES[seeds]
    assert [name for name in os.listdir(scratch) if not name.startswith(".")] == []  # a given folder stays, empty


def test_the_plan_shows_each_layers_mode_memory_scratch_and_time():
    result = plan.plan(40, budget=22 << 30, directory="/nonexistent", leave_out=())
    rows = {row["seeds"]: row for row in result["layers"]}
    assert rows[34]["mode"] == "memory" and rows[34]["scratch_bytes"] == 0
    for seeds in (35, 36):  # their stages in memory, their exits through disk
        row = rows[seeds]
        assert row["mode"] == "disk" and not row["sliced_stages"] and row["peak_bytes"] <= 22 << 30
        assert 0 < row["scratch_bytes"] < 40e9 and row["seconds"] > row["positions"] / result["rate"]
        assert row["peak_bytes"] >= plan.BASE_BYTES + plan.working_bytes(seeds)
    for seeds in (37, 38, 39):  # the lean stages: half a byte a position (test_lean.py)
        assert rows[seeds]["mode"] == "lean" and rows[seeds]["peak_bytes"] <= 22 << 30
        assert rows[seeds]["scratch_bytes"] > 2 * rows[seeds]["positions"]
    assert rows[40]["mode"] == "too big"  # layer 38 alone does not fit in 22 GiB
    assert rows[40]["disk_least_bytes"] > index.layer_size(38) + plan.BASE_BYTES
    assert result["largest_layer"] == 39 and result["largest_in_memory"] == 34
    text = CliRunner().invoke(cli, ["plan", "--max-seeds", "48", "--memory", "22G", "--leave-out-47"])
    assert text.exit_code == 0, text.output
    assert "left out (no game reaches it)" in text.output
    assert f"leaving out layer 47 saves {index.layer_size(47):,} positions" in text.output
    assert "layers 40.. do not fit" in text.output and "layer 40 needs 22.5 GiB" in text.output


def test_a_layer_no_later_one_needs_can_be_left_out_of_a_build(tmp_path):
    # Layer 47 for layer 48 (a capture takes at least 2 seeds); here 6 for 7, small enough to build.
    assert build.UNREACHABLE not in retrograde.exit_layers(48)
    rows = []
    build.build(7, str(tmp_path), leave_out=(6,), report=rows.append)
    assert tables.built_layers(str(tmp_path)) == [0, 1, 2, 3, 4, 5, 7]
    assert 6 not in [row["seeds"] for row in rows]
    assert _digest(tables.load_values(str(tmp_path), 7)) == HASHES[7]
    with pytest.raises(BuildError, match="layer 7 needs layer 5"):
        build.build(7, str(tmp_path / "other"), leave_out=(5,))


def test_the_exits_hold_one_slice_at_a_time(table_dir, tmp_path, monkeypatch):
    # The budget counts one slice of working state beside a group of smaller
    # layers. Reading the next slice while the last one was still referenced
    # held two (layer 36's exits: 4.3 GB over the budget, killed by the kernel).
    directory = _copy_layers(table_dir, tmp_path / "db", range(10))
    passed, alive_at_reads = [], []
    exit_pass, read_slice = retrograde.exit_pass, disk.DiskLayer._read_slice

    def watched_exit_pass(seeds, size, state, *args):
        passed.append(weakref.ref(state))
        return exit_pass(seeds, size, state, *args)

    def watched_read(self, part, out=None):
        gc.collect()
        alive_at_reads.append(sum(ref() is not None for ref in passed))
        return read_slice(self, part, out)

    monkeypatch.setattr(retrograde, "exit_pass", watched_exit_pass)
    monkeypatch.setattr(disk.DiskLayer, "_read_slice", watched_read)
    _on_disk(directory, 10, _layout(10, 3, [[8, 7, 6], list(range(6))]))
    # Group 1 reads two slices (it goes on with the one group 0 ended on), the
    # stages all three; no slice the exits worked on is alive at any read.
    assert len(passed) == 6 and alive_at_reads == [0] * 5
    assert _digest(tables.load_values(directory, 10)) == HASHES[10]
