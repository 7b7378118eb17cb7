"""select-stmatrix: `tile.stmatrix` on the copies of a whole fragment into a shared tile stmatrix can run.

Takes tile-level IR after infer-layouts (every fragment has its layout) and before lower-tile-ops, which
keeps the marked copies whole. Gives the same IR where each `tile.copy` of a fragment (f32, or the tile's own
type), whole or a box at constant offsets, onto a whole two-dimensional shared tile of f16 or bf16, whose layout
`analysis/stmatrix_stores.stmatrix_plan` accepts at that box (the mma.sync and wgmma accumulators: an epilogue staged
through shared memory, `T.copy(C_f, C_s)`), carries `tile.stmatrix`: partition-threads makes it the plan's
stmatrix instructions on the thread's registers (`rewriting/stmatrix_stores.py`), 8 elements a lane each
(four pairs) where the thread copy stores one pair. The copy's meaning is unchanged until then. Without
`enable` (sm_90a, where the tensor cores are wgmma's) the pass does nothing: stmatrix needs sm_90.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilemlir.analysis import layout_ir as lir
from tilemlir.analysis.stmatrix_stores import STMATRIX_ATTR, stmatrix_plan
from tilemlir.dialects.tensor_core_ops import stmatrix_converts
from tilemlir.dialects.tile import SHARED, memory_space
from tilemlir.ir_util import constant_int, defining_op, operation, ops_named
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass

@dataclass(frozen=True)
class SelectStmatrixOptions:
    enable: bool = False  # sm_90a (the tensor_cores="wgmma" lowering)


@register_pass("select-stmatrix", "tile.stmatrix on whole fragment -> 16-bit shared tile copies whose layout "
                                  "stmatrix stores (the tensor-core accumulators)", SelectStmatrixOptions)
def run(module: ir.Operation, options: SelectStmatrixOptions) -> None:
    if not options.enable:
        return
    module = operation(module)
    with module.context, module.location:
        for copy in ops_named(module, "tile.copy"):
            if _fits(copy):
                copy.attributes[STMATRIX_ATTR] = ir.UnitAttr.get()


def _fits(copy: ir.Operation) -> bool:
    src, dst = copy.operands[0], copy.operands[1]
    alloc = lir.fragment_alloc(src)
    if alloc is None or memory_space(dst.type) != SHARED or dst.type.rank != 2 or src.type.rank != 2:
        return False
    owner = defining_op(dst)
    if owner is None or owner.name != "tile.alloc_shared":
        return False
    if not stmatrix_converts(str(src.type.element_type), str(dst.type.element_type)):
        return False
    box = [ir.IntegerAttr(a).value for a in copy.attributes["shape"]]
    offsets = [constant_int(v) for v in list(copy.operands)[2:]]
    if box != list(dst.type.shape) or None in offsets or any(offsets[2:]):
        return False
    layout = lir.get_layout(alloc)
    return layout is not None and stmatrix_plan(layout, tuple(offsets[:2]), tuple(box)) is not None
