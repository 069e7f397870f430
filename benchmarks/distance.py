"""Where a layer's distance pass spends its time: JSON out.

    python benchmarks/distance.py --dir D --layers 18,20 [--repeat 2]

D holds the layers' files (values; their distances are not read). For each
layer, `--repeat` times, in one process: the layer solved again from its
smaller layers with its exit values kept (retrograde.LayerSolver, as
`awele build` does), then the distance pass from them (the start, then
the frontiers, each frontier timed), and the pass that plays the captures
instead (layer_distances, as a folder of values alone gains its
distances), checked to give the same bytes. Prints one JSON object a run:
seconds of the value build, of each start, of the frontiers (the first
twelve apart, then the rest), and the frontiers told from carried rows.
"""

import argparse
import json
import time

import numpy as np

from solver import build, distance, index, layer_state, retrograde


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--layers", default="18")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    layers = [int(n) for n in args.layers.split(",")]
    store = build.load_layers(args.dir, range(max(layers) + 1))
    distance.layer_distances(min(8, max(layers)), store)  # compile or load the kernels
    distance.exit_bytes(np.zeros(layer_state.LINE, dtype=np.int8), 1)
    for seeds in layers:
        for run in range(args.repeat):
            started = time.perf_counter()
            solver = retrograde.LayerSolver(seeds, store)
            solver.exits(layer_state.exit_layers(seeds))
            exits = distance.exit_bytes(solver.values, solver.size)
            solver.solve()
            values_seconds = time.perf_counter() - started
            marks: list[float] = []
            started = time.perf_counter()
            passing = distance.DistanceSolver(seeds, store, exits=exits)
            passing.starts_from_exits()
            start_seconds = time.perf_counter() - started
            found = passing.solve(lambda step, fraction, marks=marks: marks.append(time.perf_counter()))
            frontiers = np.diff([started + start_seconds, *marks])
            started = time.perf_counter()
            again = distance.layer_distances(seeds, store)
            print(json.dumps({
                "seeds": seeds, "run": run, "positions": index.layer_size(seeds),
                "values_seconds": round(values_seconds, 3),
                "distance_seconds": round(found.stats["distance_seconds"], 3),
                "start_from_exits_seconds": round(start_seconds, 3),
                "frontier_seconds": round(found.stats["distance_frontier_seconds"], 3),
                "frontiers": len(frontiers),
                "first_frontiers_seconds": [round(float(x), 3) for x in frontiers[:12]],
                "later_frontiers_seconds": round(float(frontiers[12:].sum()), 3),
                "capturing_pass_seconds": round(time.perf_counter() - started, 3),
                "capturing_start_seconds": round(again.stats["distance_start_seconds"], 3),
                "same": bool(np.array_equal(again.distance, found.distance)
                             and np.array_equal(again.overflow, found.overflow)),
            }), flush=True)


if __name__ == "__main__":
    main()
