"""Perfect-play lookup: values, move values, best moves, lines, the CLI."""

import json
import random

import numpy as np
import pytest
from click.testing import CliRunner
from naive import naive_legal_moves, naive_play
from naive_solver import naive_solve

from solver import Position
from solver.cli import cli
from solver.errors import GameOverError, InvalidPositionError, MissingTableError
from solver.position import Game
from solver.probe import Tablebase

NAIVE_LAYERS = 8


def random_positions(seeds, count, rng, in_index=None):
    """Random positions with `seeds` seeds, either side to move."""
    found = []
    while len(found) < count:
        cuts = sorted(rng.randint(0, seeds) for _ in range(11))
        houses = [b - a for a, b in zip([0] + cuts, cuts + [seeds])]
        position = Position(houses, rng.choice("SN"), (0, 0))
        board = list(position.mover_board())
        if in_index is not None and (0 in board[6:]) != in_index:
            continue
        found.append(position)
    return found


def naive_value(board):
    board = tuple(int(b) for b in board)
    return naive_solve(NAIVE_LAYERS)[sum(board)][board]


def naive_move_values(board):
    result = {}
    for house in naive_legal_moves(list(board)):
        captured, child = naive_play(list(board), house)
        result[house] = captured - naive_value(child)
    return result


@pytest.mark.slow  # 10-50 s: CI runs it on its own line (.ci/run)
def test_values_and_best_moves_agree_with_the_naive_solver(tablebase):
    rng = random.Random(7)
    for seeds in range(NAIVE_LAYERS + 1):
        for position in random_positions(seeds, 40, rng):
            board = [int(b) for b in position.mover_board()]
            assert tablebase.value(position) == naive_value(board), position
            reference = naive_move_values(board)
            letters = "ABCDEF" if position.to_move == "S" else "abcdef"
            got = tablebase.move_values(position)
            assert got == {letters[h]: v for h, v in reference.items()}, position
            if reference:
                best = max(reference.values())
                assert tablebase.best_moves(position) == [letters[h] for h, v in reference.items() if v == best]


def test_positions_outside_the_index_are_answered_by_one_ply(tablebase):
    rng = random.Random(3)
    for position in random_positions(8, 30, rng, in_index=False):
        board = [int(b) for b in position.mover_board()]
        assert tablebase.value(position) == naive_value(board)


def test_vectorised_values_match_single_probes(tablebase):
    rng = random.Random(11)
    positions = [p for n in range(0, 13) for p in random_positions(n, 20, rng)]
    boards = np.array([p.mover_board() for p in positions], dtype=np.uint8)
    values = tablebase.values(boards)
    assert values.dtype == np.int8
    assert list(values) == [tablebase.value(p) for p in positions]
    with pytest.raises(InvalidPositionError):
        tablebase.values(np.zeros((3, 11), dtype=np.uint8))


def test_missing_layer_names_the_build_command(tmp_path):
    with Tablebase(str(tmp_path)) as empty:
        with pytest.raises(MissingTableError, match="awele build --max-seeds 20"):
            empty.value(Position.from_string("4-4-4-4-4-0/0-0-0-0-0-0 S 0:0"))
        with pytest.raises(MissingTableError, match="layer 5"):
            empty.values(np.array([[1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1]], dtype=np.uint8))


def test_lines_end_with_the_score_the_value_predicts(tablebase):
    rng = random.Random(5)
    checked = 0
    for seeds in range(3, 13):
        for position in random_positions(seeds, 8, rng):
            if position.is_over():
                continue
            line = tablebase.line(position, max_plies=400)
            predicted = tablebase.predicted_result(position)
            if tablebase.value(position) != 0:
                assert line.end_reason != "ply limit"
                if line.end_reason == "repetition":
                    # The tables score endless play as an even split of the seeds left;
                    # the line applies the true rule there, so compare before it.
                    last = line.positions[-1]
                    south, north = last.captured
                    assert (south + last.seeds / 2, north + last.seeds / 2) == predicted, (str(position), line)
                else:
                    assert line.result == predicted, (str(position), line)
                checked += 1
            # Every move of the line is a best move of its position.
            for before, move in zip(line.positions, line.moves):
                assert move in tablebase.best_moves(before)
    assert checked > 30


def full_graph_ranks(tablebase, board):
    """Reference for Tablebase._progress: the whole graph of best moves
    reachable without a capture, ranked by the definition, one rank at a time."""
    root = tuple(int(x) for x in board)
    nodes = {}
    stack = [(root, True)]
    while stack:
        node, winner = stack.pop()
        if node not in nodes:
            nodes[node] = (winner, tablebase._best_edges([node])[node][1])
            stack.extend((child, not winner) for _, captured, child in nodes[node][1] if captured == 0)
    rank = {}
    for k in range(len(nodes) + 1):
        found = {}
        for node, (winner, edges) in nodes.items():
            inner = [child for _, captured, child in edges if captured == 0]
            if node in rank:
                continue
            if winner:
                ranked = len(inner) < len(edges) or not edges or any(rank.get(c, k) < k for c in inner)
            else:
                ranked = all(c in rank for c in inner)
            if ranked:
                found[node] = k
        if not found:
            break
        rank.update(found)
    return rank


