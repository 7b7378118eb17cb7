"""Small read-only helpers over the MLIR Python bindings shared by the analyses, passes and emitters."""

from __future__ import annotations

from tilemlir.errors import CompileError
from tilemlir.mlir import ir


def operation(op) -> ir.Operation:
    return op.operation if isinstance(op, ir.OpView) else op


def walk_ops(op: ir.Operation):
    """Every op nested in `op`'s regions, in program order (pre-order; not `op` itself)."""
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                inner = operation(inner)
                yield inner
                yield from walk_ops(inner)


def ops_named(root: ir.Operation, *names: str) -> list[ir.Operation]:
    """Ops under `root` (and `root` itself) with one of `names`, inner ops before the ops that contain them."""
    found = []

    def visit(op):
        if op.name in names:
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return found


def entry_function(module, consumer: str) -> ir.Operation:
    """The kernel function: the one `func.func` marked `tile.entry`, else the module's only one.
    `consumer` names who asks, for the error when there is no single candidate."""
    root = module.operation if isinstance(module, ir.Module) else operation(module)
    functions = [operation(op) for op in root.regions[0].blocks[0].operations if operation(op).name == "func.func"]
    entries = [f for f in functions if "tile.entry" in f.attributes]
    if not entries and len(functions) == 1:
        entries = functions
    if len(entries) != 1:
        raise CompileError(f"{consumer} needs exactly one func.func marked tile.entry, found {len(entries)}")
    return entries[0]
