"""select-shared-layouts: `tile.swizzle` on the shared tiles tensor-core gemms read or whose results they stage.

Takes tile-level IR (after select-mma set `tile.mma` on the gemms the tensor cores run, before
plan-pipeline, which keeps a buffer's attributes on its ring). Gives the same IR where every
shared A or B operand of a `tile.mma` gemm, and every shared tile a `tile.copy` writes from such a
gemm's accumulator (an epilogue staged through shared memory), a `tile.alloc_shared` of rank 2,
carries `tile.swizzle = W`, W = `analysis.shared_layouts.swizzle_width` of its row bytes (nothing
when no swizzle divides the rows). The copies into such a buffer need nothing of their own: the swizzle is
the buffer's, and materialize-shared-layouts rewrites every access of it, theirs included. A
16-byte copy chunk is one swizzle atom, so the copies' cp.async stay 16 bytes wide, and the
ldmatrix rows the gemm reads (eight 16-byte rows of eight consecutive tile rows) and the
cp.async writes are bank-conflict free (test_shared_layouts.py counts the wavefronts). So are the
accumulator's writes into an epilogue tile: a warp's store of its accumulator registers covers
eight consecutive rows at one 16-byte chunk column (the mma and wgmma accumulator layouts), which
the swizzle spreads over eight bank groups, where unswizzled rows a multiple of 128 bytes long put
all eight on the same banks; the 16-byte row reads that copy the tile out stay conflict free.
"""

from __future__ import annotations

from tilemlir.analysis.shared_layouts import SWIZZLE_ATTR, swizzle_width
from tilemlir.dialects.tile import SHARED, memory_space
from tilemlir.ir_util import defining_op, operation, ops_named
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass

MMA_ATTR = "tile.mma"


@register_pass("select-shared-layouts", "tile.swizzle on the shared operands of tensor-core (tile.mma) gemms")
def run(module: ir.Operation, options) -> None:
    module = operation(module)
    with module.context, module.location:
        for gemm in ops_named(module, "tile.gemm"):
            if MMA_ATTR not in gemm.attributes:
                continue
            for operand in [*list(gemm.operands)[:2], *_staged_from(gemm.operands[2])]:
                alloc = defining_op(operand)
                if alloc is None or alloc.name != "tile.alloc_shared" or memory_space(operand.type) != SHARED:
                    continue
                _swizzle(alloc)


def _staged_from(accumulator: ir.Value) -> list[ir.Value]:
    """The destinations of the copies that read `accumulator`."""
    return [use.owner.operands[1] for use in accumulator.uses
            if use.owner.name == "tile.copy" and use.operand_number == 0]


def _swizzle(alloc: ir.Operation) -> None:
    type_ = alloc.results[0].type
    if type_.rank != 2:
        return
    element_bytes = -(-type_.element_type.width // 8)
    width = swizzle_width(type_.shape[-1] * element_bytes)
    if width:
        alloc.attributes[SWIZZLE_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), width)
