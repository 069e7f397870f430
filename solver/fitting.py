"""Fitting the evaluation's weights to the exact values of the tables.

The leaf the search calls, its features and its weights file live in
solver.evaluation; this module plays the games whose positions are valued
(game_positions), reads their exact values from the tables a layer at a
time, each file streamed a chunk at a time in rank order (layer_values), and
fits the weights by least squares (fit, fit_patterns), reporting their error
on held-out layers above the fitted ones against the 0 leaf.
It imports solver.evaluation, never the reverse: the search does not load
what reads tables to fit.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from numba import njit

from . import index
from .errors import EvaluationError
from .evaluation import (
    BAND_SIZE,
    FEATURE_COUNT,
    MAX_WEIGHT,
    PATTERN_BANDS,
    PATTERN_COUNT,
    PATTERN_SIZE,
    SCALE_SEEDS,
    board_estimates,
    board_features,
    capture_threat,
    feature_values,
    linear_weights_path,
    load_weights,
    pattern_band,
    pattern_columns,
)
from .limits import MAX_FIT_GAMES, MAX_FIT_PER_LAYER, MAX_FIT_SEED
from .rules import ROW, TOTAL_SEEDS, house_seeds, legal_mask, pack, play

# Positions where play goes ---------------------------------------------------------

OPENING = np.uint64(0x040404040404)  # four seeds in each house of a row
WIN_SEEDS = 25


@njit(cache=True)
def _choose(mover, opponent, mask, random_share):
    """A move of a playout: at random with probability `random_share`, else
    the one that best trades the seeds it captures against the best reply
    capture (ties broken at random)."""
    if np.random.random() < random_share:
        pick = np.random.randint(0, ROW)
        while not mask & (1 << pick):
            pick = (pick + 1) % ROW
        return pick
    best = -1000
    choice = -1
    ties = 0
    for house in range(ROW):
        if mask & (1 << house):
            captured, child_mover, child_opponent = play(mover, opponent, house)
            score = captured - capture_threat(child_mover, child_opponent)
            if score > best:
                best, choice, ties = score, house, 1
            elif score == best:
                ties += 1
                if np.random.randint(0, ties) == 0:
                    choice = house
    return choice


@njit(cache=True)
def _playouts(games, seed, opening_plies, random_share, max_plies, out):
    """Play `games` games from the opening and write every position met (mover
    view, before the game is over) into out; returns how many.

    Each game opens with 1..opening_plies random moves, then plays _choose
    with a share of random moves drawn in [0, 2 * random_share], and stops
    when the game is over (rules 5 and 6, 25 seeds, 24-24) or after
    max_plies plies. Repetitions do not end a playout (a cycle runs to
    max_plies, its positions kept once by game_positions).
    """
    np.random.seed(seed)
    count = 0
    for _ in range(games):
        mover = OPENING
        opponent = OPENING
        mover_store = 0
        opponent_store = 0
        opening = 1 + np.random.randint(0, opening_plies)
        share = 2.0 * random_share * np.random.random()
        for ply in range(max_plies):
            mask = legal_mask(mover, opponent)
            if mask == 0 or mover_store >= WIN_SEEDS or opponent_store >= WIN_SEEDS:
                break
            if mover_store == WIN_SEEDS - 1 and opponent_store == WIN_SEEDS - 1:
                break
            for lane in range(ROW):
                out[count, lane] = house_seeds(mover, lane)
                out[count, ROW + lane] = house_seeds(opponent, lane)
            count += 1
            house = _choose(mover, opponent, mask, 1.0 if ply < opening else share)
            captured, child_mover, child_opponent = play(mover, opponent, house)
            mover, opponent = child_mover, child_opponent
            mover_store, opponent_store = opponent_store, mover_store + captured
    return count


def game_positions(games: int, seed: int = 1, opening_plies: int = 8, random_share: float = 0.15,
                   max_plies: int = 300) -> np.ndarray:
    """Distinct mover-view boards (N, 12) met in `games` playouts (see _playouts)."""
    out = np.empty((games * max_plies, 12), np.uint8)
    count = _playouts(games, seed, opening_plies, random_share, max_plies, out)
    boards = np.ascontiguousarray(out[:count])
    return np.unique(boards.view(np.dtype((np.void, 12))).ravel()).view(np.uint8).reshape(-1, 12)


# Fitting ---------------------------------------------------------------------------


def _design(feature_rows, per_seed):
    """Least-squares design matrix: the features, and the features times
    n / SCALE_SEEDS when the weights may change with the seeds on board."""
    if not per_seed:
        return feature_rows
    return np.hstack([feature_rows, feature_rows * (feature_rows[:, 1:2] / SCALE_SEEDS)])


def _scores(values, estimates):
    """RMSE and sign agreement of estimates against exact values."""
    values = values.astype(np.float64)
    estimates = estimates.astype(np.float64)
    return (float(np.sqrt(np.mean((estimates - values) ** 2))),
            float(np.mean(np.sign(estimates) == np.sign(values))))


def _layer_report(seeds, values, estimates):
    rmse, sign = _scores(values, estimates)
    zero_rmse, zero_sign = _scores(values, np.zeros_like(values))
    return {"seeds": int(seeds), "positions": int(values.shape[0]), "rmse": round(rmse, 4),
            "zero_rmse": round(zero_rmse, 4), "sign_agreement": round(sign, 4),
            "zero_sign_agreement": round(zero_sign, 4)}


def _pooled(rows):
    """Position-weighted means of the per-layer figures."""
    total = sum(row["positions"] for row in rows)
    if not total:
        return {"positions": 0}
    pooled: dict[str, Any] = {"positions": total}
    for key in ("rmse", "zero_rmse"):
        pooled[key] = round(float(np.sqrt(sum(row[key] ** 2 * row["positions"] for row in rows) / total)), 4)
    for key in ("sign_agreement", "zero_sign_agreement"):
        pooled[key] = round(sum(row[key] * row["positions"] for row in rows) / total, 4)
    return pooled


def layer_values(directory: str | os.PathLike, layer: int, boards: np.ndarray) -> np.ndarray:
    """Exact values (int64) of `boards`, all of layer `layer` and in the
    index, read from its file in rank order a chunk at a time, each chunk's
    CRC checked before a value of it is used (tables.ChunkReader): a few
    hundred KiB of memory whatever the layer's size, so a fit can read the
    largest layers beside a build that holds the machine's memory."""
    from . import tables  # h5py only when fitting

    values = np.zeros(boards.shape[0], dtype=np.int64)
    if boards.shape[0] == 0:
        return values
    ranks = index.rank_boards(np.ascontiguousarray(boards, dtype=np.uint8), layer)
    order = np.argsort(ranks, kind="stable")
    chunks = ranks[order] // tables.CHUNK
    edges = np.flatnonzero(np.diff(chunks)) + 1
    reader = tables.ChunkReader(directory, layer, cache_chunks=1)
    try:
        for run in np.split(order, edges):
            chunk = reader.chunk(int(ranks[run[0]] // tables.CHUNK))
            values[run] = chunk[ranks[run] % tables.CHUNK]
    finally:
        reader.close()
    return values


def valued_positions(directory: str | os.PathLike, boards: np.ndarray, layers: list[int],
                     per_layer: int, seed: int = 1) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """{seeds: (boards, exact values)}: at most `per_layer` of `boards` per
    layer in `layers` (drawn at random), positions in the index and not over,
    valued from the tables of `directory` (layer_values)."""
    seeds = boards.sum(axis=1, dtype=np.int64)
    rng = np.random.default_rng(seed)
    found = {}
    for layer in sorted(layers):
        chosen = np.ascontiguousarray(boards[seeds == layer])
        chosen = chosen[_playable(chosen)]
        if chosen.shape[0] > per_layer:
            chosen = chosen[np.sort(rng.choice(chosen.shape[0], per_layer, replace=False))]
        if chosen.shape[0] == 0:
            continue
        found[layer] = (chosen, layer_values(directory, layer, chosen))
    return found


def fit(directory: str | os.PathLike, fit_layers: list[int], holdout_layers: list[int], games: int = 20_000,
        per_layer: int = 200_000, per_seed: bool = True, seed: int = 1,
        progress: Any = None) -> tuple[np.ndarray, dict[str, Any]]:
    """Fit the evaluation weights to exact values of `fit_layers` and measure
    them on `holdout_layers` (layers above the fit: extrapolation upward).

    Positions come from `games` playouts (game_positions), at most
    `per_layer` per layer; every fitted layer weighs the same in the least
    squares. Returns (weights, report): the report gives, per layer and
    pooled over the held-out layers, the RMSE and the sign agreement of the
    estimates (rounded and clipped, as the search uses them) against the
    exact values, next to those of the 0 leaf.
    """
    fit_layers, holdout_layers = check_fit_layers(directory, fit_layers, holdout_layers)
    for name, number, low, high in (("games", games, 1, MAX_FIT_GAMES), ("per_layer", per_layer, 1, MAX_FIT_PER_LAYER),
                                    ("seed", seed, 0, MAX_FIT_SEED)):
        if isinstance(number, bool) or not isinstance(number, (int, np.integer)) or not low <= number <= high:
            raise EvaluationError(f"{name} must be a whole number {low:,}..{high:,}, got {number!r}")

    say = progress or (lambda text: None)
    boards = game_positions(games, seed)
    say(f"{boards.shape[0]:,} distinct positions from {games:,} playouts")
    valued = {}
    for layer in fit_layers + holdout_layers:
        valued.update(valued_positions(directory, boards, [layer], per_layer, seed))
        if layer in valued:
            say(f"layer {layer}: {valued[layer][0].shape[0]:,} positions valued")
    fitted = [n for n in fit_layers if n in valued]
    if not fitted:
        raise EvaluationError(f"no playout position has {fit_layers} seeds: play more games")

    rows, targets, row_weights = [], [], []
    for layer in fitted:
        layer_boards, values = valued[layer]
        rows.append(_design(board_features(layer_boards), per_seed))
        targets.append(values.astype(np.float64))
        row_weights.append(np.full(values.shape[0], 1.0 / np.sqrt(values.shape[0])))
    design = np.vstack(rows)
    target = np.concatenate(targets)
    scale = np.concatenate(row_weights)
    solution = np.linalg.lstsq(design * scale[:, None], target * scale, rcond=None)[0]
    weights = np.zeros(2 * FEATURE_COUNT)
    weights[: solution.shape[0]] = solution
    if not np.all(np.isfinite(weights)) or np.any(np.abs(weights) > MAX_WEIGHT):
        raise EvaluationError(f"the fit gave weights beyond +-{MAX_WEIGHT:g}: the positions valued do not "
                              "determine them; fit on more layers or more games")

    def report_rows(layers):
        return [_layer_report(n, valued[n][1], board_estimates(valued[n][0], weights)) for n in layers if n in valued]

    report = {
        "games": games,
        "per_layer": per_layer,
        "per_seed": per_seed,
        "seed": seed,
        "fit_layers": fitted,
        "holdout_layers": [n for n in holdout_layers if n in valued],
        "fit": report_rows(fitted),
        "holdout": report_rows(holdout_layers),
    }
    report["holdout_pooled"] = _pooled(report["holdout"])
    report["fit_pooled"] = _pooled(report["fit"])
    return weights, report


def check_fit_layers(directory: str | os.PathLike, fit_layers: Any, holdout_layers: Any) -> tuple[list[int], list[int]]:
    """(fit layers, held-out layers), sorted, once they are layers 0..48 that
    are built in `directory`, some to fit on and none both fitted and held
    out; EvaluationError otherwise."""
    from .tables import built_layers

    chosen = []
    for name, layers in (("fit layers", fit_layers), ("held-out layers", holdout_layers)):
        try:
            numbers = list(layers)
        except TypeError:
            raise EvaluationError(f"the {name} must be a list of seed counts, got {layers!r}") from None
        if any(isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 0 <= n <= TOTAL_SEEDS
               for n in numbers):
            raise EvaluationError(f"the {name} must be seed counts 0..{TOTAL_SEEDS}, got {numbers!r}")
        chosen.append(sorted({int(n) for n in numbers}))
    fitted, held = chosen
    if not fitted:
        raise EvaluationError("no layers to fit on")
    if set(fitted) & set(held):
        raise EvaluationError(f"layers {sorted(set(fitted) & set(held))} cannot be both fitted on and held out")
    built = set(built_layers(directory))
    missing = [n for n in fitted + held if n not in built]
    if missing:
        raise EvaluationError(f"layers {missing} are not built in {directory}")
    return fitted, held


def default_layers(directory: str | os.PathLike, holdout: int = 2, lowest: int = 8) -> tuple[list[int], list[int]]:
    """(fit layers, held-out layers) from the tables of `directory`: the top
    `holdout` consecutive layers held out, the ones from `lowest` below them fitted."""
    from .tables import built_layers

    built = set(built_layers(directory))
    top = -1
    while top + 1 in built:
        top += 1
    if built - set(range(top + 1)):
        # The top two built would be held out; with a gap below them, which
        # ones are meant is the user's to say.
        raise EvaluationError(f"{directory} lacks layer {top + 1} below the layers built up to {max(built)}: "
                              "build it, or give --fit-layers and --holdout")
    consecutive = list(range(top + 1))
    if len(consecutive) <= holdout:
        raise EvaluationError(f"{directory} has tables of 0..{top} seeds: too few to fit and hold out {holdout}")
    held = consecutive[-holdout:] if holdout else []
    fitted = [n for n in consecutive[: len(consecutive) - holdout] if n >= lowest]
    if not fitted:
        raise EvaluationError(f"{directory} has no layer from {lowest} seeds below the held-out {held}")
    return fitted, held


# Pattern weights (version 2) ------------------------------------------------------
#
# The design matrix of a band has BAND_SIZE columns: the FEATURE_COUNT linear
# features, and one column per table entry, one-hot: a position sets exactly
# PATTERN_COUNT of them (evaluation.pattern_columns). The normal equations
# X^T X w = X^T y are accumulated position by position over those
# FEATURE_COUNT + PATTERN_COUNT columns only (58, so 1,711 products a
# position, upper triangle), never forming X: a band's X^T X is BAND_SIZE^2
# floats (672 MB) whatever the number of positions. Each band is a system of
# its own (its positions set only its own columns), accumulated from its
# layers, solved and freed before the next. Ridge: RIDGE is added to the
# diagonal, which pulls an entry seen in few positions toward 0 (an entry
# never seen stays exactly 0) and makes the system definite, although the
# entries of every pattern sum to the constant.

RIDGE = 10.0
ACTIVE_COLUMNS = FEATURE_COUNT + PATTERN_COUNT


@njit(cache=True)
def _accumulate(boards, values, gram, moments):
    """Add the positions `boards` (mover view, all of one band) with exact
    `values` to a band's normal equations: the upper triangle of gram (X^T X)
    and moments (X^T y)."""
    columns = np.empty(ACTIVE_COLUMNS, np.int64)
    entries = np.empty(ACTIVE_COLUMNS, np.float64)
    for k in range(FEATURE_COUNT):
        columns[k] = k
    for i in range(boards.shape[0]):
        mover, opponent = pack(boards[i])
        values_i = feature_values(mover, opponent)
        for k in range(FEATURE_COUNT):
            entries[k] = values_i[k]
        pattern_columns(mover, opponent, columns[FEATURE_COUNT:])
        for k in range(FEATURE_COUNT, ACTIVE_COLUMNS):
            entries[k] = 1.0
        target = values[i]
        for a in range(ACTIVE_COLUMNS):
            row = columns[a]
            weight = entries[a]
            moments[row] += weight * target
            for b in range(ACTIVE_COLUMNS):
                column = columns[b]
                if column >= row:
                    gram[row, column] += weight * entries[b]


@njit(cache=True)
def _mirror(gram):
    """Fill the lower triangle of a square matrix from its upper one, in place."""
    for row in range(gram.shape[0]):
        for column in range(row):
            gram[row, column] = gram[column, row]


def _solve_definite(matrix: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Solve matrix @ x = right, matrix symmetric positive definite, by a
    Cholesky factorisation (LAPACK, on every core) and two triangular solves:
    exact to rounding, in a fixed time. A band's 9,166 unknowns take
    n^3/3 = 2.6e11 multiply-adds, about as many as the 1,100-1,300 steps the
    preconditioned conjugate gradients took, but at the speed of the
    processor rather than of memory (each step read the 672 MB matrix once).
    A matrix that is not definite raises EvaluationError."""
    try:
        lower = np.linalg.cholesky(matrix)
    except np.linalg.LinAlgError:
        raise EvaluationError("the fit's normal equations are not definite: raise the ridge") from None
    solution = right.astype(np.float64)  # a copy, solved in place
    _forward(lower, solution)
    _backward(lower, solution)
    return solution


@njit(cache=True)
def _forward(lower, vector):
    """vector <- lower^-1 @ vector (lower triangular), in place."""
    for row in range(lower.shape[0]):
        total = vector[row]
        for column in range(row):
            total -= lower[row, column] * vector[column]
        vector[row] = total / lower[row, row]


@njit(cache=True)
def _backward(lower, vector):
    """vector <- lower^-T @ vector (lower triangular, so its transpose is
    upper), in place, reading lower by rows as it is laid out."""
    for row in range(lower.shape[0] - 1, -1, -1):
        vector[row] /= lower[row, row]
        value = vector[row]
        for column in range(row):
            vector[column] -= lower[row, column] * value


def drawn_positions(seeds: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """About `count` boards of layer `seeds` drawn uniformly by rank (with
    replacement), those where the mover has a move: the positions a search's
    horizon may meet, not only those of games."""
    size = index.layer_size(seeds)
    ranks = rng.integers(0, size, size=min(count, size), dtype=np.int64)
    boards = index.unrank_boards(seeds, ranks)
    return np.ascontiguousarray(boards[_playable(boards)])


@njit(cache=True)
def _playable(boards):
    """Which boards are in the index and have a move for the mover (a leaf)."""
    keep = np.zeros(boards.shape[0], np.bool_)
    for i in range(boards.shape[0]):
        mover, opponent = pack(boards[i])
        keep[i] = index.packed_in_index(opponent) and legal_mask(mover, opponent) != 0
    return keep


def _layer_samples(directory: str | os.PathLike, games_boards: np.ndarray, layer: int, per_layer: int,
                   drawn: int, rng: np.random.Generator) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """{"games": (boards, values), "drawn": (boards, values)} of one layer,
    valued by layer_values."""
    samples = {}
    chosen = np.ascontiguousarray(games_boards[games_boards.sum(axis=1, dtype=np.int64) == layer])
    chosen = chosen[_playable(chosen)]
    if chosen.shape[0] > per_layer:
        chosen = chosen[np.sort(rng.choice(chosen.shape[0], per_layer, replace=False))]
    random_boards = drawn_positions(layer, drawn, rng) if drawn else np.zeros((0, 12), np.uint8)
    for kind, boards in (("games", chosen), ("drawn", random_boards)):
        samples[kind] = (np.ascontiguousarray(boards), layer_values(directory, layer, boards))
    return samples


def _compare(seeds: int, kind: str, values: np.ndarray, boards: np.ndarray, leaves: dict[str, np.ndarray]
             ) -> dict[str, Any]:
    """One report row: the RMSE of each leaf (rounded and clipped, as the
    search uses it) on these positions, and the 0 leaf's."""
    row: dict[str, Any] = {"seeds": int(seeds), "positions": kind, "count": int(values.shape[0])}
    for name, weights in leaves.items():
        estimates = board_estimates(boards, weights) if weights.shape[0] else np.zeros_like(values)
        row[f"{name}_rmse"] = round(_scores(values, estimates)[0], 4) if values.shape[0] else None
    return row


def _pooled_rows(rows: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    """Count-weighted root-mean-square of each leaf's RMSE over rows."""
    total = sum(row["count"] for row in rows)
    pooled: dict[str, Any] = {"count": total}
    for name in names:
        key = f"{name}_rmse"
        pooled[key] = (round(float(np.sqrt(sum(row[key] ** 2 * row["count"] for row in rows if row["count"])
                                           / total)), 4) if total else None)
    return pooled


def fit_patterns(directory: str | os.PathLike, fit_layers: list[int], holdout_layers: list[int],
                 games: int = 20_000, per_layer: int = 200_000, drawn: int = 1_000_000, ridge: float = RIDGE,
                 seed: int = 1, baseline: np.ndarray | None = None,
                 progress: Any = None) -> tuple[np.ndarray, dict[str, Any]]:
    """Fit pattern (version 2) weights to exact values of `fit_layers` and
    measure them on `holdout_layers`.

    Each layer gives at most `per_layer` positions from `games` playouts
    (game_positions) and about `drawn` drawn uniformly by rank
    (drawn_positions), valued from its table, read once and let go; each band
    of PATTERN_BANDS is fitted by ridge least squares (RIDGE) on its layers
    through its normal equations (see above). Returns (weights, report): the
    report gives, per layer and kind of position ("games", "drawn"), the RMSE
    of the pattern leaf, of `baseline` (default: the shipped linear weights)
    and of the 0 leaf, pooled over the held-out layers per kind.
    """
    fit_layers, holdout_layers = check_fit_layers(directory, fit_layers, holdout_layers)
    for name, number, low, high in (("games", games, 1, MAX_FIT_GAMES), ("per_layer", per_layer, 0, MAX_FIT_PER_LAYER),
                                    ("drawn", drawn, 0, MAX_FIT_PER_LAYER), ("seed", seed, 0, MAX_FIT_SEED)):
        if isinstance(number, bool) or not isinstance(number, (int, np.integer)) or not low <= number <= high:
            raise EvaluationError(f"{name} must be a whole number {low:,}..{high:,}, got {number!r}")
    if not (isinstance(ridge, (int, float)) and not isinstance(ridge, bool) and 0 < ridge <= 1e9):
        raise EvaluationError(f"ridge must be a number above 0, got {ridge!r}")
    if per_layer == 0 and drawn == 0:
        raise EvaluationError("no positions to fit on: give per_layer or drawn above 0")

    say = progress or (lambda text: None)
    rng = np.random.default_rng(seed)
    games_boards = game_positions(games, seed)
    say(f"{games_boards.shape[0]:,} distinct positions from {games:,} playouts")
    weights = np.zeros((len(PATTERN_BANDS), BAND_SIZE))
    fitted: dict[int, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
    for band in range(len(PATTERN_BANDS)):
        layers = [n for n in fit_layers if pattern_band(n) == band]
        if not layers:
            continue
        gram = np.zeros((BAND_SIZE, BAND_SIZE))
        moments = np.zeros(BAND_SIZE)
        for layer in layers:
            samples = _layer_samples(directory, games_boards, layer, per_layer, drawn, rng)
            for boards, values in samples.values():
                _accumulate(boards, values.astype(np.float64), gram, moments)
            fitted[layer] = samples
            say(f"layer {layer}: {samples['games'][0].shape[0]:,} positions of games and "
                f"{samples['drawn'][0].shape[0]:,} drawn, valued and added")
        _mirror(gram)
        # A column no position sets (an entry never seen) has weight 0: the
        # system is solved on the others only, a smaller one.
        seen = np.flatnonzero(np.diag(gram) > 0)
        system = gram[np.ix_(seen, seen)]
        del gram
        system[np.diag_indices(seen.shape[0])] += ridge
        weights[band, seen] = _solve_definite(system, moments[seen])
        del system
        say(f"band {band} (layers {layers}): {seen.shape[0]:,} weights solved")
    if not fitted:
        raise EvaluationError(f"no positions of layers {fit_layers} to fit on")
    weights = weights.reshape(PATTERN_SIZE)
    if not np.all(np.isfinite(weights)) or np.any(np.abs(weights) > MAX_WEIGHT):
        raise EvaluationError(f"the fit gave weights beyond +-{MAX_WEIGHT:g}: raise the ridge or value more positions")

    linear = load_weights(linear_weights_path()) if baseline is None else baseline
    leaves = {"patterns": weights, "linear": linear, "zero": np.zeros(0)}
    names = list(leaves)

    def rows_of(layer: int, samples: dict[str, tuple[np.ndarray, np.ndarray]]) -> list[dict[str, Any]]:
        return [_compare(layer, kind, values, boards, leaves) for kind, (boards, values) in samples.items()]

    fit_rows = [row for layer in sorted(fitted) for row in rows_of(layer, fitted[layer])]
    fitted_layers = sorted(fitted)
    del fitted
    holdout_rows = []
    for layer in holdout_layers:
        holdout_rows += rows_of(layer, _layer_samples(directory, games_boards, layer, per_layer, drawn, rng))
        say(f"layer {layer} measured (held out)")
    report = {
        "kind": "patterns",
        "games": games,
        "per_layer": per_layer,
        "drawn": drawn,
        "ridge": ridge,
        "seed": seed,
        "fit_layers": fitted_layers,
        "holdout_layers": holdout_layers,
        "fit": fit_rows,
        "holdout": holdout_rows,
        "holdout_pooled": {kind: _pooled_rows([r for r in holdout_rows if r["positions"] == kind], names)
                           for kind in ("games", "drawn")},
    }
    return weights, report
