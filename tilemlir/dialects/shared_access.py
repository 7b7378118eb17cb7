"""Which operands of an op are a shared buffer and the logical indices into it.

One table for every op that addresses shared memory by logical index, so the passes that rewrite
shared indices (materialize-shared-layouts) or plan shared buffers (plan-pipeline's ring slots)
treat every such op alike. An op kind joins by adding its entry to `SHARED_INDEXED`: its name ->
(the buffer's operand number, the operand number of its first index); the buffer's rank gives how
many indices follow. """

from __future__ import annotations

from dataclasses import dataclass

from tilemlir.dialects.tile import SHARED, memory_space
from tilemlir.mlir import ir

SHARED_INDEXED: dict[str, tuple[int, int]] = {
    "memref.load": (0, 1),
    "memref.store": (1, 2),
    "vector.load": (0, 1),
    "vector.store": (1, 2),
    "tile.cp_async": (0, 2),
    "tile.ldmatrix": (0, 2),
    "tile.stmatrix": (0, 2),
    "tile.wgmma_desc": (0, 1),
    "tile.tma_load": (0, 2),
    "tile.tma_store": (0, 1),
    "tile.atomic_add": (0, 2),
}


@dataclass(frozen=True)
class SharedIndices:
    """Operand `buffer` of an op is a shared buffer indexed by operands `first .. first + rank`."""

    buffer: int
    first: int
    rank: int

    def indices(self, op: ir.Operation) -> list[ir.Value]:
        return list(op.operands)[self.first:self.first + self.rank]


def shared_indices(op: ir.Operation) -> SharedIndices | None:
    """Where `op` indexes a shared buffer, or None (not in the table, or its buffer is not shared)."""
    entry = SHARED_INDEXED.get(op.name)
    if entry is None:
        return None
    buffer, first = entry
    type_ = op.operands[buffer].type
    if not isinstance(type_, ir.MemRefType) or memory_space(type_) != SHARED:
        return None
    return SharedIndices(buffer, first, type_.rank)
