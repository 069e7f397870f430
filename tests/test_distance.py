"""Distance to conversion (solver.distance): every distance against the naive
reference, lines that follow the distances, the overflow rows, the files and
the read side."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import naive_legal_moves, naive_play, naive_terminal_value
from naive_distance import naive_distances

from solver import distance, index, retrograde
from solver.distance import DISTANCE_CAP, NO_DISTANCE, distance_at, layer_distances

NAIVE_LAYERS = 8  # every position against the naive reference in the default run; 9 and 10 are marked slow
LAYERS = 12


@pytest.fixture(scope="module")
def solved():
    store = retrograde.solve_up_to(LAYERS)
    found = {n: layer_distances(n, store) for n in range(LAYERS + 1)}
    return store, found


def board_values(store, seeds):
    """{board tuple: d} of layer `seeds` of `store`."""
    boards = index.layer_boards(seeds, 0, index.layer_size(seeds))
    return dict(zip((tuple(int(x) for x in b) for b in boards), (int(v) for v in store.layer(seeds))))


def layer_dicts(store, seeds):
    return [board_values(store, n) for n in range(seeds + 1)]


def distances_of(found, seeds, cap=DISTANCE_CAP):
    """[distance or None] of layer `seeds` in rank order."""
    layer = found[seeds]
    return [distance_at(layer.distance, layer.overflow, rank, cap) for rank in range(index.layer_size(seeds))]


def check_against_naive(store, found, seeds):
    layers = layer_dicts(store, seeds)
    reference = naive_distances(seeds, layers)
    boards = index.layer_boards(seeds, 0, index.layer_size(seeds))
    got = distances_of(found, seeds)
    wrong = [(tuple(int(x) for x in b), d, reference[tuple(int(x) for x in b)])
             for b, d in zip(boards, got) if reference[tuple(int(x) for x in b)] != d]
    assert wrong[:10] == []
    assert not any(d == math.inf for d in reference.values()), "a value other than 0 without a finite distance"


@pytest.mark.parametrize("seeds", range(NAIVE_LAYERS + 1))
def test_every_distance_matches_the_naive_reference(solved, seeds):
    store, found = solved
    check_against_naive(store, found, seeds)


@pytest.mark.slow
@pytest.mark.parametrize("seeds", [9, 10])
def test_every_distance_matches_the_naive_reference_to_layer_10(seeds):
    store = retrograde.solve_up_to(seeds)
    check_against_naive(store, {seeds: layer_distances(seeds, store)}, seeds)


def lookup(store, found, board):
    """(value, distance) of a board in the index."""
    seeds = sum(board)
    rank = index.rank(np.array(board, dtype=np.uint8))
    layer = found[seeds]
    return int(store.layer(seeds)[rank]), distance_at(layer.distance, layer.overflow, rank)


@settings(max_examples=300, deadline=None)
@given(seeds=st.integers(1, LAYERS), fraction=st.floats(0, 1, exclude_max=True))
def test_a_line_following_the_distances_converts_in_exactly_that_many_plies(solved, seeds, fraction):
    """From a position with v != 0, the side ahead plays a keeping move of
    least cost and the side behind one of greatest cost: the line keeps the
    value at every ply and reaches a capture or an end of the game in
    exactly the distance's plies."""
    store, found = solved
    rank = int(fraction * index.layer_size(seeds))
    board = tuple(int(x) for x in index.unrank(seeds, rank))
    value, start = lookup(store, found, board)
    if value == 0:
        assert start is None
        return
    plies = 0
    while True:
        assert plies <= start
        if naive_terminal_value(board) is not None:
            assert naive_terminal_value(board) == value
            break
        options = []
        for house in naive_legal_moves(board):
            captured, child = naive_play(board, house)
            child_value, child_distance = lookup(store, found, child)
            if captured - child_value == value:
                options.append((1 if captured else 1 + child_distance, captured, child, child_value))
        assert options, "no move keeps the value"
        cost, captured, child, child_value = (min if value > 0 else max)(options, key=lambda o: o[0])
        _, here = lookup(store, found, board)
        assert cost == here
        plies += 1
        if captured:
            break
        assert child_value == -value
        board, value = child, child_value
    assert plies == start


@pytest.mark.parametrize("cap", [2, 3, 5])
def test_a_low_cap_moves_the_long_distances_to_the_overflow_rows_and_changes_none(solved, cap):
    store, found = solved
    for seeds in range(LAYERS + 1):
        capped = layer_distances(seeds, store, cap=cap)
        exact = distances_of(found, seeds)
        assert [distance_at(capped.distance, capped.overflow, r, cap) for r in range(len(exact))] == exact
        over = [r for r, d in enumerate(exact) if d is not None and d >= cap]
        assert capped.overflow[:, 0].tolist() == over
        assert (capped.distance[over] == cap).all() and capped.distance.max() <= NO_DISTANCE
    assert any(layer_distances(n, store, cap=2).overflow.shape[0] for n in range(LAYERS + 1))


def test_the_bytes_say_none_exactly_where_the_value_is_0(solved):
    store, found = solved
    for seeds in range(LAYERS + 1):
        values, bytes_ = store.layer(seeds), found[seeds].distance
        assert ((bytes_ == NO_DISTANCE) == (values == 0)).all()
        assert (bytes_ != distance.UNSETTLED).all()


def test_one_and_two_threads_give_the_same_distances(solved):
    store, found = solved
    for threads in (1, 2):
        again = layer_distances(LAYERS, store, threads=threads)
        assert np.array_equal(again.distance, found[LAYERS].distance)
        assert np.array_equal(again.overflow, found[LAYERS].overflow)


def test_a_layer_without_its_smaller_layers_is_refused():
    store = retrograde.solve_up_to(6)
    store.drop(3)
    with pytest.raises(ValueError, match="need layers"):
        layer_distances(6, store)
