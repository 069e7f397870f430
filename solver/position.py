"""Positions and games as users see them: notation, diagrams, legal moves, play.

A :class:`Position` holds the twelve houses in absolute order (South's A..F,
then North's a..f, each row in sowing order), the side to move and the seeds
each side has captured. The rules themselves are the kernels of
:mod:`solver.rules`; this module only converts between the user's view and the
packed mover view those kernels work on.

>>> p = Position.initial()
>>> str(p)
'4-4-4-4-4-4/4-4-4-4-4-4 S 0:0'
>>> p.legal_moves()
['A', 'B', 'C', 'D', 'E', 'F']
>>> str(p.play("F"))
'4-4-4-4-4-0/5-5-5-5-4-4 N 0:0'
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

from . import index, rules
from .errors import (
    GameOverError,
    IllegalMoveError,
    IllegalRecordMoveError,
    InvalidArgumentError,
    InvalidPositionError,
    InvalidRecordError,
)
from .limits import MAX_PERFT_DEPTH
from .report import EndReason, Outcome

SOUTH = "S"
NORTH = "N"
SIDES = (SOUTH, NORTH)
SIDE_NAMES = {SOUTH: "South", NORTH: "North"}
HOUSE_LETTERS = {SOUTH: "ABCDEF", NORTH: "abcdef"}
TOTAL_SEEDS = rules.TOTAL_SEEDS
WINNING_SEEDS = TOTAL_SEEDS // 2 + 1

_MAX_DIGITS = 20  # longer numbers are refused before int() (which refuses past 4300 digits, with its own error)
_NUMBER_LIST = re.compile(r"^\s*\d+(\s*[,\s]\s*\d+){11}\s*$")
_CANONICAL = re.compile(
    r"^\s*(?P<south>\d+(?:-\d+){5})\s*/\s*(?P<north>\d+(?:-\d+){5})"
    r"(?:\s+(?P<side>[^\s\d]\S*))?(?:\s+(?P<south_store>\d+)\s*:\s*(?P<north_store>\d+))?\s*$"
)


def other_side(side: str) -> str:
    """The side that is not `side`."""
    return NORTH if side == SOUTH else SOUTH


def _count(value: object) -> int:
    """A seed count as an int; booleans, floats and other types are refused (TypeError)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(value)
    return int(value)


def _side(to_move):
    """'S' or 'N' from 'S', 's', 'South', ...; InvalidPositionError for anything else."""
    side = str(to_move).upper() if isinstance(to_move, str) else to_move
    side = {"SOUTH": SOUTH, "NORTH": NORTH}.get(side, side)
    if side not in SIDES:
        raise InvalidPositionError(f"side to move must be S or N, got {to_move!r}")
    return side


