"""`awele uci`: scripted sessions over a pipe, as a GUI drives the engine."""

import io
import os
import queue
import subprocess
import sys
import threading
import time

import pytest

from solver import early, uci
from solver.engine import Engine
from solver.position import Game, Position
from solver.probe import Tablebase

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATIENCE = 120  # seconds before a missing answer fails the test (a guard, not a measurement)


class Session:
    """`python -m solver uci` in a subprocess, its output read line by line."""

    def __init__(self, directory):
        environment = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.process = subprocess.Popen([sys.executable, "-m", "solver", "uci", "--dir", directory],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, bufsize=1, env=environment)
        self.lines = queue.Queue()
        self.errors = []
        threading.Thread(target=self._pump, args=(self.process.stdout, self.lines.put), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.process.stderr, self.errors.append), daemon=True).start()

    @staticmethod
    def _pump(stream, put):
        for line in stream:
            put(line.rstrip("\n"))
        put(None)

    def send(self, *lines):
        for line in lines:
            self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def until(self, first_word):
        """The lines up to and including the first that starts with `first_word`."""
        seen = []
        while True:
            line = self.lines.get(timeout=PATIENCE)
            assert line is not None, f"the engine exited before {first_word!r}; said {seen}, logged {self.errors}"
            seen.append(line)
            if line.split()[:1] == [first_word]:
                return seen

    def finish(self):
        self.process.stdin.close()
        return self.process.wait(PATIENCE)


@pytest.fixture
def session(table_dir):
    running = Session(table_dir)
    yield running
    if running.process.poll() is None:
        running.process.kill()
        running.process.wait()


def bestmove(lines):
    words = lines[-1].split()
    assert words[0] == "bestmove"
    return words[1], (words[3] if len(words) > 3 and words[2] == "ponder" else None)


def test_a_gui_session_from_the_opening(session):
    session.send("uci")
    hello = session.until("uciok")
    assert hello[0].startswith("id name awele") and hello[1].startswith("id author")
    assert any(line.startswith("option name Hash type spin") for line in hello)
    assert any(line.startswith("option name Tables type string") for line in hello)
    assert any(line.startswith("option name Threads type spin") for line in hello)
    assert any(line.startswith("option name Evaluation type combo") for line in hello)
    assert any(line.startswith("option name Quiescence type spin") for line in hello)
    session.send("setoption name Hash value 16", "isready")
    assert session.until("readyok") == ["readyok"]
    session.send("ucinewgame", "isready")
    session.until("readyok")
    game = Game()
    for _ in range(2):  # the GUI sends the whole game each time, letters run together
        moves = "".join(game.moves)
        session.send(f"position startpos moves {moves}" if moves else "position startpos", "go depth 5 movetime 2000")
        lines = session.until("bestmove")
        move, ponder = bestmove(lines)
        assert move in game.legal_moves()
        infos = [line for line in lines if line.startswith("info depth")]
        assert infos and all(" score cp " in line and " nodes " in line and " time " in line for line in infos)
        # pv on every info depth line (GUIs show each iteration's line), its first move legal
        assert all(line.split()[line.split().index("pv") + 1][0] in game.legal_moves() for line in infos)
        assert "pv" in infos[-1].split() and infos[-1].split()[-1].startswith(move)
        game.play(move)
        if ponder is not None:
            assert ponder in game.legal_moves()
        game.play(game.legal_moves()[0])  # the GUI's player answers
    session.send("quit")
    assert session.process.wait(PATIENCE) == 0
    assert not [e for e in session.errors if e], session.errors  # nothing was ignored


def test_stop_during_go_infinite_and_isready_while_searching(session):
    session.send("uci", "isready")
    session.until("readyok")
    session.send("position startpos moves FbDa", "go infinite", "isready")
    answered = session.until("readyok")
    assert not any(line.startswith("bestmove") for line in answered)  # answered while the search runs
    session.send("stop")
    move, _ = bestmove(session.until("bestmove"))
    assert move in Game.from_record("F b D a").legal_moves()
    session.send("isready")  # the engine takes commands again
    session.until("readyok")
    assert session.finish() == 0


