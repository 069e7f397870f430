"""Time the same searches with OpenSpiel's alpha-beta on `oware` and with awele's.

    python scripts/openspiel_search.py [--depths 8 10 12] [--positions 3]

OpenSpiel (pip install open-spiel) offers alpha-beta for oware only in Python:
open_spiel.python.algorithms.minimax.alpha_beta_search, a fixed-depth search
without a transposition table over pyspiel states. Its leaves are scored
here by the capture difference (scaled to stay inside the +-1 of a finished
game). awele searches the same positions to the same depth, iterative
deepening included, with no tables loaded. Both run on one thread; the script
prints one JSON object and a table with the time ratio per search.
"""

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("NUMBA_NUM_THREADS", "1")

import pyspiel
from open_spiel.python.algorithms.minimax import alpha_beta_search

from solver import Position
from solver.bench import suite_positions
from solver.search import Searcher

LETTERS = ("ABCDEF", "abcdef")  # OpenSpiel player 0 = South, player 1 = North


def openspiel_state(game, record_game):
    """The OpenSpiel state after the moves of one of our Games (from the opening)."""
    state = game.new_initial_state()
    for move in record_game.moves:
        state.apply_action(LETTERS[0 if move.isupper() else 1].index(move))
    return state


def capture_difference(state):
    """Player 0's captured seeds minus player 1's, scaled into (-1, 1)."""
    _, scores, _ = state.observation_string(0).split(" | ")
    south, north = (int(s) for s in scores.split())
    return (south - north) / 49.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", type=int, nargs="+", default=[8, 10, 12])
    parser.add_argument("--positions", type=int, default=3, help="how many suite positions (from the opening)")
    args = parser.parse_args()

    oware = pyspiel.load_game("oware")
    searcher = Searcher(max_table_seeds=-1)
    searcher.search(Position.initial(), depth=2)  # compile or load numba's cache
    cases = [(name, game) for name, game, _ in suite_positions() if game.start == Position.initial()]
    rows = []
    for name, game in cases[: args.positions]:
        state = openspiel_state(oware, game)
        for depth in args.depths:
            started = time.perf_counter()
            _, action = alpha_beta_search(oware, state=state.clone(), value_function=capture_difference,
                                          maximum_depth=depth)
            theirs = time.perf_counter() - started
            searcher.tt[:] = 0
            started = time.perf_counter()
            ours = searcher.search(game, depth=depth)
            mine = time.perf_counter() - started
            rows.append(
                {
                    "position": name,
                    "depth": depth,
                    "openspiel_seconds": theirs,
                    "openspiel_move": LETTERS[state.current_player()][action],
                    "awele_seconds": mine,
                    "awele_move": ours.move,
                    "awele_nodes": ours.nodes,
                    "ratio": theirs / mine,
                }
            )
    summary = {"searches": rows, "median_ratio": statistics.median(r["ratio"] for r in rows)}
    print(json.dumps(summary, indent=2))
    for r in rows:
        print(f"{r['position']:32s} depth {r['depth']:2d}  OpenSpiel {r['openspiel_seconds']:8.3f} s  "
              f"awele {r['awele_seconds']:8.4f} s  ratio {r['ratio']:9.0f}x")
    print(f"median ratio: {summary['median_ratio']:.0f}x (awele faster)")


if __name__ == "__main__":
    main()
