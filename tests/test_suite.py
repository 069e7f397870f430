"""Exact test suites (solver/suite.py, `awele suite`): made from the tables, read
strictly, run on engines that crash, hang or babble without the run ending."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from solver import suite
from solver.cli import main
from solver.probe import Tablebase

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIPPED = os.path.join(ROOT, "suites")


@pytest.fixture(scope="module")
def made(table_dir, tmp_path_factory):
    """A suite of 12 positions of 9..12 seeds, made twice from the same seed."""
    folder = tmp_path_factory.mktemp("suites")
    paths = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(suite, "DIFFICULTY_NODES", 50_000)  # a quicker rating: the same code
        patch.setattr(suite, "CANDIDATES", 2)
        for name in ("a", "b"):
            path = folder / f"{name}.txt"
            with Tablebase(table_dir) as tablebase:
                entries = suite.make_suite(tablebase, 12, 9, 12, seed=7)
            suite.write_suite(path, entries, ["a test suite"])
            paths.append(path)
    return paths


def test_a_made_suite_holds_the_tables_answers(made, table_dir):
    entries = suite.read_suite(made[0])
    assert len(entries) == 12 and {e.seeds for e in entries} == {9, 10, 11, 12}
    with Tablebase(table_dir) as tablebase:
        for entry in entries:
            assert entry.value == tablebase.value(entry.position)
            assert sorted(entry.best) == sorted(tablebase.best_moves(entry.position))
            assert entry.values == tablebase.move_values(entry.position)
            assert entry.distance == tablebase.distance(entry.position)
            assert 1 < len(entry.best) + 1 <= len(entry.values)  # a choice to make, not every move best
            assert entry.depth is None or entry.depth >= 1


def test_the_same_seed_makes_the_same_suite(made):
    assert made[0].read_text() == made[1].read_text()
    assert made[0].read_text().splitlines()[0] == "# awele-suite 1"


def write(tmp_path, text, name="suite.txt"):
    path = tmp_path / name
    path.write_text(text)
    return path


GOOD = '0-1-2-1-3-1-1-0-1-0-3-0-17-18-N id "x1"; bm a e; v -2; mv a:-2 c:-9 e:-2;\n'


@pytest.mark.parametrize("text, says", [
    ("", "not an awele suite"),
    ("# awele-suite 2\n" + GOOD, "version '2'"),
    ("# awele-suite 1\n", "no positions"),
    ("# awele-suite 1\n" + GOOD.replace("0-1-2-1", "9-9-9-9"), "line 2: the position"),
    ("# awele-suite 1\n" + GOOD.replace("mv a:-2", "mv b:-2"), "line 2: mv: 'b:-2' is not a legal move"),
    ("# awele-suite 1\n" + GOOD.replace("bm a e", "bm a"), "line 2: bm a and v -2 do not agree"),
    ("# awele-suite 1\n" + GOOD.replace("v -2", "v -3"), "line 2: bm a e and v -3 do not agree"),
    ("# awele-suite 1\n" + GOOD.replace("v -2", "v 99"), "line 2: v '99' is not a whole number -13..13"),
    ("# awele-suite 1\n" + GOOD.replace('id "x1"', "id x1"), "line 2: the id"),
    ("# awele-suite 1\n" + GOOD.replace("bm a e; ", ""), "line 2: no 'bm'"),
    ("# awele-suite 1\n" + GOOD + GOOD, "line 3: the id 'x1' is given twice"),
    ("# awele-suite 1\n" + GOOD.replace("; mv", "; v 1; mv"), "line 2: the operation 'v' is given twice"),
    ("# awele-suite 1\n" + GOOD.replace("mv a:-2 c:-9 e:-2", "mv a:-2 e:-2"), "line 2: mv gives a e"),
])
def test_a_damaged_suite_is_refused_in_one_line(tmp_path, text, says):
    path = write(tmp_path, text)
    with pytest.raises(suite.SuiteError, match=says.replace("(", r"\(").replace(")", r"\)")):
        suite.read_suite(path)


def test_a_good_line_reads_back_as_written(tmp_path):
    entries = suite.read_suite(write(tmp_path, "# awele-suite 1\n# a comment\n\n" + GOOD))
    assert entries[0].best == ("a", "e") and entries[0].value == -2 and entries[0].depth is None
    assert entries[0].line() == GOOD.strip().replace("e:-2;", "e:-2; seeds 13; depth none; nodes none; proof none;")


def test_time_to_solution_is_when_the_move_became_best_and_stayed():
    report = suite._Report
    reports = [report(0.1, 10, "A"), report(0.2, 20, "C"), report(0.3, 30, "B"), report(0.4, 40, "C")]
    assert suite.solution(reports, "C", ["C", "F"], 0.5) == (0.4, 40)  # B at 0.3 broke the run
    assert suite.solution(reports[:2], "C", ["C"], 0.5) == (0.2, 20)
    assert suite.solution(reports, "B", ["C"], 0.5) == (None, None)
    assert suite.solution([], "C", ["C"], 0.5) == (0.5, None)  # no reports: the answer's time
    assert suite.solution([report(0.1, 1, "A")], "C", ["C"], 0.5) == (0.5, None)


def test_the_wilson_interval():
    low, high = suite.wilson(19, 20)
    assert 0.75 < low < 0.77 and 0.99 < high < 0.995
    assert suite.wilson(0, 0) == (0.0, 1.0)


FAKE_ENGINE = textwrap.dedent('''
    import sys, time
    counter = sys.argv[1]  # the goes so far, kept in a file: a restarted engine goes on counting
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["uci"]:
            print("id name fake"); print("uciok", flush=True)
        elif words[:1] == ["isready"]:
            print("readyok", flush=True)
        elif words[:1] == ["go"]:
            with open(counter, "a+") as handle:
                handle.seek(0)
                count = len(handle.read()) + 1
                handle.write("x")
            if count == 1:
                print("info depth 1 nodes 5 pv a", flush=True); print("bestmove a", flush=True)
            elif count == 2:
                sys.exit(3)                       # a crash
            elif count == 3:
                time.sleep(30)                    # a hang, even after stop
            elif count == 4:
                print("bestmove zz", flush=True)  # garbage
            else:
                print("info depth 2 nodes 9 pv e", flush=True); print("bestmove e", flush=True)
        elif words[:1] == ["quit"]:
            break
''')


def test_a_crash_a_hang_or_garbage_costs_the_position_not_the_run(tmp_path):
    engine_file = tmp_path / "fake.py"
    engine_file.write_text(FAKE_ENGINE)
    path = write(tmp_path, "# awele-suite 1\n" + "".join(GOOD.replace("x1", f"x{i}") for i in range(1, 6)))
    entries = suite.read_suite(path)
    engine = suite.engine_from(f"uci:{sys.executable} {engine_file} {tmp_path / 'count'}", grace=0.3)
    try:
        attempts = suite.run_suite(engine, entries, suite.Limits(movetime=0.2))
    finally:
        engine.close()
    assert [a.solved for a in attempts] == [True, False, False, False, True]
    assert attempts[0].seconds is not None and attempts[0].nodes == 5
    assert "exited" in attempts[1].failure and "after stop" in attempts[2].failure
    assert "illegal" in attempts[3].failure
    summary = suite.summarise(attempts)["all"]
    assert summary["solved"] == 2 and summary["failures"] == 3


def test_awele_suite_make_and_run_from_the_command_line(table_dir, tmp_path, capsys, monkeypatch):
    out = tmp_path / "s.txt"
    monkeypatch.setattr(suite, "DIFFICULTY_NODES", 50_000)
    main_ok(["suite", "make", "--dir", table_dir, "--seeds", "11-12", "--count", "4", "--seed", "3",
             "--out", str(out), "--quiet"])
    assert len(suite.read_suite(out)) == 4
    results, plot = tmp_path / "r.json", tmp_path / "r.svg"
    main_ok(["suite", "run", str(out), "--engine", f"awele:tables={table_dir},max_table_seeds=8",
             "--depth", "6", "--json", str(results), "--plot", str(plot), "--quiet"])
    said = capsys.readouterr().out
    assert "solved" in said and "awele:tables=" in said
    data = json.loads(results.read_text())
    assert data["runs"][0]["summary"]["all"]["positions"] == 4
    assert plot.read_text().startswith("<svg")


def main_ok(argv):
    with pytest.raises(SystemExit) as ended:
        main(argv)
    assert ended.value.code == 0


def test_a_bad_suite_or_engine_is_one_line_and_exit_2(tmp_path):
    path = write(tmp_path, "not a suite\n", "bad.txt")
    for argv in (["suite", "run", str(path), "--engine", "awele"],
                 ["suite", "run", str(write(tmp_path, "# awele-suite 1\n" + GOOD)), "--engine", "bogus"],
                 ["suite", "make", "--seeds", "20-13", "--out", str(tmp_path / "x.txt")]):
        done = subprocess.run([sys.executable, "-m", "solver", *argv], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": ROOT})
        assert done.returncode == 2, (argv, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("awele: error:"), done.stderr


def test_the_shipped_suites_read(table_dir):
    names = sorted(name for name in os.listdir(SHIPPED) if name.endswith(".txt"))
    assert names, "suites/ holds the shipped suites"
    for name in names:
        entries = suite.read_suite(os.path.join(SHIPPED, name))
        assert len(entries) >= 100, name
        assert all(len(e.best) < len(e.values) for e in entries)


@pytest.mark.slow
def test_the_shipped_suites_hold_the_tables_answers(tmp_path_factory, tables16):
    """Every answer of the shipped suites within 20 seeds against layers built here."""
    import shutil

    from solver import build

    folder = tmp_path_factory.mktemp("tables20")
    for name in os.listdir(tables16):
        if name.endswith(".h5"):
            shutil.copyfile(os.path.join(tables16, name), folder / name)
    build.build(20, str(folder), threads=2)
    checked = 0
    with Tablebase(str(folder)) as tablebase:
        for name in sorted(os.listdir(SHIPPED)):
            for entry in suite.read_suite(os.path.join(SHIPPED, name)):
                if entry.seeds <= 20:
                    assert entry.values == tablebase.move_values(entry.position), (name, entry.id)
                    assert entry.distance == tablebase.distance(entry.position), (name, entry.id)
                    checked += 1
    assert checked >= 200
