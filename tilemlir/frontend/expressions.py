"""Expressions: compile-time values fold in Python, run-time ones become arith/math/memref ops.

An expression evaluates to a Python value when every operand is known at
compile time (Python's own semantics then apply), and to a `Scalar` when any
operand is a run-time value. `T.symbolic` dims count as run-time values in
arithmetic (they are read with `memref.dim`).
"""

from __future__ import annotations

import ast
import operator
from typing import Any

import numpy as np

from tilemlir.frontend import scalars
from tilemlir.frontend.source import KernelError
from tilemlir.frontend.values import Buffer, Scalar, is_runtime
from tilemlir.frontend.threads import ThreadIndex
from tilemlir.frontend.views import View
from tilemlir.language import DimExpr, DType, Symbolic
from tilemlir.mlir import memref

_BINARY = {
    ast.Add: ("+", operator.add),
    ast.Sub: ("-", operator.sub),
    ast.Mult: ("*", operator.mul),
    ast.Div: ("/", operator.truediv),
    ast.FloorDiv: ("//", operator.floordiv),
    ast.Mod: ("%", operator.mod),
    ast.Pow: ("**", operator.pow),
    ast.BitAnd: ("&", operator.and_),
    ast.BitOr: ("|", operator.or_),
    ast.BitXor: ("^", operator.xor),
    ast.LShift: ("<<", operator.lshift),
    ast.RShift: (">>", operator.rshift),
}

_UNARY = {
    ast.USub: ("unary -", operator.neg),
    ast.UAdd: ("unary +", operator.pos),
    ast.Not: ("not", operator.not_),
    ast.Invert: ("~", operator.invert),
}

_COMPARE = {
    ast.Eq: ("==", operator.eq),
    ast.NotEq: ("!=", operator.ne),
    ast.Lt: ("<", operator.lt),
    ast.LtE: ("<=", operator.le),
    ast.Gt: (">", operator.gt),
    ast.GtE: (">=", operator.ge),
    ast.Is: ("is", operator.is_),
    ast.IsNot: ("is not", operator.is_not),
    ast.In: ("in", lambda a, b: a in b),
    ast.NotIn: ("not in", lambda a, b: a not in b),
}

_UNSUPPORTED_EXPRESSIONS = {
    "ListComp": "comprehensions are not supported in kernel code; build the list outside the kernel or use a for loop",
    "SetComp": "comprehensions are not supported in kernel code; build the set outside the kernel",
    "DictComp": "comprehensions are not supported in kernel code; build the dict outside the kernel",
    "GeneratorExp": "generator expressions are not supported in kernel code; use a for loop",
    "NamedExpr": "the walrus operator `:=` is not supported in kernel code; assign on its own line",
    "Await": "async code is not supported in kernels",
    "Yield": "`yield` is not supported in kernel code",
    "YieldFrom": "`yield` is not supported in kernel code",
    "JoinedStr": "f-strings are not supported in kernel code",
    "Set": "set literals are not supported in kernel code",
    "Starred": "`*` unpacking is only supported in calls and tuple displays",
    "Slice": "a slice selects a tile: slices are only allowed in the buffer arguments of T.copy and T.atomic_add",
}


# float() rather than .item(): np.longdouble(x).item() stays a numpy scalar.
_PYTHON_NUMBERS = ((np.bool_, bool), (np.integer, int), (np.floating, float), (np.complexfloating, complex))


def plain_number(value: Any) -> Any:
    """A numpy scalar (np.float32(0.5), np.int64(4), np.True_) as the Python number it holds, so that it folds
    by the compile-time rules of Python numbers (np.True_ + np.True_ would be numpy's True, np.uint8(250) * 2
    a wrapped 244); anything else unchanged."""
    for numpy_type, python_type in _PYTHON_NUMBERS:
        if isinstance(value, numpy_type):
            return python_type(value)
    return value


def is_dynamic(value: Any) -> bool:
    """Whether `value` must be computed at run time (a Scalar, a Buffer, or a symbolic dim)."""
    return is_runtime(value) or isinstance(value, (Symbolic, DimExpr, ThreadIndex))


