"""Files and folders that must not mislead awele: a layer that is a symbolic
link (refused by every reader, even when it points at a valid table), build
records damaged in a layer's attributes (named, never a traceback), memory
budgets that build nothing (one line that says so), and builds stopped by a
signal (nothing half-written left behind)."""

import os
import re
import shutil

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
def built(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("built"))
    build.build(TOP, directory)
    return directory


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


@pytest.mark.parametrize("name", ["processes", "bytes_exchanged", "build_seconds"])
@pytest.mark.parametrize("value", [np.bytes_(b"two"), np.float64("nan"), np.float64("inf"), -3, True,
                                   np.arange(2)], ids=["text", "nan", "inf", "negative", "boolean", "array"])
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
    assert "1 KiB builds no layer" in result.output and "512.1 MiB" in result.output
    assert "-1" not in result.output and "0.0 GiB" not in result.output
    assert os.listdir(tmp_path) == []


def test_verify_says_what_it_needs_of_a_budget_too_small_in_units_that_show_it(built):
    result = CliRunner().invoke(cli, ["verify", "--seeds", "3", "--memory", "1K", "--dir", built])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "verifying layer 3 needs at least 512.1 MiB" in result.output
    assert "the memory budget is 1 KiB" in result.output


def test_the_api_says_the_same_of_a_budget_that_builds_nothing(tmp_path):
    with pytest.raises(BuildError, match=r"the memory budget of 1 KiB builds no layer: the smallest that builds one"):
        build.build(3, str(tmp_path), memory=1024)
    assert plan.budget_too_small(plan.least_bytes(0)) is None
    message = plan.memory_message(20, plan.least_bytes(19))
    assert re.fullmatch(r"layer 20 needs at least [\d.]+ MiB \([\d.]+ MiB working state, [^;]*\); "
                        r"the memory budget of [\d.]+ MiB builds layers up to 19", message), message
