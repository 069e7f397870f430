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
import time
import weakref

import numpy as np
import pytest
from click.testing import CliRunner

from solver import build, disk, distance, exits, index, layer_state, plan, tables
from solver.cli import cli
from solver.errors import BuildError
from solver.layers import LayerStore

HASHES = {int(seeds): digest for seeds, digest in json.load(
    open(os.path.join(os.path.dirname(__file__), "data", "layer_sha256.json")))["sha256"].items()}


def _digest(values):
    return hashlib.sha256(np.ascontiguousarray(values).tobytes()).hexdigest()


def _mostly_slow(cases, kept):
    """pytest params of `cases` (tuples whose first item is the label, or labels): those in `kept` run by
    default, the others with -m slow (each builds layer 13 twice; scripts/hostile.py runs them all too)."""
    params = []
    for case in cases:
        label = case[0] if isinstance(case, tuple) else case
        marks = () if label in kept else (pytest.mark.slow,)
        params.append(pytest.param(*(case if isinstance(case, tuple) else (case,)), marks=marks, id=str(label)))
    return params


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
    with layer_state.thread_count(1):  # small layers: one thread, as a busy machine runs them fastest
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


def _distances(directory, seeds):
    found, overflow = tables.load_distances(directory, seeds)
    return found[: index.layer_size(seeds)], overflow


def test_layers_built_on_disk_gain_the_distances_an_in_memory_build_gives(table_dir, tmp_path):
    # Their smaller layers a group at a time beside a slice of their values (3 slices), then the frontiers.
    directory = _copy_layers(table_dir, tmp_path / "db", range(10))
    rows = []
    build.build(12, directory, threads=1, report=rows.append, disk_slices=3)
    assert [(r["seeds"], r.get("mode"), r.get("distances")) for r in rows if r["built"]] == [
        (seeds, "disk", True) for seeds in (10, 11, 12)]
    for seeds in (10, 11, 12):
        (got, got_rows), (expected, expected_rows) = _distances(directory, seeds), _distances(table_dir, seeds)
        assert np.array_equal(got, expected) and np.array_equal(got_rows, expected_rows), seeds
        assert _digest(tables.load_values(directory, seeds)) == HASHES[seeds]


