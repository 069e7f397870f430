"""Games of a match lost by a repetition inside the tables: could the loser have saved them?

    python scripts/repetition_losses.py JOURNAL --tables DIR [--engine A|B] [--max-seeds 20]
                                        [--limit 2000000] [--json]

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("journal")
    parser.add_argument("--tables", required=True, help="the tables folder (layers 0..--max-seeds - 1 at least)")
    parser.add_argument("--engine", choices=("A", "B"), help="only the games this engine lost")
    parser.add_argument("--max-seeds", type=int, default=20, help="the tables' reach in the match (MaxTableSeeds)")
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT, help="positions a graph of the bounds may hold")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if not (1 <= args.max_seeds <= 48 and args.limit > 0):
        parser.error("--max-seeds 1..48, --limit > 0")
    settings, records = read_journal(args.journal)
    started = time.perf_counter()
    rows = []
    with Tablebase(args.tables) as tablebase:
        missing = [n for n in range(args.max_seeds) if not tablebase.has_layer(n)]
        if missing:
            parser.error(f"the tables folder lacks layers {missing}")
        for seeds in range(args.max_seeds):  # the graphs end where these settle a line (solver.repetition)
            tablebase.load(seeds)
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
