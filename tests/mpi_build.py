"""Run under mpiexec by tests/test_distributed.py: a distributed build with
small exchange buffers, so that outboxes fill and exits take many rounds.

    mpiexec -n 3 python tests/mpi_build.py DIRECTORY MAX_SEEDS OUTBOX BATCH
"""

import json
import sys

from solver import build, distributed


def main():
    directory, max_seeds, outbox, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    exchange = distributed.world()
    rows = []
    build.build_distributed(max_seeds, directory, exchange, threads=1, outbox=outbox, batch=batch,
                            report=rows.append)
    if exchange.rank == 0:
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
