"""The learned evaluation: its feature kernel against a naive version, its
bounds, the weights file, the fit on tiny tables, and the search with it."""

import json
import math
import os
import shutil

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from naive import naive_legal_moves, naive_play
from numba import njit

from solver import Position
from solver.cli import cli
from solver.errors import EvaluationError, SearchError
from solver.evaluation import (
    FEATURE_COUNT,
    FEATURES,
    WEIGHTS_VERSION,
    board_estimates,
    board_features,
    default_weights_path,
    evaluate,
    features,
    linear_weights_path,
    load_weights,
    save_weights,
)
from solver.fitting import default_layers, fit, game_positions
from solver.probe import Tablebase
from solver.rules import house_seeds, legal_mask, pack, play, row_seeds
from solver.search import Searcher

FIT_LAYERS = list(range(4, 11))


def linear_weights():
    """The shipped linear weights (version 1; the default leaf is the pattern file)."""
    return load_weights(linear_weights_path())


HOLDOUT_LAYERS = [11, 12]


def naive_features(board):
    """FEATURES of a mover-view board, straight from their names."""
    board = [int(seeds) for seeds in board]
    mover, opponent = board[:6], board[6:]

    mover_threat = max([naive_play(board, house)[0] for house in naive_legal_moves(board)], default=0)
    return [
        1,
        sum(board),
        sum(mover) - sum(opponent),
        mover.count(0),
        opponent.count(0),
        sum(1 for seeds in mover if 1 <= seeds <= 2),
        sum(1 for seeds in opponent if 1 <= seeds <= 2),
        sum(1 for seeds in mover if seeds >= 12),
        sum(1 for seeds in opponent if seeds >= 12),
        mover_threat,
    ]


def naive_estimate(board, weights):
    """evaluate() straight from its formula, in Python floats (IEEE doubles, as the kernel's)."""
    values = naive_features(board)
    seeds = sum(int(s) for s in board)
    total = 0.0
    for k in range(FEATURE_COUNT):
        total += values[k] * (float(weights[k]) + float(weights[FEATURE_COUNT + k]) * (seeds / 48))
    return max(-seeds, min(seeds, math.floor(total + 0.5)))


def boards_of(total):
    """Boards of 12 houses with at most `total` seeds, skewed to the small counts play meets."""
    house = st.one_of(st.integers(0, 4), st.integers(0, 30))
    return st.lists(house, min_size=12, max_size=12).filter(lambda board: sum(board) <= total)


@st.composite
def lapping_boards(draw):
    """Boards of up to 48 seeds with one to three big houses (11 to 48 seeds), which
    sow round the board: the moves whose captures are hardest to get right."""
    board = [0] * 12
    for house in draw(st.lists(st.integers(0, 11), min_size=1, max_size=3)):
        board[house] = draw(st.integers(11, 48 - sum(board))) if sum(board) <= 37 else board[house]
    for house in range(12):
        if draw(st.booleans()):
            board[house] += draw(st.integers(0, min(3, 48 - sum(board))))
    return board


@njit
def reference_threat(mover, opponent):
    """The mover's capture threat by playing each legal move (rules.play)."""
    mask = legal_mask(mover, opponent)
    best = 0
    for house in range(6):
        if mask & (1 << house):
            best = max(best, play(mover, opponent, house)[0])
    return best


@njit
def reference_estimates(boards, weights, out):
    """out[i] = evaluate(boards[i]) from features read lane by lane and moves played."""
    count = weights.shape[0] // 2
    for i in range(boards.shape[0]):
        mover, opponent = pack(boards[i])
        values = np.zeros(count)
        values[0] = 1
        values[1] = row_seeds(mover) + row_seeds(opponent)
        values[2] = row_seeds(mover) - row_seeds(opponent)
        for side, word in enumerate((mover, opponent)):
            for lane in range(6):
                seeds = house_seeds(word, lane)
                values[3 + side] += seeds == 0
                values[5 + side] += 1 <= seeds <= 2
                values[7 + side] += seeds >= 12
        values[9] = reference_threat(mover, opponent)
        total = 0.0
        for k in range(count):
            total += values[k] * (weights[k] + weights[count + k] * (values[1] / 48))
        out[i] = max(-values[1], min(values[1], np.floor(total + 0.5)))


@pytest.mark.slow  # 10-50 s: CI runs it on its own line (.ci/run)
@settings(max_examples=200, deadline=None)
@given(boards_of(48))
def test_features_match_the_naive_version(board):
    mover, opponent = map(np.uint64, pack(np.array(board, dtype=np.uint8)))  # as board_features passes them
    assert features(mover, opponent).tolist() == naive_features(board)


