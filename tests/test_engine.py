"""The one decision: tables or search, under which rule, with how much time
(solver.engine). The faces' tests check how they render these answers."""

import io
import json

import pytest
from click.testing import CliRunner

from solver import early, uci
from solver.cli import cli
from solver.engine import Budget, Engine
from solver.errors import CorruptTableError, GameOverError, MissingTableError, SearchError
from solver.position import Game, Position
from solver.report import MoveAnswer, PositionAnswer, Rule

# Two seeds that can only cycle: the tables' convention scores endless play 0;
# the true rule ends the cycle with both seeds on South's side, 25-23.
CYCLE = "1-0-0-0-0-1/0-0-0-0-0-0 S 23:23"
CYCLE_RECORD = "1. F a 2. A b 3. B c 4. C d 5. D e 6. E f"
# South takes every seed left: the same value under both rules.
EVERY_SEED = "0-3-0-0-0-2/1-1-0-1-0-1 S 18:21"


def test_the_budget_cuts_the_time_in_one_place():
    budget = Budget.of(2.0, started=10.0)
    assert (budget.end, budget.table_wait, budget.share(0.5), budget.seconds) == (12.0, 11.0, 11.0, 2.0)
    assert 11.0 < budget.answer_deadline < 12.0
    unlimited = Budget.of(None, started=10.0)
    assert unlimited.end is unlimited.table_wait is unlimited.answer_deadline is unlimited.left() is None


def test_the_position_is_answered_under_the_games_own_rule(tablebase, searcher):
    """The tables say +0 for the cycle (their even split); the engine gives
    the true rule's +2, exact, and says which rule each value holds under."""
    assert tablebase.value(CYCLE) == 0
    answer = Engine(tablebase, searcher).position(Game(Position.from_string(CYCLE)), time=5)
    assert isinstance(answer, PositionAnswer)
    assert (answer.value, answer.exact, answer.rule, answer.move) == (2, True, Rule.TRUE, "F")
    assert answer.outcome is not None and answer.outcome.totals == (25, 23)
    assert [(m.move, m.value, m.rule) for m in answer.moves] == [("F", 2, Rule.TRUE)]
    # Tables only (the page's quick look): the tables' convention, and said to be.
    quick = Engine(tablebase, searcher).position(CYCLE, search=False)
    assert (quick.value, quick.exact, quick.rule) == (0, True, Rule.SPLIT)
    # A value where one side takes every seed left holds under both rules.
    every = Engine(tablebase, searcher).position(EVERY_SEED, time=5)
    assert every.value == tablebase.value(EVERY_SEED) and every.exact


def test_the_position_above_the_tables_is_the_same_answer(tablebase, searcher):
    """With the tables held back (max_table_seeds 0) the graph and the search
    give the same +2 as the tables with the graph."""
    answer = Engine(tablebase, searcher, max_table_seeds=0).position(CYCLE, time=2)
    assert answer.source != "table" and (answer.value, answer.exact, answer.rule) == (2, True, Rule.TRUE)
    with pytest.raises(MissingTableError, match="max_tables=0"):
        Engine(tablebase, searcher, max_table_seeds=0).position(CYCLE, search=False)


def test_repeats_are_taken_from_the_game(tablebase, searcher):
    """The last move of the cycle repeats the start: it ends the game 25-23 by
    the true rule, which the record of the move says."""
    game = Game.from_record("F a A b B c C d D e E", Position.from_string("1-0-0-0-0-1/0-0-0-0-0-0 S"))
    (only,) = Engine(tablebase, searcher).position(game, time=2).moves
    assert only.move == "f" and only.repeats and only.value == -2 and only.rule is Rule.TRUE


def test_the_move_is_searched_under_the_true_rule_where_the_tables_value_may_change(tablebase, searcher):
    answer = Engine(tablebase, searcher).move(Game(Position.from_string(CYCLE)), time=2)
    assert isinstance(answer, MoveAnswer)
    assert (answer.move, answer.value, answer.exact, answer.rule) == ("F", 2, True, Rule.TRUE)
    assert answer.source != "table"
    # Where the table value holds under the true rule, the tables answer.
    table = Engine(tablebase, searcher).move(EVERY_SEED, time=2)
    assert table.source == "table" and table.exact and table.value == tablebase.value(EVERY_SEED)
    assert table.move in tablebase.best_moves(EVERY_SEED)


def test_a_table_value_holds_under_the_true_rule_only_where_no_repetition_can_change_it(searcher):
    """Engine.move and Engine.search (`awele search`) make one table choice with
    one label. South takes every seed left (+9 of 9): with no position before
    it that can come back, the value holds under the true rule as well (its
    graph proves the same +9), which Engine.move used to leave as the tables'
    convention; reached by a quiet move, a position of the game could come
    back, and both keep to the tables' convention."""
    from solver.repetition import true_rule_bounds

    engine = Engine.over(searcher)
    fresh = Game(Position.from_string(EVERY_SEED))
    after_quiet = Game.parse("c", "0-3-0-0-0-2/1-1-1-0-0-1 N 18:21")
    assert str(after_quiet.position) == EVERY_SEED
    moved, searched = engine.move(fresh, time=2), engine.search(fresh, time=2)
    assert (moved.source, moved.value, moved.exact, moved.rule) == ("table", 9, True, Rule.TRUE)
    assert (searched.source, searched.value, searched.move, searched.rule) == ("table", 9, moved.move, Rule.TRUE)
    proof = true_rule_bounds(fresh.position, (), searcher.tablebase.store.arrays())
    assert proof.status == "solved" and proof.lower == proof.upper == 9
    moved, searched = engine.move(after_quiet, time=2), engine.search(after_quiet, time=2)
    assert (moved.source, moved.value, moved.rule) == ("table", 9, Rule.SPLIT)
    assert (searched.source, searched.value, searched.move, searched.rule) == ("table", 9, moved.move, Rule.SPLIT)


