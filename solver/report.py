"""The records every answer is made of: a move with its value, an outcome,
why a game ended, and which repetition rule a value holds under.

The tables, the search, game analysis, the command line and the web oracle
all return or render these; score arithmetic (what a value predicts, who
wins, what an ended game was worth) is written here once.

>>> from solver import Position
>>> start = Position.from_string("0-0-0-0-1-2/1-0-0-0-0-0 N 20:23")
>>> Outcome.predicted(start, 4)
Outcome(south=20.0, north=27.0, reason=None)
>>> Outcome.predicted(start, 4).text()
'South 20 - North 27 (North wins)'
>>> MoveValue.of(start, "a", captured=0, value=4).for_mover
'win'

This module imports nothing of the package, so the lowest layers (the
position's end reasons) can use it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

SOUTH, NORTH, DRAW = "S", "N", "draw"


class EndReason(str, Enum):
    """Why a game ended. Equal to its text ("25 seeds" == EndReason.WINNING_SEEDS),
    which is what JSON carries."""

    WINNING_SEEDS = "25 seeds"  # a side has more than half the seeds: each takes its own side's
    EVEN_SPLIT = "24-24"  # each side has half: each takes its own side's
    NO_FEEDING_MOVE = "no feeding move"  # rule 5: the mover takes every seed left
    NO_SEEDS_TO_MOVE = "no seeds to move"  # rule 6: the opponent takes every seed left
    REPETITION = "repetition"  # the true rule: a position met again, each side takes its own side's
    PLY_LIMIT = "ply limit"  # a line cut short (not an end of the game)

    def __str__(self) -> str:
        return self.value

    @property
    def splits_by_side(self) -> bool:
        """Whether each side takes the seeds on its own side (else one side takes them all)."""
        return self in (EndReason.WINNING_SEEDS, EndReason.EVEN_SPLIT, EndReason.REPETITION)


class Rule(str, Enum):
    """The repetition rule a value holds under (SearchResult.rule, MoveValue.rule),
    and the one a search or an answer is asked for. Its text is "true" or
    "split"; the public `cycles` argument (a UCI option and a JSON field too)
    names the true rule "own" (the game's own rule): Rule.parse reads both,
    `cycles` gives that word back, describe() says the rule in words for the
    command line, UCI and the page.

    >>> Rule.parse("own") is Rule.TRUE and Rule.TRUE.cycles == "own"
    True
    >>> Rule.SPLIT.describe()
    "the tables' convention (endless play splits the seeds left evenly)"
    """

    TRUE = "true"  # a position met again ends the game, each side taking the seeds on its side
    SPLIT = "split"  # the tables' convention: endless play splits the seeds left evenly (worth 0)

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, value: Rule | str) -> Rule:
        """The rule a `cycles` word ("own": the true rule over the game, or
        "split") or a rule's text ("true", "split") names; ValueError otherwise."""
        if isinstance(value, Rule):
            return value
        if value == "own":
            return cls.TRUE
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"a repetition rule is 'own' (or 'true') or 'split', got {value!r}") from None

    @property
    def cycles(self) -> str:
        """The rule as the `cycles` argument, the UCI option and the JSON's
        "cycles" field name it: "own" (the true rule) or "split"."""
        return "own" if self is Rule.TRUE else "split"

    def describe(self, long: bool = False) -> str:
        """The rule in words, as every face says it: "the true repetition
        rule" or "the tables' convention (endless play splits the seeds left
        evenly)"; `long` adds what the true rule does."""
        if self is Rule.TRUE:
            return "the true repetition rule" + (" (a position met again ends the game, each side taking the seeds "
                                                 "on its side)" if long else "")
        return "the tables' convention (endless play splits the seeds left evenly)"

    def as_dict(self) -> dict[str, Any]:
        """The rule as JSON data for a client that words it (the page): its
        text, its `cycles` word, describe() short and long, and whether it is
        the game's own rule (`default`: every answer's rule unless asked for
        another)."""
        return {"rule": self.value, "cycles": self.cycles, "text": self.describe(),
                "long": self.describe(long=True), "default": self is Rule.TRUE}


def true_rule_may_change(value: int | None, seeds: int) -> bool:
    """Whether a table value (the tables' convention, d for the mover) of a
    position of `seeds` seeds may differ from the value under the true rule,
    so that it is searched under that rule where the rule is in force.

    The tables score endless play 0, the true rule ends it at the first
    repetition with each side taking the seeds on its own side. Only a side
    that takes every seed left (|d| = seeds) does so by play that never
    repeats a position, whatever the other does; any other value may rest
    on seeds that circle for ever, which the true rule gives to a side (a
    win of +2 with three seeds circling may be +5, a 0 may be a loss)."""
    return value is not None and abs(value) != seeds


class _Scored(Protocol):
    """What the score helpers read of a position (solver.position.Position)."""

    @property
    def to_move(self) -> str: ...

    @property
    def seeds(self) -> int: ...

    @property
    def captured(self) -> tuple[int, int]: ...


