"""Game analysis: every ply of a game against perfect play.

>>> with Tablebase("databases") as tablebase:                  # doctest: +SKIP
...     report = analyse("1. F b 2. D a", tablebase, time_per_ply=1.0)
...     [(p.move, p.value_before, p.value_after, p.given_away, p.mark) for p in report.plies]

For each ply the analysis gives, from the view of the side that moved (the
*mover*, as every value in this package): the value of the position before
the move, the value of the move played (``value_after``: the seeds it
captured minus the value of the position it left, for the opponent), the
best moves and their value, and the seeds the move gave away,
``best_value - value_after`` (never negative). A value is the seeds the mover
captures from there on minus the seeds the opponent captures (RULES.md).

Every value is meant under the game's rules, the true repetition rule with
the game played so far included: a position met again ends the game, each
side taking the seeds on its own side. Where the position's layer is in the
tables, the moves are valued from them (exact, but under the tables'
convention: endless play is an even split); above the tables one search
values every legal move (``Searcher.search_every_move``) under the true rule.
Either way, the true rule's graph of the positions reachable from the ply,
with the game's history (solver.repetition), proves what it can within
``time_per_ply``; a value it does not settle and that rests on the tables'
convention keeps its rule "split", and the ply's ``cycles`` says so. A ply is
exact only when every move's value is proven under the rule it states.

Marks, from the seeds given away and the predicted result (the mover's
captures so far plus the value, against the opponent's):

- ``blunder`` (??): the move changes the predicted outcome, win, draw or loss
  (at a ply whose values are estimates, only if it also gives away 4 or more);
- ``mistake`` (?): it gives away MISTAKE_SEEDS (4) or more without changing it;
- ``inaccuracy`` (?!): it gives away 1 to 3.

A given-away of 2 leaves the mover one seed fewer at the end and the
opponent one more.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import InvalidArgumentError, InvalidRecordError, SearchError
from .position import NORTH, SIDE_NAMES, SOUTH, Game, Position, parse_record
from .report import EndReason, MoveValue, Outcome

if TYPE_CHECKING:  # the table and search modules load numba kernels: imported when used
    from .engine import Engine
    from .probe import Tablebase
    from .search import Searcher

INACCURACY_SEEDS = 1  # giving away at least this much is an inaccuracy
MISTAKE_SEEDS = 4  # ... and at least this much a mistake
MARK_SYMBOLS = {None: "", "inaccuracy": "?!", "mistake": "?", "blunder": "??"}
MIN_TIME_PER_PLY = 0.01  # seconds; a ply's legal moves share it, and each needs time for one iteration
SOURCES = ("table", "search")


@dataclass
class PlyAnalysis:
    """One ply of the game, judged against perfect play.

    ply: 1 for the first move of the record; move_number, side ("South" or
    "North") and move (its letter) as in the record; position and
    position_after: the positions before and after the move, as text;
    seeds: on the board before the move; captured: seeds the move took.

    Values, all from the mover's view (seeds the mover captures from the
    position before the move on, minus the opponent's): value_before, the
    position's value; value_after, the played move's value (seeds it captured
    minus the value of the position it left, for the opponent); best_value
    and best_moves, the best moves' value and letters; given_away,
    best_value - value_after (>= 0; 0 when a best move was played); mark:
    None, "inaccuracy", "mistake" or "blunder" (see the module docstring).

    source: "table" (valued from the tables) or "search" (above them);
    cycles: "own" when every value is under the true repetition rule with
    the game's history, "split" when some follow the tables' convention
    (endless play scored 0; each MoveValue's rule says which); exact: every
    value of the ply is proven under the rule it states; moves: every legal
    move's MoveValue, in sowing order.

    distance: the played move's distance to conversion (plies to the next
    capture or end, solver.distance; None where its value is 0, it was
    searched or the tables hold no distances); time_given: where the move
    kept the value, the plies it gave up against the best of the moves that
    keep it: the side ahead converting slower than it could, the side behind
    giving in sooner than it had to (0: none given up; None: no distances).
    """

    ply: int
    move_number: int
    side: str
    move: str
    position: str
    position_after: str
    seeds: int
    captured: int
    value_before: int
    value_after: int
    best_value: int
    best_moves: list[str]
    given_away: int
    mark: str | None
    exact: bool
    source: str
    cycles: str
    moves: list[MoveValue] = field(default_factory=list)
    distance: int | None = None
    time_given: int | None = None

    @property
    def symbol(self) -> str:
        """The mark as a chess-style suffix: "", "?!", "?" or "??"."""
        return MARK_SYMBOLS[self.mark]

    @property
    def notation(self) -> str:
        """The move as in a record, with its mark: ``12. C?`` or ``12... c``."""
        dots = "." if self.side == SIDE_NAMES[SOUTH] else "..."
        return f"{self.move_number}{dots} {self.move}{self.symbol}"

    def as_dict(self) -> dict:
        """Plain JSON-able data (ints, strings, booleans, None, lists)."""
        return {
            "ply": self.ply,
            "move_number": self.move_number,
            "side": self.side,
            "move": self.move,
            "notation": self.notation,
            "position": self.position,
            "position_after": self.position_after,
            "seeds": self.seeds,
            "captured": self.captured,
            "value_before": self.value_before,
            "value_after": self.value_after,
            "best_value": self.best_value,
            "best_moves": list(self.best_moves),
            "given_away": self.given_away,
            "mark": self.mark,
            "exact": self.exact,
            "source": self.source,
            "cycles": self.cycles,
            "moves": [m.as_dict() for m in self.moves],
            "distance": self.distance,
            "time_given": self.time_given,
        }


@dataclass
class SideSummary:
    """One side's account over the game: moves analysed, how many were best,
    seeds given away in all, the marks, and whether all its plies are exact."""

    side: str
    moves: int = 0
    best_moves: int = 0
    given_away: int = 0
    inaccuracies: int = 0
    mistakes: int = 0
    blunders: int = 0
    exact: bool = True

    def add(self, ply: PlyAnalysis) -> None:
        """Count one of this side's plies."""
        self.moves += 1
        self.best_moves += ply.given_away == 0
        self.given_away += ply.given_away
        self.inaccuracies += ply.mark == "inaccuracy"
        self.mistakes += ply.mark == "mistake"
        self.blunders += ply.mark == "blunder"
        self.exact = self.exact and ply.exact

    def as_dict(self) -> dict:
        """Plain JSON-able data."""
        return {
            "side": self.side,
            "moves": self.moves,
            "best_moves": self.best_moves,
            "given_away": self.given_away,
            "inaccuracies": self.inaccuracies,
            "mistakes": self.mistakes,
            "blunders": self.blunders,
            "exact": self.exact,
        }


