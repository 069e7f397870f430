"""Streamed exits: a layer's captures answered with no smaller layer resident.

The exits of layer n (its captures, into layers n-15..n-2) look up their
children's values at random, so the resident exits (exits.exit_pass, a group
of smaller layers at a time) need the largest smaller layer whole in memory:
layer 46, for 48, is 137 GB at a byte a position. The streamed exits need
none of it. The layer is taken a *slice* of ranks at a time (its values and
count nibbles in memory, 1.5 bytes a position of the slice):

1. **Ask.** One pass over the slice (exits.exit_requests, plain layout)
   writes what the first exit pass writes (each position's pending code:
   its terminal value or NO_EXIT; its count of non-capturing children) and
   turns each capture into a *request*: the child's layer and rank, and the
   capturing position's offset in the slice. The requests of a batch of
   ranks are sorted by *bucket* (a child layer and a window of its ranks:
   `window` ranks, the last one shorter) with a counting sort
   (distribute), and each bucket's share is appended to that bucket's file
   in the scratch folder: an int64 a request, the child's offset in its
   window << OWNER_BITS | the parent's offset in the slice. The captured
   seeds need no room: they are n less the child's layer.
2. **Answer.** For each child layer in turn and each of its windows that
   has requests, in rank order: the window's values are read from the
   child's table (`read(m, start, stop)`: sequential, every chunk checked),
   the bucket file is read in order a piece at a time (checked against its
   checksum once read) and each request raises its parent's pending code
   in the slice to captured - d(child) where that is better (answer, as
   exits.raise_exits does). The bucket file is then removed (in the lean
   stages, once the next step is recorded).

So the only random accesses are to the slice's values and to a window,
both in memory, and disk is read in order (each child window once a slice,
each bucket file once). Memory is the slice (1.5 bytes a position), one
window (a byte a position), the batch's requests and one piece of a bucket
file: plan.streamed_exit_bytes; the plan cuts the layer into the fewest
slices whose memory, and whose requests in the scratch folder
(plan.LOOKUPS_A_POSITION a position, 8 bytes each), fit. Each slice reads
its child windows again: the price of the slices is reading the smaller
layers' files once a slice.

The values given are those of the resident exits, bit for bit: each
position's pending code is the best of captured - d(child) over its
captures, whatever order the captures are answered in (tests/test_lean_exits.py
checks it on layers up to 14, in 1 to 5 slices and windows of a few
thousand ranks).

The lean stages take the slices in steps their journal records
(StreamedExits, below): a slice asked, each smaller layer's answers to it,
a slice done. Raising is idempotent, so a step cut short by a kill is
done again over what it half wrote and gives what it would have; a kill
loses at most one smaller layer's answers to one slice.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from numba import njit

from . import exits, index, layer_state
from .disk import check_int, check_keys, check_list, same
from .errors import ScratchError
from .layer_state import pending, pending_exit
from .lean_files import StreamReader, checksum, create_exclusive, piece_sum, pread_into, write_at, write_error
from .rules import ROW

OWNER_BITS = 37  # a request: the child's offset in its window << OWNER_BITS | the parent's offset in its slice
MAX_SLICE = 1 << OWNER_BITS  # ranks of a slice at most
MAX_WINDOW = 1 << (63 - OWNER_BITS)  # ranks of a window at most (the request an int64 >= 0)
OWNER_MASK = (1 << OWNER_BITS) - 1
BATCH = 1 << 18  # ranks asked at a time: their requests (6 a rank at most) sorted into buckets together
PIECE = 1 << 20  # requests of a bucket file read at a time
REQUEST_BYTES = 8
SUM_MAX = (1 << 64) - 1  # a checksum (lean_files.checksum) is a 64-bit word
ASKED_BYTES = ROW * (8 + 1 + 8 + 8)  # bytes the ask holds a rank of its batch: keys, gains, owners, sorted requests


def batch_bytes(batch: int = BATCH) -> int:
    """Bytes the ask holds for a batch of ranks: exit_requests' keys, gains and
    owners (6 a rank), the requests sorted into buckets, and a piece of a bucket file read."""
    return batch * ASKED_BYTES + PIECE * REQUEST_BYTES


def bucket_name(seeds: int, bucket: int) -> str:
    """The file of a slice's requests into bucket `bucket` (lean_files.layer_pattern matches it)."""
    return f"awele-{seeds:02d}.lean-asks-{bucket}.asks"


