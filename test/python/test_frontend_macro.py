"""`@T.macro`: kernel code shared between kernels, inlined at the call site with its own scope and locations."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import tilemlir
from frontend_util import HEADER, frontend_error, load_module, lower, marked, message
from tilemlir.diagnostics import CompileError
from tilemlir.testing import relative_error

ROWS = """
@T.macro
def sum_of_squares(x, sq, total, n):
    for i, j in T.Parallel(2, n):
        sq[i, j] = square(x[i, j])
    T.reduce_sum(sq, total, dim=1)


@T.macro
def square(v):
    product = v * v
    return product


@T.macro
def rms_scale(total, n, eps):
    return T.rsqrt(total / n + eps)


@tilemlir.jit
def k(X: T.Tensor((M, 64), T.float32), Y: T.Tensor((M, 64), T.float32), eps: T.float32):
    with T.Kernel(T.ceildiv(M, 2), threads=64) as bx:
        x = T.alloc_fragment((2, 64), T.float32)
        sq = T.alloc_fragment((2, 64), T.float32)
        total = T.alloc_fragment((2,), T.float32)
        T.copy(X[bx * 2, 0], x)
        sum_of_squares(x, sq, total, 64)
        for i, j in T.Parallel(2, 64):
            Y[bx * 2 + i, j] = x[i, j] * rms_scale(total[i], 64, eps)
