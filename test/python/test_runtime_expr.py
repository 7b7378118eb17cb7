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
    with pytest.raises(ZeroDivisionError, match="integer division or modulo by zero"):
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


@pytest.mark.parametrize("text, steps", [
    ("(M + 3) // 4", [("load", 0), ("const", 3), ("+",), ("const", 4), ("//",)]),
    ("M * N - K % 8", [("load", 0), ("load", 1), ("*",), ("load", 2), ("const", 8), ("%",), ("-",)]),
    ("-N % 4", [("load", 1), ("neg",), ("const", 4), ("%",)]),
    ("+M - -N", [("load", 0), ("load", 1), ("neg",), ("-",)]),
    ("min(M, N, K)", [("load", 0), ("load", 1), ("load", 2), ("min", 3)]),
    ("max(M, 4) * 2", [("load", 0), ("const", 4), ("max", 2), ("const", 2), ("*",)]),
    ("9223372036854775807", [("const", 2**63 - 1)]),
    ("K", [("load", 2)]),
])
def test_to_postfix_of_integer_expressions(text, steps):
    assert Expr(text).to_postfix(SLOTS) == steps
    assert Expr(text).to_postfix(SLOTS, boolean=True) == steps  # an int's truth is the C truth of its value


@pytest.mark.parametrize("text, steps", [
    ("M % 128 == 0", [("load", 0), ("const", 128), ("%",), ("const", 0), ("==",)]),
    ("1 < M <= 10", [("const", 1), ("load", 0), ("<",), ("load", 0), ("const", 10), ("<=",), ("and", 2)]),
    ("M != N >= K > 0", [("load", 0), ("load", 1), ("!=",), ("load", 1), ("load", 2), (">=",), ("load", 2),
                         ("const", 0), (">",), ("and", 3)]),
    ("M > 0 and not N", [("load", 0), ("const", 0), (">",), ("load", 1), ("not",), ("and", 2)]),
    ("M < 0 or K or N == 1", [("load", 0), ("const", 0), ("<",), ("load", 2), ("load", 1), ("const", 1), ("==",),
                              ("or", 3)]),
    ("not (M and N)", [("load", 0), ("load", 1), ("and", 2), ("not",)]),
    ("True", [("const", 1)]),
    ("False or M", [("const", 0), ("load", 0), ("or", 2)]),
])
def test_to_postfix_of_truth_values_only_where_truth_is_asked(text, steps):
    assert Expr(text).to_postfix(SLOTS, boolean=True) == steps
    assert Expr(text).to_postfix(SLOTS) is None  # Python's value may be True/False or an operand, not 0/1


@pytest.mark.parametrize("text", [
    "M + 0.5", "M * 2.0", "M > 0.5", "max(M, 1.5)", "1.0",  # floats
    "M + P", "P > 0",  # a name outside the slots
    "(M and N) * 2", "min(M > 0, 1)", "(M or N) == 1",  # and/or's operand value, min's bool operand
    "9223372036854775808", "-9223372036854775808", "M > 1180591620717411303424",  # constants beyond int64
])
def test_to_postfix_refuses_what_it_cannot_compute_exactly(text):
    assert Expr(text).to_postfix(SLOTS, boolean=True) is None
    assert Expr(text).to_postfix(SLOTS) is None


def test_to_postfix_reads_the_given_slots():
    assert Expr("b - a").to_postfix({"a": 7, "b": 63}) == [("load", 63), ("load", 7), ("-",)]



@pytest.mark.parametrize("text, steps", [
    ("(M > 0) + 1", [("load", 0), ("const", 0), (">",), ("const", 1), ("+",)]),
    ("-(M > 0)", [("load", 0), ("const", 0), (">",), ("neg",)]),
    ("+(M < N)", [("load", 0), ("load", 1), ("<",)]),
    ("True + 1", [("const", 1), ("const", 1), ("+",)]),
    ("M + (N > 0)", [("load", 0), ("load", 1), ("const", 0), (">",), ("+",)]),
    ("flag * M", [("load", 3), ("load", 0), ("*",)]),
])
def test_python_bools_are_0_and_1_in_arithmetic(text, steps):
    """A comparison's or a bool name's value is exactly 0 or 1, as Python's True/False in arithmetic."""
    assert Expr(text).to_postfix(SLOTS | {"flag": 3}, bool_names=frozenset({"flag"})) == steps


@pytest.mark.parametrize("text", ["M > 0", "flag", "not M", "True"])
def test_a_bool_is_no_int_value(text):
    """The general path refuses a grid extent of True (not an int), so the plan may not compute one."""
    slots, bools = SLOTS | {"flag": 3}, frozenset({"flag"})
    assert Expr(text).to_postfix(slots, bool_names=bools) is None
    assert Expr(text).to_postfix(slots, boolean=True, bool_names=bools) is not None


# -- wrap(x, bits) and wrapu(x, bits): what a sized integer holds ----------------------------------------------------

