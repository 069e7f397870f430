"""Time of the engine's table answers (solver.uci.table_answer: the move by
distance to conversion and a line of 12 plies), one position at a time, JSON out.

    python benchmarks/table_answers.py [--dir databases] [--layers 10-16] [--positions 1000] [--seed 1]
                                       [--out answers.json]

Per layer, `positions` random positions (random boards of that many seeds,
inside the index or not, either side to move, none over) are answered twice
in the same order: the first pass meets each distance chunk of a large
layer's file for the first time (what an engine meets early in a game), the
second finds them in the reader's cache. The values of every layer are read
whole first, as the engine's background reader does; the distances are
read as Tablebase reads them (small layers whole on first use, the others a
checked chunk at a time). Median, 99th percentile and maximum per pass, for
all positions and for those whose value is not 0 (the ones with a distance
to follow), in wall time and in the answering thread's CPU time (which
leaves out the time a busy machine gives other processes). It measures; it
asserts nothing about time.
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

from solver import Position
from solver.position import Game
from solver.probe import Tablebase
from solver.uci import table_answer


def random_positions(seeds, count, rng):
    """`count` random positions with `seeds` seeds on the board, not over."""
    found = []
    while len(found) < count:
        cuts = np.sort(rng.integers(0, seeds + 1, size=11))
        houses = np.diff(np.concatenate([[0], cuts, [seeds]]))
        position = Position([int(h) for h in houses], "SN"[int(rng.integers(2))])
        if not position.is_over():
            found.append(position)
    return found


def summary(seconds):
    """Median, 99th percentile and maximum in milliseconds of a list of seconds."""
    if not seconds:
        return {"count": 0}
    ordered = sorted(seconds)
    return {"count": len(ordered), "median_ms": 1e3 * statistics.median(ordered),
            "p99_ms": 1e3 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], "max_ms": 1e3 * ordered[-1]}


def layer_range(text):
    low, _, high = text.partition("-")
    return list(range(int(low), int(high or low) + 1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default="databases")
    parser.add_argument("--layers", type=layer_range, default=layer_range("10-16"))
    parser.add_argument("--positions", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default=None, help="Also write the JSON to this file.")
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    layers = {}
    with Tablebase(args.dir) as tablebase:
        tablebase.warm_up()
        started = time.perf_counter()
        for seeds in range(max(args.layers) + 1):
            tablebase.load(seeds)
        load_seconds = time.perf_counter() - started
        table_answer(tablebase, Game(Position.from_string("0-0-0-1-2-0/1-0-0-2-0-1 S")))  # the kernels, once
        for seeds in args.layers:
            positions = random_positions(seeds, args.positions, rng)
            values = [tablebase.value(p) for p in positions]
            passes, cpu = [], []
            for _ in range(2):
                seconds, thread = [], []
                for position in positions:
                    begun, begun_cpu = time.perf_counter(), time.thread_time()
                    table_answer(tablebase, Game(position))
                    seconds.append(time.perf_counter() - begun)
                    thread.append(time.thread_time() - begun_cpu)
                passes.append(seconds)
                cpu.append(thread)
            layers[seeds] = {
                "with_distance": sum(v != 0 for v in values),
                "over_5_ms": [sum(s > 5e-3 for s in seconds) for seconds in passes],
                "cpu_over_5_ms": [sum(s > 5e-3 for s in thread) for thread in cpu],
                "first_pass_cpu": summary(cpu[0]),
                "second_pass_cpu": summary(cpu[1]),
                "first_pass": summary(passes[0]),
                "first_pass_value_not_0": summary([s for s, v in zip(passes[0], values) if v != 0]),
                "second_pass": summary(passes[1]),
                "second_pass_value_not_0": summary([s for s, v in zip(passes[1], values) if v != 0]),
            }
    every = [layer["first_pass"]["max_ms"] for layer in layers.values()]
    result = {
        "benchmark": "table_answers",
        "directory_layers": max(args.layers),
        "positions_per_layer": args.positions,
        "seed": args.seed,
        "values_load_seconds": load_seconds,
        "layers": layers,
        "max_ms": max(every),
        "answers_over_5_ms": [sum(layer["over_5_ms"][i] for layer in layers.values()) for i in range(2)],
        "answers_over_5_ms_cpu": [sum(layer["cpu_over_5_ms"][i] for layer in layers.values()) for i in range(2)],
        "max_cpu_ms": max(max(layer["first_pass_cpu"]["max_ms"], layer["second_pass_cpu"]["max_ms"])
                          for layer in layers.values()),
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
    }
    print(json.dumps(result, indent=2))
    for seeds, layer in layers.items():
        first, second = layer["first_pass"], layer["second_pass"]
        first_cpu, second_cpu = layer["first_pass_cpu"], layer["second_pass_cpu"]
        print(f"layer {seeds:2d}: median {first['median_ms']:.2f} / {second['median_ms']:.2f} ms, "
              f"max {first['max_ms']:.2f} / {second['max_ms']:.2f} ms wall, "
              f"{first_cpu['max_ms']:.2f} / {second_cpu['max_ms']:.2f} ms of the thread's CPU "
              "(first pass / second)", file=sys.stderr)
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(result, handle, indent=2)


if __name__ == "__main__":
    main()