def buckets(seeds: int, window: int) -> np.ndarray:
    """first[m]: the first bucket of child layer m (windows of `window` ranks,
    child layers in exit_layers' order); first[MAX_SEEDS + 1] the buckets in all."""
    first = np.zeros(index.MAX_SEEDS + 2, dtype=np.int64)
    total = 0
    for m in range(index.MAX_SEEDS + 1):
        first[m] = total
        if m in layer_state.exit_layers(seeds):
            total += -(-index.layer_size(m) // window)
    first[index.MAX_SEEDS + 1] = total
    return first


@njit(cache=True)
def distribute(keys: np.ndarray, owners: np.ndarray, asked: np.ndarray, stride: int, first: np.ndarray,
               window: int, out: np.ndarray, offsets: np.ndarray) -> None:
    """Sort the requests exit_requests left (block b's asked[b] from index
    b * stride: keys child layer << RANK_BITS | child rank, owners the
    parent's offset in the slice) into `out` by bucket (first[m] + child
    rank // window), a counting sort; offsets[k]..offsets[k + 1] are bucket
    k's, each the child's offset in its window << OWNER_BITS | the owner."""
    offsets[:] = 0
    mask = (np.int64(1) << exits.RANK_BITS) - 1
    for block in range(asked.shape[0]):
        for j in range(block * stride, block * stride + asked[block]):
            child = keys[j] & mask
            offsets[first[keys[j] >> exits.RANK_BITS] + child // window + 1] += 1
    for k in range(1, offsets.shape[0]):
        offsets[k] += offsets[k - 1]
    at = offsets[:-1].copy()
    for block in range(asked.shape[0]):
        for j in range(block * stride, block * stride + asked[block]):
            child = keys[j] & mask
            bucket = first[keys[j] >> exits.RANK_BITS] + child // window
            out[at[bucket]] = ((child % window) << OWNER_BITS) | owners[j]
            at[bucket] += 1


@njit(cache=True)
def answer(requests: np.ndarray, window_values: np.ndarray, captured: int, values: np.ndarray) -> None:
    """Raise each requesting position's pending code in `values` (the slice)
    to captured - d(child), the child's value being window_values[its offset],
    where that is better (as exits.raise_exits). A request out of the slice
    or the window (a damaged bucket file, refused by its checksum once read)
    is passed over, never followed."""
    for j in range(requests.shape[0]):
        request = requests[j]
        owner = request & OWNER_MASK
        offset = request >> OWNER_BITS
        if owner >= values.shape[0] or not 0 <= offset < window_values.shape[0]:
            continue
        exit = captured - np.int64(window_values[offset])
        if exit > pending_exit(values[owner]):
            values[owner] = pending(exit)


def _answer(requests: np.ndarray, window_values: np.ndarray, captured: int, values: np.ndarray) -> None:
    """answer(), its arguments by name (functools.partial gives them so)."""
    answer(requests, window_values, captured, values)


class Buckets:
    """A slice's bucket files: appended a batch at a time (created
    exclusively, never through a link; reopened to append), each one's size
    and checksum kept (the checksum adds up over pieces), read back in order
    and checked, then removed (or kept, while the journal names them:
    StreamedExits). remove() removes what is left."""

    def __init__(self, scratch: str, seeds: int, count: int) -> None:
        self.scratch, self.seeds = scratch, seeds
        self.sizes = np.zeros(count, dtype=np.int64)
        self.sums = [0] * count
        self.written = self.taken = 0  # bytes appended, bytes read back
        self.peak = 0  # the most bytes of requests in the scratch folder at once
        self.held = 0

    def path(self, bucket: int) -> str:
        return os.path.join(self.scratch, bucket_name(self.seeds, bucket))

    def append(self, bucket: int, requests: np.ndarray) -> None:
        """Append `requests` (int64) to bucket `bucket`'s file."""
        path = self.path(bucket)
        if self.sizes[bucket] == 0:
            descriptor = create_exclusive(path, self.scratch, self.seeds)
        else:
            try:
                descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError as error:
                raise ScratchError(f"cannot append to {path}: {error.strerror}") from None
        view = memoryview(requests.view(np.uint8))  # type: ignore[arg-type]  # an ndarray is a buffer
        try:
            done = 0
            while done < len(view):
                done += os.write(descriptor, view[done:])
        except OSError as error:
            raise write_error(error, self.scratch, self.seeds) from None
        finally:
            os.close(descriptor)
        self.sums[bucket] = (self.sums[bucket] + piece_sum(view, int(self.sizes[bucket]))) & SUM_MAX
        self.sizes[bucket] += len(view)
        self.written += len(view)
        self.held += len(view)
        self.peak = max(self.peak, self.held)

    def read(self, bucket: int, each: Callable[[np.ndarray], None], buffer: np.ndarray, keep: bool = False) -> None:
        """Call each(piece) for the requests of bucket `bucket`, in order, a
        piece of `buffer`'s length at a time; the file is checked against its
        checksum once read (ScratchError, before its answers are kept) and
        removed, unless `keep`."""
        size = int(self.sizes[bucket])
        reader = StreamReader(self.path(bucket), size, self.sums[bucket])
        try:
            for first in range(0, size // REQUEST_BYTES, buffer.shape[0]):
                piece = buffer[: min(buffer.shape[0], size // REQUEST_BYTES - first)]
                reader.read_into(piece)
                each(piece)
            reader.finish()
        finally:
            reader.close()
        self.taken += size
        if not keep:
            self.drop([bucket])

    def recorded(self, start: int = 0) -> list[list[int]]:
        """[bucket, bytes, checksum] of each bucket from `start` that has a file (as the journal names them)."""
        return [[int(bucket), int(self.sizes[bucket]), self.sums[bucket]]
                for bucket in np.flatnonzero(self.sizes[start:]) + start]

    def restore(self, entries: list[list[int]]) -> None:
        """The buckets a journal recorded (recorded()), their files left as they are."""
        for bucket, size, total in entries:
            self.sizes[bucket], self.sums[bucket] = size, total
            self.held += size
        self.peak = max(self.peak, self.held)

    def drop(self, which: Iterable[int]) -> None:
        """Remove the files of buckets `which` (those that have one)."""
        for bucket in which:
            if self.sizes[bucket]:
                with contextlib.suppress(FileNotFoundError):
                    os.remove(self.path(int(bucket)))
                self.held -= int(self.sizes[bucket])
                self.sizes[bucket] = 0

    def remove(self) -> None:
        self.drop(np.flatnonzero(self.sizes).tolist())


def ask(seeds: int, lo: int, values: np.ndarray, counts: np.ndarray, rows: tuple[np.ndarray, ...], files: Buckets,
        first: np.ndarray, window: int, batch: int, threads: int | None) -> None:
    """The ask of ranks lo..lo + len(values) - 1 (the module's docstring, 1):
    `values` and `counts` get what the first exit pass writes, `files` the
    requests, a batch of ranks at a time (first: buckets())."""
    stride = layer_state.BLOCK * ROW
    size = values.shape[0]
    blocks = -(-min(batch, max(size, 1)) // layer_state.BLOCK)
    keys = np.empty(blocks * stride, dtype=np.int64)
    gains = np.empty(blocks * stride, dtype=np.int8)
    owners = np.empty(blocks * stride, dtype=np.int64)
    asked = np.zeros(blocks, dtype=np.int64)
    out = np.empty(blocks * stride, dtype=np.int64)
    offsets = np.zeros(int(first[-1]) + 1, dtype=np.int64)
    for start in range(lo, lo + size, batch):
        stop = min(lo + size, start + batch)
        asked[:] = 0
        with layer_state.thread_count(1 if stop - start < layer_state.SERIAL_SIZE else threads):
            exits.exit_requests(seeds, lo, start, stop, values, counts, rows, keys, gains, owners, asked,
                                index.FILE_ORDER, False)
        distribute(keys, owners, asked[: -(-(stop - start) // layer_state.BLOCK)], stride, first, window, out,
                   offsets)
        for filled in np.flatnonzero(np.diff(offsets)):
            files.append(int(filled), out[offsets[filled] : offsets[filled + 1]])


def answer_layer(seeds: int, m: int, values: np.ndarray, files: Buckets, first: np.ndarray, window: int,
                 read: Callable[[int, int, int], np.ndarray], buffer: np.ndarray, keep: bool = False) -> bool:
    """The answers of smaller layer m (the module's docstring, 2) to the
    requests `files` hold, raised into `values`, its windows read in rank
    order; its bucket files kept with `keep`. Returns whether it had any."""
    child = index.layer_size(m)
    asked = False
    for bucket in range(int(first[m]), int(first[m]) + -(-child // window)):
        if files.sizes[bucket] == 0:
            continue
        start = (bucket - int(first[m])) * window
        files.read(bucket, functools.partial(_answer, window_values=read(m, start, min(child, start + window)),
                                             captured=seeds - m, values=values), buffer, keep)
        asked = True
    return asked


def _check_slice(values: np.ndarray, window: int, lo: int, batch: int) -> None:
    size = values.shape[0]
    if size > MAX_SLICE or not 0 < window <= MAX_WINDOW or lo % layer_state.BLOCK or batch % layer_state.BLOCK:
        raise ValueError(f"a slice of at most {MAX_SLICE} ranks, a window of 1..{MAX_WINDOW} and a batch and slice "
                         f"start of whole blocks, not {size}, {window}, {batch}, {lo}")


def slice_exits(seeds: int, lo: int, values: np.ndarray, counts: np.ndarray, rows: tuple[np.ndarray, ...],
                scratch: str, read: Callable[[int, int, int], np.ndarray], window: int,
                batch: int = BATCH, piece: int = PIECE, threads: int | None = 1) -> dict[str, int]:
    """The exits of ranks lo..lo + len(values) - 1 of layer `seeds` streamed
    (the module's docstring), in one go, nothing recorded: `values` (zeros)
    get the pending codes the resident exits give them and `counts` (zeros,
    a nibble a rank) the counts of non-capturing children. `read(m, start,
    stop)` gives ranks start..stop-1 of smaller layer m (checked). `lo` and
    `batch` are multiples of layer_state.BLOCK. The ask runs on `threads`
    threads (None: as numba has them): one by default, as the lean stages'
    passes, since a parallel call a batch waits for threads whose cores
    other work holds (layer 20 here under a load of 7: 22 s on two threads
    in batches of 256 Ki ranks, 9.6 s in batches of 2 Mi, 4.4 s on one).
    Returns lookups (the requests answered), bytes written to and read from
    the scratch folder and the peak of the requests there. The lean stages
    take a slice in recorded steps instead (StreamedExits)."""
    _check_slice(values, window, lo, batch)
    first = buckets(seeds, window)
    files = Buckets(scratch, seeds, int(first[-1]))
    try:
        ask(seeds, lo, values, counts, rows, files, first, window, batch, threads)
        buffer = np.empty(piece, dtype=np.int64)
        for m in layer_state.exit_layers(seeds):
            answer_layer(seeds, m, values, files, first, window, read, buffer)
    finally:
        files.remove()
    return {"lookups": files.written // REQUEST_BYTES, "written": files.written, "read": files.written,
            "peak": files.peak}


# Recorded steps --------------------------------------------------------------------


def fresh_progress(layout: dict[str, int]) -> dict[str, Any]:
    """The journal's record of streamed exits not begun (`layout`: plan.streamed_layout's)."""
    return {"layout": [layout["slice"], layout["window"]], "done": 0, "state": 0, "counts": 0, "slice": None}


def check_progress(progress: Any, seeds: int, layout: dict[str, int]) -> None:
    """ScratchError (why) unless `progress` is a record StreamedExits of layer
    `seeds` with `layout` can have written: every field of its type and in its
    range, the buckets in order, each one of a smaller layer not yet answered
    (or the one last answered) and no larger than the slice's requests can be."""
    check_keys(progress, {"layout", "done", "state", "counts", "slice"})
    if not same(progress["layout"], [layout["slice"], layout["window"]]):
        raise ScratchError("it was made for another layout (the streamed exits' slices)")
    size = index.layer_size(seeds)
    slices = -(-size // layout["slice"])
    done = check_int(progress["done"], 0, slices, "the slices done")
    check_int(progress["state"], 0, SUM_MAX, "the state file's checksum")
    check_int(progress["counts"], 0, SUM_MAX, "the counts file's checksum")
    record = progress["slice"]
    if record is None:
        return
    if done == slices:
        raise ScratchError("it records a slice in progress where none is left")
    check_keys(record, {"answered", "values", "counts", "buckets"})
    layers = layer_state.exit_layers(seeds)
    answered = check_int(record["answered"], -1, len(layers) - 1, "the smaller layers answered")
    check_int(record["values"], 0, SUM_MAX, "the slice's checksum")
    check_int(record["counts"], 0, SUM_MAX, "the slice's counts' checksum")
    first = buckets(seeds, layout["window"])
    most = min(layout["slice"], size - done * layout["slice"]) * ROW * REQUEST_BYTES
    if type(record["buckets"]) is not list:
        raise ScratchError("the buckets are not a list")
    previous = int(first[layers[answered]]) - 1 if answered >= 0 else -1
    for entry in record["buckets"]:
        bucket, size_bytes, total = check_list(entry, 3, "a bucket")
        previous = check_int(bucket, previous + 1, int(first[-1]) - 1, "a bucket")
        if check_int(size_bytes, REQUEST_BYTES, most, "a bucket's bytes") % REQUEST_BYTES:
            raise ScratchError(f"a bucket's bytes are {size_bytes}, not whole requests")
        check_int(total, 0, SUM_MAX, "a bucket's checksum")


def progress_files(seeds: int, progress: dict[str, Any] | None) -> list[str]:
    """The bucket files a (checked) record names."""
    if progress is None or progress["slice"] is None:
        return []
    return [bucket_name(seeds, entry[0]) for entry in progress["slice"]["buckets"]]


class StreamedExits:
    """The streamed exits of layer `seeds` (the module's docstring) in steps a
    journal records (`progress`, its "streamed" field, changed in place and
    recorded by commit(lookups)), so that a kill at any moment goes on from
    the last step: a slice asked (its values and counts written in their
    place in the state and counts files, its bucket files complete), a
    smaller layer's answers raised into it (recorded, then its values
    written over the slice's bytes), a slice done (both files synced).

    Resuming, the slices done are read back against their checksums, and a
    slice in progress from its bytes: asked, they must match its checksum;
    after a smaller layer's answers, they are some mix of its values before
    and after them (a kill half way through writing them), and that layer's
    answers, raised again from its bucket files (kept until the next step is
    recorded), must give the checksum recorded: raising is idempotent, so
    any such mix gives the same slice, and anything else is damage
    (ScratchError). `state` and `counts` are the files' descriptors (created
    empty, or as the journal left them), `layout` plan.streamed_layout's."""

    def __init__(self, seeds: int, rows: tuple[np.ndarray, ...], scratch: str,
                 read: Callable[[int, int, int], np.ndarray], layout: dict[str, int], progress: dict[str, Any],
                 commit: Callable[[int], None], files: tuple[tuple[int, str], tuple[int, str]]) -> None:
        self.seeds, self.rows, self.scratch, self.read_window = seeds, rows, scratch, read
        self.layout, self.progress, self.commit = layout, progress, commit
        (self.state, self.state_path), (self.counts, self.counts_path) = files
        self.size = index.layer_size(seeds)
        self.step = layout["slice"]
        self.first = buckets(seeds, layout["window"])
        self.read = self.written = self.peak = 0

    def run(self) -> tuple[int, int]:
        """The slices not yet done; returns the state and counts files' checksums."""
        progress = self.progress
        values = np.zeros(min(self.step, max(self.size, 1)), dtype=np.int8)
        self._check_done(values)
        buffer = np.empty(PIECE, dtype=np.int64)
        for number in range(progress["done"], -(-self.size // self.step)):
            lo = number * self.step
            part = values[: min(self.step, self.size - lo)]
            part[:] = 0
            counts = np.zeros((part.shape[0] + 1) // 2, dtype=np.uint8)
            _check_slice(part, self.layout["window"], lo, self.layout.get("batch", BATCH))
            files = Buckets(self.scratch, self.seeds, int(self.first[-1]))
            self._slice(lo, part, counts, files, buffer)
            self.peak = max(self.peak, files.peak)
            self._sync()
            record = progress["slice"]
            progress.update(done=number + 1, slice=None, state=(progress["state"] + record["values"]) & SUM_MAX,
                            counts=(progress["counts"] + record["counts"]) & SUM_MAX)
            self.commit(0)
            files.remove()
        return progress["state"], progress["counts"]

    def _slice(self, lo: int, values: np.ndarray, counts: np.ndarray, files: Buckets, buffer: np.ndarray) -> None:
        """Slice lo.. from its last recorded step to its last smaller layer answered, written and recorded."""
        record = self.progress["slice"]
        layers = layer_state.exit_layers(self.seeds)
        window = self.layout["window"]
        if record is None:
            ask(self.seeds, lo, values, counts, self.rows, files, self.first, window,
                self.layout.get("batch", BATCH), 1)
            self._write(self.state, self.state_path, values, lo)
            self._write(self.counts, self.counts_path, counts, lo // 2)
            record = {"answered": -1, "values": int(checksum(values, lo)), "counts": int(checksum(counts, lo // 2)),
                      "buckets": files.recorded()}
            self.progress["slice"] = record
            self.commit(files.written // REQUEST_BYTES)
        else:
            files.restore(record["buckets"])
            pread_into(self.counts, counts, lo // 2, self.counts_path)
            pread_into(self.state, values, lo, self.state_path)
            self.read += values.nbytes + counts.nbytes
            if int(checksum(counts, lo // 2)) != record["counts"]:
                raise ScratchError(f"{self.counts_path} does not match its journal (the slice from {lo}): damaged")
            if record["answered"] >= 0:  # its answers raised again over what a kill may have half written
                m = layers[record["answered"]]
                answer_layer(self.seeds, m, values, files, self.first, window, self.read_window, buffer, keep=True)
            if int(checksum(values, lo)) != record["values"]:
                raise ScratchError(f"{self.state_path} does not match its journal (the slice from {lo}): damaged")
            if record["answered"] >= 0:  # the write the kill may have cut short, made whole
                self._write(self.state, self.state_path, values, lo)
        for number in range(record["answered"] + 1, len(layers)):
            m = layers[number]
            if not answer_layer(self.seeds, m, values, files, self.first, window, self.read_window, buffer,
                                keep=True):
                continue
            total = int(checksum(values, lo))
            if total == record["values"]:
                continue  # nothing raised: the slice's bytes are already these, its buckets kept until a step
            record.update(answered=number, values=total, buckets=files.recorded(int(self.first[m])))
            self.commit(0)
            files.drop(range(int(self.first[m])))
            self._write(self.state, self.state_path, values, lo)
        self.read += files.taken

    def _check_done(self, buffer: np.ndarray) -> None:
        """The slices recorded done read back (through `buffer`) against their checksums."""
        end = min(self.size, self.progress["done"] * self.step)
        for descriptor, path, length, total in ((self.state, self.state_path, end, self.progress["state"]),
                                                (self.counts, self.counts_path, (end + 1) // 2,
                                                 self.progress["counts"])):
            found = 0
            for lo in range(0, length, buffer.shape[0]):
                piece = buffer[: min(buffer.shape[0], length - lo)]
                pread_into(descriptor, piece, lo, path)
                found = (found + int(checksum(piece, lo))) & SUM_MAX
            self.read += length
            if found != total:
                raise ScratchError(f"{path} does not match its journal (the slices done): damaged")

    def _write(self, descriptor: int, path: str, data: np.ndarray, offset: int) -> None:
        try:
            write_at(descriptor, data, offset)
        except OSError as error:
            raise write_error(error, self.scratch, self.seeds) from None
        self.written += data.nbytes

    def _sync(self) -> None:
        try:
            os.fsync(self.state)
            os.fsync(self.counts)
        except OSError as error:
            raise write_error(error, self.scratch, self.seeds) from None
