"""The pattern (version 2) leaf: its table columns and its estimate against a
naive version, its weights file's checks, a fit on tiny tables through the CLI,
and the search with it."""

import json
import math
import os

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from test_evaluation import boards_of, lapping_boards, naive_features

from solver import Position, index
from solver.cli import cli
from solver.errors import EvaluationError
from solver.evaluation import (
    BAND_SIZE,
    FEATURE_COUNT,
    LINEAR_SIZE,
    PAIRS_START,
    PATTERN_BANDS,
    PATTERN_COUNT,
    PATTERN_SIZE,
    PATTERN_VERSION,
    WINDOWS_START,
    board_estimates,
    default_weights_path,
    load_weights,
    pattern_band,
    pattern_columns,
    save_weights,
)
from solver.fitting import _solve_definite, drawn_positions, layer_values
from solver.probe import Tablebase
from solver.rules import pack
from solver.search import Searcher
from solver.tables import CHUNK


def naive_band(seeds):
    """0-15 seeds: band 0, 16-20: 1, 21-24: 2, 25-28: 3, 29-32: 4, 33 and more: 5."""
    if seeds <= 15:
        return 0
    if seeds <= 20:
        return 1
    return min(2 + (seeds - 21) // 4, 5)


def naive_columns(board):
    """The band and the table entries (positions in the band's block) a
    mover-view board adds, straight from their definition: the 12 windows of
    4 houses going round the board (the mover's 0-5, then the opponent's
    0-5), each house capped at 3, the first house the lowest digit in base 4;
    then the 36 (mover's house, opponent's house) pairs, each capped at 12."""
    board = [int(seeds) for seeds in board]
    columns = []
    for window in range(12):
        digits = [min(board[(window + k) % 12], 3) for k in range(4)]
        columns.append(WINDOWS_START + 256 * window + sum(digit * 4**k for k, digit in enumerate(digits)))
    for mover_house in range(6):
        for opponent_house in range(6):
            pair = 6 * mover_house + opponent_house
            columns.append(PAIRS_START + 169 * pair + 13 * min(board[mover_house], 12)
                           + min(board[6 + opponent_house], 12))
    return naive_band(sum(board)), columns


def naive_pattern_estimate(board, weights):
    """The pattern leaf from its definition: its band's linear weights times
    the features plus one table entry per pattern, rounded, clipped to the seeds."""
    band, columns = naive_columns(board)
    block = weights[band * BAND_SIZE:(band + 1) * BAND_SIZE]
    total = sum(value * float(block[k]) for k, value in enumerate(naive_features(board)))
    total += sum(float(block[column]) for column in columns)
    seeds = sum(int(s) for s in board)
    return max(-seeds, min(seeds, math.floor(total + 0.5)))


def grid_weights(seed, step=32):
    """Pattern weights on a grid of 1/step seed, within 2 seeds: sums of them
    are exact in doubles, so the kernel and the naive version agree whatever
    the order of addition, even at a half."""
    return np.random.default_rng(seed).integers(-2 * step, 2 * step + 1, PATTERN_SIZE) / step


def test_the_layout_is_the_documented_one():
    assert PATTERN_BANDS == (0, 16, 21, 25, 29, 33) and PATTERN_COUNT == 12 + 36
    assert BAND_SIZE == FEATURE_COUNT + 12 * 256 + 36 * 169 and PATTERN_SIZE == 6 * BAND_SIZE


def test_every_seed_count_has_the_documented_band():
    assert [pattern_band(seeds) for seeds in range(49)] == [naive_band(seeds) for seeds in range(49)]


@settings(max_examples=300, deadline=None)
@given(st.one_of(boards_of(48), lapping_boards()))
def test_pattern_columns_match_the_naive_version(board):
    out = np.zeros(PATTERN_COUNT, np.int64)
    band = pattern_columns(*map(np.uint64, pack(np.array(board, np.uint8))), out)  # as the fitting passes them
    assert (band, out.tolist()) == naive_columns(board)


@settings(max_examples=300, deadline=None)
@given(st.one_of(boards_of(48), lapping_boards()), st.integers(0, 2**32 - 1))
def test_the_pattern_leaf_is_exactly_its_formula(board, seed):
    weights = grid_weights(seed)
    estimate = int(board_estimates(np.array([board], np.uint8), weights)[0])
    assert estimate == naive_pattern_estimate(board, weights)


def test_the_pattern_leaf_clips_to_the_seeds_and_the_linear_leaf_is_untouched():
    boards = np.array([[4] * 12, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], [0, 20, 0, 0, 3, 0, 1, 1, 0, 0, 0, 0]], np.uint8)
    seeds = boards.sum(axis=1, dtype=np.int64)
    assert board_estimates(boards, np.full(PATTERN_SIZE, 5.0)).tolist() == seeds.tolist()
    assert board_estimates(boards, np.full(PATTERN_SIZE, -5.0)).tolist() == (-seeds).tolist()
    linear = np.zeros(LINEAR_SIZE)
    linear[2] = 1.0  # the seeds on the mover's side minus the opponent's
    assert board_estimates(boards, linear).tolist() == [0, 0, 21]


