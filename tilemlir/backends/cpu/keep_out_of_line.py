"""`keep-out-of-line`: every `llvm.func` marked `llvm.noinline` gets LLVM's `no_inline` (CPU backend).

Takes LLVM-dialect IR; gives the same IR with the marker (which the run-time
checks' recorder function carries, `backends/cpu/checks.py`) turned into
the attribute the translator writes as `noinline`, so llvmlite's O2 keeps
the recorder one out-of-line call instead of copying it into every check.
"""

from __future__ import annotations

from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass

MARKER = "llvm.noinline"


@register_pass("keep-out-of-line", "llvm.func marked llvm.noinline -> LLVM no_inline (CPU backend)")
def run(module: ir.Operation, options) -> None:
    for op in module.regions[0].blocks[0].operations:
        if op.name == "llvm.func" and MARKER in op.attributes:
            del op.attributes[MARKER]
            op.attributes["no_inline"] = ir.UnitAttr.get(op.context)
