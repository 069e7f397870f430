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
the fitted ones, against the 0 leaf: see solver.fitting, which reads the
tables; this module is only the leaf the search calls and its weights file.
The shipped weights live in ``solver/data/evaluation-v1.json``; ``awele
fit-evaluation`` refits them.
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

from .errors import EvaluationError
from .position import Position  # noqa: F401 (the doctest)
from .rules import (
    LANE_BITS,
    LANE_MASK,
    ROW,
    ROW_ONES,
    SUM_LANES,
    TOTAL_SEEDS,
    house_seeds,
    pack,
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
def capture_threat(mover: np.uint64, opponent: np.uint64) -> np.int64:
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
def feature_values(mover: np.uint64, opponent: np.uint64) -> tuple:
    """The FEATURES of a packed position, as a tuple of ints (see FEATURES):
    inlined into the kernels that use it, with no array made."""
    mover_seeds = row_seeds(mover)
    opponent_seeds = row_seeds(opponent)
    mover_empty, mover_low, mover_laps = _row_shape(mover)
    opponent_empty, opponent_low, opponent_laps = _row_shape(opponent)
    mover_threat = capture_threat(mover, opponent)
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
    values = feature_values(mover, opponent)
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
    values = feature_values(mover, opponent)
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
