"""fold_affine: one walk over an affine expression, checked in several domains against hand-computed values."""

import operator

import numpy as np
import pytest
import z3

from tilemlir.analysis.affine_fold import AffineOps, fold_affine
from tilemlir.analysis.index_terms import affine_term
from tilemlir.analysis.layouts import eval_affine
from tilemlir.context import make_context
from tilemlir.mlir import ir


@pytest.fixture(autouse=True)
def context():
    with make_context() as ctx, ir.Location.unknown(ctx):
        yield ctx


def exprs(results: str, dims: str = "d0, d1", symbols: str = "s0") -> list[ir.AffineExpr]:
    """The results of `affine_map<(dims)[symbols] -> (results)>`, as MLIR stores them."""
    attr = ir.Attribute.parse(f"affine_map<({dims})[{symbols}] -> ({results})>")
    return list(ir.AffineMapAttr(attr).value.results)


INTS = AffineOps(
    constant=int,
    add=operator.add,
    mul=operator.mul,
    floordiv=operator.floordiv,
    ceildiv=lambda a, b: -(-a // b),
    mod=operator.mod,
)

TEXT = AffineOps(
    constant=str,
    add=lambda a, b: f"add({a}, {b})",
    mul=lambda a, b: f"mul({a}, {b})",
    floordiv=lambda a, b: f"floordiv({a}, {b})",
    ceildiv=lambda a, b: f"ceildiv({a}, {b})",
    mod=lambda a, b: f"mod({a}, {b})",
)

# (result expression, d0, d1, s0, value worked out by hand with floor/ceil rounding)
CASES = [
    ("-5", -7, 5, 3, -5),
    ("d1", -7, 5, 3, 5),
    ("s0", -7, 5, 3, 3),
    ("d0 + d1", -7, 5, 3, -2),
    ("d0 - d1 * 3", -7, 5, 3, -22),
    ("-d1", -7, 5, 3, -5),
    ("d0 * s0", -7, 5, 3, -21),
    ("d0 floordiv 2", -7, 5, 3, -4),  # -3.5 rounds down
    ("d0 ceildiv 2", -7, 5, 3, -3),  # -3.5 rounds up
    ("d0 mod 3", -7, 5, 3, 2),  # -7 = 3 * -3 + 2
    ("d0 mod 4 - 7", -7, 5, 3, -6),
    ("(d0 - 2) floordiv s0", -7, 5, 3, -3),
    ("(d0 * s0) mod 5", -7, 5, 3, 4),  # -21 = 5 * -5 + 4
    ("d0 - d1 * 3 + s0 ceildiv 4", -7, 5, 3, -21),
    ("d1 floordiv s0", -7, 5, -2, -3),  # -2.5 rounds down
    ("d1 ceildiv s0", -7, 5, -2, -2),  # -2.5 rounds up
    ("d1 mod s0", -7, 5, -2, -1),  # 5 = -2 * -3 - 1: the divisor's sign
    ("(d0 + d1 * 2) ceildiv 4 + d0 floordiv s0", 9, -4, 3, 4),  # 1 ceildiv 4 + 9 floordiv 3 = 1 + 3
]


@pytest.mark.parametrize("text, d0, d1, s0, expected", CASES)
def test_python_int_domain(text, d0, d1, s0, expected):
    (expr,) = exprs(text)
    assert fold_affine(expr, INTS, [d0, d1], [s0]) == expected


@pytest.mark.parametrize("text, d0, d1, s0, expected", CASES)
def test_z3_domain(text, d0, d1, s0, expected):
    (expr,) = exprs(text)
    ctx = z3.Context()
    term = affine_term(expr, [z3.IntVal(d0, ctx), z3.IntVal(d1, ctx)], [z3.IntVal(s0, ctx)], ctx)
    assert term.ctx == ctx and z3.simplify(term).as_long() == expected


def test_z3_domain_over_variables():
    """Symbolic dims: the term agrees with floor semantics for every value a solver can pick."""
    ctx = z3.Context()
    x, s = z3.Int("x", ctx), z3.Int("s", ctx)
    (expr,) = exprs("d0 mod s0 + (d0 floordiv s0) * s0", dims="d0", symbols="s0")
    solver = z3.Solver(ctx=ctx)
    solver.add(s != 0, affine_term(expr, [x], [s], ctx) != x)
    assert solver.check() == z3.unsat


def test_numpy_domain():
    """Each row of dims/symbols is one evaluation; constants fill the row shape."""
    dims = np.array([[case[1], case[2]] for case in CASES])
    symbols = np.array([[case[3]] for case in CASES])
    for row, (text, *_, expected) in enumerate(CASES):
        (expr,) = exprs(text)
        values = eval_affine(expr, dims, symbols)
        assert values.shape == (len(CASES),) and values.dtype == np.int64
        assert values[row] == expected


def test_numpy_constant_without_symbols():
    (expr,) = exprs("-5")
    values = eval_affine(expr, np.zeros((2, 3, 2), dtype=np.int32))
    assert values.shape == (2, 3) and (values == -5).all()


@pytest.mark.parametrize(
    "text, shape",
    [
        ("d0 - d1", "add(D0, mul(D1, -1))"),
        ("-d1", "mul(D1, -1)"),
        ("-5", "-5"),
        ("d0 - 3", "add(D0, -3)"),
        ("s0 ceildiv 4", "ceildiv(S0, 4)"),
        ("(d0 - 2) floordiv s0", "floordiv(add(D0, -2), S0)"),
        ("d1 mod 8", "mod(D1, 8)"),
    ],
)
def test_domain_sees_mlir_nodes(text, shape):
    """No subtraction or negation node: MLIR stores them as additions of products by -1 or negative constants."""
    (expr,) = exprs(text)
    assert fold_affine(expr, TEXT, ["D0", "D1"], ["S0"]) == shape


def test_left_operand_is_folded_first():
    calls = []

    def record(name):
        def apply(a, b):
            calls.append((name, a, b))
            return f"{name}({a}, {b})"

        return apply

    ops = AffineOps(
        constant=str,
        add=record("add"),
        mul=record("mul"),
        floordiv=record("floordiv"),
        ceildiv=record("ceildiv"),
        mod=record("mod"),
    )
    (expr,) = exprs("d0 floordiv 4 + d1 mod 8")
    fold_affine(expr, ops, ["D0", "D1"], [])
    assert [name for name, *_ in calls] == ["floordiv", "mod", "add"]
    assert calls[-1] == ("add", "floordiv(D0, 4)", "mod(D1, 8)")
