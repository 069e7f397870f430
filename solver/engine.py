"""The one place that decides how awele answers: from the tables or by search,
under which repetition rule, with how much of the time, and which record.

An Engine stands over a Tablebase and a Searcher and answers two questions,
each under one time Budget:

- ``Engine.position(game, ...)``: the position's value, whether it is exact,
  the rule it holds under, where it came from, its proven bounds and every
  legal move's MoveValue (``repeats`` taken from the game), as a
  report.PositionAnswer. `awele best`, the game analysis and the page's
  /api/search render it.
- ``Engine.move(game, ...)``: the move awele plays, as a report.MoveAnswer.
  `awele play`, the UCI engine and the page's /api/engine render it.

The rule is the game's own by default (``cycles="own"``): a position met a
second time ends the game, each side taking the seeds on its own side, with
the game's history counted. The tables hold values under their convention
(endless play splits the seeds left evenly); where such a value may differ
under the true rule (report.true_rule_may_change) the engine proves what it
can by the true rule's graph (solver.repetition) or searches under the true
rule, and says which rule each value holds under where it cannot.

The page's answers as JSON data (game_report, position_report: the tables'
quick look, search_report, line_report, table_message) are made here too,
without HTTP: solver.web serves them.

>>> from solver.position import Position
>>> Budget.of(2.0, started=10.0).end, Budget.of(2.0, started=10.0).table_wait
(12.0, 11.0)
"""

from __future__ import annotations

import re
import time as _time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from .early import EarlyGame
from .early import search as early_search
from .errors import GameOverError, MissingTableError, SearchError, TablebaseClosedError, TableError, TableMismatchError
from .limits import check_limits
from .position import Game, Position, as_position
from .report import (
    EndReason,
    MoveAnswer,
    MoveValue,
    Outcome,
    PositionAnswer,
    Rule,
    best_of,
    best_value,
    ended_value,
    move_rows,
    seeds_number,
    true_rule_may_change,
)

if TYPE_CHECKING:  # the table and search modules load numba kernels: imported when used
    from .probe import Tablebase
    from .repetition import Bounds
    from .search import Searcher, SearchResult

MIN_GRAPH_POSITIONS = 1000  # a true rule's graph allowed fewer positions than this is not tried
GRAPH_SHARE = 0.5  # of a position's time, the most the true rule's graph may take before the search
MIN_SEARCH_SECONDS = 0.005  # a search given less would not finish its first iteration
LINE_PLIES = 12  # plies of the line a table answer reports
UNPREPARED_SECONDS = 1.0  # the search by captures of a move without a searcher nor a time limit
TOTAL_SEEDS = 48


@dataclass(frozen=True)
class Budget:
    """The time of one answer, cut in one place: it `started` (time.perf_counter())
    and must be given by `end` (None: no time limit)."""

    started: float
    end: float | None

    @classmethod
    def of(cls, seconds: float | None, started: float | None = None) -> Budget:
        """A budget of `seconds` (None: unlimited) from `started` (default: now)."""
        started = _time.perf_counter() if started is None else started
        return cls(started, None if seconds is None else started + seconds)

    @property
    def seconds(self) -> float | None:
        """The whole time, or None."""
        return None if self.end is None else self.end - self.started

    @property
    def table_wait(self) -> float | None:
        """Until when a table answer waits for the background reader's copy of
        its layer: half the time (probes of a file being read would wait on HDF5)."""
        return None if self.end is None else self.started + (self.end - self.started) / 2

    @property
    def answer_deadline(self) -> float | None:
        """When work besides the search (a table answer's progress ranking, a
        line, the true rule's graph) stops: clock.answer_deadline."""
        if self.end is None:
            return None
        from .clock import answer_deadline  # the clock imports numba: here, for `awele uci`'s start

        return answer_deadline(self.started, self.end)

    def share(self, fraction: float) -> float | None:
        """The time when `fraction` of the budget is spent, or None."""
        return None if self.end is None else self.started + fraction * (self.end - self.started)

    def left(self, floor: float = MIN_SEARCH_SECONDS) -> float | None:
        """Seconds left (at least `floor`), or None."""
        return None if self.end is None else max(floor, self.end - _time.perf_counter())


