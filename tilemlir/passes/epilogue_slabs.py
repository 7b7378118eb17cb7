"""epilogue-slabs: a tensor-core accumulator leaves the block through shared memory in column slabs, where the
block can afford it and TMA can store them.

Takes tile-level IR after plan-pipeline (its rings have their `num_stages`-deep shapes) and select-shared-layouts,
before select-tma-stores and select-stmatrix, which then mark the slabs' copies (stmatrix in, TMA store out).
Two epilogues are rewritten, with one result (docs/tensor_cores.md, "Epilogue slabs"):

- staged: a two-dimensional `tile.alloc_shared` T whose only uses are, in one block and in this order,
  `tile.copy(F, T)` of a whole fragment F and `tile.copy(T, X)` of all of T into a kernel tensor argument X
  (TileLang's `T.copy(C_f, C_s); T.copy(C_s, C[...])`), when the kernel's shared buffers (every
  `tile.alloc_shared`, each rounded up to 1024 bytes) need more than `limit` bytes;
- direct (with `direct`, sm_90a's wgmma lowering): `tile.copy(F, X)` of a whole fragment F into a 16-bit kernel
  tensor argument X whose slabs stmatrix can store (`analysis/stmatrix_stores.stmatrix_plan` at each slab: the
  tensor-core accumulators), when the slab buffers fit in `limit` and TMA can store every slab
  (`tma_boxes.tma_store_problem`, else a remark says why and the copy stays).

Either becomes two slab buffers `<T>_slab0`, `<T>_slab1` (`<F>_slab0`... for a direct copy) of `rows x c`
elements, c the columns of one 128-byte swizzle panel (64 bf16), swizzled 128, and one pair of copies per slab
j: columns [j c, (j + 1) c) of F into slab j mod 2, then the slab into X at the copy's column plus j c. The
barrier planner orders each slab buffer's reuse after the copy out of it before (tma-stores waits for a TMA
store's reads before that barrier), so the copy of slab j out overlaps the writes of slab j + 1. A copy that
says `disable_tma=True` is left alone. Without `enable` (tma=True) the pass does nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tilemlir.analysis import layout_ir as lir
from tilemlir.analysis.shared_layouts import SWIZZLE_128_ALIGN, SWIZZLE_ATTR
from tilemlir.analysis.stmatrix_stores import stmatrix_plan
from tilemlir.analysis.tma_boxes import DISABLE_TMA_ATTR, tma_store_problem
from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects import tile
from tilemlir.dialects.tensor_core_ops import stmatrix_converts
from tilemlir.dialects.tile import SHARED, _element_bytes, memory_space
from tilemlir.ir_util import constant_int, defining_op, next_op, operation, ops_named, walk_ops
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass
from tilemlir.rewriting.thread_builder import Builder

SLAB_BUFFERS = 2
PANEL_BYTES = 128  # a slab's row: one 128-byte swizzle panel, one TMA box wide


@dataclass(frozen=True)
class EpilogueSlabsOptions:
    enable: bool = False  # the compile option tma=True
    direct: bool = False  # direct accumulator -> tensor copies too (tensor_cores="wgmma": stmatrix)
    limit: int = 0  # shared bytes one block may use (sm_90a's)


@register_pass("epilogue-slabs", "a tensor-core accumulator leaves the block through two slab buffers in column "
                                 "slabs (stmatrix in, TMA out) where the block can afford it", EpilogueSlabsOptions)
def run(module: ir.Operation, options: EpilogueSlabsOptions) -> None:
    if not options.enable:
        return
    module = operation(module)
    with module.context, module.location:
        for kernel in ops_named(module, "tile.kernel"):
            _Kernel(kernel, options).rewrite()


class _Kernel:
    def __init__(self, kernel: ir.Operation, options: EpilogueSlabsOptions):
        self.kernel, self.options = kernel, options
        self.need = sum(_reserved(op.results[0].type) for op in walk_ops(kernel) if op.name == "tile.alloc_shared")

    def rewrite(self) -> None:
        for alloc in [op for op in walk_ops(self.kernel) if op.name == "tile.alloc_shared"]:
            staged = _staged(alloc)
            if staged is not None and self.need > self.options.limit:
                self._staged(alloc, *staged)
        if self.options.direct:
            for copy in [op for op in walk_ops(self.kernel) if _direct(op)]:
                self._direct(copy)

    def _staged(self, alloc: ir.Operation, into: ir.Operation, out: ir.Operation) -> None:
        type_ = alloc.results[0].type
        columns = _slab_columns(type_)
        if not columns:
            return
        slabs = _slab_bytes(type_, columns)
        if self.need - _reserved(type_) + slabs > self.options.limit:
            return
        _in_slabs(into, out.operands[1], list(out.operands)[4:6], columns, lir.name_of(alloc),
                  ir.InsertionPoint(alloc), ir.InsertionPoint(out), alloc.location)
        self.need += slabs - _reserved(type_)
        into.erase()
        out.erase()
        alloc.erase()

    def _direct(self, copy: ir.Operation) -> None:
        fragment, tensor = copy.operands[0], copy.operands[1]
        tile_type = ir.MemRefType.get(list(fragment.type.shape), tensor.type.element_type,
                                      memory_space=ir.StringAttr.get(SHARED))
        columns = _slab_columns(tile_type)
        layout = lir.get_layout(lir.fragment_alloc(fragment))
        rows = tile_type.shape[0]
        if not columns or layout is None or any(
                stmatrix_plan(layout, (0, j), (rows, columns)) is None for j in range(0, tile_type.shape[1], columns)):
            return
        slabs = _slab_bytes(tile_type, columns)
        if self.need + slabs > self.options.limit:
            diag.remark(copy, f"the accumulator's copy out stays direct: its slab buffers ({slabs} bytes) do not fit "
                              f"beside the block's {self.need} bytes of shared memory")
            return
        first = lir.fragment_alloc(fragment)
        made = _in_slabs(copy, tensor, list(copy.operands)[4:6], columns, lir.name_of(first),
                         ir.InsertionPoint(first), ir.InsertionPoint(copy), copy.location)
        following, operands, location = next_op(copy), list(copy.operands), copy.location
        attributes = {name: copy.attributes[name] for name in copy.attributes}
        copy.erase()  # the tensor's other uses decide whether TMA may store the slabs
        problems = [tma_store_problem(op) for op in made if op.name == "tile.copy"
                    and memory_space(op.operands[0].type) == SHARED]
        problem = next((p for p in problems if p), None)
        if problem is None:
            self.need += slabs
            return
        for op in reversed(made):
            op.erase()
        kept = ir.Operation.create("tile.copy", operands=operands, attributes=attributes, loc=location,
                                   ip=ir.InsertionPoint(following))
        diag.remark(kept, f"the accumulator's copy out stays direct: TMA cannot store its slabs: {problem}")


def _direct(op: ir.Operation) -> bool:
    """A copy of a whole two-dimensional fragment into a 16-bit tensor argument, at the tensor's coordinates."""
    if op.name != "tile.copy" or DISABLE_TMA_ATTR in op.attributes:
        return False
    src, dst = op.operands[0], op.operands[1]
    if lir.fragment_alloc(src) is None or src.type.rank != 2 or not isinstance(dst, ir.BlockArgument) \
            or dst.type.rank != 2:
        return False
    if not stmatrix_converts(str(src.type.element_type), str(dst.type.element_type)):
        return False
    return _whole(op, list(src.type.shape), list(op.operands)[2:4])


