"""Input taken for something else is refused where it enters: one line and
status 2 from the CLI, a named error from the API; no traceback."""

import os

import pytest
from click.testing import CliRunner

from solver import Game, Position, perft, tables
from solver.cli import cli
from solver.errors import AweleError, InvalidPositionError, InvalidRecordError


@pytest.mark.parametrize("board", [[0.9] + [1] * 11, ["1"] * 12, [True] + [0] * 11])
def test_mover_boards_of_floats_text_or_booleans_are_refused(board):
    with pytest.raises(InvalidPositionError):
        Position.from_mover_board(board)


def test_a_lower_case_side_is_the_same_side():
    board = [1, 0, 2, 0, 0, 1, 0, 3, 0, 0, 1, 0]
    assert Position.from_mover_board(board, "n") == Position.from_mover_board(board, "N")


@pytest.mark.parametrize("record", ["1. 2. 3.", "!? ?? +"])
def test_a_record_of_numbers_and_annotations_only_is_refused(record):
    with pytest.raises(InvalidRecordError):
        Game.from_record(record)


@pytest.mark.parametrize("call", [lambda: perft(5, 2), lambda: Game.from_record("1. F b", start="..."),
                                  lambda: Game(5)])
def test_wrong_types_are_named_errors(call):
    with pytest.raises(AweleError):
        call()


def test_a_searcher_on_something_not_a_tablebase_is_a_named_error():
    from solver.search import Searcher

    with pytest.raises(AweleError, match="Tablebase"):
        Searcher(tablebase=5)


def test_files_named_with_other_digits_are_not_layers(tmp_path):
    for name in ("awele-\u0661\u0664.h5", "awele-\uff11\uff14.h5", "awele-14.h5"):
        (tmp_path / name).write_bytes(b"")
    assert tables.built_layers(str(tmp_path)) == [14]


@pytest.mark.parametrize("args", [["build", "--max-seeds", "2", "--dir", ""],
                                  ["plan", "--max-seeds", "3", "--processes", "2", "--bandwidth", "nan"],
                                  ["plan", "--max-seeds", "3", "--processes", "2", "--bandwidth", "inf"],
                                  ["best", "--moves", "1. 2. 3."], ["best", "--moves", "!? ?? +"]])
def test_odd_options_are_one_line_and_status_2(args, tmp_path):
    result = CliRunner().invoke(cli, args, env={tables.ENVIRONMENT_VARIABLE: str(tmp_path)})
    assert result.exit_code == 2, result.output
    assert len(result.output.strip().splitlines()) == 1 and "Traceback" not in result.output
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("limit", [["--nodes", "1"], ["--nodes", "2", "--json"], ["--time", "1e-9"]])
def test_limits_too_small_for_one_depth_still_give_every_move_a_value(limit, tmp_path):
    result = CliRunner().invoke(cli, ["best", *limit], env={tables.ENVIRONMENT_VARIABLE: str(tmp_path)})
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and all(letter in result.output for letter in "ABCDEF")


@pytest.mark.parametrize("given", ["1e-400", "5e-999999", "nan", "inf", "-1", "soon"])
def test_a_time_that_is_not_a_usable_number_of_seconds_is_one_line(given):
    result = CliRunner().invoke(cli, ["search", "--time", given])
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "Traceback" not in result.output
