"""What the command line tells its user: help that is whole, notices of the work it
does unasked (building tables, compiling kernels), and whose value a number is."""

import json
import os
import subprocess
import sys

from click.testing import CliRunner

from solver import cli as cli_module
from solver.cli import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIX_SEEDS = "0-1-0-2-0-1/1-0-0-1-0-0 S 0:0"
# 24 seeds, South to move: above what `best` and `play` build by themselves, so searched.
ABOVE = "2-2-2-2-2-2/2-2-2-2-2-2 S 0:0"


def _commands_section(text):
    return text.split("Commands:\n", 1)[1]


def test_the_help_gives_every_summary_whole_and_aliases_beside_their_command():
    result = CliRunner().invoke(cli, ["--help"], terminal_width=80)
    assert result.exit_code == 0, result.output
    commands = _commands_section(result.output)
    flat = " ".join(commands.split())
    # click cut this one at "(e.g." and others at "...".
    assert 'Every ply of the game RECORD (e.g. "1. F b 2. D a") against perfect play.' in flat
    assert "..." not in commands
    names = [line.split()[0] for line in commands.splitlines() if line.startswith("  ") and line[2] != " "]
    assert "query" not in names and "analyze" not in names
    assert "best (query)" in commands and "analyse (analyze)" in commands
    # Every command's first paragraph is there, in full.
    for name, command in cli.commands.items():
        first = " ".join((command.help or "").split("\n\n")[0].split())
        assert first in flat, name
    # The aliases still work.
    assert CliRunner().invoke(cli, ["query", "--help"]).exit_code == 0
    assert CliRunner().invoke(cli, ["analyze", "--help"]).exit_code == 0


def test_play_help_names_only_options_play_has():
    text = CliRunner().invoke(cli, ["play", "--help"]).output
    assert "--nodes" not in text and "--depth" not in text
    assert "--threads" in text


def test_an_automatic_build_says_what_and_where_off_a_terminal(tmp_path):
    directory = tmp_path / "fresh"
    result = CliRunner().invoke(cli, ["best", SIX_SEEDS, "--dir", str(directory)])
    assert result.exit_code == 0, result.output
    assert "building the missing tables, layers 0..6 (18,563 positions)" in result.stderr
    assert str(directory) in result.stderr
    assert "building" not in result.stdout
    # With --json too (stdout stays the JSON alone), and not again once built.
    again = CliRunner().invoke(cli, ["best", SIX_SEEDS, "--dir", str(directory), "--json"])
    assert json.loads(again.stdout)["seeds"] == 6 and again.stderr == ""
    other = tmp_path / "other"
    result = CliRunner().invoke(cli, ["line", SIX_SEEDS, "--dir", str(other), "--json"])
    assert result.exit_code == 0, result.output
    assert f"in {other}" in result.stderr
    json.loads(result.stdout)


