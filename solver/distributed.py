"""The layer build on many processes: MPI through mpi4py (``awele[mpi]``).

``mpiexec -n P awele build --max-seeds N`` runs this. Each process owns a
contiguous slice of every layer's ranks in the distance order
(index.DISTANCE_ORDER: the file's groups of positions with m seeds on the
mover's row, m and n - m side by side in bands of one |2m - n|, so that a
move, which swaps the rows, mostly stays in its slice; the bands listed so
that every slice holds balanced and lopsided positions alike, whose stages
differ), cut at multiples of layer_state.BLOCK, so P need not
divide anything; it holds only its slices:
the working state of its slice of the layer being built (the lined layout
of retrograde, 1.52 bytes a position: a position's value byte and child
count in one cache line) and its slices of the smaller layers, which it solved itself or
read from their files (every chunk's CRC checked, the histogram summed over
the processes checked against the file's).

Exits: the smaller layers are *partitioned*, never replicated. A process
asks the owner of each capture's child for its value, in batches: one
all-to-all of requests (8 bytes each: layer and rank) and one of answers
(1 byte each) per batch of positions. Replicating would need every process
to hold all of layers n-15..n-2, the bulk of a big build's memory, while
partitioned look-ups cost 9 bytes a capture on the wire and no memory;
with P = 1 the same code runs and every look-up is local.

Stages: each process runs a stage on its slice depth first, as one
process runs it on a whole layer (slice_stages.propagate_slice_stage): a
seed, or a predecessor it resolves, is told of at once from a stack, with
the words un-sowing gave it; a predecessor in another slice goes to the
thread's outbox (8 bytes: rank and whether the child lost). The outboxes
are packed by owner (pack_updates) and exchanged in one all-to-all, which
carries each process's total with its counts, so that the same collective
ends the loop when nobody sends; what arrives is claimed and told of depth
first in turn (slice_stages.tell_received_slice), filling the outboxes
again. So a stage takes one round each time a chain of resolutions crosses
a cut, not one for every step of every chain. The seeds' scan pauses when
an outbox is half full and goes on after the next round; a position that
finds the stack or an outbox full is flagged FRESH and swept
(stages.propagate), with its own rounds. A stage ends when a sum over
the processes finds nothing FRESH anywhere.
The values do not depend on the order updates arrive in (at stage k exactly
the positions with |d| = k are resolved), so the files are the same
whatever P: the values, their chunks and CRCs byte for byte.

Files: process 0 writes each layer through tables.write_table, gathering it
a slice at a time in the file's order from the owners (each window of the
file being runs of the distance order: index.file_pieces), under the same temporary-name-and-rename
rule; it alone holds the folder's build lock. Checkpoints (optional, at
stage boundaries) let a rerun resume mid-layer with the same P.

A process that fails raises; the command line prints the error and aborts
the job (MPI_Abort), and a process killed by a signal makes mpiexec stop
the others: the job never hangs.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import mmap
import os
import signal
import threading
import time
import zlib
from collections.abc import Callable, Container, Iterator
from itertools import repeat
from typing import Any, TypeVar

import numba
import numpy as np
from numba import njit

from . import exits, index, layer_state, layers, retrograde, slice_stages, stages, tables
from .errors import BuildError, CorruptTableError
from .intrinsics import prefetch
from .rules import ROW

_Summed = TypeVar("_Summed", int, np.ndarray)

# Environment variables by which mpiexec/srun tell a process it is one of many.
LAUNCHER_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS")
OUTBOX = 1 << 20  # updates a thread collects for other processes before its sweep pauses
EXIT_BATCH = 1 << 19  # positions per round of exit requests (at most 6 requests each, 43 bytes a request)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
KILL_VARIABLE = "AWELE_TEST_KILL"  # "seeds:stage:process": that process kills itself after that checkpoint
ORDER = index.DISTANCE_ORDER  # the order of the ranks that slices cut (and requests and updates name)
ORDER_NAME = "distance-bands"  # in a checkpoint's manifest: a cut of another order ("distance") is not resumed
LAYOUT_NAME = "lined"  # in a checkpoint's manifest: a state in the older plain layout is not resumed
BAND_SNAP = 0.2  # a cut moves to a distance band's edge this close, as a share of a slice (slice_bounds)


# Communication ---------------------------------------------------------------------


def launched_processes() -> int:
    """How many processes the MPI launcher started (1 when not launched by one)."""
    for name in LAUNCHER_VARIABLES:
        value = os.environ.get(name, "")
        if value.isdigit() and int(value) > 1:
            return int(value)
    if "PMIX_RANK" in os.environ or "PMI_RANK" in os.environ:  # srun with PMIx names no size: Slurm does
        value = os.environ.get("SLURM_NTASKS", "")
        if value.isdigit() and int(value) > 1:
            return int(value)
    return 1


RANK_VARIABLES = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")  # and Slurm's SLURM_PROCID under srun


def launched_rank() -> int:
    """This process's rank among those the MPI launcher started, from the
    environment (0 when not launched by one), so that an error every process
    meets alike before MPI starts (a bad option) is printed by one of them."""
    if launched_processes() == 1:
        return 0
    for name in (*RANK_VARIABLES, "SLURM_PROCID"):
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 0


@contextlib.contextmanager
def _waiting() -> Iterator[None]:
    """While this process waits inside MPI for the others, a stop signal
    (Ctrl-C's SIGINT, SIGTERM, SIGHUP) ends it at once, by the signal's
    default action: Python runs a handler only once MPI returns, and a wait
    on a process that was stopped (SIGSTOP) never returns, so Ctrl-C at the
    launcher would hang the job. Killed, this process makes mpiexec end the
    others (the stopped one too); a temporary file it was writing is removed
    by the next build. Outside MPI calls a signal is handled as before."""
    changed = {}
    if threading.current_thread() is threading.main_thread():
        for signum in STOP_SIGNALS:
            if callable(signal.getsignal(signum)):
                changed[signum] = signal.signal(signum, signal.SIG_DFL)
    try:
        yield
    finally:
        for signum, handler in changed.items():
            signal.signal(signum, handler)


def world() -> "Exchange":
    """The Exchange of the processes mpiexec started (mpi4py's COMM_WORLD)."""
    try:
        from mpi4py import MPI
    except ImportError:
        raise BuildError(
            f"this build was started as one of {launched_processes()} MPI processes, but mpi4py is not "
            "installed: pip install 'awele[mpi]'"
        ) from None
    return Exchange(MPI.COMM_WORLD)


class Exchange:
    """What the build needs of MPI, timed and counted: all-to-all, sums,
    broadcast, gathers. Without a communicator it is one process alone."""

    def __init__(self, comm: Any = None) -> None:
        self.comm = comm
        self.rank = comm.Get_rank() if comm is not None else 0
        self.size = comm.Get_size() if comm is not None else 1
        self.bytes_sent = 0  # to other processes, by alltoallv and gathers
        self.seconds = 0.0  # in communication, including waiting for slower processes
        if comm is not None:
            from mpi4py import MPI

            self._mpi = MPI
            self._types = {np.dtype(np.int64): MPI.INT64_T, np.dtype(np.int8): MPI.INT8_T}

    def __repr__(self) -> str:
        return f"Exchange(process {self.rank} of {self.size})"

    def _timed(self, started, sent=0):
        self.seconds += time.perf_counter() - started
        self.bytes_sent += sent

    def alltoallv(self, data: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Send data[...] grouped by destination (counts[p] items to process p);
        return (what arrived, grouped by sender; how many from each)."""
        if self.comm is None:
            return data, counts
        started = time.perf_counter()
        counts = np.asarray(counts, dtype=np.int64)
        arrived = np.empty(self.size, dtype=np.int64)
        with _waiting():
            self.comm.Alltoall(counts, arrived)
        received = self._alltoallv(data, counts, arrived)
        self._timed(started, (int(counts.sum()) - int(counts[self.rank])) * data.dtype.itemsize)
        return received, arrived

    def alltoallv_unless_quiet(self, data: np.ndarray, counts: np.ndarray) -> np.ndarray | None:
        """alltoallv's answer, or None when no process sends anything: the
        counts go with each process's total, so one all-to-all both sizes
        the exchange and ends a loop of them (two collectives a round, one
        for the last, where a reduction and alltoallv would take three)."""
        if self.comm is None:
            return data if data.shape[0] else None
        started = time.perf_counter()
        header = np.empty((self.size, 2), dtype=np.int64)
        header[:, 0] = counts
        header[:, 1] = data.shape[0]
        heard = np.empty((self.size, 2), dtype=np.int64)
        with _waiting():
            self.comm.Alltoall(header, heard)
        received = None
        if heard[:, 1].sum():
            received = self._alltoallv(data, header[:, 0].copy(), heard[:, 0].copy())
        self._timed(started, (data.shape[0] - int(header[self.rank, 0])) * data.dtype.itemsize)
        return received

    def _alltoallv(self, data, counts, arrived):
        if max(counts.max(initial=0), arrived.max(initial=0)) >= 2**31:
            raise BuildError("an exchange of more than 2**31 items: lower the batch sizes")
        received = np.empty(int(arrived.sum()), dtype=data.dtype)
        kind = self._types[data.dtype]
        with _waiting():
            self.comm.Alltoallv(
                [data, (counts.astype(np.int32), _offsets(counts).astype(np.int32)), kind],
                [received, (arrived.astype(np.int32), _offsets(arrived).astype(np.int32)), kind],
            )
        return received

    def sum(self, value: _Summed) -> _Summed:
        """The sum of an int (or an int64 array, element-wise) over the processes."""
        if self.comm is None:
            return value
        started = time.perf_counter()
        with _waiting():
            if isinstance(value, np.ndarray):
                total = np.empty_like(value)
                self.comm.Allreduce(value, total, op=self._mpi.SUM)
            else:
                total = self.comm.allreduce(int(value), op=self._mpi.SUM)
        self._timed(started)
        return total

    def _object_collective(self, call, value, alone):
        """call(value) on the communicator, timed; `alone` when there is none."""
        if self.comm is None:
            return alone
        started = time.perf_counter()
        with _waiting():
            result = call(value)
        self._timed(started)
        return result

    def maximum(self, value: Any) -> Any:
        """The largest of a number over the processes."""
        return self._object_collective(lambda v: self.comm.allreduce(v, op=self._mpi.MAX), value, value)

    def broadcast(self, value: Any) -> Any:
        """Process 0's `value`, on every process."""
        return self._object_collective(lambda v: self.comm.bcast(v, root=0), value, value)

    def gather(self, value: Any) -> list[Any] | None:
        """Every process's `value` as a list on process 0 (None elsewhere)."""
        return self._object_collective(lambda v: self.comm.gather(v, root=0), value, [value])

    def gather_piece(self, piece: np.ndarray, counts: np.ndarray) -> np.ndarray | None:
        """Process p's `piece` (counts[p] int8 values) concatenated on process 0."""
        if self.comm is None:
            return piece
        started = time.perf_counter()
        whole = np.empty(int(sum(counts)), dtype=np.int8) if self.rank == 0 else None
        counts = np.asarray(counts, dtype=np.int64)
        receive = [whole, (counts.astype(np.int32), _offsets(counts).astype(np.int32)), self._mpi.INT8_T] \
            if self.rank == 0 else None
        with _waiting():
            self.comm.Gatherv([piece, self._mpi.INT8_T], receive, root=0)
        self._timed(started, 0 if self.rank == 0 else piece.nbytes)
        return whole

    def barrier(self) -> None:
        if self.comm is not None:
            started = time.perf_counter()
            with _waiting():
                self.comm.Barrier()
            self._timed(started)

    def processes_per_node(self) -> int:
        """How many of the processes share this one's machine."""
        if self.comm is None:
            return 1
        with _waiting():
            local = self.comm.Split_type(self._mpi.COMM_TYPE_SHARED)
        try:
            return local.Get_size()
        finally:
            local.Free()

    def abort(self, code: int) -> None:
        """Stop every process of the job (after this one reported why)."""
        if self.comm is not None:
            self.comm.Abort(code)


def _offsets(counts):
    return np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)


# Slices ----------------------------------------------------------------------------


def slice_bounds(size: int, processes: int, seeds: int | None = None) -> np.ndarray:
    """Where each process's slice of a layer of `size` positions starts (and
    the end), in ranks of the slices' ORDER: near-equal slices cut at
    multiples of layer_state.BLOCK, so a block (and a byte of child counts)
    never straddles two processes.

    Given the layer's `seeds`, a cut within BAND_SNAP of a slice's size of
    a boundary between distance bands (the groups m and n - m of one
    |2m - n|) moves there: a move mostly goes from one group of a band to the
    other, so a cut between the two sends most of their moves across, while
    one at the band's edge sends few. Two slices are cut between the even
    bands and the odd ones (index.band_key): exactly at the middle of an
    even layer, near it in an odd one (0.17-0.20 of the in-layer moves cross
    it at layers 18..26)."""
    block = layer_state.BLOCK
    cuts = [size * p // processes for p in range(processes)] + [size]
    if seeds is not None and processes > 1:
        edges = [int(index.ORDER_STARTS[seeds, j]) for j in range(1, seeds + 1)
                 if abs(2 * int(index.ORDER_GROUPS[seeds, j]) - seeds)
                 != abs(2 * int(index.ORDER_GROUPS[seeds, j - 1]) - seeds)]
        for p in range(1, processes):
            distances = [abs(edge - cuts[p]) for edge in edges]
            if distances and min(distances) <= BAND_SNAP * size / processes:
                cuts[p] = edges[distances.index(min(distances))]
        cuts[1:-1] = np.maximum.accumulate(cuts[1:-1])
    return np.array([cut // block * block for cut in cuts[:-1]] + [size], dtype=np.int64)


def all_bounds(max_seeds: int, processes: int) -> np.ndarray:
    """slice_bounds of every layer 0..MAX_SEEDS (zeros above max_seeds), one row a layer."""
    bounds = np.zeros((index.MAX_SEEDS + 1, processes + 1), dtype=np.int64)
    for seeds in range(max_seeds + 1):
        bounds[seeds] = slice_bounds(index.layer_size(seeds), processes, seeds)
    return bounds


@njit(cache=True, inline="always")
def _owner(bounds, rank):
    """The process whose slice (of a layer cut at `bounds`) holds `rank`:
    the last slice starting at or before it."""
    low, high = 0, bounds.shape[0] - 2
    while low < high:
        middle = (low + high + 1) // 2
        if bounds[middle] <= rank:
            low = middle
        else:
            high = middle - 1
    return low


@njit(cache=True)
def route_requests(keys: np.ndarray, asked: np.ndarray, stride: int, bounds: np.ndarray,
                   processes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The exit requests keys[b * stride : b * stride + asked[b]] of every
    block b (as exit_requests leaves them), grouped by the process owning
    each child, in their order within a group: (requests, slots, counts),
    slots[j] being where requests[j] lay in keys and counts[p] how many go
    to process p. Two passes over the requests."""
    total = 0
    for block in range(asked.shape[0]):
        total += asked[block]
    owners = np.empty(total, dtype=np.int32)
    counts = np.zeros(processes, dtype=np.int64)
    mask = (np.int64(1) << exits.RANK_BITS) - 1
    at = 0
    for block in range(asked.shape[0]):
        for j in range(block * stride, block * stride + asked[block]):
            key = keys[j]
            owner = _owner(bounds[key >> exits.RANK_BITS], key & mask)
            owners[at] = owner
            counts[owner] += 1
            at += 1
    next_slot = np.zeros(processes, dtype=np.int64)
    for p in range(1, processes):
        next_slot[p] = next_slot[p - 1] + counts[p - 1]
    requests = np.empty(total, dtype=np.int64)
    slots = np.empty(total, dtype=np.int64)
    at = 0
    for block in range(asked.shape[0]):
        for j in range(block * stride, block * stride + asked[block]):
            owner = owners[at]
            requests[next_slot[owner]] = keys[j]
            slots[next_slot[owner]] = j
            next_slot[owner] += 1
            at += 1
    return requests, slots, counts


@njit(cache=True)
def pack_updates(outbox: np.ndarray, sent: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The threads' outboxes (outbox[thread, :sent[thread]], each update
    (rank << 1) | (child lost)) as one array grouped by the process owning
    the rank (slices `bounds`), in their order within a group, and how
    many go to each. When they all go to one process (always so for two),
    they are not moved again."""
    processes = bounds.shape[0] - 1
    total = 0
    for thread in range(sent.shape[0]):
        total += sent[thread]
    owners = np.empty(total, dtype=np.int32)
    updates = np.empty(total, dtype=np.int64)
    counts = np.zeros(processes, dtype=np.int64)
    at = 0
    for thread in range(sent.shape[0]):
        for i in range(sent[thread]):
            owner = _owner(bounds, outbox[thread, i] >> 1)
            owners[at] = owner
            updates[at] = outbox[thread, i]
            counts[owner] += 1
            at += 1
    if np.count_nonzero(counts) <= 1:
        return updates, counts
    next_slot = np.zeros(processes, dtype=np.int64)
    for p in range(1, processes):
        next_slot[p] = next_slot[p - 1] + counts[p - 1]
    grouped = np.empty(total, dtype=np.int64)
    for j in range(total):
        grouped[next_slot[owners[j]]] = updates[j]
        next_slot[owners[j]] += 1
    return grouped, counts


class Slices:
    """This process's slices of the smaller layers: values by seed count,
    in the slices' ORDER."""

    def __init__(self, exchange: Exchange, bounds: np.ndarray) -> None:
        self.exchange = exchange
        self.bounds = bounds
        self.values: dict[int, np.ndarray] = {}

    def span(self, seeds: int) -> tuple[int, int]:
        rank = self.exchange.rank
        return int(self.bounds[seeds, rank]), int(self.bounds[seeds, rank + 1])

    def nbytes(self) -> int:
        return sum(v.nbytes for v in self.values.values())

    def load(self, directory: str, seeds: int) -> None:
        """Read this process's slice of layer `seeds` from its file (collective:
        the slices' histograms summed must equal the file's)."""
        lo, hi = self.span(seeds)
        values = np.empty(hi - lo, dtype=np.int8)
        stored = None
        for first, first_in_file, length in index.order_pieces(seeds, lo, hi, ORDER):  # runs of the file
            piece, stored = tables.load_slice(directory, seeds, first_in_file, first_in_file + length)
            values[first - lo : first - lo + length] = piece
        if stored is None:  # an empty slice: the file's histogram all the same
            stored = tables.load_slice(directory, seeds, 0, 0)[1]
        counts = self.exchange.sum(tables.histogram(values, seeds))
        if (counts != stored).any():
            raise CorruptTableError(f"{tables.table_path(directory, seeds)}: values do not match the stored histogram")
        self.values[seeds] = values

    def keep_only(self, layers: Container[int]) -> None:
        for seeds in list(self.values):
            if seeds not in layers:
                del self.values[seeds]

    def answer(self, keys: np.ndarray) -> np.ndarray:
        """Values of the requested children (keys: layer << RANK_BITS | rank), all held here."""
        answers = np.empty(keys.shape[0], dtype=np.int8)
        if keys.shape[0] == 0:
            return answers
        asked = np.flatnonzero(np.bincount(keys >> exits.RANK_BITS, minlength=index.MAX_SEEDS + 1))
        missing = [int(seeds) for seeds in asked if int(seeds) not in self.values]
        if missing or asked[-1] - asked[0] >= ANSWER_SPAN:
            raise BuildError(f"asked for layers {missing or asked.tolist()} that this process does not hold as needed")
        first = int(asked[0])
        empty = np.zeros(0, dtype=np.int8)
        held = tuple(self.values.get(first + i, empty) for i in range(ANSWER_SPAN))
        starts = np.array([self.span(first + i)[0] if first + i in self.values else 0 for i in range(ANSWER_SPAN)],
                          dtype=np.int64)
        _answer(keys, held, first, starts, answers)
        return answers


ANSWER_SPAN = layer_state.MAX_CAPTURE  # layers one batch of requests can name: n-15..n-2
ANSWER_BATCH = 64  # look-ups whose lines are prefetched before any is read


@njit(cache=True)
def _answer(keys, held, first, starts, answers):
    """answers[j] = the value of key j's child (layer << RANK_BITS | rank):
    held[layer - first] is this process's slice of that layer, from rank
    starts[layer - first]. Looked up in batches whose lines are prefetched
    first, so that their cache misses overlap (a numpy gather by layer took
    three random passes a look-up: the exits of layer 24 ran at a quarter of
    one process's speed with 2 processes)."""
    mask = (np.int64(1) << exits.RANK_BITS) - 1
    total = keys.shape[0]
    for begin in range(0, total, ANSWER_BATCH):
        end = min(total, begin + ANSWER_BATCH)
        for j in range(begin, end):
            at = (keys[j] >> exits.RANK_BITS) - first
            prefetch(held[at], (keys[j] & mask) - starts[at])  # type: ignore[call-arg]  # numba's @intrinsic passes typingctx
        for j in range(begin, end):
            at = (keys[j] >> exits.RANK_BITS) - first
            answers[j] = held[at][(keys[j] & mask) - starts[at]]


@njit(cache=True)
def keep_layers(keys: np.ndarray, gains: np.ndarray, owners: np.ndarray, asked: np.ndarray, stride: int,
                use: np.ndarray) -> int:
    """Keep, of exit_requests' requests (block b's keys[b * stride :
    b * stride + asked[b]], with their gains and owners), those whose
    child's layer is marked in `use`, in their order, asked[b] lowered to
    match; returns how many are kept (an exit pass over a group of the
    smaller layers: the lean slices, solver.distributed_lean)."""
    kept = 0
    for block in range(asked.shape[0]):
        at = block * stride
        for j in range(block * stride, block * stride + asked[block]):
            if use[keys[j] >> exits.RANK_BITS]:
                keys[at], gains[at], owners[at] = keys[j], gains[j], owners[j]
                at += 1
        asked[block] = at - block * stride
        kept += asked[block]
    return kept


def exit_rounds(seeds: int, exchange: Exchange, slices: Slices, rows: tuple[np.ndarray, ...], lo: int, hi: int,
                batch: int, place: Callable[[int, int], tuple[int, np.ndarray, np.ndarray, bool]],
                done: Callable[[int, int, np.ndarray], None] | None = None, use: np.ndarray | None = None) -> None:
    """The exits of ranks lo..hi-1 of layer `seeds` (this process's slice),
    `batch` ranks a round (collective: as many rounds on every process, one
    all-to-all of requests and one of answers each). place(start, stop)
    says where ranks start..stop-1 are held: (the rank held at index 0,
    values, counts, whether in the lined layout), as exit_requests takes
    them; their captures are asked of their children's owners and the
    answers raise the pending codes, then done(start, stop, values) if
    given. With `use`, only captures into the layers it marks are asked."""
    keys = np.empty(batch * ROW, dtype=np.int64)
    gains = np.empty(batch * ROW, dtype=np.int8)
    owners = np.empty(batch * ROW, dtype=np.int64)
    asked = np.zeros(batch // layer_state.BLOCK, dtype=np.int64)
    rounds = exchange.maximum((hi - lo + batch - 1) // batch)
    for round_number in range(rounds):
        start = lo + round_number * batch
        stop = min(hi, start + batch)
        blocks = (max(0, stop - start) + layer_state.BLOCK - 1) // layer_state.BLOCK
        values = None
        if start < stop:
            base, values, counts, lined = place(start, stop)
            exits.exit_requests(seeds, base, start, stop, values, counts, rows, keys, gains, owners, asked, ORDER,
                                lined)
            if use is not None:
                keep_layers(keys, gains, owners, asked[:blocks], layer_state.BLOCK * ROW, use)
        wanted, slots, counts = route_requests(keys, asked[:blocks], layer_state.BLOCK * ROW, slices.bounds,
                                               exchange.size)
        requests, arrived = exchange.alltoallv(wanted, counts)
        answers, _ = exchange.alltoallv(slices.answer(requests), arrived)
        if values is not None:
            # The answers come back grouped as the requests went: answers[j] is slots[j]'s.
            exits.raise_exits(values, slots, gains, owners, answers)
            if done is not None:
                done(start, stop, values)


# Checkpoints -----------------------------------------------------------------------


class Checkpoints:
    """The working state of a layer at a stage boundary, one file a process
    and a manifest (process 0's) naming the stage to resume at and each
    file's CRC-32. A rerun with the same number of processes resumes there;
    anything that does not check out is ignored and the layer starts over."""

    def __init__(self, directory: str | None, exchange: Exchange, interval: float = 0.0) -> None:
        self.directory = directory
        self.exchange = exchange
        self.interval = interval
        self.last = time.monotonic()
        if directory and exchange.rank == 0:
            os.makedirs(directory, exist_ok=True)  # build_distributed checked that it can
        exchange.barrier()

    def manifest_path(self, seeds: int) -> str:
        """The manifest of layer `seeds`'s checkpoint (process 0's)."""
        assert self.directory is not None, "asked only of a build with checkpoints"
        return os.path.join(self.directory, f"awele-{seeds:02d}.checkpoint.json")

    def _state(self, seeds, stage, rank=None):
        assert self.directory is not None, "asked only of a build with checkpoints"
        rank = self.exchange.rank if rank is None else rank
        return os.path.join(self.directory,
                            f"awele-{seeds:02d}.stage-{stage:02d}.process-{rank}-of-{self.exchange.size}.state")

    def due(self) -> bool:
        return bool(self.directory) and time.monotonic() - self.last >= self.interval

    def save(self, seeds: int, stage: int, bounds: np.ndarray, state: np.ndarray) -> None:
        """Record the working state (lined) before stage `stage` of layer `seeds` (collective)."""
        # Created exclusively and renamed into place: a link planted at any of
        # these names (a shared folder) is replaced, never written through.
        crc = tables.write_file_exclusively(self._state(seeds, stage), (state,))
        crcs = self.exchange.gather(crc)
        if self.exchange.rank == 0:
            manifest = {"seeds": seeds, "stage": stage, "processes": self.exchange.size, "order": ORDER_NAME,
                        "layout": LAYOUT_NAME, "bounds": [int(b) for b in bounds], "crc32": crcs}
            tables.write_file_exclusively(self.manifest_path(seeds), (json.dumps(manifest).encode(),))
        self.exchange.barrier()
        for older in range(stage + 1, seeds + 2):
            if os.path.exists(self._state(seeds, older)):
                os.remove(self._state(seeds, older))
        self.last = time.monotonic()
        planned = os.environ.get(KILL_VARIABLE, "")
        if planned == f"{seeds}:{stage}:{self.exchange.rank}":
            os.kill(os.getpid(), signal.SIGKILL)  # fault injection for the tests

    def recorded(self, seeds: int, expected: dict[str, Any]) -> dict[str, Any] | None:
        """Layer `seeds`'s manifest, read by process 0 and given to every
        process, when it holds `expected` (the fields a checkpoint must share
        with this build); else None (collective)."""
        manifest = None
        if self.exchange.rank == 0:
            try:
                manifest = json.loads(tables.read_file_nofollow(self.manifest_path(seeds), 1 << 20))
                if not isinstance(manifest, dict) or any(manifest.get(k) != v for k, v in expected.items()):
                    manifest = None
            except (OSError, ValueError):
                manifest = None
        return self.exchange.broadcast(manifest)

    def resume(self, seeds: int, bounds: np.ndarray, state: np.ndarray) -> int | None:
        """The stage to resume layer `seeds` at, its working state read into
        `state`, or None (collective)."""
        if not self.directory:
            return None
        manifest = self.recorded(seeds, {"seeds": seeds, "processes": self.exchange.size, "order": ORDER_NAME,
                                         "layout": LAYOUT_NAME, "bounds": [int(b) for b in bounds]})
        if manifest is None:
            return None
        stage = int(manifest["stage"])
        ok = 0
        try:
            data = tables.read_file_nofollow(self._state(seeds, stage), state.nbytes + 1)
            if len(data) == state.nbytes and zlib.crc32(data) == manifest["crc32"][self.exchange.rank]:
                state[:] = np.frombuffer(data, dtype=np.int8)
                ok = 1
        except OSError:
            pass
        if self.exchange.sum(ok) != self.exchange.size:
            return None
        return stage

    def clear(self, seeds: int) -> None:
        """Forget layer `seeds`'s checkpoint once its file is written (collective)."""
        if not self.directory:
            return
        if self.exchange.rank == 0 and os.path.exists(self.manifest_path(seeds)):
            os.remove(self.manifest_path(seeds))
        self.exchange.barrier()
        for stage in range(0, seeds + 2):
            if os.path.exists(self._state(seeds, stage)):
                os.remove(self._state(seeds, stage))


# One layer -------------------------------------------------------------------------


class SliceSolver:
    """This process's part in the build of one layer (collective calls)."""

    def __init__(self, seeds: int, exchange: Exchange, slices: Slices, rows: tuple[np.ndarray, ...],
                 outbox: int = OUTBOX, batch: int = EXIT_BATCH, stack: int = stages.STACK) -> None:
        retrograde.check_compiled_order()  # the slices and the kernels agree on the order
        self.seeds = seeds
        self.exchange = exchange
        self.slices = slices
        self.rows = rows
        self.bounds = slices.bounds[seeds, : exchange.size + 1]
        self.lo, self.hi = slices.span(seeds)
        self.size = size = self.hi - self.lo
        # The working state in the lined layout (retrograde.LayerSolver's): an
        # update touches one cache line, not one in each of two arrays. After
        # the stages, `values` is the slice's plain values (solve()).
        self.lines = (size + layer_state.LINE_RANKS - 1) // layer_state.LINE_RANKS
        self._area, self.state = layers.reserve(max(1, self.lines) * layer_state.LINE)  # a mapping is never empty
        with contextlib.suppress(OSError, AttributeError):
            self._area.madvise(mmap.MADV_HUGEPAGE)
        self.counts = self.state.view(np.uint8)
        self.value_words = self.state.view(np.uint64)
        self.values = np.zeros(0, dtype=np.int8)
        self.outbox = outbox
        self.stack = stack  # resolved positions a thread holds to tell of (more are left to sweeps)
        self.batch = max(layer_state.BLOCK, batch // layer_state.BLOCK * layer_state.BLOCK)
        self.exit_seconds = 0.0
        self.stage_rounds = 0  # exchanges of the stages' updates

    def exits(self) -> None:
        """Pending codes and child counts of the slice, captures asked of their owners."""
        started = time.perf_counter()
        exit_rounds(self.seeds, self.exchange, self.slices, self.rows, self.lo, self.hi, self.batch,
                    lambda start, stop: (self.lo, self.state, self.counts, True))
        self.exit_seconds = time.perf_counter() - started

    def solve(self, checkpoints: Checkpoints | None = None, progress: Callable | None = None) -> dict[str, Any]:
        """Exits (unless a checkpoint has them), then the stages; returns
        stats. The slice's values are then in `values` (plain, in ORDER)."""
        first_stage = checkpoints.resume(self.seeds, self.bounds, self.state) if checkpoints else None
        resumed = first_stage
        before = self.exchange.bytes_sent
        if first_stage is None:
            self.exits()
            if checkpoints and checkpoints.directory:
                checkpoints.save(self.seeds, self.seeds, self.bounds, self.state)
        exit_bytes = self.exchange.bytes_sent - before
        started = time.perf_counter()
        scratch = stages.make_scratch(numba.get_num_threads(), self.outbox if self.exchange.size > 1 else 0,
                                      stack=self.stack)
        exchange, seeds, lo, size = self.exchange, self.seeds, self.lo, self.size
        layer_bounds = self.bounds

        def exchange_rounds(stage, flags, scan=None):
            # What the outboxes hold goes to its owners, who tell of it depth
            # first, filling their outboxes again, and the seeds' scan goes on
            # where a half-full outbox stopped it: until no process sends.
            told = 0
            while True:
                updates, counts = pack_updates(scratch.outbox, scratch.sent, layer_bounds)
                scratch.sent[:] = 0
                received = exchange.alltoallv_unless_quiet(updates, counts)
                if received is None:  # every scan is done: a stopped one has something to send
                    return told
                self.stage_rounds += 1
                with layer_state.thread_count(1 if received.shape[0] <= layer_state.RANK_CHUNK else None):
                    told += slice_stages.tell_received_slice(stage, seeds, lo, size, received, self.state, self.counts,
                                                             flags, self.rows, scratch, ORDER)
                if scan is not None and scan[0] < flags.shape[0]:
                    told += slice_stages.propagate_slice_stage(stage, seeds, lo, size, self.state, self.counts,
                                                               self.value_words, flags, self.rows, scratch, scan, ORDER)

        def seed_and_tell(stage, flags):
            scratch.sent[:] = 0
            scan = np.zeros(1, dtype=np.int64)  # the next block of the seeds' scan
            told = slice_stages.propagate_slice_stage(stage, seeds, lo, size, self.state, self.counts, self.value_words,
                                                      flags, self.rows, scratch, scan, ORDER)
            return told + (exchange_rounds(stage, flags, scan) if exchange.size > 1 else 0)

        def sweep(stage, active, next_flags):
            # Positions left FRESH: the stack or an outbox was full.
            scratch.sent[:] = 0
            done = stages.propagate(stage, seeds, lo, self.state, self.counts, active, next_flags, self.rows,
                                    scratch, size, ORDER)
            return done + (exchange_rounds(stage, next_flags) if exchange.size > 1 else 0)

        def after_stage(stage):
            if checkpoints and stage > 1 and checkpoints.due():
                checkpoints.save(seeds, stage - 1, self.bounds, self.state)

        reports, seed_seconds = stages.run_stages(
            seeds, self.state, self.value_words, self.counts, sweep, progress, first_stage=first_stage,
            everywhere=exchange.sum, after_stage=after_stage, lined_ranks=size, seed_and_tell=seed_and_tell)
        # The values out of the lines a piece at a time, each piece given back
        # once moved (endless play settled to 0), as LayerSolver.solve does.
        self.values = np.empty(size, dtype=np.int8)
        with layer_state.thread_count(1 if size < layer_state.SERIAL_SIZE else None):
            for first in range(0, self.lines, layer_state.COMPACT_LINES):
                last = min(self.lines, first + layer_state.COMPACT_LINES)
                stages.compact_lines(self.state, size, self.values, first, last)
                with contextlib.suppress(OSError):
                    self._area.madvise(mmap.MADV_DONTNEED, first * layer_state.LINE, (last - first) * layer_state.LINE)
        self.state = self.counts = self.value_words = None  # type: ignore[assignment]
        layers.release(self._area)
        return {
            "exit_bytes": exit_bytes,
            "stage_bytes": self.exchange.bytes_sent - before - exit_bytes,
            "exit_seconds": self.exit_seconds,
            "stage_seconds": time.perf_counter() - started,
            "seed_seconds": seed_seconds,
            "resumed_at_stage": resumed,
            "stage_rounds": self.stage_rounds,
            "stages": [(s.stage, s.resolved, s.sweeps) for s in reports],
        }


class GatheredLayer:
    """Layer values for tables.write_table on process 0, in the file's
    order, while the other processes call send_layer: a slice at a time
    (values[start:stop]), or its chunks deflated by every process at once
    (filtered_chunks, which write_table uses)."""

    def __init__(self, exchange: Exchange, values: Any, bounds: np.ndarray, seeds: int) -> None:
        self.exchange = exchange
        self.local = values
        self.bounds = bounds
        self.seeds = seeds
        self.shape = (index.layer_size(seeds),)
        self.dtype = np.dtype(np.int8)
        self._filtered: dict[int, list[tuple[bytes, int]]] = {}

    def __getitem__(self, window: slice) -> np.ndarray | None:
        start, stop, _ = window.indices(self.shape[0])
        return _gather_window(self.exchange, self.local, self.bounds, self.seeds, start, stop)

    def filtered_chunks(self, start: int, stop: int) -> list[tuple[bytes, int]]:
        """The chunks of file slice start..stop (start a multiple of
        tables.SLICE, the slices asked for in order) as tables.filtered_chunk
        gives them. The slices go in rounds of one a process (_filter_round)."""
        number = start // tables.SLICE
        if number not in self._filtered:
            done = _filter_round(self.exchange, self.local, self.bounds, self.seeds, number)
            assert done is not None, "process 0 gathers"
            self._filtered = {number + j: chunks for j, chunks in enumerate(done)}
        return self._filtered.pop(number)


def window_pieces(seeds: int, bounds: np.ndarray, start: int, stop: int) -> list[tuple[int, int, int]]:
    """File ranks start..stop-1 of layer `seeds` as (process, first rank in
    the slices' ORDER, length), in the file's order: who holds each run."""
    pieces = []
    for first, _first_in_file, length in index.file_pieces(seeds, start, stop, ORDER):
        while length > 0:
            owner = int(np.searchsorted(bounds, first, side="right")) - 1
            taken = min(length, int(bounds[owner + 1]) - first)
            pieces.append((owner, first, taken))
            first, length = first + taken, length - taken
    return pieces


def _gather_window(exchange, local, bounds, seeds, start, stop):
    # Each process sends its runs of the window in the file's order; process 0
    # knows the same runs and lays each where it belongs.
    pieces = window_pieces(seeds, bounds, start, stop)
    rank = exchange.rank
    lo = int(bounds[rank])
    mine = [local[first - lo : first - lo + length] for owner, first, length in pieces if owner == rank]
    piece = np.ascontiguousarray(np.concatenate(mine)) if mine else np.zeros(0, dtype=np.int8)
    counts = np.zeros(bounds.shape[0] - 1, dtype=np.int64)
    for owner, _first, length in pieces:
        counts[owner] += length
    arrived = exchange.gather_piece(piece, counts)
    if arrived is None:
        return None
    return _lay_runs(pieces, arrived, counts, stop - start)


def _lay_runs(pieces, arrived, counts, length):
    """A window of the file from what arrived, grouped by sender (counts[p]
    values from process p, each sender's runs in the window's order):
    every run of `pieces` (window_pieces') laid where it belongs."""
    window = np.empty(length, dtype=np.int8)
    taken = _offsets(counts)  # where each process's next run lies in what arrived
    at = 0
    for owner, _first, run in pieces:
        window[at : at + run] = arrived[taken[owner] : taken[owner] + run]
        taken[owner] += run
        at += run
    return window


def send_layer(exchange: Exchange, values: Any, bounds: np.ndarray, seeds: int) -> None:
    """A non-zero process's side of write_table(GatheredLayer): its part of
    every file slice sent, and the slices it deflates. `values`: this
    process's slice, an array or anything sliced as one (distributed_lean.SliceFile)."""
    slices = (index.layer_size(seeds) + tables.SLICE - 1) // tables.SLICE
    for first in range(0, slices, exchange.size):
        _filter_round(exchange, values, bounds, seeds, first)


def _filter_round(exchange: Exchange, local: np.ndarray, bounds: np.ndarray, seeds: int,
                  first: int) -> list[list[tuple[bytes, int]]] | None:
    """File slices first..first + P - 1 of layer `seeds` (tables.SLICE
    positions each; those past the layer's end are empty): process j is
    sent slice first + j by the owners of its runs (one all-to-all),
    deflates its chunks on its threads, and process 0 gathers them all.
    Returns, on process 0, each slice's chunks (tables.filtered_chunk's
    pairs); None elsewhere. One process deflating every chunk while the
    others waited made writing a layer 1.7 times as long as in one
    process."""
    size = index.layer_size(seeds)
    rank = exchange.rank
    lo = int(bounds[rank])
    windows = [(min(size, (first + j) * tables.SLICE), min(size, (first + j + 1) * tables.SLICE))
               for j in range(exchange.size)]
    parts = []
    counts = np.zeros(exchange.size, dtype=np.int64)
    for j, (start, stop) in enumerate(windows):  # my runs of each slice, for the process deflating it
        for owner, run_first, length in window_pieces(seeds, bounds, start, stop):
            if owner == rank:
                parts.append(local[run_first - lo : run_first - lo + length])
                counts[j] += length
    sent = np.ascontiguousarray(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int8)
    arrived, came = exchange.alltoallv(sent, counts)
    start, stop = windows[rank]
    window = _lay_runs(window_pieces(seeds, bounds, start, stop), arrived, came, stop - start)
    numbers = range(start // tables.CHUNK, (stop + tables.CHUNK - 1) // tables.CHUNK)
    with concurrent.futures.ThreadPoolExecutor(max_workers=numba.get_num_threads()) as pool:
        chunks = list(pool.map(tables.filtered_chunk, numbers, repeat(window), range(0, stop - start, tables.CHUNK)))
    return exchange.gather(chunks)
