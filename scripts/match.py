"""Play two engines against each other and measure the difference in strength.

    python scripts/match.py A B [--movetime 1] [--openings 50 --opening-plies 2] [--seed 1]
                            [--concurrency 1] [--max-plies 300 --adjudicate own]
                            [--pgn games.pgn] [--journal match.jsonl] [--json]

A and B are engine specifications:

- ``awele:KEY=VALUE,...`` plays in-process through solver.engine.Engine.search over a Searcher.
  Each key is an argument of Searcher() or of Engine.search(), for example
  ``awele:tables=databases,max_table_seeds=20,hash_mb=64`` (``tables`` is the
  tables folder, Searcher's `tablebase`; TABLES below stands for yours). Keys the Searcher of this checkout
  does not take are refused in one line that lists those it takes, so that
  ``threads=`` or ``evaluation=`` work as soon as the Searcher has them.
  Values: integers, decimals, true/false, none, or text. --movetime is the
  search's `time` unless the spec sets `time` itself; ``depth=`` or
  ``nodes=`` limit it further. The repetition rule is the true one
  (``cycles=own``) unless the spec says otherwise.
- ``uci:COMMAND LINE`` starts the command and drives it as the Aualé GUI
  drives Aalina: ``uci`` / ``uciok``, ``ucinewgame`` and ``isready`` /
  ``readyok`` before each game, then for each move ``position startpos moves
  FbDa`` (the game so far, one letter per move) and ``go movetime MS``, and
  waits for ``bestmove X``. --uci-option NAME=VALUE is sent as ``setoption``
  to every UCI engine. An engine that does not answer within the move time
  plus --grace seconds gets ``stop``; one that still does not answer, exits,
  or plays an illegal move loses the game (the record says why).

--nodes N searches every move to N nodes instead of a move time (``go nodes
N``, or the Searcher's ``nodes``): a comparison of the two engines' play at
equal work, which does not depend on what else runs on the machine (a table
build, say); the time keeping is then not part of what is measured.

Games start from openings: every distinct position after --opening-plies
plies from the initial position (or --openings N of them drawn with --seed),
or the records of --openings-file, one per line. Each opening is played
twice with colours swapped (a game pair), A as South first. The moves come
from the engines only; the match judges them with solver.position.Game: the
25-seed win, 24-24, the true repetition rule (a position occurring a second
time ends the game and each side takes the seeds on its own side), no
feeding move, no seeds to move. A game longer than --max-plies is adjudicated
by the true rule (each side takes the seeds on its own side, as at a
repetition; --adjudicate own, the default) or as a draw (--adjudicate draw).

--journal FILE keeps every finished game in FILE (a first line of the
match's settings, then a JSON line a game, each written through to disk).
Run the same command again with the same FILE and only the games still
missing are played; the score covers them all. The journal is refused when
anything differs: the engines, the move time, the openings, or the code
(the checkout's commit and a digest of its uncommitted changes), so that a
match spread over several sittings is still one match of one program.
Each game's line holds every engine move as [ply, engine, milliseconds,
depth, score, what the engine said last on an ``info string`` line], so
that a move can be read as it was played. --engine-logs FOLDER keeps each
UCI engine's standard error (its log lines) there.
A move that takes more than 5% of the move time plus 20 ms past it counts
as late (the move stands); the score line says how many each engine had.

The score is A's: a win 1, a draw 1/2. Its 95% interval is computed per game
pair (the two games of an opening are not independent: the opening may
favour one side), mean +- 1.96 * sd(pair score) / sqrt(pairs), with the
sample standard deviation of the pairs' scores; the interval per game
(trinomial) is given too. Elo = -400 log10(1/score - 1), its interval the
same transform of the score interval.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import inspect
import json
import math
import multiprocessing
import os
import queue
import random
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from solver.errors import AweleError
from solver.position import Game, Position
from solver.uci_client import UciClient

MAX_CONCURRENCY = 256  # games at once, each a process
MAX_OPENING_PLIES = 8  # every distinct position 8 plies deep is already 10^5-10^6 games' worth
Z95 = 1.959963984540054  # two-sided 95% quantile of the normal distribution
RESERVED_SEARCH_KEYS = ("self", "position", "history", "progress")


class MatchError(Exception):
    """A match that cannot run as asked (a bad engine spec, too few openings)."""


# Engine specifications --------------------------------------------------------


def parse_value(text):
    """An engine option's value: int, float, bool, None or the text itself."""
    lowered = text.strip().lower()
    if lowered in ("true", "yes", "on"):
        return True
    if lowered in ("false", "no", "off"):
        return False
    if lowered in ("none", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text.strip()


def awele_options(spec_body):
    """(Searcher() keyword arguments, search() keyword arguments) of an
    ``awele:`` spec body such as ``tables=databases,max_table_seeds=20``.
    Values that make no sense (check_awele_value) are refused here."""
    from solver.engine import Engine
    from solver.search import Searcher

    constructor = [p for p in inspect.signature(Searcher.__init__).parameters if p != "self"]
    searching = [p for p in inspect.signature(Engine.search).parameters if p not in RESERVED_SEARCH_KEYS]
    made, searched = {}, {}
    for item in filter(None, (part.strip() for part in spec_body.split(","))):
        key, equals, value = item.partition("=")
        key = key.strip()
        if not equals or not key:
            raise MatchError(f"awele engine option {item!r}: write KEY=VALUE")
        if key == "tables":
            key = "tablebase"
        if key in constructor:
            made[key] = check_awele_value(key, parse_value(value))
        elif key in searching:
            searched[key] = check_awele_value(key, parse_value(value))
        else:
            accepted = ", ".join(["tables"] + [k for k in constructor if k != "tablebase"] + searching)
            raise MatchError(f"the Searcher of this checkout takes no option {key!r}; it takes: {accepted}")
    return made, searched


MAX_THREADS = 256  # as the UCI Threads option
MAX_SECONDS = 3600.0  # the most --movetime, --grace or time= may be: an hour a move
MAX_NODES = 10**10  # the most --nodes may be
NODES_WAIT = 600.0  # seconds a UCI engine may take over a move of --nodes before it is stopped


def _whole(key, value, low, high):
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise MatchError(f"awele engine option {key}={value!r}: a whole number {low}..{high}")
    return value


def _seconds(name, value, low_open=0.0, joiner=" "):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not low_open < value <= MAX_SECONDS:
        raise MatchError(f"{name}{joiner}{value!r}: seconds above {low_open:g}, at most {MAX_SECONDS:g}")
    return value


def check_awele_value(key, value):
    """The value of an ``awele:`` spec key, refused (MatchError) when it makes
    no sense: depth 1..MAX_PLY, nodes and hash_mb positive, time finite
    seconds, max_table_seeds -1..48, threads 1..MAX_THREADS, tables a folder.
    Keys not listed here are checked by the Searcher itself."""
    from solver.limits import CYCLES, MAX_PLY, MAX_SEEDS

    if value is None and key in ("tablebase", "max_table_seeds", "threads", "table_bytes", "depth", "time",
                                 "nodes", "weights_file"):
        return value
    if key == "tablebase":
        if not isinstance(value, str) or not value or not os.path.isdir(value):
            raise MatchError(f"awele engine option tables={value!r}: not a folder")
    elif key == "depth":
        _whole(key, value, 1, MAX_PLY)
    elif key == "nodes":
        _whole(key, value, 1, 10**15)
    elif key == "max_table_seeds":
        _whole(key, value, -1, MAX_SEEDS)
    elif key == "threads":
        _whole(key, value, 1, MAX_THREADS)
    elif key in ("table_bytes", "component_limit"):
        _whole(key, value, 0, 2**62)
    elif key == "time":
        _seconds("awele engine option time=", value, joiner="")
    elif key == "hash_mb":
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise MatchError(f"awele engine option hash_mb={value!r}: a positive number of MiB")
    elif key == "cycles" and value not in CYCLES:
        raise MatchError(f"awele engine option cycles={value!r}: one of {', '.join(CYCLES)}")
    elif key == "weights_file" and not isinstance(value, str):
        raise MatchError(f"awele engine option weights_file={value!r}: a file name")
    return value


def make_engine(spec, uci_options=(), grace=2.0, log=None):
    """An engine object from its specification (see the module docstring);
    `log`: a file path a UCI engine's standard error is appended to."""
    kind, colon, body = spec.partition(":")
    if kind == "awele" and colon:
        return AweleEngine(spec, body)
    if kind == "awele" and not colon:
        return AweleEngine(spec, "")
    if kind == "uci" and body.strip():
        return UciEngine(spec, body, uci_options, grace, log)
    raise MatchError(f"engine {spec!r}: write awele:KEY=VALUE,... or uci:COMMAND LINE")


@dataclass
class Answer:
    """An engine's move and what it said about it."""

    move: str | None
    seconds: float
    depth: int | None = None
    value: int | None = None
    exact: bool | None = None
    failure: str | None = None  # why the engine gave no usable move
    said: str | None = None  # the engine's last "info string" line (UCI), or source and rule (awele)


class AweleEngine:
    """awele in this process: one Searcher per game, over tables read once."""

    def __init__(self, spec, body):
        from solver.probe import Tablebase

        self.spec = spec
        self.made, self.searched = awele_options(body)
        directory = self.made.pop("tablebase", None)
        # One Tablebase for this engine alone: the layers it holds in memory are
        # the ones its search uses, so two configurations must not share one.
        self.tablebase = Tablebase(directory)
        self.searcher = None
        self.engine = None
        self.new_game()  # refuses bad values now, in one line

    def new_game(self):
        from solver.engine import Engine
        from solver.search import Searcher

        wait = getattr(self.searcher, "wait_for_tables", None)
        if callable(wait):
            wait()  # the last game's Searcher reads no more into the shared Tablebase
        try:
            self.searcher = Searcher(self.tablebase, **self.made)
            self.engine = Engine.over(self.searcher)  # decides tables or search, as `awele search`
            # Every table it holds, in memory before the game rather than during
            # it, so that each game is played with the same tables.
            wait = getattr(self.searcher, "wait_for_tables", None)
            if callable(wait):
                wait()
            # The first search clears the transposition table (its memory's first
            # touch): done before the game, off the clock.
            self.searcher.search(Position.initial(), depth=1, cycles=self.searched.get("cycles", "own"))
        except (AweleError, TypeError, ValueError) as error:
            raise MatchError(f"engine {self.spec!r}: {error}") from None

    def play(self, game, movetime, nodes=None):
        options = {"time": movetime, "cycles": "own", **self.searched}
        if nodes is not None:
            options = {**{k: v for k, v in options.items() if k != "time"}, "nodes": nodes}
        started = time.perf_counter()
        try:
            result = self.engine.search(game, **options)
        except (AweleError, TypeError, ValueError) as error:
            return Answer(None, time.perf_counter() - started, failure=f"search failed: {error}")
        return Answer(result.move, time.perf_counter() - started, result.depth, result.value, result.exact,
                      said=f"source {result.source}; rule {result.rule}")

    def close(self):
        self.tablebase.close()


class UciEngine(UciClient):
    """An external engine over the UCI dialect of Aalina and the Aualé GUI
    (solver.uci_client), playing a game's moves."""

    error = MatchError

    def play(self, game, movetime, nodes=None):
        self._drain()
        moves = "".join(game.moves)
        start = "startpos" if game.start == Position.initial() else f"fen {dialect_diagram(game.start)}"
        self.send(f"position {start}" + (f" moves {moves}" if moves else ""))
        started = time.perf_counter()
        go = f"go nodes {nodes}" if nodes is not None else f"go movetime {max(1, round(movetime * 1000))}"
        if not self.send(go):
            return Answer(None, 0.0, failure="the engine has exited")
        depth = value = said = None
        deadline = (NODES_WAIT if nodes is not None else movetime) + self.grace
        stopped = False
        while True:
            left = started + deadline - time.perf_counter()
            try:
                line = self.lines.get(timeout=max(0.0, left))
            except queue.Empty:
                if stopped:
                    return Answer(None, time.perf_counter() - started,
                                  failure=f"no bestmove within {movetime:g} s + {self.grace:g} s, nor after stop")
                self.send("stop")
                stopped = True
                deadline += self.grace
                continue
            if line is None:
                self.lines.put(None)
                return Answer(None, time.perf_counter() - started, failure="the engine exited")
            words = line.split()
            if words[:1] == ["info"]:
                depth, value = _info_depth_value(words, depth, value)
                if words[1:2] == ["string"]:
                    said = " ".join(words[2:])
            elif words[:1] == ["bestmove"]:
                seconds = time.perf_counter() - started
                move = words[1] if len(words) > 1 else None
                if stopped:
                    return Answer(None, seconds, depth, value,
                                  failure=f"answered only after stop ({seconds:.2f} s on a {movetime:g} s move)")
                return Answer(move, seconds, depth, value, said=said)

def _info_depth_value(words, depth, value):
    """depth and score (cp / 100, in seeds) of an info line, else the previous ones."""
    for i, word in enumerate(words[:-1]):
        if word == "depth" and words[i + 1].isdigit():
            depth = int(words[i + 1])
        if word == "cp":
            with contextlib.suppress(ValueError):
                value = round(int(words[i + 1]) / 100)
    return depth, value


def dialect_diagram(position):
    """A position in the dialect's notation: the twelve houses A..F a..f, South's and
    North's captured seeds, then S or N, all joined by '-'."""
    return "-".join(str(n) for n in (*position.houses, *position.captured)) + f"-{position.to_move}"


# Openings ---------------------------------------------------------------------


def openings_after(plies):
    """Every distinct position `plies` plies after the opening as the first record
    (in letter order) that reaches it; lines that end the game are left out."""
    found = {}

    def walk(game):
        if len(game.moves) == plies:
            found.setdefault(game.position.key(), game.record())
            return
        for move in game.legal_moves():
            game.play(move)
            if not game.is_over():
                walk(game)
            game.undo()

    walk(Game())
    return sorted(found.values())


MAX_TEXT_BYTES = 16 << 20


def read_text_file(path, what):
    """The UTF-8 text of a regular file of at most MAX_TEXT_BYTES (a pipe or a
    device is refused, never waited on); MatchError naming the file otherwise."""
    import stat

    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError) as error:
        raise MatchError(f"cannot read the {what} {path}: {getattr(error, 'strerror', None) or error}") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise MatchError(f"the {what} {path} is not a regular file")
        if status.st_size > MAX_TEXT_BYTES:
            raise MatchError(f"the {what} {path} has more than {MAX_TEXT_BYTES:,} bytes")
        data = os.read(descriptor, MAX_TEXT_BYTES + 1)
    except OSError as error:
        raise MatchError(f"cannot read the {what} {path}: {error.strerror or error}") from None
    finally:
        os.close(descriptor)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise MatchError(f"the {what} {path} is not UTF-8 text ({error.reason} at byte {error.start})") from None


