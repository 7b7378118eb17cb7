"""Small read-only helpers over the MLIR Python bindings used across the emitter."""

from __future__ import annotations

from tilemlir.diagnostics.reporting import error
from tilemlir.ir_util import defining_op, operation, walk_ops as walk
from tilemlir.mlir import ir


def users(value: ir.Value) -> list[tuple[ir.Operation, int]]:
    """(user op, operand number) for every use of `value`."""
    return [(operation(use.owner), use.operand_number) for use in value.uses]


def const_int(value: ir.Value) -> int | None:
    """The integer of an `arith.constant` (index, integer or bool), else None."""
    op = defining_op(value)
    if op is None or op.name != "arith.constant":
        return None
    attr = op.attributes["value"]
    if isinstance(attr, ir.BoolAttr):
        return int(attr.value)
    if isinstance(attr, ir.IntegerAttr):
        return attr.value
    return None


def str_attr(op: ir.Operation, name: str) -> str | None:
    if name not in op.attributes:
        return None
    attr = op.attributes[name]
    return attr.value if isinstance(attr, ir.StringAttr) else None


def int_attr(op: ir.Operation, name: str) -> int | None:
    if name not in op.attributes:
        return None
    attr = op.attributes[name]
    if isinstance(attr, ir.BoolAttr):
        return None
    return attr.value if isinstance(attr, ir.IntegerAttr) else None


def has_attr(op: ir.Operation, name: str) -> bool:
    return name in op.attributes


def block_ops(block: ir.Block) -> list[ir.Operation]:
    return [operation(op) for op in block.operations]


def single_block(op: ir.Operation, region_index: int = 0) -> ir.Block:
    """The only block of a region; unstructured control flow is not supported."""
    blocks = list(op.regions[region_index].blocks)
    if len(blocks) != 1:
        raise error(op, f"'{op.name}' must have exactly one block in region #{region_index} "
                        f"for the CUDA emitter, got {len(blocks)} (unstructured control flow is not supported)")
    return blocks[0]