"""


def test_macros_compute_rms_norm_on_the_cpu(tmp_path):
    module = load_module(tmp_path, ROWS)
    kernel = tilemlir.compile(module.k, target="cpu")
    rng = np.random.default_rng()
    x = rng.standard_normal((7, 64)).astype(np.float32)
    y = np.full((7, 64), np.nan, dtype=np.float32)
    kernel(x, y, 1e-5)
    x64 = x.astype(np.float64)
    expected = x64 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + 1e-5)
    assert relative_error(y, expected) < 1e-5


def test_macro_ops_carry_the_macro_lines(tmp_path):
    text = lower(tmp_path, ROWS, debuginfo=True)
    lines = ROWS.lstrip("\n").splitlines()
    square_line = next(n for n, line in enumerate(lines, 1) if "product = v * v" in line) + 5  # + HEADER lines
    reduce_line = next(n for n, line in enumerate(lines, 1) if "T.reduce_sum(sq" in line) + 5
    multiply = next(line for line in text.splitlines() if "arith.mulf" in line)
    assert f'.py":{square_line}:15)' in multiply
    reduce = next(line for line in text.splitlines() if '"tile.reduce"' in line)
    assert f'.py":{reduce_line}:5)' in reduce
    assert text.count('"tile.parallel"') == 2
    assert "math.rsqrt" in text


def test_compile_time_arguments_fold_and_select_code(tmp_path):
    text = lower(tmp_path, """
        @T.macro
        def apply(v, kind, factor):
            if kind == "double":
                result = v * (factor * 2)
            else:
                result = v + factor
            return result

        @tilemlir.jit
        def k(X: T.Tensor((M, 16), T.float32)):
            with T.Kernel(M, threads=16) as bx:
                for j in T.Parallel(16):
                    X[bx, j] = apply(X[bx, j], "double", 1.5)
    """)
    assert "arith.mulf" in text and "arith.addf" not in text
    assert "3.000000e+00" in text


def test_keyword_and_default_arguments_and_a_serial_loop_inside(tmp_path):
    module = load_module(tmp_path, """
        @T.macro
        def polynomial(v, degree, scale=0.5):
            acc = 0.0
            for d in range(degree):
                acc = acc * v + scale
            return acc

        @tilemlir.jit
        def k(X: T.Tensor((M,), T.float32), Y: T.Tensor((M,), T.float32)):
            with T.Kernel(T.ceildiv(M, 32), threads=32) as bx:
                for i in T.Parallel(32):
                    Y[bx * 32 + i] = polynomial(X[bx * 32 + i], scale=2.0, degree=3)
    """)
    kernel = tilemlir.compile(module.k, target="cpu")
    x = np.random.default_rng().uniform(-2, 2, 70).astype(np.float32)
    y = np.full(70, np.nan, dtype=np.float32)
    kernel(x, y)
    x64 = x.astype(np.float64)
    expected = (2.0 * x64 + 2.0) * x64 + 2.0
    assert relative_error(y, expected) < 1e-6


def test_macro_has_its_own_scope(tmp_path):
    text = lower(tmp_path, """
        @T.macro
        def bump(buf, i):
            value = buf[i] + 1.0
            buf[i] = value

        @tilemlir.jit
        def k(X: T.Tensor((M,), T.float32)):
            with T.Kernel(M, threads=1) as bx:
                value = X[bx] * 3.0
                bump(X, bx)
                X[bx] = value
    """)
    # the caller's `value` (the product) is stored last, not the macro's `value` of the same name
    stores = [line for line in text.splitlines() if "memref.store" in line]
    assert len(stores) == 2
    product = next(line for line in text.splitlines() if "arith.mulf" in line).split("=")[0].strip()
    assert stores[-1].strip().startswith(f"memref.store {product},")
    err = frontend_error(tmp_path, """
        @T.macro
        def peek(i):
            return @@X2[i]

        @tilemlir.jit
        def k(X: T.Tensor((M,), T.float32)):
            with T.Kernel(M, threads=1) as bx:
                X2 = X
                X[bx] = peek(bx)
    """)
    assert message(err).startswith("unknown name 'X2'")


def test_names_bound_in_a_macro_do_not_leak(tmp_path):
    err = frontend_error(tmp_path, """
        @T.macro
        def set_one(buf, i):
            one = 1.0
            buf[i] = one

        @tilemlir.jit
        def k(X: T.Tensor((M,), T.float32)):
            with T.Kernel(M, threads=1) as bx:
                set_one(X, bx)
                X[bx] = @@one
    """)
    assert message(err).startswith("unknown name 'one'")


# ----------------------------------------------------------------------------
# Errors


def test_python_function_with_runtime_values_suggests_macro(tmp_path):
    err = frontend_error(tmp_path, """
        def helper(v):
            return v * 2.0

        @tilemlir.jit
        def k(X: T.Tensor((M,), T.float32)):
            with T.Kernel(M, threads=1) as bx:
                X[bx] = @@helper(X[bx])
    """)
    assert message(err).startswith("cannot call the Python function 'helper' with run-time values")
    assert "decorate 'helper' with @T.macro" in message(err)


@pytest.mark.parametrize(
    "call, detail",
    [
        ("twice(X[bx])", "missing a required argument: 'w'"),
        ("twice(X[bx], 1.0, 2.0)", "too many positional arguments"),
        ("twice(X[bx], 1.0, u=1.0)", "unexpected keyword argument 'u'"),
    ],
)
def test_wrong_arguments(tmp_path, call, detail):
    err = frontend_error(tmp_path, f"""
        @T.macro
        def twice(v, w):
            return v * w

        @tilemlir.jit
        def k(X: T.Tensor((M,), T.float32)):
            with T.Kernel(M, threads=1) as bx:
                X[bx] = @@{call}
    """)
    assert message(err).startswith("macro 'twice' takes (v, w), called with")
    assert detail in message(err)
    note = err.diagnostics[0].notes[0]
    assert note.message == "macro 'twice' is defined here" and note.location.line == 7


def test_recursion(tmp_path):
    err = frontend_error(tmp_path, """
        @T.macro
        def ping(v, n):
            return pong(v, n)

        @T.macro
        def pong(v, n):
            return @@ping(v, n - 1)

        @tilemlir.jit
        def k(X: T.Tensor((M,), T.float32)):
            with T.Kernel(M, threads=1) as bx:
                X[bx] = ping(X[bx], 3)
    """)
    assert message(err).startswith("macro 'ping' calls itself (ping -> pong -> ping)")
    notes = err.diagnostics[0].notes
    assert [n.location.line for n in notes] == [17, 8]


def test_unsupported_construct_inside_a_macro(tmp_path):
    err = frontend_error(tmp_path, """
        @T.macro
        def loop_forever(buf, i):
            @@while True:
                buf[i] = 0.0

        @tilemlir.jit
        def k(X: T.Tensor((M,), T.float32)):
            with T.Kernel(M, threads=1) as bx:
                loop_forever(X, bx)
    """)
    assert message(err).startswith("`while` loops are not supported")


def test_tile_op_of_a_macro_inside_parallel(tmp_path):
    err = frontend_error(tmp_path, """
        @T.macro
        def clear_it(buf):
            @@T.clear(buf)

        @tilemlir.jit
        def k(X: T.Tensor((M, 8), T.float32)):
            with T.Kernel(M, threads=8) as bx:
                x = T.alloc_fragment((8,), T.float32)
                for j in T.Parallel(8):
                    clear_it(x)
    """)
    assert message(err).startswith("T.clear works on whole tiles and cannot be used inside T.Parallel")
    assert err.diagnostics[0].notes[0].location.line == 14


def test_return_that_is_not_last(tmp_path):
    err = frontend_error(tmp_path, """
        @T.macro
        def clamp(v):
            if v > 1.0:
                @@return 1.0
            return v

        @tilemlir.jit
        def k(X: T.Tensor((M,), T.float32)):
            with T.Kernel(M, threads=1) as bx:
                X[bx] = clamp(X[bx])
    """)
    assert message(err).startswith("a `return` in macro 'clamp' must be its last statement")


HALVE = """
    @T.macro
    def halve(v):
        return @@v / 2
"""


def test_macro_in_another_file_points_there(tmp_path):
    clean, line, col = marked(HALVE)
    helpers = load_module(tmp_path, clean)
    module = load_module(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M,), T.int32)):
            with T.Kernel(M, threads=1) as bx:
                X[bx] = halve(X[bx])
    """, header=f"from {helpers.__name__} import halve\n" + HEADER)
    with pytest.raises(CompileError) as info:
        tilemlir.lower(module.k)
    loc = info.value.location
    assert (Path(loc.file).name, loc.line, loc.col) == (f"{helpers.__name__}.py", line, col)
    assert "integers" in message(info.value)
