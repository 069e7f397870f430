"""Game analysis: per-ply values against the tables, a naive reference and the
true-rule reference above the tables; ends of games, errors, the CLI, the doc."""

import json
import os
import random
import re
import shlex

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from naive import naive_legal_moves, naive_play, naive_terminal_value
from naive_search import TooLarge, naive_true_value
from naive_solver import naive_value

from solver import Game, Position
from solver.analysis import MISTAKE_SEEDS, Analysis, analyse, mark_move, outcome_class
from solver.cli import cli
from solver.errors import InvalidArgumentError, InvalidRecordError, MissingTableError
from solver.probe import Tablebase
from solver.search import Searcher

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAIVE_LAYERS = 6  # the naive solver takes seconds a layer from 7 seeds on
SEARCHED_ABOVE = 2  # search tests answer up to 2 seeds from the tables, 3 and 4 by search
# (the true rule is proven quickly there; from 5 seeds on cycles often need more time)
# 8 seeds, South to move, 24:16: E keeps +2, C gives away 2 (still a win), F gives
# away 4 (still a win), B gives away 10 and only draws.
MARKED = "0-1-1-0-1-1/0-2-0-1-0-1 S 24:16"


def random_position(seeds, rng, side=None, captured=(0, 0)):
    cuts = sorted(rng.randint(0, seeds) for _ in range(11))
    houses = [b - a for a, b in zip([0] + cuts, cuts + [seeds])]
    return Position(houses, side or rng.choice("SN"), captured)


def random_game(position, rng, plies):
    """A game of up to `plies` random legal moves from `position`."""
    game = Game(position)
    while len(game.moves) < plies and not game.is_over():
        game.play(rng.choice(game.legal_moves()))
    return game


def plain(data):
    """Whether `data` is built from JSON's own types only (no numpy scalars)."""
    if data is None or type(data) in (bool, int, float, str):
        return True
    if type(data) is list:
        return all(plain(x) for x in data)
    if type(data) is dict:
        return all(type(k) is str and plain(v) for k, v in data.items())
    return False


@pytest.fixture(scope="module")
def low_tables(table_dir):
    """A Tablebase and a Searcher holding layers 0..2 only (nothing else loaded)."""
    with Tablebase(table_dir) as opened:
        yield opened, Searcher(opened, max_table_seeds=SEARCHED_ABOVE, hash_mb=8)


# From the tables ------------------------------------------------------------------


def test_table_plies_agree_with_the_tablebase(tablebase):
    rng = random.Random(11)
    checked = 0
    for _ in range(25):
        game = random_game(random_position(rng.randint(3, 12), rng), rng, 12)
        if not game.moves:
            continue
        report = analyse(game, tablebase, time_per_ply=None)
        assert [p.move for p in report.plies] == game.moves
        for ply, before in zip(report.plies, game.positions):
            move_values = tablebase.move_values(before)
            assert ply.position == str(before) and ply.seeds == before.seeds
            assert ply.source == "table" and ply.exact
            # Without time for the true rule's graph, a value holds under it only
            # where a capture leads to a side taking every seed left or none.
            for score in ply.moves:
                taking_all = abs(score.captured - score.value) == ply.seeds - score.captured
                assert (score.rule == "true") == (score.captured > 0 and taking_all)
            assert ply.cycles == ("own" if all(score.rule == "true" for score in ply.moves) else "split")
            assert ply.value_before == tablebase.value(before) == ply.best_value
            assert {m.move: m.value for m in ply.moves} == move_values
            assert ply.value_after == move_values[ply.move]
            assert ply.given_away == max(move_values.values()) - move_values[ply.move]
            assert ply.best_moves == tablebase.best_moves(before)
            checked += 1
        assert report.exact and report.start == str(game.start) and report.position == str(game.position)
    assert checked > 100