def choose_openings(count, plies, seed, path):
    """The openings of a match as records (from the initial position)."""
    if path is not None:
        records = [line.split("#")[0].strip() for line in read_text_file(path, "openings file").splitlines()]
        records = [r for r in records if r]
        if not records:
            raise MatchError(f"{path}: no openings in it (one record a line, # comments)")
        for record in records:
            try:
                Game.from_record(record)
            except AweleError as error:
                raise MatchError(f"{path}: {error}") from None
        return records[:count] if count else records
    every = openings_after(plies)
    if count is None or count == len(every):
        return every
    if count > len(every):
        raise MatchError(f"only {len(every)} distinct positions after {plies} plies; "
                         f"ask for fewer openings or more --opening-plies")
    return sorted(random.Random(seed).sample(every, count))


# Playing ----------------------------------------------------------------------


@dataclass
class GameRecord:
    """One finished game."""

    number: int
    pair: int
    opening: str
    south: str  # "A" or "B"
    record: str = ""
    result: tuple = (0, 0)  # final seeds (South, North)
    winner: str = "draw"  # "S", "N" or "draw"
    termination: str = ""
    score_a: float = 0.5
    plies: int = 0
    seconds: dict = field(default_factory=dict)  # engine -> longest move (s)
    depths: dict = field(default_factory=dict)  # engine -> mean finished depth
    late: dict = field(default_factory=dict)  # engine -> moves over the budget's allowance (late_limit)
    # Every engine move: [ply, engine, milliseconds, depth, score, what it said], so
    # that a move can be read as it was played (a replay may not reproduce it).
    moves: list = field(default_factory=list)


