"""Which values inside a `gpu.launch` may differ between the threads of a block.

A value is thread-dependent when it is a thread id (`gpu.thread_id`, the
launch's thread arguments, `gpu.lane_id`), a `gpu.shuffle` result, a load
from per-thread ("local") memory, or is computed from one: through
operands, and for region ops through the values their regions yield. Loads
from shared or global memory at thread-independent indices are
thread-independent (races are checked separately). The analysis is a
conservative fixpoint over the launch body.
"""

from __future__ import annotations

from tilemlir.ir_util import walk_ops
from tilemlir.mlir import ir

THREAD_VALUES = ("gpu.thread_id", "gpu.lane_id", "gpu.shuffle")
LOADS = ("memref.load", "vector.load")


def thread_dependent_values(launch: ir.Operation, local_buffers: set[ir.Value]) -> set[ir.Value]:
    body = launch.regions[0].blocks[0]
    dependent: set[ir.Value] = set(list(body.arguments)[3:6])
    ops = list(walk_ops(launch))
    changed = True
    while changed:
        changed = False
        for op in ops:
            if _is_dependent(op, dependent, local_buffers):
                new = [r for r in op.results if r not in dependent]
                new += [a for region in op.regions for block in region.blocks for a in block.arguments
                        if a not in dependent]
                if new:
                    dependent.update(new)
                    changed = True
    return dependent


def _is_dependent(op: ir.Operation, dependent: set[ir.Value], local_buffers: set[ir.Value]) -> bool:
    if op.name in THREAD_VALUES:
        return True
    if op.name in LOADS and op.operands[0] in local_buffers:
        return True
    if any(v in dependent for v in op.operands):
        return True
    for region in op.regions:
        for block in region.blocks:
            operations = list(block.operations)
            if operations and any(v in dependent for v in operations[-1].operation.operands):
                return True
    return False
