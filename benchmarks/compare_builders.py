"""Two builders back to back on the same layers, JSON out.

    python benchmarks/compare_builders.py --base ../base --dir D --layers 24-28 [--runs 2] [--threads 2]

--base is a checkout of the other builder (for example `git worktree add ../base 85eb8b3`);
the builder under test is this checkout. Each run solves one layer alone, in memory, over
D's smaller layers (`benchmarks/build.py --layer K --dir D`, the same script for both, with
the solver package imported from either checkout), in a process of its own whose peak RSS
the kernel reports (wait4). The two alternate and swap who goes first from one run to the
next, so drift in the machine falls on both alike. Before the first timed run each side
solves a small layer once, so numba's cache is warm for both.

Prints one JSON object per run, then per layer the medians of each side, the ratio
(base seconds / this seconds: above 1 is faster here), positions a second, peak RSS, and
whether every run's values hash as tests/data/layer_sha256.json records. Timings here vary
by up to 20% from run to run: nothing else should run meanwhile.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
THIS = os.path.dirname(HERE)
SCRIPT = os.path.join(HERE, "build.py")


def layers(text):
    """'24-28' or '24,26' -> a list of seed counts."""
    chosen = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        chosen.extend(range(int(low), int(high or low) + 1))
    return chosen


def solve(checkout, seeds, directory, threads):
    """One layer solved by the builder of `checkout`: its JSON row, with peak_rss_bytes added."""
    environment = dict(os.environ, PYTHONPATH=checkout)
    process = subprocess.Popen([sys.executable, SCRIPT, "--layer", str(seeds), "--dir", directory,
                                "--threads", str(threads)], stdout=subprocess.PIPE, env=environment, cwd=checkout)
    output = process.stdout.read()
    _pid, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        sys.exit(f"{checkout}: layer {seeds} failed (exit {process.returncode})")
    row = json.loads(output.decode().strip().splitlines()[-1])
    row["peak_rss_bytes"] = usage.ru_maxrss * 1024
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="checkout of the builder to compare with")
    parser.add_argument("--dir", required=True, help="folder holding the smaller layers")
    parser.add_argument("--layers", type=layers, default=layers("24-28"))
    parser.add_argument("--runs", type=int, default=1, help="runs of each builder on each layer")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--warm", type=int, default=16, help="layer each side solves once first (0: none)")
    args = parser.parse_args()
    sides = {"base": os.path.abspath(args.base), "this": THIS}
    if args.warm:
        for checkout in sides.values():
            solve(checkout, args.warm, args.dir, args.threads)
    rows = {(seeds, side): [] for seeds in args.layers for side in sides}
    turn = 0
    for seeds in args.layers:
        for _ in range(args.runs):
            order = ["base", "this"] if turn % 2 == 0 else ["this", "base"]
            turn += 1
            for side in order:
                row = solve(sides[side], seeds, args.dir, args.threads)
                rows[seeds, side].append(row)
                print(json.dumps({"side": side, "checkout": sides[side], **row}), flush=True)
    for seeds in args.layers:
        base = [row["wall_seconds"] for row in rows[seeds, "base"]]
        this = [row["wall_seconds"] for row in rows[seeds, "this"]]
        positions = rows[seeds, "this"][0].get("positions")
        summary = {
            "seeds": seeds,
            "runs": args.runs,
            "base_seconds": base,
            "this_seconds": this,
            "ratio": statistics.median(base) / statistics.median(this),
            "this_positions_per_second": positions / statistics.median(this) if positions else None,
            "peak_rss_bytes": {side: max(row["peak_rss_bytes"] for row in rows[seeds, side]) for side in sides},
            "phases_this": {key: statistics.median(row[key] for row in rows[seeds, "this"])
                            for key in ("exit_seconds", "stage_seconds") if key in rows[seeds, "this"][0]},
            "phases_base": {key: statistics.median(row[key] for row in rows[seeds, "base"])
                            for key in ("exit_seconds", "stage_seconds") if key in rows[seeds, "base"][0]},
            "recorded_sha256": all(row.get("recorded_sha256") for side in sides for row in rows[seeds, side]),
        }
        print(json.dumps({"benchmark": "compare-builders", **summary}), flush=True)


if __name__ == "__main__":
    main()
