"""A `tile.stmatrix` copy (select-stmatrix) as the stmatrix instructions of its plan (partition-threads).

`store_by_stmatrix` replaces the copy of a fragment, now the thread's register array, into a shared tile with
the `analysis/stmatrix_stores.stmatrix_plan` instructions: instruction k is `tile.stmatrix` of the plan's
register pairs (each converted to the tile's element type), lane l of thread t's warp addressing row
`r(t) + offsets[k][0]`, column `c(t) + offsets[k][1]` of the tile, where (r(t), c(t)) is the element lane 0 of
the warp holds in register 2 ((l / 8) mod count), moved down l mod 8 rows: the layout's digits evaluated at the
warp's first thread and that register.
"""

from __future__ import annotations

import numpy as np

from tilemlir.analysis.layouts import TiledLayout
from tilemlir.analysis.stmatrix_stores import MATRIX, WARP, StmatrixPlan, stmatrix_plan
from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects import tensor_core_ops
from tilemlir.ir_util import constant_int
from tilemlir.mlir import ir
from tilemlir.rewriting.thread_builder import Builder


def store_by_stmatrix(b: Builder, copy: ir.Operation, registers: ir.Value, layout: TiledLayout,
                      tid: ir.Value) -> None:
    """The stmatrix instructions storing the copy's box of `registers` (of `layout`) into its tile, before the
    copy."""
    tile = copy.operands[1]
    offset = tuple(constant_int(v) for v in list(copy.operands)[2:4])
    plan = stmatrix_plan(layout, offset, tuple(tile.type.shape)) if None not in offset else None
    if plan is None:
        raise diag.error(copy, f"the fragment's layout ({layout.describe()}) is not one stmatrix stores at this "
                               "box (select-stmatrix marks only those)")
    row, col = _lane_address(b, layout, plan, tid)
    for pairs, (row_offset, col_offset) in zip(plan.registers, plan.offsets):
        tensor_core_ops.stmatrix(tile, registers, [b.add(row, row_offset), b.add(col, col_offset)], list(pairs),
                                 loc=copy.location, ip=b.ip)


def _lane_address(b: Builder, layout: TiledLayout, plan: StmatrixPlan, tid: ir.Value) -> tuple[ir.Value, ir.Value]:
    """The (row, column) lane tid mod 32 addresses for registers 0, 2, ... 2 count - 2 of the fragment (the
    plan's offsets count from there). Digits that are 0 at every warp's first thread (lane digits) or at every
    register a lane picks are left out."""
    register = b.mul(b.digit(tid, MATRIX, plan.count), 2)
    first_threads = np.arange(0, layout.threads, WARP)
    picked = 2 * np.arange(plan.count)
    terms: list[list] = [[], []]
    for digit in layout.digits:
        sources = first_threads if digit.is_thread else picked
        if not ((sources // (digit.thread or digit.reg)) % digit.size).any():
            continue
        if digit.is_thread:
            source = tid if digit.thread % WARP == 0 else b.mul(b.div(tid, WARP), WARP)
        else:
            source = register
        terms[digit.dim].append((digit.stride, b.digit(source, digit.thread or digit.reg, digit.size)))
    return b.add(b.linear(terms[0]), b.rem(tid, MATRIX)), b.linear(terms[1])
