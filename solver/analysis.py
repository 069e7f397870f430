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
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from .errors import InvalidArgumentError, InvalidRecordError, MissingTableError, SearchError
from .position import NORTH, SIDE_NAMES, SOUTH, Game, Position, as_position, parse_record
from .report import EndReason, MoveValue, Outcome, Rule, ended_value, true_rule_may_change

if TYPE_CHECKING:  # the table and search modules load numba kernels: imported when used
    from .probe import Tablebase
    from .repetition import Bounds
    from .search import Searcher

INACCURACY_SEEDS = 1  # giving away at least this much is an inaccuracy
MISTAKE_SEEDS = 4  # ... and at least this much a mistake
MARK_SYMBOLS = {None: "", "inaccuracy": "?!", "mistake": "?", "blunder": "??"}
MIN_TIME_PER_PLY = 0.01  # seconds; a ply's legal moves share it, and each needs time for one iteration
SOURCES = ("table", "search")
MIN_GRAPH_POSITIONS = 1000  # a true rule's graph allowed fewer positions than this is not tried


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
    judge = _Judge(tablebase, searcher, time_per_ply, max_tables)
    try:
        replay = Game(game.start)
        plies = []
        summaries = {SOUTH: SideSummary(SIDE_NAMES[SOUTH]), NORTH: SideSummary(SIDE_NAMES[NORTH])}
        number = 1
        for ply_index, move in enumerate(game.moves):
            before = replay.position
            source, cycles, value_before, scores = judge.scores(replay)
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
            )
            plies.append(ply)
            summaries[before.to_move].add(ply)
            if before.to_move == NORTH:
                number += 1
            if progress is not None:
                progress(ply)
    finally:
        if searcher is None and judge.searcher is not None:
            judge.searcher.close()  # made here: its background reader stops before the tables may close
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
    return Game.from_record(game, None if start is None else as_position(start))


def _holding(position: Position, score: MoveValue) -> MoveValue:
    """A table move's record, its rule "true" when the true rule cannot change
    its value: the move captures (no earlier position can come back) into a
    position whose mover takes every seed left or none (report.true_rule_may_change)."""
    if score.rule is Rule.TRUE or not score.captured or score.value is None:
        return score
    if true_rule_may_change(score.captured - score.value, position.seeds - score.captured):
        return score
    return replace(score, rule=Rule.TRUE)


def _refined(position: Position, score: MoveValue, bounds: Bounds | None) -> MoveValue:
    """A move's record within the true rule's proven bounds: their value, exact,
    where they meet; else an estimate under the true rule is kept within
    them, and a value under the tables' convention stays what it is (exact
    under that convention, and said to be). An exact value under the true
    rule (a game end, a proof) stands."""
    if bounds is None or (score.exact and score.rule is Rule.TRUE):
        return score
    low, high = bounds.moves[score.move]
    if low == high:
        value, exact = low, True
    elif score.value is None or score.rule is Rule.SPLIT:
        return score
    else:
        value, exact = min(max(score.value, low), high), False
    ended = score.outcome if score.outcome is not None and score.outcome.reason is not None else None
    return MoveValue.of(position, score.move, score.captured, value, exact, Rule.TRUE, score.repeats, ended)


def _from_bounds(game: Game, bounds: Bounds) -> list[MoveValue]:
    """Every legal move's record from exact true-rule bounds; a move that ends
    the game (a repetition, 25 seeds) is valued by that end."""
    position = game.position
    scores = []
    for move in game.legal_moves():
        captured = game.play(move)
        try:
            if game.is_over():
                totals, reason = game.result(), game.end_reason
                assert totals is not None and reason is not None, "a game that is over has its result"
                scores.append(MoveValue.of(position, move, captured, ended_value(totals, position), True, Rule.TRUE,
                                           reason == EndReason.REPETITION, Outcome.ended(totals, reason)))
            else:
                scores.append(MoveValue.of(position, move, captured, bounds.moves[move][0], True, Rule.TRUE))
        finally:
            game.undo()
    return scores


