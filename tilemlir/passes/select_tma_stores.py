"""select-tma-stores: `tile.tma_store` on the copies of a whole shared tile into a tensor argument TMA can run.

Takes tile-level IR after select-shared-layouts (a staged epilogue's tile has its `tile.swizzle`, which
decides the boxes) and before lower-tile-ops, which keeps the marked copies whole as it does plan-pipeline's
`tile.tma` ring copies. Gives the same IR where each `tile.copy` from a two-dimensional shared tile into a
kernel tensor argument that `analysis/tma_boxes.tma_store_problem` accepts carries `tile.tma_store`
(docs/tensor_cores.md, "TMA stores"); the others get a remark saying why they stay thread copies. The
thread-level tma-stores pass lowers the marked copies to one thread's boxes; until then the copy's meaning
is unchanged (the tile level of the CPU backend runs it as any copy). Without `enable` (the compile option
`tma=True`) the pass does nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilemlir.analysis.tma_boxes import TMA_STORE_ATTR, tma_store_problem
from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects.tile import SHARED, memory_space
from tilemlir.ir_util import operation, ops_named
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass


@dataclass(frozen=True)
class SelectTmaStoresOptions:
    enable: bool = False  # the compile option tma=True


@register_pass("select-tma-stores", "tile.tma_store on shared -> tensor argument copies of a whole tile TMA can run",
               SelectTmaStoresOptions)
def run(module: ir.Operation, options: SelectTmaStoresOptions) -> None:
    if not options.enable:
        return
    module = operation(module)
    with module.context, module.location:
        for copy in ops_named(module, "tile.copy"):
            if memory_space(copy.operands[0].type) != SHARED or memory_space(copy.operands[1].type) is not None:
                continue
            problem = tma_store_problem(copy)
            if problem:
                diag.remark(copy, f"T.copy to global memory stays a thread copy, not a TMA store: {problem}")
            else:
                copy.attributes[TMA_STORE_ATTR] = ir.UnitAttr.get()
