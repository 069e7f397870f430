"""Fitting the evaluation's weights to the exact values of the tables.

The leaf the search calls, its features and its weights file live in
solver.evaluation; this module plays the games whose positions are valued
(game_positions), reads their exact values from the tables a layer at a time
(valued_positions) and fits the weights by least squares (fit), reporting
their error on held-out layers above the fitted ones against the 0 leaf.
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
    FEATURE_COUNT,
    MAX_WEIGHT,
    SCALE_SEEDS,
    board_estimates,
    board_features,
    capture_threat,
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


def valued_positions(directory: str | os.PathLike, boards: np.ndarray, layers: list[int],
                     per_layer: int, seed: int = 1) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """{seeds: (boards, exact values)}: at most `per_layer` of `boards` per
    layer in `layers` (drawn at random), positions in the index and not over,
    valued from the tables of `directory`, one layer in memory at a time."""
    from .probe import Tablebase  # h5py only when fitting

    seeds = boards.sum(axis=1, dtype=np.int64)
    rng = np.random.default_rng(seed)
    found = {}
    for layer in sorted(layers):
        chosen = boards[seeds == layer]
        keep = np.array([index.packed_in_index(pack(b)[1]) and legal_mask(*pack(b)) != 0 for b in chosen],
                        dtype=bool)
        chosen = chosen[keep] if chosen.shape[0] else chosen
        if chosen.shape[0] > per_layer:
            chosen = chosen[np.sort(rng.choice(chosen.shape[0], per_layer, replace=False))]
        if chosen.shape[0] == 0:
            continue
        with Tablebase(directory) as tablebase:  # read this layer, then give its memory back
            values = tablebase.values(chosen).astype(np.int64)
        found[layer] = (chosen, values)
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
