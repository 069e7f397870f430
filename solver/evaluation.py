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
These linear weights live in ``solver/data/evaluation-v1.json``; the default
leaf adds pattern tables to them (version 2, below), in
``solver/data/evaluation-v2-patterns.json``. ``awele fit-evaluation`` refits
either (``--kind``).
"""

from __future__ import annotations

import json
import math
import os
import stat
from importlib import resources
from typing import Any, cast

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
    board_seeds,
    house_seeds,
    pack,
    row_seeds,
)

WEIGHTS_VERSION = 1  # the linear leaf's file
PATTERN_VERSION = 2  # the pattern (n-tuple) leaf's file
WEIGHTS_VERSIONS = (WEIGHTS_VERSION, PATTERN_VERSION)
LINEAR_WEIGHTS_FILE = f"evaluation-v{WEIGHTS_VERSION}.json"  # shipped, the baseline a pattern fit is measured against
PATTERN_WEIGHTS_FILE = f"evaluation-v{PATTERN_VERSION}-patterns.json"
# The default leaf: the pattern weights, which beat the linear ones over 200
# games at 0.2 s a move (61.3% +- 5.3%, docs/PERFORMANCE.md).
WEIGHTS_FILE = PATTERN_WEIGHTS_FILE
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
    features (weights: either format's array of load_weights, see
    evaluate_and_threat), rounded and clipped to [-n, n]."""
    return evaluate_and_threat(mover, opponent, weights)[0]


@njit(cache=True, inline="always")
def evaluate_and_threat(mover: np.uint64, opponent: np.uint64, weights: np.ndarray) -> tuple[np.int64, np.int64]:
    """(evaluate(), the most seeds one move of the mover captures): a leaf
    that searches its captures needs both, and the features hold the second.

    `weights` is either format's array (load_weights): LINEAR_SIZE floats
    (version 1, the linear leaf) or PATTERN_SIZE (version 2: the band of the
    seeds on board picks its linear weights and its pattern tables)."""
    values = feature_values(mover, opponent)
    threat = np.int64(values[THREAT_FEATURE])
    seeds = values[1]
    total = 0.0
    if weights.shape[0] == LINEAR_SIZE:
        scale = seeds / SCALE_SEEDS
        for k in range(FEATURE_COUNT):
            total += values[k] * (weights[k] + weights[FEATURE_COUNT + k] * scale)
    else:
        base = pattern_band(seeds) * BAND_SIZE
        for k in range(FEATURE_COUNT):
            total += values[k] * weights[base + k]
        total += _pattern_sum(mover, opponent, weights, base + FEATURE_COUNT)
    estimate = np.int64(np.floor(total + 0.5))
    if estimate > seeds:
        return np.int64(seeds), threat
    if estimate < -seeds:
        return np.int64(-seeds), threat
    return estimate, threat


# Pattern weights (version 2) ------------------------------------------------------
#
# A version 2 leaf adds to the ten features one table entry per pattern: the
# 12 windows of WINDOW_HOUSES consecutive houses round the board (the mover's
# houses 0-5 then the opponent's 0-5, the order seeds are sown in; a window
# may wrap from the opponent's last house to the mover's first), each house's
# seeds capped at WINDOW_CAP, and the 36 pairs of one mover's house and one
# opponent's house, each capped at PAIR_CAP. Each band of seeds on the board
# (PATTERN_BANDS) has its own linear weights and tables, laid out in one flat
# array so the search's kernel signature is the same for either format:
#
#   band b at b * BAND_SIZE: FEATURE_COUNT linear weights, then the windows
#   (window w's entry i at WINDOWS_START + w * WINDOW_ENTRIES + i), then the
#   pairs (pair p = 6 * mover's house + opponent's house: its entry i at
#   PAIRS_START + p * PAIR_ENTRIES + i).
#
# A window's index is sum over its houses k = 0..3 of capped seeds * 4^k, the
# first house lowest; a pair's is capped mover's seeds * (PAIR_CAP + 1) +
# capped opponent's seeds.

