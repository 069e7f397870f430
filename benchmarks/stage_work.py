"""The builder's work a position, without its scattered updates: one thread, JSON out.

    python benchmarks/stage_work.py [--seeds 24] [--positions 2000000] [--repeat 3]

On a sorted sample of random ranks of layer --seeds (no tables needed), it
times what a propagation stage computes for each position it tells the
predecessors of, each part alone:

- unrank: the position's words from its rank (index.unrank_packed; a stage
  mostly steps with the cheaper successor walk, so this is an upper bound);
- predecessors: layer_state.predecessors with nothing held here (no prefetch,
  no update), i.e. the un-sowing candidates, their checks and the ranking of
  those found;
- rank: index.rank_packed of the position itself, the cost of one ranking.

So predecessors minus found x rank is the candidate loop's own cost. Set
beside a stage's thread-seconds a position (benchmarks/build.py), the rest
is the updates (scattered, atomic) and the FRESH scans. Medians of --repeat
runs; the first call compiles the kernels (or loads numba's cache) and is
not timed.
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

from solver import index, layer_state


@njit(cache=True)
def _unrank_all(seeds, ranks, movers, opponents):
    for i in range(ranks.shape[0]):
        movers[i], opponents[i] = index.unrank_packed(seeds, ranks[i])


@layer_state.hot_kernel  # as the builder's kernels call it: no array reference counts in the loop
def _predecessors_loop(seeds, movers, opponents, nothing, nothing_counts, found, found_movers, found_opponents):
    total = 0
    for i in range(movers.shape[0]):
        total += layer_state.predecessors(movers[i], opponents[i], seeds, 0, 0, nothing, nothing_counts, True, True,
                                          found, 0, found_movers, found_opponents)
    return total


def _predecessors_all(seeds, movers, opponents, found):
    nothing = np.zeros(64, np.int8)  # no rank is held here (size 0): nothing prefetched or updated
    found_movers = np.empty(found.shape[0], np.uint64)
    found_opponents = np.empty(found.shape[0], np.uint64)
    return _predecessors_loop(seeds, movers, opponents, nothing, nothing.view(np.uint8), found, found_movers,
                              found_opponents)


@njit(cache=True)
def _rank_all(seeds, movers, opponents):
    check = 0
    for i in range(movers.shape[0]):
        check += index.rank_packed(movers[i], opponents[i], seeds)
    return check


def _timed(call, repeat):
    times = []
    result = None
    for _ in range(repeat):
        started = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=24, help="layer to sample (2..48)")
    parser.add_argument("--positions", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if not 2 <= args.seeds <= index.MAX_SEEDS or args.positions < 1 or args.repeat < 1:
        parser.error(f"--seeds must be 2..{index.MAX_SEEDS}, --positions and --repeat at least 1")

    size = index.layer_size(args.seeds)
    ranks = np.sort(np.random.default_rng(args.seed).integers(0, size, args.positions))
    movers = np.empty(args.positions, np.uint64)
    opponents = np.empty(args.positions, np.uint64)
    found = np.empty(layer_state.MAX_PREDECESSORS, np.int64)
    _unrank_all(args.seeds, ranks[:1], movers, opponents)  # compile or load the cache
    _predecessors_all(args.seeds, movers[:1], opponents[:1], found)
    _rank_all(args.seeds, movers[:1], opponents[:1])

    unrank, _ = _timed(lambda: _unrank_all(args.seeds, ranks, movers, opponents), args.repeat)
    assert _rank_all(args.seeds, movers, opponents) == int(ranks.sum()), "unrank and rank disagree"
    predecessors, total = _timed(lambda: _predecessors_all(args.seeds, movers, opponents, found), args.repeat)
    rank, _ = _timed(lambda: _rank_all(args.seeds, movers, opponents), args.repeat)
    per = 1e9 / args.positions
    found_each = total / args.positions
    print(json.dumps({
        "benchmark": "stage_work",
        "seeds": args.seeds,
        "positions": args.positions,
        "threads": 1,
        "unrank_ns": round(unrank * per, 1),
        "predecessors_ns": round(predecessors * per, 1),
        "predecessors_found": round(found_each, 3),
        "ns_per_predecessor": round(predecessors * 1e9 / max(1, total), 1),
        "rank_ns": round(rank * per, 1),
        "candidate_loop_ns": round((predecessors - found_each * rank) * per, 1),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
    }, indent=2))


if __name__ == "__main__":
    main()
