"""scripts/match.py: games judged by the rules, paired colours, the score's interval."""

import importlib.util
import json
import math
import os
import sys
import textwrap

import pytest

from solver.position import Game, Position

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))  # the processes of --concurrency import it by name
_spec = importlib.util.spec_from_file_location("match", os.path.join(ROOT, "scripts", "match.py"))
match = sys.modules["match"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(match)


@pytest.fixture(scope="module")
def no_tables(tmp_path_factory):
    return str(tmp_path_factory.mktemp("no-tables"))


def tiny(depth, folder):
    return f"awele:depth={depth},max_table_seeds=0,hash_mb=1,threads=1,tables={folder}"


def replayed(record):
    """The Game of a record, every move checked by the rules."""
    return Game.from_record(record.record)


def test_a_short_match_gives_legal_games_paired_colours_and_scores_that_add_up(no_tables):
    openings = match.choose_openings(2, 2, seed=3, path=None)
    records = match.run_match(tiny(1, no_tables), tiny(2, no_tables), openings, movetime=0.5, max_plies=60)
    assert [r.number for r in records] == [1, 2, 3, 4]
    for pair in (1, 2):
        first, second = [r for r in records if r.pair == pair]
        assert (first.south, second.south) == ("A", "B")  # colours swapped within the pair
        assert first.opening == second.opening == openings[pair - 1]
    for r in records:
        game = replayed(r)
        assert game.record().startswith(r.opening)
        assert r.plies == len(game.moves) <= 60
        if game.is_over():
            assert r.result == game.result() and r.termination == game.end_reason
            assert r.winner == game.outcome().winner
        else:
            assert r.plies == 60 and "adjudicated by the true rule" in r.termination
            houses, (south, north) = game.position.houses, game.position.captured
            assert r.result == (south + sum(houses[:6]), north + sum(houses[6:]))
        assert sum(r.result) == 48
        a_side = "S" if r.south == "A" else "N"
        expected = 0.5 if r.winner == "draw" else float(r.winner == a_side)
        assert r.score_a == expected
    summary = match.summarise(records)
    assert summary["wins"] + summary["draws"] + summary["losses"] == summary["games"] == 4
    assert summary["points"] == summary["wins"] + summary["draws"] / 2 == sum(r.score_a for r in records)
    assert summary["score"] == pytest.approx(summary["points"] / 4)


def test_games_in_parallel_processes_give_the_same_games_in_order(no_tables):
    openings = ["1. A e", "1. C d"]
    one = match.run_match(tiny(1, no_tables), tiny(2, no_tables), openings, movetime=0.5, max_plies=30)
    two = match.run_match(tiny(1, no_tables), tiny(2, no_tables), openings, movetime=0.5, max_plies=30,
                          concurrency=2)
    assert [(r.number, r.record, r.result) for r in two] == [(r.number, r.record, r.result) for r in one]


def test_adjudication_by_the_true_rule_or_as_a_draw(no_tables):
    opening = "1. A e"
    engines = {"A": match.make_engine(tiny(1, no_tables)), "B": match.make_engine(tiny(1, no_tables))}
    own = match.play_game(engines, 1, 1, opening, True, 0.5, 6, "own")
    draw = match.play_game(engines, 1, 1, opening, True, 0.5, 6, "draw")
    assert own.record == draw.record  # depth 1 plays the same moves
    game = replayed(own)
    assert not game.is_over() and own.plies == draw.plies == 6
    houses, (south, north) = game.position.houses, game.position.captured
    assert own.result == (south + sum(houses[:6]), north + sum(houses[6:]))
    assert draw.winner == "draw" and draw.score_a == 0.5 and draw.result == (south, north)


def test_the_interval_per_pair_against_a_hand_computation():
    # Pair scores 2, 1, 1.5, 0.5 of 2: per-game means 1, .5, .75, .25; mean .625;
    # deviations +-.375, +-.125: sample variance .3125 / 3; half-width 1.96 sqrt(var / 4).
    records = []
    for pair, (first, second) in enumerate([(1, 1), (1, 0), (1, 0.5), (0, 0.5)], 1):
        records.append(match.GameRecord(2 * pair - 1, pair, "", "A", score_a=float(first)))
        records.append(match.GameRecord(2 * pair, pair, "", "B", score_a=float(second)))
    summary = match.summarise(records)
    assert summary["score"] == pytest.approx(0.625)
    half = 1.959963984540054 * math.sqrt(0.3125 / 3 / 4)
    assert summary["score_half_width"] == pytest.approx(half)
    assert half == pytest.approx(0.3163, abs=1e-4)
    assert (summary["wins"], summary["draws"], summary["losses"]) == (4, 2, 2)
    assert summary["elo"] == pytest.approx(-400 * math.log10(1 / 0.625 - 1), abs=0.05)
    assert summary["elo_low"] == pytest.approx(match.elo(0.625 - half), abs=0.05)
    assert summary["elo_high"] == pytest.approx(match.elo(0.625 + half), abs=0.05)
    # per game: eight scores, mean .625, sample variance (4 * .375^2 + 2 * .125^2 + 2 * .625^2) / 7
    per_game = 1.959963984540054 * math.sqrt((4 * 0.375**2 + 2 * 0.125**2 + 2 * 0.625**2) / 7 / 8)
    assert summary["score_half_width_per_game"] == pytest.approx(per_game)


def test_elo_of_simple_scores():
    assert match.elo(0.5) == 0
    assert match.elo(0.75) == pytest.approx(400 * math.log10(3))
    assert match.elo(0.25) == pytest.approx(-400 * math.log10(3))
    assert match.elo(1.0) == math.inf and match.elo(0.0) == -math.inf


def test_openings_are_the_distinct_positions_after_k_plies():
    every = match.openings_after(2)
    assert len(every) == len({Game.from_record(r).position.key() for r in every}) == 36
    assert match.openings_after(0) == [""]
    drawn = match.choose_openings(5, 2, seed=7, path=None)
    assert drawn == match.choose_openings(5, 2, seed=7, path=None) and set(drawn) <= set(every)
    with pytest.raises(match.MatchError, match="only 36 distinct positions"):
        match.choose_openings(37, 2, seed=7, path=None)


def test_an_unknown_awele_key_is_refused_with_the_keys_there_are(no_tables):
    with pytest.raises(match.MatchError, match="no option 'bogus'.*max_table_seeds"):
        match.make_engine(f"awele:bogus=1,tables={no_tables}")
    with pytest.raises(match.MatchError, match="KEY=VALUE"):
        match.make_engine("awele:depth")
    with pytest.raises(match.MatchError, match="uci:COMMAND"):
        match.make_engine("stockfish")


FAKE_ENGINE = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    from solver.position import Game
    mode = sys.argv[1]
    game = Game()
    for line in sys.stdin:
        words = line.split()
        if words == ["uci"]:
            if mode == "garbage":  # not UTF-8: the engine's fault, never the match's end
                sys.stdout.buffer.write(b"id name \\xff\\xfe fake\\n"); sys.stdout.buffer.flush()
            print("id name fake " + mode); print("uciok")
        elif words == ["isready"]:
            print("readyok")
        elif words[:2] == ["position", "startpos"]:
            game = Game()
            for letter in "".join(words[3:]):
                game.play(letter)
        elif words[:1] == ["go"]:
            if mode == "garbage":
                sys.stdout.flush(); sys.stdout.buffer.write(b"info string \\xc3( \\x80\\n"); sys.stdout.buffer.flush()
            if mode in ("first", "garbage"):
                print("info depth 1 score cp 0 pv " + game.legal_moves()[0])
                print("info string the first of " + str(len(game.legal_moves())))
                print("a log line", file=sys.stderr, flush=True)
                print("bestmove " + game.legal_moves()[0])
            elif mode == "illegal":
                print("bestmove " + ("f" if game.position.to_move == "S" else "F"))
            elif mode == "crash":
                sys.exit(0)
        elif words == ["quit"]:
            break
        sys.stdout.flush()
    """
)


@pytest.fixture
def fake_engine(tmp_path):
    path = tmp_path / "fake_engine.py"
    path.write_text(FAKE_ENGINE.format(root=ROOT))
    return lambda mode: f"uci:{sys.executable} {path} {mode}"


def test_a_uci_engine_is_driven_by_position_and_go(no_tables, fake_engine):
    records = match.run_match(fake_engine("first"), tiny(1, no_tables), ["1. F b"], movetime=0.3, max_plies=40,
                              grace=5)
    assert len(records) == 2
    for r in records:
        replayed(r)
        assert "forfeits" not in r.termination


def test_every_move_is_journalled_with_what_the_engine_said_and_its_log_kept(no_tables, fake_engine, tmp_path):
    records = match.run_match(fake_engine("first"), tiny(1, no_tables), ["1. F b"], movetime=0.3, max_plies=12,
                              grace=5, logs=str(tmp_path))
    for r in records:
        game = replayed(r)
        assert [entry[0] for entry in r.moves] == list(range(2, len(game.moves)))
        for ply, engine, milliseconds, depth, score, said in r.moves:
            south = ply % 2 == 0  # the opening's two plies: South moves at even plies
            assert engine == ("A" if south == (r.south == "A") else "B")
            assert milliseconds >= 0
            if engine == "A":  # the fake: depth 1, score 0, then one info string
                assert (depth, score) == (1, 0)
                assert said == f"the first of {len(game.positions[ply].legal_moves())}"
            else:
                assert said.startswith("source ") and depth >= 1
    logs = sorted(tmp_path.glob("A-*.log"))
    assert len(logs) == 1 and "a log line" in logs[0].read_text()


@pytest.mark.parametrize("mode, why, grace", [("illegal", "illegal move", 10), ("silent", "nor after stop", 0.3),
                                              ("crash", "exited", 10)])
def test_a_uci_engine_that_fails_loses_the_game(no_tables, fake_engine, mode, why, grace):
    records = match.run_match(fake_engine(mode), tiny(1, no_tables), ["1. F b"], movetime=0.05, grace=grace)
    for r in records:
        assert r.termination.startswith("A forfeits: ") and why in r.termination, r.termination
        assert r.score_a == 0.0
    assert replayed(records[0]).moves == ["F", "b"]  # A (South) fails on its first move


def test_the_command_prints_the_openings_and_json(no_tables, capsys, tmp_path):
    pgn = tmp_path / "games.pgn"
    status = match.main([tiny(1, no_tables), tiny(1, no_tables), "--games", "2", "--opening-plies", "1",
                         "--seed", "5", "--movetime", "0.5", "--max-plies", "8", "--adjudicate", "draw",
                         "--json", "--pgn", str(pgn)])
    assert status == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["summary"]["games"] == 2 and data["summary"]["interval"] == "per game pair"
    assert data["openings"] == match.choose_openings(1, 1, seed=5, path=None)
    assert f"opening 1: {data['openings'][0]}" in captured.err
    assert "game 2/2" in captured.err
    text = pgn.read_text()
    assert text.count('[Event "awele match"]') == 2 and '[Termination "8 plies: adjudicated as a draw"]' in text


def test_bad_arguments_are_one_line_with_status_2(no_tables, capsys):
    assert match.main([tiny(1, no_tables), tiny(1, no_tables), "--games", "3"]) == 2
    assert "must be even" in capsys.readouterr().err
    assert match.main([f"awele:nope=1,tables={no_tables}", tiny(1, no_tables), "--games", "2"]) == 2
    assert "no option 'nope'" in capsys.readouterr().err


def test_the_dialect_diagram_lists_houses_stores_and_side():
    position = Position.from_string("1-2-3-4-5-6/0-0-0-0-0-1 N 10:16")
    assert match.dialect_diagram(position) == "1-2-3-4-5-6-0-0-0-0-0-1-10-16-N"


def test_awele_against_awele_over_the_protocol(no_tables):
    protocol = f"uci:{sys.executable} -m solver uci --dir {no_tables}"
    records = match.run_match(tiny(2, no_tables), protocol, ["1. F b"], movetime=0.2, max_plies=16, grace=30)
    for r in records:
        game = replayed(r)
        assert "forfeits" not in r.termination, r.termination
        assert r.plies == len(game.moves) == 16 or game.is_over()


def test_a_journal_resumes_a_match_and_refuses_another(no_tables, capsys, tmp_path):
    journal = tmp_path / "match.jsonl"
    common = ["--opening-plies", "1", "--movetime", "0.5", "--max-plies", "10", "--journal", str(journal)]
    assert match.main([tiny(1, no_tables), tiny(2, no_tables), "--games", "4", *common, "--json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    lines = journal.read_text().splitlines()
    assert json.loads(lines[0])["kind"] == match.JOURNAL_KIND and len(lines) == 5
    # A run killed after two games, in the middle of writing the third.
    journal.write_text("\n".join(lines[:3]) + "\n" + lines[3][:20])
    assert match.main([tiny(1, no_tables), tiny(2, no_tables), "--games", "4", *common, "--json"]) == 0
    captured = capsys.readouterr()
    resumed = json.loads(captured.out)
    assert "2 games played, 2 to play" in captured.err
    assert "game 1/4" not in captured.err and "game 3/4" in captured.err
    def played(games):  # the games without their timings (each move's milliseconds included)
        return [{**{k: v for k, v in g.items() if k not in ("seconds", "late")},
                 "moves": [entry[:2] + entry[3:] for entry in g["moves"]]} for g in games]

    assert played(resumed["games"]) == played(whole["games"])  # fixed depths: the same games again
    assert len(journal.read_text().splitlines()) == 5
    # Another match (other engines, or another move time) is refused.
    assert match.main([tiny(1, no_tables), tiny(1, no_tables), "--games", "4", *common]) == 2
    assert "journal of another match" in capsys.readouterr().err
    journal.write_text("not a journal\n")
    assert match.main([tiny(1, no_tables), tiny(2, no_tables), "--games", "4", *common]) == 2
    assert "is not a match journal" in capsys.readouterr().err


def test_late_moves_are_counted_against_five_percent_and_twenty_milliseconds():
    assert match.late_limit(1.0) == pytest.approx(1.07)
    records = [match.GameRecord(1, 1, "", "A", late={"A": 2, "B": 0}), match.GameRecord(2, 1, "", "B", late={"A": 1})]
    assert match.summarise(records)["late_moves"] == {"A": 3, "B": 0}


@pytest.mark.parametrize("spec", ["depth=-1", "depth=0", "time=nan", "time=-1", "time=inf", "nodes=0",
                                  "max_table_seeds=49", "threads=100000", "threads=0", "hash_mb=nan",
                                  "cycles=sideways", "weights_file=5", "weights_file=", "tables=A_FILE"])
def test_engine_specs_that_make_no_sense_are_refused(no_tables, tmp_path, spec):
    """depth=-1, time=nan or -1, nodes=0, max_table_seeds=49 and tables= a
    file ran whole matches; threads=100000 gave a traceback."""
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    spec = spec.replace("A_FILE", str(a_file))
    body = f"{spec},tables={no_tables}" if not spec.startswith("tables=") else spec
    with pytest.raises(match.MatchError) as caught:
        match.make_engine(f"awele:{body}")
    assert "\n" not in str(caught.value)


def test_a_uci_command_with_an_unbalanced_quote_is_refused():
    with pytest.raises(match.MatchError, match="cannot read its command line"):
        match.make_engine('uci:python -c "print(1)')


def test_a_uci_engine_printing_invalid_utf8_still_plays(no_tables, fake_engine):
    records = match.run_match(fake_engine("garbage"), tiny(1, no_tables), ["1. F b"], movetime=0.3, max_plies=12,
                              grace=5)
    assert len(records) == 2 and not any("forfeits" in r.termination for r in records)


@pytest.mark.parametrize("args, message", [
    (["--movetime", "inf"], "--movetime"), (["--movetime", "1e300"], "--movetime"),
    (["--movetime", "nan"], "--movetime"), (["--grace", "inf"], "--grace"), (["--grace", "nan"], "--grace"),
    (["--grace", "-5"], "--grace"), (["--opening-plies", "40"], "--opening-plies"),
    (["--concurrency", "100000"], "--concurrency"),
    (["--openings-file", "EMPTY"], "no openings"), (["--openings-file", "UNDECODABLE"], "not UTF-8"),
    (["--openings-file", "PIPE"], "not a regular file"), (["--openings-file", "FOLDER"], "not a regular file"),
    (["--pgn", "MISSING/games.pgn"], "does not exist"), (["--pgn", "FOLDER"], "cannot write the games"),
    (["--journal", "FOLDER"], "not a regular file"), (["--journal", "UNDECODABLE"], "not a match journal"),
])
def test_match_arguments_that_make_no_sense_are_one_line(no_tables, tmp_path, capsys, args, message):
    """Tracebacks for --movetime inf, an empty or undecodable --openings-file
    and --pgn in a missing folder; hangs for --movetime 1e300 and an openings
    file that is a pipe; --grace nan or -5 forfeited every game."""
    (tmp_path / "empty").write_text("# nothing\n\n")
    (tmp_path / "undecodable").write_bytes(b"1. F b \xff\xfe\n")
    os.mkfifo(tmp_path / "pipe")
    places = {"EMPTY": tmp_path / "empty", "UNDECODABLE": tmp_path / "undecodable", "PIPE": tmp_path / "pipe",
              "FOLDER": tmp_path, "MISSING": tmp_path / "missing"}
    for word, place in places.items():
        args = [arg.replace(word, str(place)) for arg in args]
    assert match.main([tiny(1, no_tables), tiny(1, no_tables), "--games", "2", "--max-plies", "4", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("match: error: ") and message in err[0], err


def test_the_examples_name_no_developers_folder():
    text = open(os.path.join(ROOT, "scripts", "match.py")).read()
    assert "/work/" not in text and "/home/" not in text


def test_a_match_at_fixed_nodes_plays_the_same_games_whatever_the_load(no_tables):
    # Nodes, not time: the in-process engine searches `nodes` per move and the
    # UCI one gets `go nodes N`, so the same match plays the same games again.
    engine = f"awele:max_table_seeds=0,hash_mb=1,threads=1,tables={no_tables}"
    protocol = f"uci:{sys.executable} -m solver uci --dir {no_tables}"
    first, again = (match.run_match(engine, protocol, ["1. F b"], movetime=0.01, max_plies=12, grace=30,
                                    nodes=3_000, uci_options=["Hash=1", "Threads=1", "UseTables=false"])
                    for _ in range(2))
    assert [r.record for r in first] == [r.record for r in again]
    for r in first:
        assert "forfeits" not in r.termination and not any(r.late.values()), r.termination
