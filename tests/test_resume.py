"""A layer built in memory by one process, killed in its stages, resumes at its
last checkpoint (`awele build --checkpoint-dir`, solver.resume)."""

import hashlib
import json
import os
import subprocess
import sys
import zlib

import pytest

from solver import build, disk, resume, tables

HERE = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(HERE, "data", "layer_sha256.json")) as handle:
    HASHES = json.load(handle)["sha256"]


def _check_hashes(directory, top):
    for seeds in range(top + 1):
        digest = hashlib.sha256(tables.load_values(directory, seeds).tobytes()).hexdigest()
        assert digest == HASHES[str(seeds)], f"layer {seeds}"


def _files(folder):
    """The folder's files but the build lock (kept, empty, between builds)."""
    return sorted(name for name in os.listdir(folder) if name != build.LOCK_NAME)


def _awele(*args, env=None, timeout=600):
    return subprocess.run([sys.executable, "-m", "solver", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def _args(directory, checkpoints, seeds):
    return ["build", "--max-seeds", str(seeds), "--dir", directory, "--threads", "1", "--checkpoint-dir", checkpoints,
            "--checkpoint-interval", "0", "--quiet"]


def test_a_build_killed_between_stages_resumes_at_its_checkpoint(tmp_path):
    directory, checkpoints = str(tmp_path / "tables"), str(tmp_path / "checkpoints")
    args = _args(directory, checkpoints, 11)
    killed = _awele(*args, env={resume.KILL_VARIABLE: "11:4"})
    assert killed.returncode == -9
    assert not os.path.exists(tables.table_path(directory, 11)) and os.path.exists(tables.table_path(directory, 10))
    journal = disk.read_journal(resume.journal_path(checkpoints, 11))
    assert _files(checkpoints) == sorted(["awele-11.memory.json", journal["file"]])
    assert journal["stage"] == 11 - 4  # after stages 11, 10, 9 and 8: stage 7 is next
    resumed = _awele(*args, "--json")
    assert resumed.returncode == 0, resumed.stderr
    rows = [json.loads(line) for line in resumed.stdout.splitlines()]
    assert [(r["seeds"], r["resumed_at_stage"]) for r in rows if r["built"]] == [(11, journal["stage"])]
    assert rows[-1]["exit_passes"] == journal["exit_passes"] > 0  # the exits were not made again
    assert _files(checkpoints) == []
    _check_hashes(directory, 11)


def test_a_damaged_checkpoint_is_removed_and_the_layer_starts_over(tmp_path):
    directory, checkpoints = str(tmp_path / "tables"), str(tmp_path / "checkpoints")
    args = _args(directory, checkpoints, 10)
    assert _awele(*args, env={resume.KILL_VARIABLE: "10:3"}).returncode == -9
    state = os.path.join(checkpoints, disk.read_journal(resume.journal_path(checkpoints, 10))["file"])
    with open(state, "r+b") as handle:
        handle.seek(100)
        byte = handle.read(1)
        handle.seek(100)
        handle.write(bytes([byte[0] ^ 0x10]))
    rerun = _awele(*args, "--json")
    assert rerun.returncode == 0, rerun.stderr
    rows = [json.loads(line) for line in rerun.stdout.splitlines()]
    assert [r["resumed_at_stage"] for r in rows if r["built"]] == [None]
    assert _files(checkpoints) == []
    _check_hashes(directory, 10)


def test_what_a_kill_during_a_checkpoint_leaves_is_swept(tmp_path):
    directory, checkpoints = str(tmp_path / "tables"), str(tmp_path / "checkpoints")
    args = _args(directory, checkpoints, 10)
    assert _awele(*args, env={resume.KILL_VARIABLE: "10:2"}).returncode == -9
    journal = disk.read_journal(resume.journal_path(checkpoints, 10))
    # A kill while the next checkpoint was written: its partial file and a journal's temporary.
    open(os.path.join(checkpoints, "awele-10.memory-stage-03.lines"), "wb").write(b"partial")
    open(resume.journal_path(checkpoints, 10) + f"{tables.TEMPORARY_SUFFIX}-12345", "wb").write(b"{")
    rows = [json.loads(line) for line in _awele(*args, "--json").stdout.splitlines()]
    assert [r["resumed_at_stage"] for r in rows if r["built"]] == [journal["stage"]]
    assert _files(checkpoints) == []
    _check_hashes(directory, 10)


def test_a_process_budget_too_small_is_one_line(tmp_path):
    result = _awele("build", "--max-seeds", "12", "--dir", str(tmp_path), "--checkpoint-dir", str(tmp_path / "c"),
                    "--memory", "100M")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "needs" in result.stderr
    assert tables.built_layers(str(tmp_path)) == []


# Checkpoint journals edited, folders planted (issue 54) ---------------------------------------------


def _said(result):
    return [line for line in result.stderr.splitlines() if line.startswith("awele: ")]


def _killed_at_a_checkpoint(tmp_path, seeds=11, count=4):
    directory, checkpoints = str(tmp_path / "tables"), str(tmp_path / "checkpoints")
    args = _args(directory, checkpoints, seeds)
    assert _awele(*args, env={resume.KILL_VARIABLE: f"{seeds}:{count}"}).returncode == -9
    return directory, checkpoints, args


def _rewrite(path, edit):
    body = disk.read_journal(path)
    edit(body)
    with open(path, "wb") as handle:
        handle.write(disk.encode_journal(body))


def _stage(value, rename=False):
    def edit(body):
        if rename:
            folder = os.path.dirname(body["__path"])
            os.rename(os.path.join(folder, body["file"]), os.path.join(folder, resume.checkpoint_name(11, value)))
            body["file"] = resume.checkpoint_name(11, value)
        body.pop("__path")
        body["stage"] = value
    return edit


@pytest.mark.parametrize("label, edit", [pytest.param(*case, id=case[0], marks=() if case[0] in {
    "stage 7 -> 5, its file renamed", "stage 200", "file ../awele-10.h5", "stage true"} else (pytest.mark.slow,))
    for case in [
    ("stage 7 -> 5", _stage(5)),
    ("stage 7 -> 5, its file renamed", _stage(5, True)),
    ("stage 7 -> 2, its file renamed", _stage(2, True)),
    ("stage 7 -> 9, its file renamed", _stage(9, True)),
    ("stage 0", _stage(0)),
    ("stage -3", _stage(-3)),
    ("stage 1.5", _stage(1.5)),
    ("stage true", _stage(True)),
    ("stage 200", _stage(200)),
    ("stage 'x'", _stage("x")),
    ("file a number", lambda body: body.update(file=3) or body.pop("__path")),
    ("file a list", lambda body: body.update(file=["a"]) or body.pop("__path")),
    ("file ../awele-10.h5", lambda body: body.update(file="../awele-10.h5") or body.pop("__path")),
    ("file an absolute path", lambda body: body.update(file=body["__path"] + ".victim") or body.pop("__path")),
    ("exit_passes -1", lambda body: body.update(exit_passes=-1) or body.pop("__path")),
    ("a field missing", lambda body: body.pop("crc32") and body.pop("__path")),
]])
def test_an_edited_checkpoint_journal_never_gives_a_wrong_layer(tmp_path, label, edit):
    directory, checkpoints, args = _killed_at_a_checkpoint(tmp_path)
    path = resume.journal_path(checkpoints, 11)
    victim = path + ".victim"
    with open(victim, "w") as handle:
        handle.write("keep me")
    ten = open(tables.table_path(directory, 10), "rb").read()
    _rewrite(path, lambda body: (body.__setitem__("__path", path), edit(body)))
    rerun = _awele(*args, "--json", timeout=900)
    assert rerun.returncode == 0, rerun.stderr
    rows = [json.loads(line) for line in rerun.stdout.splitlines()]
    said = _said(rerun)
    if label == "stage 7 -> 9, its file renamed":  # stages 9 and 8 resolved nothing here: as right from there
        assert [r["resumed_at_stage"] for r in rows if r["built"]] in ([9], [None]), said
    else:
        assert [r["resumed_at_stage"] for r in rows if r["built"]] == [None], said
        assert len(said) == 1 and "layer 11 starts over" in said[0] and "scratch" not in said[0], said
    assert open(victim).read() == "keep me" and open(tables.table_path(directory, 10), "rb").read() == ten
    assert _files(checkpoints) == ["awele-11.memory.json.victim"]
    _check_hashes(directory, 11)


def test_a_checkpoint_resumed_consistently_wrong_is_caught_by_the_check_of_the_layer(tmp_path):
    """An attacker who rewrites the state file and its CRC-32 too: nothing in
    the journal can tell; the check of the resumed layer (whole, for a
    small layer) before its table is written can, and the layer is built
    again from the start."""
    directory, checkpoints, args = _killed_at_a_checkpoint(tmp_path)
    path = resume.journal_path(checkpoints, 11)
    body = disk.read_journal(path)
    state = os.path.join(checkpoints, body["file"])
    data = bytearray(open(state, "rb").read())
    moved = 0
    for line in range(0, len(data), 64):  # resolved values (|v| 8..10) moved one further: as if stage 7 were past
        for at in range(line, line + 42):
            value = data[at] - 256 if data[at] > 127 else data[at]
            if 8 <= abs(value) <= 10 and moved < 1000:
                data[at] = (value + (1 if value > 0 else -1)) & 0xFF
                moved += 1
    assert moved == 1000
    with open(state, "wb") as handle:
        handle.write(data)
    body["crc32"] = zlib.crc32(bytes(data))
    with open(path, "wb") as handle:
        handle.write(disk.encode_journal(body))
    rerun = _awele(*args, "--json", timeout=900)
    assert rerun.returncode == 0, rerun.stderr
    said = _said(rerun)
    assert len(said) == 1 and "fails its check" in said[0] and "built again from the start" in said[0], said
    _check_hashes(directory, 11)


@pytest.mark.parametrize("where", ["the journal", "the next checkpoint"])
def test_a_folder_planted_at_a_checkpoints_name_is_one_line_and_the_build_goes_on(tmp_path, where):
    directory, checkpoints, args = _killed_at_a_checkpoint(tmp_path, 11, 2)  # stage 9 recorded
    planted = (resume.journal_path(checkpoints, 11) if where == "the journal"
               else os.path.join(checkpoints, resume.checkpoint_name(11, 8)))
    if where == "the journal":
        os.remove(planted)
    os.makedirs(os.path.join(planted, "inside"))
    rerun = _awele(*args, "--json", timeout=900)
    assert rerun.returncode == 0 and "Traceback" not in rerun.stderr, rerun.stderr
    said = _said(rerun)
    assert 1 <= len(said) <= 2 and all("scratch" not in line and "--scratch" not in line for line in said), said
    assert any("goes on without checkpoints" in line for line in said), said
    assert os.path.isdir(os.path.join(planted, "inside"))  # left as it was
    _check_hashes(directory, 11)


def test_a_link_planted_at_a_checkpoints_name_is_neither_followed_nor_refused(tmp_path):
    directory, checkpoints, args = _killed_at_a_checkpoint(tmp_path, 11, 2)
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    os.symlink(victim, os.path.join(checkpoints, resume.checkpoint_name(11, 8)))
    rerun = _awele(*args, "--json", timeout=900)
    assert rerun.returncode == 0, rerun.stderr
    assert victim.read_text() == "keep me"
    assert _files(checkpoints) == []  # the link itself removed with the layer's files
    _check_hashes(directory, 11)


def test_a_checkpoint_folder_that_cannot_take_a_checkpoint_builds_on_without(tmp_path, monkeypatch, capfd):
    """Out of inodes (or of room) for a checkpoint: the layer goes on without,
    said once, in words about the checkpoint folder only."""
    directory, checkpoints = str(tmp_path / "tables"), str(tmp_path / "checkpoints")
    real_open = os.open

    def no_inodes(path, flags, *args, **kwargs):
        if "memory" in os.path.basename(str(path)) and flags & os.O_CREAT:
            raise OSError(28, "No space left on device")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", no_inodes)
    capfd.readouterr()
    build.build(11, directory, threads=1, checkpoint_dir=checkpoints, checkpoint_interval=0.0)
    said = [line for line in capfd.readouterr().err.splitlines() if line.startswith("awele: ")]
    assert len(said) == 1, said
    assert all("goes on without checkpoints" in line and "scratch" not in line and "disk mode" not in line
               for line in said), said
    monkeypatch.undo()
    _check_hashes(directory, 11)


def test_a_layer_resumed_under_a_budget_that_puts_it_on_disk_leaves_no_checkpoint(tmp_path):
    from solver import plan

    directory, checkpoints, args = _killed_at_a_checkpoint(tmp_path, 11, 2)
    budget = plan.least_bytes(11) - 1
    rerun = _awele(*args, "--memory", str(budget), "--json", timeout=900)
    assert rerun.returncode == 0, rerun.stderr
    rows = [json.loads(line) for line in rerun.stdout.splitlines()]
    assert [r["mode"] for r in rows if r["built"]] == ["disk"]
    assert _files(checkpoints) == []
    _check_hashes(directory, 11)


def test_a_kill_between_a_tables_rename_and_its_clearing_leaves_nothing_for_good(tmp_path):
    """What a kill right after a layer's table is written leaves (its
    checkpoint, its scratch): the next build in those folders removes it."""
    directory, checkpoints, args = _killed_at_a_checkpoint(tmp_path, 11, 2)
    kept = {name: open(os.path.join(checkpoints, name), "rb").read() for name in _files(checkpoints)}
    done = _awele(*args, "--json", timeout=900)
    assert done.returncode == 0, done.stderr
    for name, data in kept.items():  # as if killed between the table's rename and the clearing
        with open(os.path.join(checkpoints, name), "wb") as handle:
            handle.write(data)
    scratch = os.path.join(directory, build.SCRATCH_NAME)
    os.makedirs(scratch)
    with open(disk.journal_path(scratch, 11), "wb") as handle:
        handle.write(b"left")
    with open(os.path.join(scratch, "awele-11.slice-0-of-3.group-0.lines"), "wb") as handle:
        handle.write(b"left")
    again = _awele(*args, "--json", timeout=900)
    assert again.returncode == 0, again.stderr
    said = _said(again)
    assert len(said) == 2 and all("its table is written" in line for line in said), said
    assert _files(checkpoints) == [] and not os.path.exists(scratch)


# The checkpoint journal's validator, alone ----------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from solver.errors import ScratchError  # noqa: E402

VALID = {"seeds": 18, "file": "awele-18.memory-stage-05.lines", "crc32": 123, "stage": 5, "exit_passes": 2,
         "exit_seconds": 1.5, "exit_lookups": 99}
ODD = st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats() | st.text(max_size=10) | st.sampled_from(
    ["../awele-16.h5", "/tmp/x", "awele-18.memory-stage-05.lines", "awele-18.memory-stage-06.lines",
     "awele-18.h5"]) | st.lists(st.integers(), max_size=2)


@settings(max_examples=1000, deadline=None)
@given(st.dictionaries(st.sampled_from([*VALID, "extra"]), ODD, max_size=3), st.sets(st.sampled_from(sorted(VALID))))
def test_a_checkpoint_journal_changed_is_refused_or_names_its_stages_own_file(changes, dropped):
    journal = {key: value for key, value in {**VALID, **changes}.items() if key not in dropped}
    try:
        resume.check_journal(journal, 18)
    except ScratchError as error:
        assert "\n" not in str(error)
        return
    assert set(journal) == set(VALID) and type(journal["stage"]) is int and 1 <= journal["stage"] <= 17
    assert journal["file"] == f"awele-18.memory-stage-{journal['stage']:02d}.lines"
    assert type(journal["crc32"]) is int and 0 <= journal["crc32"] < 2**32
    assert type(journal["exit_passes"]) is int and journal["exit_passes"] >= 0


def test_the_valid_checkpoint_journal_passes():
    resume.check_journal(dict(VALID), 18)
    with pytest.raises(ScratchError, match="stage is 18"):
        resume.check_journal(dict(VALID, stage=18), 18)
