"""A layer past memory: its exits computed a slice at a time through disk.

A layer needs in memory its working state (1.52 bytes a position, the lined
layout of solver.layer_state) and, for its exits, its smaller layers
n-15..n-2 at a byte a position, a group at a time (solver.plan). Past layer
34 on a 24 GiB machine the two no longer fit together, while the working
state alone still does (layer 36: 20.2 GiB). So the disk mode takes the
exits apart from the stages (docs/DISK.md says why, with the figures):

1. Exits, in slices. The layer's ranks are cut into K slices (at multiples
   of SLICE_UNIT, so that a slice is whole lines and whole blocks). For
   each group of smaller layers that fits in memory beside one slice, each
   slice in turn is read from the scratch folder, given its exit pass over
   that group (exits.exit_pass on ranks lo..hi, the same kernel as in
   memory) and written back: one sequential read and write of the working
   state a group, never a random access to disk.
2. Stages, in memory. The smaller layers are dropped, the slices read back
   into one working state, and the stages run as in memory
   (retrograde.LayerSolver.solve): the fast, depth-first stages, at the
   in-memory rate.

Nothing half-done is trusted. Every slice file is created exclusively and
synced, under a name that says which group it has been through, and a
journal (awele-NN.disk.json, written atomically) names each slice's file
and its CRC-32 after every step. A build killed at any moment resumes at
the last step the journal records, re-checking every file it reads; files
the journal does not name are left-overs and are removed. The scratch
folder's peak size is planned (plan.disk_plan) and checked against its
free space before the layer starts, and a disk that fills up stops the
build in one line (BuildError), the journal and the finished layers intact.

A journal is data, not orders (docs/DISK.md): it carries a CRC-32 of its own
bytes and is checked against a strict schema (every field's type and range,
every file it names the exact name the builder gives that file); a journal
that fails, or a file it names that is missing, damaged or planted (a link,
a folder), sets the layer's scratch files aside and the layer starts over,
in one line on stderr. What a journal says the kernels cannot check (the
stage, the updates waiting, the stages a slice has seeds for) is either
derived again from the files themselves or, for a resumed layer, checked
in its values before its table is written (solver.build).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import stat
import sys
import time
import zlib
from collections.abc import Callable, Iterable
from typing import Any

import numba
import numpy as np

from . import exits, index, layer_state, retrograde, stages, tables
from .errors import BuildError, ScratchError
from .layers import LayerStore

IO_PIECE = 64 << 20  # bytes read or written (and CRC'd) per call


def journal_path(scratch: str, seeds: int) -> str:
    return os.path.join(scratch, f"awele-{seeds:02d}.disk.json")


def slice_path(scratch: str, seeds: int, part: int, parts: int, group: int) -> str:
    """The file of slice `part` of `parts` of layer `seeds` once the exit passes
    of groups 0..`group` are in it."""
    return os.path.join(scratch, f"awele-{seeds:02d}.slice-{part}-of-{parts}.group-{group}.lines")


def say(text: str) -> None:
    """One line on stderr about the build (a layer that starts over, files removed)."""
    print(f"awele: {text}", file=sys.stderr, flush=True)


# Journals: a CRC-32 line, then the JSON ------------------------------------------

JOURNAL_HEAD = b"awele-journal crc32="
JOURNAL_LIMIT = 1 << 24  # bytes a journal may have (sliced stages: a few entries a slice)
CRC_MAX = 0xFFFFFFFF
COUNT_MAX = 1 << 48  # any count or total a journal may record (positions, updates, look-ups)


def encode_journal(body: dict[str, Any]) -> bytes:
    """The bytes of a journal: a line with the CRC-32 of the JSON that follows it, then that JSON."""
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    return JOURNAL_HEAD + f"{zlib.crc32(text):08x}\n".encode() + text + b"\n"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


def decode_journal(data: bytes) -> dict[str, Any]:
    """The JSON object of a journal's bytes; ScratchError (why) when its CRC-32
    line is missing or does not match, or the JSON is not an object."""
    head, _, rest = data.partition(b"\n")
    digits = head[len(JOURNAL_HEAD):]
    if not head.startswith(JOURNAL_HEAD) or len(digits) != 8 or not all(c in b"0123456789abcdef" for c in digits):
        raise ScratchError("it has no CRC-32 line")
    if not rest.endswith(b"\n") or zlib.crc32(rest[:-1]) != int(digits, 16):
        raise ScratchError("it does not match its CRC-32")
    try:
        body = json.loads(rest[:-1], parse_constant=_no_constant)
    except (ValueError, RecursionError):
        raise ScratchError("it is not JSON") from None
    if not isinstance(body, dict):
        raise ScratchError("it is not a JSON object")
    return body


def read_journal(path: str) -> dict[str, Any] | None:
    """The journal at `path`, its CRC-32 checked (not its schema); None when
    there is none; ScratchError (naming it) when it cannot be used."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as error:
        raise ScratchError(f"the journal {path} cannot be read: {error.strerror}") from None
    if not stat.S_ISREG(mode):
        raise ScratchError(f"the journal {path} is not a regular file")
    try:
        data = tables.read_file_nofollow(path, JOURNAL_LIMIT + 1)
    except OSError as error:
        raise ScratchError(f"the journal {path} cannot be read: {error.strerror}") from None
    if len(data) > JOURNAL_LIMIT:
        raise ScratchError(f"the journal {path} is too long")
    try:
        return decode_journal(data)
    except ScratchError as error:
        raise ScratchError(f"the journal {path} is not valid: {error}") from None


