"""Tests of the naive references themselves (tests/naive.py, tests/naive_solver.py).

The numba kernels are tested against these references, so the references get
their own checks: hand-worked positions, perft numbers from another engine,
conservation properties, and the solved values checked both against the
equation that defines them and against a second, unrelated algorithm.
"""

from math import comb

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import (
    all_boards,
    in_index,
    naive_legal_moves,
    naive_perft,
    naive_play,
    naive_sow,
    naive_terminal_value,
)
from naive_solver import LayerMoves, naive_layer, naive_solve, naive_value

FAST_LAYERS = range(0, 7)  # solved in about a second in pure Python
SLOW_LAYERS = range(7, 9)  # several seconds each


def board(mover, opponent):
    """A board from the mover's six houses and the opponent's six houses."""
    assert len(mover) == 6 and len(opponent) == 6
    return tuple(mover) + tuple(opponent)


EMPTY_ROW = (0, 0, 0, 0, 0, 0)


@st.composite
def boards(draw, max_seeds=48):
    """A board with at most `max_seeds` seeds (the real game never has more than 48)."""
    houses = draw(st.lists(st.integers(0, max_seeds), min_size=12, max_size=12))
    while sum(houses) > max_seeds:
        houses[houses.index(max(houses))] //= 2
    return tuple(houses)


@st.composite
def boards_and_moves(draw):
    houses = list(draw(boards()))
    house = draw(st.integers(0, 5))
    if houses[house] == 0:
        houses[house] = draw(st.integers(1, 48 - min(47, sum(houses))))
    return tuple(houses), house


# ---------------------------------------------------------------- sowing


def test_sow_skips_origin_on_every_lap():
    # 12 seeds: one in each of the 11 other houses, the origin skipped, the 12th in house 1.
    assert naive_sow(board((12, 0, 0, 0, 0, 0), EMPTY_ROW), 0) == ([0, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], 1)
    # 23 seeds: two full laps of 11, then one more seed.
    assert naive_sow(board((23, 0, 0, 0, 0, 0), EMPTY_ROW), 0) == ([0, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2], 1)
    # 11 seeds from house 5 end in house 4, just before the origin.
    assert naive_sow(board((0, 0, 0, 0, 0, 11), EMPTY_ROW), 5) == ([1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1], 4)


def test_sow_rejects_empty_or_foreign_house():
    with pytest.raises(ValueError):
        naive_sow([0] * 12, 0)
    with pytest.raises(ValueError):
        naive_sow([1] * 12, 6)


@given(boards_and_moves())
def test_sow_matches_lap_arithmetic(board_and_move):
    # A second derivation of sowing: every house but the origin gets seeds // 11,
    # and the seeds % 11 houses that follow the origin one more.
    start, house = board_and_move
    seeds = start[house]
    expected = list(start)
    expected[house] = 0
    others = [(house + step) % 12 for step in range(1, 12)]
    for h in others:
        expected[h] += seeds // 11
    for h in others[: seeds % 11]:
        expected[h] += 1
    new_board, last = naive_sow(start, house)
    assert new_board == expected
    assert last == others[(seeds - 1) % 11]
    assert sum(new_board) == sum(start)


# ---------------------------------------------------------------- captures


def test_capture_chain_walks_back_over_two_and_three():
    # House 5 sows 6, 7, 8 -> 2, 3, 2: all three taken; house 9 (1 seed) is left, so no grand slam.
    captured, child = naive_play(board((0, 0, 0, 0, 0, 3), (1, 2, 1, 1, 0, 0)), 5)
    assert captured == 7
    assert child == board((0, 0, 0, 1, 0, 0), EMPTY_ROW)


def test_capture_chain_stops_at_first_failing_house():
    # Sowing 3 from house 5: 6 -> 2, 7 -> 4, 8 -> 2. Only house 8 is taken (7 holds 4).
    captured, child = naive_play(board((0, 0, 0, 0, 0, 3), (1, 3, 1, 0, 0, 0)), 5)
    assert captured == 2
    assert child == board((2, 4, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0))
    # Last seed makes a 1 or a 4: nothing at all.
    assert naive_play(board((0, 0, 0, 0, 0, 1), (3, 0, 0, 0, 1, 0)), 5)[0] == 0
    assert naive_play(board((0, 0, 0, 0, 0, 1), (0, 0, 0, 0, 1, 0)), 5)[0] == 0


