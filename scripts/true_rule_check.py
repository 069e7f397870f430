"""How often the tables' move gives seeds away under the true repetition rule, and how often the search does.

    python scripts/true_rule_check.py --tables DIR [--positions 100] [--low 6 --high 16]
                                      [--nodes 200000] [--seed 1] [--no-play] [--json]

The tables score endless play as an even split (0); the game ends it at the
first repetition, each side taking the seeds on its own side. So inside the
tables a table move can give seeds away under the game's rule. This plays it
out. Positions come from games: from a random opening of two plies a side,
the engine plays itself (--nodes a move, above the tables) until the board
holds at most --high seeds; a position of --low..--high seeds is then drawn
from the rest of that game, with its history. From each position two games
are played to their end under the true rule (solver.position.Game), the side
to move playing

- "tables": the tables' move with the true rule over the game
  (Tablebase.best_move: a move that ends the game is worth what the end gives,
  every other its table value), the behaviour before the search inside the
  tables;
- "search": Searcher.search with --nodes a move, which searches a table value
  the true rule may change under that rule (report.true_rule_may_change);

and the other side always the search. Each game's margin is the mover's seeds
minus the opponent's gained from the position on. The report counts, per way,
the games whose margin is below the position's table value (seeds given away
against what the tables promise), and, between the two ways, the positions
where one got more. Node limits, not times, so that the figures do not depend
on what else runs.

Each position is also bounded with its history by solver.repetition's two
graph games (where its graph holds at most --limit positions): the report
counts the positions whose value the bounds make exact, and those where the
tables' move is proven to give seeds away under the true rule (its upper
bound below the position's lower bound). --no-play reports only these.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time

from solver.engine import Engine
from solver.position import Game, Position
from solver.probe import Tablebase
from solver.repetition import DEFAULT_LIMIT, true_rule_bounds
from solver.search import Searcher

MAX_PLIES = 600  # the true rule ends every game (a repetition, or the seeds run out) well before


def sample_games(searcher: Searcher, count: int, low: int, high: int, nodes: int, rng: random.Random) -> list[Game]:
    """Games whose last position has low..high seeds, from random openings."""
    games = []
    while len(games) < count:
        game = Game(Position.initial())
        for _ in range(4):
            game.play(rng.choice(game.legal_moves()))
        while not game.is_over() and game.position.seeds > high and len(game.moves) < MAX_PLIES:
            game.play(Engine.over(searcher).search(game, nodes=nodes).move)
        further = rng.randint(0, 12)  # a position somewhat into the tables, not always the first
        while further and not game.is_over() and game.position.seeds > low:
            game.play(Engine.over(searcher).search(game, nodes=nodes).move)
            further -= 1
        if not game.is_over() and low <= game.position.seeds <= high:
            games.append(game)
    return games


def play_out(start: Game, mover_way: str, searcher: Searcher, tablebase: Tablebase, nodes: int) -> tuple[int, str]:
    """The mover's margin from `start` on, the mover playing `mover_way`, and how the game ended."""
    game = Game(start.start)
    for move in start.moves:
        game.play(move)
    mover = game.position.to_move
    before = game.position.captured
    while not game.is_over() and len(game.moves) < MAX_PLIES:
        if game.position.to_move == mover and mover_way == "tables":
            best = tablebase.best_move(game)
            assert best is not None
            game.play(best.move)
        else:
            game.play(Engine.over(searcher).search(game, nodes=nodes).move)
    result = game.result() or game.position.captured
    gained = [result[0] - before[0], result[1] - before[1]]
    margin = gained[0] - gained[1] if mover == "S" else gained[1] - gained[0]
    return margin, str(game.end_reason)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", required=True, help="tables folder (layers 0..--high at least)")
    parser.add_argument("--positions", type=int, default=100)
    parser.add_argument("--low", type=int, default=6)
    parser.add_argument("--high", type=int, default=16)
    parser.add_argument("--nodes", type=int, default=200_000, help="nodes a searched move")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help="positions a graph of the bounds may hold")
    parser.add_argument("--play", action=argparse.BooleanOptionalAction, default=True,
                        help="play each position out both ways (--no-play: the bounds only)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not (0 < args.positions <= 100_000 and 2 <= args.low <= args.high <= 48 and args.nodes > 0 and args.limit > 0):
        parser.error("--positions 1..100000, 2 <= --low <= --high <= 48, --nodes > 0, --limit > 0")
    rng = random.Random(args.seed)
    started = time.perf_counter()
    with Tablebase(args.tables) as tablebase:
        missing = [n for n in range(args.high + 1) if not tablebase.has_layer(n)]
        if missing:
            parser.error(f"the tables folder lacks layers {missing}")
        searcher = Searcher(tablebase, max_table_seeds=args.high, threads=1)
        games = sample_games(searcher, args.positions, args.low, args.high, args.nodes, rng)
        rows = []
        for game in games:
            value = tablebase.value(game.position)
            row = {"record": game.record(), "position": str(game.position), "seeds": game.position.seeds,
                   "table_value": value}
            bounds = true_rule_bounds(game.position, game.positions[:-1], tablebase.store.arrays(), args.limit)
            tables_move = tablebase.best_move(game)
            assert tables_move is not None
            row["tables_move"] = tables_move.move
            row["bounds"] = None if bounds.status != "solved" else [bounds.lower, bounds.upper]
            row["tables_move_bounds"] = list(bounds.moves[tables_move.move]) if bounds.status == "solved" else None
            row["graph_positions"] = bounds.positions
            if args.play:
                for way in ("tables", "search"):
                    row[way], row[f"{way}_end"] = play_out(game, way, searcher, tablebase, args.nodes)
            rows.append(row)
    bounded = [r for r in rows if r["bounds"] is not None]
    summary = {
        "positions": len(rows),
        "nodes": args.nodes,
        "seeds": [args.low, args.high],
        "seconds": round(time.perf_counter() - started, 1),
        "bounded": len(bounded),
        "bounds_exact": sum(r["bounds"][0] == r["bounds"][1] for r in bounded),
        "mean_bounds_gap": round(statistics.fmean(r["bounds"][1] - r["bounds"][0] for r in bounded), 3)
        if bounded else None,
        "table_value_outside_bounds": sum(not r["bounds"][0] <= r["table_value"] <= r["bounds"][1] for r in bounded),
        "tables_move_proven_worse": sum(r["tables_move_bounds"][1] < r["bounds"][0] for r in bounded),
    }
    if args.play:
        summary.update(_play_summary(rows))
    if args.json:
        print(json.dumps({"summary": summary, "positions": rows}))
    else:
        for key, value in summary.items():
            print(f"{key}: {value}")
    return 0


def _play_summary(rows: list[dict]) -> dict:
    return {
        "tables_below_table_value": sum(r["tables"] < r["table_value"] for r in rows),
        "search_below_table_value": sum(r["search"] < r["table_value"] for r in rows),
        "search_more_than_tables": sum(r["search"] > r["tables"] for r in rows),
        "tables_more_than_search": sum(r["tables"] > r["search"] for r in rows),
        "mean_tables": round(statistics.fmean(r["tables"] - r["table_value"] for r in rows), 3),
        "mean_search": round(statistics.fmean(r["search"] - r["table_value"] for r in rows), 3),
    }


if __name__ == "__main__":
    sys.exit(main())
