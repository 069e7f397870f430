"""Alpha-beta search above the endgame tables.

>>> result = search(Position.initial(), depth=6, max_table_seeds=0)
>>> result.move in Position.initial().legal_moves(), result.depth, result.exact
(True, 6, False)

The search is iterative deepening alpha-beta (fail-soft negamax) written as
one numba kernel with an explicit stack. Its value is the one the tables
use: the seeds the mover captures from now on minus the seeds the opponent
captures. A node whose seed count has a table in memory is scored from the
table; a node beyond the depth horizon gets an estimate learned from the
tables (solver.evaluation; or 0, the seeds left split evenly, with
evaluation="zero"), which is what makes a value an estimate rather than exact.

Repetition, `cycles`:

- "own" (default): the true rule along the searched line. When a position
  (houses and side to move) occurs a second time the game ends and each side
  takes the seeds on its own side. Positions played before the root (a Game's
  history) count.
- "split": the tables' convention, where endless play is worth 0. A
  repetition on the line scores 0. By the first-cycle theorem for games on
  graphs (Ehrenfeucht-Mycielski), the game that stops at the first repeated
  position and scores it 0 has the same value as endless play scored 0, so a
  search that runs to the end returns the table's value.

The value is exact when it is proven: it rests only on game ends,
repetitions and table values, never on a horizon leaf. How proofs,
repetitions and the transposition table meet: solver.alphabeta, the kernel.
How an iteration is split over threads: solver.search_run.

Exact answers in cyclic layers: a tree search must visit a position once per
path to prove a draw in a cycle, so proving a value in a large cyclic layer
by alpha-beta alone can take exponential time. In "split" mode, when every
capture from the root's layer lands in a loaded table, the search therefore
first solves the root's *component* (every position reachable without a
capture) by the same staged retrograde analysis as the builder, on an
explicit graph, and keeps the values it finds for later searches.
"""

from __future__ import annotations

import os
import time as _time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from . import index
from .alphabeta import INFINITE
from .clock import STOP, answer_deadline
from .component import SolvedComponents
from .errors import GameOverError, MissingTableError, SearchError, TablebaseClosedError, TableError
from .evaluation import load_weights
from .layers import available_memory, byte_histogram, known_value
from .limits import DEFAULT_QUIESCENCE, MAX_PLY, MAX_QUIESCENCE, check_limits
from .position import HOUSE_LETTERS, Game, Position, as_position
from .probe import Tablebase
from .repetition import true_rule_bounds
from .report import EndReason, MoveValue, Outcome, Rule, ended_value, true_rule_may_change
from .rules import NOT_TERMINAL, ROW, legal_mask, terminal_value
from .search_run import SPLIT_DEPTH, UNLIMITED, SearchRun, line_letters
from .table_reader import TableReader, default_table_bytes, failing_layer

BOUNDS_TIME_SHARE = 0.25  # of a time limit spent deepening when bounds are asked for (they cost about 3x that)
EVALUATIONS = ("learned", "zero")  # how a horizon leaf is scored
DEFAULT_HASH_MB = 64
DEFAULT_COMPONENT_LIMIT = 4_000_000
DEFAULT_TABLE_BYTES = 256 << 20  # tables the oracle's search process and game analysis' max_tables read at start
PROOF_NODES = 2_000_000  # alpha-beta nodes tried before solving a component
COMPONENT_RATE = 1_000_000  # component positions allowed per second of time limit
# Positions of the true rule's graph (solver.repetition) a second of time limit: each costs
# 1.2-2.4 µs solved (9-11 seeds), so about half the time at most, enough for a 9-seed root's
# graph (389K positions) at 1 s a move. A graph larger than the limit is given up after
# exploring the limit's positions (0.3-0.8 µs each); a root whose layer (both sides to move:
# whole graphs hold 2.3-2.6 times the layer) exceeds the limit explores an eighth of it, which
# finds the small graphs (forced lines, captures everywhere) and wastes little time. Whatever
# the size, the graph is given up at clock.answer_deadline (a loaded machine is slower).
REPETITION_RATE = 400_000
REPETITION_SMALL_SHARE = 8
UNLIMITED_DEPTH = MAX_PLY  # the deepest iteration of a search without a depth limit


