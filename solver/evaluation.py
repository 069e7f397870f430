"""An evaluation of positions above the tables, learned from the tables' exact values.

>>> weights = load_weights()
>>> mover, opponent = Position.initial().packed()
>>> estimate = evaluate(mover, opponent, weights)
>>> -48 <= estimate <= 48
True

A horizon leaf of the search gets an estimate of d, the seeds the mover will
capture from here minus the opponent's (RULES.md), instead of 0. The estimate
is a weighted sum of a few features of the two row words::

    d ~ sum_k f_k * (w_k + v_k * n / 48)

where n is the number of seeds on the board: each weight may change linearly
with n (v = 0 for a flat model), so that what is learned on the layers that
have tables says something about the fuller boards above them. The result is
rounded and clipped to [-n, n], the values a position of n seeds can have.

The weights are fitted by least squares to exact values of positions from
games (random playouts biased to sensible moves, from varied openings), kept
where their seed count has a table, and measured on held-out layers above
the fitted ones, against the 0 leaf: see :func:`fit`. The shipped weights live
in ``solver/data/evaluation-v1.json``; ``awele fit-evaluation`` refits them.
"""

from __future__ import annotations

import json
import math
import os
import stat
from importlib import resources
from typing import Any

import numpy as np
from numba import njit

from . import index
from .errors import EvaluationError
from .limits import MAX_FIT_GAMES, MAX_FIT_PER_LAYER, MAX_FIT_SEED
from .position import Position  # noqa: F401 (the doctest)
from .rules import (
    LANE_BITS,
    LANE_MASK,
    ROW,
    ROW_ONES,
    SUM_LANES,
    TOTAL_SEEDS,
    house_seeds,
    legal_mask,
    pack,
    play,
    row_seeds,
)

WEIGHTS_VERSION = 1
WEIGHTS_FILE = f"evaluation-v{WEIGHTS_VERSION}.json"
SCALE_SEEDS = 48  # n / SCALE_SEEDS multiplies the second row of weights
LAP_SEEDS = 12  # a house with this many seeds sows round the whole board

# The features, in the order the kernel computes them ("mover": the side to
# move; his capture threat is the most seeds one of his moves captures).
# Measured and left out (fit on layers 8-18, RMSE on 19-21 moved by 0.01 or
# less, each costing time at every leaf): the opponent's threat as if it were
# his turn (the mover moves first), and both sides' legal moves (nearly
# six minus the empty houses). Per-house counts fitted the lower layers
# better and extrapolated worse (layer 21: 4.68 against 4.38).
FEATURES = (
    "constant",
    "seeds on board",
    "seeds on mover's side minus opponent's",
    "mover's empty houses",
    "opponent's empty houses",
    "mover's houses of 1-2 seeds",
    "opponent's houses of 1-2 seeds",
    "mover's houses of 12+ seeds",
    "opponent's houses of 12+ seeds",
    "mover's capture threat",
)
FEATURE_COUNT = len(FEATURES)
THREAT_FEATURE = FEATURES.index("mover's capture threat")


# Kernels ---------------------------------------------------------------------------


LANE_TOPS = np.uint64(0x80) * ROW_ONES  # the top bit of each of the six lanes of a row


@njit(cache=True, inline="always")
def _lanes_at_least(word, seeds):
    """How many of the six lanes of a row word hold `seeds` (1..48) or more.

    Adding 128 - seeds to every lane sets a lane's top bit exactly when it
    holds at least `seeds`: a lane holds at most 48, so the sum stays below
    256 and never carries into the next lane."""
    tops = ((word + np.uint64(128 - seeds) * ROW_ONES) & LANE_TOPS) >> np.uint64(7)
    return np.int64((tops * SUM_LANES) >> np.uint64(56))


