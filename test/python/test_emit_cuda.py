"""The CUDA emitter: emitted text, the signature, errors, and that every emitted kernel compiles.

NVRTC needs no GPU, so every kernel here is compiled for sm_90a; PTX checks
confirm the 16-byte vector accesses and the absence of local memory.
Numerical checks of emitted kernels on a GPU are in test_emit_cuda_gpu.py.
"""

from __future__ import annotations

import importlib
import json
import random
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from frontend_util import compile_error, message
from support import body_of, compiles, elementwise_module, emit_text, kernel_module, normalized
from tilemlir.diagnostics import CompileError
from tilemlir.emit_cuda import emit
from tilemlir.emit_cuda.scalar import float32_literal
from tilemlir.runtime.expr import Expr

LIT_DIR = Path(__file__).resolve().parents[1] / "lit" / "emit_cuda"
EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"
# -- the lit inputs, compiled -------------------------------------------------------------------------


def test_rmsnorm_compiles_to_16_byte_accesses_without_local_memory():
    emitted = emit_text((LIT_DIR / "rmsnorm.mlir").read_text())
    ptx = compiles(emitted)
    assert ptx.count("ld.global.nc.v4.u32") == 4  # X twice, W twice
    assert ptx.count("st.global.v4.u32") == 2
    assert "shfl.sync.bfly.b32" in ptx and "bar.sync" in ptx
    assert ".local" not in ptx  # the register array stayed in registers
    assert "rsqrt.approx" not in ptx and "sqrt.rn.f32" in ptx
    assert "fma.rn.f32" not in ptx  # --fmad=false: the IR's separate roundings are kept


def test_rmsnorm_fast_math_uses_the_approximations():
    emitted = emit_text((LIT_DIR / "rmsnorm.mlir").read_text(), fast_math=True)
    assert emitted.fmad is True
    ptx = compiles(emitted)
    assert "rsqrt.approx.f32" in ptx or "rsqrt.approx.ftz.f32" in ptx


def test_softmax_compiles_with_nan_propagating_max():
    emitted = emit_text((LIT_DIR / "softmax.mlir").read_text())
    ptx = compiles(emitted)
    assert "max.NaN.f32" in ptx
    assert "ex2.approx" in ptx  # expf's own accurate implementation uses ex2 internally
    assert ".local" not in ptx


# -- the examples, through the whole pipeline -----------------------------------------------------------

