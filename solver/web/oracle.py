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

from ..errors import MissingTableError, TableError, TableMismatchError
from ..position import Game, Position, outcome_of

TABLE, SEARCH = "table", "search"


def parse_game(position: str | None, moves: str | None) -> Game:
    """The Game of a request: `position` (the opening when None) with the
    record `moves` played from it. Raises InvalidPositionError or
    InvalidRecordError."""
    start = Position.initial() if position is None else Position.from_string(position)
    if moves and moves.strip():
        return Game.from_record(moves, start)
    return Game(start)


def _scores(scores):
    """(South, North) seed totals as JSON numbers: ints unless a half seed."""
    return None if scores is None else [int(x) if float(x).is_integer() else float(x) for x in scores]


def _mover_outcome(position, scores):
    """'win', 'draw' or 'loss' for the side to move of `position` if the game
    ends with (South, North) = `scores`."""
    south, north = scores
    mine, theirs = (south, north) if position.to_move == "S" else (north, south)
    return "win" if mine > theirs else "loss" if mine < theirs else "draw"


def _value_outcome(position, value):
    """'win', 'draw' or 'loss' for the side to move of `position` if the seeds
    on the board split as `value` says."""
    mine, theirs = position.mover_captured()
    margin = mine - theirs + value
    return "win" if margin > 0 else "loss" if margin < 0 else "draw"


def _value_result(position, value):
    """(South, North) final totals if the seeds on the board split as `value`
    (for the side to move) says."""
    mine, theirs = position.mover_captured()
    mover_share = (position.seeds + value) / 2
    totals = (mine + mover_share, theirs + position.seeds - mover_share)
    return _scores(totals if position.to_move == "S" else totals[::-1])


def _ended_value(game, before):
    """The mover's value of a move that ended `game`: what the end gives him
    minus what it gives the opponent, counted from `before`."""
    south, north = game.result()
    start_south, start_north = before.captured
    gained = (south - start_south) - (north - start_north)
    return gained if before.to_move == "S" else -gained


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
        "end": game.end_reason,
        "result": _scores(result),
        "outcome": outcome_of(result),
    }


def position_report(tablebase, game: Game) -> dict:
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
        predicted = tablebase.predicted_result(position)
        moves = tablebase.moves(position)
        children = [position.play(m.move) for m in moves]
        child_results = [tablebase.predicted_result(child) for child in children]
    except MissingTableError:
        return data  # a layer one of its moves reaches is missing: searched instead
    best = max(m.value for m in moves)
    seen = {p.key() for p in game.positions}
    rows = []
    for m, child, result in zip(moves, children, child_results):
        row = {
            "move": m.move,
            "captured": m.captured,
            "value": m.value,
            "best": m.value == best,
            "predicted_result": _scores(result),
            "outcome": _mover_outcome(position, result),
            "repeats": child.key() in seen,
            "repetition_result": None,
        }
        if row["repeats"]:
            game.play(m.move)
            try:
                row["repetition_result"] = _scores(game.result())
            finally:
                game.undo()
        rows.append(row)
    data.update({
        "tables": True,
        "value": value,
        "predicted_result": _scores(predicted),
        "outcome": outcome_of(predicted),
        "moves": rows,
        "best_moves": [m.move for m in moves if m.value == best],
    })
    return data


