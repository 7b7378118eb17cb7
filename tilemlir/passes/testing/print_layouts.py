"""test-print-layouts: report every fragment's layout, and how its copies and reductions will move data.

Takes tile-level IR after infer-layouts and leaves it unchanged. Each
`tile.alloc_fragment` gets one remark, `fragment 'x' 4x4096 over 128
threads, 128 registers per thread, replicate 1: #tile.layout<...>` (or
`fragment 'x' has no layout`), so lit tests pin inference results with
`--verify-diagnostics` and `expected-remark`. Each fragment-to-fragment
`tile.copy` gets `copy 'S' -> 'P': register-local` (or `through shared
memory`), and each `tile.reduce` of a fragment `reduce max 'S' dim 1:
16 registers a thread, 2 warp shuffles (xor 2, 1), no shared memory` (or
`a shared exchange over N warps`): lower-tile-ops' decisions, from the
same functions (`analysis/fragment_moves.py`).
"""

from __future__ import annotations

from tilemlir.analysis import layout_ir as lir
from tilemlir.analysis.fragment_moves import copy_is_register_local, describe_reduction
from tilemlir.analysis.layouts import LayoutError
from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects.tile import FRAGMENT, memory_space
from tilemlir.ir_util import constant_int, defining_op, operation, walk_ops
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


def _fragment_layout(value: ir.Value):
    """The layout of the fragment allocation `value`, or None (not a fragment, no valid layout)."""
    alloc = defining_op(value)
    if memory_space(value.type) != FRAGMENT or alloc is None or lir.LAYOUT_ATTR not in alloc.attributes:
        return None
    try:
        return lir.get_layout(alloc)
    except LayoutError:
        return None


def describe_copy(op: ir.Operation) -> str | None:
    src, dst = op.operands[0], op.operands[1]
    src_layout, dst_layout = _fragment_layout(src), _fragment_layout(dst)
    if src_layout is None or dst_layout is None:
        return None
    box = tuple(attr.value for attr in op.attributes["shape"])
    whole = box[-src.type.rank:] == tuple(src.type.shape) and all(constant_int(v) == 0 for v in op.operands[2:])
    how = "register-local" if copy_is_register_local(src_layout, dst_layout, whole) else "through shared memory"
    return f"copy '{lir.name_of(defining_op(src))}' -> '{lir.name_of(defining_op(dst))}': {how}"


def describe_reduce(op: ir.Operation) -> str | None:
    src = op.operands[0]
    layout = _fragment_layout(src)
    if layout is None:
        return None
    dim = ir.IntegerAttr(op.attributes["dim"]).value
    kind = ir.StringAttr(op.attributes["kind"]).value
    how = describe_reduction(layout, dim, tuple(op.operands[1].type.shape))
    return f"reduce {kind} '{lir.name_of(defining_op(src))}' dim {dim}: {how}"


@register_pass("test-print-layouts", "remark every fragment's layout at its allocation, and how its copies and "
               "reductions move data (for lit tests)")
def run(module: ir.Operation, options) -> None:
    module = operation(module)
    with module.context, module.location:
        for op in walk_ops(module):
            if op.name == "tile.alloc_fragment":
                diag.remark(op, describe(op))
            elif op.name in ("tile.copy", "tile.reduce"):
                text = (describe_copy if op.name == "tile.copy" else describe_reduce)(op)
                if text:
                    diag.remark(op, text)
