"""test-print-layouts: report every fragment's layout as a remark at its allocation.

Takes tile-level IR after infer-layouts and leaves it unchanged. Each
`tile.alloc_fragment` gets one remark, `fragment 'x' 4x4096 over 128
threads, 128 registers per thread, replicate 1: #tile.layout<...>` (or
`fragment 'x' has no layout`), so lit tests pin inference results with
`--verify-diagnostics` and `expected-remark`.
"""

from __future__ import annotations

from tilemlir.analysis import layout_ir as lir
from tilemlir.analysis.layouts import LayoutError
from tilemlir.diagnostics import reporting as diag
from tilemlir.ir_util import operation, walk_ops
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass


def describe(alloc: ir.Operation) -> str:
    label = f"fragment '{lir.name_of(alloc)}'"
    if lir.LAYOUT_ATTR not in alloc.attributes:
        return f"{label} has no layout"
    try:
        layout = lir.get_layout(alloc)
    except LayoutError as err:
        return f"{label} has an invalid layout: {err}"
    return f"{label} {layout.describe()}: {alloc.attributes[lir.LAYOUT_ATTR]}"


@register_pass("test-print-layouts", "remark every fragment's layout at its allocation (for lit tests)")
def run(module: ir.Operation, options) -> None:
    module = operation(module)
    with module.context, module.location:
        for op in walk_ops(module):
            if op.name == "tile.alloc_fragment":
                diag.remark(op, describe(op))