def test_move_values_agree_with_the_naive_solver(tablebase):
    rng = random.Random(5)
    checked = 0
    for _ in range(30):
        game = random_game(random_position(rng.randint(2, NAIVE_LAYERS), rng), rng, 8)
        for ply, before in zip(analyse(game, tablebase, time_per_ply=None).plies, game.positions):
            board = [int(b) for b in before.mover_board()]
            reference = {}
            for house in naive_legal_moves(board):
                captured, child = naive_play(board, house)
                reference["ABCDEF"[house] if before.to_move == "S" else "abcdef"[house]] = (
                    captured - naive_value(child))
            assert {m.move: m.value for m in ply.moves} == reference, ply.position
            assert ply.value_before == naive_value(board)
            checked += 1
    assert checked > 50


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seeds=st.integers(2, 12), side=st.sampled_from("SN"), south=st.integers(0, 18), north=st.integers(0, 18),
       data=st.data())
def test_properties_of_random_games(tablebase, seeds, side, south, north, data):
    rng = random.Random(data.draw(st.integers(0, 10**6)))
    game = Game(random_position(seeds, rng, side, (south, north)))
    for _ in range(data.draw(st.integers(1, 16))):
        if game.is_over():
            break
        game.play(data.draw(st.sampled_from(game.legal_moves())))
    if game.moves:
        report = analyse(game.record(), tablebase, time_per_ply=None, start=game.start)
    else:  # the start is already over
        report = analyse(game, tablebase, time_per_ply=None)
    assert [p.move for p in report.plies] == game.moves
    for ply in report.plies:
        assert ply.given_away >= 0
        assert (ply.given_away == 0) == (ply.move in ply.best_moves) == (ply.mark is None)
        assert ply.value_before == ply.best_value == max(m.value for m in ply.moves)
        assert ply.value_after == next(m.value for m in ply.moves if m.move == ply.move)
    for summary, letter in ((report.south, "S"), (report.north, "N")):
        mine = [p for p in report.plies if p.side[0] == letter]
        assert summary.moves == len(mine)
        assert summary.given_away == sum(p.given_away for p in mine)
        assert summary.best_moves == sum(p.given_away == 0 for p in mine)
        assert summary.blunders == sum(p.mark == "blunder" for p in mine)
        assert summary is report.summary(letter)
    assert report.over == game.is_over() and report.end_reason == game.end_reason
    assert report.result == game.result()
    assert plain(report.as_dict())


def test_marks_follow_the_seeds_given_away_and_the_outcome(tablebase):
    start = Position.from_string(MARKED)
    values = tablebase.move_values(start)
    assert values == {"B": -8, "C": 0, "E": 2, "F": -2}
    marks = {move: analyse(f"1. {move}", tablebase, start=start).plies[0].mark for move in values}
    assert marks == {"B": "blunder", "C": "inaccuracy", "E": None, "F": "mistake"}
    # South has 8 seeds more: +2 wins, -8 only draws.
    assert outcome_class(start, 2) == 1 and outcome_class(start, -8) == 0 and outcome_class(start, -9) == -1
    # An estimate that crosses the outcome by little is not a blunder.
    assert mark_move(start, -6, -8, exact=True) == "blunder"
    assert mark_move(start, -6, -8, exact=False) == "inaccuracy"
    assert mark_move(start, -6, -6 - MISTAKE_SEEDS, exact=False) == "blunder"


# Ends of games --------------------------------------------------------------------


@pytest.mark.parametrize(
    "start, record, reason, result",
    [
        ("1-0-0-0-0-0/1-0-0-0-0-0 S", "A a B b C c D d E e F f", "repetition", (1, 1)),
        ("0-0-0-0-0-3/1-1-2-1-0-0 S 5:3", "1. F", "no feeding move", (12, 4)),
        ("0-0-0-0-0-3/1-1-2-1-0-0 S 20:3", "1. F", "25 seeds", (27, 4)),
    ],
)
def test_games_that_end(tablebase, start, record, reason, result):
    report = analyse(record, tablebase, start=start)
    assert report.over and report.end_reason == reason and report.result == result
    assert len(report.plies) == len(record.split()) - record.count(".")
    assert report.as_dict()["result"] == list(result)


