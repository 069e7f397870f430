"""Files and folders that must not mislead awele: a layer that is a symbolic
link (refused by every reader, even when it points at a valid table), build
records damaged in a layer's attributes (named, never a traceback), memory
budgets that build nothing (one line that says so), and builds stopped by a
signal (nothing half-written left behind)."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from solver import Position, build, plan, tables
from solver.cli import cli
from solver.errors import BuildError, CorruptTableError
from solver.probe import Tablebase

TOP = 12  # layer 12 (1.3 million positions) is the smallest whose build time gives `awele plan` a rate
NINE = "1-0-0-0-0-0/0-0-0-3-3-2 S"  # a position of layer 9


@pytest.fixture(scope="module")
def built(table_dir):
    """The session's layers 0..12, built by the real builder (conftest.py); read only, copied to change."""
    return table_dir


def _copy(built, folder):
    os.makedirs(folder, exist_ok=True)
    for seeds in range(TOP + 1):
        shutil.copyfile(tables.table_path(built, seeds), tables.table_path(folder, seeds))
    return folder


@pytest.fixture
def linked(built, tmp_path):
    """A copy of the tables whose layer 9 is a symbolic link to a valid copy of it outside the folder."""
    folder = _copy(built, str(tmp_path / "tables"))
    outside = str(tmp_path / "elsewhere.h5")
    os.replace(tables.table_path(folder, 9), outside)
    os.symlink(outside, tables.table_path(folder, 9))
    return folder


# Links -----------------------------------------------------------------------------


@pytest.mark.parametrize("read", [
    lambda folder: tables.open_table(folder, 9).close(),
    lambda folder: tables.load_values(folder, 9),
    lambda folder: tables.check_values(folder, 9),
    lambda folder: tables.load_slice(folder, 9, 0, 10),
    lambda folder: tables.ChunkReader(folder, 9).close(),
    lambda folder: Tablebase(folder).value(Position.from_string(NINE)),
    lambda folder: Tablebase(folder).values(np.array([Position.from_string(NINE).mover_board()])),
], ids=["open", "load", "check", "slice", "chunks", "value", "values"])
def test_a_layer_that_is_a_link_to_a_valid_table_is_refused_by_every_reader(linked, read):
    with pytest.raises(CorruptTableError, match="symbolic link"):
        read(linked)
    assert tables.table_info(linked, 9, full=True)["status"] == "corrupt"
    assert tables.table_info(linked, 8, full=True)["status"] == "ok"


@pytest.mark.parametrize("args", [["best", NINE], ["line", NINE], ["verify", "--seeds", "9"], ["info"],
                                  ["info", "--quick"]])
def test_every_command_refuses_a_layer_that_is_a_link(linked, args):
    result = CliRunner().invoke(cli, [*args, "--dir", linked])
    assert "Traceback" not in result.output
    assert "awele-09.h5 is a symbolic link" in result.output, result.output
    if args[0] != "info":
        assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1


def test_a_link_swapped_in_between_the_check_and_the_open_is_not_read(built, tmp_path, monkeypatch):
    folder = _copy(built, str(tmp_path / "tables"))
    path = tables.table_path(folder, 9)
    outside = str(tmp_path / "elsewhere.h5")
    shutil.copyfile(path, outside)
    checked = tables._open_regular

    def then_swap(*args):
        descriptor = checked(*args)
        os.remove(path)
        os.symlink(outside, path)
        return descriptor

    monkeypatch.setattr(tables, "_open_regular", then_swap)
    with pytest.raises(CorruptTableError, match="replaced while it was opened"):
        tables.open_table(folder, 9)


def test_a_pipe_at_a_layer_name_is_refused_without_blocking(built, tmp_path):
    folder = _copy(built, str(tmp_path / "tables"))
    os.remove(tables.table_path(folder, 9))
    os.mkfifo(tables.table_path(folder, 9))
    info = tables.table_info(folder, 9)
    assert info["status"] == "corrupt" and "pipe" in info["error"]


# Build records ---------------------------------------------------------------------


def _damage(path, name, value):
    with h5py.File(path, "r+") as handle:
        handle.attrs[name] = value


RECORD_FIELDS = ["processes", "bytes_exchanged", "build_seconds"]
DAMAGES = {"text": np.bytes_(b"two"), "nan": np.float64("nan"), "inf": np.float64("inf"), "negative": -3,
           "boolean": True, "array": np.arange(2)}


def _damages():
    """Every damage of every field; the default run takes each damage once (its field in turn), CI's slow
    line (.ci/run) the other twelve."""
    for i, (kind, value) in enumerate(DAMAGES.items()):
        for j, name in enumerate(RECORD_FIELDS):
            marks = () if j == i % len(RECORD_FIELDS) else pytest.mark.slow
            yield pytest.param(name, value, id=f"{kind}-{name}", marks=marks)


