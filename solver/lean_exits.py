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
   exits.raise_exits does). The bucket file is then removed.

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
captures, whatever order the captures are answered in (tests/test_lean.py
checks it on layers up to 14, in 1 to 5 slices and windows of a few
thousand ranks).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable

import numpy as np
from numba import njit

from . import exits, index, layer_state
from .errors import ScratchError
from .layer_state import pending, pending_exit
from .lean_files import StreamReader, create_exclusive, piece_sum, write_error
from .rules import ROW

OWNER_BITS = 37  # a request: the child's offset in its window << OWNER_BITS | the parent's offset in its slice
MAX_SLICE = 1 << OWNER_BITS  # ranks of a slice at most
MAX_WINDOW = 1 << (63 - OWNER_BITS)  # ranks of a window at most (the request an int64 >= 0)
OWNER_MASK = (1 << OWNER_BITS) - 1
BATCH = 1 << 18  # ranks asked at a time: their requests (6 a rank at most) sorted into buckets together
PIECE = 1 << 20  # requests of a bucket file read at a time
REQUEST_BYTES = 8
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
    where that is better (as exits.raise_exits)."""
    for j in range(requests.shape[0]):
        request = requests[j]
        owner = request & OWNER_MASK
        exit = captured - np.int64(window_values[request >> OWNER_BITS])
        if exit > pending_exit(values[owner]):
            values[owner] = pending(exit)


def _answer(requests: np.ndarray, window_values: np.ndarray, captured: int, values: np.ndarray) -> None:
    """answer(), its arguments by name (functools.partial gives them so)."""
    answer(requests, window_values, captured, values)


class Buckets:
    """A slice's bucket files: appended a batch at a time (created
    exclusively, never through a link; reopened to append), each one's size
    and checksum kept (the checksum adds up over pieces), read back in order
    and checked, then removed. remove() removes what is left."""

    def __init__(self, scratch: str, seeds: int, count: int) -> None:
        self.scratch, self.seeds = scratch, seeds
        self.sizes = np.zeros(count, dtype=np.int64)
        self.sums = [0] * count
        self.written = 0
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
        self.sums[bucket] = (self.sums[bucket] + piece_sum(view, int(self.sizes[bucket]))) & ((1 << 64) - 1)
        self.sizes[bucket] += len(view)
        self.written += len(view)
        self.held += len(view)
        self.peak = max(self.peak, self.held)

    def read(self, bucket: int, each: Callable[[np.ndarray], None], buffer: np.ndarray) -> None:
        """Call each(piece) for the requests of bucket `bucket`, in order, a
        piece of `buffer`'s length at a time; the file is checked against its
        checksum once read (ScratchError, before its answers are kept) and removed."""
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
        os.remove(self.path(bucket))
        self.held -= size
        self.sizes[bucket] = 0

    def remove(self) -> None:
        for bucket in np.flatnonzero(self.sizes):
            with contextlib.suppress(OSError):
                os.remove(self.path(int(bucket)))
        self.sizes[:] = 0
        self.held = 0


def slice_exits(seeds: int, lo: int, values: np.ndarray, counts: np.ndarray, rows: tuple[np.ndarray, ...],
                scratch: str, read: Callable[[int, int, int], np.ndarray], window: int,
                batch: int = BATCH, piece: int = PIECE, threads: int | None = 1) -> dict[str, int]:
    """The exits of ranks lo..lo + len(values) - 1 of layer `seeds` streamed
    (the module's docstring): `values` (zeros) get the pending codes the
    resident exits give them and `counts` (zeros, a nibble a rank) the
    counts of non-capturing children. `read(m, start, stop)` gives ranks
    start..stop-1 of smaller layer m (checked). `lo` and `batch` are
    multiples of layer_state.BLOCK. The ask runs on `threads` threads (None:
    as numba has them): one by default, as the lean stages' passes, since a
    parallel call a batch waits for threads whose cores other work holds
    (layer 20 here under a load of 7: 22 s on two threads in batches of
    256 Ki ranks, 9.6 s in batches of 2 Mi, 4.4 s on one). Returns lookups (the requests answered),
    bytes written to and read from the scratch folder and the peak of the
    requests there."""
    size = values.shape[0]
    if size > MAX_SLICE or not 0 < window <= MAX_WINDOW or lo % layer_state.BLOCK or batch % layer_state.BLOCK:
        raise ValueError(f"a slice of at most {MAX_SLICE} ranks, a window of 1..{MAX_WINDOW} and a batch and slice "
                         f"start of whole blocks, not {size}, {window}, {batch}, {lo}")
    first = buckets(seeds, window)
    total = int(first[-1])
    stride = layer_state.BLOCK * ROW
    blocks = -(-min(batch, max(size, 1)) // layer_state.BLOCK)
    keys = np.empty(blocks * stride, dtype=np.int64)
    gains = np.empty(blocks * stride, dtype=np.int8)
    owners = np.empty(blocks * stride, dtype=np.int64)
    asked = np.zeros(blocks, dtype=np.int64)
    out = np.empty(blocks * stride, dtype=np.int64)
    offsets = np.zeros(total + 1, dtype=np.int64)
    files = Buckets(scratch, seeds, total)
    try:
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
        lookups = files.written // REQUEST_BYTES
        buffer = np.empty(piece, dtype=np.int64)
        for m in layer_state.exit_layers(seeds):
            child = index.layer_size(m)
            for bucket in range(int(first[m]), int(first[m]) + -(-child // window)):
                if files.sizes[bucket] == 0:
                    continue
                start = (bucket - int(first[m])) * window
                files.read(bucket, functools.partial(_answer, window_values=read(m, start, min(child, start + window)),
                                                     captured=seeds - m, values=values), buffer)
    finally:
        files.remove()
    return {"lookups": lookups, "written": files.written, "read": files.written, "peak": files.peak}
