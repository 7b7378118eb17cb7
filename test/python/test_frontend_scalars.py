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
import textwrap

import numpy as np
import pytest

import tilemlir
from frontend_util import frontend_error, load_module, message
from tilemlir import language as T
from tilemlir.backends.cpu.jit import JitModule, to_llvm_ir
from tilemlir.context import make_context
from tilemlir.frontend import scalars
from tilemlir.frontend.types import INDEX, mlir_type
from tilemlir.frontend.values import Scalar
from tilemlir.mlir import func, ir

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


# the usual math set beyond the first functions: (name, numpy reference, domain)
MORE_MATH = {
    "sin": (np.sin, -6, 6), "cos": (np.cos, -6, 6), "tan": (np.tan, -1.4, 1.4), "asin": (np.arcsin, -0.99, 0.99),
    "acos": (np.arccos, -0.99, 0.99), "atan": (np.arctan, -8, 8), "sinh": (np.sinh, -4, 4), "cosh": (np.cosh, -4, 4),
    "asinh": (np.arcsinh, -8, 8), "acosh": (np.arccosh, 1.01, 8), "atanh": (np.arctanh, -0.99, 0.99),
    "log10": (np.log10, 0.01, 100), "log1p": (np.log1p, -0.9, 4), "expm1": (np.expm1, -2, 2),
    "cbrt": (np.cbrt, -27, 27), "erfc": (np.vectorize(math.erfc), -3, 3), "trunc": (np.trunc, -9, 9),
    "round": (lambda v: np.copysign(np.floor(np.abs(v) + 0.5), v), -9, 9),
}


@pytest.mark.parametrize("name", sorted(MORE_MATH))
def test_more_math_functions_against_numpy(name):
    reference, lo, hi = MORE_MATH[name]
    xs = np.random.default_rng().uniform(lo, hi, 32)
    if name in ("round", "trunc"):
        xs[:6] = [-2.5, -0.5, 0.5, 1.5, 2.5, -1.0]  # halves round away from zero, as C's round
    run = jit_scalar_function([T.float64], T.float64, lambda x: scalars.unary_function(name, x))
    got, want = np.array([run(float(v)) for v in xs]), reference(xs)
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-12, (name, got, want)
    if name in ("round", "trunc"):
        assert np.array_equal(got, want)
        whole = jit_scalar_function([T.int32], T.int32, lambda x: scalars.unary_function(name, x))
        assert [whole(v) for v in (-7, 0, 9)] == [-7, 0, 9]  # an integer is its own rounding


def test_atan2_covers_every_quadrant_and_refuses_bools():
    points = [(1.0, 2.0), (1.0, -2.0), (-1.0, -2.0), (-1.0, 2.0), (0.0, -1.0), (3.0, 0.0)]
    run = jit_scalar_function([T.float64, T.float64], T.float64, lambda y, x: scalars.atan2(y, x))
    assert [run(y, x) for y, x in points] == pytest.approx([math.atan2(y, x) for y, x in points], rel=1e-15)
    mixed = jit_scalar_function([T.int32], T.float32, lambda y: scalars.atan2(y, 2))
    assert mixed(-3) == pytest.approx(math.atan2(-3, 2), rel=1e-6)
    with pytest.raises(Exception, match="not defined on a bool operand"):
        jit_scalar_function([T.bool], T.float32, lambda b: scalars.atan2(b, 1.0))


