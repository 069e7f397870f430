"""Exact test suites for Oware engines: positions whose answers the tables prove.

A suite is a text file, one position a line, in the manner of chess's EPD
(docs/SUITES.md describes the format for other tools)::

    # awele-suite 1
    0-1-2-0-3-1-2-0-1-3-2-1-20-12-S id "s16-0001"; bm C F; v 2; mv A:+0 B:-1 C:+2 ...; ...

`make` draws the positions from play-outs of awele against itself from
varied openings (deterministic from a seed), takes every move's exact value
from the tables, and rates each position by the depth and nodes awele's
search with tables to 12 seeds needs to find a best move and keep it. `run`
gives each position to an engine (another program over UCI, or awele in this
process) for a move time, depth or node count, and reads from its reports
when its best move first became a best move and stayed one: the time and
nodes to solution.

The answers are the tables' (the tables' convention: endless play splits the
seeds left evenly), read through Tablebase, whose every chunk is checked as
it is read.
"""

from __future__ import annotations

import json
import math
import os
import queue
import random
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from .errors import AweleError, InvalidPositionError, MissingDistanceError
from .position import Game, Position
from .uci_client import EngineError, UciClient

FORMAT = "awele-suite"
VERSION = 1
HEADER = f"# {FORMAT} {VERSION}"
DIFFICULTY_TABLES = 12  # the tables the difficulty's search uses (an engine with few or none)
DIFFICULTY_NODES = 300_000  # the most nodes that search spends on a position (and positions on its cycles)
PLAYOUT_DEPTH = 4  # plies awele searches for each move of a play-out
PLAYOUT_RANDOM = 0.2  # the share of play-out moves chosen at random among the legal ones
CANDIDATES = 3  # positions drawn for each one a suite keeps: the harder are kept first
EASY_SHARE = 0.2  # the share of a seed count's positions found at depth 1, when harder ones are too few
DEPTH_GROUPS = ((1, 4), (5, 8), (9, 12), (13, 99))  # difficulty groups of a run's summary, by depth
_OPERATION = re.compile(r'^([a-z]+)(?:\s+(.*))?$')
_ID = re.compile(r'^"([A-Za-z0-9_.:+-]{1,64})"$')
_MOVE_VALUE = re.compile(r"^([A-Fa-f]):([+-]\d{1,2})$")
Z95 = 1.959963984540054


class SuiteError(AweleError, ValueError):
    """A suite file that cannot be read as a suite (named with its line)."""


@dataclass(frozen=True)
class SuitePosition:
    """One position of a suite and its exact answers: every best move, the value
    for the side to move (seeds it will capture from now on less the other's,
    tables' convention), every legal move's value, the distance to conversion
    when the tables hold one, and the difficulty: the depth and nodes awele's
    search with tables to DIFFICULTY_TABLES seeds (or to the layer below the
    position's own) needs to find a best move and keep it (None: not within
    DIFFICULTY_NODES), the depth at which it proved the value (None: not
    proved)."""

    id: str
    position: Position
    best: tuple[str, ...]
    value: int
    values: dict[str, int]
    distance: int | None = None
    depth: int | None = None
    nodes: int | None = None
    proof: int | None = None

    @property
    def seeds(self) -> int:
        return self.position.seeds

    def line(self) -> str:
        """The position's line in the suite format."""
        from .uci import diagram

        operations = [f'id "{self.id}"', "bm " + " ".join(self.best), f"v {self.value}",
                      "mv " + " ".join(f"{move}:{value:+d}" for move, value in self.values.items()),
                      f"seeds {self.seeds}"]
        if self.distance is not None:
            operations.append(f"dist {self.distance}")
        operations.append("depth " + ("none" if self.depth is None else str(self.depth)))
        operations.append("nodes " + ("none" if self.nodes is None else str(self.nodes)))
        operations.append("proof " + ("none" if self.proof is None else str(self.proof)))
        return f"{diagram(self.position)} " + " ".join(operation + ";" for operation in operations)


# Reading and writing -------------------------------------------------------------