class SearchResult:
    """What a search found.

    move: the best move's letter (None when the game is over); value: d for
    the side to move, exact when `exact`, else the estimate of the deepest
    finished iteration (leaves beyond it estimated), or, when `cut_short`,
    of the best root move of the next iteration that the time limit cut
    short once it had searched at least one root move to the end; depth:
    plies of the deepest finished iteration (0 when answered from the
    tables by solver.engine.Engine.search); lower, upper: proven bounds on the value (both equal to it
    when exact; None unless exact or asked for with bounds=True); nodes
    (every thread's), seconds, nps; line: the principal line as letters;
    cycles: the repetition convention searched under; rule: the rule the
    value holds under, "true" (every repetition scored by the true rule)
    or "split" (some of it, a table, a solved component, or the whole search
    with cycles="split", scores endless play 0: under cycles="own" such a
    value is exact only under the tables' convention for those positions);
    source: "table", "component" or "search"; threads: threads that
    searched; iterations: (depth, value, exact, nodes, seconds) each, of
    the main thread.
    """

    def __init__(self, position: Position, cycles: str) -> None:
        self.position = position
        self.cycles = cycles
        self.rule = Rule.parse(cycles)
        self.move: str | None = None
        self.value: int | None = None
        self.exact = False
        self.depth = 0
        self.nodes = 0
        self.seconds = 0.0
        self._line: list[str] = []
        self._extend = None  # computes the rest of an exact line on first use
        self.source = "search"
        self.threads = 1
        self.iterations: list[tuple[int, int, bool, int, float]] = []
        self.component_positions = 0
        self.lower: int | None = None  # proven bounds on the value (equal to it when exact)
        self.upper: int | None = None
        self.cut_short = False  # move and value come from an iteration deeper than `depth` that the time cut short
        self.moves: list[MoveValue] | None = None  # every move's value, from search_every_move

    @property
    def line(self) -> list[str]:
        """The principal line as move letters (an exact one continued by known values)."""
        if self._extend is not None:
            self._line, self._extend = self._extend(self._line), None
        return self._line

    @line.setter
    def line(self, moves: Iterable[str]) -> None:
        self._line, self._extend = list(moves), None

    def extend_line_later(self, extend: Callable[[list[str]], list[str]]) -> None:
        """Have the line continued by `extend(line)` when it is first read (an
        exact line worked out to its end only when asked for)."""
        self._extend = extend  # type: ignore[assignment]

    @property
    def nps(self) -> float:
        return self.nodes / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "position": str(self.position),
            "move": self.move,
            "value": self.value,
            "exact": self.exact,
            "rule": self.rule.value,
            "lower": self.lower,
            "upper": self.upper,
            "depth": self.depth,
            "cut_short": self.cut_short,
            "nodes": self.nodes,
            "seconds": round(self.seconds, 6),
            "nps": round(self.nps),
            "line": self.line,
            "cycles": self.cycles,
            "source": self.source,
            "threads": self.threads,
            "component_positions": self.component_positions,
            "iterations": [
                {"depth": d, "value": v, "exact": e, "nodes": n, "seconds": round(s, 6)}
                for d, v, e, n, s in self.iterations
            ],
        }

    def __repr__(self) -> str:
        kind = "exact" if self.exact else f"depth {self.depth}"
        return (f"SearchResult(move={self.move!r}, value={self.value}, {kind}, rule={self.rule.value!r}, "
                f"nodes={self.nodes})")


def _quiescence(plies: Any) -> int:
    """Plies of captures beyond the horizon, checked."""
    if isinstance(plies, bool) or not isinstance(plies, int) or not 0 <= plies <= MAX_QUIESCENCE:
        raise SearchError(f"quiescence must be an integer 0..{MAX_QUIESCENCE} (plies of captures), got {plies!r}")
    return plies


