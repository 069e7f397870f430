"""Games of a match lost by a repetition inside the tables: could the loser have saved them?

    python scripts/repetition_losses.py JOURNAL --tables DIR [--engine A|B] [--max-seeds 20]
                                        [--limit 2000000] [--worse-moves] [--json]

JOURNAL is a match journal (scripts/match.py --journal). For every decided game
that ended by a repetition (the game's rule: each side takes the seeds on its
side) and whose loser is --engine (both engines without it), the loser's
decisions are taken in order from the first with at most --max-seeds seeds on
the board (inside the tables the engines read) to the end, and each is bounded
under the true rule with the game's history (solver.repetition.true_rule_bounds,
the tables below the position's seeds ending the graph). A move does not lose
when its value d (the mover's seeds captured from there on minus the
opponent's) is at least the opponent's lead in captured seeds. The first
decision that settles the game gives its verdict:

- "missed": a move was proven not to lose (its lower bound reaches the
  lead) and the move played was proven to lose (its upper bound stays below):
  the game the issue says must never happen;
- "lost before": every move was proven to lose at the loser's first decision
  inside the tables: the game was lost when it entered them;
- "lost later": every move was proven to lose at a later decision, the earlier
  ones unsettled;
- "unsettled": no decision was settled (graphs over --limit positions, or
  bounds that do not decide).

--worse-moves looks at every game instead, won, drawn or lost: each decision
of --engine with at most --max-seeds seeds on the board where the move
played is valued below another by the tables (captured seeds less the
child's table value: endless play split evenly) is bounded the same way. A
search under the true rule plays such a move only for the true rule's sake;
"proven worse" when its upper bound is below another move's lower bound.
Each comes with the journal's line for the move when it has one (ply,
engine, milliseconds, depth, score, what the engine said last).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from solver.position import Game
from solver.probe import Tablebase
from solver.repetition import DEFAULT_LIMIT, true_rule_bounds

JOURNAL_KIND = "awele match journal"


def read_journal(path: str) -> tuple[dict, list[dict]]:
    """The journal's settings line and its game records."""
    with open(path, encoding="utf-8") as handle:
        lines = [json.loads(line) for line in handle if line.strip()]
    if not lines or lines[0].get("kind") != JOURNAL_KIND:
        raise SystemExit(f"{path} is not a match journal")
    return lines[0], lines[1:]


def loser_engine(record: dict) -> str | None:
    """'A' or 'B', the engine that lost the game, or None for a draw."""
    if record["winner"] == "draw":
        return None
    south = record["south"]
    north = "B" if south == "A" else "A"
    return north if record["winner"] == "S" else south


def judge(game: Game, loser_side: str, max_seeds: int, tablebase: Tablebase, limit: int) -> dict:
    """The verdict on one game (see the module's text), with the decisions bounded."""
    arrays = tablebase.store.arrays()
    decisions = []
    first = True
    for ply in range(len(game.moves)):
        position = game.positions[ply]
        if position.to_move != loser_side or position.seeds > max_seeds:
            continue
        mine, theirs = position.mover_captured()
        need = theirs - mine  # d at least this: the mover does not lose
        bounds = true_rule_bounds(position, game.positions[:ply], arrays, limit)
        played = game.moves[ply]
        row = {"ply": ply, "position": str(position), "need": need, "played": played,
               "graph_positions": bounds.positions}
        decisions.append(row)
        if bounds.status != "solved":
            row["bounds"] = None
            first = False
            continue
        assert bounds.lower is not None and bounds.upper is not None
        row["bounds"] = [bounds.lower, bounds.upper]
        row["moves"] = {move: list(b) for move, b in bounds.moves.items()}
        saving = sorted(move for move, (low, _) in bounds.moves.items() if low >= need)
        if bounds.upper < need:
            return {"verdict": "lost before" if first else "lost later", "decisions": decisions}
        if saving and bounds.moves[played][1] < need:
            row["saving"] = saving
            return {"verdict": "missed", "decisions": decisions}
        first = False
    return {"verdict": "unsettled", "decisions": decisions}


def table_scores(position, tablebase: Tablebase) -> dict[str, int] | None:
    """Each move's captured seeds less its child's table value (None when a
    child is over: the move ends the game, which the tables do not value)."""
    scores = {}
    for move in position.legal_moves():
        child, captured = position.play_capture(move)
        if child.is_over():
            return None
        scores[move] = captured - tablebase.value(child)
    return scores


