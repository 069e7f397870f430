"""The lean stages' scratch files (solver.lean): their names, the checksum
they are read and written with, and the files read and written in order
(StreamReader) or as a queue (RankQueue).

Files are created exclusively (never through a link), checked by a checksum
as they are read (not zlib's CRC-32: it was the stages' bottleneck) and
removed once used; a full disk is one line (BuildError), the last step kept.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from collections import deque

import numpy as np
from numba import njit

from . import tables
from .disk import own_files as folder_files
from .disk import remove_own
from .errors import BuildError, ScratchError

WEIGHT = np.uint64(0x9E3779B97F4A7C15)  # an odd multiplier: word j of a file weighs (j * WEIGHT) | 1
MIX = np.uint64(0xBF58476D1CE4E5B9)  # splitmix64's multiplier


@njit(cache=True, inline="always")
def _mix(word: np.uint64, place: np.uint64) -> np.uint64:
    """Word `word` at word `place` of a file, mixed (splitmix64's finaliser
    over the word times an odd weight of its place): a change of any bit of
    the word changes about half the bits of the term."""
    term = word * ((place * WEIGHT) | np.uint64(1)) + place
    term ^= term >> np.uint64(31)
    term *= MIX
    term ^= term >> np.uint64(29)
    return term


@njit(cache=True, nogil=True)
def checksum(data: np.ndarray, offset: int) -> np.uint64:
    """The checksum of bytes `data` lying at byte `offset` (a multiple of 8)
    of a file: the sum, wrapping at 2**64, of each 8-byte word mixed with
    its place (_mix). Files are summed a piece at a time, in any pieces
    (the sums add up), inside a kernel at several GB/s, where zlib's CRC-32
    ran at 0.7 GB/s here: the stages pass their state file once a stage.
    The mixing spreads every bit of a word over the whole term: a plain
    weighted sum let two changes of a word's top bit cancel (2**63 twice),
    and a pass that rewrote two such bytes in one block looked unchanged."""
    words = data.shape[0] // 8
    view = data[: words * 8].view(np.uint64)
    first = np.uint64(offset // 8)
    total = np.uint64(0)
    for j in range(words):
        total += _mix(view[j], first + np.uint64(j))
    if data.shape[0] > words * 8:
        tail = np.uint64(0)
        for i in range(data.shape[0] - words * 8):
            tail |= np.uint64(np.uint8(data[words * 8 + i])) << np.uint64(8 * i)  # int8 bytes are not sign-extended
        total += _mix(tail, first + np.uint64(words))
    return total


def piece_sum(view: memoryview, offset: int) -> int:
    """The checksum of the bytes `view` lying at byte `offset` (a multiple of 8) of a file."""
    if offset % 8:
        raise ValueError(f"a piece of a file is summed from a multiple of 8 bytes, not {offset}")
    return int(checksum(np.frombuffer(view, dtype=np.uint8), offset))


def write_error(error: OSError, scratch: str, seeds: int) -> BuildError:
    """The one-line error of a failed write in the scratch folder: a full disk says so, the layers built kept."""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return BuildError(f"the scratch folder {scratch} is full (layer {seeds}, lean stages); the layers built are "
                          "kept: free some space (or give another --scratch) and build again")
    return BuildError(f"cannot write in the scratch folder {scratch}: {error.strerror}")


def create_exclusive(path: str, scratch: str, seeds: int) -> int:
    """Create `path` for reading and writing, exclusively and never through a link (write_error if not)."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise write_error(error, scratch, seeds) from None


def write_all(descriptor: int, data: np.ndarray, offset: int | None = None) -> int:
    """Write `data` at `offset` (or where the file is); return its checksum as a file of its own."""
    view = memoryview(np.ascontiguousarray(data).view(np.uint8))  # type: ignore[arg-type]  # a buffer
    done = 0
    while done < len(view):
        if offset is None:
            done += os.write(descriptor, view[done:])
        else:
            done += os.pwrite(descriptor, view[done:], offset + done)
    return piece_sum(view, 0)


def write_at(descriptor: int, data: np.ndarray, offset: int) -> None:
    """Write all of `data` at byte `offset` of the file (OSError as os.pwrite raises it; the tests make it fail)."""
    view = memoryview(np.ascontiguousarray(data).view(np.uint8))  # type: ignore[arg-type]  # a buffer
    done = 0
    while done < len(view):
        done += os.pwrite(descriptor, view[done:], offset + done)


class StreamReader:
    """A scratch file read in order, a piece at a time; its size checked when
    opened and its checksum once read to the end (finish), as disk.read_lines
    checks a whole one's CRC-32. What was read before a damage is found is used only
    by work that is not kept: the step that reads it raises before it ends."""

    def __init__(self, path: str, size: int, crc: int) -> None:
        self.path, self.crc = path, crc
        try:
            self.descriptor: int | None = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as error:
            raise ScratchError(f"cannot read {path}: {error.strerror}") from None
        if os.fstat(self.descriptor).st_size != size:
            found = os.fstat(self.descriptor).st_size
            self.close()
            raise ScratchError(f"{path} has {found} bytes, not {size}")
        self.found = 0
        self.offset = 0

    def read_into(self, out: np.ndarray) -> None:
        assert self.descriptor is not None, "read after close"
        view = memoryview(out.view(np.uint8))  # type: ignore[arg-type]  # an ndarray is a buffer
        done = 0
        try:
            while done < len(view):
                got = os.readv(self.descriptor, [view[done:]])
                if got == 0:
                    raise ScratchError(f"{self.path} ended early")
                done += got
        except OSError as error:
            raise ScratchError(f"cannot read {self.path}: {error.strerror}") from None
        self.found = (self.found + piece_sum(view, self.offset)) & 0xFFFFFFFFFFFFFFFF
        self.offset += len(view)

    def finish(self) -> None:
        """Close; raise ScratchError if what was read does not match the checksum."""
        self.close()
        if self.found != self.crc:
            raise ScratchError(f"{self.path} does not match its checksum: damaged")

    def close(self) -> None:
        if self.descriptor is not None:
            os.close(self.descriptor)
            self.descriptor = None