def check_int(value: Any, lo: int, hi: int, what: str) -> int:
    """`value` when it is an int (not a bool) in lo..hi, else ScratchError."""
    if type(value) is not int or not lo <= value <= hi:
        raise ScratchError(f"{what} is {_shown(value)}, not a whole number in {lo}..{hi}")
    return value


def check_seconds(value: Any, what: str) -> float:
    """`value` when it is a finite number of seconds (an int or float, not a bool) >= 0, else ScratchError."""
    if type(value) not in (int, float) or not 0 <= value < 1e12:
        raise ScratchError(f"{what} is {_shown(value)}, not a number of seconds")
    return float(value)


def check_list(value: Any, length: int, what: str) -> list[Any]:
    """`value` when it is a list of `length` items, else ScratchError."""
    if type(value) is not list or len(value) != length:
        raise ScratchError(f"{what} is {_shown(value)}, not a list of {length}")
    return value


def check_keys(journal: dict[str, Any], required: set[str], optional: Iterable[str] = ()) -> None:
    """ScratchError unless `journal` is an object with every key of `required` and no key outside `optional` besides."""
    if type(journal) is not dict:
        raise ScratchError(f"it is {_shown(journal)}, not an object")
    missing = sorted(required - set(journal))
    unknown = sorted(set(journal) - required - set(optional))
    if missing:
        raise ScratchError(f"it lacks {missing[0]!r}")
    if unknown:
        raise ScratchError(f"it has an unknown field {unknown[0][:40]!r}")


def _shown(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, float) or value == value else "NaN"
    return text if len(text) <= 40 else text[:37] + "..."


def same(value: Any, expected: Any) -> bool:
    """Whether JSON `value` is `expected`, types included (True is not 1, 1.0 is not 1)."""
    return json.dumps(value, sort_keys=True) == json.dumps(expected, sort_keys=True)


def check_name(value: Any, pattern: str, what: str) -> re.Match[str]:
    """The match of file name `value` against `pattern` (the exact name the
    builder gives that file: no folder, no '..', never a table's name), else ScratchError."""
    match = re.fullmatch(pattern, value) if type(value) is str else None
    if match is None:
        raise ScratchError(f"{what} is {_shown(value)}, not a name this layer's files have")
    return match


NUMBER = r"(0|[1-9][0-9]{0,11})"  # a whole number as the builder writes it in a name


def stage_fits(codes: np.ndarray, stage: int) -> bool:
    """Whether a working state whose value bytes have histogram `codes` can be
    the state from which stages `stage`..1 remain: every value resolved so
    far beyond +-stage, and no pending exit value above stage (it would have
    been a seed of an earlier stage). The stage a journal records is so
    checked against the state it names, not taken on trust."""
    for value in range(1, layer_state.MAX_VALUE + 1):
        if value <= stage and (codes[value] or codes[-value & 0xFF]):
            return False
        if value > stage and codes[np.int64(layer_state.pending(value)) & 0xFF]:
            return False
    return True


# Own files: the builder's names only, never a link followed ------------------------


def refuse_folders(folder: str, names: list[str], seeds: int) -> None:
    """BuildError (one line naming it) when one of `names` in `folder` is a
    folder: planted where the build keeps a file, it can neither be used nor
    removed (what is in it is not the builder's)."""
    for name in names:
        path = os.path.join(folder, name)
        with contextlib.suppress(OSError):
            if stat.S_ISDIR(os.lstat(path).st_mode):
                raise BuildError(f"{path} is a folder, where the build of layer {seeds} keeps a file of its own: "
                                 "remove it and build again")


def remove_own(folder: str, names: list[str], seeds: int) -> None:
    """Remove files `names` (the builder's own names, matched by the caller) from
    `folder`: a file, or a link planted there (the link itself, never what it
    points to); a folder planted at such a name stops the build in one line."""
    for name in names:
        path = os.path.join(folder, name)
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(mode):
            refuse_folders(folder, [name], seeds)
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def own_files(folder: str, pattern: re.Pattern[str]) -> list[str]:
    """The names in `folder` that `pattern` matches (nothing when it is gone)."""
    try:
        return sorted(name for name in os.listdir(folder) if pattern.fullmatch(name))
    except (FileNotFoundError, NotADirectoryError):
        return []


def recorded_journal(folder: str, path: str, seeds: int, check: Callable[[dict[str, Any]], None],
                     named: Callable[[dict[str, Any]], list[str]],
                     names: Callable[[], list[str]]) -> dict[str, Any] | None:
    """The journal at `path` of layer `seeds` when it passes its checks: its
    CRC-32 (read_journal), `check` (its schema: ScratchError saying why), and
    every file named(journal) a regular file in `folder`. Else None, said in
    one line, and the layer's files (`names()`, the builder's own names in
    `folder`) removed, a link as a link. Either way the layer's files the
    journal does not name (the left-overs of a killed step) are removed; a
    folder planted at one of their names stops the build (refuse_folders).
    The disk mode and the lean stages read their journals so."""
    refuse_folders(folder, names(), seeds)
    journal = None
    try:
        journal = read_journal(path)
        if journal is not None:
            try:
                check(journal)
            except ScratchError as error:
                raise ScratchError(f"the journal {path} is not valid: {error}") from None
            for name in named(journal):
                try:
                    mode = os.lstat(os.path.join(folder, name)).st_mode
                except OSError:
                    raise ScratchError(f"{os.path.join(folder, name)}, named in the journal, is missing") from None
                if not stat.S_ISREG(mode):
                    raise ScratchError(f"{os.path.join(folder, name)}, named in the journal, is not a regular file")
    except ScratchError as error:
        say(f"{error}: layer {seeds} starts over, its scratch files removed")
        remove_own(folder, names(), seeds)
        journal = None
    keep = {os.path.basename(path), *(named(journal) if journal is not None else [])}
    remove_own(folder, [name for name in names() if name not in keep], seeds)
    return journal