@settings(max_examples=300, deadline=None)
@given(lapping_boards())
def test_features_of_boards_that_sow_round_match_the_naive_version(board):
    mover, opponent = map(np.uint64, pack(np.array(board, dtype=np.uint8)))  # as board_features passes them
    assert features(mover, opponent).tolist() == naive_features(board)


def test_board_features_match_features_one_by_one():
    boards = game_positions(20, seed=3)[:500]
    rows = board_features(boards)
    for board, row in zip(boards, rows):
        assert row.tolist() == naive_features(board)


@pytest.mark.slow  # 10-50 s: CI runs it on its own line (.ci/run)
@settings(max_examples=200, deadline=None)
@given(boards_of(48), st.lists(st.floats(-50, 50), min_size=2 * FEATURE_COUNT, max_size=2 * FEATURE_COUNT))
def test_evaluate_is_a_rounded_weighted_sum_within_the_seeds(board, weights):
    weights = np.array(weights)
    mover, opponent = pack(np.array(board, dtype=np.uint8))
    seeds = sum(board)
    estimate = evaluate(mover, opponent, weights)
    assert -seeds <= estimate <= seeds
    f = np.array(naive_features(board), dtype=float)
    exact = float(f @ weights[:FEATURE_COUNT] + (f @ weights[FEATURE_COUNT:]) * seeds / 48)
    if abs(exact) < seeds - 1:
        assert abs(estimate - exact) <= 0.5 + 1e-6
    else:
        assert estimate == max(-seeds, min(seeds, round(exact)))


@settings(max_examples=300, deadline=None)
@given(st.one_of(boards_of(48), lapping_boards()),
       st.one_of(st.just("shipped"), st.lists(st.floats(-20, 20), min_size=2 * FEATURE_COUNT,
                                               max_size=2 * FEATURE_COUNT)))
def test_evaluate_is_exactly_the_formula(board, weights):
    """Not a rounding off: the estimate is that of the formula, to the seed."""
    weights = linear_weights() if weights == "shipped" else np.array(weights)
    mover, opponent = pack(np.array(board, dtype=np.uint8))
    assert evaluate(mover, opponent, weights) == naive_estimate(board, weights)


def test_evaluate_matches_the_reference_on_a_big_sample():
    """Positions from games and random boards (many with big houses), the shipped
    weights and weights that change with the seeds: the kernel and the reference
    (moves played, lanes read one by one) give the same estimate everywhere."""
    rng = np.random.default_rng(16)
    played = game_positions(4000, seed=5)
    spread = rng.multinomial(48, np.full(12, 1 / 12), size=200_000)
    heaped = np.floor(rng.dirichlet(np.full(12, 0.2), size=200_000) * rng.integers(1, 49, size=(200_000, 1)))
    boards = np.vstack([played, np.minimum(spread, rng.integers(0, 30, size=spread.shape)), heaped]).astype(np.uint8)
    varying = np.concatenate([linear_weights()[:FEATURE_COUNT], rng.normal(0, 2, FEATURE_COUNT)])
    for weights in (linear_weights(), varying):
        expected = np.empty(boards.shape[0], np.int64)
        reference_estimates(boards, weights, expected)
        assert np.array_equal(board_estimates(boards, weights), expected)


def test_shipped_weights_load_and_match_their_version():
    # The linear weights, shipped beside the default pattern ones (test_patterns).
    weights = load_weights(linear_weights_path())
    assert weights.shape == (2 * FEATURE_COUNT,)
    assert np.any(weights != 0)
    with open(linear_weights_path()) as handle:
        data = json.load(handle)
    assert data["version"] == WEIGHTS_VERSION
    assert data["features"] == list(FEATURES)
    held = data["fit"]["holdout_pooled"]
    assert held["rmse"] < held["zero_rmse"]  # the shipped fit was better than the 0 leaf above its layers


def test_weights_files_of_another_version_or_features_are_refused(tmp_path):
    good = tmp_path / "good.json"
    save_weights(good, np.arange(2 * FEATURE_COUNT, dtype=float))
    assert load_weights(good).tolist() == list(range(2 * FEATURE_COUNT))
    data = json.loads(good.read_text())
    for change, message in [({"version": 3}, "version 3, this awele reads 1 and 2"),
                            ({"version": 2}, "unknown keys"),  # a linear file called a pattern one
                            ({"features": data["features"][:-1]}, "other features"),
                            ({"flat": data["flat"][:-1]}, "a list of")]:
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({**data, **change}))
        with pytest.raises(EvaluationError, match=message):
            load_weights(bad)
    with pytest.raises(EvaluationError, match="cannot read"):
        load_weights(tmp_path / "missing.json")


