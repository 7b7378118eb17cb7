"""expand-narrow-floats: f16/bf16/fp8 conversions on the CPU, bit for bit against ml_dtypes / numpy."""

import ml_dtypes
import numpy as np
import pytest

from tilemlir.backends.cpu.native import NativeFunction
from tilemlir.context import make_context
from tilemlir.mlir import ir

NUMPY = {
    "f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
    "f8E4M3FN": ml_dtypes.float8_e4m3fn, "f8E5M2": ml_dtypes.float8_e5m2,
}
BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
NARROW = ["bf16", "f16", "f8E4M3FN", "f8E5M2"]


def _cast_kernel(src: str, dst: str, op: str) -> NativeFunction:
    text = f"""
    func.func @cast(%a: memref<?x{src}>, %b: memref<?x{dst}>) {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = memref.dim %a, %c0 : memref<?x{src}>
      scf.for %i = %c0 to %n step %c1 {{
        %v = memref.load %a[%i] : memref<?x{src}>
        %w = arith.{op} %v : {src} to {dst}
        memref.store %w, %b[%i] : memref<?x{dst}>
      }}
      return
    }}"""
    with make_context(), ir.Location.unknown():
        return NativeFunction(ir.Module.parse(text), "cast")


def _run(kernel, x, dst):
    out = np.zeros(x.shape, NUMPY[dst])
    kernel(x, out)
    return out


def _assert_same_bits(got, want, inputs):
    with np.errstate(invalid="ignore"):
        got_f, want_f = got.astype(np.float64), want.astype(np.float64)
    both_nan = np.isnan(got_f) & np.isnan(want_f)
    bits = BITS[got.itemsize]
    bad = (got.view(bits) != want.view(bits)) & ~both_nan
    assert not bad.any(), f"{bad.sum()} mismatches, e.g. {inputs[bad][:4]} -> {got[bad][:4]} vs {want[bad][:4]}"
    assert (np.isnan(got_f) == np.isnan(want_f)).all()


def _interesting_f32(rng, n):
    random_bits = rng.integers(0, 2**32, n, dtype=np.uint32).view(np.float32)
    scaled = (rng.standard_normal(n) * np.exp2(rng.uniform(-40, 20, n))).astype(np.float32)
    # values on and next to the rounding ties and overflow thresholds of every target format
    edges = np.array([448, 460, 464, 465, 480, 57344, 61439, 61440, 65504, 65519, 65520, 3.4e38, 2**-9, 2**-10,
                      2**-17, 2**-16 * 1.5, 2**-24, 2**-25, 2**-25 * 1.0001, 1e-40, 0.0, -0.0, np.inf, -np.inf,
                      np.nan], np.float32)
    ties = np.concatenate([edges, -edges, np.nextafter(edges, np.float32(np.inf)), np.nextafter(edges, np.float32(0))])
    return np.concatenate([random_bits, scaled, ties.astype(np.float32)])


@pytest.mark.parametrize("dst", NARROW)
def test_f32_narrowing_matches_ml_dtypes_bit_for_bit(dst):
    rng = np.random.default_rng()
    x = _interesting_f32(rng, 300_000)
    with np.errstate(all="ignore"):
        want = x.astype(NUMPY[dst])
    _assert_same_bits(_run(_cast_kernel("f32", dst, "truncf"), x, dst), want, x)


def _round_to_odd_f32(x: np.ndarray) -> np.ndarray:
    """f64 -> f32 rounding to odd: the f32 then rounds to any narrower format exactly as x would."""
    with np.errstate(all="ignore"):
        nearest = x.astype(np.float32)
    toward_zero = np.where(np.abs(nearest.astype(np.float64)) > np.abs(x),
                           np.nextafter(nearest, np.float32(0)), nearest)
    inexact = toward_zero.astype(np.float64) != x
    bits = toward_zero.view(np.uint32) | inexact.astype(np.uint32)
    return np.where(np.isnan(x), np.float32(np.nan), bits.view(np.float32))


@pytest.mark.parametrize("dst", NARROW)
def test_f64_narrowing_rounds_once(dst):
    rng = np.random.default_rng()
    n = 200_000
    x = np.concatenate([
        rng.integers(0, 2**64, n, dtype=np.uint64).view(np.float64),
        rng.standard_normal(n) * np.exp2(rng.uniform(-40, 20, n)),
        np.array([-37.99999875, 37.99999875, 1.0 + 2.0**-9 + 2.0**-40]),  # ml_dtypes double-rounds these via f32
    ])
    with np.errstate(all="ignore"):
        want = _round_to_odd_f32(x).astype(NUMPY[dst])
    _assert_same_bits(_run(_cast_kernel("f64", dst, "truncf"), x, dst), want, x)


