"""split-staged-epilogue: an epilogue staged through a shared tile that leaves the block over its shared memory
goes out in column slabs through two slab buffers instead.

Takes tile-level IR after plan-pipeline (its rings have their `num_stages`-deep shapes) and select-shared-layouts
(the staged tile's `tile.swizzle`), before select-tma-stores and select-stmatrix, which then see the slabs'
copies. A staged tile is a two-dimensional `tile.alloc_shared` T whose only uses are, in one block and in this
order, `tile.copy(F, T)` of a whole fragment F of T's shape and `tile.copy(T, X)` of all of T into a kernel
tensor argument X (TileLang's `T.copy(C_f, C_s); T.copy(C_s, C[...])`). When the kernel's shared buffers
(every `tile.alloc_shared`, each rounded up to its 1024-byte alignment) need more than `limit` bytes, and slabs
of one swizzle panel (W bytes of each row; 64 bf16 columns for W = 128) fit, T becomes two slab buffers
`<T>_slab0`, `<T>_slab1` of `rows x W / element` elements, swizzled W, and the two copies become one pair per
slab j: columns [j c, (j + 1) c) of F into slab j mod 2, then the slab into X at the copy's column plus j c.
That is the same result: T had no other use. The barrier planner orders each slab's reuse after the copy out
of the slab before (a TMA store's reads are waited for before that barrier, tma-stores), so the copy of slab j
out overlaps the writes of slab j + 1. Without `enable` (tma=True) the pass does nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tilemlir.analysis.shared_layouts import SWIZZLE_128_ALIGN, SWIZZLE_ATTR
from tilemlir.analysis import layout_ir as lir
from tilemlir.dialects import tile
from tilemlir.dialects.tile import _element_bytes
from tilemlir.ir_util import constant_int, defining_op, operation, ops_named, walk_ops
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass
from tilemlir.rewriting.thread_builder import Builder

SLAB_BUFFERS = 2


@dataclass(frozen=True)
class SplitStagedEpilogueOptions:
    enable: bool = False  # the compile option tma=True
    limit: int = 0  # shared bytes one block may use (sm_90a's)


@register_pass("split-staged-epilogue", "an epilogue staged through a shared tile the block cannot afford goes out "
                                        "in column slabs through two slab buffers", SplitStagedEpilogueOptions)
def run(module: ir.Operation, options: SplitStagedEpilogueOptions) -> None:
    if not options.enable:
        return
    module = operation(module)
    with module.context, module.location:
        for kernel in ops_named(module, "tile.kernel"):
            allocs = [op for op in walk_ops(kernel) if op.name == "tile.alloc_shared"]
            need = sum(_reserved(op) for op in allocs)
            for alloc in allocs:
                staged = _staged(alloc)
                if need > options.limit and staged is not None:
                    slabs = _slab_columns(alloc)
                    if slabs and need - _reserved(alloc) + SLAB_BUFFERS * _slab_bytes(alloc, slabs) <= options.limit:
                        _split(alloc, *staged, slabs)
                        need -= _reserved(alloc) - SLAB_BUFFERS * _slab_bytes(alloc, slabs)
                        alloc.erase()


def _reserved(alloc: ir.Operation) -> int:
    type_ = alloc.results[0].type
    return -(-math.prod(type_.shape) * _element_bytes(type_.element_type) // SWIZZLE_128_ALIGN) * SWIZZLE_128_ALIGN


def _staged(alloc: ir.Operation) -> tuple[ir.Operation, ir.Operation] | None:
    """(the copy in from a whole fragment, the copy out into a tensor argument) when they are the tile's only
    uses, in one block, in that order."""
    value = alloc.results[0]
    if value.type.rank != 2:
        return None
    uses = [operation(use.owner) for use in value.uses]
    if len(uses) != 2 or any(op.name != "tile.copy" for op in uses) or uses[0].block != uses[1].block:
        return None
    ops = [operation(op) for op in uses[0].block.operations]
    into, out = sorted(uses, key=ops.index)
    whole = list(value.type.shape)
    src, dst = into.operands[0], out.operands[1]
    if into.operands[1] != value or lir.fragment_alloc(src) is None or list(src.type.shape) != whole:
        return None
    if out.operands[0] != value or not isinstance(dst, ir.BlockArgument) or dst.type.rank != 2:
        return None
    for copy in (into, out):
        if [ir.IntegerAttr(a).value for a in copy.attributes["shape"]] != whole:
            return None
        if any(constant_int(v) != 0 for v in list(copy.operands)[2:4]):
            return None
    return into, out


def _slab_columns(alloc: ir.Operation) -> int:
    """Columns of one swizzle panel, when the tile splits into at least three of them (else 0)."""
    if SWIZZLE_ATTR not in alloc.attributes:
        return 0
    type_ = alloc.results[0].type
    columns = ir.IntegerAttr(alloc.attributes[SWIZZLE_ATTR]).value // _element_bytes(type_.element_type)
    cols = type_.shape[1]
    return columns if cols % columns == 0 and cols // columns > SLAB_BUFFERS else 0


def _slab_bytes(alloc: ir.Operation, columns: int) -> int:
    type_ = alloc.results[0].type
    size = type_.shape[0] * columns * _element_bytes(type_.element_type)
    return -(-size // SWIZZLE_128_ALIGN) * SWIZZLE_128_ALIGN


def _split(alloc: ir.Operation, into: ir.Operation, out: ir.Operation, columns: int) -> None:
    type_ = alloc.results[0].type
    rows, cols = type_.shape
    name = lir.name_of(alloc)
    slabs = []
    for k in range(SLAB_BUFFERS):
        slab = tile.alloc_shared([rows, columns], type_.element_type, f"{name}_slab{k}", loc=alloc.location,
                                 ip=ir.InsertionPoint(alloc))
        slab.operation.attributes[SWIZZLE_ATTR] = alloc.attributes[SWIZZLE_ATTR]
        slabs.append(slab.operation.results[0])
    block = alloc.block
    b = Builder(ir.InsertionPoint(out), out.location, block, {})
    fragment, tensor = into.operands[0], out.operands[1]
    row, col = list(out.operands)[4:6]
    for j in range(cols // columns):
        slab = slabs[j % SLAB_BUFFERS]
        zero, first = b.index(0), b.index(j * columns)
        tile.copy(fragment, slab, [zero, first], [zero, zero], [rows, columns], loc=into.location, ip=b.ip)
        tile.copy(slab, tensor, [zero, zero], [row, b.add(col, first)], [rows, columns], loc=out.location, ip=b.ip)
    into.erase()
    out.erase()