def late_limit(movetime):
    """The longest a move may take: issue 16's allowance, 5% of the move time
    plus 20 ms. A move that takes longer counts as late (it still stands)."""
    return 1.05 * movetime + 0.020


def play_game(engines, number, pair, opening, a_is_south, movetime, max_plies, adjudicate, nodes=None):
    """Play one game; engines maps "A"/"B" to engine objects. With `nodes`,
    every move is searched to that many nodes instead of `movetime` (and no
    move counts as late)."""
    game = Game.from_record(opening)
    side_of = {"S": "A" if a_is_south else "B", "N": "B" if a_is_south else "A"}
    for engine in engines.values():
        engine.new_game()
    longest = {"A": 0.0, "B": 0.0}
    late = {"A": 0, "B": 0}
    depths = {"A": [], "B": []}
    moves = []
    forfeit = None
    while not game.is_over() and len(game.moves) < max_plies:
        name = side_of[game.position.to_move]
        answer = engines[name].play(game, movetime, nodes)
        longest[name] = max(longest[name], answer.seconds)
        late[name] += nodes is None and answer.seconds > late_limit(movetime)
        if answer.depth:
            depths[name].append(answer.depth)
        moves.append([len(game.moves), name, round(1000 * answer.seconds), answer.depth, answer.value, answer.said])
        if answer.failure is not None:
            forfeit = (game.position.to_move, answer.failure)
            break
        try:
            game.play(answer.move)
        except (AweleError, TypeError) as error:
            forfeit = (game.position.to_move, f"illegal move {answer.move!r}: {error}")
            break
    record = GameRecord(number, pair, opening, "A" if a_is_south else "B", game.record(), plies=len(game.moves))
    if forfeit is not None:
        loser, why = forfeit
        record.winner = "N" if loser == "S" else "S"
        record.termination = f"{side_of[loser]} forfeits: {why}"
        record.result = game.position.captured
    elif game.is_over():
        outcome = game.outcome()
        assert outcome is not None  # the game is over
        record.result = game.result()
        record.winner = outcome.winner
        record.termination = game.end_reason
    else:
        south, north = game.position.captured
        if adjudicate == "own":
            houses = game.position.houses
            record.result = (south + sum(houses[:6]), north + sum(houses[6:]))
            record.winner = ("S" if record.result[0] > record.result[1]
                             else "N" if record.result[1] > record.result[0] else "draw")
            record.termination = f"{max_plies} plies: adjudicated by the true rule (each side takes its own seeds)"
        else:
            record.result = (south, north)
            record.winner = "draw"
            record.termination = f"{max_plies} plies: adjudicated as a draw"
    record.result = tuple(int(x) for x in record.result)
    if record.winner == "draw":
        record.score_a = 0.5
    else:
        record.score_a = 1.0 if side_of[record.winner] == "A" else 0.0
    record.seconds = {k: round(v, 3) for k, v in longest.items()}
    record.late = late
    record.depths = {k: round(sum(v) / len(v), 1) for k, v in depths.items() if v}
    record.moves = moves
    return record