class Position:
    """A position: twelve houses (A..F, a..f), the side to move, captured seeds.

    Positions are immutable and hashable; ``play`` returns a new one.
    """

    __slots__ = ("_houses", "_to_move", "_captured", "_expansion")
    _houses: tuple[int, ...]
    _to_move: str
    _captured: tuple[int, int]
    _expansion: index.Expansion | None

    def __init__(self, houses: Iterable[int], to_move: str = SOUTH, captured: Iterable[int] = (0, 0)) -> None:
        try:
            houses = tuple(_count(h) for h in houses)
            captured = tuple(_count(c) for c in captured)
        except (TypeError, ValueError):
            raise InvalidPositionError(
                f"houses and captured counts must be integers: {houses!r}, {captured!r}") from None
        if len(houses) != rules.HOUSES:
            raise InvalidPositionError(f"a position has 12 houses, got {len(houses)}")
        if any(h < 0 for h in houses):
            raise InvalidPositionError(f"house counts cannot be negative: {houses}")
        if len(captured) != 2 or any(c < 0 for c in captured):
            raise InvalidPositionError(f"captured counts must be two non-negative numbers, got {captured}")
        total = sum(houses) + sum(captured)
        if total > TOTAL_SEEDS:
            raise InvalidPositionError(f"{total} seeds in houses and stores; the game has only {TOTAL_SEEDS}")
        side = _side(to_move)
        self._houses = houses
        self._to_move = side
        self._captured = captured
        self._expansion = None

    # Construction -----------------------------------------------------------------

    @classmethod
    def initial(cls) -> "Position":
        """The opening position: four seeds in every house, South to move."""
        return cls((4,) * 12, SOUTH, (0, 0))

    @classmethod
    def from_string(cls, text: str) -> "Position":
        """Parse the canonical form or a list of 12 integers.

        The canonical form is ``A-B-C-D-E-F/a-b-c-d-e-f SIDE S:N``; the side
        (S or N) and captured counts are optional (South to move, 0:0). Twelve
        integers separated by spaces or commas give A..F, a..f with South to
        move and nothing captured.

        >>> Position.from_string("0-0-0-0-1-2/1-0-0-0-0-0 N 20:23").seeds
        4
        >>> str(Position.from_string("1, 2, 3, 4, 5, 6, 0 0 0 0 0 1"))
        '1-2-3-4-5-6/0-0-0-0-0-1 S 0:0'
        """
        if not isinstance(text, str):
            raise InvalidPositionError(f"a position must be given as text, got {type(text).__name__}")
        longest = max((len(digits) for digits in re.findall(r"\d+", text)), default=0)
        if longest > _MAX_DIGITS:
            raise InvalidPositionError(f"a count of {longest} digits is not a seed count (0..{TOTAL_SEEDS})")
        if _NUMBER_LIST.match(text):
            return cls([int(t) for t in re.split(r"[,\s]+", text.strip())])
        match = _CANONICAL.match(text)
        if not match:
            raise InvalidPositionError(
                f"cannot read position {text.strip()!r}: expected 'A-B-C-D-E-F/a-b-c-d-e-f S 0:0' or 12 integers"
            )
        houses = [int(t) for t in match["south"].split("-")] + [int(t) for t in match["north"].split("-")]
        side = match["side"] or SOUTH
        if side not in SIDES:
            raise InvalidPositionError(f"side to move must be S or N, got {side!r}")
        captured = (0, 0)
        if match["south_store"] is not None:
            captured = (int(match["south_store"]), int(match["north_store"]))
        return cls(houses, side, captured)

    @classmethod
    def from_mover_board(cls, board: Iterable[int], to_move: str = SOUTH,
                         captured: Iterable[int] = (0, 0)) -> Position:
        """Build a position from 12 counts in mover view (mover's houses first).

        The counts must be integers (no float or text is converted), as for Position()."""
        to_move = _side(to_move)
        try:
            board = [_count(b) for b in board]
        except TypeError:
            raise InvalidPositionError(f"house counts must be integers, got {board!r}") from None
        if to_move == NORTH:
            board = board[6:] + board[:6]
        return cls(board, to_move, captured)

    # Views ------------------------------------------------------------------------

    @property
    def houses(self) -> tuple[int, ...]:
        """The twelve house counts, A..F then a..f."""
        return self._houses

    @property
    def to_move(self) -> str:
        """'S' or 'N'."""
        return self._to_move

    @property
    def captured(self) -> tuple[int, int]:
        """Seeds captured so far, (South, North)."""
        return self._captured

    @property
    def seeds(self) -> int:
        """Seeds on the board."""
        return sum(self._houses)

    def mover_board(self) -> np.ndarray:
        """The 12 house counts seen from the side to move, as a uint8 array."""
        houses = self._houses if self._to_move == SOUTH else self._houses[6:] + self._houses[:6]
        return np.array(houses, dtype=np.uint8)

    def packed(self) -> tuple[np.uint64, np.uint64]:
        """The (mover, opponent) words of the packed form used by the kernels.

        As np.uint64, the kernels' own type for them: rules.pack() hands back Python
        ints, which numba types as int64, compiling a second copy of every kernel
        they are passed to (legal_mask, known_value, the component explorer, perft)."""
        mover, opponent = rules.pack(self.mover_board())
        return np.uint64(mover), np.uint64(opponent)

    def expansion(self) -> index.Expansion:
        """The position's moves one ply deep (legal mask, terminal value, seeds,
        rank, captures, children, child ranks: solver.index.Expansion), computed once."""
        if self._expansion is None:
            self._expansion = index.expand(self.mover_board())
        return self._expansion

    def mover_captured(self) -> tuple[int, int]:
        """(seeds captured by the side to move, by the other side)."""
        south, north = self._captured
        return (south, north) if self._to_move == SOUTH else (north, south)

    def key(self) -> tuple:
        """What identifies the position for the repetition rule: houses and side to move."""
        return self._houses, self._to_move

    # Rules ------------------------------------------------------------------------

    def legal_moves(self) -> list[str]:
        """The houses the side to move may play, as letters, in sowing order.

        Empty when the game is over.
        """
        if self.is_over():
            return []
        mask = self.expansion().legal
        letters = HOUSE_LETTERS[self._to_move]
        return [letters[h] for h in range(6) if mask & (1 << h)]

    def house_of(self, move: str | int | np.integer) -> int:
        """The mover's house 0..5 for a move letter (or an int 0..5); raises IllegalMoveError."""
        if isinstance(move, (int, np.integer)) and not isinstance(move, bool):
            if 0 <= move < 6:
                return int(move)
            raise IllegalMoveError(f"a move is a house 0..5, got {move}")
        if not isinstance(move, str) or len(move.strip()) != 1:
            raise IllegalMoveError(f"a move is one house letter A-F (South) or a-f (North), got {move!r}")
        letter = move.strip()
        letters = HOUSE_LETTERS[self._to_move]
        if letter in letters:
            return letters.index(letter)
        if letter in HOUSE_LETTERS[other_side(self._to_move)]:
            raise IllegalMoveError(
                f"{letter} is a {SIDE_NAMES[other_side(self._to_move)]} house; {SIDE_NAMES[self._to_move]} is to move"
            )
        raise IllegalMoveError(f"unknown house {letter!r}: houses are A-F (South) and a-f (North)")

    def play_capture(self, move: str | int | np.integer) -> tuple["Position", int]:
        """Play a move; return (new position, seeds captured by the move)."""
        if self.is_over():
            raise GameOverError(f"the game is over in {self}")
        house = self.house_of(move)
        expansion = self.expansion()
        mask, captures, children = expansion.legal, expansion.captured, expansion.children
        if not mask & (1 << house):
            letter = HOUSE_LETTERS[self._to_move][house]
            why = "it is empty" if self.mover_board()[house] == 0 else "it does not feed the opponent"
            raise IllegalMoveError(f"{letter} is not a legal move in {self}: {why}")
        captured = int(captures[house])
        mine, theirs = self.mover_captured()
        next_side = other_side(self._to_move)
        board = tuple(children[house].tolist())
        stores = (theirs, mine + captured)
        if next_side == NORTH:
            stores, board = stores[::-1], board[6:] + board[:6]
        return Position._checked(board, next_side, stores), captured

    @classmethod
    def _checked(cls, houses: tuple[int, ...], to_move: str, captured: tuple[int, int]) -> Position:
        """A position from values already checked (a move's child, from the
        kernel's board): the checks of Position() left out, which cost more
        than the move itself where lines are played out a ply at a time."""
        position = cls.__new__(cls)
        position._houses = houses
        position._to_move = to_move
        position._captured = captured
        position._expansion = None
        return position

    def play(self, move: str | int | np.integer) -> Position:
        """The position after `move` (a letter of the side to move, or a house 0..5)."""
        return self.play_capture(move)[0]

    def terminal_rule(self) -> EndReason | None:
        """Why the game is over before the mover plays (an EndReason), or None.

        One of '25 seeds', '24-24', 'no feeding move' (rule 5), 'no seeds to
        move' (rule 6).
        """
        south, north = self._captured
        if south >= WINNING_SEEDS or north >= WINNING_SEEDS:
            return EndReason.WINNING_SEEDS
        if south == north == TOTAL_SEEDS // 2:
            return EndReason.EVEN_SPLIT
        if sum(self.mover_board()[:6]) == 0:
            return EndReason.NO_SEEDS_TO_MOVE
        if self.expansion().terminal != rules.NOT_TERMINAL:
            return EndReason.NO_FEEDING_MOVE
        return None

    def is_over(self) -> bool:
        """Whether the game has ended in this position (before any repetition)."""
        return self.terminal_rule() is not None

    def result(self) -> tuple[int, int] | None:
        """Final seed totals (South, North) if the game is over, else None.

        At the 25-seed win or 24-24 each side takes the seeds on its own side;
        by rule 5 the mover takes every seed left; by rule 6 the opponent does.
        """
        rule = self.terminal_rule()
        if rule is None:
            return None
        return self._final_scores(rule)

    def _final_scores(self, rule: EndReason) -> tuple[int, int]:
        south, north = self._captured
        south_side, north_side = sum(self._houses[:6]), sum(self._houses[6:])
        if EndReason(rule).splits_by_side:
            return south + south_side, north + north_side
        seeds = south_side + north_side
        mover_takes = rule == EndReason.NO_FEEDING_MOVE
        south_takes = mover_takes == (self._to_move == SOUTH)
        return (south + seeds, north) if south_takes else (south, north + seeds)

    def outcome(self) -> Outcome | None:
        """How the game ended (report.Outcome: the final totals, why, and
        `.winner` "S", "N" or "draw"), or None while the game goes on."""
        rule = self.terminal_rule()
        return None if rule is None else Outcome.ended(self._final_scores(rule), rule)

    # Text -------------------------------------------------------------------------

    def __str__(self) -> str:
        south = "-".join(str(h) for h in self._houses[:6])
        north = "-".join(str(h) for h in self._houses[6:])
        return f"{south}/{north} {self._to_move} {self._captured[0]}:{self._captured[1]}"

    def __repr__(self) -> str:
        return f"Position.from_string({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Position):
            return NotImplemented
        return (self._houses, self._to_move, self._captured) == (other._houses, other._to_move, other._captured)

    def __hash__(self) -> int:
        return hash((self._houses, self._to_move, self._captured))

    def diagram(self) -> str:
        """The board as in RULES.md: North's f..a on top, South's A..F below.

        >>> print(Position.initial().diagram())
        North  captured 0
          f  e  d  c  b  a
          4  4  4  4  4  4
          4  4  4  4  4  4
          A  B  C  D  E  F
        South  captured 0  (to move)
        """
        north_row = self._houses[6:][::-1]
        marks = {SOUTH: "", NORTH: ""}
        marks[self._to_move] = "  (to move)"
        return "\n".join(
            [
                f"North  captured {self._captured[1]}{marks[NORTH]}",
                "".join(f"{c:>3}" for c in "fedcba"),
                "".join(f"{h:>3}" for h in north_row),
                "".join(f"{h:>3}" for h in self._houses[:6]),
                "".join(f"{c:>3}" for c in "ABCDEF"),
                f"South  captured {self._captured[0]}{marks[SOUTH]}",
            ]
        )


