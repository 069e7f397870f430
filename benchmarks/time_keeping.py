"""How well a search keeps its time: the overrun distribution over many timed
searches, JSON out.

    python benchmarks/time_keeping.py [--dir DIR] [--time 0.2] [--searches 100] [--threads N] [--max-plies 60]

Each search is given `--time` seconds on a position from a game of random
moves (seeded, 0..max-plies plies from the opening, never over) with its
history (more plies reach the tables' layers, answered from them);
its time is read around Searcher.search, outside the search. The overrun is
that time minus the budget; the target is a worst overrun under 5% of the
budget plus 20 ms. Tables of 0..table-seeds seeds are read into memory
(built in a temporary folder when DIR lacks them). It measures and never
asserts: what else runs on the machine shows in the spread.
"""

import argparse
import json
import random
import statistics
import tempfile
import time

from solver import build as builder
from solver.engine import Engine
from solver.position import Game, Position
from solver.search import Searcher


def random_games(count, seed, max_plies=60):
    """`count` games of random legal moves from the opening, none over."""
    rng = random.Random(seed)
    games = []
    while len(games) < count:
        game = Game(Position.initial())
        for _ in range(rng.randint(0, max_plies)):
            if game.is_over():
                break
            game.play(rng.choice(game.legal_moves()))
        if not game.is_over():
            games.append(game)
    return games


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=None, help="tables folder (default: a temporary one)")
    parser.add_argument("--table-seeds", type=int, default=12)
    parser.add_argument("--time", type=float, default=0.2, help="seconds given to each search")
    parser.add_argument("--searches", type=int, default=100)
    parser.add_argument("--threads", type=int, default=None, help="search threads (default: every core)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-plies", type=int, default=60, help="longest random game before a search")
    parser.add_argument("--background", action="store_true",
                        help="read the tables as `awele play` and `awele uci` do: in the background, as many as "
                             "fit in the default share of memory, while the searches run (--table-seeds unused)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="awele-time-") as scratch:
        directory = args.dir or scratch
        if args.dir is None:
            builder.build(args.table_seeds, directory)
        if args.background:
            searcher = Searcher(directory, threads=args.threads)
        else:
            searcher = Searcher(directory, max_table_seeds=args.table_seeds, threads=args.threads)
        engine = Engine.over(searcher)  # tables or search, as `awele search` decides
        rows = []
        for game in random_games(args.searches, args.seed, args.max_plies):
            started = time.perf_counter()
            result = engine.search(game, time=args.time, cycles="own")
            seconds = time.perf_counter() - started
            rows.append({"position": str(game.position), "seconds": seconds, "overrun": seconds - args.time,
                         "depth": result.depth, "source": result.source, "exact": result.exact})
    overruns = sorted(row["overrun"] for row in rows)
    limit = 0.05 * args.time + 0.020
    summary = {
        "benchmark": "time_keeping",
        "time": args.time,
        "searches": len(rows),
        "threads": searcher.threads,
        "overrun_limit": limit,
        "worst_overrun": overruns[-1],
        "median_overrun": statistics.median(overruns),
        "p95_overrun": overruns[int(0.95 * (len(overruns) - 1))],
        "over_limit": sum(1 for x in overruns if x > limit),
        "median_seconds": statistics.median(row["seconds"] for row in rows),
        "answered_from_tables": sum(1 for row in rows if row["source"] == "table"),
        "tables_in_memory": searcher.table_layers,
        "rows": rows,
    }
    print(json.dumps(summary, indent=2))
    print(f"{len(rows)} searches of {args.time:g} s on {searcher.threads} thread(s): worst overrun "
          f"{summary['worst_overrun'] * 1e3:+.1f} ms, 95th percentile {summary['p95_overrun'] * 1e3:+.1f} ms, "
          f"median {summary['median_overrun'] * 1e3:+.1f} ms (limit {limit * 1e3:.1f} ms; "
          f"{summary['over_limit']} over it)")


if __name__ == "__main__":
    main()