@njit(cache=True, inline="always")
def _row_shape(word):
    """(empty houses, houses of 1-2 seeds, houses of 12+ seeds) of one row word."""
    filled = _lanes_at_least(word, 1)
    return ROW - filled, filled - _lanes_at_least(word, 3), _lanes_at_least(word, LAP_SEEDS)


def _landing_table() -> np.ndarray:
    """LANDINGS[house, seeds]: bit 8 * (a - 1) + j set when sowing `seeds`
    from the mover's `house` ends on the opponent's lane j, having put a seeds
    into each of his lanes 0..j (and a - 1 into the lanes above j).

    Sowing k seeds from house h ends on house h + k for k <= 11 - h (a = 1);
    each lap round the board (11 houses, the origin skipped) adds one seed to
    every opponent's lane, so the move ends on lane j with a seeds sown there
    exactly when h + k = 11 * a - 5 + j."""
    table = np.zeros((ROW, TOTAL_SEEDS + 1), np.uint64)
    for house in range(ROW):
        for seeds in range(1, TOTAL_SEEDS + 1):
            for sown in range(1, MAX_SOWN + 1):
                lane = house + seeds - (11 * sown - 5)
                if 0 <= lane < ROW:
                    table[house, seeds] |= np.uint64(1) << np.uint64(8 * (sown - 1) + lane)
    return table


MAX_SOWN = 4  # 48 seeds go round the board at most four times (44 = 4 * 11)
LANDINGS = _landing_table()
DEEP_TEST = np.uint64(128 - 23) * ROW_ONES  # a lane of 23 seeds or more goes round twice


@njit(cache=True, inline="always")
def _chain_capture(opponent, landings, sown):
    """The most seeds captured by a move that ends on one of the opponent's
    lanes flagged in `landings` (bit j: lane j) having sown `sown` seeds into
    each of his lanes 0..j (and sown - 1 into the lanes above).

    Such a move captures the lanes from j down that hold 2 or 3 seeds after
    sowing, unless they are all the seeds the opponent has (a grand slam
    captures nothing): the lanes 0..j all taken and, for sown = 1, no seed
    above j (for sown > 1 every lane above j got a seed). The chain ending at
    each lane is carried up the row in one pass, without branches."""
    best = 0
    chain = 0
    length = 0
    for lane in range(ROW):
        seeds = house_seeds(opponent, lane) + sown
        taken = np.int64(np.uint64(seeds - 2) < np.uint64(2))  # 2 or 3 seeds
        chain = (chain + seeds) * taken
        length = (length + 1) * taken
        if sown == 1:
            rest_empty = np.int64((opponent >> np.uint64(LANE_BITS * (lane + 1))) == 0)
        else:
            rest_empty = np.int64(lane == ROW - 1)
        slam = np.int64(length == lane + 1) & rest_empty
        landed = np.int64((landings >> np.uint64(lane)) & np.uint64(1))
        best = max(best, chain * landed * (1 - slam))
    return best


@njit(cache=True, inline="always")
def _threat(mover, opponent):
    """The most seeds one move of the mover captures (that of rules.play).

    Which lanes the mover's moves end on comes from LANDINGS, one lookup per
    house; what a move ending there captures depends only on that lane and on
    how many seeds each lane got (_chain_capture). No move is played. An
    illegal move (rule 5: the opponent is empty and it does not reach him)
    ends on the mover's side and captures nothing, so legality is not needed."""
    landings = np.uint64(0)
    for house in range(ROW):
        landings |= LANDINGS[house, house_seeds(mover, house)]
    best = max(_chain_capture(opponent, landings & LANE_MASK, 1),
               _chain_capture(opponent, (landings >> np.uint64(8)) & LANE_MASK, 2))
    if (mover + DEEP_TEST) & LANE_TOPS:  # rare: a house that goes round twice or more
        for sown in range(3, MAX_SOWN + 1):
            best = max(best, _chain_capture(opponent, (landings >> np.uint64(8 * (sown - 1))) & LANE_MASK, sown))
    return best


