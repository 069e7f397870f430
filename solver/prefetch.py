"""A software prefetch for numba kernels (LLVM's llvm.prefetch intrinsic).

The retrograde sweeps touch positions at random places in arrays far larger
than the caches; announcing those addresses a little ahead lets the memory
system fetch several at once.
"""

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def prefetch_row(typingctx, array, row):
    """Prefetch (for writing) the first element of `row` of a C-contiguous array."""
    signature = types.void(array, row)

    def codegen(context, builder, sig, args):
        array_type = sig.args[0]
        view = context.make_array(array_type)(context, builder, args[0])
        zero = context.get_constant(types.intp, 0)
        indices = [args[1]] + [zero] * (array_type.ndim - 1)
        pointer = cgutils.get_item_pointer(context, builder, array_type, view, indices, wraparound=False)
        i32 = ir.IntType(32)
        function_type = ir.FunctionType(ir.VoidType(), [pointer.type, i32, i32, i32])
        function = cgutils.get_or_insert_function(builder.module, function_type, "llvm.prefetch.p0")
        # rw = 1 (for writing), locality = 3 (keep in all cache levels), cache type = 1 (data)
        builder.call(function, [pointer, ir.Constant(i32, 1), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return signature, codegen
