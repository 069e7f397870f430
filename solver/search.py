"""Alpha-beta search above the endgame tables.

>>> result = search(Position.initial(), depth=6, max_table_seeds=0)
>>> result.move in Position.initial().legal_moves(), result.depth, result.exact
(True, 6, False)

The search is iterative deepening alpha-beta (fail-soft negamax) written as
one numba kernel with an explicit stack. Its value is the one the tables
use: the seeds the mover captures from now on minus the seeds the opponent
captures. A node whose seed count has a table in memory is scored from the
table; a node beyond the depth horizon is scored 0 (the seeds left are split
evenly), which is what makes a value an estimate rather than exact.

Repetition, `cycles`:

- "own" (default): the true rule along the searched line. When a position
  (houses and side to move) occurs a second time the game ends and each side
  takes the seeds on its own side. Positions played before the root (a Game's
  history) count.
- "split": the tables' convention, where endless play is worth 0. A
  repetition on the line scores 0. By the first-cycle theorem for games on
  graphs (Ehrenfeucht-Mycielski), the game that stops at the first repeated
  position and scores it 0 has the same value as endless play scored 0, so a
  search that runs to the end returns the table's value.

Exactness is tracked node by node: a score is *proven* when it rests only on
game ends, repetitions and table values, never on a horizon leaf. The root
value is exact when it is proven.

Graph-history interaction: a score that used a repetition of a position
above the node (or before the root) depends on the path, so it is never
stored in the transposition table. A score that used only repetitions of the
node itself or of positions below it is the value of the game started at the
node, and is stored. In "split" mode any mix of such stored values and
first-cycle scores is exact (see the docstring of `_search` for why). In
"own" mode the value of a game started at a node differs from its value
under a longer history, so a proven entry cuts the search only at a node
just after a capture (no earlier position can come back there); elsewhere
it orders moves only.

Exact answers in cyclic layers: a tree search must visit a position once per
path to prove a draw in a cycle, so proving a value in a large cyclic layer
by alpha-beta alone can take exponential time. In "split" mode, when every
capture from the root's layer lands in a loaded table, the search therefore
first solves the root's *component* (every position reachable without a
capture) by the same staged retrograde analysis as the builder, on an
explicit graph, and keeps the values it finds for later searches.
"""

from __future__ import annotations

import math
from collections.abc import Callable
import time as _time

import numpy as np
from numba import njit

from . import index, retrograde
from .intrinsics import prefetch_row
from .errors import CorruptTableError, GameOverError, MissingTableError, SearchError, TableMismatchError
from .layers import available_memory
from .position import HOUSE_LETTERS, Game, Position, as_position  # noqa: F401 (Position: the doctest)
from .probe import Tablebase, value_packed
from .rules import NOT_TERMINAL, ROW, board_seeds, house_seeds, legal_mask, play, row_seeds, terminal_value

BOUNDS_TIME_SHARE = 0.25  # of a time limit spent deepening when bounds are asked for (they cost about 3x that)
MAX_PLY = 120  # deepest iteration; the stack has room for this plus the history
MAX_HISTORY = 256  # positions before the root that can repeat
INFINITE = 1000  # beyond any score (|d| <= 48)
NO_REPETITION = 1 << 40
PROVEN = 255  # stored depth of a proven score: good at any depth
EXACT, LOWER, UPPER = 3, 1, 2
NO_MOVE = 7
PARTIAL_OFFSET = 64  # component values are kept as d + 64, so 0 means unknown
CYCLES = ("own", "split")
DEFAULT_HASH_MB = 64
DEFAULT_COMPONENT_LIMIT = 4_000_000
DEFAULT_TABLE_BYTES = 256 << 20  # tables read into memory for search, at most
PROOF_NODES = 2_000_000  # alpha-beta nodes tried before solving a component
COMPONENT_RATE = 1_000_000  # component positions allowed per second of time limit

_HASH_A = np.uint64(0x9E3779B97F4A7C15)
_HASH_B = np.uint64(0xC2B2AE3D27D4EB4F)


# Table lookups -------------------------------------------------------------------


@njit(cache=True, inline="always")
def known_value(mover, opponent, seeds, flat, starts, loaded, partial, partial_starts):
    """d of a non-terminal position from the tables or solved components, or
    NOT_TERMINAL when neither knows it."""
    if loaded[seeds]:
        return value_packed(mover, opponent, flat, starts, loaded)
    if partial_starts[seeds + 1] > partial_starts[seeds] and index.packed_in_index(opponent):
        stored = partial[partial_starts[seeds] + index.rank_packed(mover, opponent, seeds)]
        if stored != 0:
            return np.int64(stored) - PARTIAL_OFFSET
    return NOT_TERMINAL


