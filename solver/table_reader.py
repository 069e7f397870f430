"""The tables a Searcher reads into memory, and the layers it does without.

A Searcher's kernels read the layers held whole in its Tablebase's store. A
TableReader chooses them (up to a seed count, or as many as fit in a number
of bytes), reads them smallest first, now or in a thread of its own, and
keeps the layers it could not read in `left_out`: a damaged, swapped or
vanished file, a pipe or a folder under a layer's name. A layer left out is
named once (on standard error unless told otherwise) and the search goes on
without it, as if it were not built. A Tablebase closed while the reader
runs leaves out every layer still to read; nothing is ever raised in the
reader's thread.
"""

from __future__ import annotations

import atexit
import re
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterable

from . import index
from .errors import TablebaseClosedError, TableError
from .layers import available_memory
from .probe import WHOLE_LAYER_LIMIT, Tablebase

DEFAULT_TABLE_SHARE = 0.25  # of the memory available when the Searcher starts, for tables read in the background
_LAYER_FILE = re.compile(r"awele-([0-9]{2})\.h5")  # a layer's file name, as table errors give its path

# Background readers, stopped between two layers when the interpreter exits:
# a daemon thread caught inside HDF5 while atexit closes its files would hold
# the exit up (or deadlock on h5py's lock).
_EXITING = threading.Event()
_READERS: weakref.WeakSet[threading.Thread] = weakref.WeakSet()


@atexit.register
def _stop_readers() -> None:
    _EXITING.set()
    for thread in list(_READERS):
        thread.join()


# Said earlier too, as the interpreter starts to exit: the thread pool a read
# uses is shut down then (concurrent.futures registers there), and a layer it
# was reading fails, which is no damage of the layer.
getattr(threading, "_register_atexit", atexit.register)(_EXITING.set)


def default_table_bytes() -> int:
    """Bytes of tables a Searcher reads by default: DEFAULT_TABLE_SHARE of the
    memory available now."""
    return int(available_memory() * DEFAULT_TABLE_SHARE)


def failing_layer(error: BaseException) -> int | None:
    """The layer a table error names (by its file), None when it names none."""
    match = _LAYER_FILE.search(str(error))
    return int(match.group(1)) if match else None


