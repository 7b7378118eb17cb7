"""Calls: `T.*` operations, dtype casts, and compile-time calls of ordinary Python functions.

A call of a `T.*` operation dispatches on the marker name language.py gives
it. Any other callable runs in Python at compile time when all its arguments
are compile-time values (so helpers computing block sizes just work); with a
run-time argument it is an error, since only `T.*` operations exist on the
device. Python's `abs`, `max`, `min` and `pow` act like their `T.` versions
on run-time values.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import math as pymath
from dataclasses import dataclass, field
from typing import Any

from tilemlir import language as T
from tilemlir.frontend import scalars
from tilemlir.frontend.expressions import is_dynamic
from tilemlir.frontend.macros import is_macro
from tilemlir.frontend.source import KernelError
from tilemlir.frontend.values import Buffer, Scalar, is_runtime
from tilemlir.language import DType

_NOT_EVALUATED = object()


@dataclass
class CallArgs:
    """A call's argument nodes bound to parameter names (values are evaluated on demand)."""

    what: str
    node: ast.Call
    nodes: dict[str, ast.expr]
    defaults: dict[str, Any]
    rest: list[ast.expr] = field(default_factory=list)

    def node_of(self, name: str) -> ast.expr:
        return self.nodes.get(name, self.node)


def _fold_bools(name: str, args: list) -> bool:
    """Compile-time value of a T math function on Python bools only, as the run-time code computes it:
    numpy's max / min of bools (or / and), abs / floor / ceil give the bool back, the rest are errors."""
    scalars.refuse_bool_function(name)
    if name in ("max", "min"):
        return getattr(builtins, name)(args)
    return args[0]


def _python_fold(name: str, args: list) -> Any:
    """Compile-time value of a T math function on Python numbers (a bool among others is 0 or 1)."""
    args = [int(a) if isinstance(a, bool) else a for a in args]
    if name in ("max", "min"):
        return getattr(builtins, name)(*args)
    if name == "abs":
        return builtins.abs(args[0])
    if name == "pow":
        return args[0] ** args[1]
    if name == "fma":
        return args[0] * args[1] + args[2]
    if name == "sigmoid":
        return 1.0 / (1.0 + pymath.exp(-args[0]))
    if name == "rsqrt":
        return 1.0 / pymath.sqrt(args[0])
    if name in scalars.INTEGRAL_ROUNDING:
        if not isinstance(args[0], float):
            return args[0]
        if name == "round":  # half away from zero, as C's round (Python's rounds half to even)
            return pymath.copysign(pymath.floor(builtins.abs(args[0]) + 0.5), args[0])
        return float(getattr(pymath, name)(args[0]))
    return getattr(pymath, name)(*args)


_ARITY = {"max": None, "min": None, "pow": 2, "fma": 3, "atan2": 2}
_BUILTIN_ELEMENT = {builtins.abs: "abs", builtins.max: "max", builtins.min: "min", builtins.pow: "pow"}


