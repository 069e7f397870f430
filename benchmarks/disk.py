"""The disk mode on one layer: its time, traffic and visits, JSON out.

    python benchmarks/disk.py --dir D --layer 16 [--slices 2] [--groups 1] [--sliced-stages] [--threads 2]

D must hold layers 0..N-1 (they are copied, with nothing else, into a
temporary folder, so D is never written). Layer N is built there by
solver.build.build_layer_on_disk with K slices and its smaller layers cut
into G exit groups (every other layer, largest first, so that each group
holds some large layers), its stages in memory or, with --sliced-stages, a
slice at a time. Prints one JSON object: seconds, positions/s, exit and
stage seconds, bytes read and written in the scratch folder, that traffic
over the working state, and for sliced stages the visits (in all, and a
slice a stage) and the updates sent between slices a position. Compare with
`python benchmarks/build.py --layer N --dir D` for the same layer in memory.
"""

import argparse
import json
import os
import shutil
import tempfile
import time

from solver import build, index, layer_state, plan, tables
from solver.layers import LayerStore


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--layer", type=int, required=True)
    parser.add_argument("--slices", type=int, default=2)
    parser.add_argument("--groups", type=int, default=1)
    parser.add_argument("--sliced-stages", action="store_true")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    seeds = args.layer
    folder = tempfile.mkdtemp(prefix="awele-disk-")
    try:
        for m in range(seeds):
            shutil.copy(tables.table_path(args.dir, m), tables.table_path(folder, m))
        layers = sorted(layer_state.exit_layers(seeds), reverse=True)
        groups = [sorted(layers[g :: args.groups]) for g in range(args.groups) if layers[g :: args.groups]]
        layout = {"slices": args.slices, "bounds": plan.disk_bounds(index.layer_size(seeds), args.slices),
                  "groups": groups, "scratch_bytes": 0, "sliced_stages": args.sliced_stages}
        state = sum(-(-(hi - lo) // layer_state.LINE_RANKS) for lo, hi in
                    zip(layout["bounds"], layout["bounds"][1:])) * layer_state.LINE
        with layer_state.thread_count(args.threads):
            started = time.perf_counter()
            stats = build.build_layer_on_disk(seeds, folder, os.path.join(folder, "scratch"), LayerStore(seeds),
                                              layout, index.RowTables(seeds).arrays)
            seconds = time.perf_counter() - started
        size = index.layer_size(seeds)
        row = {"layer": seeds, "positions": size, "slices": args.slices, "exit_passes": len(groups),
               "sliced_stages": args.sliced_stages, "seconds": seconds, "positions_per_second": size / seconds,
               "exit_seconds": stats["exit_seconds"], "stage_seconds": stats["stage_seconds"],
               "write_seconds": stats["write_seconds"], "disk_bytes_read": stats["disk_bytes_read"],
               "disk_bytes_written": stats["disk_bytes_written"], "working_state_bytes": state,
               "traffic_over_state": (stats["disk_bytes_read"] + stats["disk_bytes_written"]) / state}
        if args.sliced_stages:
            row.update(visits=stats["stage_visits"], visits_a_slice_a_stage=stats["stage_visits"] / args.slices / seeds,
                       updates_a_position=stats["updates_sent"] / size)
        print(json.dumps(row))
    finally:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
