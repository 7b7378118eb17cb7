"""The small expression language of kernel signatures, evaluated safely.

Grid extents, dynamic shared bytes and `T.assume` facts are Python
expressions over symbolic dims and scalar parameters, e.g. ``(M + 3) // 4``
or ``N % 128 == 0 and M > 0``. They are parsed once with `ast`, checked
against a whitelist, and turned into nested Python closures that read their
names from a flat environment list: nothing is ever passed to `eval`.

Allowed: int, float and bool constants; names; ``+ - * // %``; unary ``-``
and ``+``; comparisons (chained too); ``and``, ``or``, ``not``; ``min(a, b, ...)``
and ``max(a, b, ...)``; ``wrap(x, bits)`` and ``wrapu(x, bits)``, `x` reduced
modulo ``2**bits`` into the signed range ``[-2**(bits-1), 2**(bits-1))`` or
the unsigned one ``[0, 2**bits)`` (what a sized integer of that width holds:
a grid computed in int32 arithmetic wraps as the device's does), `bits` an
int literal in 1..64. Everything else (attributes, subscripts, ``**``,
``/``, other calls, lambdas, ...) is rejected with the offending construct
named.
"""

from __future__ import annotations

import ast
import operator
from typing import Any, Callable, Mapping, Sequence

from tilemlir.python_ast import parse

Env = Sequence[Any]
Closure = Callable[[Env], Any]

_BINARY = {
    ast.Add: (operator.add, "+"),
    ast.Sub: (operator.sub, "-"),
    ast.Mult: (operator.mul, "*"),
    ast.FloorDiv: (operator.floordiv, "//"),
    ast.Mod: (operator.mod, "%"),
}
_COMPARE = {
    ast.Eq: (operator.eq, "=="),
    ast.NotEq: (operator.ne, "!="),
    ast.Lt: (operator.lt, "<"),
    ast.LtE: (operator.le, "<="),
    ast.Gt: (operator.gt, ">"),
    ast.GtE: (operator.ge, ">="),
}
_CALLS = {"min": min, "max": max}
_WRAPS = ("wrap", "wrapu")
MAX_WRAP_BITS = 64


def wrap(value: int, bits: int) -> int:
    """`value` as a signed `bits`-bit integer holds it: reduced into [-2**(bits-1), 2**(bits-1))."""
    half = 1 << (bits - 1)
    return (value + half) % (2 * half) - half


def wrapu(value: int, bits: int) -> int:
    """`value` as an unsigned `bits`-bit integer holds it: reduced into [0, 2**bits)."""
    return value % (1 << bits)


_WRAP_FNS = {"wrap": wrap, "wrapu": wrapu}


class ExprError(ValueError):
    """An expression outside the allowed language, or naming an unknown name."""