@tilemlir.jit(out_idx=[-1])
def _more_math_kernel(name):
    fn = getattr(T, name)

    @T.prim_func
    def more_math(X: T.Tensor((256,), "float32"), Y: T.Tensor((256,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(256):
                Y[i] = fn(X[i]) + T.round(2.5) * T.trunc(-0.75)  # folded at compile time: 3 * -0 = -0
    return more_math


_C_NAMES = {"sin": "sinf", "cos": "cosf", "tan": "tanf", "asin": "asinf", "acos": "acosf", "atan": "atanf",
            "sinh": "sinhf", "cosh": "coshf", "asinh": "asinhf", "acosh": "acoshf", "atanh": "atanhf",
            "log10": "log10f", "log1p": "log1pf", "expm1": "expm1f", "cbrt": "cbrtf", "erfc": "erfcf",
            "round": "roundf", "trunc": "truncf"}


@pytest.mark.parametrize("name", sorted(MORE_MATH))
def test_more_math_functions_in_kernels_on_both_targets(name):
    """On the CPU target's thread level against float64 numpy (float32 in and out), and through NVRTC."""
    reference, lo, hi = MORE_MATH[name]
    x = np.random.default_rng().uniform(lo, hi, 256).astype(np.float32)
    y = _more_math_kernel.instantiate(name).compile("cpu", level="thread")(x)
    want = reference(x.astype(np.float64))
    assert np.linalg.norm(y - want) / np.linalg.norm(want) < 2e-6, name
    source = _more_math_kernel.instantiate(name).compile("cuda", arch="sm_90a").cuda_source()
    assert f"{_C_NAMES[name]}(" in source


def test_python_modulo_with_a_literal_divisor():
    run = jit_scalar_function([T.int32], T.int32, lambda a: scalars.binary("%", a, 4))
    assert [run(a) for a in range(-6, 7)] == [a % 4 for a in range(-6, 7)]


# -- compile-time numbers in kernels: numpy scalars fold as the Python numbers they hold ----------------------

# The same constants as module-level numpy scalars and as Python numbers (F is float32's nearest to 0.1).
NUMPY_CONSTANTS = ("I = np.int64(7)\nJ = np.int32(-3)\nU = np.uint8(250)\nF = np.float32(0.1)\nD = np.float64(2.5)\n"
                   "H = np.float16(0.5)\nB = np.True_\nZ = np.int64(0)\n")
PYTHON_CONSTANTS = "I = 7\nJ = -3\nU = 250\nF = 0.10000000149011612\nD = 2.5\nH = 0.5\nB = True\nZ = 0\n"
C = dict(I=7, J=-3, U=250, F=float(np.float32(0.1)), D=2.5, H=0.5, B=True)

# (kernel expression over the constants, run-time int32 x and float32 y; the value Python / numpy gives)
INT_FOLDS = [
    ("I // J", lambda x, y: C["I"] // C["J"]),
    ("I % J", lambda x, y: C["I"] % C["J"]),
    ("J ** 3", lambda x, y: C["J"] ** 3),
    ("U + U", lambda x, y: C["U"] + C["U"]),  # a Python int: 500, where numpy's uint8 wraps to 244
    ("U * U - I", lambda x, y: C["U"] * C["U"] - C["I"]),
    ("I << 3", lambda x, y: C["I"] << 3),
    ("-J", lambda x, y: -C["J"]),
    ("~I", lambda x, y: ~C["I"]),
    ("T.max(I, J, U)", lambda x, y: max(C["I"], C["J"], C["U"])),
    ("abs(J)", lambda x, y: abs(C["J"])),
    ("I * B - B", lambda x, y: C["I"] * C["B"] - C["B"]),
    ("T.ceildiv(I, 2)", lambda x, y: -(-C["I"] // 2)),
    ("x + I", lambda x, y: x + np.int32(C["I"])),
    ("x // J", lambda x, y: x // np.int32(C["J"])),
    ("x % U", lambda x, y: x % np.int32(C["U"])),
]
FLOAT_FOLDS = [
    ("F * 3", lambda x, y: C["F"] * 3),
    ("I / J", lambda x, y: C["I"] / C["J"]),
    ("D ** 0.5", lambda x, y: C["D"] ** 0.5),
    ("T.max(F, D)", lambda x, y: max(C["F"], C["D"])),
    ("T.floor(D)", lambda x, y: math.floor(C["D"])),
    ("F + H", lambda x, y: C["F"] + C["H"]),
    ("T.fma(F, D, H)", lambda x, y: C["F"] * C["D"] + C["H"]),
    ("T.fma(I, J, 0.5)", lambda x, y: C["I"] * C["J"] + 0.5),
    ("T.exp(H)", lambda x, y: math.exp(C["H"])),
    ("y * F", lambda x, y: y * np.float32(C["F"])),
    ("y + D", lambda x, y: y + np.float32(C["D"])),
    ("T.max(y, H)", lambda x, y: np.maximum(y, np.float32(C["H"]))),
]


def folds_kernel(tmp_path, constants):
    int_rows = "\n".join(f"                    OI[{k}, n] = {e}" for k, (e, _) in enumerate(INT_FOLDS))
    float_rows = "\n".join(f"                    OF[{k}, n] = {e}" for k, (e, _) in enumerate(FLOAT_FOLDS))
    module = load_module(tmp_path, "import numpy as np\n" + constants + textwrap.dedent(f"""
        @tilemlir.jit
        def folds(X: T.Tensor((N,), T.int32), Y: T.Tensor((N,), T.float32),
                  OI: T.Tensor(({len(INT_FOLDS)}, N), T.int32), OF: T.Tensor(({len(FLOAT_FOLDS)}, N), T.float32)):
            with T.Kernel(T.ceildiv(N, 64), threads=64) as bx:
                for i in T.Parallel(64):
                    n = bx * 64 + i
                    x = X[n]
                    y = Y[n]
{int_rows}
{float_rows}
    """))
    return module.folds


@pytest.mark.parametrize("level", ["tile", "thread"])
def test_numpy_scalar_constants_fold_as_python_numbers(tmp_path, rng, level):
    """Module-level np.int64 / np.uint8 / np.float32 / np.bool_ constants give the kernel exactly what the
    same Python numbers give, which is Python's arithmetic (U + U is 500, not uint8's 244)."""
    n = 200
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    y = (rng.random(n) * 4 - 2).astype(np.float32)
    want_i = np.stack([np.broadcast_to(np.asarray(ref(x, y), dtype=np.int64), (n,)) for _, ref in INT_FOLDS])
    want_f = np.stack([np.broadcast_to(np.asarray(ref(x, y), dtype=np.float64), (n,)) for _, ref in FLOAT_FOLDS])
    outputs = {}
    for spelling, constants in (("numpy", NUMPY_CONSTANTS), ("python", PYTHON_CONSTANTS)):
        kernel = tilemlir.compile(folds_kernel(tmp_path, constants), target="cpu", level=level)
        oi, of = np.full(want_i.shape, -77, np.int32), np.full(want_f.shape, np.nan, np.float32)
        kernel(x, y, oi, of)
        for k, (expr, _) in enumerate(INT_FOLDS):
            assert np.array_equal(oi[k], want_i[k]), (spelling, expr, oi[k][:4], want_i[k][:4])
        for k, (expr, _) in enumerate(FLOAT_FOLDS):
            error = np.linalg.norm(of[k] - want_f[k]) / np.linalg.norm(want_f[k])
            assert error < 1e-6, (spelling, expr, error)
        outputs[spelling] = (oi, of)
    assert np.array_equal(outputs["numpy"][0], outputs["python"][0])
    assert np.array_equal(outputs["numpy"][1], outputs["python"][1])


FOLD_ERRORS = [
    ("@@I // Z", "compile-time 7 // 0 failed: ZeroDivisionError: integer division or modulo by zero"),
    ("@@J << -Z - 1", "compile-time -3 << -1 failed: ValueError: negative shift count"),
    ("@@T.ceildiv(I, Z)", "T.ceildiv by zero"),
    ("@@T.fma(I, J, U)", "T.fma needs float operands, got int32: convert them first, e.g. T.cast(x, T.float32)"),
    ("@@T.fma(B, J, 2)", "T.fma needs float operands, got int32: convert them first, e.g. T.cast(x, T.float32)"),
]


@pytest.mark.parametrize("expression, expected", FOLD_ERRORS, ids=[e for e, _ in FOLD_ERRORS])
def test_numpy_scalar_constants_fail_as_python_numbers(tmp_path, expression, expected):
    """A fold that fails on Python numbers fails with the same located error on numpy scalars (numpy itself
    would give np.int64(7) // 0 == 0 with a warning)."""
    for constants in (NUMPY_CONSTANTS, PYTHON_CONSTANTS):
        err = frontend_error(tmp_path, "import numpy as np\n" + constants + textwrap.dedent(f"""
            @tilemlir.jit
            def k(O: T.Tensor((M,), T.float32)):
                with T.Kernel(M, threads=32) as bx:
                    O[bx] = T.cast({expression}, T.float32)
        """))
        assert message(err) == expected, constants


# -- T.fma: float operands only, at compile time as at run time ------------------------------------------------

FMA_REFUSED = [
    ("@@T.fma(2, 3, 4)", "p: T.float32"),
    ("@@T.fma(True, 3, 4)", "p: T.float32"),
    ("@@T.fma(p, 3, 4)", "p: T.int32"),
    ("@@T.fma(2, p, 4)", "p: T.int32"),
    ("@@T.fma(p, p, True)", "p: T.int32"),
]


@pytest.mark.parametrize("expression, parameter", FMA_REFUSED, ids=[f"{e}-{p}" for e, p in FMA_REFUSED])
def test_fma_on_integers_is_a_located_error_at_compile_time_too(tmp_path, expression, parameter):
    """T.fma(2, 3, 4) does not fold to 10: integer operands are refused as they are for a run-time int32."""
    err = frontend_error(tmp_path, f"""
        @tilemlir.jit
        def k({parameter}, O: T.Tensor((M,), T.float32)):
            with T.Kernel(M, threads=32) as bx:
                O[bx] = T.cast({expression}, T.float32)
    """)
    assert message(err) == "T.fma needs float operands, got int32: convert them first, e.g. T.cast(x, T.float32)"


@pytest.mark.parametrize("level", ["tile", "thread"])
def test_fma_with_a_float_operand_folds_and_computes(tmp_path, rng, level):
    """One float among int operands makes T.fma a float fma, folded at compile time or computed at run time."""
    module = load_module(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((N,), T.int32), O: T.Tensor((3, N), T.float32)):
            with T.Kernel(T.ceildiv(N, 64), threads=64) as bx:
                for i in T.Parallel(64):
                    n = bx * 64 + i
                    O[0, n] = T.fma(2, 3, 0.5)
                    O[1, n] = T.fma(X[n], 3, 0.25)
                    O[2, n] = T.fma(-1.5, X[n], X[n])
    """)
    kernel = tilemlir.compile(module.k, target="cpu", level=level)
    x = rng.integers(-1000, 1000, 100).astype(np.int32)
    out = np.full((3, 100), np.nan, np.float32)
    kernel(x, out)
    xf = x.astype(np.float64)
    want = np.stack([np.full(100, 6.5), xf * 3 + 0.25, -1.5 * xf + xf])
    assert np.linalg.norm(out - want) / np.linalg.norm(want) < 1e-6


# -- integer division by a zero known at compile time: a located error; floats follow IEEE ------------------

ZERO = ("integer division by zero: the divisor is 0 at compile time (Python raises ZeroDivisionError; the GPU "
        "would give an arbitrary number)")
MODULO_ZERO = ZERO.replace("integer division", "integer modulo")

DIVISIONS_BY_ZERO = [
    ("@@X[bx, j] // 0", ZERO),
    ("@@X[bx, j] % 0", MODULO_ZERO),
    ("@@X[bx, j] // Z", ZERO),
    ("@@X[bx, j] // (W - W)", ZERO),
    ("@@X[bx, j] // T.int32(0)", ZERO),
    ("@@X[bx, j] % T.cast(0, T.int8)", MODULO_ZERO),
    ("@@U[bx, j] // 0", ZERO),
    ("@@U[bx, j] % Z", MODULO_ZERO),
    ("@@j // 0", ZERO),
    ("@@T.ceildiv(X[bx, j], 0)", "T.ceildiv by zero"),
]


@pytest.mark.parametrize("expression, expected", DIVISIONS_BY_ZERO, ids=[e for e, _ in DIVISIONS_BY_ZERO])
def test_integer_division_by_a_compile_time_zero_is_a_located_error(tmp_path, expression, expected):
    """`x // 0` on int32 used to compile (LLVM folds it to poison: INT_MIN on the CPU)."""
    err = frontend_error(tmp_path, f"""
        Z = 0
        W = 7

        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.int32), U: T.Tensor((M, 128), T.uint8), O: T.Tensor((M, 128), T.int32)):
            with T.Kernel(M, threads=128) as bx:
                for j in T.Parallel(128):
                    O[bx, j] = {expression}
    """)
    assert message(err) == expected


@pytest.mark.parametrize("level", ["tile", "thread"])
def test_float_floor_division_and_modulo_by_zero_follow_numpy(tmp_path, rng, level):
    """floor(x / 0) is +-inf (nan for 0 / 0) and x - floor(x / 0) * 0 is nan, as numpy's // and % give."""
    module = load_module(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32), D: T.Tensor((M, 128), T.float32), R: T.Tensor((M, 128), T.float32)):
            with T.Kernel(M, threads=128) as bx:
                for j in T.Parallel(128):
                    D[bx, j] = X[bx, j] // 0
                    R[bx, j] = X[bx, j] % 0.0
    """)
    x = rng.standard_normal((3, 128)).astype(np.float32)
    x[0, :2] = 0.0
    d, r = np.full_like(x, 7.0), np.full_like(x, 7.0)
    tilemlir.compile(module.k, target="cpu", level=level)(x, d, r)
    with np.errstate(divide="ignore", invalid="ignore"):
        want_d, want_r = x // np.float32(0), x % np.float32(0)
    assert np.array_equal(d, want_d, equal_nan=True) and np.isinf(d[1]).all() and np.isnan(d[0, :2]).all()
    assert np.array_equal(r, want_r, equal_nan=True) and np.isnan(r).all()
