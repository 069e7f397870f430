"""Where layers live in memory: one store of layer values, shared by the
builder, the probes and the search.

Kernels read layer m, rank r at ``flat[starts[m] + r]`` and test
``loaded[m]`` before they do. The store reserves address space for every
layer up to its ``max_seeds`` in one anonymous mapping (no memory is taken
until a page is written), each layer starting on a page boundary, so that
putting a layer costs exactly its size and dropping one gives its pages
back to the system at once. The builder solves a layer in place, in its
slot of the store: the finished values are already where the layers above
read them, with no copy.

The look-ups of a value in the store live here too, beside it: a move's
child (`move_value`, the builder's exits and every reader go through it), a
position (`value_packed`, one ply of look-up outside the index) and a
position the search may also know from a solved component (`known_value`).
"""

import contextlib
import gc
import mmap
import os
import threading

import numpy as np
from numba import njit

from . import index
from .rules import NOT_TERMINAL, ROW, board_seeds, legal_mask, play, terminal_value

PAGE = mmap.PAGESIZE
_MAP_NORESERVE = 0x4000  # Linux: reserve address space only; pages are taken when written


NOT_IN_USE = -1000  # move_value of a move whose child's layer is not in `use`: below every value
PARTIAL_OFFSET = 64  # solved-component values are kept as d + 64, so 0 means unknown


def reserve(size: int) -> tuple[mmap.mmap, np.ndarray]:
    """A zero-filled writable int8 array of `size` bytes whose pages are taken lazily."""
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
    try:
        area = mmap.mmap(-1, size, flags=flags | _MAP_NORESERVE)
    except OSError:
        area = mmap.mmap(-1, size, flags=flags)
    return area, np.frombuffer(area, dtype=np.int8)


def release(area: mmap.mmap) -> None:
    """Unmap a working area whose arrays were dropped. A view that a reference
    cycle still holds until the next collection makes close() raise (a CI run
    met one after a sliced layer was done): collect once and try again, and
    otherwise leave the unmapping to the last view's end. The callers gave the
    pages back already (MADV_DONTNEED), so nothing stays resident meanwhile."""
    try:
        area.close()
    except BufferError:
        gc.collect()
        with contextlib.suppress(BufferError):
            area.close()


BASE_BYTES = 512 << 20  # the process itself: interpreter, numba, HDF5, row tables (solver.plan budgets by it)


def first_fit(layers: list[int], room: int) -> list[list[int]]:
    """`layers` in groups of at most `room` bytes (a byte a position), first fit, largest first."""
    groups: list[list[int]] = []
    group_bytes: list[int] = []  # the smaller layers' bytes in each group
    for layer in sorted(layers, key=index.layer_size, reverse=True):
        size = index.layer_size(layer)
        for number, held in enumerate(group_bytes):
            if held + size <= room:
                group_bytes[number] += size
                groups[number].append(layer)
                break
        else:
            groups.append([layer])
            group_bytes.append(size)
    return [sorted(group) for group in groups] or [[]]


def available_memory() -> int:
    """Memory the system can give this process now (MemAvailable), in bytes."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


class LayerStore:
    """Values of any set of layers 0..max_seeds at one byte a position.

    `flat`, `starts` and `loaded` (a bool array indexed by seed count) are
    what kernels take. `put`, `layer` and `drop` manage the content.

    Threads: `put`, `mark_loaded`, `drop` and `grown` hold the store's lock,
    and a layer's flag is set only once its values are all in its slot, so a
    kernel that reads only layers flagged loaded sees complete values while
    another thread loads other layers. Dropping a layer that a kernel is
    reading is the caller's to prevent (the builder does it between layers).
    """

    def __init__(self, max_seeds: int) -> None:
        self.max_seeds = max_seeds
        self.starts = np.zeros(index.MAX_SEEDS + 2, dtype=np.int64)
        for seeds in range(index.MAX_SEEDS + 1):
            size = index.layer_size(seeds) if seeds <= max_seeds else 0
            self.starts[seeds + 1] = self.starts[seeds] + (size + PAGE - 1) // PAGE * PAGE
        self._area, self.flat = reserve(max(PAGE, int(self.starts[-1])))
        self.loaded = np.zeros(index.MAX_SEEDS + 1, dtype=np.bool_)
        self.lock = threading.RLock()

    def __repr__(self) -> str:
        layers = ", ".join(str(n) for n in self.layers())
        return f"LayerStore(max_seeds={self.max_seeds}, layers=[{layers}], resident={self.resident_bytes():,} B)"

    def layer(self, seeds: int) -> np.ndarray:
        """The writable slice of layer `seeds` (its slot, loaded or not)."""
        if not 0 <= seeds <= self.max_seeds:
            raise ValueError(f"this store holds layers 0..{self.max_seeds}, not {seeds}")
        return self.flat[self.starts[seeds] : self.starts[seeds] + index.layer_size(seeds)]

    def put(self, seeds: int, values: np.ndarray) -> None:
        """Copy `values` into the slot of layer `seeds` and mark it loaded."""
        with self.lock:
            self.layer(seeds)[:] = values
            self.loaded[seeds] = True

    def mark_loaded(self, seeds: int) -> None:
        """Layer `seeds` was written into its slot in place (by a builder or a reader)."""
        with self.lock:
            self.loaded[seeds] = True

    def drop(self, seeds: int) -> None:
        """Forget layer `seeds` and give its memory back (its slot reads as zeros)."""
        with self.lock:
            self.loaded[seeds] = False
            start, stop = int(self.starts[seeds]), int(self.starts[seeds + 1])
            if stop > start:
                self._area.madvise(mmap.MADV_DONTNEED, start, stop - start)

    def layers(self) -> list[int]:
        """Seed counts held, ascending."""
        return [int(n) for n in np.flatnonzero(self.loaded)]

    def resident_bytes(self) -> int:
        """Bytes of the layers held."""
        return sum(index.layer_size(n) for n in self.layers())

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(flat, starts, loaded): what kernels read the layers through."""
        return self.flat, self.starts, self.loaded

    def grown(self, max_seeds: int) -> "LayerStore":
        """A store with room up to `max_seeds` holding the same layers (self if it has room)."""
        if max_seeds <= self.max_seeds:
            return self
        store = LayerStore(max_seeds)
        with self.lock:
            for seeds in self.layers():
                store.put(seeds, self.layer(seeds))
        return store


