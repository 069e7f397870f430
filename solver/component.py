"""Solving a search component: every position reachable from a root without a
capture, by the builder's staged algorithm on an explicit graph.

A tree search must visit a position once per path to prove a draw in a
cycle, so proving a value in a large cyclic layer by alpha-beta alone can
take exponential time. When every capture from the root's layer lands in a
loaded table, the component's graph is explored breadth first
(`_explore_component`), solved by graph_stages.solve_graph (the same stages
as a layer), and its values kept (`_keep_component`) in a per-layer array
the search reads as if it were a table: `SolvedComponents`.

Values are the tables' (split) convention: endless play is worth 0.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import graph_stages, index
from .layers import NOT_IN_USE, PARTIAL_OFFSET, known_value, move_value
from .rules import NOT_TERMINAL, ROW, legal_mask, play, terminal_value

NO_EXIT = -1000  # below every value: a node with no capture
STATUS = ("solved", "too large", "missing table")  # by the explorer's status code
MAX_LAYER = 1 << 31  # layers larger than this are not given a component array


@njit(cache=True, inline="always")
def _slot(mover, opponent, mask):
    return np.int64(index.position_hash(mover, opponent) & mask)


@njit(cache=True)
def grow(array, size):
    """A copy of `array` with room for `size` rows (the first ones copied): a
    graph explorer's arrays as the graph grows."""
    grown = np.empty((size,) + array.shape[1:], array.dtype)
    grown[: array.shape[0]] = array
    return grown


@njit(cache=True)
def _explore_component(mover0, opponent0, seeds, flat, starts, loaded, partial, partial_starts, limit):
    """The graph of every position reachable from (mover0, opponent0) without a capture.

    The graph is explored breadth first; a position already known (table or
    earlier component) is a leaf whose exit is its value. Captures must land
    in loaded tables. Returns (status, size, movers, opponents, exits,
    children, fixed, first, parents): status 0 explored, 1 more than `limit`
    positions, 2 a capture lands in a layer that is not loaded; exits and
    children per node, fixed for leaves, and the predecessor lists
    (parents of i: parents[first[i]:first[i + 1]]) for graph_stages.solve_graph.
    """
    capacity = 1024
    mask = np.uint64(4 * capacity - 1)
    slots = np.full(4 * capacity, -1, np.int64)
    movers = np.empty(capacity, np.uint64)
    opponents = np.empty(capacity, np.uint64)
    exits = np.empty(capacity, np.int64)
    edges = np.empty((capacity, ROW), np.int64)
    edge_count = np.empty(capacity, np.int64)
    fixed = np.empty(capacity, np.bool_)
    no_exit = NO_EXIT

    movers[0] = mover0
    opponents[0] = opponent0
    slots[_slot(mover0, opponent0, mask)] = 0
    size = 1
    head = 0
    while head < size:
        mover = movers[head]
        opponent = opponents[head]
        edge_count[head] = 0
        fixed[head] = True
        moves = legal_mask(mover, opponent)
        if moves == 0:
            exits[head] = terminal_value(mover, opponent)
            head += 1
            continue
        value = known_value(mover, opponent, seeds, flat, starts, loaded, partial, partial_starts)
        if value != NOT_TERMINAL and head > 0:
            exits[head] = value
            head += 1
            continue
        fixed[head] = False
        best: int | np.int64 = no_exit
        for house in range(ROW):
            if not moves & (1 << house):
                continue
            captured, cm, co = play(mover, opponent, house)
            if captured > 0:
                value = move_value(captured, cm, co, seeds, flat, starts, loaded)
                if value == NOT_IN_USE:
                    # No table in memory for the child's layer: a terminal
                    # child, or one an earlier component solved.
                    if legal_mask(cm, co) == 0:
                        child = terminal_value(cm, co)
                    else:
                        child = known_value(cm, co, seeds - captured, flat, starts, loaded, partial, partial_starts)
                        if child == NOT_TERMINAL:
                            return _no_component(2, size)
                    value = captured - child
                best = max(best, value)
                continue
            slot = _slot(cm, co, mask)
            while slots[slot] >= 0 and not (movers[slots[slot]] == cm and opponents[slots[slot]] == co):
                slot = (slot + 1) & np.int64(mask)
            if slots[slot] < 0:
                if size == limit:
                    return _no_component(1, size)
                if size == capacity:
                    capacity *= 2
                    movers = grow(movers, capacity)
                    opponents = grow(opponents, capacity)
                    exits = grow(exits, capacity)
                    edges = grow(edges, capacity)
                    edge_count = grow(edge_count, capacity)
                    fixed = grow(fixed, capacity)
                    mask = np.uint64(4 * capacity - 1)
                    slots = np.full(4 * capacity, -1, np.int64)
                    for k in range(size):
                        s = _slot(movers[k], opponents[k], mask)
                        while slots[s] >= 0:
                            s = (s + 1) & np.int64(mask)
                        slots[s] = k
                    slot = _slot(cm, co, mask)
                    while slots[slot] >= 0:
                        slot = (slot + 1) & np.int64(mask)
                movers[size] = cm
                opponents[size] = co
                slots[slot] = size
                size += 1
            edges[head, edge_count[head]] = slots[slot]
            edge_count[head] += 1
        exits[head] = best
        head += 1

    # Predecessor lists (compressed rows).
    first = np.zeros(size + 1, np.int64)
    for node in range(size):
        for e in range(edge_count[node]):
            first[edges[node, e] + 1] += 1
    for node in range(size):
        first[node + 1] += first[node]
    parents = np.empty(first[size], np.int64)
    fill = first[:size].copy()
    for node in range(size):
        for e in range(edge_count[node]):
            child = edges[node, e]
            parents[fill[child]] = node
            fill[child] += 1

    return 0, size, movers[:size], opponents[:size], exits[:size], edge_count[:size], fixed[:size], first, parents