def disk_pattern(seeds: int) -> re.Pattern[str]:
    """Every name a disk-mode build of layer `seeds` gives a file in its scratch folder."""
    return re.compile(rf"awele-{seeds:02d}\.(slice-\d+-of-\d+\.(group|visit)-\d+\.lines"
                      rf"|stage-\d+\.lines"
                      rf"|to-\d+\.visit-\d+\.updates|disk\.json)"
                      rf"({re.escape(tables.TEMPORARY_SUFFIX)}-\d+)?")


def remove_layer_files(scratch: str, seeds: int) -> list[str]:
    """Remove (and return) the disk-mode files of layer `seeds` in `scratch`
    (its table is written: what a kill before their removal left)."""
    names = own_files(scratch, disk_pattern(seeds))
    remove_own(scratch, names, seeds)
    return names


def _full(error: OSError, scratch: str, seeds: int) -> BuildError:
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return BuildError(f"the scratch folder {scratch} is full (layer {seeds}, disk mode); the layers built are "
                          "kept: free some space (or give another --scratch) and build again to resume")
    return BuildError(f"cannot write in the scratch folder {scratch}: {error.strerror}")


def write_lines(path: str, data: np.ndarray, scratch: str, seeds: int,
                failed: Callable[[OSError, str, int], Exception] | None = None) -> int:
    """Write `data` to a new file `path` (created exclusively, never through a
    link), synced; returns its CRC-32. Removes the partial file on failure,
    raising failed(error, scratch, seeds) (default: the scratch folder's BuildError)."""
    failed = failed or _full
    view = memoryview(data.view(np.uint8))  # type: ignore[arg-type]  # an ndarray is a buffer (stubs: 3.12 on)
    crc = 0
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise failed(error, scratch, seeds) from None
    try:
        for start in range(0, len(view), IO_PIECE):
            piece = view[start : start + IO_PIECE]
            done = 0
            while done < len(piece):
                done += os.write(descriptor, piece[done:])
            crc = zlib.crc32(piece, crc)
        os.fsync(descriptor)
        os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)  # the data is on disk: leave the cache alone
    except OSError as error:
        os.close(descriptor)
        os.remove(path)
        raise failed(error, scratch, seeds) from None
    except BaseException:
        os.close(descriptor)
        os.remove(path)
        raise
    os.close(descriptor)
    return crc


