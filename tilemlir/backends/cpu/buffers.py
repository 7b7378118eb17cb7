"""On-chip buffers on the CPU: heap allocations hoisted to the function entry, poisoned per block.

A block's shared memory, fragments and registers become `memref.alloc`s
(default memory space) at the top of the kernel function, freed before
each `func.return`. Blocks are simulated one after another, so one
allocation serves them all; each block starts by filling its buffers with
poison (NaN for floats, 0xA5.. for integers) so a read of memory the block
never wrote shows up in the result instead of reading the previous block's
data.
"""

from __future__ import annotations

import math

from tilemlir.backends.cpu import ir_builders as b
from tilemlir.mlir import func, ir, memref

ALIGNMENT = 64


def enclosing_function(op: ir.Operation) -> ir.Operation:
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        parent = parent.parent
    if parent is None:
        raise ValueError(f"{op.name} is not inside a func.func")
    return parent


def allocate_at_entry(function: ir.Operation, type_: ir.MemRefType, loc: ir.Location, name: str | None = None) -> ir.Value:
    """A heap buffer of `type_` (memory space dropped) allocated at the entry of `function`
    and freed before each of its returns."""
    plain = without_memory_space(type_)
    entry = function.regions[0].blocks[0]
    with loc, ir.InsertionPoint.at_block_begin(entry):
        buffer = memref.alloc(plain, [], [], alignment=ALIGNMENT)
    if name:
        buffer.owner.attributes["name"] = ir.StringAttr.get(name)
    for op in entry.operations:
        if isinstance(op.opview, func.ReturnOp):
            with loc, ir.InsertionPoint(op):
                memref.dealloc(buffer)
    return buffer


def poison(buffer: ir.Value) -> None:
    """Fill `buffer` with poison at the current insertion point."""
    element = buffer.type.element_type
    if isinstance(element, ir.FloatType):
        value = b.constant(element, math.nan)
    elif isinstance(element, ir.IntegerType):
        value = b.constant(element, int("A5" * ((element.width + 7) // 8), 16))
    else:
        return
    with b.loop_nest(list(buffer.type.shape)) as ivs:
        memref.store(value, buffer, ivs)


def without_memory_space(type_: ir.MemRefType) -> ir.MemRefType:
    return ir.MemRefType.get(list(type_.shape), type_.element_type, layout=type_.layout)


def erase_memory_spaces(function: ir.Operation) -> None:
    """Retype every memref value of `function` that names a memory space to the default space, its arguments
    (an argument of thread-level IR may be a "local" or "shared" memref) in its signature too."""

    def retype(value: ir.Value) -> None:
        type_ = value.type
        if isinstance(type_, ir.MemRefType) and type_.memory_space is not None:
            value.set_type(without_memory_space(type_))

    def visit(op: ir.Operation) -> ir.WalkResult:
        for result in op.results:
            retype(result)
        for region in op.regions:
            for block in region.blocks:
                for arg in block.arguments:
                    retype(arg)
        return ir.WalkResult.ADVANCE

    function.walk(visit)
    inputs = [arg.type for arg in function.regions[0].blocks[0].arguments]
    results = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value).results
    function.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, results))
