"""Float values to and from C `float`: the one way every float kind is widened and rounded.

`to_float` reads an f16, bf16 or fp8 value as a float (exact); `from_float`
rounds a float (or a double) to nearest even into any float kind, through
the CUDA `_rn` intrinsics, and for fp8 through the prelude's non-saturating
`tl_to_e4m3` / `tl_to_e5m2`, which it asks the prelude for.
"""

from __future__ import annotations

from tilemlir.emit_cuda import cexpr as C
from tilemlir.emit_cuda.cexpr import CExpr
from tilemlir.emit_cuda.ctype import FP8
from tilemlir.emit_cuda.prelude import Prelude


class FloatRounding:
    def __init__(self, prelude: Prelude):
        self._prelude = prelude

    def to_float(self, e: CExpr, kind: str) -> CExpr:
        """A narrow float as float (exact)."""
        if kind == "f16":
            return C.call("__half2float", e)
        if kind == "bf16":
            return C.call("__bfloat162float", e)
        if kind in FP8:
            return C.call("float", e)
        return e

    def from_float(self, e: CExpr, kind: str, source: str = "f32") -> CExpr:
        """A float (or, with source "f64", a double) rounded to nearest even into `kind`."""
        if kind == "f16":
            return C.call("__float2half_rn", e)
        if kind == "bf16":
            return C.call("__float2bfloat16_rn", e)
        if kind in FP8:
            short = "e4m3" if kind == "f8E4M3FN" else "e5m2"
            self._prelude.helper(short if source == "f32" else f"{short}_f64")
            return C.call(f"tl_to_{short}", e)
        if kind == "f64":
            return C.cast("double", e)
        return e
