"""`fuse-fma`: every `math.fma` rounded once, the way the CUDA emitter's fmaf / __hfma round it.

Takes any IR with `math.fma` on floats (scalars or vectors); gives the same
IR with each one replaced by:

- f32, f64: `llvm.intr.fma` (CUDA: `fmaf` / `fma`);
- f16, bf16 (CUDA: `__hfma`, one rounding to the narrow type): the operands
  widened to f64, where a * b is exact (at most 22 significant bits and an
  exponent well inside f64's range); the exact sum a * b + c is taken as
  its rounded f64 sum plus that sum's error (TwoSum, exact), rounded to odd
  (the sum's last bit set where the error is not zero), then narrowed to
  nearest even. Rounding to odd at 53 bits and then to nearest at p bits,
  p + 2 <= 53, gives the correctly rounded result (Boldo and Melquiond);
  rounding to nearest twice would not (a tie at 53 bits hides the error's
  sign);
- f8E4M3FN, f8E5M2: widened to f32, `llvm.intr.fma`, narrowed (CUDA computes
  fp8 math in float and rounds once at the end).

Why: upstream `math-expand-ops` splits `math.fma` into a multiply and an add
(two roundings), and `math-extend-to-supported-types` computes a half
precision fma in f32 and rounds again; the GPU rounds once.
"""

from __future__ import annotations

from tilemlir.backends.cpu.ir_builders import CMPF, CMPI, bitwidth, constant, element_type, with_element_type
from tilemlir.ir_util import ops_named
from tilemlir.mlir import arith, ir
from tilemlir.mlir import llvm as llvm_dialect
from tilemlir.pass_infra.registry import register_pass

_EXACT_IN_F64 = ("f16", "bf16")
_IN_F32 = ("f8E4M3FN", "f8E5M2")


@register_pass("fuse-fma", "math.fma -> one rounding: llvm.intr.fma, or an exact f64 sum rounded once for "
                           "f16/bf16 (CPU backend)")
def run(module: ir.Operation, options) -> None:
    for op in ops_named(module, "math.fma"):
        with op.location, ir.InsertionPoint(op):
            result = fused(*op.operands)
        op.results[0].replace_all_uses_with(result)
        op.erase()


def fused(a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
    """a * b + c with one rounding to the operands' type."""
    type_ = a.type
    name = str(element_type(type_))
    if name in _EXACT_IN_F64:
        wide = with_element_type(type_, ir.F64Type.get())
        a, b, c = (arith.extf(wide, v) for v in (a, b, c))
        return arith.truncf(type_, _round_to_odd_sum(arith.mulf(a, b), c))
    if name in _IN_F32:
        wide = with_element_type(type_, ir.F32Type.get())
        return arith.truncf(type_, llvm_dialect.intr_fma(*(arith.extf(wide, v) for v in (a, b, c))))
    return llvm_dialect.intr_fma(a, b, c)


def _round_to_odd_sum(x: ir.Value, y: ir.Value) -> ir.Value:
    """x + y rounded to odd: the rounded sum where it is exact, else whichever of its two
    neighbours around x + y has an odd last bit (TwoSum gives the sum's exact error)."""
    total = arith.addf(x, y)
    y_part = arith.subf(total, x)
    error = arith.addf(arith.subf(x, arith.subf(total, y_part)), arith.subf(y, y_part))
    bits_type = with_element_type(x.type, ir.IntegerType.get_signless(bitwidth(x.type)))
    bits = arith.bitcast(bits_type, total)
    one = constant(bits_type, 1)
    inexact = arith.cmpf(CMPF.ONE, error, constant(error.type, 0.0))  # false for NaN: inf and NaN sums stay
    even = arith.cmpi(CMPI.eq, arith.andi(bits, one), constant(bits_type, 0))
    zero = constant(x.type, 0.0)
    # the neighbour away from zero when the error has the sum's sign, else the one toward zero
    outward = arith.xori(arith.cmpf(CMPF.OLT, total, zero), arith.cmpf(CMPF.OGT, error, zero))
    neighbour = arith.select(outward, arith.addi(bits, one), arith.subi(bits, one))
    rounded = arith.select(arith.andi(inexact, even), neighbour, bits)
    return arith.bitcast(x.type, rounded)