class Expr:
    """One parsed, validated expression; `names` are its free names in first-seen order."""

    def __init__(self, text: str):
        self.text = text
        try:
            tree = parse(text.strip(), mode="eval")
        except SyntaxError as exc:
            raise ExprError(f"expression {text!r} is not valid Python: {exc.msg}") from None
        self._root = tree.body
        names: list[str] = []
        self._validate(self._root, names)
        self.names = tuple(names)

    def __repr__(self) -> str:
        return f"Expr({self.text!r})"

    def _validate(self, node: ast.AST, names: list[str]) -> None:
        if isinstance(node, ast.Constant):
            if not isinstance(node.value, (bool, int, float)):
                raise ExprError(f"expression {self.text!r}: constant {node.value!r} is not a number")
            return
        if isinstance(node, ast.Name):
            if node.id not in names:
                names.append(node.id)
            return
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            children = [node.left, node.right]
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Not)):
            children = [node.operand]
        elif isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
            children = [node.left, *node.comparators]
        elif isinstance(node, ast.BoolOp):
            children = list(node.values)
        elif isinstance(node, ast.Call) and self._is_min_max(node):
            children = list(node.args)
        elif isinstance(node, ast.Call) and self._is_wrap(node):
            children = node.args[:1]
        else:
            raise ExprError(f"expression {self.text!r}: {self._describe(node)} is not allowed "
                            "(allowed: numbers, names, + - * // %, comparisons, and/or/not, min, max, "
                            f"wrap(x, bits) and wrapu(x, bits) with bits an int literal in 1..{MAX_WRAP_BITS})")
        for child in children:
            self._validate(child, names)

    @staticmethod
    def _is_min_max(node: ast.Call) -> bool:
        return (isinstance(node.func, ast.Name) and node.func.id in _CALLS and not node.keywords
                and len(node.args) >= 2 and not any(isinstance(a, ast.Starred) for a in node.args))

    @staticmethod
    def _is_wrap(node: ast.Call) -> bool:
        if not (isinstance(node.func, ast.Name) and node.func.id in _WRAPS and not node.keywords
                and len(node.args) == 2 and not isinstance(node.args[0], ast.Starred)):
            return False
        bits = node.args[1]
        return isinstance(bits, ast.Constant) and type(bits.value) is int and 1 <= bits.value <= MAX_WRAP_BITS

    @staticmethod
    def _describe(node: ast.AST) -> str:
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare)):
            op = getattr(node, "op", None) or node.ops[0]  # type: ignore[attr-defined]
            return f"operator {type(op).__name__}"
        if isinstance(node, ast.Call):
            return f"call {ast.unparse(node.func)}(...)"
        return f"{type(node).__name__} '{ast.unparse(node)}'"

    def closure(self, slots: Mapping[str, int]) -> Closure:
        """A function env -> value, where name `n` reads ``env[slots[n]]``."""
        missing = [n for n in self.names if n not in slots]
        if missing:
            raise ExprError(f"expression {self.text!r} uses unknown name(s) {', '.join(missing)} "
                            f"(known: {', '.join(slots) or 'none'})")
        return _build(self._root, slots)

    def constant(self) -> Any | None:
        """The value when the expression has no names, else None."""
        return _build(self._root, {})(()) if not self.names else None

    def to_c(self, rename: Callable[[str], str]) -> str:
        """C++ source for the expression over 64-bit ints, with names spelled by `rename`.

        Uses the helpers `tl_floordiv`, `tl_floormod`, `tl_min`, `tl_max` that
        keep Python's floor semantics, and `tl_wrap`, `tl_wrapu` (see the
        exported host launcher)."""
        return _to_c(self._root, rename)

    def to_postfix(self, slots: Mapping[str, int], boolean: bool = False,
                   bool_names: frozenset[str] = frozenset()) -> list[tuple] | None:
        """The expression as postfix steps over 64-bit ints, for the native call
        plan: ("const", v), ("load", slot), (operator,) for ``+ - * // % neg not``
        and the comparisons, (name, count) for ``min max and or``, (name, bits)
        for ``wrap wrapu``.

        `boolean`: only the truth of the value matters (an assume); otherwise the
        value must be an int (a bool is not: the general path rejects a grid of
        True). `bool_names`: the names in `slots` that hold Python bools (0 or 1).
        None when the steps would not compute what `closure` does: a float or a
        name outside `slots`, a non-int where an int is needed, arithmetic on an
        and/or result (the steps give 0 or 1 where Python gives an operand)."""
        steps: list[tuple] = []
        kind = _postfix(self._root, slots, steps, bool_names)
        return steps if kind == "int" or (boolean and kind is not None) else None

    def to_python(self, rename: Callable[[str], str]) -> str:
        """Python source for the expression with names spelled by `rename`
        (min and max stay the builtins, wrap and wrapu are written out with
        ``%``); it evaluates exactly as `closure` does."""
        return ast.unparse(_Rename(rename).visit(parse(self.text.strip(), mode="eval")).body)


class _Rename(ast.NodeTransformer):
    def __init__(self, rename: Callable[[str], str]):
        self._rename = rename

    def visit_Call(self, node: ast.Call) -> ast.expr:
        node.args = [self.visit(a) for a in node.args]
        if node.func.id in _WRAPS:  # type: ignore[attr-defined]
            return _wrap_arithmetic(node.func.id, node.args[0], node.args[1].value)  # type: ignore[attr-defined]
        return node

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name(self._rename(node.id), node.ctx)


