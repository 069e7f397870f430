"""Builder speed and memory: build layers 0..N, JSON out.

    python benchmarks/build.py [--max-seeds 20] [--threads 2] [--memory 20G] [--compare-layer K]
    python benchmarks/build.py --max-seeds 32 --dir databases --no-compare   # resumable, in place
    python benchmarks/build.py --recorded databases                          # what the files recorded
    python benchmarks/memory.py --out memory.json && python benchmarks/build.py --ceiling memory.json
    python benchmarks/build.py --layer 19 --dir D    # layer 19 alone, in memory, over D's layers 4..17

Prints one JSON object per layer (positions, seconds, positions/s, exit
passes, peak RSS, working bytes per position) and a summary with the total
time and the speed-up from 1 to T threads, measured by solving layer K
(default: the largest) again with one thread and with T threads, in memory,
in one run. Without --dir the build goes to a temporary folder. The first
layers include numba's start-up (compilation or cache loading).

Each built layer's row also gives the scattered accesses the build made, as
the kernels counted them (not estimated): exit_lookups (one value read in
a smaller layer per capture looked up) plus stage_accesses (per
predecessor told, its line: its value byte and, when the child was won,
its count nibble, which lie in one line), their sum scattered_accesses, the rate over the exit and stage
seconds, and with --ceiling FILE (the JSON of benchmarks/memory.py --out)
ceiling_share: that rate over the machine's atomic, prefetched update rate
on all threads.

--processes P compares the distributed build with the single-process one:
layers 0..N built once by one process with T threads and once by
`mpiexec -n P` processes with T // P threads each (so both use the same
cores), each under /usr/bin/time -v for the peak RSS; it prints both runs'
per-layer rows, then the overhead ratio (distributed / single seconds),
the bytes exchanged per position, the share of time spent communicating,
and whether every layer's values agree. --memory is then each process's budget.

--layer K --dir D solves layer K alone, in memory, over the smaller layers
D holds (nothing is written), and prints its stats, the SHA-256 of its
values and whether it is the one tests/data/layer_sha256.json recorded.
Run with PYTHONPATH at another checkout, it times that checkout's builder
on the same layer: alternate the two to compare builders back to back.

--busy N keeps N other processes busy (each spinning on one core) for the
whole build, and records it in the summary: how a build fares when another
program takes cores. Compare with the same build and --busy 0.

--recorded D reads, for every layer in D, the build time, threads, peak RSS
and exit passes each file recorded when it was built, and the bytes a
position on disk: the per-layer rates of builds too long to repeat here.
"""

import argparse
import contextlib
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

import h5py
import numba

from solver import build, index, layer_state, plan, retrograde, tables
from solver.layers import LayerStore


def recorded(directory):
    for seeds in tables.built_layers(directory):
        info = tables.table_info(directory, seeds)
        row = {"benchmark": "build-recorded", "seeds": seeds, "positions": info["positions"], "status": info["status"]}
        if info["status"] == "ok":
            with h5py.File(tables.table_path(directory, seeds), "r") as handle:
                for key in ("threads", "peak_bytes", "exit_passes"):
                    if key in handle.attrs:
                        row[key] = int(handle.attrs[key])
            row["build_seconds"] = info["build_seconds"]
            row["positions_per_second"] = info["positions"] / info["build_seconds"] if info["build_seconds"] else None
            row["file_bytes"] = info["bytes"]
            row["file_bytes_per_position"] = info["bytes_per_position"]
        print(json.dumps(row), flush=True)


def _timed_build(command, directory):
    """Run an `awele build --json` command line under /usr/bin/time -v: (rows, seconds, peak RSS bytes)."""
    timer = ["/usr/bin/time", "-v"] if os.path.exists("/usr/bin/time") else []
    started = time.perf_counter()
    result = subprocess.run(timer + command + ["--dir", directory, "--json", "--quiet"], capture_output=True,
                            text=True)
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{result.stderr}")
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", result.stderr)
    return rows, seconds, int(peak.group(1)) * 1024 if peak else None


def _digest(directory, seeds):
    return hashlib.sha256(tables.load_values(directory, seeds).tobytes()).hexdigest()


