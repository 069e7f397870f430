"""Time and memory of one layer's distance pass as `awele build` adds it to a file of values alone.

    python scripts/distance_pass_bench.py --dir D --seeds 24 --pass lean --memory 1.5G

D holds the layer's file (values alone: it is written again with its distances, so run on a copy) and its
smaller layers n-15..n-2. `--pass memory` is solver.distance's pass (the layer's values and its distance bytes
held), `--pass lean` solver.lean_distance's (the distance bytes alone), both through build.add_distances within
the same budget. Prints one JSON object: seconds, the pass's stats, the process's resident memory before the pass
(numba's kernels loaded, no layer) and its peak in each step, sampled every 20 ms, and the peak less the process
before it in bytes a position of the layer. Measures; asserts nothing.
"""

import argparse
import gc
import json
import threading
import time

import numpy as np

from solver import build, distance, index, lean_distance, retrograde, tables
from solver.layers import LayerStore
from solver.plan import parse_memory


def resident_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class Sampler(threading.Thread):
    """The largest resident memory seen in each named step."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.step = "before"
        self.peaks: dict[str, int] = {}
        self.running = True

    def run(self) -> None:
        while self.running:
            self.peaks[self.step] = max(self.peaks.get(self.step, 0), resident_bytes())
            time.sleep(0.02)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--seeds", type=int, required=True)
    parser.add_argument("--pass", dest="kind", choices=("memory", "lean"), required=True)
    parser.add_argument("--memory", default="1.5G")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    budget = parse_memory(args.memory)
    # Every kernel compiled (or loaded from numba's cache) on a small layer first.
    small = retrograde.solve_up_to(8)
    distance.layer_distances(8, small)
    values8 = small.layer(8).copy()
    lean_distance.lean_distances(8, small, lambda lo, hi: values8[lo:hi].copy(), tables.histogram(values8, 8))
    del small
    gc.collect()
    sampler = Sampler()
    before = resident_bytes()
    sampler.start()
    if args.kind == "lean":
        distance.working_bytes = lambda size: 1 << 60  # the 2-byte pass made not to fit: add_distances takes this one
        solve, written = lean_distance.solve_classes, lean_distance.file_distances

        def classes(*given, **options):
            sampler.step = "classes"
            return solve(*given, **options)

        def for_file(*given, **options):
            sampler.step = "write"
            return written(*given, **options)

        lean_distance.solve_classes, lean_distance.file_distances = classes, for_file
        sampler.step = "start"
    else:
        sampler.step = "pass and write"
    store = LayerStore(args.seeds)
    started = time.perf_counter()
    stats = build.add_distances(args.seeds, args.dir, store, budget, index.RowTables(args.seeds).arrays)
    seconds = time.perf_counter() - started
    sampler.running = False
    sampler.join()
    size = index.layer_size(args.seeds)
    peak = max(sampler.peaks.values())
    print(json.dumps({
        "seeds": args.seeds, "pass": args.kind, "budget": budget, "seconds": round(seconds, 2),
        "process_bytes_before": before, "peak_bytes_by_step": sampler.peaks,
        "peak_bytes_a_position_beside_the_process": round((peak - before) / size, 3),
        "classes_bytes_a_position": round((sampler.peaks.get("classes", before) - before) / size, 3),
        "stats": {k: (float(v) if isinstance(v, (float, np.floating)) else v) for k, v in (stats or {}).items()},
        "hash_check": tables.check_distances(args.dir, args.seeds),
    }, indent=1))


if __name__ == "__main__":
    main()
