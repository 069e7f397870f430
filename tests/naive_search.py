"""A pure-Python reference for the search: negamax over the game that stops
at the first repeated position, with table values below the root's layer.

It follows RULES.md directly and keeps the whole path, so it is exact for
both repetition conventions and only usable on small positions.
"""

from naive import naive_legal_moves, naive_play, naive_terminal_value


class TooLarge(Exception):
    """The reference tree is larger than the budget it was given."""


def naive_search_value(board, lower_value, cycles="split", history=(), budget=200_000):
    """d of `board` (mover view) in the first-repetition game.

    `lower_value(board)` gives d of a board reached by a capture. `history`
    holds the boards played before `board` since the last capture, oldest
    first, each seen from the side that was to move then. At a repetition
    (same board, same side to move) the line scores 0 ("split") or the
    mover's seeds minus the opponent's ("own").
    """
    calls = [0]

    def value(node, path, root=False):
        calls[0] += 1
        if calls[0] > budget or len(path) > 150:
            raise TooLarge
        terminal = naive_terminal_value(list(node))
        if terminal is not None:
            return terminal
        if not root and node in path[-2::-2]:  # the root is not a repetition
            return 0 if cycles == "split" else sum(node[:6]) - sum(node[6:])
        best = None
        for house in naive_legal_moves(list(node)):
            captured, child = naive_play(list(node), house)
            if captured:
                score = captured - lower_value(child)
            else:
                score = -value(child, path + [node])
            best = score if best is None else max(best, score)
        return best

    return value(tuple(board), [tuple(b) for b in history], root=True)


def naive_estimate(board, depth, leaf, table_value, table_seeds, quiescence=0):
    """d estimated by a plain negamax to `depth` plies from `board` (mover view).

    A position after the root with at most `table_seeds` seeds has its table
    value `table_value(board)`; a leaf at the horizon scores `leaf(board)`,
    and for `quiescence` plies beyond it a leaf may also capture: its score
    is the best of `leaf(board)` (a quiet move) and each capture's seeds
    minus its child's score. No repetition is looked for (callers search
    too shallow for one).
    """

    def value(node, remaining, root=False):
        terminal = naive_terminal_value(list(node))
        if terminal is not None:
            return terminal
        if not root and sum(node) <= table_seeds:
            return table_value(node)
        if remaining <= 0:
            best = leaf(node)
            if -remaining >= quiescence:
                return best
        else:
            best = None
        for house in naive_legal_moves(list(node)):
            captured, child = naive_play(list(node), house)
            if remaining <= 0 and not captured:
                continue
            score = captured - value(tuple(child), remaining - 1)
            best = score if best is None else max(best, score)
        return best

    return value(tuple(board), depth, root=True)


def naive_true_value(board, history=(), budget=200_000, memo=None):
    """d of `board` (mover view) under the true rule all the way down: the
    first-repetition game with each side taking its own seeds, where a
    capture leads to a position valued the same way with no history (no
    earlier position can repeat after a capture). No table is used, so it is
    exact where the tables' convention is not; `memo` keeps the values of
    positions reached by a capture between calls. Raises TooLarge beyond
    `budget` calls of naive_search_value's kind per position."""
    memo = {} if memo is None else memo

    def fresh(child):
        key = tuple(child)
        if key not in memo:
            memo[key] = naive_search_value(list(key), fresh, "own", budget=budget)
        return memo[key]

    return naive_search_value(board, fresh, "own", history=history, budget=budget)
