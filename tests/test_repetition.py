"""Bounds under the true repetition rule from the two graph games of
solver.repetition, against a naive reference that follows every simple path
(tests/naive_search.py's naive_true_value, no table): the exact value with
its history always lies within the bounds, and equals them when they meet."""

import itertools
import random
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from naive import naive_play
from naive_search import TooLarge, naive_true_value
from test_search import random_position

from solver.errors import GameOverError
from solver.position import Game, Position
from solver.repetition import _cobuchi_values, true_rule_bounds
from solver.report import true_rule_may_change


def _walk(start: Position, moves: list[int]) -> tuple[Position, list[Position]]:
    """The position after playing `moves` (indices into the legal moves, taken
    modulo their number) from `start` while no seed is captured, and the
    positions before it (the history the repetition rule reads)."""
    positions = [start]
    for pick in moves:
        here = positions[-1]
        if here.is_over():
            break
        legal = here.legal_moves()
        child, captured = here.play_capture(legal[pick % len(legal)])
        if captured or child.is_over() or child.key() in {p.key() for p in positions}:
            break
        positions.append(child)
    return positions[-1], positions[:-1]


def _naive_move_values(root: Position, history: list[Position], memo: dict) -> dict[str, int]:
    """Each legal move's value under the true rule with the history, by the naive reference."""
    boards = [p.mover_board().tolist() for p in history + [root]]
    values = {}
    for letter in root.legal_moves():
        captured, child = naive_play(root.mover_board().tolist(), root.house_of(letter))
        if captured:
            values[letter] = captured - naive_true_value(child, budget=50_000, memo=memo)
        elif child in boards[-2::-2]:  # the same side to move: a repetition ends the game
            values[letter] = -(sum(child[:6]) - sum(child[6:]))
        else:
            values[letter] = -naive_true_value(child, history=boards, budget=50_000, memo=memo)
    return values


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seeds=st.integers(2, 3), seed=st.integers(0, 10**9), moves=st.lists(st.integers(0, 5), max_size=8))
def test_the_true_value_with_its_history_lies_within_the_bounds(seeds, seed, moves):
    start = random_position(seeds, random.Random(seed))
    if start.is_over():
        return
    root, history = _walk(start, moves)
    try:
        expected = _naive_move_values(root, history, {})
    except TooLarge:
        return
    bounds = true_rule_bounds(root, history)
    assert bounds.status == "solved"
    assert set(bounds.moves) == set(expected)
    for letter, value in expected.items():
        low, high = bounds.moves[letter]
        assert low <= value <= high, (str(root), letter)
    value = max(expected.values())
    assert bounds.lower <= value <= bounds.upper
    if bounds.exact:
        assert bounds.lower == value
    for letter in bounds.best_moves():
        assert expected[letter] == value, (str(root), letter)


def test_a_forced_cycle_is_scored_by_the_true_rule():
    # The tables split this cycle (0); it returns with both seeds on South's side: +2.
    bounds = true_rule_bounds(Position.from_string("1-0-0-0-0-1/0-0-0-0-0-0 S"))
    assert bounds.exact and bounds.lower == 2


def test_a_game_over_has_no_bounds():
    with pytest.raises(GameOverError):
        true_rule_bounds(Position.from_string("0-0-0-0-0-0/0-0-0-1-0-1 S"))


def test_a_graph_larger_than_the_limit_is_not_bounded():
    bounds = true_rule_bounds(Position.from_string("1-1-1-0-0-0/0-2-1-0-2-0 S"), limit=1000)
    assert bounds.status == "too large" and bounds.lower is None and not bounds.exact
    assert bounds.best_moves() == []


def test_bounds_past_their_deadline_are_out_of_time_and_before_it_as_without_one(tablebase):
    """A deadline passed gives up (in exploring, or in a layer's game), a
    deadline far off changes nothing."""
    position = Position.from_string("2-1-0-0-1-1/0-0-3-0-0-1 S 15:24")  # 9 seeds: a graph of about 400,000
    tables = tablebase.store.arrays()
    gone = true_rule_bounds(position, (), tables, deadline=time.perf_counter() - 1)
    assert gone.status == "out of time" and gone.lower is None and not gone.exact and gone.best_moves() == []
    # A layer's game stops too (a deadline of 1 ns is long past).
    one = np.ones(1, np.int64)
    _, stopped = _cobuchi_values(-1, 1, np.ones(1, np.bool_), one, np.zeros(2, np.int64), np.zeros(0, np.int64),
                                 np.array([0, 1]), one, 1)
    assert stopped
    assert _cobuchi_values(-1, 1, np.ones(1, np.bool_), one, np.zeros(2, np.int64), np.zeros(0, np.int64),
                           np.array([0, 1]), one, 0)[0][0] == 1
    far = true_rule_bounds(position, (), tables, deadline=time.perf_counter() + 3600)
    assert far == true_rule_bounds(position, (), tables)
    assert far.status == "solved"


