"""Compile awele's kernels ahead: `awele compile`.

numba compiles each kernel on its first call and keeps it in its cache
(cache=True: the package's __pycache__, or $NUMBA_CACHE_DIR); a later
process loads it in milliseconds. On a fresh install the first command pays
for the compilation: the first `isready` of `awele uci`, the first search,
the first build. compile_kernels() makes every kernel those first calls
make, on layers 0..4 built in a temporary folder that it removes, so that
an install (a package's post-install step, a container image, CI) can pay
for it once, off any clock.

>>> steps = compile_kernels()  # doctest: +SKIP
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable

SMALL_LAYERS = 4  # layers built to compile the builder's and the readers' kernels (a few milliseconds each)
COMPILE_BUDGET = 1 << 30  # bytes of memory the build of those layers may plan for


def compile_kernels(progress: Callable[[str], None] | None = None) -> dict[str, float]:
    """Compile (or load from numba's cache) the kernels of the builder, the
    table readers, the search with its evaluation and the fit's playouts;
    {step: seconds}. `progress(step)` is called as each step begins."""
    say = progress or (lambda step: None)
    seconds: dict[str, float] = {}

    def step(name: str, work: Callable[[], object]) -> None:
        say(name)
        started = time.perf_counter()
        work()
        seconds[name] = round(time.perf_counter() - started, 3)

    with tempfile.TemporaryDirectory(prefix="awele-compile-") as folder:
        from . import build, evaluation, fitting
        from .engine import warm_up
        from .position import Game, Position
        from .probe import Tablebase
        from .search import Searcher

        # A budget of its own: layers this small need a few MiB, and the default
        # (the memory available) refuses them on a machine busy with a big build.
        step("the builder", lambda: build.build(SMALL_LAYERS, folder, memory=COMPILE_BUDGET))
        with Tablebase(folder) as tablebase:
            def read() -> None:
                warm_up(tablebase)
                position = Position.from_string("0-1-0-1-0-0/1-0-0-0-1-0 S")
                tablebase.best_move(Game(position))
                tablebase.line(position)
            step("the table readers", read)
            def search() -> None:
                searcher = Searcher(tablebase, hash_mb=1)
                searcher.search(Position.initial(), depth=4)
                searcher.wait_for_tables()  # its background reader is done before the tables close
            step("the search", search)
        step("the fit's playouts", lambda: evaluation.board_features(fitting.game_positions(2)))
    return seconds


__all__ = ["compile_kernels"]