# Transposition table -------------------------------------------------------------
# One entry is three words: the two position words (the whole key, so no
# collision can give a wrong value) and a data word:
# bits 0-7 value + 128, 8-9 bound, 10-17 depth (255 proven), 18-20 move.


@njit(cache=True, inline="always")
def _slot(mover, opponent, mask):
    h = mover * _HASH_A ^ (opponent * _HASH_B)
    h ^= h >> np.uint64(29)
    return np.int64(h & mask) & ~np.int64(1)  # buckets of two entries


@njit(cache=True, inline="always")
def tt_probe(tt, mask, mover, opponent):
    slot = _slot(mover, opponent, mask)
    for way in range(2):
        if tt[slot + way, 0] == mover and tt[slot + way, 1] == opponent and tt[slot + way, 2] != 0:
            return tt[slot + way, 2]
    return np.uint64(0)


@njit(cache=True, inline="always")
def tt_store(tt, mask, mover, opponent, value, bound, depth, move):
    data = np.uint64((value + 128) | (bound << 8) | (depth << 10) | (move << 18))
    slot = _slot(mover, opponent, mask)
    if tt[slot, 0] == mover and tt[slot, 1] == opponent:
        old_depth = (tt[slot, 2] >> np.uint64(10)) & np.uint64(0xFF)
        if np.uint64(depth) >= old_depth:
            tt[slot, 2] = data
        return
    if tt[slot + 1, 0] == mover and tt[slot + 1, 1] == opponent:
        tt[slot + 1, 2] = np.uint64(0)
    old_depth = (tt[slot, 2] >> np.uint64(10)) & np.uint64(0xFF)
    if tt[slot, 2] == 0 or np.uint64(depth) >= old_depth:
        # Depth-preferred first way; what it held moves to the always-replace way.
        tt[slot + 1, 0] = tt[slot, 0]
        tt[slot + 1, 1] = tt[slot, 1]
        tt[slot + 1, 2] = tt[slot, 2]
        slot_used = slot
    else:
        slot_used = slot + 1
    tt[slot_used, 0] = mover
    tt[slot_used, 1] = opponent
    tt[slot_used, 2] = data


@njit(cache=True, inline="always")
def tt_unpack(data):
    """(value, bound, depth, move) of a data word."""
    value = np.int64(data & np.uint64(0xFF)) - 128
    bound = np.int64((data >> np.uint64(8)) & np.uint64(3))
    depth = np.int64((data >> np.uint64(10)) & np.uint64(0xFF))
    move = np.int64((data >> np.uint64(18)) & np.uint64(7))
    return value, bound, depth, move


# The search kernel ---------------------------------------------------------------