def test_a_game_without_moves_and_a_game_that_goes_on(tablebase):
    empty = analyse(Game(Position.from_string("0-1-0-2-0-0/1-1-0-0-0-1 S")), tablebase)
    assert isinstance(empty, Analysis) and empty.plies == [] and not empty.over and empty.exact
    assert empty.south.moves == empty.north.moves == 0
    going = analyse("1. B b", tablebase, start="0-1-0-2-0-0/1-1-0-0-0-1 S")
    assert not going.over and going.result is None and going.end_reason is None
    assert [p.notation.rstrip("?!") for p in going.plies] == ["1. B", "1... b"]
    north_first = analyse("1... a 2. D", tablebase, start="0-1-0-2-0-0/1-1-0-0-0-1 N")
    assert [(p.move_number, p.side) for p in north_first.plies] == [(1, "North"), (2, "South")]


def test_bad_records_and_arguments_raise_named_errors(tablebase):
    with pytest.raises(InvalidRecordError, match="move 3"):
        analyse("1. F b 2. F", tablebase)  # F is empty
    with pytest.raises(InvalidRecordError, match="no moves"):
        analyse("  ", tablebase)
    with pytest.raises(InvalidRecordError):
        analyse("1. F g", tablebase)
    with pytest.raises(InvalidRecordError):
        analyse(42, tablebase)
    with pytest.raises(InvalidRecordError, match="over"):
        analyse("1. F A", tablebase, start="0-0-0-0-0-3/1-1-2-1-0-0 S 20:3")
    with pytest.raises(InvalidArgumentError):
        analyse(Game(), tablebase, start=Position.initial())
    for time_per_ply in (0, -1, float("inf"), float("nan"), True, "1"):
        with pytest.raises(InvalidArgumentError):
            analyse("1. F", tablebase, time_per_ply=time_per_ply)
    for max_tables in (-1, 49, 2.0, True):
        with pytest.raises(InvalidArgumentError):
            analyse("1. F", tablebase, max_tables=max_tables)
    with pytest.raises(MissingTableError, match="searching is off"):
        analyse("1. F", tablebase, time_per_ply=None)
    with pytest.raises(MissingTableError, match="max_tables=4"):
        analyse("1. B", tablebase, time_per_ply=None, max_tables=4, start=MARKED)


# Above the tables ----------------------------------------------------------------------


def true_rule_move_values(game, moves=None, budget=20_000):
    """The value of each of `moves` (default: every legal move) under the true
    repetition rule all the way down, with the game's history, from the naive
    reference (a position reached by a capture valued the same way, with no
    history); None for a move whose reference tree is larger than `budget`."""
    position = game.position
    history = []
    for earlier in reversed(game.positions):
        if earlier.seeds != position.seeds:
            break
        history.insert(0, tuple(int(b) for b in earlier.mover_board()))
    keys = {p.key() for p in game.positions}
    memo = {}
    values = {}
    for move in position.legal_moves() if moves is None else moves:
        child, captured = position.play_capture(move)
        board = [int(b) for b in child.mover_board()]
        terminal = naive_terminal_value(board)
        try:
            if terminal is not None:
                values[move] = captured - terminal
            elif captured:
                values[move] = captured - naive_true_value(board, budget=budget, memo=memo)
            elif child.key() in keys:  # the game ends: each side takes its own seeds
                values[move] = -(sum(board[:6]) - sum(board[6:]))
            else:
                values[move] = -naive_true_value(board, history=history, budget=budget, memo=memo)
        except TooLarge:
            values[move] = None
    return values


