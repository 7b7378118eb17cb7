"""`expand-narrow-floats`: conversions to and from f16, bf16, f8E4M3FN and f8E5M2 as integer code.

Takes any IR whose arithmetic on narrow floats has already been widened to
f32 (upstream `arith-emulate-unsupported-floats`, `math-extend-to-supported-types`);
gives the same IR where every `arith.extf` / `arith.truncf` /
`arith.sitofp` / `arith.uitofp` / `arith.fptosi` / `arith.fptoui` touching a
narrow float is plain integer arithmetic on its bits (scalars or vectors).

Why: LLVM has no fp8 type, and lowers half/bfloat conversions to
host-dependent instructions or to compiler-rt calls that a JIT may not
resolve. The expansion makes every CPU run bit-identical on every host.

Semantics (checked bit for bit against ml_dtypes in test_cpu_floats.py):
- narrowing rounds to nearest, ties to even, with correct subnormals;
- overflow gives inf for formats that have it (f16, bf16, f8E5M2) and NaN
  for f8E4M3FN, which has no inf (no saturation: ml_dtypes and MLIR's
  APFloat agree; CUDA's `__nv_fp8_e4m3(float)` saturates, so the CUDA
  emitter must convert with `__NV_NOSAT` to agree);
- NaN stays NaN (sign kept; the quiet NaN of the format), inf stays inf
  (NaN for f8E4M3FN);
- widening is exact; a NaN widens to the quiet NaN of its sign (as ml_dtypes does).
"""

from __future__ import annotations

from dataclasses import dataclass

from tilemlir.backends.cpu.ir_builders import CMPI, constant, element_type, with_element_type
from tilemlir.mlir import arith, ir
from tilemlir.pass_infra.registry import register_pass


@dataclass(frozen=True)
class FloatFormat:
    exp_bits: int
    man_bits: int
    bias: int
    has_inf: bool  # False: the all-ones pattern (per sign) is the only NaN, as in f8E4M3FN

    @property
    def width(self) -> int:
        return 1 + self.exp_bits + self.man_bits

    @property
    def exp_mask(self) -> int:
        return ((1 << self.exp_bits) - 1) << self.man_bits

    @property
    def nan(self) -> int:
        """The canonical positive NaN's bits."""
        return self.exp_mask | (1 << (self.man_bits - 1)) if self.has_inf else (1 << (self.width - 1)) - 1


NARROW = {
    "f16": FloatFormat(5, 10, 15, True),
    "bf16": FloatFormat(8, 7, 127, True),
    "f8E4M3FN": FloatFormat(4, 3, 7, False),
    "f8E5M2": FloatFormat(5, 2, 15, True),
}
WIDE = {"f32": FloatFormat(8, 23, 127, True), "f64": FloatFormat(11, 52, 1023, True)}
_CASTS = ("arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui")


def narrow_format(type_: ir.Type) -> FloatFormat | None:
    return NARROW.get(str(element_type(type_)))


@register_pass("expand-narrow-floats", "expand f16/bf16/fp8 conversions into integer code (CPU backend)")
def run(module: ir.Operation, options) -> None:
    casts = []
    module.walk(lambda op: _collect(op, casts))
    for op in casts:
        with op.location, ir.InsertionPoint(op):  # (types built here take this location too)
            result = _expand(op)
        op.results[0].replace_all_uses_with(result)
        op.erase()


def _collect(op: ir.Operation, out: list) -> ir.WalkResult:
    if op.name in _CASTS and (narrow_format(op.operands[0].type) or narrow_format(op.results[0].type)):
        out.append(op)
    return ir.WalkResult.ADVANCE


def _expand(op: ir.Operation) -> ir.Value:
    value, to = op.operands[0], op.results[0].type
    f32 = with_element_type(to, ir.F32Type.get())
    if op.name in ("arith.sitofp", "arith.uitofp"):
        f64 = with_element_type(to, ir.F64Type.get())
        wide = arith.sitofp(f64, value) if op.name == "arith.sitofp" else arith.uitofp(f64, value)
        return narrow(wide, to)
    if op.name in ("arith.fptosi", "arith.fptoui"):
        wide = widen(value, f32)
        return arith.fptosi(to, wide) if op.name == "arith.fptosi" else arith.fptoui(to, wide)
    if narrow_format(value.type) is not None:
        value = widen(value, f32)
        if narrow_format(to) is None:
            return value if value.type == to else arith.extf(to, value)
    return narrow(value, to)