@dataclass
class Analysis:
    """A whole game analysed.

    start: the start position (text); record: the moves as a record
    (``1. F b 2. D a``); plies: a PlyAnalysis per move; south, north: each
    side's SideSummary; position: the position after the last move; over,
    end_reason, result: whether the game has ended, why ("25 seeds",
    "24-24", "no feeding move", "no seeds to move", "repetition") and the
    final (South, North) totals, else False, None, None; exact: every ply
    exact; time_per_ply, max_tables: the limits the analysis ran with.
    """

    start: str
    record: str
    plies: list[PlyAnalysis]
    south: SideSummary
    north: SideSummary
    position: str
    over: bool
    end_reason: EndReason | None
    result: tuple[int, int] | None
    exact: bool
    time_per_ply: float | None
    max_tables: int | None

    def summary(self, side: str) -> SideSummary:
        """The SideSummary of "S"/"South" or "N"/"North"."""
        key = {"S": SOUTH, "SOUTH": SOUTH, "N": NORTH, "NORTH": NORTH}.get(str(side).upper())
        if key is None:
            raise InvalidArgumentError(f"side must be S, N, South or North, got {side!r}")
        return self.south if key == SOUTH else self.north

    def as_dict(self) -> dict:
        """Plain JSON-able data (ints, strings, booleans, None, lists, dicts)."""
        return {
            "start": self.start,
            "record": self.record,
            "plies": [p.as_dict() for p in self.plies],
            "summary": {"South": self.south.as_dict(), "North": self.north.as_dict()},
            "position": self.position,
            "over": self.over,
            "end_reason": None if self.end_reason is None else str(self.end_reason),
            "result": None if self.result is None else [int(x) for x in self.result],
            "exact": self.exact,
            "time_per_ply": self.time_per_ply,
            "max_tables": self.max_tables,
        }