def as_position(position: "Position | str") -> "Position":
    """A Position from a Position or its notation; InvalidPositionError otherwise."""
    if isinstance(position, Position):
        return position
    if isinstance(position, str):
        return Position.from_string(position)
    raise InvalidPositionError(f"expected a Position or its notation, got {type(position).__name__}")


_RECORD_TOKEN = re.compile(r"^(?:\d+\.+)?(?P<house>[A-Fa-f])(?P<notes>[!?+\-x*#0-9]*)$")
_MOVE_NUMBER = re.compile(r"^\d+\.+$")
_ANNOTATION = re.compile(r"^(?=.*[^0-9])[!?+\-x*#0-9]+$")


class Game:
    """A game with its history; applies the true repetition rule.

    When a position (twelve houses and side to move) occurs for the second
    time the game ends and each side takes the seeds on its own side.

    >>> game = Game.from_record("1. F b 2. D a")
    >>> game.moves
    ['F', 'b', 'D', 'a']
    """

    start: Position
    positions: list[Position]
    moves: list[str]
    captures: list[int]
    _seen: set[tuple[tuple[int, ...], str]]
    _repeated: bool

    def __init__(self, position: Position | str | None = None) -> None:
        self.start = as_position(position) if position is not None else Position.initial()
        self.positions = [self.start]
        self.moves = []
        self.captures = []
        self._seen = {self.start.key()}
        self._repeated = False

    def __repr__(self) -> str:
        record = " ".join(self.moves)
        return f"Game({str(self.start)!r}, moves={record!r}, position={str(self.position)!r})"

    @classmethod
    def parse(cls, record: "str | Iterable[str] | None" = None, start: "Position | str | None" = None) -> "Game":
        """The one reader of a game: `start` (a Position or its notation; the
        opening when None) with `record` played from it, a record such as
        ``1. F b 2. D a`` (numbers and annotations ignored; None or blank: no
        move) or a sequence of move letters. The command line, UCI, the web
        app, the engine and the analysis all read games here.

        Raises InvalidPositionError for the start, InvalidRecordError for a
        record it cannot read, IllegalRecordMoveError (an InvalidRecordError
        naming the move's number, letter and why) for a move not legal where
        it is played.

        >>> Game.parse("1. F b", "4-4-4-4-4-4/4-4-4-4-4-4 S 0:0").moves
        ['F', 'b']
        >>> Game.parse(["F", "b"]).record()
        '1. F b'
        """
        game = cls(start)
        if record is None:
            moves: list[str] = []
        elif isinstance(record, str):
            moves = parse_record(record)
        else:
            moves = [str(move) for move in record]
        for number, move in enumerate(moves, 1):
            try:
                game.play(move)
            except IllegalMoveError as error:
                raise IllegalRecordMoveError(number, move, str(error)) from None
        return game

    @classmethod
    def from_record(cls, text: str, start: "Position | str | None" = None) -> "Game":
        """Replay a record such as ``1. F b 2. D a`` (numbers and annotations ignored): Game.parse."""
        return cls.parse(text, start)

    @property
    def position(self) -> Position:
        """The current position."""
        return self.positions[-1]

    @property
    def end_reason(self) -> EndReason | None:
        """Why the game ended (EndReason: 'repetition', '25 seeds', '24-24', 'no
        feeding move', 'no seeds to move'), or None while it goes on."""
        if self._repeated:
            return EndReason.REPETITION
        return self.position.terminal_rule()

    def is_over(self) -> bool:
        """Whether the game has ended."""
        return self.end_reason is not None

    def result(self) -> tuple[int, int] | None:
        """Final (South, North) totals once the game is over, else None."""
        reason = self.end_reason
        return None if reason is None else self.position._final_scores(reason)

    def outcome(self) -> Outcome | None:
        """How the game ended (report.Outcome: the final totals, why, and
        `.winner` "S", "N" or "draw"), or None while it goes on."""
        reason = self.end_reason
        return None if reason is None else Outcome.ended(self.position._final_scores(reason), reason)

    def legal_moves(self) -> list[str]:
        """Legal moves now (none once the game is over)."""
        return [] if self.is_over() else self.position.legal_moves()

    def play(self, move: str | int | np.integer) -> int:
        """Play a move; return the seeds it captured."""
        if self.is_over():
            raise GameOverError(f"the game is over ({self.end_reason})")
        position, captured = self.position.play_capture(move)
        self.positions.append(position)
        self.moves.append(HOUSE_LETTERS[self.positions[-2].to_move][self.positions[-2].house_of(move)])
        self.captures.append(captured)
        if position.key() in self._seen:
            self._repeated = True
        self._seen.add(position.key())
        return captured

    def undo(self) -> str:
        """Take back the last move; return it."""
        if not self.moves:
            raise IllegalMoveError("no move to take back")
        self.positions.pop()
        self.captures.pop()
        self._repeated = False
        self._seen = {p.key() for p in self.positions}
        return self.moves.pop()

    def record(self) -> str:
        """The moves as a record: ``1. F b 2. D a``."""
        parts = []
        side = self.start.to_move
        number = 1
        for i, move in enumerate(self.moves):
            if side == SOUTH or i == 0:
                parts.append(f"{number}." if side == SOUTH else f"{number}...")
            parts.append(move)
            if side == NORTH:
                number += 1
            side = other_side(side)
        return " ".join(parts)


