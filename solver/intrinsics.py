"""LLVM intrinsics numba does not offer: a prefetch, byte atomics and a bit count.

The retrograde sweeps touch positions at random places in arrays far larger
than the caches, and two threads may update the same position. A prefetch
lets several of those cache misses be in flight at once; the atomics make the
shared updates (claiming a position, counting down its children) race-free
without locks; an atomic add on a shared counter hands out chunks of work to
whichever thread is free. The atomics take a C-contiguous 1-D integer array
and an index; prefetch takes a 1-D array and an index, prefetch_row a 2-D array
and a row. trailing_zeros and leading_zeros find the lowest and the highest set bit of a
word in one instruction (un-sowing finds empty houses of a row with them).
monotonic_ns reads the clock time.perf_counter reads, from inside a kernel.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

if TYPE_CHECKING:
    from numba.core.typing.templates import Signature

# What an @intrinsic returns beside its signature: codegen(context, builder, signature, args),
# which emits the LLVM instructions and returns their value.
Codegen = Callable[..., Any]


def _pointer(context, builder, array_type, array, indices):
    view = context.make_array(array_type)(context, builder, array)
    return cgutils.get_item_pointer(context, builder, array_type, view, indices, wraparound=False)


def _emit_prefetch(context, builder, pointer):
    i32 = ir.IntType(32)
    function_type = ir.FunctionType(ir.VoidType(), [pointer.type, i32, i32, i32])
    function = cgutils.get_or_insert_function(builder.module, function_type, "llvm.prefetch.p0")
    # rw = 1 (for writing), locality = 3 (keep in every cache level), cache type = 1 (data)
    builder.call(function, [pointer, ir.Constant(i32, 1), ir.Constant(i32, 3), ir.Constant(i32, 1)])
    return context.get_dummy_value()


@intrinsic
def prefetch_row(typingctx: Any, array: types.Array, row: types.Integer) -> tuple[Signature, Codegen]:
    """Prefetch (for writing) row `row` of a C-contiguous 2-D array."""
    signature = types.void(array, row)

    def codegen(context, builder, sig, args):
        zero = context.get_constant(types.intp, 0)
        return _emit_prefetch(context, builder, _pointer(context, builder, sig.args[0], args[0], [args[1], zero]))

    return signature, codegen


@intrinsic
def prefetch(typingctx: Any, array: types.Array, item: types.Integer) -> tuple[Signature, Codegen]:
    """Prefetch (for writing) element `item` of a C-contiguous 1-D array."""
    signature = types.void(array, item)

    def codegen(context, builder, sig, args):
        return _emit_prefetch(context, builder, _pointer(context, builder, sig.args[0], args[0], [args[1]]))

    return signature, codegen


def _rmw(operation: str) -> Callable[..., Any]:
    @intrinsic
    def atomic(typingctx, array, item, value):
        byte = array.dtype
        signature = byte(array, item, byte)

        def codegen(context, builder, sig, args):
            pointer = _pointer(context, builder, sig.args[0], args[0], [args[1]])
            return builder.atomic_rmw(operation, pointer, args[2], "monotonic")

        return signature, codegen

    return atomic


atomic_add = _rmw("add")  # atomic_add(array, item, value) -> old value
atomic_sub = _rmw("sub")  # atomic_sub(array, item, value) -> old byte
atomic_or = _rmw("or")  # atomic_or(array, item, bits) -> old byte
atomic_and = _rmw("and")  # atomic_and(array, item, bits) -> old byte


@intrinsic
def compare_and_swap(
    typingctx: Any, array: types.Array, item: types.Integer, expected: types.Integer, new: types.Integer
) -> tuple[Signature, Codegen]:
    """Store `new` at `item` if it holds `expected`; return whether it did."""
    byte = array.dtype
    signature = types.boolean(array, item, byte, byte)

    def codegen(context, builder, sig, args):
        pointer = _pointer(context, builder, sig.args[0], args[0], [args[1]])
        result = builder.cmpxchg(pointer, args[2], args[3], "monotonic", "monotonic")
        return builder.extract_value(result, 1)

    return signature, codegen


def _bit_scan(word: types.Integer, llvm_name: str) -> tuple[Signature, Codegen]:
    """An int64 count of zero bits of a 64-bit word by the LLVM intrinsic
    `llvm_name` (cttz or ctlz), defined for 0 (64); None for another type."""
    if not isinstance(word, types.Integer) or getattr(word, "bitwidth", 0) != 64:
        return None  # type: ignore[return-value]  # numba: no implementation for this type
    signature = types.int64(word)

    def codegen(context, builder, sig, args):
        i64 = ir.IntType(64)
        function_type = ir.FunctionType(i64, [i64, ir.IntType(1)])
        function = cgutils.get_or_insert_function(builder.module, function_type, llvm_name)
        return builder.call(function, [args[0], ir.Constant(ir.IntType(1), 0)])  # 0 is defined: 64

    return signature, codegen


@intrinsic
def trailing_zeros(typingctx: Any, word: types.Integer) -> tuple[Signature, Codegen]:
    """The index of the lowest set bit of a 64-bit word (64 for 0): llvm.cttz."""
    return _bit_scan(word, "llvm.cttz.i64")


@intrinsic
def leading_zeros(typingctx: Any, word: types.Integer) -> tuple[Signature, Codegen]:
    """The number of zero bits above the highest set bit of a 64-bit word (64 for 0): llvm.ctlz."""
    return _bit_scan(word, "llvm.ctlz.i64")


# The clock of time.perf_counter (and of time.clock_gettime_ns(CLOCKS)) where the C
# library has clock_gettime: CLOCK_MONOTONIC on Linux and macOS. Elsewhere None.
CLOCKS = getattr(time, "CLOCK_MONOTONIC", None) if hasattr(time, "clock_gettime_ns") else None


@intrinsic
def monotonic_ns(typingctx: Any) -> tuple[Signature, Codegen]:
    """Nanoseconds of the monotonic clock (time.clock_gettime_ns(CLOCKS)), read
    by the C library's clock_gettime (no system call on Linux: the vDSO); 0
    where there is none (CLOCKS None), or if the call fails."""
    signature = types.int64()

    def codegen(context, builder, sig, args):
        i32, i64 = ir.IntType(32), ir.IntType(64)
        if CLOCKS is None:
            return ir.Constant(i64, 0)
        timespec = ir.LiteralStructType([i64, i64])  # struct timespec on 64-bit Linux and macOS
        slot = cgutils.alloca_once(builder, timespec)
        clock_type = ir.FunctionType(i32, [i32, timespec.as_pointer()])
        function = cgutils.get_or_insert_function(builder.module, clock_type, "clock_gettime")
        status = builder.call(function, [ir.Constant(i32, CLOCKS), slot])
        failed = builder.icmp_signed("!=", status, ir.Constant(i32, 0))
        seconds = builder.load(cgutils.gep_inbounds(builder, slot, 0, 0))
        nanoseconds = builder.load(cgutils.gep_inbounds(builder, slot, 0, 1))
        total = builder.add(builder.mul(seconds, ir.Constant(i64, 1_000_000_000)), nanoseconds)
        return builder.select(failed, ir.Constant(i64, 0), total)

    return signature, codegen
