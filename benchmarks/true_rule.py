"""Speed of the true rule's bounds (solver.repetition.true_rule_bounds): µs a graph position, JSON out.

    python benchmarks/true_rule.py [--dir DIR] [--seeds 8,9,10] [--positions 6] [--seed 1] [--rounds 3]

For each seed count, `--positions` positions are drawn from random games
(uniform moves from the opening, `--seed`), each with the history the game
played since its last capture, as the engine meets them inside the tables.
Each is bounded with the tables to seeds - 1 in memory (built in a temporary
folder when DIR lacks them) and no limit on the graph; the figure is the
median over `--rounds` rounds of the whole call's time over the graph's
positions. The first call compiles the kernels (or loads numba's cache) and
is not timed. `digest` hashes every bound found, so that two checkouts can be
seen to agree: run it against another one with PYTHONPATH=that checkout.
"""

import argparse
import hashlib
import json
import os
import platform
import random
import statistics
import tempfile
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

from solver import build as builder
from solver.position import Position
from solver.probe import Tablebase
from solver.repetition import true_rule_bounds


def game_positions(seeds: int, count: int, rng: random.Random) -> list[tuple[Position, list[Position]]]:
    """`count` positions of `seeds` seeds met in random games, each with the
    positions of its layer played before it."""
    found: list[tuple[Position, list[Position]]] = []
    while len(found) < count:
        position, layer = Position.initial(), []
        while not position.is_over() and position.seeds >= seeds:
            if position.seeds == seeds and rng.random() < 0.1:
                found.append((position, layer))
                break
            child = position.play(rng.choice(position.legal_moves()))
            layer = layer + [position] if child.seeds == position.seeds else []
            position = child
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=None, help="tables folder (default: a temporary one)")
    parser.add_argument("--seeds", default="8,9,10", help="seed counts, comma-separated")
    parser.add_argument("--positions", type=int, default=6, help="positions per seed count")
    parser.add_argument("--seed", type=int, default=1, help="random games' seed")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    counts = [int(part) for part in args.seeds.split(",")]

    rng = random.Random(args.seed)
    cases = [(seeds, *case) for seeds in counts for case in game_positions(seeds, args.positions, rng)]
    with tempfile.TemporaryDirectory(prefix="awele-true-rule-") as scratch:
        directory = args.dir or scratch
        builder.build(max(counts) - 1, directory)
        tablebase = Tablebase(directory)
        for seeds in range(max(counts)):
            tablebase.load(seeds)
        tables = tablebase.store.arrays()
        true_rule_bounds(cases[0][1], cases[0][2], tables)  # compile
        rows = []
        digest = hashlib.sha256()
        for seeds, position, history in cases:
            times = []
            for _ in range(args.rounds):
                started = time.perf_counter()
                bounds = true_rule_bounds(position, history, tables, limit=1 << 40)
                times.append(time.perf_counter() - started)
            digest.update(repr((str(position), bounds.lower, bounds.upper, sorted(bounds.moves.items()))).encode())
            rows.append({"seeds": seeds, "position": str(position), "history": len(history),
                         "graph": bounds.positions, "lower": bounds.lower, "upper": bounds.upper,
                         "seconds": statistics.median(times),
                         "us_per_position": 1e6 * statistics.median(times) / max(1, bounds.positions)})
        tablebase.close()
    per_seeds = {}
    for seeds in counts:
        mine = [row for row in rows if row["seeds"] == seeds and row["graph"] >= 1000]
        per_seeds[str(seeds)] = {
            "graphs": len(mine),
            "median_graph": statistics.median(row["graph"] for row in mine) if mine else None,
            "median_us_per_position": statistics.median(row["us_per_position"] for row in mine) if mine else None,
            "median_seconds": statistics.median(row["seconds"] for row in mine) if mine else None,
        }
    result = {"machine": platform.machine(), "python": platform.python_version(), "rounds": args.rounds,
              "seed": args.seed, "per_seeds": per_seeds, "digest": digest.hexdigest(), "positions": rows}
    print(json.dumps(result, indent=2))
    for seeds, row in per_seeds.items():
        if row["graphs"]:
            print(f"{seeds} seeds: {row['graphs']} graphs of {row['median_graph']:,.0f} positions (median): "
                  f"{row['median_us_per_position']:.2f} µs a position, {row['median_seconds']:.3f} s a graph")
    print(f"digest {result['digest'][:16]}")


if __name__ == "__main__":
    main()