def read_suite(path: str | os.PathLike[str]) -> list[SuitePosition]:
    """The positions of a suite file, every field checked: the header and its
    version, the position, every move letter legal, the values consistent
    (`v` the largest of `mv`, `bm` exactly the moves that reach it). Raises
    SuiteError naming the file and line."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as error:
        raise SuiteError(f"cannot read the suite {os.fspath(path)}: {getattr(error, 'strerror', None) or error}") \
            from None
    return parse_suite(text, os.fspath(path))


def parse_suite(text: str, name: str = "the suite") -> list[SuitePosition]:
    """The positions of a suite's text (see read_suite)."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith(f"# {FORMAT} "):
        raise SuiteError(f"{name}: not an awele suite (its first line must be {HEADER!r})")
    version = lines[0][len(f"# {FORMAT} "):].strip()
    if version != str(VERSION):
        raise SuiteError(f"{name}: suite format version {version!r}; this awele reads version {VERSION}")
    entries: list[SuitePosition] = []
    seen: set[str] = set()
    for number, line in enumerate(lines[1:], 2):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            entry = _parse_line(line)
        except SuiteError as error:
            raise SuiteError(f"{name} line {number}: {error}") from None
        if entry.id in seen:
            raise SuiteError(f"{name} line {number}: the id {entry.id!r} is given twice")
        seen.add(entry.id)
        entries.append(entry)
    if not entries:
        raise SuiteError(f"{name}: no positions")
    return entries


def _parse_line(line: str) -> SuitePosition:
    from .uci import parse_diagram

    board, _, rest = line.strip().partition(" ")
    try:
        position = parse_diagram(board)
    except InvalidPositionError as error:
        raise SuiteError(f"the position {board!r}: {error}") from None
    legal = position.legal_moves()
    if position.is_over() or len(legal) < 2:
        raise SuiteError(f"the position {board!r} has {len(legal)} legal moves: nothing to choose")
    fields: dict[str, str] = {}
    for part in rest.split(";"):
        if not part.strip():
            continue
        match = _OPERATION.match(part.strip())
        if not match:
            raise SuiteError(f"cannot read the operation {part.strip()!r}")
        if match[1] in fields:
            raise SuiteError(f"the operation {match[1]!r} is given twice")
        fields[match[1]] = (match[2] or "").strip()
    for required in ("id", "bm", "v", "mv"):
        if required not in fields:
            raise SuiteError(f"no {required!r} operation (every position has id, bm, v and mv)")
    ident = _ID.match(fields["id"])
    if not ident:
        raise SuiteError(f"the id {fields['id']!r} is not a quoted name of 1-64 letters, digits and _.:+-")
    values: dict[str, int] = {}
    for word in fields["mv"].split():
        found = _MOVE_VALUE.match(word)
        if not found or found[1] not in legal or found[1] in values:
            raise SuiteError(f"mv: {word!r} is not a legal move and its value once (legal: {' '.join(legal)})")
        values[found[1]] = int(found[2])
    if sorted(values) != sorted(legal):
        raise SuiteError(f"mv gives {' '.join(values)}; the legal moves are {' '.join(legal)}")
    value = _whole(fields["v"], "v", -position.seeds, position.seeds)
    best = tuple(fields["bm"].split())
    if value != max(values.values()) or sorted(best) != sorted(m for m, v in values.items() if v == value):
        raise SuiteError(f"bm {' '.join(best)} and v {value} do not agree with mv {fields['mv']}")
    if len(best) == len(legal):
        raise SuiteError("every legal move is best: nothing to find")
    return SuitePosition(ident[1], position, best, value, values, _optional(fields, "dist", 0, 10_000),
                         _optional(fields, "depth", 1, 999), _optional(fields, "nodes", 0, 10**15),
                         _optional(fields, "proof", 1, 999))


def _whole(text: str, name: str, low: int, high: int) -> int:
    if not re.fullmatch(r"[+-]?\d{1,16}", text) or not low <= int(text) <= high:
        raise SuiteError(f"{name} {text!r} is not a whole number {low}..{high}")
    return int(text)


def _optional(fields: dict[str, str], name: str, low: int, high: int) -> int | None:
    text = fields.get(name)
    return None if text is None or text == "none" else _whole(text, name, low, high)