def compare_processes(max_seeds, processes, threads, memory=None):
    """The single-process build against `mpiexec -n processes`, on the same
    cores; `memory` (e.g. 3G) is each process's budget when given."""
    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        sys.exit("--processes needs mpiexec (pip install 'awele[mpi]')")
    each = max(1, threads // processes)
    awele = [sys.executable, "-m", "solver", "build", "--max-seeds", str(max_seeds)]
    if memory:
        awele += ["--memory", memory]
    with tempfile.TemporaryDirectory(prefix="awele-bench-") as scratch:
        single_dir, many_dir = os.path.join(scratch, "single"), os.path.join(scratch, "many")
        single, single_seconds, single_peak = _timed_build(awele + ["--threads", str(threads)], single_dir)
        many, many_seconds, many_peak = _timed_build(
            [mpiexec, "-n", str(processes)] + awele + ["--threads", str(each)], many_dir)
        for run, rows in (("single", single), ("distributed", many)):
            for row in rows:
                print(json.dumps({"benchmark": f"build-{run}", **row}), flush=True)
        same = all(_digest(single_dir, n) == _digest(many_dir, n) for n in range(max_seeds + 1))
    positions = sum(index.layer_size(n) for n in range(max_seeds + 1))
    exchanged = sum(row["bytes_exchanged"] for row in many)
    layer_seconds = sum(row["seconds"] for row in many)
    largest = many[-1]
    summary = {
        "benchmark": "build-processes",
        "max_seeds": max_seeds,
        "positions": positions,
        "single": {"processes": 1, "threads": threads, "seconds": single_seconds,
                   "layer_seconds": sum(row["seconds"] for row in single), "peak_rss_bytes": single_peak},
        "distributed": {"processes": processes, "threads_each": each, "seconds": many_seconds,
                        "layer_seconds": layer_seconds, "peak_rss_bytes_one_process": many_peak},
        "overhead_ratio": layer_seconds / sum(row["seconds"] for row in single),
        "bytes_exchanged": exchanged,
        "bytes_exchanged_per_position": exchanged / positions,
        "communication_share": sum(row["communication_seconds"] for row in many) / layer_seconds,
        "largest_layer": {key: largest[key] for key in ("seeds", "positions", "seconds", "bytes_exchanged_per_position",
                                                        "communication_share")},
        "same_values": same,
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
    }
    print(json.dumps(summary, indent=2))
    print(f"layers 0..{max_seeds}: 1 process x {threads} threads {summary['single']['layer_seconds']:.1f} s, "
          f"{processes} processes x {each} {layer_seconds:.1f} s: overhead x{summary['overhead_ratio']:.2f}, "
          f"{summary['bytes_exchanged_per_position']:.1f} B exchanged a position, "
          f"{100 * summary['communication_share']:.0f}% of the time communicating; same values: {same}")


def one_layer(seeds, directory, threads):
    store = build.load_layers(directory, layer_state.exit_layers(seeds), LayerStore(seeds))
    rows_tables = index.RowTables(seeds).arrays
    started = time.perf_counter()
    values, stats = retrograde.solve_layer(seeds, store, threads=threads, rows=rows_tables)
    stats["wall_seconds"] = time.perf_counter() - started
    stats.pop("stages")
    stats["sha256"] = hashlib.sha256(values.tobytes()).hexdigest()
    here = os.path.dirname(os.path.abspath(__file__))
    recorded_hashes = os.path.join(here, "..", "tests", "data", "layer_sha256.json")
    with open(recorded_hashes) as handle:
        stats["recorded_sha256"] = json.load(handle)["sha256"].get(str(seeds)) == stats["sha256"]
    print(json.dumps({"benchmark": "build-layer", "seeds": seeds, "threads": threads, **stats}))


class _Spinners:
    """Processes that each keep one core busy until stopped."""

    def __init__(self, count):
        code = "while True: pass"
        self.processes = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(count)]

    def cpu_seconds(self):
        """CPU seconds the spinners have had so far (from /proc: user + system)."""
        ticks = os.sysconf("SC_CLK_TCK")
        total = 0.0
        for process in self.processes:
            with open(f"/proc/{process.pid}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
        return total

    def stop(self):
        for process in self.processes:
            process.kill()
            process.wait()


@contextlib.contextmanager
def _busy(count):
    spinners = _Spinners(count)
    try:
        yield spinners
    finally:
        spinners.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-seeds", type=int, default=20)
    parser.add_argument("--threads", type=int, default=numba.config.NUMBA_NUM_THREADS)
    parser.add_argument("--memory", default=None, help="memory budget (default: available less 1 GiB)")
    parser.add_argument("--dir", default=None, help="build in this folder (kept; layers already there are reused)")
    parser.add_argument("--compare-layer", type=int, default=None)
    parser.add_argument("--no-compare", action="store_true", help="skip the 1-thread comparison")
    parser.add_argument("--recorded", metavar="DIR", default=None, help="print what the files of DIR recorded")
    parser.add_argument("--layer", type=int, default=None, help="solve this layer alone over --dir's (see above)")
    parser.add_argument("--ceiling", metavar="FILE", default=None,
                        help="benchmarks/memory.py --out JSON: report each layer's share of that update rate")
    parser.add_argument("--busy", type=int, default=0, metavar="N",
                        help="keep N CPU-bound processes running during the build (see above)")
    parser.add_argument("--processes", type=int, default=None,
                        help="compare with `mpiexec -n P` on the same cores (see above)")
    args = parser.parse_args()
    if args.recorded:
        recorded(args.recorded)
        return
    if args.layer is not None:
        if not args.dir:
            sys.exit("--layer needs --dir, the folder holding the smaller layers")
        one_layer(args.layer, args.dir, args.threads)
        return
    if args.processes:
        compare_processes(args.max_seeds, args.processes, args.threads, args.memory)
        return
    budget = plan.parse_memory(args.memory) if args.memory else plan.default_budget()
    ceiling = None
    if args.ceiling:
        with open(args.ceiling) as handle:
            ceiling = json.load(handle)["summary"]["ceiling_updates_per_second"]
    accesses = {"scattered_accesses": 0, "seconds": 0.0}

    def report(row):
        row = dict(row)
        row["peak_rss_bytes"] = row.pop("peak_bytes")
        if row.get("working_bytes"):
            row["working_bytes_per_position"] = row["working_bytes"] / row["positions"]
        if "exit_lookups" in row:
            row["scattered_accesses"] = row["exit_lookups"] + row["stage_accesses"]
            row["scattered_accesses_per_position"] = row["scattered_accesses"] / row["positions"]
            seconds = row["exit_seconds"] + row["stage_seconds"]
            row["scattered_accesses_per_second"] = row["scattered_accesses"] / seconds if seconds else None
            if ceiling and seconds:
                row["ceiling_share"] = row["scattered_accesses_per_second"] / ceiling
            accesses["scattered_accesses"] += row["scattered_accesses"]
            accesses["seconds"] += seconds
        print(json.dumps({"benchmark": "build", **row}), flush=True)

    with tempfile.TemporaryDirectory(prefix="awele-bench-") as scratch, _busy(args.busy) as busy:
        directory = args.dir or scratch
        started = time.perf_counter()
        build.build(args.max_seeds, directory, threads=args.threads, memory=budget, report=report)
        total = time.perf_counter() - started
        busy_seconds = busy.cpu_seconds()
        file_bytes = sum(os.path.getsize(tables.table_path(directory, n)) for n in range(args.max_seeds + 1))
        positions = sum(index.layer_size(n) for n in range(args.max_seeds + 1))
        summary = {
            "benchmark": "build-summary",
            "max_seeds": args.max_seeds,
            "threads": args.threads,
            "memory_budget_bytes": budget,
            "positions": positions,
            "seconds": total,
            "file_bytes": file_bytes,
            "file_bytes_per_position": file_bytes / positions,
            "peak_rss_bytes": build.peak_memory_bytes(),
            "working_bytes_per_position": layer_state.WORKING_BYTES,
            "scattered_accesses": accesses["scattered_accesses"],
            "scattered_accesses_per_second": (accesses["scattered_accesses"] / accesses["seconds"]
                                              if accesses["seconds"] else None),
            "ceiling_updates_per_second": ceiling,
            "busy_processes": args.busy,
            "busy_cpu_seconds": busy_seconds,
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
        }
        layer = args.max_seeds if args.compare_layer is None else args.compare_layer
        if not args.no_compare and args.threads > 1:
            store = build.load_layers(directory, layer_state.exit_layers(layer), LayerStore(layer))
            rows_tables = index.RowTables(layer).arrays
            timings = {}
            for threads in (1, args.threads):
                _, stats = retrograde.solve_layer(layer, store, threads=threads, rows=rows_tables)
                timings[threads] = stats["seconds"]
            summary["compare_layer"] = layer
            summary["seconds_1_thread"] = timings[1]
            summary[f"seconds_{args.threads}_threads"] = timings[args.threads]
            summary["speedup"] = timings[1] / timings[args.threads]
    if ceiling and summary["scattered_accesses_per_second"]:
        summary["ceiling_share"] = summary["scattered_accesses_per_second"] / ceiling
    print(json.dumps(summary, indent=2))
    print(f"layers 0..{args.max_seeds}: {total:.1f} s, files {file_bytes / 2**20:.1f} MiB "
          f"({summary['file_bytes_per_position']:.3f} B/position), peak RSS {summary['peak_rss_bytes'] / 2**30:.2f} GiB"
          + (f", speed-up 1->{args.threads} threads on layer {layer}: {summary['speedup']:.2f}"
             if "speedup" in summary else ""))


if __name__ == "__main__":
    main()