def analyse(
    game: Game | str,
    tablebase: Tablebase | str | os.PathLike | None,
    searcher: Searcher | None = None,
    time_per_ply: float | None = 1.0,
    max_tables: int | None = None,
    *,
    start: Position | str | None = None,
    progress: Callable[[PlyAnalysis], None] | None = None,
) -> Analysis:
    """Analyse every ply of `game` against perfect play; return an Analysis.

    `game`: a Game, or a record such as ``"1. F b 2. D a"`` played from
    `start` (a Position or its notation; the opening when None). A record
    that cannot be read, holds no move or plays an illegal move raises
    InvalidRecordError naming the move; a Game with no moves gives an
    Analysis without plies.

    `tablebase`: a probe.Tablebase or the folder of the tables. Positions
    with at most `max_tables` seeds (every layer in the folder when None)
    whose tables are there are answered from them. Positions above are
    searched by `searcher` (a search.Searcher; one is made on the same
    tables when None) with `time_per_ply` seconds shared by the legal moves
    and the true repetition rule over the game played so far. With
    `time_per_ply` None nothing is searched: a position above the tables
    raises MissingTableError.

    `progress`, if given, is called with each PlyAnalysis as it is done.
    """
    game = _replayable(game, start)
    if time_per_ply is not None and (
        isinstance(time_per_ply, bool) or not isinstance(time_per_ply, (int, float))
        or not math.isfinite(time_per_ply) or time_per_ply < MIN_TIME_PER_PLY
    ):
        raise InvalidArgumentError(
            f"time_per_ply must be a finite number of seconds >= {MIN_TIME_PER_PLY}, or None, got {time_per_ply!r}")
    if max_tables is not None and (isinstance(max_tables, bool) or not isinstance(max_tables, int)
                                   or not 0 <= max_tables <= 48):
        raise InvalidArgumentError(f"max_tables must be an integer 0..48, or None, got {max_tables!r}")

    opened = None
    if tablebase is None or isinstance(tablebase, (str, bytes)) or hasattr(tablebase, "__fspath__"):
        from .probe import Tablebase

        tablebase = opened = Tablebase(os.fsdecode(tablebase) if tablebase is not None else None)
    engine = _engine(tablebase, searcher, max_tables)
    try:
        replay = Game(game.start)
        plies = []
        summaries = {SOUTH: SideSummary(SIDE_NAMES[SOUTH]), NORTH: SideSummary(SIDE_NAMES[NORTH])}
        number = 1
        for ply_index, move in enumerate(game.moves):
            before = replay.position
            source, cycles, value_before, scores = _judged(engine, replay, time_per_ply)
            values = {s.move: _known(s) for s in scores}
            played_value = values[move]
            best_value = max(values.values())
            exact = all(s.exact for s in scores)
            captured = replay.play(move)
            ply = PlyAnalysis(
                ply=ply_index + 1,
                move_number=number,
                side=SIDE_NAMES[before.to_move],
                move=move,
                position=str(before),
                position_after=str(replay.position),
                seeds=before.seeds,
                captured=int(captured),
                value_before=int(value_before),
                value_after=played_value,
                best_value=int(best_value),
                best_moves=[letter for letter, value in values.items() if value == best_value],
                given_away=int(best_value - played_value),
                mark=mark_move(before, best_value, played_value, exact),
                exact=exact,
                source=source,
                cycles=cycles,
                moves=scores,
                distance=next(s.distance for s in scores if s.move == move),
                time_given=time_given(scores, move),
            )
            plies.append(ply)
            summaries[before.to_move].add(ply)
            if before.to_move == NORTH:
                number += 1
            if progress is not None:
                progress(ply)
    finally:
        if searcher is None and engine.made_searcher is not None:
            engine.made_searcher.close()  # made here: its background reader stops before the tables may close
        if opened is not None:
            opened.close()
    result = game.result()
    return Analysis(
        start=str(game.start),
        record=game.record(),
        plies=plies,
        south=summaries[SOUTH],
        north=summaries[NORTH],
        position=str(game.position),
        over=game.is_over(),
        end_reason=game.end_reason,
        result=None if result is None else (int(result[0]), int(result[1])),
        exact=all(p.exact for p in plies),
        time_per_ply=None if time_per_ply is None else float(time_per_ply),
        max_tables=max_tables,
    )