def test_f64_to_e4m3_does_not_double_round():
    got = _run(_cast_kernel("f64", "f8E4M3FN", "truncf"), np.array([37.99999875, 38.0]), "f8E4M3FN")
    assert got.astype(np.float64).tolist() == [36.0, 40.0]  # 38 is a tie -> even mantissa (40)


@pytest.mark.parametrize("src", NARROW)
def test_widening_every_bit_pattern_is_exact(src):
    dtype = NUMPY[src]
    patterns = np.arange(2 ** (8 * np.dtype(dtype).itemsize), dtype=BITS[np.dtype(dtype).itemsize]).view(dtype)
    got = _run(_cast_kernel(src, "f32", "extf"), patterns, "f32")
    _assert_same_bits(got, patterns.astype(np.float32), patterns)


@pytest.mark.parametrize("src,dst", [("bf16", "f8E4M3FN"), ("f16", "f8E5M2"), ("bf16", "f8E5M2")])
def test_narrow_to_narrow_goes_through_exact_f32(src, dst):
    dtype = NUMPY[src]
    patterns = np.arange(2 ** 16, dtype=np.uint16).view(dtype)
    with np.errstate(all="ignore"):
        want = patterns.astype(np.float32).astype(NUMPY[dst])
    _assert_same_bits(_run(_cast_kernel(src, dst, "truncf"), patterns, dst), want, patterns)


def test_e4m3_overflow_is_nan_not_saturation():
    x = np.array([448, 464, 465, 1000, -1e9, np.inf, -np.inf], np.float32)
    got = _run(_cast_kernel("f32", "f8E4M3FN", "truncf"), x, "f8E4M3FN")
    assert got.view(np.uint8).tolist() == [0x7E, 0x7E, 0x7F, 0x7F, 0xFF, 0x7F, 0xFF]


def test_int_to_narrow_and_back():
    text = """
    func.func @f(%a: memref<?xi32>, %b: memref<?xbf16>, %c: memref<?xi32>) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = memref.dim %a, %c0 : memref<?xi32>
      scf.for %i = %c0 to %n step %c1 {
        %v = memref.load %a[%i] : memref<?xi32>
        %w = arith.sitofp %v : i32 to bf16
        memref.store %w, %b[%i] : memref<?xbf16>
        %back = arith.fptosi %w : bf16 to i32
        memref.store %back, %c[%i] : memref<?xi32>
      }
      return
    }"""
    with make_context(), ir.Location.unknown():
        kernel = NativeFunction(ir.Module.parse(text), "f")
    a = np.random.default_rng().integers(-(2**20), 2**20, 10_000, dtype=np.int32)
    a = np.concatenate([a, np.array([0, 1, -1, 255, 257, 16777217], np.int32)])
    b, c = np.zeros(a.shape, ml_dtypes.bfloat16), np.zeros(a.shape, np.int32)
    kernel(a, b, c)
    _assert_same_bits(b, a.astype(np.float64).astype(np.float32).astype(ml_dtypes.bfloat16), a)
    assert (c == b.astype(np.float64).astype(np.int32)).all()


def test_arithmetic_on_narrow_types_rounds_each_result():
    text = """
    func.func @f(%a: memref<?xbf16>, %b: memref<?xbf16>, %c: memref<?xbf16>) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = memref.dim %a, %c0 : memref<?xbf16>
      scf.for %i = %c0 to %n step %c1 {
        %x = memref.load %a[%i] : memref<?xbf16>
        %y = memref.load %b[%i] : memref<?xbf16>
        %p = arith.mulf %x, %y : bf16
        %s = arith.addf %p, %x : bf16
        %e = math.exp %s : bf16
        memref.store %e, %c[%i] : memref<?xbf16>
      }
      return
    }"""
    with make_context(), ir.Location.unknown():
        kernel = NativeFunction(ir.Module.parse(text), "f")
    rng = np.random.default_rng()
    a = rng.standard_normal(5000).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal(5000).astype(ml_dtypes.bfloat16)
    c = np.full(a.shape, np.nan, ml_dtypes.bfloat16)
    kernel(a, b, c)
    bf = ml_dtypes.bfloat16
    p = (a.astype(np.float32) * b.astype(np.float32)).astype(bf)
    s = (p.astype(np.float32) + a.astype(np.float32)).astype(bf)
    want = np.exp(s.astype(np.float32)).astype(bf)
    # exp is libm's expf (not correctly rounded): allow one bf16 ulp
    diff = np.abs(c.view(np.uint16).astype(np.int32) - want.view(np.uint16).astype(np.int32))
    assert diff.max() <= 1
