"""The check of a built layer (`awele verify`, solver.build): every position's
value against the values its moves reach, in passes over groups of smaller
layers, one bit array for a move that attains the value and one for a move
that beats it."""

import numpy as np
from numba import njit, prange

# The kernels take index's tables (rank offsets, the distance order of
# 2026-12-05: bands interleaved) into their code as constants, and numba's
# cache is keyed on each file alone: a change to those tables must come
# with a change to this file, or a cached kernel keeps the old ones
# (retrograde.check_compiled_order finds that).
from . import index
from .intrinsics import prefetch, trailing_zeros
from .layer_state import BLOCK, SEED_CHUNK, WORK_SLOTS, child_at, hot_kernel, order_fingerprint, take
from .rules import ROW, legal_mask, play, terminal_value

VERIFY_BITS = 2  # bits a position while a layer is verified: a move attains its value; a move beats it


@hot_kernel
def _check_block(seeds, block, values, flat, starts, rows, use, in_layer, attained, beaten, where, gains):
    """check_moves for one block (BLOCK ranks: whole bytes of the bit arrays).

    The block's look-ups are gathered first, each child's value byte
    prefetched as it is found, and read only then, so their misses overlap
    (as in _exit_block). An in-layer child is looked up in the layer's own
    slot of `flat` and gains 0: its move is worth -d(child).
    """
    size = values.shape[0]
    start = block * BLOCK
    stop = min(size, start + BLOCK)
    mover, opponent = index.unrank_fast(seeds, start, rows[0], rows[1], rows[2], rows[3])
    asked = 0
    for rank in range(start, stop):
        mask = legal_mask(mover, opponent)
        if mask == 0:
            if in_layer:
                bit = np.uint8(1 << (rank & 7))
                if terminal_value(mover, opponent) == values[rank]:
                    attained[rank >> 3] |= bit
                else:
                    beaten[rank >> 3] |= bit
        else:
            for house in range(ROW):
                if mask & (1 << house):
                    captured, child_mover, child_opponent = play(mover, opponent, house)
                    if (in_layer if captured == 0 else use[seeds - captured]):
                        at = child_at(captured, child_mover, child_opponent, seeds, starts)
                        prefetch(flat, at)  # type: ignore[call-arg, arg-type]  # numba's @intrinsic passes typingctx
                        where[asked] = at
                        gains[asked] = (rank - start) * 16 + captured
                        asked += 1
        _ok, mover, opponent = index.next_packed(mover, opponent, seeds)
    for j in range(asked):
        rank = start + (gains[j] >> 4)
        value = (gains[j] & 15) - np.int64(flat[where[j]])
        bit = np.uint8(1 << (rank & 7))
        if value > values[rank]:
            beaten[rank >> 3] |= bit
        elif value == values[rank]:
            attained[rank >> 3] |= bit


@njit(cache=True, parallel=True, nogil=True)  # nogil: `awele verify` can be stopped with Ctrl-C
def check_moves(
    seeds: int, values: np.ndarray, flat: np.ndarray, starts: np.ndarray, rows: tuple[np.ndarray, ...],
    use: np.ndarray, in_layer: bool, attained: np.ndarray, beaten: np.ndarray,
) -> None:
    """One pass of `awele verify` over layer `seeds` (`values`, its slot in `flat`).

    d(s) must be the best over the moves of captured - d(child) (a capture)
    and -d(child) (a move that stays in the layer), or the terminal value
    when there is no move. A pass looks at the captures into the layers
    marked in `use`, and with `in_layer` at the moves inside the layer and
    the terminal positions too; for each position it sets bit rank & 7 of
    attained[rank >> 3] when one of those moves is worth exactly d(s), and
    of beaten[rank >> 3] when one is worth more. Once every move has been
    looked at (passes over groups of smaller layers, one of them in_layer),
    a position is right exactly when it is attained and not beaten
    (mismatches). Threads take whole blocks, hence whole bytes, as they
    become free.
    """
    size = values.shape[0]
    blocks = (size + BLOCK - 1) // BLOCK
    where = np.empty((WORK_SLOTS, BLOCK * ROW), dtype=np.int64)
    gains = np.empty((WORK_SLOTS, BLOCK * ROW), dtype=np.int64)
    counter = np.zeros(1, dtype=np.int64)
    for slot in prange(WORK_SLOTS):
        while True:
            block = take(counter, 1)
            if block >= blocks:
                break
            _check_block(seeds, block, values, flat, starts, rows, use, in_layer, attained, beaten, where[slot],
                         gains[slot])


@njit(cache=True, parallel=True, nogil=True)
def mismatches(attained: np.ndarray, beaten: np.ndarray, size: int, limit: int) -> tuple[int, np.ndarray]:
    """(how many of the `size` positions check_moves found wrong, not
    attained or beaten; the first `limit` of their ranks)."""
    blocks = (size + BLOCK - 1) // BLOCK
    first = np.full(blocks, -1, dtype=np.int64)
    counts = np.zeros(blocks, dtype=np.int64)
    counter = np.zeros(1, dtype=np.int64)
    for _slot in prange(WORK_SLOTS):
        while True:
            block = take(counter, SEED_CHUNK)
            if block >= blocks:
                break
            for b in range(block, min(blocks, block + SEED_CHUNK)):
                for byte in range(b * (BLOCK // 8), min((size + 7) // 8, (b + 1) * (BLOCK // 8))):
                    wrong = (np.int64(beaten[byte]) | ~np.int64(attained[byte])) & 0xFF
                    if byte * 8 + 8 > size:
                        wrong &= (1 << (size - byte * 8)) - 1  # bits past the last position
                    while wrong:
                        if first[b] < 0:
                            first[b] = byte * 8 + trailing_zeros(np.uint64(wrong))  # type: ignore[call-arg]  # numba's @intrinsic passes typingctx
                        counts[b] += 1
                        wrong &= wrong - 1
    found = first[first >= 0]
    return counts.sum(), found[:limit]


@njit(cache=True)
def compiled_order_fingerprint() -> int:
    """index.ORDER_OFFSET as this file's kernels were compiled with it (a
    constant): retrograde.check_compiled_order compares it with index's."""
    return order_fingerprint(index.ORDER_OFFSET)
