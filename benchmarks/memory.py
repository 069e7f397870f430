"""This machine's scattered-update rate: the ceiling of a memory-bound builder.

    python benchmarks/memory.py [--size 2G] [--updates 200M] [--threads T] [--out memory.json]

One-byte read-modify-writes at random places of an array far larger than
the caches, as the builder's propagation makes them (a value byte or a
count nibble of a predecessor anywhere in the layer): plain (load, add,
store) and atomic (a locked add, as the builder's counts take), each with
and without prefetching (a batch of addresses computed and prefetched
before it is updated, as the builder batches predecessors), on one thread
and on all. The addresses come from a xorshift generator in the kernel, so
nothing but the updates touches memory. Prints one JSON object a variant
(updates a second) and a summary; --out writes the whole as one JSON file,
which `benchmarks/build.py --ceiling FILE` reads to say what share of the
ceiling each layer reached. The plain variant's concurrent updates may lose
increments (that is its point: no atomics); the rate is what is measured.

Before that, it times making the array's pages exist (a byte written in
each page of a new array), twice: new memory from the system, then the same
amount again just after giving the first back. A build writes every line of
its working state first in the exit pass, so it pays the first figure for
each. On a virtual machine whose host takes back the memory its guest left
free, new memory can cost a hundred times what reused memory does (here,
2026-12-03: 1 GiB in 9.8 s against 0.08 s).
"""

import argparse
import json
import os
import platform
import time

import numba
import numpy as np
from numba import njit, prange

from solver.intrinsics import atomic_add, prefetch

BATCH = 64  # addresses prefetched before they are updated (the builder's batch)
SLOTS = 256  # iterations of the parallel loop: numba cuts them among its threads


@njit(cache=True, inline="always")
def _next(state):
    state ^= state << np.uint64(13)
    state ^= state >> np.uint64(7)
    state ^= state << np.uint64(17)
    return state


@njit(cache=True, inline="always")
def _updates(array, mask, count, seed, atomic, prefetched, where):
    state = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15) | np.uint64(1)
    one = np.uint8(1)
    for first in range(0, count, BATCH):
        batch = min(BATCH, count - first)
        if prefetched:
            for j in range(batch):
                state = _next(state)
                where[j] = np.int64(state & mask)
                prefetch(array, where[j])
        else:
            for j in range(batch):
                state = _next(state)
                where[j] = np.int64(state & mask)
        for j in range(batch):
            if atomic:
                atomic_add(array, where[j], one)
            else:
                array[where[j]] += one


@njit(cache=True, parallel=True)
def scatter(array, count, threads, atomic, prefetched):
    """`count` random one-byte updates of `array` (its size a power of two),
    shared among `threads` loop shares."""
    mask = np.uint64(array.shape[0] - 1)
    where = np.empty((SLOTS, BATCH), dtype=np.int64)
    for slot in prange(threads):
        share = count // threads + (1 if slot < count % threads else 0)
        _updates(array, mask, share, slot + 1, atomic, prefetched, where[slot])


def amount(text, unit):
    """A number with an optional K, M or G suffix, in multiples of `unit` (1000 or 1024)."""
    scale = {"K": unit, "M": unit**2, "G": unit**3}.get(text[-1:].upper(), 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def first_touch(size):
    """(A new array of `size` bytes, its pages made to exist, and the seconds that took.)"""
    started = time.perf_counter()
    array = np.zeros(size, dtype=np.uint8)  # mapped lazily: each page is made on its first write
    array[::4096] = 1
    return array, time.perf_counter() - started


def measure(size, updates, threads_list, repeats=3):
    """Rows of (variant, updates a second, best of `repeats`), after the
    rows of first_touch: new memory, then memory just given back."""
    size = 1 << (size.bit_length() - 1)  # a power of two, at most the size asked
    array, seconds = first_touch(size)
    rows = [{"benchmark": "memory-first-touch", "memory": "new", "bytes": size, "seconds": seconds,
             "bytes_per_second": size / seconds}]
    del array
    array, seconds = first_touch(size)  # the pages exist before the updates are timed
    rows.append({"benchmark": "memory-first-touch", "memory": "given back just before", "bytes": size,
                 "seconds": seconds, "bytes_per_second": size / seconds})
    for threads in threads_list:
        numba.set_num_threads(threads)
        for atomic in (False, True):
            for prefetched in (False, True):
                scatter(array, 1000, threads, atomic, prefetched)  # compile or load, outside the timing
                best = None
                for _ in range(repeats):
                    started = time.perf_counter()
                    scatter(array, updates, threads, atomic, prefetched)
                    seconds = time.perf_counter() - started
                    best = seconds if best is None else min(best, seconds)
                rows.append({"benchmark": "memory", "array_bytes": size, "threads": threads,
                             "update": "atomic" if atomic else "plain", "prefetch": prefetched,
                             "updates": updates, "seconds": best, "updates_per_second": updates / best})
    return rows


def ceiling(rows):
    """The builder's ceiling: atomic, prefetched updates on all threads."""
    rows = [row for row in rows if row["benchmark"] == "memory"]
    threads = max(row["threads"] for row in rows)
    return max(row["updates_per_second"] for row in rows
               if row["threads"] == threads and row["update"] == "atomic" and row["prefetch"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="2G", help="array size (rounded down to a power of two)")
    parser.add_argument("--updates", default="200M", help="updates a measurement (K, M, G suffixes)")
    parser.add_argument("--threads", type=int, default=numba.config.NUMBA_NUM_THREADS, help="all threads")
    parser.add_argument("--repeats", type=int, default=3, help="measurements a variant (the best is kept)")
    parser.add_argument("--out", default=None, help="also write the rows and summary to this JSON file")
    args = parser.parse_args()
    size = amount(args.size, 1024)
    updates = amount(args.updates, 1000)
    threads_list = sorted({1, args.threads})
    rows = measure(size, updates, threads_list, args.repeats)
    for row in rows:
        print(json.dumps(row), flush=True)
    touches = [row for row in rows if row["benchmark"] == "memory-first-touch"]
    summary = {"benchmark": "memory-summary", "ceiling_updates_per_second": ceiling(rows),
               "ceiling_is": f"atomic, prefetched, {max(threads_list)} threads",
               "first_touch_bytes_per_second": {row["memory"]: row["bytes_per_second"] for row in touches},
               "machine": platform.machine(), "cpus": os.cpu_count(), "load_average": os.getloadavg()}
    print(json.dumps(summary, indent=2))
    for row in touches:
        print(f"first touch, {row['memory']:>22}: {row['bytes'] / 2**30:.1f} GiB in {row['seconds']:.2f} s "
              f"({row['bytes_per_second'] / 2**30:.2f} GiB/s)")
    for row in rows:
        if row["benchmark"] != "memory":
            continue
        print(f"{row['threads']} thread(s) {row['update']:>6} {'prefetched' if row['prefetch'] else 'one by one':>10}: "
              f"{row['updates_per_second'] / 1e6:7.1f} M updates/s")
    if args.out:
        with open(args.out, "w") as handle:
            json.dump({"rows": rows, "summary": summary}, handle, indent=1)


if __name__ == "__main__":
    main()
