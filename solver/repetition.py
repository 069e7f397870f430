"""Proven bounds on a position's value under the true repetition rule, with its
history, from two games on the graph of every position reachable from it.

Under the true rule the game ends at the first repetition of a position (its
twelve houses and the side to move), each side taking the seeds on its own
side; the value therefore depends on the history. A tree search must follow
every simple path to prove it. This module bounds it instead with two games
on the graph of real positions (board and side to move) reachable from the
root, in which a position of the history, or the root itself, ends the game
as a repetition does, and an endless play is scored for the root's mover
("role 0") at the worst (lower bound) or the best (upper bound) of the own
seeds of the positions it passes through for ever:

- lower: role 0's payoff of an endless play is the liminf of f0, f0 being the
  seeds on role 0's side minus those on the other side;
- upper: the limsup of f0.

Both games have optimal strategies that depend on the position only
(liminf and limsup games on a finite graph are positionally determined). If
role 0 plays its positional strategy of the lower game in the real game, a
first repetition closes a cycle the other side could have repeated for ever,
whose positions all have f0 >= the lower value, so the repetition, scored at
one of them, gives role 0 at least that value; a repetition of a history
position or of the root is an end in both games. The other side's strategy
of the upper game bounds the value from above the same way. Captures leave
a layer for good, so layers are solved from the smallest up, a capture's
child valued by its layer's bounds. When the two bounds meet, the value is
exact under the true rule (`rule: "true"`).

Each layer's game is solved for thresholds t as a co-Buchi game ("the play
ends with a payoff >= t, or stays for ever in positions with f0 >= t"), by
the classical iteration of an attractor and a safety region, the thresholds
halved rather than tried in turn (_cobuchi_values).

Table values the true rule cannot change (|d| = seeds: the side takes every
seed by play that never repeats, report.true_rule_may_change) end the graph
below the root's layer; positions of the root's layer are always explored,
since the history may change even those.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit

from . import index
from .component import grow
from .errors import GameOverError
from .intrinsics import CLOCKS, monotonic_ns
from .position import Position
from .rules import NOT_TERMINAL, ROW, board_seeds, legal_mask, play, row_seeds, terminal_value

DEFAULT_LIMIT = 2_000_000  # positions explored at most (about 90 bytes each, and as much again to solve)
UNKNOWN = np.int64(-1000)
EXPLORED, TOO_LARGE, OUT_OF_TIME = 0, 1, 2
CLOCK_CHECK = 1024  # nodes explored between two looks at the clock


@njit(cache=True, inline="always")
def _key_slot(mover, opponent, role, mask):
    h = index.position_hash(mover, opponent) ^ (np.uint64(role) * np.uint64(0x9E3779B97F4A7C15))
    return np.int64(h & mask)


@njit(cache=True)
def _find(slots, movers, opponents, roles, mover, opponent, role, mask):
    """The slot of (mover, opponent, role): the node there, or an empty slot (-1)."""
    slot = _key_slot(mover, opponent, role, mask)
    while slots[slot] >= 0:
        node = slots[slot]
        if movers[node] == mover and opponents[node] == opponent and roles[node] == role:
            return slot
        slot = (slot + 1) & np.int64(mask)
    return slot


@njit(cache=True)
def _explore(root_mover, root_opponent, ends_mover, ends_opponent, ends_role, flat, starts, loaded, limit,
             deadline_ns):
    """Every real position reachable from the root's children.

    Nodes are (mover, opponent, role), role 0 when the root's mover is to
    move. Returns (status, size, movers, opponents, roles, fixed, edges,
    captured, root_edges, root_captured): status EXPLORED, TOO_LARGE (more
    than `limit` nodes) or OUT_OF_TIME (monotonic_ns() reached
    `deadline_ns`, 0: never; read every CLOCK_CHECK nodes); fixed[i] the
    value d (for node i's mover) of a node whose value is known (a
    terminal, a table value |d| = seeds below the root's layer, or a
    repetition: the root and `ends`, the history, scored with each side
    taking its own seeds), else UNKNOWN; edges[i] its children
    (-1 past the last) and captured[i] the seeds each move takes; the root's
    moves in house order lead to root_edges, taking root_captured.
    """
    root_seeds = board_seeds(root_mover, root_opponent)
    capacity = 1024
    mask = np.uint64(4 * capacity - 1)
    slots = np.full(4 * capacity, -1, np.int64)
    movers = np.empty(capacity, np.uint64)
    opponents = np.empty(capacity, np.uint64)
    roles = np.empty(capacity, np.int8)
    fixed = np.empty(capacity, np.int64)
    edges = np.empty((capacity, ROW), np.int64)
    captured = np.zeros((capacity, ROW), np.int8)
    root_edges = np.full(ROW, -1, np.int64)
    root_captured = np.zeros(ROW, np.int64)
    empty = (movers[:0], opponents[:0], roles[:0], fixed[:0], edges[:0], captured[:0])
    # The ends of the root's layer: the root and the history (repetitions).
    end_count = ends_mover.shape[0] + 1
    end_movers = np.empty(end_count, np.uint64)
    end_opponents = np.empty(end_count, np.uint64)
    end_roles = np.empty(end_count, np.int8)
    end_movers[0], end_opponents[0], end_roles[0] = root_mover, root_opponent, 0
    end_movers[1:], end_opponents[1:], end_roles[1:] = ends_mover, ends_opponent, ends_role

    size = 0
    head = -1  # the root, then each node in turn
    while head < size:
        if deadline_ns != 0 and head & (CLOCK_CHECK - 1) == 0 and monotonic_ns() >= deadline_ns:  # type: ignore[call-arg]
            return (OUT_OF_TIME, size, *empty, root_edges, root_captured)
        if head < 0:
            mover, opponent, role = root_mover, root_opponent, np.int8(0)
        else:
            mover, opponent, role = movers[head], opponents[head], roles[head]
            seeds = board_seeds(mover, opponent)
            for e in range(ROW):
                edges[head, e] = -1
            fixed[head] = UNKNOWN
            terminal = terminal_value(mover, opponent)
            if terminal != NOT_TERMINAL:
                fixed[head] = terminal
                head += 1
                continue
            if seeds == root_seeds:
                for k in range(end_count):
                    if end_movers[k] == mover and end_opponents[k] == opponent and end_roles[k] == role:
                        fixed[head] = row_seeds(mover) - row_seeds(opponent)  # a repetition
                if fixed[head] != UNKNOWN:
                    head += 1
                    continue
            elif loaded[seeds] and index.packed_in_index(opponent):
                value = np.int64(flat[starts[seeds] + index.rank_packed(mover, opponent, seeds)])
                if value == seeds or value == -seeds:
                    fixed[head] = value
                    head += 1
                    continue
        legal = legal_mask(mover, opponent)
        count = 0
        for house in range(ROW):
            if not legal & (1 << house):
                continue
            taken, child_mover, child_opponent = play(mover, opponent, house)
            child_role = np.int8(1 - role)
            slot = _find(slots, movers, opponents, roles, child_mover, child_opponent, child_role, mask)
            if slots[slot] < 0:
                if size >= limit:
                    return (TOO_LARGE, size, *empty, root_edges, root_captured)
                if size == capacity:
                    capacity *= 2
                    movers = grow(movers, capacity)
                    opponents = grow(opponents, capacity)
                    roles = grow(roles, capacity)
                    fixed = grow(fixed, capacity)
                    edges = grow(edges, capacity)
                    captured = grow(captured, capacity)
                    mask = np.uint64(4 * capacity - 1)
                    slots = np.full(4 * capacity, -1, np.int64)
                    for k in range(size):
                        s = _key_slot(movers[k], opponents[k], roles[k], mask)
                        while slots[s] >= 0:
                            s = (s + 1) & np.int64(mask)
                        slots[s] = k
                    slot = _find(slots, movers, opponents, roles, child_mover, child_opponent, child_role, mask)
                movers[size] = child_mover
                opponents[size] = child_opponent
                roles[size] = child_role
                slots[slot] = size
                size += 1
            if head < 0:
                root_edges[house] = slots[slot]
                root_captured[house] = taken
            else:
                edges[head, count] = slots[slot]
                captured[head, count] = taken
            count += 1
        head += 1
    return (EXPLORED, size, movers[:size], opponents[:size], roles[:size], fixed[:size], edges[:size], captured[:size],
            root_edges, root_captured)


@njit(cache=True)
def _seeds_of(movers, opponents):
    seeds = np.empty(movers.shape[0], np.int64)
    for node in range(movers.shape[0]):
        seeds[node] = board_seeds(movers[node], opponents[node])
    return seeds


@njit(cache=True)
def _cobuchi_values(lowest, highest, owned, f, game_first, game_children, exit_first, exit_payoffs, deadline_ns):
    """For each node of a layer's game, the largest t in [lowest, highest] such
    that player X can make the payoff at least t: X owns the nodes marked in
    `owned`; a play ends at an exit with its payoff, and an endless play pays
    the liminf of f. Nodes are local: node i's moves are game_children[
    game_first[i]:game_first[i + 1]] (other nodes) and exit_payoffs[
    exit_first[i]:exit_first[i + 1]] (ends).

    X's winning regions shrink as t grows, so the thresholds are halved
    rather than tried in turn: the region of the middle threshold m of a
    range of values splits its nodes into those worth m or more and those
    worth less, and each part is solved for its half of the range alone, a
    node of the other part (or of a range done) standing as a won or a lost
    end, which does not change the winning region of a game whose payoff
    depends only on how a play ends (an end or the tail of an endless play).
    Each node takes part in one threshold a level: about log2 of the range
    instead of the whole range. Only the values that f and the exits take
    are tried (a value's parity is the seeds', so about half of the range).

    Returns (values, stopped): stopped when monotonic_ns() reached
    `deadline_ns` (0: never), read at each threshold and each round of its
    safety region; the values are then not all known."""
    n = owned.shape[0]
    # Predecessors, one entry a move.
    parent_first = np.zeros(n + 1, np.int64)
    for node in range(n):
        for e in range(game_first[node], game_first[node + 1]):
            parent_first[game_children[e] + 1] += 1
    for node in range(n):
        parent_first[node + 1] += parent_first[node]
    parents = np.empty(parent_first[n], np.int64)
    fill = parent_first[:n].copy()
    for node in range(n):
        for e in range(game_first[node], game_first[node + 1]):
            child = game_children[e]
            parents[fill[child]] = node
            fill[child] += 1

    low = np.full(n, lowest, np.int64)  # a node's value lies in [low, the top of its range]
    order = np.arange(n)  # each range's nodes, together
    active = np.zeros(n, np.bool_)  # the nodes of the range being solved
    in_attr = np.zeros(n, np.bool_)
    in_safe = np.zeros(n, np.bool_)
    pending = np.zeros(n, np.int64)  # the other side's moves not into the attractor
    safe_pending = np.zeros(n, np.int64)  # X: moves kept inside; the other side: moves out
    work = np.empty(n, np.int64)
    bad = np.zeros(n, np.int64)  # lost ends: exits below t, nodes worth less
    # The values a node can be worth: lowest, and those of f and the exits
    # (highest for those above it).
    present = np.zeros(highest - lowest + 1, np.bool_)
    present[0] = True
    for node in range(n):
        if f[node] > lowest:
            present[min(f[node], highest) - lowest] = True
    for e in range(exit_payoffs.shape[0]):
        if exit_payoffs[e] > lowest:
            present[min(exit_payoffs[e], highest) - lowest] = True
    worth = np.nonzero(present)[0] + lowest
    # Ranges still to split: order[first:last] is worth worth[floor..top_value].
    stack = np.empty((128, 4), np.int64)
    stack[0, 0], stack[0, 1], stack[0, 2], stack[0, 3] = 0, n, 0, worth.shape[0] - 1
    depth = 1
    while depth > 0:
        depth -= 1
        first, last, floor, top_value = stack[depth, 0], stack[depth, 1], stack[depth, 2], stack[depth, 3]
        if first == last or floor == top_value:
            continue
        if deadline_ns != 0 and monotonic_ns() >= deadline_ns:  # type: ignore[call-arg]
            return low, True
        middle = (floor + top_value + 1) // 2
        t = worth[middle]
        for i in range(first, last):
            active[order[i]] = True
        # Attractor of X to the ends worth at least t.
        top = 0
        for i in range(first, last):
            node = order[i]
            good = 0
            lost = 0
            inside = 0
            for e in range(exit_first[node], exit_first[node + 1]):
                if exit_payoffs[e] >= t:
                    good += 1
                else:
                    lost += 1
            for e in range(game_first[node], game_first[node + 1]):
                child = game_children[e]
                if active[child]:
                    inside += 1
                elif low[child] >= t:
                    good += 1
                else:
                    lost += 1
            bad[node] = lost
            pending[node] = inside + lost
            in_attr[node] = (owned[node] and good > 0) or (not owned[node] and pending[node] == 0)
            if in_attr[node]:
                work[top] = node
                top += 1
        while True:
            while top > 0:  # spread the attractor backwards
                top -= 1
                node = work[top]
                for p in range(parent_first[node], parent_first[node + 1]):
                    parent = parents[p]
                    if not active[parent] or in_attr[parent]:
                        continue
                    if owned[parent]:
                        in_attr[parent] = True
                        work[top] = parent
                        top += 1
                    else:
                        pending[parent] -= 1
                        if pending[parent] == 0:
                            in_attr[parent] = True
                            work[top] = parent
                            top += 1
            # Outside the attractor, the positions where X can stay for ever
            # among those with f >= t (or reach the attractor).
            if deadline_ns != 0 and monotonic_ns() >= deadline_ns:  # type: ignore[call-arg]
                return low, True
            count = 0
            for i in range(first, last):
                node = order[i]
                in_safe[node] = not in_attr[node] and f[node] >= t
                count += in_safe[node]
            if count == 0:
                break
            for i in range(first, last):
                node = order[i]
                if not in_safe[node]:
                    continue
                inside = 0
                moves = 0
                for e in range(game_first[node], game_first[node + 1]):
                    child = game_children[e]
                    if active[child]:
                        moves += 1
                        if in_safe[child] or in_attr[child]:
                            inside += 1
                safe_pending[node] = inside if owned[node] else bad[node] + moves - inside
            for i in range(first, last):
                node = order[i]
                if in_safe[node] and ((owned[node] and safe_pending[node] == 0)
                                      or (not owned[node] and safe_pending[node] > 0)):
                    in_safe[node] = False
                    work[top] = node
                    top += 1
            while top > 0:  # leave out what cannot stay
                top -= 1
                node = work[top]
                for p in range(parent_first[node], parent_first[node + 1]):
                    parent = parents[p]
                    if not active[parent] or not in_safe[parent]:
                        continue
                    if owned[parent]:
                        safe_pending[parent] -= 1
                        if safe_pending[parent] == 0:
                            in_safe[parent] = False
                            work[top] = parent
                            top += 1
                    else:
                        in_safe[parent] = False
                        work[top] = parent
                        top += 1
            # What stays is won: add it to the attractor and spread again.
            for i in range(first, last):
                node = order[i]
                if in_safe[node]:
                    in_attr[node] = True
                    work[top] = node
                    top += 1
            if top == 0:
                break
        # Those worth less than t first, then those worth t or more.
        split = first
        for i in range(first, last):
            node = order[i]
            if not in_attr[node]:
                order[i], order[split] = order[split], node
                split += 1
        for i in range(first, last):
            node = order[i]
            active[node] = False
            in_safe[node] = False
            if in_attr[node]:
                low[node] = t
                in_attr[node] = False
        stack[depth, 0], stack[depth, 1], stack[depth, 2], stack[depth, 3] = first, split, floor, middle - 1
        depth += 1
        stack[depth, 0], stack[depth, 1], stack[depth, 2], stack[depth, 3] = split, last, middle, top_value
        depth += 1
    return low, False


@njit(cache=True)
def _solve(seeds_of, roles, fixed, edges, captured, movers, opponents, upper, deadline_ns):
    """Role 0's bound (lower, or upper when `upper`) of every node's value,
    layer by layer from the smallest, and whether `deadline_ns` stopped it
    (_cobuchi_values)."""
    size = roles.shape[0]
    bound = np.zeros(size, np.int64)  # role 0's payoff from each node
    local = np.full(size, -1, np.int64)
    top_seeds = 0
    for node in range(size):
        if fixed[node] != UNKNOWN:
            bound[node] = fixed[node] if roles[node] == 0 else -fixed[node]
        top_seeds = max(top_seeds, seeds_of[node])
    for seeds in range(top_seeds + 1):
        count = 0
        for node in range(size):
            if seeds_of[node] == seeds and fixed[node] == UNKNOWN:
                count += 1
        if count == 0:
            continue
        nodes = np.empty(count, np.int64)
        count = 0
        for node in range(size):
            if seeds_of[node] == seeds and fixed[node] == UNKNOWN:
                local[node] = count
                nodes[count] = node
                count += 1
        # X: role 0 for the lower bound, role 1 for the upper (its payoff is
        # minus role 0's, so its liminf is role 0's limsup).
        x_role = 1 if upper else 0
        sign_x = -1 if upper else 1
        owned = np.empty(count, np.bool_)
        f = np.empty(count, np.int64)
        game_first = np.zeros(count + 1, np.int64)
        exit_first = np.zeros(count + 1, np.int64)
        for i in range(count):
            node = nodes[i]
            for e in range(ROW):
                child = edges[node, e]
                if child < 0:
                    break
                if local[child] >= 0 and seeds_of[child] == seeds:
                    game_first[i + 1] += 1
                else:
                    exit_first[i + 1] += 1
        for i in range(count):
            game_first[i + 1] += game_first[i]
            exit_first[i + 1] += exit_first[i]
        game_children = np.empty(game_first[count], np.int64)
        exit_payoffs = np.empty(exit_first[count], np.int64)
        for i in range(count):
            node = nodes[i]
            role = roles[node]
            owned[i] = role == x_role
            own = row_seeds(movers[node]) - row_seeds(opponents[node])
            f[i] = sign_x * (own if role == 0 else -own)
            g = game_first[i]
            x = exit_first[i]
            for e in range(ROW):
                child = edges[node, e]
                if child < 0:
                    break
                if local[child] >= 0 and seeds_of[child] == seeds:
                    game_children[g] = local[child]
                    g += 1
                else:
                    taken = np.int64(captured[node, e]) if role == 0 else -np.int64(captured[node, e])
                    exit_payoffs[x] = sign_x * (taken + bound[child])
                    x += 1
        values, stopped = _cobuchi_values(-seeds, seeds, owned, f, game_first, game_children, exit_first, exit_payoffs,
                                          deadline_ns)
        if stopped:
            return bound, True
        for i in range(count):
            bound[nodes[i]] = sign_x * values[i]
            local[nodes[i]] = -1
    return bound, False


@dataclass(frozen=True)
class Bounds:
    """Role 0's (the root mover's) proven bounds under the true rule.

    status: "solved", "too large" (more than the limit of positions) or
    "out of time" (the deadline passed); no bounds but those of "solved".
    lower/upper: the position's value d is within them;
    moves: for each legal move letter, (lower, upper) of its value;
    positions: the real positions the graph held."""

    status: str
    lower: int | None
    upper: int | None
    moves: dict[str, tuple[int, int]]
    positions: int

    @property
    def exact(self) -> bool:
        return self.status == "solved" and self.lower == self.upper

    def best_moves(self) -> list[str]:
        """The moves proven best: each is worth at least what any other may be worth."""
        if self.status != "solved":
            return []
        return [move for move, (low, _) in self.moves.items() if all(low >= high for _, high in self.moves.values())]


def true_rule_bounds(
    position: Position,
    history: Sequence[Position] = (),
    tables: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    limit: int = DEFAULT_LIMIT,
    deadline: float | None = None,
) -> Bounds:
    """Bounds on the value of `position` (solver.position.Position, not over)
    under the true rule, the positions of `history` (Positions played before
    it, any order) counting for repetitions. `tables` = (flat, starts, loaded)
    as Tablebase.store.arrays(): values |d| = seeds of smaller layers end the
    graph there (None: the graph goes down to the end of every line).

    `deadline` (time.perf_counter(); None: none): the kernels give up,
    "out of time", once the clock passes it (read every CLOCK_CHECK
    positions explored, and at each threshold and round of a layer's game:
    a few milliseconds apart; never where the C library has no monotonic
    clock_gettime)."""
    if position.is_over():
        raise GameOverError(f"the game is over in {position} ({position.terminal_rule()})")
    if tables is None:
        flat = np.zeros(1, np.int8)
        starts = np.zeros(index.MAX_SEEDS + 2, np.int64)
        loaded = np.zeros(index.MAX_SEEDS + 1, np.bool_)
    else:
        flat, starts, loaded = tables
    seeds = position.seeds
    mover, opponent = position.packed()
    ends = [earlier for earlier in history if earlier.seeds == seeds]
    ends_mover = np.array([earlier.packed()[0] for earlier in ends], np.uint64)
    ends_opponent = np.array([earlier.packed()[1] for earlier in ends], np.uint64)
    ends_role = np.array([0 if earlier.to_move == position.to_move else 1 for earlier in ends], np.int8)
    deadline_ns = 0
    if deadline is not None and CLOCKS is not None:
        deadline_ns = max(1, time.clock_gettime_ns(CLOCKS) + int((deadline - time.perf_counter()) * 1e9))
    status, size, movers, opponents, roles, fixed, edges, captured, root_edges, root_captured = _explore(
        mover, opponent, ends_mover, ends_opponent, ends_role, flat, starts, loaded, int(limit), deadline_ns
    )
    if status != EXPLORED:
        return Bounds("too large" if status == TOO_LARGE else "out of time", None, None, {}, int(size))
    seeds_of = _seeds_of(movers, opponents)
    lower, stopped = _solve(seeds_of, roles, fixed, edges, captured, movers, opponents, False, deadline_ns)
    if not stopped:
        upper, stopped = _solve(seeds_of, roles, fixed, edges, captured, movers, opponents, True, deadline_ns)
    if stopped:
        return Bounds("out of time", None, None, {}, int(size))
    moves: dict[str, tuple[int, int]] = {}
    for letter in position.legal_moves():
        house = position.house_of(letter)
        child = root_edges[house]
        taken = int(root_captured[house])
        moves[letter] = (taken + int(lower[child]), taken + int(upper[child]))
    low = max(low for low, _ in moves.values())
    high = max(high for _, high in moves.values())
    return Bounds("solved", low, high, moves, int(size))