@pytest.fixture(scope="module")
def tiny_fit(table_dir):
    return fit(table_dir, FIT_LAYERS, HOLDOUT_LAYERS, games=3000, per_layer=20_000)


def test_fit_on_tiny_tables_beats_the_zero_leaf_on_held_out_layers(tiny_fit, table_dir):
    weights, report = tiny_fit
    assert report["fit_layers"] == FIT_LAYERS and report["holdout_layers"] == HOLDOUT_LAYERS
    for row in report["holdout"]:
        assert row["positions"] > 1000
        assert row["rmse"] < 0.95 * row["zero_rmse"]
    # The report's figures are those of the weights on freshly valued positions.
    boards = game_positions(500, seed=7)
    boards = boards[boards.sum(axis=1) == 11]
    boards = boards[[Position.from_mover_board(b).legal_moves() != [] and 0 in b[6:] for b in boards]]
    with Tablebase(table_dir) as tablebase:
        values = tablebase.values(boards).astype(float)
    estimates = board_estimates(boards, weights)
    assert np.sqrt(np.mean((estimates - values) ** 2)) < np.sqrt(np.mean(values ** 2))


def test_fit_refuses_overlapping_or_missing_layers(table_dir):
    with pytest.raises(EvaluationError, match="both fitted on and held out"):
        fit(table_dir, [5, 6], [6], games=10)
    with pytest.raises(EvaluationError, match="not built"):
        fit(table_dir, [5, 6], [13], games=10)


def test_default_layers_hold_out_the_top_two(table_dir):
    assert default_layers(table_dir) == (list(range(8, 11)), [11, 12])


