"""The lean stages' kernels: the 4-bit codes, the pass over the state file,
the propagation and the rebuilding of the codes (solver.lean drives them;
its docstring and docs/DISK.md say what the codes mean).

    code 0..6    unresolved, that many unrefuted children, best exit > -k
    code 9..14   unresolved, code - 8 unrefuted children, best exit <= -k
    code 8       lost at -k this stage
    code 15      won at +k this stage
    code 7       resolved at an earlier stage (its value is on disk)
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from . import index, layer_state
from .intrinsics import atomic_add, compare_and_swap, prefetch
from .rules import ROW, legal_mask, play

EARLIER = 7  # resolved at an earlier stage: its value is in the state file
LOST = 8  # lost at -k this stage: no unrefuted child and the exit bit set
WON = 15  # won at +k this stage
EXIT_BIT = 8  # set in an unresolved code once its best exit is at most -k
CODE = 0xF


# Codes -----------------------------------------------------------------------------


@njit(cache=True, inline="always")
def code_of(codes: np.ndarray, rank: int) -> int:
    """The 4-bit code of `rank` (two a byte, the low nibble the even rank)."""
    return (np.int64(codes[rank >> 1]) >> ((rank & 1) << 2)) & CODE


@njit(cache=True, inline="always")
def set_code(codes: np.ndarray, rank: int, code: int) -> None:
    """Give `rank` the 4-bit `code`, its neighbour's nibble kept."""
    shift = (rank & 1) << 2
    codes[rank >> 1] = np.uint8((np.int64(codes[rank >> 1]) & ~(CODE << shift) & 0xFF) | (code << shift))


@njit(cache=True, inline="always")
def unresolved(code: int) -> bool:
    return code != EARLIER and code != LOST and code != WON


@njit(cache=True, inline="always")
def told(code: int, child_lost: bool) -> int:
    """The code of an unresolved position once told that a child was lost
    (-k: it is won) or won (+k: one unrefuted child less; none left with the
    exit bit set is LOST, code 9 - 1)."""
    return WON if child_lost else code - 1


@njit(cache=True, inline="always")
def exit_seen(code: int, exit: int | np.integer, stage: int) -> int:
    """The code of an unresolved position at the start of stage `stage`, its
    best exit being `exit`: WON at +stage, the exit bit set at or below
    -stage (LOST with no unrefuted child left): below only at the first
    stage, where it is set for no exit at all (NO_EXIT)."""
    if exit == stage:
        return WON
    if exit <= -stage:
        return code | EXIT_BIT
    return code


# Kernels ---------------------------------------------------------------------------


SETTLE_PIECE = 1 << 15  # ranks of a chunk a thread settles at a time (even: whole bytes of codes)
NIBBLE_LOW = np.uint64(0x1111111111111111)  # the low bit of each nibble of a word
BYTE_ONES = np.uint64(0x0101010101010101)
BYTE_HIGH = np.uint64(0x8080808080808080)
BYTE_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)


@njit(cache=True, inline="always")
def _byte_matches(word, pattern):
    """The high bit of each byte of `word` that equals the byte repeated in
    `pattern`, exactly (no borrow from one byte to the next)."""
    diff = word ^ pattern
    nonzero = (((diff & BYTE_LOW7) + BYTE_LOW7) | diff) & BYTE_HIGH
    return nonzero ^ BYTE_HIGH


@njit(cache=True, inline="always")
def _resolved_now(word):
    """The low bit of each nibble of a word of codes that is WON (15) or LOST (8)."""
    won = word & (word >> np.uint64(1)) & (word >> np.uint64(2)) & (word >> np.uint64(3))
    lost = (word >> np.uint64(3)) & ~(word >> np.uint64(2)) & ~(word >> np.uint64(1)) & ~word
    return (won | lost) & NIBBLE_LOW