# The lowest seed count of each band: 0-15, 16-20, 21-24, 25-28, 29-32, 33-48.
# Four bands above 20 rather than one: a band fitted on layers near the ones
# it is used on (33 and 34 for 35-48) estimates them better (PERFORMANCE.md).
PATTERN_BANDS = (0, 16, 21, 25, 29, 33)
WINDOW_COUNT = 12
WINDOW_HOUSES = 4
WINDOW_CAP = 3
WINDOW_ENTRIES = (WINDOW_CAP + 1) ** WINDOW_HOUSES  # 256
PAIR_COUNT = ROW * ROW
PAIR_CAP = 12
PAIR_ENTRIES = (PAIR_CAP + 1) ** 2  # 169
PATTERN_COUNT = WINDOW_COUNT + PAIR_COUNT  # one table entry each at a leaf
WINDOWS_START = FEATURE_COUNT  # within a band
PAIRS_START = WINDOWS_START + WINDOW_COUNT * WINDOW_ENTRIES
BAND_SIZE = PAIRS_START + PAIR_COUNT * PAIR_ENTRIES  # 9,166 weights a band
PATTERN_SIZE = len(PATTERN_BANDS) * BAND_SIZE  # a version 2 array
LINEAR_SIZE = 2 * FEATURE_COUNT  # a version 1 array
WINDOW_SHIFT = 2  # bits of a capped window house (WINDOW_CAP = 3)
WINDOW_MASK = np.uint64(WINDOW_ENTRIES - 1)
LANE_CAP_3 = np.uint64(WINDOW_CAP)
LANE_CAP_12 = np.int64(PAIR_CAP)


@njit(cache=True, inline="always")
def pattern_band(seeds: int | np.integer) -> int:
    """The band (an index of PATTERN_BANDS) of a position of `seeds` seeds."""
    band = 0
    for low in PATTERN_BANDS[1:]:
        band += int(seeds >= low)
    return band


@njit(cache=True, inline="always")
def _window_codes(mover, opponent):
    """The 12 houses' seeds capped at 3, two bits each (mover's houses first),
    repeated once above bit 24 so that a window wrapping round the board is
    read as one shift and mask."""
    codes = np.uint64(0)
    for lane in range(ROW):
        codes |= min(np.uint64(house_seeds(mover, lane)), LANE_CAP_3) << np.uint64(WINDOW_SHIFT * lane)
        codes |= min(np.uint64(house_seeds(opponent, lane)), LANE_CAP_3) << np.uint64(WINDOW_SHIFT * (ROW + lane))
    return codes | (codes << np.uint64(WINDOW_SHIFT * WINDOW_COUNT))


@njit(cache=True, inline="always")
def _window_index(codes, window):
    return np.int64((codes >> np.uint64(WINDOW_SHIFT * window)) & WINDOW_MASK)


@njit(cache=True, inline="always")
def _pair_index(mover, opponent, mover_house, opponent_house):
    return (min(house_seeds(mover, mover_house), LANE_CAP_12) * (PAIR_CAP + 1)
            + min(house_seeds(opponent, opponent_house), LANE_CAP_12))


@njit(cache=True, inline="always")
def _pattern_sum(mover, opponent, weights, start):
    """The sum of the PATTERN_COUNT table entries of a position, its band's
    windows starting at weights[start] (and its pairs after them)."""
    codes = _window_codes(mover, opponent)
    total = 0.0
    for window in range(WINDOW_COUNT):
        total += weights[start + window * WINDOW_ENTRIES + _window_index(codes, window)]
    pairs = start + PAIRS_START - WINDOWS_START
    for mover_house in range(ROW):
        for opponent_house in range(ROW):
            pair = mover_house * ROW + opponent_house
            total += weights[pairs + pair * PAIR_ENTRIES + _pair_index(mover, opponent, mover_house, opponent_house)]
    return total


@njit(cache=True)
def pattern_columns(mover: np.uint64, opponent: np.uint64, out: np.ndarray) -> int:
    """Write into out[:PATTERN_COUNT] the positions in its band's block of the
    array (0..BAND_SIZE - 1) of the table entries a position adds (windows,
    then pairs); returns its band. The fit's design matrix is one-hot on
    these columns, beside the FEATURE_COUNT linear ones (0..9)."""
    codes = _window_codes(mover, opponent)
    for window in range(WINDOW_COUNT):
        out[window] = WINDOWS_START + window * WINDOW_ENTRIES + _window_index(codes, window)
    for mover_house in range(ROW):
        for opponent_house in range(ROW):
            pair = mover_house * ROW + opponent_house
            out[WINDOW_COUNT + pair] = (PAIRS_START + pair * PAIR_ENTRIES
                                        + _pair_index(mover, opponent, mover_house, opponent_house))
    return pattern_band(board_seeds(mover, opponent))


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
    """The default weights, shipped with the package (solver/data/evaluation-v2-patterns.json)."""
    return str(resources.files("solver") / "data" / WEIGHTS_FILE)


def linear_weights_path() -> str:
    """The linear weights shipped beside them (solver/data/evaluation-v1.json)."""
    return str(resources.files("solver") / "data" / LINEAR_WEIGHTS_FILE)


