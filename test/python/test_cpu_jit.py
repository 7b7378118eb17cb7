"""The CPU JIT path: loop-level MLIR -> LLVM IR -> llvmlite, on what kernels use."""

import math

import ml_dtypes
import numpy as np
import pytest

from tilemlir.backends.cpu.native import NativeFunction
from tilemlir.context import make_context
from tilemlir.diagnostics import CompileError
from tilemlir.mlir import ir


def native(text: str, name: str = "f", opt_level: int = 2) -> NativeFunction:
    with make_context(), ir.Location.unknown():
        return NativeFunction(ir.Module.parse(text), name, opt_level=opt_level)


def test_float_constants_the_newer_llvm_prints_differently():
    """f0x.. hex, +inf/+qnan keywords and non-exact decimals all reach llvmlite's parser intact."""
    kernel = native("""
    func.func @f(%a: memref<6xf32>, %b: memref<2xf64>, %h: memref<2xf16>, %g: memref<2xbf16>, %v: memref<4xf32>,
                 %w: memref<4xbf16>) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %c5 = arith.constant 5 : index
      %f0 = arith.constant 0.1 : f32
      %f1 = arith.constant 5.9604644775390625E-8 : f32
      %f2 = arith.constant 0x7F800000 : f32
      %f3 = arith.constant 0x7FC00000 : f32
      %f4 = arith.constant 1.0e-40 : f32
      %f5 = arith.constant -3.4028234663852886E+38 : f32
      memref.store %f0, %a[%c0] : memref<6xf32>
      memref.store %f1, %a[%c1] : memref<6xf32>
      memref.store %f2, %a[%c2] : memref<6xf32>
      memref.store %f3, %a[%c3] : memref<6xf32>
      memref.store %f4, %a[%c4] : memref<6xf32>
      memref.store %f5, %a[%c5] : memref<6xf32>
      %d0 = arith.constant 0.1 : f64
      %d1 = arith.constant 1.0e-310 : f64
      memref.store %d0, %b[%c0] : memref<2xf64>
      memref.store %d1, %b[%c1] : memref<2xf64>
      %h0 = arith.constant 0.1 : f16
      %h1 = arith.constant 0xFC00 : f16
      memref.store %h0, %h[%c0] : memref<2xf16>
      memref.store %h1, %h[%c1] : memref<2xf16>
      %g0 = arith.constant 0.1 : bf16
      %g1 = arith.constant 1.0e-40 : bf16
      memref.store %g0, %g[%c0] : memref<2xbf16>
      memref.store %g1, %g[%c1] : memref<2xbf16>
      %cv = arith.constant dense<[0.1, 0.2, 0x7F800000, -3.0]> : vector<4xf32>
      vector.store %cv, %v[%c0] : memref<4xf32>, vector<4xf32>
      %cw = arith.constant dense<[0.1, 0x7FC0, -2.0, 1.0e-39]> : vector<4xbf16>
      vector.store %cw, %w[%c0] : memref<4xbf16>, vector<4xbf16>
      return
    }""")
    a, b = np.zeros(6, np.float32), np.zeros(2)
    h, g = np.zeros(2, np.float16), np.zeros(2, ml_dtypes.bfloat16)
    v, w = np.zeros(4, np.float32), np.zeros(4, ml_dtypes.bfloat16)
    kernel(a, b, h, g, v, w)
    f32, bf16 = np.float32, ml_dtypes.bfloat16
    assert a[:3].tolist() == [f32(0.1), f32(5.9604644775390625e-8), math.inf]
    assert math.isnan(a[3]) and a[4] == f32(1e-40) and a[5] == -np.finfo(np.float32).max
    assert b.tolist() == [0.1, 1e-310]
    assert h.tolist() == [np.float16(0.1), -math.inf]
    assert g.view(np.uint16).tolist() == np.array([0.1, 1e-40], bf16).view(np.uint16).tolist()
    assert v.tolist() == [f32(0.1), f32(0.2), math.inf, -3.0]
    assert w.view(np.uint16).tolist()[:1] + w.view(np.uint16).tolist()[2:] == \
        np.array([0.1, -2.0, 1e-39], bf16).view(np.uint16).tolist() and math.isnan(w[1])


MATH = {
    "absf": np.abs, "ceil": np.ceil, "floor": np.floor, "exp": np.exp, "exp2": np.exp2, "log": np.log,
    "log2": np.log2, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "tanh": np.tanh,
    "erf": np.vectorize(math.erf),
}


@pytest.mark.parametrize("dtype", ["f32", "f64", "bf16", "f16"])
@pytest.mark.parametrize("op", sorted(MATH))
def test_math_ops_the_frontend_emits(op, dtype):
    kernel = native(f"""
    func.func @f(%a: memref<?x{dtype}>, %b: memref<?x{dtype}>) {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = memref.dim %a, %c0 : memref<?x{dtype}>
      scf.for %i = %c0 to %n step %c1 {{
        %v = memref.load %a[%i] : memref<?x{dtype}>
        %w = math.{op} %v : {dtype}
        memref.store %w, %b[%i] : memref<?x{dtype}>
      }}
      return
    }}""")
    numpy_type = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16, "f16": np.float16}[dtype]
    x = np.random.default_rng().uniform(0.05, 4, 200).astype(numpy_type)
    y = np.full_like(x, np.nan)
    kernel(x, y)
    want = MATH[op](x.astype(np.float64))
    eps = {"f32": 1e-6, "f64": 1e-14, "bf16": 8e-3, "f16": 1e-3}[dtype]
    assert np.max(np.abs(y.astype(np.float64) - want) / np.maximum(np.abs(want), 1)) < eps