def _wrap_arithmetic(name: str, operand: ast.expr, bits: int) -> ast.expr:
    """``wrapu(x, b)`` as ``x % 2**b``; ``wrap(x, b)`` as ``(x + 2**(b-1)) % 2**b - 2**(b-1)``."""
    modulus = ast.Constant(1 << bits)
    if name == "wrapu":
        return ast.BinOp(operand, ast.Mod(), modulus)
    half = ast.Constant(1 << (bits - 1))
    return ast.BinOp(ast.BinOp(ast.BinOp(operand, ast.Add(), half), ast.Mod(), modulus), ast.Sub(), half)


def _build(node: ast.AST, slots: Mapping[str, int]) -> Closure:
    closure = _build_node(node, slots)
    if isinstance(node, ast.Name):
        return closure
    if not _free_names(node):
        try:
            value = closure(())
        except ArithmeticError:
            return closure  # fails at every call, with the caller's message
        return lambda env: value
    return closure


def _free_names(node: ast.AST) -> bool:
    callees = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
    return any(isinstance(n, ast.Name) and id(n) not in callees for n in ast.walk(node))


def _build_node(node: ast.AST, slots: Mapping[str, int]) -> Closure:
    if isinstance(node, ast.Constant):
        value = node.value
        return lambda env: value
    if isinstance(node, ast.Name):
        slot = slots[node.id]
        return lambda env: env[slot]
    if isinstance(node, ast.BinOp):
        fn = _BINARY[type(node.op)][0]
        left, right = _build_node(node.left, slots), _build_node(node.right, slots)
        return lambda env: fn(left(env), right(env))
    if isinstance(node, ast.UnaryOp):
        operand = _build_node(node.operand, slots)
        if isinstance(node.op, ast.Not):
            return lambda env: not operand(env)
        if isinstance(node.op, ast.USub):
            return lambda env: -operand(env)
        return operand
    if isinstance(node, ast.Compare):
        return _build_compare(node, slots)
    if isinstance(node, ast.BoolOp):
        values = tuple(_build_node(v, slots) for v in node.values)
        if isinstance(node.op, ast.And):
            return lambda env: _all(values, env)
        return lambda env: _any(values, env)
    assert isinstance(node, ast.Call)
    if node.func.id in _WRAPS:  # type: ignore[attr-defined]
        wrap_fn, operand, bits = _WRAP_FNS[node.func.id], _build_node(node.args[0], slots), node.args[1].value
        return lambda env: wrap_fn(operand(env), bits)
    fn = _CALLS[node.func.id]  # type: ignore[attr-defined]
    args = tuple(_build_node(a, slots) for a in node.args)
    if len(args) == 2:
        first, second = args
        return lambda env: fn(first(env), second(env))
    return lambda env: fn([a(env) for a in args])


def _build_compare(node: ast.Compare, slots: Mapping[str, int]) -> Closure:
    operands = [_build_node(node.left, slots)] + [_build_node(c, slots) for c in node.comparators]
    ops = [_COMPARE[type(op)][0] for op in node.ops]
    if len(ops) == 1:
        fn, left, right = ops[0], operands[0], operands[1]
        return lambda env: fn(left(env), right(env))
    steps = tuple(zip(ops, operands[1:]))
    first = operands[0]

    def chained(env: Env) -> bool:
        left = first(env)
        for fn, operand in steps:
            right = operand(env)
            if not fn(left, right):
                return False
            left = right
        return True

    return chained


def _all(values: tuple[Closure, ...], env: Env) -> Any:
    result: Any = True
    for value in values:
        result = value(env)
        if not result:
            return result
    return result


def _any(values: tuple[Closure, ...], env: Env) -> Any:
    result: Any = False
    for value in values:
        result = value(env)
        if result:
            return result
    return result