def seeds_number(count: float) -> int | float:
    """A seed total as JSON shows it: an int when whole (a half only comes from endless play split)."""
    return int(count) if float(count).is_integer() else float(count)


def mover_totals(position: _Scored) -> tuple[int, int]:
    """(seeds captured by the side to move, by the other side)."""
    south, north = position.captured
    return (south, north) if position.to_move == SOUTH else (north, south)


@dataclass(frozen=True)
class Outcome:
    """Final seed totals of a game: ended (`reason` says why) or predicted by a
    value (`reason` None: the seeds on the board split as the value says)."""

    south: float
    north: float
    reason: EndReason | None = None

    @classmethod
    def predicted(cls, position: _Scored, value: float) -> Outcome:
        """The totals a value d of `position` predicts: captured so far plus
        (n + d) / 2 of the n seeds on the board for the mover, the rest for the other."""
        mine, theirs = mover_totals(position)
        mover_share = (position.seeds + value) / 2
        mover_final, other_final = mine + mover_share, theirs + position.seeds - mover_share
        if position.to_move == SOUTH:
            return cls(float(mover_final), float(other_final))
        return cls(float(other_final), float(mover_final))

    @classmethod
    def ended(cls, totals: tuple[float, float], reason: EndReason | str) -> Outcome:
        """An ended game's (South, North) totals."""
        return cls(float(totals[0]), float(totals[1]), EndReason(reason))

    @property
    def totals(self) -> tuple[float, float]:
        return self.south, self.north

    @property
    def winner(self) -> str:
        """"S", "N" or "draw"."""
        return SOUTH if self.south > self.north else NORTH if self.north > self.south else DRAW

    def for_side(self, side: str) -> str:
        """"win", "draw" or "loss" for `side` ("S" or "N")."""
        if self.winner == DRAW:
            return "draw"
        return "win" if self.winner == side else "loss"

    def value_for(self, position: _Scored) -> float:
        """The value (for the side to move of `position`) these totals mean:
        the mover's seeds from then on minus the other side's."""
        mine, theirs = mover_totals(position)
        mover_final, other_final = (self.south, self.north) if position.to_move == SOUTH else (self.north, self.south)
        return (mover_final - mine) - (other_final - theirs)

    def scores(self) -> list[int | float]:
        """[South, North] as JSON numbers."""
        return [seeds_number(self.south), seeds_number(self.north)]

    def text(self, half_seeds_note: bool = True) -> str:
        """'South 25 - North 23 (South wins)', with a note on half seeds
        (left out with `half_seeds_note` False, where the text names the rule itself)."""
        who = {SOUTH: "South wins", NORTH: "North wins", DRAW: "draw"}[self.winner]
        text = f"South {self.south:g} - North {self.north:g} ({who})"
        if half_seeds_note and not float(self.south).is_integer():
            text += "; the half seeds: endless play splits the seeds left evenly (the tables' convention)"
        return text


