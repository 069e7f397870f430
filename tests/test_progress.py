"""Perfect play that makes progress: best_move, line and the engine's table
answers choose among the best moves by distance to conversion (issue 51,
item 4), and fall back to the progress ranking where a layer holds values
alone."""

import json
import random

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from solver import Position, build
from solver.cli import cli
from solver.errors import MissingDistanceError
from solver.position import Game
from solver.probe import Tablebase
from solver.report import best_of
from solver.uci import table_answer

LAYERS = 12  # conftest's table_dir


@pytest.fixture(scope="module")
def values_alone(tmp_path_factory):
    """Layers 0..9 built without distances."""
    directory = str(tmp_path_factory.mktemp("values-alone"))
    build.build(9, directory, distances=False)
    with Tablebase(directory) as opened:
        yield opened


@st.composite
def positions(draw, stores=True):
    """A position of 1..LAYERS seeds on the board (inside the index or not),
    either side to move, with captured seeds that leave the game going (none
    when `stores` is False: then no move ends the game by 25 seeds)."""
    seeds = draw(st.integers(1, LAYERS))
    cuts = sorted(draw(st.lists(st.integers(0, seeds), min_size=11, max_size=11)))
    houses = [b - a for a, b in zip([0, *cuts], [*cuts, seeds])]
    if not stores:
        return Position(houses, draw(st.sampled_from("SN")))
    left = 48 - seeds
    south = draw(st.integers(max(0, left - 24), min(24, left)))
    return Position(houses, draw(st.sampled_from("SN")), (south, left - south))


def board_value(tablebase, position):
    """The table value of a position's board, whatever its captured seeds say."""
    return int(tablebase.values(np.array([position.mover_board()], dtype=np.uint8))[0])


def keeping_costs(tablebase, position):
    """{move: cost} of the moves that keep the position's value (the tables' convention)."""
    value = tablebase.value(position)
    return {m.move: m.distance for m in tablebase.moves(position) if m.value == value}


@settings(max_examples=300, deadline=None)
@given(position=positions())
def test_a_line_converts_in_exactly_its_distance_with_the_value_kept(tablebase, position):
    """From a position with v != 0 the line keeps the value at every ply and
    reaches a capture, or an end of the game, at exactly ply distance(v)."""
    if position.is_over():
        return
    value = tablebase.value(position)
    distance = tablebase.distance(position)
    line = tablebase.line(position)
    for before, move in zip(line.positions, line.moves):
        assert move in tablebase.best_moves(before), (str(position), line)
    if value == 0:
        assert distance is None and line.distance is None
        return
    assert line.distance == distance > 0, str(position)
    assert len(line.moves) >= distance, (str(position), line)
    assert not any(line.captures[: distance - 1]), (str(position), line)
    reached = line.positions[distance]
    captured = line.captures[distance - 1]
    if captured == 0:  # the game ends at ply `distance`: rules 5 or 6
        assert len(line.moves) == distance and reached.is_over(), (str(position), line)
    # The mover at ply `distance` is the start's mover when `distance` is odd.
    mover_value = value if distance % 2 else -value
    assert captured - board_value(tablebase, reached) == mover_value, (str(position), line)