@njit(cache=True, inline="always")
def _features(mover, opponent):
    """The FEATURES of a packed position, as a tuple of ints (see FEATURES)."""
    mover_seeds = row_seeds(mover)
    opponent_seeds = row_seeds(opponent)
    mover_empty, mover_low, mover_laps = _row_shape(mover)
    opponent_empty, opponent_low, opponent_laps = _row_shape(opponent)
    mover_threat = _threat(mover, opponent)
    return (
        1,
        mover_seeds + opponent_seeds,
        mover_seeds - opponent_seeds,
        mover_empty,
        opponent_empty,
        mover_low,
        opponent_low,
        mover_laps,
        opponent_laps,
        mover_threat,
    )


@njit(cache=True)
def features(mover: np.uint64, opponent: np.uint64) -> np.ndarray:
    """The FEATURES of a packed position as a float64 array."""
    values = _features(mover, opponent)
    out = np.empty(FEATURE_COUNT, np.float64)
    for k in range(FEATURE_COUNT):
        out[k] = values[k]
    return out


@njit(cache=True, inline="always")
def evaluate(mover: np.uint64, opponent: np.uint64, weights: np.ndarray) -> np.int64:
    """Estimated d of a packed position that is not over: the weighted
    features (weights: the 2 * FEATURE_COUNT floats of load_weights), rounded
    and clipped to [-n, n]."""
    return evaluate_and_threat(mover, opponent, weights)[0]


@njit(cache=True, inline="always")
def evaluate_and_threat(mover: np.uint64, opponent: np.uint64, weights: np.ndarray) -> tuple[np.int64, np.int64]:
    """(evaluate(), the most seeds one move of the mover captures): a leaf
    that searches its captures needs both, and the features hold the second."""
    values = _features(mover, opponent)
    threat = np.int64(values[THREAT_FEATURE])
    seeds = values[1]
    scale = seeds / SCALE_SEEDS
    total = 0.0
    for k in range(FEATURE_COUNT):
        total += values[k] * (weights[k] + weights[FEATURE_COUNT + k] * scale)
    estimate = np.int64(np.floor(total + 0.5))
    if estimate > seeds:
        return np.int64(seeds), threat
    if estimate < -seeds:
        return np.int64(-seeds), threat
    return estimate, threat


@njit(cache=True)
def _board_features(boards, out):
    """out[i] = features of boards[i] (mover view)."""
    for i in range(boards.shape[0]):
        mover, opponent = pack(boards[i])
        out[i] = features(mover, opponent)


@njit(cache=True)
def _board_estimates(boards, weights, out):
    """out[i] = evaluate(boards[i]) (mover view)."""
    for i in range(boards.shape[0]):
        mover, opponent = pack(boards[i])
        out[i] = evaluate(mover, opponent, weights)


def board_features(boards: np.ndarray) -> np.ndarray:
    """The (N, FEATURE_COUNT) features of an (N, 12) array of mover-view boards."""
    boards = np.ascontiguousarray(boards, dtype=np.uint8)
    out = np.empty((boards.shape[0], FEATURE_COUNT), np.float64)
    _board_features(boards, out)
    return out


