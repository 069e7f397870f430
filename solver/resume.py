"""Checkpoints of a layer built in memory by one process (`awele build --checkpoint-dir`).

A layer solved in memory keeps its whole working state in one array
(retrograde.LayerSolver.values). Killed in its stages, it would start over;
with a checkpoint folder, that state is saved there after a stage, at most
every `interval` seconds, as the disk mode saves its stages in memory
(solver.disk): one file, created exclusively and synced, then a journal
`awele-NN.memory.json` naming it with its CRC-32, the stage to go on from and
the exits' figures; only then is the previous checkpoint removed. A rerun of
the same build finds the journal, reads the state back (checking the CRC-32)
and goes on at the next stage, without the exit passes; a checkpoint that
is damaged is removed and the layer starts over. A checkpoint that
does not fit beside the last one on the disk is not taken (the last one
stays), and the layer's files go once its table is written.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from typing import Any

from . import retrograde, tables
from .disk import free_bytes, read_lines, write_lines
from .errors import BuildError

# "seeds:count" (tests): SIGKILL this process right after that many checkpoints of layer `seeds` are recorded.
KILL_VARIABLE = "AWELE_TEST_CHECKPOINT_KILL"
ROOM = 1 << 26  # bytes left free beside a new checkpoint


def journal_path(folder: str, seeds: int) -> str:
    return os.path.join(folder, f"awele-{seeds:02d}.memory.json")


class LayerCheckpoints:
    """The checkpoints of layer `seeds` in `folder`, for one LayerSolver."""

    def __init__(self, seeds: int, folder: str, interval: float = 600.0) -> None:
        self.seeds = seeds
        self.folder = folder
        self.interval = interval
        self.last = time.perf_counter()
        self.taken = 0
        self.written = 0
        planned = os.environ.get(KILL_VARIABLE, "").split(":")
        self.kill_after = int(planned[1]) if len(planned) == 2 and planned[0] == str(seeds) else None

    def _own_files(self) -> list[str]:
        pattern = re.compile(rf"awele-{self.seeds:02d}\.memory(-stage-\d+\.lines|\.json)"
                             rf"({re.escape(tables.TEMPORARY_SUFFIX)}-\d+)?")
        try:
            return [name for name in os.listdir(self.folder) if pattern.fullmatch(name)]
        except FileNotFoundError:
            return []

    def _journal(self) -> dict[str, Any] | None:
        try:
            journal = json.loads(tables.read_file_nofollow(journal_path(self.folder, self.seeds), 1 << 16))
        except (OSError, ValueError):
            return None
        keys = {"seeds", "file", "crc32", "stage", "exit_passes", "exit_seconds", "exit_lookups"}
        if not isinstance(journal, dict) or set(journal) != keys or journal["seeds"] != self.seeds:
            return None
        return journal

    def resume(self, solver: retrograde.LayerSolver) -> int | None:
        """Put the last checkpoint's state in `solver` (its exits recorded as
        done) and return the stage to go on from; None when there is none, in
        which case this layer's files left by an earlier run are removed."""
        journal = self._journal()
        keep = set()
        if journal is not None:
            keep = {os.path.basename(journal_path(self.folder, self.seeds)), journal["file"]}
        for name in self._own_files():
            path = os.path.join(self.folder, name)
            if name not in keep and not os.path.islink(path):
                os.remove(path)
        if journal is None:
            return None
        try:
            read_lines(os.path.join(self.folder, journal["file"]), solver.values, journal["crc32"])
        except BuildError:
            # Damaged, cut short or gone: the layer starts over from a clean state.
            solver.values[:] = 0
            self.clear()
            return None
        solver.exits_done(journal["exit_passes"], journal["exit_seconds"], journal["exit_lookups"])
        return int(journal["stage"])

    def after_stage(self, solver: retrograde.LayerSolver) -> Callable[[int], None]:
        """The LayerSolver.solve callback that saves the state after a stage
        (as stage - 1, the one solve() goes on from)."""

        def save(stage: int) -> None:
            if stage <= 1 or time.perf_counter() - self.last < self.interval:
                return
            if free_bytes(self.folder) < solver.values.nbytes + ROOM:
                return  # no room for a second copy: the last checkpoint stays
            name = f"awele-{self.seeds:02d}.memory-stage-{stage - 1:02d}.lines"
            crc = write_lines(os.path.join(self.folder, name), solver.values, self.folder, self.seeds)
            self.written += solver.values.nbytes
            before = self._journal()
            journal = {"seeds": self.seeds, "file": name, "crc32": crc, "stage": stage - 1,
                       "exit_passes": solver.passes, "exit_seconds": solver.exit_seconds,
                       "exit_lookups": solver.exit_lookups}
            try:
                tables.write_file_exclusively(journal_path(self.folder, self.seeds), (json.dumps(journal).encode(),))
            except OSError as error:
                os.remove(os.path.join(self.folder, name))
                raise BuildError(f"cannot write in the checkpoint folder {self.folder}: {error.strerror}") from None
            if before is not None and before["file"] != name:
                os.remove(os.path.join(self.folder, before["file"]))
            self.taken += 1
            self.last = time.perf_counter()
            if self.kill_after is not None and self.taken >= self.kill_after:
                os.kill(os.getpid(), 9)  # fault injection for the tests: a kill right after a checkpoint

        return save

    def clear(self) -> None:
        """Remove this layer's checkpoint files (its table is written)."""
        for name in self._own_files():
            os.remove(os.path.join(self.folder, name))
