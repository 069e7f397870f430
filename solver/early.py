"""The rules in plain Python, for the engine's first moments.

The rules live in solver/rules.py as numba kernels. A process loads them in
most of a second (numba's import, then each cached kernel), while a GUI may
send ``uci``, ``position`` and ``go movetime 500`` within a tenth of one and
expects its move on time. ``awele uci`` reads the positions and answers the
goes that come before the kernels are loaded with this module: the same rules
(tests/test_early.py plays them move by move against the kernels), on a
board written A..F a..f, and a search by captures alone. Nothing else uses it.

>>> game = EarlyGame.opening()
>>> game.play("F"); game.play("b")
0
0
>>> game.houses
(5, 4, 4, 4, 4, 0, 5, 0, 6, 6, 5, 5)
>>> search(game, deadline=float("inf"), depth=3).move in game.legal_moves()
True
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

TOTAL_SEEDS = 48
WINNING_SEEDS = 25
LETTERS = {"S": "ABCDEF", "N": "abcdef"}
_MAX_DIGITS = 3  # a house or a store holds at most 48 seeds
_AALINA = re.compile(r"^(\d+)(?:-(\d+)){13}-([SN])$")
_AWELE = re.compile(r"^(\d+(?:-\d+){5})/(\d+(?:-\d+){5})(?:\s+([SN]))?(?:\s+(\d+):(\d+))?$")


class EarlyError(ValueError):
    """A position or a move the early rules refuse (the kernels would refuse it too)."""


@dataclass
class EarlyGame:
    """A game from a position: the twelve houses A..F a..f, the seeds each side
    captured (South, North), the side to move, and the positions met (the true
    repetition rule ends the game at the second meeting)."""

    houses: tuple[int, ...]
    captured: tuple[int, int]
    to_move: str
    seen: set[tuple[tuple[int, ...], str]]
    repeated: bool = False

    @classmethod
    def opening(cls) -> EarlyGame:
        """The opening: four seeds a house, South to move."""
        return cls.start((4,) * 12, (0, 0), "S")

    @classmethod
    def start(cls, houses: tuple[int, ...], captured: tuple[int, int], to_move: str) -> EarlyGame:
        """A game from a position, checked as Position checks it."""
        if len(houses) != 12 or any(h < 0 for h in houses) or len(captured) != 2 or min(captured) < 0:
            raise EarlyError("a position has 12 houses and 2 stores, none negative")
        total = sum(houses) + sum(captured)
        if total > TOTAL_SEEDS:
            raise EarlyError(f"{total} seeds in houses and stores; the game has only {TOTAL_SEEDS}")
        return cls(tuple(houses), (captured[0], captured[1]), to_move, {(tuple(houses), to_move)})

    @classmethod
    def of(cls, game: Any) -> EarlyGame:
        """The early rules' copy of a Game (solver.position) that is not over."""
        position = game.position
        return cls(tuple(position.houses), tuple(position.captured), position.to_move,
                   {(tuple(p.houses), p.to_move) for p in game.positions})

    def _own(self) -> range:
        return range(0, 6) if self.to_move == "S" else range(6, 12)

    def end(self) -> str | None:
        """Why the game is over before the mover plays, or None (Game.end_reason)."""
        if self.repeated:
            return "repetition"
        south, north = self.captured
        if south >= WINNING_SEEDS or north >= WINNING_SEEDS:
            return "25 seeds"
        if south == north == TOTAL_SEEDS // 2:
            return "24-24"
        if sum(self.houses[i] for i in self._own()) == 0:
            return "no seeds to move"
        if not self.legal_moves():
            return "no feeding move"
        return None

    def result(self) -> tuple[int, int] | None:
        """The final totals (South, North) once the game is over, else None."""
        reason = self.end()
        if reason is None:
            return None
        south, north = self.captured
        if reason in ("repetition", "25 seeds", "24-24"):
            return south + sum(self.houses[:6]), north + sum(self.houses[6:])
        seeds = sum(self.houses)
        south_takes = (reason == "no feeding move") == (self.to_move == "S")
        return (south + seeds, north) if south_takes else (south, north + seeds)

    def legal_moves(self) -> list[str]:
        """The mover's legal moves, as letters (rule 5: only those that feed an
        empty opponent)."""
        own = self._own()
        moves = [i for i in own if self.houses[i]]
        if sum(self.houses) - sum(self.houses[i] for i in own) == 0:
            moves = [i for i in moves if self.houses[i] > own.stop - 1 - i]
        return [LETTERS[self.to_move][i - own.start] for i in moves]

    def sow(self, letter: str) -> tuple[tuple[int, ...], int]:
        """The houses after `letter` is played, and the seeds it captures (rules 1-4)."""
        own = self._own()
        origin = own.start + LETTERS[self.to_move].index(letter)
        board = list(self.houses)
        seeds, board[origin] = board[origin], 0
        house = origin
        while seeds:
            house = (house + 1) % 12
            if house != origin:
                board[house] += 1
                seeds -= 1
        taken: list[int] = []
        while house not in own and board[house] in (2, 3):
            taken.append(house)
            house = (house - 1) % 12
        theirs = sum(board[i] for i in range(12) if i not in own)
        captured = sum(board[i] for i in taken)
        if captured == theirs:  # rule 4, the grand slam: legal, captures nothing
            return tuple(board), 0
        for i in taken:
            board[i] = 0
        return tuple(board), captured

    def play(self, letter: str) -> int:
        """Play a legal move; the seeds it captured."""
        if self.end() is not None:
            raise EarlyError(f"the game is over ({self.end()})")
        if letter not in self.legal_moves():
            raise EarlyError(f"{letter} is not a legal move here (legal: {' '.join(self.legal_moves())})")
        self.houses, captured = self.sow(letter)
        south, north = self.captured
        self.captured = (south + captured, north) if self.to_move == "S" else (south, north + captured)
        self.to_move = "N" if self.to_move == "S" else "S"
        key = (self.houses, self.to_move)
        self.repeated = key in self.seen
        self.seen.add(key)
        return captured