def widen(value: ir.Value, f32: ir.Type) -> ir.Value:
    """A narrow float (scalar or vector) as f32, exactly."""
    fmt = narrow_format(value.type)
    small = with_element_type(value.type, ir.IntegerType.get_signless(fmt.width))
    i32 = with_element_type(value.type, ir.IntegerType.get_signless(32))
    bits = arith.extui(i32, arith.bitcast(small, value))
    if fmt.exp_bits == 8:  # bf16 is the top half of an f32
        return arith.bitcast(f32, arith.shli(bits, constant(i32, 16)))

    def c(v):
        return constant(i32, v)

    sign = arith.shli(arith.shrui(bits, c(fmt.width - 1)), c(31))
    exp = arith.andi(arith.shrui(bits, c(fmt.man_bits)), c((1 << fmt.exp_bits) - 1))
    man = arith.andi(bits, c((1 << fmt.man_bits) - 1))
    man_shifted = arith.shli(man, c(23 - fmt.man_bits))
    normal = arith.ori(arith.shli(arith.addi(exp, c(127 - fmt.bias)), c(23)), man_shifted)
    subnormal = arith.bitcast(i32, arith.mulf(arith.uitofp(f32, man), constant(f32, 2.0 ** (1 - fmt.bias - fmt.man_bits))))
    is_zero_exp = arith.cmpi(CMPI.eq, exp, c(0))
    magnitude = arith.select(is_zero_exp, subnormal, normal)
    if fmt.has_inf:
        special = arith.select(arith.cmpi(CMPI.ne, man, c(0)), c(0x7FC00000), c(0x7F800000))
        is_special = arith.cmpi(CMPI.eq, exp, c((1 << fmt.exp_bits) - 1))
    else:
        special = c(0x7FC00000)
        is_special = arith.cmpi(CMPI.eq, arith.andi(bits, c((1 << (fmt.width - 1)) - 1)), c(fmt.nan))
    magnitude = arith.select(is_special, special, magnitude)
    return arith.bitcast(f32, arith.ori(sign, magnitude))


def narrow(value: ir.Value, to: ir.Type) -> ir.Value:
    """An f32 or f64 (scalar or vector) rounded to the narrow float type `to`."""
    src = WIDE[str(element_type(value.type))]
    dst = narrow_format(to)
    wide_int = with_element_type(value.type, ir.IntegerType.get_signless(src.width))
    small = with_element_type(value.type, ir.IntegerType.get_signless(dst.width))

    def c(v):
        return constant(wide_int, v)

    bits = arith.bitcast(wide_int, value)
    sign = arith.shrui(bits, c(src.width - 1))
    magnitude = arith.andi(bits, c((1 << (src.width - 1)) - 1))
    rounded = _round_finite(magnitude, src, dst, c)
    overflow = dst.exp_mask if dst.has_inf else dst.nan
    rounded = arith.select(arith.cmpi(CMPI.uge, rounded, c(overflow)), c(overflow), rounded)
    is_nan = arith.cmpi(CMPI.ugt, magnitude, c(src.exp_mask))
    is_inf = arith.cmpi(CMPI.eq, magnitude, c(src.exp_mask))
    rounded = arith.select(is_inf, c(dst.exp_mask if dst.has_inf else dst.nan), rounded)
    rounded = arith.select(is_nan, c(dst.nan), rounded)
    result = arith.ori(arith.shli(sign, c(dst.width - 1)), rounded)
    return arith.bitcast(to, arith.trunci(small, result))


def _round_finite(magnitude: ir.Value, src: FloatFormat, dst: FloatFormat, c) -> ir.Value:
    """|x|'s bits (finite) rounded to nearest even into `dst`'s encoding, unclamped."""
    shift = src.man_bits - dst.man_bits
    rebias = (src.bias - dst.bias) << src.man_bits
    normal = _shift_right_rne(arith.subi(magnitude, c(rebias)), c(shift), c)
    if src.bias == dst.bias:  # same exponent range (f32 -> bf16): subnormals map onto subnormals
        return normal
    min_normal = (src.bias - dst.bias + 1) << src.man_bits
    raw_exp = arith.shrui(magnitude, c(src.man_bits))
    implicit = arith.select(arith.cmpi(CMPI.eq, raw_exp, c(0)), c(0), c(1 << src.man_bits))
    mantissa = arith.ori(arith.andi(magnitude, c((1 << src.man_bits) - 1)), implicit)
    exp = arith.maxui(raw_exp, c(1))
    # value = mantissa * 2^(exp - bias_s - man_s); dst subnormal unit = 2^(1 - bias_d - man_d)
    shift_sub = arith.subi(c(1 - dst.bias - dst.man_bits + src.bias + src.man_bits), exp)
    shift_sub = arith.minui(shift_sub, c(src.man_bits + 2))
    subnormal = _shift_right_rne(mantissa, shift_sub, c)
    return arith.select(arith.cmpi(CMPI.ult, magnitude, c(min_normal)), subnormal, normal)


def _shift_right_rne(value: ir.Value, shift: ir.Value, c) -> ir.Value:
    """value >> shift rounded to nearest, ties to even (shift >= 1)."""
    one = c(1)
    lsb = arith.andi(arith.shrui(value, shift), one)
    half_minus_one = arith.subi(arith.shli(one, arith.subi(shift, one)), one)
    return arith.shrui(arith.addi(arith.addi(value, half_minus_one), lsb), shift)