def test_a_budget_too_small_for_a_layers_distances_whole_slices_them(table_dir, tmp_path):
    # The largest smaller layer does not fit beside layer 12's values and distance bytes: the starts read the
    # layer a slice at a time beside it, and the distances are the same.
    directory = _copy_layers(table_dir, tmp_path / "db", range(12))
    build.build(12, directory, threads=1, distances=False)
    assert not tables.check_distances(directory, 12)
    size = index.layer_size(12)
    budget = plan.BASE_BYTES + size + distance.working_bytes(size) + index.layer_size(10) - 1
    assert plan.distance_groups(12, budget) is None and len(distance.sliced_plan(12, budget)[0]) == 3
    store = build.load_layers(directory, range(12), LayerStore(12))
    assert build.add_distances(12, directory, store, budget, index.RowTables(12).arrays) is not None
    assert all(np.array_equal(a, b) for a, b in zip(_distances(directory, 12), _distances(table_dir, 12)))
    assert _digest(tables.load_values(directory, 12)) == HASHES[12]


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
    state = sum(-(-(hi - lo) // layer_state.LINE_RANKS) for lo, hi in
                zip(plan.disk_bounds(index.layer_size(13), parts), plan.disk_bounds(index.layer_size(13), parts)[1:]))
    assert stats["disk_bytes_written"] == len(groups) * state * layer_state.LINE
    assert _digest(tables.load_values(directory, 13)) == HASHES[13]
    assert build.verify(directory, 13, memory=2 << 30)[0] == 0
    assert os.listdir(os.path.join(directory, build.SCRATCH_NAME)) in ([], [build.LOCK_NAME])


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
    journal = disk.read_journal(disk.journal_path(scratch, 13))
    assert sum(done >= 0 for done in journal["done"]) == steps  # one slice recorded a step
    assert not os.path.exists(tables.table_path(directory, 13))
    # What a kill in the middle of the next step leaves: a partial slice file and a journal's temporary.
    open(disk.slice_path(scratch, 13, 2, 3, 0), "wb").write(b"partial")
    open(disk.journal_path(scratch, 13) + f"{tables.TEMPORARY_SUFFIX}-12345", "wb").write(b"{")
    rows = []
    build.build(13, directory, threads=1, disk_slices=3, report=rows.append)
    row = rows[-1]
    assert row["mode"] == "disk" and row["built"]
    full = sum(-(-(hi - lo) // layer_state.LINE_RANKS) for lo, hi in
               zip(journal["bounds"], journal["bounds"][1:])) * layer_state.LINE
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
    assert os.listdir(os.path.join(directory, build.SCRATCH_NAME)) in ([], [build.LOCK_NAME])


@pytest.mark.parametrize("steps", [pytest.param(5, marks=pytest.mark.slow), 40])  # 5 on CI's slow line (.ci/run)
def test_a_build_killed_in_its_sliced_stages_resumes_at_the_last_visit(table_dir, tmp_path, steps):
    directory = _copy_layers(table_dir, tmp_path / "db", range(10))
    assert _killed_build(directory, 10, steps, sliced=True).returncode == -9
    scratch = os.path.join(directory, build.SCRATCH_NAME)
    journal = disk.read_journal(disk.journal_path(scratch, 10))
    assert journal["sliced"] and journal["stage"] is not None and journal["visits"] > 0
    build.build(10, directory, threads=1, disk_slices=3, disk_sliced_stages=True)
    assert _digest(tables.load_values(directory, 10)) == HASHES[10]
    assert not os.path.exists(scratch)


def test_a_build_killed_in_its_stages_resumes_at_the_last_stage_checkpoint(table_dir, tmp_path):
    directory = _copy_layers(table_dir, tmp_path / "db", range(13))
    # 3 steps for the exits (3 slices, 1 group), then a checkpoint after every stage: killed after the second.
    assert _killed_build(directory, 13, 5, interval=0.0).returncode == -9
    scratch = os.path.join(directory, build.SCRATCH_NAME)
    journal = disk.read_journal(disk.journal_path(scratch, 13))
    assert journal["checkpoint"][2] == 11 and journal["files"] == [None, None, None]
    # Killed right after the record: the checkpoint it replaced is still there, for the rerun to remove.
    assert sorted(name for name in os.listdir(scratch) if name.endswith(".lines")) == [
        "awele-13.stage-11.lines", "awele-13.stage-12.lines"]
    rows = []
    build.build(13, directory, threads=1, disk_slices=3, report=rows.append, checkpoint_interval=0.0)
    assert rows[-1]["resumed_at_stage"] == 11
    assert _digest(tables.load_values(directory, 13)) == HASHES[13]
    assert not os.path.exists(scratch)


def _damage(path, how, elsewhere):
    """Damage scratch file `path` as `how` says; `elsewhere` is a file outside the scratch folder."""
    if how == "a byte flipped":
        with open(path, "r+b") as handle:
            handle.seek(100)
            byte = handle.read(1)
            handle.seek(100)
            handle.write(bytes([byte[0] ^ 1]))
    elif how == "truncated":
        os.truncate(path, os.path.getsize(path) // 2)
    elif how == "emptied":
        os.truncate(path, 0)
    elif how == "a byte appended":
        with open(path, "ab") as handle:
            handle.write(b"x")
    elif how == "deleted":
        os.remove(path)
    elif how == "replaced by a link":
        shutil.copy(path, elsewhere)
        os.remove(path)
        os.symlink(elsewhere, path)
    elif how == "replaced by a dangling link":
        os.remove(path)
        os.symlink(elsewhere + ".nowhere", path)


@pytest.mark.parametrize("how", _mostly_slow(["a byte flipped", "truncated", "emptied", "a byte appended", "deleted",
                                               "replaced by a link", "replaced by a dangling link"],
                                              {"a byte flipped", "replaced by a link"}))
def test_a_damaged_missing_or_planted_slice_file_starts_the_layer_over(table_dir, tmp_path, capfd, how):
    """Never stuck (issue 54): the layer starts over in one line naming the
    file, nothing planted is followed, and the layer is right."""
    directory = _copy_layers(table_dir, tmp_path / "db", range(13))
    assert _killed_build(directory, 13, 2).returncode == -9
    scratch = os.path.join(directory, build.SCRATCH_NAME)
    path = disk.slice_path(scratch, 13, 0, 3, 0)
    elsewhere = str(tmp_path / "outside.lines")
    _damage(path, how, elsewhere)
    kept = open(elsewhere, "rb").read() if os.path.exists(elsewhere) else None
    capfd.readouterr()
    build.build(13, directory, threads=1, disk_slices=3)
    said = [line for line in capfd.readouterr().err.splitlines() if line.startswith("awele: ")]
    assert len(said) == 1 and path in said[0] and "layer 13 starts over" in said[0], said
    assert _digest(tables.load_values(directory, 13)) == HASHES[13]
    assert not os.path.exists(scratch)
    if kept is not None:
        assert open(elsewhere, "rb").read() == kept  # the link's target neither removed nor written


def test_a_folder_planted_at_a_scratch_files_name_is_one_line(table_dir, tmp_path):
    directory = _copy_layers(table_dir, tmp_path / "db", range(13))
    assert _killed_build(directory, 13, 2).returncode == -9
    scratch = os.path.join(directory, build.SCRATCH_NAME)
    path = disk.slice_path(scratch, 13, 0, 3, 0)
    os.remove(path)
    os.makedirs(os.path.join(path, "inside"))
    with pytest.raises(BuildError) as caught:
        build.build(13, directory, threads=1, disk_slices=3)
    assert path in str(caught.value) and "is a folder" in str(caught.value) and "\n" not in str(caught.value)
    assert os.path.isdir(os.path.join(path, "inside"))  # left as it was
    os.rmdir(os.path.join(path, "inside"))
    os.rmdir(path)
    build.build(13, directory, threads=1, disk_slices=3)  # removed as it says: the build goes on
    assert _digest(tables.load_values(directory, 13)) == HASHES[13]


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
    result = plan.plan(41, budget=22 << 30, directory="/nonexistent", leave_out=())
    rows = {row["seeds"]: row for row in result["layers"]}
    assert rows[34]["mode"] == "memory" and rows[34]["scratch_bytes"] == 0
    for seeds in (35, 36):  # their stages in memory, their exits through disk
        row = rows[seeds]
        assert row["mode"] == "disk" and not row["sliced_stages"] and row["peak_bytes"] <= 22 << 30
        assert 0 < row["scratch_bytes"] < 40e9 and row["seconds"] > row["positions"] / result["rate"]
        assert row["peak_bytes"] >= plan.BASE_BYTES + plan.working_bytes(seeds)
    for seeds in (37, 38, 39):  # the lean stages: half a byte a position (test_lean.py)
        assert rows[seeds]["mode"] == "lean" and rows[seeds]["peak_bytes"] <= 22 << 30
        # one state file, rewritten in place, beside the larger of the counts file and the queue (docs/DISK.md)
        assert rows[seeds]["positions"] * 1.5 <= rows[seeds]["scratch_bytes"] <= rows[seeds]["positions"] * 1.7
    assert rows[37]["scratch_bytes"] < 30e9 and rows[38]["scratch_bytes"] < 40e9  # within this machine's disk
    assert rows[40]["mode"] == "lean" and rows[40]["streamed_exits"]  # layer 38 alone does not fit: exits streamed
    assert rows[41]["mode"] == "too big"  # half a byte a position of layer 41 does not fit in 22 GiB
    assert rows[41]["lean_least_bytes"] > index.layer_size(41) // 2 + plan.LEAN_BASE_BYTES
    assert result["largest_layer"] == 40 and result["largest_in_memory"] == 34
    text = CliRunner().invoke(cli, ["plan", "--max-seeds", "48", "--memory", "22G", "--leave-out-47"])
    assert text.exit_code == 0, text.output
    assert "left out (no game reaches it)" in text.output
    assert f"leaving out layer 47 saves {index.layer_size(47):,} positions" in text.output
    assert "layers 41.. do not fit" in text.output and "layer 41 needs 22.6 GiB" in text.output


def test_a_layer_no_later_one_needs_can_be_left_out_of_a_build(tmp_path):
    # Layer 47 for layer 48 (a capture takes at least 2 seeds); here 6 for 7, small enough to build.
    assert build.UNREACHABLE not in layer_state.exit_layers(48)
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
    exit_pass, read_slice = exits.exit_pass, disk.DiskLayer._read_slice

    def watched_exit_pass(seeds, size, state, *args):
        passed.append(weakref.ref(state))
        return exit_pass(seeds, size, state, *args)

    def watched_read(self, part, out=None):
        gc.collect()
        alive_at_reads.append(sum(ref() is not None for ref in passed))
        return read_slice(self, part, out)

    monkeypatch.setattr(exits, "exit_pass", watched_exit_pass)
    monkeypatch.setattr(disk.DiskLayer, "_read_slice", watched_read)
    _on_disk(directory, 10, _layout(10, 3, [[8, 7, 6], list(range(6))]))
    # Group 1 reads two slices (it goes on with the one group 0 ended on), the
    # stages all three; no slice the exits worked on is alive at any read.
    assert len(passed) == 6 and alive_at_reads == [0] * 5
    assert _digest(tables.load_values(directory, 10)) == HASHES[10]


# Journals edited, as a hostile user would (issue 54): data, not orders. ---------------------------


def _rewrite_journal(path, edit):
    """Edit the journal at `path` with edit(body), its CRC-32 made right again
    (what an attacker who read docs/DISK.md does): only the checks of its
    content, and the check of the layer, stand between it and a wrong table."""
    body = disk.read_journal(path)
    edit(body)
    with open(path, "wb") as handle:
        handle.write(disk.encode_journal(body))


def _rebuilt_right(directory, capfd, **kwargs):
    """Build layer 13 again; its hash is the recorded one, and what stderr said."""
    capfd.readouterr()
    build.build(13, directory, threads=1, disk_slices=3, **kwargs)
    said = [line for line in capfd.readouterr().err.splitlines() if line.startswith("awele: ")]
    assert _digest(tables.load_values(directory, 13)) == HASHES[13]
    assert not os.path.exists(os.path.join(directory, build.SCRATCH_NAME))
    return said


def _set(key, value):
    return lambda body: body.__setitem__(key, value)


def _checkpoint_stage(value, rename=False):
    """The stage of the stages' checkpoint set to `value`; with `rename`, its file renamed to match (consistently)."""
    def edit(body):
        body["checkpoint"][2] = value
        if rename:
            body["checkpoint"][0] = f"awele-13.stage-{value:02d}.lines"
    return edit


@pytest.mark.parametrize("label, edit, renamed", _mostly_slow([
    ("stage 11 -> 3", _checkpoint_stage(3), None),
    ("stage 11 -> 3, its file renamed", _checkpoint_stage(3, True), 3),
    ("stage 11 -> 1, its file renamed", _checkpoint_stage(1, True), 1),
    ("stage 11 -> 12, its file renamed", _checkpoint_stage(12, True), 12),
    ("stage 0", _checkpoint_stage(0), None),
    ("stage -1", _checkpoint_stage(-1), None),
    ("stage 500", _checkpoint_stage(500), None),
    ("stage '9'", _checkpoint_stage("9"), None),
    ("stage 1.5", _checkpoint_stage(1.5), None),
    ("stage true", _checkpoint_stage(True), None),
    ("checkpoint missing", lambda body: body.pop("checkpoint"), None),
    ("checkpoint a number", _set("checkpoint", 7), None),
    ("files a number", _set("files", 3), None),
    ("files holding a list", _set("files", [["a"], None, None]), None),
    ("files missing", lambda body: body.pop("files"), None),
    ("inbox missing", lambda body: body.pop("inbox"), None),
    ("inbox a string", _set("inbox", "x"), None),
    ("done as text", _set("done", "000"), None),
    ("done too short", _set("done", [0, 0]), None),
    ("done holding booleans", _set("done", [True, True, True]), None),
    ("an unknown field", _set("extra", 1), None),
    ("seeds 14", _set("seeds", 14), None),
], {"stage 11 -> 3, its file renamed", "stage 500", "files a number", "checkpoint missing"}))
def test_a_stages_checkpoint_journal_edited_starts_the_layer_over_or_resumes_right(table_dir, tmp_path, capfd,
                                                                                     label, edit, renamed):
    directory = _copy_layers(table_dir, tmp_path / "db", range(13))
    assert _killed_build(directory, 13, 5, interval=0.0).returncode == -9  # the checkpoint before stage 11
    scratch = os.path.join(directory, build.SCRATCH_NAME)
    path = disk.journal_path(scratch, 13)
    if renamed is not None:
        os.rename(os.path.join(scratch, "awele-13.stage-11.lines"), os.path.join(scratch, f"awele-13.stage-"
                                                                                          f"{renamed:02d}.lines"))
    _rewrite_journal(path, edit)
    said = _rebuilt_right(directory, capfd, checkpoint_interval=0.0)
    if renamed == 12:  # stage 12 resolved nothing in this layer: going on from there is as right (stage_fits)
        assert said == [], said
    else:
        assert len(said) == 1 and "layer 13" in said[0] and "starts over" in said[0], said


@pytest.mark.parametrize("target", _mostly_slow(["../awele-12.h5", "ABSOLUTE", "awele-12.h5", "",
                                                 "awele-13.slice-1-of-3.group-0.lines/.."],
                                                {"../awele-12.h5", "ABSOLUTE"}))
def test_a_journal_naming_a_file_outside_its_own_never_removes_it(table_dir, tmp_path, capfd, target):
    directory = _copy_layers(table_dir, tmp_path / "db", range(13))
    assert _killed_build(directory, 13, 1).returncode == -9  # slice 0 through its group: slices 1, 2 not done
    scratch = os.path.join(directory, build.SCRATCH_NAME)
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep me")
    table = tables.table_path(directory, 12)
    before = open(table, "rb").read()
    name = str(victim) if target == "ABSOLUTE" else target

    def edit(body):
        body["files"][1] = name
        body["done"][1] = 0

    _rewrite_journal(disk.journal_path(scratch, 13), edit)
    said = _rebuilt_right(directory, capfd)
    assert len(said) == 1 and "is not valid" in said[0] and "starts over" in said[0], said
    assert victim.read_bytes() == b"keep me" and open(table, "rb").read() == before


def _sliced_killed(directory, steps=60):
    assert _killed_build(directory, 13, steps, sliced=True).returncode == -9
    return os.path.join(directory, build.SCRATCH_NAME)


def _drop_an_inbox_entry(body):
    part = next(p for p, entries in enumerate(body["inbox"]) if entries)
    body["inbox"][part].pop()


@pytest.mark.parametrize("label, edit", _mostly_slow([
    ("stage lowered by 2", lambda body: body.__setitem__("stage", body["stage"] - 2)),
    ("stage raised by 1", lambda body: body.__setitem__("stage", body["stage"] + 1)),
    ("an inbox entry dropped", _drop_an_inbox_entry),
    ("seeds_at zeroed", lambda body: body.__setitem__("seeds_at", [0, 0, 0])),
    ("seeds_at and need_seed zeroed", lambda body: body.update(seeds_at=[0, 0, 0], need_seed=[False] * 3)),
    ("need_seed all set", lambda body: body.__setitem__("need_seed", [True] * 3)),
    ("an updates file's count halved", lambda body: body["inbox"][0][0].__setitem__(2, body["inbox"][0][0][2] // 2)),
], {"stage lowered by 2"}))
def test_sliced_stages_with_their_journal_edited_still_write_the_right_layer(table_dir, tmp_path, capfd, label, edit):
    """The edits a CRC cannot catch (its CRC made right again): what the
    journal says of the stages is derived again from the slices, and the
    resumed layer is checked whole before its table is written."""
    directory = _copy_layers(table_dir, tmp_path / "db", range(13))
    scratch = _sliced_killed(directory)
    _rewrite_journal(disk.journal_path(scratch, 13), edit)
    said = _rebuilt_right(directory, capfd, disk_sliced_stages=True)
    assert len(said) <= 1, said


@pytest.mark.slow  # 20-50 s: CI's slow line (.ci/run)
def test_an_updates_file_with_a_byte_flipped_starts_the_layer_over_not_a_crash(table_dir, tmp_path, capfd):
    directory = _copy_layers(table_dir, tmp_path / "db", range(13))
    scratch = _sliced_killed(directory)
    name = next(entry[0] for entries in disk.read_journal(disk.journal_path(scratch, 13))["inbox"]
                for entry in entries)
    with open(os.path.join(scratch, name), "r+b") as handle:
        handle.seek(7)  # the top byte of the first update: a rank far outside its slice
        handle.write(b"\x7f")
    code = ("from solver import build\n"
            f"build.build(13, {directory!r}, threads=1, disk_slices=3, disk_sliced_stages=True)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr  # not -11 (a segmentation fault)
    said = [line for line in done.stderr.splitlines() if line.startswith("awele: ")]
    assert len(said) == 1 and name in said[0] and "CRC-32" in said[0], said
    assert _digest(tables.load_values(directory, 13)) == HASHES[13]


# Locks where the work is (issue 54) -----------------------------------------------------------------


@pytest.mark.parametrize("default", [True, False])
def test_a_scratch_folder_in_use_is_refused_naming_it_and_its_process(table_dir, tmp_path, default):
    directory = _copy_layers(table_dir, tmp_path / "db", range(13))
    scratch = os.path.join(directory, build.SCRATCH_NAME) if default else str(tmp_path / "elsewhere")
    os.makedirs(scratch)
    with build.BuildLock(scratch, "scratch folder"):
        with pytest.raises(BuildError) as caught:
            build.build(13, directory, threads=1, disk_slices=3, scratch=None if default else scratch)
        message = str(caught.value)
        assert f"the scratch folder {scratch} (process {os.getpid()})" in message and "--scratch" in message
        assert "--dir" not in message
        build.build(12, directory, threads=1)  # a build that needs no scratch is not held up by it
    build.build(13, directory, threads=1, disk_slices=3, scratch=None if default else scratch)
    assert _digest(tables.load_values(directory, 13)) == HASHES[13]


@pytest.mark.slow  # 15-40 s: CI's slow line (.ci/run)
def test_a_second_build_with_another_dir_and_the_same_default_scratch_is_refused(table_dir, tmp_path):
    """One build with --dir D1, another with --dir D2 --scratch D1/awele-scratch: they share the scratch folder."""
    first = _copy_layers(table_dir, tmp_path / "d1", range(13))
    second = _copy_layers(table_dir, tmp_path / "d2", range(13))
    scratch = os.path.join(first, build.SCRATCH_NAME)
    code = ("import sys\nfrom solver import build\n"
            f"build.build(13, {first!r}, threads=1, disk_slices=3, disk_sliced_stages=True)\n")
    running = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(600):
            if os.path.exists(disk.journal_path(scratch, 13)):
                break
            assert running.poll() is None, running.stderr.read()
            time.sleep(0.1)
        with pytest.raises(BuildError, match=rf"the scratch folder {scratch} \(process {running.pid}\)"):
            build.build(13, second, threads=1, disk_slices=3, scratch=scratch)
    finally:
        running.wait(600)
    assert running.returncode == 0
    assert _digest(tables.load_values(first, 13)) == HASHES[13]


@pytest.mark.parametrize("where", ["the tables folder", "a link to the tables folder", "the checkpoint folder"])
def test_a_scratch_folder_shared_with_another_role_works(table_dir, tmp_path, where):
    directory = _copy_layers(table_dir, tmp_path / "db", range(13))
    checkpoints = str(tmp_path / "checkpoints")
    scratch = {"the tables folder": directory, "the checkpoint folder": checkpoints,
               "a link to the tables folder": str(tmp_path / "link")}[where]
    if where == "a link to the tables folder":
        os.symlink(directory, scratch)
    build.build(13, directory, threads=1, disk_slices=3, scratch=scratch, checkpoint_dir=checkpoints,
                checkpoint_interval=0.0)
    assert _digest(tables.load_values(directory, 13)) == HASHES[13]
    assert sorted(os.listdir(directory)) == sorted([f"awele-{n:02d}.h5" for n in range(14)] + [build.LOCK_NAME])
    assert os.listdir(checkpoints) == [build.LOCK_NAME]


# The journal's validators, alone (issue 54) ---------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from solver.errors import ScratchError  # noqa: E402

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["", "../awele-12.h5", "/etc/passwd", "awele-13.h5", "awele-13.slice-0-of-3.group-0.lines",
                       "awele-13.slice-1-of-3.group-0.lines/..", "awele-13.stage-05.lines", "9", "x", "a/b"])
    | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8)


def _layer_for_checks(sliced=False):
    layout = dict(_layout(13, 3, [[11, 10], list(range(10))]), sliced_stages=sliced)
    return disk.DiskLayer(13, "/nonexistent", None, (), layout, lambda m: None)


def _valid_journals():
    """Journals a build of layer 13 in 3 slices and 2 groups can write: in its exits, at a stages' checkpoint, in
    sliced stages with updates waiting."""
    layer = _layer_for_checks()
    exits = layer._fresh_journal()
    exits.update(done=[1, 0, -1], files=["awele-13.slice-0-of-3.group-1.lines", "awele-13.slice-1-of-3.group-0.lines",
                                         None], crc32=[12, 4294967295, 0], exit_lookups=10, exit_seconds=0.5)
    checkpoint = dict(layer._fresh_journal(), done=[1, 1, 1], checkpoint=["awele-13.stage-07.lines", 99, 7])
    sliced = _layer_for_checks(True)._fresh_journal()
    sliced.update(done=[1, 1, 1], files=["awele-13.slice-0-of-3.visit-4.lines", "awele-13.slice-1-of-3.group-1.lines",
                                         "awele-13.slice-2-of-3.visit-5.lines"], stage=9, visits=6, stage_visits=6,
                  last=2, seeds_at=[2, 6, 8190], need_seed=[False, True, True],
                  inbox=[[["awele-13.to-0.visit-5.updates", 7, 100]], [], [["awele-13.to-2.visit-3.updates", 8, 1]]])
    return [(False, exits), (False, checkpoint), (True, sliced)]


def test_valid_journals_pass_and_round_trip_through_their_bytes():
    for sliced, journal in _valid_journals():
        _layer_for_checks(sliced).check_journal(journal)
        assert disk.decode_journal(disk.encode_journal(journal)) == journal


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_any_byte_of_a_journal_changed_is_refused(data):
    _, journal = data.draw(st.sampled_from(_valid_journals()))
    raw = bytearray(disk.encode_journal(journal))
    at = data.draw(st.integers(0, len(raw) - 1))
    raw[at] = data.draw(st.integers(0, 255).filter(lambda b: b != raw[at]))
    with pytest.raises(ScratchError):
        disk.decode_journal(bytes(raw))


NAME = r"awele-13\.(slice-[0-2]-of-3\.(group-[01]|visit-[0-9]+)\.lines|stage-[0-9]{2}\.lines|to-[0-2]\.visit-[0-9]+"
NAME += r"\.updates)"


def _holds(journal, sliced):
    """What any journal check_journal lets through must hold, checked here on its own (a naive restatement)."""
    import re

    def is_int(value, lo, hi):
        return type(value) is int and lo <= value <= hi

    assert all(is_int(d, -1, 1) for d in journal["done"]) and len(journal["done"]) == 3
    assert journal["stage"] is None or (sliced and is_int(journal["stage"], 0, 13))
    assert all(is_int(c, 0, 2**32 - 1) for c in journal["crc32"]) and len(journal["crc32"]) == 3
    assert all(is_int(m, 0, 2**14 - 1) and not m & 1 for m in journal["seeds_at"])
    names = [n for n in journal["files"] if n is not None] + [e[0] for box in journal["inbox"] for e in box]
    names += [journal["checkpoint"][0]] if "checkpoint" in journal else []
    assert all(type(n) is str and re.fullmatch(NAME, n) for n in names), names
    assert all(is_int(e[1], 0, 2**32 - 1) and is_int(e[2], 1, 2**48) for box in journal["inbox"] for e in box)
    if "checkpoint" in journal:
        assert is_int(journal["checkpoint"][2], 1, 12) and journal["checkpoint"][0] == (
            f"awele-13.stage-{journal['checkpoint'][2]:02d}.lines")


def _mutate(data, value):
    """`value` with one random change deep inside: a value replaced, a key or item dropped or added."""
    if isinstance(value, dict) and value and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(value)))
        choice = data.draw(st.integers(0, 3))
        if choice == 0:
            return {k: v for k, v in value.items() if k != key}
        if choice == 1:
            return {**value, data.draw(st.text(max_size=8)): data.draw(JSON_VALUES)}
        return {**value, key: _mutate(data, value[key])}
    if isinstance(value, list) and value and data.draw(st.booleans()):
        at = data.draw(st.integers(0, len(value) - 1))
        choice = data.draw(st.integers(0, 3))
        if choice == 0:
            return value[:at] + value[at + 1:]
        if choice == 1:
            return [*value, data.draw(JSON_VALUES)]
        return value[:at] + [_mutate(data, value[at])] + value[at + 1:]
    return data.draw(JSON_VALUES)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_journal_changed_anywhere_is_refused_or_still_only_names_the_builders_files(data):
    sliced, journal = data.draw(st.sampled_from(_valid_journals()))
    changed = _mutate(data, journal)
    try:
        _layer_for_checks(sliced).check_journal(changed)
    except ScratchError as error:
        assert "\n" not in str(error)
        return
    _holds(changed, sliced)