def worse_moves(game: Game, side: str, max_seeds: int, tablebase: Tablebase, limit: int) -> tuple[dict, list[dict]]:
    """--worse-moves on one game: the counts, and a row for every decision
    of `side` whose move the tables value below another."""
    arrays = tablebase.store.arrays()
    counts = {"decisions": 0, "below_the_tables_best": 0, "solved": 0, "proven_worse": 0}
    rows = []
    for ply in range(len(game.moves)):
        position = game.positions[ply]
        if position.to_move != side or position.seeds > max_seeds:
            continue
        counts["decisions"] += 1
        scores = table_scores(position, tablebase)
        played = game.moves[ply]
        if scores is None or scores[played] >= max(scores.values()):
            continue
        counts["below_the_tables_best"] += 1
        bounds = true_rule_bounds(position, game.positions[:ply], arrays, limit)
        row = {"ply": ply, "position": str(position), "played": played, "tables": scores,
               "graph_positions": bounds.positions, "moves": None, "proven_worse": False}
        rows.append(row)
        if bounds.status != "solved":
            continue
        assert bounds.lower is not None
        counts["solved"] += 1
        row["moves"] = {move: list(b) for move, b in bounds.moves.items()}
        row["proven_worse"] = bounds.moves[played][1] < bounds.lower
        counts["proven_worse"] += row["proven_worse"]
    return counts, rows


def main_worse_moves(args, records: list[dict], tablebase: Tablebase) -> dict:
    """--worse-moves over the journal: the summary's counts and the rows."""
    totals = {"decisions": 0, "below_the_tables_best": 0, "solved": 0, "proven_worse": 0}
    rows = []
    for record in records:
        game = Game.from_record(record["record"])
        side = "S" if record["south"] == args.engine else "N"
        said = {entry[0]: entry for entry in record.get("moves", [])}
        counts, found = worse_moves(game, side, args.max_seeds, tablebase, args.limit)
        for key, value in counts.items():
            totals[key] += value
        for row in found:
            row = {"number": record["number"], **row, "journal": said.get(row["ply"])}
            rows.append(row)
            if row["proven_worse"] and not args.json:
                print(f"game {row['number']}, ply {row['ply']}, {row['position']}: played {row['played']}, "
                      f"bounds {row['moves']}, tables {row['tables']}; the engine: {row['journal']}", flush=True)
    return {"totals": totals, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("journal")
    parser.add_argument("--tables", required=True, help="the tables folder (layers 0..--max-seeds - 1 at least)")
    parser.add_argument("--engine", choices=("A", "B"), help="only the games this engine lost")
    parser.add_argument("--max-seeds", type=int, default=20, help="the tables' reach in the match (MaxTableSeeds)")
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help="positions a graph of the bounds may hold")
    parser.add_argument("--worse-moves", action="store_true",
                        help="every decision of --engine the tables value below their best, in every game")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not (1 <= args.max_seeds <= 48 and args.limit > 0):
        parser.error("--max-seeds 1..48, --limit > 0")
    if args.worse_moves and args.engine is None:
        parser.error("--worse-moves needs --engine")
    settings, records = read_journal(args.journal)
    started = time.perf_counter()
    rows = []
    with Tablebase(args.tables) as tablebase:
        missing = [n for n in range(args.max_seeds) if not tablebase.has_layer(n)]
        if missing:
            parser.error(f"the tables folder lacks layers {missing}")
        for seeds in range(args.max_seeds):  # the graphs end where these settle a line (solver.repetition)
            tablebase.load(seeds)
        if args.worse_moves:
            found = main_worse_moves(args, records, tablebase)
            summary = {"journal": args.journal, "engine": args.engine, "movetime": settings["movetime"],
                       "max_seeds": args.max_seeds, "limit": args.limit, **found["totals"],
                       "seconds": round(time.perf_counter() - started, 1)}
            if args.json:
                print(json.dumps({"summary": summary, "decisions": found["rows"]}))
            else:
                for key, value in summary.items():
                    print(f"{key}: {value}")
            return 0
        for record in records:
            loser = loser_engine(record)
            if record["termination"] != "repetition" or loser is None or (args.engine and loser != args.engine):
                continue
            game = Game.from_record(record["record"])
            loser_side = "S" if record["south"] == loser else "N"
            verdict = judge(game, loser_side, args.max_seeds, tablebase, args.limit)
            rows.append({"number": record["number"], "loser": loser, "result": record["result"], **verdict})
            if not args.json:
                last = verdict["decisions"][-1] if verdict["decisions"] else None
                print(f"game {record['number']}: {loser} lost {record['result']}: {verdict['verdict']}"
                      + (f" (ply {last['ply']}, {last['position']}, bounds {last['bounds']}, need {last['need']},"
                         f" played {last['played']}, saving {last.get('saving')})" if last else ""), flush=True)
    summary = {"journal": args.journal, "engines": settings["engines"], "movetime": settings["movetime"],
               "max_seeds": args.max_seeds, "limit": args.limit,
               "games_lost_by_repetition": len(rows),
               "seconds": round(time.perf_counter() - started, 1)}
    for kind in ("missed", "lost before", "lost later", "unsettled"):
        summary[kind] = sum(row["verdict"] == kind for row in rows)
    if args.json:
        print(json.dumps({"summary": summary, "games": rows}))
    else:
        for key, value in summary.items():
            print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