def test_garbage_lines_are_logged_and_ignored(session):
    session.send("uci")
    session.until("uciok")
    garbage = ["hello there", "position", "position fen 1-2-3", "position fen 4-4-4-4-4-4-4-4-4-4-4-4-0-0-X",
               "setoption name Nope value 1", "setoption Hash 12", "setoption name Hash value lots",
               "go nodes many depth 3", "\u00e9\u00e8 \x07", "bestmove A", "position startpos moves Fz"]
    session.send(*garbage)
    lines = session.until("bestmove")  # the go's good limit is kept; nothing else answers
    assert all(line.startswith("info") for line in lines[:-1])
    move, _ = bestmove(lines)
    assert move in Position.initial().legal_moves()
    session.send("isready")
    assert session.until("readyok") == ["readyok"]
    session.send("quit")
    assert session.process.wait(PATIENCE) == 0
    logged = [e for e in session.errors if e]
    assert len([e for e in logged if "ignored" in e]) >= len(garbage) - 1, logged
    assert not any("Traceback" in e for e in logged)


def test_a_position_with_an_illegal_move_is_ignored_and_the_previous_one_kept(session):
    session.send("uci", "position startpos moves F", "position startpos moves Fbb", "go depth 2")
    move, _ = bestmove(session.until("bestmove"))
    assert move in Position.initial().play("F").legal_moves()  # North to move, after F alone
    assert session.finish() == 0
    assert any("move 3 (b) is illegal" in e for e in session.errors), session.errors


def test_the_end_of_input_ends_the_engine_even_while_searching(session):
    session.send("uci", "position startpos", "go infinite")
    session.until("uciok")
    assert session.finish() == 0


def test_a_finished_game_answers_the_null_move(session):
    session.send("position fen 0-0-0-0-0-1-1-0-0-0-0-0-25-21-S", "go movetime 100")
    lines = session.until("bestmove")
    assert lines[-1] == "bestmove 0000" and "game is over" in lines[0]
    assert session.finish() == 0


def test_a_position_whose_every_seed_one_side_takes_is_answered_from_the_tables(session, table_dir):
    position = Position.from_string("0-3-0-0-0-2/1-1-0-1-0-1 S 18:21")  # South takes all 9 seeds left
    session.send(f"position fen {uci.diagram(position)}", "isready")
    session.until("readyok")  # the tables and the searcher ready (a first go without it: below)
    session.send("go movetime 1000")
    lines = session.until("bestmove")
    move, _ = bestmove(lines)
    with Tablebase(table_dir) as tablebase:
        assert move in tablebase.best_moves(position)
        value = tablebase.value(position)
    assert value == position.seeds
    assert any(line.startswith("info ") and f"score cp {100 * value}" in line for line in lines)
    assert any("source table" in line for line in lines)
    assert session.finish() == 0


def test_a_table_value_of_0_or_less_is_searched_under_the_true_rule(session, table_dir):
    # -1 for North by the tables, whose convention splits endless play: the
    # true rule may value it otherwise, so the engine searches it with that rule.
    position = Position.from_string("0-1-2-0-3-1/2-0-1-0-0-1 N 18:19")
    with Tablebase(table_dir) as tablebase:
        assert tablebase.value(position) == -1
    session.send("setoption name MaxTableSeeds value 12", "isready")
    session.until("readyok")
    session.send(f"position fen {uci.diagram(position)}", "go movetime 500")
    lines = session.until("bestmove")
    move, _ = bestmove(lines)
    assert move in position.legal_moves()
    assert any(line.startswith("info depth ") and " pv " in line for line in lines)
    (said,) = [line for line in lines if line.startswith("info string value")]
    assert "source search" in said
    assert ("exact" in said and "true repetition rule" in said) or "estimate" in said, said
    assert session.finish() == 0


