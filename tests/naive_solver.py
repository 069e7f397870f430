"""Naive exact solver of the endgame-table values, to test the real one against.

The value ``d`` of a board (RULES.md, "What the endgame tables store") is what
the mover will capture from now on minus what the opponent will, under perfect
play, with endless play (no capture ever again) scored 0.

The production solver uses staged retrograde analysis with predecessor counters
and un-sowing. This one uses a different algorithm on purpose, so that a shared
mistake is unlikely: one threshold at a time, each solved as a reachability game
by plain forward sweeps until nothing changes.

Within layer n (every board with n seeds, including those outside the index) a
move either leaves the layer, or stays in it:

- an *exit* is a capturing move; its child has fewer seeds and is already
  solved, so its value ``captured - d(child)`` is a known number;
- a *non-capturing* move (grand slams included) leads to a child in layer n,
  worth ``-d(child)``; these moves can cycle;
- a *terminal* board (rule 5 or 6) has no move and is worth ``+n`` or ``-n``.

For k = 1..n let A_k be the boards whose mover can force a result ``>= k`` and
B_k those whose mover can be held to ``<= -k``. Endless play is worth 0, which
is neither, so the side aiming for the threshold must get there in finitely many
moves: A_k and B_k are the least sets with

- s in A_k  iff  s is terminal worth ``>= k``, or some exit of s is worth ``>= k``,
  or some non-capturing move of s leads to a child in B_k;
- s in B_k  iff  s is terminal worth ``<= -k``, or s is not terminal, every exit
  of s is worth ``<= -k`` and every non-capturing move of s leads into A_k.

Least fixed points are reached by starting from the empty sets and sweeping
until a sweep adds nothing. Then ``d(s) = k`` for the largest k with s in A_k,
``-k`` for the largest k with s in B_k, and 0 when s is in neither A_1 nor B_1.
"""

try:
    from naive import all_boards, naive_legal_moves, naive_play, naive_terminal_value
except ModuleNotFoundError:  # imported as tests.naive_solver
    from tests.naive import all_boards, naive_legal_moves, naive_play, naive_terminal_value


class LayerMoves:
    """The move graph of one layer, with exits already turned into values.

    Boards are numbered 0..size-1 in ``all_boards`` order. For board i:
    ``terminal[i]`` is its rule 5/6 value or None; ``exits[i]`` the values of its
    capturing moves; ``stays[i]`` the numbers of the children of its
    non-capturing moves (all in this layer).
    """

    def __init__(self, seeds, lower):
        self.seeds = seeds
        self.boards = list(all_boards(seeds))
        number = {board: i for i, board in enumerate(self.boards)}
        self.terminal = []
        self.exits = []
        self.stays = []
        for board in self.boards:
            exits = []
            stays = []
            value = naive_terminal_value(board)
            if value is None:
                for house in naive_legal_moves(board):
                    captured, child = naive_play(board, house)
                    if captured:
                        exits.append(captured - lower[seeds - captured][child])
                    else:
                        stays.append(number[child])
            self.terminal.append(value)
            self.exits.append(exits)
            self.stays.append(stays)

    def __len__(self):
        return len(self.boards)


def _threshold_sets(moves, k, a_candidates, b_candidates):
    """A_k and B_k as boolean lists, by sweeping to the least fixed point.

    Only boards in `a_candidates` can join A_k and only those in `b_candidates`
    can join B_k (A_k is inside A_(k-1), B_k inside B_(k-1)); passing every board
    is always correct, just slower.
    """
    in_a = [False] * len(moves)
    in_b = [False] * len(moves)
    a_open = list(a_candidates)
    b_open = list(b_candidates)
    changed = True
    while changed:
        changed = False
        still_open = []
        for i in a_open:
            terminal = moves.terminal[i]
            if terminal is not None:
                joins = terminal >= k
            else:
                joins = any(value >= k for value in moves.exits[i]) or any(in_b[c] for c in moves.stays[i])
            if joins:
                in_a[i] = True
                changed = True
            else:
                still_open.append(i)
        a_open = still_open
        still_open = []
        for i in b_open:
            terminal = moves.terminal[i]
            if terminal is not None:
                joins = terminal <= -k
            else:
                joins = all(value <= -k for value in moves.exits[i]) and all(in_a[c] for c in moves.stays[i])
            if joins:
                in_b[i] = True
                changed = True
            else:
                still_open.append(i)
        b_open = still_open
    return in_a, in_b


def naive_layer(seeds, lower):
    """Values of every board with `seeds` seeds, as a dict board tuple -> d.

    `lower[m]` must be the solved dict of layer m for every m < seeds.
    """
    moves = LayerMoves(seeds, lower)
    values = [0] * len(moves)
    a_candidates = range(len(moves))
    b_candidates = range(len(moves))
    for k in range(1, seeds + 1):
        in_a, in_b = _threshold_sets(moves, k, a_candidates, b_candidates)
        a_candidates = [i for i in a_candidates if in_a[i]]
        b_candidates = [i for i in b_candidates if in_b[i]]
        for i in a_candidates:
            values[i] = k
        for i in b_candidates:
            values[i] = -k
        if not a_candidates and not b_candidates:
            break
    return dict(zip(moves.boards, values))


_SOLVED = []  # _SOLVED[n] is the dict of layer n, filled on demand


def naive_solve(max_seeds):
    """Solved layers 0..max_seeds: ``result[n]`` maps each board with n seeds to d.

    Layers are memoised for the whole process; do not mutate the dicts.
    """
    while len(_SOLVED) <= max_seeds:
        _SOLVED.append(naive_layer(len(_SOLVED), _SOLVED))
    return _SOLVED[: max_seeds + 1]


def naive_value(board):
    """d of one board (solving the layers up to its seed count if needed)."""
    board = tuple(board)
    return naive_solve(sum(board))[sum(board)][board]
