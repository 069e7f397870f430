"""What the oracle answers, as plain data: no HTTP here.

Each function takes the objects it reads (a Tablebase, a Searcher, a Game)
and returns a dict of JSON types; solver.web.app turns requests into calls
and solver.web.worker runs the slow ones in a process of their own.

A game is a start position and the moves played from it: the true
repetition rule applies over those moves (a position met a second time ends
the game, each side taking the seeds on its own side). Table values follow
the tables' convention (endless play is an even split); a move that would
repeat a position of the game is flagged with the score that repetition
gives.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..errors import MissingTableError, TableError, TableMismatchError
from ..position import Game, Position, outcome_of
from ..report import EndReason, Outcome, move_rows, seeds_number

if TYPE_CHECKING:  # for the annotations only: the callers hand in the objects
    from ..probe import Tablebase
    from ..search import Searcher

TABLE, SEARCH = "table", "search"


def parse_game(position: str | None, moves: str | None) -> Game:
    """The Game of a request: `position` (the opening when None) with the
    record `moves` played from it. Raises InvalidPositionError or
    InvalidRecordError."""
    start = Position.initial() if position is None else Position.from_string(position)
    if moves and moves.strip():
        return Game.from_record(moves, start)
    return Game(start)


def _text(reason: EndReason | None) -> str | None:
    """An EndReason as JSON text, or None."""
    return None if reason is None else str(reason)


def _scores(totals: tuple[float, float] | None) -> list[int | float] | None:
    """(South, North) seed totals as JSON numbers, or None."""
    return None if totals is None else [seeds_number(x) for x in totals]


def game_report(game: Game) -> dict:
    """The game's current position and how the game stands, without values."""
    position = game.position
    result = game.result()
    return {
        "start": str(game.start),
        "played": list(game.moves),
        "record": game.record(),
        "position": str(position),
        "houses": list(position.houses),
        "to_move": position.to_move,
        "captured": list(position.captured),
        "seeds": position.seeds,
        "legal_moves": game.legal_moves(),
        "over": game.is_over(),
        "end": _text(game.end_reason),
        "result": _scores(result),
        "outcome": outcome_of(result),
    }


def position_report(tablebase: Tablebase, game: Game) -> dict:
    """game_report plus, when the tables hold the position, its value, the
    predicted final score and every legal move's value.

    `tables` is False when a layer the position or one of its moves needs is
    not built: the values are then None and the position is for the search.
    Each move: letter, seeds captured, value for the mover, the final score
    it leads to under perfect play, 'win'/'draw'/'loss' for the mover, best,
    and `repeats` with `repetition_result` when playing it would repeat a
    position of the game (which ends the game by the true rule).
    """
    data = game_report(game)
    data.update({"tables": False, "value": None, "predicted_result": None, "moves": [], "best_moves": []})
    if game.is_over():
        return data
    position = game.position
    if not tablebase.has_layer(position.seeds):
        return data
    try:
        value = tablebase.value(position)
        moves = tablebase.moves(position)
        in_game = tablebase.game_moves(game)
    except MissingTableError:
        return data  # a layer one of its moves reaches is missing: searched instead
    rows = move_rows(moves)
    for row, played in zip(rows, in_game):
        repetition = played.outcome if played.repeats else None  # a repeating move's outcome is the repetition's
        row["repetition_result"] = None if repetition is None else repetition.scores()
        row["repeats"] = played.repeats
    predicted = Outcome.predicted(position, value)
    data.update({
        "tables": True,
        "value": value,
        "predicted_result": predicted.scores(),
        "outcome": predicted.winner,
        "moves": rows,
        "best_moves": [row["move"] for row in rows if row["best"]],
    })
    return data


def search_report(searcher: Searcher, game: Game, time: float, cycles: str = "own", move_values: bool = True) -> dict:
    """The search result of the game's position (SearchResult.as_dict) with,
    when `move_values`, every legal move's value from the same search
    (Searcher.search_every_move), as `awele best` does."""
    # One search values every move: the position's value is its best move's.
    result = (searcher.search_every_move if move_values else searcher.search)(game, time=time, cycles=cycles)
    data = result.as_dict()
    predicted = None if result.value is None else Outcome.predicted(result.position, result.value)
    data.update({"to_move": result.position.to_move, "seeds": result.position.seeds, "time": time,
                 "predicted_result": None if predicted is None else predicted.scores(),
                 "outcome": None if predicted is None else predicted.winner,
                 "moves": move_rows(result.moves) if result.moves is not None else None})
    return data


def warm_up(tablebase: Tablebase) -> None:
    """Load the kernels a position report uses (numba's cache), reading at
    most a layer of two seeds."""
    position_report(tablebase, Game(Position.initial()))
    position_report(tablebase, Game(Position.from_string("0-0-0-0-0-1/1-0-0-0-0-0 S")))


def line_report(tablebase: Tablebase, position: Position, max_plies: int) -> dict:
    """The perfect-play line from `position` (Tablebase.line): moves, captures,
    how it ends and the final score."""
    line = tablebase.line(position, max_plies=max_plies)
    return {
        "position": str(position),
        "value": line.value,
        "moves": list(line.moves),
        "captures": [int(c) for c in line.captures],
        "positions": [str(p) for p in line.positions],
        "end": _text(line.end_reason),
        "result": _scores(line.result),
        "predicted_result": _scores(tablebase.predicted_result(position)),
    }


_LAYER_NAMED = re.compile(r"awele-(\d{2})\.h5|no table for (\d+) seeds|layer (\d+)")


def table_message(error: TableError) -> str:
    """What a client is told about a table error: the layer, never the
    server's paths. A missing layer is the request's (a 400); a damaged or
    mismatched one is the server's (a 500)."""
    match = _LAYER_NAMED.search(str(error))
    layer = f"layer {int(next(g for g in match.groups() if g is not None))}" if match else "a layer"
    if isinstance(error, MissingTableError):
        return f"{layer} is not built on this server"
    if isinstance(error, TableMismatchError):
        return f"{layer} of this server's tables was built for another awele format: the server must rebuild it"
    return f"{layer} of this server's tables is damaged (it fails its checks): the server must rebuild it"
