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
    args = parser.parse_args()

    boards = game_positions(args.games, seed=1)
    boards = boards[np.random.default_rng(0).permutation(boards.shape[0])]
    movers, opponents = _packed(boards)
    weights = load_weights()
    result = {"benchmark": "evaluation", "module": evaluation.__file__, "positions": int(movers.shape[0]),
              "weights_version": evaluation.WEIGHTS_VERSION, "threads": 1, "machine": platform.machine(),
              "python": platform.python_version(), "ns_per_position": {}, "checksum": {}}
    for name, kernel in KERNELS.items():
        result["checksum"][name] = int(kernel(movers, opponents, weights))  # compile, and a check
        times = []
        for _ in range(args.repeat):
            started = time.process_time()
            kernel(movers, opponents, weights)
            times.append(time.process_time() - started)
        result["ns_per_position"][name] = round(statistics.median(times) / movers.shape[0] * 1e9, 2)
    print(json.dumps(result, indent=2))
    for name, ns in result["ns_per_position"].items():
        print(f"{name:10s} {ns:7.2f} ns a position")


if __name__ == "__main__":
    main()
