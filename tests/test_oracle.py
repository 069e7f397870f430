"""The page's answers as plain data (solver.engine), without the HTTP layer."""

import pytest

from solver.engine import Engine, search_report
from solver.errors import SearchError
from solver.position import Game, Position
from solver.search import Searcher


@pytest.mark.parametrize("time", [5e-324, 1e-323, 1e-9])
def test_a_search_report_of_the_smallest_times_answers_without_inventing_a_time(tmp_path, time):
    """`time` 5e-324 was halved to 0.0 and refused as "time must be positive,
    got 0.0", a number the client never sent. Too short for a ply, it gets
    a legal move, as 1e-9 does."""
    searcher = Searcher(str(tmp_path), hash_mb=1, threads=1)
    game = Game(Position.initial())
    report = search_report(Engine(searcher.tablebase, searcher), game, time)
    assert report["move"] in game.legal_moves() and report["time"] == time
    assert [row["move"] for row in report["moves"]] == game.legal_moves()
    with pytest.raises(SearchError, match="got -1"):
        search_report(Engine(searcher.tablebase, searcher), game, -1.0)
