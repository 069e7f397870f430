"""Alpha-beta search above the endgame tables.

>>> result = search(Position.initial(), depth=6, max_table_seeds=0)
>>> result.move in Position.initial().legal_moves(), result.depth, result.exact
(True, 6, False)

The search is iterative deepening alpha-beta (fail-soft negamax) written as
one numba kernel with an explicit stack. Its value is the one the tables
use: the seeds the mover captures from now on minus the seeds the opponent
captures. A node whose seed count has a table in memory is scored from the
table; a node beyond the depth horizon gets an estimate learned from the
tables (solver.evaluation; or 0, the seeds left split evenly, with
evaluation="zero"), which is what makes a value an estimate rather than exact.

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
it orders moves only. A depth-limited entry (an estimate) cuts, as an
estimate, only just after a capture too: elsewhere it could hide for good a
proof that a repetition of the line gives.

Threads: each iteration is split along its leftmost line (PV splitting, see
_Run): a node of that line has its first move searched first, then its other
moves side by side, one kernel a move, on the shared transposition table.

Exact answers in cyclic layers: a tree search must visit a position once per
path to prove a draw in a cycle, so proving a value in a large cyclic layer
by alpha-beta alone can take exponential time. In "split" mode, when every
capture from the root's layer lands in a loaded table, the search therefore
first solves the root's *component* (every position reachable without a
capture) by the same staged retrograde analysis as the builder, on an
explicit graph, and keeps the values it finds for later searches.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time as _time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from numba import njit

from . import index
from .clock import DEADLINE, STOP, STOPPED, Clock, answer_deadline
from .component import SolvedComponents
from .errors import GameOverError, MissingTableError, SearchError, TablebaseClosedError, TableError
from .evaluation import evaluate_and_threat, load_weights
from .intrinsics import monotonic_ns, prefetch_row
from .layers import available_memory, byte_histogram, known_value
from .limits import DEFAULT_QUIESCENCE, MAX_PLY, MAX_QUIESCENCE, check_limits
from .position import HOUSE_LETTERS, Game, Position, as_position
from .probe import Tablebase
from .repetition import true_rule_bounds
from .report import EndReason, MoveValue, Outcome, Rule, ended_value, true_rule_may_change
from .rules import NOT_TERMINAL, ROW, board_seeds, house_seeds, legal_mask, play, row_seeds, terminal_value
from .table_reader import TableReader, default_table_bytes, failing_layer

BOUNDS_TIME_SHARE = 0.25  # of a time limit spent deepening when bounds are asked for (they cost about 3x that)
MAX_HISTORY = 256  # positions before the root that can repeat
INFINITE = 1000  # beyond any score (|d| <= 48)
NO_REPETITION = 1 << 40
PROVEN = 255  # stored depth of a proven score: good at any depth
EXACT, LOWER, UPPER = 3, 1, 2
NO_MOVE = 7
NO_SCOUT, RESEARCH = 1 << 20, (1 << 20) + 1  # beyond any window: a node's move not scouted, or searched again
EVALUATIONS = ("learned", "zero")  # how a horizon leaf is scored
DEFAULT_HASH_MB = 64
DEFAULT_COMPONENT_LIMIT = 4_000_000
DEFAULT_TABLE_BYTES = 256 << 20  # tables the oracle's search process and game analysis' max_tables read at start
PROOF_NODES = 2_000_000  # alpha-beta nodes tried before solving a component
COMPONENT_RATE = 1_000_000  # component positions allowed per second of time limit
# Positions of the true rule's graph (solver.repetition) a second of time limit: each costs
# 1.2-2.4 µs solved (9-11 seeds), so about half the time at most, enough for a 9-seed root's
# graph (389K positions) at 1 s a move. A graph larger than the limit is given up after
# exploring the limit's positions (0.3-0.8 µs each); a root whose layer (both sides to move:
# whole graphs hold 2.3-2.6 times the layer) exceeds the limit explores an eighth of it, which
# finds the small graphs (forced lines, captures everywhere) and wastes little time. Whatever
# the size, the graph is given up at clock.answer_deadline (a loaded machine is slower).
REPETITION_RATE = 400_000
REPETITION_SMALL_SHARE = 8
STOP_CHECK = 1024  # nodes between two looks at the stop flag (a few microseconds of search)
UNLIMITED = 1 << 62  # a node budget that is no limit
UNLIMITED_DEPTH = MAX_PLY  # the deepest iteration of a search without a depth limit
# Layers that arrive from the background reader during a search restart its
# deepening when they hold at least the root's seeds less this many (a line
# of a move's search captures fewer, most of the time); smaller ones are
# probed from the next iteration on. A judgment, not a measured optimum.
ARRIVAL_REACH = 12
SPLIT_DEPTH = 5  # a node of the leftmost line with this many plies left or more is split over the threads

# Transposition table ---------------------------------------------------------
# One entry is three words: the two position words (the whole key, so no
# collision can give a wrong value) and a data word:
# bits 0-7 value + 128, 8-9 bound, 10-17 depth (255 proven), 18-20 move,
# 21 "rests on the tables' convention", 22-63 a check of the key.
# Threads write entries without locks, so an entry can be torn (its words
# from two writes); the check ties the data word to its key, and a probe
# that finds them apart sees an empty entry (a false pass: 2**-42).

DATA_BITS = 22
_DATA_MASK = np.uint64((1 << DATA_BITS) - 1)
_CHECK_MASK = ~_DATA_MASK
_CHECK_MIX = np.uint64(0xD6E8FEB86659FD93)


@njit(cache=True, inline="always")
def _slot(hashed, mask):
    return np.int64(hashed & mask) & ~np.int64(1)  # buckets of two entries


@njit(cache=True, inline="always")
def _check(hashed):
    return (hashed * _CHECK_MIX) & _CHECK_MASK


@njit(cache=True, inline="always")
def _tt_row(tt: np.ndarray, mask: int, mover: np.uint64, opponent: np.uint64) -> int:
    """The row holding the position's entry (its key and check bits match), -1 if none."""
    hashed = index.position_hash(mover, opponent)
    slot = _slot(hashed, mask)
    check = _check(hashed)
    for way in range(2):
        if tt[slot + way, 0] == mover and tt[slot + way, 1] == opponent and tt[slot + way, 2] & _CHECK_MASK == check:
            return slot + way
    return -1


@njit(cache=True, inline="always")
def tt_probe(tt: np.ndarray, mask: int, mover: np.uint64, opponent: np.uint64) -> np.uint64:
    """The data word of the position's entry (check bits cleared), 0 if none."""
    row = _tt_row(tt, mask, mover, opponent)
    return np.uint64(0) if row < 0 else tt[row, 2] & _DATA_MASK


@njit(cache=True, inline="always")
def tt_store(
    tt: np.ndarray,
    mask: int,
    mover: np.uint64,
    opponent: np.uint64,
    value: int | np.integer,
    bound: int | np.integer,
    depth: int | np.integer,
    move: int | np.integer,
    on_split: bool = False,
) -> None:
    hashed = index.position_hash(mover, opponent)
    data = np.uint64((value + 128) | (bound << 8) | (depth << 10) | (move << 18) | (np.int64(on_split) << 21))
    data |= _check(hashed)
    slot = _slot(hashed, mask)
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


@njit(cache=True)
def tt_prefer_move(tt: np.ndarray, mask: int, mover: np.uint64, opponent: np.uint64, move: int) -> None:
    """Make `move` the one the position's entry has the search try first,
    its score kept; with no entry, a new one of depth 0 (which orders moves
    and never cuts). The root of each iteration gets its last best move so:
    an entry stored deeper (or proven in another search, where the line
    above differed) would otherwise keep its own move first there."""
    row = _tt_row(tt, mask, mover, opponent)
    if row < 0:
        tt_store(tt, mask, mover, opponent, 0, UPPER, 0, move, False)
    else:
        tt[row, 2] = (tt[row, 2] & ~np.uint64(7 << 18)) | (np.uint64(move) << np.uint64(18))


@njit(cache=True, inline="always")
def tt_unpack(data: np.uint64) -> tuple[int | np.int64, int | np.int64, int | np.int64, int | np.int64]:
    """(value, bound, depth, move) of a data word."""
    value = np.int64(data & np.uint64(0xFF)) - 128
    bound = np.int64((data >> np.uint64(8)) & np.uint64(3))
    depth = np.int64((data >> np.uint64(10)) & np.uint64(0xFF))
    move = np.int64((data >> np.uint64(18)) & np.uint64(7))
    return value, bound, depth, move


@njit(cache=True, inline="always")
def tt_on_split(data: np.uint64) -> bool:
    """Whether the entry's score rests on a value of the tables' convention."""
    return (data >> np.uint64(21)) & np.uint64(1) != 0


# The search kernel ---------------------------------------------------------------


@njit(cache=True, inline="always")
def _stored_depth(proven, remaining, horizon):
    """The depth an entry is stored with: PROVEN, the depth searched, or 0 for
    an unproven score of a bounds search (horizon leaves at -n or +n: it
    orders moves, and never cuts, since depth-limited entries cut only at
    depth 1 or more) or of a leaf beyond the horizon that tried its captures."""
    if proven:
        return PROVEN
    return max(remaining, 0) if horizon == 0 else 0


