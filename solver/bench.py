"""The benchmark suite behind `awele bench` and benchmarks/search.py.

Every measure runs on one thread and returns plain data (JSON-ready). Times
are medians where a measure is repeated; nothing here asserts on time.
"""

import os
import platform
import statistics
import tempfile
import time
from typing import Any

import numpy as np

from . import build as builder
from . import index
from .engine import Engine
from .position import Game, Position, perft
from .probe import Tablebase
from .search import Searcher

# Positions of the search suite: (name, start, moves played from it, depth).
# The middlegames come from two recorded games (self-play at depth 9); the
# endgames are searched with the tables of 0..12 seeds in memory.
GAME_1 = "1. F d 2. B b 3. F d 4. A e 5. A f 6. A a 7. E a 8. A b 9. C a 10. A b 11. E c 12. A a 13. E b 14. C c"
GAME_2 = (
    "1. C b 2. B d 3. B f 4. B a 5. E a 6. A a 7. E c 8. A f 9. A d 10. A b 11. D b 12. B c 13. A f 14. A e "
    "15. E d 16. B a 17. F e 18. D a 19. E a 20. B b"
)
SEARCH_SUITE = [
    ("opening", None, "", 20),
    ("middlegame 1 (game 1, ply 16)", None, " ".join(GAME_1.split()[:24]), 20),
    ("middlegame 2 (game 1, ply 28)", None, GAME_1, 20),
    ("middlegame 3 (game 2, ply 20)", None, " ".join(GAME_2.split()[:30]), 20),
    ("endgame 1 (game 2, ply 40, 19 seeds)", None, GAME_2, 22),
    ("endgame 2 (20 seeds)", "2-2-2-2-2-0/2-2-2-2-1-1 S", "", 22),
    ("endgame 3 (14 seeds)", "0-0-3-0-0-1/2-2-0-2-2-2 S", "", 40),
]
SUITE_TABLE_SEEDS = 12


def suite_positions() -> list[tuple[str, Game, int]]:
    """(name, Game, depth) of the search suite."""
    found = []
    for name, start, moves, depth in SEARCH_SUITE:
        game = Game.parse(moves, start or None)
        found.append((name, game, depth))
    return found


def machine() -> dict[str, Any]:
    return {"machine": platform.machine(), "python": platform.python_version(), "cpus": os.cpu_count()}


def bench_search(
    directory: str,
    table_seeds: int = SUITE_TABLE_SEEDS,
    depth_scale: int = 0,
    cycles: str = "own",
    hash_mb: int = 64,
    threads: int = 1,
    evaluation: str = "learned",
    weights_file: str | None = None,
) -> dict[str, Any]:
    """Search every suite position to its depth (+ depth_scale) with a fresh
    transposition table on `threads` threads; nodes (every thread's),
    nodes/s and the time to each depth. `weights_file`: the learned leaf's
    weights (a version 1 or 2 file; None: the shipped ones)."""
    searcher = Searcher(directory, max_table_seeds=table_seeds, hash_mb=hash_mb, threads=threads, evaluation=evaluation,
                        weights_file=weights_file)
    searcher.search(Position.initial(), depth=2)  # compile or load numba's cache
    engine = Engine.over(searcher)
    rows: list[dict[str, Any]] = []
    for name, game, depth in suite_positions():
        searcher.tt[:] = 0
        searcher.history[:] = 0
        # Tables or search, as `awele search` decides.
        result = engine.search(game, depth=max(1, depth + depth_scale), cycles=cycles)
        elapsed = 0.0
        to_depth = {}
        for iteration, _, _, _, seconds in result.iterations:
            elapsed += seconds
            to_depth[iteration] = round(elapsed, 6)
        rows.append(
            {
                "name": name,
                "position": str(game.position),
                "seeds": game.position.seeds,
                "depth": result.depth,
                "move": result.move,
                "value": result.value,
                "exact": result.exact,
                "nodes": result.nodes,
                "seconds": result.seconds,
                "nps": result.nps,
                "seconds_to_depth": to_depth,
            }
        )
    nodes = sum(r["nodes"] for r in rows)
    seconds = sum(r["seconds"] for r in rows)
    return {
        "benchmark": "search",
        "cycles": cycles,
        "table_seeds": table_seeds,
        "positions": rows,
        "nodes": nodes,
        "seconds": seconds,
        "nps": nodes / seconds if seconds else 0.0,
        "median_nps": statistics.median(r["nps"] for r in rows if r["nps"] > 0),
        "threads": threads,
        "evaluation": evaluation,
        "weights_file": weights_file,
        **machine(),
    }


def bench_movegen(depth: int = 10, repeat: int = 3) -> dict[str, Any]:
    opening = Position.initial()
    perft(opening, 2)
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        leaves = perft(opening, depth)
        times.append(time.perf_counter() - started)
    seconds = statistics.median(times)
    return {"benchmark": "movegen", "depth": depth, "leaves": leaves, "seconds": seconds,
            "leaves_per_second": leaves / seconds}


def bench_build(directory: str, max_seeds: int = 12, threads: int | None = None) -> dict[str, Any]:
    started = time.perf_counter()
    builder.build(max_seeds, directory, threads=threads)
    seconds = time.perf_counter() - started
    positions = sum(index.layer_size(n) for n in range(max_seeds + 1))
    return {"benchmark": "build", "max_seeds": max_seeds, "positions": positions, "seconds": seconds,
            "positions_per_second": positions / seconds}


def bench_probe(
    directory: str, seeds: int = 12, boards: int = 1_000_000, singles: int = 2_000, repeat: int = 3
) -> dict[str, Any]:
    rng = np.random.default_rng(1)
    cuts = np.sort(rng.integers(0, seeds + 1, size=(boards, 11)), axis=1)
    edges = np.concatenate([np.zeros((boards, 1), int), cuts, np.full((boards, 1), seeds)], axis=1)
    sample = np.diff(edges, axis=1).astype(np.uint8)
    with Tablebase(directory) as tablebase:
        for n in range(seeds + 1):
            tablebase.load(n)
        tablebase.values(sample[:10])
        rates = []
        for _ in range(repeat):
            started = time.perf_counter()
            tablebase.values(sample)
            rates.append(boards / (time.perf_counter() - started))
        positions = [Position.from_mover_board(board) for board in sample[:singles]]
        started = time.perf_counter()
        for position in positions:
            tablebase.value(position)
        single = singles / (time.perf_counter() - started)
    return {"benchmark": "probe", "seeds": seeds, "values_per_second": statistics.median(rates),
            "single_probes_per_second": single}


def bench_all(quick: bool = False) -> dict[str, Any]:
    """Every measure of `awele bench`: movegen, a small build (into a temporary
    folder, so it is always a whole build), probes and search on its tables."""
    with tempfile.TemporaryDirectory(prefix="awele-bench-") as directory:
        results = {"machine": machine()}
        results["movegen"] = bench_movegen(depth=9 if quick else 10)
        results["build"] = bench_build(directory, max_seeds=SUITE_TABLE_SEEDS)
        results["probe"] = bench_probe(directory, seeds=SUITE_TABLE_SEEDS)
        results["search"] = bench_search(directory, depth_scale=-6 if quick else 0)
    return results