def schedule(openings):
    """(game number, pair, opening, A is South) of every game: each opening twice,
    A as South first, so that colours alternate within each pair."""
    jobs = []
    for pair, opening in enumerate(openings, 1):
        jobs.append((2 * pair - 1, pair, opening, True))
        jobs.append((2 * pair, pair, opening, False))
    return jobs


_WORKER = {}


def _engines(spec_a, spec_b, uci_options, grace, logs):
    """Engines A and B; with `logs` (a folder), each UCI engine's standard error
    goes to logs/A-PID.log or logs/B-PID.log, PID the playing process's."""
    def log(name):
        return None if logs is None else os.path.join(logs, f"{name}-{os.getpid()}.log")

    return {"A": make_engine(spec_a, uci_options, grace, log("A")),
            "B": make_engine(spec_b, uci_options, grace, log("B"))}


def _start_worker(spec_a, spec_b, uci_options, grace, logs):
    _WORKER["engines"] = _engines(spec_a, spec_b, uci_options, grace, logs)


def _play_in_worker(job, movetime, max_plies, adjudicate, nodes):
    return play_game(_WORKER["engines"], *job, movetime, max_plies, adjudicate, nodes)


def run_match(spec_a, spec_b, openings, movetime, max_plies=300, adjudicate="own", concurrency=1,
              uci_options=(), grace=2.0, report=None, skip=(), nodes=None, logs=None):
    """Play every game pair (but the game numbers in `skip`); return the
    GameRecords in game order. `report(record)` is called as each game
    finishes. `logs`: a folder for the UCI engines' standard error."""
    jobs = [job for job in schedule(openings) if job[0] not in set(skip)]
    if not jobs:
        return []
    records = []
    if concurrency <= 1:
        engines = _engines(spec_a, spec_b, uci_options, grace, logs)
        try:
            for job in jobs:
                record = play_game(engines, *job, movetime, max_plies, adjudicate, nodes)
                records.append(record)
                if report:
                    report(record)
        finally:
            for engine in engines.values():
                engine.close()
        return records
    make_engine(spec_a, uci_options, grace).close()  # a bad spec fails here, in one line
    make_engine(spec_b, uci_options, grace).close()
    # Processes, not threads: a numba search holds the interpreter lock.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(concurrency, mp_context=context, initializer=_start_worker,
                             initargs=(spec_a, spec_b, tuple(uci_options), grace, logs)) as pool:
        futures = [pool.submit(_play_in_worker, job, movetime, max_plies, adjudicate, nodes) for job in jobs]
        for future in as_completed(futures):
            record = future.result()
            records.append(record)
            if report:
                report(record)
    return sorted(records, key=lambda r: r.number)


