"""Retrograde analysis: the exact value of every position of one layer.

Layer n holds the positions with n seeds on the board (see solver.index).
Capturing moves leave the layer for a smaller one, already solved; the best
of them is the position's *exit* value E(s) = max(captured - d(child)).
Terminal positions have E = +n (rule 5) or -n (rule 6) and no moves.
Non-capturing moves stay in the layer and can cycle, which is what makes the
layer hard.

Exits need the smaller layers n-15..n-2 (a capture takes at least 2 seeds
and at most 15: five opponent houses of 3). They are
found in one or more passes over the layer, each with a group of smaller
layers in memory, keeping the best so far; the stages then need layer n
alone. That is what lets a layer be built when its smaller layers do not
all fit in memory beside it.

Staged algorithm (the widening window of Romein and Bal, one pass per layer).
For k = n, n-1, ..., 1, stage k resolves exactly the positions with |d| = k,
given that every position with |d| > k is already resolved. Each position
keeps a count of its non-capturing children not yet resolved (all resolved
children of an unresolved position are positive: a negative one would have
resolved it).

* Seeds: an unresolved s with E(s) = k is +k; one with E(s) = -k and no
  unresolved child is -k.
* Propagation: when c is resolved at -k, every unresolved predecessor is +k;
  when c is resolved at +k, each unresolved predecessor counts one child
  less, and one left with none and E <= -k is -k.

Once stage 1 ends, what is left is endless play: d = 0.

Working state: 64/42 = 1.52 bytes a position. The value byte holds the
value once a position is resolved (a number in [-48, 48]); before that it
holds the position's exit value E as a *pending code*, E with its top bit
flipped, which always falls outside [-48, 48] (E = -infinity is stored as
-49). The count of unresolved children (at most 6) and the FRESH bit share
a nibble: two positions a byte. A layer is solved in the *lined* layout:
64-byte lines (one cache line each) of 42 value bytes followed by their 21
count bytes, so that a predecessor told of a won child costs one miss, not
one in a value array and one in a count array. Once solved, the values are
moved into the layer's slot in the LayerStore, where the layers above read
them and the file is written from, a piece at a time, each piece of lines
given back to the system as it is moved. The distributed build keeps its
slices in the plain layout (values[rank], counts[rank >> 1], 1.5 bytes a
position); the kernels take either (`lined`: value_at, count_at).

Parallel scheme. Work is split into blocks of ranks. A propagation sweep
takes the blocks flagged in the last sweep; for each FRESH position of its
block, a thread generates the predecessors by un-sowing and updates them
wherever they are, with byte atomics: a compare-and-swap of the pending
code claims an unresolved position (so exactly one thread resolves it and
flags it FRESH), and an atomic decrement of its nibble counts down its
children (a count never goes below zero: each child edge is told once, so
the neighbouring nibble is never borrowed from). FRESH is cleared only by
the block's owner, so every resolved position is propagated exactly once.
Sweeps repeat until one finds nothing FRESH; flags for the next sweep go to
a second array, so none is lost while a sweep reads the first.

Sharing the work. Every parallel loop hands its blocks out through a shared
atomic counter (_take): a thread takes the next block when it is free, so a
thread whose core is taken by another process does less and the others do
more, instead of every sweep waiting for a fixed half. A sweep over a few
blocks, or a scan of a small layer, runs on one thread. The exit pass
gathers a block's captures and prefetches their children's values before
it reads them, so those misses in the smaller layers overlap.
"""

import contextlib
import mmap
import os
import time
from collections import namedtuple
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numba
import numpy as np
from numba import njit, prange

from . import index
from .intrinsics import atomic_add, atomic_and, atomic_or, atomic_sub, compare_and_swap, prefetch
from .layers import LayerStore, byte_histogram, move_value
from .layers import _reserve as reserve  # the store's lazily backed mapping, for the working lines
from .rules import LAP_MASKS, RANGE_MASKS, ROW, ROW_ONES, legal_mask, play, terminal_value

MAX_VALUE = index.MAX_SEEDS  # every resolved value lies in [-MAX_VALUE, MAX_VALUE]
NO_EXIT = -MAX_VALUE - 1  # E of a position without capturing moves (-infinity)
PENDING = 0x80  # pending code = exit value with this bit flipped
FRESH = 0x8  # bit of a position's nibble: resolved, predecessors not yet told
CHILDREN = 0x7  # bits of the nibble: non-capturing children not resolved
MAX_CAPTURE = 15  # the most seeds one move captures: layers n-15..n-2 are the exits'
WORKING_BYTES = 64 / 42  # working bytes a position of the layer being built (the lined layout)

LINE = 64  # bytes of a line of the lined layout (a cache line): LINE_RANKS value bytes, then their count bytes
LINE_RANKS = 42  # ranks a line holds: 42 value bytes and 21 count bytes, one byte unused (even: whole count bytes)
LINE_VALUE_WORDS = (LINE_RANKS + 7) // 8  # words of a line its value bytes lie in
COUNT_HEAD = np.uint64(0xFFFFFFFFFFFF0000)  # the count bytes (42..47) of a line's sixth word
FRESH_NIBBLES = np.uint64(0x8888888888888888)  # the FRESH bit of every nibble of a word
COMPACT_LINES = 1 << 18  # lines (16 MiB) moved to the layer's slot, then given back to the system, at a time
BLOCK = 1 << 8  # ranks per block: the unit of work one thread owns (even: whole count bytes)
WALK_LIMIT = 8  # step with the successor walk over gaps up to this, else unrank
BATCH = 64  # predecessor ranks gathered (and prefetched) before they are updated
WORK_SLOTS = 256  # iterations of a kernel's shared loop: numba cuts them among its threads, and each
# takes chunks of the work until none is left (more slots than any thread count; a slot finding no work ends)
SEED_CHUNK = 64  # blocks a thread takes at once when it scans for a stage's seeds (the others take 1)
RANK_CHUNK = 1 << 14  # ranks (or received updates) a thread takes at once in the flat loops
SERIAL_BLOCKS = 8  # a sweep over this few flagged blocks runs on one thread: waking the others costs more
SERIAL_SIZE = 1 << 16  # a layer this small is scanned (exits, seeds) on one thread, for the same reason
MAX_PREDECESSORS = 6 * 5 * 11  # a bound on the predecessors of one position
HIGH_BITS = np.uint64(0x0000808080808080)  # bit 7 of each house lane: borrow detector
BYTE_ONES = np.uint64(0x0101010101010101)