class Searcher:
    """A search engine with its transposition table, tables and solved components.

    `tablebase`: a probe.Tablebase (or a directory). Which layers are read
    into memory for the search, smallest first:

    - `max_table_seeds` given: exactly those up to it, before the
      constructor returns;
    - `table_bytes` given: as many as fit in that many bytes, before it
      returns;
    - neither: as many as fit in `default_table_bytes()` (a quarter of the
      memory available), read by a background thread so that the first
      search does not wait. A layer becomes visible to the search only once
      read whole and checked; `wait_for_tables()` waits for all of them.

    A layer that cannot be read (damaged, swapped, removed while read) is
    left out of the search, which goes on without it as if it were not
    built: `left_out` says which and why, and `log` (default: standard
    error) is told each once. See solver.table_reader.

    The Searcher searches; whether a root its tables hold is answered from
    them is solver.engine's decision (Engine.search: a root's own table
    answers even when not in memory, unless it has more than
    `max_table_seeds` seeds).
    `threads`: threads a search runs on (default: every core), splitting
    the principal line's nodes over the shared transposition table. Keep one Searcher for many
    searches: the transposition table and the component values carry over.

    `evaluation`: how a leaf beyond the horizon is scored: "learned" (the
    estimate of solver.evaluation, with the shipped weights or those of
    `weights_file`) or "zero" (an even split of the seeds left).
    `quiescence`: plies beyond the horizon in which captures are still
    searched (0: none), each leaf there keeping its estimate as the score
    of a quiet move.
    """

    def __init__(
        self,
        tablebase: Tablebase | str | os.PathLike[str] | None = None,
        hash_mb: float = DEFAULT_HASH_MB,
        max_table_seeds: int | None = None,
        table_bytes: int | None = None,
        component_limit: int = DEFAULT_COMPONENT_LIMIT,
        evaluation: str = "learned",
        weights_file: str | os.PathLike[str] | None = None,
        threads: int | None = None,
        quiescence: int = DEFAULT_QUIESCENCE,
        log: Callable[[str], None] | None = None,
    ) -> None:
        if evaluation not in EVALUATIONS:
            raise SearchError(f"evaluation must be one of {', '.join(EVALUATIONS)}, got {evaluation!r}")
        max_table_seeds = _whole_number("max_table_seeds", max_table_seeds, -1, index.MAX_SEEDS)  # -1: none
        table_bytes = _whole_number("table_bytes", table_bytes, 0)
        component_limit = _whole_number("component_limit", component_limit, 0, none=False)
        if log is not None and not callable(log):
            raise SearchError(f"log must be a function of one line or None, got {type(log).__name__}")
        self.evaluation = evaluation
        self.quiescence = _quiescence(quiescence)
        self.weights = load_weights(weights_file) if evaluation == "learned" else np.zeros(0)
        if tablebase is None or isinstance(tablebase, (str, bytes)) or hasattr(tablebase, "__fspath__"):
            tablebase = Tablebase(tablebase)
        if not isinstance(tablebase, Tablebase):
            raise SearchError(f"tablebase must be a Tablebase or a folder, got {type(tablebase).__name__}")
        self.tablebase = tablebase
        self.tt = _transposition_table(_table_entries(hash_mb))
        self.threads = thread_count(threads)
        self.history = np.zeros((ROW, 49), dtype=np.int64)
        self.component_limit = component_limit
        self.max_table_seeds = index.MAX_SEEDS if max_table_seeds is None else max_table_seeds
        self._tt_cycles: str | None = None
        self.components = SolvedComponents()
        self._run: SearchRun | None = None  # the search in progress, which stop() stops
        self.tables = TableReader(tablebase, max_table_seeds, table_bytes, log)
        self._warm_up()

    def configure(self, threads: int | None = None, hash_mb: float | None = None,
                  quiescence: int | None = None) -> None:
        """Change the threads (None: every core), the transposition table's
        size in MiB (None: keep it; a new size starts an empty table) and the
        plies of captures beyond the horizon (None: keep them), between
        searches, keeping the tables read and the solved components."""
        count = thread_count(threads)
        if quiescence is not None:
            self.quiescence = _quiescence(quiescence)
        if hash_mb is not None:
            entries = _table_entries(hash_mb)
            if entries != self.tt.shape[0]:
                self.tt = np.zeros((0, 3), dtype=np.uint64)  # the old one's memory goes first
                self.tt = _transposition_table(entries)
                self._tt_cycles = None
        self.threads = count

    def __repr__(self) -> str:
        return (f"Searcher({self.tablebase.directory!r}, hash_entries={self.tt.shape[0]}, threads={self.threads}, "
                f"tables_in_memory={self.table_layers})")

    def _warm_up(self):
        """Compile every kernel a search calls (or load it from numba's cache)
        now, so that a search's time limit is spent searching. Each compiled
        function is loaded on its first call, and on a fresh install compiled
        then: one first called inside a timed search spends its time there
        (seen in UCI on a cold cache: the first split node's store into the
        transposition table took 0.3 s of a 0.3 s move, the first packed
        position 1 s). So: a split search with a history, a position looked
        up and its component explored, a true-rule graph solved, then
        everything they left undone.
        """
        game = Game(Position.initial())
        game.play(game.legal_moves()[0])
        self.search(game, depth=SPLIT_DEPTH + 1, threads=2)
        self.known(game.position)
        # A small layer's component, explored one position deep ("too large"): the
        # opening's layer is too large to be explored at all.
        self.solve_component("0-0-0-0-1-0/0-0-0-0-0-1 S", limit=1)
        # The true rule's graph games (a search inside the tables): a small one, solved.
        true_rule_bounds(as_position("0-0-0-0-1-0/0-0-0-0-0-1 S"), (), self.tablebase.store.arrays())
        self.tablebase.warm_up()
        # What the warm-up stored goes: searches start as from a new Searcher.
        self.tt[:] = 0
        self._tt_cycles = None
        self.history[:] = 0
        # The background reader's histogram check too: loading its compiled code
        # holds the GIL (a search's clock and its Python steps wait on it).
        byte_histogram(np.zeros(1, dtype=np.int8))

    # Tables ----------------------------------------------------------------------

    @property
    def left_out(self) -> dict[int, Exception]:
        """{layer: the error}: damaged, swapped or vanished layers the search does without."""
        return self.tables.left_out

    @property
    def table_budget(self) -> int | None:
        """Bytes of tables read, when chosen by bytes (None: by seeds)."""
        return self.tables.budget

    def wait_for_tables(self, timeout: float | None = None) -> bool:
        """Wait until the tables read in the background are in memory; True when they are."""
        return self.tables.wait(timeout)

    @property
    def table_layers(self) -> list[int]:
        """Seed counts whose tables are in memory for the search."""
        return self.tablebase.loaded_layers()

    def known_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The values known without a search, as the kernel reads them: the tables
        in memory (flat, starts, loaded) and the solved components (their two arrays)."""
        return (*self.tablebase.store.arrays(), *self.components.arrays())

    def known(self, position: Position | str) -> int | None:
        """d of a position from the tables in memory or a solved component, else None."""
        position = as_position(position)
        mover, opponent = position.packed()
        if legal_mask(mover, opponent) == 0:
            return int(terminal_value(mover, opponent))
        value = known_value(mover, opponent, position.seeds, *self.known_arrays())
        return None if value == NOT_TERMINAL else int(value)

    def solve_component(self, position: Position | str, limit: int | None = None) -> tuple[str, int | None, int]:
        """Solve the positions reachable from `position` without a capture (split
        convention). Returns (status, value, positions); status "solved",
        "too large" or "missing table"."""
        position = as_position(position)
        mover, opponent = position.packed()
        flat, starts, loaded = self.tablebase.store.arrays()
        return self.components.solve(mover, opponent, position.seeds, flat, starts, loaded,
                                     int(limit or self.component_limit))

    # Searching -------------------------------------------------------------------

    def close(self) -> None:
        """Done with this Searcher (its Tablebase may be closed next): the
        background reader stops after the layer it is reading, silently."""
        self.tables.stop(timeout=0)

    def stop(self) -> None:
        """Stop the search in progress (from another thread): it returns what its
        finished iterations found, as when its time runs out."""
        run = self._run
        if run is not None:
            run.stop()

    def move_values(self, position: Position | Game | str, depth: int | None = None, time: float | None = None,
                    nodes: int | None = None, cycles: str = "own",
                    threads: int | None = None) -> list[MoveValue]:
        """Every legal move's value by search, as MoveValue records in sowing order.

        A move's value is the seeds it captures minus the value of the
        position it leads to, searched with `depth` - 1 plies, or a share of
        `time` / `nodes` each; a move that ends the game is worth what the
        end gives (exact). A move whose position the tables hold is valued
        from them at once (exact under the tables' convention: rule
        "split"). A Game's history counts for repetitions ("own" cycles). A
        move whose timed search finished no iteration is searched one ply
        (a few nodes) so that it has a value; under a node limit too small
        for one iteration its value is None.
        """
        game = position if isinstance(position, Game) else Game(as_position(position))
        current = game.position
        moves = game.legal_moves()
        share = max(1, len(moves))
        deadline = None if time is None else _time.perf_counter() + time
        values = []
        rule: Rule | str
        value: int | None
        for left, move in zip(range(len(moves), 0, -1), moves):
            captured = game.play(move)
            try:
                child, ended = game.position, None
                if game.is_over():
                    totals, reason = game.result(), game.end_reason
                    assert totals is not None and reason is not None, "a game that is over has its result"
                    value, exact, rule = ended_value(totals, current), True, Rule.parse(cycles)
                    repeats = reason == EndReason.REPETITION
                    ended = Outcome.ended(totals, reason)
                elif self.tablebase.has_layer(child.seeds) and (value := self._table_value(child)) is not None:
                    # The tables answer at once (a search would also work out a line).
                    value, exact, rule, repeats = captured - value, True, Rule.SPLIT, False
                else:
                    # The moves still to search share what is left of the time.
                    each = None if deadline is None else max(1e-3, (deadline - _time.perf_counter()) / left)
                    result = self.search(
                        game,
                        depth=None if depth is None else max(1, depth - 1),
                        time=each,
                        nodes=None if nodes is None else max(1, nodes // share),
                        cycles=cycles,
                        threads=threads,
                    )
                    if result.value is None and depth is None and nodes is None:
                        # Not one iteration in its share of the time (a loaded machine): one
                        # ply, a few nodes, so that every move has a value.
                        result = self.search(game, depth=1, cycles=cycles, threads=1)
                    value = None if result.value is None else captured - result.value
                    exact, rule, repeats = result.exact, result.rule, False
            finally:
                game.undo()
            values.append(MoveValue.of(current, move, captured, value, exact, rule, repeats, ended))
        return values

    def search_every_move(self, position: Position | Game | str, depth: int | None = None,
                          time: float | None = None, nodes: int | None = None, cycles: str = "own",
                          progress: Callable | None = None) -> SearchResult:
        """One root search that values every legal move (multi-PV): a
        SearchResult whose `moves` holds each move's MoveValue (sowing
        order), whose value is the best move's value and whose move is a
        move of that value. So the position's value, its best move and the
        moves marked best (report.best_of) always agree.

        A move that ends the game is valued by the end, one whose position
        the tables hold from them (exact, rule "split"); the others are
        searched together, depth after depth, each with a full window on
        the shared transposition table, `depth` plies from the position (the
        move and depth - 1 after it), until every value is exact or the
        limits run out; the values are those of the deepest depth every
        move finished (a move that finished none is searched one ply, so
        that it has a value unless a node limit is too small for it). A
        Game's history counts for repetitions under cycles="own". One
        thread. `progress(depth, value, exact, nodes, seconds)` after each
        depth.
        """
        check_limits(depth, time, nodes, cycles)
        game = position if isinstance(position, Game) else Game(as_position(position))
        current = game.position
        if current.is_over():
            raise GameOverError(f"the game is over in {current} ({current.terminal_rule()})")
        started = _time.perf_counter()
        end = None if time is None else started + time
        result = SearchResult(current, cycles)
        self._begin(cycles)
        default_rule = Rule.parse(cycles)
        settled: dict[str, MoveValue] = {}
        searched: list[tuple[str, int, int, Position]] = []  # (move, house, captured, child)
        for move in game.legal_moves():
            captured = game.play(move)
            try:
                child = game.position
                if game.is_over():
                    totals, reason = game.result(), game.end_reason
                    assert totals is not None and reason is not None, "a game that is over has its result"
                    settled[move] = MoveValue.of(current, move, captured, ended_value(totals, current), True,
                                                 default_rule, reason == EndReason.REPETITION,
                                                 Outcome.ended(totals, reason))
                elif self.tablebase.has_layer(child.seeds) and (value := self._table_value(child)) is not None:
                    settled[move] = MoveValue.of(current, move, captured, captured - value, True, Rule.SPLIT)
                else:
                    searched.append((move, HOUSE_LETTERS[current.to_move].index(move), captured, child))
            finally:
                game.undo()
        values: dict[str, tuple[int, bool, bool, list[int]]] = {}  # move: (value, exact, on_split, line)
        history = game.positions[:-1]
        run = SearchRun(self, current, history, cycles, result, progress, started, 1, end)
        self._run = run
        try:
            node_budget = UNLIMITED if nodes is None else nodes
            for iteration in range(1, (depth or MAX_PLY) + 1):
                found: dict[str, tuple[int, bool, bool, list[int]]] = {}
                # The best moves of the last depth first: their entries order the others.
                order = sorted(searched, key=lambda m: -values[m[0]][0] if m[0] in values else 0)
                for move, house, captured, child in order:
                    if move in values and values[move][1]:
                        found[move] = values[move]  # exact: not searched again
                        continue
                    budget = node_budget - result.nodes
                    if budget <= 0 or run.control[STOP] != 0:
                        break
                    run.path_mover[run.root + 1], run.path_opponent[run.root + 1] = child.packed()
                    since = run.root + 1 if captured > 0 else 0
                    run.pv_length[run.root + 1] = 0
                    score, proven, used, aborted, on_split, _ = run.kernel(
                        run.main, run.root + 1, iteration - 1, (-INFINITE, INFINITE), since, budget, 0)
                    result.nodes += int(used)
                    if aborted:
                        break
                    line = [house] + [int(h) for h in run.pv[run.root + 1, : run.pv_length[run.root + 1]]]
                    found[move] = (captured - int(score), bool(proven), bool(on_split), line)
                if len(found) < len(searched):
                    break  # this depth did not finish: the last one's values stand
                values = found
                result.depth = iteration
                if progress is not None and values:
                    best = max(v[0] for v in values.values())
                    progress(iteration, best, all(v[1] for v in values.values()), result.nodes,
                             _time.perf_counter() - started)
                if all(v[1] for v in values.values()):
                    break
        finally:
            run.close()
            self._run = None
        lines: dict[str, list[int]] = {}
        for move, house, captured, _ in searched:
            if move in values:
                value, exact, on_split, line = values[move]
                rule: Rule | str = Rule.SPLIT if on_split or default_rule is Rule.SPLIT else Rule.TRUE
                lines[move] = line
                settled[move] = MoveValue.of(current, move, captured, value, exact, rule)
                continue
            # No depth finished in the limits: one ply (a few nodes) unless a node limit forbids it.
            value_of_child = None
            if nodes is None:
                game.play(move)
                try:
                    value_of_child = self.search(game, depth=1, cycles=cycles, threads=1).value
                finally:
                    game.undo()
            value_or_none = None if value_of_child is None else captured - value_of_child
            settled[move] = MoveValue.of(current, move, captured, value_or_none, False, default_rule)
            lines[move] = [house]
        result.moves = [settled[move] for move in game.legal_moves()]
        valued = [m for m in result.moves if m.value is not None]
        if valued:
            top = max(m.value for m in valued if m.value is not None)
            chosen = next(m for m in valued if m.value == top)
            result.value, result.move, result.exact = top, chosen.move, all(m.exact for m in valued)
            result.rule = chosen.rule
            result.source = "search" if searched else "table"
            result.line = (line_letters(current, lines[chosen.move]) if chosen.move in lines else [chosen.move])
        else:
            result.move = current.legal_moves()[0]
        if result.exact:
            result.lower = result.upper = result.value
        result.seconds = _time.perf_counter() - started
        return result

    def _begin(self, cycles):
        """A search under `cycles` starts: the transposition table is emptied
        when it holds another convention's entries; move-ordering counts age."""
        if self._tt_cycles != cycles:
            if self._tt_cycles is not None:  # (a new table is empty)
                self.tt[:] = 0
            self._tt_cycles = cycles
        self.history //= 2

    def _table_value(self, position):
        """d of `position` from the tables (the tables' convention), or None
        when a layer it needs is missing or left out (a damaged one is left
        out here)."""
        if not self.tables_usable(position):
            return None
        try:
            return self.tablebase.value(position)
        except MissingTableError:
            return None
        except TablebaseClosedError:
            raise
        except (TableError, OSError) as error:
            self.leave_out(error, position.seeds)
            return None

    def leave_out(self, error: Exception, seeds: int) -> None:
        """Do without the layer a table error names (else layer `seeds`) from now on."""
        named = failing_layer(error)
        self.tables.leave_out(seeds if named is None else named, error)

    def search(self, position: Position | Game | str, depth: int | None = None, time: float | None = None,
               nodes: int | None = None, cycles: str = "own", history: list | None = None, bounds: bool = False,
               progress: Callable | None = None, threads: int | None = None) -> SearchResult:
        """Search `position` (a Position, its notation, or a Game, whose history
        then counts for repetitions) and return a SearchResult.

        Limits: `depth` plies, `time` seconds, `nodes`; with none the search
        runs until its value is exact (which can take very long far above
        the tables), waiting at its deepest depth for layers the background
        reader still reads. The search stops as soon as the value is exact. A time
        limit is kept: the search returns within it (a stop flag the kernel
        reads every alphabeta.STOP_CHECK nodes), and no depth starts that the last two
        predict cannot finish.

        `threads` (default: the Searcher's): the threads each iteration is
        split over (see search_run.SearchRun), on the shared transposition table. A node
        limit searches on one thread, so that it is reproducible.

        `bounds`: when the value is not exact, search the deepest finished
        depth twice more, with every horizon leaf scored as the worst and
        then the best case for the mover (-n, +n seeds), which gives proven
        lower and upper bounds. They cost about three times the deepening;
        with a time limit, deepening stops at a quarter of it so that the
        bounds fit in the rest (a bound that does not finish in time is None).

        `progress`, if given, is called after each finished iteration as
        progress(depth, value, exact, nodes so far, seconds so far, the
        iteration's principal line as move letters).

        The root is always searched: whether a root the tables hold is
        answered from them instead is solver.engine's decision
        (Engine.search, Engine.move). Under cycles="own" with a limit (depth,
        time or nodes), when searches_inside_tables(), its table value may
        rest on endless play, which the true rule ends with each side taking
        its own seeds, so the root is searched under the true rule with the
        game's history, the tables' values only the estimates of the horizon
        (alphabeta.alpha_beta's through_tables). Its value is exact, rule
        "true", only when the search proves it.
        """
        check_limits(depth, time, nodes, cycles)
        history = checked_history(history)
        threads = 1 if nodes is not None else (self.threads if threads is None else thread_count(threads))
        if isinstance(position, Game):
            if history is None:
                history = position.positions[:-1]
            position = position.position
        position = as_position(position)
        if position.is_over():
            raise GameOverError(f"the game is over in {position} ({position.terminal_rule()})")
        started = _time.perf_counter()
        end = None if time is None else started + time
        result = SearchResult(position, cycles)
        result.threads = threads
        self._begin(cycles)

        limited = depth is not None or time is not None or nodes is not None
        through = limited and self.searches_inside_tables(position, cycles)
        run = SearchRun(self, position, history, cycles, result, progress, started, threads, end)
        run.through_tables = bool(through)
        run.until_exact = not limited
        self._run = run
        try:
            max_depth = depth or UNLIMITED_DEPTH
            node_budget = nodes if nodes is not None else UNLIMITED
            # Bounds cost two more searches of the deepest depth, with wide
            # windows: about three times what deepening took. With a time
            # limit, deepening gets a quarter of it.
            deadline = None if time is None else started + time * (BOUNDS_TIME_SHARE if bounds else 1.0)
            if (Rule.parse(cycles) is Rule.SPLIT and self.component_limit > 0 and depth is None
                    and self.known(position) is None):
                self._component_phase(run, position, max_depth, node_budget, deadline)
            if run.through_tables and self.component_limit > 0 and depth is None:
                self._repetition_phase(run, position, history, node_budget, deadline)
            if not result.exact:
                run.deepen(max_depth, node_budget, deadline)
            self._finish(run, result, bounds)
        finally:
            run.close()
            self._run = None
        return result

    def searches_inside_tables(self, position: Position | Game | str, cycles: str = "own") -> bool:
        """Whether a search of `position` (with a limit) searches under the
        true rule although the tables hold it, rather than answering from
        them: in "own" mode, when its layer is in memory (the search's
        estimates at the horizon are then the tables' values) and the true
        rule may change its table value (report.true_rule_may_change)."""
        position = position.position if isinstance(position, Game) else as_position(position)
        if (Rule.parse(cycles) is not Rule.TRUE or not self.tablebase.is_loaded(position.seeds)
                or not self.tables_usable(position)):
            return False
        return true_rule_may_change(self.known(position), position.seeds)

    def tables_usable(self, position: Position) -> bool:
        """Whether neither the position's layer nor one its captures lead to is left out."""
        if not self.left_out:
            return True
        if position.seeds in self.left_out:
            return False
        return not any(captured and child.seeds in self.left_out
                       for child, captured in map(position.play_capture, position.legal_moves()))

    def reading_tables(self) -> bool:
        """Whether the background reader is still reading layers into memory."""
        return self.tables.reading()

    def tables_answer_in_time(self, seeds: int, deadline: float) -> bool:
        """Whether a root of `seeds` seeds can be answered from the tables within
        a time limit: its layer is in memory, or no background reader runs, or
        the layer is small (read whole at its first probe, as the reader,
        smallest first, would soon), or the reader brings it in by `deadline`
        (time.perf_counter(), waited for). Otherwise probes of its file would
        wait for HDF5, which the reader holds through each of its reads."""
        return self.tables.in_time(seeds, deadline)

    def _component_phase(self, run, position, max_depth, node_budget, deadline):
        """Most values are proven by alpha-beta in a few nodes; a value that rests
        on cycles is not, so its component is solved next (split convention)."""
        result, started = run.result, run.started
        first_deadline = None if deadline is None else started + (deadline - started) / 2
        # A component is at most the whole layer: spend at most a quarter of
        # its size on alpha-beta first.
        proof_nodes = min(node_budget, PROOF_NODES, max(1000, index.layer_size(position.seeds) // 4))
        run.deepen(max_depth, proof_nodes, first_deadline)
        if result.exact:
            return
        self.tables.wait_for(range(max(0, position.seeds - 15), position.seeds - 1), deadline)
        limit = self.component_limit
        if deadline is not None:
            limit = min(limit, max(10_000, int((deadline - _time.perf_counter()) * COMPONENT_RATE)))
        status, _, size = self.solve_component(position, limit)
        result.component_positions = size
        if status == "solved":
            result.source = "component"
            run.next_depth = 1

    def _repetition_phase(self, run, position, history, node_budget, deadline):
        """A root inside the tables under the true rule: bound its value with
        the game's history by solver.repetition's two graph games, within
        the component limit, the node limit (a position for a node) and
        REPETITION_RATE positions a second of the time left, an eighth of
        that when the root's layer alone is larger (only a small graph can
        fit, and a graph found too large wastes its exploring). Both bounds
        equal: the value is exact (rule "true") and no search is needed;
        else the bounds are kept for _finish, which keeps the value within
        them and never plays a move proven worse."""
        limit = min(self.component_limit, node_budget)
        if deadline is not None:
            limit = min(limit, int((deadline - _time.perf_counter()) * REPETITION_RATE))
        if limit < 2 * index.layer_size(position.seeds):
            limit //= REPETITION_SMALL_SHARE  # the whole graph will not fit: look for a small one only
        if limit < 1000:
            return
        store_flat, store_starts, store_loaded = self.tablebase.store.arrays()
        # Given up in time for the search to have a tenth of the time at least.
        graph_deadline = None if deadline is None else answer_deadline(run.started, deadline)
        bounds = true_rule_bounds(position, history or (), (store_flat, store_starts, store_loaded), limit,
                                  graph_deadline)
        result = run.result
        result.component_positions = bounds.positions
        if bounds.status != "solved":
            return
        run.true_bounds = bounds
        if bounds.exact:
            move = bounds.best_moves()[0]
            result.exact, result.value, result.move, result.rule = True, bounds.lower, move, Rule.TRUE
            result.source = "component"
            run.houses = [position.house_of(move)]

    def _finish(self, run, result, bounds):
        """The line, the bounds and the time of a searched result."""
        position = run.position
        result.line = line_letters(position, run.houses)
        if result.exact:
            result.lower = result.upper = result.value
        elif bounds and result.depth > 0:
            result.lower = run.bound(1, result.depth)
            result.upper = run.bound(-1, result.depth)
        proven = run.true_bounds
        if proven is not None and not result.exact:
            # The true rule's graph bounds hold whatever the search saw.
            result.lower = proven.lower if result.lower is None else max(result.lower, proven.lower)
            result.upper = proven.upper if result.upper is None else min(result.upper, proven.upper)
            if result.value is not None:
                result.value = min(max(result.value, result.lower), result.upper)
            if result.move is not None and proven.moves[result.move][1] < proven.lower:
                # The search's move is proven worse than another: play the best proven one.
                result.move = max(proven.moves, key=lambda move: proven.moves[move])
                result.line = [result.move]
        if result.move is None:
            # Not even depth 1 finished within the limits: no value, and the
            # move the known values (tables, solved components) rank best when
            # they know every child, else the first legal one.
            result.move = self._move_by_known_values(position)
        result.seconds = _time.perf_counter() - run.started
        if result.exact:
            # The line is extended when asked for, stopping where a table answer's ranking would.
            deadline = None if run.end is None else max(answer_deadline(run.started, run.end), _time.perf_counter())
            result.extend_line_later(lambda line: self._extend_line(position, line, result.cycles, deadline))

    def _move_by_known_values(self, position):
        """The move whose seeds captured less its child's known value is the
        largest (the first legal move when a child's value is not known)."""
        moves = position.legal_moves()
        scored: list[tuple[int, int, str]] = []
        for move in moves:
            child, captured = position.play_capture(move)
            value = self.known(child)
            if value is None:
                return moves[0]
            scored.append((captured - value, -len(scored), move))
        return max(scored)[2]

    def _extend_line(self, position, line, cycles, deadline=None):
        """Continue an exact principal line with best moves by known values until
        it leaves what is known, repeats, ends, reaches MAX_PLY plies or the
        clock passes `deadline`."""
        game = Game(position)
        for move in line:
            game.play(move)
        while not game.is_over() and len(line) < MAX_PLY:
            if deadline is not None and _time.perf_counter() > deadline:
                break
            current = game.position
            if self.tablebase.is_loaded(current.seeds):
                line = line + self.tablebase.line(current, max_plies=MAX_PLY - len(line), deadline=deadline).moves
                break
            scored = []
            for move in current.legal_moves():
                child, captured = current.play_capture(move)
                value = self.known(child)
                if value is None:
                    return line
                scored.append((captured - value, captured, move))
            if Rule.parse(cycles) is Rule.TRUE:
                break
            best = max(s[0] for s in scored)
            move = max((s for s in scored if s[0] == best), key=lambda s: s[1])[2]
            game.play(move)
            line = line + [move]
        return line


def _table_entries(hash_mb):
    """Entries of a transposition table of at most `hash_mb` MiB (a power of two)."""
    if isinstance(hash_mb, bool) or not isinstance(hash_mb, (int, float)) or not 0 < hash_mb < float("inf"):
        raise SearchError(f"hash_mb must be a positive number of MiB, got {hash_mb!r}")
    entries = 1 << max(1, int(hash_mb * (1 << 20) // 24).bit_length() - 1)
    available = available_memory()
    if 24 * entries > available:
        raise SearchError(f"a transposition table of {hash_mb:g} MiB does not fit in the "
                          f"{available / 2**20:,.0f} MiB of memory available")
    return entries


def _transposition_table(entries):
    """An empty transposition table of `entries` entries."""
    tt = np.zeros((entries, 3), dtype=np.uint64)
    tt.fill(0)  # its memory's first touch, here rather than on a search's clock
    return tt


def thread_count(threads: Any) -> int:
    if threads is None:
        return max(1, os.cpu_count() or 1)
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise SearchError(f"threads must be a positive integer, got {threads!r}")
    return int(threads)


def checked_history(history: Any) -> list[Position] | None:
    """The positions played before the root, oldest first, as a list of Positions."""
    if history is None:
        return None
    if isinstance(history, (str, bytes)) or not isinstance(history, Iterable):
        raise SearchError(f"history must be a list of positions (oldest first), got {type(history).__name__}")
    return [as_position(earlier) for earlier in history]


def _whole_number(name, value, low, high=None, none=True):
    """`value` checked to be an integer in low..high (None allowed when `none`)."""
    if value is None and none:
        return None
    if (isinstance(value, bool) or not isinstance(value, (int, np.integer))
            or value < low or (high is not None and value > high)):
        wanted = f"an integer {low}..{high}" if high is not None else f"an integer {low} or more"
        raise SearchError(f"{name} must be {wanted}{' or None' if none else ''}, got {value!r}"[:200])
    return int(value)


def search(
    position: Position | Game | str,
    depth: int | None = None,
    time: float | None = None,
    nodes: int | None = None,
    cycles: str = "own",
    tablebase: Tablebase | str | os.PathLike[str] | None = None,
    history: list | None = None,
    bounds: bool = False,
    **options: Any,
) -> SearchResult:
    """Search `position` once with a fresh Searcher (see Searcher.search);
    `options` go to the Searcher (hash_mb, max_table_seeds, threads, ...)."""
    return Searcher(tablebase, **options).search(position, depth=depth, time=time, nodes=nodes, cycles=cycles,
                                                 history=history, bounds=bounds)


__all__ = ["SearchError", "SearchResult", "Searcher", "default_table_bytes", "search"]