class ExprMixin:
    """Expression evaluation for `KernelBuilder`."""

    def eval(self, node: ast.expr) -> Any:
        with self.located(node):
            handler = getattr(self, f"expr_{type(node).__name__}", None)
            if handler is None:
                raise KernelError(
                    _UNSUPPORTED_EXPRESSIONS.get(type(node).__name__, f"{type(node).__name__} expressions are not supported in kernel code")
                )
            return plain_number(handler(node))

    def materialize(self, value: Any) -> Any:
        """A symbolic dim as its run-time index value; anything else unchanged."""
        if isinstance(value, Symbolic):
            return self.symbol_value(value)
        if isinstance(value, DimExpr):
            return self.dim_expr_value(value)
        if isinstance(value, ThreadIndex):
            return self.thread_index_value(value)
        return value

    def dim_expr_value(self, expr: DimExpr) -> Scalar:
        """A factory's arithmetic on dims, computed from the dims' run-time values."""
        left, right = (self.materialize(v) for v in (expr.left, expr.right))
        if expr.op == "ceildiv":
            return scalars.ceildiv(left, right)
        return scalars.binary(expr.op, scalars.to_index(left) if isinstance(left, Scalar) else left,
                              scalars.to_index(right) if isinstance(right, Scalar) else right)

    def operand(self, value: Any, what: str) -> Any:
        """A value usable in element arithmetic: a Scalar or a Python number."""
        value = self.materialize(value)
        if isinstance(value, Scalar) or isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, Buffer):
            raise KernelError(
                f"{what} on the whole {value.describe()} is not supported: index its elements, e.g. "
                f"{value.name}[i, j] inside T.Parallel, or use a tile operation such as T.copy or T.reduce_sum"
            )
        raise KernelError(f"{what} on a {type(value).__name__} value ({value!r}) is not supported in kernel code")

    # ------------------------------------------------------------------
    # Leaves.

    def expr_Constant(self, node: ast.Constant) -> Any:
        return node.value

    def expr_Name(self, node: ast.Name) -> Any:
        value = self.lookup(node.id)
        if getattr(value, "variable", False):
            return self.variable_value(value)
        return self.thread_index_value(value) if isinstance(value, ThreadIndex) else value

    def eval_buffer(self, node: ast.expr) -> Any:
        """The value of the buffer side of `node[...]`: a T.alloc_var's buffer itself, not its value."""
        if isinstance(node, ast.Name):
            value = self.lookup(node.id)
            if getattr(value, "variable", False):
                return value
        return self.eval(node)

    def expr_Attribute(self, node: ast.Attribute) -> Any:
        base = self.eval(node.value)
        attr = node.attr
        if isinstance(base, Buffer):
            if attr == "shape":
                return base.shape
            if attr == "dtype":
                return base.dtype
            if attr == "ndim":
                return base.rank
            if attr == "data":
                raise KernelError("TileLang's `buffer.data` (its data pointer, to alias the buffer as "
                                  "T.Tensor(shape, dtype, buffer.data)) is not supported by tilemlir: T.reshape(buffer, "
                                  "shape) or T.view give the same elements under another shape (docs/tilelang.md)")
            raise KernelError(f"a buffer has no attribute '{attr}' in kernel code (it has shape, dtype and ndim)")
        if isinstance(base, Scalar):
            if attr == "dtype":
                return base.dtype
            if attr == "astype":
                return self.astype_method(base, node)
            raise KernelError(f"a run-time {base.dtype} value has no attribute '{attr}' (it has dtype and astype)")
        try:
            return getattr(base, attr)
        except AttributeError as exc:
            if getattr(exc, "tilelang_feature", False):
                raise KernelError(exc.text) from None
            owner = getattr(base, "__name__", type(base).__name__)
            if owner == "tilemlir.language":
                owner = "T"
            import difflib

            close = difflib.get_close_matches(attr, dir(base), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise KernelError(f"'{owner}' has no attribute '{attr}'{hint}") from None

    def expr_Tuple(self, node: ast.Tuple) -> tuple:
        return tuple(self.eval_sequence(node.elts))

    def expr_List(self, node: ast.List) -> list:
        return self.eval_sequence(node.elts)

    def eval_sequence(self, nodes: list[ast.expr]) -> list:
        values = []
        for element in nodes:
            if isinstance(element, ast.Starred):
                values.extend(self.compile_time_iterable(element.value))
            else:
                values.append(self.eval(element))
        return values

    def compile_time_iterable(self, node: ast.expr) -> list:
        value = self.eval(node)
        if is_dynamic(value) and not isinstance(value, (tuple, list)):
            raise KernelError("`*` unpacking needs a compile-time tuple or list", node)
        try:
            return list(value)
        except TypeError:
            raise KernelError(f"cannot unpack a {type(value).__name__} value", node) from None

    def expr_Dict(self, node: ast.Dict) -> dict:
        result = {}
        for key, value in zip(node.keys, node.values):
            if key is None:
                extra = self.eval(value)
                if not isinstance(extra, dict):
                    raise KernelError("`**` unpacking needs a compile-time dict", value)
                result.update(extra)
            else:
                result[self.eval(key)] = self.eval(value)
        return result

    def expr_Lambda(self, node: ast.Lambda) -> Any:
        """A lambda is a compile-time function (e.g. a layout map); it sees the compile-time names in scope."""
        namespace = {**self.source.globals, **self.source.closure}
        for name, binding in self.env.items():
            if binding.scope.active and not binding.unusable and not is_runtime(binding.value):
                namespace[name] = binding.value
        code = compile(ast.Expression(body=node), self.source.file, "eval")
        return eval(code, namespace)  # noqa: S307 - the user's own kernel source

    # ------------------------------------------------------------------
    # Operators.

    def expr_BinOp(self, node: ast.BinOp) -> Any:
        symbol, python_op = _BINARY[type(node.op)]
        left, right = self.eval(node.left), self.eval(node.right)
        if not is_dynamic(left) and not is_dynamic(right):
            return self.fold(python_op, symbol, left, right)
        a, b = self.operand(left, f"'{symbol}'"), self.operand(right, f"'{symbol}'")
        if symbol == "**":
            return scalars.power(a, b)
        return scalars.binary(symbol, a, b)

    def fold(self, python_op, symbol: str, *args) -> Any:
        """Apply a Python operator to compile-time values; its exceptions become located errors. On bools
        only, the operator is the one run-time bools compute (`scalars.bool_fold`)."""
        if args and all(isinstance(a, bool) for a in args):
            python_op = scalars.bool_fold(symbol, python_op)
        try:
            return python_op(*args)
        except Exception as exc:
            shown = f" {symbol} ".join(repr(a) for a in args)
            raise KernelError(f"compile-time {shown} failed: {type(exc).__name__}: {exc}") from None

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Any:
        value = self.eval(node.operand)
        if not is_dynamic(value):
            symbol, python_op = _UNARY[type(node.op)]
            return self.fold(python_op, symbol, value)
        if isinstance(node.op, ast.Not):
            return scalars.logical_not(scalars.truth(self.operand(value, "`not`"), "the operand of `not`"))
        operand = self.operand(value, "a unary operator")
        if isinstance(node.op, ast.USub):
            return scalars.negate(operand)
        if isinstance(node.op, ast.Invert):
            return scalars.invert(operand)
        return operand

    def expr_BoolOp(self, node: ast.BoolOp) -> Any:
        is_and = isinstance(node.op, ast.And)
        word = "and" if is_and else "or"
        result = self.eval(node.values[0])
        for value_node in node.values[1:]:
            if not is_dynamic(result):
                if bool(result) != is_and:  # Python's short circuit on a compile-time operand
                    return result
                result = self.eval(value_node)
                continue
            right = self.eval(value_node)
            lhs = scalars.truth(self.operand(result, f"`{word}`"), f"the operands of `{word}`")
            rhs = scalars.truth(self.operand(right, f"`{word}`"), f"the operands of `{word}`")
            result = scalars.logical(word, lhs, rhs)
        return result

    def expr_Compare(self, node: ast.Compare) -> Any:
        result = None
        left = self.eval(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.eval(right_node)
            symbol, python_op = _COMPARE[type(op)]
            if not is_dynamic(left) and not is_dynamic(right):
                pair = self.fold(python_op, symbol, left, right)
            elif symbol in ("is", "is not", "in", "not in"):
                raise KernelError(f"'{symbol}' only compares compile-time values")
            else:
                pair = scalars.compare(symbol, self.operand(left, f"'{symbol}'"), self.operand(right, f"'{symbol}'"))
            result = pair if result is None else self.conjunction(result, pair)
            left = right
        return result

    def conjunction(self, a: Any, b: Any) -> Any:
        if not is_dynamic(a) and not is_dynamic(b):
            return a and b
        if not is_dynamic(a):
            return b if a else a
        if not is_dynamic(b):
            return a if b else b
        return scalars.logical("and", a, b)

    def expr_IfExp(self, node: ast.IfExp) -> Any:
        condition = self.eval(node.test)
        if not is_dynamic(condition):
            return self.eval(node.body if condition else node.orelse)
        flag = scalars.truth(self.operand(condition, "a condition"), "the condition of `x if c else y`")
        a = self.operand(self.eval(node.body), "`x if c else y`")
        b = self.operand(self.eval(node.orelse), "`x if c else y`")
        return scalars.select(flag, a, b)

    # ------------------------------------------------------------------
    # Subscripts: buffer element loads and compile-time indexing.

    def expr_Subscript(self, node: ast.Subscript) -> Any:
        base = self.eval_buffer(node.value)
        if isinstance(base, View):
            base, indices = self.view_element(base, node.slice, "read")
            return Scalar(memref.LoadOp(base.value, indices).result, base.dtype)
        if isinstance(base, Buffer):
            indices = self.element_indices(base, node.slice, "read")
            return Scalar(memref.LoadOp(base.value, indices).result, base.dtype)
        if is_dynamic(base):
            raise KernelError(f"cannot index a run-time {getattr(base, 'dtype', '')} value")
        key = self.compile_time_key(node.slice)
        try:
            return base[key]
        except KernelError:
            raise
        except Exception as exc:
            raise KernelError(f"compile-time indexing failed: {type(exc).__name__}: {exc}") from None

    def compile_time_key(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Slice):
            parts = [None if p is None else self.eval(p) for p in (node.lower, node.upper, node.step)]
            if any(is_dynamic(p) for p in parts):
                raise KernelError("a compile-time sequence cannot be sliced with run-time values", node)
            return slice(*parts)
        if isinstance(node, ast.Tuple):
            return tuple(self.compile_time_key(e) for e in node.elts)
        key = self.eval(node)
        if is_dynamic(key):
            raise KernelError(
                "a compile-time tuple or list cannot be indexed with a run-time value; "
                "use a compile-time index, or put the values in a buffer",
                node,
            )
        return key

    def element_indices(self, buffer: Buffer, slice_node: ast.expr, access: str) -> list:
        """The index values of `buffer[...]` for one element; checks rank, types and where it is allowed."""
        self.check_element_access(buffer, access)
        nodes = slice_node.elts if isinstance(slice_node, ast.Tuple) else [slice_node]
        if any(isinstance(n, ast.Slice) for n in nodes):
            raise KernelError(
                f"a slice of '{buffer.name}' selects a tile, not an element: slices are only allowed in the buffer "
                "arguments of T.copy and T.atomic_add",
                slice_node,
            )
        if len(nodes) != buffer.rank:
            got = f"{len(nodes)} {'index' if len(nodes) == 1 else 'indices'}"
            raise KernelError(
                f"wrong number of indices: {buffer.describe()} has rank {buffer.rank}, got {got}", slice_node
            )
        return [self.element_index(buffer, dim, n).value for dim, n in enumerate(nodes)]

    def element_index(self, buffer: Buffer, dim: int, node: ast.expr) -> Scalar:
        with self.located(node):
            value = self.materialize(self.eval(node))
            if isinstance(value, int) and not isinstance(value, bool):
                size = buffer.shape[dim]
                if value < 0:
                    raise KernelError(f"negative index {value} into '{buffer.name}': indices count from 0")
                if isinstance(size, int) and value >= size:
                    raise KernelError(f"index {value} is out of range for dim {dim} of {buffer.describe()}")
            if isinstance(value, Scalar) and not scalars.is_integer(value.dtype):
                raise KernelError(f"an index must be an integer, got a {value.dtype} value (convert it with T.cast)")
            return scalars.to_index(value)

    def check_element_access(self, buffer: Buffer, access: str) -> None:
        if self.kernel is None or not self.kernel.scope.active:
            raise KernelError(f"cannot {access} elements of '{buffer.name}' outside the `with T.Kernel(...)` block")

    def dtype_value(self, value: Any, node: ast.AST) -> DType:
        from tilemlir import language as T

        try:
            return T.dtype(value)
        except ValueError as exc:
            raise KernelError(str(exc), node) from None
