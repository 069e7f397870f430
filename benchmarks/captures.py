"""Captures a position (the streamed exits' requests), sampled on any layer, no table needed. JSON out.

    python benchmarks/captures.py --layers 24 30 36 42 46 48 [--pieces 64] [--piece 65536]

For each layer, `--pieces` runs of `--piece` ranks spread evenly over it are
asked as the streamed exits ask them (exits.exit_requests, plain layout: every
capture into a smaller layer is one request); prints the requests a position
over the ranks sampled, per layer, and the largest. plan.LOOKUPS_A_POSITION is
planned from it.
"""

import argparse
import json

import numpy as np

from solver import exits, index, layer_state
from solver.rules import ROW


def sampled(seeds: int, pieces: int, piece: int) -> float:
    """Requests a position over `pieces` runs of `piece` ranks of layer `seeds`."""
    size = index.layer_size(seeds)
    rows = index.RowTables(seeds).arrays
    piece = min(piece, -(-size // layer_state.BLOCK) * layer_state.BLOCK)
    blocks = -(-piece // layer_state.BLOCK)
    keys = np.empty(blocks * layer_state.BLOCK * ROW, dtype=np.int64)
    gains = np.empty(keys.shape[0], dtype=np.int8)
    owners = np.empty(keys.shape[0], dtype=np.int64)
    asked = np.zeros(blocks, dtype=np.int64)
    values = np.zeros(piece, dtype=np.int8)
    counts = np.zeros((piece + 1) // 2, dtype=np.uint8)
    requests = positions = 0
    starts = sorted({(size - piece) * k // max(1, pieces - 1) // layer_state.BLOCK * layer_state.BLOCK
                     for k in range(pieces)}) if size > piece else [0]
    for lo in starts:
        stop = min(size, lo + piece)
        asked[:] = 0
        counts[:] = 0
        exits.exit_requests(seeds, lo, lo, stop, values, counts, rows, keys, gains, owners, asked,
                            index.FILE_ORDER, False)
        requests += int(asked.sum())
        positions += stop - lo
    return requests / positions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, nargs="+", required=True)
    parser.add_argument("--pieces", type=int, default=64)
    parser.add_argument("--piece", type=int, default=1 << 16)
    args = parser.parse_args()
    found = {seeds: sampled(seeds, args.pieces, args.piece) for seeds in args.layers}
    print(json.dumps({"requests_per_position": found, "largest": max(found.values()), "pieces": args.pieces,
                      "piece": args.piece}))


if __name__ == "__main__":
    main()