def parse_record(text: str) -> list[str]:
    """The move letters of a record; numbers and annotations are dropped."""
    if not isinstance(text, str):
        raise InvalidRecordError("a record must be text")
    moves = []
    for token in text.replace(",", " ").split():
        if _MOVE_NUMBER.match(token) or _ANNOTATION.match(token):
            continue
        match = _RECORD_TOKEN.match(token)
        if not match:
            raise InvalidRecordError(f"cannot read {token!r} in the record: moves are house letters A-F / a-f")
        moves.append(match["house"])
    if not moves and text.strip():
        raise InvalidRecordError(f"the record {text.strip()!r} holds no moves: write them as '1. F b 2. D a'")
    return moves




def perft(position: "Position | str", depth: int) -> int:
    """Leaves of the game tree `depth` plies below `position` (bulk-counted at the last ply).

    A position where the game is over has no children (repetitions are ignored).

    >>> perft(Position.initial(), 4)
    1014
    """
    position = as_position(position)
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or not 0 <= depth <= MAX_PERFT_DEPTH:
        raise InvalidArgumentError(f"depth must be an integer 0..{MAX_PERFT_DEPTH}, got {depth!r}")
    mover, opponent = position.packed()
    mine, theirs = position.mover_captured()
    return int(rules.perft_packed(mover, opponent, mine, theirs, int(depth)))
