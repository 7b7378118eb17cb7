"""TileLang's (and TVM's) scalar spellings: `T.Cast`, `T.Select`, `T.And`, `T.Or`, `T.clamp`,
`T.max_value`, `T.min_value`, `T.alloc_var`, `x.astype(dtype)` on run-time values, and the hint
keywords of `T.copy` and `T.atomic_add`.

Each computes what TileLang's does (docs/tilelang.md): `T.Cast(dtype, x)` is
`T.cast(x, dtype)`, `T.Select` evaluates both sides like `T.if_then_else`,
`T.clamp(x, lo, hi)` is `T.min(T.max(x, lo), hi)`, `T.max_value` /
`T.min_value` are the dtype's finite extremes, `T.alloc_var(dtype, init)` is
a one-element per-thread buffer that starts at `init` (0 without), used as a
scalar (`v = x` stores into it, `v` reads it) or as `v[0]`.
`T.copy(..., disable_tma=, coalesced_width=, eviction_policy=)` hints change
no result and are checked, then left to the emitter; `T.atomic_add`'s adds
are relaxed, so `memory_order` other than "relaxed" is refused rather than
silently weakened.
"""

from __future__ import annotations

import ast
import builtins
import sys
from typing import Any

from tilemlir.dialects import tile
from tilemlir.frontend import scalars
from tilemlir.frontend.expressions import is_dynamic
from tilemlir.frontend.source import KernelError
from tilemlir.frontend.types import FLOAT_MAX, INDEX, int_range
from tilemlir.frontend.values import Buffer, Scalar
from tilemlir.mlir import memref
from tilemlir.language import DType

_VAR_SCOPES = ("local.var", "local")
# TileLang's keywords of T.copy and T.atomic_add that only hint at code generation.
COPY_HINTS = ("coalesced_width", "disable_tma", "eviction_policy")
ATOMIC_HINTS = ("memory_order", "return_prev", "use_tma")
_EVICTION_POLICIES = (None, "evict_normal", "evict_first", "evict_last")


def finite_extreme(dtype: DType, largest: bool) -> Any:
    """The largest (or lowest) finite value of `dtype` as a Python number."""
    if dtype.is_float:
        top = sys.float_info.max if dtype.bits == 64 else FLOAT_MAX[dtype.name]
        return top if largest else -top
    if dtype.kind == "bool":
        return largest
    low, high = int_range(dtype)
    return high if largest else low