@pytest.mark.parametrize("dtype", ["f32", "f64", "bf16", "f16"])
def test_every_optimization_level_gives_the_same_bits(dtype):
    """The thread level runs at O0 and the tile level at O2 (`kernel.LLVM_OPT_LEVELS`): separate multiply
    and add, division, reassociable sums and the math library must round the same at every level."""
    ops = "\n".join(f"%m{i} = math.{op} %v : {dtype}" for i, op in enumerate(sorted(MATH)))
    sums = "\n".join(f"%s{i + 1} = arith.addf %s{i}, %m{i} : {dtype}" for i in range(len(MATH)))
    text = f"""
    func.func @f(%a: memref<?x{dtype}>, %b: memref<?x{dtype}>) {{
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = memref.dim %a, %c0 : memref<?x{dtype}>
      %third = arith.constant 0.333 : {dtype}
      scf.for %i = %c0 to %n step %c1 {{
        %v = memref.load %a[%i] : memref<?x{dtype}>
        {ops}
        %p = arith.mulf %v, %third : {dtype}
        %s0 = arith.addf %p, %v : {dtype}
        {sums}
        %q = arith.divf %s{len(MATH)}, %v : {dtype}
        memref.store %q, %b[%i] : memref<?x{dtype}>
      }}
      return
    }}"""
    numpy_type = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16, "f16": np.float16}[dtype]
    x = np.random.default_rng().uniform(0.05, 4, 1000).astype(numpy_type)
    results = []
    for level in range(4):
        y = np.full_like(x, np.nan)
        native(text, opt_level=level)(x, y)
        results.append(y.view(f"u{x.itemsize}"))
    assert np.all(np.isfinite(y.astype(np.float64)))
    for other in results[1:]:
        np.testing.assert_array_equal(results[0], other)


def test_an_optimization_level_outside_0_to_3_is_refused():
    with pytest.raises(ValueError, match="opt_level must be 0, 1, 2 or 3, got 4"):
        native("func.func @f() { return }", opt_level=4)


def test_pow_fma_ipowi_and_float_classes():
    kernel = native("""
    func.func @f(%a: memref<?xi32>, %x: memref<?xf32>, %pw: memref<?xi32>, %cls: memref<?xi32>, %fl: memref<?xf32>) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %n = memref.dim %a, %c0 : memref<?xi32>
      %three = arith.constant 3 : i32
      %one = arith.constant 1 : i32
      %two = arith.constant 2 : i32
      %four = arith.constant 4 : i32
      %zero = arith.constant 0 : i32
      %half = arith.constant 0.5 : f32
      scf.for %i = %c0 to %n step %c1 {
        %v = memref.load %a[%i] : memref<?xi32>
        %p = math.ipowi %v, %three : i32
        memref.store %p, %pw[%i] : memref<?xi32>
        %f = memref.load %x[%i] : memref<?xf32>
        %inf = math.isinf %f : f32
        %fin = math.isfinite %f : f32
        %nan = math.isnan %f : f32
        %k1 = arith.select %inf, %one, %zero : i32
        %k2 = arith.select %fin, %two, %zero : i32
        %k3 = arith.select %nan, %four, %zero : i32
        %k12 = arith.addi %k1, %k2 : i32
        %k = arith.addi %k12, %k3 : i32
        memref.store %k, %cls[%i] : memref<?xi32>
        %q = math.powf %f, %half : f32
        %r = math.fma %f, %half, %q : f32
        memref.store %r, %fl[%i] : memref<?xf32>
      }
      return
    }""")
    a = np.array([2, -3, 5, 0], np.int32)
    x = np.array([4.0, np.inf, np.nan, -np.inf], np.float32)
    pw, cls, fl = np.zeros(4, np.int32), np.zeros(4, np.int32), np.zeros(4, np.float32)
    kernel(a, x, pw, cls, fl)
    assert pw.tolist() == [8, -27, 125, 0]
    assert cls.tolist() == [2, 1, 4, 1]
    assert fl[0] == 4.0


def test_ops_without_an_llvm_lowering_are_a_compile_error():
    with pytest.raises(CompileError, match="gpu.barrier"):
        native("func.func @f() {\n gpu.barrier\n return\n}")


def test_bool_vectors_in_memory_are_a_byte_per_lane():
    """vector<4xi1> loads and stores (vectorize makes them for bool tensors) read numpy's one byte per bool:
    LLVM alone would pack the four lanes into the bits of one byte."""
    kernel = native("""
    func.func @f(%a: memref<?xi1>, %b: memref<?xi1>) {
      %c0 = arith.constant 0 : index
      %c4 = arith.constant 4 : index
      %n = memref.dim %a, %c0 : memref<?xi1>
      %ones = arith.constant dense<true> : vector<4xi1>
      %local = memref.alloca() : memref<4xi1>
      scf.for %i = %c0 to %n step %c4 {
        %v = vector.load %a[%i] : memref<?xi1>, vector<4xi1>
        vector.store %v, %local[%c0] : memref<4xi1>, vector<4xi1>
        %u = vector.load %local[%c0] : memref<4xi1>, vector<4xi1>
        %w = arith.xori %u, %ones : vector<4xi1>
        vector.store %w, %b[%i] : memref<?xi1>, vector<4xi1>
      }
      return
    }""")
    a = np.random.default_rng().random(64) < 0.5
    a[:4] = [False, True, False, True]
    b = a.copy()  # poisoned: every element that is not written stays wrong
    kernel(a, b)
    assert np.array_equal(b, ~a), np.flatnonzero(b == a)[:8]
