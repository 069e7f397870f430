"""Search speed on a fixed suite: nodes/s and time to each depth, JSON out.

    python benchmarks/search.py [--dir DIR] [--table-seeds 12] [--depth-scale 0] [--cycles own] [--threads 1]
                                [--suite suites/awele-13-20.txt --movetime 1 [--limit N]]

The suite (solver/bench.py) is the opening, middlegames from two recorded
games and endgames, each searched to a fixed depth with a fresh 64 MiB
transposition table on one thread (or --threads: the split search, nodes of
every thread counted). Tables of 0..table-seeds seeds are read
into memory (built in a temporary folder when DIR lacks them). The first
search compiles the kernel (or loads numba's cache) and is not timed.
"""

import argparse
import json
import os
import tempfile

os.environ.setdefault("NUMBA_NUM_THREADS", "1")  # the build's threads; search threads are --threads


from solver import build as builder
from solver.bench import SUITE_TABLE_SEEDS, bench_search


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=None, help="tables folder (default: a temporary one)")
    parser.add_argument("--table-seeds", type=int, default=SUITE_TABLE_SEEDS)
    parser.add_argument("--depth-scale", type=int, default=0, help="plies added to every suite depth")
    parser.add_argument("--cycles", choices=["own", "split"], default="own")
    parser.add_argument("--threads", type=int, default=1, help="search threads (1: the recorded suite)")
    parser.add_argument("--evaluation", choices=["learned", "zero"], default="learned",
                        help="horizon leaves (zero: the leaf of the suite recorded before the learned evaluation)")
    parser.add_argument("--suite", default=None, help="a suite file: time to solution on it, too")
    parser.add_argument("--movetime", type=float, default=1.0, help="seconds a position of --suite")
    parser.add_argument("--limit", type=int, default=None, help="only the first N positions of --suite")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="awele-search-") as scratch:
        directory = args.dir or scratch
        builder.build(args.table_seeds, directory)
        result = bench_search(directory, args.table_seeds, args.depth_scale, args.cycles, threads=args.threads,
                              evaluation=args.evaluation)
        if args.suite:
            result["suite"] = time_to_solution(args.suite, directory, args)
    print(json.dumps(result, indent=2))
    for row in result["positions"]:
        print(f"{row['name']:40s} depth {row['depth']:3d}  {row['nodes']:>12,} nodes  {row['seconds']:7.2f} s  "
              f"{row['nps'] / 1e6:5.1f} M/s  value {row['value']:+d}{' exact' if row['exact'] else ''}")
    print(f"total: {result['nodes']:,} nodes in {result['seconds']:.2f} s: {result['nps'] / 1e6:.1f} M nodes/s "
          f"(median {result['median_nps'] / 1e6:.1f})")


def time_to_solution(path, directory, args):
    """The suite's summary (solver.suite.summarise) for awele with the tables
    to --table-seeds, --movetime a position."""
    from solver.suite import AweleRunner, Limits, read_suite, run_suite, summarise

    entries = read_suite(path)[: args.limit]
    engine = AweleRunner({"tables": directory, "max_table_seeds": args.table_seeds, "threads": args.threads,
                          "evaluation": args.evaluation})
    try:
        attempts = run_suite(engine, entries, Limits(movetime=args.movetime))
    finally:
        engine.close()
    summary = summarise(attempts)
    whole = summary["all"]
    print(f"suite {os.path.basename(path)}: {whole['solved']}/{whole['positions']} solved at {args.movetime:g} s, "
          f"median time to solution {whole['median_seconds'] or 0:.4f} s")
    return {"file": os.path.basename(path), "movetime": args.movetime, "summary": summary}


if __name__ == "__main__":
    main()
