"""test-plan-barriers: report where partition-threads will put a gpu.barrier, and why.

Takes tile-level IR after lower-tile-ops (what partition-threads takes) and
leaves it unchanged. Each op that `analysis/barriers.py` plans a barrier
before gets one remark, `gpu.barrier before this op: it reads shared 'A_s'
that another thread wrote at line N` (or `writes ... read`), so lit tests pin
the plan with `--verify-diagnostics` and `expected-remark`; a hazard that
needs a barrier inside a loop or condition depending on the thread index is
the planner's located error.
"""

from __future__ import annotations

from tilemlir.analysis.barriers import plan_barriers
from tilemlir.diagnostics import reporting as diag
from tilemlir.ir_util import operation, walk_ops
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass


@register_pass("test-plan-barriers", "remark every op that partition-threads will put a gpu.barrier before, "
               "with the access pair that needs it (for lit tests)")
def run(module: ir.Operation, options) -> None:
    module = operation(module)
    with module.context, module.location:
        for kernel in [op for op in walk_ops(module) if op.name == "tile.kernel"]:
            for barrier in plan_barriers(kernel):
                diag.remark(barrier.op, barrier.describe())