def test_progress_ranks_and_lines_match_the_whole_graph(tablebase, monkeypatch):
    """_progress explores only about rank(board) plies; its ranks must be upper
    bounds, exact at the root and its best children, so that a line is the
    one the whole graph's ranks give."""
    rng = random.Random(12)
    checked = 0
    lines = []
    for seeds in range(4, 13):
        for position in random_positions(seeds, 6, rng):
            if position.is_over() or tablebase.value(position) <= 0:
                continue
            board = tuple(int(x) for x in position.mover_board())
            reference = full_graph_ranks(tablebase, board)
            found = tablebase._progress(board)
            assert found[board] == reference[board], str(position)
            assert all(found[node] >= reference[node] for node in found), str(position)
            _, edges = tablebase._best_edges([board])[board]
            children = [child for _, captured, child in edges if captured == 0]
            if children and len(edges) == len(children):
                low = min(reference.get(c, 10**9) for c in children)
                assert ({c for c in children if found.get(c) == low}
                        == {c for c in children if reference.get(c) == low}), str(position)
            lines.append((position, tablebase.line(position, max_plies=400).moves))
            checked += 1
    assert checked > 20
    monkeypatch.setattr(Tablebase, "_progress", lambda self, board, deadline=None: full_graph_ranks(self, board))
    for position, moves in lines:
        assert tablebase.line(position, max_plies=400).moves == moves, str(position)


def test_a_deadline_passed_gives_up_the_ranking_and_keeps_a_best_move(tablebase):
    """Within a time limit (a search answered from the tables) the winner's
    progress ranking, which can take seconds in a large layer, is given up at
    the deadline: the move chosen still keeps the value, and the line stops."""
    rng = random.Random(5)
    checked = 0
    for seeds in range(6, 13):
        for position in random_positions(seeds, 8, rng):
            if position.is_over() or tablebase.value(position) <= 0:
                continue
            board = tuple(int(x) for x in position.mover_board())
            assert tablebase._progress(board, deadline=0.0) is None
            best = tablebase.best_moves(position)
            line = tablebase.line(position, max_plies=50, deadline=0.0)
            assert len(line.moves) == 1 and line.moves[0] in best, str(position)
            chosen = tablebase.best_move(Game(position), deadline=0.0)
            assert chosen.value == tablebase.value(position) and chosen.move in best, str(position)
            checked += 1
    assert checked > 10


def test_predicted_result_uses_captured_counts(tablebase):
    position = Position.from_string("0-0-0-0-0-1/0-0-0-0-0-0 S 20:24")
    assert tablebase.value(position) == -1  # the only move feeds North, who then takes it (rule 5)
    assert tablebase.predicted_result(position) == (20, 25)
    # With 27 North has already won: the game is over and the board's seed stays with South.
    finished = Position.from_string("0-0-0-0-0-1/0-0-0-0-0-0 S 20:27")
    assert tablebase.predicted_result(finished) == (21, 27)
    with pytest.raises(GameOverError):
        tablebase.value(finished)


def test_cli_best_text_and_json(table_dir):
    runner = CliRunner()
    result = runner.invoke(cli, ["best", "0-0-0-0-1-2/1-0-0-0-0-0 N 20:23", "--dir", table_dir])
    assert result.exit_code == 0, result.output
    assert "value for North" in result.output and "*" in result.output
    query = ["query", "0-0-0-0-1-2/1-0-0-0-0-0 N 20:23", "--dir", table_dir, "--json"]
    data = json.loads(runner.invoke(cli, query).output)
    with Tablebase(table_dir) as tablebase:
        position = Position.from_string("0-0-0-0-1-2/1-0-0-0-0-0 N 20:23")
        assert data["value"] == tablebase.value(position)
        assert data["best_moves"] == tablebase.best_moves(position)
        assert {m["move"]: m["value"] for m in data["moves"]} == tablebase.move_values(position)


def test_cli_best_builds_small_missing_layers(tmp_path):
    runner = CliRunner()
    directory = str(tmp_path / "fresh")
    result = runner.invoke(cli, ["best", "0-1-0-2-0-1/1-0-0-1-0-0 S 0:0", "--dir", directory, "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["seeds"] == 6  # stderr: the notice of the build


def test_cli_best_errors_are_one_line(tmp_path):
    runner = CliRunner()
    for args in (["best", "1-2-3", "--dir", str(tmp_path)],
                 ["best", "--moves", "1. F G", "--dir", str(tmp_path)],
                 ["best", "--depth", "3", "--time", "2", "--dir", str(tmp_path)]):
        result = runner.invoke(cli, args)
        assert result.exit_code == 2, (args, result.output)
        assert len(result.output.strip().splitlines()) == 1
    # A folder best would build its small tables in, but that cannot be made: one line, before any notice.
    (tmp_path / "a-file").write_text("")
    for command in ("best", "line"):
        inside_a_file = str(tmp_path / "a-file" / "tables")
        result = runner.invoke(cli, [command, "0-1-0-2-0-1/1-0-0-1-0-0 S 0:0", "--dir", inside_a_file])
        assert result.exit_code == 2, result.output
        assert len(result.output.strip().splitlines()) == 1, result.output
    # Above the tables (and above what `best` builds by itself) it searches.
    result = runner.invoke(cli, ["best", "4-4-4-4-4-4/4-4-4-4-4-4 S 0:0", "--dir", str(tmp_path), "--depth", "4"])
    assert result.exit_code == 0, result.output
    assert "best move:" in result.output and "estimate at depth 4" in result.output


def test_cli_line_and_play(table_dir):
    runner = CliRunner()
    result = runner.invoke(cli, ["line", "0-0-2-0-1-0/0-1-0-0-0-1 S 0:0", "--dir", table_dir])
    assert result.exit_code == 0, result.output
    assert "ends:" in result.output
    session = runner.invoke(cli, ["play", "--position", "0-0-2-0-1-0/0-1-0-0-0-1 S 0:0", "--dir", table_dir],
                            input="values\nZ\nquit\n")
    assert session.exit_code == 0, session.output
    assert "illegal" in session.output and "stopped" in session.output