# The first go, with no isready before it ------------------------------------------------
# A GUI need not send isready: the engine loads its kernels and reads its tables in the
# background from the first command after uci on, and a first go waits for them only as
# long as its time allows (issue 54: a first go answered "info nodes 0" and the first legal
# move, B, where the tables give C and F +2, and 0.4 s past its move time above the tables).

ISSUE_POSITION = "0-1-2-0-3-1-2-0-1-3-2-1-20-12-S"  # 16 seeds: B -1, C and F +2, E -2 by the tables


def first_go(directory, setup, go):
    """A fresh engine sent uci, then `setup` and `go` at once, as a GUI may:
    (its lines up to bestmove, seconds from sending the go to the bestmove)."""
    running = Session(directory)
    try:
        running.send("uci")
        running.until("uciok")
        running.send(*setup)
        sent = time.perf_counter()
        running.send(go)
        lines = running.until("bestmove")
        seconds = time.perf_counter() - sent
        running.send("quit")
        assert running.process.wait(PATIENCE) == 0
        return lines, seconds
    finally:
        if running.process.poll() is None:
            running.process.kill()
            running.process.wait()


def test_a_first_go_without_isready_in_the_tables_plays_a_best_move(tables16):
    position = uci.parse_diagram(ISSUE_POSITION)
    lines, seconds = first_go(tables16, [f"position fen {ISSUE_POSITION}"], "go movetime 500")
    move, _ = bestmove(lines)
    with Tablebase(tables16) as tablebase:
        best = tablebase.best_moves(position)
    assert sorted(best) == ["C", "F"]
    assert move in best, lines
    print(f"first go movetime 500 in the tables (16 seeds), no isready: {move} in {seconds:.3f} s; said {lines}")


@pytest.mark.parametrize("movetime", [500, 2000])
def test_a_first_go_without_isready_above_the_tables_answers(table_dir, movetime):
    """Timed, not asserted on time (a loaded machine loads the kernels slower):
    the figure goes to the test's output and docs/PERFORMANCE.md."""
    lines, seconds = first_go(table_dir, ["position startpos"], f"go movetime {movetime}")
    move, _ = bestmove(lines)
    assert move in Position.initial().legal_moves()
    print(f"first go movetime {movetime} above the tables, no isready: {move} in {seconds:.3f} s; "
          f"said {lines[-3:]}")


def test_a_go_before_the_searcher_is_made_answers_from_the_tables_or_by_captures(table_dir, monkeypatch):
    """A go whose time runs out before the searcher is made answers from the
    tables when they hold the position (here C, the only move that keeps +6:
    not B, the first legal move, which the two-ply choice by captures also
    plays), else by that choice; never a move chosen from nothing."""
    monkeypatch.setattr(uci.UciEngine, "_searcher_by", lambda self, deadline: None)
    position = "0-1-1-0-0-1-0-0-1-0-1-1-10-10-S"
    with Tablebase(table_dir) as tablebase:
        assert tablebase.best_moves(uci.parse_diagram(position)) == ["C"]
    said, _ = run_script([f"position fen {position}", "go movetime 3000"], table_dir)
    assert bestmove([line for line in said if line.startswith("bestmove")])[0] == "C", said
    assert any("answered from the tables" in line for line in said), said
    said, _ = run_script(["setoption name UseTables value false", f"position fen {position}", "go movetime 300"],
                         table_dir)
    assert bestmove([line for line in said if line.startswith("bestmove")])[0] == "B", said
    assert any("a search by captures in plain Python" in line for line in said), said
    assert early.search(early.EarlyGame.of(Game(uci.parse_diagram(position))), float("inf"), 12).move == "B"


