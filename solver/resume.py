"""Checkpoints of a layer built in memory by one process (`awele build --checkpoint-dir`).

A layer solved in memory keeps its whole working state in one array
(retrograde.LayerSolver.values). Killed in its stages, it would start over;
with a checkpoint folder, that state is saved there after a stage, at most
every `interval` seconds, as the disk mode saves its stages in memory
(solver.disk): one file, created exclusively and synced, then a journal
`awele-NN.memory.json` naming it with its CRC-32, the stage to go on from and
the exits' figures; only then is the previous checkpoint removed. A rerun of
the same build finds the journal, reads the state back (checking the CRC-32)
and goes on at the next stage, without the exit passes. The journal is
data, not orders (as the disk mode's, solver.disk): its CRC-32 and schema
checked, its file the exact name of its stage's checkpoint, the stage
checked against the state (stage_fits); a journal or a checkpoint that
fails is removed and the layer starts over, in one line, and the layer
resumed is checked before its table is written (solver.build). A
checkpoint that does not fit beside the last one on the disk is not taken
(the last one stays), one that cannot be written at all lets the layer go
on without, and the layer's files go once its table is written.
"""

from __future__ import annotations

import errno
import os
import re
import time
from collections.abc import Callable
from typing import Any

from . import layer_state, retrograde, stages, tables
from .disk import (
    COUNT_MAX,
    CRC_MAX,
    check_int,
    check_keys,
    check_name,
    check_seconds,
    encode_journal,
    free_bytes,
    own_files,
    read_journal,
    read_lines,
    say,
    stage_fits,
    write_lines,
)
from .errors import BuildError, ScratchError

# "seeds:count" (tests): SIGKILL this process right after that many checkpoints of layer `seeds` are recorded.
KILL_VARIABLE = "AWELE_TEST_CHECKPOINT_KILL"
ROOM = 1 << 26  # bytes left free beside a new checkpoint
KEYS = {"seeds", "file", "crc32", "stage", "exit_passes", "exit_seconds", "exit_lookups"}


def journal_path(folder: str, seeds: int) -> str:
    return os.path.join(folder, f"awele-{seeds:02d}.memory.json")


def checkpoint_name(seeds: int, stage: int) -> str:
    """The name of the checkpoint of layer `seeds` from which stages `stage`..1 remain."""
    return f"awele-{seeds:02d}.memory-stage-{stage:02d}.lines"


def _pattern(seeds: int) -> re.Pattern[str]:
    return re.compile(rf"awele-{seeds:02d}\.memory(-stage-\d+\.lines|\.json)"
                      rf"({re.escape(tables.TEMPORARY_SUFFIX)}-\d+)?")


def remove_checkpoint_files(folder: str, seeds: int) -> list[str]:
    """Remove (and return) the checkpoint files of layer `seeds` in `folder`: a
    file, or a link planted at one of their names (the link, never what it
    points to); a folder planted there is left, and not returned."""
    removed = []
    for name in own_files(folder, _pattern(seeds)):
        path = os.path.join(folder, name)
        try:
            os.remove(path)  # a folder raises (IsADirectoryError, or EPERM): left alone
        except OSError:
            continue
        removed.append(name)
    return removed


def check_journal(journal: dict[str, Any], seeds: int) -> None:
    """ScratchError (why) unless `journal` is one a checkpoint of layer `seeds`
    can have: every field of its type and range, its file named exactly as
    the checkpoint of its stage is."""
    check_keys(journal, KEYS)
    check_int(journal["seeds"], seeds, seeds, "seeds")
    stage = check_int(journal["stage"], 1, seeds - 1, "stage")
    check_name(journal["file"], re.escape(checkpoint_name(seeds, stage)), "file")
    check_int(journal["crc32"], 0, CRC_MAX, "crc32")
    check_int(journal["exit_passes"], 0, len(layer_state.exit_layers(seeds)) + 1, "exit_passes")
    check_seconds(journal["exit_seconds"], "exit_seconds")
    check_int(journal["exit_lookups"], 0, COUNT_MAX, "exit_lookups")