COMPILE_SECONDS = 30  # numba's first compilation of the builder's kernels on 2 cores, measured


def kernels_cached() -> bool:
    """Whether numba's cache holds the builder's kernels (else the first build compiles them)."""
    # Numba's own idea of where the cache is ($NUMBA_CACHE_DIR or __pycache__).
    folder = getattr(getattr(propagate, "_cache", None), "_cache_path", None) or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "__pycache__")
    try:
        return any(name.startswith("retrograde.propagate-") and name.endswith(".nbi") for name in os.listdir(folder))
    except OSError:
        return False


def working_bytes(size: int) -> int:
    """Memory of `size` positions while they are solved: their lines (a
    value byte and a nibble of counts a position, 64 bytes for 42), two
    flag bytes a block, and the last piece of lines not yet given back when
    the values are moved to the layer's slot (LayerSolver.solve)."""
    lines = (size + LINE_RANKS - 1) // LINE_RANKS
    return lines * LINE + 2 * ((size + BLOCK - 1) // BLOCK) + min(lines, COMPACT_LINES) * LINE


def exit_layers(seeds: int) -> list[int]:
    """The smaller layers captures from layer `seeds` lead to."""
    return list(range(max(0, seeds - MAX_CAPTURE), max(0, seeds - 1)))


@njit(cache=True, inline="always")
def pending(exit: int | np.integer) -> np.int8:
    """The value byte of an unresolved position whose exit value is `exit`."""
    code = (exit & 0xFF) ^ PENDING
    return np.int8(code - 256 if code > 127 else code)


@njit(cache=True, inline="always")
def pending_exit(code: int | np.integer) -> int | np.int64:
    """The exit value held by a pending code."""
    exit = (np.int64(code) & 0xFF) ^ PENDING
    return exit - 256 if exit > 127 else exit


@njit(cache=True, inline="always")
def resolved(code: int | np.integer) -> bool | np.bool_:
    return -MAX_VALUE <= code <= MAX_VALUE


@njit(cache=True, inline="always")
def value_at(lined: bool, rank: int) -> int:
    """Where the value byte of `rank` is: values[rank], or in the lined
    layout (values and counts one array of 64-byte lines) byte rank % 42 of
    line rank // 42."""
    if lined:
        return (rank // LINE_RANKS) * LINE + rank % LINE_RANKS
    return rank


@njit(cache=True, inline="always")
def count_at(lined: bool, rank: int) -> int:
    """Where the count byte of `rank` is (its nibble: (rank & 1) << 2, in
    both layouts, a line holding an even number of ranks): counts[rank >> 1],
    or in the lined layout byte 42 + (rank % 42) // 2 of its line."""
    if lined:
        return (rank // LINE_RANKS) * LINE + LINE_RANKS + ((rank % LINE_RANKS) >> 1)
    return rank >> 1


@njit(cache=True, inline="always")
def _nibble(counts, lined, rank):
    return (np.int64(counts[count_at(lined, rank)]) >> ((rank & 1) << 2)) & 0xF


@njit(cache=True, inline="always")
def _position_at(rank, current, mover, opponent, seeds, rows):
    """Words of `rank`, stepping from (current, mover, opponent) when it is close."""
    if current >= 0 and 0 <= rank - current <= WALK_LIMIT:
        while current < rank:
            _ok, mover, opponent = index.next_packed(mover, opponent, seeds)
            current += 1
        return mover, opponent
    return index.unrank_fast(seeds, rank, rows[0], rows[1], rows[2], rows[3])


@njit(cache=True, inline="always")
def _take(counter, step):
    """The first of the next `step` items of a loop whose items the threads
    take as they become free (counter[0]: the next item not taken). Sharing
    a loop this way, not in fixed shares, keeps a build steady when another
    process holds a core: the thread that lost its core takes less."""
    return atomic_add(counter, 0, np.int64(step))


@njit(cache=True, inline="always")
def best_capture(
    mover: np.uint64,
    opponent: np.uint64,
    seeds: int | np.integer,
    flat: np.ndarray,
    starts: np.ndarray,
    use: np.ndarray,
) -> tuple[int | np.int64, int]:
    """(best over the capturing moves whose layer is in `use` of captured -
    d(child), or NO_EXIT; the number of non-capturing moves)."""
    mask = legal_mask(mover, opponent)
    best: int | np.int64 = NO_EXIT
    children = 0
    for house in range(ROW):
        if mask & (1 << house):
            captured, child_mover, child_opponent = play(mover, opponent, house)
            if captured > 0:
                value = move_value(captured, child_mover, child_opponent, seeds, flat, starts, use)
                if value > best:  # never NOT_IN_USE: it is below NO_EXIT
                    best = value
            else:
                children += 1
    return best, children


@njit(cache=True, inline="always")
def exit_value(
    mover: np.uint64,
    opponent: np.uint64,
    seeds: int | np.integer,
    flat: np.ndarray,
    starts: np.ndarray,
    use: np.ndarray,
) -> int | np.int64:
    """E(s): the terminal value when there is no move, else the best capture
    into the layers in `use`, or NO_EXIT."""
    if legal_mask(mover, opponent) == 0:
        return terminal_value(mover, opponent)
    return best_capture(mover, opponent, seeds, flat, starts, use)[0]


@njit(cache=True, inline="always")
def child_at(
    captured: int,
    child_mover: np.uint64,
    child_opponent: np.uint64,
    seeds: int,
    starts: np.ndarray,
) -> int:
    """Where in `flat` (offsets `starts`) move_value reads the value of a
    capture's child: the exit pass computes it first and reads it later."""
    child_seeds = seeds - captured
    return starts[child_seeds] + index.rank_packed(child_mover, child_opponent, child_seeds)


@njit(cache=True, inline="always")
def _exit_block(seeds, start, stop, values, counts, lined, flat, starts, use, first, rows, where, gains, owners):
    """The exits of ranks start..stop-1 (see exit_pass); returns the look-ups made.

    The block's captures are gathered first, their children's value bytes
    prefetched as they are found, and only then read: the misses of those
    scattered reads in the smaller layers overlap instead of following one
    another. The best capture is kept as best_capture keeps it.
    """
    mover, opponent = index.unrank_fast(seeds, start, rows[0], rows[1], rows[2], rows[3])
    asked = 0
    for rank in range(start, stop):
        mask = legal_mask(mover, opponent)
        at_value = value_at(lined, rank)
        if mask == 0:
            if first:
                values[at_value] = pending(terminal_value(mover, opponent))
        else:
            children = 0
            for house in range(ROW):
                if mask & (1 << house):
                    captured, child_mover, child_opponent = play(mover, opponent, house)
                    if captured == 0:
                        children += 1
                    elif use[seeds - captured]:
                        at = child_at(captured, child_mover, child_opponent, seeds, starts)
                        prefetch(flat, at)  # type: ignore[call-arg, arg-type]  # numba's @intrinsic passes typingctx
                        where[asked] = at
                        gains[asked] = captured
                        owners[asked] = at_value
                        asked += 1
            if first:
                values[at_value] = pending(NO_EXIT)
                counts[count_at(lined, rank)] |= np.uint8(children << ((rank & 1) << 2))
        _ok, mover, opponent = index.next_packed(mover, opponent, seeds)
    for j in range(asked):
        exit = gains[j] - np.int64(flat[where[j]])
        if exit > pending_exit(values[owners[j]]):
            values[owners[j]] = pending(exit)
    return asked


@njit(cache=True, parallel=True)
def exit_pass(
    seeds: int,
    size: int,
    values: np.ndarray,
    counts: np.ndarray,
    flat: np.ndarray,
    starts: np.ndarray,
    use: np.ndarray,
    first: bool,
    rows: tuple[np.ndarray, ...],
    lined: bool,
) -> int:
    """One pass of exits over the layer, with the smaller layers marked in `use`.

    The first pass writes every position's pending code (terminal value, or
    its best capture into `use`) and its count of non-capturing children;
    a later one raises the pending code where a capture into `use` does
    better. Threads take whole blocks, hence whole count bytes, as they
    become free. Returns the look-ups made in the smaller layers. With
    `lined`, values and counts are one array in the lined layout
    (value_at, count_at) and `size` ranks are solved.
    """
    blocks = (size + BLOCK - 1) // BLOCK
    counter = np.zeros(1, dtype=np.int64)
    asked = np.zeros(WORK_SLOTS, dtype=np.int64)
    where = np.empty((WORK_SLOTS, BLOCK * ROW), dtype=np.int64)
    gains = np.empty((WORK_SLOTS, BLOCK * ROW), dtype=np.int64)
    owners = np.empty((WORK_SLOTS, BLOCK * ROW), dtype=np.int64)
    for slot in prange(WORK_SLOTS):
        while True:
            block = _take(counter, 1)
            if block >= blocks:
                break
            start = block * BLOCK
            asked[slot] += _exit_block(seeds, start, min(size, start + BLOCK), values, counts, lined, flat, starts, use,
                                       first, rows, where[slot], gains[slot], owners[slot])
    return asked.sum()


RANK_BITS = 40  # an exit request names the child as layer << RANK_BITS | rank (a layer has < 2**38 positions)


@njit(cache=True, inline="always")
def _request_block(seeds, lo, start, first, last, values, counts, rows, keys, gains):
    """exit_requests for ranks first..last-1."""
    mover, opponent = index.unrank_fast(seeds, first, rows[0], rows[1], rows[2], rows[3])
    for rank in range(first, last):
        local = rank - lo
        slot = (rank - start) * ROW
        mask = legal_mask(mover, opponent)
        children = 0
        for house in range(ROW):
            keys[slot + house] = -1
            if mask & (1 << house):
                captured, child_mover, child_opponent = play(mover, opponent, house)
                if captured > 0:
                    child_seeds = seeds - captured
                    child = index.rank_packed(child_mover, child_opponent, child_seeds)
                    keys[slot + house] = (np.int64(child_seeds) << RANK_BITS) | child
                    gains[slot + house] = captured
                else:
                    children += 1
        if mask == 0:
            values[local] = pending(terminal_value(mover, opponent))
        else:
            values[local] = pending(NO_EXIT)
            counts[local >> 1] |= np.uint8(children << ((local & 1) << 2))
        _ok, mover, opponent = index.next_packed(mover, opponent, seeds)


@njit(cache=True, parallel=True)
def exit_requests(
    seeds: int,
    lo: int,
    start: int,
    stop: int,
    values: np.ndarray,
    counts: np.ndarray,
    rows: tuple[np.ndarray, ...],
    keys: np.ndarray,
    gains: np.ndarray,
) -> None:
    """The exit pass of a slice whose smaller layers are spread over processes.

    For ranks start..stop-1 (values[0] being rank lo; start - lo a multiple
    of BLOCK) it writes what the first exit_pass writes, except that the
    captures are not looked up: a terminal position gets its value's
    pending code, any other NO_EXIT's and its count of non-capturing
    children, and each capturing move becomes a request for its child's
    owner: keys[ROW * i + house] = child layer << RANK_BITS | child rank and
    gains[...] = seeds captured, i being rank - start (-1 where there is
    none). raise_exits() then applies the answers.
    """
    blocks = (stop - start + BLOCK - 1) // BLOCK
    counter = np.zeros(1, dtype=np.int64)
    for _slot in prange(WORK_SLOTS):
        while True:
            block = _take(counter, 1)
            if block >= blocks:
                break
            _request_block(seeds, lo, start, start + block * BLOCK, min(stop, start + (block + 1) * BLOCK), values,
                           counts, rows, keys, gains)


@njit(cache=True)
def raise_exits(values: np.ndarray, origins: np.ndarray, gains: np.ndarray, answers: np.ndarray) -> None:
    """Apply answered exit requests: position origins[j] (an index into
    values) captured gains[j] seeds into a child worth answers[j]; its
    pending code is raised to the best capture (as best_capture keeps it)."""
    for j in range(origins.shape[0]):
        exit = np.int64(gains[j]) - np.int64(answers[j])
        if exit > pending_exit(values[origins[j]]):
            values[origins[j]] = pending(exit)


@njit(cache=True, inline="always")
def _has_byte(word, byte_pattern):
    """Whether any byte of `word` equals the byte repeated in `byte_pattern`."""
    diff = word ^ byte_pattern
    return ((diff - BYTE_ONES) & ~diff & np.uint64(0x8080808080808080)) != 0


@njit(cache=True, inline="always")
def _seed_rank(stage, rank, values, counts, lined):
    """Resolve `rank` if it is a seed of the stage (flagged FRESH); 1 if it was."""
    at = value_at(lined, rank)
    code = values[at]
    if code == pending(stage):
        values[at] = stage
    elif code == pending(-stage) and _nibble(counts, lined, rank) & CHILDREN == 0:
        values[at] = -stage
    else:
        return 0
    counts[count_at(lined, rank)] |= np.uint8(FRESH << ((rank & 1) << 2))
    return 1


@njit(cache=True)
def _seed_block(stage, start, stop, values, counts, lined, value_words, plus, minus):
    """The seeds of ranks start..stop-1, looked for in the words holding a
    pending code of +stage or -stage (in the lined layout, the words of a
    line's value bytes; the last of them also holds count bytes, which can
    only make a word looked into for nothing)."""
    count = 0
    if lined:
        for line in range(start // LINE_RANKS, (stop - 1) // LINE_RANKS + 1):
            for word in range(LINE_VALUE_WORDS):
                bits = value_words[line * (LINE // 8) + word]
                if not (_has_byte(bits, plus) or _has_byte(bits, minus)):
                    continue
                for slot in range(8 * word, min(8 * word + 8, LINE_RANKS)):
                    rank = line * LINE_RANKS + slot
                    if start <= rank < stop:
                        count += _seed_rank(stage, rank, values, counts, lined)
        return count
    for word in range(start // 8, (stop + 7) // 8):
        bits = value_words[word]
        if not (_has_byte(bits, plus) or _has_byte(bits, minus)):
            continue
        for rank in range(word * 8, min(stop, word * 8 + 8)):
            count += _seed_rank(stage, rank, values, counts, lined)
    return count


@njit(cache=True, parallel=True)
def seed_stage(
    stage: int, size: int, values: np.ndarray, counts: np.ndarray, value_words: np.ndarray, flags: np.ndarray,
    lined: bool,
) -> int:
    """Resolve the stage's seeds among the `size` ranks in place (E = +stage,
    or E = -stage with no unresolved child) and flag their blocks; return
    how many.

    The value bytes are scanned eight at a time (as words of `value_words`),
    looking only into words that hold the pending code of +stage or -stage.
    """
    blocks = flags.shape[0]
    plus = np.uint64(np.int64(pending(stage)) & 0xFF) * BYTE_ONES
    minus = np.uint64(np.int64(pending(-stage)) & 0xFF) * BYTE_ONES
    counter = np.zeros(1, dtype=np.int64)
    found = np.zeros(WORK_SLOTS, dtype=np.int64)
    for slot in prange(WORK_SLOTS):
        while True:
            first = _take(counter, SEED_CHUNK)
            if first >= blocks:
                break
            for block in range(first, min(blocks, first + SEED_CHUNK)):
                start = block * BLOCK
                count = _seed_block(stage, start, min(size, start + BLOCK), values, counts, lined, value_words, plus,
                                    minus)
                if count:
                    flags[block] = 1
                found[slot] += count
    return found.sum()


@njit(cache=True)
def predecessors(
    mover: np.uint64,
    opponent: np.uint64,
    seeds: int | np.integer,
    lo: int,
    size: int,
    values: np.ndarray,
    counts: np.ndarray,
    lined: bool,
    with_counts: bool,
    found: np.ndarray,
    count: int,
) -> int:
    """Append the ranks of the in-layer predecessors of a position (words of
    the child) to found[count:]; return the new count. The value byte (and
    count byte, when `with_counts`) of each rank held here (`size` ranks
    from `lo`) is prefetched, so the caller can update a batch with its
    misses overlapped; in the lined layout both lie in one line.

    Un-sowing. The parent's own row after the move is the child's opponent
    row, and its origin house h is empty there. Sowing k = 11q + r seeds from
    h added q to each of the 11 other houses and 1 to the r after h, so the
    parent is the child minus those masks with k put back in h, provided no
    house goes negative (checked for all lanes at once by borrowing from bit
    7 of each lane). Ranges grow with r, so the first r that fails ends the
    loop, and a q that fails even with r = 0 ends the search. A candidate
    must be in the index, the move legal (it feeds an empty opponent), and
    the move must not capture: only a last seed landing on an opponent house
    now holding 2 or 3 can capture, and then the move is played forward,
    which also settles grand slams (no capture, the seeds stay).
    """
    after_mover = opponent
    after_opponent = mover
    for house in range(ROW):
        if (after_mover >> np.uint64(8 * house)) & np.uint64(0xFF) != 0:
            continue
        for laps in range(5):
            lap_failed = False
            lap_mover = np.uint64(laps) * LAP_MASKS[house, 0]
            lap_opponent = np.uint64(laps) * LAP_MASKS[house, 1]
            for rest in range(11):
                if laps == 0 and rest == 0:
                    continue
                take_mover = lap_mover + RANGE_MASKS[house, rest, 0]
                take_opponent = lap_opponent + RANGE_MASKS[house, rest, 1]
                left_mover = (after_mover | HIGH_BITS) - take_mover
                left_opponent = (after_opponent | HIGH_BITS) - take_opponent
                if (left_mover & HIGH_BITS) != HIGH_BITS or (left_opponent & HIGH_BITS) != HIGH_BITS:
                    lap_failed = rest == 0
                    break
                sown = laps * 11 + rest
                parent_mover = (left_mover ^ HIGH_BITS) | (np.uint64(sown) << np.uint64(8 * house))
                parent_opponent = left_opponent ^ HIGH_BITS
                if ((parent_opponent - ROW_ONES) & ~parent_opponent & HIGH_BITS) == 0:
                    continue  # every opponent house occupied: outside the index
                if parent_opponent == 0 and sown < ROW - house:
                    continue  # the opponent is empty and this move does not feed him
                last = house + (rest if rest > 0 else 11)
                if ROW <= last < 2 * ROW:
                    landed = (after_opponent >> np.uint64(8 * (last - ROW))) & np.uint64(0xFF)
                    if landed == 2 or landed == 3:
                        # It captures, unless it is a grand slam: play it to know.
                        captured, child_mover, child_opponent = play(parent_mover, parent_opponent, house)
                        if captured != 0 or child_mover != mover or child_opponent != opponent:
                            continue
                parent = index.rank_packed(parent_mover, parent_opponent, seeds)
                local = parent - lo
                if 0 <= local < size:
                    prefetch(values, value_at(lined, local))  # type: ignore[call-arg, arg-type]  # numba's @intrinsic passes typingctx
                    if with_counts and not lined:
                        prefetch(counts, local >> 1)
                found[count] = parent
                count += 1
            if lap_failed:
                break
    return count


@njit(cache=True, inline="always")
def _tell(rank, child_value, stage, values, counts, lined, next_flags):
    """A child of `rank` was resolved at child_value (+-stage); update `rank`.

    At -stage the predecessor is won (+stage). At +stage it has one unresolved
    child less, and with none left and an exit at most -stage it is lost
    (-stage). The compare-and-swap of the pending code makes exactly one
    thread the resolver. Returns the scattered accesses it made: 1 (the
    value byte) or 2 (the value byte and the count nibble, which lie in
    different arrays, or in one line in the lined layout: 1); the
    resolver's writes go to lines it has just read.
    """
    at_value = value_at(lined, rank)
    code = values[at_value]
    if resolved(code):
        return 1
    at_count = count_at(lined, rank)
    both = 1 if lined or child_value < 0 else 2
    if child_value < 0:
        value = stage
    else:
        shift = (rank & 1) << 2
        old = atomic_sub(counts, at_count, np.uint8(1 << shift))
        if (np.int64(old) >> shift) & CHILDREN != 1:
            return both
        code = values[at_value]
        if resolved(code) or pending_exit(code) > -stage:
            return both
        value = -stage
    if compare_and_swap(values, at_value, code, np.int8(value)):  # type: ignore[call-arg, arg-type]  # numba's @intrinsic passes typingctx
        atomic_or(counts, at_count, np.uint8(FRESH << ((rank & 1) << 2)))
        next_flags[rank // BLOCK] = 1
    return both


@njit(cache=True, inline="always")
def _tell_batch(found, told, count, lo, size, stage, values, counts, lined, next_flags, outbox, sent):
    """Tell a batch of predecessors: those held here at once, the others
    (another process's slice) into `outbox` as (rank << 1) | (child lost).
    Returns the new outbox length and the scattered accesses made here."""
    accesses = 0
    for i in range(count):
        local = found[i] - lo
        if 0 <= local < size:
            accesses += _tell(local, told[i], stage, values, counts, lined, next_flags)
        else:
            outbox[sent] = (found[i] << 1) | (1 if told[i] < 0 else 0)
            sent += 1
    return sent, accesses


@njit(cache=True, inline="always")
def _line_fresh(words, line):
    """Whether any position of a line (lined layout; `words`: the array as
    uint64) is FRESH: its count bytes are bytes 42..63, in words 5..7."""
    at = line * (LINE // 8)
    return ((words[at + 5] & COUNT_HEAD) | words[at + 6] | words[at + 7]) & FRESH_NIBBLES != 0


@njit(cache=True, inline="always")
def _propagate_block(stage, seeds, lo, size, block, values, counts, lined, words, next_flags, rows, found, told, outbox,
                     sent, room, tally):
    """propagate() for one block: (FRESH positions processed, new outbox length);
    tally[0] gains the predecessors told here, tally[1] the scattered accesses.
    In the lined layout a line with nothing FRESH is passed in one test."""
    start = block * BLOCK
    stop = min(size, start + BLOCK)
    current = -1
    mover = np.uint64(0)
    opponent = np.uint64(0)
    count = 0
    done = 0
    local = start - 1
    while True:
        local += 1
        if local >= stop:
            break
        if lined and (local == start or local % LINE_RANKS == 0) and not _line_fresh(words, local // LINE_RANKS):
            local = (local // LINE_RANKS + 1) * LINE_RANKS - 1
            continue
        shift = (local & 1) << 2
        at_count = count_at(lined, local)
        if (np.int64(counts[at_count]) >> shift) & FRESH == 0:
            continue
        if sent > room:
            next_flags[block] = 1  # outbox full: the rest of the block next sweep
            break
        atomic_and(counts, at_count, np.uint8(~(FRESH << shift) & 0xFF))
        done += 1
        mover, opponent = _position_at(lo + local, current, mover, opponent, seeds, rows)
        current = lo + local
        value = values[value_at(lined, local)]
        added = predecessors(mover, opponent, seeds, lo, size, values, counts, lined, value > 0, found, count)
        told[count:added] = value
        count = added
        if count >= BATCH:
            tally[0] += count
            sent, accesses = _tell_batch(found, told, count, lo, size, stage, values, counts, lined, next_flags, outbox,
                                         sent)
            tally[1] += accesses
            count = 0
    tally[0] += count
    sent, accesses = _tell_batch(found, told, count, lo, size, stage, values, counts, lined, next_flags, outbox, sent)
    tally[1] += accesses
    return done, sent


@njit(cache=True, parallel=True)
def propagate(
    stage: int,
    seeds: int,
    lo: int,
    values: np.ndarray,
    counts: np.ndarray,
    active: np.ndarray,
    next_flags: np.ndarray,
    rows: tuple[np.ndarray, ...],
    scratch: "Scratch",
    lined_ranks: int = 0,
) -> int:
    """Tell the predecessors of every FRESH position of the `active` blocks.

    The arrays hold a slice of the layer: values[i] is rank lo + i (lo a
    multiple of BLOCK; the whole layer when one process builds it). With
    `lined_ranks`, values and counts are one array holding that many ranks
    in the lined layout (value_at, count_at).
    Predecessors outside the slice go to the threads' outboxes
    (scratch.outbox[thread, :scratch.sent[thread]]) for their owners; a
    thread whose outbox has no room for another position's predecessors
    stops its block and flags it again in `next_flags`, so nothing is lost.
    Returns how many FRESH positions were processed; scratch.tally[thread]
    counts the predecessors told and the scattered accesses made.
    Predecessor ranks are gathered (and prefetched) in batches before they
    are updated, so the cache misses of those scattered updates overlap.
    Threads take the active blocks one at a time as they become free.
    """
    lined = lined_ranks > 0
    size = lined_ranks if lined else values.shape[0]
    words = counts[: counts.shape[0] // 8 * 8].view(np.uint64)  # read only in the lined layout (whole lines)
    processed = np.zeros(WORK_SLOTS, dtype=np.int64)
    capacity = scratch.outbox.shape[1]
    room = capacity - BATCH - MAX_PREDECESSORS if capacity > 0 else size * MAX_PREDECESSORS
    # Taken out of the tuple before the parallel loop: numba loses writes
    # made inside a prange through a tuple's field (found with a test).
    outboxes = scratch.outbox
    sent_counts = scratch.sent
    tallies = scratch.tally
    founds = scratch.found
    tolds = scratch.told
    counter = np.zeros(1, dtype=np.int64)
    for slot in prange(WORK_SLOTS):
        thread = numba.get_thread_id()  # the scratch rows are the threads' (a thread runs its slots in turn)
        sent = sent_counts[thread]
        while True:
            item = _take(counter, 1)
            if item >= active.shape[0]:
                break
            done, sent = _propagate_block(stage, seeds, lo, size, active[item], values, counts, lined, words,
                                          next_flags, rows, founds[thread], tolds[thread], outboxes[thread], sent,
                                          room, tallies[thread])
            processed[slot] += done
        sent_counts[thread] = sent
    return processed.sum()


@njit(cache=True, parallel=True)
def tell_received(
    stage: int, lo: int, updates: np.ndarray, values: np.ndarray, counts: np.ndarray, next_flags: np.ndarray
) -> None:
    """Apply updates from other processes: each is (rank << 1) | (child
    lost), for a rank of this slice, as _tell would have applied it here."""
    total = updates.shape[0]
    counter = np.zeros(1, dtype=np.int64)
    for _slot in prange(WORK_SLOTS):
        while True:
            first = _take(counter, RANK_CHUNK)
            if first >= total:
                break
            for i in range(first, min(total, first + RANK_CHUNK)):
                update = updates[i]
                _tell((update >> 1) - lo, -stage if update & 1 else stage, stage, values, counts, False, next_flags)


@njit(cache=True, parallel=True)
def propagate_graph(
    stage: int,
    values: np.ndarray,
    counts: np.ndarray,
    active: np.ndarray,
    next_flags: np.ndarray,
    first: np.ndarray,
    parents: np.ndarray,
) -> int:
    """propagate() on an explicit graph: the predecessors of node i are
    parents[first[i]:first[i + 1]] instead of un-sown positions."""
    size = values.shape[0]
    processed = np.zeros(WORK_SLOTS, dtype=np.int64)
    counter = np.zeros(1, dtype=np.int64)
    for slot in prange(WORK_SLOTS):
        while True:
            item = _take(counter, 1)
            if item >= active.shape[0]:
                break
            start = active[item] * BLOCK
            for node in range(start, min(size, start + BLOCK)):
                shift = (node & 1) << 2
                if (np.int64(counts[node >> 1]) >> shift) & FRESH == 0:
                    continue
                atomic_and(counts, node >> 1, np.uint8(~(FRESH << shift) & 0xFF))
                processed[slot] += 1
                for edge in range(first[node], first[node + 1]):
                    _tell(parents[edge], values[node], stage, values, counts, False, next_flags)
    return processed.sum()


@njit(cache=True)
def graph_state(exits: np.ndarray, children: np.ndarray, values: np.ndarray, counts: np.ndarray) -> None:
    """Pending codes and child counts of an explicit graph's nodes."""
    for node in range(exits.shape[0]):
        values[node] = pending(max(exits[node], NO_EXIT))
        counts[node >> 1] |= np.uint8(children[node] << ((node & 1) << 2))


@njit(cache=True, parallel=True)
def settle_endless(values: np.ndarray) -> None:
    """What no stage resolved is endless play: value 0."""
    size = values.shape[0]
    counter = np.zeros(1, dtype=np.int64)
    for _slot in prange(WORK_SLOTS):
        while True:
            first = _take(counter, RANK_CHUNK)
            if first >= size:
                break
            for rank in range(first, min(size, first + RANK_CHUNK)):
                if not resolved(values[rank]):
                    values[rank] = 0


@njit(cache=True)
def line_histogram(cells: np.ndarray, size: int) -> np.ndarray:
    """byte_histogram of the value bytes of `size` ranks in the lined layout."""
    counts = np.zeros(256, dtype=np.int64)
    for line in range((size + LINE_RANKS - 1) // LINE_RANKS):
        for slot in range(min(LINE_RANKS, size - line * LINE_RANKS)):
            counts[np.uint8(cells[line * LINE + slot])] += 1
    return counts


@njit(cache=True, parallel=True)
def compact_lines(cells: np.ndarray, size: int, out: np.ndarray, first_line: int, last_line: int) -> None:
    """The value bytes of lines first_line..last_line-1 (of `size` ranks in
    the lined layout) into out[rank], in rank order: the layer's slot of
    the store. What no stage resolved is endless play: 0 (settle_endless)."""
    counter = np.zeros(1, dtype=np.int64)
    lines = last_line - first_line
    step = RANK_CHUNK // LINE_RANKS
    for _slot in prange(WORK_SLOTS):
        while True:
            first = _take(counter, step)
            if first >= lines:
                break
            for line in range(first_line + first, first_line + min(lines, first + step)):
                base = line * LINE_RANKS
                for slot in range(min(LINE_RANKS, size - base)):
                    code = cells[line * LINE + slot]
                    out[base + slot] = code if resolved(code) else 0


@njit(cache=True, inline="always")
def _check_block(seeds, block, values, flat, starts, rows, use, bad, counts):
    """bellman_mismatches for one block."""
    size = values.shape[0]
    start = block * BLOCK
    stop = min(size, start + BLOCK)
    mover, opponent = index.unrank_fast(seeds, start, rows[0], rows[1], rows[2], rows[3])
    for rank in range(start, stop):
        best = np.int64(exit_value(mover, opponent, seeds, flat, starts, use))
        mask = legal_mask(mover, opponent)
        for house in range(ROW):
            if mask & (1 << house):
                captured, child_mover, child_opponent = play(mover, opponent, house)
                if captured == 0:
                    value = -np.int64(values[index.rank_packed(child_mover, child_opponent, seeds)])
                    if value > best:
                        best = value
        if best != values[rank]:
            counts[block] += 1
            if bad[block] < 0:
                bad[block] = rank
        _ok, mover, opponent = index.next_packed(mover, opponent, seeds)


@njit(cache=True, parallel=True, nogil=True)  # nogil: `awele verify` can be stopped with Ctrl-C
def bellman_mismatches(
    seeds: int, values: np.ndarray, flat: np.ndarray, starts: np.ndarray, rows: tuple[np.ndarray, ...], limit: int
) -> tuple[int, np.ndarray]:
    """Ranks (up to `limit`) whose value is not the best over their moves.

    d(s) must equal max(captured - d(child)) over capturing moves,
    -d(child) over the others, or the terminal value when there is no move.
    """
    size = values.shape[0]
    blocks = (size + BLOCK - 1) // BLOCK
    bad = np.full(blocks, -1, dtype=np.int64)
    counts = np.zeros(blocks, dtype=np.int64)
    use = np.ones(seeds + 1, dtype=np.bool_)
    counter = np.zeros(1, dtype=np.int64)
    for _slot in prange(WORK_SLOTS):
        while True:
            block = _take(counter, 1)
            if block >= blocks:
                break
            _check_block(seeds, block, values, flat, starts, rows, use, bad, counts)
    found = bad[bad >= 0]
    return counts.sum(), found[:limit]


Scratch = namedtuple("Scratch", "found told outbox sent tally")


def make_scratch(threads: int, outbox: int = 0) -> Scratch:
    """Per-thread batch buffers, allocated once per layer rather than per
    block, with outboxes of `outbox` updates each for other processes' ranks
    (none when one process holds the whole layer), and each thread's tally
    of predecessors told and scattered accesses made."""
    outbox = outbox and outbox + BATCH + MAX_PREDECESSORS
    return Scratch(
        np.empty((threads, BATCH + MAX_PREDECESSORS), dtype=np.int64),
        np.empty((threads, BATCH + MAX_PREDECESSORS), dtype=np.int8),
        np.empty((threads, outbox), dtype=np.int64),
        np.zeros(threads, dtype=np.int64),
        np.zeros((threads, 2), dtype=np.int64),
    )


@contextlib.contextmanager
def thread_count(threads: int | None) -> Iterator[int]:
    """Run the block with numba on `threads` threads (None: as it is), then restore."""
    previous = numba.get_num_threads()
    if threads:
        numba.set_num_threads(int(threads))
    try:
        yield numba.get_num_threads()
    finally:
        numba.set_num_threads(previous)


class StageReport:
    """What one stage did: positions resolved and propagation sweeps."""

    def __init__(self, stage: int, resolved: int, sweeps: int) -> None:
        self.stage = stage
        self.resolved = resolved
        self.sweeps = sweeps


def run_stages(
    seeds: int,
    values: np.ndarray,
    value_words: np.ndarray,
    counts: np.ndarray,
    sweep: Callable[[int, np.ndarray, np.ndarray], int],
    progress: Callable[[str, float], None] | None = None,
    first_stage: int | None = None,
    everywhere: Callable[[int], int] | None = None,
    after_stage: Callable[[int], None] | None = None,
    lined_ranks: int = 0,
) -> tuple[list[StageReport], float]:
    """The staged algorithm over positions whose value bytes hold pending codes
    and whose nibbles hold child counts: stages seeds..1, each seeded and then
    swept until nothing is FRESH, then endless play settled to 0.

    `sweep(stage, active_blocks, next_flags)` tells the predecessors of the
    FRESH positions of the active blocks and returns how many it processed;
    it is the only part that differs between a layer (predecessors by
    un-sowing) and an explicit graph (predecessor lists). A distributed
    build holds a slice here: `everywhere(count)` then sums a count over
    the processes (a stage ends when no process has anything FRESH), every
    process sweeps as often as the busiest, and `first_stage` resumes after
    a checkpoint that `after_stage(stage)` took. Returns the stage reports
    and the seconds spent seeding. With `lined_ranks`, values and counts
    are one array holding that many ranks in the lined layout, and endless
    play is left pending: compact_lines settles it as it moves the values.
    """
    lined = lined_ranks > 0
    size = lined_ranks if lined else values.shape[0]
    blocks = (size + BLOCK - 1) // BLOCK
    flags = np.zeros(blocks, dtype=np.uint8)
    next_flags = np.zeros(blocks, dtype=np.uint8)
    codes = line_histogram(values, size) if lined else byte_histogram(values)
    seed_seconds = 0.0
    stages = []
    # The kernels share their work through a counter (_take), one loop
    # iteration a thread: numba must not cut that loop into chunks itself.
    # A sweep over a few blocks, or a scan of a small layer, runs on one
    # thread: starting the others would cost more than it saves, and much
    # more when a busy core makes every parallel loop wait for a time slice.
    previous_chunk = numba.set_parallel_chunksize(0)
    small = size < SERIAL_SIZE
    try:
        for stage in range(seeds if first_stage is None else first_stage, 0, -1):
            tick = time.perf_counter()
            if codes[np.int64(pending(stage)) & 0xFF] or codes[np.int64(pending(-stage)) & 0xFF]:
                with thread_count(1 if small else None):
                    seed_stage(stage, size, values, counts, value_words, flags, lined)
            seed_seconds += time.perf_counter() - tick
            found = 0
            sweeps = 0
            while True:
                sweeps += 1
                active = np.flatnonzero(flags)
                if (active.shape[0] if everywhere is None else everywhere(active.shape[0])) == 0:
                    break
                flags[active] = 0
                with thread_count(1 if active.shape[0] <= SERIAL_BLOCKS else None):
                    found += int(sweep(stage, active, next_flags))
                flags, next_flags = next_flags, flags
            stages.append(StageReport(stage, found, sweeps))
            if after_stage:
                after_stage(stage)
            if progress:
                progress(f"stage {stage}", (seeds - stage + 1) / seeds)
        if not lined:
            with thread_count(1 if small else None):
                settle_endless(values)
    finally:
        numba.set_parallel_chunksize(previous_chunk)
    return stages, seed_seconds


def solve_graph(
    seeds: int, exits: np.ndarray, children: np.ndarray, first: np.ndarray, parents: np.ndarray
) -> np.ndarray:
    """Values (int64) of the nodes of an explicit graph of positions with
    `seeds` seeds, by the same staged algorithm as a layer.

    exits[i]: node i's exit value (best capture, terminal value, or a known
    value for a leaf; anything below -seeds for none); children[i]: its
    edges inside the graph (at most 6); first/parents: the predecessor lists
    (parents of i are parents[first[i]:first[i + 1]]). The search solves a
    component of a layer this way (solver.search).
    """
    size = exits.shape[0]
    padded = np.zeros((size + 7) // 8 * 8, dtype=np.int8)
    values = padded[:size]
    counts = np.zeros((size + 1) // 2, dtype=np.uint8)
    graph_state(exits, children, values, counts)

    def sweep(stage, active, next_flags):
        return propagate_graph(stage, values, counts, active, next_flags, first, parents)

    run_stages(seeds, values, padded.view(np.uint64), counts, sweep)
    return values.astype(np.int64)


class LayerSolver:
    """The build of one layer, for its slot of a LayerStore, step by step.

    ``exits(layers)`` runs one exit pass with those smaller layers (they must
    be loaded in the store); once every layer of :func:`exit_layers` has
    been through a pass, ``solve()`` runs the stages, moves the values into
    the layer's slot settling endless play, and marks the layer loaded in
    the store. The caller decides which smaller layers are resident during
    which pass (solver.build does, by its memory budget); :func:`solve_layer`
    is the all-in-memory path.

    The working state is in the lined layout (value_at, count_at): each
    64-byte line holds 42 positions' value bytes and their 21 count bytes,
    so that telling a predecessor its child was won touches one line, not
    one in each of two arrays. The lines are an anonymous mapping of their
    own; solve() moves them into the slot a piece at a time, giving each
    piece back to the system once moved, so the two are never both whole.
    """

    def __init__(self, seeds: int, store: LayerStore, rows: tuple[np.ndarray, ...] | None = None) -> None:
        self.seeds = seeds
        self.store = store
        self.rows = rows if rows is not None else index.RowTables(seeds).arrays
        self.size = index.layer_size(seeds)
        if seeds > store.max_seeds:
            raise ValueError(f"layer {seeds} has no slot in a store of layers 0..{store.max_seeds}")
        store.loaded[seeds] = False
        self.lines = (self.size + LINE_RANKS - 1) // LINE_RANKS
        self._area, self.values = reserve(self.lines * LINE)
        # Huge pages where the system gives them: the updates land anywhere in
        # the lines, and with 4 KiB pages nearly every one also misses the TLB.
        with contextlib.suppress(OSError, AttributeError):
            self._area.madvise(mmap.MADV_HUGEPAGE)
        self.counts = self.values.view(np.uint8)
        self.value_words = self.values.view(np.uint64)
        self.done: set[int] = set()
        self.exit_seconds = 0.0
        self.passes = 0
        self.exit_lookups = 0

    @property
    def working_bytes(self) -> int:
        return working_bytes(self.size)

    def exits(self, layers: Iterable[int]) -> None:
        """One exit pass with the smaller `layers` (loaded in the store)."""
        layers = [m for m in layers if m not in self.done]
        missing = [m for m in layers if not self.store.loaded[m]]
        if missing or any(m not in exit_layers(self.seeds) for m in layers):
            raise ValueError(f"layer {self.seeds}: exit pass over {layers}, not loaded: {missing}")
        if self.passes and not layers:
            return
        use = np.zeros(index.MAX_SEEDS + 1, dtype=np.bool_)
        use[layers] = True
        started = time.perf_counter()
        with thread_count(1 if self.size < SERIAL_SIZE else None):
            self.exit_lookups += int(exit_pass(self.seeds, self.size, self.values, self.counts, self.store.flat,
                                               self.store.starts, use, self.passes == 0, self.rows, True))
        self.exit_seconds += time.perf_counter() - started
        self.passes += 1
        self.done.update(layers)

    def solve(self, progress: Callable[[str, float], None] | None = None) -> dict[str, Any]:
        """Run the stages; return stats. The layer is then loaded in the store."""
        missing = [m for m in exit_layers(self.seeds) if m not in self.done]
        if missing or not self.passes:
            raise ValueError(f"layer {self.seeds}: no exit pass yet over layers {missing}")
        size, seeds = self.size, self.seeds
        if progress:
            progress("exits", 1.0)
        started = time.perf_counter()
        scratch = make_scratch(numba.get_num_threads())

        def sweep(stage, active, next_flags):
            return propagate(stage, seeds, 0, self.values, self.counts, active, next_flags, self.rows, scratch, size)

        stages, seed_seconds = run_stages(seeds, self.values, self.value_words, self.counts, sweep, progress,
                                          lined_ranks=size)
        working = self.working_bytes
        slot = self.store.layer(seeds)
        with thread_count(1 if size < SERIAL_SIZE else None):
            for first in range(0, self.lines, COMPACT_LINES):
                last = min(self.lines, first + COMPACT_LINES)
                compact_lines(self.values, size, slot, first, last)
                with contextlib.suppress(OSError):  # no madvise: the pages go when the mapping does
                    self._area.madvise(mmap.MADV_DONTNEED, first * LINE, (last - first) * LINE)
        # Freed once solved (solve() runs once): the arrays first, as they hold the mapping's buffer.
        self.values = self.counts = self.value_words = None  # type: ignore[assignment]
        self._area.close()
        self.store.mark_loaded(seeds)
        stage_seconds = time.perf_counter() - started
        return {
            "positions": size,
            "seconds": self.exit_seconds + stage_seconds,
            "exit_seconds": self.exit_seconds,
            "exit_passes": self.passes,
            "seed_seconds": seed_seconds,
            "stage_seconds": stage_seconds,
            "stages": [(s.stage, s.resolved, s.sweeps) for s in stages],
            "working_bytes": working,
            # Scattered accesses, counted by the kernels: a value read in a smaller
            # layer per capture, and a line (its value byte and count nibble) per
            # predecessor told.
            "exit_lookups": self.exit_lookups,
            "predecessors_told": int(scratch.tally[:, 0].sum()),
            "stage_accesses": int(scratch.tally[:, 1].sum()),
        }


def solve_layer(
    seeds: int,
    store: LayerStore,
    threads: int | None = None,
    rows: tuple[np.ndarray, ...] | None = None,
    progress: Callable[[str, float], None] | None = None,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Solve layer `seeds` in its slot of `store`, every smaller layer it
    needs being loaded there; return (values, stats), values being the slot.

    `progress`, if given, is called as progress(step_name, done_fraction).
    Numba's thread count is restored afterwards.
    """
    with thread_count(threads):
        solver = LayerSolver(seeds, store, rows)
        solver.exits(exit_layers(seeds))
        stats = solver.solve(progress)
    return store.layer(seeds), stats


def solve_up_to(max_seeds: int, threads: int | None = None) -> LayerStore:
    """Every layer 0..max_seeds solved in one LayerStore (for tests and small builds)."""
    store = LayerStore(max_seeds)
    rows = index.RowTables(max_seeds).arrays
    for seeds in range(max_seeds + 1):
        solve_layer(seeds, store, threads=threads, rows=rows)
    return store
