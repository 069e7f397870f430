"""scripts/repetition_losses.py: the verdict on a game lost by a repetition inside the tables."""

import importlib.util
import json
import os
import random

import pytest

from solver.position import Game
from solver.repetition import Bounds

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_path = os.path.join(ROOT, "scripts", "repetition_losses.py")
_spec = importlib.util.spec_from_file_location("repetition_losses", _path)
losses = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(losses)


def game_lost_by_repetition(max_seeds=10, seed=0):
    """A game from the opening, random moves, that ends by a repetition with a
    winner after the board came down to max_seeds seeds or fewer."""
    rng = random.Random(seed)
    while True:
        game = Game()
        while not game.is_over() and len(game.moves) < 600:
            game.play(rng.choice(game.legal_moves()))
        if (game.end_reason == "repetition" and game.outcome().winner != "draw"
                and min(p.seeds for p in game.positions) <= max_seeds):
            return game


class FakeBounds:
    """true_rule_bounds answering from a list, one Bounds a decision."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.calls = 0

    def __call__(self, position, history, tables, limit):
        self.calls += 1
        return self.answers.pop(0)


def loser_decisions(game, max_seeds):
    loser = "S" if game.outcome().winner == "N" else "N"
    return loser, [ply for ply in range(len(game.moves))
                   if game.positions[ply].to_move == loser and game.positions[ply].seeds <= max_seeds]


@pytest.fixture(scope="module")
def lost_game():
    return game_lost_by_repetition()


class NoTables:
    class store:
        @staticmethod
        def arrays():
            return None


def bounds_for(game, ply, lows_highs):
    """Bounds at decision `ply` giving each legal move the (low, high) of lows_highs(move, played)."""
    played = game.moves[ply]
    moves = {move: lows_highs(move, played) for move in game.positions[ply].legal_moves()}
    return Bounds("solved", max(low for low, _ in moves.values()), max(high for _, high in moves.values()),
                  moves, 10)


def need_at(game, ply):
    mine, theirs = game.positions[ply].mover_captured()
    return theirs - mine


def test_a_proven_saving_move_not_played_is_missed(lost_game, monkeypatch):
    loser, plies = loser_decisions(lost_game, 10)
    # the first decision with a choice; the decisions before it unsettled
    at = next(k for k, ply in enumerate(plies) if len(lost_game.positions[ply].legal_moves()) >= 2)
    ply = plies[at]
    need = need_at(lost_game, ply)
    undecided = [bounds_for(lost_game, earlier, lambda move, played: (-99, 99)) for earlier in plies[:at]]
    answer = bounds_for(lost_game, ply, lambda move, played: (need - 5, need - 1) if move == played
                        else (need, need + 2))
    fake = FakeBounds(undecided + [answer])
    monkeypatch.setattr(losses, "true_rule_bounds", fake)
    verdict = losses.judge(lost_game, loser, 10, NoTables, 100)
    assert verdict["verdict"] == "missed" and fake.calls == at + 1
    last = verdict["decisions"][-1]
    assert last["ply"] == ply and last["saving"] and lost_game.moves[ply] not in last["saving"]


def test_every_move_losing_first_is_lost_before_and_later_is_lost_later(lost_game, monkeypatch):
    loser, plies = loser_decisions(lost_game, 10)
    losing = [bounds_for(lost_game, ply, lambda move, played, ply=ply: (-99, need_at(lost_game, ply) - 1))
              for ply in plies]
    monkeypatch.setattr(losses, "true_rule_bounds", FakeBounds(losing))
    assert losses.judge(lost_game, loser, 10, NoTables, 100)["verdict"] == "lost before"
    if len(plies) < 2:
        return
    undecided = bounds_for(lost_game, plies[0], lambda move, played: (-99, 99))
    monkeypatch.setattr(losses, "true_rule_bounds", FakeBounds([undecided] + losing[1:]))
    verdict = losses.judge(lost_game, loser, 10, NoTables, 100)
    assert verdict["verdict"] == "lost later" and len(verdict["decisions"]) == 2


def test_graphs_too_large_leave_the_game_unsettled(lost_game, monkeypatch):
    loser, plies = loser_decisions(lost_game, 10)
    fake = FakeBounds([Bounds("too large", None, None, {}, 101)] * len(plies))
    monkeypatch.setattr(losses, "true_rule_bounds", fake)
    verdict = losses.judge(lost_game, loser, 10, NoTables, 100)
    assert verdict["verdict"] == "unsettled" and fake.calls == len(plies)
    assert [row["ply"] for row in verdict["decisions"]] == plies


def test_the_command_judges_a_journal_with_real_bounds(table_dir, tmp_path, capsys):
    game = game_lost_by_repetition(max_seeds=8, seed=1)
    winner = game.outcome().winner
    settings = {"kind": losses.JOURNAL_KIND, "engines": {"A": "a", "B": "b"}, "movetime": 1.0}
    record = {"number": 1, "south": "A", "record": game.record(), "result": list(game.result()),
              "winner": winner, "termination": "repetition"}
    journal = tmp_path / "match.jsonl"
    journal.write_text(json.dumps(settings) + "\n" + json.dumps(record) + "\n")
    assert losses.main([str(journal), "--tables", table_dir, "--max-seeds", "12", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["summary"]["games_lost_by_repetition"] == 1
    (row,) = report["games"]
    assert row["loser"] == ("A" if winner == "N" else "B")
    last = row["decisions"][-1]
    if row["verdict"] in ("lost before", "lost later"):
        assert last["bounds"][1] < last["need"]
    elif row["verdict"] == "missed":
        assert last["moves"][last["played"]][1] < last["need"] <= max(low for low, _ in last["moves"].values())
    # the other engine lost nothing
    assert losses.main([str(journal), "--tables", table_dir, "--max-seeds", "12", "--engine",
                        "B" if row["loser"] == "A" else "A", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["games_lost_by_repetition"] == 0


def test_worse_moves_bounds_the_moves_the_tables_value_below_their_best(table_dir, tmp_path, capsys):
    """--worse-moves: every decision of the engine in every game; those whose
    move the tables value below another are bounded, and "proven worse" is
    the move played's upper bound below the position's lower bound."""
    game = game_lost_by_repetition(max_seeds=8, seed=2)  # random moves: many below the tables' best
    settings = {"kind": losses.JOURNAL_KIND, "engines": {"A": "a", "B": "b"}, "movetime": 1.0}
    said = [[ply, "A" if ply % 2 == 0 else "B", 5, 3, 0, f"move {ply}"] for ply in range(len(game.moves))]
    record = {"number": 1, "south": "A", "record": game.record(), "result": list(game.result()),
              "winner": game.outcome().winner, "termination": "repetition", "moves": said}
    journal = tmp_path / "match.jsonl"
    journal.write_text(json.dumps(settings) + "\n" + json.dumps(record) + "\n")
    assert losses.main([str(journal), "--tables", table_dir, "--max-seeds", "12", "--worse-moves", "--engine", "A",
                        "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    summary, rows = report["summary"], report["decisions"]
    south_plies = [ply for ply in range(len(game.moves))
                   if game.positions[ply].to_move == "S" and game.positions[ply].seeds <= 12]
    assert summary["decisions"] == len(south_plies)
    assert summary["below_the_tables_best"] == len(rows) > 0
    assert summary["solved"] == sum(row["moves"] is not None for row in rows)
    assert summary["proven_worse"] == sum(row["proven_worse"] for row in rows)
    for row in rows:
        assert row["ply"] in south_plies and row["journal"] == said[row["ply"]]
        assert row["tables"][row["played"]] < max(row["tables"].values())
        if row["moves"] is not None:
            lower = max(low for low, _ in row["moves"].values())
            assert row["proven_worse"] == (row["moves"][row["played"]][1] < lower)
    with pytest.raises(SystemExit):
        losses.main([str(journal), "--tables", table_dir, "--worse-moves"])  # which engine?
