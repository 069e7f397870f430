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
"""

import mmap
import os
import threading

import numpy as np

from . import index

PAGE = mmap.PAGESIZE
_MAP_NORESERVE = 0x4000  # Linux: reserve address space only; pages are taken when written


def _reserve(size):
    """A zero-filled writable int8 array of `size` bytes whose pages are taken lazily."""
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
    try:
        area = mmap.mmap(-1, size, flags=flags | _MAP_NORESERVE)
    except OSError:
        area = mmap.mmap(-1, size, flags=flags)
    return area, np.frombuffer(area, dtype=np.int8)


def available_memory():
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

    def __init__(self, max_seeds):
        self.max_seeds = max_seeds
        self.starts = np.zeros(index.MAX_SEEDS + 2, dtype=np.int64)
        for seeds in range(index.MAX_SEEDS + 1):
            size = index.layer_size(seeds) if seeds <= max_seeds else 0
            self.starts[seeds + 1] = self.starts[seeds] + (size + PAGE - 1) // PAGE * PAGE
        self._area, self.flat = _reserve(max(PAGE, int(self.starts[-1])))
        self.loaded = np.zeros(index.MAX_SEEDS + 1, dtype=np.bool_)
        self.lock = threading.RLock()

    def __repr__(self):
        layers = ", ".join(str(n) for n in self.layers())
        return f"LayerStore(max_seeds={self.max_seeds}, layers=[{layers}], resident={self.resident_bytes():,} B)"

    def layer(self, seeds):
        """The writable slice of layer `seeds` (its slot, loaded or not)."""
        if not 0 <= seeds <= self.max_seeds:
            raise ValueError(f"this store holds layers 0..{self.max_seeds}, not {seeds}")
        return self.flat[self.starts[seeds] : self.starts[seeds] + index.layer_size(seeds)]

    def put(self, seeds, values):
        """Copy `values` into the slot of layer `seeds` and mark it loaded."""
        with self.lock:
            self.layer(seeds)[:] = values
            self.loaded[seeds] = True

    def mark_loaded(self, seeds):
        """Layer `seeds` was written into its slot in place (by a builder or a reader)."""
        with self.lock:
            self.loaded[seeds] = True

    def drop(self, seeds):
        """Forget layer `seeds` and give its memory back (its slot reads as zeros)."""
        with self.lock:
            self.loaded[seeds] = False
            start, stop = int(self.starts[seeds]), int(self.starts[seeds + 1])
            if stop > start:
                self._area.madvise(mmap.MADV_DONTNEED, start, stop - start)

    def layers(self):
        """Seed counts held, ascending."""
        return [int(n) for n in np.flatnonzero(self.loaded)]

    def resident_bytes(self):
        """Bytes of the layers held."""
        return sum(index.layer_size(n) for n in self.layers())

    def arrays(self):
        """(flat, starts, loaded): what kernels read the layers through."""
        return self.flat, self.starts, self.loaded

    def grown(self, max_seeds):
        """A store with room up to `max_seeds` holding the same layers (self if it has room)."""
        if max_seeds <= self.max_seeds:
            return self
        store = LayerStore(max_seeds)
        with self.lock:
            for seeds in self.layers():
                store.put(seeds, self.layer(seeds))
        return store