# Look-ups ---------------------------------------------------------------------------


@njit(cache=True, inline="always")
def move_value(
    captured: int | np.integer,
    child_mover: np.uint64,
    child_opponent: np.uint64,
    seeds: int | np.integer,
    flat: np.ndarray,
    starts: np.ndarray,
    use: np.ndarray,
) -> int | np.int64:
    """captured - d(child) of a move from a position of `seeds` seeds that
    captured `captured` and led to the child (its words), d(child) read from
    the child's layer in `flat` (offsets `starts`); NOT_IN_USE when that
    layer is not marked in `use`. The one place a move's child is looked up
    in a layer: the builder's exits, the probe's one ply outside the index
    and the search's component explorer all go through it."""
    child_seeds = seeds - captured
    if not use[child_seeds]:
        return NOT_IN_USE
    child = index.rank_packed(child_mover, child_opponent, child_seeds)
    return captured - np.int64(flat[starts[child_seeds] + child])


@njit(cache=True)
def value_packed(
    mover: np.uint64, opponent: np.uint64, flat: np.ndarray, starts: np.ndarray, loaded: np.ndarray
) -> int | np.int64:
    """d of a packed position from the loaded layers; one ply when outside the index.

    Returns NOT_TERMINAL (127) when a layer it needs is not loaded.
    """
    seeds = board_seeds(mover, opponent)
    terminal = terminal_value(mover, opponent)
    if terminal != NOT_TERMINAL:
        return terminal
    if index.packed_in_index(opponent):
        if not loaded[seeds]:
            return NOT_TERMINAL
        return np.int64(flat[starts[seeds] + index.rank_packed(mover, opponent, seeds)])
    best: int | np.int64 = NOT_IN_USE
    mask = legal_mask(mover, opponent)
    for house in range(ROW):
        if mask & (1 << house):
            captured, child_mover, child_opponent = play(mover, opponent, house)
            value = move_value(captured, child_mover, child_opponent, seeds, flat, starts, loaded)
            if value == NOT_IN_USE:
                return NOT_TERMINAL
            if value > best:
                best = value
    return best


@njit(cache=True, inline="always")
def known_value(
    mover: np.uint64,
    opponent: np.uint64,
    seeds: int | np.integer,
    flat: np.ndarray,
    starts: np.ndarray,
    loaded: np.ndarray,
    partial: np.ndarray,
    partial_starts: np.ndarray,
) -> int | np.int64:
    """d of a non-terminal position from the loaded layers or from solved
    components (`partial`, values + PARTIAL_OFFSET at `partial_starts`, 0
    unknown), or NOT_TERMINAL when neither knows it."""
    if loaded[seeds]:
        return value_packed(mover, opponent, flat, starts, loaded)
    if partial_starts[seeds + 1] > partial_starts[seeds] and index.packed_in_index(opponent):
        stored = partial[partial_starts[seeds] + index.rank_packed(mover, opponent, seeds)]
        if stored != 0:
            return np.int64(stored) - PARTIAL_OFFSET
    return NOT_TERMINAL


@njit(cache=True, nogil=True)
def byte_histogram(values: np.ndarray) -> np.ndarray:
    """Counts of each byte value (index: the byte as unsigned) of an int8
    array, without the 8-bytes-a-position temporary np.bincount would make."""
    counts = np.zeros(256, dtype=np.int64)
    for value in values:
        counts[np.uint8(value)] += 1
    return counts