def test_a_go_before_the_kernels_load_searches_by_captures_on_time(tables16, monkeypatch):
    """A GUI may send position and go as soon as uciok is said, before the rules'
    kernels have loaded (most of a second): the position is read and the go
    answered by the early rules (solver/early.py), searched by captures up to
    its time (issue 54: the kernels' two-ply choice waited for the kernels and
    came late). Here the kernels load 2 s after uciok."""
    never = threading.Event()
    monkeypatch.setattr(uci, "_load_rules", lambda: never.wait(2.0))  # loaded 2 s after uciok
    said, _ = run_script(["uci", f"position fen {ISSUE_POSITION}", "go movetime 400"], tables16)
    assert said[-1] == "bestmove F", said  # C and F keep +2 by the tables
    assert any("a search by captures in plain Python" in line for line in said), said
    reports = [line for line in said if line.startswith("info depth")]
    assert all(int(line.split()[line.split().index("time") + 1]) <= 400 for line in reports), reports
    said, _ = run_script(["uci", "position startpos moves FbDa", "go movetime 300"], tables16)
    assert said[-1].split()[1] in early.parse(["startpos", "moves", "FbDa"]).legal_moves(), said
    said, log = run_script(["uci", "position startpos moves FF", "go movetime 300"], tables16)
    assert any("move 2 (F) is illegal" in line for line in log), log  # read and refused by the early rules
    assert said[-1].split()[1] in early.EarlyGame.opening().legal_moves(), said  # the opening's move


# The same answers in one process, and the pieces of the dialect -------------------


def run_script(lines, directory):
    out, log = io.StringIO(), io.StringIO()
    assert uci.UciEngine(io.StringIO("".join(line + "\n" for line in lines)), out, log, directory).run() == 0
    return out.getvalue().splitlines(), log.getvalue().splitlines()


def true_rule_values(tablebase, game):
    """Each move's value in the game's position: the end of the game by the rules
    (a repetition of the game's history included) where it ends, else the tables'."""
    position = game.position
    mine_before, theirs_before = position.mover_captured()
    values = {}
    for move in position.legal_moves():
        game.play(move)
        if game.is_over():
            final = game.result() if position.to_move == "S" else game.result()[::-1]
            values[move] = (final[0] - mine_before) - (final[1] - theirs_before)
        else:
            child = game.position
            values[move] = position.play_capture(move)[1] - tablebase.value(child)
        game.undo()
    return values


@pytest.mark.parametrize("start, record, repeating, table_value, true_best", [
    # North's d is worth +4 by the tables, but it repeats the start: 0 by the true rule, as c.
    ("0-0-1-0-0-1/0-0-1-0-1-0 S 0:0", "C c D e F a E f A b B", "d", 4, 0),
    # South's a repeats an earlier position (+4 by the true rule); c, d and e keep the tables' +6.
    ("0-0-0-0-1-0/0-1-2-1-1-0 S 0:0", "E c F e A b B d C e D f B a A c B b C d E c F b D", "a", 6, 6),
])
def test_the_table_answer_applies_the_true_rule_to_the_games_history(table_dir, start, record, repeating,
                                                                     table_value, true_best):
    game = Game.from_record(record, Position.from_string(start))
    with Tablebase(table_dir) as tablebase:
        assert tablebase.move_values(game.position)[repeating] == table_value
        values = true_rule_values(tablebase, game)
        assert values[repeating] != table_value  # the history changes this move's value
        answer = uci.table_answer(tablebase, game)
    assert game.moves == record.split()  # the game is left as it was
    assert values[answer.move] == max(values.values()) == answer.value == true_best
    assert answer.exact and answer.source == "table"


