"""The signature expression language: values, Python semantics, C translation, rejection."""

import pytest

from tilemlir.runtime.expr import Expr, ExprError

SLOTS = {"M": 0, "N": 1, "K": 2}


def evaluate(text, M=10, N=-7, K=3):
    return Expr(text).closure(SLOTS)([M, N, K])


@pytest.mark.parametrize("text", [
    "(M + 3) // 4", "M * N - K", "N // K", "N % K", "-N % 4", "M % K == 1", "1 < M <= 10 < 11",
    "M > 0 and N < 0", "M < 0 or K", "not M", "min(M, N, K)", "max(M, 4) * 2", "+M - -N",
    "M != N", "M >= 10 and not (N > 0)", "0 or 0", "3", "True",
])
def test_matches_python(text):
    M, N, K = 10, -7, 3
    assert evaluate(text) == eval(text, {"min": min, "max": max}, {"M": M, "N": N, "K": K})


def test_names_in_first_seen_order_and_constants():
    expr = Expr("max(N, M) + N * K")
    assert expr.names == ("N", "M", "K")
    assert Expr("(7 + 3) // 4").constant() == 2
    assert Expr("max(1, 2)").constant() == 2
    assert Expr("M + 1").constant() is None


def test_short_circuit_skips_division_by_zero():
    assert evaluate("K == 0 or M // K == 3") is True
    assert evaluate("K != 3 and M // (K - 3) > 0") is False
    with pytest.raises(ZeroDivisionError):
        evaluate("M // (K - 3)")


@pytest.mark.parametrize("text, construct", [
    ("__import__('os').system('true')", "call __import__"),
    ("M.bit_length()", "call M.bit_length"),
    ("M ** 100000", "operator Pow"),
    ("M / 2", "operator Div"),
    ("M[0]", "Subscript"),
    ("(lambda: 1)()", "call"),
    ("M if N else K", "IfExp"),
    ("'abc'", "constant 'abc'"),
    ("[M, N]", "List"),
    ("min(*M)", "call min"),
    ("min(M)", "call min"),
    ("max(M, key=N)", "call max"),
    ("M << 2", "operator LShift"),
    ("M in (1, 2)", "operator In"),
])
def test_rejects_unsafe_or_unknown_syntax(text, construct):
    with pytest.raises(ExprError) as info:
        Expr(text)
    assert construct in str(info.value)
    assert repr(text) in str(info.value)


def test_rejects_syntax_errors_and_unknown_names():
    with pytest.raises(ExprError, match="not valid Python"):
        Expr("M +")
    with pytest.raises(ExprError, match=r"unknown name\(s\) P \(known: M, N, K\)"):
        Expr("M + P").closure(SLOTS)


def test_to_c_uses_floor_helpers_and_logical_operators():
    rename = {"M": "sym_M", "N": "sym_N"}.__getitem__
    assert Expr("(M + 3) // 4").to_c(rename) == "tl_floordiv((sym_M + 3LL), 4LL)"
    assert Expr("M % 128 == 0 and not N").to_c(rename) == "((tl_floormod(sym_M, 128LL) == 0LL) && (!sym_N))"
    assert Expr("0 < M <= N").to_c(rename) == "((0LL < sym_M) && (sym_M <= sym_N))"
    assert Expr("min(M, N, 4)").to_c(rename) == "tl_min(tl_min(sym_M, sym_N), 4LL)"