def brute_true_values(game, budget=200_000):
    """Every legal move's value in the position `game` is in, under the rules of
    RULES.md with the game's history: a plain game-tree search over absolute
    positions (the twelve houses A..F a..f and the side to move) in which a
    position met a second time ends the game, each side taking the seeds on
    its own side. Values in the tables' unit (the seeds the mover captures
    from there on minus the opponent's; the 25-seed stop left out, as in the
    tables). Independent of the package but for reading `game`. Raises
    TooLarge past `budget` nodes."""
    def view(houses, side):  # absolute houses <-> the mover's view (an involution)
        return tuple(houses) if side == "S" else tuple(houses[6:]) + tuple(houses[:6])

    other = {"S": "N", "N": "S"}
    nodes = [0]

    def value(houses, side, seen):
        nodes[0] += 1
        if nodes[0] > budget or len(seen) > 300:
            raise TooLarge
        board = list(view(houses, side))
        terminal = naive_terminal_value(board)
        if terminal is not None:
            return terminal
        return max(score for score in move_scores(houses, side, seen).values())

    def move_scores(houses, side, seen):
        board = list(view(houses, side))
        scores = {}
        for house in naive_legal_moves(board):
            captured, child = naive_play(board, house)
            after = (view(child, other[side]), other[side])
            if after in seen:  # a repetition: the game ends, each side takes its own seeds
                scores[house] = captured - (sum(child[:6]) - sum(child[6:]))
            else:
                scores[house] = captured - value(after[0], after[1], seen | {after})
        return scores

    position = game.position
    seen = {(tuple(int(h) for h in p.houses), p.to_move) for p in game.positions}
    letters = "ABCDEF" if position.to_move == "S" else "abcdef"
    houses = tuple(int(h) for h in position.houses)
    return {letters[house]: score for house, score in move_scores(houses, position.to_move, seen).items()}


# Forced cycles: every ply's moves few, the game back at its start after a few plies.
FORCED_CYCLES = [
    ("1-0-0-0-0-1/0-0-0-0-0-0 S 23:23", "1. F a 2. A b 3. B c 4. C d 5. D e 6. E f"),
    ("0-0-0-0-0-0/1-0-0-0-0-1 N 23:23", "1... f 2. A a 3. B b 4. C c 5. D d 6. E e 7. F"),
    ("0-0-0-1-0-0/0-0-0-1-0-0 S", "1. D d 2. E e 3. F f 4. A a 5. B b 6. C c"),
    ("1-0-0-0-0-0/1-0-0-0-0-0 S", "1. A a 2. B b 3. C c 4. D d 5. E e 6. F f"),
    ("0-0-1-0-0-1/0-0-0-0-0-0 S", "1. F a 2. C b 3. D c 4. E d 5. F"),
]


@pytest.mark.parametrize("max_tables", [0, None])
@pytest.mark.parametrize("start, record", FORCED_CYCLES)
def test_forced_cycles_are_valued_by_the_game_rule(table_dir, start, record, max_tables):
    """A small forced cycle, from the tables (max_tables None) or searched
    (max_tables 0): every ply exact under the true rule with the game's
    history, each move worth what a brute force of the game's rules gives."""
    with Tablebase(table_dir) as tables:
        report = analyse(record, tables, time_per_ply=0.5, max_tables=max_tables, start=start)
    game = Game(Position.from_string(start))
    for ply in report.plies:
        reference = brute_true_values(game)
        assert {m.move: m.value for m in ply.moves} == reference, (ply.notation, ply.position)
        assert ply.exact and ply.cycles == "own" and all(m.rule == "true" for m in ply.moves), ply.notation
        assert ply.value_before == max(reference.values())
        game.play(ply.move)


def test_the_issue_forced_cycle_is_two_for_south(table_dir):
    """`1-0-0-0-0-1/0-0-0-0-0-0 S 23:23`: the forced cycle ends by repetition
    with both seeds on South's side, so South's plies are +2, North's -2."""
    start, record = FORCED_CYCLES[0]
    result = CliRunner().invoke(cli, ["analyse", record, "--start", start, "--max-tables", "0", "--dir", table_dir,
                                      "--json"])
    assert result.exit_code == 0, result.output
    plies = json.loads(result.output)["plies"]
    assert [p["value_before"] for p in plies] == [2, -2] * 6
    assert all(p["exact"] and p["cycles"] == "own" for p in plies)