# The version 2 file ----------------------------------------------------------------


@pytest.fixture()
def pattern_file(tmp_path):
    path = tmp_path / "patterns.json"
    save_weights(path, grid_weights(3, step=16), {"any": "report"})  # four decimals hold 1/16 exactly
    return path


def test_a_pattern_file_round_trips(pattern_file):
    data = json.loads(pattern_file.read_text())
    assert data["version"] == PATTERN_VERSION and data["fit"] == {"any": "report"}
    assert load_weights(pattern_file).tolist() == grid_weights(3, step=16).tolist()
    assert os.path.getsize(pattern_file) < 1 << 20


BAD_PATTERNS = {
    "version 3": lambda d: {**d, "version": 3},
    "a window short": lambda d: {**d, "windows": [d["windows"][0][:-1]] + d["windows"][1:]},
    "a window entry short": lambda d: {**d, "windows": [[d["windows"][0][0][:-1]] + d["windows"][0][1:]]
                                       + d["windows"][1:]},
    "two bands of pairs": lambda d: {**d, "pairs": d["pairs"][:2]},
    "linear flat": lambda d: {**d, "linear": d["linear"][0]},
    "a boolean": lambda d: {**d, "linear": [[True] * FEATURE_COUNT] + d["linear"][1:]},
    "a huge weight": lambda d: {**d, "pairs": [[[1e300] + d["pairs"][0][0][1:]] + d["pairs"][0][1:]]
                                + d["pairs"][1:]},
    "a number as text": lambda d: {**d, "linear": [["1"] + d["linear"][0][1:]] + d["linear"][1:]},
    "other bands": lambda d: {**d, "bands": [0, 16, 22]},
    "a bigger cap": lambda d: {**d, "pair_cap": 13},
    "a cap true": lambda d: {**d, "window_houses": True},
    "the linear keys": lambda d: {**d, "flat": [0.0] * FEATURE_COUNT},
    "no pairs": lambda d: {k: v for k, v in d.items() if k != "pairs"},
    "other features": lambda d: {**d, "features": d["features"][:-1]},
}
BAD_PATTERN_TEXT = {
    "NaN": lambda text: text.replace('"linear":[[', '"linear":[[NaN,', 1),
    "Infinity": lambda text: text.replace('"windows":[[[', '"windows":[[[Infinity,', 1),
    "a key twice": lambda text: text.replace('"version":2,', '"version":2,"version":2,', 1),
    "more than the size limit": lambda text: text + " " * (1 << 20),
}


@pytest.mark.parametrize("case", sorted(BAD_PATTERNS) + sorted(BAD_PATTERN_TEXT) + ["a link to a pipe"])
def test_a_pattern_file_not_in_the_formats_exact_shape_is_refused(pattern_file, tmp_path, case):
    """Every check of a version 1 file holds for a version 2 one: one line
    that names the file, and never searched with."""
    path = tmp_path / "weights.json"
    text = pattern_file.read_text()
    if case in BAD_PATTERNS:
        path.write_text(json.dumps(BAD_PATTERNS[case](json.loads(text))))
    elif case in BAD_PATTERN_TEXT:
        path.write_text(BAD_PATTERN_TEXT[case](text))
    else:
        os.mkfifo(tmp_path / "pipe")
        os.symlink(tmp_path / "pipe", path)
    with pytest.raises(EvaluationError, match="weights.json") as caught:
        load_weights(path)
    assert "\n" not in str(caught.value)
    with pytest.raises(EvaluationError):
        Searcher(str(tmp_path), weights_file=path)


def test_save_weights_refuses_arrays_of_neither_size(tmp_path):
    with pytest.raises(EvaluationError, match="pattern"):
        save_weights(tmp_path / "w.json", np.zeros(PATTERN_SIZE - 1))
    with pytest.raises(EvaluationError, match="no fit's"):
        save_weights(tmp_path / "w.json", np.full(PATTERN_SIZE, np.nan))
    assert not list(tmp_path.iterdir())


# The fit on tiny tables, through the CLI -------------------------------------------


