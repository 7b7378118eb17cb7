"""Debugging inside kernels: `T.print` and `T.device_assert` -> `tile.print` / `tile.device_assert`.

`T.print(obj, msg="", warp_group_id=0, warp_id=0)`, as TileLang's: one thread of each block,
`warp_group_id * 128 + warp_id * 32`, prints. A scalar (the block's uniform code computes it)
prints once; a buffer prints every element, in row-major order, one line each: a shared or local
buffer as it is, a fragment through a shared copy the print makes (its elements are spread over
the threads). Not inside T.Parallel: the points of a parallel loop run on different threads.

`T.device_assert(cond, msg="")` checks `cond` in every thread that reaches it, anywhere in the
kernel. A message left out is the Python text of the printed value or of the condition.
"""

from __future__ import annotations

import ast
import contextlib

from tilemlir import language as T
from tilemlir.analysis.signedness import mark_unsigned
from tilemlir.dialects import debug_ops, tile
from tilemlir.frontend import scalars
from tilemlir.frontend.expressions import is_dynamic
from tilemlir.frontend.source import KernelError
from tilemlir.frontend.types import mlir_type
from tilemlir.frontend.values import Buffer, Scalar
from tilemlir.mlir import ir, memref, scf

WARP_GROUP_THREADS, WARP_THREADS = 128, 32


class DebugOpsMixin:
    """`T.print` and `T.device_assert` for `KernelBuilder`."""

    def intrinsic_print(self, node: ast.Call) -> None:
        self.require_kernel("T.print")
        if self.in_scope("parallel") is not None:
            raise KernelError("T.print cannot be used inside T.Parallel (its points run on different threads): "
                              "print the fragment, or a value of it, after the loop")
        args = self.bind_call("T.print", node, ["obj", "msg", "warp_group_id", "warp_id"],
                              defaults={"msg": "", "warp_group_id": 0, "warp_id": 0})
        thread = self._printing_thread(args)
        msg = self.compile_time_arg(args, "msg", str, "a string") or ast.unparse(args.node_of("obj"))
        value = self.arg(args, "obj")
        if isinstance(value, Buffer):
            self._print_buffer(value, msg, thread, args.node_of("obj"))
            return
        scalar = _widened(self._printed_scalar(value, args.node_of("obj")))
        op = debug_ops.print_(scalar.value, self._block_coordinates(), msg, thread)
        mark_unsigned(op, scalar.dtype.kind == "uint")

    def _printing_thread(self, args) -> int:
        group = self.compile_time_arg(args, "warp_group_id", int, "a compile-time int")
        warp = self.compile_time_arg(args, "warp_id", int, "a compile-time int")
        thread = group * WARP_GROUP_THREADS + warp * WARP_THREADS
        if group < 0 or warp < 0 or thread >= self.kernel.threads:
            raise KernelError(f"T.print: warp_group_id={group}, warp_id={warp} names thread {thread} "
                              f"(warp_group_id * {WARP_GROUP_THREADS} + warp_id * {WARP_THREADS}), but the block has "
                              f"threads 0..{self.kernel.threads - 1}", args.node)
        return thread

    def _printed_scalar(self, value, node: ast.expr) -> Scalar:
        value = self.materialize(value)
        if isinstance(value, Scalar):
            return value
        if isinstance(value, bool):
            return scalars.constant(value, T.bool)
        if isinstance(value, int):
            return scalars.constant(value, T.int64)
        if isinstance(value, float):
            return scalars.constant(value, T.float64)
        shown = getattr(value, "name", None) or repr(value)
        raise KernelError(f"T.print prints a scalar or an on-chip buffer, got {shown}", node)

    def _print_buffer(self, buffer: Buffer, msg: str, thread: int, node: ast.expr) -> None:
        if buffer.is_global:
            raise KernelError(f"T.print prints on-chip buffers; '{buffer.name}' is a global tensor: copy the tile "
                              "you want to see into a fragment or a shared buffer (T.copy) and print that", node)
        source = buffer.value
        if buffer.space == "fragment":  # spread over the threads: one thread reads it from a shared copy
            source = self._shared_copy(buffer)
        block = self._block_coordinates()
        with contextlib.ExitStack() as nest:  # a loop per dim, the print innermost
            indices = []
            for extent in buffer.shape:
                index = [scalars.constant(v, scalars.INDEX).value for v in (0, extent, 1)]
                loop = scf.ForOp(*index)
                with ir.InsertionPoint(loop.body):
                    end = scf.YieldOp([])
                nest.enter_context(ir.InsertionPoint(end))
                indices.append(loop.induction_variable)
            value = _widened(Scalar(memref.LoadOp(source, indices).result, buffer.dtype)).value
            op = debug_ops.print_(value, block, msg, thread, buffer=(buffer.name, buffer.shape), indices=indices)
            mark_unsigned(op, buffer.dtype.kind == "uint")

    def _shared_copy(self, fragment: Buffer) -> ir.Value:
        """A shared buffer holding `fragment`'s elements here (allocated at the top of the kernel)."""
        kernel_block = self._kernel_block()
        with ir.InsertionPoint.at_block_begin(kernel_block):
            alloc = tile.alloc_shared(list(fragment.shape), mlir_type(fragment.dtype), f"{fragment.name}_printed")
        mark_unsigned(alloc, fragment.dtype.kind == "uint")
        zeros = [scalars.constant(0, scalars.INDEX).value] * len(fragment.shape)
        tile.copy(fragment.value, alloc.result, zeros, zeros, list(fragment.shape))
        return alloc.result

    def _kernel_block(self) -> ir.Block:
        block = ir.InsertionPoint.current.block
        while block.owner.operation.name != "tile.kernel":
            block = block.owner.operation.block
        return block

    def _block_coordinates(self) -> list[ir.Value]:
        """The block's (x, y, z) index, 0 for the dims the grid lacks."""
        coordinates = list(self._kernel_block().arguments)
        zero = scalars.constant(0, scalars.INDEX).value
        return coordinates + [zero] * (debug_ops.BLOCK_OPERANDS - len(coordinates))

    def intrinsic_device_assert(self, node: ast.Call) -> None:
        self.require_kernel("T.device_assert")
        args = self.bind_call("T.device_assert", node, ["condition", "msg"], defaults={"msg": ""})
        where = args.node_of("condition")
        msg = self.compile_time_arg(args, "msg", str, "a string") or ast.unparse(where)
        condition = self.arg(args, "condition")
        if not is_dynamic(condition):
            if not condition:
                raise KernelError(f"T.device_assert({ast.unparse(where)}) is false at compile time", where)
            return
        with self.located(where):
            flag = scalars.truth(self.operand(condition, "T.device_assert"), "the condition of T.device_assert")
        debug_ops.device_assert(flag.value, msg)


def _widened(scalar: Scalar) -> Scalar:
    """A float narrower than float32 as float32 (exactly): every backend prints float32 and float64."""
    if scalar.dtype.is_float and scalar.dtype.bits < 32:
        return scalars.convert(scalar, T.float32)
    return scalar