class RankQueue:
    """Ranks resolved this stage and not yet told of, beyond what the stack
    holds: one file, appended to and read from its start in segments of at
    most `segment` ranks, each with its checksum. Only this stage's work
    depends on it (a resumed layer rebuilds its stage's seeds from the state
    file), so it is not synced nor named in the journal; once read to its
    end it is emptied."""

    def __init__(self, path: str, scratch: str, seeds: int, segment: int) -> None:
        self.path, self.scratch, self.seeds, self.segment = path, scratch, seeds, segment
        self.descriptor = create_exclusive(path, scratch, seeds)
        self.segments: deque[tuple[int, int, int]] = deque()  # (offset, count, checksum)
        self.end = 0
        self.peak = 0  # the file's largest size
        self.written = 0

    def push(self, ranks: np.ndarray) -> None:
        """Append `ranks`, in segments of at most `segment`."""
        for first in range(0, ranks.shape[0], self.segment):
            piece = ranks[first : first + self.segment]
            try:
                crc = write_all(self.descriptor, piece, self.end)
            except OSError as error:
                raise write_error(error, self.scratch, self.seeds) from None
            self.segments.append((self.end, piece.shape[0], crc))
            self.end += piece.nbytes
            self.written += piece.nbytes
            self.peak = max(self.peak, self.end)

    def pop(self, most: int) -> np.ndarray | None:
        """The oldest segments, as many as `most` ranks hold (one at least),
        or None when the queue is empty."""
        if not self.segments:
            return None
        taken = [self.segments.popleft()]
        while self.segments and sum(entry[1] for entry in taken) + self.segments[0][1] <= most:
            taken.append(self.segments.popleft())
        out = np.empty(sum(entry[1] for entry in taken), dtype=np.int64)
        at = 0
        for offset, count, crc in taken:
            pread_into(self.descriptor, out[at : at + count], offset, self.path)
            if piece_sum(memoryview(out[at : at + count].view(np.uint8)), 0) != crc:  # type: ignore[arg-type]  # a buffer
                raise ScratchError(f"{self.path} does not match its checksum: damaged")
            at += count
        if not self.segments:
            os.ftruncate(self.descriptor, 0)
            self.end = 0
        return out

    def close(self) -> None:
        os.close(self.descriptor)
        with contextlib.suppress(OSError):
            os.remove(self.path)


# Names -----------------------------------------------------------------------------


def journal_path(scratch: str, seeds: int) -> str:
    """The lean stages' journal of layer `seeds` in `scratch`."""
    return os.path.join(scratch, f"awele-{seeds:02d}.lean.json")


def state_name(seeds: int) -> str:
    """The state file of layer `seeds`: a byte a position (a pending exit code, or the value)."""
    return f"awele-{seeds:02d}.lean-state.state"


def counts_name(seeds: int) -> str:
    """The counts file of layer `seeds`: the codes before the first stage, made by the first exit pass."""
    return f"awele-{seeds:02d}.lean-counts.counts"


def codes_name(seeds: int) -> str:
    """The codes file of layer `seeds`: its codes as a stage began (a checkpoint
    the stages take now and then, so that a kill does not make them count
    every pending position's children again)."""
    return f"awele-{seeds:02d}.lean-codes.codes"


def queue_name(seeds: int) -> str:
    """The queue file of layer `seeds`: ranks waiting to be told of."""
    return f"awele-{seeds:02d}.lean-queue.queue"


def layer_pattern(seeds: int) -> re.Pattern[str]:
    """Every name the lean stages of layer `seeds` give a file in the scratch folder."""
    return re.compile(rf"awele-{seeds:02d}\.lean(\.json|-state\.state|-counts\.counts|-codes\.codes|-queue\.queue"
                      rf"|-asks-\d+\.asks)"
                      rf"({re.escape(tables.TEMPORARY_SUFFIX)}-\d+)?")


def own_files(scratch: str, seeds: int) -> list[str]:
    """The lean stages' files of layer `seeds` in `scratch` (names)."""
    return folder_files(scratch, layer_pattern(seeds))


def remove_layer_files(scratch: str, seeds: int) -> list[str]:
    """Remove (and return) the lean files of layer `seeds` in `scratch`: a
    link as a link; a folder planted at such a name stops the build."""
    names = own_files(scratch, seeds)
    remove_own(scratch, names, seeds)
    return names


def read_window(path: str, start: int, stop: int) -> np.ndarray:
    """Bytes start..stop of the file `path` as int8 (never through a link; ScratchError if it cannot)."""
    out = np.empty(max(0, stop - start), dtype=np.int8)
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        raise ScratchError(f"cannot read {path}: {error.strerror}") from None
    try:
        pread_into(descriptor, out, start, path)
    finally:
        os.close(descriptor)
    return out


def pread_into(descriptor: int, out: np.ndarray, offset: int, path: str) -> None:
    """Fill `out` with the bytes of `path` (open as `descriptor`) from `offset` (ScratchError if it cannot)."""
    view = memoryview(out.view(np.uint8))  # type: ignore[arg-type]  # an ndarray is a buffer
    done = 0
    try:
        while done < len(view):
            got = os.preadv(descriptor, [view[done:]], offset + done)
            if got == 0:
                raise ScratchError(f"{path} ended early")
            done += got
    except OSError as error:
        raise ScratchError(f"cannot read {path}: {error.strerror}") from None

