"""Conversion ops (`extf`, `truncf`, `sitofp`, `fptosi`, `extsi`, `index_cast`, `bitcast`, ...) -> C++.

Each rounds exactly as the IR says: narrow floats through the CUDA
round-to-nearest-even intrinsics (integers straight to bf16/f16 with
`__int2bfloat16_rn` and friends, never through float, which would round
twice), fp8 through the `tl_to_e4m3` / `tl_to_e5m2` helpers; widening of an
integer the IR reads as unsigned, and `uitofp`, go through the unsigned C
type of the source's own width (`(float)(unsigned char)x`), since every
integer value is held in a signed C type.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilemlir.diagnostics.reporting import error
from tilemlir.emit_cuda import cexpr as C
from tilemlir.emit_cuda.cexpr import CExpr
from tilemlir.emit_cuda.ctype import CTypes, float_kind, int_width, is_bool, wrap_int
from tilemlir.emit_cuda.float_rounding import FloatRounding
from tilemlir.emit_cuda.signs import Signs
from tilemlir.mlir import ir

_TO_HALF = {32: "__int2half_rn", 64: "__ll2half_rn"}
_TO_BF16 = {32: "__int2bfloat16_rn", 64: "__ll2bfloat16_rn"}
_UTO_HALF = {32: "__uint2half_rn", 64: "__ull2half_rn"}
_UTO_BF16 = {32: "__uint2bfloat16_rn", 64: "__ull2bfloat16_rn"}


@dataclass(frozen=True)
class ConversionContext:
    """What a conversion reads of the kernel: its C types, its values' signs and the float roundings."""

    types: CTypes
    signs: Signs
    floats: FloatRounding


def _extf(cx: ConversionContext, op, e: CExpr, src: ir.Type, dst: ir.Type) -> CExpr:
    s, d = float_kind(src), float_kind(dst)
    as_float = cx.floats.to_float(e, s)
    if d == "f64":
        return C.cast("double", as_float)
    return cx.floats.from_float(as_float, d)  # f32, or fp8 -> f16/bf16 (exact through float)


def _truncf(cx: ConversionContext, op, e: CExpr, src: ir.Type, dst: ir.Type) -> CExpr:
    mode = op.attributes["roundingmode"] if "roundingmode" in op.attributes else None
    if mode is not None and "to_nearest_even" not in str(mode):
        raise error(op, f"arith.truncf with rounding mode {mode} is not supported by the CUDA emitter")
    s, d = float_kind(src), float_kind(dst)
    if s == "f64":
        direct = {"f32": "float", "f16": "__double2half", "bf16": "__double2bfloat16"}
        if d in direct:
            return C.cast("float", e) if d == "f32" else C.call(direct[d], e)
        return cx.floats.from_float(e, d, source="f64")  # fp8: the double overload of the helper
    return cx.floats.from_float(cx.floats.to_float(e, s), d)


def _sitofp(cx: ConversionContext, op, e: CExpr, src: ir.Type, dst: ir.Type) -> CExpr:
    return _int_to_float(cx, e, src, dst, unsigned=False)


def _uitofp(cx: ConversionContext, op, e: CExpr, src: ir.Type, dst: ir.Type) -> CExpr:
    return _int_to_float(cx, e, src, dst, unsigned=not cx.signs.nonneg(op.operands[0]))


def _int_to_float(cx: ConversionContext, e: CExpr, src: ir.Type, dst: ir.Type, unsigned: bool) -> CExpr:
    width = cx.types.index_bits if isinstance(src, ir.IndexType) else int_width(src)
    if width == 1:
        e = C.cast("int", e) if unsigned else C.unary("-", C.cast("int", e))
        width, unsigned = 32, False
    wide = 64 if width > 32 else 32
    if unsigned:  # the bits at their own width: (unsigned int) of a signed char would sign-extend first
        e = C.cast(cx.types.unsigned(src), e)
    d = float_kind(dst)
    if d in ("f16", "bf16"):
        table = {"f16": _UTO_HALF if unsigned else _TO_HALF, "bf16": _UTO_BF16 if unsigned else _TO_BF16}[d]
        return C.call(table[wide], e)
    if d in ("f32", "f64"):
        return C.cast("float" if d == "f32" else "double", e)
    return cx.floats.from_float(C.cast("double", e), d, source="f64")  # fp8: exact through double for 32-bit ints


def _fptoint(cx: ConversionContext, op, e: CExpr, src: ir.Type, dst: ir.Type) -> CExpr:
    ctype = cx.types.unsigned(dst) if op.name == "arith.fptoui" else cx.types.scalar(dst)
    as_float = cx.floats.to_float(e, float_kind(src))
    return C.cast(ctype, as_float) if op.name == "arith.fptosi" else C.cast(cx.types.scalar(dst), C.cast(ctype, as_float))


def _int_cast(cx: ConversionContext, op, e: CExpr, src: ir.Type, dst: ir.Type) -> CExpr:
    """extsi / extui / trunci / index_cast / index_castui."""
    target = cx.types.scalar(dst)
    if is_bool(dst):
        return C.binary("!=", C.binary("&", e, C.int_lit(1)), C.int_lit(0))
    if is_bool(src):
        return C.unary("-", C.cast(target, e)) if op.name == "arith.extsi" else C.cast(target, e)
    zero_extend = op.name in ("arith.extui", "arith.index_castui") and not cx.signs.nonneg(op.operands[0])
    widening = (cx.types.index_bits if isinstance(dst, ir.IndexType) else int_width(dst)) > (
        cx.types.index_bits if isinstance(src, ir.IndexType) else int_width(src))
    if zero_extend and widening:
        e = C.cast(cx.types.unsigned(src), e)
    if e.value is not None:
        return C.int_lit(wrap_int(e.value, dst, cx.types.index_bits))
    if cx.types.scalar(src) == target and not zero_extend:
        return e
    return C.cast(target, e)


_BITCASTS = {
    ("float", "int"): "__float_as_int", ("int", "float"): "__int_as_float",
    ("float", "unsigned int"): "__float_as_uint", ("unsigned int", "float"): "__uint_as_float",
    ("double", "long long"): "__double_as_longlong", ("long long", "double"): "__longlong_as_double",
    ("half", "short"): "__half_as_short", ("short", "half"): "__short_as_half",
    ("half", "unsigned short"): "__half_as_ushort", ("unsigned short", "half"): "__ushort_as_half",
    ("__nv_bfloat16", "short"): "__bfloat16_as_short", ("short", "__nv_bfloat16"): "__short_as_bfloat16",
    ("__nv_bfloat16", "unsigned short"): "__bfloat16_as_ushort",
    ("unsigned short", "__nv_bfloat16"): "__ushort_as_bfloat16",
}


def _bitcast(cx: ConversionContext, op, e: CExpr, src: ir.Type, dst: ir.Type) -> CExpr:
    pair = (cx.types.scalar(src), cx.types.scalar(dst))
    if pair[0] == pair[1]:
        return e
    if pair in _BITCASTS:
        return C.call(_BITCASTS[pair], e)
    raise error(op, f"arith.bitcast from {src} to {dst} is not supported by the CUDA emitter")


CONVERSIONS = {
    "arith.extf": _extf, "arith.truncf": _truncf, "arith.sitofp": _sitofp, "arith.uitofp": _uitofp,
    "arith.fptosi": _fptoint, "arith.fptoui": _fptoint, "arith.extsi": _int_cast, "arith.extui": _int_cast,
    "arith.trunci": _int_cast, "arith.index_cast": _int_cast, "arith.index_castui": _int_cast,
    "arith.bitcast": _bitcast,
}
