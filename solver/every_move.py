"""Every legal move valued by one root search (multi-PV): Searcher.search_every_move.

The root's moves are searched together, depth after depth, each with a full
window on the searcher's transposition table, so that the position's value
is its best move's and the move reported is one of the moves marked best:
the CLI's `best`, the page and the game analysis show one answer.
"""

from __future__ import annotations

import time as _time
from collections.abc import Callable
from typing import TYPE_CHECKING

from .clock import STOP
from .errors import GameOverError
from .limits import MAX_PLY
from .position import HOUSE_LETTERS, Game, Position, as_position
from .report import EndReason, MoveValue, Outcome, Rule, ended_value
from .search import INFINITE, UNLIMITED, SearchResult, _check_limits, _letters, _Run

if TYPE_CHECKING:
    from .search import Searcher


def search_every_move(searcher: Searcher, position: Position | Game | str, depth: int | None = None,
                      time: float | None = None, nodes: int | None = None, cycles: str = "own",
                      progress: Callable | None = None) -> SearchResult:
    """See Searcher.search_every_move."""
    _check_limits(depth, time, nodes, cycles)
    game = position if isinstance(position, Game) else Game(as_position(position))
    current = game.position
    if current.is_over():
        raise GameOverError(f"the game is over in {current} ({current.terminal_rule()})")
    started = _time.perf_counter()
    end = None if time is None else started + time
    result = SearchResult(current, cycles)
    searcher._begin(cycles)
    default_rule = Rule.of_cycles(cycles)
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
            elif searcher.tablebase.has_layer(child.seeds) and (value := searcher._table_value(child)) is not None:
                settled[move] = MoveValue.of(current, move, captured, captured - value, True, Rule.SPLIT)
            else:
                searched.append((move, HOUSE_LETTERS[current.to_move].index(move), captured, child))
        finally:
            game.undo()
    values: dict[str, tuple[int, bool, bool, list[int]]] = {}  # move: (value, exact, on_split, line)
    history = game.positions[:-1]
    run = _Run(searcher, current, history, cycles, result, progress, started, 1, end)
    searcher._run = run
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
                score, proven, used, aborted, on_split, _ = run._kernel(
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
        searcher._run = None
    lines: dict[str, list[int]] = {}
    for move, house, captured, _ in searched:
        if move in values:
            value, exact, on_split, line = values[move]
            rule: Rule | str = Rule.SPLIT if on_split or cycles == "split" else Rule.TRUE
            lines[move] = line
            settled[move] = MoveValue.of(current, move, captured, value, exact, rule)
            continue
        # No depth finished in the limits: one ply (a few nodes) unless a node limit forbids it.
        value_of_child = None
        if nodes is None:
            game.play(move)
            try:
                value_of_child = searcher.search(game, depth=1, cycles=cycles, threads=1).value
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
        result.rule = chosen.rule.value
        result.source = "search" if searched else "table"
        result.line = (_letters(current, lines[chosen.move]) if chosen.move in lines else [chosen.move])
    else:
        result.move = current.legal_moves()[0]
    if result.exact:
        result.lower = result.upper = result.value
    result.seconds = _time.perf_counter() - started
    return result