def board_estimates(boards: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """evaluate() of each row of an (N, 12) array of mover-view boards."""
    boards = np.ascontiguousarray(boards, dtype=np.uint8)
    out = np.empty(boards.shape[0], np.int64)
    _board_estimates(boards, np.ascontiguousarray(weights, dtype=np.float64), out)
    return out


# Weights file ----------------------------------------------------------------------


def default_weights_path() -> str:
    """The weights shipped with the package (solver/data/evaluation-v1.json)."""
    return str(resources.files("solver") / "data" / WEIGHTS_FILE)


MAX_WEIGHTS_BYTES = 1 << 20  # a weights file is a few kilobytes (the shipped one: 3 KB)
# Every feature that is not 0 is at least 1 in size and an estimate is clipped
# to the 48 seeds, so a weight far beyond 48 only lives by cancelling others:
# a fit of the tables' values gives weights of a few seeds (the shipped ones,
# 3 at most), and one beyond this is no fit's.
MAX_WEIGHT = 1000.0
WEIGHTS_KEYS = {"version", "features", "scale_seeds", "flat", "per_seed", "fit"}
WEIGHTS_REQUIRED = WEIGHTS_KEYS - {"fit"}


def _weights_name(path: Any) -> str:
    """The file name of a weights_file argument, refusing what is none (an
    empty name, a number, a list, bytes)."""
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise EvaluationError(f"the evaluation weights file must be a file name, got {path!r}")
    name = os.fspath(path)
    if not isinstance(name, str):
        raise EvaluationError(f"the evaluation weights file must be a file name as text, got {name!r}")
    if not name:
        raise EvaluationError("the evaluation weights file name is empty: give a file, or none for the shipped weights")
    return name


def _read_weights_file(name: str) -> bytes:
    """The bytes of a regular file of at most MAX_WEIGHTS_BYTES. Opened without
    blocking, so that a named pipe is refused rather than waited on."""
    try:
        descriptor = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise EvaluationError(f"cannot read the evaluation weights {name}: {reason}") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise EvaluationError(f"{name}: the evaluation weights must be a regular file, not a "
                                  f"{_file_kind(status.st_mode)}")
        if status.st_size > MAX_WEIGHTS_BYTES:
            raise EvaluationError(f"{name}: {status.st_size:,} bytes is no evaluation weights file "
                                  f"(at most {MAX_WEIGHTS_BYTES:,})")
        chunks, left = [], MAX_WEIGHTS_BYTES + 1
        while left > 0:
            data = os.read(descriptor, left)
            if not data:
                break
            chunks.append(data)
            left -= len(data)
    except OSError as error:
        raise EvaluationError(f"cannot read the evaluation weights {name}: {error.strerror or error}") from None
    finally:
        os.close(descriptor)
    if left <= 0:
        raise EvaluationError(f"{name}: more than {MAX_WEIGHTS_BYTES:,} bytes is no evaluation weights file")
    return b"".join(chunks)


def _file_kind(mode: int) -> str:
    for test, kind in ((stat.S_ISDIR, "folder"), (stat.S_ISFIFO, "named pipe"), (stat.S_ISCHR, "device"),
                       (stat.S_ISBLK, "device"), (stat.S_ISSOCK, "socket")):
        if test(mode):
            return kind
    return "special file"


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number a weights file holds")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"a key is given twice: {sorted(k for k in set(keys) if keys.count(k) > 1)}")
    return dict(pairs)


def _weight_row(name: str, data: dict[str, Any], key: str) -> list[float]:
    row = data[key]
    if not isinstance(row, list) or len(row) != FEATURE_COUNT:
        raise EvaluationError(f"{name}: {key!r} must be a list of {FEATURE_COUNT} numbers, got "
                              f"{type(row).__name__}{f' of {len(row)}' if isinstance(row, list) else ''}")
    for position, weight in enumerate(row):
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            raise EvaluationError(f"{name}: {key!r}[{position}] must be a number, got {weight!r}")
        if not (math.isfinite(weight) and abs(weight) <= MAX_WEIGHT):
            raise EvaluationError(f"{name}: {key!r}[{position}] is {weight!r}, beyond the +-{MAX_WEIGHT:g} "
                                  "a fit of the tables gives")
    return [float(weight) for weight in row]


def load_weights(path: str | os.PathLike | None = None) -> np.ndarray:
    """The 2 * FEATURE_COUNT weights of a weights file (None: the shipped one).

    The file is read only when it is a regular file of at most
    MAX_WEIGHTS_BYTES of JSON in the format's exact shape: an object with the
    keys WEIGHTS_REQUIRED (and "fit", the report of the fit, an object) and
    no other, version WEIGHTS_VERSION, the FEATURES of this awele, scale_seeds
    SCALE_SEEDS, and "flat" and "per_seed" lists of FEATURE_COUNT finite
    numbers (not booleans, not text) within MAX_WEIGHT. Raises
    EvaluationError, naming the file, for anything else.
    """
    name = default_weights_path() if path is None else _weights_name(path)
    raw = _read_weights_file(name)
    try:
        data = json.loads(raw.decode("utf-8"), parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except UnicodeDecodeError:
        raise EvaluationError(f"{name}: the evaluation weights are not UTF-8 text") from None
    except RecursionError:
        raise EvaluationError(f"{name}: the evaluation weights are nested too deeply to be a weights file") from None
    except ValueError as error:
        raise EvaluationError(f"{name}: the evaluation weights are not JSON: {error}") from None
    if not isinstance(data, dict):
        raise EvaluationError(f"{name}: the evaluation weights must be a JSON object, got {type(data).__name__}")
    version = data.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version != WEIGHTS_VERSION:
        raise EvaluationError(f"{name}: evaluation weights version {version!r}, this awele reads {WEIGHTS_VERSION}")
    unknown, missing = sorted(set(data) - WEIGHTS_KEYS), sorted(WEIGHTS_REQUIRED - set(data))
    if unknown or missing:
        raise EvaluationError(f"{name}: the evaluation weights have " + "; ".join(
            part for part in (f"unknown keys {unknown}" if unknown else "",
                              f"no {missing}" if missing else "") if part))
    if data["features"] != list(FEATURES):
        raise EvaluationError(f"{name}: the weights were fitted to other features than this awele computes")
    scale = data["scale_seeds"]
    if isinstance(scale, bool) or not isinstance(scale, int) or scale != SCALE_SEEDS:
        raise EvaluationError(f"{name}: scale_seeds {scale!r}, this awele scales the per-seed weights by "
                              f"{SCALE_SEEDS}")
    if not isinstance(data.get("fit", {}), dict):
        raise EvaluationError(f"{name}: 'fit' (the fit's report) must be an object")
    return np.array(_weight_row(name, data, "flat") + _weight_row(name, data, "per_seed"), dtype=np.float64)


def save_weights(path: str | os.PathLike, weights: np.ndarray, report: dict[str, Any] | None = None) -> None:
    """Write weights (and the fit report that produced them) as a weights
    file, as the tables are written (tables.write_file_exclusively): a
    temporary file created exclusively, never through a link, then renamed;
    nothing is left behind when it fails. Raises EvaluationError, naming the
    file, when the weights are not ones load_weights reads or the file cannot
    be written."""
    from .tables import write_file_exclusively

    name = _weights_name(path)
    weights = np.asarray(weights, dtype=np.float64)
    if weights.shape not in ((2 * FEATURE_COUNT,), (2, FEATURE_COUNT)):
        raise EvaluationError(f"{path}: {2 * FEATURE_COUNT} weights are written, got an array of {weights.shape}")
    weights = weights.reshape(2, FEATURE_COUNT)
    if not np.all(np.isfinite(weights)) or np.any(np.abs(weights) > MAX_WEIGHT):
        raise EvaluationError(f"{path}: weights beyond +-{MAX_WEIGHT:g} (or not finite) are no fit's; not written")
    data = {
        "version": WEIGHTS_VERSION,
        "features": list(FEATURES),
        "scale_seeds": SCALE_SEEDS,
        "flat": [round(float(w), 6) for w in weights[0]],
        "per_seed": [round(float(w), 6) for w in weights[1]],
        "fit": report or {},
    }
    text = (json.dumps(data, indent=1, allow_nan=False) + "\n").encode()
    try:
        write_file_exclusively(name, [text])
    except OSError as error:
        raise EvaluationError(f"cannot write {name}: {error.strerror or error}") from None


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
            score = captured - _threat(child_mover, child_opponent)
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
