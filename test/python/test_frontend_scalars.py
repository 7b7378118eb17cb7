"""Run the element code the frontend emits (frontend.scalars) through LLVM and check its numeric semantics.

Each case builds a scalar `func.func` with the same functions the frontend
uses for kernel expressions, JIT-compiles it with the CPU backend's LLVM
path, and compares with Python's semantics on a grid of inputs
(docs/language.md: floor division and modulo like Python, float-to-int
truncation, NaN rules).
"""

from __future__ import annotations

import ctypes
import math

import numpy as np
import pytest

from tilemlir import language as T
from tilemlir.backends.cpu.jit import JitModule, to_llvm_ir
from tilemlir.frontend import scalars
from tilemlir.frontend.types import INDEX, mlir_type
from tilemlir.frontend.values import Scalar
from tilemlir.mlir import func, ir, make_context

_CTYPES = {"int32": ctypes.c_int32, "index": ctypes.c_int64, "uint8": ctypes.c_uint8, "int8": ctypes.c_int8,
           "float32": ctypes.c_float, "float64": ctypes.c_double, "bool": ctypes.c_bool, "int64": ctypes.c_int64}


def jit_scalar_function(arg_dtypes, result_dtype, body):
    """A callable running `body(*scalars)` compiled for the host CPU (kept alive with its engine)."""
    with make_context(), ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            function = func.FuncOp(
                "f", ir.FunctionType.get([mlir_type(d) for d in arg_dtypes], [mlir_type(result_dtype)])
            )
            entry = function.add_entry_block()
            with ir.InsertionPoint(entry):
                result = body(*[Scalar(a, d) for a, d in zip(entry.arguments, arg_dtypes)])
                assert result.dtype == result_dtype, result.dtype
                func.ReturnOp([result.value])
        engine = JitModule(to_llvm_ir(module))
    prototype = ctypes.CFUNCTYPE(_CTYPES[result_dtype.name], *[_CTYPES[d.name] for d in arg_dtypes])
    call = prototype(engine.address("f"))
    call.engine = engine
    return call


SIGNED_PAIRS = [(a, b) for a in range(-9, 10) for b in (-4, -3, -1, 1, 2, 3, 5)]


@pytest.mark.parametrize("dtype", [T.int32, INDEX])
@pytest.mark.parametrize("op", ["//", "%"])
def test_signed_floor_division_and_modulo_match_python(dtype, op):
    run = jit_scalar_function([dtype, dtype], dtype, lambda a, b: scalars.binary(op, a, b))
    python = (lambda a, b: a // b) if op == "//" else (lambda a, b: a % b)
    assert [run(a, b) for a, b in SIGNED_PAIRS] == [python(a, b) for a, b in SIGNED_PAIRS]


def test_unsigned_division_and_modulo():
    pairs = [(a, b) for a in (0, 1, 7, 128, 200, 255) for b in (1, 3, 16, 255)]
    div = jit_scalar_function([T.uint8, T.uint8], T.uint8, lambda a, b: scalars.binary("//", a, b))
    mod = jit_scalar_function([T.uint8, T.uint8], T.uint8, lambda a, b: scalars.binary("%", a, b))
    assert [div(a, b) for a, b in pairs] == [a // b for a, b in pairs]
    assert [mod(a, b) for a, b in pairs] == [a % b for a, b in pairs]


@pytest.mark.parametrize("op", ["//", "%"])
def test_float_floor_division_and_modulo_match_python(op):
    values = [(-7.5, 2.0), (7.5, -2.0), (-7.5, -2.0), (7.25, 2.0), (0.5, 0.125), (-1e-3, 1.0)]
    run = jit_scalar_function([T.float64, T.float64], T.float64, lambda a, b: scalars.binary(op, a, b))
    python = (lambda a, b: a // b) if op == "//" else (lambda a, b: a % b)
    assert [run(a, b) for a, b in values] == [python(a, b) for a, b in values]


def test_ceildiv_on_index_values():
    run = jit_scalar_function([INDEX, INDEX], INDEX, scalars.ceildiv)
    assert [run(n, 4) for n in (0, 1, 4, 5, 4097)] == [0, 1, 1, 2, 1025]


def test_float_to_int_truncates_toward_zero():
    run = jit_scalar_function([T.float32], T.int32, lambda x: scalars.convert(x, T.int32))
    assert [run(v) for v in (-2.7, -0.5, 0.5, 2.7, 100.99)] == [-2, 0, 0, 2, 100]


def test_integer_conversions_respect_signedness():
    widen_signed = jit_scalar_function([T.int8], T.int32, lambda x: scalars.convert(x, T.int32))
    widen_unsigned = jit_scalar_function([T.uint8], T.int32, lambda x: scalars.convert(x, T.int32))
    to_float = jit_scalar_function([T.uint8], T.float32, lambda x: scalars.convert(x, T.float32))
    index_to_float = jit_scalar_function([INDEX], T.float32, lambda x: scalars.convert(x, T.float32))
    assert [widen_signed(v) for v in (-128, -5, 0, 127)] == [-128, -5, 0, 127]
    assert [widen_unsigned(v) for v in (0, 5, 200, 255)] == [0, 5, 200, 255]
    assert [to_float(v) for v in (0, 200, 255)] == [0.0, 200.0, 255.0]
    assert [index_to_float(v) for v in (-3, 0, 1 << 20)] == [-3.0, 0.0, float(1 << 20)]


def test_comparisons_with_nan():
    nan = float("nan")
    for op, on_nan, on_two_one in [("!=", True, True), ("==", False, False), ("<", False, False), (">=", False, True)]:
        run = jit_scalar_function([T.float32, T.float32], T.bool, lambda a, b, op=op: scalars.compare(op, a, b))
        assert (run(nan, 1.0), run(2.0, 1.0)) == (on_nan, on_two_one), op


def test_max_and_min_propagate_nan():
    nan = float("nan")
    maximum = jit_scalar_function([T.float32, T.float32], T.float32, lambda a, b: scalars.extremum("max", [a, b]))
    minimum = jit_scalar_function([T.float32, T.float32], T.float32, lambda a, b: scalars.extremum("min", [a, b]))
    assert math.isnan(maximum(nan, 1.0)) and math.isnan(maximum(1.0, nan))
    assert math.isnan(minimum(nan, 1.0)) and minimum(-3.0, 2.0) == -3.0 and maximum(-3.0, 2.0) == 2.0
    signed = jit_scalar_function([T.int32, T.int32], T.int32, lambda a, b: scalars.extremum("max", [a, b]))
    assert signed(-5, 3) == 3


def test_math_functions_against_numpy():
    rng = np.random.default_rng()
    xs = rng.uniform(0.1, 4.0, 16)
    references = {
        "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
        "rsqrt": lambda v: 1 / np.sqrt(v), "tanh": np.tanh, "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
        "floor": np.floor, "ceil": np.ceil, "abs": np.abs,
        "erf": lambda v: np.array([math.erf(t) for t in v]),
    }
    for name, reference in references.items():
        run = jit_scalar_function([T.float64], T.float64, lambda x, name=name: scalars.unary_function(name, x))
        got = np.array([run(float(v)) for v in xs])
        assert np.linalg.norm(got - reference(xs)) / np.linalg.norm(reference(xs)) < 1e-12, name


def test_python_modulo_with_a_literal_divisor():
    run = jit_scalar_function([T.int32], T.int32, lambda a: scalars.binary("%", a, 4))
    assert [run(a) for a in range(-6, 7)] == [a % 4 for a in range(-6, 7)]
