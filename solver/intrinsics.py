"""LLVM intrinsics numba does not offer: a prefetch and byte atomics.

The retrograde sweeps touch positions at random places in arrays far larger
than the caches, and two threads may update the same position. A prefetch
lets several of those cache misses be in flight at once; the atomics make the
shared updates (claiming a position, counting down its children) race-free
without locks. All take a C-contiguous 2-D int8 array and a (row, column).
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _pointer(context, builder, array_type, array, row, column):
    view = context.make_array(array_type)(context, builder, array)
    return cgutils.get_item_pointer(context, builder, array_type, view, [row, column], wraparound=False)


@intrinsic
def prefetch_row(typingctx, array, row):
    """Prefetch (for writing) row `row` of a C-contiguous 2-D array."""
    signature = types.void(array, row)

    def codegen(context, builder, sig, args):
        zero = context.get_constant(types.intp, 0)
        pointer = _pointer(context, builder, sig.args[0], args[0], args[1], zero)
        i32 = ir.IntType(32)
        function_type = ir.FunctionType(ir.VoidType(), [pointer.type, i32, i32, i32])
        function = cgutils.get_or_insert_function(builder.module, function_type, "llvm.prefetch.p0")
        # rw = 1 (for writing), locality = 3 (keep in every cache level), cache type = 1 (data)
        builder.call(function, [pointer, ir.Constant(i32, 1), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return signature, codegen


def _rmw(operation):
    @intrinsic
    def atomic(typingctx, array, row, column, value):
        signature = types.int8(array, row, column, types.int8)

        def codegen(context, builder, sig, args):
            pointer = _pointer(context, builder, sig.args[0], args[0], args[1], args[2])
            operand = context.cast(builder, args[3], sig.args[3], types.int8)
            return builder.atomic_rmw(operation, pointer, operand, "monotonic")

        return signature, codegen

    return atomic


atomic_sub = _rmw("sub")  # atomic_sub(array, row, column, value) -> old byte
atomic_or = _rmw("or")  # atomic_or(array, row, column, bits) -> old byte
atomic_and = _rmw("and")  # atomic_and(array, row, column, bits) -> old byte


@intrinsic
def compare_and_swap(typingctx, array, row, column, expected, new):
    """Store `new` at (row, column) if it holds `expected`; return whether it did."""
    signature = types.boolean(array, row, column, types.int8, types.int8)

    def codegen(context, builder, sig, args):
        pointer = _pointer(context, builder, sig.args[0], args[0], args[1], args[2])
        expected_byte = context.cast(builder, args[3], sig.args[3], types.int8)
        new_byte = context.cast(builder, args[4], sig.args[4], types.int8)
        result = builder.cmpxchg(pointer, expected_byte, new_byte, "monotonic", "monotonic")
        return builder.extract_value(result, 1)

    return signature, codegen