def _say_on_stderr(message: str) -> None:
    try:
        sys.stderr.write(f"awele: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class TableReader:
    """The layers of `tablebase` read for a search, chosen at construction:

    - `max_table_seeds` given: every built layer up to it, read now;
    - `table_bytes` given: as many layers, smallest first, as fit in that
      many bytes, read now;
    - neither: as many as fit in default_table_bytes(), the first read now
      and the others by a thread of their own (a layer becomes visible to
      the kernels only once read whole and checked).

    `log` is called once for each layer left out, with one line naming it
    and why (default: standard error).
    """

    def __init__(self, tablebase: Tablebase, max_table_seeds: int | None = None, table_bytes: int | None = None,
                 log: Callable[[str], None] | None = None) -> None:
        self.tablebase = tablebase
        self.log = log or _say_on_stderr
        # {layer: the error}: damaged, swapped or vanished layers the search does without
        self.left_out: dict[int, Exception] = {}
        self.budget: int | None = None  # bytes of tables to read, when chosen by bytes
        self._coming: set[int] = set()  # layers the background thread is still to read
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()  # stop(): the owner is done with the tables
        self._lock = threading.Lock()  # left_out and _coming, written by both threads
        built = sorted(tablebase.layers())
        if max_table_seeds is not None:
            self._read_now([n for n in built if n <= max_table_seeds])
            return
        background = table_bytes is None
        budget = self.budget = default_table_bytes() if table_bytes is None else table_bytes
        wanted, used = [], 0
        for n in built:
            used += index.layer_size(n)
            if used > budget:
                break
            wanted.append(n)
        if not background or len(wanted) < 2:
            self._read_now(wanted)
            return
        # The first read sizes the store for every built layer; the rest then
        # only fill their slots, so a kernel reading the store while the next
        # layer arrives sees each layer absent or whole (its `loaded` flag is
        # set after its values are in and checked).
        self._read_now(wanted[:1])
        self._coming = set(wanted[1:])
        self._thread = threading.Thread(target=self._read_in_background, args=(wanted[1:],),
                                        name="awele-tables", daemon=True)
        _READERS.add(self._thread)
        self._thread.start()

    def _read_now(self, layers: list[int]) -> None:
        """Read `layers` before returning; a closed Tablebase is the caller's error."""
        for n in layers:
            self._read(n)

    def _read_in_background(self, layers: list[int]) -> None:
        for i, n in enumerate(layers):
            if _EXITING.is_set() or self._stopping.is_set():
                return  # the interpreter is exiting (HDF5 is being closed), or the owner is done
            try:
                self._read(n, quiet_at_exit=True)
            except TablebaseClosedError as error:
                for rest in layers[i:]:
                    self.leave_out(rest, error, quiet=True)
                if not self._stopping.is_set():
                    self.log(f"the tables were closed: layers {n}..{layers[-1]} are left out of the search")
                return
            except Exception as error:  # never a traceback in this thread: a failure not foreseen is said, and left out
                if not _EXITING.is_set():
                    self.leave_out(n, error)
            finally:
                with self._lock:
                    self._coming.discard(n)

    def stop(self, timeout: float | None = None) -> None:
        """The owner is done with the tables (it may close them next): the
        background thread reads no further layer and says nothing of a
        Tablebase closed under it; waits up to `timeout` seconds for it."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _read(self, seeds: int, quiet_at_exit: bool = False) -> None:
        """Read layer `seeds` whole; a file that cannot be (damaged, swapped,
        vanished, not a file) is left out. TablebaseClosedError goes up.
        `quiet_at_exit`: a read that fails as the interpreter exits is dropped."""
        try:
            self.tablebase.load(seeds)
        except TablebaseClosedError:
            raise
        except (TableError, OSError) as error:
            if not (quiet_at_exit and _EXITING.is_set()):
                self.leave_out(seeds, error)

    def leave_out(self, seeds: int, error: Exception, quiet: bool = False) -> None:
        """Do without layer `seeds` from now on (named once, unless `quiet`)."""
        with self._lock:
            if seeds in self.left_out:
                return
            self.left_out[seeds] = error
        if not quiet:
            self.log(f"layer {seeds} is left out of the search: {error}")

    def usable(self, seeds: int) -> bool:
        """Whether layer `seeds` has a file and is not left out."""
        return seeds not in self.left_out and self.tablebase.has_layer(seeds)

    def reading(self) -> bool:
        """Whether the background thread is still reading layers into memory."""
        return self._thread is not None and self._thread.is_alive()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the background thread has read its layers; True when it has."""
        if self._thread is not None:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        return True

    def wait_for(self, layers: Iterable[int], deadline: float | None) -> None:
        """Wait (until `deadline`, time.perf_counter()) while the background
        thread is still to read one of `layers`. It reads smallest first, so
        this is seldom long."""
        needed = set(layers)
        while self.reading() and (deadline is None or time.perf_counter() < deadline):
            with self._lock:
                if not needed & self._coming:
                    return
            assert self._thread is not None, "reading() means a thread"
            self._thread.join(0.01)

    def in_time(self, seeds: int, deadline: float) -> bool:
        """Whether layer `seeds` can be probed within a time limit: it is in
        memory, or no background thread runs, or the layer is small (read
        whole at its first probe, as the thread, smallest first, would soon),
        or the thread brings it in by `deadline` (waited for). Otherwise
        probes of its file would wait for HDF5, which the thread holds
        through each of its reads."""
        if self.tablebase.is_loaded(seeds) or not self.reading() or index.layer_size(seeds) <= WHOLE_LAYER_LIMIT:
            return True
        self.wait_for([seeds], deadline)
        return self.tablebase.is_loaded(seeds)

    def layers_in(self) -> int:
        """The layers in memory now, as a bit mask (bit n: layer n)."""
        loaded = self.tablebase.store.loaded
        return sum(1 << n for n in range(loaded.shape[0]) if loaded[n])
