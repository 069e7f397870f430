"""The read side's records (solver.report) and perfect play under the true
repetition rule over a game (Tablebase.best_move), as the CLI and the page use it."""

import json
import random

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from solver.cli import cli
from solver.position import Game, Position
from solver.report import EndReason, MoveValue, Outcome, Rule, best_of, ended_value, move_rows

# A game in which the tables' best move (the first move of Tablebase.line, by
# the tables' convention) would repeat a position of the game: by the true rule
# that repetition gives North 1 where d gives 3.
START = "0-0-0-1-0-0/0-0-1-1-0-0 S 0:0"
RECORD = "D d E e F f A a B c C"
# (conftest's tables to 12 seeds hold every position of these tests.)


def naive_predicted(position, value):
    """The final totals a value predicts, written out plainly."""
    south, north = position.captured
    mover_share = (position.seeds + value) / 2
    if position.to_move == "S":
        return south + mover_share, north + position.seeds - mover_share
    return south + position.seeds - mover_share, north + mover_share


@given(st.integers(0, 24), st.integers(0, 24), st.integers(0, 48), st.sampled_from("SN"), st.integers(-48, 48))
def test_a_predicted_outcome_splits_the_seeds_on_the_board_as_the_value_says(south, north, seeds, side, value):
    class Scored:
        to_move = side
        captured = (south, north)

    Scored.seeds = seeds
    outcome = Outcome.predicted(Scored, value)
    assert outcome.totals == naive_predicted(Scored, value)
    assert outcome.value_for(Scored) == value
    assert outcome.south + outcome.north == south + north + seeds
    expected = "S" if outcome.south > outcome.north else "N" if outcome.north > outcome.south else "draw"
    assert outcome.winner == expected
    mine, theirs = (south, north) if side == "S" else (north, south)
    margin = mine - theirs + value
    assert outcome.for_side(side) == ("win" if margin > 0 else "loss" if margin < 0 else "draw")
    whole = (seeds + value) % 2 == 0
    assert all(isinstance(x, int) for x in outcome.scores()) == whole


def test_end_reasons_are_their_text_in_json_and_in_the_game():
    game = Game.from_record("F a A b B c C d D e E", Position.from_string("1-0-0-0-0-1/0-0-0-0-0-0 S"))
    game.play("f")
    assert game.end_reason is EndReason.REPETITION and game.end_reason == "repetition"
    assert json.dumps({"end": game.end_reason}) == '{"end": "repetition"}'
    assert f"{game.end_reason}" == "repetition"
    assert Position.from_string("0-0-0-0-0-0/0-0-0-0-0-1 S 23:24").terminal_rule() is EndReason.NO_SEEDS_TO_MOVE


def test_a_move_value_renders_one_way():
    position = Position.from_string("0-0-0-0-1-2/1-0-0-0-0-0 N 20:23")
    record = MoveValue.of(position, "a", captured=0, value=4)
    row = record.as_dict()
    assert row == {"move": "a", "captured": 0, "value": 4, "exact": True, "rule": "split",
                   "predicted_result": [20, 27], "outcome": "win", "repeats": False, "distance": None}
    rows = move_rows([record, MoveValue.of(position, "a", 0, None, exact=False, rule=Rule.TRUE)])
    assert [r["best"] for r in rows] == [True, False] and rows[1]["outcome"] is None


def test_every_reader_gives_the_same_records(tablebase):
    rng = random.Random(5)
    for _ in range(40):
        houses = [0] * 12
        for _ in range(rng.randint(2, 8)):
            houses[rng.randrange(12)] += 1
        if all(houses[6:]):
            continue
        position = Position.from_mover_board(houses, "S", (0, 0))
        if position.is_over():
            continue
        moves = tablebase.moves(position)
        assert {m.move: m.value for m in moves} == tablebase.move_values(position)
        assert [m.move for m in best_of(moves)] == tablebase.best_moves(position)
        for m in moves:
            child = position.play(m.move)
            assert m.outcome.totals == pytest.approx(tablebase.predicted_result(child))
            assert m.exact and m.rule is Rule.SPLIT


def test_best_move_follows_the_true_rule_over_the_game(tablebase):
    game = Game.from_record(RECORD, Position.from_string(START))
    position = game.position
    line_move = tablebase.line(position, max_plies=1).moves[0]
    assert position.play(line_move).key() in {p.key() for p in game.positions}  # the tables' move repeats
    moves = {m.move: m for m in tablebase.game_moves(game)}
    assert moves[line_move].repeats and moves[line_move].rule is Rule.TRUE
    game.play(line_move)
    assert moves[line_move].value == ended_value(game.result(), position)
    game.undo()
    chosen = tablebase.best_move(game)
    assert chosen.value == max(m.value for m in moves.values()) > moves[line_move].value
    assert chosen.move != line_move and not chosen.repeats


def test_awele_play_does_not_repeat_the_game_when_the_true_rule_gives_less(table_dir, tablebase):
    runner = CliRunner()
    result = runner.invoke(cli, ["play", "--side", "S", "--position", START, "--moves", RECORD, "--dir", table_dir],
                           input="quit\n")
    assert result.exit_code == 0, result.output
    game = Game.from_record(RECORD, Position.from_string(START))
    expected = tablebase.best_move(game).move
    assert f"awele plays {expected}" in result.output
    assert f"awele plays {tablebase.line(game.position, max_plies=1).moves[0]}" not in result.output


def test_awele_best_names_the_true_rule_move_and_renders_records(table_dir, tablebase):
    result = CliRunner().invoke(cli, ["best", START, "--moves", RECORD, "--dir", table_dir, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    game = Game.from_record(RECORD, Position.from_string(START))
    assert data["move"] == tablebase.best_move(game).move
    # Every move as the game has it: `repeats` and a repetition's value by the true
    # rule (before, best rendered the tables' moves, `repeats` always false).
    in_game = tablebase.game_moves(game)
    assert [(m["move"], m["repeats"]) for m in data["moves"]] == [(m.move, m.repeats) for m in in_game]
    assert any(m.repeats for m in in_game)
    for row, move in zip(data["moves"], in_game):
        if move.repeats:
            assert (row["value"], row["rule"]) == (move.value, "true")
    assert data["source"] == "table"


def test_rule_reads_the_cycles_words_and_its_own():
    # `cycles` ("own"/"split": the documented argument, the UCI option, the JSON field) and a rule's text name one Rule.
    for rule in Rule:
        assert Rule.parse(rule) is rule and Rule.parse(rule.value) is rule and Rule.parse(rule.cycles) is rule
    assert Rule.parse("own") is Rule.TRUE and Rule.SPLIT.cycles == "split"
    assert "true repetition rule" in Rule.TRUE.describe() and "convention" in Rule.SPLIT.describe()
    with pytest.raises(ValueError):
        Rule.parse("draw")
