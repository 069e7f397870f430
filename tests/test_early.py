"""The early rules (solver/early.py), which `awele uci` follows until the kernels load:
the same rules as the kernels, move by move, and a search that is alpha-beta over
captures (checked against a plain minimax written here)."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver import early, uci
from solver.errors import AweleError
from solver.position import Game, Position

LETTERS = "ABCDEFabcdef"


@st.composite
def positions(draw):
    """A position of 0..48 seeds with stores that leave the total at most 48."""
    seeds = draw(st.integers(0, 48))
    houses = [0] * 12
    for _ in range(seeds):
        houses[draw(st.integers(0, 11))] += 1
    south = draw(st.integers(0, 48 - seeds))
    north = draw(st.integers(0, 48 - seeds - south))
    return Position(houses, draw(st.sampled_from("SN")), (south, north))


def same(game, copy):
    """The kernels' Game and the early rules' copy agree on everything the engine reads."""
    position = game.position
    assert copy.houses == position.houses and copy.captured == position.captured
    assert copy.to_move == position.to_move
    reason = game.end_reason
    assert copy.end() == (None if reason is None else str(reason.value))
    assert copy.result() == game.result()
    assert (copy.legal_moves() if reason is None else []) == game.legal_moves()


@settings(max_examples=300, deadline=None)
@given(positions(), st.randoms(use_true_random=False))
def test_the_early_rules_play_as_the_kernels(position, chooser):
    game = Game(position)
    copy = early.EarlyGame.start(position.houses, position.captured, position.to_move)
    same(game, copy)
    for _ in range(60):
        moves = game.legal_moves()
        if not moves:
            break
        move = chooser.choice(moves)
        assert copy.play(move) == game.play(move)
        same(game, copy)


def test_the_early_rules_follow_whole_games_from_the_opening():
    chooser = random.Random(54)
    for _ in range(40):
        game, copy = Game(), early.EarlyGame.opening()
        while game.legal_moves():
            move = chooser.choice(game.legal_moves())
            assert copy.play(move) == game.play(move)
            same(game, copy)
        same(game, copy)
        assert early.EarlyGame.of(Game(game.start)).houses == game.start.houses


def test_an_illegal_move_is_refused():
    game = early.EarlyGame.start((0, 0, 0, 0, 0, 1) + (0,) * 6, (23, 23), "S")
    assert game.legal_moves() == ["F"]  # rule 5: only a move that feeds North
    with pytest.raises(early.EarlyError, match="not a legal move"):
        game.play("A")


@settings(max_examples=200, deadline=None)
@given(positions(), st.lists(st.sampled_from(LETTERS), max_size=6), st.booleans())
def test_a_position_command_reads_as_the_kernels_read_it(position, moves, aalina):
    text = uci.diagram(position) if aalina else str(position)
    words = ["fen", *text.split(), "moves", "".join(moves)]
    try:
        expected = uci.parse_position(words)
    except (uci.UciError, AweleError):
        expected = None
    try:
        found = early.parse(words)
    except early.EarlyError:
        assert expected is None, words
        return
    assert found is not None, words  # both notations are the early rules' own
    assert expected is not None, words
    assert (found.houses, found.captured, found.to_move) == \
        (expected.position.houses, expected.position.captured, expected.position.to_move)
    assert found.repeated == (expected.end_reason == "repetition")


def test_other_notations_are_left_to_the_kernels():
    assert early.parse(["fen", "1,", "2,", "3,", "4,", "5,", "6,", "0", "0", "0", "0", "0", "1"]) is None
    assert early.parse(["startpos", "moves", "Fx"]) is None
    assert early.parse(["fen", "4-4-4-4-4-4-4-4-4-4-4-4-1000-0-S"]) is None  # four digits: the kernels say why
    assert early.parse(["nonsense"]) is None
    with pytest.raises(early.EarlyError, match="move 2"):
        early.parse(["startpos", "moves", "FF"])


def minimax(game, plies):
    """The early search's value without pruning, written from its definition."""
    totals = game.result()
    if totals is not None:
        mine, theirs = totals if game.to_move == "S" else totals[::-1]
        now = game.captured if game.to_move == "S" else game.captured[::-1]
        bonus = 96 if mine > theirs else -96 if mine < theirs else 0
        return (mine - now[0]) - (theirs - now[1]) + bonus
    if plies == 0:
        return 0
    values = []
    for move in game.legal_moves():
        child = early.EarlyGame(game.houses, game.captured, game.to_move, set(game.seen), game.repeated)
        gained = child.play(move)
        values.append(gained - minimax(child, plies - 1))
    return max(values)


@settings(max_examples=60, deadline=None)
@given(positions(), st.integers(1, 4))
def test_the_early_search_is_minimax_over_captures(position, plies):
    game = early.EarlyGame.start(position.houses, position.captured, position.to_move)
    if game.end() is not None:
        with pytest.raises(early.EarlyError):
            early.search(game, float("inf"), plies)
        return
    found = early.search(game, float("inf"), plies)
    assert found.move in game.legal_moves()
    assert found.value == minimax(game, found.depth)
    child = early.EarlyGame(game.houses, game.captured, game.to_move, set(game.seen), game.repeated)
    assert child.play(found.move) - minimax(child, found.depth - 1) == found.value


def test_the_early_search_stops_at_its_deadline():
    found = early.search(early.EarlyGame.opening(), deadline=0.0)  # already past: one ply, then no more
    assert found.depth == 1 and found.move == "A"
    capture = early.EarlyGame.start((0, 0, 0, 0, 0, 2, 1, 1, 0, 0, 0, 0), (20, 20), "S")
    assert early.search(capture, deadline=0.0).move == "F"  # F takes 2 + 2 seeds