def test_best_gives_the_true_rule_where_the_tables_convention_differs(table_dir):
    """`awele best` on the forced cycle: the tables say +0, a draw by their
    even split; the game's rule makes it +2 (South 25 - North 23), which
    best now gives, saying under which rule. A value where one side takes
    every seed left holds under both rules."""
    start = FORCED_CYCLES[0][0]
    result = CliRunner().invoke(cli, ["best", start, "--dir", table_dir])
    assert result.exit_code == 0, result.output
    ends = next(line for line in result.output.splitlines() if line.startswith("perfect play ends"))
    assert "South wins" in ends and "convention" not in ends, ends
    assert "under the true repetition rule" in result.output
    result = CliRunner().invoke(cli, ["best", "0-3-0-0-0-2/1-1-0-1-0-1 S 18:21", "--dir", table_dir])
    ends = next(line for line in result.output.splitlines() if line.startswith("perfect play ends"))
    assert "convention" not in ends, ends


@pytest.mark.slow  # 45 s from a fresh clone: CI runs it on its slow line (.ci/run)
def test_exact_values_under_the_true_rule_agree_with_the_brute_force(table_dir):
    """Random small games, from the tables and searched: a move's value shown
    exact under the true rule is the brute force's; a ply says "own" only
    when all its values are under the true rule."""
    rng = random.Random(7)
    compared = 0
    with Tablebase(table_dir) as tables:
        for _ in range(24):
            game = random_game(random_position(rng.choice([2, 3]), rng), rng, 10)
            if not game.moves:
                continue
            report = analyse(game, tables, time_per_ply=0.2, max_tables=rng.choice([0, 1, None]))
            replay = Game(game.start)
            for ply in report.plies:
                assert ply.cycles == ("own" if all(m.rule == "true" for m in ply.moves) else "split")
                try:
                    reference = brute_true_values(replay, budget=50_000)
                except TooLarge:
                    reference = None
                for score in ply.moves:
                    if reference is not None and score.exact and score.rule == "true":
                        assert score.value == reference[score.move], (ply.position, score, game.record())
                        compared += 1
                replay.play(ply.move)
    assert compared > 60


def test_plies_above_the_tables_are_searched_with_the_true_rule(low_tables):
    tables, searcher = low_tables
    rng = random.Random(2)
    searched = compared = 0
    for _ in range(8):
        game = random_game(random_position(rng.choice([3, 4]), rng), rng, 8)
        report = analyse(game, tables, searcher, time_per_ply=0.1, max_tables=SEARCHED_ABOVE)
        replay = Game(game.start)
        for ply in report.plies:
            above = replay.position.seeds > SEARCHED_ABOVE
            assert ply.source == ("search" if above else "table")
            assert ply.cycles == ("own" if all(m.rule == "true" for m in ply.moves) else "split")
            assert ply.value_before == ply.best_value == max(m.value for m in ply.moves)
            assert ply.exact == all(m.exact for m in ply.moves)
            if above:
                searched += 1
                proven = [m.move for m in ply.moves if m.exact and m.rule == "true"]
                reference = true_rule_move_values(replay, proven, budget=5_000)
                for score in ply.moves:
                    if score.move in proven and reference[score.move] is not None:
                        assert score.value == reference[score.move], (ply.position, score, game.record())
                        compared += 1
            replay.play(ply.move)
        assert report.exact == all(p.exact for p in report.plies)
    assert searched > 10 and compared > 20


def test_the_history_of_the_game_counts_above_the_tables(table_dir):
    """After 1. D d 2. E e 3. F, North's forced f leads back towards positions
    the game has already met: with the true rule its value differs from the
    same position's value in a fresh game, and the analysis gives the former."""
    start = Position.from_string("0-0-0-1-0-0/0-0-0-1-0-0 S")
    record = "1. D d 2. E e 3. F f"
    with Tablebase(table_dir) as tables:  # a Searcher made by analyse, with layers 0..1
        report = analyse(record, tables, time_per_ply=0.2, max_tables=1, start=start)
    assert all(p.source == "search" and p.cycles == "own" for p in report.plies)
    game = Game(start)
    for ply in report.plies:
        reference = true_rule_move_values(game)
        assert ply.exact
        assert {m.move: m.value for m in ply.moves} == reference
        game.play(ply.move)
    last = report.plies[-1]
    fresh = true_rule_move_values(Game(Position.from_string(last.position)))
    assert last.value_after != fresh["f"]


