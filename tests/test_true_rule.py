"""The true repetition rule inside the tables: a table value of 0 or less, which
may rest on endless play, is searched under the true rule with the game's
history, the tables' values only the estimates of the horizon; a proof there
is exact under the true rule (against a naive reference that uses no table).
Each root goes through the engine's decision (Engine.search, as `awele search`)."""

import random

from naive_search import TooLarge, naive_true_value
from test_search import random_position

from solver.engine import Engine
from solver.position import Game, Position
from solver.report import true_rule_may_change


def test_which_table_values_the_true_rule_may_change():
    assert true_rule_may_change(0, 8) and true_rule_may_change(-3, 8) and true_rule_may_change(2, 11)
    assert not true_rule_may_change(8, 8) and not true_rule_may_change(-8, 8)  # every seed taken, no repetition
    assert not true_rule_may_change(None, 8)


def test_proofs_inside_the_tables_hold_under_the_true_rule(searcher, tablebase):
    rng = random.Random(11)
    memo: dict = {}
    compared = 0
    for _ in range(300):
        position = random_position(rng.choice([2, 3]), rng)
        if position.is_over() or not true_rule_may_change(tablebase.value(position), position.seeds):
            continue
        try:
            expected = naive_true_value(position.mover_board().tolist(), budget=20_000, memo=memo)
        except TooLarge:
            continue
        result = Engine.over(searcher).search(Game(position), nodes=200_000)
        assert result.source in ("search", "component"), str(position)
        if result.exact:
            assert result.rule == "true" and result.value == expected, str(position)
            compared += 1
    assert compared > 20


def test_a_forced_cycle_the_tables_split_is_won_under_the_true_rule(searcher, tablebase):
    # 0 by the tables; its forced cycle returns with both seeds on South's side,
    # which the true rule gives South: +2.
    position = Position.from_string("1-0-0-0-0-1/0-0-0-0-0-0 S")
    assert tablebase.value(position) == 0
    assert naive_true_value(position.mover_board().tolist()) == 2
    result = Engine.over(searcher).search(Game(position), time=1.0)
    assert result.exact and result.rule == "true" and result.value == 2 and result.source in ("search", "component")


def test_a_game_history_counts_inside_the_tables(searcher, tablebase):
    rng = random.Random(5)
    memo: dict = {}
    compared = 0
    for _ in range(300):
        game = Game(random_position(rng.choice([2, 3]), rng, side="S"))
        while len(game.moves) < 20 and not game.is_over():
            quiet = [m for m in game.legal_moves() if game.position.play_capture(m)[1] == 0]
            if not quiet:
                break
            game.play(rng.choice(quiet))
        if game.is_over() or len(game.moves) < 6 or not searcher.searches_inside_tables(game):
            continue
        history = [p.mover_board().tolist() for p in game.positions[:-1] if p.seeds == game.position.seeds]
        try:
            expected = naive_true_value(game.position.mover_board().tolist(), history, budget=20_000, memo=memo)
        except TooLarge:
            continue
        result = Engine.over(searcher).search(game, nodes=200_000)
        if result.exact:
            assert result.rule == "true" and result.value == expected, game.record()
            compared += 1
    assert compared > 5


def test_the_tables_answer_every_seed_taken_an_unlimited_search_and_the_split_convention(searcher, tablebase):
    rng = random.Random(2)
    kinds = set()
    for _ in range(200):
        position = random_position(rng.randint(4, 12), rng)
        if position.is_over():
            continue
        value = tablebase.value(position)
        if abs(value) == position.seeds:
            result = Engine.over(searcher).search(Game(position), time=0.05)
            assert result.source == "table" and result.exact and result.value == value
            kinds.add("every seed")
        else:
            assert Engine.over(searcher).search(Game(position)).source == "table"  # no limit: the tables' exact answer
            split = Engine.over(searcher).search(Game(position), time=0.05, cycles="split")
            assert split.source == "table" and split.value == value and split.rule == "split"
            limited = Engine.over(searcher).search(Game(position), depth=3)
            assert limited.source == "search" and limited.move in position.legal_moves()
            assert limited.depth == 3 or (limited.exact and limited.rule == "true" and limited.depth < 3)
            kinds.add("searched")
    assert kinds == {"every seed", "searched"}


def test_the_horizon_of_a_search_inside_the_tables_is_the_tables_value(searcher, tablebase):
    # At depth 1 every child is a horizon leaf, scored by its table value: the
    # result is the best of captured - value(child), as the tables' own move values.
    position = Position.from_string("0-1-2-0-3-1/2-0-1-0-0-1 N 18:19")
    assert tablebase.value(position) == -1
    result = Engine.over(searcher).search(Game(position), depth=1)
    best = max(m.value for m in tablebase.moves(position))
    assert result.value == best and not result.exact and result.rule == "split"
