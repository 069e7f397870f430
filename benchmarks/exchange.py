"""The sliced build's traffic: bytes exchanged a position, layer by layer, JSON out.

    python benchmarks/exchange.py --max-seeds 18 --processes 2 [--base ../base]

Builds layers 0..N with `mpiexec -n P` (one thread a process) in a temporary folder,
with this checkout's builder and, given --base, with another checkout's (run from its
own folder), and prints one JSON object a layer and builder (bytes exchanged a position,
of which the exits', stage rounds where the builder reports them, seconds, the share of
time communicating) and a summary saying whether both builders' files hold the same
values. Bytes and rounds do not depend on the machine's load; the seconds do (time the
overhead with benchmarks/build.py --processes on a quiet machine).
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _build(tree, max_seeds, processes):
    folder = tempfile.mkdtemp(prefix="awele-exchange-")
    try:
        mpiexec = shutil.which("mpiexec") or os.path.join(os.path.dirname(sys.executable), "mpiexec")
        done = subprocess.run([mpiexec, "-n", str(processes), sys.executable, "-m", "solver", "build", "--max-seeds",
                               str(max_seeds), "--dir", folder, "--threads", "1", "--json", "--quiet"],
                              cwd=tree, env={**os.environ, "PYTHONPATH": tree}, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"exchange.py: the build in {tree} failed: {done.stderr.strip()[-500:]}")
        rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        digest = subprocess.run([sys.executable, "-c", _DIGESTS, folder, str(max_seeds)], cwd=HERE,
                                env={**os.environ, "PYTHONPATH": HERE}, capture_output=True, text=True, check=True)
        return rows, json.loads(digest.stdout)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


_DIGESTS = """
import hashlib, json, sys
import numpy as np
from solver import tables
folder, top = sys.argv[1], int(sys.argv[2])
print(json.dumps([hashlib.sha256(np.ascontiguousarray(tables.load_values(folder, n)).tobytes()).hexdigest()
                  for n in range(top + 1)]))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-seeds", type=int, default=18)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--base", help="another checkout, built the same way for comparison")
    args = parser.parse_args()
    trees = {"this": HERE} if not args.base else {"this": HERE, "base": os.path.abspath(args.base)}
    digests = {}
    for name, tree in trees.items():
        rows, digests[name] = _build(tree, args.max_seeds, args.processes)
        for row in rows:
            positions = row["positions"]
            print(json.dumps({
                "builder": name, "seeds": row["seeds"], "positions": positions,
                "bytes_a_position": round(row["bytes_exchanged_per_position"], 3),
                "exit_bytes_a_position": round(row.get("exit_bytes_exchanged", 0) / positions, 3),
                "stage_rounds": row.get("stage_rounds"), "seconds": round(row["seconds"], 2),
                "communication_share": round(row["communication_share"], 3)}))
    print(json.dumps({"summary": True, "processes": args.processes, "max_seeds": args.max_seeds,
                      "hash": hashlib.sha256(json.dumps(digests["this"]).encode()).hexdigest()[:16],
                      "same_values": len({tuple(d) for d in digests.values()}) == 1}))


if __name__ == "__main__":
    main()
