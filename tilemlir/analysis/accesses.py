"""Global- and shared-memory accesses of thread-level IR, the row-major strides of the buffers they
touch, and the ops of a region picked by a predicate (how passes and the prover find the ops they work on).

A global access is a `memref.load`/`memref.store`/`vector.load`/
`vector.store`, or a scalar `tile.atomic_add`, on a memref without memory
space (a kernel tensor, docs/ir.md); a shared access one of the first four
on a "shared" memref. A vector access covers `lanes` consecutive elements
along the last dim.
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

from tilemlir.analysis.index_terms import IndexTerms
from tilemlir.dialects.tile import SHARED, memory_space
from tilemlir.ir_util import operation
from tilemlir.mlir import ir

# op name -> (is a load, position of the memref operand, position of the first index)
_KINDS = {
    "memref.load": (True, 0, 1),
    "memref.store": (False, 1, 2),
    "vector.load": (True, 0, 1),
    "vector.store": (False, 1, 2),
    "tile.atomic_add": (False, 0, 2),
}


@dataclass(frozen=True)
class MemoryAccess:
    """One load or store of a global tensor or a shared buffer."""

    op: ir.Operation
    is_load: bool
    memref: ir.Value
    indices: tuple
    lanes: int

    @property
    def element_type(self) -> ir.Type:
        return self.memref.type.element_type

    @property
    def element_bytes(self) -> int:
        return element_bytes(self.element_type)

    @property
    def stored_value(self) -> ir.Value | None:
        if self.is_load:
            return None
        return self.op.operands[1] if self.is_atomic else self.op.operands[0]

    @property
    def is_atomic(self) -> bool:
        return self.op.name == "tile.atomic_add"

    @property
    def rank(self) -> int:
        return self.memref.type.rank


def element_bytes(type_: ir.Type) -> int:
    width = getattr(type_, "width", None)
    if width is None:
        width = 64 if isinstance(type_, ir.IndexType) else 0
    return max(1, width // 8)


def is_global(memref_type: ir.Type) -> bool:
    return isinstance(memref_type, ir.MemRefType) and memref_type.memory_space is None


def global_access(op: ir.Operation) -> MemoryAccess | None:
    """The access `op` makes to global memory, or None."""
    op = operation(op)
    access = _access(op)
    if access is None or not is_global(access.memref.type):
        return None
    if op.name == "tile.atomic_add" and isinstance(op.operands[1].type, ir.MemRefType):
        return None  # a whole-buffer add: its lowering guards the elements it writes
    return access


def shared_access(op: ir.Operation) -> MemoryAccess | None:
    """The load or store `op` makes to a shared buffer, or None (a shared atomic add is not one)."""
    op = operation(op)
    access = _access(op)
    if access is None or access.is_atomic or not is_shared(access.memref.type):
        return None
    return access


def is_shared(memref_type: ir.Type) -> bool:
    return isinstance(memref_type, ir.MemRefType) and memory_space(memref_type) == SHARED


def _access(op: ir.Operation) -> MemoryAccess | None:
    kind = _KINDS.get(op.name)
    if kind is None:
        return None
    is_load, memref_pos, first_index = kind
    operands = list(op.operands)
    lanes = 1
    if op.name.startswith("vector."):
        vector_type = op.results[0].type if is_load else operands[0].type
        lanes = vector_type.shape[-1] if vector_type.rank == 1 else -1
    return MemoryAccess(op, is_load, operands[memref_pos], tuple(operands[first_index:]), lanes)


def global_accesses(root: ir.Operation) -> list[MemoryAccess]:
    """Every global access nested in `root`, in program order."""
    found = []

    def visit(op):
        access = global_access(op)
        if access is not None:
            found.append(access)
        return ir.WalkResult.ADVANCE

    root.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def ops_where(root: ir.Operation, keep, order=ir.WalkOrder.POST_ORDER) -> list[ir.Operation]:
    """Every op nested in `root` (and `root` itself) for which `keep(op)` holds, in walk `order`."""
    found = []

    def visit(op):
        if keep(op):
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit, order)
    return found


def row_major_strides(terms: IndexTerms, memref: ir.Value) -> list:
    """Element strides of each dim of a contiguous row-major global tensor."""
    rank = memref.type.rank
    strides = [terms.int_val(1)] * rank
    for dim in range(rank - 2, -1, -1):
        strides[dim] = strides[dim + 1] * terms.dim_term(memref, dim + 1)
    return [z3.simplify(s) for s in strides]