def write_suite(path: str | os.PathLike[str], entries: Iterable[SuitePosition], about: Iterable[str] = ()) -> None:
    """Write a suite file whole (a temporary file renamed into place): its
    header, `about` as comment lines, then a line a position."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    lines = [HEADER, *(f"# {line}" for line in about), *(entry.line() for entry in entries)]
    descriptor, temporary = tempfile.mkstemp(prefix=".suite-", dir=folder)
    mask = os.umask(0)
    os.umask(mask)
    try:
        os.chmod(temporary, 0o666 & ~mask)  # a file as any other, not mkstemp's 0600
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


# Making ------------------------------------------------------------------------


def make_suite(tablebase: Any, count: int, low: int, high: int, seed: int = 1,
               report: Callable[[str], None] | None = None) -> list[SuitePosition]:
    """`count` positions of `low`..`high` seeds drawn from play-outs, each with
    its exact answers from `tablebase` (a Tablebase holding those layers) and
    its difficulty; as even over the seed counts as the play-outs allow, at
    most EASY_SHARE of them found at depth 1 when there are harder ones, the
    same for the same seed and tables."""
    from .engine import Engine
    from .search import Searcher

    for seeds in range(low, high + 1):
        if not tablebase.has_layer(seeds):
            raise SuiteError(f"the tables hold no layer {seeds}: a suite of {low}..{high} seeds needs them all")
    rng = random.Random(seed)
    player = Engine.over(Searcher(tablebase, max_table_seeds=DIFFICULTY_TABLES, threads=1, hash_mb=16))
    quota = math.ceil(count / (high - low + 1))
    wanted = CANDIDATES * quota  # more than needed: the hard ones among them are chosen first
    found: dict[int, list[Position]] = {seeds: [] for seeds in range(low, high + 1)}
    keys: set[tuple] = set()
    for _ in range(40 * CANDIDATES * count):
        if all(len(found[seeds]) >= wanted for seeds in found):
            break
        taken: set[int] = set()  # a position a seed count from each play-out, for variety
        for position in _playout(player, rng, low):
            seeds = position.seeds
            if low <= seeds <= high and seeds not in taken and position.key() not in keys and \
                    len(found[seeds]) < wanted:
                keys.add(position.key())
                if _worth_asking(tablebase, position):
                    found[seeds].append(position)
                    taken.add(seeds)
    rated = _rate(tablebase, found, quota, report)
    chosen = [entry for seeds in sorted(rated) for entry in rated[seeds]]
    rng.shuffle(chosen)
    chosen = sorted(chosen[:count], key=lambda entry: entry.seeds)
    return [replace(entry, id=f"s{entry.seeds}-{number:04d}") for number, entry in enumerate(chosen, 1)]


def _rate(tablebase: Any, found: dict[int, list[Position]], quota: int,
          report: Callable[[str], None] | None) -> dict[int, list[SuitePosition]]:
    """Each seed count's candidates with their answers and difficulty, `quota`
    of them: EASY_SHARE of them found at depth 1, the others not (more of
    either where too few of the other are found).
    The rating searches, by the tables they use (to 12 seeds, or below the
    position's own layer), each over a Tablebase of its own: one that holds
    the position's layer in memory would answer from it."""
    from .engine import Engine
    from .probe import Tablebase
    from .search import Searcher

    judges: dict[int, Any] = {}
    rated: dict[int, list[SuitePosition]] = {}
    try:
        for seeds, candidates in found.items():
            below = min(DIFFICULTY_TABLES, seeds - 1)
            if below not in judges:
                judges[below] = Engine.over(Searcher(Tablebase(tablebase.directory), max_table_seeds=below,
                                                     threads=1, hash_mb=64, component_limit=DIFFICULTY_NODES))
            hard: list[SuitePosition] = []
            easy: list[SuitePosition] = []
            easy_quota = math.floor(EASY_SHARE * quota)
            for position in candidates:
                if len(hard) >= quota - easy_quota and len(easy) >= easy_quota:
                    break
                entry = _entry(tablebase, judges[below], position, "")
                (easy if entry.depth == 1 else hard).append(entry)
                if report is not None:
                    report(f"{seeds} seeds, {len(hard)} hard, {len(easy)} easy: {entry.line()}")
            kept = hard[:max(quota - len(easy), quota - easy_quota)]
            rated[seeds] = kept + easy[:quota - len(kept)]
    finally:
        for judge in judges.values():
            judge.searcher.wait_for_tables()
            judge.tablebase.close()
    return rated


def _playout(player: Any, rng: random.Random, low: int) -> list[Position]:
    """The positions of one game of awele against itself (PLAYOUT_DEPTH plies a
    move, a move in PLAYOUT_RANDOM at random) from 2-8 random opening plies,
    until the game ends or fewer than `low` seeds are left."""
    game = Game()
    for _ in range(rng.randint(2, 8)):
        game.play(rng.choice(game.legal_moves()))
    positions = []
    while not game.is_over() and game.position.seeds >= low:
        positions.append(game.position)
        if rng.random() < PLAYOUT_RANDOM:
            move = rng.choice(game.legal_moves())
        else:
            move = player.search(game, depth=PLAYOUT_DEPTH, cycles="own", threads=1).move
        game.play(move)
    return positions


def _worth_asking(tablebase: Any, position: Position) -> bool:
    """A position with a choice to make (two legal moves or more, not all best),
    in which no move ends the game by 25 seeds or 24-24 (where the tables'
    seeds and a win could rank moves differently)."""
    if position.is_over() or len(position.legal_moves()) < 2:
        return False
    mine, theirs = position.mover_captured()
    moves = tablebase.moves(position, distances=False)
    if any(mine + m.captured > 24 or (mine + m.captured == 24 and theirs == 24) for m in moves):
        return False
    best = max(m.value for m in moves)
    return any(m.value != best for m in moves)


def _entry(tablebase: Any, judge: Any, position: Position, ident: str) -> SuitePosition:
    values = tablebase.move_values(position)
    value = max(values.values())
    best = tuple(move for move, v in values.items() if v == value)
    try:
        distance = tablebase.distance(position)
    except MissingDistanceError:
        distance = None
    reports: list[tuple[int, int, bool, int, str | None]] = []

    def progress(depth, found, exact, nodes, seconds, line=()):
        reports.append((depth, found, bool(exact), nodes, line[0] if line else None))

    result = judge.search(position, nodes=DIFFICULTY_NODES, cycles="split", progress=progress)
    depth = nodes = proof = None
    if result.move in best:
        keeps = [i for i in range(len(reports)) if all(r[4] in best for r in reports[i:])]
        if keeps:
            depth, nodes = reports[keeps[0]][0], reports[keeps[0]][3]
        else:  # no iteration reported a line: the answer itself
            depth, nodes = result.depth, result.nodes
    proved = [r for r in reports if r[2] and r[1] == value]
    if proved:
        proof = proved[0][0]
    elif result.exact and result.value == value:
        proof = result.depth
    return SuitePosition(ident, position, best, value, values, distance, depth, nodes, proof)


# Running -----------------------------------------------------------------------


@dataclass
class Attempt:
    """One engine on one position: its final move, whether it is a best one,
    the seconds and nodes to solution (from when the engine's reported move was
    first a best move and stayed one; None when not solved), the value its move
    gives up (the position's value less the move's), and why it failed, if it did."""

    id: str
    seeds: int
    depth: int | None
    move: str | None
    solved: bool
    seconds: float | None = None
    nodes: int | None = None
    answer_seconds: float = 0.0
    value_lost: int | None = None
    failure: str | None = None


@dataclass
class _Report:
    seconds: float
    nodes: int | None
    move: str | None


def solution(reports: list[_Report], final: str | None, best: Iterable[str],
             answer_seconds: float) -> tuple[float | None, int | None]:
    """Seconds and nodes from which every report's move and the final move are
    best moves (the final answer's time when no report named a move); (None,
    None) when the final move is not a best one."""
    best = set(best)
    if final not in best:
        return None, None
    named = [r for r in reports if r.move is not None]
    start = len(named)
    while start > 0 and named[start - 1].move in best:
        start -= 1
    if start == len(named):
        return answer_seconds, None
    return named[start].seconds, named[start].nodes


def _attempt(entry: SuitePosition, move: str | None, reports: list[_Report], seconds: float,
             failure: str | None = None) -> Attempt:
    to_solution, nodes = solution(reports, move, entry.best, seconds)
    lost = None if move not in entry.values else entry.value - entry.values[move]
    return Attempt(entry.id, entry.seeds, entry.depth, move, to_solution is not None, to_solution, nodes, seconds,
                   lost, failure)


@dataclass
class Limits:
    """What each position is given: seconds, plies or nodes (one of them)."""

    movetime: float | None = None
    depth: int | None = None
    nodes: int | None = None

    def go(self) -> str:
        if self.depth is not None:
            return f"go depth {self.depth}"
        if self.nodes is not None:
            return f"go nodes {self.nodes}"
        return f"go movetime {max(1, round(1000 * (self.movetime or 1.0)))}"

    def patience(self) -> float:
        """Seconds an engine has before it is told to stop."""
        return self.movetime if self.movetime is not None else 600.0


class UciRunner(UciClient):
    """A UCI engine answering a suite's positions, its reports timed as they come."""

    def attempt(self, entry: SuitePosition, limits: Limits) -> Attempt:
        from .uci import diagram

        if not self.alive():
            self.close()
            self.start()
        self.new_game()
        self.send(f"position fen {diagram(entry.position)}")
        started = time.perf_counter()
        if not self.send(limits.go()):
            return _attempt(entry, None, [], 0.0, "the engine has exited")
        reports: list[_Report] = []
        deadline = started + limits.patience() + self.grace
        stopped = False
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.perf_counter()))
            except queue.Empty:
                if stopped:
                    self.close()  # a hung engine costs this position; the next starts it again
                    return _attempt(entry, None, reports, time.perf_counter() - started,
                                    "no bestmove, even after stop")
                self.send("stop")
                stopped, deadline = True, deadline + self.grace
                continue
            seconds = time.perf_counter() - started
            if line is None:
                self.lines.put(None)
                return _attempt(entry, None, reports, seconds, "the engine exited")
            words = line.split()
            if words[:1] == ["info"] and "pv" in words:
                reports.append(_Report(seconds, _number_after(words, "nodes"), _word_after(words, "pv")))
            elif words[:1] == ["bestmove"]:
                move = words[1] if len(words) > 1 else None
                if move not in entry.values:
                    return _attempt(entry, None, reports, seconds, f"an illegal move: {move!r}")
                return _attempt(entry, move, reports, seconds, "answered only after stop" if stopped else None)