@pytest.fixture(scope="module")
def cli_fit(table_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("patterns") / "patterns.json"
    result = CliRunner().invoke(cli, ["fit-evaluation", "--kind", "patterns", "--dir", table_dir, "--fit-layers",
                                      "6-10", "--holdout", "11,12", "--games", "300", "--per-layer", "3000",
                                      "--drawn", "3000", "--out", str(out), "--json"])
    return result, out


def test_cli_fit_evaluation_patterns_writes_a_version_2_file(cli_fit):
    result, out = cli_fit
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["kind"] == "patterns" and report["fit_layers"] == [6, 7, 8, 9, 10]
    assert report["holdout_layers"] == [11, 12] and report["out"] == str(out)
    weights = load_weights(out)
    assert weights.shape == (PATTERN_SIZE,) and np.any(weights != 0)
    assert json.loads(out.read_text())["fit"]["holdout"] == report["holdout"]


def test_the_pattern_fit_beats_the_zero_leaf_on_its_own_data(cli_fit):
    """On the positions it was fitted to, least squares over the patterns
    (which include the linear features) errs less than the 0 leaf, on the
    positions of games and on those drawn by rank."""
    report = json.loads(cli_fit[0].output)
    rows = [row for row in report["fit"] if row["count"] >= 100]
    assert {row["positions"] for row in rows} == {"games", "drawn"}
    for row in rows:
        assert row["patterns_rmse"] < row["zero_rmse"], row


def test_a_search_uses_the_pattern_leaf(cli_fit, table_dir):
    """A search with a version 2 file scores its horizon leaves with it: its
    estimates differ from the linear leaf's on some position, and stay
    within the seeds."""
    _, out = cli_fit
    patterns = Searcher(table_dir, max_table_seeds=4, weights_file=out)
    linear = Searcher(table_dir, max_table_seeds=4)
    differ = 0
    for text in ("2-1-0-3-1-0/1-0-2-1-1-0 S", "0-3-1-1-2-0/2-1-0-0-2-1 S", "1-1-2-0-0-3/0-2-1-1-0-2 S"):
        position = Position.from_string(text)
        estimate = patterns.search(position, depth=1, cycles="own")
        assert -position.seeds <= estimate.value <= position.seeds
        differ += estimate.value != linear.search(position, depth=1, cycles="own").value
    assert differ > 0


@settings(max_examples=25, deadline=None)
@given(size=st.integers(1, 40), seed=st.integers(0, 2**32 - 1))
def test_the_direct_solve_solves_a_definite_system(size, seed):
    """The fit's solver against the definition: matrix @ x == right, for a
    random definite matrix (a Gram matrix plus a ridge, as in the fit)."""
    rng = np.random.default_rng(seed)
    design = rng.integers(0, 2, size=(3 * size, size)).astype(np.float64)
    matrix = design.T @ design + np.eye(size)
    right = rng.normal(size=size)
    solution = _solve_definite(matrix, right)
    assert np.allclose(matrix @ solution, right, atol=1e-9)


def test_the_direct_solve_refuses_a_system_that_is_not_definite():
    with pytest.raises(EvaluationError, match="not definite"):
        _solve_definite(np.array([[1.0, 2.0], [2.0, 1.0]]), np.ones(2))


def test_streamed_values_are_the_tables_values(table_dir):
    """layer_values (a chunk at a time, in rank order) gives what the
    Tablebase gives for the same boards, over every chunk of layer 12 and in
    the boards' own order (drawn unsorted, some twice)."""
    rng = np.random.default_rng(5)
    boards = drawn_positions(12, 20_000, rng)
    boards = np.concatenate([boards, boards[:50]])
    with Tablebase(table_dir) as tablebase:
        expected = tablebase.values(boards).astype(np.int64)
    streamed = layer_values(table_dir, 12, boards)
    assert streamed.dtype == np.int64 and streamed.tolist() == expected.tolist()
    assert len(set((index.rank_boards(boards, 12) // CHUNK).tolist())) == math.ceil(index.layer_size(12) / CHUNK)
    assert layer_values(table_dir, 12, boards[:0]).shape == (0,)


def test_fit_evaluation_patterns_refuses_bad_arguments(table_dir):
    for args, message in ((["--drawn", "-1"], "--drawn"), (["--ridge", "0"], "ridge"),
                          (["--kind", "neural"], "kind")):
        result = CliRunner().invoke(cli, ["fit-evaluation", "--kind", "patterns", "--dir", table_dir,
                                          "--fit-layers", "6-10", "--holdout", "11", *args])
        assert result.exit_code == 2 and message in result.output, result.output


def test_the_shipped_pattern_file_is_the_default_and_beat_the_linear_leaf_where_it_was_held_out():
    # solver/data/evaluation-v2-patterns.json: the fit of docs/EVALUATION.md, the default leaf
    # (the linear weights ship beside it); it passes every check a weights file gets, and the
    # report it carries says it was measured above the layers it was fitted on.
    path = os.path.join(os.path.dirname(default_weights_path()), "evaluation-v2-patterns.json")
    assert os.path.samefile(path, default_weights_path())
    weights = load_weights(path)
    assert weights.shape == (PATTERN_SIZE,) and np.any(weights != 0)
    assert np.array_equal(load_weights(), weights)
    with open(path) as handle:
        fit = json.load(handle)["fit"]
    assert min(fit["holdout_layers"]) > max(fit["fit_layers"])
    for kind in ("games", "drawn"):
        held = fit["holdout_pooled"][kind]
        assert held["patterns_rmse"] < held["linear_rmse"] < held["zero_rmse"]