def test_cli_fit_evaluation_writes_a_weights_file(table_dir, tmp_path):
    out = tmp_path / "weights.json"
    result = CliRunner().invoke(cli, ["fit-evaluation", "--dir", table_dir, "--fit-layers", "6-10", "--holdout",
                                      "11,12", "--games", "500", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["fit_layers"] == [6, 7, 8, 9, 10] and report["holdout_layers"] == [11, 12]
    assert load_weights(out).tolist() == report["weights"]
    bad = CliRunner().invoke(cli, ["fit-evaluation", "--dir", table_dir, "--fit-layers", "6-x", "--holdout", "12"])
    assert bad.exit_code == 2 and "--fit-layers" in bad.output


@pytest.mark.parametrize("evaluation", ["learned", "zero"])
def test_either_leaf_keeps_table_values_exact(table_dir, evaluation):
    """Searches run to the end ("split") are exact and equal to the tables
    whatever scores the horizon leaves met while deepening; depth-limited
    ones far from the tables are estimates within the seeds, never exact."""
    boards = game_positions(300, seed=11)
    boards = boards[np.isin(boards.sum(axis=1), (9, 10)) & (boards[:, 6:] == 0).any(axis=1)]
    boards = boards[np.random.default_rng(5).permutation(boards.shape[0])]
    positions = [Position.from_mover_board(board) for board in boards]
    positions = [position for position in positions if not position.is_over()][:8]
    searcher = Searcher(table_dir, max_table_seeds=8, evaluation=evaluation)
    shallow = Searcher(table_dir, max_table_seeds=2, evaluation=evaluation)
    with Tablebase(table_dir) as tablebase:
        for position in positions:
            result = searcher.search(position, cycles="split")
            assert result.exact and result.value == tablebase.value(position)
            estimate = shallow.search(position, depth=2, cycles="own")
            if not estimate.exact:
                assert estimate.lower is None and -position.seeds <= estimate.value <= position.seeds


def test_unknown_evaluation_is_refused(table_dir):
    with pytest.raises(SearchError, match="evaluation"):
        Searcher(table_dir, max_table_seeds=4, evaluation="neural")


def shipped_data():
    with open(linear_weights_path()) as handle:
        return json.load(handle)


def nested(depth):
    return "[" * depth + "]" * depth


BAD_WEIGHTS = {
    "a huge weight": lambda d: {**d, "flat": [1e308] + d["flat"][1:]},
    "a weight of 1e19": lambda d: {**d, "per_seed": d["per_seed"][:-1] + [1e19]},
    "booleans": lambda d: {**d, "flat": [True] * FEATURE_COUNT},
    "numbers as text": lambda d: {**d, "flat": [str(w) for w in d["flat"]]},
    "a nested shape": lambda d: {**d, "flat": [[d["flat"][:5], d["flat"][5:]]] * 2},
    "a 2x5 shape": lambda d: {**d, "flat": [d["flat"][:5], d["flat"][5:]]},
    "an unknown key": lambda d: {**d, "scale": 2},
    "another scale_seeds": lambda d: {**d, "scale_seeds": 10},
    "scale_seeds as text": lambda d: {**d, "scale_seeds": "48"},
    "version true": lambda d: {**d, "version": True},
    "no per_seed": lambda d: {k: v for k, v in d.items() if k != "per_seed"},
    "a fit report that is a list": lambda d: {**d, "fit": []},
    "a list": lambda d: [d],
}
BAD_TEXT = {
    "NaN": lambda text: text.replace("0.035531", "NaN"),
    "Infinity": lambda text: text.replace("0.035531", "-Infinity"),
    "a key twice": lambda text: text.replace('"version": 1,', '"version": 1, "version": 1,'),
    "empty": lambda text: "",
    "deeply nested": lambda text: nested(200_000),
    "deeply nested object": lambda text: '{"fit": ' * 100_000 + "1" + "}" * 100_000,
    "more than the size limit": lambda text: text + " " * (1 << 20),
}


@pytest.mark.parametrize("case", sorted(BAD_WEIGHTS) + sorted(BAD_TEXT) + ["not UTF-8"])
def test_a_weights_file_not_in_the_formats_exact_shape_is_refused(tmp_path, case):
    """Absurd weights (1e308, 1e19), booleans, numbers as text, nested
    shapes and a scale_seeds the reader does not use were all searched with;
    deeply nested JSON gave a RecursionError. Each is refused, naming the file."""
    path = tmp_path / "weights.json"
    text = json.dumps(shipped_data(), indent=1)
    if case in BAD_WEIGHTS:
        path.write_text(json.dumps(BAD_WEIGHTS[case](shipped_data())))
    elif case in BAD_TEXT:
        path.write_text(BAD_TEXT[case](text))
    else:
        path.write_bytes(text.encode().replace(b"constant", b"\xff\xfeconstant"))
    with pytest.raises(EvaluationError, match="weights.json") as caught:
        load_weights(path)
    assert "\n" not in str(caught.value)
    with pytest.raises(EvaluationError):
        Searcher(str(tmp_path), weights_file=path)  # never searched with


def test_the_shipped_file_passes_the_checks_and_round_trips(tmp_path):
    path = tmp_path / "copy.json"
    path.write_text(json.dumps(shipped_data()))
    assert load_weights(path).tolist() == linear_weights().tolist()
    save_weights(path, load_weights(), {"any": "report"})  # the default, the pattern weights
    assert load_weights(path).tolist() == load_weights().tolist()


@pytest.mark.parametrize("case", ["empty name", "a descriptor", "a list", "bytes", "a folder", "a named pipe",
                                  "/dev/zero", "/dev/urandom"])
def test_a_weights_file_name_that_is_no_regular_file_is_refused_at_once(tmp_path, case):
    """'' meant the shipped weights, an int was read as a file descriptor (and
    closed), a list was a raw TypeError, a named pipe hung the Searcher and
    /dev/zero ended in MemoryError."""
    descriptor = os.open(default_weights_path(), os.O_RDONLY)  # a weights file: it was read, and closed
    names = {"empty name": "", "a descriptor": descriptor, "a list": [default_weights_path()],
             "bytes": default_weights_path().encode(), "a folder": str(tmp_path),
             "a named pipe": str(tmp_path / "pipe"), "/dev/zero": "/dev/zero", "/dev/urandom": "/dev/urandom"}
    os.mkfifo(tmp_path / "pipe")
    try:
        with pytest.raises(EvaluationError) as caught:
            load_weights(names[case])
        assert "\n" not in str(caught.value)
        if case == "empty name":
            assert "empty" in str(caught.value)
        with pytest.raises(EvaluationError):
            Searcher(str(tmp_path), weights_file=names[case])
        os.fstat(descriptor)  # still open
    finally:
        os.close(descriptor)


def test_save_weights_never_writes_through_a_link_nor_leaves_a_file(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    out = tmp_path / "w.json"
    for planted in (f"{out}.tmp", f"{out}.tmp-{os.getpid()}"):
        os.symlink(victim, planted)
    os.symlink(tmp_path / "dangling-target", f"{out}.tmp.dangling")
    save_weights(out, load_weights())
    assert victim.read_text() == "keep me" and load_weights(out).tolist() == load_weights().tolist()
    assert not (tmp_path / "dangling-target").exists()
    folder = tmp_path / "a-folder.json"
    folder.mkdir()
    for target in (folder, tmp_path / "missing" / "w.json", "/proc/awele-w.json"):
        with pytest.raises(EvaluationError, match="cannot write"):
            save_weights(target, load_weights())
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["victim", "w.json", "w.json.tmp", "a-folder.json",
                                                                "w.json.tmp.dangling"])
    with pytest.raises(EvaluationError, match="no fit's"):
        save_weights(out, np.full(2 * FEATURE_COUNT, 1e19))


# `awele fit-evaluation`: arguments checked first, the output written as tables are


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fit_command(*args):
    return CliRunner().invoke(cli, ["fit-evaluation", *map(str, args)])


@pytest.mark.parametrize("args, message", [
    (["--games", 10**30], "--games must be"),
    (["--seed", -1], "--seed must be"),
    (["--seed", 2**64], "--seed must be"),
    (["--per-layer", 0], "--per-layer must be"),
    (["--fit-layers", "0-99999999999", "--holdout", "12"], "--fit-layers"),
    (["--fit-layers", "8-", "--holdout", "12"], "--fit-layers"),
    (["--fit-layers", "8-10", "--holdout", "15-"], "--holdout"),
    (["--fit-layers", "10-8", "--holdout", "12"], "not a range"),
    (["--fit-layers", "8-10", "--holdout", "13"], "not built"),
    (["--fit-layers", "8-10", "--holdout", "10-11"], "both fitted on and held out"),
    (["--out", ""], "--out needs a file name"),
    (["--out", "/no/such/folder/w.json"], "does not exist"),
    (["--out", "/proc/awele-w.json"], "cannot write in /proc"),
])
def test_fit_evaluation_refuses_bad_arguments_before_any_work(table_dir, args, message):
    """--games 10**30 and ranges like 0-99999999999 ended in MemoryError, --seed
    -1 in a traceback, `8-` and `15-` were read as 8 and 15, and a folder
    that cannot be written was found only after the fit."""
    result = fit_command("--dir", table_dir, *args)
    assert result.exit_code == 2, result.output
    assert message in result.output and len(result.output.strip().splitlines()) == 1, result.output
    assert "playouts" not in result.output  # refused before the fit began


def test_fit_evaluation_defaults_refuse_a_gap_below_the_top_layers(table_dir, tmp_path):
    for seeds in (*range(11), 12):
        shutil.copyfile(os.path.join(table_dir, f"awele-{seeds:02d}.h5"), tmp_path / f"awele-{seeds:02d}.h5")
    result = fit_command("--dir", tmp_path, "--games", 10)
    assert result.exit_code == 2 and "lacks layer 11" in result.output, result.output


def test_fit_evaluation_writes_its_output_exclusively_and_leaves_nothing_on_failure(table_dir, tmp_path, monkeypatch):
    """--out X wrote through a link planted at X.tmp (a victim overwritten, a
    dangling link's target created) and left X.tmp on a full disk."""
    victim, dangling = tmp_path / "victim", tmp_path / "created-through-a-link"
    victim.write_text("keep me")
    out = tmp_path / "w.json"
    os.symlink(victim, f"{out}.tmp")
    os.symlink(dangling, f"{out}.tmp-{os.getpid()}")
    small = ["--dir", table_dir, "--fit-layers", "6-9", "--holdout", "10", "--games", 300]
    result = fit_command(*small, "--out", out)
    assert result.exit_code == 0, result.output
    assert victim.read_text() == "keep me" and not dangling.exists() and load_weights(out) is not None
    before = sorted(os.listdir(tmp_path))

    def full_disk(descriptor, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", full_disk)
    result = fit_command(*small, "--out", tmp_path / "full.json")
    monkeypatch.undo()
    assert result.exit_code == 2 and "No space left" in result.output.strip().splitlines()[-1], result.output
    assert sorted(os.listdir(tmp_path)) == before


@pytest.mark.slow  # 10-50 s: CI runs it on its own line (.ci/run)
def test_ctrl_c_stops_a_fit_and_writes_nothing(table_dir, tmp_path):
    import signal
    import subprocess
    import sys

    out = tmp_path / "w.json"
    process = subprocess.Popen([sys.executable, "-m", "solver", "fit-evaluation", "--dir", table_dir, "--games",
                                "100000", "--fit-layers", "4-10", "--holdout", "11-12", "--out", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": ROOT})
    first = process.stderr.readline()  # the playouts are done: the fit is under way
    assert "playouts" in first, first
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130 and "aborted" in err, err
    assert os.listdir(tmp_path) == []
