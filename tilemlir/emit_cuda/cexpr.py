"""C++ expressions as text with their precedence, so operands get parentheses only where needed.

Integer literals are kept as numbers (`value`), which lets the emitter fold
trivial index math (`x * 1`, `x + 0`, `2 * 3`) while it builds expressions.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilemlir.emit_cuda import folding

# C++ precedence, higher binds tighter.
ATOM, UNARY, MUL, ADD, SHIFT, REL, EQ, BITAND, BITXOR, BITOR, AND, OR, COND = (
    16, 15, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3)

_BINARY_PREC = {
    "*": MUL, "/": MUL, "%": MUL, "+": ADD, "-": ADD, "<<": SHIFT, ">>": SHIFT,
    "<": REL, "<=": REL, ">": REL, ">=": REL, "==": EQ, "!=": EQ,
    "&": BITAND, "^": BITXOR, "|": BITOR, "&&": AND, "||": OR,
}
# Operators whose mixing with others reads badly without parentheses (and that compilers warn about).
_CLARIFY = {"<<", ">>", "&", "^", "|", "&&", "||"}
_LOGIC = {"&&", "||"}
_COMPOUND = {"+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"}

_INT32 = (-(2**31), 2**31 - 1)


@dataclass(frozen=True)
class CExpr:
    text: str
    prec: int = ATOM
    op: str | None = None  # top-level binary operator, if any
    value: int | None = None  # the integer, when the expression is an integer literal
    left: "CExpr | None" = None
    right: "CExpr | None" = None

    def __str__(self) -> str:
        return self.text


def atom(text: str) -> CExpr:
    return CExpr(text)


def int_lit(value: int, wide: bool = False) -> CExpr:
    """An integer literal; `LL` when it does not fit in int (or `wide` asks for a long long)."""
    if value == -(2**63):  # 9223372036854775808LL does not fit in long long: negating it is no literal
        return CExpr("(-9223372036854775807LL - 1)", ATOM, value=value)
    suffix = "LL" if wide or not _INT32[0] <= value <= _INT32[1] else ""
    text = f"{value}{suffix}"
    return CExpr(text, UNARY if value < 0 else ATOM, value=value)


def paren(e: CExpr, min_prec: int) -> str:
    return e.text if e.prec >= min_prec else f"({e.text})"


def binary(op: str, a: CExpr, b: CExpr) -> CExpr:
    """`a op b` with parentheses where precedence (or clarity, for bitwise and logic) needs them."""
    prec = _BINARY_PREC[op]
    left = _operand(op, a, prec, right=False)
    right = _operand(op, b, prec, right=True)
    return CExpr(f"{left} {op} {right}", prec, op=op, left=a, right=b)


def _operand(op: str, e: CExpr, prec: int, right: bool) -> str:
    if e.prec < prec or (right and e.prec == prec):
        return f"({e.text})"
    if e.op is None or e.op == op:
        return e.text
    if op in _LOGIC:
        return f"({e.text})" if e.op in _CLARIFY else e.text  # `a < b && c` reads fine, `a && b || c` does not
    if op in _CLARIFY or e.op in _CLARIFY:
        return f"({e.text})"
    return e.text


def unary(op: str, e: CExpr) -> CExpr:
    if op == "-" and e.value is not None:
        return int_lit(-e.value)
    inner = e.text if e.prec >= UNARY and not (op == "-" and e.text.startswith("-")) else f"({e.text})"
    return CExpr(f"{op}{inner}", UNARY)


def call(name: str, *args: CExpr) -> CExpr:
    return CExpr(f"{name}({', '.join(a.text for a in args)})")


def cast(ctype: str, e: CExpr) -> CExpr:
    if e.prec == UNARY and e.text.startswith(f"({ctype})"):
        return e  # already a cast to `ctype` (a unary expression's first token is its operator)
    return CExpr(f"({ctype}){paren(e, UNARY)}", UNARY)


def cond(c: CExpr, a: CExpr, b: CExpr) -> CExpr:
    return CExpr(f"{paren(c, OR)} ? {paren(a, COND)} : {paren(b, COND)}", COND)


def subscript(base: CExpr, *indices: CExpr) -> CExpr:
    return CExpr(paren(base, ATOM) + "".join(f"[{i.text}]" for i in indices))


# -- integer arithmetic with folding ------------------------------------------------


def add(a: CExpr, b: CExpr) -> CExpr:
    return folding.add(a, b, int_lit, binary)


def sub(a: CExpr, b: CExpr) -> CExpr:
    if a.value is not None and b.value is not None:
        return int_lit(a.value - b.value)
    if b.value == 0:
        return a
    if b.value is not None and b.value < 0:
        return binary("+", a, int_lit(-b.value))
    return binary("-", a, b)


def mul(a: CExpr, b: CExpr) -> CExpr:
    return folding.mul(a, b, int_lit, binary)


def div(a: CExpr, b: CExpr) -> CExpr:
    """C division (truncating); folds only where C's result is certain."""
    if b.value == 1:
        return a
    if a.value is not None and b.value:
        quotient = abs(a.value) // abs(b.value)
        return int_lit(quotient if (a.value >= 0) == (b.value > 0) else -quotient)
    return binary("/", a, b)


def rem(a: CExpr, b: CExpr) -> CExpr:
    if b.value == 1:
        return int_lit(0)
    if a.value is not None and b.value:
        r = abs(a.value) % abs(b.value)
        return int_lit(r if a.value >= 0 else -r)
    return binary("%", a, b)


def compound_assignment(lhs: str, rhs: CExpr) -> str:
    """`lhs = rhs;`, or `lhs op= rest;` when rhs is `lhs op rest`."""
    if rhs.op in _COMPOUND and rhs.left is not None and rhs.left.text == lhs and rhs.right is not None:
        return f"{lhs} {rhs.op}= {rhs.right.text};"
    return f"{lhs} = {rhs.text};"