def table_choice(tablebase, game: Game) -> tuple[str | None, list[str]]:
    """Perfect play's move from the tables with the true repetition rule over
    the game: (move, []) when it is decided here, or (None, candidates) when
    the winner must choose among several quiet best moves, which takes the
    tables' progress ranking (perfect_move, run by the worker: it can take
    long in a large layer).

    A move that would repeat a position of the game is worth what the
    repetition gives (it ends the game); every other move is worth its table
    value. Among the best, a capture is taken first, as Tablebase.line does.
    Raises MissingTableError when a layer is missing.
    """
    position = game.position
    moves = tablebase.moves(position)
    seen = {p.key() for p in game.positions}
    scored = []
    for m in moves:
        value = m.value
        if position.play(m.move).key() in seen:
            game.play(m.move)
            try:
                value = _ended_value(game, position)
            finally:
                game.undo()
        scored.append((value, m))
    best = max(value for value, _ in scored)
    candidates = [m for value, m in scored if value == best]
    capturing = [m for m in candidates if m.captured > 0]
    if capturing:
        return capturing[0].move, []
    if len(candidates) == 1 or best <= 0:
        # No progress to make: a loser or a drawer cannot be led round a
        # cycle; prefer a move that keeps the game going.
        fresh = [m for m in candidates if position.play(m.move).key() not in seen]
        return (fresh or candidates)[0].move, []
    return None, [m.move for m in candidates]


def perfect_move(tablebase, position: Position | str, candidates: list[str]) -> str:
    """The tables' perfect-play move (the first move of Tablebase.line, which
    plays toward leaving the layer when winning), if it is one of
    `candidates`, else the first candidate."""
    chosen = tablebase.line(position, max_plies=1).moves[0]
    return chosen if chosen in candidates else candidates[0]


def searched_moves(searcher, game: Game, time: float, cycles: str) -> list[dict]:
    """Every legal move's value by search: a share of `time` each, the game's
    history counting for repetitions; None for a move whose search did not
    finish one ply in its share.

    As Searcher.move_values, except that a move landing in a built table is
    valued from it at once (the Searcher would first compute a whole line of
    perfect play, which in a large layer can take minutes).
    """
    tablebase = searcher.tablebase
    position = game.position
    moves = game.legal_moves()
    share = time / max(1, len(moves))
    rows = []
    for move in moves:
        captured = game.play(move)
        try:
            child = game.position
            value = None
            if game.is_over():
                value, exact = _ended_value(game, position), True
            elif tablebase.has_layer(child.seeds):
                try:
                    value, exact = captured - tablebase.value(child), True
                except MissingTableError:
                    value = None
            if value is None:
                found = searcher.search(game, time=share, cycles=cycles)
                # No value when not even one ply finished in the time given.
                value = None if found.value is None else captured - found.value
                exact = found.exact
        finally:
            game.undo()
        rows.append({"move": move, "captured": captured, "value": value, "exact": exact,
                     "outcome": None if value is None else _value_outcome(position, value)})
    best = max((row["value"] for row in rows if row["value"] is not None), default=None)
    for row in rows:
        row["best"] = row["value"] is not None and row["value"] == best
    return rows


def search_report(searcher, game: Game, time: float, cycles: str = "own", move_values: bool = True) -> dict:
    """The search result of the game's position (SearchResult.as_dict) with,
    when `move_values`, every legal move's value: half of `time` for the
    position and half shared by the moves, as `awele best` does."""
    position_time = time / 2 if move_values else time
    result = searcher.search(game, time=position_time, cycles=cycles)
    data = result.as_dict()
    predicted = None if result.value is None else _value_result(result.position, result.value)
    outcome = outcome_of(predicted)
    data.update({"to_move": result.position.to_move, "seeds": result.position.seeds, "time": time,
                 "predicted_result": predicted, "outcome": outcome,
                 "moves": searched_moves(searcher, game, time / 2, cycles) if move_values else None})
    return data


def warm_up(tablebase) -> None:
    """Load the kernels a position report uses (numba's cache), reading at
    most a layer of two seeds."""
    position_report(tablebase, Game(Position.initial()))
    position_report(tablebase, Game(Position.from_string("0-0-0-0-0-1/1-0-0-0-0-0 S")))


def line_report(tablebase, position: Position, max_plies: int) -> dict:
    """The perfect-play line from `position` (Tablebase.line): moves, captures,
    how it ends and the final score."""
    line = tablebase.line(position, max_plies=max_plies)
    return {
        "position": str(position),
        "value": line.value,
        "moves": list(line.moves),
        "captures": [int(c) for c in line.captures],
        "positions": [str(p) for p in line.positions],
        "end": line.end_reason,
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