@settings(max_examples=40, deadline=None)
@given(position=positions())
def test_awele_line_converts_in_the_distance_it_shows(table_dir, tablebase, position):
    """`awele line --json`: from a position with v != 0 the first capture,
    or the end, comes at exactly ply `distance`, each move keeping the value."""
    if position.is_over():
        return
    result = CliRunner().invoke(cli, ["line", str(position), "--dir", table_dir, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    value, distance = data["value"], data["distance"]
    assert value == tablebase.value(position) and distance == tablebase.distance(position)
    assert data["layers_without_distances"] == []
    if value == 0:
        return
    captures = data["captures"]
    assert not any(captures[: distance - 1]) and len(captures) >= distance, (str(position), data)
    assert captures[distance - 1] or (len(captures) == distance and data["end"] in ("no feeding move",
                                                                                     "no seeds to move"))
    current = position
    for move in data["moves"][:distance]:
        assert move in tablebase.best_moves(current)
        current = current.play(move)


def test_awele_line_says_where_it_had_no_distances(values_alone):
    result = CliRunner().invoke(cli, ["line", "0-0-0-1-2-0/1-0-0-2-0-1 S", "--dir", values_alone.directory])
    assert result.exit_code == 0, result.output
    assert "layers 7" in result.output and "hold no distances" in result.output
    assert "next capture" not in result.output


@settings(max_examples=300, deadline=None)
@given(position=positions(stores=False))
def test_best_move_chooses_by_distance(tablebase, position):
    """The winner plays a keeping move of least cost, the loser one of
    greatest cost, a capture first among equal costs; with no history the
    line's first move is the same move."""
    if position.is_over():
        return
    value = tablebase.value(position)
    chosen = tablebase.best_move(position)
    costs = keeping_costs(tablebase, position)
    assert chosen.move in costs and chosen.value == value, str(position)
    if value != 0:
        wanted = min(costs.values()) if value > 0 else max(costs.values())
        assert chosen.distance == wanted == tablebase.distance(position), str(position)
        tied = [m for m in tablebase.moves(position) if m.value == value and m.distance == wanted]
        if any(m.captured for m in tied):
            assert chosen.captured, str(position)
    assert tablebase.line(position, max_plies=1).moves == [chosen.move], str(position)


def test_a_losing_side_holds_out_instead_of_capturing(tablebase):
    """Before distances the loser took a capture first; now a capture (cost
    1) is chosen only when no quiet keeping move lasts longer."""
    rng = random.Random(3)
    found = 0
    for _ in range(5000):
        seeds = rng.randint(4, LAYERS)
        cuts = sorted(rng.randint(0, seeds) for _ in range(11))
        position = Position([b - a for a, b in zip([0, *cuts], [*cuts, seeds])], rng.choice("SN"))
        if position.is_over() or tablebase.value(position) >= 0:
            continue
        keeping = [m for m in tablebase.moves(position) if m.value == tablebase.value(position)]
        if any(m.captured for m in keeping) and any(not m.captured for m in keeping):
            chosen = tablebase.best_move(position)
            assert not chosen.captured and chosen.distance == max(m.distance for m in keeping) > 1
            found += 1
    assert found > 5


def test_a_repetition_worth_the_value_ends_a_won_game_at_once(tablebase):
    """Under the true rule a move repeating a position of the game ends it:
    worth the best value, it costs one ply, as a capture does."""
    game = Game.from_record("F a A b B c C d D e E", Position.from_string("1-0-0-0-0-1/0-0-0-0-0-0 S"))
    chosen = tablebase.best_move(game)
    assert chosen.move == "f" and chosen.repeats


def test_best_move_without_progress_leaves_a_won_quiet_choice_to_the_caller(tablebase):
    rng = random.Random(8)
    left = 0
    for _ in range(400):
        seeds = rng.randint(4, LAYERS)
        cuts = sorted(rng.randint(0, seeds) for _ in range(11))
        position = Position([b - a for a, b in zip([0, *cuts], [*cuts, seeds])], rng.choice("SN"))
        if position.is_over():
            continue
        candidates = best_of(tablebase.game_moves(Game(position)))
        quiet = candidates[0].value > 0 and len(candidates) > 1 and not any(m.captured for m in candidates)
        answer = tablebase.best_move(Game(position), progress=False)
        assert (answer is None) == quiet, str(position)
        left += quiet
    assert left > 0


def test_a_table_answer_follows_the_distances_with_its_line(tablebase):
    rng = random.Random(11)
    checked = 0
    while checked < 30:
        seeds = rng.randint(3, LAYERS)
        cuts = sorted(rng.randint(0, seeds) for _ in range(11))
        position = Position([b - a for a, b in zip([0, *cuts], [*cuts, seeds])], rng.choice("SN"))
        if position.is_over() or tablebase.value(position) == 0:
            continue
        answer = table_answer(tablebase, Game(position))
        assert answer.move == tablebase.best_move(position).move and answer.exact
        assert list(answer.line) == tablebase.line(position, max_plies=12).moves
        checked += 1


# A folder of values alone -----------------------------------------------------------


def test_without_distances_the_progress_ranking_chooses_and_says_so(values_alone):
    """A layer with values alone: best_move and line choose as before
    distances (the progress ranking), the line names the layers, and a won
    line still converts."""
    rng = random.Random(4)
    checked = 0
    while checked < 20:
        seeds = rng.randint(4, 9)
        cuts = sorted(rng.randint(0, seeds) for _ in range(11))
        position = Position([b - a for a, b in zip([0, *cuts], [*cuts, seeds])], rng.choice("SN"))
        if position.is_over() or values_alone.value(position) <= 0:
            continue
        with pytest.raises(MissingDistanceError):
            values_alone.distance(position)
        line = values_alone.line(position, max_plies=400)
        assert seeds in line.layers_without_distances and line.distance is None
        converted = any(line.captures) or line.end_reason in ("no feeding move", "no seeds to move")
        assert line.end_reason != "ply limit" and converted, str(position)
        chosen = values_alone.best_move(position)
        assert chosen.move in values_alone.best_moves(position) and chosen.distance is None
        checked += 1


def test_a_line_with_distances_names_no_layer_without(tablebase):
    line = tablebase.line(Position.from_string("0-0-0-1-2-0/1-0-0-2-0-1 S"))
    assert line.layers_without_distances == [] and line.moves


def test_without_distances_lines_follow_the_ranks_of_the_whole_graph(values_alone, monkeypatch):
    """The fallback is the ranking toward leaving the layer as before: a line
    is the one the whole graph of best moves' ranks gives."""
    from test_probe import full_graph_ranks

    rng = random.Random(12)
    lines = []
    while len(lines) < 15:
        seeds = rng.randint(4, 9)
        cuts = sorted(rng.randint(0, seeds) for _ in range(11))
        position = Position([b - a for a, b in zip([0, *cuts], [*cuts, seeds])], rng.choice("SN"))
        if not position.is_over() and values_alone.value(position) > 0:
            lines.append((position, values_alone.line(position, max_plies=400).moves))
    monkeypatch.setattr(Tablebase, "_progress", lambda self, board, deadline=None: full_graph_ranks(self, board))
    for position, moves in lines:
        assert values_alone.line(position, max_plies=400).moves == moves, str(position)


def test_a_layer_loaded_whole_with_damaged_distances_keeps_its_values(tmp_path):
    """load() reads a layer's distances with its values; damaged distances
    do not refuse the values, the look-ups that need them raise."""
    import h5py

    from solver import tables
    from solver.errors import CorruptTableError

    directory = str(tmp_path)
    build.build(8, directory)
    with h5py.File(tables.table_path(directory, 8), "r+") as handle:
        handle["distance"][0] = (handle["distance"][0] + 1) % 200  # only the chunk's CRC sees it
    position = Position.from_string("2-0-1-0-3-1/0-0-0-0-0-1 S")
    with Tablebase(directory) as opened:
        opened.load(8)
        assert opened.is_loaded(8) and opened.value(position) == opened.values(
            np.array([position.mover_board()], dtype=np.uint8))[0]
        with pytest.raises(CorruptTableError, match="CRC"):
            opened.distance(position)