@njit(cache=True)
def _search(
    path_mover, path_opponent, root, depth, split, tt, history,
    flat, starts, loaded, partial, partial_starts, max_nodes, pv, pv_length, horizon,
):
    """Fail-soft alpha-beta from path[root] to `depth` plies, full window.

    path[0:root] holds the positions played before the root since the last
    capture (one per ply, oldest first); they count for repetitions. Returns
    (score, proven, nodes, aborted); pv[root, :pv_length[root]] is the line.

    Why scores mix safely in "split" mode: let V be the value with endless
    play scored 0 (the tables' value). The side winning a position has a
    memoryless strategy that never lets V drop along the play and, where
    V > 0, strictly lowers its distance to leaving the layer, so a cycle
    under it has V constant and <= 0 for that side; the other side likewise.
    So in any game that stops at the first repetition with score 0, and where
    some positions are replaced by their V (table, component or a stored
    proven score), each side can still secure V. Hence the search value is V.
    """
    stack = root + MAX_PLY + 2
    alpha = np.empty(stack, np.int64)
    beta = np.empty(stack, np.int64)
    alpha0 = np.empty(stack, np.int64)
    best = np.empty(stack, np.int64)
    remaining = np.empty(stack, np.int64)
    proven = np.empty(stack, np.bool_)
    repeat = np.empty(stack, np.int64)
    best_move = np.empty(stack, np.int64)
    moves = np.empty((stack, ROW), np.int64)
    caps = np.empty((stack, ROW), np.int64)
    child_mover = np.empty((stack, ROW), np.uint64)
    child_opponent = np.empty((stack, ROW), np.uint64)
    move_count = np.empty(stack, np.int64)
    current = np.empty(stack, np.int64)
    since_capture = np.empty(stack, np.int64)
    keys = np.empty(ROW, np.int64)
    tt_mask = np.uint64(tt.shape[0] - 1)

    nodes = 0
    ply = root
    alpha[root] = -INFINITE
    beta[root] = INFINITE
    remaining[root] = depth
    since_capture[root] = 0
    have_result = False
    score = 0
    score_proven = False
    score_repeat = NO_REPETITION

    while True:
        if not have_result:
            # Enter the node at `ply`.
            if nodes == max_nodes:
                return 0, False, nodes, True
            nodes += 1
            mover = path_mover[ply]
            opponent = path_opponent[ply]
            pv_length[ply] = 0
            mask = legal_mask(mover, opponent)
            have_result = True
            score_proven = True
            score_repeat = NO_REPETITION
            if mask == 0:  # rules 5 and 6
                score = terminal_value(mover, opponent)
                continue
            tt_move = NO_MOVE
            if ply > root:
                hit = -1
                earlier = ply - 2
                while earlier >= since_capture[ply]:
                    if path_mover[earlier] == mover and path_opponent[earlier] == opponent:
                        hit = earlier
                        break
                    earlier -= 2
                if hit >= 0:
                    score = 0 if split else row_seeds(mover) - row_seeds(opponent)
                    score_repeat = hit
                    continue
                seeds = board_seeds(mover, opponent)
                value = known_value(mover, opponent, seeds, flat, starts, loaded, partial, partial_starts)
                if value != NOT_TERMINAL:
                    score = value
                    continue
                data = tt_probe(tt, tt_mask, mover, opponent)
                if data != 0:
                    value, bound, stored_depth, tt_move = tt_unpack(data)
                    # Only proven entries cut: a depth-limited one could hide a
                    # proof that rests on a repetition of this path (dropping
                    # those cutoffs cost no measurable speed). In "own" mode a
                    # proven entry is the value of the game started at this
                    # node, which the line above may change by repeating, so
                    # it cuts only right after a capture; elsewhere it orders.
                    if stored_depth == PROVEN and (split or since_capture[ply] == ply):
                        if (
                            bound == EXACT
                            or (bound == LOWER and value >= beta[ply])
                            or (bound == UPPER and value <= alpha[ply])
                        ):
                            score = value
                            continue
                if remaining[ply] <= 0:
                    # horizon 0: an even split (the estimate). +1 / -1: the worst /
                    # best case for the root's mover (-n or +n), which makes the
                    # search value a proven lower / upper bound.
                    score = 0
                    if horizon != 0:
                        score = board_seeds(mover, opponent)
                        if (ply - root) % 2 == 0:
                            score = -score
                        score *= horizon
                    score_proven = False
                    continue
            else:
                data = tt_probe(tt, tt_mask, mover, opponent)
                if data != 0:
                    tt_move = tt_unpack(data)[3]
            have_result = False
            # Generate and order the moves: table move, captures, history.
            count = 0
            for house in range(ROW):
                if mask & (1 << house):
                    captured, cm, co = play(mover, opponent, house)
                    moves[ply, count] = house
                    caps[ply, count] = captured
                    child_mover[ply, count] = cm
                    child_opponent[ply, count] = co
                    prefetch_row(tt, _slot(cm, co, tt_mask))  # the child probes it soon
                    key = history[house, house_seeds(mover, house)] + captured * (1 << 40)
                    if house == tt_move:
                        key = 1 << 50
                    keys[count] = key
                    count += 1
            for i in range(1, count):
                j = i
                while j > 0 and keys[j] > keys[j - 1]:
                    keys[j], keys[j - 1] = keys[j - 1], keys[j]
                    for array in (moves, caps):
                        array[ply, j], array[ply, j - 1] = array[ply, j - 1], array[ply, j]
                    child_mover[ply, j], child_mover[ply, j - 1] = child_mover[ply, j - 1], child_mover[ply, j]
                    child_opponent[ply, j], child_opponent[ply, j - 1] = (
                        child_opponent[ply, j - 1],
                        child_opponent[ply, j],
                    )
                    j -= 1
            move_count[ply] = count
            current[ply] = 0
            best[ply] = -INFINITE
            best_move[ply] = NO_MOVE
            alpha0[ply] = alpha[ply]
            proven[ply] = True
            repeat[ply] = NO_REPETITION
        else:
            # A result for the node at `ply`: hand it to the parent.
            if ply == root:
                return score, score_proven, nodes, False
            ply -= 1
            i = current[ply]
            value = caps[ply, i] - score
            if score_repeat < repeat[ply]:
                repeat[ply] = score_repeat
            if value > best[ply]:
                best[ply] = value
                best_move[ply] = moves[ply, i]
                pv[ply, 0] = moves[ply, i]
                length = pv_length[ply + 1]
                pv[ply, 1 : length + 1] = pv[ply + 1, :length]
                pv_length[ply] = length + 1
            if best[ply] >= beta[ply]:
                # Cutoff: a lower bound, proven if this child's score is.
                if caps[ply, i] == 0:
                    house = moves[ply, i]
                    history[house, house_seeds(path_mover[ply], house)] += remaining[ply] * remaining[ply]
                score = best[ply]
                score_repeat = repeat[ply]
                if score_repeat >= ply:
                    tt_store(tt, tt_mask, path_mover[ply], path_opponent[ply], score, LOWER,
                             PROVEN if score_proven else remaining[ply], best_move[ply])
                continue
            proven[ply] = proven[ply] and score_proven
            current[ply] = i + 1
            if current[ply] == move_count[ply]:
                score = best[ply]
                score_proven = proven[ply]
                score_repeat = repeat[ply]
                if score_repeat >= ply:
                    bound = EXACT if score > alpha0[ply] else UPPER
                    tt_store(tt, tt_mask, path_mover[ply], path_opponent[ply], score, bound,
                             PROVEN if score_proven else remaining[ply], best_move[ply])
                continue
            have_result = False
        # Descend into the next move of the node at `ply`.
        i = current[ply]
        captured = caps[ply, i]
        low = alpha[ply] if alpha[ply] > best[ply] else best[ply]
        path_mover[ply + 1] = child_mover[ply, i]
        path_opponent[ply + 1] = child_opponent[ply, i]
        since_capture[ply + 1] = ply + 1 if captured > 0 else since_capture[ply]
        remaining[ply + 1] = remaining[ply] - 1
        alpha[ply + 1] = captured - beta[ply]
        beta[ply + 1] = captured - low
        ply += 1