def test_go_limits_follow_the_side_to_moves_clock():
    assert uci.parse_go(["movetime", "500"], "S").time == pytest.approx(0.5 - 0.015)  # 3% of a short move time
    assert uci.parse_go(["movetime", "100"], "N").time == pytest.approx(0.097)
    assert uci.parse_go(["movetime", "2000"], "S").time == pytest.approx(2 - uci.RESPONSE_MARGIN)  # 20 ms at most
    south = uci.parse_go(["wtime", "30000", "btime", "3000", "winc", "1000", "binc", "0"], "S")
    north = uci.parse_go(["wtime", "30000", "btime", "3000", "winc", "1000", "binc", "0"], "N")
    assert south.time == pytest.approx(30 / uci.MOVES_TO_GO + 0.75)
    assert north.time == pytest.approx(3 / uci.MOVES_TO_GO)
    assert uci.parse_go(["btime", "1000", "movestogo", "1"], "N").time == pytest.approx(0.5 * (1 - uci.RESPONSE_MARGIN))
    assert uci.parse_go(["infinite"], "S") == uci.Limits(infinite=True)
    assert uci.parse_go(["depth", "7"], "S") == uci.Limits(depth=7)
    # A bare go is `go movetime 3000`: its bestmove comes within the documented 3 s.
    assert uci.parse_go([], "S") == uci.parse_go(["movetime", "3000"], "S")
    assert uci.parse_go([], "S").time == uci.DEFAULT_MOVE_SECONDS - uci.RESPONSE_MARGIN
    logged = []
    assert uci.parse_go(["movetime", "soon", "depth", "3", "sideways"], "S", logged.append) == uci.Limits(depth=3)
    assert len(logged) == 2


def test_the_dialects_position_notation_round_trips():
    for text in ("4-4-4-4-4-4/4-4-4-4-4-4 S 0:0", "0-1-2-0-3-1/2-0-1-3-2-1 N 20:12"):
        position = Position.from_string(text)
        assert uci.parse_diagram(uci.diagram(position)) == position
    game = uci.parse_position(["fen", "4-4-4-4-4-4-4-4-4-4-4-4-0-0-S", "moves", "F", "bD", "a"])
    assert game.moves == ["F", "b", "D", "a"] and game.start == Position.initial()
    for words in (["startpos", "moves", "FF"], ["fen"], ["sideways"], ["fen", "5-4-4-4-4-4-4-4-4-4-4-4-0-0-S"]):
        with pytest.raises(uci.UciError):
            uci.parse_position(words)


def test_options_change_the_searcher_in_process(table_dir):
    said, logged = run_script(["setoption name MaxTableSeeds value 4", "setoption name UseTables value false",
                               "setoption name Cycles value split", "setoption name Tables value /no/such/folder",
                               "isready", "position fen 0-1-2-0-3-1-2-0-1-0-0-1-18-19-N", "go depth 3"], table_dir)
    assert said[0] == "readyok" and said[-1].split()[0] == "bestmove"
    assert not any("source table" in line for line in said)  # UseTables false: searched
    assert len(logged) == 1 and "/no/such/folder" in logged[0]


def test_threads_and_hash_change_the_searcher_in_place(table_dir):
    """A GUI may send Threads or Hash after isready. The Searcher made then keeps
    its tables (a new one would first wait for the old one's background reader,
    tens of seconds with big tables, the engine deaf meanwhile); a tables option
    still makes a new one."""
    engine = uci.UciEngine(io.StringIO(""), io.StringIO(), io.StringIO(), table_dir)
    engine.handle("isready")
    first = engine.searcher
    assert first is not None
    engine.handle("setoption name Threads value 1")
    engine.handle("setoption name Hash value 2")
    engine.handle("setoption name Quiescence value 3")
    engine.handle("setoption name Quiescence value 17")  # beyond its range: refused, logged, kept
    engine.handle("position startpos")
    engine.handle("go depth 4")
    engine._thinking.join(60)  # a liveness bound
    assert engine.searcher is first and first.threads == 1 and first.tt.shape[0] * 24 <= 2 << 20
    assert first.quiescence == 3 and "quiescence" in engine.log_stream.getvalue()
    engine.handle("setoption name Hash value 100000000")  # more than the machine has: refused, kept
    engine.handle("isready")
    assert engine.searcher is first and first.tt.shape[0] * 24 <= 2 << 20 and engine.options["hash"] == 2
    engine.handle("setoption name MaxTableSeeds value 6")
    engine.handle("isready")
    assert engine.searcher is not first and engine.searcher.threads == 1
    assert "bestmove" in engine.output.getvalue()