@pytest.mark.parametrize("name, value", list(_damages()))
def test_a_damaged_build_record_names_the_layer_in_plan_and_info(built, tmp_path, name, value):
    folder = _copy(built, str(tmp_path / "tables"))
    path = tables.table_path(folder, TOP)
    _damage(path, "processes", 2)  # as a distributed build records it
    _damage(path, "bytes_exchanged", 1000)
    _damage(path, name, value)
    for args in (["plan", "--processes", "2", "--max-seeds", "3"], ["plan", "--max-seeds", "3"]):
        result = CliRunner().invoke(cli, [*args, "--dir", folder])
        assert result.exit_code == 0 and "Traceback" not in result.output, result.output
        named = [line for line in result.stderr.splitlines() if "awele-12.h5" in line]
        assert len(named) == 1 and f"layer {TOP}" in named[0] and name in named[0], result.stderr
        assert f"layer {TOP} in" not in result.stdout  # its figures are not used
    info = tables.table_info(folder, TOP)
    assert info["status"] == "corrupt" and name in info["error"]
    result = CliRunner().invoke(cli, ["info", "--quick", "--dir", folder])
    assert result.exit_code == 0 and "Traceback" not in result.output
    assert [line for line in result.output.splitlines() if name in line and line.split()[0] == str(TOP)]


def test_the_build_records_of_a_distributed_build_are_read_back(built, tmp_path):
    folder = _copy(built, str(tmp_path / "tables"))
    _damage(tables.table_path(folder, TOP), "processes", 2)
    _damage(tables.table_path(folder, TOP), "bytes_exchanged", 1000)
    info = tables.table_info(folder, TOP)
    assert (info["status"], info["processes"], info["bytes_exchanged"]) == ("header ok", 2, 1000)
    assert plan.measured_exchange(folder)[2] == f"layer {TOP} in {folder} (2 processes)"
    assert plan.cluster_plan(3, 2, 1 << 30, folder)["left_out"] == {}


def test_info_gives_no_bytes_a_position_for_a_layer_smaller_than_a_chunk(built):
    result = CliRunner().invoke(cli, ["info", "--quick", "--dir", built])
    rows = {line.split()[0]: line.split() for line in result.output.splitlines()[2:]}
    assert rows["0"][3] == "-" and rows["9"][3] == "-"  # layer 0: one position in a 2.9 kB file
    assert 0.05 < float(rows["12"][3]) < 1.0


# Memory budgets --------------------------------------------------------------------


@pytest.mark.parametrize("args", [["build", "--max-seeds", "3"], ["plan", "--max-seeds", "3"],
                                  ["plan", "--processes", "2", "--memory", "1K"]])
def test_a_budget_that_builds_nothing_is_one_line_that_says_so(args, tmp_path):
    if "--memory" not in args:
        args = [*args, "--memory", "1K"]
    result = CliRunner().invoke(cli, [*args, "--dir", str(tmp_path)])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    least = plan.size_text(plan.lean_least_bytes(0), up=True)  # the lean stages' least (276.6 MiB)
    assert "1 KiB builds no layer" in result.output and least in result.output
    assert "-1" not in result.output and "0.0 GiB" not in result.output
    assert os.listdir(tmp_path) == []


def test_verify_says_what_it_needs_of_a_budget_too_small_in_units_that_show_it(built):
    result = CliRunner().invoke(cli, ["verify", "--seeds", "3", "--memory", "1K", "--dir", built])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "verifying layer 3 needs at least 512.1 MiB" in result.output
    assert "the memory budget is 1 KiB" in result.output


def test_the_api_says_the_same_of_a_budget_that_builds_nothing(tmp_path):
    with pytest.raises(BuildError, match=r"memory budget of 1 KiB builds no layer: layer 0 needs at least "
                       + plan.size_text(plan.lean_least_bytes(0), up=True)):
        build.build(3, str(tmp_path), memory=1024)
    assert plan.budget_too_small(plan.least_bytes(0)) is None
    budget = plan.least_bytes(19)
    message = plan.memory_message(20, budget)
    found = re.fullmatch(r"layer 20 needs at least [\d.]+ MiB \([\d.]+ MiB working state, [^;]*\); "
                         r"the memory budget of [\d.]+ MiB builds layers up to (\d+)", message)
    # Up to 19 in memory; the disk mode takes the budget further (solver/disk.py).
    assert found and int(found[1]) == plan.largest_layer(budget) >= 19, message
    assert plan.largest_layer(budget, disk=False) == 19


# Builds stopped by a signal --------------------------------------------------------