class CallMixin:
    """Call handling for `KernelBuilder`; tile-op handlers live in TileOpsMixin."""

    def expr_Call(self, node: ast.Call) -> Any:
        callee = self.eval(node.func)
        intrinsic = getattr(callee, "__tilemlir_intrinsic__", None)
        if intrinsic is not None:
            return self.call_intrinsic(intrinsic, node)
        if isinstance(callee, DType):
            args = self.bind_call(f"T.{callee.name}", node, ["value"])
            return self.cast(self.arg(args, "value"), callee)
        if callee in _BUILTIN_ELEMENT:
            return self.call_element_function(_BUILTIN_ELEMENT[callee], node, builtin=True)
        if is_macro(callee):
            return self.call_macro(callee, node)
        return self.call_python(callee, node)

    def eval_call_arguments(self, node: ast.Call) -> tuple[list[Any], dict[str, Any]]:
        """A call's positional and keyword arguments, evaluated (`**` needs a compile-time dict)."""
        args = self.eval_sequence(node.args)
        kwargs = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                extra = self.eval(keyword.value)
                if not isinstance(extra, dict):
                    raise KernelError("`**` unpacking needs a compile-time dict", keyword.value)
                kwargs.update(extra)
            else:
                kwargs[keyword.arg] = self.eval(keyword.value)
        return args, kwargs

    def call_python(self, callee: Any, node: ast.Call) -> Any:
        args, kwargs = self.eval_call_arguments(node)
        name = getattr(callee, "__name__", type(callee).__name__)
        if any(is_runtime(a) for a in [*args, *kwargs.values()]):
            hint = ""
            if callee in (builtins.int, builtins.float, builtins.bool):
                hint = f"; to convert a run-time value write T.cast(x, T.{'float32' if callee is builtins.float else 'int32' if callee is builtins.int else 'bool'})"
            elif callee is builtins.range:
                hint = "; write `for i in range(...)` directly in the loop header for a run-time loop"
            elif callee is builtins.print:
                hint = "; to print from the kernel as it runs write T.print(x, msg=...)"
            elif name == "<lambda>":
                hint = "; a lambda runs at compile time, so write the expression inline instead"
            elif inspect.isfunction(callee):
                hint = f"; to share kernel code, decorate '{name}' with @T.macro and it is inlined here"
            raise KernelError(
                f"cannot call the Python function '{name}' with run-time values: only T.* operations run on the "
                f"device, other calls are evaluated at compile time{hint}"
            )
        if not callable(callee):
            raise KernelError(f"a {type(callee).__name__} value is not callable")
        try:
            return callee(*args, **kwargs)
        except KernelError:
            raise
        except T.DeclarationError as exc:  # located at the frontend's own frame: relocate it at the call
            raise KernelError(exc.text) from None
        except Exception as exc:
            raise KernelError(f"compile-time call {name}(...) raised {type(exc).__name__}: {exc}") from None

    # ------------------------------------------------------------------
    # Argument binding.

    def bind_call(
        self, what: str, node: ast.Call, params: list[str], defaults: dict | None = None, varargs: bool = False
    ) -> CallArgs:
        """Match a call's argument nodes to `params`, with errors naming `what`.

        With `varargs`, positional arguments go to `rest` and `params` are keyword-only.
        """
        defaults = defaults or {}
        nodes: dict[str, ast.expr] = {}
        rest: list[ast.expr] = list(node.args) if varargs else []
        if not varargs:
            if any(isinstance(a, ast.Starred) for a in node.args):
                raise KernelError(f"{what}() does not accept `*` arguments", node)
            if len(node.args) > len(params):
                plural = "s" if len(params) != 1 else ""
                raise KernelError(
                    f"{what}() takes {len(params)} positional argument{plural} ({', '.join(params)}), "
                    f"got {len(node.args)}",
                    node,
                )
            nodes.update(zip(params, node.args))
        for keyword in node.keywords:
            if keyword.arg is None:
                raise KernelError(f"{what}() does not accept `**` arguments", keyword.value)
            if keyword.arg not in params:
                takes = ", ".join(params) or "none"
                raise KernelError(
                    f"{what}() got an unexpected keyword argument '{keyword.arg}' (keywords: {takes})", keyword
                )
            if keyword.arg in nodes:
                raise KernelError(f"{what}() got multiple values for argument '{keyword.arg}'", keyword)
            nodes[keyword.arg] = keyword.value
        for param in params:
            if param not in nodes and param not in defaults:
                raise KernelError(f"{what}() is missing its argument '{param}'", node)
        return CallArgs(what, node, nodes, defaults, rest)

    def arg(self, args: CallArgs, name: str) -> Any:
        if name in args.nodes:
            return self.eval(args.nodes[name])
        return args.defaults[name]

    def rest_args(self, args: CallArgs) -> list:
        return self.eval_sequence(args.rest)

    def compile_time_arg(self, args: CallArgs, name: str, kind: type | tuple, description: str) -> Any:
        """An argument that must be a compile-time value of Python type `kind`."""
        value = self.arg(args, name)
        node = args.node_of(name)
        if isinstance(value, T.Symbolic):
            raise KernelError(
                f"{args.what}: '{name}' must be {description}, but '{value.name}' is a symbolic dim known only at "
                "run time",
                node,
            )
        if is_runtime(value) or not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            shown = f"a run-time {value.dtype} value" if isinstance(value, Scalar) else repr(value)
            raise KernelError(f"{args.what}: '{name}' must be {description}, got {shown}", node)
        return value

    # ------------------------------------------------------------------
    # Intrinsics.

    def call_intrinsic(self, name: str, node: ast.Call) -> Any:
        if name in scalars.UNARY_FUNCTIONS or name in _ARITY:
            return self.call_element_function(name, node)
        handler = getattr(self, f"intrinsic_{name}", None)
        if handler is None:
            raise KernelError(f"T.{name}(...) can only be used as the iterable of a `for` loop or a `with` statement"
                              if name in ("Parallel", "serial", "unroll", "Pipelined", "Kernel")
                              else f"T.{name} is not supported here")
        return handler(node)

    def call_element_function(self, name: str, node: ast.Call, builtin: bool = False) -> Any:
        what = name if builtin else f"T.{name}"
        arity = _ARITY.get(name, 1)
        if node.keywords:
            raise KernelError(f"{what}() takes no keyword arguments", node.keywords[0].value)
        values = self.eval_sequence(node.args)
        if arity is None and len(values) < 2:
            if builtin and len(values) == 1 and not is_dynamic(values[0]):
                return self.fold(getattr(builtins, name), name, values[0])
            raise KernelError(f"{what}() needs at least two operands, got {len(values)}", node)
        if arity is not None and len(values) != arity:
            raise KernelError(f"{what}() takes {arity} argument{'s' if arity > 1 else ''}, got {len(values)}", node)
        if all(isinstance(v, bool) for v in values):
            return _fold_bools(name, values)
        if not any(is_dynamic(v) for v in values):
            if name == "fma":
                scalars.refuse_integer_fma(values)
            try:
                return _python_fold(name, values)
            except Exception as exc:
                raise KernelError(f"compile-time {what}{tuple(values)!r} failed: {type(exc).__name__}: {exc}") from None
        operands = [self.operand(v, what) for v in values]
        if name in ("max", "min"):
            return scalars.extremum(name, operands)
        if name == "pow":
            return scalars.power(*operands)
        if name == "fma":
            return scalars.fma(*operands)
        if name == "atan2":
            return scalars.atan2(*operands)
        return scalars.unary_function(name, operands[0])

    def cast(self, value: Any, dtype: DType) -> Any:
        value = self.materialize(value)
        if isinstance(value, Buffer):
            raise KernelError(
                f"T.cast converts scalars; to convert the tile '{value.name}' copy it into a buffer of "
                f"{dtype} with T.copy (copies convert)"
            )
        if isinstance(value, (bool, int, float)):
            if dtype.kind == "bool":
                return scalars.constant(bool(value), dtype)
            if scalars.is_integer(dtype) and isinstance(value, float):
                if not pymath.isfinite(value):
                    raise KernelError(f"cannot convert {value!r} to {dtype}")
                value = int(value)  # truncation toward zero, like the run-time conversion
            return scalars.constant(value, dtype)
        if not isinstance(value, Scalar):
            raise KernelError(f"T.cast needs a number or a run-time value, got {type(value).__name__}")
        return scalars.convert(value, dtype, explicit=True)

    def intrinsic_cast(self, node: ast.Call) -> Any:
        args = self.bind_call("T.cast", node, ["value", "dtype"])
        dtype = self.dtype_value(self.arg(args, "dtype"), args.node_of("dtype"))
        return self.cast(self.arg(args, "value"), dtype)

    def intrinsic_if_then_else(self, node: ast.Call) -> Any:
        args = self.bind_call("T.if_then_else", node, ["condition", "then_value", "else_value"])
        condition = self.arg(args, "condition")
        if not is_dynamic(condition):
            return self.arg(args, "then_value" if condition else "else_value")
        flag = scalars.truth(self.operand(condition, "T.if_then_else"), "the condition of T.if_then_else")
        a = self.operand(self.arg(args, "then_value"), "T.if_then_else")
        b = self.operand(self.arg(args, "else_value"), "T.if_then_else")
        return scalars.select(flag, a, b)

    def intrinsic_infinity(self, node: ast.Call) -> Scalar:
        args = self.bind_call("T.infinity", node, ["dtype"])
        dtype = self.dtype_value(self.arg(args, "dtype"), args.node_of("dtype"))
        if not dtype.is_float:
            raise KernelError(f"T.infinity needs a float dtype, got {dtype}", args.node_of("dtype"))
        return scalars.constant(pymath.inf, dtype)

    def intrinsic_ceildiv(self, node: ast.Call) -> Any:
        args = self.bind_call("T.ceildiv", node, ["a", "b"])
        a, b = self.arg(args, "a"), self.arg(args, "b")
        if not is_dynamic(a) and not is_dynamic(b):
            if isinstance(a, bool) or isinstance(b, bool):
                raise scalars.ceildiv_type_error(T.bool)
            if not all(isinstance(v, int) for v in (a, b)):
                raise KernelError(f"T.ceildiv needs integers, got {a!r} and {b!r}")
            if b == 0:
                raise KernelError("T.ceildiv by zero")
            return -(-a // b)
        return scalars.ceildiv(self.operand(a, "T.ceildiv"), self.operand(b, "T.ceildiv"))