@njit(cache=True)
def _no_component(status, size):
    empty = np.zeros(0, np.int64)
    return (status, size, np.zeros(0, np.uint64), np.zeros(0, np.uint64), empty, empty, np.zeros(0, np.bool_),
            empty, empty)


@njit(cache=True)
def _keep_component(values, movers, opponents, fixed, seeds, partial, partial_starts):
    """Write the solved values of a component's positions in the index to `partial` (as d + 64)."""
    for node in range(values.shape[0]):
        if not fixed[node] and index.packed_in_index(opponents[node]):
            rank = index.rank_packed(movers[node], opponents[node], seeds)
            partial[partial_starts[seeds] + rank] = values[node] + PARTIAL_OFFSET


class SolvedComponents:
    """Values of the components solved so far, one int8 array slice per layer
    that has any (zero pages: free until written), read by kernels through
    `arrays()` = (partial, partial_starts)."""

    def __init__(self) -> None:
        self.layers: list[int] = []
        self.partial = np.zeros(1, dtype=np.int8)
        self.starts = np.zeros(index.MAX_SEEDS + 2, dtype=np.int64)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return self.partial, self.starts

    def _ensure(self, seeds: int) -> None:
        """Room for the values of layer `seeds`."""
        if seeds in self.layers:
            return
        layers = sorted(self.layers + [seeds])
        starts = np.zeros(index.MAX_SEEDS + 2, dtype=np.int64)
        for n in range(index.MAX_SEEDS + 1):
            starts[n + 1] = starts[n] + (index.layer_size(n) if n in layers else 0)
        partial = np.zeros(max(1, int(starts[-1])), dtype=np.int8)
        for n in self.layers:
            partial[starts[n] : starts[n + 1]] = self.partial[self.starts[n] : self.starts[n + 1]]
        self.partial, self.starts, self.layers = partial, starts, layers

    def solve(
        self,
        mover: np.uint64,
        opponent: np.uint64,
        seeds: int,
        flat: np.ndarray,
        starts: np.ndarray,
        loaded: np.ndarray,
        limit: int,
    ) -> tuple[str, int | None, int]:
        """Solve the component of a packed position with the tables (flat,
        starts, loaded) and keep its values. Returns (status, value,
        positions); status as STATUS: "solved", "too large" (more than
        `limit` positions, or a layer too large to keep) or "missing table"."""
        if index.layer_size(seeds) > MAX_LAYER:
            return "too large", None, 0
        self._ensure(seeds)
        status, size, movers, opponents, exits, children, fixed, first, parents = _explore_component(
            mover, opponent, seeds, flat, starts, loaded, self.partial, self.starts, int(limit)
        )
        if status:
            return STATUS[status], None, int(size)
        values = graph_stages.solve_graph(seeds, exits, children, first, parents)
        _keep_component(values, movers, opponents, fixed, seeds, self.partial, self.starts)
        return "solved", int(values[0]), int(size)
