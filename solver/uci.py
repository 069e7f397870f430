"""The engine protocol: UCI in the Oware dialect of Aalina and the Aualé GUI.

`awele uci` reads commands on standard input and answers on standard output,
one line each, as a chess engine does for a chess GUI, with the adaptations
Aalina made for Oware (docs/UCI.md describes the dialect as implemented):

- moves are house letters, A..F for South and a..f for North, written one
  after the other (``moves FbDa``; spaces between them are accepted too);
- ``position startpos`` is the opening, South to move; ``position fen D``
  gives a position as Aalina writes it, the twelve houses A..F a..f, South's
  and North's captured seeds and the side to move joined by '-' (the opening
  is ``4-4-4-4-4-4-4-4-4-4-4-4-0-0-S``); awele's own notation
  (``4-4-4-4-4-4/4-4-4-4-4-4 S 0:0``) is accepted in its place;
- ``go wtime``/``winc`` are South's clock and increment, ``btime``/``binc``
  North's;
- a score is ``score cp V`` with V in hundredths of a seed: the seeds the
  side to move will capture from now on minus the other side's, times 100;
- ``bestmove 0000`` answers ``go`` in a finished game.

The search runs in a thread, so ``isready`` and ``stop`` are read and
answered while it runs. The searcher (kernels, tables) is made in the
background once ``uciok`` is said (a GUI waits for it a short time);
a ``go`` with no ``isready`` before it waits for it only as long as its
time allows, then answers on time from the tables, or from a search by
captures in plain Python (solver/early.py) while the kernels still load
(a go's time runs from when its line came). A position whose layer is in the tables is answered
from them (every move's table value, a move that ends the game, by a
repetition of the game's history included, scored by the true rule). Lines
that are not understood, and positions with an illegal move, are ignored and
logged on standard error; nothing a GUI sends ends the engine but ``quit``
or the end of its input.

>>> import io
>>> out = io.StringIO()
>>> UciEngine(io.StringIO("uci\\nquit\\n"), out, io.StringIO()).run()
0
>>> out.getvalue().splitlines()[0].startswith("id name awele")
True
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import sys
import threading
import time as _time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, ClassVar, TextIO

from .early import EarlyError, EarlyGame
from .early import parse as early_parse
from .early import search as early_search
from .errors import (
    AweleError,
    IllegalRecordMoveError,
    InvalidPositionError,
)
from .limits import CYCLES, DEFAULT_QUIESCENCE, MAX_QUIESCENCE
from .report import MoveAnswer, Rule
from .version import __version__

if TYPE_CHECKING:
    from .position import Game, Position
    from .probe import Tablebase
    from .search import Searcher

ENGINE_NAME = f"awele {__version__}"
ENGINE_AUTHOR = "the awele authors"
DEFAULT_MOVE_SECONDS = 3.0  # a bare `go` (its bestmove said within them), as Aalina does without limits
MOVES_TO_GO = 30  # moves the clock is shared over when the GUI does not say
RESPONSE_MARGIN = 0.02  # seconds kept back from a move time for reading and answering
# ...but at most this share of a short one, which would otherwise lose a quarter of
# its time to the margins (0.1 s: 20 ms here, 4 ms more for the search to stop).
# A GUI allows 5% + 20 ms past a move time; the answer comes well before it.
RESPONSE_SHARE = 0.03
# A go that finds the engine still loading its kernels and tables (no isready before it)
# waits for the searcher up to this share of its move time, or to SEARCH_AT_LEAST seconds
# before its end if that is later (a search of 0.25 s reaches 10-12 plies in the opening),
# then answers from what is loaded.
PREPARE_SHARE = 0.6
SEARCH_AT_LEAST = 0.25
EARLY_MARGIN = 0.01  # seconds kept back from a go answered by the early rules' search (it stops within ms)
MOST_SEEDS = 48  # an early search's value beyond this counts a won or lost end (not a number of seeds)


def response_margin(seconds: float) -> float:
    """Seconds kept back from a move time of `seconds` for reading and answering."""
    return min(RESPONSE_MARGIN, RESPONSE_SHARE * seconds)

NULL_MOVE = "0000"
_DIAGRAM = re.compile(r"^(\d+)(?:-(\d+)){13}-([SN])$")
_LETTERS = set("ABCDEFabcdef")  # position.HOUSE_LETTERS, without importing the kernels for `uci`
MAX_LINE_BYTES = 1 << 20  # a longer command line is skipped whole (a game's moves take a few hundred bytes)
SHIPPED_WEIGHTS = "<shipped>"  # the EvaluationFile option's value for the weights shipped with awele
MAX_COUNT_DIGITS = 3  # a house or a store holds at most 48 seeds
PATIENCE_SECONDS = 10.0  # the most the end of a session waits for a search or the preparation to end


class UciError(ValueError):
    """A command line the engine cannot follow; logged, never fatal."""


# The dialect's notation ----------------------------------------------------------


def parse_diagram(text: str) -> Position:
    """A position in Aalina's notation (twelve houses, two stores, S or N, joined by
    '-') or in awele's own.

    >>> str(parse_diagram("4-4-4-4-4-4-4-4-4-4-4-4-0-0-S"))
    '4-4-4-4-4-4/4-4-4-4-4-4 S 0:0'
    >>> str(parse_diagram("0-1-2-0-3-1/2-0-1-3-2-1 N 20:12"))
    '0-1-2-0-3-1/2-0-1-3-2-1 N 20:12'
    """
    from .position import Position

    text = text.strip()
    if _DIAGRAM.match(text):
        *counts, side = text.split("-")
        if any(len(count.lstrip("0")) > MAX_COUNT_DIGITS for count in counts):
            raise InvalidPositionError("a house or a store holds at most 48 seeds, got a number of "
                                       f"{max(len(count) for count in counts)} digits")
        numbers = [int(n) for n in counts]
        return Position(numbers[:12], side, numbers[12:14])
    return Position.from_string(text)


def diagram(position: Position) -> str:
    """A position in Aalina's notation.

    >>> from solver.position import Position
    >>> diagram(Position.initial())
    '4-4-4-4-4-4-4-4-4-4-4-4-0-0-S'
    """
    return "-".join(str(n) for n in (*position.houses, *position.captured)) + f"-{position.to_move}"


def parse_moves(words: list[str]) -> list[str]:
    """The move letters of the words after ``moves``: ``FbDa`` or ``F b D a``."""
    letters = list("".join(words))
    for letter in letters:
        if letter not in _LETTERS:
            raise UciError(f"{letter!r} is not a move: moves are house letters A-F (South) and a-f (North)")
    return letters


def parse_position(words: list[str]) -> Game:
    """The Game of a ``position`` command's words (after ``position``)."""
    from .position import Game, Position

    if not words:
        raise UciError("position needs startpos or fen")
    if "moves" in words:
        cut = words.index("moves")
        setup, moves = words[:cut], words[cut + 1 :]
    else:
        setup, moves = words, []
    if setup == ["startpos"]:
        start = Position.initial()
    elif setup[:1] == ["fen"] and len(setup) > 1:
        try:
            start = parse_diagram(" ".join(setup[1:]))
        except InvalidPositionError as error:
            raise UciError(str(error)) from None
    else:
        raise UciError("position needs startpos or fen POSITION, then optionally moves")
    try:
        return Game.parse(parse_moves(moves), start)
    except IllegalRecordMoveError as error:
        raise UciError(f"move {error.number} ({error.move}) is illegal: {error.reason}") from None