EXAMPLES = ["elementwise_add", "softmax", "rmsnorm", "layernorm", "row_reduce", "quant_fp8", "silu_and_mul"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_examples_emit_cuda_that_compiles_to_vector_accesses(name, monkeypatch):
    from tilemlir import driver

    monkeypatch.syspath_prepend(str(EXAMPLES_DIR))
    module = importlib.import_module(name)
    jit = next(getattr(module, a) for a in dir(module) if hasattr(getattr(module, a), "instantiate"))
    frontend = jit.instantiate().frontend()
    ir_module = frontend.module()
    with ir_module.context:
        driver.run_stages(ir_module, "final")
        emitted = emit(ir_module)
    source = emitted.source
    assert source.count(f"// {name}.py:") >= 5  # statements carry their Python lines
    start = source.index('extern "C"')
    header = source[start:source.index(") {", start)]
    for param in emitted.signature.params:  # C parameters are the Python parameter names
        assert f" {param.name}," in header or f" {param.name}\n" in header or header.endswith(f" {param.name}")
    ptx = compiles(emitted)
    assert "ld.global.nc.v4" in ptx  # 16-byte loads
    assert ".local" not in ptx  # register arrays stay in registers
    for fast in ("__expf", "__logf", "__fdividef", "rsqrtf", "__powf"):  # IEEE by default
        assert fast not in body_of(source)
    assert "div.full" not in ptx and "div.approx" not in ptx and "rsqrt.approx" not in ptx


# -- conversions, floats, integers: emitted, then compiled -------------------------------------------

CASTS = [  # (source, destination, op, expected C fragment)
    ("f32", "bf16", "arith.truncf", "__float2bfloat16_rn(X_v)"),
    ("f32", "f16", "arith.truncf", "__float2half_rn(X_v)"),
    ("f32", "f8E4M3FN", "arith.truncf", "tl_to_e4m3(X_v)"),
    ("f32", "f8E5M2", "arith.truncf", "tl_to_e5m2(X_v)"),
    ("bf16", "f8E4M3FN", "arith.truncf", "tl_to_e4m3(__bfloat162float(X_v))"),
    ("f64", "f32", "arith.truncf", "(float)X_v"),
    ("f64", "f16", "arith.truncf", "__double2half(X_v)"),
    ("f64", "bf16", "arith.truncf", "__double2bfloat16(X_v)"),
    ("f64", "f8E4M3FN", "arith.truncf", "tl_to_e4m3(X_v)"),
    ("bf16", "f32", "arith.extf", "__bfloat162float(X_v)"),
    ("f16", "f64", "arith.extf", "(double)__half2float(X_v)"),
    ("f8E4M3FN", "f32", "arith.extf", "float(X_v)"),
    ("f8E5M2", "bf16", "arith.extf", "__float2bfloat16_rn(float(X_v))"),
    ("f32", "f64", "arith.extf", "(double)X_v"),
    ("i32", "f32", "arith.sitofp", "(float)X_v"),
    ("i32", "bf16", "arith.sitofp", "__int2bfloat16_rn(X_v)"),
    ("i64", "f16", "arith.sitofp", "__ll2half_rn(X_v)"),
    ("i8", "f16", "arith.sitofp", "__int2half_rn(X_v)"),
    ("i32", "f8E4M3FN", "arith.sitofp", "tl_to_e4m3((double)X_v)"),
    ("i32", "f32", "arith.uitofp", "(float)(unsigned int)X_v"),
    ("i64", "bf16", "arith.uitofp", "__ull2bfloat16_rn((unsigned long long)X_v)"),
    ("f32", "i32", "arith.fptosi", "(int)X_v"),
    ("bf16", "i64", "arith.fptosi", "(long long)__bfloat162float(X_v)"),
    ("f32", "i32", "arith.fptoui", "(int)(unsigned int)X_v"),
    ("i8", "i32", "arith.extsi", "(int)X_v"),
    ("i8", "i64", "arith.extui", "(long long)(unsigned char)X_v"),
    ("i32", "i8", "arith.trunci", "(signed char)X_v"),
    ("i1", "i32", "arith.extsi", "-(int)X_v"),
    ("i32", "i1", "arith.trunci", "(X_v & 1) != 0"),
    ("f32", "i32", "arith.bitcast", "__float_as_int(X_v)"),
    ("i16", "bf16", "arith.bitcast", "__short_as_bfloat16(X_v)"),
]


@pytest.mark.parametrize("src,dst,op,expected", CASTS, ids=[f"{c[2]}-{c[0]}-{c[1]}" for c in CASTS])
def test_conversions(src, dst, op, expected):
    module = elementwise_module({"X": src}, {"Y": dst}, f"      %Y_r = {op} %X_v : {src} to {dst}")
    emitted = emit_text(module)
    assert f"Y[bx * 64 + tx] = {expected};" in normalized(emitted.source, "X"), body_of(emitted.source)


def test_all_conversions_compile_in_one_kernel():
    inputs = {f"I{i}": src for i, (src, _, _, _) in enumerate(CASTS)}
    outputs = {f"O{i}": dst for i, (_, dst, _, _) in enumerate(CASTS)}
    ops = "\n".join(f"      %O{i}_r = {op} %I{i}_v : {src} to {dst}" for i, (src, dst, op, _) in enumerate(CASTS))
    emitted = emit_text(elementwise_module(inputs, outputs, ops))
    compiles(emitted)


FLOAT_BINARY = [
    ("arith.addf", "f32", "X_v + Z_v"), ("arith.subf", "f32", "X_v - Z_v"), ("arith.mulf", "f16", "X_v * Z_v"),
    ("arith.divf", "bf16", "X_v / Z_v"), ("arith.divf", "f32", "X_v / Z_v"),
    ("arith.maximumf", "f32", "tl_maximum(X_v, Z_v)"), ("arith.minimumf", "f64", "tl_minimum(X_v, Z_v)"),
    ("arith.maximumf", "bf16", "tl_maximum(X_v, Z_v)"), ("arith.minimumf", "f16", "tl_minimum(X_v, Z_v)"),
    ("arith.maxnumf", "f32", "fmaxf(X_v, Z_v)"), ("arith.minnumf", "f64", "fmin(X_v, Z_v)"),
    ("arith.maxnumf", "bf16", "__hmax(X_v, Z_v)"), ("arith.remf", "f32", "fmodf(X_v, Z_v)"),
    ("arith.remf", "f16", "__float2half_rn(fmodf(__half2float(X_v), __half2float(Z_v)))"),
    ("arith.addf", "f8E4M3FN", "tl_to_e4m3(float(X_v) + float(Z_v))"),
    ("math.powf", "f32", "powf(X_v, Z_v)"), ("math.atan2", "f64", "atan2(X_v, Z_v)"),
    ("math.copysign", "f32", "copysignf(X_v, Z_v)"),
]


@pytest.mark.parametrize("op,elem,expected", FLOAT_BINARY, ids=[f"{o}-{e}" for o, e, _ in FLOAT_BINARY])
def test_float_binary(op, elem, expected):
    emitted = emit_text(elementwise_module({"X": elem, "Z": elem}, {"Y": elem}, f"      %Y_r = {op} %X_v, %Z_v : {elem}"))
    text = normalized(emitted.source, "X", "Z")
    assert f"Y[bx * 64 + tx] = {expected};" in text, body_of(emitted.source)


CMPF = {"oeq": "X_v == Z_v", "ogt": "X_v > Z_v", "oge": "X_v >= Z_v", "olt": "X_v < Z_v", "ole": "X_v <= Z_v",
        "one": "X_v < Z_v || X_v > Z_v", "ord": "X_v == X_v && Z_v == Z_v", "ueq": "!(X_v < Z_v || X_v > Z_v)",
        "ugt": "!(X_v <= Z_v)", "uge": "!(X_v < Z_v)", "ult": "!(X_v >= Z_v)", "ule": "!(X_v > Z_v)",
        "une": "X_v != Z_v", "uno": "X_v != X_v || Z_v != Z_v", "true": "true", "false": "false"}


def test_float_comparisons_have_the_ieee_unordered_semantics():
    ops = "\n".join(f"      %P{i}_r = arith.cmpf {p}, %X_v, %Z_v : f32" for i, p in enumerate(CMPF))
    emitted = emit_text(elementwise_module({"X": "f32", "Z": "f32"}, {f"P{i}": "i1" for i in range(len(CMPF))}, ops))
    text = normalized(emitted.source, "X", "Z")
    for i, expected in enumerate(CMPF.values()):
        assert f"P{i}[bx * 64 + tx] = {expected};" in text, (expected, body_of(emitted.source))
    compiles(emitted)


INT_BINARY = [  # (op, expected when the operands' signs are unknown)
    ("arith.addi", "(int)((unsigned int)X_v + (unsigned int)Z_v)"),  # i32 wraps: C's int would overflow
    ("arith.muli", "(int)((unsigned int)X_v * (unsigned int)Z_v)"), ("arith.divsi", "X_v / Z_v"),
    ("arith.remsi", "X_v % Z_v"), ("arith.divui", "(int)((unsigned int)X_v / (unsigned int)Z_v)"),
    ("arith.remui", "(int)((unsigned int)X_v % (unsigned int)Z_v)"),
    ("arith.floordivsi", "tl_floordiv(X_v, Z_v)"), ("arith.ceildivsi", "tl_ceildiv(X_v, Z_v)"),
    ("arith.ceildivui", "(int)tl_ceildiv((unsigned int)X_v, (unsigned int)Z_v)"),
    ("arith.minsi", "min(X_v, Z_v)"), ("arith.maxui", "(int)max((unsigned int)X_v, (unsigned int)Z_v)"),
    ("arith.shli", "(int)((unsigned int)X_v << Z_v)"), ("arith.shrsi", "X_v >> Z_v"), ("arith.shrui", "(int)((unsigned int)X_v >> Z_v)"),
    ("arith.andi", "X_v & Z_v"), ("arith.xori", "X_v ^ Z_v"),
]


def test_integer_ops_keep_signed_unsigned_and_floor_semantics():
    inputs = {"X": "i32", "Z": "i32"}
    ops = "\n".join(f"      %R{i}_r = {op} %X_v, %Z_v : i32" for i, (op, _) in enumerate(INT_BINARY))
    emitted = emit_text(elementwise_module(inputs, {f"R{i}": "i32" for i in range(len(INT_BINARY))}, ops))
    text = normalized(emitted.source, "X", "Z")
    for i, (_, expected) in enumerate(INT_BINARY):
        assert f"R{i}[bx * 64 + tx] = {expected};" in text, (expected, body_of(emitted.source))
    assert "template <typename T> __device__ __forceinline__ T tl_floordiv(T a, T b)" in emitted.source
    compiles(emitted)


def test_narrow_integer_arithmetic_wraps_at_its_width():
    ops = "      %s = arith.addi %X_v, %Z_v : i8\n      %Y_r = arith.cmpi slt, %s, %X_v : i8"
    emitted = emit_text(elementwise_module({"X": "i8", "Z": "i8"}, {"Y": "i1"}, ops))
    assert "(signed char)(X_v + Z_v) < X_v" in normalized(emitted.source, "X", "Z")  # C adds in int: no wrap
    compiles(emitted)


def test_unsigned_ops_on_provably_non_negative_indices_read_as_plain_c():
    body = """
      %q = arith.ceildivui %tx, %c8 : index
      %r = arith.remui %tx, %c8 : index
      %f = arith.floordivsi %bx, %c4 : index
      %s = arith.addi %q, %r : index
      %t = arith.addi %s, %f : index
      %lt = arith.cmpi ult, %t, %c32 : index
      %v = arith.constant 1.0 : f32
      scf.if %lt {
        memref.store %v, %Y[%bx, %t] : memref<?x64xf32>
      }"""
    emitted = emit_text(kernel_module(body, [("Y", "memref<?x64xf32>")]))
    # by powers of two, shifts and masks: a C compiler cannot see that an int is non-negative, and pays a
    # rounding correction for `/` and `%` on it
    assert "int col = ((tx + 7) >> 3) + (tx & 7) + (bx >> 2);\n  if (col < 32) {" in emitted.source, body_of(
        emitted.source)
    compiles(emitted)


def test_non_negative_division_by_other_constants_and_of_unproven_signs_keep_their_forms():
    body = """
      %c6 = arith.constant 6 : index
      %q = arith.divui %tx, %c6 : index
      %r = arith.remui %tx, %c6 : index
      %d = arith.subi %tx, %c32 : index
      %h = arith.divsi %d, %c8 : index
      %s = arith.addi %q, %r : index
      %t = arith.addi %s, %h : index
      %lt = arith.cmpi ult, %t, %c32 : index
      %v = arith.constant 1.0 : f32
      scf.if %lt {
        memref.store %v, %Y[%bx, %t] : memref<?x64xf32>
      }"""
    emitted = emit_text(kernel_module(body, [("Y", "memref<?x64xf32>")]))
    # tx - 32 may be negative: C's truncating `/` is what divsi means, never an arithmetic shift (-1 >> 3 is -1)
    assert "tx / 6 + tx % 6 + (tx - 32) / 8" in emitted.source, body_of(emitted.source)
    compiles(emitted)


MATH = [
    ("math.exp", "f32", "expf(X_v)", "__expf(X_v)"), ("math.exp2", "f32", "exp2f(X_v)", "exp2f(X_v)"),
    ("math.log", "f32", "logf(X_v)", "__logf(X_v)"), ("math.log2", "f64", "log2(X_v)", "log2(X_v)"),
    ("math.sqrt", "f32", "sqrtf(X_v)", "sqrtf(X_v)"), ("math.rsqrt", "f32", "1.0f / sqrtf(X_v)", "rsqrtf(X_v)"),
    ("math.rsqrt", "f64", "1.0 / sqrt(X_v)", "rsqrt(X_v)"), ("math.tanh", "f32", "tanhf(X_v)", "tanhf(X_v)"),
    ("math.sin", "f32", "sinf(X_v)", "__sinf(X_v)"), ("math.erf", "f32", "erff(X_v)", "erff(X_v)"),
    ("math.absf", "bf16", "__habs(X_v)", "__habs(X_v)"),
    ("math.exp", "bf16", "__float2bfloat16_rn(expf(__bfloat162float(X_v)))",
     "__float2bfloat16_rn(__expf(__bfloat162float(X_v)))"),
    ("math.floor", "f32", "floorf(X_v)", "floorf(X_v)"), ("math.roundeven", "f32", "rintf(X_v)", "rintf(X_v)"),
]


@pytest.mark.parametrize("fast", [False, True], ids=["ieee", "fast"])
def test_math_functions(fast):
    inputs = {f"X{i}": elem for i, (_, elem, _, _) in enumerate(MATH)}
    ops = "\n".join(f"      %Y{i}_r = {op} %X{i}_v : {elem}" for i, (op, elem, _, _) in enumerate(MATH))
    emitted = emit_text(elementwise_module(inputs, {f"Y{i}": e for i, (_, e, _, _) in enumerate(MATH)}, ops),
                        fast_math=fast)
    text = normalized(emitted.source, *inputs)
    for i, (_, _, ieee, fast_form) in enumerate(MATH):
        expected = (fast_form if fast else ieee).replace("X_v", f"X{i}_v")
        assert f"Y{i}[bx * 64 + tx] = {expected};" in text, (expected, body_of(emitted.source))
    compiles(emitted)


def test_fma_is_explicit_and_contraction_is_off_by_default():
    ops = "      %p = arith.mulf %X_v, %Z_v : f32\n      %s = arith.addf %p, %W_v : f32\n" \
          "      %f = math.fma %X_v, %Z_v, %W_v : f32\n      %Y_r = arith.subf %s, %f : f32"
    emitted = emit_text(elementwise_module({"X": "f32", "Z": "f32", "W": "f32"}, {"Y": "f32"}, ops))
    assert "Y[bx * 64 + tx] = xv * zv + wv - fmaf(xv, zv, wv);" in emitted.source
    assert emitted.fmad is False
    ptx = compiles(emitted)
    assert ptx.count("fma.rn.f32") == 1 and "mul.rn.f32" in ptx


def test_float_constants_print_exactly():
    ops = """      %a = arith.constant 1.0e-5 : f32
      %b = arith.constant 0x7F800000 : f32
      %c = arith.constant 0xFFC00000 : f32
      %d = arith.constant -2.5 : bf16
      %e = arith.constant 0.1 : f64
      %f = arith.constant 448.0 : f8E4M3FN
      %s1 = arith.addf %X_v, %a : f32
      %s2 = arith.minimumf %s1, %b : f32
      %Y_r = arith.maximumf %s2, %c : f32
      %B_r = arith.mulf %Bi_v, %d : bf16
      %D_r = arith.addf %Di_v, %e : f64
      %F_r = arith.addf %Fi_v, %f : f8E4M3FN"""
    emitted = emit_text(elementwise_module({"X": "f32", "Bi": "bf16", "Di": "f64", "Fi": "f8E4M3FN"},
                                           {"Y": "f32", "B": "bf16", "D": "f64", "F": "f8E4M3FN"}, ops))
    text = normalized(emitted.source, "X", "Bi", "Di", "Fi")
    assert "tl_maximum(tl_minimum(X_v + 1e-05f, CUDART_INF_F), CUDART_NAN_F)" in text
    assert "Bi_v * __float2bfloat16_rn(-2.5f)" in text
    assert "Di_v + 0.1;" in text
    assert "tl_to_e4m3(float(Fi_v) + float(tl_to_e4m3(448.0f)))" in text
    compiles(emitted)


def test_float32_literals_round_trip():
    rng = random.Random(7)
    values = [struct.unpack("<f", struct.pack("<I", rng.getrandbits(32)))[0] for _ in range(2000)]
    values += [1e-45, -0.0, 3.4028234663852886e38, 1.17549435e-38, 0.1, 1 / 3]
    for value in values:
        if value != value or value in (float("inf"), float("-inf")):
            continue
        text = float32_literal(value)
        assert text.endswith("f") and any(c in text for c in ".e")
        parsed = struct.unpack("<f", struct.pack("<f", float(text[:-1])))[0]
        assert struct.pack("<f", parsed) == struct.pack("<f", value), (value, text)


# -- vectors -----------------------------------------------------------------------------------------


def test_vector_ops_compile():
    body = """
      %c16 = arith.constant 16 : index
      %buf = memref.alloca() {name = "tile"} : memref<2x64xf32, "shared">
      %regs = memref.alloca() {name = "r"} : memref<8xf32, "local">
      %col = arith.muli %tx, %c4 : index
      %v = vector.load %X[%bx, %col] : memref<?x64xf32>, vector<4xf32>
      vector.store %v, %buf[%c0, %col] : memref<2x64xf32, "shared">, vector<4xf32>
      gpu.barrier
      %w = vector.load %buf[%c0, %col] : memref<2x64xf32, "shared">, vector<4xf32>
      %e2 = vector.extract %w[2] : f32 from vector<4xf32>
      %ed = vector.extract %w[%c1] : f32 from vector<4xf32>
      %ins = vector.insert %ed, %w[0] : f32 into vector<4xf32>
      %fe = vector.from_elements %e2, %ed, %e2, %ed : vector<4xf32>
      %sum = arith.addf %ins, %fe : vector<4xf32>
      %pos = arith.cmpf ogt, %sum, %w : vector<4xf32>
      %sel = arith.select %pos, %sum, %w : vector<4xi1>, vector<4xf32>
      %mx = vector.reduction <maximumf>, %sel : vector<4xf32> into f32
      %cst = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : vector<4xf32>
      %scaled = arith.mulf %sel, %cst : vector<4xf32>
      vector.store %scaled, %regs[%c4] : memref<8xf32, "local">, vector<4xf32>
      %back = vector.load %regs[%c4] : memref<8xf32, "local">, vector<4xf32>
      %long = vector.broadcast %mx : f32 to vector<8xf32>
      %total = vector.reduction <add>, %long, %mx : vector<8xf32> into f32
      %b = vector.broadcast %total : f32 to vector<4xf32>
      %out = arith.addf %back, %b : vector<4xf32>
      vector.store %out, %Y[%bx, %col] : memref<?x64xf32>, vector<4xf32>
      %zeros = arith.constant dense<0.0> : vector<4xf32>
      vector.store %zeros, %buf[%c1, %col] : memref<2x64xf32, "shared">, vector<4xf32>"""
    emitted = emit_text(kernel_module(body, [("X", "memref<?x64xf32>"), ("Y", "memref<?x64xf32>")], threads=16))
    text = emitted.source
    assert "struct __align__(16) f32x4 { float v[4]; };" in text
    assert "int col = tx * 4;\n  f32x4 xv = *reinterpret_cast<const f32x4*>(&X[bx * 64 + col]);" in text
    assert "float (*tile)[64] = reinterpret_cast<float (*)[64]>(smem + 0);" in text
    assert "*reinterpret_cast<f32x4*>(&tile[0][col]) = xv;\n  __syncthreads();" in text
    assert "t.v[0] = tilev.v[1];" in text  # vector.insert
    assert "= {{tilev.v[2], tilev.v[1], tilev.v[2], tilev.v[1]}};" in text  # vector.from_elements
    # cmpf and select fold into one elementwise loop; a register vector load folds into its use
    assert "t3.v[e] = t2.v[e] > tilev.v[e] ? t2.v[e] : tilev.v[e];" in text
    assert "const f32x4 t5 = {{1.0f, 2.0f, 3.0f, 4.0f}};" in text
    assert "for (int e = 0; e < 4; ++e) r[4 + e] = t3.v[e] * t5.v[e];" in text
    assert "float t6 = t4;\n  #pragma unroll\n  for (int e = 0; e < 8; ++e) t6 += t4;" in text
    assert "for (int e = 0; e < 4; ++e) yv.v[e] = r[4 + e] + t6;" in text
    assert "for (int e = 0; e < 4; ++e) tilev1.v[e] = 0.0f;" in text  # a splat stored whole
    assert [p.align for p in emitted.signature.params] == [16, 16]
    assert emitted.signature.shared_bytes == 512
    ptx = compiles(emitted)
    assert "ld.global.nc.v4.f32" in ptx or "ld.global.nc.v4.u32" in ptx
    assert "st.shared.v4.f32" in ptx or "st.shared.v4.u32" in ptx


# -- control flow, memory, atomics -----------------------------------------------------------------------


def test_loop_carried_values_are_assigned_in_parallel():
    body = """
      %one = arith.constant 1.0 : f32
      %zero = arith.constant 0.0 : f32
      %a, %b = scf.for %i = %c0 to %c8 step %c1 iter_args(%x = %zero, %y = %one) -> (f32, f32) {
        %n = arith.addf %x, %y : f32
        scf.yield %y, %n : f32, f32
      } {tile.result_names = ["prev", "fib"]}
      memref.store %b, %Y[%bx, %tx] : memref<?x64xf32>
      memref.store %a, %Y[%bx, %c0] : memref<?x64xf32>"""
    emitted = emit_text(kernel_module(body, [("Y", "memref<?x64xf32>")]))
    text = emitted.source
    assert "float prev = 0.0f;" in text and "float fib = 1.0f;" in text
    assert "float prev_next = fib;" in text and "float fib_next = prev + fib;" in text
    assert "prev = prev_next;" in text and "fib = fib_next;" in text
    compiles(emitted)


def test_if_with_results_and_dynamic_loop_bounds():
    body = """
      %n = arith.index_cast %K : i32 to index
      %zero = arith.constant 0.0 : f32
      %s = scf.for %i = %tx to %n step %c64 iter_args(%acc = %zero) -> (f32) {
        %v = memref.load %X[%bx, %i] : memref<?x64xf32>
        %big = arith.cmpf ogt, %v, %zero : f32
        %r = scf.if %big -> (f32) {
          memref.store %zero, %X[%bx, %i] : memref<?x64xf32>
          scf.yield %v : f32
        } else {
          %neg = arith.negf %v : f32
          scf.yield %neg : f32
        }
        %n2 = arith.addf %acc, %r : f32
        scf.yield %n2 : f32
      }
      memref.store %s, %X[%bx, %tx] : memref<?x64xf32>"""
    emitted = emit_text(kernel_module(body, [("X", "memref<?x64xf32>"), ("K", "i32")]))
    text = emitted.source
    # K may be 2**31 - 1: the last `col += 64` would overflow an int, so the index math is 64-bit
    assert "for (long long col = tx; col < (long long)K; col += 64) {" in text, body_of(text)
    assert "float xv = X[bx * 64 + col];" in text  # not folded: the if below writes X
    assert "float t;\n    if (xv > 0.0f) {\n      X[bx * 64 + col] = 0.0f;\n      t = xv;" in text
    assert "} else {\n      t = -xv;\n    }\n    acc += t;" in text
    assert "extern \"C\" __global__ void __launch_bounds__(64) k(float* __restrict__ X, int K, long long M) {" in text
    compiles(emitted)


def test_loads_are_not_moved_across_writes_or_barriers():
    body = """
      %s = memref.alloca() {name = "s"} : memref<64xf32, "shared">
      %r = memref.alloca() {name = "r"} : memref<2xf32, "local">
      %x = memref.load %X[%bx, %tx] : memref<?x64xf32>
      %one = arith.constant 1.0 : f32
      memref.store %x, %s[%tx] : memref<64xf32, "shared">
      memref.store %one, %r[%c0] : memref<2xf32, "local">
      %before = memref.load %s[%tx] : memref<64xf32, "shared">
      %reg = memref.load %r[%c0] : memref<2xf32, "local">
      gpu.barrier
      %after = memref.load %s[%tx] : memref<64xf32, "shared">
      %sum = arith.addf %before, %after : f32
      %sum2 = arith.addf %sum, %reg : f32
      memref.store %sum2, %Y[%bx, %tx] : memref<?x64xf32>"""
    emitted = emit_text(kernel_module(body, [("X", "memref<?x64xf32>"), ("Y", "memref<?x64xf32>")]))
    text = emitted.source
    assert "s[tx] = X[bx * 64 + tx];" in text  # folded: nothing writes X in between
    assert "float sv = s[tx];\n  __syncthreads();" in text  # a shared read stays before the barrier
    assert "Y[bx * 64 + tx] = sv + s[tx] + r[0];" in text  # registers are unaffected by barriers
    compiles(emitted)


def test_guarded_select_load_becomes_a_conditional_read():
    body = """
      %col = arith.addi %tx, %c32 : index
      %ok = arith.cmpi slt, %col, %c64 : index
      %v = memref.load %X[%bx, %col] {tile.pad = 0.0 : f32} : memref<?x64xf32>
      %pad = arith.constant 0.0 : f32
      %g = arith.select %ok, %v, %pad {tile.guard} : f32
      memref.store %g, %Y[%bx, %tx] : memref<?x64xf32>"""
    emitted = emit_text(kernel_module(body, [("X", "memref<?x64xf32>"), ("Y", "memref<?x64xf32>")]))
    assert "int col = tx + 32;\n  Y[bx * 64 + tx] = col < 64 ? X[bx * 64 + col] : 0.0f;" in emitted.source
    compiles(emitted)


def test_guarded_load_with_two_uses_is_refused():
    body = """
      %v = memref.load %X[%bx, %tx] : memref<?x64xf32>
      %ok = arith.cmpi slt, %tx, %c32 : index
      %pad = arith.constant 0.0 : f32
      %g = arith.select %ok, %v, %pad {tile.guard} : f32 loc("guard.py":7:3)
      %h = arith.addf %g, %v : f32
      memref.store %h, %Y[%bx, %tx] : memref<?x64xf32>"""
    with pytest.raises(CompileError, match="guarded by an arith.select"):
        emit_text(kernel_module(body, [("X", "memref<?x64xf32>"), ("Y", "memref<?x64xf32>")]))


def test_shuffles_stay_out_of_conditional_evaluation():
    body = """
      %v = memref.load %X[%bx, %tx] : memref<?x64xf32>
      %o = arith.constant 1 : i32
      %w = arith.constant 32 : i32
      %s, %p = gpu.shuffle down %v, %o, %w : f32
      %z = arith.constant 0.0 : f32
      %ok = arith.cmpf ogt, %v, %z : f32
      %r = arith.select %ok, %s, %z : f32
      %w16 = arith.constant 16 : i32
      %u, %q = gpu.shuffle idx %v, %o, %w16 : f32
      %t = arith.addf %r, %u : f32
      memref.store %t, %Y[%bx, %tx] : memref<?x64xf32>"""
    emitted = emit_text(kernel_module(body, [("X", "memref<?x64xf32>"), ("Y", "memref<?x64xf32>")], threads=48))
    text = emitted.source
    assert "float peer = __shfl_down_sync(__activemask(), xv, 1);" in text  # 48 threads: a partial warp
    assert "(xv > 0.0f ? peer : 0.0f) + __shfl_sync(__activemask(), xv, 1, 16)" in text
    compiles(emitted)


def test_atomics_ids_and_affine_index_math():
    body = """
      %t = gpu.thread_id x
      %lane = gpu.lane_id
      %nb = gpu.block_dim x
      %i = affine.apply affine_map<(d0, d1)[s0] -> ((d0 + d1 * 64) floordiv 8 + s0 mod 4)>(%t, %bx)[%lane]
      %j = affine.apply affine_map<(d0) -> ((d0 - 70) floordiv 8)>(%t)
      %m = affine.min affine_map<(d0)[s0] -> (d0, s0 - 1)>(%i)[%nb]
      %v = arith.constant 1.0 : f32
      "tile.atomic_add"(%S, %v, %m) : (memref<64xf32>, f32, index) -> ()
      %one = arith.constant 1 : i64
      "tile.atomic_add"(%C, %one, %j) : (memref<64xi64>, i64, index) -> ()
      %h = arith.constant 1.0 : bf16
      "tile.atomic_add"(%B, %h, %c0) : (memref<64xbf16>, bf16, index) -> ()"""
    params = [("S", "memref<64xf32>"), ("C", "memref<64xi64>"), ("B", "memref<64xbf16>")]
    emitted = emit_text(kernel_module(body, params, dims=[[64], [64], [64]], symbols=(), grid="%c8"))
    text = emitted.source
    # MLIR simplifies the maps: (d0 + d1 * 64) floordiv 8 -> d0 floordiv 8 + d1 * 8, s0 - 1 -> 63
    assert "atomicAdd(&S[min((tx >> 3) + bx * 8 + ((tx % 32) & 3), 63)], 1.0f);" in text, body_of(text)
    assert "atomicAdd(reinterpret_cast<unsigned long long*>(&C[tl_floordiv(tx - 70, 8)]), " \
           "(unsigned long long)1);" in text
    assert "atomicAdd(&B[0], __float2bfloat16_rn(1.0f));" in text
    assert emitted.signature.grid == ("8", "1", "1") and emitted.signature.symbols == ()
    compiles(emitted)


def test_three_dim_tensors_linearize_with_symbolic_strides_in_64_bit():
    body = """
      %v = memref.load %X[%bx, %tx, %c2] : memref<?x?x4xf16>
      %w = arith.extf %v : f16 to f32
      memref.store %w, %Y[%tx, %bx] : memref<?x?xf32>"""
    params = [("X", "memref<?x?x4xf16>"), ("Y", "memref<?x?xf32>")]
    emitted = emit_text(kernel_module(body, params, dims=[["B", "N", 4], ["N", "B"]], symbols=("B", "N"),
                                      grid="%c8"), index_bits=64)
    text = emitted.source
    assert "Y[tx * B + bx] = __half2float(X[(bx * N + tx) * 4 + 2]);" in text
    assert "long long B,\n    long long N)" in text or "long long B, long long N)" in text
    assert emitted.signature.index_bits == 64
    compiles(emitted)


def test_shared_offsets_from_the_planner_are_honored():
    body = """
      %a = memref.alloca() {name = "a", tile.smem_offset = 256 : i64} : memref<4x8xf32, "shared">
      %b = memref.alloca() {name = "b"} : memref<3xf16, "shared">
      %c = memref.alloca() {name = "c", tile.smem_offset = 0 : i64} : memref<16xi32, "shared">
      %x = memref.load %a[%c1, %c2] : memref<4x8xf32, "shared">
      memref.store %x, %Y[%bx, %tx] : memref<?x64xf32>"""
    emitted = emit_text(kernel_module(body, [("Y", "memref<?x64xf32>")]))
    text = emitted.source
    assert "float (*a)[8] = reinterpret_cast<float (*)[8]>(smem + 256);" in text
    assert "half* b = reinterpret_cast<half*>(smem + 384);" in text
    assert "int* c = reinterpret_cast<int*>(smem + 0);" in text
    assert emitted.signature.shared_bytes == 400
    compiles(emitted)


def test_launch_dynamic_shared_memory_size_is_a_lower_bound():
    text = """
func.func @k(%Y: memref<64xf32>) attributes {tile.entry, tile.arg_names = ["Y"], tile.arg_dims = [[64]], tile.symbols = []} {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %s = arith.constant 1000 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) dynamic_shared_memory_size %s {
    %a = memref.alloca() {name = "a"} : memref<16xf32, "shared">
    gpu.terminator
  }
  return
}"""
    emitted = emit_text(text)
    assert emitted.signature.shared_bytes == 1008  # 1000 asked for, rounded up to 16
    assert "float* a = reinterpret_cast<float*>(smem + 0);" in emitted.source


def test_signature_fields():
    body = """
      %v = vector.load %X[%bx, %c0] : memref<?x64xbf16>, vector<4xbf16>
      vector.store %v, %Y[%bx, %c0] : memref<?x64xbf16>, vector<4xbf16>"""
    host = '    %cond = arith.cmpi sgt, %M, %c0 : index\n    "tile.assume"(%cond) {expr = "M % 4 == 0"} : (i1) -> ()'
    params = [("X", "memref<?x64xbf16>"), ("Y", "memref<?x64xbf16>"), ("scale", "f16"), ("n", "i64"), ("flag", "i1")]
    emitted = emit_text(kernel_module(body, params, host=host, attrs=", tile.out_idx = [1]"))
    sig = emitted.signature
    assert [(p.name, p.dtype) for p in sig.params] == [("X", "bfloat16"), ("Y", "bfloat16"), ("scale", "float16"),
                                                       ("n", "int64"), ("flag", "bool")]
    assert sig.params[0].shape == ("M", 64) and sig.params[0].align == 8 and sig.params[1].align == 8
    assert sig.assumes == ("M % 4 == 0",) and sig.out_idx == (1,)
    assert sig.cuda_params == ("X", "Y", "scale", "n", "flag", "M")
    assert "    half scale,\n    long long n,\n    bool flag,\n    int M) {" in emitted.source
    compiles(emitted)


def test_signature_records_which_tensors_the_kernel_writes():
    emitted = emit_text((LIT_DIR / "rmsnorm.mlir").read_text())
    written = {p.name: p.written for p in emitted.signature.params if hasattr(p, "written")}
    assert written == {"X": False, "W": False, "Y": True}
    assert "const __nv_bfloat16* __restrict__ X,\n    const __nv_bfloat16* __restrict__ W," in emitted.source
    assert "    __nv_bfloat16* __restrict__ Y," in emitted.source
    atomic = '      "tile.atomic_add"(%Y, %v, %bx) : (memref<?xf32>, f32, index) -> ()\n'
    body = "      %v = memref.load %X[%bx] : memref<?xf32>\n" + atomic
    emitted = emit_text(kernel_module(body, [("X", "memref<?xf32>"), ("Y", "memref<?xf32>")], dims=[["M"], ["M"]]))
    assert [p.written for p in emitted.signature.params] == [False, True]


def test_index_width_is_64_bits_for_huge_static_tensors():
    body = "      %v = memref.load %X[%bx] : memref<2147483648xi8>\n      memref.store %v, %X[%tx] : memref<2147483648xi8>"
    emitted = emit_text(kernel_module(body, [("X", "memref<2147483648xi8>")], dims=[[2147483648]], symbols=(),
                                      grid="%c8"))
    assert emitted.signature.index_bits == 64 and "const long long bx = blockIdx.x;" in emitted.source


def test_names_are_scoped_and_never_shadow():
    body = """
      %zero = arith.constant 0.0 : f32
      scf.for %i = %c0 to %c4 step %c1 {
        %x = memref.load %X[%bx, %i] : memref<?x64xf32>
        memref.store %x, %Y[%bx, %i] : memref<?x64xf32>
      }
      scf.for %i = %c0 to %c4 step %c1 {
        scf.for %j = %c0 to %c2 step %c1 {
          %k = arith.addi %i, %j : index
          memref.store %zero, %Y[%k, %tx] : memref<?x64xf32>
        } {tile.name = "float"}
      } {tile.name = "i"}"""
    emitted = emit_text(kernel_module(body, [("X", "memref<?x64xf32>"), ("Y", "memref<?x64xf32>")]))
    text = emitted.source
    assert text.count("for (int col = 0; col < 4; ++col)") == 1
    assert "for (int i = 0; i < 4; ++i) {" in text
    assert "for (int float1 = 0; float1 < 2; ++float1) {" in text  # a C++ keyword is not a name
    compiles(emitted)


def test_names_never_hide_cuda_or_math_functions():
    body = """
      %b = memref.alloca() {name = "expf"} : memref<4xf32, "local">
      %v = memref.load %X[%bx, %tx] : memref<?x64xf32>
      %e = math.exp %v : f32
      memref.store %e, %b[%c0] : memref<4xf32, "local">
      %w = memref.load %b[%c0] : memref<4xf32, "local">
      memref.store %w, %X[%bx, %tx] : memref<?x64xf32>"""
    emitted = emit_text(kernel_module(body, [("X", "memref<?x64xf32>"), ("threadIdx", "f32")], name="max"))
    text = emitted.source
    assert "void __launch_bounds__(64) max_kernel(float* __restrict__ X, float threadIdx1, int M)" in text
    assert emitted.signature.name == "max_kernel" and emitted.signature.cuda_params[1] == "threadIdx"
    assert "float expf1[4];" in text and "expf1[0] = expf(X[bx * 64 + tx]);" in text
    compiles(emitted)


def test_source_line_comments_follow_the_python_lines():
    locs = '#a = loc("/home/u/kern.py":5:4)\n#b = loc("/home/u/kern.py":6:4)'
    body = """
      %v = memref.load %X[%bx, %tx] : memref<?x64xf32> loc(#a)
      %w = arith.mulf %v, %v : f32 loc(#a)
      memref.store %w, %Y[%bx, %tx] : memref<?x64xf32> loc(#a)
      %z = arith.constant 0.0 : f32
      memref.store %z, %X[%bx, %tx] : memref<?x64xf32> loc(#b)"""
    emitted = emit_text(kernel_module(body, [("X", "memref<?x64xf32>"), ("Y", "memref<?x64xf32>")], locs=locs))
    assert "  // kern.py:5\n  float xv = X[bx * 64 + tx];\n  Y[bx * 64 + tx] = xv * xv;\n\n  // kern.py:6\n" \
           "  X[bx * 64 + tx] = 0.0f;" in emitted.source, body_of(emitted.source)


# -- grids ----------------------------------------------------------------------------------------------

GRIDS = [  # (host IR computing %g from %M and the i32 scalar %K, expected text, reference over (M, K))
    ("%g = arith.ceildivui %M, %c4 : index", "(M + 3) // 4", lambda m, k: -(-m // 4)),
    ("%a = arith.muli %M, %c2 : index\n    %g = arith.subi %a, %c1 : index", "M * 2 - 1", lambda m, k: 2 * m - 1),
    ("%k = arith.index_cast %K : i32 to index\n    %g = arith.ceildivsi %M, %k : index", "-(-M // K)",
     lambda m, k: -(-m // k)),
    ("%a = arith.subi %M, %c8 : index\n    %g = arith.floordivsi %a, %c4 : index", "(M - 8) // 4",
     lambda m, k: (m - 8) // 4),
    ("%a = arith.divui %M, %c8 : index\n    %r = arith.remui %M, %c8 : index\n    %g = arith.addi %a, %r : index",
     "M // 8 + M % 8", lambda m, k: m // 8 + m % 8),
    ("%k = arith.index_cast %K : i32 to index\n    %g = arith.minsi %M, %k : index", "min(M, K)",
     lambda m, k: min(m, k)),
    ("%g = affine.apply affine_map<(d0)[s0] -> ((d0 + s0) ceildiv 16 + d0 mod 3)>(%M)[%c8]",
     "-(-(M + 8) // 16) + M % 3", lambda m, k: -(-(m + 8) // 16) + m % 3),
    ("%g = arith.addi %c4, %c8 : index", "12", lambda m, k: 12),
]


@pytest.mark.parametrize("host,expected,reference", GRIDS, ids=[g[1] for g in GRIDS])
def test_grid_expressions_are_exact(host, expected, reference):
    body = "      %v = arith.constant 0.0 : f32\n      memref.store %v, %Y[%bx, %tx] : memref<?x64xf32>"
    module = kernel_module(body, [("Y", "memref<?x64xf32>"), ("K", "i32")], host=f"    {host}", grid="%g")
    emitted = emit_text(module)
    assert emitted.signature.grid[0] == expected
    closure = Expr(expected).closure({"M": 0, "K": 1})
    rng = random.Random(expected)
    for _ in range(200):
        m, k = rng.randint(1, 10**6), rng.randint(1, 300)
        assert closure([m, k]) == reference(m, k), (m, k)


def test_grid_with_truncating_division_of_a_signed_value_is_refused():
    body = "      %v = arith.constant 0.0 : f32\n      memref.store %v, %Y[%bx, %tx] : memref<?x64xf32>"
    host = "    %k = arith.index_cast %K : i32 to index\n    %g = arith.divsi %M, %k : index loc(\"grid.py\":3:9)"
    with pytest.raises(CompileError, match=r"grid.py:3:9: error: 'arith.divsi' in a grid extent"):
        emit_text(kernel_module(body, [("Y", "memref<?x64xf32>"), ("K", "i32")], host=host, grid="%g"))


def test_grid_values_used_inside_the_kernel_are_computed_once_at_the_top():
    host = "    %tiles = arith.ceildivui %M, %c8 : index"
    body = """
      %zero = arith.constant 0.0 : f32
      scf.for %i = %bx to %tiles step %c1 {
        memref.store %zero, %Y[%i, %tx] : memref<?x64xf32>
      }"""
    emitted = emit_text(kernel_module(body, [("Y", "memref<?x64xf32>")], host=host, grid="%tiles"))
    assert "const int row = (M + 7) >> 3;" in emitted.source or "const int idx = (M + 7) >> 3;" in emitted.source
    assert emitted.signature.grid[0] == "(M + 7) // 8"


# -- errors --------------------------------------------------------------------------------------------


def test_an_unlowered_gemm_is_a_located_error():
    body = """
      %a = memref.alloca() : memref<16x16xf16, "shared">
      %b = memref.alloca() : memref<16x16xf16, "shared">
      %c = memref.alloca() : memref<16x16xf32, "fragment">
      "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false} : (memref<16x16xf16, "shared">, memref<16x16xf16, "shared">, memref<16x16xf32, "fragment">) -> () loc("mm.py":12:8)"""
    with pytest.raises(CompileError, match=r"mm.py:12:8: error: tile.gemm must be lowered before CUDA emission \(run lower-gemm-simt"):
        emit_text(kernel_module(body, [("Y", "memref<?x64xf32>")]))


@pytest.mark.parametrize("body,message", [
    ('      %v = math.ctlz %c4 : index loc("u.py":4:2)', r"u.py:4:2: error: 'math.ctlz' .*not supported"),
    ('      "tile.fill"(%r, %z) : (memref<4xf32, "local">, f32) -> () loc("u.py":5:2)',
     r"u.py:5:2: error: 'tile.fill' must be lowered before CUDA emission"),
    ('      %q = memref.alloca() : memref<4xf32, "fragment"> loc("u.py":6:2)',
     r"u.py:6:2: error: 'memref.alloca' in memory space \"fragment\""),
    ('      %o = arith.constant 1 : i32\n      %b = arith.constant 1.0 : f8E4M3FN\n'
     '      %s, %p = gpu.shuffle xor %b, %o, %o : f8E4M3FN loc("u.py":7:2)', r"u.py:7:2: error: gpu.shuffle of f8E4M3FN"),
    ('      %v = memref.load %Y[%bx, %tx] : memref<?x64xf32>\n'
     '      %s = memref.subview %Y[0, 0][1, 4][1, 1] : memref<?x64xf32> to memref<1x4xf32, strided<[64, 1]>> loc("u.py":8:2)',
     r"u.py:8:2: error: 'memref.subview' is not supported"),
])
def test_unsupported_ops_are_located_errors(body, message):
    prefix = '      %r = memref.alloca() : memref<4xf32, "local">\n      %z = arith.constant 0.0 : f32\n'
    with pytest.raises(CompileError, match=message):
        emit_text(kernel_module(prefix + body, [("Y", "memref<?x64xf32>")]))


def test_tile_level_input_is_refused():
    text = """
module {
  func.func @k(%Y: memref<64xf32>) attributes {tile.entry, tile.arg_names = ["Y"], tile.arg_dims = [[64]], tile.symbols = []} {
    %c1 = arith.constant 1 : index
    "tile.kernel"(%c1) ({
    ^bb0(%bx: index):
      "tile.yield"() : () -> ()
    }) {threads = 128 : i64} : (index) -> () loc("t.py":3:4)
    return
  }
}"""
    with pytest.raises(CompileError, match=r"t.py:3:4: error: tile.kernel is still present"):
        emit_text(text)


def test_module_without_a_kernel_is_refused():
    with pytest.raises(CompileError, match="exactly one func.func marked tile.entry, found 0"):
        emit_text("module {}")
    with pytest.raises(CompileError, match="index_bits must be 32, 64 or None"):
        emit_text(kernel_module("", [("Y", "memref<?x64xf32>")]), index_bits=16)


def test_command_line_tool(tmp_path):
    good = tmp_path / "good.mlir"
    good.write_text(kernel_module("      %v = arith.constant 2.0 : f32\n"
                                  "      memref.store %v, %Y[%bx, %tx] : memref<?x64xf32>", [("Y", "memref<?x64xf32>")]))
    run = [sys.executable, "-m", "tilemlir.emit_cuda"]
    source = subprocess.run([*run, str(good)], capture_output=True, text=True, check=True).stdout
    assert "Y[bx * 64 + tx] = 2.0f;" in source
    signature = json.loads(subprocess.run([*run, str(good), "--signature"], capture_output=True, text=True,
                                          check=True).stdout)
    assert signature["params"][0] == {"kind": "tensor", "name": "Y", "dtype": "float32", "shape": ["M", 64], "align": 4,
                                      "written": True}
    bad = tmp_path / "bad.mlir"
    bad.write_text(kernel_module('      %v = math.ctlz %c4 : index loc("b.py":2:3)', [("Y", "memref<?x64xf32>")]))
    result = subprocess.run([*run, str(bad)], capture_output=True, text=True)
    assert result.returncode == 1 and "b.py:2:3: error: 'math.ctlz'" in result.stderr and "Traceback" not in result.stderr
    garbage = tmp_path / "garbage.mlir"
    garbage.write_text("func.func @f( {")
    result = subprocess.run([*run, str(garbage)], capture_output=True, text=True)
    assert result.returncode == 1 and "error" in result.stderr and "Traceback" not in result.stderr


def test_min_blocks_becomes_the_second_launch_bound():
    """T.Kernel(min_blocks=4) reaches __launch_bounds__ and, through it, ptxas (.minnctapersm)."""
    import tilemlir
    import tilemlir.language as T

    M = T.symbolic("M")

    @T.prim_func
    def rows(X: T.Tensor((M, 512), "float32"), Y: T.Tensor((M, 512), "float32")):
        with T.Kernel(M, threads=128, min_blocks=4) as row:
            x = T.alloc_fragment((512,), "float32")
            T.copy(X[row, 0], x)
            T.copy(x, Y[row, 0])

    emitted = emit_text(str(tilemlir.lower(rows, "final")))
    assert 'extern "C" __global__ void __launch_bounds__(128, 4) rows(' in emitted.source
    ptx = compiles(emitted)
    assert ".maxntid 128, 1, 1" in ptx and ".minnctapersm 4" in ptx


FP8_SCALAR_KERNEL = """
    @tilemlir.jit
    def k(X: T.Tensor((M,), T.float32), @@n: {dtype}):
        with T.Kernel(M, threads=128) as bx:
            X[bx] = 1.0
"""


@pytest.mark.parametrize("dtype, name", [("T.float8_e4m3", "float8_e4m3"), ('"float8_e5m2"', "float8_e5m2")])
def test_an_fp8_scalar_parameter_is_an_error_at_the_parameter(tmp_path, dtype, name):
    """Found by test_fuzz_dsl_mistakes: the emitter's 'the kernel signature of k is invalid' had no location."""
    source = FP8_SCALAR_KERNEL.format(dtype=dtype)
    assert message(compile_error(tmp_path, source, target="cuda")) == (
        f"scalar parameter 'n' cannot be {name}: a kernel argument has no {name} type; pass it as float32 and "
        "convert with T.cast")