def test_search_answers_from_the_tables_as_the_move_does_else_searches(searcher):
    """Engine.search decides as Engine.move: a table answer with its line to
    the end; where the true rule may change the table value, a search under it
    (the cycle's +2, proven); with the tables held back, a search."""
    engine = Engine.over(searcher)
    table = engine.search(EVERY_SEED)
    assert table.source == "table" and table.depth == 0 and table.line[:8] == list(engine.move(EVERY_SEED).line)
    cycle = engine.search(Game(Position.from_string(CYCLE)), time=2)
    assert cycle.source != "table" and (cycle.move, cycle.value, cycle.exact, cycle.rule) == ("F", 2, True, Rule.TRUE)
    held = Engine(searcher.tablebase, searcher, max_table_seeds=0).search(EVERY_SEED, depth=3)
    assert held.source == "search" and held.depth >= 1 and held.value == 9
    with pytest.raises(SearchError, match="needs a searcher"):
        Engine(searcher.tablebase, None).search(EVERY_SEED)


def test_a_damaged_layer_is_named_and_searched_without(tablebase, searcher, monkeypatch):
    def damaged(engine, game, deadline=None):
        raise CorruptTableError("/somewhere/awele-07.h5 is damaged: chunk 0 fails its CRC-32")

    monkeypatch.setattr(Engine, "table_move", damaged)
    told = []
    answer = Engine(tablebase, searcher, on_damage=told.append).move(EVERY_SEED, depth=3)
    assert answer.move in Position.from_string(EVERY_SEED).legal_moves() and answer.note is not None
    assert "layer 7" in answer.note and "/" not in answer.note
    assert len(told) == 1 and "awele-07.h5" in told[0]


def test_without_a_searcher_the_tables_or_the_search_by_captures_answer(tablebase):
    engine = Engine(tablebase, None)
    game = Game(Position.from_string(EVERY_SEED))
    assert engine.move(game, time=1, tables_ready=lambda deadline: True).source == "table"
    by_captures = engine.move(game, time=0.3, tables_ready=lambda deadline: False)
    assert by_captures.source == "search by captures" and by_captures.depth >= 1
    assert by_captures.move == early.search(early.EarlyGame.of(game), float("inf"), by_captures.depth).move


def test_limits_and_ended_games_are_refused(tablebase, searcher):
    engine = Engine(tablebase, searcher)
    with pytest.raises(SearchError, match="got -1"):
        engine.position(CYCLE, time=-1.0)
    with pytest.raises(SearchError, match="cycles"):
        engine.move(CYCLE, time=1, cycles="both")
    with pytest.raises(GameOverError):
        engine.move("0-0-0-0-0-0/0-0-0-0-0-0 S 24:24")


# Every face gives the engine's answer for the cycle: +2 for South ---------------


def test_best_says_plus_two_under_the_true_rule(table_dir):
    result = CliRunner().invoke(cli, ["best", CYCLE, "--dir", table_dir, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["value"], data["exact"], data["rule"], data["move"]) == (2, True, "true", "F")
    assert data["predicted_result"] == [25, 23]
    text = CliRunner().invoke(cli, ["best", CYCLE, "--dir", table_dir]).output
    assert "+2" in text and "under the true repetition rule" in text and "South 25 - North 23" in text


def test_analyse_says_plus_two_under_the_true_rule(table_dir):
    for tables in (["--max-tables", "0"], []):
        result = CliRunner().invoke(cli, ["analyse", CYCLE_RECORD, "--start", CYCLE, "--dir", table_dir,
                                          "--json", *tables])
        assert result.exit_code == 0, result.output
        first = json.loads(result.output)["plies"][0]
        assert (first["value_before"], first["exact"], first["cycles"]) == (2, True, "own"), first


def test_the_uci_engine_says_plus_two(table_dir):
    out = io.StringIO()
    engine = uci.UciEngine(io.BytesIO(b""), out, io.StringIO(), table_dir)
    for line in ("uci", "isready", f"position fen {uci.diagram(Position.from_string(CYCLE))}", "go movetime 2000"):
        engine.handle(line)
    engine._thinking.join(60)  # a liveness bound
    said = [line for line in out.getvalue().splitlines() if not line.startswith("option")]
    assert said[-1].startswith("bestmove F"), said
    assert any(line.startswith("info string value +2") and "exact" in line and "true repetition rule" in line
               for line in said), said