def parse(words: list[str]) -> EarlyGame | None:
    """The game of a UCI ``position`` command's words, as uci.parse_position
    reads them; None for a notation this module leaves to the kernels' parser.
    Raises EarlyError for a position or a move the kernels refuse too."""
    if "moves" in words:
        cut = words.index("moves")
        setup, moves = words[:cut], "".join(words[cut + 1:])
    else:
        setup, moves = words, ""
    if setup == ["startpos"]:
        game = EarlyGame.opening()
    elif setup[:1] == ["fen"] and len(setup) > 1:
        start = _position(" ".join(setup[1:]).strip())
        if start is None:
            return None
        game = EarlyGame.start(*start)
    else:
        return None
    for number, letter in enumerate(moves, 1):
        if letter not in "ABCDEFabcdef":
            return None  # the kernels' parser says why
        try:
            game.play(letter)
        except EarlyError as error:
            raise EarlyError(f"move {number} ({letter}) is illegal: {error}") from None
    return game


def _position(text: str) -> tuple[tuple[int, ...], tuple[int, int], str] | None:
    """Houses, stores and side of Aalina's notation or awele's canonical one;
    None for anything else."""
    if _AALINA.match(text):
        *counts, side = text.split("-")
    else:
        match = _AWELE.match(text)
        if match is None:
            return None
        counts = match[1].split("-") + match[2].split("-") + [match[4] or "0", match[5] or "0"]
        side = match[3] or "S"
    if any(len(count.lstrip("0")) > _MAX_DIGITS for count in counts):
        return None
    numbers = [int(count) for count in counts]
    return tuple(numbers[:12]), (numbers[12], numbers[13]), side


@dataclass
class EarlyAnswer:
    """The early search's move, its value in seeds for the mover (captures from
    now on, mover's less the opponent's, over the plies searched), its depth and
    its nodes."""

    move: str
    value: int
    depth: int
    nodes: int


class _OutOfTime(Exception):
    pass


_INFINITY = 10 * TOTAL_SEEDS


def search(game: EarlyGame, deadline: float, depth: int = 64) -> EarlyAnswer:
    """Iterative deepening over captures alone until `deadline`
    (time.perf_counter()) or `depth` plies; the deepest finished depth's move.
    One ply is always searched (microseconds), whatever the deadline."""
    moves = game.legal_moves()
    if not moves:
        raise EarlyError(f"no move to search: the game is over ({game.end()})")
    best = EarlyAnswer(moves[0], 0, 0, 0)
    counter = [0]
    for plies in range(1, depth + 1):
        if plies > 1 and time.perf_counter() > deadline:
            break
        try:
            value, move = _root(game, plies, deadline, counter, best.move)
        except _OutOfTime:
            break
        best = EarlyAnswer(move, value, plies, counter[0])
        if abs(value) > TOTAL_SEEDS:  # the end of the game within the horizon
            break
    best.nodes = counter[0]
    return best


def _root(game: EarlyGame, plies: int, deadline: float, counter: list[int], first: str) -> tuple[int, str]:
    moves = game.legal_moves()
    moves.sort(key=lambda move: move != first)
    alpha, chosen = -_INFINITY, moves[0]
    for move in moves:
        child, gained = _after(game, move)
        value = gained - _negamax(child, plies - 1, -_INFINITY, gained - alpha, deadline, counter)
        if value > alpha:
            alpha, chosen = value, move
    return alpha, chosen


def _after(game: EarlyGame, move: str) -> tuple[EarlyGame, int]:
    child = EarlyGame(game.houses, game.captured, game.to_move, set(game.seen), game.repeated)
    return child, child.play(move)


def _negamax(game: EarlyGame, plies: int, alpha: int, beta: int, deadline: float, counter: list[int]) -> int:
    """The mover's captures less the opponent's from `game` on, `plies` deep
    (alpha-beta within alpha..beta); a finished game counts its final totals,
    and 2 x 48 more for a win, 2 x 48 less for a loss."""
    counter[0] += 1
    if counter[0] % 256 == 0 and time.perf_counter() > deadline:
        raise _OutOfTime
    totals = game.result()
    if totals is not None:
        mine, theirs = totals if game.to_move == "S" else totals[::-1]
        now_mine, now_theirs = game.captured if game.to_move == "S" else game.captured[::-1]
        gained = (mine - now_mine) - (theirs - now_theirs)
        return gained + (2 * TOTAL_SEEDS if mine > theirs else -2 * TOTAL_SEEDS if mine < theirs else 0)
    if plies == 0:
        return 0
    best = -_INFINITY
    for move in game.legal_moves():
        child, gained = _after(game, move)
        value = gained - _negamax(child, plies - 1, gained - beta, gained - alpha, deadline, counter)
        if value > best:
            best = value
            alpha = max(alpha, value)
            if alpha >= beta:
                break
    return best


__all__ = ["EarlyAnswer", "EarlyError", "EarlyGame", "parse", "search"]
