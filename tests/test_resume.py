"""A layer built in memory by one process, killed in its stages, resumes at its
last checkpoint (`awele build --checkpoint-dir`, solver.resume)."""

import hashlib
import json
import os
import subprocess
import sys

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