class Engine:
    """Answers positions and moves over `tablebase` and `searcher`.

    `searcher`: a search.Searcher over the same tables, or a function that
    makes one when a search is first needed, or None (then only the tables
    and a search by captures in plain Python answer: a searcher still loading).
    `use_tables` False: positions are never answered from their tables;
    `max_table_seeds`: nor those with more seeds (None or < 0: no limit).
    `on_damage(message)` is told of a damaged layer once the engine does
    without it for an answer.
    """

    def __init__(self, tablebase: Tablebase, searcher: Searcher | Callable[[], Searcher] | None = None, *,
                 use_tables: bool = True, max_table_seeds: int | None = None,
                 on_damage: Callable[[str], None] | None = None) -> None:
        self.tablebase = tablebase
        self._searcher = searcher
        self.use_tables = use_tables
        self.max_table_seeds = None if max_table_seeds is None or max_table_seeds < 0 else max_table_seeds
        self.on_damage = on_damage
        self._warmed: set[str] = set()

    @classmethod
    def over(cls, searcher: Searcher, on_damage: Callable[[str], None] | None = None) -> Engine:
        """The Engine of `searcher`: its tables, and its max_table_seeds as the
        most seeds a root answered from them may have (the layers it was
        made to read; -1, none: the tables never answer a root)."""
        most = searcher.max_table_seeds
        return cls(searcher.tablebase, searcher, use_tables=most >= 0, max_table_seeds=max(most, 0),
                   on_damage=on_damage)

    @property
    def searcher(self) -> Searcher | None:
        """The Searcher, made on first use when a function was given."""
        if self._searcher is not None and not hasattr(self._searcher, "search"):
            self._searcher = self._searcher()
        return self._searcher  # type: ignore[return-value]

    @property
    def made_searcher(self) -> Searcher | None:
        """The Searcher if there is one already (never makes it)."""
        return self._searcher if hasattr(self._searcher, "search") else None  # type: ignore[return-value]

    # Where the tables reach ---------------------------------------------------

    def tables_reach(self, position: Position) -> bool:
        """Whether the position may be answered from its table: tables in use,
        its layer built and within max_table_seeds, and not left out by the
        search as damaged."""
        seeds = position.seeds
        if not self.use_tables or not self.tablebase.has_layer(seeds):
            return False
        if self.max_table_seeds is not None and seeds > self.max_table_seeds:
            return False
        searcher = self.made_searcher
        return searcher is None or seeds not in searcher.left_out

    def answers_from_tables(self, position: Position, cycles: str = "own", limited: bool = True,
                            wait_until: float | None = None, inside: bool | None = None) -> bool:
        """The decision for a root: answered from its table, or searched.

        From its table when the tables reach it (tables_reach), no layer its
        captures lead to is left out by the search, and, within a time limit
        (`wait_until`, time.perf_counter(): half the time), its layer is in
        memory or can be read by then (Searcher.tables_answer_in_time) --
        except under the true rule (`cycles` "own") with a limit (`limited`:
        depth, time or nodes) where the searcher holds its layer and the true
        rule may change its table value (Searcher.searches_inside_tables):
        then it is searched under that rule, the tables the search's
        estimates at its horizon. `inside`: what searches_inside_tables said
        already (None: asked here), so that one answer decides on one reading
        while the background reader brings layers in."""
        if not self.tables_reach(position):
            return False
        searcher = self.made_searcher
        if searcher is None:
            return True
        if not searcher.tables_usable(position):
            return False
        if inside is None:
            inside = searcher.searches_inside_tables(position, cycles)
        if limited and inside:
            return False
        return wait_until is None or searcher.tables_answer_in_time(position.seeds, wait_until)

    def why_no_table(self, position: Position) -> str:
        """Why the tables do not answer `position`, with the command that builds what is missing."""
        seeds = position.seeds
        if not self.use_tables:
            why = "the tables are not in use"
        elif self.max_table_seeds is not None and seeds > self.max_table_seeds:
            why = f"it has more than max_tables={self.max_table_seeds} seeds"
        else:
            from . import tables

            missing = [n for n in range(seeds + 1) if not self.tablebase.has_layer(n)] or [seeds]
            why = (f"layer {missing[-1]} is not built in {self.tablebase.directory}: "
                   f"build it with `{tables.build_command(missing[-1], self.tablebase.directory)}`")
        return f"no table answers {position} ({seeds} seeds): {why}"

    def _damaged(self, error: TableError) -> str:
        """Tell on_damage of a damaged layer (the error in full); the note the
        answer carries names the layer only, never a path."""
        if self.on_damage is not None:
            self.on_damage(f"the tables cannot answer: {error}; searching instead")
        return f"{table_message(error)}; searched without it"

    # The move -----------------------------------------------------------------

    def move(self, game: Game | Position | str, time: float | None = None, depth: int | None = None,
             nodes: int | None = None, cycles: str = "own", progress: Callable | None = None,
             started: float | None = None, tables_ready: Callable[[float | None], bool] | None = None) -> MoveAnswer:
        """The move awele plays in the game's position within the limits
        (`time` seconds from `started`, default now; `depth` plies; `nodes`).

        From the tables (table_move) when answers_from_tables says so (they
        reach the position, its layer is in memory or can be read within half
        the time, and under a limit its table value holds under the true
        rule or the searcher does not hold its layer); else by a search
        under `cycles` with the game's history (inside the tables, their values
        the estimates at its horizon). Without a searcher (still loading): the
        tables' move when `tables_ready(deadline)` says their look-ups are
        loaded by the answer's deadline, else a search by captures in plain Python (solver/early.py) until then.
        """
        check_limits(depth, time, nodes, cycles)
        rule = Rule.parse(cycles)
        game = _game(game)
        if game.is_over():
            raise GameOverError(f"the game is over in {game.position} ({game.end_reason})")
        searcher = self.searcher  # made first when it is made here: the time is the answer's
        budget = Budget.of(time, started)
        position = game.position
        if searcher is None:
            return self._unprepared_move(game, budget, tables_ready)
        note = None
        limited = time is not None or depth is not None or nodes is not None
        inside = searcher.searches_inside_tables(position, cycles)
        if self.answers_from_tables(position, cycles, limited, budget.table_wait, inside):
            try:
                answer = self.table_move(game, budget.answer_deadline)
                if rule is Rule.TRUE and answer.rule is Rule.SPLIT and not inside and true_rule_may_change(
                        self.tablebase.value(position), position.seeds):
                    # Its layer not in the search's memory yet: the true rule's graph, if it can.
                    return self._proven_move(game, budget) or answer
                return answer
            except MissingTableError:
                pass  # a smaller layer is missing: search
            except TableError as error:
                note = self._damaged(error)
        result = searcher.search(game, time=budget.left(), depth=depth, nodes=nodes, cycles=cycles, progress=progress)
        return replace(MoveAnswer.of_search(result), note=note)

    def search(self, position: Game | Position | str, depth: int | None = None, time: float | None = None,
               nodes: int | None = None, cycles: str = "own", history: list | None = None, bounds: bool = False,
               progress: Callable | None = None, threads: int | None = None) -> SearchResult:
        """`position` (a Position, its notation, or a Game, whose history then
        counts for repetitions; else `history`, the positions before it)
        answered as a search.SearchResult, as `awele search` prints it: from
        its table when answers_from_tables says so (source "table", depth 0,
        exact, the rule it holds under: "true" only under cycles "own" where
        no repetition can change it, see _table_choice_of; its line worked
        out to the end when first read, within the time), else by
        Searcher.search with the same arguments in the time left. Raises
        SearchError without a searcher."""
        from .search import SearchResult, checked_history, thread_count

        check_limits(depth, time, nodes, cycles)
        searcher = self.searcher
        if searcher is None:
            raise SearchError("Engine.search needs a searcher")
        before = checked_history(history)
        game = position if isinstance(position, Game) else None
        root = as_position(position.position if isinstance(position, Game) else position)
        if before is None and game is not None:
            before = game.positions[:-1]
        if root.is_over():
            raise GameOverError(f"the game is over in {root} ({root.terminal_rule()})")
        budget = Budget.of(time)
        limited = depth is not None or time is not None or nodes is not None
        if self.answers_from_tables(root, cycles, limited, budget.table_wait):
            result = SearchResult(root, cycles)
            result.threads = 1 if nodes is not None else (searcher.threads if threads is None
                                                          else thread_count(threads))
            try:
                return self._table_result(result, game, before, budget)
            except MissingTableError:
                pass  # a child layer of a position outside the index is missing: search
            except TablebaseClosedError:
                raise
            except (TableError, OSError) as error:
                searcher.leave_out(error, root.seeds)  # a layer it needs is damaged: search without it
        return searcher.search(position, depth=depth, time=budget.left(), nodes=nodes, cycles=cycles,
                               history=history, bounds=bounds, progress=progress, threads=threads)

    def _table_result(self, result: SearchResult, game: Game | None, history: list[Position] | None,
                      budget: Budget) -> SearchResult:
        """`result` filled in from the root's table (_table_choice_of): exact,
        depth 0, its line worked out to the end (MAX_PLY plies) when first
        read, until the answer's deadline (a line cut there keeps the move)."""
        from .limits import MAX_PLY

        position = result.position
        # Choosing a winner's move that makes progress ranks the positions
        # ahead, which can take seconds in a large layer: within a time limit
        # it is given up at the answer's deadline (a capture, else a new position, is played).
        deadline = budget.answer_deadline
        move, value, rule, ends = self._table_choice_of(position, history, game, Rule.parse(result.cycles), deadline)
        result.value = result.lower = result.upper = value
        result.exact, result.rule, result.move, result.source = True, rule, move, "table"
        result.line = [move]
        if not ends:
            child = position.play(move)

            def extend(line: list[str]) -> list[str]:
                whole = self.tablebase.line(position, max_plies=MAX_PLY, deadline=deadline).moves
                if whole[:1] == [move]:
                    return whole
                return [move] + ([] if child.is_over() else
                                 self.tablebase.line(child, max_plies=MAX_PLY - 1, deadline=deadline).moves)

            result.extend_line_later(extend)
        result.seconds = _time.perf_counter() - budget.started
        return result

    def table_move(self, game: Game, deadline: float | None = None) -> MoveAnswer:
        """The tables' move in the game's position with the game's history
        (Tablebase.best_move), its line from the tables (when it begins with
        the move). Raises MissingTableError when a layer is not built.
        `deadline` (time.perf_counter()) bounds the winner's progress ranking
        and the line."""
        started = _time.perf_counter()
        move, value, rule, ends = self._table_choice_of(game.position, game.positions[:-1], game, Rule.TRUE,
                                                        deadline)
        moves = [] if ends else self.tablebase.line(game.position, max_plies=LINE_PLIES, deadline=deadline).moves
        line = tuple(moves) if moves and moves[0] == move else (move,)
        return MoveAnswer(move, value, True, rule, "table", line, seconds=_time.perf_counter() - started)

    def _table_choice_of(self, position: Position, history: list[Position] | None, game: Game | None,
                         rule: Rule, deadline: float | None) -> tuple[str, int, Rule, bool]:
        """(move, value, rule, whether the move ends the game) of a root
        answered from its table, the one choice Engine.move and Engine.search
        render. Under the true rule over a game: Tablebase.best_move with the
        game's history (a move that ends the game, a repetition included, is
        worth what the end gives, rule "true"); else the tables' first move
        toward progress (Tablebase.line). The value holds under the true rule
        as well when the mover takes every seed left or none
        (report.true_rule_may_change) and no position before the root can
        come back (none was played, or the root was reached by a capture):
        such play never repeats a position. `deadline` bounds the progress
        ranking."""
        if rule is Rule.TRUE and game is not None:
            chosen = self.tablebase.best_move(game, deadline=deadline)
            assert chosen is not None and chosen.value is not None, \
                "best_move returns None only when asked for no progress"
            if chosen.rule is Rule.TRUE:  # it ends the game (a repetition, 25 seeds, 24-24)
                return chosen.move, chosen.value, Rule.TRUE, True
            move, value = chosen.move, chosen.value
        else:
            first = self.tablebase.line(position, max_plies=1, deadline=deadline)  # a best move toward progress
            assert first.value is not None, "the position is not over"
            move, value = first.moves[0], first.value
        fresh = not history or history[-1].seeds != position.seeds
        holds = rule is Rule.TRUE and fresh and not true_rule_may_change(value, position.seeds)
        return move, value, Rule.TRUE if holds else Rule.SPLIT, False

    def _proven_move(self, game: Game, budget: Budget) -> MoveAnswer | None:
        """The move the true rule's graph proves best within the answer's
        deadline (source "component", rule "true"), or None when it cannot."""
        started = _time.perf_counter()
        graph = self._true_bounds(game, budget.answer_deadline)
        proven = [] if graph is None or not graph.exact else graph.best_moves()
        if graph is None or not proven:
            return None
        move = proven[0]
        return MoveAnswer(move, graph.lower, True, Rule.TRUE, "component", (move,),
                          seconds=_time.perf_counter() - started)

    def _unprepared_move(self, game: Game, budget: Budget,
                         tables_ready: Callable[[float | None], bool] | None) -> MoveAnswer:
        position = game.position
        if tables_ready is not None and self.tables_reach(position) and tables_ready(budget.answer_deadline):
            try:
                return self.table_move(game, budget.answer_deadline)
            except (MissingTableError, TableError):
                pass  # a smaller layer is missing or damaged: the search by captures
        # A search by captures in plain Python (solver/early.py) until the answer's deadline.
        found = early_search(EarlyGame.of(game), budget.answer_deadline if budget.answer_deadline is not None
                             else _time.perf_counter() + UNPREPARED_SECONDS)
        return MoveAnswer(found.move, found.value if abs(found.value) <= TOTAL_SEEDS else None, exact=False,
                          rule=Rule.TRUE, source="search by captures", depth=found.depth, nodes=found.nodes,
                          seconds=_time.perf_counter() - budget.started)

    # The position -------------------------------------------------------------

    def position(self, game: Game | Position | str, time: float | None = None, depth: int | None = None,
                 nodes: int | None = None, cycles: str = "own", bounds: bool = False,
                 progress: Callable | None = None, search: bool = True) -> PositionAnswer:
        """The game's position answered: its value, exact or not, the rule it
        holds under, its source, bounds and every legal move's MoveValue.

        Where the tables reach: every move's table value over the game's
        history (Tablebase.game_moves: a move that ends the game, a
        repetition included, is worth what the end gives). Under the true
        rule (`cycles` "own") a value that rule may change is then proven by
        the true rule's graph with the game's history within the time (all
        of it; no limit without one); what it does not settle keeps the
        tables' convention, and its rule says so.

        Above the tables (only when `search`; else MissingTableError): under
        the true rule the graph first, with at most GRAPH_SHARE of the time
        (not under a node limit, which keeps a search reproducible); where it
        settles every move, that is the answer; else one search values every
        move (Searcher.search_every_move) in the rest, kept within the
        graph's bounds. `bounds`: an inexact value gets proven bounds too
        (Searcher.search with bounds, deepening then a quarter of the time).
        """
        from .search import BOUNDS_TIME_SHARE

        check_limits(depth, time, nodes, cycles)
        rule = Rule.parse(cycles)
        game = _game(game)
        position = game.position
        if game.is_over():
            raise GameOverError(f"the game is over in {position} ({game.end_reason})")
        budget = Budget.of(time)
        found = self._table_moves(game)
        if found is not None:
            moves = found
            if rule is Rule.TRUE:
                moves = [_holding(position, m) for m in moves]
                if search and not all(m.rule is Rule.TRUE for m in moves):
                    graph = self._true_bounds(game, budget.answer_deadline)
                    moves = [_refined(position, m, graph) for m in moves]
            return self._answer(game, moves, "table", budget, distance=self._distance(position, moves))
        if not search:
            raise MissingTableError(self.why_no_table(position) + "; and searching is off")
        graph = None
        if rule is Rule.TRUE and nodes is None:
            graph = self._true_bounds(game, budget.share(GRAPH_SHARE))
            if graph is not None and all(low == high for low, high in graph.moves.values()):
                return self._answer(game, _from_bounds(game, graph), "search", budget)
        left = budget.left()  # the search's time, whatever making the searcher takes
        searcher = self.searcher  # made here on first need, after the graph's share of the time
        if searcher is None:
            raise MissingTableError(self.why_no_table(position) + "; and the search is not ready")
        if cycles not in self._warmed:
            # A Searcher empties its transposition table the first time it is
            # asked for another repetition rule: here, not inside the timed search.
            searcher.search(game, depth=1, cycles=cycles)
            self._warmed.add(cycles)
        share = None if left is None else left * (BOUNDS_TIME_SHARE if bounds else 1.0)
        searched = searcher.search_every_move(game, depth=depth, time=share, nodes=nodes, cycles=cycles,
                                              progress=progress)
        assert searched.moves is not None, "search_every_move values every move"
        moves = [_refined(position, m, graph) for m in searched.moves]
        lower = upper = None
        if bounds and not all(m.exact for m in moves) and searched.depth > 0:
            # Proven bounds on the position's value, at the depth every move finished.
            bounded = searcher.search(game, depth=searched.depth, cycles=cycles, bounds=True)
            lower, upper = bounded.lower, bounded.upper
        line = tuple(searched.line) if searched.move is not None else ()
        source = "component" if searched.source == "component" else "search"  # (a move's child may be in the tables)
        return self._answer(game, moves, source, budget, chosen=searched.move, line=line,
                            depth=searched.depth, nodes=searched.nodes, lower=lower, upper=upper)

    def _answer(self, game: Game, moves: list[MoveValue], source: str, budget: Budget, chosen: str | None = None,
                line: tuple[str, ...] = (), depth: int = 0, nodes: int = 0, lower: int | None = None,
                upper: int | None = None, distance: int | None = None) -> PositionAnswer:
        """The PositionAnswer of `moves`: the position's value is its best
        move's, exact when every move's value is, under the true rule when
        every move's is; its move one of the best (the tables' choice over
        the game, toward progress, when they answered)."""
        position = game.position
        best = best_of(moves)
        value = best_value(moves)
        exact = value is not None and all(m.exact for m in moves)
        rule = Rule.TRUE if all(m.rule is Rule.TRUE for m in moves) else Rule.SPLIT
        if source == "table" and best:
            chosen = self._table_choice(game, budget)
        names = [m.move for m in best]
        if chosen not in names:
            chosen = names[0] if names else position.legal_moves()[0]
        if not line or line[0] != chosen:
            line = (chosen,)
        if exact:
            lower = upper = value
        return PositionAnswer(str(position), position.to_move, position.seeds, value, exact, rule, source,
                              moves, chosen, line, lower, upper, depth, nodes,
                              _time.perf_counter() - budget.started, distance,
                              None if value is None else Outcome.predicted(position, value))

    def _table_choice(self, game: Game, budget: Budget) -> str | None:
        try:
            chosen = self.tablebase.best_move(game, deadline=budget.answer_deadline)
        except MissingTableError:
            return None
        return None if chosen is None else chosen.move

    def _table_moves(self, game: Game) -> list[MoveValue] | None:
        """Every move from the tables over the game's history, or None when they do not reach."""
        if not self.tables_reach(game.position):
            return None
        try:
            return self.tablebase.game_moves(game)
        except MissingTableError:
            return None  # a layer a move reaches is missing: search

    def _distance(self, position: Position, moves: list[MoveValue]) -> int | None:
        """The position's distance to conversion, None when its value is 0 or its layer holds no distances."""
        if not any(m.distance is not None for m in moves):
            return None
        return self.tablebase.distance(position)

    def _true_bounds(self, game: Game, deadline: float | None) -> Bounds | None:
        """Every legal move's proven bounds under the true rule with the game's
        history (solver.repetition), or None when its graph is too large for
        the time left before `deadline` (time.perf_counter(); None: the
        search's component limit) or not solved by then. The limit on
        positions is the search's (REPETITION_RATE a second, a share of that
        when the root's layer alone is larger)."""
        from . import index
        from .repetition import true_rule_bounds
        from .search import DEFAULT_COMPONENT_LIMIT, REPETITION_RATE, REPETITION_SMALL_SHARE

        position = game.position
        limit = DEFAULT_COMPONENT_LIMIT
        if deadline is not None:
            limit = min(limit, int((deadline - _time.perf_counter()) * REPETITION_RATE))
        if limit < 2 * index.layer_size(position.seeds):
            limit //= REPETITION_SMALL_SHARE  # the whole graph will not fit: look for a small one only
        if limit < MIN_GRAPH_POSITIONS:
            return None
        found = true_rule_bounds(position, game.positions[:-1], self.tablebase.store.arrays(), limit, deadline)
        return found if found.status == "solved" else None