def _number_after(words: list[str], key: str) -> int | None:
    text = _word_after(words, key)
    return int(text) if text is not None and text.isdigit() else None


def _word_after(words: list[str], key: str) -> str | None:
    if key in words[:-1]:
        word = words[words.index(key) + 1]
        return word[:1] if key == "pv" else word  # a pv may be written FbDa or F b D a
    return None


class AweleRunner:
    """awele in this process (a Searcher over a tables folder), under the
    tables' convention as the suites are, its reports from the search's."""

    KEYS = ("tables", "max_table_seeds", "evaluation", "hash_mb", "threads", "quiescence")

    def __init__(self, options: dict[str, Any]) -> None:
        from .engine import Engine
        from .probe import Tablebase
        from .search import Searcher

        unknown = sorted(set(options) - set(self.KEYS))
        if unknown:
            raise EngineError(f"awele engine: no option {unknown[0]!r} (options: {', '.join(self.KEYS)})")
        settings = dict(options)
        self.tablebase = Tablebase(settings.pop("tables", None))
        self.searcher = Searcher(self.tablebase, **settings)
        self.searcher.wait_for_tables()
        self.engine = Engine.over(self.searcher)  # decides tables or search, as `awele search`
        self.name = "awele"

    def attempt(self, entry: SuitePosition, limits: Limits) -> Attempt:
        reports: list[_Report] = []

        def progress(depth, value, exact, nodes, seconds, line=()):
            reports.append(_Report(seconds, nodes, line[0] if line else None))

        self.searcher.tt.fill(0)  # each position from an empty transposition table, as a fresh engine
        started = time.perf_counter()
        try:
            result = self.engine.search(entry.position, time=limits.movetime if limits.depth is None and
                                        limits.nodes is None else None, depth=limits.depth, nodes=limits.nodes,
                                        cycles="split", progress=progress)
        except AweleError as error:
            return _attempt(entry, None, reports, time.perf_counter() - started, f"search failed: {error}")
        return _attempt(entry, result.move, reports, time.perf_counter() - started)

    def close(self) -> None:
        self.tablebase.close()


