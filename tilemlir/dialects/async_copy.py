"""The asynchronous-copy ops of the `tile` dialect: `tile.cp_async`, `tile.cp_async_commit`, `tile.cp_async_wait`.

PTX's cp.async (ISA 9.7.9.25.3): each thread issues copies from global to shared memory that
complete asynchronously; `commit` closes the thread's group of copies issued since the last one,
`wait {pending = N}` blocks until at most N of the thread's groups are still in flight. They make
a pipelined loop's copies of later tiles overlap the compute on earlier ones (plan-pipeline,
async-copies; docs/tensor_cores.md). Defined on `tilemlir.dialects.tile.Tile`, loaded with it.
"""

from collections.abc import Sequence

from tilemlir.dialects.tile import SHARED, Tile, _checked, _element_bytes, _int_attr, _space_name, memory_space
from tilemlir.ir_util import constant_int, enclosing
from tilemlir.mlir import ext, ir

Operand = ext.Operand
COPY_BYTES = (4, 8, 16)


def _in_kernel_problem(op) -> str | None:
    if enclosing(op.operation, "tile.kernel") is None and enclosing(op.operation, "gpu.launch") is None:
        return "must be inside a tile.kernel or a gpu.launch"
    return None


class CpAsyncOp(Tile.Operation, name="cp_async"):
    """One thread's asynchronous copy of `bytes` (4, 8 or 16) contiguous bytes from a global tensor
    to a shared buffer, starting at the given elements; `dst` indices are logical (as a
    `memref.store`'s; materialize-shared-layouts makes them physical). An optional last operand
    `src_bytes` (index, 0..bytes) copies only that many and zero-fills the rest: 0 writes zeros
    without reading (an out-of-range chunk). Both addresses must be `bytes`-aligned.

        "tile.cp_async"(%A_s, %A, %i, %j, %r, %c) {bytes = 16 : i64}
            : (memref<128x32xf16, "shared">, memref<?x?xf16>, index, index, index, index) -> ()
        "tile.cp_async"(%A_s, %A, %i, %j, %r, %c, %n) {bytes = 16 : i64} : (..., index) -> ()
    """

    dst: Operand[ir.MemRefType]
    src: Operand[ir.MemRefType]
    indices: Sequence[Operand[ir.IndexType]]
    bytes: ir.IntegerAttr

    @_checked
    def verify_invariants(self):
        operands = list(self.operation.operands)
        dst, src = operands[0].type, operands[1].type
        if memory_space(dst) != SHARED:
            return f"dst must be a shared buffer, got {_space_name(memory_space(dst))} memory"
        if memory_space(src) is not None:
            return f"src must be a global tensor, got {_space_name(memory_space(src))} memory"
        if dst.element_type != src.element_type:
            return f"dst and src element types differ: {dst.element_type} vs {src.element_type}"
        indices = len(operands) - 2
        if indices not in (dst.rank + src.rank, dst.rank + src.rank + 1):
            return (f"expects {dst.rank} dst indices and {src.rank} src indices, then an optional src_bytes, "
                    f"got {indices} index operands")
        size = _int_attr(self, "bytes")
        if size not in COPY_BYTES:
            return f"'bytes' must be 4, 8 or 16, got {size}"
        element = _element_bytes(dst.element_type)
        if size % element:
            return f"'bytes' = {size} is not a whole number of {dst.element_type} elements"
        if indices == dst.rank + src.rank + 1:
            src_bytes = constant_int(operands[-1])
            if src_bytes is not None and not 0 <= src_bytes <= size:
                return f"src_bytes must be in 0..{size}, got {src_bytes}"
        return _in_kernel_problem(self)


def cp_async_src_bytes(op: ir.Operation) -> ir.Value | None:
    """The zero-fill operand of a `tile.cp_async` (None: all `bytes` are copied)."""
    dst, src = op.operands[0].type, op.operands[1].type
    return op.operands[-1] if len(op.operands) == 3 + dst.rank + src.rank else None


def cp_async_indices(op: ir.Operation) -> tuple[list[ir.Value], list[ir.Value]]:
    """(dst indices, src indices) of a `tile.cp_async`."""
    rank = op.operands[0].type.rank
    operands = list(op.operands)
    return operands[2:2 + rank], operands[2 + rank:2 + rank + op.operands[1].type.rank]


class CpAsyncCommitOp(Tile.Operation, name="cp_async_commit"):
    """Close the calling thread's group of the cp.async copies issued since its last commit (an
    empty group when none were: every thread commits alike, so group counts stay uniform).

        "tile.cp_async_commit"() : () -> ()
    """

    @_checked
    def verify_invariants(self):
        return _in_kernel_problem(self)


class CpAsyncWaitOp(Tile.Operation, name="cp_async_wait"):
    """Wait until at most `pending` of the calling thread's committed groups are in flight; the
    copies of the others have landed (for this thread: other threads see them after a barrier).

        "tile.cp_async_wait"() {pending = 1 : i64} : () -> ()
    """

    pending: ir.IntegerAttr

    @_checked
    def verify_invariants(self):
        pending = _int_attr(self, "pending")
        if pending is None or pending < 0:
            return f"'pending' must be a non-negative integer, got {self.operation.attributes['pending']}"
        return _in_kernel_problem(self)


def _i64(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)


def cp_async(dst, src, dst_indices, src_indices, size: int, src_bytes=None, *, loc=None, ip=None) -> CpAsyncOp:
    operands = [*dst_indices, *src_indices, *([src_bytes] if src_bytes is not None else [])]
    op = CpAsyncOp(dst, src, operands, _i64(size), loc=loc, ip=ip)
    if "operandSegmentSizes" in op.operation.attributes:
        del op.operation.attributes["operandSegmentSizes"]
    return op


def cp_async_commit(*, loc=None, ip=None) -> CpAsyncCommitOp:
    return CpAsyncCommitOp(loc=loc, ip=ip)


def cp_async_wait(pending: int, *, loc=None, ip=None) -> CpAsyncWaitOp:
    return CpAsyncWaitOp(_i64(pending), loc=loc, ip=ip)