def open_regular(path: str) -> int:
    """A descriptor of regular file `path` opened for reading, never through a
    link; ScratchError (naming it) when it is missing, a link, a folder or
    anything but a regular file."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        why = "is a link" if error.errno == errno.ELOOP else error.strerror
        raise ScratchError(f"cannot read {path}: {why}") from None
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise ScratchError(f"cannot read {path}: not a regular file")
    return descriptor


def read_lines(path: str, out: np.ndarray, crc: int) -> None:
    """Read file `path` into `out` (its exact size), checking its CRC-32; a
    file that is missing, a link, of another size or damaged raises ScratchError."""
    view = memoryview(out.view(np.uint8))  # type: ignore[arg-type]  # an ndarray is a buffer (stubs: 3.12 on)
    descriptor = open_regular(path)
    found = 0
    try:
        if os.fstat(descriptor).st_size != len(view):
            raise ScratchError(f"{path} has {os.fstat(descriptor).st_size} bytes, not {len(view)}")
        for start in range(0, len(view), IO_PIECE):
            piece = view[start : start + IO_PIECE]
            done = 0
            while done < len(piece):
                got = os.readv(descriptor, [piece[done:]])
                if got == 0:
                    raise ScratchError(f"{path} ended early")
                done += got
            found = zlib.crc32(piece, found)
        os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError as error:
        raise ScratchError(f"cannot read {path}: {error.strerror}") from None
    finally:
        os.close(descriptor)
    if found != crc:
        raise ScratchError(f"{path} does not match its CRC-32: damaged")


def visit_path(scratch: str, seeds: int, part: int, parts: int, visit: int) -> str:
    """The file of slice `part` of layer `seeds` as stage visit `visit` left it (sliced stages)."""
    return os.path.join(scratch, f"awele-{seeds:02d}.slice-{part}-of-{parts}.visit-{visit}.lines")


def updates_name(seeds: int, part: int, visit: int) -> str:
    """The name of the updates stage visit `visit` sent to slice `part`."""
    return f"awele-{seeds:02d}.to-{part}.visit-{visit}.updates"


INBOX_CHUNK = 1 << 20  # updates read (and applied) at a time
STAGE_OUTBOX = 1 << 18  # updates a thread gathers for other slices before its sweep pauses (sliced stages)


class DiskLayer:
    """The disk-mode build of layer `seeds` (module docstring): solve()
    leaves its values in their slot of `store` (stages in memory) or in
    the slice files (sliced stages), and values() gives them to
    tables.write_table either way; the caller then calls clear().

    `layout` is plan.disk_plan's: slices (their bounds), exit groups, and
    whether the stages run in slices. `load(m)` puts smaller layer m in
    `store` (checked), as the in-memory build does. Stages in memory save
    their state at most every `checkpoint_interval` seconds (_checkpoint).
    `kill_after` (tests): SIGKILL this process after that many steps of
    this run are recorded."""

    def __init__(self, seeds: int, scratch: str, store: LayerStore, rows: tuple[np.ndarray, ...],
                 layout: dict[str, Any], load: Callable[[int], None], kill_after: int | None = None,
                 checkpoint_interval: float = 600.0) -> None:
        self.seeds = seeds
        self.scratch = scratch
        self.store = store
        self.rows = rows
        self.bounds = [int(b) for b in layout["bounds"]]
        self.groups = [[int(m) for m in g] for g in layout["groups"]]
        self.sliced = bool(layout.get("sliced_stages", False))
        self.parts = len(self.bounds) - 1
        self.load = load
        self.kill_after = kill_after
        self.steps = 0
        self.started = time.perf_counter()
        self.load_seconds = 0.0
        self.written = self.read = 0
        self.journal: dict[str, Any] = {}
        self.resumed = False  # whether resume() went on from a recorded journal
        self.checkpoint_interval = checkpoint_interval
        self.last_checkpoint = time.perf_counter()

    # The journal --------------------------------------------------------------------

    def _fresh_journal(self) -> dict[str, Any]:
        return {"seeds": self.seeds, "bounds": self.bounds, "groups": self.groups, "sliced": self.sliced,
                "done": [-1] * self.parts, "files": [None] * self.parts, "crc32": [0] * self.parts,
                "exit_lookups": 0, "exit_seconds": 0.0, "seeds_at": [0] * self.parts,
                "stage": None, "need_seed": [False] * self.parts, "inbox": [[] for _ in range(self.parts)],
                "visits": 0, "last": -1, "stage_visits": 0}

    def _commit(self, journal: dict[str, Any]) -> None:
        try:
            tables.write_file_exclusively(journal_path(self.scratch, self.seeds), (encode_journal(journal),))
        except OSError as error:
            raise _full(error, self.scratch, self.seeds) from None
        self.steps += 1
        if self.kill_after is not None and self.steps >= self.kill_after:
            os.kill(os.getpid(), 9)  # fault injection for the tests: a kill right after a step

    def _own_files(self) -> list[str]:
        return own_files(self.scratch, disk_pattern(self.seeds))

    def check_journal(self, journal: dict[str, Any]) -> None:
        """ScratchError (why) unless `journal` is one this layer's build with
        this layout can have written: every field of its type and in its
        range, every file it names under the exact name the build gives it."""
        seeds, parts, groups = self.seeds, self.parts, len(self.groups)
        fresh = self._fresh_journal()
        check_keys(journal, set(fresh), {"checkpoint"})
        for key in ("seeds", "bounds", "groups", "sliced"):
            if not same(journal[key], fresh[key]):
                raise ScratchError(f"it was made for another layout ({key} {_shown(journal[key])})")
        done = [check_int(d, -1, groups - 1, "a slice's exit passes done")
                for d in check_list(journal["done"], parts, "done")]
        for crc in check_list(journal["crc32"], parts, "crc32"):
            check_int(crc, 0, CRC_MAX, "a slice's CRC-32")
        check_int(journal["exit_lookups"], 0, COUNT_MAX, "exit_lookups")
        check_seconds(journal["exit_seconds"], "exit_seconds")
        for mask in check_list(journal["seeds_at"], parts, "seeds_at"):
            check_int(mask, 0, (1 << (seeds + 1)) - 2, "a slice's stages with seeds")
            if mask & 1:
                raise ScratchError("a slice's stages with seeds holds stage 0")
        visits = check_int(journal["visits"], 0, COUNT_MAX, "visits")
        check_int(journal["stage_visits"], 0, visits, "stage_visits")
        check_int(journal["last"], -1, parts - 1, "last")
        for need in check_list(journal["need_seed"], parts, "need_seed"):
            if type(need) is not bool:
                raise ScratchError(f"need_seed holds {_shown(need)}, not true or false")
        stage = journal["stage"]
        exits_done = all(d == groups - 1 for d in done)
        if stage is not None:
            check_int(stage, 0, seeds, "stage")
            if not self.sliced or not exits_done:
                raise ScratchError("it records a stage in slices before the exits are done, or without them")
        files = check_list(journal["files"], parts, "files")
        checkpoint = journal.get("checkpoint")
        if checkpoint is not None:
            name, crc, at = check_list(checkpoint, 3, "checkpoint")
            check_int(at, 1, seeds - 1, "the checkpoint's stage")
            check_name(name, rf"awele-{seeds:02d}\.stage-{at:02d}\.lines", "the checkpoint's file")
            check_int(crc, 0, CRC_MAX, "the checkpoint's CRC-32")
            if self.sliced or not exits_done or any(f is not None for f in files):
                raise ScratchError("it records a checkpoint beside slice files, or before the exits are done")
        else:
            for part, name in enumerate(files):
                if done[part] < 0:
                    if name is not None:
                        raise ScratchError(f"it names a file ({_shown(name)}) for a slice not yet written")
                    continue
                exits = rf"awele-{seeds:02d}\.slice-{part}-of-{parts}\.group-{done[part]}\.lines"
                if stage is None:
                    check_name(name, exits, "a slice's file")
                    continue
                found = check_name(name, rf"{exits}|awele-{seeds:02d}\.slice-{part}-of-{parts}\.visit-{NUMBER}"
                                   rf"\.lines", "a slice's file")
                if found.group(1) is not None and int(found.group(1)) >= visits:
                    raise ScratchError(f"a slice's file {name} is of a visit not yet made")
        inbox = check_list(journal["inbox"], parts, "inbox")
        for part, entries in enumerate(inbox):
            if type(entries) is not list or (entries and stage is None):
                raise ScratchError(f"a slice's updates are {_shown(entries)}")
            for entry in entries:
                name, crc, count = check_list(entry, 3, "an entry of a slice's updates")
                match = check_name(name, rf"awele-{seeds:02d}\.to-{part}\.visit-{NUMBER}\.updates",
                                   "an updates file")
                if int(match.group(1)) >= visits:
                    raise ScratchError(f"the updates file {name} is of a visit not yet made")
                check_int(crc, 0, CRC_MAX, "an updates file's CRC-32")
                check_int(count, 1, COUNT_MAX, "an updates file's count")
        named = self._named(journal)
        if len(set(named)) != len(named):
            raise ScratchError("it names a file twice")

    @staticmethod
    def _named(journal: dict[str, Any]) -> list[str]:
        """The files a (checked) journal names."""
        named = [name for name in journal["files"] if name]
        named += [journal["checkpoint"][0]] if journal.get("checkpoint") else []
        return named + [entry[0] for inbox in journal["inbox"] for entry in inbox]

    def resume(self) -> dict[str, Any]:
        """The journal to go on from: the recorded one when it passes its
        checks (recorded_journal), else a fresh one, the layer's files set
        aside (removed) in one line that says why; files it does not name are
        removed (left-overs of a killed step). `resumed` says which."""
        if self.journal:
            return self.journal
        journal = recorded_journal(self.scratch, journal_path(self.scratch, self.seeds), self.seeds,
                                   self.check_journal, self._named, self._own_files)
        self.resumed = journal is not None
        self.journal = journal or self._fresh_journal()
        return self.journal

    def start_over(self, why: str) -> None:
        """Remove every file of this layer and forget its journal: the next
        solve() starts from the exits, and says so (`why`) in one line."""
        say(f"{why}: layer {self.seeds} starts over, its scratch files removed")
        self.clear()
        self.journal = {}
        self.resumed = False

    def scratch_bytes(self) -> int:
        """Bytes this layer's files take in the scratch folder now."""
        total = 0
        for name in self._own_files():
            with contextlib.suppress(FileNotFoundError):
                total += os.lstat(os.path.join(self.scratch, name)).st_size
        return total

    def clear(self) -> None:
        """Remove every scratch file of this layer (its table is written, or it starts over)."""
        remove_own(self.scratch, self._own_files(), self.seeds)

    # The build ----------------------------------------------------------------------

    def _lines(self, part: int) -> int:
        lo, hi = self.bounds[part], self.bounds[part + 1]
        return (hi - lo + layer_state.LINE_RANKS - 1) // layer_state.LINE_RANKS

    def _path(self, name: str) -> str:
        return os.path.join(self.scratch, name)

    def _read_slice(self, part: int, out: np.ndarray | None = None) -> np.ndarray:
        state = np.zeros(self._lines(part) * layer_state.LINE, dtype=np.int8) if out is None else out
        read_lines(self._path(self.journal["files"][part]), state, self.journal["crc32"][part])
        self.read += state.nbytes
        return state

    def _write_slice(self, part: int, state: np.ndarray, name: str) -> None:
        """Write slice `part` as `name` and record it in the journal (not yet committed)."""
        crc = write_lines(self._path(name), state, self.scratch, self.seeds)
        self.written += state.nbytes
        self.journal["files"][part] = name
        self.journal["crc32"][part] = crc

    def solve(self, progress: Callable[[str, float], None] | None = None) -> dict[str, Any]:
        """Exits through the scratch folder, then the stages, in memory or in
        slices. Returns the stats of LayerSolver.solve (or their like) with
        the disk traffic added."""
        journal = self.resume()
        self.started = time.perf_counter()
        self._exits()
        for m in self.store.layers():
            self.store.drop(m)
        exits_wall = time.perf_counter() - self.started
        if self.sliced:
            stats = self._sliced_stages(progress)
        else:
            solver = retrograde.LayerSolver(self.seeds, self.store, self.rows)
            resumed = journal.get("checkpoint")
            if resumed:
                read_lines(self._path(resumed[0]), solver.values, resumed[1])
                self.read += solver.values.nbytes
                if not stage_fits(stages.line_histogram(solver.values, solver.size), resumed[2]):
                    raise ScratchError(f"{self._path(resumed[0])} is not the state before stage {resumed[2]}, "
                                       "as its journal says")
            else:
                for part in range(self.parts):
                    first_line = self.bounds[part] // layer_state.LINE_RANKS
                    lines = self._lines(part)
                    self._read_slice(part, solver.values[first_line * layer_state.LINE:(first_line + lines)
                                                         * layer_state.LINE])
            solver.exits_done(len(self.groups), journal["exit_seconds"], journal["exit_lookups"])
            stats = solver.solve(progress, first_stage=resumed[2] if resumed else None,
                                 after_stage=lambda stage: self._checkpoint(solver, stage))
            stats["resumed_at_stage"] = resumed[2] if resumed else None
        stats.update(disk_bytes_written=self.written, disk_bytes_read=self.read, slices=self.parts,
                     exit_wall_seconds=exits_wall, sliced_stages=self.sliced)
        return stats

    def _exits(self) -> None:
        """Every slice through every group's exit pass, a step (one slice, one
        group) committed at a time."""
        journal, seeds, store = self.journal, self.seeds, self.store
        resident: tuple[int, np.ndarray] | None = None  # the slice still in memory from the last step
        last = len(self.groups) - 1
        for number, group in enumerate(self.groups):
            if all(done >= number for done in journal["done"]):
                continue
            for m in store.layers():
                if m not in group:
                    store.drop(m)
            tick = time.perf_counter()
            for m in group:
                if not store.loaded[m]:
                    self.load(m)
            self.load_seconds += time.perf_counter() - tick
            use = np.zeros(index.MAX_SEEDS + 1, dtype=np.bool_)
            use[group] = True
            order = range(self.parts) if number % 2 == 0 else range(self.parts - 1, -1, -1)
            for part in order:
                if journal["done"][part] >= number:
                    continue
                lo, hi = self.bounds[part], self.bounds[part + 1]
                if resident is not None and resident[0] == part:
                    state = resident[1]
                else:
                    # The last slice's memory goes before the next slice's comes: both
                    # names let go of it (with `state` still holding it, layer 36's
                    # exits held two slices, 4.3 GB over the budget, and were killed).
                    resident = None
                    state = np.zeros(0, dtype=np.int8)
                    if number > 0:
                        state = self._read_slice(part)
                    else:
                        state = np.zeros(self._lines(part) * layer_state.LINE, dtype=np.int8)
                tick = time.perf_counter()
                with layer_state.thread_count(1 if hi - lo < layer_state.SERIAL_SIZE else None):
                    lookups = exits.exit_pass(seeds, hi - lo, state, state.view(np.uint8), store.flat,
                                              store.starts, use, number == 0, self.rows, True, lo)
                journal["exit_seconds"] += time.perf_counter() - tick
                journal["exit_lookups"] += int(lookups)
                if number == last:
                    # The stages whose seeds this slice may hold: those of its pending codes.
                    codes = stages.line_histogram(state, hi - lo)
                    journal["seeds_at"][part] = sum(1 << k for k in range(1, seeds + 1) if codes[
                        np.int64(layer_state.pending(k)) & 0xFF] or codes[np.int64(layer_state.pending(-k)) & 0xFF])
                before = journal["files"][part]
                self._write_slice(part, state, os.path.basename(slice_path(self.scratch, seeds, part, self.parts,
                                                                           number)))
                journal["done"][part] = number
                self._commit(journal)
                if before:
                    os.remove(self._path(before))
                resident = (part, state)

    def _checkpoint(self, solver: retrograde.LayerSolver, stage: int) -> None:
        """After stage `stage` of stages in memory: at most every
        `checkpoint_interval` seconds, and only when the scratch folder has
        room for another copy of the working state, save it (one file), so
        that a kill resumes at stage - 1; the exits' files, or the previous
        checkpoint, are removed once it is recorded."""
        if stage <= 1 or time.perf_counter() - self.last_checkpoint < self.checkpoint_interval:
            return
        if free_bytes(self.scratch) < solver.values.nbytes + (1 << 26):
            return  # no room for two copies: a kill resumes from the last checkpoint there is
        journal = self.journal
        name = f"awele-{self.seeds:02d}.stage-{stage - 1:02d}.lines"
        crc = write_lines(self._path(name), solver.values, self.scratch, self.seeds)
        self.written += solver.values.nbytes
        replaced = [name for name in journal["files"] if name] + ([journal["checkpoint"][0]]
                                                                   if journal.get("checkpoint") else [])
        journal["checkpoint"] = [name, crc, stage - 1]
        journal["files"] = [None] * self.parts
        self._commit(journal)
        for old in replaced:
            os.remove(self._path(old))
        self.last_checkpoint = time.perf_counter()

    # Sliced stages ------------------------------------------------------------------

    def _sliced_stages(self, progress: Callable[[str, float], None] | None) -> dict[str, Any]:
        """The stages with one slice in memory at a time: a visit of a slice
        applies the updates the others sent it, seeds the stage there (once
        a stage) and propagates until nothing in it is FRESH, sending the
        updates for other slices to files; a stage ends when no slice has
        seeds or updates left. Each visit is one committed step."""
        journal, seeds = self.journal, self.seeds
        started = time.perf_counter()
        if journal["stage"] is None:
            journal["stage"] = seeds
            journal["need_seed"] = [bool(mask >> seeds & 1) for mask in journal["seeds_at"]]
            self._commit(journal)
        elif self.resumed:
            self._derive_seeds(journal["stage"])
        scratch = stages.make_scratch(numba.get_num_threads(), STAGE_OUTBOX)
        told = 0
        while journal["stage"] >= 1:
            stage = journal["stage"]
            while True:
                work = [part for part in range(self.parts) if journal["need_seed"][part] or journal["inbox"][part]]
                if not work:
                    break
                after = [part for part in work if part > journal["last"]]
                told += self._visit(after[0] if after else work[0], stage, scratch)
            journal["stage"] = stage - 1
            journal["need_seed"] = [bool(mask >> (stage - 1) & 1) for mask in journal["seeds_at"]]
            journal["last"] = -1
            self._commit(journal)
            if progress:
                progress(f"stage {stage}", (seeds - stage + 1) / seeds)
        return {"positions": index.layer_size(seeds), "exit_seconds": journal["exit_seconds"],
                "exit_passes": len(self.groups), "stage_seconds": time.perf_counter() - started,
                "seconds": journal["exit_seconds"] + time.perf_counter() - started,
                "working_bytes": max(self._lines(part) for part in range(self.parts)) * layer_state.LINE,
                "exit_lookups": journal["exit_lookups"], "predecessors_told": int(scratch.tally[:, 0].sum()),
                "stage_accesses": int(scratch.tally[:, 1].sum()), "stage_visits": journal["stage_visits"],
                "updates_sent": told}

    def _derive_seeds(self, stage: int) -> None:
        """On resuming sliced stages: which stages each slice has seeds for, and
        whether it needs seeding in this one, from its file rather than from
        the journal: the stages of the pending codes it holds (seeding a slice
        twice in a stage finds nothing the second time), and the stage
        checked against what the slices hold."""
        journal = self.journal
        for part in range(self.parts):
            codes = stages.line_histogram(self._read_slice(part), self.bounds[part + 1] - self.bounds[part])
            pending = layer_state.pending
            held = [k for k in range(1, self.seeds + 1)
                    if codes[np.int64(pending(k)) & 0xFF] or codes[np.int64(pending(-k)) & 0xFF]]
            journal["seeds_at"][part] = sum(1 << k for k in held)
            if stage in held:
                journal["need_seed"][part] = True
            if any(k > stage and codes[np.int64(layer_state.pending(k)) & 0xFF] for k in held) or any(
                    codes[v] or codes[-v & 0xFF] for v in range(1, stage)):
                raise ScratchError(f"{self._path(journal['files'][part])} does not hold a state of stage {stage}, "
                                   "as its journal says")

    def _visit(self, part: int, stage: int, scratch: Any) -> int:
        """One visit of slice `part` in stage `stage`; returns the updates it sent."""
        journal, seeds = self.journal, self.seeds
        lo, hi = self.bounds[part], self.bounds[part + 1]
        size = hi - lo
        state = self._read_slice(part)
        counts = state.view(np.uint8)
        blocks = (size + layer_state.BLOCK - 1) // layer_state.BLOCK
        flags = np.zeros(blocks, dtype=np.uint8)
        next_flags = np.zeros(blocks, dtype=np.uint8)
        small = size < layer_state.SERIAL_SIZE
        previous_chunk = numba.set_parallel_chunksize(0)  # the kernels share their work themselves (run_stages)
        try:
            for name, crc, count in journal["inbox"][part]:
                self._apply(name, crc, count, stage, lo, state, counts, flags)
            if journal["need_seed"][part]:
                with layer_state.thread_count(1 if small else None):
                    stages.seed_stage(stage, size, state, counts, state.view(np.uint64), flags, True)
            outgoing = _Outgoing(self, journal["visits"])
            while True:
                active = np.flatnonzero(flags)
                if active.shape[0] == 0:
                    break
                flags[active] = 0
                scratch.sent[:] = 0
                with layer_state.thread_count(1 if active.shape[0] <= layer_state.SERIAL_BLOCKS else None):
                    stages.propagate(stage, seeds, lo, state, counts, active, next_flags, self.rows, scratch, size,
                                     index.FILE_ORDER)
                outgoing.send(np.concatenate([scratch.outbox[t, : scratch.sent[t]]
                                              for t in range(scratch.sent.shape[0])]))
                flags, next_flags = next_flags, flags
        finally:
            numba.set_parallel_chunksize(previous_chunk)
        sent = outgoing.close()
        consumed = [entry[0] for entry in journal["inbox"][part]]
        before = journal["files"][part]
        self._write_slice(part, state, os.path.basename(visit_path(self.scratch, seeds, part, self.parts,
                                                                   journal["visits"])))
        for target, entry in sent.items():
            journal["inbox"][target].append(entry)
        journal["inbox"][part] = []
        journal["need_seed"][part] = False
        journal["visits"] += 1
        journal["stage_visits"] += 1
        journal["last"] = part
        self._commit(journal)
        for name in [*consumed, before]:
            os.remove(self._path(name))
        return sum(entry[2] for entry in sent.values())

    def _apply(self, name: str, crc: int, count: int, stage: int, lo: int, state: np.ndarray, counts: np.ndarray,
               flags: np.ndarray) -> None:
        """Apply the `count` updates of file `name` to the slice, a chunk at a
        time: the whole file's CRC-32 checked first, then each chunk checked
        to hold only ranks of this slice before the kernel sees it (a file
        changed between the two reads, or damaged the same way twice, cannot
        make the kernel write outside the slice)."""
        path = self._path(name)
        hi = self.bounds[self.bounds.index(lo) + 1]
        descriptor = open_regular(path)
        buffer = np.empty(min(count, INBOX_CHUNK), dtype=np.int64)

        def pieces() -> Iterable[np.ndarray]:
            for first in range(0, count, INBOX_CHUNK):
                piece = buffer[: min(count, first + INBOX_CHUNK) - first]
                view = memoryview(piece.view(np.uint8))  # type: ignore[arg-type]  # an ndarray is a buffer
                done = 0
                while done < len(view):
                    got = os.preadv(descriptor, [view[done:]], 8 * first + done)
                    if got == 0:
                        raise ScratchError(f"{path} ended early")
                    done += got
                yield piece

        try:
            if os.fstat(descriptor).st_size != 8 * count:
                raise ScratchError(f"{path} has {os.fstat(descriptor).st_size} bytes, not {8 * count}")
            found = 0
            for piece in pieces():
                found = zlib.crc32(memoryview(piece.view(np.uint8)), found)  # type: ignore[arg-type]
            if found != crc:
                raise ScratchError(f"{path} does not match its CRC-32: damaged")
            for piece in pieces():
                if piece.shape[0] and (int(piece.min()) < 2 * lo or int(piece.max()) >= 2 * hi):
                    raise ScratchError(f"{path} holds ranks outside slice {lo}..{hi}: damaged")
                with layer_state.thread_count(1 if piece.shape[0] < layer_state.RANK_CHUNK else None):
                    stages.tell_received(stage, lo, piece, state, counts, flags, True)
            os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
        except OSError as error:
            raise ScratchError(f"cannot read {path}: {error.strerror}") from None
        finally:
            os.close(descriptor)
        self.read += 16 * count

    def values(self) -> Any:
        """The layer's values for tables.write_table, and their histogram: the
        store's slot (stages in memory), or read from the slice files a
        window at a time, endless play settled to 0 (sliced stages)."""
        if not self.sliced:
            return self.store.layer(self.seeds), None
        source = _SlicedValues(self)
        return source, source.histogram()