# The journal: a match that spans several sittings ------------------------------

JOURNAL_KIND = "awele match journal"


def checkout_version():
    """The commit of this checkout, with a digest of its uncommitted changes to
    tracked files ("+" and 12 hex digits) when it has some; None outside git.
    A journal is resumed only by the same code."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True, check=True)
        diff = subprocess.run(["git", "-C", root, "diff", "HEAD"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    version = head.stdout.strip()
    if diff.stdout:
        version += "+" + hashlib.sha256(diff.stdout).hexdigest()[:12]
    return version


def _record_from(row):
    row = dict(row)
    row["result"] = tuple(row["result"])
    return GameRecord(**row)


def open_journal(path, settings):
    """The games already in the journal at `path`, and the journal open for
    appending one JSON line a finished game.

    A new journal starts with a line of `settings` (engines, move time,
    openings, the checkout's version...); an existing one is resumed only
    when its settings are the same, so that every game of a match was played
    by the same engines under the same conditions. A last line left half
    written by a killed run is cut off."""
    if os.path.exists(path) and not os.path.isfile(path):
        raise MatchError(f"the journal {path} is not a regular file")
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        try:
            handle = open(path, "w")
        except OSError as error:
            raise MatchError(f"cannot write the journal: {error}") from None
        handle.write(json.dumps({"kind": JOURNAL_KIND, **settings}) + "\n")
        handle.flush()
        return [], handle
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise MatchError(f"cannot read the journal: {error}") from None
    complete = data[: data.rfind(b"\n") + 1]
    try:
        lines = complete.decode().splitlines()
        header = json.loads(lines[0]) if lines else {}
    except ValueError:  # UnicodeDecodeError included
        header = {}
    if not isinstance(header, dict) or header.get("kind") != JOURNAL_KIND:
        raise MatchError(f"{path} is not a match journal")
    differs = [key for key in settings if header.get(key) != settings[key]]
    if differs:
        raise MatchError(f"{path} is the journal of another match (its {', '.join(differs)} differ); "
                         f"give a new --journal file")
    try:
        records = [_record_from(json.loads(line)) for line in lines[1:] if line.strip()]
    except (ValueError, TypeError, KeyError) as error:
        raise MatchError(f"{path}: a game line cannot be read ({error})") from None
    try:
        handle = open(path, "r+")
    except OSError as error:
        raise MatchError(f"cannot write the journal {path}: {error.strerror or error}") from None
    handle.truncate(len(complete))
    handle.seek(len(complete))
    return records, handle


def journal_write(handle, record):
    handle.write(json.dumps(asdict(record)) + "\n")
    handle.flush()
    os.fsync(handle.fileno())


# Statistics -------------------------------------------------------------------


def elo(score):
    """The Elo difference of an expected score in [0, 1] (+-inf at the ends)."""
    if score <= 0:
        return -math.inf
    if score >= 1:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def interval(values):
    """(mean, half-width of the 95% normal interval) of independent samples, with
    the sample standard deviation; the half-width is None for fewer than two."""
    n = len(values)
    mean = sum(values) / n
    if n < 2:
        return mean, None
    variance = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, Z95 * math.sqrt(variance / n)


def summarise(records):
    """A's score with its interval per pair and per game, and the Elo estimate."""
    by_pair = {}
    for r in records:
        by_pair.setdefault(r.pair, []).append(r.score_a)
    pair_scores = [sum(s) / len(s) for s in by_pair.values()]
    game_scores = [r.score_a for r in records]
    mean, half = interval(pair_scores)
    _, game_half = interval(game_scores)
    wins = sum(1 for s in game_scores if s == 1)
    draws = sum(1 for s in game_scores if s == 0.5)
    low = None if half is None else max(0.0, mean - half)
    high = None if half is None else min(1.0, mean + half)

    def finite(x):
        return None if x is None or math.isinf(x) else round(x, 1)

    return {
        "games": len(records),
        "pairs": len(by_pair),
        "points": sum(game_scores),
        "wins": wins,
        "draws": draws,
        "losses": len(records) - wins - draws,
        "score": mean,
        "interval": "per game pair",
        "score_low": low,
        "score_high": high,
        "score_half_width": half,
        "score_half_width_per_game": game_half,
        "elo": finite(elo(mean)),
        "elo_low": None if low is None else finite(elo(low)),
        "elo_high": None if high is None else finite(elo(high)),
        "longest_move": {name: max((r.seconds.get(name, 0.0) for r in records), default=0.0) for name in "AB"},
        "late_moves": {name: sum(r.late.get(name, 0) for r in records) for name in "AB"},
    }


def pgn_like(record, names, movetime):
    """A game's record with tag lines, as PGN writes chess games."""
    south = names[record.south]
    north = names["B" if record.south == "A" else "A"]
    tags = [("Event", "awele match"), ("Game", record.number), ("Pair", record.pair), ("South", south),
            ("North", north), ("Opening", record.opening), ("MoveTime", f"{movetime:g}"),
            ("Result", f"{record.result[0]}-{record.result[1]}"), ("Termination", record.termination)]
    lines = [f'[{key} "{value}"]' for key, value in tags]
    return "\n".join(lines) + f"\n\n{record.record} {record.result[0]}-{record.result[1]}\n"


def _game_line(record, total):
    north = "B" if record.south == "A" else "A"
    outcome = {"S": "South wins", "N": "North wins", "draw": "draw"}[record.winner]
    points = {1.0: "1-0", 0.0: "0-1", 0.5: "1/2"}[record.score_a]
    return (f"game {record.number}/{total} pair {record.pair} [{record.opening}] South {record.south}, North {north}: "
            f"{record.result[0]}-{record.result[1]} {outcome} ({record.termination}), {record.plies} plies; "
            f"A {points}")


def _format_score(summary):
    text = f"A scored {summary['points']:g}/{summary['games']} " \
           f"(+{summary['wins']} ={summary['draws']} -{summary['losses']}): {100 * summary['score']:.1f}%"
    if summary["score_half_width"] is not None:
        text += (f" +- {100 * summary['score_half_width']:.1f}% (95%, per game pair; "
                 f"per game +- {100 * summary['score_half_width_per_game']:.1f}%)")

    def show(x):
        return "inf" if x is None else f"{x:+.0f}"

    elo_text = show(summary["elo"]) if summary["elo"] is not None else (
        "+inf" if summary["score"] >= 1 else "-inf")
    longest = summary["longest_move"]
    late = summary["late_moves"]
    text += (f"\nlongest move: A {longest['A']:.2f} s, B {longest['B']:.2f} s; "
             f"moves over 5% + 20 ms past the move time: A {late['A']}, B {late['B']}")
    text += f"\nElo difference A - B: {elo_text}"
    if summary["elo_low"] is not None or summary["elo_high"] is not None:
        low = "-inf" if summary["elo_low"] is None else f"{summary['elo_low']:+.0f}"
        high = "+inf" if summary["elo_high"] is None else f"{summary['elo_high']:+.0f}"
        text += f" (95%: {low} .. {high})"
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("engine_a", metavar="A", help="awele:KEY=VALUE,... or uci:COMMAND LINE")
    parser.add_argument("engine_b", metavar="B", help="awele:KEY=VALUE,... or uci:COMMAND LINE")
    parser.add_argument("--movetime", type=float, default=1.0, help="seconds a move (default 1)")
    parser.add_argument("--nodes", type=int, default=None,
                        help="search every move to this many nodes instead (UCI: go nodes N); the result then "
                             "does not depend on what else runs on the machine")
    parser.add_argument("--openings", type=int, default=None, help="number of openings (game pairs)")
    parser.add_argument("--games", type=int, default=None, help="number of games (even: openings = games / 2)")
    parser.add_argument("--opening-plies", type=int, default=2, help="plies from the initial position (default 2)")
    parser.add_argument("--openings-file", default=None, help="openings as records, one a line (# comments)")
    parser.add_argument("--seed", type=int, default=1, help="draws the openings when fewer than all (default 1)")
    parser.add_argument("--concurrency", type=int, default=1, help="games at once, each in a process (default 1)")
    parser.add_argument("--max-plies", type=int, default=300, help="adjudicate a game this long (default 300)")
    parser.add_argument("--adjudicate", choices=("own", "draw"), default="own",
                        help="own: each side takes the seeds on its side (the true rule); draw: a draw")
    parser.add_argument("--uci-option", action="append", default=[], metavar="NAME=VALUE",
                        help="setoption sent to every UCI engine (repeatable)")
    parser.add_argument("--grace", type=float, default=2.0,
                        help="seconds past the move time before a UCI engine is stopped (default 2)")
    parser.add_argument("--pgn", default=None, help="write every game's record to this file")
    parser.add_argument("--journal", default=None, metavar="FILE",
                        help="keep every finished game in FILE; run again with the same FILE and arguments to "
                             "play only the games still missing (a match over several sittings)")
    parser.add_argument("--engine-logs", default=None, metavar="FOLDER",
                        help="keep each UCI engine's standard error in FOLDER/A-PID.log, FOLDER/B-PID.log "
                             "(default: thrown away)")
    parser.add_argument("--json", action="store_true", help="print JSON on stdout (game lines go to stderr)")
    args = parser.parse_args(argv)

    try:
        if args.games is not None:
            if args.games < 2 or args.games % 2:
                raise MatchError("--games must be even (each opening is played twice, colours swapped)")
            if args.openings is not None and args.openings != args.games // 2:
                raise MatchError("give --games or --openings, not both")
            args.openings = args.games // 2
        if args.openings is not None and args.openings < 1:
            raise MatchError("--openings must be at least 1")
        _seconds("--movetime", args.movetime)
        if args.nodes is not None and not 1 <= args.nodes <= MAX_NODES:
            raise MatchError(f"--nodes must be 1..{MAX_NODES}, got {args.nodes}")
        _seconds("--grace", args.grace)
        if not 1 <= args.concurrency <= MAX_CONCURRENCY:
            raise MatchError(f"--concurrency must be 1..{MAX_CONCURRENCY}, got {args.concurrency}")
        if args.max_plies < 1:
            raise MatchError(f"--max-plies must be positive, got {args.max_plies}")
        if not 0 <= args.opening_plies <= MAX_OPENING_PLIES:
            raise MatchError(f"--opening-plies must be 0..{MAX_OPENING_PLIES}, got {args.opening_plies}")
        for name, path in (("--pgn", args.pgn), ("--journal", args.journal)):
            if path is not None and not os.path.isdir(os.path.dirname(path) or "."):
                raise MatchError(f"{name} {path}: the folder {os.path.dirname(path)} does not exist")
        if args.engine_logs is not None and not os.path.isdir(args.engine_logs):
            raise MatchError(f"--engine-logs {args.engine_logs}: not a folder")
        openings = choose_openings(args.openings, args.opening_plies, args.seed, args.openings_file)
        names = {"A": args.engine_a, "B": args.engine_b}
        out = sys.stderr if args.json else sys.stdout
        limit = f"{args.nodes:,} nodes" if args.nodes is not None else f"{args.movetime:g} s"
        print(f"A = {names['A']}\nB = {names['B']}\n{len(openings)} openings, {2 * len(openings)} games, "
              f"{limit} a move:", file=out)
        for i, opening in enumerate(openings, 1):
            print(f"  opening {i}: {opening or '(initial position)'}", file=out)
        total = 2 * len(openings)
        started = time.perf_counter()
        with contextlib.ExitStack() as stack:
            earlier, journal = [], None
            if args.journal:
                settings = {"engines": names, "movetime": args.movetime, "nodes": args.nodes,
                            "max_plies": args.max_plies,
                            "adjudicate": args.adjudicate, "uci_options": args.uci_option, "openings": openings,
                            "version": checkout_version()}
                earlier, journal = open_journal(args.journal, settings)
                stack.enter_context(journal)
                if earlier:
                    print(f"resumed from {args.journal}: {len(earlier)} games played, "
                          f"{total - len(earlier)} to play", file=out)
            try:
                pgn = stack.enter_context(open(args.pgn, "a" if earlier else "w")) if args.pgn else None
            except OSError as error:
                raise MatchError(f"cannot write the games to {args.pgn}: {error.strerror or error}") from None

            def report(record):
                print(_game_line(record, total), file=out, flush=True)
                if journal:
                    journal_write(journal, record)
                if pgn:
                    pgn.write(pgn_like(record, names, args.movetime) + "\n")
                    pgn.flush()

            records = run_match(args.engine_a, args.engine_b, openings, args.movetime, args.max_plies,
                                args.adjudicate, args.concurrency, args.uci_option, args.grace, report,
                                skip=[r.number for r in earlier], nodes=args.nodes, logs=args.engine_logs)
            records = sorted(earlier + records, key=lambda r: r.number)
    except MatchError as error:
        print(f"match: error: {error}", file=sys.stderr)
        return 2
    summary = summarise(records)
    print(_format_score(summary), file=out)
    if args.json:
        data = {
            "engines": names,
            "movetime": args.movetime,
            "nodes": args.nodes,
            "max_plies": args.max_plies,
            "adjudicate": args.adjudicate,
            "opening_plies": args.opening_plies,
            "seed": args.seed,
            "openings": openings,
            "seconds": round(time.perf_counter() - started, 1),
            "summary": summary,
            "games": [asdict(r) for r in records],
        }
        print(json.dumps(data, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