@dataclass
class Limits:
    """What a ``go`` asks for: seconds, plies, nodes, or until ``stop``."""

    time: float | None = None
    depth: int | None = None
    nodes: int | None = None
    infinite: bool = False


_GO_NUMBERS = ("movetime", "wtime", "btime", "winc", "binc", "movestogo", "depth", "nodes", "mate")


def parse_go(words: list[str], to_move: str, log: Callable[[str], None] | None = None) -> Limits:
    """Limits of a ``go`` command's words; a malformed or unknown word is logged
    and skipped, the rest is followed.

    >>> parse_go(["movetime", "1000"], "S")
    Limits(time=0.98, depth=None, nodes=None, infinite=False)
    >>> parse_go(["wtime", "60000", "btime", "1000", "winc", "0"], "N").time < 1
    True
    """
    numbers = {}
    infinite = False
    i = 0
    while i < len(words):
        word = words[i]
        if word in ("infinite", "ponder"):
            infinite = True
            i += 1
        elif word in _GO_NUMBERS:
            value = words[i + 1] if i + 1 < len(words) else None
            if value is None or not re.fullmatch(r"[-+]?\d{1,12}", value):
                if log:
                    log(f"go: {word} needs a whole number, got {value!r}; ignored")
                i += 1 if value is None or value in _GO_NUMBERS else 2
                continue
            numbers[word] = int(value)
            i += 2
        else:
            if log:
                log(f"go: {word!r} is not understood; ignored")
            i += 1
    limits = Limits(infinite=infinite)
    if "depth" in numbers and numbers["depth"] > 0:
        limits.depth = numbers["depth"]
    if "nodes" in numbers and numbers["nodes"] > 0:
        limits.nodes = numbers["nodes"]
    if infinite:
        return limits
    clock, increment = ("wtime", "winc") if to_move == "S" else ("btime", "binc")
    if "movetime" in numbers:
        seconds = numbers["movetime"] / 1000
        limits.time = max(0.005, seconds - response_margin(seconds))
    elif clock in numbers:
        left = max(0, numbers[clock]) / 1000
        share = left / max(1, numbers.get("movestogo", MOVES_TO_GO)) + 0.75 * max(0, numbers.get(increment, 0)) / 1000
        limits.time = max(0.005, min(share, 0.5 * max(0.0, left - RESPONSE_MARGIN)))
    elif limits.depth is None and limits.nodes is None:
        limits.time = DEFAULT_MOVE_SECONDS - response_margin(DEFAULT_MOVE_SECONDS)  # as `go movetime 3000`
    return limits


