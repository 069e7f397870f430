"""Naive distance to conversion, straight from its definition (issue 51), to test solver.distance against.

For a position s with table value v: None when v = 0; 0 when s has no legal
move; else over the moves that keep the value (captured - d(child) == v),
cost 1 for a capture and 1 + distance(child) otherwise, the least cost when
v > 0 and the greatest when v < 0.

The real pass settles positions frontier by frontier from the captures,
through un-sown predecessors and counters. This one uses neither: it lists
each position's keeping moves by playing them forward (tests/naive.py) and
iterates d(s) = min or max over them of the cost, every distance starting
at infinity, sweep after sweep until nothing changes (value iteration from
above: a position whose keeping moves all wait on infinite children stays
infinite, which the real pass reports as an error).

The values it starts from are the tables' (the metric is defined on them),
given as a dict per layer: board tuple -> d, for the boards of the index.
The real builder's are checked against tests/naive_solver.py elsewhere
(tests/test_retrograde.py); the naive solver itself is too slow past
layer 8 in pure Python.
"""

import math

try:
    from naive import all_boards, in_index, naive_legal_moves, naive_play, naive_terminal_value
except ModuleNotFoundError:  # imported as tests.naive_distance
    from tests.naive import all_boards, in_index, naive_legal_moves, naive_play, naive_terminal_value


def keeping_moves(board, value, layers):
    """[(house, captured, child)] of the moves of `board` (worth `value`)
    that keep the value, `layers[m]` giving d of each board of layer m."""
    seeds = sum(board)
    kept = []
    for house in naive_legal_moves(board):
        captured, child = naive_play(board, house)
        if captured - layers[seeds - captured][child] == value:
            kept.append((house, captured, child))
    return kept


def naive_distances(seeds, layers):
    """{board: distance or None} for every board of layer `seeds` in the
    index, by value iteration; math.inf where the iteration leaves one."""
    values = layers[seeds]
    boards = [board for board in all_boards(seeds) if in_index(board)]
    distance = {}
    moves = {}
    for board in boards:
        value = values[board]
        if value == 0:
            distance[board] = None
        elif naive_terminal_value(board) is not None:
            distance[board] = 0
        else:
            distance[board] = math.inf
            moves[board] = [(captured, child) for _, captured, child in keeping_moves(board, value, layers)]
    changed = True
    while changed:
        changed = False
        for board, kept in moves.items():
            costs = [1 if captured else 1 + distance[child] for captured, child in kept]
            best = min(costs) if values[board] > 0 else max(costs)
            if best != distance[board]:
                distance[board] = best
                changed = True
    return distance