def test_capture_chain_never_crosses_into_own_row():
    # House 4 sows 5 -> 2 (own house) and 6 -> 2: only house 6 is taken.
    captured, child = naive_play(board((0, 0, 0, 0, 2, 1), (1, 0, 1, 0, 0, 0)), 4)
    assert captured == 2
    assert child == board((0, 0, 1, 0, 0, 0), (0, 0, 0, 0, 0, 2))


def test_no_capture_when_last_seed_in_own_row():
    captured, child = naive_play(board((2, 1, 1, 0, 0, 0), (1, 1, 1, 1, 1, 1)), 0)
    assert captured == 0
    assert child == board((1, 1, 1, 1, 1, 1), (0, 2, 2, 0, 0, 0))


def test_grand_slam_captures_nothing():
    # The capture would take the opponent's only seeds: the move is played, nothing is taken.
    captured, child = naive_play(board((0, 0, 0, 0, 0, 1), (1, 0, 0, 0, 0, 0)), 5)
    assert captured == 0
    assert child == board((2, 0, 0, 0, 0, 0), EMPTY_ROW)
    # Same with a chain over the whole row.
    captured, child = naive_play(board((0, 0, 0, 0, 0, 6), (1, 2, 1, 2, 1, 2)), 5)
    assert captured == 0
    assert child == board((2, 3, 2, 3, 2, 3), EMPTY_ROW)
    # One seed left behind the chain is enough to make it a capture.
    captured, child = naive_play(board((0, 0, 0, 0, 0, 5), (1, 2, 1, 2, 1, 1)), 5)
    assert captured == 2 + 3 + 2 + 3 + 2
    assert child == board((0, 0, 0, 0, 0, 1), EMPTY_ROW)


@given(boards_and_moves())
def test_play_conserves_seeds(board_and_move):
    start, house = board_and_move
    captured, child = naive_play(start, house)
    assert len(child) == 12 and all(seeds >= 0 for seeds in child)
    assert captured + sum(child) == sum(start)
    assert captured == 0 or captured >= 2
    # The origin is empty after the move, so the child is always in the index.
    assert child[6 + house] == 0 and in_index(child)
    if captured:
        # never a grand slam: the side to move next keeps seeds
        assert sum(child[:6]) > 0
    else:
        assert list(child[6:] + child[:6]) == naive_sow(start, house)[0]


# ---------------------------------------------------------------- legal moves, end of game


def test_feeding_rule():
    # The opponent's side is empty: only moves that reach it are legal.
    assert naive_legal_moves(board((0, 0, 0, 1, 2, 6), EMPTY_ROW)) == [4, 5]
    assert naive_legal_moves(board((6, 5, 4, 3, 1, 0), EMPTY_ROW)) == [0, 1, 2, 3]
    # Otherwise every non-empty house is legal.
    assert naive_legal_moves(board((1, 0, 1, 0, 0, 0), (0, 0, 0, 0, 0, 1))) == [0, 2]


def test_terminal_values():
    assert naive_terminal_value([0] * 12) == 0
    assert naive_terminal_value(board(EMPTY_ROW, (0, 3, 0, 0, 0, 2))) == -5  # rule 6
    assert naive_terminal_value(board((1, 1, 1, 1, 1, 0), EMPTY_ROW)) == 5  # rule 5
    assert naive_terminal_value(board((1, 1, 1, 1, 2, 0), EMPTY_ROW)) is None  # house 4 feeds
    assert naive_terminal_value(board((1, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 1))) is None


@pytest.mark.parametrize("seeds", range(0, 5))
def test_terminal_iff_no_legal_move(seeds):
    for position in all_boards(seeds):
        value = naive_terminal_value(position)
        mover_seeds = sum(position[:6])
        assert (value is None) == bool(naive_legal_moves(position))
        if value is not None:
            assert value == (-seeds if mover_seeds == 0 else seeds)
            assert mover_seeds == 0 or sum(position[6:]) == 0


# ---------------------------------------------------------------- perft


OPENING_PERFT = [1, 6, 36, 190, 1014, 5219, 27332]  # depth 0..6, OpenSpiel "oware"


@pytest.mark.parametrize("depth", range(len(OPENING_PERFT)))
def test_opening_perft(depth):
    assert naive_perft([4] * 12, depth) == OPENING_PERFT[depth]


