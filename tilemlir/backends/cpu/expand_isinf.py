"""`expand-isinf`: every `math.isinf x` as `|x| == inf` (CPU backend).

Takes loop-level IR; gives the same IR without `math.isinf`, which upstream
has no LLVM lowering for.
"""

from __future__ import annotations

import math

from tilemlir.backends.cpu.ir_builders import CMPF, constant
from tilemlir.ir_util import ops_named
from tilemlir.mlir import arith, ir
from tilemlir.mlir import math as math_dialect
from tilemlir.pass_infra.registry import register_pass


@register_pass("expand-isinf", "math.isinf x -> |x| == inf, which upstream can lower to LLVM (CPU backend)")
def run(module: ir.Operation, options) -> None:
    for op in ops_named(module, "math.isinf"):
        value = op.operands[0]
        with op.location, ir.InsertionPoint(op):
            inf = constant(value.type, math.inf)
            result = arith.cmpf(CMPF.OEQ, math_dialect.absf(value), inf)
        op.results[0].replace_all_uses_with(result)
        op.erase()