WRAP_VALUES = [0, 1, -1, 127, 128, -128, -129, 255, 256, 2**15, 2**31 - 1, 2**31, -(2**31) - 1, 2**32 + 400, 2**40 + 3,
               -(2**40) - 3, 2**63 - 1, -(2**63), 2**63, 2**64 + 5, -(2**70) + 11]


def numpy_wrap(value, bits, unsigned):
    """The wrap as numpy's fixed-width integers compute it (bits 8..64): the low bits, reinterpreted."""
    import numpy as np

    low = np.array(value % 2**64, dtype=np.uint64).astype(f"uint{bits}")
    return int(low) if unsigned else int(low.view(f"int{bits}"))


@pytest.mark.parametrize("bits", [8, 16, 32, 64])
def test_wrap_reads_the_low_bits_as_numpy_does(bits):
    signed, unsigned = Expr(f"wrap(M, {bits})").closure(SLOTS), Expr(f"wrapu(M, {bits})").closure(SLOTS)
    for value in WRAP_VALUES:
        assert signed([value, 0, 0]) == numpy_wrap(value, bits, False), value
        assert unsigned([value, 0, 0]) == numpy_wrap(value, bits, True), value


@pytest.mark.parametrize("text, env, value", [
    ("wrap(M, 1)", (1, 0, 0), -1), ("wrap(M, 1)", (2, 0, 0), 0), ("wrapu(M, 1)", (-1, 0, 0), 1),
    ("wrap(M * 4, 32)", (2**30 + 100, 0, 0), 400), ("-(-wrap(M * 4, 32) // 128)", (2**30 + 100, 0, 0), 4),
    ("(wrapu(M * 4, 32) + 127) // 128", (2**30 + 100, 0, 0), 4), ("wrap(M, 8)", (300, 0, 0), 44),
    ("wrap(M, 8)", (200, 0, 0), -56), ("wrap(M + N, 63)", (2**61, 2**61, 0), -(2**62)), ("wrapu(True, 8)", (), 1),
])
def test_wrap_values(text, env, value):
    assert Expr(text).closure(SLOTS)(env) == value


@pytest.mark.parametrize("text", ["wrap(M, 32)", "wrapu(M * N, 8) + K", "-(-wrap(M * 4, 32) // 128)",
                                  "wrap(wrapu(M, 16) - N, 64)", "min(wrap(M, 8), K)"])
def test_wrap_python_source_evaluates_like_the_closure(text):
    """The fast path's source writes a wrap out with %, the builtins only."""
    expr = Expr(text)
    source = expr.to_python(lambda name: f"s_{name}")
    assert "wrap" not in source.replace("s_", "")
    for value in WRAP_VALUES:
        env = [value, 3 - value, 7]
        assert eval(source, {"__builtins__": {"min": min}}, {"s_M": env[0], "s_N": env[1], "s_K": env[2]}) == \
            expr.closure(SLOTS)(env), (text, value)


def test_wrap_in_c_and_postfix():
    rename = {"M": "sym_M"}.__getitem__
    assert Expr("-(-wrap(M * 4, 32) // 128)").to_c(rename) == "(-tl_floordiv((-tl_wrap((sym_M * 4LL), 32)), 128LL))"
    assert Expr("wrapu(M, 8)").to_c(rename) == "tl_wrapu(sym_M, 8)"
    assert Expr("(wrapu(M * 4, 32) + 127) // 128").to_postfix(SLOTS) == [
        ("load", 0), ("const", 4), ("*",), ("wrapu", 32), ("const", 127), ("+",), ("const", 128), ("//",)]
    assert Expr("wrap(M, 8)").to_postfix(SLOTS) == [("load", 0), ("wrap", 8)]
    assert Expr("wrap(flag, 1)").to_postfix(SLOTS | {"flag": 3}, bool_names=frozenset({"flag"})) == \
        [("load", 3), ("wrap", 1)]  # of a bool, an int
    assert Expr("wrap(M + 0.5, 8)").to_postfix(SLOTS) is None
    assert Expr("wrap(M > 0 and N, 8)").to_postfix(SLOTS) is None  # and's operand value


@pytest.mark.parametrize("text", ["wrap(M)", "wrap(M, 0)", "wrapu(M, 65)", "wrap(M, N)", "wrap(M, 8.0)",
                                  "wrap(M, True)", "wrap(*M, 8)", "wrap(M, bits=8)", "wrap(M, 8, 1)", "wrap(M, -8)"])
def test_wrap_needs_one_operand_and_a_literal_width(text):
    with pytest.raises(ExprError, match=r"call wrapu?\(\.\.\.\) is not allowed .*wrap\(x, bits\) and wrapu\(x, bits\) "
                                        r"with bits an int literal in 1\.\.64"):
        Expr(text)


def test_wrap_names_and_constants():
    assert Expr("wrap(N * M, 16) + K").names == ("N", "M", "K")
    assert Expr("wrap(70000, 16)").constant() == 4464
