"""Operators on bool values in kernel code: numpy's bool result, else a located error.

docs/language.md ("Numeric rules", bools): `& | ^`, `*` (and), `~` (not), T.max / T.min (or / and),
abs / floor / ceil and comparisons (False < True) give numpy's bool; a bool with an integer or float is
that type (False/True are 0/1); `+ - / // % ** << >>`, unary `-`, the float functions and the tile ops
that add bools (T.reduce_sum into a bool, T.atomic_add, T.gemm) are refused at the file:line:col.
T.reduce_max / T.reduce_min of bools are any / all, and a sum into an integer counts.
The kernels run on the CPU backend at tile level and at thread level against numpy on the same random
inputs (outputs poisoned with the opposite or an impossible value), and their CUDA source compiles with
NVRTC.
"""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest

import tilemlir
from frontend_util import frontend_error, load_module, message

LEVELS = ("tile", "thread")

# (kernel expression over bool a, b, flag, int32 x, float32 y; numpy over the same arrays)
BOOL_RESULTS = [
    ("a & b", lambda a, b, f, x, y: a & b),
    ("a | b", lambda a, b, f, x, y: a | b),
    ("a ^ flag", lambda a, b, f, x, y: a ^ f),
    ("a * b", lambda a, b, f, x, y: a * b),
    ("b * True", lambda a, b, f, x, y: b * np.True_),
    ("~a", lambda a, b, f, x, y: ~a),
    ("~(x > 0) | b", lambda a, b, f, x, y: ~(x > 0) | b),
    ("T.max(a, b)", lambda a, b, f, x, y: np.maximum(a, b)),
    ("min(a, b, flag)", lambda a, b, f, x, y: np.minimum(np.minimum(a, b), f)),
    ("T.max(a, False)", lambda a, b, f, x, y: np.maximum(a, np.False_)),
    ("abs(a)", lambda a, b, f, x, y: np.abs(a)),
    ("T.floor(b)", lambda a, b, f, x, y: np.floor(b)),
    ("T.ceil(a)", lambda a, b, f, x, y: np.ceil(a)),
    ("a < b", lambda a, b, f, x, y: a < b),
    ("a >= b", lambda a, b, f, x, y: a >= b),
    ("b == flag", lambda a, b, f, x, y: b == f),
    ("a != True", lambda a, b, f, x, y: a != np.True_),
    ("(a < 1) == (b > 0.5)", lambda a, b, f, x, y: (a < 1) == (b > 0.5)),
]
INT_RESULTS = [
    ("a + 1", lambda a, b, f, x, y: a + 1),
    ("a - x", lambda a, b, f, x, y: a - x),
    ("x * b", lambda a, b, f, x, y: x * b),
    ("x // (a + 1)", lambda a, b, f, x, y: x // (a + 1)),
    ("x % (b + 2)", lambda a, b, f, x, y: x % (b + 2)),
    ("(b + 2) ** 3", lambda a, b, f, x, y: (b + 2) ** 3),
    ("3 << a", lambda a, b, f, x, y: 3 << a.astype(np.int32)),
    ("T.max(a, x)", lambda a, b, f, x, y: np.maximum(a, x)),
    ("x & flag", lambda a, b, f, x, y: x & f),
    ("T.abs(x - a)", lambda a, b, f, x, y: np.abs(x - a)),
]
FLOAT_RESULTS = [
    ("a * y", lambda a, b, f, x, y: a * y),
    ("b - 1.5", lambda a, b, f, x, y: b - np.float32(1.5)),
    ("y / (a + 1.0)", lambda a, b, f, x, y: y / (a + np.float32(1.0))),
    ("(a + 0.25) ** 2.0", lambda a, b, f, x, y: (a + np.float32(0.25)) ** 2),
    ("T.min(y, b)", lambda a, b, f, x, y: np.minimum(y, b)),
]


def element_kernel(tmp_path, block=128):
    """One kernel computing every row above: `a` from a bool fragment, `b` and `flag` from global memory."""
    def rows(table, out):
        return "\n".join(f"                    {out}[{k}, n] = {expr}" for k, (expr, _) in enumerate(table))

    module = load_module(tmp_path, f"""
        @tilemlir.jit
        def bool_ops(A: T.Tensor((N,), T.bool), B: T.Tensor((N,), T.bool), X: T.Tensor((N,), T.int32),
                     Y: T.Tensor((N,), T.float32), flag: T.bool, OB: T.Tensor(({len(BOOL_RESULTS)}, N), T.bool),
                     OI: T.Tensor(({len(INT_RESULTS)}, N), T.int32), OF: T.Tensor(({len(FLOAT_RESULTS)}, N), T.float32)):
            with T.Kernel(T.ceildiv(N, {block}), threads={block}) as bx:
                fa = T.alloc_fragment(({block},), T.bool)
                T.copy(A[bx * {block}], fa)
                for i in T.Parallel({block}):
                    n = bx * {block} + i
                    a = fa[i]
                    b = B[n]
                    x = X[n]
                    y = Y[n]
{rows(BOOL_RESULTS, "OB")}
{rows(INT_RESULTS, "OI")}
{rows(FLOAT_RESULTS, "OF")}
    """)
    return module.bool_ops


def bool_inputs(rng, n):
    """a and b with every pair of values at the front, x non-zero with both signs, y in [-2, 2)."""
    a = rng.random(n) < 0.5
    b = rng.random(n) < 0.5
    a[:4], b[:4] = [False, False, True, True], [False, True, False, True]
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    x[x == 0] = 7
    y = (rng.random(n) * 4 - 2).astype(np.float32)
    return a, b, x, y


@pytest.mark.parametrize("level", LEVELS)
def test_element_code_on_bools_matches_numpy(tmp_path, level):
    rng = np.random.default_rng()
    n = 300
    a, b, x, y = bool_inputs(rng, n)
    kernel = tilemlir.compile(element_kernel(tmp_path), target="cpu", level=level)
    for flag in (False, True):
        want_b = np.stack([ref(a, b, np.bool_(flag), x, y) for _, ref in BOOL_RESULTS])
        want_i = np.stack([ref(a, b, np.bool_(flag), x, y) for _, ref in INT_RESULTS])
        want_f = np.stack([ref(a, b, np.bool_(flag), x, y) for _, ref in FLOAT_RESULTS]).astype(np.float64)
        assert want_b.dtype == np.bool_  # numpy's own result type for every bool row
        ob, oi, of = ~want_b, np.full(want_i.shape, -7, np.int32), np.full(want_f.shape, np.nan, np.float32)
        kernel(a, b, x, y, flag, ob, oi, of)
        for k, (expr, _) in enumerate(BOOL_RESULTS):
            assert np.array_equal(ob[k], want_b[k]), (expr, flag, np.flatnonzero(ob[k] != want_b[k])[:8])
        for k, (expr, _) in enumerate(INT_RESULTS):
            assert np.array_equal(oi[k], want_i[k]), (expr, flag, oi[k][:8], want_i[k][:8])
        for k, (expr, _) in enumerate(FLOAT_RESULTS):
            error = np.linalg.norm(of[k] - want_f[k]) / np.linalg.norm(want_f[k])
            assert error < 1e-6, (expr, flag, error)


def scalar_kernel(tmp_path):
    module = load_module(tmp_path, """
        @tilemlir.jit
        def bool_scalars(p: T.bool, q: T.bool, count: T.int32, O: T.Tensor((8,), T.int32)):
            with T.Kernel(1, threads=32) as bx:
                both = p * q
                toggled = p
                kept = p
                for j in range(count):
                    toggled = toggled ^ q
                    kept *= ~q
                O[0] = T.cast(both, T.int32)
                O[1] = T.cast(~p, T.int32)
                O[2] = T.cast(T.max(p, q), T.int32)
                O[3] = T.cast(T.min(p, q), T.int32)
                O[4] = T.cast(p < q, T.int32)
                O[5] = T.cast(toggled, T.int32)
                O[6] = T.cast(kept, T.int32)
                O[7] = p + q * 2 + count
    """)
    return module.bool_scalars


@pytest.mark.parametrize("level", LEVELS)
def test_bool_kernel_parameters_and_loop_carried_locals(tmp_path, level):
    kernel = tilemlir.compile(scalar_kernel(tmp_path), target="cpu", level=level)
    for p in (False, True):
        for q in (False, True):
            for count in (0, 3, 4):
                P, Q = np.bool_(p), np.bool_(q)
                toggled, kept = P, P
                for _ in range(count):
                    toggled, kept = toggled ^ Q, kept * ~Q
                want = [P * Q, ~P, np.maximum(P, Q), np.minimum(P, Q), P < Q, toggled, kept, p + 2 * q + count]
                out = np.full(8, -7, np.int32)
                kernel(p, q, count, out)
                assert out.tolist() == [int(w) for w in want], (p, q, count, out)


# -- compile-time bools: the same results as run-time ones (numpy's, not Python's ~True == -2) ------------------

# (expression over bools p, q; output kind; numpy over np.bool_ P, Q)
CONSTANT_RESULTS = [
    ("~p", "b", lambda p, q: ~p),
    ("~p & q", "b", lambda p, q: ~p & q),
    ("p * q", "b", lambda p, q: p * q),
    ("p ^ ~q", "b", lambda p, q: p ^ ~q),
    ("p | q", "b", lambda p, q: p | q),
    ("+p", "b", lambda p, q: p),  # numpy has no unary + on bools; the kernel gives the bool back
    ("T.max(p, q)", "b", lambda p, q: np.maximum(p, q)),
    ("min(p, q, True)", "b", lambda p, q: np.minimum(p, q)),
    ("abs(~p)", "b", lambda p, q: np.abs(~p)),
    ("T.floor(~q)", "b", lambda p, q: np.floor(~q)),
    ("T.ceil(q)", "b", lambda p, q: np.ceil(q)),
    ("~(p < q)", "b", lambda p, q: ~(p < q)),
    ("~p + 1", "i", lambda p, q: (~p) + 1),
    ("(~q) * 5", "i", lambda p, q: (~q) * 5),
    ("p - 2", "i", lambda p, q: p - 2),
    ("T.max(~p, 3)", "i", lambda p, q: np.maximum(~p, 3)),
    ("min(~q, -1)", "i", lambda p, q: np.minimum(~q, -1)),
    ("abs(~p - 3)", "i", lambda p, q: np.abs((~p) - 3)),
    ("2 ** ~q", "i", lambda p, q: 2 ** (~q)),
    ("(~p) * 2.5", "f", lambda p, q: (~p) * 2.5),
    ("T.max(~q, 0.5)", "f", lambda p, q: np.maximum(~q, 0.5)),
]


def constant_kernel(tmp_path, p=None, q=None, spelling="python"):
    """The rows above with p and q run-time kernel parameters (p=None) or compile-time constants: Python bools
    in the kernel (spelling "python") or module-level numpy bools P = np.bool_(p) read by the kernel ("numpy")."""
    rows = {kind: [expr for expr, k, _ in CONSTANT_RESULTS if k == kind] for kind in "bif"}
    stores = "\n".join(f"                O{kind.upper()}[{j}] = {expr}" for kind in "bif" for j, expr in enumerate(rows[kind]))
    params = "p: T.bool, q: T.bool, " if p is None else ""
    constants = "" if p is None else f"p = {p}\n                q = {q}"
    globals_ = ""
    if p is not None and spelling == "numpy":
        globals_ = f"import numpy as np\n        P = np.bool_({p})\n        Q = np.bool_({q})"
        constants = "p = P\n                q = Q"
    module = load_module(tmp_path, f"""
        {globals_}
        @tilemlir.jit
        def constants({params}OB: T.Tensor(({len(rows["b"])},), T.bool), OI: T.Tensor(({len(rows["i"])},), T.int32),
                      OF: T.Tensor(({len(rows["f"])},), T.float32)):
            with T.Kernel(1, threads=32) as bx:
                {constants}
{stores}
    """)
    return module.constants


def run_constants(kernel, *flags):
    rows = {kind: [ref for _, k, ref in CONSTANT_RESULTS if k == kind] for kind in "bif"}
    out = {"b": np.zeros(len(rows["b"]), bool), "i": np.full(len(rows["i"]), -77, np.int32),
           "f": np.full(len(rows["f"]), np.nan, np.float32)}
    kernel(*flags, out["b"], out["i"], out["f"])
    return out


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("spelling", ["python", "numpy"])
def test_compile_time_bools_fold_as_run_time_bools_compute(tmp_path, level, spelling):
    """`p = True` in the kernel, or a module-level np.True_, folds to what the kernel computes when p is a
    run-time bool, and to numpy (numpy's own scalars would give np.True_ + np.True_ == True, not an error)."""
    run_time = tilemlir.compile(constant_kernel(tmp_path), target="cpu", level=level)
    for p in (False, True):
        for q in (False, True):
            folded = run_constants(tilemlir.compile(constant_kernel(tmp_path, p, q, spelling), target="cpu", level=level))
            computed = run_constants(run_time, p, q)
            for kind in "bif":
                table = [(expr, ref) for expr, k, ref in CONSTANT_RESULTS if k == kind]
                for j, (expr, ref) in enumerate(table):
                    want = ref(np.bool_(p), np.bool_(q))
                    assert computed[kind][j] == want, ("run time", expr, p, q, computed[kind][j], want)
                    assert folded[kind][j] == want, ("compile time", expr, p, q, folded[kind][j], want)


# -- refused operators: a located error naming the operator and the bool type ---------------------------------

REFUSED = [
    ("@@a + b", "'+' is not defined on bool operands: write a | b for 'either', "
                "or T.cast(a, T.int32) + T.cast(b, T.int32) to count"),
    ("@@a + True", "'+' is not defined on bool operands: write a | b for 'either', "
                   "or T.cast(a, T.int32) + T.cast(b, T.int32) to count"),
    ("@@a - b", "'-' is not defined on bool operands: write a ^ b for 'differ', "
                "or T.cast(a, T.int32) - T.cast(b, T.int32)"),
    ("@@a / b", "'/' is not defined on bool operands: convert them first, e.g. T.cast(a, T.float32) / T.cast(b, T.float32)"),
    ("@@a // b", "'//' is not defined on bool operands: convert them first, e.g. T.cast(a, T.int32) // T.cast(b, T.int32)"),
    ("@@a % False", "'%' is not defined on bool operands: convert them first, e.g. T.cast(a, T.int32) % T.cast(b, T.int32)"),
    ("@@(X[bx, 0] > 0) ** (X[bx, 1] > 0)", "'**' (T.pow) is not defined on bool operands: convert them first, "
                                           "e.g. T.cast(a, T.int32) ** T.cast(b, T.int32)"),
    ("@@True ** a", "'**' (T.pow) is not defined on bool operands: convert them first, "
                    "e.g. T.cast(a, T.int32) ** T.cast(b, T.int32)"),
    ("@@T.pow(a, b)", "'**' (T.pow) is not defined on bool operands: convert them first, "
                      "e.g. T.cast(a, T.int32) ** T.cast(b, T.int32)"),
    ("@@pow(a, b)", "'**' (T.pow) is not defined on bool operands: convert them first, "
                    "e.g. T.cast(a, T.int32) ** T.cast(b, T.int32)"),
    ("@@a << b", "'<<' is not defined on bool operands: convert them first, e.g. T.cast(a, T.int32) << T.cast(b, T.int32)"),
    ("@@a >> True", "'>>' is not defined on bool operands: convert them first, e.g. T.cast(a, T.int32) >> T.cast(b, T.int32)"),
    ("@@-a", "unary '-' is not defined on a bool operand: write `not x` (or ~x) for logical negation, "
             "or -T.cast(x, T.int32)"),
    ("@@T.exp(a)", "T.exp is not defined on a bool operand: convert it first, e.g. T.cast(x, T.float32)"),
    ("@@T.sqrt(b)", "T.sqrt is not defined on a bool operand: convert it first, e.g. T.cast(x, T.float32)"),
    ("@@T.sigmoid(a)", "T.sigmoid is not defined on a bool operand: convert it first, e.g. T.cast(x, T.float32)"),
    ("@@T.fma(a, b, a)", "T.fma needs float operands, got bool: convert them first, e.g. T.cast(x, T.float32)"),
    ("@@T.ceildiv(a, b)", "T.ceildiv needs integer operands, got bool: convert them first, e.g. T.cast(x, T.int32)"),
]


@pytest.mark.parametrize("where", ["parallel", "scalar", "compile-time", "numpy-constant"])
@pytest.mark.parametrize("expression, expected", REFUSED, ids=[e for e, _ in REFUSED])
def test_refused_operators_are_located_errors(tmp_path, where, expression, expected):
    """In T.Parallel on a fragment and a global element, on scalar kernel parameters, on compile-time bools
    (Python would count with them: True + True == 2) and on module-level numpy bools (numpy's own scalars
    would fold np.True_ + np.True_ to True and np.True_ - np.False_ to a TypeError)."""
    if where in ("compile-time", "numpy-constant") and "X[" in expression:
        pytest.skip("a run-time operand")
    if where in ("compile-time", "numpy-constant"):
        globals_ = "import numpy as np\nA = np.True_\nB = np.bool_(False)\n" if where == "numpy-constant" else ""
        a, b = ("A", "B") if where == "numpy-constant" else ("True", "False")
        source = globals_ + textwrap.dedent(f"""
            @tilemlir.jit
            def k(X: T.Tensor((M, 128), T.float32), O: T.Tensor((M,), T.float32)):
                with T.Kernel(M, threads=128) as bx:
                    a = {a}
                    b = {b}
                    O[bx] = T.cast({expression}, T.float32)
        """)
    elif where == "parallel":
        source = f"""
            @tilemlir.jit
            def k(X: T.Tensor((M, 128), T.float32), B: T.Tensor((M, 128), T.bool), O: T.Tensor((M, 128), T.float32)):
                with T.Kernel(M, threads=128) as bx:
                    f = T.alloc_fragment((128,), T.bool)
                    T.copy(B[bx, 0], f)
                    for i in T.Parallel(128):
                        a = f[i]
                        b = B[bx, i]
                        O[bx, i] = T.cast({expression}, T.float32)
        """
    else:
        source = f"""
            @tilemlir.jit
            def k(X: T.Tensor((M, 128), T.float32), a: T.bool, b: T.bool, O: T.Tensor((M,), T.float32)):
                with T.Kernel(M, threads=128) as bx:
                    O[bx] = T.cast({expression}, T.float32)
        """
    assert message(frontend_error(tmp_path, source)) == expected


def test_augmented_assignment_on_a_bool_local_is_a_located_error(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(X: T.Tensor((M, 128), T.float32), O: T.Tensor((M,), T.int32)):
            with T.Kernel(M, threads=128) as bx:
                seen = X[bx, 0] > 0
                for j in range(1, 128):
                    @@seen += X[bx, j] > 0
                O[bx] = T.cast(seen, T.int32)
    """)
    assert message(err).startswith("'+' is not defined on bool operands: write a | b for 'either'")


TILE_OPS_REFUSED = [
    ("T.reduce_sum(f, @@s, dim=1)", "T.reduce_sum into a bool destination is not defined ('s' is bool): a sum of "
                                    "bools counts them; reduce into an integer fragment (e.g. int32), or write "
                                    "T.reduce_max(f, s) for 'any'"),
    ("T.reduce_abssum(f, @@s)", "T.reduce_abssum into a bool destination is not defined ('s' is bool): a sum of "
                                "bools counts them; reduce into an integer fragment (e.g. int32), or write "
                                "T.reduce_max(f, s) for 'any'"),
    ("T.reduce_max(f, @@h)", "dtype mismatch in T.reduce_max: 'f' is bool but dst 'h' is float32; a bool reduces "
                             "into a bool or an integer dst"),
    ("T.atomic_add(@@B[bx, 0], f)", "T.atomic_add is not defined on bool tensors ('B' is bool): add into an int32 "
                                    "tensor, converting with T.cast(x, T.int32)"),
    ("T.gemm(@@f, g, c)", "T.gemm is not defined on bool tiles ('f' is bool): convert them first, e.g. into float16 "
                          "tiles with T.cast in T.Parallel"),
]


@pytest.mark.parametrize("statement, expected", TILE_OPS_REFUSED, ids=[s.split("(")[0] for s, _ in TILE_OPS_REFUSED])
def test_tile_ops_on_bools_are_located_errors(tmp_path, statement, expected):
    """A sum into a bool (numpy's or, but Python's count) and float destinations are refused, as are atomics and gemm."""
    err = frontend_error(tmp_path, f"""
        @tilemlir.jit
        def k(B: T.Tensor((M, 128), T.bool), O: T.Tensor((M, 4), T.bool)):
            with T.Kernel(M, threads=128) as bx:
                f = T.alloc_fragment((4, 128), T.bool)
                g = T.alloc_fragment((128, 4), T.bool)
                c = T.alloc_fragment((4, 4), T.bool)
                s = T.alloc_fragment((4,), T.bool)
                h = T.alloc_fragment((4,), T.float32)
                T.copy(B[bx, 0], f)
                {statement}
    """)
    assert message(err) == expected


# -- reductions of bools: max is any, min is all (numpy's max/min of bools), a sum into an integer counts ---------

REDUCTIONS = [  # (statement, output dtype, numpy over the (4, N) bool rows)
    ("T.reduce_max(a, o, dim=1)", "bool", lambda x: x.max(1)),
    ("T.reduce_min(a, o, dim=1)", "bool", lambda x: x.min(1)),
    ("T.reduce_absmax(a, o, dim=1)", "bool", lambda x: np.abs(x).max(1)),
    ("T.reduce_max(a, o)", "int32", lambda x: x.max(1).astype(np.int32)),
    ("T.reduce_min(a, o)", "uint8", lambda x: x.min(1).astype(np.uint8)),
    ("T.reduce_sum(a, o, dim=1)", "int32", lambda x: x.sum(1, dtype=np.int32)),
    ("T.reduce_abssum(a, o)", "int64", lambda x: x.sum(1, dtype=np.int64)),
]


def reduction_kernel(tmp_path, statement, out_dtype, space, block=1024):
    """`statement` over a (4, block) bool buffer holding the (4, N) input (the padding columns must not count);
    `clear=False` then folds a second reduction of the same rows into `o`."""
    module = load_module(tmp_path, f"""
        @tilemlir.jit
        def reduce_bools(X: T.Tensor((4, N), T.bool), O: T.Tensor((4,), T.{out_dtype}),
                         P: T.Tensor((4,), T.{out_dtype})):
            with T.Kernel(1, threads=128):
                a = T.alloc_{space}((4, {block}), T.bool)
                o = T.alloc_fragment((4,), T.{out_dtype})
                T.copy(X[0, 0], a)
                {statement}
                T.copy(o, O)
                {statement[:-1]}, clear=False)
                T.copy(o, P)
    """)
    return module.reduce_bools


def bool_rows(rng, n):
    """Four rows: random, all True but one, all False but one, all False (a row of each any/all answer)."""
    rows = rng.random((4, n)) < 0.5
    rows[1], rows[2], rows[3] = True, False, False
    rows[1, rng.integers(n)] = False
    rows[2, rng.integers(n)] = True
    return rows


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("space", ["fragment", "shared"])
@pytest.mark.parametrize("statement, out_dtype, ref", REDUCTIONS, ids=[f"{s.split('(')[0]}-{d}" for s, d, _ in REDUCTIONS])
def test_reductions_of_bools_match_numpy(tmp_path, rng, level, space, statement, out_dtype, ref):
    """Fragments reduce across threads (shuffles and a shared exchange at thread level), shared buffers serially."""
    x = bool_rows(rng, 1000)
    kernel = tilemlir.compile(reduction_kernel(tmp_path, statement, out_dtype, space), target="cpu", level=level)
    want = ref(x)
    twice = want + want if statement.startswith(("T.reduce_sum", "T.reduce_abssum")) else want
    o, p = (~want, ~twice) if out_dtype == "bool" else (np.full(4, 77, out_dtype), np.full(4, 77, out_dtype))
    kernel(x, o, p)
    assert o.tolist() == want.tolist(), (o, want)
    assert p.tolist() == twice.tolist(), (p, twice)


def test_cuda_source_of_bool_reductions_compiles(tmp_path):
    """bool partials cross lanes as an int (CUDA's __shfl_xor_sync has no bool overload), and every lane runs
    each shuffle: none sits on the right of a short-circuit `&&` / `||` (bool max is `||`, min `&&`)."""
    from support import compiles, emitted_cuda

    for statement, out_dtype, _ in REDUCTIONS:
        emitted = emitted_cuda(reduction_kernel(tmp_path, statement, out_dtype, "fragment"))
        assert "__shfl_xor_sync" in emitted.source, statement
        assert not re.search(r"(&&|\|\||\?)[^;]*__shfl", emitted.source), statement
        compiles(emitted)


# -- T.fill and element stores into bools: True/False, 0/1, or T.cast (int to bool is != 0) ------------------------


def fill_kernel(tmp_path, block=128):
    """Bool fragments filled with literals, a run-time bool, and T.cast of an int (compile-time and run-time),
    then stored element by element in T.Parallel."""
    module = load_module(tmp_path, f"""
        @tilemlir.jit
        def fills(X: T.Tensor((M, 2), T.int32), O: T.Tensor((M, 7, {block}), T.bool)):
            with T.Kernel(M, threads={block}) as bx:
                f = T.alloc_fragment((7, {block}), T.bool)
                T.fill(f, 1)
                T.copy(f, O[bx, 0, 0])
                g = T.alloc_fragment(({block},), T.bool)
                T.fill(g, 0)
                T.copy(g, O[bx, 1, 0])
                T.fill(g, X[bx, 0] > X[bx, 1])
                T.copy(g, O[bx, 2, 0])
                T.fill(g, T.cast(X[bx, 0], T.bool))
                T.copy(g, O[bx, 3, 0])
                T.fill(g, T.cast(-2, T.bool))
                T.copy(g, O[bx, 4, 0])
                for i in T.Parallel({block}):
                    O[bx, 5, i] = T.cast(X[bx, 1] - X[bx, 1] + i % 3, T.bool)
                    O[bx, 6, i] = 1 - i % 2 == 1
    """)
    return module.fills


@pytest.mark.parametrize("level", LEVELS)
def test_fills_and_stores_of_bools_match_numpy(tmp_path, rng, level):
    block, rows = 128, 6
    x = rng.integers(-3, 4, (rows, 2)).astype(np.int32)
    x[:3, 0] = [0, 5, -7]  # T.cast of zero, positive and negative values
    i = np.arange(block)
    want = np.stack([np.stack([np.full(block, 1, bool), np.full(block, 0, bool), np.full(block, r[0] > r[1]),
                               np.full(block, r[0], bool), np.full(block, -2, bool), (i % 3).astype(bool),
                               1 - i % 2 == 1]) for r in x])
    kernel = tilemlir.compile(fill_kernel(tmp_path, block), target="cpu", level=level)
    out = ~want
    kernel(x, out)
    assert np.array_equal(out, want), np.argwhere(out != want)[:8]


FILL_REFUSED = [
    ("T.fill(f, @@2)", "the int 2 is not a bool: write True or False, or T.cast(2, T.bool) for 2 != 0"),
    ("T.fill(f, @@-1)", "the int -1 is not a bool: write True or False, or T.cast(-1, T.bool) for -1 != 0"),
    ("T.fill(f, @@X[bx, 0])", "cannot convert int32 to bool implicitly: write T.cast(value, T.bool)"),
    ("T.fill(f, @@0.5)", "T.fill: the float 0.5 does not implicitly convert to bool; use T.cast"),
]


@pytest.mark.parametrize("statement, expected", FILL_REFUSED, ids=[s for s, _ in FILL_REFUSED])
def test_ints_filled_into_bools_need_a_cast(tmp_path, statement, expected):
    """numpy's np.full(n, 2, bool) is all True, a 1-bit truncation all False: neither is silent here."""
    err = frontend_error(tmp_path, f"""
        @tilemlir.jit
        def k(X: T.Tensor((M, 2), T.int32), O: T.Tensor((M, 128), T.bool)):
            with T.Kernel(M, threads=128) as bx:
                f = T.alloc_fragment((128,), T.bool)
                {statement}
                T.copy(f, O[bx, 0])
    """)
    assert message(err) == expected


def test_an_int_stored_into_a_bool_element_needs_a_cast(tmp_path):
    err = frontend_error(tmp_path, """
        @tilemlir.jit
        def k(O: T.Tensor((M, 128), T.bool)):
            with T.Kernel(M, threads=128) as bx:
                for i in T.Parallel(128):
                    @@O[bx, i] = 3
    """)
    assert message(err) == "the int 3 is not a bool: write True or False, or T.cast(3, T.bool) for 3 != 0"


# -- CUDA: the accepted operators compile ------------------------------------------------------------------------


def test_cuda_source_of_the_bool_kernels_compiles(tmp_path):
    from support import compiles, emitted_cuda

    for kernel in (element_kernel(tmp_path), scalar_kernel(tmp_path), constant_kernel(tmp_path), fill_kernel(tmp_path)):
        emitted = emitted_cuda(kernel)
        assert "bool" in [p.dtype for p in emitted.signature.params]
        compiles(emitted)
    compiles(emitted_cuda(constant_kernel(tmp_path, True, False)))
