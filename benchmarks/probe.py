"""Lookup speed: `awele best` wall time and Tablebase.values() throughput, JSON out.

    python benchmarks/probe.py [--seeds 16] [--dir DIR] [--boards 2000000] [--repeat 5]

Builds layers 0..seeds in DIR when they are missing (a temporary folder by
default). `best_seconds` is the wall time of the whole command, Python start
included, once numba's cache is warm (the first, cold run is reported apart).
`values_per_second` is Tablebase.values() over random boards of the top layer
already loaded in memory.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from solver import Position, index
from solver import build as builder
from solver.probe import Tablebase


def random_boards(seeds, count, rng):
    """Random mover-view boards with `seeds` seeds (inside or outside the index)."""
    cuts = np.sort(rng.integers(0, seeds + 1, size=(count, 11)), axis=1)
    edges = np.concatenate([np.zeros((count, 1), int), cuts, np.full((count, 1), seeds)], axis=1)
    return np.diff(edges, axis=1).astype(np.uint8)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=16)
    parser.add_argument("--dir", default=None)
    parser.add_argument("--boards", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="awele-probe-") as scratch:
        directory = args.dir or scratch
        builder.build(args.seeds, directory)
        rng = np.random.default_rng(1)
        position = Position.from_mover_board(random_boards(args.seeds, 1, rng)[0])
        command = [sys.executable, "-m", "solver.cli", "best", str(position), "--dir", directory, "--json"]
        times = []
        for _ in range(args.repeat + 1):
            started = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True)
            times.append(time.perf_counter() - started)

        with Tablebase(directory) as tablebase:
            for seeds in range(args.seeds + 1):
                tablebase.load(seeds)
            boards = random_boards(args.seeds, args.boards, rng)
            tablebase.values(boards[:10])
            rates = []
            for _ in range(args.repeat):
                started = time.perf_counter()
                tablebase.values(boards)
                rates.append(args.boards / (time.perf_counter() - started))

    result = {
        "benchmark": "probe",
        "seeds": args.seeds,
        "position": str(position),
        "best_seconds_cold": times[0],
        "best_seconds": statistics.median(times[1:]),
        "best_seconds_all": times[1:],
        "values_boards": args.boards,
        "values_per_second": statistics.median(rates),
        "layer_positions": index.layer_size(args.seeds),
        "cpus": os.cpu_count(),
    }
    print(json.dumps(result, indent=2))
    print(f"awele best: {result['best_seconds']:.2f} s (warm), "
          f"values(): {result['values_per_second'] / 1e6:.1f} M positions/s")


if __name__ == "__main__":
    main()
