"""Naive reference of the Abapa rules, written straight from RULES.md.

Nothing here is fast or clever, and nothing is imported from ``solver``: the
numba kernels are tested against these functions, so they must be obviously
right rather than quick. Sowing moves one seed at a time.

A board is a sequence of 12 ints seen from the side to move ("mover view"):
houses 0..5 are the mover's in sowing order, 6..11 the opponent's, and sowing
runs 0, 1, ..., 11, 0, ... A move is one of the mover's houses 0..5.
"""

HOUSES = 12
ROW = 6
MOVER_HOUSES = range(0, ROW)
OPPONENT_HOUSES = range(ROW, HOUSES)
WINNING_STORE = 25  # a player with 25 or more captured seeds has won
DRAWN_STORE = 24  # 24-24 is a draw


def _check_board(board):
    if len(board) != HOUSES or any(seeds < 0 for seeds in board):
        raise ValueError(f"a board is 12 non-negative seed counts, got {board!r}")


def naive_sow(board, house):
    """Sow the seeds of the mover's `house`, one seed at a time; capture nothing.

    Returns ``(new_board, last)``: the board after sowing, as a list in the same
    (mover) view, and the house 0..11 that received the last seed. The origin
    house is skipped on every lap, so it is always empty afterwards (rule 2).

    >>> naive_sow([4] * 12, 2)
    ([4, 4, 0, 5, 5, 5, 5, 4, 4, 4, 4, 4], 6)
    """
    _check_board(board)
    if house not in MOVER_HOUSES or board[house] == 0:
        raise ValueError(f"house {house} is not a non-empty house of the mover")
    new_board = list(board)
    in_hand = new_board[house]
    new_board[house] = 0
    current = house
    while in_hand > 0:
        current = (current + 1) % HOUSES
        if current == house:
            continue  # rule 2: the origin house is skipped
        new_board[current] += 1
        in_hand -= 1
    return new_board, current


def _feeds(board, house):
    """Whether sowing `house` puts at least one seed on the opponent's side."""
    new_board, _ = naive_sow(board, house)
    return sum(new_board[h] for h in OPPONENT_HOUSES) > 0


def naive_legal_moves(board):
    """The mover's legal houses 0..5, in increasing order.

    A house is legal when it is non-empty (rule 1); when the opponent's side is
    empty, it must also put at least one seed there (rule 5, feeding).

    >>> naive_legal_moves([0, 0, 0, 1, 0, 6, 0, 0, 0, 0, 0, 0])
    [5]
    """
    _check_board(board)
    moves = [house for house in MOVER_HOUSES if board[house] > 0]
    if sum(board[h] for h in OPPONENT_HOUSES) == 0:
        moves = [house for house in moves if _feeds(board, house)]
    return moves


def naive_play(board, house):
    """Play the mover's `house`: sow, then capture (rules 1-4).

    Returns ``(captured, child)``: the seeds the mover captured and the board
    after the move seen from the other side (the opponent is to move next), as a
    tuple: ``child = new[6:12] + new[0:6]``. Legality (rule 5) is not checked.

    >>> naive_play([0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0], 5)
    (2, (0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    """
    new_board, last = naive_sow(board, house)
    taken = []
    current = last
    while current in OPPONENT_HOUSES and new_board[current] in (2, 3):
        taken.append(current)
        current -= 1
    captured = sum(new_board[h] for h in taken)
    if captured == sum(new_board[h] for h in OPPONENT_HOUSES):
        # rule 4, grand slam: taking every seed of the opponent captures nothing
        # (this also covers the case where nothing was taken at all)
        captured = 0
        taken = []
    for h in taken:
        new_board[h] = 0
    return captured, tuple(new_board[ROW:] + new_board[:ROW])


def naive_terminal_value(board):
    """Value d for the mover if the game ends before he moves, else None.

    Rule 6: the mover's side is empty, the opponent takes the seeds on his side:
    ``-n``. Rule 5: the opponent's side is empty and no move feeds him, the mover
    takes every seed: ``+n``. With no seed at all the value is 0.

    >>> naive_terminal_value([0] * 6 + [1, 2, 0, 0, 0, 0])
    -3
    >>> naive_terminal_value([1, 1, 0, 0, 0, 0] + [0] * 6)
    2
    >>> naive_terminal_value([4] * 12) is None
    True
    """
    _check_board(board)
    if naive_legal_moves(board):
        return None
    seeds = sum(board)
    if sum(board[h] for h in MOVER_HOUSES) == 0:
        return -seeds  # rule 6
    return seeds  # rule 5: the opponent's side is empty and nothing feeds it


def _game_over(board, stores):
    mover_store, opponent_store = stores
    if mover_store >= WINNING_STORE or opponent_store >= WINNING_STORE:
        return True
    if mover_store == DRAWN_STORE and opponent_store == DRAWN_STORE:
        return True
    return not naive_legal_moves(board)


def naive_perft(board, depth, stores=(0, 0)):
    """Number of leaves `depth` plies below `board`.

    `stores` is ``(seeds captured by the mover, seeds captured by the opponent)``.
    A node where the game is over (no legal move, 25 or more captured by either
    side, or 24-24) has no children; depth 0 counts the node itself.

    >>> [naive_perft([4] * 12, depth) for depth in range(4)]
    [1, 6, 36, 190]
    """
    if depth == 0:
        return 1
    if _game_over(board, stores):
        return 0
    mover_store, opponent_store = stores
    leaves = 0
    for house in naive_legal_moves(board):
        captured, child = naive_play(board, house)
        leaves += naive_perft(child, depth - 1, (opponent_store, mover_store + captured))
    return leaves


def all_boards(n, houses=HOUSES):
    """Every tuple of `houses` non-negative ints summing to `n`, in lexicographic order.

    There are C(n + 11, 11) boards of 12 houses with n seeds.

    >>> list(all_boards(1, houses=3))
    [(0, 0, 1), (0, 1, 0), (1, 0, 0)]
    """
    if houses == 1:
        yield (n,)
        return
    for first in range(n + 1):
        for rest in all_boards(n - first, houses - 1):
            yield (first,) + rest


def in_index(board):
    """Whether `board` belongs to the tables' index.

    Boards where all six opponent houses are occupied are left out: after any
    move the previous mover's origin house is empty, so they never occur in a
    game (except at the opening).

    >>> in_index([4] * 12), in_index([4] * 11 + [0])
    (False, True)
    """
    return not all(board[h] > 0 for h in OPPONENT_HOUSES)