def engine_from(spec: str, uci_options: Iterable[str] = (), grace: float = 2.0) -> UciRunner | AweleRunner:
    """An engine from its specification: ``uci:COMMAND LINE`` or
    ``awele[:KEY=VALUE,...]`` (tables, max_table_seeds, evaluation, ...)."""
    kind, colon, body = spec.partition(":")
    if kind == "uci" and body.strip():
        return UciRunner(spec, body, list(uci_options), grace)
    if kind == "awele":
        options: dict[str, Any] = {}
        for pair in filter(None, (p.strip() for p in body.split(","))) if colon else ():
            key, equals, value = pair.partition("=")
            if not equals:
                raise EngineError(f"engine {spec!r}: write awele:KEY=VALUE,...")
            options[key.strip()] = int(value) if re.fullmatch(r"-?\d+", value.strip()) else value.strip()
        return AweleRunner(options)
    raise EngineError(f"engine {spec!r}: write uci:COMMAND LINE or awele[:KEY=VALUE,...]")


@dataclass
class Run:
    """One engine's run of a suite: every attempt and the summary."""

    engine: str
    limits: dict
    attempts: list[Attempt] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return summarise(self.attempts)


def run_suite(engine: UciRunner | AweleRunner, entries: list[SuitePosition], limits: Limits,
              report: Callable[[Attempt], None] | None = None) -> list[Attempt]:
    """Every position given to `engine` in turn; a position the engine fails
    (a crash, a hang, an illegal or missing move) is lost, the run goes on."""
    attempts = []
    for entry in entries:
        try:
            attempt = engine.attempt(entry, limits)
        except EngineError as error:
            attempt = _attempt(entry, None, [], 0.0, str(error))
        attempts.append(attempt)
        if report is not None:
            report(attempt)
    return attempts