# Component solver ----------------------------------------------------------------


@njit(cache=True, inline="always")
def _hash_slot(mover, opponent, mask):
    h = mover * _HASH_A ^ (opponent * _HASH_B)
    h ^= h >> np.uint64(31)
    return np.int64(h & mask)


@njit(cache=True)
def _grow(array, size):
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
    (parents of i: parents[first[i]:first[i + 1]]) for retrograde.solve_graph.
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
    no_exit = -INFINITE

    movers[0] = mover0
    opponents[0] = opponent0
    slots[_hash_slot(mover0, opponent0, mask)] = 0
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
        best = no_exit
        for house in range(ROW):
            if not moves & (1 << house):
                continue
            captured, cm, co = play(mover, opponent, house)
            if captured > 0:
                value = retrograde.move_value(captured, cm, co, seeds, flat, starts, loaded)
                if value == retrograde.NOT_IN_USE:
                    # No table in memory for the child's layer: a terminal
                    # child, or one an earlier component solved.
                    if legal_mask(cm, co) == 0:
                        child = terminal_value(cm, co)
                    else:
                        child = known_value(cm, co, seeds - captured, flat, starts, loaded, partial, partial_starts)
                        if child == NOT_TERMINAL:
                            return _no_component(2, size)
                    value = captured - child
                if value > best:
                    best = value
                continue
            slot = _hash_slot(cm, co, mask)
            while slots[slot] >= 0 and not (movers[slots[slot]] == cm and opponents[slots[slot]] == co):
                slot = (slot + 1) & np.int64(mask)
            if slots[slot] < 0:
                if size == limit:
                    return _no_component(1, size)
                if size == capacity:
                    capacity *= 2
                    movers = _grow(movers, capacity)
                    opponents = _grow(opponents, capacity)
                    exits = _grow(exits, capacity)
                    edges = _grow(edges, capacity)
                    edge_count = _grow(edge_count, capacity)
                    fixed = _grow(fixed, capacity)
                    mask = np.uint64(4 * capacity - 1)
                    slots = np.full(4 * capacity, -1, np.int64)
                    for k in range(size):
                        s = _hash_slot(movers[k], opponents[k], mask)
                        while slots[s] >= 0:
                            s = (s + 1) & np.int64(mask)
                        slots[s] = k
                    slot = _hash_slot(cm, co, mask)
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


# Python API ----------------------------------------------------------------------


