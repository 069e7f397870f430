"""The exits of one layer, resident against streamed, alternated: seconds, and the same values. JSON out.

    python benchmarks/streamed_exits.py --dir D --layer 22 [--runs 3] [--memory 2G] [--threads 2]

D must hold layers N-15..N-2; it is only read. A *resident* run reads them
whole (tables.load_values, timed apart) and makes the layer's exits as the
lean stages' first exit pass does when every smaller layer fits (one group:
exits.exit_pass a block at a time); a *streamed* run makes them as
solver.lean_exits does (plan.streamed_layout under --memory: its slices and
window, the smaller layers read a window at a time, the requests through a
temporary scratch folder). The runs alternate, each kind `--runs` times;
every run's values and counts must be the first resident run's (SHA-256).
Prints one JSON object: each run's seconds, the medians, the requests, the
slices and the window.
"""

import argparse
import hashlib
import json
import statistics
import tempfile
import time

import numpy as np

from solver import build, exits, index, layer_state, lean, lean_exits, plan, tables
from solver.layers import LayerStore


def digest(values: np.ndarray, counts: np.ndarray) -> str:
    return hashlib.sha256(values.tobytes() + counts.tobytes()).hexdigest()


def resident(seeds: int, directory: str, rows: tuple) -> tuple[float, float, str, int]:
    """(load seconds, exit seconds, digest, look-ups) of the resident exits."""
    store = LayerStore(seeds)
    started = time.perf_counter()
    for m in layer_state.exit_layers(seeds):
        tables.load_values(directory, m, out=store.layer(m))
        store.mark_loaded(m)
    loaded = time.perf_counter()
    size = index.layer_size(seeds)
    values = np.zeros(size, dtype=np.int8)
    counts = np.zeros((size + 1) // 2, dtype=np.uint8)
    use = np.zeros(index.MAX_SEEDS + 1, dtype=np.bool_)
    use[layer_state.exit_layers(seeds)] = True
    block = lean.block_ranks(size)
    lookups = 0
    for lo in range(0, size, block):
        piece = values[lo : lo + block]
        lookups += int(exits.exit_pass(seeds, piece.shape[0], piece, counts[lo // 2 : (lo + block) // 2], store.flat,
                                       store.starts, use, True, rows, False, lo))
    return loaded - started, time.perf_counter() - loaded, digest(values, counts), lookups


def streamed(seeds: int, directory: str, rows: tuple, layout: dict) -> tuple[float, str, int]:
    """(seconds, digest, look-ups) of the streamed exits."""
    size = index.layer_size(seeds)
    values = np.zeros(size, dtype=np.int8)
    counts = np.zeros((size + 1) // 2, dtype=np.uint8)
    lookups = 0
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        for lo in range(0, size, layout["slice"]):
            hi = min(size, lo + layout["slice"])
            found = lean_exits.slice_exits(seeds, lo, values[lo:hi], counts[lo // 2 : (hi + 1) // 2], rows, scratch,
                                           lambda m, a, b: tables.load_slice(directory, m, a, b)[0],
                                           layout["window"])
            lookups += found["lookups"]
    return time.perf_counter() - started, digest(values, counts), lookups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--layer", type=int, required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--memory", default="2G")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    seeds = args.layer
    layout = plan.streamed_layout(seeds, plan.parse_memory(args.memory))
    if layout is None:
        raise SystemExit(f"layer {seeds}'s streamed exits do not fit {args.memory}")
    rows = index.RowTables(seeds).arrays
    with layer_state.thread_count(args.threads):
        build._warm_up(8)
        resident(min(seeds, 10), directory=args.dir, rows=index.RowTables(min(seeds, 10)).arrays)  # compiled
        streamed(min(seeds, 10), args.dir, index.RowTables(min(seeds, 10)).arrays,
                 plan.streamed_layout(min(seeds, 10), plan.parse_memory(args.memory)))
        runs: dict[str, list[float]] = {"resident": [], "resident_load": [], "streamed": []}
        expected = None
        for _ in range(args.runs):
            load, seconds, found, lookups = resident(seeds, args.dir, rows)
            expected = expected or found
            assert found == expected, "the resident exits changed between runs"
            runs["resident"].append(seconds)
            runs["resident_load"].append(load)
            seconds, found, streamed_lookups = streamed(seeds, args.dir, rows, layout)
            assert found == expected, "the streamed exits differ from the resident ones"
            assert streamed_lookups == lookups
            runs["streamed"].append(seconds)
    size = index.layer_size(seeds)
    print(json.dumps({
        "layer": seeds, "positions": size, "memory": args.memory, "threads": args.threads, "runs": runs,
        "median": {kind: statistics.median(seconds) for kind, seconds in runs.items()},
        "lookups": lookups, "lookups_per_position": lookups / size, "slices": layout["slices"],
        "window": layout["window"], "same_values": True}))


if __name__ == "__main__":
    main()