class _Judge:
    """Every legal move's value at a ply: from the tables where they reach,
    else by search (made on first need)."""

    def __init__(self, tablebase: Tablebase, searcher: Searcher | None, time_per_ply: float | None,
                 max_tables: int | None) -> None:
        self.tablebase = tablebase
        self.searcher = searcher
        self.time_per_ply = time_per_ply
        self.max_tables = max_tables
        self._warmed = False

    def scores(self, game: Game) -> tuple[str, str, int, list[MoveValue]]:
        """(source, cycles, value, [MoveValue]) for the position `game` is in.

        Every value is then under the true rule with the game's history
        (rule "true") where that is known: a table value that the rule
        cannot change, a search's, or the true rule's graph (_true_bounds).
        The others keep the tables' convention (rule "split"), and the ply's
        `cycles` says so: "own" only when every move's value is under the true rule."""
        position = game.position
        started = time.perf_counter()
        found = self._from_tables(position)
        if found is not None:
            source = "table"
            scores = [_holding(position, score) for score in found[1]]
            if self.time_per_ply is not None and not all(score.rule is Rule.TRUE for score in scores):
                bounds = self._true_bounds(game, started + self.time_per_ply)
                scores = [_refined(position, score, bounds) for score in scores]
        elif self.time_per_ply is None:
            raise MissingTableError(self._why_no_table(position))
        else:
            source = "search"
            # The true rule's graph first (half the time at most): for the small
            # positions whose values rest on cycles it proves what a search cannot.
            bounds = self._true_bounds(game, started + self.time_per_ply / 2)
            if bounds is not None and all(low == high for low, high in bounds.moves.values()):
                scores = _from_bounds(game, bounds)
            else:
                left = max(MIN_TIME_PER_PLY, started + self.time_per_ply - time.perf_counter())
                scores = [_refined(position, score, bounds) for score in self._searched(game, left)]
        cycles = "own" if all(score.rule is Rule.TRUE for score in scores) else "split"
        return source, cycles, max(_known(s) for s in scores), scores

    def _searched(self, game: Game, seconds: float) -> list[MoveValue]:
        """Every legal move valued by one search of `seconds` (true rule, the game's history)."""
        searcher = self._searcher()
        if not self._warmed:
            # A Searcher clears its transposition table the first time it is
            # asked for another repetition rule, inside the timed search; do
            # that here so each move gets its whole share of the time.
            searcher.search(game, depth=1, cycles="own")
            self._warmed = True
        searched = searcher.search_every_move(game, time=seconds, cycles="own")
        assert searched.moves is not None, "search_every_move values every move"
        return searched.moves

    def _true_bounds(self, game: Game, deadline: float) -> Bounds | None:
        """Every legal move's proven bounds under the true rule with the game's
        history (solver.repetition), or None when its graph is too large for
        the time left before `deadline` (time.perf_counter()) or not solved by then.
        The limit on positions is the search's (REPETITION_RATE a second, a
        share of that when the root's layer alone is larger)."""
        from . import index
        from .repetition import true_rule_bounds
        from .search import DEFAULT_COMPONENT_LIMIT, REPETITION_RATE, REPETITION_SMALL_SHARE

        position = game.position
        limit = min(DEFAULT_COMPONENT_LIMIT, int((deadline - time.perf_counter()) * REPETITION_RATE))
        if limit < 2 * index.layer_size(position.seeds):
            limit //= REPETITION_SMALL_SHARE  # the whole graph will not fit: look for a small one only
        if limit < MIN_GRAPH_POSITIONS:
            return None
        bounds = true_rule_bounds(position, game.positions[:-1], self.tablebase.store.arrays(), limit, deadline)
        return bounds if bounds.status == "solved" else None

    def _from_tables(self, position: Position) -> tuple[int, list[MoveValue]] | None:
        """(value, [MoveValue]) from the tables, or None when they do not reach."""
        seeds = position.seeds
        if (self.max_tables is not None and seeds > self.max_tables) or not self.tablebase.has_layer(seeds):
            return None
        try:
            value = self.tablebase.value(position)
            scores = self.tablebase.moves(position)
        except MissingTableError:
            return None  # a layer a move reaches is missing: search
        return int(value), scores

    def _why_no_table(self, position: Position) -> str:
        seeds = position.seeds
        if self.max_tables is not None and seeds > self.max_tables:
            why = f"it has more than max_tables={self.max_tables} seeds"
        else:
            from . import tables

            missing = [n for n in range(seeds + 1) if not self.tablebase.has_layer(n)] or [seeds]
            why = (f"layer {missing[-1]} is not built in {self.tablebase.directory}: "
                   f"build it with `{tables.build_command(missing[-1], self.tablebase.directory)}`")
        return f"no table answers {position} ({seeds} seeds): {why}; and searching is off (time_per_ply=None)"

    def _searcher(self) -> Searcher:
        if self.searcher is None:
            from .index import layer_size
            from .search import DEFAULT_TABLE_BYTES, Searcher

            if self.max_tables is None:
                self.searcher = Searcher(self.tablebase)
            else:
                # Exactly the layers up to max_tables in memory, as far as the
                # search's usual budget allows.
                fits, used = -1, 0
                while fits < self.max_tables and used + layer_size(fits + 1) <= DEFAULT_TABLE_BYTES:
                    fits += 1
                    used += layer_size(fits)
                self.searcher = Searcher(self.tablebase, max_table_seeds=max(0, fits))
        return self.searcher


__all__ = [
    "INACCURACY_SEEDS",
    "MISTAKE_SEEDS",
    "Analysis",
    "PlyAnalysis",
    "SideSummary",
    "analyse",
    "mark_move",
    "outcome_class",
]
