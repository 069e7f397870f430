"""Run under mpiexec by tests/test_distributed.py: a distributed build with
small exchange buffers, so that outboxes fill and exits take many rounds.

    mpiexec -n 3 python tests/mpi_build.py DIRECTORY MAX_SEEDS OUTBOX BATCH [LEAN]

With LEAN (a JSON object of LeanSliceSolver options), every layer is built
in lean slices (solver.distributed_lean), one smaller layer an exit pass.
"""

import json
import sys

from solver import build, distributed


def main():
    directory, max_seeds, outbox, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    lean = json.loads(sys.argv[5]) if len(sys.argv) > 5 else None
    exchange = distributed.world()
    rows = []
    build.build_distributed(max_seeds, directory, exchange, threads=1, outbox=outbox, batch=batch,
                            report=rows.append, lean_slices=lean, distances=lean is None)
    if exchange.rank == 0:
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