class LayerCheckpoints:
    """The checkpoints of layer `seeds` in `folder`, for one LayerSolver. A
    checkpoint that cannot be written (the folder full, out of inodes, a
    link or a folder planted at its name) is not taken: the layer goes on
    without checkpoints, said once in one line."""

    def __init__(self, seeds: int, folder: str, interval: float = 600.0, told: list[str] | None = None) -> None:
        self.seeds = seeds
        self.told = told if told is not None else []  # what was said of this folder: said once a build
        self.folder = folder
        self.interval = interval
        self.last = time.perf_counter()
        self.taken = 0
        self.written = 0
        self.current: str | None = None  # the checkpoint the journal names
        self.off = False  # no more checkpoints (one could not be written)
        planned = os.environ.get(KILL_VARIABLE, "").split(":")
        self.kill_after = int(planned[1]) if len(planned) == 2 and planned[0] == str(seeds) else None

    def _own_files(self) -> list[str]:
        return own_files(self.folder, _pattern(self.seeds))

    def _journal(self) -> dict[str, Any] | None:
        """The recorded journal when there is one (None when not), its CRC-32
        and schema checked and its file a regular file; ScratchError (naming
        what) when it cannot be used."""
        path = journal_path(self.folder, self.seeds)
        journal = read_journal(path)
        if journal is None:
            return None
        try:
            check_journal(journal, self.seeds)
        except ScratchError as error:
            raise ScratchError(f"the checkpoint journal {path} is not valid: {error}") from None
        return journal

    def resume(self, solver: retrograde.LayerSolver) -> int | None:
        """Put the last checkpoint's state in `solver` (its exits recorded as
        done) and return the stage to go on from; None when there is none,
        or when it fails a check (its journal's CRC-32 and schema, its
        file's CRC-32, its stage against the state: stage_fits), said in
        one line. This layer's other files in the folder are removed."""
        keep: set[str] = set()
        try:
            journal = self._journal()
            if journal is not None:
                keep = {os.path.basename(journal_path(self.folder, self.seeds)), journal["file"]}
        except ScratchError as error:
            say(f"{error}: layer {self.seeds} starts over, its checkpoint removed")
            journal = None
        for name in self._own_files():
            if name not in keep:
                remove_checkpoint_files_named(self.folder, [name])
        if journal is None:
            return None
        try:
            read_lines(os.path.join(self.folder, journal["file"]), solver.values, journal["crc32"])
            if not stage_fits(stages.line_histogram(solver.values, solver.size), journal["stage"]):
                raise ScratchError(f"{os.path.join(self.folder, journal['file'])} is not the state before stage "
                                   f"{journal['stage']}, as its journal says")
        except ScratchError as error:
            # Damaged, cut short, gone, planted or not what the journal says: the layer starts over from a clean state.
            say(f"{error}: layer {self.seeds} starts over, its checkpoint removed")
            solver.values[:] = 0
            self.clear()
            return None
        self.current = journal["file"]
        solver.exits_done(journal["exit_passes"], journal["exit_seconds"], journal["exit_lookups"])
        return int(journal["stage"])

    def _failed(self, error: OSError, folder: str, seeds: int) -> Exception:
        return _CheckpointFailed(error.strerror or str(error))

    def after_stage(self, solver: retrograde.LayerSolver) -> Callable[[int], None]:
        """The LayerSolver.solve callback that saves the state after a stage
        (as stage - 1, the one solve() goes on from)."""

        def save(stage: int) -> None:
            if self.off or stage <= 1 or time.perf_counter() - self.last < self.interval:
                return
            try:
                room = free_bytes(self.folder)
            except OSError:
                room = 0
            if room < solver.values.nbytes + ROOM:
                return  # no room for a second copy: the last checkpoint stays
            name = checkpoint_name(self.seeds, stage - 1)
            path = os.path.join(self.folder, name)
            try:
                crc = write_lines(path, solver.values, self.folder, self.seeds, self._failed)
            except _CheckpointFailed as error:
                self._give_up(f"cannot write {path}: {error}")
                return
            self.written += solver.values.nbytes
            journal = {"seeds": self.seeds, "file": name, "crc32": crc, "stage": stage - 1,
                       "exit_passes": solver.passes, "exit_seconds": solver.exit_seconds,
                       "exit_lookups": solver.exit_lookups}
            try:
                tables.write_file_exclusively(journal_path(self.folder, self.seeds), (encode_journal(journal),))
            except OSError as error:
                os.remove(path)
                self._give_up(f"cannot write {journal_path(self.folder, self.seeds)}: "
                              f"{error.strerror or error}")
                return
            if self.current is not None and self.current != name:
                remove_checkpoint_files_named(self.folder, [self.current])
            self.current = name
            self.taken += 1
            self.last = time.perf_counter()
            if self.kill_after is not None and self.taken >= self.kill_after:
                os.kill(os.getpid(), 9)  # fault injection for the tests: a kill right after a checkpoint

        return save

    def _give_up(self, why: str) -> None:
        """No more checkpoints of this layer (the last one recorded, if any, stays), said once."""
        self.off = True
        if not self.told:
            say(f"{why}: layer {self.seeds} goes on without checkpoints in the checkpoint folder {self.folder} "
                "(so do the next ones that cannot take one)")
        self.told.append(why)

    def clear(self) -> None:
        """Remove this layer's checkpoint files (its table is written, or it starts over)."""
        remove_checkpoint_files(self.folder, self.seeds)


def remove_checkpoint_files_named(folder: str, names: list[str]) -> None:
    """Remove files `names` of `folder` (checkpoint names): a file or a link
    (the link itself); anything else planted there is left alone."""
    for name in names:
        try:
            os.remove(os.path.join(folder, name))
        except OSError as error:
            if error.errno not in (errno.ENOENT, errno.EISDIR, errno.EPERM, errno.ENOTEMPTY):
                raise


class _CheckpointFailed(BuildError):
    """A checkpoint that could not be written (solver.resume: the layer goes on without)."""

