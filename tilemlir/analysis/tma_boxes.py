"""Which global -> shared tile copies TMA can run, and the boxes it runs them as (docs/tensor_cores.md,
"TMA-fed pipelines").

A `tile.copy` from a global tensor argument into a whole two-dimensional shared tile of `rows x cols`
elements stored `tile.swizzle = W` is one TMA box per W-byte panel of the tile's rows: box
`[1, ..., 1, rows, W / element_bytes]` over the tensor's dims (outermost first), panel p's box at
column offset `p W / element_bytes` of the copy's origin, landing at logical column `p W /
element_bytes` of the tile, which is where the panel layout (`shared_layouts.physical_element`) puts
panel p: `p * rows * W` bytes on. The hardware swizzles each box by address bits as the layout does,
since the tile starts at an 8W-byte boundary (`shared_layouts.buffer_alignment`) and rows come in
groups of 8. An unswizzled tile (W = 0) is one box of the whole tile, its rows a multiple of 16 bytes.

TMA can run the copy when: the source is a tensor argument of the kernel function (what a tensor map
describes) of rank 2 to 5, every dim but the outermost static, so every byte stride is known and a
multiple of 16; the element types agree (TMA converts nothing); the copy's box covers the whole tile
at its origin and is 1 on the tensor's other dims; its out-of-bounds elements read as zero (the
`analysis.padding` value), which is TMA's fill; the box dims are at most 256; and a swizzled tile's
rows are a multiple of 8; the copy's start along the innermost dim is a provable multiple of 16 bytes. The
global base address's 16-byte alignment is checked at launch
(`runtime/tensor_map.py`).

The same boxes run a copy of a whole shared tile into a tensor argument (a TMA store, `tma_store_problem`),
on the same conditions but the fill: the box's elements outside the tensor are not written, as the copy
clips them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tilemlir.analysis.padding import padding_value
from tilemlir.dialects.bulk_copy import TMA_MAX_BOX, TMA_MAX_RANK
from tilemlir.dialects.tile import SHARED, SWIZZLE_ATTR, _element_bytes, memory_space
from tilemlir.ir_util import constant_int, defining_op, is_multiple_of, operation
from tilemlir.mlir import ir

TMA_ATTR = "tile.tma"  # on a ring copy TMA runs (plan-pipeline), lowered by tma-copies
TMA_STORE_ATTR = "tile.tma_store"  # on a shared -> global copy TMA runs (select-tma-stores), lowered by tma-stores
DISABLE_TMA_ATTR = "tile.disable_tma"  # T.copy(..., disable_tma=True): the copy stays a thread copy
STRIDE_BYTES = 16  # a tensor map's byte strides are multiples of this
UNSWIZZLED_TILE_BYTES = 128  # a box's shared destination is 128-byte aligned: an unswizzled slot's size is a multiple
ROW_GROUP = 8  # rows of a swizzle atom


@dataclass(frozen=True)
class TmaBoxes:
    """How TMA copies one tile: `panels` boxes of `box` (per tensor dim, outermost first), panel p at
    tile column `p * panel_columns`, swizzled `swizzle` bytes."""

    box: tuple[int, ...]
    swizzle: int
    panels: int
    panel_columns: int
    element_bytes: int

    @property
    def box_bytes(self) -> int:
        return math.prod(self.box) * self.element_bytes

    @property
    def tile_bytes(self) -> int:
        return self.panels * self.box_bytes


def tile_boxes(tile: ir.MemRefType, tensor_rank: int, swizzle: int) -> TmaBoxes:
    """The boxes of a copy of a whole `rows x cols` tile (`tile`'s last two dims) from a tensor of
    `tensor_rank` dims into a buffer swizzled `swizzle` bytes."""
    rows, cols = tile.shape[-2:]
    element = _element_bytes(tile.element_type)
    panel_columns = swizzle // element if swizzle else cols
    return TmaBoxes((1,) * (tensor_rank - 2) + (rows, panel_columns), swizzle, cols // panel_columns,
                    panel_columns, element)


def buffer_swizzle(buffer: ir.Value) -> int:
    owner = defining_op(buffer)
    if owner is None or SWIZZLE_ATTR not in owner.attributes:
        return 0
    return ir.IntegerAttr(owner.attributes[SWIZZLE_ATTR]).value


def tma_problem(copy: ir.Operation) -> str | None:
    """Why TMA cannot run `copy` (a `tile.copy` into a shared tile), or None when it can."""
    copy = operation(copy)
    src, dst = copy.operands[0], copy.operands[1]
    if DISABLE_TMA_ATTR in copy.attributes:
        return "it says disable_tma=True"
    if memory_space(dst.type) != SHARED or dst.type.rank != 2:
        return "its destination is not a two-dimensional shared tile"
    offsets = list(copy.operands)[2:]
    problem = _tensor_problem(src, "source") or _conversion_problem(src.type, dst.type) or _transfer_problem(
        copy, src.type, dst.type, offsets[:src.type.rank], offsets[src.type.rank:])
    if problem:
        return problem
    pad = padding_value(copy)
    if pad != 0:
        return f"its out-of-bounds elements read as {pad} (TMA fills zeros)"
    return _layout_problem(dst.type, buffer_swizzle(dst))


def tma_store_problem(copy: ir.Operation) -> str | None:
    """Why a TMA store cannot run `copy` (a `tile.copy` of a shared tile into a tensor argument), or None.
    TMA drops the box's elements outside the tensor, as the copy's clipping does; the tensor must be one the
    kernel otherwise only stores disjoint shared tiles into (`_other_uses_problem`)."""
    copy = operation(copy)
    src, dst = copy.operands[0], copy.operands[1]
    if DISABLE_TMA_ATTR in copy.attributes:
        return "it says disable_tma=True"
    if memory_space(src.type) != SHARED or src.type.rank != 2:
        return "its source is not a two-dimensional shared tile"
    offsets = list(copy.operands)[2:]
    problem = _tensor_problem(dst, "destination") or _conversion_problem(src.type, dst.type) or _transfer_problem(
        copy, dst.type, src.type, offsets[src.type.rank:], offsets[:src.type.rank])
    if problem:
        return problem
    return _other_uses_problem(copy) or _layout_problem(src.type, buffer_swizzle(src))


def _other_uses_problem(copy: ir.Operation) -> str | None:
    """The store completes asynchronously, after the kernel's other accesses and in no order with other stores:
    the tensor's only other uses must be copies out of shared tiles in the same block at the same rows whose
    columns provably miss this box (one base plus distinct constants a box apart: an epilogue's slabs)."""
    dst = copy.operands[1]
    copies = [operation(use.owner) for use in dst.uses]
    if any(op.name != "tile.copy" or op.operands[1] != dst or memory_space(op.operands[0].type) != SHARED
           or op.block != copy.block for op in copies):
        return "the kernel accesses its destination tensor elsewhere too (a TMA store completes asynchronously)"
    boxes = [_columns(op) for op in copies]
    if len({(rows, base) for rows, base, _, _ in boxes}) != 1:
        return "other copies into its tensor may overlap it (TMA stores complete in no order)"
    spans = sorted((start, start + width) for _, _, start, width in boxes)
    if any(end > start for (_, end), (start, _) in zip(spans, spans[1:])):
        return "other copies into its tensor may overlap it (TMA stores complete in no order)"
    return None


def _columns(copy: ir.Operation) -> tuple:
    """(the row operands, the column's non-constant base, its constant part, the box's width) of a copy into a
    tensor: `base + c` or `c`."""
    rank = copy.operands[0].type.rank
    coords = list(copy.operands)[2 + rank:]
    width = ir.IntegerAttr(copy.attributes["shape"][len(copy.attributes["shape"]) - 1]).value
    column = coords[-1]
    known = constant_int(column)
    if known is not None:
        return tuple(coords[:-1]), None, known, width
    owner = defining_op(column)
    if owner is not None and owner.name == "arith.addi":
        for base, step in (owner.operands, reversed(list(owner.operands))):
            if constant_int(step) is not None:
                return tuple(coords[:-1]), base, constant_int(step), width
    return tuple(coords[:-1]), column, 0, width


def _tensor_problem(tensor: ir.Value, role: str) -> str | None:
    if not isinstance(tensor, ir.BlockArgument) or operation(tensor.owner.owner).name != "func.func" \
            or memory_space(tensor.type) is not None:
        return f"its {role} is not a tensor argument of the kernel (a tensor map describes one)"
    return None


def _conversion_problem(src: ir.MemRefType, dst: ir.MemRefType) -> str | None:
    if src.element_type != dst.element_type:
        return f"it converts {src.element_type} to {dst.element_type} (TMA copies bytes)"
    return None


def _transfer_problem(copy: ir.Operation, tensor: ir.MemRefType, tile: ir.MemRefType, tensor_offsets: list,
                      tile_offsets: list) -> str | None:
    """What keeps a box copy between `tensor` (at `tensor_offsets`) and the whole `tile` from being TMA's."""
    if not 2 <= tensor.rank <= TMA_MAX_RANK:
        return f"its tensor has {tensor.rank} dims (TMA takes 2 to {TMA_MAX_RANK} here)"
    inner = list(tensor.shape)[1:]
    if any(ir.ShapedType.is_dynamic_size(d) for d in inner):
        return ("a dim of its tensor other than the outermost has a run-time size (a tensor map's byte strides "
                "must be known multiples of 16)")
    element = _element_bytes(tensor.element_type)
    for d in range(len(inner)):
        if math.prod(inner[d:]) * element % STRIDE_BYTES:
            return f"a byte stride of its tensor, {math.prod(inner[d:]) * element}, is not a multiple of {STRIDE_BYTES}"
    return _box_problem(copy, tile, tile_offsets) or _start_problem(tensor_offsets[-1], element)


def _box_problem(copy: ir.Operation, tile: ir.MemRefType, tile_offsets: list) -> str | None:
    box = [ir.IntegerAttr(a).value for a in copy.attributes["shape"]]
    if box[-2:] != list(tile.shape) or any(extent != 1 for extent in box[:-2]):
        return f"its box {box} is not the whole {list(tile.shape)} tile"
    if any(constant_int(v) != 0 for v in tile_offsets):
        return "it accesses the tile at an offset"
    return None


def _start_problem(inner_start: ir.Value, element: int) -> str | None:
    """A box whose inner start is off the 16-byte grain and hangs over the tensor's inner end faults on the
    H200 (illegal instruction; benchmarks/RESULTS.md, session 11): the start must be a provable multiple."""
    if not is_multiple_of(inner_start, STRIDE_BYTES // element):
        return (f"its start along the tensor's innermost dim is not provably a multiple of {STRIDE_BYTES} bytes "
                f"({STRIDE_BYTES // element} elements; a box off that grain faults at the tensor's edge)")
    return None


def _layout_problem(tile: ir.MemRefType, swizzle: int) -> str | None:
    rows, cols = tile.shape
    element = _element_bytes(tile.element_type)
    if rows > TMA_MAX_BOX:
        return f"its tile has {rows} rows (a box dim is at most {TMA_MAX_BOX})"
    if swizzle:
        if rows % ROW_GROUP:
            return f"its swizzled tile's rows, {rows}, are not a multiple of {ROW_GROUP}"
        return None
    if cols * element % STRIDE_BYTES or cols > TMA_MAX_BOX:
        return (f"its unswizzled tile's rows are {cols * element} bytes (a box row is a multiple of {STRIDE_BYTES} "
                f"bytes and at most {TMA_MAX_BOX} elements)")
    if rows * cols * element % UNSWIZZLED_TILE_BYTES:
        return f"its unswizzled tile is {rows * cols * element} bytes, not a multiple of {UNSWIZZLED_TILE_BYTES}"
    return None
