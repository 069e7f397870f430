"""The lean stages on one layer: time, and the bytes a position they hold resident, JSON out.

    python benchmarks/lean.py --dir D --layer 24 [--memory 500M] [--threads T] [--tell-threads 1] [--settle-threads 1]

D must hold the layers that layer N's captures reach (N-15..N-2); it is only
read. Layer N is solved by solver.lean.LeanLayer with the exit groups
plan.lean_plan gives under the budget, its scratch files in a temporary
folder, and no table written. Resident memory is the kernel's VmRSS, sampled
every 20 ms while the stages run, less VmRSS before the layer (the process
with its kernels loaded): the stages' own bytes a position. Prints one JSON
object: seconds (exits, passes, telling), the process's base and stage peak
in bytes, the stage bytes a position, the exits' peak (the process's peak by
then: its smaller layers a group at a time), the queue file's peak a
position and the predecessors told.
"""

import argparse
import json
import tempfile
import threading
import time

import numba

from solver import build, index, lean, plan, tables
from solver.layers import LayerStore


def resident_bytes() -> int:
    """This process's resident memory now (VmRSS), in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) * 1024
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--layer", type=int, required=True)
    parser.add_argument("--memory", default="500M")
    parser.add_argument("--threads", type=int, default=None, help="numba's threads (default: every core)")
    parser.add_argument("--tell-threads", type=int, default=None, help="default: --threads")
    parser.add_argument("--settle-threads", type=int, default=None, help="default: --threads")
    args = parser.parse_args()
    seeds = args.layer
    if args.threads:
        numba.set_num_threads(args.threads)
    layout = plan.lean_plan(seeds, plan.parse_memory(args.memory))
    if layout is None:
        raise SystemExit(f"layer {seeds} does not fit the lean stages in {args.memory}")
    store = LayerStore(seeds)
    rows = index.RowTables(seeds).arrays
    build._warm_up(8)  # the kernels compiled or loaded, numba's threads started
    base = resident_bytes()
    peak = [0]
    sampling = threading.Event()
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            if sampling.is_set():
                peak[0] = max(peak[0], resident_bytes())
            time.sleep(0.02)

    threading.Thread(target=sample, daemon=True).start()
    stages = lean.LeanLayer._stages

    def sampled(self, *args):
        sampling.set()
        try:
            return stages(self, *args)
        finally:
            sampling.clear()

    lean.LeanLayer._stages = sampled  # type: ignore[method-assign]

    def load(m: int) -> None:
        tables.load_values(args.dir, m, out=store.layer(m))
        store.mark_loaded(m)

    with tempfile.TemporaryDirectory() as scratch:
        layer = lean.LeanLayer(seeds, scratch, store, rows, layout["groups"], load, tell_threads=args.tell_threads,
                               settle_threads=args.settle_threads)
        stats = layer.solve()
        layer.clear()
    done.set()
    size = index.layer_size(seeds)
    print(json.dumps({
        "layer": seeds, "positions": size, "memory": args.memory, "threads": numba.get_num_threads(),
        "tell_threads": layer.tell_threads, "settle_threads": layer.settle_threads,
        "exit_passes": stats["exit_passes"], "seconds": stats["seconds"], "exit_seconds": stats["exit_seconds"],
        "pass_seconds": stats["pass_seconds"], "tell_seconds": stats["tell_seconds"],
        "base_bytes": base, "stage_peak_bytes": peak[0], "stage_bytes_per_position": (peak[0] - base) / size,
        "exit_peak_bytes": stats["exit_peak_bytes"], "queue_peak_per_position": stats["queue_peak_bytes"] / size,
        "predecessors_told": stats["predecessors_told"]}))


if __name__ == "__main__":
    main()