@dataclass(frozen=True)
class MoveValue:
    """One legal move: its letter, the seeds it captures, and its value for the
    mover (the seeds it captures minus the value of the position it leads to),
    whether that value is exact (else an estimate of a search), the rule it
    holds under, and the outcome it predicts. `value` is None when a search
    had no time for it. `repeats`: playing it repeats a position of the game,
    which ends the game by the true rule (its value then says what that gives).
    `distance`: the move's cost in plies to the next capture or end of the
    game (solver.distance): 1 for a capture, else 1 + the distance of the
    position it leads to, where the mover converts as fast as he can if his
    value is positive and holds out as long as he can if it is negative;
    None where its value is 0 or the tables hold no distances."""

    move: str
    captured: int
    value: int | None
    exact: bool = True
    rule: Rule = Rule.SPLIT
    outcome: Outcome | None = None
    repeats: bool = False
    distance: int | None = None

    @classmethod
    def of(cls, position: _Scored, move: str, captured: int, value: int | None, exact: bool = True,
           rule: Rule | str = Rule.SPLIT, repeats: bool = False, outcome: Outcome | None = None,
           distance: int | None = None) -> MoveValue:
        """The record of a move of `position`; its outcome, unless given (a move
        that ends the game: how it ends), predicted from its value."""
        if outcome is None and value is not None:
            outcome = Outcome.predicted(position, value)
        return cls(move, int(captured), None if value is None else int(value), bool(exact), Rule(rule), outcome,
                   repeats, None if distance is None or value == 0 else int(distance))

    @property
    def for_mover(self) -> str | None:
        """"win", "draw" or "loss" for the side that plays it, or None without a value."""
        if self.outcome is None:
            return None
        mover = SOUTH if self.move.isupper() else NORTH
        return self.outcome.for_side(mover)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-able data: move, captured, value, exact, rule,
        predicted_result ([South, North]), outcome ("win"/"draw"/"loss" for the
        mover), repeats, distance (plies to the next capture or end, or None)."""
        return {
            "move": self.move,
            "captured": self.captured,
            "value": self.value,
            "exact": self.exact,
            "rule": self.rule.value,
            "predicted_result": None if self.outcome is None else self.outcome.scores(),
            "outcome": self.for_mover,
            "repeats": self.repeats,
            "distance": self.distance,
        }


def best_value(moves: list[MoveValue]) -> int | None:
    """The largest value among `moves` (None when none has one)."""
    return max((m.value for m in moves if m.value is not None), default=None)


def best_of(moves: list[MoveValue]) -> list[MoveValue]:
    """The moves whose value is the best one."""
    best = best_value(moves)
    return [m for m in moves if best is not None and m.value == best]


def move_rows(moves: list[MoveValue]) -> list[dict[str, Any]]:
    """The moves as JSON rows (MoveValue.as_dict) with "best" marked."""
    best = best_value(moves)
    return [{**m.as_dict(), "best": best is not None and m.value == best} for m in moves]


@dataclass(frozen=True)
class MoveAnswer:
    """The move awele plays, as every face reports it (solver.engine.Engine.move).

    move: its letter (None when the game is over); value: for the side to
    move, exact when `exact` (else the estimate of a search's deepest
    finished depth), under `rule`; source: "table", "search", "component"
    (a component or the true rule's graph solved it), "search by captures"
    (the searcher not ready: solver/early.py's search in plain Python) or
    "two-ply choice" (what is left when an answer fails); line: the principal line from the move;
    depth: plies of the deepest finished iteration (0 from the tables);
    nodes, seconds; note: what the answer had to do without (a damaged
    layer), or None."""

    move: str | None
    value: int | None = None
    exact: bool = False
    rule: Rule = Rule.TRUE
    source: str = "search"
    line: tuple[str, ...] = ()
    depth: int = 0
    nodes: int = 0
    seconds: float = 0.0
    note: str | None = None

    @classmethod
    def of_search(cls, result: Any) -> MoveAnswer:
        """The answer of a search.SearchResult."""
        return cls(result.move, result.value, bool(result.exact), Rule(result.rule), result.source,
                   tuple(result.line), result.depth, result.nodes, result.seconds)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-able data: the fields, rule as its text."""
        return {"move": self.move, "value": self.value, "exact": self.exact, "rule": self.rule.value,
                "source": self.source, "line": list(self.line), "depth": self.depth, "nodes": self.nodes,
                "seconds": round(self.seconds, 6), "note": self.note}


@dataclass(frozen=True)
class PositionAnswer:
    """A position answered (solver.engine.Engine.position): its value for the
    side to move (the best move's; None when no move has one), exact when
    every move's value is, under the true rule (`rule` TRUE) only when
    every move's value is; source: "table" or "search"/"component"; every
    legal move's MoveValue in sowing order (`repeats` from the game); move:
    one of the best; line from it; proven bounds `lower`/`upper` (equal to
    the value when exact, else None unless asked for); depth and nodes of
    the search (0 from the tables); seconds; distance: plies to the next
    capture or end from the tables' distances (None where they hold none);
    outcome: the final totals the value predicts."""

    position: str
    to_move: str
    seeds: int
    value: int | None
    exact: bool
    rule: Rule
    source: str
    moves: list[MoveValue]
    move: str
    line: tuple[str, ...] = ()
    lower: int | None = None
    upper: int | None = None
    depth: int = 0
    nodes: int = 0
    seconds: float = 0.0
    distance: int | None = None
    outcome: Outcome | None = None

    @property
    def best_moves(self) -> list[str]:
        """The letters of the moves whose value is the best one."""
        return [m.move for m in best_of(self.moves)]

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-able data: the fields, `moves` as rows with "best"
        marked (move_rows), best_moves, predicted_result ([South, North]) and
        outcome (the winner, "S", "N" or "draw"), `cycles` ("own" when every
        value holds under the true rule, else "split")."""
        return {
            "position": self.position,
            "to_move": self.to_move,
            "seeds": self.seeds,
            "value": self.value,
            "exact": self.exact,
            "rule": self.rule.value,
            "cycles": self.rule.cycles,
            "source": self.source,
            "move": self.move,
            "line": list(self.line),
            "lower": self.lower,
            "upper": self.upper,
            "depth": self.depth,
            "nodes": self.nodes,
            "seconds": round(self.seconds, 6),
            "distance": self.distance,
            "predicted_result": None if self.outcome is None else self.outcome.scores(),
            "outcome": None if self.outcome is None else self.outcome.winner,
            "moves": move_rows(self.moves),
            "best_moves": self.best_moves,
        }


def ended_value(totals: tuple[float, float], before: _Scored) -> int:
    """The mover's value of a move that ended the game with (South, North)
    `totals`, counted from the position `before` the move: what the end gives
    him minus what it gives the other side."""
    return int(Outcome(float(totals[0]), float(totals[1])).value_for(before))


__all__ = ["EndReason", "MoveAnswer", "MoveValue", "Outcome", "PositionAnswer", "Rule", "best_of", "best_value",
           "ended_value", "move_rows", "mover_totals", "seeds_number"]
