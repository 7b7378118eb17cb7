"""`strip-tile-attributes`: every `tile.*` attribute removed (CPU backend).

Takes loop-level IR (what `lower-tile-to-loops` or `simulate-threads`
give), whose ops may still carry the frontend's and the passes' `tile.*`
attributes (argument facts, padding, simulation sites); gives the same IR
without them, so the conversion to LLVM sees only upstream attributes. Read
what you need of them (`tile.sim_sites`) before.
"""

from __future__ import annotations

from tilemlir.ir_util import walk_ops
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass


@register_pass("strip-tile-attributes", "remove every tile.* attribute before the conversion to LLVM (CPU backend)")
def run(module: ir.Operation, options) -> None:
    for op in [module, *walk_ops(module)]:
        for name in [name for name in op.attributes if name.startswith("tile.")]:
            del op.attributes[name]