class _Outgoing:
    """The updates a visit sends to other slices: one file a target slice,
    appended to as the sweeps go, synced and named in the journal once the
    visit is committed."""

    def __init__(self, layer: DiskLayer, visit: int) -> None:
        self.layer = layer
        self.visit = visit
        self.files: dict[int, list[Any]] = {}  # target: [descriptor, crc, count]

    def send(self, updates: np.ndarray) -> None:
        if updates.shape[0] == 0:
            return
        layer = self.layer
        owners = np.searchsorted(np.asarray(layer.bounds), updates >> 1, side="right") - 1
        order = np.argsort(owners, kind="stable")
        updates, owners = updates[order], owners[order]
        cuts = np.flatnonzero(np.diff(owners)) + 1
        for target, piece in zip(owners[np.concatenate(([0], cuts))].tolist(), np.split(updates, cuts)):
            entry = self.files.get(target)
            path = layer._path(updates_name(layer.seeds, target, self.visit))
            try:
                if entry is None:
                    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                                         0o644)
                    entry = self.files[target] = [descriptor, 0, 0]
                view = memoryview(np.ascontiguousarray(piece).view(np.uint8))  # type: ignore[arg-type]
                done = 0
                while done < len(view):
                    done += os.write(entry[0], view[done:])
            except OSError as error:
                self.abandon()
                raise _full(error, layer.scratch, layer.seeds) from None
            entry[1] = zlib.crc32(view, entry[1])
            entry[2] += piece.shape[0]
            layer.written += len(view)

    def close(self) -> dict[int, list[Any]]:
        """Sync and close the files; returns {target: [name, crc, count]}."""
        sent = {}
        try:
            for target, (descriptor, crc, count) in self.files.items():
                os.fsync(descriptor)
                os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
                sent[target] = [updates_name(self.layer.seeds, target, self.visit), crc, count]
        except OSError as error:
            self.abandon()
            raise _full(error, self.layer.scratch, self.layer.seeds) from None
        for descriptor, _, _ in self.files.values():
            os.close(descriptor)
        self.files = {}
        return sent

    def abandon(self) -> None:
        for target, (descriptor, _, _) in self.files.items():
            os.close(descriptor)
            with contextlib.suppress(OSError):
                os.remove(self.layer._path(updates_name(self.layer.seeds, target, self.visit)))
        self.files = {}