class SearchResult:
    """What a search found.

    move: the best move's letter (None when the game is over); value: d for
    the side to move, exact when `exact`, else the estimate of the deepest
    finished iteration (leaves beyond it scored as an even split); depth:
    plies of the deepest finished iteration (0 when answered from the
    tables); lower, upper: proven bounds on the value (both equal to it
    when exact; None unless exact or asked for with bounds=True); nodes,
    seconds, nps; line: the principal line as letters;
    cycles: the repetition convention; source: "table", "component" or
    "search"; iterations: (depth, value, exact, nodes, seconds) each.
    """

    def __init__(self, position, cycles):
        self.position = position
        self.cycles = cycles
        self.move = None
        self.value = None
        self.exact = False
        self.depth = 0
        self.nodes = 0
        self.seconds = 0.0
        self._line = []
        self._extend = None  # computes the rest of an exact line on first use
        self.source = "search"
        self.iterations = []
        self.component_positions = 0
        self.lower = None  # proven bounds on the value (equal to it when exact)
        self.upper = None

    @property
    def line(self):
        """The principal line as move letters (an exact one continued by known values)."""
        if self._extend is not None:
            self._line, self._extend = self._extend(self._line), None
        return self._line

    @line.setter
    def line(self, moves):
        self._line, self._extend = list(moves), None

    @property
    def nps(self):
        return self.nodes / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self):
        return {
            "position": str(self.position),
            "move": self.move,
            "value": self.value,
            "exact": self.exact,
            "lower": self.lower,
            "upper": self.upper,
            "depth": self.depth,
            "nodes": self.nodes,
            "seconds": round(self.seconds, 6),
            "nps": round(self.nps),
            "line": self.line,
            "cycles": self.cycles,
            "source": self.source,
            "component_positions": self.component_positions,
            "iterations": [
                {"depth": d, "value": v, "exact": e, "nodes": n, "seconds": round(s, 6)}
                for d, v, e, n, s in self.iterations
            ],
        }

    def __repr__(self):
        kind = "exact" if self.exact else f"depth {self.depth}"
        return f"SearchResult(move={self.move!r}, value={self.value}, {kind}, nodes={self.nodes})"