_POSTFIX_BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%"}
_POSTFIX_COMPARE = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def _postfix(node: ast.AST, slots: Mapping[str, int], steps: list[tuple], bools: frozenset[str]) -> str | None:
    """Appends `node`'s steps; its kind: "int", "bool" (a Python bool: exactly 0 or 1), "truth"
    (and/or, whose Python value is an operand: only its truth is right), or None (not expressible)."""
    numeric = ("int", "bool")  # Python arithmetic takes bools as 0 and 1
    if isinstance(node, ast.Constant):
        if type(node.value) not in (int, bool) or not -(2**63) <= node.value < 2**63:
            return None
        steps.append(("const", int(node.value)))
        return "bool" if type(node.value) is bool else "int"
    if isinstance(node, ast.Name):
        if node.id not in slots:
            return None
        steps.append(("load", slots[node.id]))
        return "bool" if node.id in bools else "int"
    if isinstance(node, ast.BinOp):
        if (_postfix(node.left, slots, steps, bools) not in numeric
                or _postfix(node.right, slots, steps, bools) not in numeric):
            return None
        steps.append((_POSTFIX_BINARY[type(node.op)],))
        return "int"
    if isinstance(node, ast.UnaryOp):
        kind = _postfix(node.operand, slots, steps, bools)
        if isinstance(node.op, ast.Not):
            steps.append(("not",))
            return None if kind is None else "bool"
        if kind not in numeric:
            return None
        if isinstance(node.op, ast.USub):
            steps.append(("neg",))
        return "int"
    if isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        for left, op, right in zip(operands, node.ops, operands[1:]):
            if (_postfix(left, slots, steps, bools) not in numeric
                    or _postfix(right, slots, steps, bools) not in numeric):
                return None
            steps.append((_POSTFIX_COMPARE[type(op)],))
        if len(node.ops) > 1:
            steps.append(("and", len(node.ops)))
        return "bool"
    if isinstance(node, ast.BoolOp):
        if any(_postfix(v, slots, steps, bools) is None for v in node.values):
            return None
        steps.append(("and" if isinstance(node.op, ast.And) else "or", len(node.values)))
        return "truth"
    assert isinstance(node, ast.Call)
    if node.func.id in _WRAPS:  # type: ignore[attr-defined]
        if _postfix(node.args[0], slots, steps, bools) not in numeric:
            return None
        steps.append((node.func.id, node.args[1].value))  # type: ignore[attr-defined]
        return "int"
    if any(_postfix(a, slots, steps, bools) != "int" for a in node.args):
        return None  # min/max return an operand: of bools, a bool
    steps.append((node.func.id, len(node.args)))  # type: ignore[attr-defined]
    return "int"


def _to_c(node: ast.AST, rename: Callable[[str], str]) -> str:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool):
            return "true" if node.value else "false"
        return f"{node.value}LL" if isinstance(node.value, int) else repr(float(node.value))
    if isinstance(node, ast.Name):
        return rename(node.id)
    if isinstance(node, ast.BinOp):
        left, right = _to_c(node.left, rename), _to_c(node.right, rename)
        if isinstance(node.op, ast.FloorDiv):
            return f"tl_floordiv({left}, {right})"
        if isinstance(node.op, ast.Mod):
            return f"tl_floormod({left}, {right})"
        return f"({left} {_BINARY[type(node.op)][1]} {right})"
    if isinstance(node, ast.UnaryOp):
        symbol = {ast.Not: "!", ast.USub: "-", ast.UAdd: "+"}[type(node.op)]
        return f"({symbol}{_to_c(node.operand, rename)})"
    if isinstance(node, ast.Compare):
        operands = [_to_c(node.left, rename)] + [_to_c(c, rename) for c in node.comparators]
        parts = [f"({operands[i]} {_COMPARE[type(op)][1]} {operands[i + 1]})" for i, op in enumerate(node.ops)]
        return parts[0] if len(parts) == 1 else "(" + " && ".join(parts) + ")"
    if isinstance(node, ast.BoolOp):
        joiner = " && " if isinstance(node.op, ast.And) else " || "
        return "(" + joiner.join(_to_c(v, rename) for v in node.values) + ")"
    assert isinstance(node, ast.Call)
    if node.func.id in _WRAPS:  # type: ignore[attr-defined]
        return f"tl_{node.func.id}({_to_c(node.args[0], rename)}, {node.args[1].value})"  # type: ignore[attr-defined]
    args = [_to_c(a, rename) for a in node.args]
    out = args[0]
    for arg in args[1:]:
        out = f"tl_{node.func.id}({out}, {arg})"  # type: ignore[attr-defined]
    return out