def summarise(attempts: list[Attempt]) -> dict[str, Any]:
    """Solved share with its 95% interval (Wilson), median seconds and nodes to
    solution of the solved, the mean value given up, failures; the same by
    difficulty group and by seeds."""
    def part(chosen: list[Attempt]) -> dict[str, Any]:
        solved = [a for a in chosen if a.solved]
        seconds = [a.seconds for a in solved if a.seconds is not None]
        nodes = [a.nodes for a in solved if a.nodes is not None]
        lost = [a.value_lost for a in chosen if a.value_lost is not None]
        low, high = wilson(len(solved), len(chosen))
        return {"positions": len(chosen), "solved": len(solved),
                "share": len(solved) / len(chosen) if chosen else None, "interval95": [low, high],
                "median_seconds": statistics.median(seconds) if seconds else None,
                "median_nodes": statistics.median(nodes) if nodes else None,
                "mean_value_lost": statistics.fmean(lost) if lost else None,
                "failures": sum(a.failure is not None for a in chosen)}

    groups = {}
    for low, high in DEPTH_GROUPS:
        chosen = [a for a in attempts if a.depth is not None and low <= a.depth <= high]
        if chosen:
            groups[f"depth {low}-{high}"] = part(chosen)
    unfound = [a for a in attempts if a.depth is None]
    if unfound:
        groups["not found by the rating search"] = part(unfound)
    by_seeds = {str(seeds): part([a for a in attempts if a.seeds == seeds])
                for seeds in sorted({a.seeds for a in attempts})}
    return {"all": part(attempts), "by_difficulty": groups, "by_seeds": by_seeds}


