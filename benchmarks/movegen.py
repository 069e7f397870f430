"""Move-generation speed: perft from the opening, single thread, JSON out.

    python benchmarks/movegen.py [--depth 11] [--repeat 5]

Leaves are bulk-counted at the last ply (the legal moves of each node at depth
D-1 are counted, not played), as perft programs usually do. The first call
compiles the kernel (or loads numba's cache) and is not timed.
"""

import argparse
import json
import os
import platform
import statistics
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

from solver import Position, perft


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=11)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    opening = Position.initial()
    perft(opening, 2)  # compile or load the cache
    times = []
    leaves = 0
    for _ in range(args.repeat):
        started = time.perf_counter()
        leaves = perft(opening, args.depth)
        times.append(time.perf_counter() - started)
    seconds = statistics.median(times)
    result = {
        "benchmark": "movegen",
        "position": str(opening),
        "depth": args.depth,
        "leaves": leaves,
        "seconds": seconds,
        "seconds_all": times,
        "leaves_per_second": leaves / seconds,
        "threads": 1,
        "machine": platform.machine(),
        "python": platform.python_version(),
    }
    print(json.dumps(result, indent=2))
    print(f"perft({args.depth}) = {leaves:,} leaves in {seconds:.3f} s (median of {args.repeat}): "
          f"{leaves / seconds / 1e6:.0f} M leaves/s")


if __name__ == "__main__":
    main()