class _SlicedValues:
    """Layer values read from the slice files of sliced stages, for
    tables.write_table: values[start:stop] reads the lines of those ranks
    and settles endless play (a pending code) to 0."""

    def __init__(self, layer: DiskLayer) -> None:
        self.layer = layer
        self.shape = (index.layer_size(layer.seeds),)
        self.dtype = np.dtype(np.int8)

    def histogram(self) -> np.ndarray:
        """The values' histogram, each slice file read whole and its CRC-32 checked."""
        layer = self.layer
        counts = np.zeros(256, dtype=np.int64)
        for part in range(layer.parts):
            state = layer._read_slice(part)
            size = layer.bounds[part + 1] - layer.bounds[part]
            counts += stages.line_histogram(state, size)
        seeds = layer.seeds
        settled = [counts[d & 0xFF] for d in range(-seeds, seeds + 1)]
        settled[seeds] += sum(int(counts[code & 0xFF]) for code in range(-128, 128) if not -seeds <= code <= seeds)
        return np.array(settled, dtype=np.int64)

    def __getitem__(self, window: slice) -> np.ndarray:
        start, stop, _ = window.indices(self.shape[0])
        layer = self.layer
        out = np.empty(stop - start, dtype=np.int8)
        for part in range(layer.parts):
            lo, hi = layer.bounds[part], layer.bounds[part + 1]
            first, last = max(lo, start), min(hi, stop)
            if first >= last:
                continue
            line_first = (first - lo) // layer_state.LINE_RANKS
            line_last = (last - lo - 1) // layer_state.LINE_RANKS + 1
            cells = np.empty((line_last - line_first) * layer_state.LINE, dtype=np.int8)
            path = layer._path(layer.journal["files"][part])
            descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            try:
                view = memoryview(cells.view(np.uint8))  # type: ignore[arg-type]  # an ndarray is a buffer
                done = 0
                while done < len(view):
                    got = os.preadv(descriptor, [view[done:]], line_first * layer_state.LINE + done)
                    if got == 0:
                        raise BuildError(f"{path} ended early")
                    done += got
            finally:
                os.close(descriptor)
            codes = cells.reshape(-1, layer_state.LINE)[:, : layer_state.LINE_RANKS].reshape(-1)
            codes = codes[first - lo - line_first * layer_state.LINE_RANKS :][: last - first]
            out[first - start : last - start] = np.where((codes >= -layer.seeds) & (codes <= layer.seeds), codes, 0)
        return out


def free_bytes(scratch: str) -> int:
    """Bytes free for this user in the file system of folder `scratch`."""
    return shutil.disk_usage(scratch).free
