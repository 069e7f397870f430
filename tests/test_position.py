"""Position and Game as users see them: notation, errors, moves, the end of the game.

Every expected position below was worked out by hand from RULES.md; the
comment next to each says how.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver import Game, Position
from solver.errors import GameOverError, IllegalMoveError, InvalidPositionError, InvalidRecordError

OPENING = "4-4-4-4-4-4/4-4-4-4-4-4 S 0:0"


@st.composite
def positions(draw):
    """Any valid position: 12 houses, side to move, captured, at most 48 seeds in all."""
    total = draw(st.integers(0, 48))
    cuts = sorted(draw(st.lists(st.integers(0, total), min_size=11, max_size=11)))
    bounds = [0] + cuts + [total]
    houses = [bounds[i + 1] - bounds[i] for i in range(12)]
    south = draw(st.integers(0, 48 - total))
    north = draw(st.integers(0, 48 - total - south))
    return Position(houses, draw(st.sampled_from("SN")), (south, north))


# Notation ------------------------------------------------------------------------


def test_initial_position():
    position = Position.initial()
    assert str(position) == OPENING
    assert position.houses == (4,) * 12
    assert position.to_move == "S"
    assert position.captured == (0, 0)
    assert position.seeds == 48
    assert Position.from_string(OPENING) == position
    assert Position((4,) * 12) == position  # South to move and 0:0 by default


def test_canonical_form_is_absolute_order():
    houses = (1, 2, 3, 4, 5, 6, 7, 8, 0, 1, 2, 3)
    position = Position(houses, "N", (3, 3))
    assert position.houses == houses
    assert str(position) == "1-2-3-4-5-6/7-8-0-1-2-3 N 3:3"
    assert position.seeds == 42


@settings(deadline=None, max_examples=300)
@given(positions())
def test_notation_round_trips(position):
    text = str(position)
    assert Position.from_string(text) == position
    assert str(Position.from_string(text)) == text
    assert Position(position.houses, position.to_move, position.captured) == position
    assert position.seeds == sum(position.houses)
    south, north, side, stores = text.replace("/", " ").split()
    assert [int(h) for h in south.split("-")] == list(position.houses[:6])
    assert [int(h) for h in north.split("-")] == list(position.houses[6:])
    assert side == position.to_move
    assert stores == f"{position.captured[0]}:{position.captured[1]}"


@pytest.mark.parametrize(
    "text",
    [
        "1 2 3 4 5 6 0 0 0 0 0 1",
        "1,2,3,4,5,6,0,0,0,0,0,1",
        "1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 1",
        "  1 2 3 4 5 6,0 0 0 0 0 1  ",
    ],
)
def test_twelve_integers(text):
    position = Position.from_string(text)
    assert position.houses == (1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 1)
    assert position.to_move == "S"
    assert position.captured == (0, 0)
    assert str(position) == "1-2-3-4-5-6/0-0-0-0-0-1 S 0:0"


@pytest.mark.parametrize(
    "houses, to_move, captured",
    [
        ((4,) * 11, "S", (0, 0)),  # 11 houses
        ((4,) * 12 + (0,), "S", (0, 0)),  # 13 houses
        ((), "S", (0, 0)),
        ((-1,) + (4,) * 11, "S", (0, 0)),  # negative house
        ((5,) + (4,) * 11, "S", (0, 0)),  # 49 seeds
        ((4,) * 12, "S", (1, 0)),  # 48 on the board plus 1 captured
        ((0,) * 12, "S", (25, 24)),  # 49 in the stores
        ((1,) * 12, "S", (-1, 0)),  # negative store
        ((4,) * 12, "X", (0, 0)),  # unknown side
        ((4,) * 12, "", (0, 0)),
        ((4,) * 12, None, (0, 0)),
        (("a",) * 12, "S", (0, 0)),  # not numbers
    ],
)
def test_bad_positions_raise(houses, to_move, captured):
    with pytest.raises(InvalidPositionError):
        Position(houses, to_move, captured)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "hello",
        "4-4-4-4-4/4-4-4-4-4-4 S 0:0",  # five South houses
        "4-4-4-4-4-4-4/4-4-4-4-4 S 0:0",  # seven and five
        "4-4-4-4-4-4/4-4-4-4-4-4 X 0:0",  # unknown side
        "4-4-4-4-4-4/4-4-4-4-4-4 S 1:0",  # 49 seeds
        "5-4-4-4-4-4/4-4-4-4-4-4 S 0:0",  # 49 seeds
        "-1-4-4-4-4-4/4-4-4-4-4-4 S 0:0",  # negative count
        "4-4-4-4-4-4/4-4-4-4-4-4 S 0:0 extra",
        "4-4-4-4-4-4/4-4-4-4-4-4 S 0-0",
        "4 4 4 4 4 4 4 4 4 4 4",  # 11 integers
        "4 4 4 4 4 4 4 4 4 4 4 4 0",  # 13 integers
        "5 4 4 4 4 4 4 4 4 4 4 4",  # 49 seeds
        "-1 4 4 4 4 4 4 4 4 4 4 4",  # negative count
        "4 4 4 4 4 4 4 4 4 4 4 x",
    ],
)
def test_bad_strings_raise(text):
    with pytest.raises(InvalidPositionError):
        Position.from_string(text)


def test_errors_are_value_errors():
    for error in (InvalidPositionError, IllegalMoveError, GameOverError, InvalidRecordError):
        assert issubclass(error, ValueError)
    with pytest.raises(ValueError):
        Position.from_string("garbage")


def test_fewer_than_48_seeds_is_a_valid_study():
    position = Position.from_string("0-0-0-0-1-2/1-0-0-0-0-0 N 20:23")
    assert position.seeds == 4
    assert position.captured == (20, 23)
    assert position.to_move == "N"


# Moves ----------------------------------------------------------------------------


def test_legal_moves_are_letters_of_the_side_to_move():
    assert Position.initial().legal_moves() == list("ABCDEF")
    after = Position.initial().play("F")
    assert after.to_move == "N"
    assert after.legal_moves() == list("abcdef")
    # Empty houses are not moves.
    assert Position.from_string("0-3-0-1-0-0/1-1-1-1-1-1 S 0:0").legal_moves() == ["B", "D"]
    assert Position.from_string("1-1-1-1-1-1/0-3-0-1-0-0 N 0:0").legal_moves() == ["b", "d"]


def test_feeding_moves_only_when_the_opponent_is_empty():
    # North is empty. A (5 seeds) reaches only F; B (5) reaches a; D (2) reaches
    # F; E (2) reaches a; F (1) reaches a. Only B, E, F feed.
    position = Position.from_string("5-5-0-2-2-1/0-0-0-0-0-0 S 0:0")
    assert position.legal_moves() == ["B", "E", "F"]
    mirror = Position.from_string("0-0-0-0-0-0/5-5-0-2-2-1 N 0:0")
    assert mirror.legal_moves() == ["b", "e", "f"]
    with pytest.raises(IllegalMoveError):
        position.play("A")
    with pytest.raises(IllegalMoveError):
        mirror.play("d")


def test_play_returns_a_new_position():
    position = Position.initial()
    after = position.play("F")
    # F's 4 seeds go to a, b, c, d.
    assert str(after) == "4-4-4-4-4-0/5-5-5-5-4-4 N 0:0"
    assert str(position) == OPENING  # unchanged
    # North's a (5 seeds) goes to b, c, d, e, f.
    assert str(after.play("a")) == "4-4-4-4-4-0/0-6-6-6-5-5 S 0:0"


def test_capture_by_south_adds_to_south():
    # F's 2 seeds make a=2 and b=2: b then a are captured (4); f keeps 4 seeds.
    position = Position.from_string("0-0-0-0-0-2/1-1-0-0-0-4 S 3:5")
    assert str(position.play("F")) == "0-0-0-0-0-0/0-0-0-0-0-4 N 7:5"


def test_capture_by_north_adds_to_north():
    position = Position.from_string("1-1-0-0-0-4/0-0-0-0-0-2 N 5:3")
    assert str(position.play("f")) == "0-0-0-0-0-4/0-0-0-0-0-0 S 5:7"


def test_capture_chain_stops_at_the_first_house_that_fails():
    # E (3 seeds) goes to F, a, b. The last, b (2+1=3), is captured, then a
    # (1+1=2); the chain stops at F, South's own house.
    position = Position.from_string("0-0-0-0-3-0/1-2-4-0-0-0 S 0:0")
    assert str(position.play("E")) == "0-0-0-0-0-1/0-0-4-0-0-0 N 5:0"
    # Same but a holds 4 (5 after sowing): only b is captured.
    position = Position.from_string("0-0-0-0-3-0/4-2-4-0-0-0 S 0:0")
    assert str(position.play("E")) == "0-0-0-0-0-1/5-0-4-0-0-0 N 3:0"
    # C (6 seeds) goes to D, E, F, a, b, c: c=3 is captured, b=5 stops the
    # chain, and a=2 behind it stays.
    position = Position.from_string("0-0-6-0-0-0/1-4-2-0-0-0 S 0:0")
    assert str(position.play("C")) == "0-0-0-1-1-1/2-5-0-0-0-0 N 3:0"


def test_grand_slam_captures_nothing():
    # F's 2 seeds make a=2, b=2: taking both would leave North empty.
    position = Position.from_string("0-0-0-0-0-2/1-1-0-0-0-0 S 0:0")
    assert str(position.play("F")) == "0-0-0-0-0-0/2-2-0-0-0-0 N 0:0"


def test_twelve_seeds_skip_the_origin_house():
    # A's 12 seeds: one each into B..F and a..f (11), skip A, the 12th into B.
    position = Position.from_string("12-0-0-0-0-0/0-0-0-0-0-1 S 0:0")
    assert str(position.play("A")) == "0-2-1-1-1-1/1-1-1-1-1-2 N 0:0"


def test_illegal_moves_raise():
    position = Position.from_string("0-3-0-1-0-0/1-1-1-1-1-1 S 0:0")
    for move in ["A", "C", "a", "b", "G", "g", "z", "", "AB", None, 7]:
        with pytest.raises(IllegalMoveError):
            position.play(move)
    with pytest.raises(IllegalMoveError):
        Position.initial().play("a")  # North's house, South to move


@settings(deadline=None, max_examples=300)
@given(positions(), st.data())
def test_play_keeps_every_seed_and_passes_the_turn(position, data):
    moves = position.legal_moves()
    if not moves:
        assert position.is_over()
        return
    move = data.draw(st.sampled_from(moves))
    letters = "ABCDEF" if position.to_move == "S" else "abcdef"
    assert all(m in letters for m in moves)
    after = position.play(move)
    assert after.to_move != position.to_move
    assert after.seeds + sum(after.captured) == position.seeds + sum(position.captured)
    mover = 0 if position.to_move == "S" else 1
    assert after.captured[1 - mover] == position.captured[1 - mover]
    assert after.captured[mover] >= position.captured[mover]
    assert after.houses[letters.index(move) + 6 * mover] == 0  # the origin is emptied


# The end of the game ----------------------------------------------------------------


def test_game_goes_on():
    position = Position.initial()
    assert not position.is_over()
    assert position.result() is None
    assert position.outcome() is None


@pytest.mark.parametrize(
    "text, result, outcome",
    [
        # Rule 5: North is empty and neither A (2, reaches C) nor B (1, reaches C)
        # feeds him: South takes the 3 seeds left.
        ("2-1-0-0-0-0/0-0-0-0-0-0 S 22:23", (25, 23), "S"),
        ("0-0-0-0-0-0/2-1-0-0-0-0 N 23:22", (23, 25), "N"),
        # Rule 5 in a study with fewer seeds: South takes 1 and loses 10:11.
        ("1-0-0-0-0-0/0-0-0-0-0-0 S 9:11", (10, 11), "N"),
        # Rule 6: the mover's side is empty; the opponent takes the seeds on his side.
        ("0-0-0-0-0-0/1-2-0-0-0-0 S 22:23", (22, 26), "N"),
        ("3-0-0-0-0-0/0-0-0-0-0-0 N 20:20", (23, 20), "S"),
        ("0-0-0-0-0-0/0-0-0-0-0-0 S 10:12", (10, 12), "N"),
        # 25 or more captured: won; each side takes the seeds on its own side.
        ("1-0-0-0-0-0/0-0-0-0-0-1 S 25:21", (26, 22), "S"),
        ("0-0-0-0-2-0/0-0-0-1-0-0 S 20:25", (22, 26), "N"),
        ("4-0-0-0-0-0/0-0-0-0-0-0 N 26:18", (30, 18), "S"),
        # 24-24: a draw.
        ("0-0-0-0-0-0/0-0-0-0-0-0 S 24:24", (24, 24), "draw"),
        ("0-0-0-0-0-0/0-0-0-0-0-0 N 24:24", (24, 24), "draw"),
    ],
)
def test_game_over(text, result, outcome):
    position = Position.from_string(text)
    assert position.is_over()
    assert position.result() == result
    assert position.outcome().winner == outcome
    assert position.outcome().totals == result and position.outcome().reason == position.terminal_rule()
    assert position.legal_moves() == []
    with pytest.raises(GameOverError):
        position.play("A" if position.to_move == "S" else "a")
    game = Game(position)
    assert game.is_over()
    assert game.result() == result
    with pytest.raises(GameOverError):
        game.play("A" if position.to_move == "S" else "a")


def test_rule_five_is_not_over_when_a_move_feeds():
    # F (1 seed) reaches a: South must play it, and the game goes on.
    position = Position.from_string("2-0-0-0-0-1/0-0-0-0-0-0 S 22:23")
    assert not position.is_over()
    assert position.legal_moves() == ["F"]


def test_a_capture_reaching_25_ends_the_game():
    # F's 1 seed makes a=2, captured: South has 25. North keeps f=4 and takes it.
    position = Position.from_string("0-0-0-0-0-1/1-0-0-0-0-4 S 23:19")
    after = position.play("F")
    assert str(after) == "0-0-0-0-0-0/0-0-0-0-0-4 N 25:19"
    assert after.is_over()
    assert after.result() == (25, 23)
    assert after.outcome().winner == "S" and after.outcome().reason == "25 seeds"


# Games ----------------------------------------------------------------------------------


def test_game_plays_and_keeps_history():
    game = Game()
    assert game.position == Position.initial()
    assert game.play("F") == 0
    game.play("a")
    assert game.moves == ["F", "a"]
    assert str(game.position) == "4-4-4-4-4-0/0-6-6-6-5-5 S 0:0"
    assert not game.is_over()
    assert game.result() is None
    assert game.end_reason is None
    with pytest.raises(IllegalMoveError):
        game.play("F")  # empty
    with pytest.raises(IllegalMoveError):
        game.play("b")  # North's house, South to move
    assert game.moves == ["F", "a"]  # a refused move changes nothing


@pytest.mark.parametrize(
    "record",
    [
        "1. F b 2. D a",
        "1.F b 2.D a",
        "1. F! b? 2. D+2 a!?",
        "1. F!! b?? 2. D?! a+1",
        "F b D a",
        "1. F b\n2. D a\n",
    ],
)
def test_record_with_annotations(record):
    game = Game.from_record(record)
    assert game.moves == ["F", "b", "D", "a"]
    assert game.position == Position.initial().play("F").play("b").play("D").play("a")


@pytest.mark.parametrize(
    "record",
    [
        "1. F G",  # no house G
        "1. F F",  # F is South's: North is to move
        "1. F b 2. F",  # F is empty
        "1. hello",
        "1. F 7",
    ],
)
def test_bad_records_raise(record):
    with pytest.raises(InvalidRecordError):
        Game.from_record(record)


# A cycle with 3 seeds and no capture, checked by hand (moves in sowing order):
# B->C, a->b, A->B, b->c, C->D, c->d, D->E, d->e, E->F, e->f, F->a, f->A brings
# back A=1 B=1 / a=1 with South to move. South has 2 seeds there, North 1.
CYCLE_START = "1-1-0-0-0-0/1-0-0-0-0-0 S 10:20"
CYCLE = ["B", "a", "A", "b", "C", "c", "D", "d", "E", "e", "F", "f"]


def test_repetition_ends_the_game_and_each_side_takes_its_own_seeds():
    game = Game(Position.from_string(CYCLE_START))
    for move in CYCLE[:-1]:
        assert game.play(move) == 0
        assert not game.is_over(), f"ended after {game.moves}"
    game.play(CYCLE[-1])
    assert str(game.position) == CYCLE_START
    assert game.is_over()
    assert game.end_reason == "repetition"
    assert game.result() == (12, 21)
    assert game.outcome().winner == "N" and game.outcome().reason == "repetition"
    assert game.outcome().totals == (12, 21)
    # The position alone does not know its history: it goes on.
    assert not game.position.is_over()
    assert game.position.result() is None
    with pytest.raises(GameOverError):
        game.play("A")


# Diagram --------------------------------------------------------------------------------


def test_diagram_puts_each_count_under_its_letter():
    position = Position.from_string("10-2-3-0-5-6/7-1-0-0-11-2 N 0:1")
    lines = position.diagram().splitlines()
    north_labels = next(i for i, line in enumerate(lines) if line.split() == list("fedcba"))
    south_labels = next(i for i, line in enumerate(lines) if line.split() == list("ABCDEF"))
    assert north_labels < south_labels
    counts = lines[north_labels + 1 : south_labels]
    assert len(counts) == 2  # North's row, then South's
    for label_line, count_line, letters in [
        (lines[north_labels], counts[0], "abcdef"),
        (lines[south_labels], counts[1], "ABCDEF"),
    ]:
        offset = 0 if letters == "ABCDEF" else 6
        for k, letter in enumerate(letters):
            column = label_line.index(letter)
            # The number is right-aligned with its letter.
            start = count_line.rfind(" ", 0, column + 1) + 1
            assert count_line[start : column + 1] == str(position.houses[offset + k]), (letter, count_line)
    text = position.diagram()
    north_line = next(line for line in lines if "North" in line)
    south_line = next(line for line in lines if "South" in line)
    assert "1" in north_line.split() and "0" in south_line.split(), text
    assert lines.index(north_line) < north_labels and lines.index(south_line) > south_labels


def test_diagram_of_the_opening():
    lines = Position.initial().diagram().splitlines()
    assert [line.split() for line in lines if line.split() and line.split()[0].isdigit()] == [["4"] * 6, ["4"] * 6]


def test_a_count_of_thousands_of_digits_is_a_named_error_not_a_traceback():
    from solver.errors import InvalidPositionError

    with pytest.raises(InvalidPositionError, match="5000 digits"):
        Position.from_string("9" * 5000 + "-0-0-0-0-0/0-0-0-0-0-0 S 0:0")
    with pytest.raises(InvalidPositionError, match="digits"):
        Position.from_string(" ".join(["1" * 30] + ["0"] * 11))


def test_game_parse_reads_records_letters_and_starts_alike():
    from solver.errors import IllegalRecordMoveError, InvalidRecordError

    by_record = Game.parse("1. F b 2. D a")
    assert by_record.moves == ["F", "b", "D", "a"]
    assert Game.parse(["F", "b", "D", "a"]).positions == by_record.positions
    assert Game.parse("1. F b", str(Position.initial())).position == Game.parse("F b", Position.initial()).position
    assert Game.parse(None).position == Game.parse("   ").position == Position.initial()
    with pytest.raises(IllegalRecordMoveError) as raised:
        Game.parse("1. F F")
    assert (raised.value.number, raised.value.move) == (2, "F")
    assert isinstance(raised.value, InvalidRecordError) and "move 2 (F) of the record" in str(raised.value)
