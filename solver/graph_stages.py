"""The staged algorithm on an explicit graph: a component of a layer that
the search solves (solver.component), its predecessors listed, not un-sown."""

import numpy as np
from numba import njit, prange

from .intrinsics import atomic_and
from .layer_state import BLOCK, FRESH, NO_EXIT, WORK_SLOTS, pending, take
from .stages import run_stages, tell


@njit(cache=True)
def graph_state(exits: np.ndarray, children: np.ndarray, values: np.ndarray, counts: np.ndarray) -> None:
    """Pending codes and child counts of an explicit graph's nodes."""
    for node in range(exits.shape[0]):
        values[node] = pending(max(exits[node], NO_EXIT))
        counts[node >> 1] |= np.uint8(children[node] << ((node & 1) << 2))


@njit(cache=True, parallel=True)
def propagate_graph(
    stage: int,
    values: np.ndarray,
    counts: np.ndarray,
    active: np.ndarray,
    next_flags: np.ndarray,
    first: np.ndarray,
    parents: np.ndarray,
) -> int:
    """propagate() on an explicit graph: the predecessors of node i are
    parents[first[i]:first[i + 1]] instead of un-sown positions."""
    size = values.shape[0]
    processed = np.zeros(WORK_SLOTS, dtype=np.int64)
    counter = np.zeros(1, dtype=np.int64)
    for slot in prange(WORK_SLOTS):
        while True:
            item = take(counter, 1)
            if item >= active.shape[0]:
                break
            start = active[item] * BLOCK
            for node in range(start, min(size, start + BLOCK)):
                shift = (node & 1) << 2
                if (np.int64(counts[node >> 1]) >> shift) & FRESH == 0:
                    continue
                atomic_and(counts, node >> 1, np.uint8(~(FRESH << shift) & 0xFF))
                processed[slot] += 1
                for edge in range(first[node], first[node + 1]):
                    tell(parents[edge], values[node], stage, values, counts, False, next_flags)
    return processed.sum()


def solve_graph(
    seeds: int, exits: np.ndarray, children: np.ndarray, first: np.ndarray, parents: np.ndarray
) -> np.ndarray:
    """Values (int64) of the nodes of an explicit graph of positions with
    `seeds` seeds, by the same staged algorithm as a layer.

    exits[i]: node i's exit value (best capture, terminal value, or a known
    value for a leaf; anything below -seeds for none); children[i]: its
    edges inside the graph (at most 6); first/parents: the predecessor lists
    (parents of i are parents[first[i]:first[i + 1]]). The search solves a
    component of a layer this way (solver.search).
    """
    size = exits.shape[0]
    padded = np.zeros((size + 7) // 8 * 8, dtype=np.int8)
    values = padded[:size]
    counts = np.zeros((size + 1) // 2, dtype=np.uint8)
    graph_state(exits, children, values, counts)

    def sweep(stage, active, next_flags):
        return propagate_graph(stage, values, counts, active, next_flags, first, parents)

    run_stages(seeds, values, padded.view(np.uint64), counts, sweep)
    return values.astype(np.int64)