class Searcher:
    """A search engine with its transposition table, tables and solved components.

    `tablebase`: a probe.Tablebase (or a directory); layers whose files exist
    are read into memory up to `table_bytes` in all, smallest first, or
    exactly up to `max_table_seeds` when given. A root whose own table exists
    is answered from it even when that table is not in memory, unless it has
    more than `max_table_seeds` seeds. Keep one Searcher for many searches:
    the transposition table and the component values carry over.
    """

    def __init__(self, tablebase=None, hash_mb=DEFAULT_HASH_MB, max_table_seeds=None,
                 table_bytes=DEFAULT_TABLE_BYTES, component_limit=DEFAULT_COMPONENT_LIMIT):
        if tablebase is None or isinstance(tablebase, (str, bytes)) or hasattr(tablebase, "__fspath__"):
            tablebase = Tablebase(tablebase)
        if not isinstance(tablebase, Tablebase):
            raise SearchError(f"tablebase must be a Tablebase or a folder, got {type(tablebase).__name__}")
        self.tablebase = tablebase
        if isinstance(hash_mb, bool) or not isinstance(hash_mb, (int, float)) or not 0 < hash_mb < float("inf"):
            raise SearchError(f"hash_mb must be a positive number of MiB, got {hash_mb!r}")
        entries = 1 << max(1, int(hash_mb * (1 << 20) // 24).bit_length() - 1)
        available = available_memory()
        if 24 * entries > available:
            raise SearchError(f"a transposition table of {hash_mb:g} MiB does not fit in the "
                              f"{available / 2**20:,.0f} MiB of memory available")
        self.tt = np.zeros((entries, 3), dtype=np.uint64)
        self.history = np.zeros((ROW, 49), dtype=np.int64)
        self.component_limit = component_limit
        self.max_table_seeds = index.MAX_SEEDS if max_table_seeds is None else max_table_seeds
        self._tt_cycles = None
        self._partial_layers = []
        self._partial = np.zeros(1, dtype=np.int8)
        self._partial_starts = np.zeros(index.MAX_SEEDS + 2, dtype=np.int64)
        self._load_tables(max_table_seeds, table_bytes)
        self._warm_up()

    def __repr__(self):
        return (f"Searcher({self.tablebase.directory!r}, hash_entries={self.tt.shape[0]}, "
                f"tables_in_memory={self.table_layers})")

    def _warm_up(self):
        """Compile the kernel (or load numba's cache) now, so that a search's time
        limit is spent searching."""
        path = np.zeros(MAX_PLY + 2, dtype=np.uint64)
        path[0] = np.uint64(0x040404040404)  # four seeds in each house of a row: the opening
        opponent = path.copy()
        pv = np.zeros((MAX_PLY + 2, MAX_PLY + 2), dtype=np.int64)
        _search(path, opponent, 0, 1, True, np.zeros((2, 3), np.uint64), np.zeros((ROW, 49), np.int64),
                *self._arrays(), 100, pv, np.zeros(MAX_PLY + 2, dtype=np.int64), 0)

    def _load_tables(self, max_table_seeds, table_bytes):
        built = sorted(self.tablebase.layers())
        if max_table_seeds is not None:
            wanted = [n for n in built if n <= max_table_seeds]
        else:
            wanted, used = [], 0
            for n in built:
                used += index.layer_size(n)
                if used > table_bytes:
                    break
                wanted.append(n)
        self.left_out = {}  # {layer: the error}: damaged layers searched without, as if not built
        for n in wanted:
            try:
                self.tablebase.load(n)
            except (CorruptTableError, TableMismatchError) as error:
                self.left_out[n] = error

    @property
    def table_layers(self):
        """Seed counts whose tables are in memory for the search."""
        return self.tablebase.loaded_layers()

    def _arrays(self):
        return (*self.tablebase.store.arrays(), self._partial, self._partial_starts)

    def _ensure_partial(self, seeds):
        """Room for solved-component values of layer `seeds` (zero pages: free until used)."""
        if seeds in self._partial_layers:
            return
        layers = sorted(self._partial_layers + [seeds])
        starts = np.zeros(index.MAX_SEEDS + 2, dtype=np.int64)
        for n in range(index.MAX_SEEDS + 1):
            starts[n + 1] = starts[n] + (index.layer_size(n) if n in layers else 0)
        partial = np.zeros(max(1, int(starts[-1])), dtype=np.int8)
        for n in self._partial_layers:
            partial[starts[n] : starts[n + 1]] = self._partial[self._partial_starts[n] : self._partial_starts[n + 1]]
        self._partial, self._partial_starts, self._partial_layers = partial, starts, layers

    def known(self, position):
        """d of a position from the tables in memory or a solved component, else None."""
        position = as_position(position)
        mover, opponent = position.packed()
        if legal_mask(mover, opponent) == 0:
            return int(terminal_value(mover, opponent))
        value = known_value(mover, opponent, position.seeds, *self._arrays())
        return None if value == NOT_TERMINAL else int(value)

    def solve_component(self, position, limit=None):
        """Solve the positions reachable from `position` without a capture (split
        convention). Returns (status, value, positions); status "solved",
        "too large" or "missing table"."""
        position = as_position(position)
        seeds = position.seeds
        if index.layer_size(seeds) > (1 << 31):
            return "too large", None, 0
        self._ensure_partial(seeds)
        mover, opponent = position.packed()
        status, size, movers, opponents, exits, children, fixed, first, parents = _explore_component(
            mover, opponent, seeds, *self._arrays(), int(limit or self.component_limit)
        )
        if status:
            return ("solved", "too large", "missing table")[status], None, int(size)
        # The builder's staged algorithm, on the component's explicit graph.
        values = retrograde.solve_graph(seeds, exits, children, first, parents)
        _keep_component(values, movers, opponents, fixed, seeds, self._partial, self._partial_starts)
        return "solved", int(values[0]), int(size)

    def move_values(self, position: Position | Game | str, depth: int | None = None, time: float | None = None,
                    nodes: int | None = None, cycles: str = "own") -> list[tuple[str, int, int, bool]]:
        """Every legal move's value by search: [(letter, captured, value, exact)].

        A move's value is the seeds it captures minus the value of the
        position it leads to, searched with `depth` - 1 plies, or a share of
        `time` / `nodes` each; a move that ends the game is worth what the
        end gives. A Game's history counts for repetitions ("own" rule).
        """
        game = position if isinstance(position, Game) else Game(as_position(position))
        current = game.position
        moves = game.legal_moves()
        share = max(1, len(moves))
        mover_before = current.mover_captured()[0]
        other_before = current.mover_captured()[1]
        values = []
        for move in moves:
            captured = game.play(move)
            try:
                if game.is_over():
                    final = game.result()
                    mine, theirs = (final if current.to_move == "S" else final[::-1])
                    value, exact = (mine - mover_before) - (theirs - other_before), True
                else:
                    result = self.search(
                        game,
                        depth=None if depth is None else max(1, depth - 1),
                        time=None if time is None else time / share,
                        nodes=None if nodes is None else max(1, nodes // share),
                        cycles=cycles,
                    )
                    if result.value is None:  # a limit too small for one depth: one ply is always searched
                        result = self.search(game, depth=1, cycles=cycles)
                    value, exact = captured - result.value, result.exact
            finally:
                game.undo()
            values.append((move, captured, value, exact))
        return values

    def search(self, position: Position | Game | str, depth: int | None = None, time: float | None = None,
               nodes: int | None = None, cycles: str = "own", history: list | None = None, bounds: bool = False,
               progress: Callable | None = None) -> SearchResult:
        """Search `position` (a Position, its notation, or a Game, whose history
        then counts for repetitions) and return a SearchResult.

        Limits: `depth` plies, `time` seconds, `nodes`; with none the search
        runs until its value is exact (which can take very long far above
        the tables). The search stops as soon as the value is exact.

        `bounds`: when the value is not exact, search the deepest finished
        depth twice more, with every horizon leaf scored as the worst and
        then the best case for the mover (-n, +n seeds), which gives proven
        lower and upper bounds. They cost about three times the deepening;
        with a time limit, deepening stops at a quarter of it so that the
        bounds fit in the rest, roughly (a depth or node limit is exceeded).

        `progress`, if given, is called after each finished iteration as
        progress(depth, value, exact, nodes so far, seconds so far).
        """
        if cycles not in CYCLES:
            raise SearchError(f"cycles must be one of {', '.join(CYCLES)}, got {cycles!r}")
        if isinstance(depth, bool) or (depth is not None and not isinstance(depth, (int, np.integer))):
            raise SearchError(f"depth must be an integer, got {depth!r}")
        if time is not None and (isinstance(time, bool) or not isinstance(time, (int, float))
                                 or not math.isfinite(time)):
            raise SearchError(f"time must be a finite number of seconds, got {time!r}")
        if depth is not None and not 1 <= depth <= MAX_PLY:
            raise SearchError(f"depth must be 1..{MAX_PLY}, got {depth}")
        if time is not None and not time > 0:
            raise SearchError(f"time must be positive, got {time}")
        if nodes is not None and not nodes > 0:
            raise SearchError(f"nodes must be positive, got {nodes}")
        if isinstance(position, Game):
            game = position
            position = game.position
            if history is None:
                history = game.positions[:-1]
        position = as_position(position)
        if position.is_over():
            raise GameOverError(f"the game is over in {position} ({position.terminal_rule()})")
        started = _time.perf_counter()
        # Bounds cost two more searches of the deepest depth, with wide
        # windows: about three times what deepening took. With a time limit,
        # deepening gets a quarter of it, so that the whole search keeps
        # roughly to the limit.
        deadline = started + time * (BOUNDS_TIME_SHARE if bounds else 1.0) if time is not None else None
        result = SearchResult(position, cycles)

        if self._tt_cycles != cycles:
            self.tt[:] = 0
            self._tt_cycles = cycles
        self.history //= 2

        seeds = position.seeds
        if self.tablebase.is_loaded(seeds) or (seeds <= self.max_table_seeds and self.tablebase.has_layer(seeds)):
            # Its own table answers (read from the file when it is too large to hold).
            try:
                return self._from_tables(position, result, started)
            except MissingTableError:
                pass  # a child layer of a position outside the index is missing: search
        path_mover = np.zeros(MAX_HISTORY + MAX_PLY + 2, dtype=np.uint64)
        path_opponent = np.zeros_like(path_mover)
        root = 0
        if cycles == "own" and history:
            root = _fill_history(path_mover, path_opponent, history, position)
        path_mover[root], path_opponent[root] = position.packed()
        run = _Run(self, position, path_mover, path_opponent, root, cycles == "split", result, progress, started)
        max_depth = depth or MAX_PLY
        node_budget = nodes if nodes is not None else (1 << 62)

        component = cycles == "split" and self.component_limit > 0 and depth is None
        if component and self.known(position) is None:
            # Most values are proven by alpha-beta in a few nodes; a value that
            # rests on cycles is not, so its component is solved next.
            first_deadline = None if deadline is None else started + (deadline - started) / 2
            # A component is at most the whole layer: spend at most a quarter
            # of its size on alpha-beta first.
            proof_nodes = min(node_budget, PROOF_NODES, max(1000, index.layer_size(position.seeds) // 4))
            run.deepen(max_depth, proof_nodes, first_deadline)
            if not result.exact:
                limit = self.component_limit
                if deadline is not None:
                    limit = min(limit, max(10_000, int((deadline - _time.perf_counter()) * COMPONENT_RATE)))
                status, _, size = self.solve_component(position, limit)
                result.component_positions = size
                if status == "solved":
                    result.source = "component"
                    run.next_depth = 1
        if not result.exact:
            run.deepen(max_depth, node_budget, deadline)
        result.line = _letters(position, run.houses)
        if result.exact:
            result.lower = result.upper = result.value
        elif bounds and result.depth > 0:
            result.lower = run.bound(1, result.depth)
            result.upper = run.bound(-1, result.depth)
        if result.move is None:
            # Not even depth 1 finished within the limits: any legal move, no value.
            result.move = position.legal_moves()[0]
        result.seconds = _time.perf_counter() - started
        if result.exact:
            result._extend = lambda line: self._extend_line(position, line, cycles)
        return result

    def _from_tables(self, position, result, started):
        first = self.tablebase.line(position, max_plies=1)  # a best move that makes progress
        choice = first.moves[0]
        result.value = result.lower = result.upper = first.value
        result.exact = True
        result.move = choice
        result.source = "table"
        result.line = [choice]
        result._extend = lambda line: self.tablebase.line(position, max_plies=MAX_PLY).moves
        result.seconds = _time.perf_counter() - started
        return result

    def _extend_line(self, position, line, cycles):
        """Continue an exact principal line with best moves by known values until
        it leaves what is known, repeats, ends, or reaches MAX_PLY plies."""
        game = Game(position)
        for move in line:
            game.play(move)
        while not game.is_over() and len(line) < MAX_PLY:
            current = game.position
            if self.tablebase.is_loaded(current.seeds):
                line = line + self.tablebase.line(current, max_plies=MAX_PLY - len(line)).moves
                break
            scored = []
            for move in current.legal_moves():
                child, captured = current.play_capture(move)
                value = self.known(child)
                if value is None:
                    return line
                scored.append((captured - value, captured, move))
            if cycles == "own":
                break
            best = max(s[0] for s in scored)
            move = max((s for s in scored if s[0] == best), key=lambda s: s[1])[2]
            game.play(move)
            line = line + [move]
        return line


class _Run:
    """Iterative deepening of one search: the path, the PV buffers, the result."""

    def __init__(self, searcher, position, path_mover, path_opponent, root, split, result, progress, started):
        self.searcher = searcher
        self.position = position
        self.path_mover = path_mover
        self.path_opponent = path_opponent
        self.root = root
        self.split = split
        self.result = result
        self.progress = progress
        self.started = started
        self.pv = np.zeros((root + MAX_PLY + 2, MAX_PLY + 2), dtype=np.int64)
        self.pv_length = np.zeros(root + MAX_PLY + 2, dtype=np.int64)
        self.next_depth = 1
        self.nps_estimate = 3_000_000.0
        self.houses = []  # principal line of the deepest finished iteration (mover-view houses)

    def deepen(self, max_depth, node_budget, deadline):
        """Iterations next_depth..max_depth until proven, the node budget
        (counted over the whole search) or the deadline."""
        searcher, result, root = self.searcher, self.result, self.root
        arrays = searcher._arrays()
        while self.next_depth <= max_depth:
            budget = node_budget - result.nodes
            if deadline is not None:
                left = deadline - _time.perf_counter()
                if left <= 0:
                    break
                budget = min(budget, max(1000, int(left * self.nps_estimate)))
            if budget <= 0:
                break
            iteration = self.next_depth
            tick = _time.perf_counter()
            score, proven, used, aborted = _search(
                self.path_mover, self.path_opponent, root, iteration, self.split, searcher.tt, searcher.history,
                *arrays, budget, self.pv, self.pv_length, 0,
            )
            seconds = _time.perf_counter() - tick
            result.nodes += int(used)
            if used > 100_000:  # small iterations time numba's start-up, not the search
                self.nps_estimate = max(used / seconds, 1_000_000.0)
            if aborted:
                break
            self.next_depth += 1
            result.value = int(score)
            result.exact = bool(proven)
            result.depth = iteration
            self.houses = [int(h) for h in self.pv[root, : self.pv_length[root]]]
            result.move = HOUSE_LETTERS[self.position.to_move][self.houses[0]]
            result.iterations.append((iteration, int(score), bool(proven), int(used), seconds))
            if self.progress is not None:
                self.progress(iteration, int(score), bool(proven), result.nodes, _time.perf_counter() - self.started)
            if proven:
                break


    def bound(self, horizon, depth):
        """A proven lower (horizon 1) or upper (horizon -1) bound on the root
        value from a search to `depth` whose horizon leaves are scored as the
        worst or best case for the root's mover."""
        searcher = self.searcher
        score, _, used, _ = _search(
            self.path_mover, self.path_opponent, self.root, depth, self.split, searcher.tt, searcher.history,
            *searcher._arrays(), 1 << 62, self.pv, self.pv_length, horizon,
        )
        self.result.nodes += int(used)  # counted, but not an iteration of its own
        return int(score)


def _fill_history(path_mover, path_opponent, history, position):
    """Lay the history (positions before the root, oldest first) into the path:
    only the positions since the last capture can repeat."""
    seeds = position.seeds
    recent = []
    for earlier in reversed(list(history)):
        earlier = as_position(earlier)
        if earlier.seeds != seeds:
            break
        recent.append(earlier)
    recent = recent[:MAX_HISTORY][::-1]
    for i, earlier in enumerate(recent):
        path_mover[i], path_opponent[i] = earlier.packed()
    return len(recent)


def _letters(position, houses):
    """Move letters of a line of houses (0..5, mover view) from `position`."""
    letters = []
    for house in houses:
        letters.append(HOUSE_LETTERS[position.to_move][house])
        position = position.play(house)
        if position.is_over():
            break
    return letters


def search(position, depth=None, time=None, nodes=None, cycles="own", tablebase=None, history=None, bounds=False,
           **options):
    """Search `position` once with a fresh Searcher (see Searcher.search)."""
    return Searcher(tablebase, **options).search(position, depth=depth, time=time, nodes=nodes, cycles=cycles,
                                                 history=history, bounds=bounds)


__all__ = ["SearchError", "SearchResult", "Searcher", "search", "known_value"]