# Lines no GUI should send, which must not end the engine ------------------------


def raw_session(data, directory, encoding="utf-8:strict"):
    """`python -m solver uci` fed the bytes `data`; (status, stdout, stderr) as text."""
    environment = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   "PYTHONIOENCODING": encoding}
    done = subprocess.run([sys.executable, "-m", "solver", "uci", "--dir", directory], input=data,
                          capture_output=True, timeout=PATIENCE, env=environment)
    return done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")


def test_invalid_utf8_and_a_huge_house_are_ignored_under_a_strict_locale(tmp_path):
    """A desktop UTF-8 locale decodes standard input strictly: a GUI's stray
    byte ended the engine with a traceback, as did `position fen` with a
    5,000-digit house (int() refuses that many digits). Both are logged and
    ignored, and the position before them stays in force."""
    huge = "9" * 5000
    data = b"".join([
        b"uci\n",
        b"position startpos moves F\n",  # North to move: its moves are a..f
        b"isready \xff\xfe\xc3(\n",
        b"position fen 1-2-\xff\n",
        f"position fen {huge}-0-0-0-0-0-0-0-0-0-0-1-0-0-S\n".encode(),
        f"position fen 0-0-0-0-0-1/1-0-0-0-0-{huge} S 0:0\n".encode(),
        b"setoption name Tables value a\x00b\n",
        b"go depth 2\n",
    ])
    status, out, err = raw_session(data, str(tmp_path))
    assert status == 0 and "Traceback" not in err, err
    assert "uciok" in out.splitlines()
    move = out.split("bestmove ")[-1].split()[0]
    assert move in Position.initial().play("F").legal_moves()  # the position before the bad ones
    ignored = [line for line in err.splitlines() if "ignored" in line]
    assert len(ignored) == 4 and "readyok" in out.splitlines(), err  # isready with stray bytes is isready
    assert any("at most 48 seeds" in line for line in ignored)


def test_a_line_longer_than_the_limit_is_skipped_and_the_next_followed(tmp_path, monkeypatch):
    monkeypatch.setattr(uci, "MAX_LINE_BYTES", 64)
    out, log = io.StringIO(), io.StringIO()
    data = b"position startpos moves " + b"Fb" * 100 + b"\nuci\n"
    assert uci.UciEngine(io.BytesIO(data), out, log, str(tmp_path)).run() == 0
    assert out.getvalue().splitlines()[-1] == "uciok"
    assert "more than 64 bytes" in log.getvalue()


def test_a_defect_in_a_command_is_logged_not_fatal(tmp_path, monkeypatch):
    engine = uci.UciEngine(io.BytesIO(b"uci\nisready\n"), io.StringIO(), io.StringIO(), str(tmp_path))

    def broken(self, arguments):
        raise KeyError("a defect")

    monkeypatch.setitem(uci.UciEngine._COMMANDS, "uci", broken)
    monkeypatch.setattr(uci.UciEngine, "_ensure_searcher", lambda self: 1 / 0)
    assert engine.run() == 0
    assert engine.output.getvalue().splitlines() == ["readyok"]
    assert "KeyError" in engine.log_stream.getvalue() and "ZeroDivisionError" in engine.log_stream.getvalue()