@njit(cache=True, inline="always")
def _spread(bits):
    """Bit 4j of the low 32 bits of `bits` (j = 0..7) moved to bit 8j."""
    x = bits & np.uint64(0x11111111)
    x = (x | (x << np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)
    x = (x | (x << np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)
    return (x | (x << np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)


DE_BRUIJN = np.uint64(0x03F79D71B4CB0A89)
BIT_OF = np.zeros(64, dtype=np.int64)  # BIT_OF[i]: the bit whose product by DE_BRUIJN has i in its top 6 bits
for _bit in range(64):
    BIT_OF[((1 << _bit) * int(DE_BRUIJN) & 0xFFFFFFFFFFFFFFFF) >> 58] = _bit


@njit(cache=True, inline="always")
def _lowest_bit(word):
    """The place of the lowest set bit of `word` (not 0)."""
    return BIT_OF[((word & (~word + np.uint64(1))) * DE_BRUIJN) >> np.uint64(58)]


@njit(cache=True, inline="always")
def _settle_rank(stage, rank, i, state, codes, seeds_found, found, record):
    code = code_of(codes, rank)
    if code in (WON, LOST):
        state[i] = np.int8(stage + 1 if code == WON else -(stage + 1))
        set_code(codes, rank, EARLIER)
    elif code != EARLIER:
        if stage == 0:
            state[i] = 0
            return found
        new = exit_seen(code, layer_state.pending_exit(state[i]), stage)
        if new != code:
            set_code(codes, rank, new)
            if new in (WON, LOST):
                if record:
                    seeds_found[found] = rank
                found += 1
    return found


@njit(cache=True, inline="always")
def _settle_piece(stage, lo, start, stop, state, codes, seeds_found, state_words, code_words, patterns, record):
    """settle_chunk for ranks lo+start..lo+stop-1; with `record` the seeds go
    to seeds_found[start:]; returns how many. Sixteen ranks at a time: the
    codes that hold a result of the last stage and the state bytes that hold
    one of the stage's exits (`patterns`) are found a word at a time
    (_resolved_now, _byte_matches), and only those ranks are settled, taken
    a set bit at a time: the others have nothing to change."""
    found = start
    i = start
    while i < stop:
        if stage > 0 and i + 16 <= stop and (lo + i) % 16 == 0:
            now = _resolved_now(code_words[(lo + i) >> 4])
            for half in range(2):
                word = state_words[(i >> 3) + half]
                flags = (_byte_matches(word, patterns[0]) | _byte_matches(word, patterns[1])
                         | _byte_matches(word, patterns[2])
                         | (_spread(now >> np.uint64(32 * half)) << np.uint64(7)))
                while flags != 0:
                    j = _lowest_bit(flags) >> 3
                    flags &= flags - np.uint64(1)
                    found = _settle_rank(stage, lo + i + 8 * half + j, i + 8 * half + j, state, codes, seeds_found,
                                         found, record)
            i += 16
            continue
        found = _settle_rank(stage, lo + i, i, state, codes, seeds_found, found, record)
        i += 1
    return found - start


@njit(cache=True, inline="always")
def _patterns(stage, first):
    """The state bytes (repeated over a word) of the exits a stage's pass looks for: +stage, -stage, and at the
    `first` stage no exit at all."""
    exits = (stage, -stage, layer_state.NO_EXIT if first else -stage)
    return (np.uint64(np.int64(layer_state.pending(exits[0])) & 0xFF) * BYTE_ONES,
            np.uint64(np.int64(layer_state.pending(exits[1])) & 0xFF) * BYTE_ONES,
            np.uint64(np.int64(layer_state.pending(exits[2])) & 0xFF) * BYTE_ONES)


@njit(cache=True, parallel=True, nogil=True)
def settle_chunk(stage: int, first: bool, lo: int, size: int, state: np.ndarray, codes: np.ndarray,
                 seeds_found: np.ndarray) -> int:
    """The pass over the state-file bytes of ranks lo..lo+size-1 (in
    state[:size]) at the start of stage `stage`: stage + 1's results
    written as values (their codes become EARLIER), the exit bit set where
    E <= -stage (E = -stage, or at the `first` stage no exit at all), the
    stage's seeds resolved (WON, or LOST) and their ranks put in
    seeds_found, in rank order; returns how many. Stage 0 is the end:
    stage 1's results, and 0 for what no stage resolved. `lo` is a multiple
    of 16 and state and codes are whole words (len a multiple of 8). Threads
    take pieces of an even number of ranks as they become free (a busy core
    takes fewer), so no two write one byte of codes."""
    pieces = (size + SETTLE_PIECE - 1) // SETTLE_PIECE
    found = np.zeros(pieces, dtype=np.int64)
    state_words = state.view(np.uint64)
    code_words = codes.view(np.uint64)
    patterns = _patterns(stage, first)
    counter = np.zeros(1, dtype=np.int64)
    for _slot in prange(layer_state.WORK_SLOTS):
        while True:
            piece = atomic_add(counter, 0, np.int64(1))
            if piece >= pieces:
                break
            start = piece * SETTLE_PIECE
            found[piece] = _settle_piece(stage, lo, start, min(size, start + SETTLE_PIECE), state, codes,
                                         seeds_found, state_words, code_words, patterns, True)
    total = 0
    for piece in range(pieces):
        start = piece * SETTLE_PIECE
        for k in range(found[piece]):
            seeds_found[total + k] = seeds_found[start + k]
        total += found[piece]
    return total


@njit(cache=True, inline="always")
def _not_earlier(word):
    """The low bit of each nibble of a word of codes that is not EARLIER (7)."""
    earlier = word & (word >> np.uint64(1)) & (word >> np.uint64(2)) & ~(word >> np.uint64(3))
    return ~earlier & NIBBLE_LOW


@njit(cache=True, nogil=True)
def settle_block(stage: int, first: bool, lo: int, start: int, size: int, state: np.ndarray, codes: np.ndarray,
                 seeds_found: np.ndarray) -> tuple[int, int]:
    """settle_chunk over ranks lo+start..lo+size-1 of a block of the state file
    (state[:size] holds ranks lo..), on the calling thread and without
    holding Python's lock (a pass runs a block a thread: LeanLayer._rewrite),
    the seeds listed in seeds_found, in rank order, until it has fewer than
    16 places left; returns (how many, the index where it stopped: `size`
    once done; the caller queues them and calls again from there). Sixteen
    ranks at a time, the codes that hold a result of the last stage and the
    state bytes that hold one of the stage's exits are found by word tests
    (at the last stage, the codes not EARLIER), and only those ranks are
    settled, a set bit at a time. `lo` is a multiple of 16; state and codes
    are whole words."""
    state_words = state.view(np.uint64)
    code_words = codes.view(np.uint64)
    patterns = _patterns(stage, first)
    room = seeds_found.shape[0] - 16
    found = 0
    i = start
    while i < size:
        if found > room:
            return found, i
        if i + 16 <= size and (lo + i) % 16 == 0:
            word = code_words[(lo + i) >> 4]
            now = _resolved_now(word) if stage > 0 else _not_earlier(word)
            for half in range(2):
                flags = _spread(now >> np.uint64(32 * half)) << np.uint64(7)
                if stage > 0:
                    word = state_words[(i >> 3) + half]
                    flags |= (_byte_matches(word, patterns[0]) | _byte_matches(word, patterns[1])
                              | _byte_matches(word, patterns[2]))
                while flags != 0:
                    j = _lowest_bit(flags) >> 3
                    flags &= flags - np.uint64(1)
                    found = _settle_rank(stage, lo + i + 8 * half + j, i + 8 * half + j, state, codes, seeds_found,
                                         found, True)
            i += 16
            continue
        found = _settle_rank(stage, lo + i, i, state, codes, seeds_found, found, True)
        i += 1
    return found, size


@njit(cache=True)
def fill_stack(seeds: int, ranks: np.ndarray, stack: np.ndarray, stack_movers: np.ndarray,
               stack_opponents: np.ndarray, depth: int, rows: tuple[np.ndarray, ...]) -> int:
    """Push `ranks` (resolved this stage) on the stack with their words; returns the new depth."""
    for i in range(ranks.shape[0]):
        mover, opponent = index.unrank_fast(seeds, ranks[i], rows[0], rows[1], rows[2], rows[3])
        stack[depth] = ranks[i]
        stack_movers[depth] = mover
        stack_opponents[depth] = opponent
        depth += 1
    return depth


@njit(cache=True, inline="always")
def _tell(codes, rank, child_lost, shared):
    """Tell unresolved `rank` that a child was lost or won (told()); when
    the codes are `shared` by threads, with a compare-and-swap of its byte:
    a neighbour's nibble may change under another thread at the same time.
    Returns whether this resolved it."""
    at = rank >> 1
    shift = (rank & 1) << 2
    if not shared:
        code = code_of(codes, rank)
        if not unresolved(code):
            return False
        code = told(code, child_lost)
        set_code(codes, rank, code)
        return code in (WON, LOST)
    while True:
        old = codes[at]
        code = (np.int64(old) >> shift) & CODE
        if not unresolved(code):
            return False
        new = told(code, child_lost)
        byte = np.uint8((np.int64(old) & ~(CODE << shift) & 0xFF) | (new << shift))
        if compare_and_swap(codes, at, old, byte):  # type: ignore[call-arg]  # numba: @intrinsic
            return new in (WON, LOST)


@njit(cache=True)
def drain_stack(stage: int, seeds: int, codes: np.ndarray, stack: np.ndarray, stack_movers: np.ndarray,
                stack_opponents: np.ndarray, depth: int, found: np.ndarray, movers: np.ndarray,
                opponents: np.ndarray, child_lost: np.ndarray, tally: np.ndarray, shared: bool) -> int:
    """Tell the predecessors of the positions on the stack, a batch at a time,
    and push those they resolve. Returns the depth left: 0 when all is told,
    or more when the stack has no room for another batch's pushes (the
    caller moves some of it elsewhere and calls again). tally[0] counts the
    predecessors told. With `shared`, other threads update the codes too."""
    room = stack.shape[0] - layer_state.BATCH - layer_state.MAX_PREDECESSORS
    while depth > 0 and depth <= room:
        count = 0
        while depth > 0 and count < layer_state.BATCH:
            depth -= 1
            lost = code_of(codes, stack[depth]) == LOST
            added = layer_state.predecessors(stack_movers[depth], stack_opponents[depth], seeds, 0, 0, codes, codes,
                                            False, False, found, count, movers, opponents)
            child_lost[count:added] = lost
            count = added
        # The batch's codes are fetched at once, so their misses overlap.
        for i in range(count):
            prefetch(codes, found[i] >> 1)  # type: ignore[call-arg]  # numba's @intrinsic passes typingctx
        for i in range(count):
            if _tell(codes, found[i], child_lost[i], shared):
                stack[depth] = found[i]
                stack_movers[depth] = movers[i]
                stack_opponents[depth] = opponents[i]
                depth += 1
        tally[0] += count
    return depth


SEED_TAKE = 64  # ranks a thread takes at once from those it is given to tell of


@njit(cache=True, parallel=True)
def tell_ranks(stage: int, seeds: int, codes: np.ndarray, ranks: np.ndarray, counter: np.ndarray,
               stacks: np.ndarray, stack_movers: np.ndarray, stack_opponents: np.ndarray, depths: np.ndarray,
               overflow: np.ndarray, overflowed: np.ndarray, found: np.ndarray, movers: np.ndarray,
               opponents: np.ndarray, child_lost: np.ndarray, tallies: np.ndarray, rows: tuple[np.ndarray, ...],
               shared: bool) -> None:
    """Tell of `ranks` (resolved this stage) and of all they resolve in turn,
    depth first, on as many threads as `stacks` has rows (with `shared`, as
    numba has them): each takes SEED_TAKE ranks at a time from counter[0]
    as it becomes free and drains its stack (row t of the 2-D arrays). A
    stack without room gives its older half to its thread's `overflow`
    (ranks; overflowed[t] of them); a thread whose overflow cannot take it
    stops, its stack left at depths[t]. The caller queues what is left:
    the overflows, the stacks, and ranks[counter[0]:] if a thread stopped
    before they were taken. One call waits for its threads once."""
    size = ranks.shape[0]
    for thread in prange(stacks.shape[0]):
        stack, stack_mover, stack_opponent = stacks[thread], stack_movers[thread], stack_opponents[thread]
        depth = depths[thread]
        while True:
            if depth == 0:
                first = atomic_add(counter, 0, np.int64(SEED_TAKE))
                if first >= size:
                    break
                depth = fill_stack(seeds, ranks[first : min(size, first + SEED_TAKE)], stack, stack_mover,
                                   stack_opponent, 0, rows)
            depth = drain_stack(stage, seeds, codes, stack, stack_mover, stack_opponent, depth, found[thread],
                                movers[thread], opponents[thread], child_lost[thread], tallies[thread], shared)
            if depth == 0:
                continue
            half = depth // 2
            if overflowed[thread] + half > overflow.shape[1]:
                break
            for i in range(half):
                overflow[thread, overflowed[thread] + i] = stack[i]
            overflowed[thread] += half
            for i in range(depth - half):
                stack[i] = stack[half + i]
                stack_mover[i] = stack_mover[half + i]
                stack_opponent[i] = stack_opponent[half + i]
            depth -= half
        depths[thread] = depth


@njit(cache=True, nogil=True)
def value_counts(state: np.ndarray, seeds: int, counts: np.ndarray) -> None:
    """Add the values of `state` (settled, in -seeds..seeds) to counts[d + seeds]."""
    for i in range(state.shape[0]):
        counts[np.int64(state[i]) + seeds] += 1


# Rebuilding the codes from the state file (a resumed layer) -------------------------


@njit(cache=True)
def rebuild_mark(lo: int, size: int, state: np.ndarray, codes: np.ndarray) -> None:
    """The first sweep of rebuild_codes over ranks lo..lo+size-1 (state[:size]):
    a value above 0 in the state file is WON, below 0 LOST, 0 (endless play,
    the last pass) EARLIER; a pending position is 0 until counted."""
    for i in range(size):
        byte = state[i]
        if layer_state.resolved(byte):
            set_code(codes, lo + i, WON if byte > 0 else (LOST if byte < 0 else EARLIER))
        else:
            set_code(codes, lo + i, 0)


@njit(cache=True, inline="always")
def _recount(seeds, stage, rank, exit, codes, rows):
    """The code of unresolved `rank` (its exit `exit`) at stage `stage`, counted
    from its in-layer children: those WON in the state file are refuted, one
    LOST there (or found lost by this sweep) makes it a WON seed, returned as
    EARLIER (rebuild_seeds makes it WON: seen as WON now, its parents would
    count it refuted before it is told of); E = +stage is a WON seed too."""
    mover, opponent = index.unrank_fast(seeds, rank, rows[0], rows[1], rows[2], rows[3])
    mask = legal_mask(mover, opponent)
    count = 0
    won = exit == stage
    for house in range(ROW):
        if mask & (1 << house):
            captured, child_mover, child_opponent = play(mover, opponent, house)
            if captured == 0:
                child = code_of(codes, index.rank_packed(child_mover, child_opponent, seeds))
                if child == LOST:
                    won = True
                elif child != WON:
                    count += 1
    if won:
        return EARLIER
    return count | (EXIT_BIT if exit <= -stage else 0)


@njit(cache=True, parallel=True)
def rebuild_counts(seeds: int, stage: int, lo: int, size: int, state: np.ndarray, codes: np.ndarray,
                   rows: tuple[np.ndarray, ...]) -> None:
    """The second sweep of rebuild_codes: the code of each pending rank of
    lo..lo+size-1 (`lo` even) from its children (_recount). Threads take
    pieces of an even number of ranks, so no two write one byte; what one
    reads of another's is WON (never written here) or LOST (read early or
    late, the same values follow: the child is lost at -stage either way)."""
    pieces = (size + SETTLE_PIECE - 1) // SETTLE_PIECE
    counter = np.zeros(1, dtype=np.int64)
    for _slot in prange(layer_state.WORK_SLOTS):
        while True:
            piece = atomic_add(counter, 0, np.int64(1))
            if piece >= pieces:
                break
            for i in range(piece * SETTLE_PIECE, min(size, (piece + 1) * SETTLE_PIECE)):
                byte = state[i]
                if not layer_state.resolved(byte):
                    set_code(codes, lo + i, _recount(seeds, stage, lo + i, layer_state.pending_exit(byte), codes, rows))


@njit(cache=True)
def rebuild_seeds(lo: int, size: int, state: np.ndarray, codes: np.ndarray, seeds_found: np.ndarray) -> int:
    """The last sweep of rebuild_codes: what the state file holds resolved is
    EARLIER; a pending rank left EARLIER by rebuild_counts is a WON seed, one
    left LOST (no unrefuted child, the exit bit set) a LOST seed: their ranks
    go to seeds_found, in rank order; returns how many. Codes read back from
    a codes file (LeanLayer's checkpoint, as the stage began) hold the
    stage's seeds as WON and LOST already: a pending rank WON is one too."""
    found = 0
    for i in range(size):
        rank = lo + i
        if layer_state.resolved(state[i]):
            set_code(codes, rank, EARLIER)
            continue
        code = code_of(codes, rank)
        if code == EARLIER:
            set_code(codes, rank, WON)
        if code in (EARLIER, LOST, WON):
            seeds_found[found] = rank
            found += 1
    return found