MAX_WEIGHTS_BYTES = 1 << 20  # the shipped files: 3 KB linear, 400 KB of patterns
# Every feature that is not 0 is at least 1 in size and an estimate is clipped
# to the 48 seeds, so a weight far beyond 48 only lives by cancelling others:
# a fit of the tables' values gives weights of a few seeds (the shipped ones,
# 3 at most), and one beyond this is no fit's.
MAX_WEIGHT = 1000.0
WEIGHTS_KEYS = {"version", "features", "scale_seeds", "flat", "per_seed", "fit"}
WEIGHTS_REQUIRED = WEIGHTS_KEYS - {"fit"}
PATTERN_KEYS = {"version", "features", "bands", "window_houses", "window_cap", "pair_cap", "linear", "windows",
                "pairs", "fit"}
PATTERN_REQUIRED = PATTERN_KEYS - {"fit"}


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
    """The weights array of a weights file (None: the shipped one), as the
    search's leaf takes it: LINEAR_SIZE floats for a version 1 file,
    PATTERN_SIZE for a version 2 (pattern) file.

    The file is read only when it is a regular file of at most
    MAX_WEIGHTS_BYTES of JSON in the format's exact shape. Version 1: an
    object with the keys WEIGHTS_REQUIRED (and "fit", the report of the fit,
    an object) and no other, the FEATURES of this awele, scale_seeds
    SCALE_SEEDS, and "flat" and "per_seed" lists of FEATURE_COUNT finite
    numbers (not booleans, not text) within MAX_WEIGHT. Version 2: the keys
    PATTERN_REQUIRED (and "fit"), the FEATURES, the PATTERN_BANDS, the window
    and pair sizes of this awele, and "linear", "windows" and "pairs" nested
    lists of those shapes (bands x FEATURE_COUNT, bands x WINDOW_COUNT x
    WINDOW_ENTRIES, bands x PAIR_COUNT x PAIR_ENTRIES) of such numbers.
    Raises EvaluationError, naming the file, for anything else.
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
    if isinstance(version, bool) or not isinstance(version, int) or version not in WEIGHTS_VERSIONS:
        raise EvaluationError(f"{name}: evaluation weights version {version!r}, this awele reads "
                              f"{' and '.join(map(str, WEIGHTS_VERSIONS))}")
    keys, required = (WEIGHTS_KEYS, WEIGHTS_REQUIRED) if version == WEIGHTS_VERSION else (PATTERN_KEYS,
                                                                                         PATTERN_REQUIRED)
    unknown, missing = sorted(set(data) - keys), sorted(required - set(data))
    if unknown or missing:
        raise EvaluationError(f"{name}: the evaluation weights have " + "; ".join(
            part for part in (f"unknown keys {unknown}" if unknown else "",
                              f"no {missing}" if missing else "") if part))
    if data["features"] != list(FEATURES):
        raise EvaluationError(f"{name}: the weights were fitted to other features than this awele computes")
    if not isinstance(data.get("fit", {}), dict):
        raise EvaluationError(f"{name}: 'fit' (the fit's report) must be an object")
    if version == PATTERN_VERSION:
        return _pattern_weights(name, data)
    scale = data["scale_seeds"]
    if isinstance(scale, bool) or not isinstance(scale, int) or scale != SCALE_SEEDS:
        raise EvaluationError(f"{name}: scale_seeds {scale!r}, this awele scales the per-seed weights by "
                              f"{SCALE_SEEDS}")
    return np.array(_weight_row(name, data, "flat") + _weight_row(name, data, "per_seed"), dtype=np.float64)


def _pattern_shape() -> dict[str, Any]:
    """The keys of a version 2 file that say what its tables are, as this awele computes them."""
    return {"bands": list(PATTERN_BANDS), "window_houses": WINDOW_HOUSES, "window_cap": WINDOW_CAP,
            "pair_cap": PAIR_CAP}


def _nested_numbers(name: str, key: str, value: Any, shape: tuple[int, ...]) -> np.ndarray:
    """A nested list of `shape` finite numbers within MAX_WEIGHT as an array;
    EvaluationError naming the file and the first place that is not."""
    def walk(item: Any, depth: int, where: str) -> None:
        if depth == len(shape):
            if isinstance(item, bool) or not isinstance(item, (int, float)):
                raise EvaluationError(f"{name}: {key!r}{where} must be a number, got {item!r}")
            if not (math.isfinite(item) and abs(item) <= MAX_WEIGHT):
                raise EvaluationError(f"{name}: {key!r}{where} is {item!r}, beyond the +-{MAX_WEIGHT:g} "
                                      "a fit of the tables gives")
            return
        if not isinstance(item, list) or len(item) != shape[depth]:
            size = f" of {len(item)}" if isinstance(item, list) else ""
            raise EvaluationError(f"{name}: {key!r}{where} must be a list of {shape[depth]}, got "
                                  f"{type(item).__name__}{size} (the {key} are "
                                  f"{' x '.join(map(str, shape))} numbers)")
        for position, inner in enumerate(item):
            walk(inner, depth + 1, f"{where}[{position}]")

    walk(value, 0, "")
    return np.array(value, dtype=np.float64).reshape(shape)


def _pattern_weights(name: str, data: dict[str, Any]) -> np.ndarray:
    """The PATTERN_SIZE array of a version 2 file's data (its keys checked)."""
    for key, expected in _pattern_shape().items():
        given = data[key]
        if given != expected or any(isinstance(v, bool) for v in (given if isinstance(given, list) else [given])):
            raise EvaluationError(f"{name}: {key} {given!r}, this awele's patterns have {key} {expected!r}")
    bands = len(PATTERN_BANDS)
    linear = _nested_numbers(name, "linear", data["linear"], (bands, FEATURE_COUNT))
    windows = _nested_numbers(name, "windows", data["windows"], (bands, WINDOW_COUNT, WINDOW_ENTRIES))
    pairs = _nested_numbers(name, "pairs", data["pairs"], (bands, PAIR_COUNT, PAIR_ENTRIES))
    weights = np.empty((bands, BAND_SIZE), np.float64)
    weights[:, :WINDOWS_START] = linear
    weights[:, WINDOWS_START:PAIRS_START] = windows.reshape(bands, -1)
    weights[:, PAIRS_START:] = pairs.reshape(bands, -1)
    return weights.reshape(-1)