def test_a_search_inside_the_tables_keeps_within_the_bounds_and_answers_them_when_they_meet(searcher, tablebase):
    rng = random.Random(5)
    memo: dict = {}
    solved = searched = compared = 0
    for _ in range(300):
        position = random_position(rng.choice([3, 4, 5]), rng)
        if position.is_over() or not true_rule_may_change(tablebase.value(position), position.seeds):
            continue
        result = searcher.search(Game(position), nodes=20_000)
        bounds = true_rule_bounds(position, (), searcher.tablebase.store.arrays())
        assert result.lower is not None and result.upper is not None
        assert bounds.lower <= result.lower <= result.upper <= bounds.upper
        if bounds.exact:
            assert result.exact and result.rule == "true" and result.source == "component"
            assert result.value == bounds.lower and bounds.moves[result.move][0] == bounds.lower
            solved += 1
        else:
            assert result.lower <= result.value <= result.upper
            assert bounds.moves[result.move][1] >= bounds.lower, str(position)  # never a move proven worse
            searched += 1
        try:
            expected = naive_true_value(position.mover_board().tolist(), budget=20_000, memo=memo)
        except TooLarge:
            continue
        assert result.lower <= expected <= result.upper, str(position)
        compared += 1
    assert solved >= 5 and searched >= 5 and compared >= 3


def _game_value_by_strategies(node, owned, f, children, exits):
    """The value for X of a liminf game from `node`, by every pair of
    positional strategies (such games are positionally determined): X's
    best over its strategies of the worst over the other side's, each play
    followed until it takes an exit (its payoff) or closes a cycle (the
    least f on the cycle)."""
    n = len(owned)
    choices = [[("node", child) for child in children[i]] + [("exit", payoff) for payoff in exits[i]] for i in range(n)]
    mine = [i for i in range(n) if owned[i]]
    theirs = [i for i in range(n) if not owned[i]]

    def payoff(choice):
        seen: list[int] = []
        here = node
        while here not in seen:
            seen.append(here)
            kind, target = choices[here][choice[here]]
            if kind == "exit":
                return target
            here = target
        return min(f[i] for i in seen[seen.index(here):])

    best = None
    for picks in itertools.product(*(range(len(choices[i])) for i in mine)):
        worst = None
        for answers in itertools.product(*(range(len(choices[i])) for i in theirs)):
            choice = dict(zip(mine, picks)) | dict(zip(theirs, answers))
            value = payoff(choice)
            worst = value if worst is None else min(worst, value)
        best = worst if best is None else max(best, worst)
    return best


@st.composite
def _liminf_games(draw):
    """A small game of solver.repetition's layer games: each node owned by X
    or not, an f, moves to nodes and exits (at least one move)."""
    n = draw(st.integers(1, 6))
    owned = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    f = draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n))
    children, exits = [], []
    for _ in range(n):
        mine = draw(st.lists(st.integers(0, n - 1), max_size=3, unique=True))
        ends = draw(st.lists(st.integers(-6, 6), min_size=0 if mine else 1, max_size=3 - len(mine)))
        children.append(mine)
        exits.append(ends)
    return owned, f, children, exits


@settings(max_examples=300, deadline=None)
@given(_liminf_games(), st.integers(-6, 0), st.integers(0, 6))
def test_each_layer_game_is_valued_as_by_every_pair_of_positional_strategies(game, lowest, highest):
    """_cobuchi_values (thresholds halved) gives each node the value of X's
    best positional strategy against the other side's, held within [lowest,
    highest]."""
    owned, f, children, exits = game
    game_first = np.cumsum([0] + [len(c) for c in children])
    exit_first = np.cumsum([0] + [len(e) for e in exits])
    values, stopped = _cobuchi_values(
        lowest, highest, np.array(owned, np.bool_), np.array(f, np.int64), game_first.astype(np.int64),
        np.array([c for cs in children for c in cs], np.int64), exit_first.astype(np.int64),
        np.array([e for es in exits for e in es], np.int64), 0)
    assert not stopped
    for node in range(len(owned)):
        expected = _game_value_by_strategies(node, owned, f, children, exits)
        assert values[node] == min(max(expected, lowest), highest), node