def test_perft_stops_when_game_is_over():
    start = [4] * 12
    assert naive_perft(start, 0, (25, 0)) == 1
    assert naive_perft(start, 3, (25, 0)) == 0
    assert naive_perft(start, 3, (0, 25)) == 0
    assert naive_perft(start, 3, (24, 24)) == 0
    assert naive_perft(start, 1, (24, 0)) == 6
    # Moves 0 (2 replies) and 5 (captures 2; 1 reply). The stores swap with the side to move.
    position = board((1, 0, 0, 0, 0, 1), (1, 1, 0, 0, 0, 0))
    assert naive_perft(position, 2) == 3
    assert naive_perft(position, 2, (23, 0)) == 2  # the capture reaches 25: no reply
    assert naive_perft(position, 2, (0, 23)) == 3
    assert naive_perft(position, 2, (22, 24)) == 2  # the capture makes 24-24: drawn
    # Rule 5: no feeding move, no child.
    assert naive_perft(board((1, 0, 0, 0, 0, 0), EMPTY_ROW), 2) == 0


# ---------------------------------------------------------------- enumeration


@pytest.mark.parametrize("seeds", range(0, 7))
def test_all_boards_and_index_sizes(seeds):
    layer = list(all_boards(seeds))
    assert len(layer) == len(set(layer)) == comb(seeds + 11, 11)
    assert all(len(position) == 12 and sum(position) == seeds for position in layer)
    assert layer == sorted(layer)
    # Romein-Bal index size: leave out boards with all six opponent houses occupied.
    assert sum(map(in_index, layer)) == comb(seeds + 11, 11) - comb(seeds + 5, 11)


# ---------------------------------------------------------------- solved values


def move_values(position, layers):
    """Value of each legal move of a non-terminal `position`: captured - d(child)."""
    seeds = sum(position)
    values = []
    for house in naive_legal_moves(position):
        captured, child = naive_play(position, house)
        values.append(captured - layers[seeds - captured][child])
    return values


def test_layer_0_and_1_by_hand():
    layers = naive_solve(1)
    assert layers[0] == {(0,) * 12: 0}
    for house in range(12):
        position = tuple(1 if h == house else 0 for h in range(12))
        # Seed in houses 0..4: the opponent is empty and nothing feeds him, rule 5: +1.
        # Seed in house 5: the only move feeds the opponent, who then has a seed in his
        #   house 0 that cannot feed back: he takes it, -1.
        # Seed on the opponent's side: rule 6, -1.
        assert layers[1][position] == (1 if house < 5 else -1), position


def test_layer_2_by_hand():
    # Two seeds in house 5 sow his houses 0 and 1; our side is empty and neither of
    # his seeds can reach it: rule 5 for him, -2.
    assert naive_value(board((0, 0, 0, 0, 0, 2), EMPTY_ROW)) == -2
    # Two seeds in house 4: the only (feeding) move sows 5 and his 0. He must play
    # 0 -> 1, we must play 5 -> his 0, our side is empty, his two single seeds
    # cannot reach it: -2.
    assert naive_value(board((0, 0, 0, 0, 2, 0), EMPTY_ROW)) == -2
    # One seed in each of houses 4 and 5: house 4 does not feed, so 5 -> his 0 is
    # forced. Then the seeds run in step: his 0 -> 1, our 4 -> 5, his 1 -> 2, our
    # 5 -> his 0; our side is empty and he cannot feed us: -2.
    assert naive_value(board((0, 0, 0, 0, 1, 1), EMPTY_ROW)) == -2
    # One seed each, ours in house 0, his in his house 0: nobody ever has a choice.
    # Both seeds walk round; when our seed lands in his house 0 our side is empty
    # and he must feed with his house 5 -> our 0, which is the start again.
    # No capture ever (a 2 would be a grand slam anyway): endless play, 0.
    assert naive_value(board((1, 0, 0, 0, 0, 0), (1, 0, 0, 0, 0, 0))) == 0
    # Rule 6 with both seeds on the opponent's side.
    assert naive_value(board(EMPTY_ROW, (0, 0, 1, 0, 0, 1))) == -2


def test_layer_3_capture_by_hand():
    # House 5 -> his house 0 makes 2, taken (his house 1 keeps 1 seed, so no grand slam).
    # The child, from his side, is one seed in his house 1 with our side empty:
    # rule 5 gives it to him, d(child) = +1, so the move is worth 2 - 1 = +1.
    position = board((0, 0, 0, 0, 0, 1), (1, 1, 0, 0, 0, 0))
    assert naive_play(position, 5) == (2, board((0, 1, 0, 0, 0, 0), EMPTY_ROW))
    assert naive_value(position) == 1


