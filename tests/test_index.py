"""The Romein-Bal index: sizes, rank/unrank round trips, the successor walk."""

import itertools
from math import comb

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import all_boards
from numba import njit

from solver import index
from solver.errors import InvalidPositionError
from solver.rules import pack


def test_layer_sizes_match_the_formula_and_published_figures():
    for n in range(49):
        assert index.layer_size(n) == comb(n + 11, 11) - comb(n + 5, 11)
    assert index.layer_size(16) == 12_685_179
    assert index.layer_size(20) == 80_214_915
    assert index.total_positions() == 889_063_398_406


@pytest.mark.parametrize("seeds", range(0, 8))
def test_rank_is_the_position_in_sorted_order_of_valid_boards(seeds):
    # Order: seeds on the mover's row, then the mover's row, then the opponent's row.
    boards = sorted((b for b in all_boards(seeds) if 0 in b[6:]), key=lambda b: (sum(b[:6]), b))
    assert len(boards) == index.layer_size(seeds)
    for expected, board in enumerate(boards):
        assert index.rank(board) == expected


@pytest.mark.parametrize("seeds", range(0, 11))
def test_walk_rank_and_unrank_agree_on_whole_layers(seeds):
    size = index.layer_size(seeds)
    walked = index.layer_boards(seeds, 0, size)
    assert (walked.sum(axis=1) == seeds).all()
    assert all(0 in board[6:] for board in walked[:: max(1, size // 2000)])
    assert (index.rank_boards(walked, seeds) == np.arange(size)).all()
    assert (index.unrank_boards(seeds, np.arange(size, dtype=np.int64)) == walked).all()
    tables = index.RowTables(seeds)
    for r in range(0, size, max(1, size // 3000)):
        mover, opponent = index.unrank_fast(seeds, r, *tables.arrays)
        assert list(index.unpack(mover, opponent)) == list(walked[r])


def test_walk_stops_after_the_last_board():
    board = index.unrank(5, index.layer_size(5) - 1)
    assert list(board) == [5] + [0] * 11
    assert not index.next_board(board)
    assert list(board) == [5] + [0] * 11


@st.composite
def index_boards(draw):
    seeds = draw(st.integers(0, 48))
    cuts = sorted(draw(st.lists(st.integers(0, seeds), min_size=11, max_size=11)))
    board = [b - a for a, b in zip([0] + cuts, cuts + [seeds])]
    if 0 not in board[6:]:
        board[6 + draw(st.integers(0, 5))] = 0
        board[0] += seeds - sum(board)
    return board


@settings(max_examples=500, deadline=None)
@given(index_boards())
def test_rank_unrank_round_trip_up_to_48_seeds(board):
    seeds = sum(board)
    r = index.rank(board)
    assert 0 <= r < index.layer_size(seeds)
    assert list(index.unrank(seeds, r)) == board
    mover, opponent = map(np.uint64, index.pack(np.array(board, dtype=np.uint8)))  # the kernels' type, not int64
    assert index.rank_packed(mover, opponent, seeds) == r


@settings(max_examples=200, deadline=None)
@given(index_boards())
def test_successor_is_rank_plus_one(board):
    seeds = sum(board)
    r = index.rank(board)
    array = np.array(board, dtype=np.uint8)
    if index.next_board(array):
        assert index.rank(array) == r + 1
    else:
        assert r == index.layer_size(seeds) - 1


@pytest.fixture(scope="module")
def rows_to_30():
    return index.RowTables(30).arrays


@settings(max_examples=300, deadline=None)
@given(index_boards().filter(lambda board: sum(board) <= 30))
def test_a_run_of_ranks_shares_the_mover_row_and_unranks_by_one_look_up(rows_to_30, board):
    """unrank_row: the ranks around a rank whose mover row is the same form
    one run, and each of them is its mover word plus one opponent word."""
    any_words, any_starts, opponent_words, opponent_starts = rows_to_30
    seeds = sum(board)
    r = index.rank(board)
    mover, first, length, start = index.unrank_row(seeds, r, any_words, any_starts, opponent_starts)
    assert first <= r < first + length <= index.layer_size(seeds)
    for k in (first, r, first + length - 1):
        assert index.unrank_packed(seeds, k) == (mover, opponent_words[start + k - first])
    assert first == 0 or index.unrank_packed(seeds, first - 1)[0] != mover
    assert first + length == index.layer_size(seeds) or index.unrank_packed(seeds, first + length)[0] != mover


def test_bad_input_raises_named_errors():
    with pytest.raises(InvalidPositionError):
        index.rank([1] * 12)  # every opponent house occupied: outside the index
    with pytest.raises(InvalidPositionError):
        index.rank([1] * 11)
    with pytest.raises(InvalidPositionError):
        index.rank([49] + [0] * 11)
    with pytest.raises(InvalidPositionError):
        index.layer_size(49)
    with pytest.raises(IndexError):
        index.unrank(3, index.layer_size(3))


def test_iter_layer_matches_layer_boards():
    assert [tuple(b) for b in index.iter_layer(4)] == [tuple(b) for b in index.layer_boards(4, 0, index.layer_size(4))]
    assert len(list(itertools.islice(index.iter_layer(20, 1000, 1010), 100))) == 10


# The sliced build's distance order -------------------------------------------------

@njit
def _ranks_in(seeds, boards, order):
    """rank_packed_in of each board, and file_rank of that back (numba: the kernels' view)."""
    ranks = np.empty(boards.shape[0], dtype=np.int64)
    back = np.empty(boards.shape[0], dtype=np.int64)
    for i in range(boards.shape[0]):
        mover, opponent = pack(boards[i])
        ranks[i] = index.rank_packed_in(mover, opponent, seeds, order)
        back[i] = index.file_rank(seeds, ranks[i], order)
    return ranks, back


@pytest.mark.parametrize("seeds", [0, 1, 2, 7, 10, 11])
def test_the_distance_order_is_the_bands_in_bit_reversed_order(seeds):
    # Naively: sort the layer's boards by their band |2m - n| // 2 written in
    # five bits and read backwards, then m, then file rank.
    boards = index.layer_boards(seeds, 0, index.layer_size(seeds))
    movers = boards[:, :6].astype(np.int64).sum(axis=1)
    reversed_band = np.array([int(f"{abs(2 * m - seeds) // 2:05b}"[::-1], 2) for m in movers], dtype=np.int64)
    expected = np.lexsort((np.arange(len(boards)), movers, reversed_band))  # file ranks in that order
    ranks, back = _ranks_in(seeds, boards, index.DISTANCE_ORDER)
    assert (np.argsort(ranks) == expected).all()
    assert (back == np.arange(len(boards))).all()
    assert all(index.rank_in(seeds, r, index.DISTANCE_ORDER) == ranks[r] for r in range(0, len(boards), 97))
    file_ranks, _ = _ranks_in(seeds, boards, index.FILE_ORDER)
    assert (file_ranks == np.arange(len(boards))).all()


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 48), st.floats(0, 1, exclude_max=True), st.floats(0, 1))
def test_pieces_of_the_order_and_of_the_file_are_the_same_runs(seeds, where, share):
    size = index.layer_size(seeds)
    start = int(where * size)
    stop = min(size, start + int(share * size) + 1)
    for order in (index.FILE_ORDER, index.DISTANCE_ORDER):
        by_order = index.order_pieces(seeds, start, stop, order)
        assert sum(length for _, _, length in by_order) == stop - start
        assert [first for first, _, _ in by_order] == list(np.cumsum([start] + [n for _, _, n in by_order])[:-1])
        for first, in_file, length in by_order:
            for at in (first, first + length - 1):  # each run is one run of the file
                assert index.file_rank(seeds, at, order) == in_file + at - first
                # file_run (the exit kernels' walk) sees the same run, and where it ends
                run_first, run_end = index.file_run(seeds, at, order)
                assert run_first == in_file + at - first and run_end >= first + length
                assert run_end == first + length or first + length == stop
        in_file = index.file_pieces(seeds, start, stop, order)
        assert sum(length for _, _, length in in_file) == stop - start
        for first, file_first, length in in_file:
            assert index.rank_in(seeds, file_first, order) == first
            assert index.rank_in(seeds, file_first + length - 1, order) == first + length - 1
