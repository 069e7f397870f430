"""Speed of the learned evaluation: nanoseconds a position, single thread, JSON out.

    python benchmarks/evaluation.py [--games 20000] [--repeat 7]

The positions are the distinct ones met in `--games` playouts from the opening
(fitting.game_positions, about 110 a game), shuffled so that branches are no
easier to predict than at the horizon of a search. Each kernel runs over all of
them in a loop that folds its results into one number (total * 3 + result,
which LLVM cannot spread over SIMD lanes: a search evaluates one leaf at a
time); the figure is the median over `--repeat` loops of the loop's CPU time
(process time: on a shared machine it counts this process only) over the
positions. "read" only reads the two words, the floor under the others;
"features" computes all the features, "evaluate" the whole estimate with the
shipped weights. The capture threat alone is not timed: in a loop that does
nothing else LLVM turns its branch-free maxima into branches, which it does not
where the features are used whole. The first loop of each kernel compiles and
is not timed; these loops are not cached, since numba's cache would not see a
change in solver.evaluation. Run it against another checkout with
PYTHONPATH=that checkout.

`--weights FILE` (repeatable; default: the shipped weights) times each
weights file, a version 1 (linear) or 2 (pattern) one. With `--search-dir
DIR` (tables already built there, read only: nothing is built) it also runs
the search suite (solver.bench.bench_search, one thread, tables to
`--table-seeds`, suite depths + `--depth-scale`) with each file in turn, for
`--rounds` rounds, so that a machine whose load changes weighs on each alike:
compare the nodes/s of files from the same round, as ratios.
"""

import argparse
import json
import os
import platform
import statistics
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import numpy as np
from numba import njit

from solver import evaluation
from solver.evaluation import evaluate, feature_values, load_weights
from solver.fitting import game_positions
from solver.rules import pack


@njit
def _packed(boards):
    movers = np.empty(boards.shape[0], np.uint64)
    opponents = np.empty(boards.shape[0], np.uint64)
    for i in range(boards.shape[0]):
        movers[i], opponents[i] = pack(boards[i])
    return movers, opponents


@njit
def _read(movers, opponents, weights):
    total = 0
    for i in range(movers.shape[0]):
        total = total * 3 + np.int64((movers[i] ^ opponents[i]) & np.uint64(7))
    return total


@njit
def _all_features(movers, opponents, weights):
    total = 0
    for i in range(movers.shape[0]):
        values = feature_values(movers[i], opponents[i])
        for k in range(len(values)):
            total = total * 3 + values[k]
    return total


@njit
def _estimates(movers, opponents, weights):
    total = 0
    for i in range(movers.shape[0]):
        total = total * 3 + evaluate(movers[i], opponents[i], weights)
    return total


KERNELS = {"read": _read, "features": _all_features, "evaluate": _estimates}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--weights", action="append", default=None,
                        help="a weights file to time (repeatable; default: the shipped one)")
    parser.add_argument("--search-dir", default=None, help="tables folder for the search suite (read only)")
    parser.add_argument("--table-seeds", type=int, default=12)
    parser.add_argument("--depth-scale", type=int, default=-6)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    files = args.weights or [None]

    boards = game_positions(args.games, seed=1)
    boards = boards[np.random.default_rng(0).permutation(boards.shape[0])]
    movers, opponents = _packed(boards)
    result = {"benchmark": "evaluation", "module": evaluation.__file__, "positions": int(movers.shape[0]),
              "threads": 1, "machine": platform.machine(), "python": platform.python_version(), "files": []}
    for path in files:
        weights = load_weights(path)
        timing = {"weights_file": path or "<shipped>", "weights": int(weights.shape[0]), "ns_per_position": {},
                  "checksum": {}}
        for name, kernel in KERNELS.items():
            timing["checksum"][name] = int(kernel(movers, opponents, weights))  # compile, and a check
            times = []
            for _ in range(args.repeat):
                started = time.process_time()
                kernel(movers, opponents, weights)
                times.append(time.process_time() - started)
            timing["ns_per_position"][name] = round(statistics.median(times) / movers.shape[0] * 1e9, 2)
        result["files"].append(timing)
    if args.search_dir:
        from solver.bench import bench_search

        rounds = []
        for _ in range(args.rounds):
            runs = {}
            for path in files:
                suite = bench_search(args.search_dir, args.table_seeds, args.depth_scale, weights_file=path)
                runs[path or "<shipped>"] = {"nodes": suite["nodes"], "seconds": round(suite["seconds"], 4),
                                             "nps": round(suite["nps"]), "median_nps": round(suite["median_nps"])}
            rounds.append(runs)
        result["search"] = {"table_seeds": args.table_seeds, "depth_scale": args.depth_scale, "rounds": rounds}
    print(json.dumps(result, indent=2))
    for timing in result["files"]:
        for name, ns in timing["ns_per_position"].items():
            print(f"{timing['weights_file']}: {name:10s} {ns:7.2f} ns a position")
    for number, runs in enumerate(result.get("search", {}).get("rounds", [])):
        for path, run in runs.items():
            print(f"round {number + 1} {path}: {run['nodes']:,} nodes, {run['seconds']:.2f} s, "
                  f"{run['nps'] / 1e6:.2f} M nodes/s")


if __name__ == "__main__":
    main()