def test_the_notice_names_only_the_missing_layers(tmp_path):
    from solver import build

    build.build(4, str(tmp_path))
    result = CliRunner().invoke(cli, ["best", SIX_SEEDS, "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "layers 5..6 (16,743 positions)" in result.stderr


def test_layer_ranges():
    assert cli_module._layer_ranges([0, 1, 2, 3, 4, 7]) == "0..4, 7"
    assert cli_module._layer_ranges([5]) == "5"
    assert cli_module._layer_ranges([2, 3, 9, 10, 11]) == "2..3, 9..11"


def test_play_values_say_whose_they_are_and_that_they_are_exact(tmp_path):
    result = CliRunner().invoke(cli, ["play", "--position", SIX_SEEDS, "--dir", str(tmp_path)], input="values\nquit\n")
    assert result.exit_code == 0, result.output
    assert "values for South (you, to move)" in result.stdout
    assert "exact, from the tables" in result.stdout
    assert "* F  +4  captures 2" in result.stdout


def test_play_above_the_tables_gives_estimates_and_says_whose_value_it_searched(tmp_path):
    # awele (South) moves first: its search line; then the user's values, estimated.
    result = CliRunner().invoke(cli, ["play", "--side", "N", "--position", ABOVE, "--dir", str(tmp_path),
                                      "--time", "0.2", "--threads", "1"], input="values\nquit\n")
    assert result.exit_code == 0, result.output
    searched = next(line for line in result.stdout.splitlines() if line.startswith("(awele searched"))
    assert "for South (awele)" in searched
    assert "an estimate at depth" in searched or "exact" in searched
    assert "values for North (you, to move)" in result.stdout
    assert "above the tables" in result.stdout
    after = result.stdout.split("values for North", 1)[1]
    legal = after.split("your move (", 1)[1].split(",")[0].split()
    rows = [line.split() for line in after.splitlines() if " estimate" in line or " exact" in line]
    # One row a legal move: "  * f  -1 estimate" (the best starred) or "    b  -4 estimate  captures 2".
    assert [row[1] if row[0] == "*" else row[0] for row in rows] == legal, result.stdout
    assert "no table for this many seeds" not in result.stdout


def test_the_first_search_says_it_compiles(tmp_path, monkeypatch):
    monkeypatch.setattr(cli_module, "search_kernels_cached", lambda: False)
    result = CliRunner().invoke(cli, ["search", "--depth", "2", "--dir", str(tmp_path), "--threads", "1"])
    assert result.exit_code == 0, result.output
    assert "compiling the search's kernels, once" in result.stderr
    quiet = CliRunner().invoke(cli, ["search", "--depth", "2", "--dir", str(tmp_path), "--threads", "1", "--json"])
    assert "compiling" not in quiet.output
    monkeypatch.setattr(cli_module, "search_kernels_cached", lambda: True)
    result = CliRunner().invoke(cli, ["search", "--depth", "2", "--dir", str(tmp_path), "--threads", "1"])
    assert "compiling" not in result.stderr


def test_search_kernels_cached_reads_numba_s_cache(tmp_path):
    # An empty cache folder: a fresh install. (This process has searched: its cache holds them.)
    code = "from solver import cli; print(cli.search_kernels_cached())"
    environment = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert done.stdout.strip() == "False", done.stderr
    from solver.search import Searcher

    Searcher(str(tmp_path), max_table_seeds=0)
    assert cli_module.search_kernels_cached()


def test_no_layer_of_a_build_is_charged_the_compile(tmp_path):
    # In a fresh process nothing is compiled or loaded yet: by the time the first
    # layer's clock starts, the builder's kernels must be, so that its time is its own.
    code = f"""
from solver import build, exits, stages, tables
seen = []
original = build.build_layer
def spy(*args, **kwargs):
    if not seen:
        seen.append([name for name, kernel in (("propagate_stage", stages.propagate_stage),
                                               ("exit_pass", exits.exit_pass),
                                               ("fletcher32", tables.fletcher32),
                                               ("byte_histogram", tables.byte_histogram))
                     if not kernel.signatures])
    return original(*args, **kwargs)
build.build_layer = spy
build.build(10, {str(tmp_path)!r})
print(seen[0])
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]", "not ready when layer 0 started: " + done.stdout


def test_info_gives_bytes_a_position_only_where_the_values_make_the_file(tmp_path):
    # Layer 0 is one position in a file of a few KiB: "2924.000" bytes a position said nothing.
    from solver import build

    build.build(10, str(tmp_path))
    result = CliRunner().invoke(cli, ["info", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    rows = {int(line.split()[0]): line.split() for line in result.stdout.splitlines()[2:]}
    assert rows[0][3] == "-" and rows[5][3] == "-"
    assert 0.1 < float(rows[10][3]) < 1.0
    data = CliRunner().invoke(cli, ["info", "--dir", str(tmp_path), "--json"]).stdout
    assert json.loads(data)["layers"][0]["bytes_per_position"] > 1000  # the JSON keeps the figure


def test_best_names_the_tables_convention_once_where_perfect_play_ends_in_half_seeds(table_dir):
    """An odd value whose endless play the tables split evenly ends in half seeds; `awele best` says
    the convention once, not once for the half seeds and again for the rule."""
    result = CliRunner().invoke(cli, ["best", "2-1-2-0-1-1/0-1-0-1-1-0 S 14:24", "--dir", table_dir])
    assert result.exit_code == 0, result.output
    line = next(text for text in result.output.splitlines() if text.startswith("perfect play ends:"))
    assert ".5 " in line and line.count("endless play splits the seeds left evenly") == 1, line