# The engine ----------------------------------------------------------------------


Answer = MoveAnswer  # the answer of a go: the one move record every face renders (solver.report)


def table_answer(tablebase: Tablebase, game: Game, deadline: float | None = None) -> Answer:
    """The move the tables choose in the game's position with the game's
    history (Engine.table_move). Raises MissingTableError when a layer is
    not built."""
    from .engine import Engine

    return Engine(tablebase).table_move(game, deadline)


class UciEngine:
    """One UCI session over streams (standard input and output by default).

    ``run()`` reads commands until ``quit`` or the end of input and returns 0.
    `input` may be a binary stream (standard input's bytes, by default) or a
    text one; bytes are decoded as UTF-8 with what is not UTF-8 replaced,
    whatever the locale says, so that no byte a GUI sends ends the engine.
    `directory` is the tables folder (the Tables option, default
    places.default_directory()).
    """

    def __init__(self, input: IO[bytes] | TextIO | None = None, output: TextIO | None = None,
                 log: TextIO | None = None, directory: str | None = None) -> None:
        self.input = input if input is not None else getattr(sys.stdin, "buffer", sys.stdin)
        self.output = output if output is not None else sys.stdout
        self.log_stream = log if log is not None else sys.stderr
        self._write_lock = threading.Lock()
        if directory is None:
            from .places import default_directory

            directory = default_directory()
        self.options: dict[str, Any] = {"hash": 64, "threads": None, "tables": str(directory), "maxtableseeds": -1,
                        "usetables": True, "cycles": "own", "evaluation": "learned",
                        "quiescence": DEFAULT_QUIESCENCE, "evaluationfile": None}
        self._game: Game | None = None  # None: the opening, made when first needed (it loads the kernels)
        self.searcher: Searcher | None = None
        self._searcher_key: tuple | None = None
        self._tablebase: Tablebase | None = None
        self._tablebase_key: tuple | None = None
        self._thinking: threading.Thread | None = None  # the search thread of the last go
        self._busy = threading.Event()  # set from go until its bestmove is said
        self._stop = threading.Event()  # stop (or ponderhit) asked for the search in progress
        self.debug = False
        self._received = 0.0  # when the line being followed came (time.perf_counter())
        self._damage_named: set[str] = set()  # table errors already logged
        # The searcher is made (kernels loaded, tables read) in the background once uciok
        # is said, so that a first go need not wait for it all.
        self._searcher_lock = threading.Lock()  # held while the searcher or its tables are made
        self._preparing: threading.Thread | None = None
        self._unprepared_key: tuple | None = None  # options the searcher could not be made for
        self._tables_ready = threading.Event()  # the tables folder opened and its look-ups loaded
        self._rules_loaded = threading.Event()  # the rules' kernels loaded: Game can be used
        # A position read before the rules' kernels loaded: its words and its game
        # under the early rules (solver/early.py); the Game is made from the words later.
        self._early: tuple[list[str], EarlyGame] | None = None

    # Output ----------------------------------------------------------------------

    def say(self, line: str) -> None:
        """One protocol line on the output."""
        with self._write_lock:
            try:
                self.output.write(line + "\n")
                self.output.flush()
            except (BrokenPipeError, OSError, ValueError):
                pass  # the GUI has gone; the end of input follows

    def log(self, message: str) -> None:
        """One line on the log stream (standard error), in ASCII where the
        stream cannot encode it."""
        line = f"awele uci: {message}\n"
        with self._write_lock:
            try:
                try:
                    self.log_stream.write(line)
                except UnicodeEncodeError:
                    self.log_stream.write(line.encode("ascii", "backslashreplace").decode("ascii"))
                self.log_stream.flush()
            except (OSError, ValueError):
                pass

    @property
    def game(self) -> Game:
        """The game the next ``go`` searches (the opening until a ``position``)."""
        if self._early is not None:  # read by the early rules: made now with the kernels
            words, self._early = self._early[0], None
            self._game = parse_position(words)
        if self._game is None:
            from .position import Game

            self._game = Game()
        return self._game

    @game.setter
    def game(self, game: Game) -> None:
        self._game, self._early = game, None

    # The loop --------------------------------------------------------------------

    def run(self) -> int:
        """Read and follow commands until ``quit`` or the end of input.

        A thread reads the lines as they come and notes when each came: a go's
        time runs from then, as the GUI's clock does, even when the engine
        was still busy with the command before (loading its kernels)."""
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read_lines, args=(lines,), daemon=True).start()
        try:
            while True:
                line, received = lines.get()
                if line is None:
                    break
                if not self.handle(line, received):
                    break
        except KeyboardInterrupt:
            pass
        self._stop_search(wait=True)
        preparing = self._preparing
        if preparing is not None:
            preparing.join(PATIENCE_SECONDS)  # its reads end before the caller closes anything
        return 0

    def _read_lines(self, lines: queue.Queue) -> None:
        """The reading thread: each line with the time it came (time.perf_counter()),
        then (None, time) at the end of input or when the input cannot be read."""
        try:
            while True:
                line = self._read_line()
                lines.put((line, _time.perf_counter()))
                if line is None:
                    return
        except Exception as error:  # a closed or failing input is the end of input
            self.log(f"cannot read the input: {type(error).__name__}: {error}")
            lines.put((None, _time.perf_counter()))

    def _read_line(self) -> str | None:
        """The next command line, decoded; None at the end of input. A line
        longer than MAX_LINE_BYTES is read to its end, logged and skipped
        (as an empty line), so that no line fills the memory."""
        line = self.input.readline(MAX_LINE_BYTES + 1)
        if not line:
            return None
        if len(line) > MAX_LINE_BYTES:
            ending = line[-1:]
            while ending not in ("\n", b"\n"):
                ending = self.input.readline(MAX_LINE_BYTES)[-1:]
                if not ending:
                    break
            self.log(f"ignored a line of more than {MAX_LINE_BYTES} bytes")
            return ""
        if isinstance(line, bytes):
            return line.decode("utf-8", "replace")
        return line

    def handle(self, line: str, received: float | None = None) -> bool:
        """Follow one command line; False after ``quit``. A line that cannot be
        followed is logged and ignored, whatever went wrong: only ``quit`` (and
        the end of input) ends the engine. `received`: when the line came
        (time.perf_counter(); None: now), from which a go's time runs."""
        self._received = _time.perf_counter() if received is None else received
        words = line.split()
        if not words:
            return True
        command, arguments = words[0], words[1:]
        handler = self._COMMANDS.get(command)
        if handler is None:
            self.log(f"ignored {line.strip()[:200]!r}: unknown command")
            return True
        try:
            going_on = handler(self, arguments) is not False
            if command in self._PREPARING_COMMANDS:
                self._prepare_in_background()
            return going_on
        except (UciError, AweleError) as error:
            self.log(f"ignored {line.strip()[:200]!r}: {error}")
        except Exception as error:  # a defect, but never the end of the engine
            self.log(f"ignored {line.strip()[:200]!r}: {type(error).__name__}: {error}")
        return True

    def searching(self) -> bool:
        """Whether a go has not said its bestmove yet (the GUI may send the next
        position as soon as it has, even before the search thread has ended)."""
        return self._busy.is_set()

    # Commands --------------------------------------------------------------------

    def _uci(self, arguments):
        self.say(f"id name {ENGINE_NAME}")
        self.say(f"id author {ENGINE_AUTHOR}")
        for line in self._option_lines():
            self.say(line)
        self.say("uciok")

    def _isready(self, arguments):
        if not self.searching():
            try:
                self._searcher_by(None)  # tables read and kernels loaded before the clock runs
            except AweleError as error:
                self.log(f"not ready to search: {error}")
            except Exception as error:  # the GUI still gets its readyok
                self.log(f"not ready to search: {type(error).__name__}: {error}")
        self.say("readyok")

    def _ucinewgame(self, arguments):
        if self.searching():
            raise UciError("a search is running; send stop first")
        # The transposition table carries over: its entries hold in any game
        # (a score that rests on the path above a node is never stored).
        self._game, self._early = None, None

    def _debug(self, arguments):
        self.debug = arguments[:1] != ["off"]

    def _setoption(self, arguments):
        if self.searching():
            raise UciError("a search is running; send stop first")
        text = " ".join(arguments)
        match = re.fullmatch(r"name\s+(?P<name>.+?)(?:\s+value\s+(?P<value>.*))?", text)
        if not match:
            raise UciError("write setoption name NAME value VALUE")
        name, value = match["name"].strip().lower().replace(" ", ""), (match["value"] or "").strip()
        self._set(name, value)

    def _position(self, arguments):
        if self.searching():
            raise UciError("a search is running; send stop first")
        if not self._rules_loaded.is_set():
            # The kernels still load: the early rules read it now (a go may follow at once).
            try:
                early = early_parse(arguments)
            except EarlyError as error:
                raise UciError(str(error)) from None
            if early is not None:
                self._game, self._early = None, (list(arguments), early)
                return
        self.game = parse_position(arguments)

    def _go(self, arguments):
        if self.searching():
            raise UciError("a search is already running")
        early = None if self._rules_loaded.is_set() else self._early
        game: Game | None = None
        if early is None:
            limits = parse_go(arguments, self.game.position.to_move, self.log)
            from .position import Game

            game = Game(self.game.start)
            for move in self.game.moves:
                game.play(move)
        else:
            limits = parse_go(arguments, early[1].to_move, self.log)
        self._stop.clear()
        self._busy.set()
        self._thinking = threading.Thread(target=self._think, args=(game, limits, self._received, early),
                                          daemon=True)
        self._thinking.start()

    def _stop_command(self, arguments):
        self._stop_search(wait=False)

    def _ponderhit(self, arguments):
        # The pondered position is now the game's: answer with what was found.
        self._stop_search(wait=False)

    def _quit(self, arguments):
        return False

    # Commands after which the searcher for the options is made in the background (after
    # uciok is said: a GUI waits for it a short time); isready and go wait for it.
    _PREPARING_COMMANDS: ClassVar[frozenset] = frozenset(("uci", "ucinewgame", "setoption", "position"))

    _COMMANDS: ClassVar[dict] = {
        "uci": _uci,
        "isready": _isready,
        "ucinewgame": _ucinewgame,
        "debug": _debug,
        "setoption": _setoption,
        "position": _position,
        "go": _go,
        "stop": _stop_command,
        "ponderhit": _ponderhit,
        "quit": _quit,
    }

    # Options ---------------------------------------------------------------------

    def _option_lines(self):
        options = self.options
        return [
            f"option name Hash type spin default {options['hash']} min 1 max 65536",
            f"option name Threads type spin default {os.cpu_count() or 1} min 1 max 256",
            f"option name Tables type string default {options['tables']}",
            "option name MaxTableSeeds type spin default -1 min -1 max 48",
            "option name UseTables type check default true",
            "option name Cycles type combo default own var own var split",
            "option name Evaluation type combo default learned var learned var zero",
            f"option name EvaluationFile type string default {SHIPPED_WEIGHTS}",
            f"option name Quiescence type spin default {DEFAULT_QUIESCENCE} min 0 max {MAX_QUIESCENCE}",
        ]

    def _set(self, name, value):
        if name == "hash":
            self.options["hash"] = self._whole(name, value, 1, 65536)
        elif name == "threads":
            self.options["threads"] = self._whole(name, value, 1, 256)
        elif name in ("tables", "tablespath"):
            if not value or not os.path.isdir(value):
                raise UciError(f"Tables: {value!r} is not a folder")
            self.options["tables"] = value
        elif name == "maxtableseeds":
            self.options["maxtableseeds"] = self._whole(name, value, -1, 48)
        elif name in ("usetables", "useleaves"):
            if value.lower() not in ("true", "false"):
                raise UciError(f"{name}: write true or false, got {value!r}")
            self.options["usetables"] = value.lower() == "true"
        elif name == "cycles":
            if value not in CYCLES:
                raise UciError(f"Cycles: write own or split, got {value!r}")
            self.options["cycles"] = value
        elif name == "evaluation":
            if value not in ("learned", "zero"):
                raise UciError(f"Evaluation: write learned or zero, got {value!r}")
            self.options["evaluation"] = value
        elif name == "quiescence":
            self.options["quiescence"] = self._whole(name, value, 0, MAX_QUIESCENCE)
        elif name in ("evaluationfile", "weightsfile"):
            if value == SHIPPED_WEIGHTS:
                self.options["evaluationfile"] = None
                return
            from .evaluation import load_weights

            load_weights(value)  # checked now: a file it cannot use is refused here, the previous one kept
            self.options["evaluationfile"] = value
        else:
            raise UciError(f"no option {name!r}")

    @staticmethod
    def _whole(name, value, low, high):
        if not re.fullmatch(r"[-+]?\d{1,9}", value) or not low <= int(value) <= high:
            raise UciError(f"{name}: a whole number {low}..{high}, got {value!r}")
        return int(value)

    def _ensure_searcher(self):
        """The Searcher for the current options, made anew when they changed. The
        tables already read are kept while the tables options stay."""
        from .search import Searcher

        options = self.options
        key = self._options_key()
        tables_key, evaluation, max_table_seeds = key[0], key[3], key[0][1]
        if self.searcher is not None and key == self._searcher_key:
            return self.searcher
        if self.searcher is not None and self._searcher_key is not None and \
                (self._searcher_key[0], self._searcher_key[3]) == (tables_key, evaluation):
            # Threads or Hash only: changed in place. A new Searcher would first
            # wait for the old one's background reader (tens of seconds with
            # tables to 28 seeds), and meanwhile the engine would not answer.
            try:
                self.searcher.configure(threads=options["threads"], hash_mb=options["hash"],
                                        quiescence=options["quiescence"])
            except AweleError as error:
                self.log(f"cannot change the searcher: {error}; keeping it as it was")
                options["threads"], options["hash"] = self._searcher_key[2], self._searcher_key[1]
                options["quiescence"] = self._searcher_key[4]
                return self.searcher
            self._searcher_key = key
            return self.searcher
        if self.searcher is not None:
            # The tables it reads in the background: let that end before another
            # Searcher reads into the same Tablebase, or before it is closed.
            self.searcher.wait_for_tables()
        self._ensure_tables()
        arguments = {"hash_mb": options["hash"], "max_table_seeds": max_table_seeds, "threads": options["threads"],
                     "evaluation": options["evaluation"], "weights_file": options["evaluationfile"],
                     "quiescence": options["quiescence"], "log": self.log}
        try:
            searcher = Searcher(self._tablebase, **arguments)
        except AweleError as error:
            self.log(f"cannot make the searcher: {error}; keeping the previous one")
            if self.searcher is None:
                raise
            return self.searcher
        self.searcher, self._searcher_key = searcher, key
        return searcher

    def _options_key(self):
        """What the searcher depends on: ((tables folder, max table seeds), hash,
        threads, (evaluation, its file), quiescence). MaxTableSeeds -1: as many
        layers as the Searcher holds by default (None); UseTables false: none (-1)."""
        options = self.options
        max_table_seeds = (None if options["maxtableseeds"] < 0 else options["maxtableseeds"]) \
            if options["usetables"] else -1
        evaluation = (options["evaluation"], options["evaluationfile"])
        return ((options["tables"], max_table_seeds), options["hash"], options["threads"], evaluation,
                options["quiescence"])

    def _ensure_tables(self):
        """The Tablebase for the tables options, its look-up kernels loaded (a
        first go may answer from it before the searcher is made)."""
        from .probe import Tablebase

        tables_key = self._options_key()[0]
        if self._tablebase is None or self._tablebase_key != tables_key:
            self._tables_ready.clear()  # (set again once the new one's look-ups are loaded)
            if self.searcher is not None:
                # Its background reader reads into the old Tablebase: let it end first.
                self.searcher.wait_for_tables()
            if self._tablebase is not None:
                self._tablebase.close()
            self._tablebase, self._tablebase_key = Tablebase(self.options["tables"]), tables_key
        if not self._tables_ready.is_set():
            self._tablebase.warm_up()
            self._tables_ready.set()
        return self._tablebase

    def _prepare_in_background(self):
        """Make the searcher for the options in a thread, unless one is making it
        or it is made: a go waits for it only as long as its time allows."""
        key = self._options_key()
        if key == self._unprepared_key or (self.searcher is not None and self._searcher_key == key):
            return  # made, or it could not be made for these options (logged once)
        preparing = self._preparing
        if preparing is not None and preparing.is_alive():
            return
        self._preparing = threading.Thread(target=self._prepare, daemon=True)
        self._preparing.start()

    def _prepare(self):
        """The preparing thread: the tables and their look-ups first, then the
        searcher, made again when the options changed meanwhile."""
        while True:
            with self._searcher_lock:
                key = self._options_key()
                try:
                    _load_rules()
                    self._rules_loaded.set()
                    self._ensure_tables()
                    self._ensure_searcher()
                except Exception as error:  # tried again by the go or isready that needs it
                    self.log(f"not ready to search: {type(error).__name__}: {error}")
                    self._unprepared_key = key
                    return
                if self._options_key() == key:
                    return

    def _searcher_by(self, deadline):
        """The searcher for the options, made (or its making waited for) until
        `deadline` (time.perf_counter(); None: as long as it takes); None when
        it is not ready by then."""
        self._prepare_in_background()
        timeout = -1 if deadline is None else max(0.0, deadline - _time.perf_counter())
        if not self._searcher_lock.acquire(timeout=timeout):
            return None
        try:
            return self._ensure_searcher()  # at once when the preparing thread made it for these options
        finally:
            self._searcher_lock.release()

    # Searching -------------------------------------------------------------------

    def _stop_search(self, wait):
        thinking = self._thinking
        if thinking is None or not thinking.is_alive():
            return
        self._stop.set()
        stop = getattr(self.searcher, "stop", None)
        if callable(stop):
            stop()
        if wait:
            thinking.join(PATIENCE_SECONDS)

    def _think(self, game, limits, started, early=None):
        """The search thread: answer `game` within `limits` from `started` (when the
        go came, time.perf_counter()), then say bestmove (after stop when the
        search is infinite). `game` None: the position was read by the early
        rules, `early` its (words, EarlyGame); the Game is made once the
        kernels load, if that is in time."""
        try:
            if game is None:
                game = self._game_in_time(early[0], limits, started)
            over = early[1].end() if game is None else game.end_reason
            if over is not None:
                self.say(f"info string the game is over ({over})")
                answer = Answer(None)
            elif game is None:
                answer = self._unprepared_answer(None, limits, started, early[1])
            else:
                answer = self._answer(game, limits, started)
        except Exception as error:  # never leave the GUI without a bestmove
            self.log(f"search failed: {type(error).__name__}: {error}")
            if game is None:
                moves = early[1].legal_moves()
                answer = Answer(moves[0] if moves else None)
            else:
                try:
                    answer = Answer(_capturing_move(game), source="two-ply choice")
                except Exception:
                    moves = game.legal_moves()
                    answer = Answer(moves[0] if moves else None)
        if answer.move is not None:
            self._report(answer, started)
        if limits.infinite:
            self._stop.wait()  # UCI: no bestmove before stop in an infinite search
        if answer.move is None:
            said = f"bestmove {NULL_MOVE}"
        elif len(answer.line) > 1:
            said = f"bestmove {answer.move} ponder {answer.line[1]}"
        else:
            said = f"bestmove {answer.move}"
        self._busy.clear()  # before the answer: the GUI's next command may follow it at once
        self.say(said)

    def _game_in_time(self, words, limits, started):
        """The Game of a position read by the early rules, once the rules' kernels
        are loaded: waited for as long as a go waits for its searcher (None when
        they are not loaded by then; at once without a time limit)."""
        if limits.time is not None:
            wait = started + max(PREPARE_SHARE * limits.time, limits.time - SEARCH_AT_LEAST) - _time.perf_counter()
            if not self._rules_loaded.wait(max(0.0, wait)):
                return None
        return parse_position(words)

    def _answer(self, game, limits, started):
        """The answer of a go (solver.engine.Engine.move decides: the tables or
        a search, and the time of each), from the searcher when it is ready
        within the go's time, else _unprepared_answer."""
        from .engine import Engine  # here: the engine imports numba, which `uci` must not wait for

        searcher = self._searcher_by(
            None if limits.time is None else started + max(PREPARE_SHARE * limits.time, limits.time - SEARCH_AT_LEAST))
        if searcher is None:
            return self._unprepared_answer(game, limits, started)
        options = self.options
        engine = Engine(searcher.tablebase, searcher, use_tables=options["usetables"],
                        max_table_seeds=options["maxtableseeds"], on_damage=self._name_damage)

        def progress(depth, value, exact, nodes, seconds, line=()):
            if self._stop.is_set():
                searcher.stop()  # a stop that came before the search had begun
            self.say(f"info depth {depth} score cp {100 * value} nodes {nodes} time {round(1000 * seconds)} "
                     f"nps {round(nodes / seconds) if seconds > 0 else 0}" + (f" pv {''.join(line)}" if line else ""))

        return engine.move(game, time=limits.time, depth=limits.depth, nodes=limits.nodes, cycles=options["cycles"],
                           progress=progress, started=started)

    def _name_damage(self, message):
        """A damaged or mismatched layer: named once (the position is searched)."""
        if message not in self._damage_named:
            self._damage_named.add(message)
            self.log(message)

    def _unprepared_answer(self, game, limits, started, early=None):
        """The answer of a go whose time runs out before the searcher is made (a
        first go with no isready before it): the tables' move when they hold the
        position (their look-ups load first), else a search by captures in plain
        Python until the answer's deadline (Engine.move without a searcher).
        `game` None: the rules' kernels are not loaded yet (nor the engine,
        which needs them), `early` is the game by the early rules
        (solver/early.py): only its search can answer."""
        if game is None or self._tablebase is None:
            found = early_search(early if game is None else EarlyGame.of(game),
                                 started + limits.time - max(EARLY_MARGIN, response_margin(limits.time)))
            answer = Answer(found.move, found.value if abs(found.value) <= MOST_SEEDS else None, exact=False,
                            rule=Rule.TRUE, source="search by captures", depth=found.depth, nodes=found.nodes,
                            seconds=_time.perf_counter() - started)
        else:
            from .engine import Engine

            tablebase = self._tablebase  # made first by the preparing thread, before its look-ups load
            options = self.options

            def ready(deadline):
                wait = None if deadline is None else max(0.0, deadline - _time.perf_counter())
                return self._tables_ready.wait(wait) and tablebase is self._tablebase

            engine = Engine(tablebase, None, use_tables=options["usetables"], max_table_seeds=options["maxtableseeds"])
            answer = engine.move(game, time=limits.time, started=started, tables_ready=ready)
        how = "answered from the tables" if answer.source == "table" else \
            f"a search by captures in plain Python, {answer.depth} plies"
        self.say(f"info string the search is not ready yet (kernels and tables loading): {how}")
        return answer

    def _report(self, answer, started):
        parts = ["info"]
        if answer.depth:
            parts += ["depth", str(answer.depth)]
        if answer.value is not None:
            parts += ["score", "cp", str(100 * answer.value)]
        elapsed = _time.perf_counter() - started
        parts += ["nodes", str(answer.nodes), "time", str(round(1000 * elapsed))]
        if answer.nodes and elapsed > 0:
            parts += ["nps", str(round(answer.nodes / elapsed))]
        if answer.line:
            parts += ["pv", "".join(answer.line)]
        self.say(" ".join(parts))
        if answer.value is not None:
            kind = "exact" if answer.exact else "estimate"
            self.say(f"info string value {answer.value:+d} for the side to move, {kind}; "
                     f"source {answer.source}; {answer.rule.describe()}")


def _load_rules() -> None:
    """Load the rules' kernels a first answer needs (playing, legal moves, the
    ends of a game, captures) before the search's: a go that comes while the
    searcher is being made waits for each kernel it needs that is not loaded."""
    from .position import Game, Position

    game = Game(Position.from_string("1-0-0-0-0-1/0-0-0-0-0-0 S 23:23"))
    _capturing_move(game)
    game.play(game.legal_moves()[-1])
    game.is_over()
    game.result()


def _capturing_move(game: Game) -> str:
    """engine.capturing_move (imported when used: the engine loads the rules' kernels)."""
    from .engine import capturing_move

    return capturing_move(game)


def main(directory: str | None = None) -> None:
    """Speak UCI on standard input and output, then end the process at once.

    The process ends with os._exit: the Searcher may still be reading tables in
    a background thread, and a normal exit can wait for that read (or, when the
    interpreter stops that thread inside h5py, for ever), where a GUI expects
    an engine to be gone soon after `quit`."""
    status = UciEngine(directory=directory).run()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)


__all__ = ["Answer", "Limits", "UciEngine", "UciError", "diagram", "main", "parse_diagram", "parse_go",
           "parse_position", "table_answer"]