def _whole(copy: ir.Operation, shape: list[int], offsets: list[ir.Value]) -> bool:
    return [ir.IntegerAttr(a).value for a in copy.attributes["shape"]] == shape and \
        all(constant_int(v) == 0 for v in offsets)


def _staged(alloc: ir.Operation) -> tuple[ir.Operation, ir.Operation] | None:
    """(the copy in from a whole fragment, the copy out into a tensor argument) when they are the tile's only
    uses, in one block, in that order."""
    value = alloc.results[0]
    if value.type.rank != 2:
        return None
    uses = [operation(use.owner) for use in value.uses]
    if len(uses) != 2 or any(op.name != "tile.copy" or DISABLE_TMA_ATTR in op.attributes for op in uses) \
            or uses[0].block != uses[1].block:
        return None
    ops = [operation(op) for op in uses[0].block.operations]
    into, out = sorted(uses, key=ops.index)
    whole = list(value.type.shape)
    src, dst = into.operands[0], out.operands[1]
    if into.operands[1] != value or lir.fragment_alloc(src) is None or list(src.type.shape) != whole:
        return None
    if out.operands[0] != value or not isinstance(dst, ir.BlockArgument) or dst.type.rank != 2:
        return None
    if not _whole(into, whole, list(into.operands)[2:6]) or not _whole(out, whole, list(out.operands)[2:4]):
        return None
    return into, out


def _reserved(type_: ir.MemRefType) -> int:
    size = math.prod(type_.shape) * _element_bytes(type_.element_type)
    return -(-size // SWIZZLE_128_ALIGN) * SWIZZLE_128_ALIGN


def _slab_columns(type_: ir.MemRefType) -> int:
    """Columns of one 128-byte panel, when the tile splits into at least two of them (else 0)."""
    columns = PANEL_BYTES // _element_bytes(type_.element_type)
    cols = type_.shape[1]
    return columns if cols % columns == 0 and cols // columns >= SLAB_BUFFERS else 0


def _slab_bytes(type_: ir.MemRefType, columns: int) -> int:
    return SLAB_BUFFERS * _reserved(ir.MemRefType.get([type_.shape[0], columns], type_.element_type))


def _in_slabs(into: ir.Operation, tensor: ir.Value, coords: list[ir.Value], columns: int, name: str,
              buffers_at: ir.InsertionPoint, copies_at: ir.InsertionPoint, loc: ir.Location) -> list[ir.Operation]:
    """The slab buffers (at `buffers_at`) and the pairs of copies (at `copies_at`) that move the fragment `into`
    copies from, slab by slab, into `tensor` at `coords`; returns every op made."""
    fragment = into.operands[0]
    rows, cols = fragment.type.shape
    element = tensor.type.element_type
    made, slabs = [], []
    for k in range(SLAB_BUFFERS):
        slab = tile.alloc_shared([rows, columns], element, f"{name}_slab{k}", loc=loc, ip=buffers_at).operation
        slab.attributes[SWIZZLE_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), PANEL_BYTES)
        made.append(slab)
        slabs.append(slab.results[0])
    b = Builder(copies_at, loc, into.block, {})
    row, col = coords
    for j in range(cols // columns):
        slab = slabs[j % SLAB_BUFFERS]
        zero, first = b.index(0), b.index(j * columns)
        made.append(tile.copy(fragment, slab, [zero, first], [zero, zero], [rows, columns], loc=into.location,
                              ip=b.ip).operation)
        column = b.add(col, first)
        added = defining_op(column)
        if added is not None and added.name == "arith.addi" and column != col:  # not a folded, shared constant
            made.append(added)
        made.append(tile.copy(slab, tensor, [zero, zero], [row, column], [rows, columns], loc=loc, ip=b.ip).operation)
    return made