@njit(cache=True, nogil=True)
def _search(
    path_mover, path_opponent, root, top, depth, alpha_top, beta_top, since_top, split, tt, history,
    flat, starts, loaded, partial, partial_starts, max_nodes, control, pv, pv_length, horizon, weights, top_moves,
    quiescence, through_tables,
):
    """Fail-soft alpha-beta from path[top] to `depth` plies, window
    (alpha_top, beta_top).

    path[root] is the search's root and path[0:root] holds the positions
    played before it since the last capture (one per ply, oldest first);
    they count for repetitions. `top` is the root, or a node of the root's
    tree at ply `top` (the split search of _Run starts kernels there, with
    path[root:top + 1] the line to it and since_top the ply of its last
    capture, as the kernel's own stack would have them). Returns (score,
    proven, nodes, aborted, on_split, repeat); pv[top, :pv_length[top]] is
    the line, and `repeat` the earliest ply of the line whose repetition the
    score used (NO_REPETITION: none; a score is the value of the game
    started at its node only when `repeat` is that node's ply or later).

    It stops (aborted) after `max_nodes` nodes or when control[STOP] is
    set, which it reads every STOP_CHECK nodes (setting it to STOPPED
    itself once the clock passes control[DEADLINE], when that is not 0): its score is then the best
    of path[top]'s moves searched to the end, with its line in pv[top] (a
    pv_length[top] cleared before the call stays 0 when none was, and the
    score is 0); it holds no GIL, so threads
    run it side by side on one shared `tt`. A search stopped after it
    entered path[top] and generated its moves leaves them in `top_moves`
    (ROW + 1 by 4 words), in the order it searches them: row k holds the
    k-th move's house, the seeds it captures and the child's two words, row
    ROW their count. So a call with max_nodes=1 either resolves path[top]
    without a move searched (not aborted) or gives its moves.

    on_split: the score rests on a value of the tables' convention (a table
    or solved component value that repetition could change under the true
    rule); in "own" mode a score without it holds under the true rule. A
    table value of +n or -n right after a capture holds under both: the side
    that takes every seed does so without letting any position repeat.

    `through_tables` (the true rule inside the tables, "own" mode): a table
    value the true rule could change (any but that one) is not taken as the
    node's score; the node is searched like any other, its repetitions
    scored by the true rule, and its table value is only its estimate at
    the horizon (never proven). So a proven score then holds under the true
    rule, with the game's history.

    A horizon leaf scores evaluation.evaluate(weights) (an empty `weights`:
    0, an even split) unless `horizon` asks for proven bounds; either way it
    is never proven. With `quiescence` q > 0 (and horizon 0) a leaf at
    ply r beyond the horizon, r < q, then also tries its captures: its score
    is the larger of that estimate (the mover may make a quiet move instead,
    "stand pat") and each capture's seeds minus its child's score, so that
    the search does not stop in the middle of an exchange. Such a score is
    never proven either, though a capture's exact value can still give a
    proven lower bound (a cutoff) as at any node.

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
    split_used = np.empty(stack, np.bool_)
    repeat = np.empty(stack, np.int64)
    scout = np.zeros(stack, np.int64)  # the node's move now searched with a null window above this, else NO_SCOUT
    best_move = np.empty(stack, np.int64)
    standing = np.empty(stack, np.bool_)  # a leaf beyond the horizon that tries its captures
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
    ply = top
    alpha[top] = alpha_top
    beta[top] = beta_top
    remaining[top] = depth
    since_capture[top] = since_top
    have_result = False
    score: int | np.int64 = 0
    score_proven = False
    score_split = False
    score_repeat = NO_REPETITION

    while True:
        if not have_result:
            # Enter the node at `ply`.
            if (nodes % STOP_CHECK == 0 and control[STOP] == 0 and control[DEADLINE] != 0
                    and monotonic_ns() >= control[DEADLINE]):  # type: ignore[call-arg]  # (@intrinsic: typingctx)
                control[STOP] = STOPPED  # the search's end, read here (a timer thread wakes late when busy)
            if nodes == max_nodes or (nodes % STOP_CHECK == 0 and control[STOP] != 0):
                if ply > top:
                    top_moves[ROW, 0] = move_count[top]
                    for k in range(move_count[top]):
                        top_moves[k, 0] = moves[top, k]
                        top_moves[k, 1] = caps[top, k]
                        top_moves[k, 2] = child_mover[top, k]
                        top_moves[k, 3] = child_opponent[top, k]
                # Aborted. The score is the best of path[top]'s moves searched
                # to the end (0 when none was): what a search that ran out of
                # time in this iteration knows.
                partial = best[top] if ply > top and best_move[top] != NO_MOVE else 0
                return partial, False, nodes, True, False, NO_REPETITION
            nodes += 1
            mover = path_mover[ply]
            opponent = path_opponent[ply]
            pv_length[ply] = 0
            mask = legal_mask(mover, opponent)
            have_result = True
            score_proven = True
            score_split = False
            score_repeat = NO_REPETITION
            if mask == 0:  # rules 5 and 6
                score = terminal_value(mover, opponent)
                continue
            tt_move: int | np.int64 = NO_MOVE
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
                    score_split = not (since_capture[ply] == ply and (value == seeds or value == -seeds))
                    if not (through_tables and score_split):
                        continue
                    if remaining[ply] <= 0 and horizon == 0:
                        score_proven = False  # the table's value, an estimate of the true rule's
                        continue
                    score_split = False  # searched: what its moves give decides
                data = tt_probe(tt, tt_mask, mover, opponent)
                if data != 0:
                    value, bound, stored_depth, tt_move = tt_unpack(data)
                    # Right after a capture no position of the line above can
                    # come back (they all hold more seeds), so an entry's score
                    # (stored only when it rests on no repetition above its
                    # node) is what a search here would find: a proven entry
                    # cuts as proven, a depth-limited one at least as deep as
                    # the depth left cuts as an estimate (never proven). In
                    # "split" mode a proven entry cuts anywhere (the docstring
                    # says why). Elsewhere entries order moves only: in "own"
                    # mode a proven score is the value of the game started at
                    # the node, which the line above may change by repeating;
                    # and a depth-limited entry cutting there would hide the
                    # proofs that repetitions of this line give (in a cyclic
                    # layer, for good: a position met again at many plies).
                    # Bounds (horizon != 0) cut with proven entries only:
                    # depth-limited ones hold estimates, not bounds.
                    fresh = since_capture[ply] == ply
                    if stored_depth == PROVEN:
                        cuts = split or fresh
                    else:
                        cuts = fresh and horizon == 0 and stored_depth >= max(remaining[ply], 1)
                    if cuts and (
                        bound == EXACT
                        or (bound == LOWER and value >= beta[ply])
                        or (bound == UPPER and value <= alpha[ply])
                    ):
                        score = value
                        score_proven = stored_depth == PROVEN
                        score_split = tt_on_split(data)
                        continue
                if remaining[ply] <= 0:
                    # horizon 0: the learned estimate (or an even split). +1 / -1:
                    # the worst / best case for the root's mover (-n or +n), which
                    # makes the search value a proven lower / upper bound.
                    score = 0
                    threat: int | np.int64 = 1  # (captures unknown: an even split's leaf looks for them)
                    if horizon == 0:
                        if weights.shape[0] > 0:
                            score, threat = evaluate_and_threat(mover, opponent, weights)
                    else:
                        score = board_seeds(mover, opponent)
                        if (ply - root) % 2 == 0:
                            score = -score
                        score *= horizon
                    score_proven = False
                    if (horizon != 0 or -remaining[ply] >= quiescence or score >= beta[ply] or threat == 0
                            or ply >= root + MAX_PLY):
                        continue
                    standing[ply] = True  # and try the captures, below
                else:
                    standing[ply] = False
            else:
                standing[ply] = False
                data = tt_probe(tt, tt_mask, mover, opponent)
                if data != 0:
                    tt_move = tt_unpack(data)[3]
            # Generate and order the moves: table move, captures, history.
            count = 0
            for house in range(ROW):
                if mask & (1 << house):
                    captured, cm, co = play(mover, opponent, house)
                    if standing[ply] and captured == 0:
                        continue
                    moves[ply, count] = house
                    caps[ply, count] = captured
                    child_mover[ply, count] = cm
                    child_opponent[ply, count] = co
                    prefetch_row(tt, _slot(index.position_hash(cm, co), tt_mask))  # type: ignore[call-arg]  # the child probes it soon (@intrinsic: typingctx)
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
            if standing[ply] and count == 0:
                continue  # no capture: the estimate stands (have_result, unproven)
            have_result = False
            move_count[ply] = count
            current[ply] = 0
            best[ply] = score if standing[ply] else -INFINITE
            best_move[ply] = NO_MOVE
            alpha0[ply] = alpha[ply]
            proven[ply] = not standing[ply]
            split_used[ply] = False
            repeat[ply] = NO_REPETITION
            scout[ply] = NO_SCOUT
        else:
            # A result for the node at `ply`: hand it to the parent.
            if ply == top:
                return score, score_proven, nodes, False, score_split, score_repeat
            ply -= 1
            i = current[ply]
            value = caps[ply, i] - score
            if scout[ply] != NO_SCOUT and scout[ply] < value < beta[ply]:
                # The null window failed high inside the node's window: the
                # move may be the best, so it is searched again with the whole
                # window (the scout's score is only a lower bound; it is dropped).
                scout[ply] = RESEARCH
            else:
                scout[ply] = NO_SCOUT
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
                                 _stored_depth(score_proven, remaining[ply], horizon), best_move[ply], score_split)
                    continue
                proven[ply] = proven[ply] and score_proven
                split_used[ply] = split_used[ply] or score_split
                current[ply] = i + 1
                if current[ply] == move_count[ply]:
                    score = best[ply]
                    score_proven = proven[ply]
                    score_split = split_used[ply]
                    score_repeat = repeat[ply]
                    if score_repeat >= ply:
                        bound = EXACT if score > alpha0[ply] else UPPER
                        tt_store(tt, tt_mask, path_mover[ply], path_opponent[ply], score, bound,
                                 _stored_depth(score_proven, remaining[ply], horizon), best_move[ply], score_split)
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
        if scout[ply] == RESEARCH:
            scout[ply] = NO_SCOUT
        elif i > 0 and beta[ply] - low > 1:
            # Principal variation search: a move after the first is searched
            # with a null window at `low`, to show it no better; one that is
            # better is searched again (above). Bounds, proofs and stored
            # entries are those of alpha-beta on the window each search had.
            scout[ply] = low
            alpha[ply + 1] = beta[ply + 1] - 1
        ply += 1


# Python API ----------------------------------------------------------------------


class SearchResult:
    """What a search found.

    move: the best move's letter (None when the game is over); value: d for
    the side to move, exact when `exact`, else the estimate of the deepest
    finished iteration (leaves beyond it estimated), or, when `cut_short`,
    of the best root move of the next iteration that the time limit cut
    short once it had searched at least one root move to the end; depth:
    plies of the deepest finished iteration (0 when answered from the
    tables); lower, upper: proven bounds on the value (both equal to it
    when exact; None unless exact or asked for with bounds=True); nodes
    (every thread's), seconds, nps; line: the principal line as letters;
    cycles: the repetition convention searched under; rule: the rule the
    value holds under, "true" (every repetition scored by the true rule)
    or "split" (some of it, a table, a solved component, or the whole search
    with cycles="split", scores endless play 0: under cycles="own" such a
    value is exact only under the tables' convention for those positions);
    source: "table", "component" or "search"; threads: threads that
    searched; iterations: (depth, value, exact, nodes, seconds) each, of
    the main thread.
    """

    def __init__(self, position: Position, cycles: str) -> None:
        self.position = position
        self.cycles = cycles
        self.rule = Rule.parse(cycles)
        self.move: str | None = None
        self.value: int | None = None
        self.exact = False
        self.depth = 0
        self.nodes = 0
        self.seconds = 0.0
        self._line: list[str] = []
        self._extend = None  # computes the rest of an exact line on first use
        self.source = "search"
        self.threads = 1
        self.iterations: list[tuple[int, int, bool, int, float]] = []
        self.component_positions = 0
        self.lower: int | None = None  # proven bounds on the value (equal to it when exact)
        self.upper: int | None = None
        self.cut_short = False  # move and value come from an iteration deeper than `depth` that the time cut short
        self.moves: list[MoveValue] | None = None  # every move's value, from search_every_move

    @property
    def line(self) -> list[str]:
        """The principal line as move letters (an exact one continued by known values)."""
        if self._extend is not None:
            self._line, self._extend = self._extend(self._line), None
        return self._line

    @line.setter
    def line(self, moves: Iterable[str]) -> None:
        self._line, self._extend = list(moves), None

    @property
    def nps(self) -> float:
        return self.nodes / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "position": str(self.position),
            "move": self.move,
            "value": self.value,
            "exact": self.exact,
            "rule": self.rule.value,
            "lower": self.lower,
            "upper": self.upper,
            "depth": self.depth,
            "cut_short": self.cut_short,
            "nodes": self.nodes,
            "seconds": round(self.seconds, 6),
            "nps": round(self.nps),
            "line": self.line,
            "cycles": self.cycles,
            "source": self.source,
            "threads": self.threads,
            "component_positions": self.component_positions,
            "iterations": [
                {"depth": d, "value": v, "exact": e, "nodes": n, "seconds": round(s, 6)}
                for d, v, e, n, s in self.iterations
            ],
        }

    def __repr__(self) -> str:
        kind = "exact" if self.exact else f"depth {self.depth}"
        return (f"SearchResult(move={self.move!r}, value={self.value}, {kind}, rule={self.rule.value!r}, "
                f"nodes={self.nodes})")


def _quiescence(plies: Any) -> int:
    """Plies of captures beyond the horizon, checked."""
    if isinstance(plies, bool) or not isinstance(plies, int) or not 0 <= plies <= MAX_QUIESCENCE:
        raise SearchError(f"quiescence must be an integer 0..{MAX_QUIESCENCE} (plies of captures), got {plies!r}")
    return plies


class Searcher:
    """A search engine with its transposition table, tables and solved components.

    `tablebase`: a probe.Tablebase (or a directory). Which layers are read
    into memory for the search, smallest first:

    - `max_table_seeds` given: exactly those up to it, before the
      constructor returns;
    - `table_bytes` given: as many as fit in that many bytes, before it
      returns;
    - neither: as many as fit in `default_table_bytes()` (a quarter of the
      memory available), read by a background thread so that the first
      search does not wait. A layer becomes visible to the search only once
      read whole and checked; `wait_for_tables()` waits for all of them.

    A layer that cannot be read (damaged, swapped, removed while read) is
    left out of the search, which goes on without it as if it were not
    built: `left_out` says which and why, and `log` (default: standard
    error) is told each once. See solver.table_reader.

    A root whose own table exists is answered from it even when that table
    is not in memory, unless it has more than `max_table_seeds` seeds.
    `threads`: threads a search runs on (default: every core), splitting
    the principal line's nodes over the shared transposition table. Keep one Searcher for many
    searches: the transposition table and the component values carry over.

    `evaluation`: how a leaf beyond the horizon is scored: "learned" (the
    estimate of solver.evaluation, with the shipped weights or those of
    `weights_file`) or "zero" (an even split of the seeds left).
    `quiescence`: plies beyond the horizon in which captures are still
    searched (0: none), each leaf there keeping its estimate as the score
    of a quiet move.
    """

    def __init__(
        self,
        tablebase: Tablebase | str | os.PathLike[str] | None = None,
        hash_mb: float = DEFAULT_HASH_MB,
        max_table_seeds: int | None = None,
        table_bytes: int | None = None,
        component_limit: int = DEFAULT_COMPONENT_LIMIT,
        evaluation: str = "learned",
        weights_file: str | os.PathLike[str] | None = None,
        threads: int | None = None,
        quiescence: int = DEFAULT_QUIESCENCE,
        log: Callable[[str], None] | None = None,
    ) -> None:
        if evaluation not in EVALUATIONS:
            raise SearchError(f"evaluation must be one of {', '.join(EVALUATIONS)}, got {evaluation!r}")
        max_table_seeds = _whole_number("max_table_seeds", max_table_seeds, -1, index.MAX_SEEDS)  # -1: none
        table_bytes = _whole_number("table_bytes", table_bytes, 0)
        component_limit = _whole_number("component_limit", component_limit, 0, none=False)
        if log is not None and not callable(log):
            raise SearchError(f"log must be a function of one line or None, got {type(log).__name__}")
        self.evaluation = evaluation
        self.quiescence = _quiescence(quiescence)
        self.weights = load_weights(weights_file) if evaluation == "learned" else np.zeros(0)
        if tablebase is None or isinstance(tablebase, (str, bytes)) or hasattr(tablebase, "__fspath__"):
            tablebase = Tablebase(tablebase)
        if not isinstance(tablebase, Tablebase):
            raise SearchError(f"tablebase must be a Tablebase or a folder, got {type(tablebase).__name__}")
        self.tablebase = tablebase
        self.tt = _transposition_table(_table_entries(hash_mb))
        self.threads = _thread_count(threads)
        self.history = np.zeros((ROW, 49), dtype=np.int64)
        self.component_limit = component_limit
        self.max_table_seeds = index.MAX_SEEDS if max_table_seeds is None else max_table_seeds
        self._tt_cycles: str | None = None
        self.components = SolvedComponents()
        self._run: _Run | None = None  # the search in progress, which stop() stops
        self.tables = TableReader(tablebase, max_table_seeds, table_bytes, log)
        self._warm_up()

    def configure(self, threads: int | None = None, hash_mb: float | None = None,
                  quiescence: int | None = None) -> None:
        """Change the threads (None: every core), the transposition table's
        size in MiB (None: keep it; a new size starts an empty table) and the
        plies of captures beyond the horizon (None: keep them), between
        searches, keeping the tables read and the solved components."""
        count = _thread_count(threads)
        if quiescence is not None:
            self.quiescence = _quiescence(quiescence)
        if hash_mb is not None:
            entries = _table_entries(hash_mb)
            if entries != self.tt.shape[0]:
                self.tt = np.zeros((0, 3), dtype=np.uint64)  # the old one's memory goes first
                self.tt = _transposition_table(entries)
                self._tt_cycles = None
        self.threads = count

    def __repr__(self) -> str:
        return (f"Searcher({self.tablebase.directory!r}, hash_entries={self.tt.shape[0]}, threads={self.threads}, "
                f"tables_in_memory={self.table_layers})")

    def _warm_up(self):
        """Compile every kernel a search calls (or load it from numba's cache)
        now, so that a search's time limit is spent searching. Each compiled
        function is loaded on its first call, and on a fresh install compiled
        then: one first called inside a timed search spends its time there
        (seen in UCI on a cold cache: the first split node's store into the
        transposition table took 0.3 s of a 0.3 s move, the first packed
        position 1 s). So: a split search with a history, a position looked
        up and its component explored, a true-rule graph solved, then
        everything they left undone.
        """
        game = Game(Position.initial())
        game.play(game.legal_moves()[0])
        self.search(game, depth=SPLIT_DEPTH + 1, threads=2)
        self.known(game.position)
        # A small layer's component, explored one position deep ("too large"): the
        # opening's layer is too large to be explored at all.
        self.solve_component("0-0-0-0-1-0/0-0-0-0-0-1 S", limit=1)
        # The true rule's graph games (a search inside the tables): a small one, solved.
        true_rule_bounds(as_position("0-0-0-0-1-0/0-0-0-0-0-1 S"), (), self.tablebase.store.arrays())
        self.tablebase.warm_up()
        # What the warm-up stored goes: searches start as from a new Searcher.
        self.tt[:] = 0
        self._tt_cycles = None
        self.history[:] = 0
        # The background reader's histogram check too: loading its compiled code
        # holds the GIL (a search's clock and its Python steps wait on it).
        byte_histogram(np.zeros(1, dtype=np.int8))

    # Tables ----------------------------------------------------------------------

    @property
    def left_out(self) -> dict[int, Exception]:
        """{layer: the error}: damaged, swapped or vanished layers the search does without."""
        return self.tables.left_out

    @property
    def table_budget(self) -> int | None:
        """Bytes of tables read, when chosen by bytes (None: by seeds)."""
        return self.tables.budget

    def wait_for_tables(self, timeout: float | None = None) -> bool:
        """Wait until the tables read in the background are in memory; True when they are."""
        return self.tables.wait(timeout)

    @property
    def table_layers(self) -> list[int]:
        """Seed counts whose tables are in memory for the search."""
        return self.tablebase.loaded_layers()

    def _arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        return (*self.tablebase.store.arrays(), *self.components.arrays())

    def known(self, position: Position | str) -> int | None:
        """d of a position from the tables in memory or a solved component, else None."""
        position = as_position(position)
        mover, opponent = position.packed()
        if legal_mask(mover, opponent) == 0:
            return int(terminal_value(mover, opponent))
        value = known_value(mover, opponent, position.seeds, *self._arrays())
        return None if value == NOT_TERMINAL else int(value)

    def solve_component(self, position: Position | str, limit: int | None = None) -> tuple[str, int | None, int]:
        """Solve the positions reachable from `position` without a capture (split
        convention). Returns (status, value, positions); status "solved",
        "too large" or "missing table"."""
        position = as_position(position)
        mover, opponent = position.packed()
        flat, starts, loaded = self.tablebase.store.arrays()
        return self.components.solve(mover, opponent, position.seeds, flat, starts, loaded,
                                     int(limit or self.component_limit))

    # Searching -------------------------------------------------------------------

    def close(self) -> None:
        """Done with this Searcher (its Tablebase may be closed next): the
        background reader stops after the layer it is reading, silently."""
        self.tables.stop(timeout=0)

    def stop(self) -> None:
        """Stop the search in progress (from another thread): it returns what its
        finished iterations found, as when its time runs out."""
        run = self._run
        if run is not None:
            run.stop()

    def move_values(self, position: Position | Game | str, depth: int | None = None, time: float | None = None,
                    nodes: int | None = None, cycles: str = "own",
                    threads: int | None = None) -> list[MoveValue]:
        """Every legal move's value by search, as MoveValue records in sowing order.

        A move's value is the seeds it captures minus the value of the
        position it leads to, searched with `depth` - 1 plies, or a share of
        `time` / `nodes` each; a move that ends the game is worth what the
        end gives (exact). A move whose position the tables hold is valued
        from them at once (exact under the tables' convention: rule
        "split"). A Game's history counts for repetitions ("own" cycles). A
        move whose timed search finished no iteration is searched one ply
        (a few nodes) so that it has a value; under a node limit too small
        for one iteration its value is None.
        """
        game = position if isinstance(position, Game) else Game(as_position(position))
        current = game.position
        moves = game.legal_moves()
        share = max(1, len(moves))
        deadline = None if time is None else _time.perf_counter() + time
        values = []
        rule: Rule | str
        value: int | None
        for left, move in zip(range(len(moves), 0, -1), moves):
            captured = game.play(move)
            try:
                child, ended = game.position, None
                if game.is_over():
                    totals, reason = game.result(), game.end_reason
                    assert totals is not None and reason is not None, "a game that is over has its result"
                    value, exact, rule = ended_value(totals, current), True, Rule.parse(cycles)
                    repeats = reason == EndReason.REPETITION
                    ended = Outcome.ended(totals, reason)
                elif self.tablebase.has_layer(child.seeds) and (value := self._table_value(child)) is not None:
                    # The tables answer at once (a search would also work out a line).
                    value, exact, rule, repeats = captured - value, True, Rule.SPLIT, False
                else:
                    # The moves still to search share what is left of the time.
                    each = None if deadline is None else max(1e-3, (deadline - _time.perf_counter()) / left)
                    result = self.search(
                        game,
                        depth=None if depth is None else max(1, depth - 1),
                        time=each,
                        nodes=None if nodes is None else max(1, nodes // share),
                        cycles=cycles,
                        threads=threads,
                    )
                    if result.value is None and depth is None and nodes is None:
                        # Not one iteration in its share of the time (a loaded machine): one
                        # ply, a few nodes, so that every move has a value.
                        result = self.search(game, depth=1, cycles=cycles, threads=1)
                    value = None if result.value is None else captured - result.value
                    exact, rule, repeats = result.exact, result.rule, False
            finally:
                game.undo()
            values.append(MoveValue.of(current, move, captured, value, exact, rule, repeats, ended))
        return values

    def search_every_move(self, position: Position | Game | str, depth: int | None = None,
                          time: float | None = None, nodes: int | None = None, cycles: str = "own",
                          progress: Callable | None = None) -> SearchResult:
        """One root search that values every legal move (multi-PV): a
        SearchResult whose `moves` holds each move's MoveValue (sowing
        order), whose value is the best move's value and whose move is a
        move of that value. So the position's value, its best move and the
        moves marked best (report.best_of) always agree.

        A move that ends the game is valued by the end, one whose position
        the tables hold from them (exact, rule "split"); the others are
        searched together, depth after depth, each with a full window on
        the shared transposition table, `depth` plies from the position (the
        move and depth - 1 after it), until every value is exact or the
        limits run out; the values are those of the deepest depth every
        move finished (a move that finished none is searched one ply, so
        that it has a value unless a node limit is too small for it). A
        Game's history counts for repetitions under cycles="own". One
        thread. `progress(depth, value, exact, nodes, seconds)` after each
        depth.
        """
        check_limits(depth, time, nodes, cycles)
        game = position if isinstance(position, Game) else Game(as_position(position))
        current = game.position
        if current.is_over():
            raise GameOverError(f"the game is over in {current} ({current.terminal_rule()})")
        started = _time.perf_counter()
        end = None if time is None else started + time
        result = SearchResult(current, cycles)
        self._begin(cycles)
        default_rule = Rule.parse(cycles)
        settled: dict[str, MoveValue] = {}
        searched: list[tuple[str, int, int, Position]] = []  # (move, house, captured, child)
        for move in game.legal_moves():
            captured = game.play(move)
            try:
                child = game.position
                if game.is_over():
                    totals, reason = game.result(), game.end_reason
                    assert totals is not None and reason is not None, "a game that is over has its result"
                    settled[move] = MoveValue.of(current, move, captured, ended_value(totals, current), True,
                                                 default_rule, reason == EndReason.REPETITION,
                                                 Outcome.ended(totals, reason))
                elif self.tablebase.has_layer(child.seeds) and (value := self._table_value(child)) is not None:
                    settled[move] = MoveValue.of(current, move, captured, captured - value, True, Rule.SPLIT)
                else:
                    searched.append((move, HOUSE_LETTERS[current.to_move].index(move), captured, child))
            finally:
                game.undo()
        values: dict[str, tuple[int, bool, bool, list[int]]] = {}  # move: (value, exact, on_split, line)
        history = game.positions[:-1]
        run = _Run(self, current, history, cycles, result, progress, started, 1, end)
        self._run = run
        try:
            node_budget = UNLIMITED if nodes is None else nodes
            for iteration in range(1, (depth or MAX_PLY) + 1):
                found: dict[str, tuple[int, bool, bool, list[int]]] = {}
                # The best moves of the last depth first: their entries order the others.
                order = sorted(searched, key=lambda m: -values[m[0]][0] if m[0] in values else 0)
                for move, house, captured, child in order:
                    if move in values and values[move][1]:
                        found[move] = values[move]  # exact: not searched again
                        continue
                    budget = node_budget - result.nodes
                    if budget <= 0 or run.control[STOP] != 0:
                        break
                    run.path_mover[run.root + 1], run.path_opponent[run.root + 1] = child.packed()
                    since = run.root + 1 if captured > 0 else 0
                    run.pv_length[run.root + 1] = 0
                    score, proven, used, aborted, on_split, _ = run._kernel(
                        run.main, run.root + 1, iteration - 1, (-INFINITE, INFINITE), since, budget, 0)
                    result.nodes += int(used)
                    if aborted:
                        break
                    line = [house] + [int(h) for h in run.pv[run.root + 1, : run.pv_length[run.root + 1]]]
                    found[move] = (captured - int(score), bool(proven), bool(on_split), line)
                if len(found) < len(searched):
                    break  # this depth did not finish: the last one's values stand
                values = found
                result.depth = iteration
                if progress is not None and values:
                    best = max(v[0] for v in values.values())
                    progress(iteration, best, all(v[1] for v in values.values()), result.nodes,
                             _time.perf_counter() - started)
                if all(v[1] for v in values.values()):
                    break
        finally:
            run.close()
            self._run = None
        lines: dict[str, list[int]] = {}
        for move, house, captured, _ in searched:
            if move in values:
                value, exact, on_split, line = values[move]
                rule: Rule | str = Rule.SPLIT if on_split or cycles == "split" else Rule.TRUE
                lines[move] = line
                settled[move] = MoveValue.of(current, move, captured, value, exact, rule)
                continue
            # No depth finished in the limits: one ply (a few nodes) unless a node limit forbids it.
            value_of_child = None
            if nodes is None:
                game.play(move)
                try:
                    value_of_child = self.search(game, depth=1, cycles=cycles, threads=1).value
                finally:
                    game.undo()
            value_or_none = None if value_of_child is None else captured - value_of_child
            settled[move] = MoveValue.of(current, move, captured, value_or_none, False, default_rule)
            lines[move] = [house]
        result.moves = [settled[move] for move in game.legal_moves()]
        valued = [m for m in result.moves if m.value is not None]
        if valued:
            top = max(m.value for m in valued if m.value is not None)
            chosen = next(m for m in valued if m.value == top)
            result.value, result.move, result.exact = top, chosen.move, all(m.exact for m in valued)
            result.rule = chosen.rule
            result.source = "search" if searched else "table"
            result.line = (_letters(current, lines[chosen.move]) if chosen.move in lines else [chosen.move])
        else:
            result.move = current.legal_moves()[0]
        if result.exact:
            result.lower = result.upper = result.value
        result.seconds = _time.perf_counter() - started
        return result

    def _begin(self, cycles):
        """A search under `cycles` starts: the transposition table is emptied
        when it holds another convention's entries; move-ordering counts age."""
        if self._tt_cycles != cycles:
            if self._tt_cycles is not None:  # (a new table is empty)
                self.tt[:] = 0
            self._tt_cycles = cycles
        self.history //= 2

    def _table_value(self, position):
        """d of `position` from the tables (the tables' convention), or None
        when a layer it needs is missing or left out (a damaged one is left
        out here)."""
        if not self._tables_usable(position):
            return None
        try:
            return self.tablebase.value(position)
        except MissingTableError:
            return None
        except TablebaseClosedError:
            raise
        except (TableError, OSError) as error:
            self._leave_out(error, position.seeds)
            return None

    def _leave_out(self, error, seeds):
        """Do without the layer a table error names (else layer `seeds`) from now on."""
        named = failing_layer(error)
        self.tables.leave_out(seeds if named is None else named, error)

    def search(self, position: Position | Game | str, depth: int | None = None, time: float | None = None,
               nodes: int | None = None, cycles: str = "own", history: list | None = None, bounds: bool = False,
               progress: Callable | None = None, threads: int | None = None) -> SearchResult:
        """Search `position` (a Position, its notation, or a Game, whose history
        then counts for repetitions) and return a SearchResult.

        Limits: `depth` plies, `time` seconds, `nodes`; with none the search
        runs until its value is exact (which can take very long far above
        the tables), waiting at its deepest depth for layers the background
        reader still reads. The search stops as soon as the value is exact. A time
        limit is kept: the search returns within it (a stop flag the kernel
        reads every STOP_CHECK nodes), and no depth starts that the last two
        predict cannot finish.

        `threads` (default: the Searcher's): the threads each iteration is
        split over (see _Run), on the shared transposition table. A node
        limit searches on one thread, so that it is reproducible.

        `bounds`: when the value is not exact, search the deepest finished
        depth twice more, with every horizon leaf scored as the worst and
        then the best case for the mover (-n, +n seeds), which gives proven
        lower and upper bounds. They cost about three times the deepening;
        with a time limit, deepening stops at a quarter of it so that the
        bounds fit in the rest (a bound that does not finish in time is None).

        `progress`, if given, is called after each finished iteration as
        progress(depth, value, exact, nodes so far, seconds so far, the
        iteration's principal line as move letters).

        A root whose layer is built is answered from the tables (`source`
        "table", exact under the rule said), except under cycles="own" with a
        limit (depth, time or nodes) when searches_inside_tables(): its table
        value may rest on endless play, which the true rule ends with each
        side taking its own seeds, so the root is searched under the true
        rule with the game's history, the tables' values only the estimates
        of the horizon (`_search`'s through_tables). Its value is exact, rule
        "true", only when the search proves it.
        """
        check_limits(depth, time, nodes, cycles)
        history = _checked_history(history)
        threads = 1 if nodes is not None else (self.threads if threads is None else _thread_count(threads))
        game = None
        if isinstance(position, Game):
            game = position
            position = game.position
            if history is None:
                history = game.positions[:-1]
        position = as_position(position)
        if position.is_over():
            raise GameOverError(f"the game is over in {position} ({position.terminal_rule()})")
        started = _time.perf_counter()
        end = None if time is None else started + time
        result = SearchResult(position, cycles)
        result.threads = threads
        self._begin(cycles)

        limited = depth is not None or time is not None or nodes is not None
        through = limited and self.searches_inside_tables(position, cycles)
        if not through and self._answers_from_tables(position, None if time is None else started + time / 2):
            try:
                return self._from_tables(position, result, started, history, game, end)
            except MissingTableError:
                pass  # a child layer of a position outside the index is missing: search
            except TablebaseClosedError:
                raise
            except (TableError, OSError) as error:
                self._leave_out(error, position.seeds)  # a layer it needs is damaged: search without it
        run = _Run(self, position, history, cycles, result, progress, started, threads, end)
        run.through_tables = bool(through)
        run.until_exact = not limited
        self._run = run
        try:
            max_depth = depth or UNLIMITED_DEPTH
            node_budget = nodes if nodes is not None else UNLIMITED
            # Bounds cost two more searches of the deepest depth, with wide
            # windows: about three times what deepening took. With a time
            # limit, deepening gets a quarter of it.
            deadline = None if time is None else started + time * (BOUNDS_TIME_SHARE if bounds else 1.0)
            if cycles == "split" and self.component_limit > 0 and depth is None and self.known(position) is None:
                self._component_phase(run, position, max_depth, node_budget, deadline)
            if run.through_tables and self.component_limit > 0 and depth is None:
                self._repetition_phase(run, position, history, node_budget, deadline)
            if not result.exact:
                run.deepen(max_depth, node_budget, deadline)
            self._finish(run, result, bounds)
        finally:
            run.close()
            self._run = None
        return result

    def searches_inside_tables(self, position: Position | Game | str, cycles: str = "own") -> bool:
        """Whether a search of `position` (with a limit) searches under the
        true rule although the tables hold it, rather than answering from
        them: in "own" mode, when its layer is in memory (the search's
        estimates at the horizon are then the tables' values) and the true
        rule may change its table value (report.true_rule_may_change)."""
        position = position.position if isinstance(position, Game) else as_position(position)
        if cycles != "own" or not self.tablebase.is_loaded(position.seeds) or not self._tables_usable(position):
            return False
        return true_rule_may_change(self.known(position), position.seeds)

    def _answers_from_tables(self, position, wait_until=None):
        """Whether the root's own table answers it (read from the file when too
        large to hold). Within a time limit (`wait_until` given), only when
        tables_answer_in_time(seeds, wait_until). Never when the root's layer,
        or a layer one of its captures leads to, is left out."""
        seeds = position.seeds
        if not (self.tablebase.is_loaded(seeds) or (seeds <= self.max_table_seeds and self.tablebase.has_layer(seeds))):
            return False
        if not self._tables_usable(position):
            return False
        return wait_until is None or self.tables_answer_in_time(seeds, wait_until)

    def _tables_usable(self, position):
        """Whether neither the position's layer nor one its captures lead to is left out."""
        if not self.left_out:
            return True
        if position.seeds in self.left_out:
            return False
        return not any(captured and child.seeds in self.left_out
                       for child, captured in map(position.play_capture, position.legal_moves()))

    def reading_tables(self) -> bool:
        """Whether the background reader is still reading layers into memory."""
        return self.tables.reading()

    def tables_answer_in_time(self, seeds: int, deadline: float) -> bool:
        """Whether a root of `seeds` seeds can be answered from the tables within
        a time limit: its layer is in memory, or no background reader runs, or
        the layer is small (read whole at its first probe, as the reader,
        smallest first, would soon), or the reader brings it in by `deadline`
        (time.perf_counter(), waited for). Otherwise probes of its file would
        wait for HDF5, which the reader holds through each of its reads."""
        return self.tables.in_time(seeds, deadline)

    def _component_phase(self, run, position, max_depth, node_budget, deadline):
        """Most values are proven by alpha-beta in a few nodes; a value that rests
        on cycles is not, so its component is solved next (split convention)."""
        result, started = run.result, run.started
        first_deadline = None if deadline is None else started + (deadline - started) / 2
        # A component is at most the whole layer: spend at most a quarter of
        # its size on alpha-beta first.
        proof_nodes = min(node_budget, PROOF_NODES, max(1000, index.layer_size(position.seeds) // 4))
        run.deepen(max_depth, proof_nodes, first_deadline)
        if result.exact:
            return
        self.tables.wait_for(range(max(0, position.seeds - 15), position.seeds - 1), deadline)
        limit = self.component_limit
        if deadline is not None:
            limit = min(limit, max(10_000, int((deadline - _time.perf_counter()) * COMPONENT_RATE)))
        status, _, size = self.solve_component(position, limit)
        result.component_positions = size
        if status == "solved":
            result.source = "component"
            run.next_depth = 1

    def _repetition_phase(self, run, position, history, node_budget, deadline):
        """A root inside the tables under the true rule: bound its value with
        the game's history by solver.repetition's two graph games, within
        the component limit, the node limit (a position for a node) and
        REPETITION_RATE positions a second of the time left, an eighth of
        that when the root's layer alone is larger (only a small graph can
        fit, and a graph found too large wastes its exploring). Both bounds
        equal: the value is exact (rule "true") and no search is needed;
        else the bounds are kept for _finish, which keeps the value within
        them and never plays a move proven worse."""
        limit = min(self.component_limit, node_budget)
        if deadline is not None:
            limit = min(limit, int((deadline - _time.perf_counter()) * REPETITION_RATE))
        if limit < 2 * index.layer_size(position.seeds):
            limit //= REPETITION_SMALL_SHARE  # the whole graph will not fit: look for a small one only
        if limit < 1000:
            return
        store_flat, store_starts, store_loaded = self.tablebase.store.arrays()
        # Given up in time for the search to have a tenth of the time at least.
        graph_deadline = None if deadline is None else answer_deadline(run.started, deadline)
        bounds = true_rule_bounds(position, history or (), (store_flat, store_starts, store_loaded), limit,
                                  graph_deadline)
        result = run.result
        result.component_positions = bounds.positions
        if bounds.status != "solved":
            return
        run.true_bounds = bounds
        if bounds.exact:
            move = bounds.best_moves()[0]
            result.exact, result.value, result.move, result.rule = True, bounds.lower, move, Rule.TRUE
            result.source = "component"
            run.houses = [position.house_of(move)]

    def _finish(self, run, result, bounds):
        """The line, the bounds and the time of a searched result."""
        position = run.position
        result.line = _letters(position, run.houses)
        if result.exact:
            result.lower = result.upper = result.value
        elif bounds and result.depth > 0:
            result.lower = run.bound(1, result.depth)
            result.upper = run.bound(-1, result.depth)
        proven = run.true_bounds
        if proven is not None and not result.exact:
            # The true rule's graph bounds hold whatever the search saw.
            result.lower = proven.lower if result.lower is None else max(result.lower, proven.lower)
            result.upper = proven.upper if result.upper is None else min(result.upper, proven.upper)
            if result.value is not None:
                result.value = min(max(result.value, result.lower), result.upper)
            if result.move is not None and proven.moves[result.move][1] < proven.lower:
                # The search's move is proven worse than another: play the best proven one.
                result.move = max(proven.moves, key=lambda move: proven.moves[move])
                result.line = [result.move]
        if result.move is None:
            # Not even depth 1 finished within the limits: no value, and the
            # move the known values (tables, solved components) rank best when
            # they know every child, else the first legal one.
            result.move = self._move_by_known_values(position)
        result.seconds = _time.perf_counter() - run.started
        if result.exact:
            # The line is extended when asked for, stopping where a table answer's ranking would.
            deadline = None if run.end is None else max(answer_deadline(run.started, run.end), _time.perf_counter())
            result._extend = lambda line: self._extend_line(position, line, result.cycles, deadline)

    def _move_by_known_values(self, position):
        """The move whose seeds captured less its child's known value is the
        largest (the first legal move when a child's value is not known)."""
        moves = position.legal_moves()
        scored: list[tuple[int, int, str]] = []
        for move in moves:
            child, captured = position.play_capture(move)
            value = self.known(child)
            if value is None:
                return moves[0]
            scored.append((captured - value, -len(scored), move))
        return max(scored)[2]

    def _from_tables(self, position, result, started, history, game=None, end=None):
        # Choosing a winner's move that makes progress ranks the positions
        # ahead, which can take seconds in a large layer: within a time limit
        # it is given up at the limit (a capture, else a new position, is played).
        deadline = None if end is None else answer_deadline(started, end)
        if result.cycles == "own" and game is not None:
            # Perfect play with the true rule over the game played: a move that
            # repeats a position of the game ends it (Tablebase.best_move,
            # which ranks toward progress only when it must choose among
            # quiet best moves of a won position).
            chosen = self.tablebase.best_move(game, deadline=deadline)
            assert chosen is not None, "best_move returns None only when asked for no progress"
            if chosen.rule == Rule.TRUE:  # it ends the game (a repetition, 25 seeds, 24-24)
                result.value = result.lower = result.upper = chosen.value
                result.exact, result.rule, result.move, result.source = True, Rule.TRUE, chosen.move, "table"
                result.line = [chosen.move]
                result._extend = lambda line: line
                result.seconds = _time.perf_counter() - started
                return result
            choice, value = chosen.move, self.tablebase.value(position)
        else:
            first = self.tablebase.line(position, max_plies=1, deadline=deadline)  # a best move that makes progress
            assert first.value is not None, "the position is not over"
            choice, value = first.moves[0], first.value
        result.value = result.lower = result.upper = value
        result.exact = True
        # The table scores endless play 0. A value of +n or -n holds under the
        # true rule as well, unless a position before the root can repeat.
        taking_all = abs(value) == position.seeds
        fresh = not history or as_position(list(history)[-1]).seeds != position.seeds
        result.rule = Rule.TRUE if result.cycles == "own" and taking_all and fresh else Rule.SPLIT
        result.move = choice
        result.source = "table"
        result.line = [choice]
        # The rest of the line is worked out when asked for, within the search's
        # time limit if it had one (a line cut there keeps at least the move).
        child = position.play(choice)

        def extend(line):
            whole = self.tablebase.line(position, max_plies=MAX_PLY, deadline=deadline).moves
            if whole[:1] == [choice]:
                return whole
            return [choice] + ([] if child.is_over() else
                               self.tablebase.line(child, max_plies=MAX_PLY - 1, deadline=deadline).moves)

        result._extend = extend
        result.seconds = _time.perf_counter() - started
        return result

    def _extend_line(self, position, line, cycles, deadline=None):
        """Continue an exact principal line with best moves by known values until
        it leaves what is known, repeats, ends, reaches MAX_PLY plies or the
        clock passes `deadline`."""
        game = Game(position)
        for move in line:
            game.play(move)
        while not game.is_over() and len(line) < MAX_PLY:
            if deadline is not None and _time.perf_counter() > deadline:
                break
            current = game.position
            if self.tablebase.is_loaded(current.seeds):
                line = line + self.tablebase.line(current, max_plies=MAX_PLY - len(line), deadline=deadline).moves
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
    """Iterative deepening of one search: the path, the PV buffers, the result,
    the stop flag and, with more than one thread, the split search.

    Every kernel of the search reads `control`, the stop flag of its Clock
    (solver.clock: the time limit, stop(), a deepening's earlier deadline).

    Two threads or more split each iteration along its leftmost line (PV
    splitting, Marsland and Popowich): from the root down, every node with
    SPLIT_DEPTH plies or more left has its first move searched first, by the
    same rule; its other moves are then searched side by side, one kernel a
    move, each thread taking the next when free, with the window the moves
    done so far give. A node on the leftmost line has a full window, so
    none of them is cut off, and the moves of one node are all searched
    before its parent goes on. The tree is the one-thread kernel's: a move
    may be searched with a wider window than it would be alone (its elder
    brothers still running), which costs nodes, never a wrong value; an
    exact value is the same on any number of threads, and a bounds search
    (which cuts on proven entries only) gives the same bound. An estimate
    can differ a little, as the entries an estimate may cut on (right after
    a capture) arrive in another order.
    """

    def __init__(self, searcher, position, history, cycles, result, progress, started, threads, end):
        self.searcher = searcher
        self.position = position
        self.path_mover = np.zeros(MAX_HISTORY + MAX_PLY + 2, dtype=np.uint64)
        self.path_opponent = np.zeros_like(self.path_mover)
        self.root = 0
        if cycles == "own" and history:
            self.root = _fill_history(self.path_mover, self.path_opponent, history, position)
        self.path_mover[self.root], self.path_opponent[self.root] = position.packed()
        self.split = cycles == "split"
        self.until_exact = False  # no limit given: depth, time or nodes
        self.through_tables = False  # table values the true rule could change are searched through (see _search)
        self.true_bounds = None  # solver.repetition.Bounds of the root, when its graph was solved
        self.result = result
        self.progress = progress
        self.started = started
        self.threads = threads
        self.main = _Buffers(self.path_mover, self.path_opponent, searcher.history)  # the searching thread's
        self.pv, self.pv_length = self.main.pv, self.main.pv_length
        self.next_depth = 1
        self.layers_in = searcher.tables.layers_in()  # the layers in memory when the run last looked (bit mask)
        self.houses = []  # principal line of the deepest finished iteration (mover-view houses)
        self.clock = Clock(started, end)  # the stop flag every kernel reads, and its timers
        self.control = self.clock.control
        self._workers: _Workers | None = None  # the other threads of a split search
        self._lock = threading.Lock()  # the split nodes' results and the node count
        self._nodes = 0  # nodes of the split iteration in progress, every thread's
        self.end = end

    def stop(self):
        self.clock.stop()

    def close(self):
        self.clock.close()

    def _kernel(self, buffers, top, depth, window, since, budget, horizon):
        """The kernel from path[top] on one thread's _Buffers: (score, proven,
        nodes, aborted, on_split, repeat)."""
        searcher: Searcher = self.searcher
        b = buffers
        return _search(b.path_mover, b.path_opponent, self.root, top, depth, window[0], window[1], since, self.split,
                       searcher.tt, b.history, *searcher._arrays(), budget, self.control, b.pv, b.pv_length,
                       horizon, searcher.weights, b.top_moves, searcher.quiescence, self.through_tables)

    def iterate(self, depth, budget=UNLIMITED, horizon=0):
        """Search the root to `depth`: (score, proven, nodes, aborted, on_split).
        The kernel alone with one thread or a node budget (so that a node
        limit is reproducible); else split over the threads."""
        if self._workers is None or budget < UNLIMITED:
            whole = (-INFINITE, INFINITE)
            score, proven, nodes, aborted, on_split, _ = self._kernel(self.main, self.root, depth, whole, 0, budget,
                                                                      horizon)
            return score, proven, nodes, aborted, on_split
        self._nodes = 0
        score, proven, aborted, on_split, _ = self._split_node(self.root, depth, (-INFINITE, INFINITE), 0, horizon)
        return score, proven, self._nodes, aborted, on_split

    def _count(self, nodes):
        with self._lock:
            self._nodes += int(nodes)

    def _split_node(self, ply, depth, window, since, horizon):
        """The node at path[ply] of the leftmost line, to `depth` plies within
        `window`, `since` the ply of the line's last capture: (score, proven,
        aborted, on_split, repeat), its line in pv[ply], as the kernel would
        give them."""
        main = self.main
        if depth < SPLIT_DEPTH:
            score, proven, nodes, aborted, on_split, repeat = self._kernel(main, ply, depth, window, since,
                                                                           UNLIMITED, horizon)
            self._count(nodes)
            return score, proven, aborted, on_split, repeat
        # One node of the kernel: the node's score if no move of it needs a
        # search (a game end, a repetition, a table value, a cut, a horizon
        # leaf); else its moves, in the kernel's order, in main.top_moves.
        score, proven, nodes, aborted, on_split, repeat = self._kernel(main, ply, depth, window, since, 1, horizon)
        self._count(nodes)
        if not aborted:
            return score, proven, False, on_split, repeat
        if self.control[STOP] != 0:
            return 0, False, True, False, NO_REPETITION
        moves = _Moves(main.top_moves)
        count = len(moves.houses)
        node = _SplitNode(self, ply, depth, window, since, horizon, moves)
        # The eldest move first, split in turn; then the others side by side.
        self.path_mover[ply + 1], self.path_opponent[ply + 1] = moves.child_mover[0], moves.child_opponent[0]
        captured = int(moves.caps[0])
        child = self._split_node(ply + 1, depth - 1, (captured - window[1], captured - window[0]),
                                 ply + 1 if captured > 0 else since, horizon)
        node.take(0, child, self.pv[ply + 1, : self.pv_length[ply + 1]])
        if count > 1 and not node.done():
            node.search_rest(count, main)
        return node.finish()

    def deepen(self, max_depth, node_budget, deadline):
        """Iterations next_depth..max_depth until proven, the node budget
        (every thread's nodes) or the deadline, on the search's threads."""
        with self.clock.until(deadline) as to_the_end, self._split_threads():
            self._deepen(max_depth, node_budget, deadline, to_the_end)

    def _deepen(self, max_depth, node_budget, deadline, to_the_end):
        """The iterations of deepen(). `to_the_end`: the deadline is the
        search's own end, which stops the kernels: an iteration is then
        started even when the last two predict it cannot finish, and one cut
        short by the end gives the move it found best among the root's moves
        searched to the end (the first is the last iteration's best move, so
        that is a deeper look at it at least). Otherwise (a deadline before
        the end, after which more work follows) no iteration starts that is
        predicted to overrun it."""
        result = self.result
        spent: list[float] = []  # seconds of this deepening's iterations
        tables = self.searcher.tables
        while self.clock.running():
            # Every depth searched unproven while layers are still coming: a
            # search with no limit (until exact) waits for them, and those
            # near the root start it afresh.
            if self.next_depth > max_depth and (result.exact or not self._wait_for_tables(deadline, node_budget)):
                break
            if tables.layers_in() != self.layers_in:
                # Tables arrived from the background reader (since the last
                # iteration, of this deepening or an earlier one of the run).
                # Near the root, a shallow iteration may now prove what the
                # deep ones could not, and entries stored without them would
                # cut it with estimates: start afresh. Far below the root's
                # seeds, the search seldom reaches them: go on deepening
                # (starting over there threw a move's work away whenever a
                # layer came in, for the first tens of seconds of a game).
                arrived = tables.layers_in() & ~self.layers_in
                self.layers_in = tables.layers_in()
                if arrived >> max(0, self.position.seeds - ARRIVAL_REACH):
                    # The move-ordering history learned without them goes
                    # too: it ordered for estimates, and a proof at a
                    # shallow depth needs the moves that reach the tables
                    # first (seen: 811 nodes at depth 22 from an empty
                    # history, 28,394 at depth 35 from one left by a search
                    # without layers 1..12).
                    self.next_depth, spent = 1, []
                    self.searcher.tt[:] = 0
                    self.searcher.history[:] = 0
            if self.next_depth > max_depth:
                break  # what arrived was far below the root
            budget = node_budget - result.nodes
            if budget <= 0:
                break
            if not self.clock.starts_another(spent, deadline, to_the_end):
                break
            iteration = self.next_depth
            tick = _time.perf_counter()
            self._first_at_root()
            self.pv_length[self.root] = 0
            score, proven, used, aborted, on_split = self.iterate(iteration, budget if node_budget < UNLIMITED
                                                                  else UNLIMITED)
            result.nodes += int(used)
            if aborted:
                if to_the_end and self.clock.ended() and self.pv_length[self.root] > 0:
                    self._cut_short(int(score))
                break
            seconds = _time.perf_counter() - tick
            spent.append(seconds)
            self.next_depth = iteration + 1
            result.value = int(score)
            result.exact = bool(proven)
            if not self.split:
                result.rule = Rule.SPLIT if on_split else Rule.TRUE
            result.depth = iteration
            self.houses = [int(h) for h in self.pv[self.root, : self.pv_length[self.root]]]
            result.move = HOUSE_LETTERS[self.position.to_move][self.houses[0]]
            result.iterations.append((iteration, int(score), bool(proven), int(used), seconds))
            if self.progress is not None:
                self.progress(iteration, int(score), bool(proven), result.nodes, _time.perf_counter() - self.started,
                              _letters(self.position, self.houses))
            if proven:
                break

    def _first_at_root(self):
        """Have the next iteration search the last one's best move first. A cut
        short iteration gives the best of the root moves it searched to the
        end (_cut_short), which is then at least a deeper look at that move:
        were another searched first (the move of a root entry stored deeper,
        or proven in an earlier search with another line above), the end
        could fall while the best move was still searched and give that one,
        however bad (issue 37's missed saves: a move the tables value -9
        played for one valued +9)."""
        if self.houses:
            tt = self.searcher.tt
            tt_prefer_move(tt, np.uint64(tt.shape[0] - 1), self.path_mover[self.root],
                           self.path_opponent[self.root], self.houses[0])

    def _wait_for_tables(self, deadline, node_budget):
        """In a search with no limit (until exact), wait while it is not
        stopped until the background reader has read its layers; whether it
        brought one the run has not seen. Under any limit: False at once."""
        if not self.until_exact or deadline is not None or node_budget < UNLIMITED:
            return False
        tables = self.searcher.tables
        while tables.reading() and self.clock.running():
            tables.wait(0.05)
        return tables.layers_in() != self.layers_in

    def _cut_short(self, score):
        """Take the best root move of an iteration the search's end cut short
        (its value an estimate at that depth; `depth` stays the deepest
        finished iteration's)."""
        result = self.result
        result.value, result.exact = score, False
        self.houses = [int(h) for h in self.pv[self.root, : self.pv_length[self.root]]]
        result.move = HOUSE_LETTERS[self.position.to_move][self.houses[0]]
        result.cut_short = True

    @contextlib.contextmanager
    def _split_threads(self):
        """The other threads of the split search, for the duration of a block."""
        if self.threads > 1:
            self._workers = _Workers(self, self.threads - 1)
        try:
            yield
        finally:
            if self._workers is not None:
                self._workers.close()
                self._workers = None

    def bound(self, horizon, depth):
        """A proven lower (horizon 1) or upper (horizon -1) bound on the root
        value from a search to `depth` whose horizon leaves are scored as the
        worst or best case for the root's mover; None when stopped first."""
        with self._split_threads():
            score, _, used, aborted, _ = self.iterate(depth, horizon=horizon)
        self.result.nodes += int(used)  # counted, but not an iteration of its own
        return None if aborted else int(score)


class _Buffers:
    """What one thread's kernel writes: its path, its principal lines, the
    moves of a node it stopped in (top_moves) and its history counts (the
    main thread's are the Searcher's; a worker's start as a copy of them:
    counts shared by threads would bounce between their caches at every
    cutoff)."""

    def __init__(self, path_mover, path_opponent, history):
        self.path_mover, self.path_opponent, self.history = path_mover, path_opponent, history
        rows = len(path_mover)
        self.pv = np.zeros((rows, MAX_PLY + 2), dtype=np.int64)
        self.pv_length = np.zeros(rows, dtype=np.int64)
        self.top_moves = np.zeros((ROW + 1, 4), dtype=np.uint64)


class _Moves:
    """A split node's moves in the kernel's order, copied out of top_moves."""

    def __init__(self, top_moves):
        count = int(top_moves[ROW, 0])
        self.houses = top_moves[:count, 0].astype(np.int64)
        self.caps = top_moves[:count, 1].astype(np.int64)
        self.child_mover = top_moves[:count, 2].copy()
        self.child_opponent = top_moves[:count, 3].copy()


class _SplitNode:
    """A node of the leftmost line whose moves after the first are searched
    side by side: its best score so far, how it was found, and the moves
    still to search. Its fields change under the run's lock."""

    def __init__(self, run, ply, depth, window, since, horizon, moves):
        self.run, self.ply, self.depth, self.window, self.since, self.horizon = run, ply, depth, window, since, horizon
        self.moves = moves
        self.best, self.best_move = -INFINITE, NO_MOVE
        self.proven, self.on_split, self.repeat = True, False, NO_REPETITION
        self.aborted = False
        self.cut = False  # a move reached beta (the score is a lower bound resting on it alone)
        self.next = 1  # the next move to hand out
        self.last = 0  # the last move to hand out
        self.back = 0  # moves searched (or skipped) and taken back
        self.finished = threading.Event()  # every move is back

    def done(self):
        return self.aborted or self.cut

    def take(self, i, child, line):
        """The score of move i (the child's (score, proven, aborted, on_split,
        repeat), its line), merged as the kernel merges a child's result."""
        run, ply = self.run, self.ply
        score, proven, aborted, on_split, repeat = child
        if aborted:
            self.aborted = True
            return
        if self.cut:
            return
        value = int(self.moves.caps[i]) - int(score)
        self.repeat = min(self.repeat, int(repeat))
        if value > self.best:
            self.best, self.best_move = value, int(self.moves.houses[i])
            run.pv[ply, 0] = self.best_move
            run.pv[ply, 1 : len(line) + 1] = line
            run.pv_length[ply] = len(line) + 1
        if self.best >= self.window[1]:
            self.cut = True
            self.proven, self.on_split = bool(proven), bool(on_split)
            if self.moves.caps[i] == 0:
                house = int(self.moves.houses[i])
                run.main.history[house, house_seeds(run.path_mover[ply], house)] += self.depth * self.depth
            return
        self.proven = self.proven and bool(proven)
        self.on_split = self.on_split or bool(on_split)

    def search_rest(self, count, main):
        """Moves 1..count-1: the workers and this thread take them one by one;
        returns when all are back."""
        self.last = count - 1
        workers = self.run._workers
        assert workers is not None, "a split node without workers"
        for _ in range(min(workers.count, count - 2)):
            workers.jobs.put(self._work)
        self._work(main)
        self.finished.wait()

    def _work(self, buffers):
        """Search moves of this node with one thread's buffers until none is left."""
        run, ply, moves = self.run, self.ply, self.moves
        path_mover, path_opponent = buffers.path_mover, buffers.path_opponent
        if buffers is not run.main:
            path_mover[: ply + 1] = run.path_mover[: ply + 1]
            path_opponent[: ply + 1] = run.path_opponent[: ply + 1]
        while True:
            with run._lock:
                i = self.next
                if i > self.last:
                    return
                self.next += 1
                skip = self.done()
                low = max(self.window[0], self.best)
            if not skip:
                path_mover[ply + 1], path_opponent[ply + 1] = moves.child_mover[i], moves.child_opponent[i]
                captured = int(moves.caps[i])
                since = ply + 1 if captured > 0 else self.since
                high = self.window[1]
                if high - low > 1:
                    # A null window first, as the kernel does below the first move.
                    child = run._kernel(buffers, ply + 1, self.depth - 1, (captured - low - 1, captured - low), since,
                                        UNLIMITED, self.horizon)
                    with run._lock:
                        run._nodes += int(child[2])
                        value = captured - int(child[0])
                        search_again = not child[3] and low < value < high
                        if search_again:
                            low = max(self.window[0], self.best)
                            search_again = not self.done()
                else:
                    search_again = True
                if search_again:
                    child = run._kernel(buffers, ply + 1, self.depth - 1, (captured - high, captured - low), since,
                                        UNLIMITED, self.horizon)
                    with run._lock:
                        run._nodes += int(child[2])
                score, proven, _, aborted, on_split, repeat = child
                with run._lock:
                    line = buffers.pv[ply + 1, : buffers.pv_length[ply + 1]].copy()
                    self.take(i, (score, proven, aborted, on_split, repeat), line)
            with run._lock:
                self.back += 1
                if self.back == self.last:
                    self.finished.set()

    def finish(self):
        """(score, proven, aborted, on_split, repeat) of the node, stored in
        the transposition table as the kernel stores it."""
        run, ply = self.run, self.ply
        if self.aborted:  # the best of the moves searched to the end, as the kernel gives it
            return self.best if self.best_move != NO_MOVE else 0, False, True, False, NO_REPETITION
        if self.repeat >= ply:
            searcher = run.searcher
            bound = LOWER if self.cut else (EXACT if self.best > self.window[0] else UPPER)
            tt_store(searcher.tt, np.uint64(searcher.tt.shape[0] - 1), run.path_mover[ply], run.path_opponent[ply],
                     self.best, bound, _stored_depth(self.proven, self.depth, self.horizon), self.best_move,
                     self.on_split)
        return self.best, self.proven, False, self.on_split, self.repeat


class _Workers:
    """The threads beside the searching one in a split search: each takes jobs
    (a split node's _work) from one queue, with buffers of its own."""

    def __init__(self, run, count):
        self.count = count
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.threads = []
        for _ in range(count):
            buffers = _Buffers(run.path_mover.copy(), run.path_opponent.copy(), run.searcher.history.copy())
            thread = threading.Thread(target=self._serve, args=(buffers,), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _serve(self, buffers):
        while True:
            job = self.jobs.get()
            if job is None:
                return
            job(buffers)

    def close(self):
        for _ in self.threads:
            self.jobs.put(None)
        for thread in self.threads:
            thread.join()


def _table_entries(hash_mb):
    """Entries of a transposition table of at most `hash_mb` MiB (a power of two)."""
    if isinstance(hash_mb, bool) or not isinstance(hash_mb, (int, float)) or not 0 < hash_mb < float("inf"):
        raise SearchError(f"hash_mb must be a positive number of MiB, got {hash_mb!r}")
    entries = 1 << max(1, int(hash_mb * (1 << 20) // 24).bit_length() - 1)
    available = available_memory()
    if 24 * entries > available:
        raise SearchError(f"a transposition table of {hash_mb:g} MiB does not fit in the "
                          f"{available / 2**20:,.0f} MiB of memory available")
    return entries


def _transposition_table(entries):
    """An empty transposition table of `entries` entries."""
    tt = np.zeros((entries, 3), dtype=np.uint64)
    tt.fill(0)  # its memory's first touch, here rather than on a search's clock
    return tt


def _thread_count(threads):
    if threads is None:
        return max(1, os.cpu_count() or 1)
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)) or threads < 1:
        raise SearchError(f"threads must be a positive integer, got {threads!r}")
    return int(threads)


def _checked_history(history):
    """The positions played before the root, oldest first, as a list of Positions."""
    if history is None:
        return None
    if isinstance(history, (str, bytes)) or not isinstance(history, Iterable):
        raise SearchError(f"history must be a list of positions (oldest first), got {type(history).__name__}")
    return [as_position(earlier) for earlier in history]


def _whole_number(name, value, low, high=None, none=True):
    """`value` checked to be an integer in low..high (None allowed when `none`)."""
    if value is None and none:
        return None
    if (isinstance(value, bool) or not isinstance(value, (int, np.integer))
            or value < low or (high is not None and value > high)):
        wanted = f"an integer {low}..{high}" if high is not None else f"an integer {low} or more"
        raise SearchError(f"{name} must be {wanted}{' or None' if none else ''}, got {value!r}"[:200])
    return int(value)


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


def search(
    position: Position | Game | str,
    depth: int | None = None,
    time: float | None = None,
    nodes: int | None = None,
    cycles: str = "own",
    tablebase: Tablebase | str | os.PathLike[str] | None = None,
    history: list | None = None,
    bounds: bool = False,
    **options: Any,
) -> SearchResult:
    """Search `position` once with a fresh Searcher (see Searcher.search);
    `options` go to the Searcher (hash_mb, max_table_seeds, threads, ...)."""
    return Searcher(tablebase, **options).search(position, depth=depth, time=time, nodes=nodes, cycles=cycles,
                                                 history=history, bounds=bounds)


__all__ = ["SearchError", "SearchResult", "Searcher", "default_table_bytes", "search"]