def save_weights(path: str | os.PathLike, weights: np.ndarray, report: dict[str, Any] | None = None) -> None:
    """Write weights (and the fit report that produced them) as a weights
    file of the version their size says (LINEAR_SIZE: 1, PATTERN_SIZE: 2), as
    the tables are written (tables.write_file_exclusively): a temporary file
    created exclusively, never through a link, then renamed; nothing is left
    behind when it fails. Raises EvaluationError, naming the file, when the
    weights are not ones load_weights reads or the file cannot be written."""
    from .tables import write_file_exclusively

    name = _weights_name(path)
    weights = np.asarray(weights, dtype=np.float64)
    if weights.size not in (LINEAR_SIZE, PATTERN_SIZE) or weights.ndim not in (1, 2):
        raise EvaluationError(f"{path}: {LINEAR_SIZE} (linear) or {PATTERN_SIZE:,} (pattern) weights are "
                              f"written, got an array of {weights.shape}")
    if not np.all(np.isfinite(weights)) or np.any(np.abs(weights) > MAX_WEIGHT):
        raise EvaluationError(f"{path}: weights beyond +-{MAX_WEIGHT:g} (or not finite) are no fit's; not written")
    if weights.size == LINEAR_SIZE:
        weights = weights.reshape(2, FEATURE_COUNT)
        data = {
            "version": WEIGHTS_VERSION,
            "features": list(FEATURES),
            "scale_seeds": SCALE_SEEDS,
            "flat": [round(float(w), 6) for w in weights[0]],
            "per_seed": [round(float(w), 6) for w in weights[1]],
            "fit": report or {},
        }
        text = (json.dumps(data, indent=1, allow_nan=False) + "\n").encode()
    else:
        bands = weights.reshape(len(PATTERN_BANDS), BAND_SIZE)

        def rounded(block: np.ndarray, shape: tuple[int, ...]) -> list[Any]:
            # Four decimals: a ten-thousandth of a seed is far below what the
            # leaf rounds to, and the file stays a few hundred kilobytes.
            return cast(list[Any], np.round(block, 4).reshape(shape).tolist())

        data = {
            "version": PATTERN_VERSION,
            "features": list(FEATURES),
            **_pattern_shape(),
            "linear": [[round(float(w), 6) for w in band[:WINDOWS_START]] for band in bands],
            "windows": rounded(bands[:, WINDOWS_START:PAIRS_START], (len(PATTERN_BANDS), WINDOW_COUNT,
                                                                      WINDOW_ENTRIES)),
            "pairs": rounded(bands[:, PAIRS_START:], (len(PATTERN_BANDS), PAIR_COUNT, PAIR_ENTRIES)),
            "fit": report or {},
        }
        # Compact: a reader looks at the keys and the report, not at 27,000 numbers a line each.
        text = (json.dumps(data, separators=(",", ":"), allow_nan=False) + "\n").encode()
    if len(text) > MAX_WEIGHTS_BYTES:
        raise EvaluationError(f"{path}: {len(text):,} bytes of weights is more than a weights file holds "
                              f"({MAX_WEIGHTS_BYTES:,}); not written")
    try:
        write_file_exclusively(name, [text])
    except OSError as error:
        raise EvaluationError(f"cannot write {name}: {error.strerror or error}") from None
