"""The search's kernel: fail-soft negamax alpha-beta from one node, written
as one numba function with an explicit stack (`alpha_beta`), and its
transposition table (`tt_probe`, `tt_store`, `tt_prefer_move`,
`tt_unpack`, `tt_on_split`). solver.search_run drives it, depth after
depth and over threads; solver.search is the API above both.

Exactness is tracked node by node: a score is *proven* when it rests only on
game ends, repetitions and table values, never on a horizon leaf. The root
value is exact when it is proven.

Graph-history interaction: a score that used a repetition of a position
above the node (or before the root) depends on the path, so it is never
stored in the transposition table. A score that used only repetitions of the
node itself or of positions below it is the value of the game started at the
node, and is stored. In "split" mode any mix of such stored values and
first-cycle scores is exact (see the docstring of `alpha_beta` for why). In
"own" mode the value of a game started at a node differs from its value
under a longer history, so a proven entry cuts the search only at a node
just after a capture (no earlier position can come back there); elsewhere
it orders moves only. A depth-limited entry (an estimate) cuts, as an
estimate, only just after a capture too: elsewhere it could hide for good a
proof that a repetition of the line gives.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from . import index
from .clock import DEADLINE, STOP, STOPPED
from .evaluation import evaluate_and_threat
from .intrinsics import monotonic_ns, prefetch_row
from .layers import known_value
from .limits import MAX_PLY
from .rules import NOT_TERMINAL, ROW, board_seeds, house_seeds, legal_mask, play, row_seeds, terminal_value

INFINITE = 1000  # beyond any score (|d| <= 48)
NO_REPETITION = 1 << 40
PROVEN = 255  # stored depth of a proven score: good at any depth
EXACT, LOWER, UPPER = 3, 1, 2
NO_MOVE = 7
NO_SCOUT, RESEARCH = 1 << 20, (1 << 20) + 1  # beyond any window: a node's move not scouted, or searched again
STOP_CHECK = 1024  # nodes between two looks at the stop flag (a few microseconds of search)

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
def entry_depth(proven, remaining, horizon):
    """The depth an entry is stored with: PROVEN, the depth searched, or 0 for
    an unproven score of a bounds search (horizon leaves at -n or +n: it
    orders moves, and never cuts, since depth-limited entries cut only at
    depth 1 or more) or of a leaf beyond the horizon that tried its captures."""
    if proven:
        return PROVEN
    return max(remaining, 0) if horizon == 0 else 0


@njit(cache=True, nogil=True)
def alpha_beta(
    path_mover, path_opponent, root, top, depth, alpha_top, beta_top, since_top, split, tt, history,
    flat, starts, loaded, partial, partial_starts, max_nodes, control, pv, pv_length, horizon, weights, top_moves,
    quiescence, through_tables,
):
    """Fail-soft alpha-beta from path[top] to `depth` plies, window
    (alpha_top, beta_top).

    path[root] is the search's root and path[0:root] holds the positions
    played before it since the last capture (one per ply, oldest first);
    they count for repetitions. `top` is the root, or a node of the root's
    tree at ply `top` (the split search of search_run.SearchRun starts kernels there, with
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
                                 entry_depth(score_proven, remaining[ply], horizon), best_move[ply], score_split)
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
                                 entry_depth(score_proven, remaining[ply], horizon), best_move[ply], score_split)
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


__all__ = ["DATA_BITS", "EXACT", "INFINITE", "LOWER", "NO_MOVE", "NO_REPETITION", "PROVEN", "UPPER", "alpha_beta",
           "entry_depth", "tt_on_split", "tt_prefer_move", "tt_probe", "tt_store", "tt_unpack"]
