"""Macros: `@T.macro` functions called from kernel code are inlined at the call site.

The call's arguments are evaluated in the caller (run-time values, buffers,
compile-time values alike) and bound to the macro's parameters by Python's
own rules; the macro's body is then read as kernel code in a scope of its
own: it sees its parameters, its closure and its module's globals, not the
caller's names, and the names it binds die with the call. Buffers are
passed by reference, so stores into them are the caller's. A `return expr`
(only as the last statement) is the call's value. The body's ops carry the
macro's own `file:line:col`. A macro calling itself, directly or through
other macros, is an error (inlining would never end).
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass
from typing import Any, Callable

from tilemlir.frontend.source import KernelError, KernelSource, load_source


def is_macro(value: Any) -> bool:
    return getattr(value, "__tilemlir_macro__", False) is True


@dataclass
class MacroCall:
    """One macro being inlined: the function and the call expression (in the caller's source)."""

    fn: Callable
    node: ast.Call


class MacroMixin:
    """Macro inlining for `KernelBuilder`."""

    def call_macro(self, fn: Callable, node: ast.Call) -> Any:
        self.check_not_recursive(fn, node)
        source = self.macro_source(fn)
        values = self.bind_macro_arguments(fn, source, node)
        caller_source, caller_env, caller_name = self.source, self.env, self.pending_name
        self.macro_stack.append(MacroCall(fn, node))
        self.source, self.env, self.pending_name = source, {}, None
        try:
            for name, value in values.items():
                self.bind(name, value, _param_node(source.tree, name))
            return self.emit_macro_body(source.tree.body, caller_name)
        finally:
            self.source, self.env, self.pending_name = caller_source, caller_env, caller_name
            self.macro_stack.pop()

    def emit_macro_body(self, body: list[ast.stmt], caller_name: str | None) -> Any:
        """Emit the statements; the value of a final `return expr` (None without one)."""
        last = body[-1]
        if not isinstance(last, ast.Return):
            self.emit_body(body)
            return None
        self.emit_body(body[:-1])
        if last.value is None:
            return None
        self.pending_name = caller_name  # `buf = m(...)` names a buffer the macro allocates in its return
        return self.eval(last.value)

    def macro_source(self, fn: Callable) -> KernelSource:
        """The parsed macro, once per kernel; a `return` before the end is an error at that `return`."""
        source = self.macro_sources.get(fn)
        if source is None:
            source = load_source(fn)
            tree = source.tree
            for stmt in ast.walk(tree):
                if isinstance(stmt, ast.Return) and stmt is not tree.body[-1]:
                    raise source.error(
                        stmt,
                        f"a `return` in macro '{tree.name}' must be its last statement (at the macro's top level): "
                        "a macro is inlined, so it cannot return early; compute the result with "
                        "T.if_then_else or `x if c else y` and return it at the end",
                    )
            self.macro_sources[fn] = source
            self.sources.append(source)
        return source

    def check_not_recursive(self, fn: Callable, node: ast.Call) -> None:
        chain = [call.fn for call in self.macro_stack]
        if fn not in chain:
            return
        start = chain.index(fn)
        path = " -> ".join(f.__name__ for f in [*chain[start:], fn])
        notes = tuple(self.note(call.node, f"'{call.fn.__name__}' is called here") for call in self.macro_stack[start:])
        raise KernelError(
            f"macro '{fn.__name__}' calls itself ({path}): macros are inlined at compile time, so recursion would "
            "never end; use a loop instead",
            node,
            notes,
        )

    def bind_macro_arguments(self, fn: Callable, source: KernelSource, node: ast.Call) -> dict[str, Any]:
        args, kwargs = self.eval_call_arguments(node)
        signature = inspect.signature(fn)
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            params = ", ".join(signature.parameters)
            raise KernelError(
                f"macro '{source.name}' takes ({params}), called with {len(args)} positional and "
                f"{len(kwargs)} keyword argument{'s' if len(kwargs) != 1 else ''}: {exc}",
                node,
                (source.note(source.tree, f"macro '{source.name}' is defined here"),),
            ) from None
        bound.apply_defaults()
        return dict(bound.arguments)


def _param_node(tree: ast.FunctionDef, name: str) -> ast.AST:
    arguments = tree.args
    for arg in [*arguments.posonlyargs, *arguments.args, arguments.vararg, *arguments.kwonlyargs, arguments.kwarg]:
        if arg is not None and arg.arg == name:
            return arg
    return tree