class TileLangOpsMixin:
    """TileLang's scalar spellings for `KernelBuilder`."""

    def intrinsic_Cast(self, node: ast.Call) -> Any:  # noqa: N802 - TVM's spelling
        args = self.bind_call("T.Cast", node, ["dtype", "value"])
        dtype = self.dtype_value(self.arg(args, "dtype"), args.node_of("dtype"))
        return self.cast(self.arg(args, "value"), dtype)

    def intrinsic_Select(self, node: ast.Call) -> Any:  # noqa: N802 - TVM's spelling
        args = self.bind_call("T.Select", node, ["condition", "true_value", "false_value"])
        condition = self.arg(args, "condition")
        then_value, else_value = self.arg(args, "true_value"), self.arg(args, "false_value")
        if not is_dynamic(condition):
            return then_value if condition else else_value
        flag = scalars.truth(self.operand(condition, "T.Select"), "the condition of T.Select")
        return scalars.select(flag, self.operand(then_value, "T.Select"), self.operand(else_value, "T.Select"))

    def intrinsic_And(self, node: ast.Call) -> Any:  # noqa: N802 - TVM's spelling
        return self.logical_call("T.And", "and", node)

    def intrinsic_Or(self, node: ast.Call) -> Any:  # noqa: N802 - TVM's spelling
        return self.logical_call("T.Or", "or", node)

    def logical_call(self, what: str, word: str, node: ast.Call) -> Any:
        args = self.bind_call(what, node, ["a", "b"])
        a, b = self.arg(args, "a"), self.arg(args, "b")
        if not is_dynamic(a) and not is_dynamic(b):
            if not isinstance(a, bool) or not isinstance(b, bool):
                raise KernelError(f"{what} takes two bools, got {a!r} and {b!r}", node)
            return (a and b) if word == "and" else (a or b)
        lhs = scalars.truth(self.operand(a, what), f"the operands of {what}")
        rhs = scalars.truth(self.operand(b, what), f"the operands of {what}")
        return scalars.logical(word, lhs, rhs)

    def intrinsic_clamp(self, node: ast.Call) -> Any:
        args = self.bind_call("T.clamp", node, ["value", "min_value", "max_value"])
        values = [self.arg(args, name) for name in ("value", "min_value", "max_value")]
        if not any(is_dynamic(v) for v in values):
            value, low, high = values
            return builtins.min(builtins.max(value, low), high)
        value, low, high = (self.operand(v, "T.clamp") for v in values)
        return scalars.extremum("min", [scalars.extremum("max", [value, low]), high])

    def intrinsic_max_value(self, node: ast.Call) -> Scalar:
        return self.extreme_constant("T.max_value", node, largest=True)

    def intrinsic_min_value(self, node: ast.Call) -> Scalar:
        return self.extreme_constant("T.min_value", node, largest=False)

    def extreme_constant(self, what: str, node: ast.Call, largest: bool) -> Scalar:
        args = self.bind_call(what, node, ["dtype"])
        dtype = self.dtype_value(self.arg(args, "dtype"), args.node_of("dtype"))
        return scalars.constant(finite_extreme(dtype, largest), dtype)

    def astype_method(self, value: Scalar, node: ast.AST):
        """`value.astype`: a compile-time callable converting `value` (TileLang's `x.astype(dtype)`)."""

        def astype(dtype):
            return self.cast(value, self.dtype_value(dtype, node))

        return astype

    def intrinsic_alloc_var(self, node: ast.Call) -> Buffer:
        args = self.bind_call("T.alloc_var", node, ["dtype", "init", "scope"],
                              defaults={"init": None, "scope": "local.var"})
        init, scope = self.arg(args, "init"), self.arg(args, "scope")
        if isinstance(init, str) and "scope" not in args.nodes:  # TileLang's T.alloc_var(dtype, "local.var")
            init, scope = None, init
        if scope not in _VAR_SCOPES:
            raise KernelError(f"T.alloc_var: scope {scope!r} is not supported (a variable lives in 'local.var')",
                              args.node_of("scope"))
        self.require_tile_level("T.alloc_var")
        if self.scope is not self.kernel.scope:
            raise KernelError("T.alloc_var: allocate variables at the top level of the T.Kernel block, not inside a "
                              "loop or `if`")
        dtype = self.dtype_value(self.arg(args, "dtype"), args.node_of("dtype"))
        if self.thread_mode():
            variable = self.per_thread_buffer(node, [1], dtype, 0 if init is None else init, args.node_of("init"))
        else:
            variable = self.new_buffer(node, "local", tile.alloc_local, [1], dtype)
            zero = scalars.constant(0, INDEX).value
            self.store(variable, [zero], 0 if init is None else init, args.node_of("init"))
        variable.variable = True
        return variable

    def assigns_variable(self, name: str, value: Any) -> bool:
        """`v = value` where `v` names a live T.alloc_var: a store into it (TileLang's scalar variables)."""
        binding = self.env.get(name)
        return (binding is not None and binding.scope.active and not binding.unusable
                and getattr(binding.value, "variable", False) and not getattr(value, "variable", False)
                and not isinstance(value, Buffer))

    def variable_value(self, variable) -> Scalar:
        buffer, indices = self.variable_element(variable)
        return Scalar(memref.LoadOp(buffer.value, indices).result, buffer.dtype)

    def variable_store(self, variable, value: Any, node: ast.AST) -> None:
        buffer, indices = self.variable_element(variable)
        self.store(buffer, indices, value, node)

    def variable_element(self, variable) -> tuple:
        zero = scalars.constant(0, INDEX).value
        if isinstance(variable, Buffer):
            return variable, [zero]
        return variable.base, self.per_thread_element(variable, [zero])

    def check_copy_hints(self, args) -> None:
        """T.copy's TileLang hints: checked for type; `disable_tma=True` keeps the copy off TMA (intrinsic_copy
        marks it), the others are left to the emitter, which picks vector widths itself."""
        disable_tma = self.arg(args, "disable_tma")
        if disable_tma is not None and not isinstance(disable_tma, bool):
            raise KernelError(f"T.copy: disable_tma must be True or False, got {disable_tma!r}",
                              args.node_of("disable_tma"))
        width = self.arg(args, "coalesced_width")
        if width is not None and (not isinstance(width, int) or isinstance(width, bool) or width <= 0):
            raise KernelError(f"T.copy: coalesced_width must be a positive int, got {width!r}",
                              args.node_of("coalesced_width"))
        policy = self.arg(args, "eviction_policy")
        if policy not in _EVICTION_POLICIES:
            raise KernelError(f"T.copy: eviction_policy must be one of {', '.join(map(repr, _EVICTION_POLICIES[1:]))}"
                              f", got {policy!r}", args.node_of("eviction_policy"))

    def check_atomic_hints(self, args) -> None:
        order = self.arg(args, "memory_order")
        if order not in (None, "relaxed"):
            raise KernelError(f"T.atomic_add: memory_order={order!r} is not supported: tilemlir's atomic adds are "
                              "relaxed (memory_order='relaxed')", args.node_of("memory_order"))
        if self.arg(args, "return_prev") not in (None, False):
            raise KernelError("T.atomic_add: return_prev=True (the old value) is not supported",
                              args.node_of("return_prev"))
        use_tma = self.arg(args, "use_tma")
        if use_tma not in (None, False):
            raise KernelError("T.atomic_add: use_tma=True is not supported: tilemlir has no TMA reductions",
                              args.node_of("use_tma"))
