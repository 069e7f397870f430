"""Builder speed and memory: build layers 0..N in a temporary folder, JSON out.

    python benchmarks/build.py [--max-seeds 20] [--threads 2] [--compare-layer K]

Prints one JSON object per layer (positions, seconds, positions/s, peak RSS,
working bytes per position) and a summary with the total time and the
speed-up from 1 to T threads, measured by solving layer K (default: the
largest) again with one thread and with T threads, in memory, in one run.
The first layers include numba's start-up (compilation or cache loading).
"""

import argparse
import json
import os
import platform
import tempfile
import time

import numba

from solver import index, retrograde, tables


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-seeds", type=int, default=20)
    parser.add_argument("--threads", type=int, default=numba.config.NUMBA_NUM_THREADS)
    parser.add_argument("--compare-layer", type=int, default=None)
    parser.add_argument("--no-compare", action="store_true", help="skip the 1-thread comparison")
    args = parser.parse_args()

    rows = []

    def report(row):
        row = dict(row)
        row["peak_rss_bytes"] = row.pop("peak_bytes")
        rows.append(row)
        print(json.dumps({"benchmark": "build", **row}), flush=True)

    with tempfile.TemporaryDirectory(prefix="awele-bench-") as directory:
        started = time.perf_counter()
        lower = tables.build(args.max_seeds, directory, threads=args.threads, report=report)
        total = time.perf_counter() - started
        file_bytes = sum(os.path.getsize(tables.table_path(directory, n)) for n in range(args.max_seeds + 1))

    summary = {
        "benchmark": "build-summary",
        "max_seeds": args.max_seeds,
        "threads": args.threads,
        "positions": sum(index.layer_size(n) for n in range(args.max_seeds + 1)),
        "seconds": total,
        "file_bytes": file_bytes,
        "file_bytes_per_position": file_bytes / sum(index.layer_size(n) for n in range(args.max_seeds + 1)),
        "peak_rss_bytes": tables.peak_memory_bytes(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
    }
    layer = args.max_seeds if args.compare_layer is None else args.compare_layer
    summary["working_bytes_per_position"] = 3.0  # value + mark row and exit byte (see retrograde.solve_layer)
    summary["lower_layer_bytes"] = int(lower.starts[layer])
    if not args.no_compare and args.threads > 1:
        rows_tables = index.RowTables(layer).arrays
        timings = {}
        for threads in (1, args.threads):
            values, stats = retrograde.solve_layer(layer, lower, threads=threads, rows=rows_tables)
            timings[threads] = stats["seconds"]
            del values
        numba.set_num_threads(args.threads)
        summary["compare_layer"] = layer
        summary["seconds_1_thread"] = timings[1]
        summary[f"seconds_{args.threads}_threads"] = timings[args.threads]
        summary["speedup"] = timings[1] / timings[args.threads]
    print(json.dumps(summary, indent=2))
    print(f"layers 0..{args.max_seeds}: {total:.1f} s, files {file_bytes / 2**20:.1f} MiB "
          f"({summary['file_bytes_per_position']:.3f} B/position), peak RSS {summary['peak_rss_bytes'] / 2**30:.2f} GiB"
          + (f", speed-up 1->{args.threads} threads on layer {layer}: {summary['speedup']:.2f}" if "speedup" in summary else ""))


if __name__ == "__main__":
    main()