def test_estimates_far_above_the_tables(tablebase):
    report = analyse("1. F b", tablebase, time_per_ply=0.05)
    assert [p.source for p in report.plies] == ["search", "search"]
    assert not report.exact and not report.south.exact
    assert all(p.seeds == 48 and not p.exact for p in report.plies)
    assert all(p.given_away >= 0 and p.best_moves for p in report.plies)
    assert plain(report.as_dict())


def test_a_folder_without_tables_is_searched(tmp_path):
    seen = []
    report = analyse("1. E", str(tmp_path), time_per_ply=0.05, start=MARKED, progress=seen.append)
    assert seen == report.plies and report.plies[0].source == "search"
    assert report.plies[0].moves and report.plies[0].given_away >= 0


# The command line ---------------------------------------------------------------------


def test_cli_text_and_json(table_dir):
    runner = CliRunner()
    result = runner.invoke(cli, ["analyse", "1. B", "--start", MARKED, "--dir", table_dir])
    assert result.exit_code == 0, result.output
    assert "1. B??" in result.output and "table" in result.output
    assert "South: 1 move, 0 best, gave away 10 (0 ?!, 0 ?, 1 ??)" in result.output
    result = runner.invoke(cli, ["analyze", "1. F", "--start", MARKED, "--dir", table_dir, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    ply = data["plies"][0]
    assert ply["mark"] == "mistake" and ply["notation"] == "1. F?" and ply["given_away"] == 4
    assert ply["best_moves"] == ["E"] and ply["exact"] is True and ply["source"] == "table"
    assert data["summary"]["South"]["mistakes"] == 1 and data["over"] is False


def test_cli_searches_above_the_tables_and_marks_estimates(table_dir):
    result = CliRunner().invoke(cli, ["analyse", "1. F b", "--dir", table_dir, "--time-per-ply", "0.05"])
    assert result.exit_code == 0, result.output
    assert "search" in result.output and "~" in result.output and "the game goes on" in result.output


def test_the_cli_prints_each_row_as_its_ply_is_done(table_dir, monkeypatch):
    """The rows come out one by one, from analyse's progress callback: when the
    third ply fails, the first two are already printed (before: nothing until
    the whole game was analysed)."""
    from solver import analysis
    from solver.errors import SearchError

    judged = []
    scores = analysis._judged

    def failing_third(engine, game, time_per_ply):
        judged.append(len(game.moves))
        if len(judged) == 3:
            raise SearchError("stopped at the third ply")
        return scores(engine, game, time_per_ply)

    monkeypatch.setattr(analysis, "_judged", failing_third)
    result = CliRunner().invoke(cli, ["analyse", "1. C d 2. D e", "--start", MARKED, "--dir", table_dir,
                                      "--max-tables", "8"])
    assert result.exit_code == 2, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("start: " + MARKED) and lines[1].split()[:2] == ["ply", "move"]
    assert [line.split()[:2] for line in lines[2:4]] == [["1", "1."], ["2", "1..."]]
    assert "stopped at the third ply" in lines[-1] and len(lines) == 5


def test_progress_gets_each_ply_before_the_next_is_judged(table_dir, monkeypatch):
    from solver import analysis

    events = []
    scores = analysis._judged
    monkeypatch.setattr(analysis, "_judged",
                        lambda engine, game, seconds: events.append("judge") or scores(engine, game, seconds))
    with Tablebase(table_dir) as tables:
        report = analyse("1. C d 2. D e", tables, start=MARKED, time_per_ply=None,
                         progress=lambda ply: events.append(ply.notation))
    assert events == ["judge", "1. C?!", "judge", "1... d", "judge", "2. D??", "judge", "2... e??"]
    assert [ply.notation for ply in report.plies] == events[1::2]


@pytest.mark.parametrize(
    "args",
    [
        ["1. F b 2. F"],
        [""],
        ["1. F zz"],
        ["1. F", "--start", "1-2-3"],
        ["1. F", "--start", ""],
        ["1. F", "--time-per-ply", "0"],
        ["1. F", "--time-per-ply", "inf"],
        ["1. F", "--max-tables", "49"],
    ],
)
def test_cli_errors_are_one_line(table_dir, args):
    result = CliRunner().invoke(cli, ["analyse", *args, "--dir", table_dir])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("awele: error:") and "Traceback" not in result.output


# The documentation ------------------------------------------------------------------


def _analysis_doc():
    return open(os.path.join(ROOT, "docs", "ANALYSIS.md")).read()


def test_the_short_example_in_the_doc_is_the_real_output(table_dir):
    text = _analysis_doc()
    command, shown = re.search(r"^\$ awele (analyse .*?)\n(.*?)\n```", text, re.M | re.S).groups()
    args = shlex.split(command)
    assert "--max-tables" in args  # so that the header names the same tables as with table_dir
    result = CliRunner().invoke(cli, [*args, "--dir", table_dir])
    assert result.exit_code == 0, result.output
    assert result.output.rstrip("\n") == shown


def test_the_python_example_in_the_doc_runs(table_dir, tmp_path, monkeypatch):
    os.symlink(table_dir, tmp_path / "databases")
    monkeypatch.chdir(tmp_path)
    block = re.search(r"```python\n(.*?)```", _analysis_doc(), re.S).group(1)
    namespace = {}
    exec(compile(block, "docs/ANALYSIS.md", "exec"), namespace)
    assert [p.notation for p in namespace["report"].plies] == ["1. C?!", "1... d", "2. D??", "2... e??"]


def test_the_record_in_the_doc_replays_to_its_stated_end():
    text = _analysis_doc().split("## A worked example")[1]
    record = re.search(r'^\$ awele analyse "(1\. F b 2\. D a [^"]+)"', text, re.M).group(1)
    stated = re.search(r"^game over \((.+?)\): South (\d+) - North (\d+)", text, re.M)
    game = Game.from_record(record)
    assert game.is_over() and game.end_reason == stated.group(1)
    assert game.result() == (int(stated.group(2)), int(stated.group(3)))
    shown = re.findall(r"^ +(\d+)  (\d+\.(?:\.\.)? [A-Fa-f])", text, re.M)
    assert [int(n) for n, _ in shown] == list(range(1, len(game.moves) + 1))
    assert [m[-1] for _, m in shown] == game.moves


# Time given up: a best move that converts slower, or gives in sooner (issue 51) --------------

HOLDING_OUT = "0-0-0-1-6-1/1-0-0-0-0-0 S 15:24"  # -9 for South: D, E and F keep it, D holding out longest


def test_a_best_move_that_gives_in_sooner_is_said(table_dir):
    with Tablebase(table_dir) as tablebase:
        keeping = {m.move: m.distance for m in tablebase.moves(HOLDING_OUT) if m.value == -9}
    assert sorted(keeping) == ["D", "E", "F"] and keeping["D"] > keeping["F"] > keeping["E"]
    for move in "DEF":
        ply = analyse(f"1. {move}", table_dir, start=HOLDING_OUT, time_per_ply=None).plies[0]
        assert ply.given_away == 0 and ply.distance == keeping[move]
        assert ply.time_given == keeping["D"] - keeping[move]
        assert ply.as_dict()["time_given"] == ply.time_given
    result = CliRunner().invoke(cli, ["analyse", "1. E", "--start", HOLDING_OUT, "--dir", table_dir])
    assert f"gives in {keeping['D'] - keeping['E']} plies sooner" in result.output, result.output


def test_time_given_is_none_without_distances_or_at_zero():
    from solver.analysis import time_given
    from solver.report import MoveValue

    assert time_given([MoveValue("A", 0, 2, distance=3), MoveValue("B", 0, 2, distance=1)], "A") == 2
    assert time_given([MoveValue("A", 0, -2, distance=3), MoveValue("B", 0, -2, distance=5)], "A") == 2
    assert time_given([MoveValue("A", 0, 2, distance=None), MoveValue("B", 0, 2, distance=1)], "A") is None
    assert time_given([MoveValue("A", 0, 0), MoveValue("B", 0, 0)], "A") is None
    assert time_given([MoveValue("A", 0, 1, distance=3), MoveValue("B", 0, 2, distance=1)], "A") is None