# The page's answers as JSON data (solver.web renders them) ---------------------

TABLE, SEARCH = "table", "search"


def parse_game(position: str | None, moves: str | None) -> Game:
    """The Game of a request: `position` (the opening when None) with the
    record `moves` played from it. Raises InvalidPositionError or
    InvalidRecordError."""
    return Game.parse(moves, position)


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
    outcome = game.outcome()
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
        "outcome": None if outcome is None else outcome.winner,
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
    data.update({"tables": False, "value": None, "exact": False, "rule": None, "predicted_result": None, "moves": [],
                 "best_moves": []})
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
        "exact": True,
        # Table values: the tables' convention, except for a move that ends the game.
        "rule": (Rule.TRUE if all(m.rule is Rule.TRUE for m in in_game) else Rule.SPLIT).value,
        "predicted_result": predicted.scores(),
        "outcome": predicted.winner,
        "moves": rows,
        "best_moves": [row["move"] for row in rows if row["best"]],
    })
    return data


def search_report(engine: Engine, game: Game, time: float, cycles: str = "own", move_values: bool = True) -> dict:
    """The page's search of the game's position: with `move_values`, the
    position answered with every legal move's value (Engine.position, as
    `awele best`); else the move awele plays (Engine.move) with `moves`
    None. Either has `time`, `predicted_result` and `outcome` (the winner)."""
    if move_values:
        data = engine.position(game, time=time, cycles=cycles).as_dict()
    else:
        answer = engine.move(game, time=time, cycles=cycles)
        position = game.position
        predicted = None if answer.value is None else Outcome.predicted(position, answer.value)
        data = {**answer.as_dict(), "position": str(position), "to_move": position.to_move, "seeds": position.seeds,
                "predicted_result": None if predicted is None else predicted.scores(),
                "outcome": None if predicted is None else predicted.winner, "moves": None}
    data.update({"time": time, "cycles": cycles})
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


def _game(game: Game | Position | str) -> Game:
    return game if isinstance(game, Game) else Game.parse(None, game)


def capturing_move(game: Game) -> str:
    """The legal move whose captures less the most the reply can capture are the
    largest (a move that ends the game: what the end gives it); the first of equals."""
    scored: list[tuple[int, int, str]] = []
    for move in game.legal_moves():
        captured = game.play(move)
        try:
            if game.is_over():
                totals = game.result()
                assert totals is not None, "a game that is over has its result"
                score = ended_value(totals, game.positions[-2])
            else:
                child = game.position
                score = captured - max((child.play_capture(reply)[1] for reply in child.legal_moves()), default=0)
        finally:
            game.undo()
        scored.append((score, -len(scored), move))
    return max(scored)[2]


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
    # The tables' distance to conversion stays with a value the proof leaves as it was.
    distance = score.distance if value == score.value else None
    return MoveValue.of(position, score.move, score.captured, value, exact, Rule.TRUE, score.repeats, ended, distance)


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


__all__ = ["Budget", "Engine", "capturing_move", "game_report", "line_report", "parse_game", "position_report",
           "search_report", "table_message"]