def time_given(scores: list[MoveValue], move: str) -> int | None:
    """Plies `move` gave up toward the next capture against the best of the
    moves that keep the position's value (all of `scores` exact): for a
    value above 0 its distance less the least of theirs, below 0 the
    greatest of theirs less its own. None where the move does not keep the
    value, the value is 0, or a move that keeps it has no distance."""
    if not scores or not all(s.exact and s.value is not None for s in scores):
        return None
    best = max(_known(s) for s in scores)
    keeping = [s for s in scores if _known(s) == best]
    played = next((s for s in keeping if s.move == move), None)
    if best == 0 or played is None or any(s.distance is None for s in keeping):
        return None
    costs = [s.distance for s in keeping if s.distance is not None]
    assert played.distance is not None, "every move that keeps the value has its distance"
    return played.distance - min(costs) if best > 0 else max(costs) - played.distance


def outcome_class(position: Position, value: float) -> int:
    """+1, 0 or -1: the result the mover of `position` gets if the seeds on
    the board split as `value` says (his captures so far plus (n + value) / 2
    against the opponent's plus (n - value) / 2): a win, a draw or a loss."""
    return {"win": 1, "draw": 0, "loss": -1}[Outcome.predicted(position, value).for_side(position.to_move)]


def mark_move(position: Position, best_value: int, played_value: int, exact: bool = True) -> str | None:
    """The mark of a move worth `played_value` in `position` where the best
    move is worth `best_value`: None, "inaccuracy", "mistake" or "blunder"
    (see the module docstring). With estimated values (`exact` False) a
    change of outcome is a blunder only when the move also gives away
    MISTAKE_SEEDS or more: an estimate scores the seeds left at its horizon
    as an even split, so estimates hover around a draw and a seed or two
    across it says little."""
    given_away = best_value - played_value
    if given_away < INACCURACY_SEEDS:
        return None
    changes_outcome = outcome_class(position, played_value) != outcome_class(position, best_value)
    if changes_outcome and (exact or given_away >= MISTAKE_SEEDS):
        return "blunder"
    return "mistake" if given_away >= MISTAKE_SEEDS else "inaccuracy"


def _known(move: MoveValue) -> int:
    """The value of a move at an analysed ply. There always is one: a table
    value, or a search given at least MIN_TIME_PER_PLY, which finishes its
    first iteration."""
    if move.value is None:
        raise SearchError(f"the search of move {move.move} finished no iteration")
    return move.value


def _replayable(game: Game | str, start: Position | str | None) -> Game:
    """The Game to analyse, from a Game or a record and a start position."""
    if isinstance(game, Game):
        if start is not None:
            raise InvalidArgumentError("give the start position in the Game or as start=, not both")
        return game
    if not isinstance(game, str):
        raise InvalidRecordError(f"a game must be a Game or a record such as '1. F b 2. D a', "
                                 f"got {type(game).__name__}")
    if not parse_record(game):
        raise InvalidRecordError("the record holds no moves: write them as '1. F b 2. D a'")
    return Game.parse(game, start)


def _engine(tablebase: Tablebase, searcher: Searcher | None, max_tables: int | None) -> Engine:
    """The Engine that judges the plies: the given searcher, else one made on
    first need, with exactly the layers up to max_tables in memory as far as
    the search's usual budget allows."""
    from .engine import Engine

    def made() -> Searcher:
        from .index import layer_size
        from .search import DEFAULT_TABLE_BYTES, Searcher

        if max_tables is None:
            return Searcher(tablebase)
        fits, used = -1, 0
        while fits < max_tables and used + layer_size(fits + 1) <= DEFAULT_TABLE_BYTES:
            fits += 1
            used += layer_size(fits)
        return Searcher(tablebase, max_table_seeds=max(0, fits))

    return Engine(tablebase, searcher if searcher is not None else made, max_table_seeds=max_tables)


def _judged(engine: Engine, game: Game, time_per_ply: float | None) -> tuple[str, str, int, list[MoveValue]]:
    """(source, cycles, value, [MoveValue]) of the position `game` is in, by
    Engine.position under the true rule with the game's history: "own"
    cycles only when every move's value holds under the true rule. With
    `time_per_ply` None only the tables answer (MissingTableError above them)."""
    answer = engine.position(game, time=time_per_ply, search=time_per_ply is not None)
    cycles = answer.rule.cycles
    return answer.source, cycles, max(_known(s) for s in answer.moves), answer.moves


__all__ = [
    "INACCURACY_SEEDS",
    "MISTAKE_SEEDS",
    "Analysis",
    "PlyAnalysis",
    "SideSummary",
    "analyse",
    "mark_move",
    "outcome_class",
    "time_given",
]