def wilson(successes: int, trials: int) -> tuple[float, float]:
    """The 95% Wilson score interval of a share."""
    if trials == 0:
        return 0.0, 1.0
    share = successes / trials
    middle = (share + Z95 ** 2 / (2 * trials)) / (1 + Z95 ** 2 / trials)
    half = Z95 * math.sqrt(share * (1 - share) / trials + Z95 ** 2 / (4 * trials ** 2)) / (1 + Z95 ** 2 / trials)
    return max(0.0, middle - half), min(1.0, middle + half)


def table(runs: list[Run]) -> str:
    """A short table of runs side by side: solved share, time and nodes to solution."""
    width = min(72, max(len("engine"), *(len(run.engine) for run in runs)))
    rows = [f"{'engine':<{width}} {'solved':>14} {'95% interval':>14} {'median s':>9} {'median nodes':>13} "
            f"{'value lost':>10} {'failed':>6}"]
    for run in runs:
        s = run.summary()["all"]
        low, high = s["interval95"]
        rows.append(f"{run.engine[-width:]:<{width}} {s['solved']:>6}/{s['positions']:<4} "
                    f"({100 * (s['share'] or 0):3.0f}%)"
                    f" {100 * low:5.1f}-{100 * high:5.1f}% "
                    f"{_shown(s['median_seconds'], '.3f'):>9} {_shown(s['median_nodes'], '.0f'):>13} "
                    f"{_shown(s['mean_value_lost'], '.2f'):>10} {s['failures']:>6}")
    return "\n".join(rows)


def _shown(value: float | None, form: str) -> str:
    return "-" if value is None else format(value, form)


def plot(runs: list[Run], limit: float) -> str:
    """An SVG of the share of positions solved against the time to solution
    (logarithmic, 1 ms to `limit` seconds), one line an engine."""
    width, height, left, bottom = 640, 360, 60, 40
    low = 0.001
    top = max(limit, low * 10)

    def x(seconds: float) -> float:
        return left + (width - left - 20) * math.log10(max(seconds, low) / low) / math.log10(top / low)

    def y(share: float) -> float:
        return height - bottom - (height - bottom - 20) * share

    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
             f'font-size="12">', f'<rect width="{width}" height="{height}" fill="white"/>',
             f'<line x1="{left}" y1="{y(0)}" x2="{width - 20}" y2="{y(0)}" stroke="black"/>',
             f'<line x1="{left}" y1="{y(0)}" x2="{left}" y2="{y(1)}" stroke="black"/>']
    for share in (0, 0.25, 0.5, 0.75, 1):
        parts.append(f'<text x="{left - 8}" y="{y(share) + 4}" text-anchor="end">{100 * share:.0f}%</text>')
    tick = low
    while tick <= top * 1.0001:
        parts.append(f'<text x="{x(tick)}" y="{height - bottom + 16}" text-anchor="middle">{tick:g} s</text>')
        tick *= 10
    parts.append(f'<text x="{(width + left) / 2}" y="{height - 6}" text-anchor="middle">time to solution</text>')
    for number, run in enumerate(runs):
        total = len(run.attempts)
        times = sorted(a.seconds for a in run.attempts if a.solved and a.seconds is not None)
        points = [(x(low), y(0))]
        for count, seconds in enumerate(times, 1):
            points += [(x(seconds), points[-1][1]), (x(seconds), y(count / total))]
        points.append((x(top), points[-1][1]))
        colour = colours[number % len(colours)]
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}"/>')
        parts.append(f'<text x="{left + 10}" y="{20 + 16 * number}" fill="{colour}">{_escape(run.engine)}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def results_json(runs: list[Run], suite: str) -> str:
    """The runs as JSON: the suite, each engine's limits, summary and attempts."""
    return json.dumps({"suite": suite, "runs": [{"engine": run.engine, "limits": run.limits,
                                                 "summary": run.summary(),
                                                 "attempts": [asdict(a) for a in run.attempts]} for run in runs]},
                      indent=1)


__all__ = ["Attempt", "AweleRunner", "Limits", "Run", "SuiteError", "SuitePosition", "UciRunner", "engine_from",
           "make_suite", "parse_suite", "plot", "read_suite", "results_json", "run_suite", "solution", "summarise",
           "table", "wilson", "write_suite"]