def _ctrl_c_as_a_terminal_sends_it():
    # In the child, before it runs: SIGINT's and SIGHUP's default actions. A test run
    # started as a background job (`pytest &`) has SIGINT ignored, and one under `nohup`
    # SIGHUP; a child inherits that (Python then leaves it ignored), where a build that a
    # user stops with Ctrl-C, or whose terminal closes, has them.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def _build_until_a_layer_is_written(folder, stop):
    """`awele build --max-seeds 14` in `folder` (layers 0..12 there), sent
    signal `stop` the moment a layer's temporary file appears: it is then
    writing that layer. Returns (status, stderr)."""
    process = subprocess.Popen([sys.executable, "-m", "solver", "build", "--max-seeds", "14", "--dir", folder,
                                "--quiet", "--threads", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, preexec_fn=_ctrl_c_as_a_terminal_sends_it)
    try:
        while process.poll() is None and not any(tables.TEMPORARY_SUFFIX + "-" in n for n in os.listdir(folder)):
            time.sleep(0.001)
        process.send_signal(stop)
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    return process.returncode, stderr


def _temporaries(folder):
    return sorted(name for name in os.listdir(folder) if tables.TEMPORARY_SUFFIX + "-" in name)


# SIGINT in the default run, the other two on CI's slow line (.ci/run): the same path, another signal.
@pytest.mark.parametrize("stop", [pytest.param(signal.SIGTERM, marks=pytest.mark.slow),
                                  pytest.param(signal.SIGHUP, marks=pytest.mark.slow), signal.SIGINT])
def test_a_build_stopped_by_a_signal_while_it_writes_a_layer_leaves_nothing_behind(built, tmp_path, stop):
    folder = _copy(built, str(tmp_path / "tables"))
    status, stderr = _build_until_a_layer_is_written(folder, stop)
    assert status == (130 if stop == signal.SIGINT else -stop), stderr  # Ctrl-C says "aborted"; the rest, killed
    assert "Traceback" not in stderr
    assert _temporaries(folder) == []
    for seeds in tables.built_layers(folder):
        assert tables.table_info(folder, seeds, full=True)["status"] == "ok"


def test_the_next_build_removes_what_a_killed_one_left_and_names_it(built, tmp_path, capfd):
    folder = _copy(built, str(tmp_path / "tables"))
    status, _ = _build_until_a_layer_is_written(folder, signal.SIGKILL)
    left = _temporaries(folder)
    assert status == -signal.SIGKILL and len(left) == 1
    build.build(TOP + 1, folder)
    assert _temporaries(folder) == []
    removed = f"awele: removed {os.path.join(folder, left[0])}, left behind by a build that was stopped"
    assert removed in capfd.readouterr().err


def test_only_temporaries_of_processes_that_no_longer_run_are_removed(tmp_path):
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        names = {"dead": f"awele-14.h5.tmp-{finished.stdout.strip()}", "alive": f"awele-15.h5.tmp-{running.pid}",
                 "mine": f"awele-16.h5.tmp-{os.getpid()}", "other": "awele-16.h5.tmp-x", "zero": "awele-17.h5.tmp-0"}
        for name in names.values():
            (tmp_path / name).write_bytes(b"half")
        assert tables.remove_stale_temporaries(str(tmp_path)) == sorted([names["dead"], names["mine"], names["zero"]])
        assert sorted(os.listdir(tmp_path)) == sorted([names["alive"], names["other"]])
    finally:
        running.kill()
        running.wait()


def test_signals_are_handed_back_as_they_were_after_a_build(tmp_path):
    before = [signal.getsignal(stop) for stop in build.STOP_SIGNALS]
    build.build(2, str(tmp_path))
    assert [signal.getsignal(stop) for stop in build.STOP_SIGNALS] == before


@pytest.mark.parametrize("write", [lambda folder: tables.write_table(folder, 3, np.zeros(364, dtype=np.int8)),
                                   lambda folder: tables.write_file_exclusively(os.path.join(folder, "state"),
                                                                                [b"values"])],
                         ids=["table", "checkpoint"])
def test_a_signal_right_after_the_temporary_is_created_leaves_nothing(tmp_path, monkeypatch, write):
    """Python runs a signal's handler as soon as a call returns: a stop can
    land between the open that created the temporary and anything that
    could record it."""
    real_open = os.open

    def open_then_stop(*args, **kwargs):
        descriptor = real_open(*args, **kwargs)
        os.close(descriptor)
        raise build.Stopped(signal.SIGTERM)

    monkeypatch.setattr(os, "open", open_then_stop)
    with pytest.raises(build.Stopped):
        write(str(tmp_path))
    monkeypatch.undo()
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_swallowed_on_its_way_is_still_honoured_when_the_build_ends(stop):
    program = ("import os, signal\nfrom solver import build\nwith build.stopping_signals():\n"
               f"    try:\n        os.kill(os.getpid(), {int(stop)})\n    except KeyboardInterrupt:\n        pass\n"
               "    print('went on', flush=True)\nprint('not reached', flush=True)\n")
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60,
                            preexec_fn=_ctrl_c_as_a_terminal_sends_it)
    assert result.stdout == "went on\n" and result.returncode == -stop, result.stderr


def test_the_server_refuses_a_layer_that_is_a_link(linked):
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient

    from solver.web.app import create_app

    with TestClient(create_app(linked)) as client:
        response = client.post("/api/position", json={"position": NINE})
        assert response.status_code == 500 and "layer 9" in response.text, response.text  # the oracle names no path
        eight = client.post("/api/position", json={"position": "1-0-0-0-0-0/0-0-0-3-3-1 S"})
        assert eight.status_code == 200 and eight.json()["tables"], eight.text