@pytest.mark.parametrize("seeds", FAST_LAYERS)
def test_values_in_range_and_terminals(seeds):
    layer = naive_solve(seeds)[seeds]
    assert set(layer) == set(all_boards(seeds))
    for position, value in layer.items():
        assert -seeds <= value <= seeds
        terminal = naive_terminal_value(position)
        if terminal is not None:
            assert value == terminal
        if sum(position[:6]) == 0:
            assert value == -seeds


def check_bellman(seeds):
    """d(s) = max over legal moves of (captured - d(child)), exactly, for every board.

    With endless play scored 0 this holds exactly everywhere, zeros included:
    if d(s) = 0 the mover cannot force +1, so no move is worth more than 0, and
    cannot be held to -1, so some move is worth at least 0. The equation alone
    does not pin d down (a cycle of non-capturing moves fits any +k/-k), which is
    what check_value_iteration is for.
    """
    layers = naive_solve(seeds)
    for position, value in layers[seeds].items():
        terminal = naive_terminal_value(position)
        if terminal is None:
            assert value == max(move_values(position, layers)), position
        else:
            assert value == terminal, position


def check_value_iteration(seeds):
    """The values are those of an unrelated algorithm: value iteration from 0.

    v_t(s) is the value of the game cut off t plies from now inside the layer,
    a cut-off scoring 0 (exits and terminals keep their exact values). As t grows
    v_t reaches d: a side that can force +k (or hold the other to -k) can do so
    within a bounded number of plies, and otherwise the other side keeps the
    result at 0 forever. Once v_(t+1) = v_t it never changes again, so it is d.
    """
    layers = naive_solve(seeds)
    graph = LayerMoves(seeds, layers[:seeds])  # the move graph only; the algorithm is below
    size = len(graph.boards)
    cut_off = [0 if graph.terminal[i] is None else graph.terminal[i] for i in range(size)]
    for _ in range(10 * size):
        deeper = [
            graph.terminal[i]
            if graph.terminal[i] is not None
            else max(graph.exits[i] + [-cut_off[child] for child in graph.stays[i]])
            for i in range(size)
        ]
        if deeper == cut_off:
            break
        cut_off = deeper
    else:
        pytest.fail("value iteration did not settle")
    cut_off = dict(zip(graph.boards, cut_off))
    assert cut_off == layers[seeds]


@pytest.mark.parametrize("seeds", FAST_LAYERS)
def test_bellman_equation(seeds):
    check_bellman(seeds)


@pytest.mark.parametrize("seeds", FAST_LAYERS)
def test_matches_value_iteration(seeds):
    check_value_iteration(seeds)


@pytest.mark.slow
@pytest.mark.parametrize("seeds", SLOW_LAYERS)
def test_bellman_equation_slow(seeds):
    check_bellman(seeds)


@pytest.mark.slow
@pytest.mark.parametrize("seeds", SLOW_LAYERS)
def test_matches_value_iteration_slow(seeds):
    check_value_iteration(seeds)


def test_naive_layer_takes_lower_layers():
    lower = naive_solve(4)
    assert naive_layer(5, lower) == naive_solve(5)[5]


def test_values_can_differ_from_seed_parity():
    # A finished game splits the n seeds into a + b with d = a - b, so d has the
    # parity of n -- unless endless play (scored 0) happens. An endless odd layer
    # (3 is the first) makes 0 a value of odd parity there, and a capture of c
    # seeds into such an endless child is worth exactly c: from layer 5 on, nonzero
    # values of the "wrong" parity appear.
    layers = naive_solve(5)
    for seeds in range(5):
        for position, value in layers[seeds].items():
            assert (value - seeds) % 2 == 0 or value == 0, position
    assert 0 in layers[3].values()
    assert any((value - 5) % 2 and value for value in layers[5].values())


@settings(max_examples=200)
@given(boards(max_seeds=6))
def test_value_consistent_with_best_move(position):
    value = naive_value(position)
    terminal = naive_terminal_value(position)
    if terminal is not None:
        assert value == terminal
    else:
        assert value in move_values(position, naive_solve(sum(position)))