def test_uci_answers_without_loading_the_kernels(tmp_path):
    """`uci` is answered before numba is imported: a GUI waits for uciok a
    short time (0.2 s in issue 37), while loading the kernels takes longer
    (they load after uciok, in the background: see the first go's tests)."""
    code = ("import io, sys; from solver import uci\n"
            "class Out(io.StringIO):\n"
            "    def write(self, text):\n"
            "        if text.startswith('uciok'):\n"
            "            self.loaded = sorted(m for m in ('numba', 'h5py', 'solver.position', 'solver.tables') "
            "if m in sys.modules)\n"
            "        return super().write(text)\n"
            "out = Out()\n"
            "uci.UciEngine(io.BytesIO(b'uci\\n'), out, io.StringIO(), sys.argv[1]).run()\n"
            "assert out.getvalue().splitlines()[-1] == 'uciok'\n"
            "print(out.loaded)")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                          timeout=PATIENCE, env={**os.environ, "PYTHONPATH": ROOT})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_evaluation_file_option_takes_only_a_weights_file(tmp_path):
    from solver.evaluation import linear_weights_path, load_weights

    weights = tmp_path / "weights.json"
    data = open(linear_weights_path()).read()
    weights.write_text(data.replace("-2.50558", "-2.0"))
    absurd = tmp_path / "absurd.json"
    absurd.write_text(data.replace("-2.50558", "1e19"))
    os.mkfifo(tmp_path / "pipe")
    engine = uci.UciEngine(io.BytesIO(b""), io.StringIO(), io.StringIO(), str(tmp_path))
    for value in ("", str(tmp_path / "pipe"), str(absurd), "/dev/zero", str(tmp_path / "missing.json")):
        engine.handle(f"setoption name EvaluationFile value {value}")
    engine.handle("isready")
    assert engine.searcher.weights.tolist() == load_weights().tolist()  # every one refused
    assert engine.log_stream.getvalue().count("ignored") == 5
    engine.handle(f"setoption name EvaluationFile value {weights}")
    engine.handle("isready")
    assert engine.searcher.weights[0] == -2.0
    engine.handle(f"setoption name EvaluationFile value {uci.SHIPPED_WEIGHTS}")
    engine.handle("isready")
    assert engine.searcher.weights.tolist() == load_weights().tolist()
    assert "option name EvaluationFile type string default <shipped>" in uci.UciEngine(
        io.BytesIO(b""), io.StringIO(), io.StringIO(), str(tmp_path))._option_lines()


def test_awele_compile_makes_the_kernels_and_leaves_nothing(tmp_path, monkeypatch):
    """`awele compile` (issue 37: a way to compile the kernels ahead of the
    first isready): each step timed, its temporary tables removed."""
    import json
    import tempfile

    from click.testing import CliRunner

    from solver.cli import cli

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = CliRunner().invoke(cli, ["compile", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert set(data["steps"]) == {"the builder", "the table readers", "the search", "the fit's playouts"}
    assert all(seconds >= 0 for seconds in data["steps"].values()) and data["seconds"] >= 0
    assert os.listdir(tmp_path) == []


def test_a_damaged_layer_is_named_once_and_its_positions_searched(table_dir, monkeypatch):
    """A layer that fails its checks gave the first legal move with no search
    ("search failed: CorruptTableError"). The engine names it once and
    searches the position instead."""
    from solver.errors import CorruptTableError

    def damaged(engine, game, deadline=None):
        raise CorruptTableError(f"{table_dir}/awele-11.h5 is damaged: chunk 0 fails its CRC-32")

    monkeypatch.setattr(Engine, "table_move", damaged)
    position = Position.from_string("0-1-2-0-3-1/2-0-1-0-0-1 N 18:19")  # 11 seeds
    engine = uci.UciEngine(io.BytesIO(b""), io.StringIO(), io.StringIO(), table_dir)
    for _ in range(2):
        engine.handle(f"position fen {uci.diagram(position)}")
        engine.handle("go depth 3")
        engine._thinking.join(PATIENCE)  # a liveness bound
    said, logged = engine.output.getvalue().splitlines(), engine.log_stream.getvalue().splitlines()
    moves = [line.split()[1] for line in said if line.startswith("bestmove")]
    assert len(moves) == 2 and all(move in position.legal_moves() for move in moves)
    assert sum(line.startswith("info string value") for line in said) == 2, said  # answered by the Searcher
    assert len([line for line in logged if "awele-11.h5" in line]) == 1, logged
    assert not any("search failed" in line for line in logged)
