"""Statements: assignments (let-bindings and buffer stores), expression statements, assert, return.

Loops, `if` and `with T.Kernel` are in control.py. A statement Python has
but kernels do not gets an error naming it and what to write instead.
"""

from __future__ import annotations

import ast
from typing import Any

from tilemlir.frontend import scalars
from tilemlir.frontend.expressions import _BINARY, is_dynamic
from tilemlir.frontend.source import KernelError
from tilemlir.frontend.values import Buffer, Scalar, is_runtime
from tilemlir.frontend.views import View
from tilemlir.mlir import memref

_UNSUPPORTED_STATEMENTS = {
    "While": "`while` loops are not supported in kernels: use `for i in range(n)` (or T.serial) with a trip count",
    "Try": "`try` is not supported in kernel code",
    "TryStar": "`try` is not supported in kernel code",
    "Raise": "`raise` is not supported in kernel code; use `assert` on compile-time conditions",
    "Break": "`break` is not supported in kernel loops; guard the rest of the body with an `if`",
    "Continue": "`continue` is not supported in kernel loops; guard the rest of the body with an `if`",
    "FunctionDef": "functions cannot be defined inside a kernel; define helpers outside it",
    "AsyncFunctionDef": "functions cannot be defined inside a kernel; define helpers outside it",
    "ClassDef": "classes cannot be defined inside a kernel",
    "Import": "import modules at the top of the file, not inside a kernel",
    "ImportFrom": "import modules at the top of the file, not inside a kernel",
    "Global": "`global` is not supported in kernel code",
    "Nonlocal": "`nonlocal` is not supported in kernel code",
    "Delete": "`del` is not supported in kernel code",
    "AsyncFor": "async code is not supported in kernels",
    "AsyncWith": "async code is not supported in kernels",
    "Match": "`match` is not supported in kernel code; use if/elif",
    "TypeAlias": "`type` aliases are not supported in kernel code",
}


def assigned_names(statements: list[ast.stmt]) -> list[str]:
    """Names a block of statements may (re)bind, in first-seen order (nested blocks included)."""
    names: dict[str, None] = {}

    def targets(node: ast.AST) -> None:
        if isinstance(node, ast.Name):
            names.setdefault(node.id)
        elif isinstance(node, (ast.Tuple, ast.List)):
            for element in node.elts:
                targets(element)
        elif isinstance(node, ast.Starred):
            targets(node.value)

    for stmt in statements:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    targets(target)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For)):
                targets(node.target)
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                targets(node.optional_vars)
    return list(names)


class StmtMixin:
    """Statement handling for `KernelBuilder`."""

    def emit_stmt(self, node: ast.stmt) -> None:
        with self.located(node):
            if self.returned:
                raise KernelError("unreachable code after `return`")
            handler = getattr(self, f"stmt_{type(node).__name__}", None)
            if handler is None:
                message = _UNSUPPORTED_STATEMENTS.get(type(node).__name__)
                raise KernelError(message or f"{type(node).__name__} statements are not supported in kernel code")
            handler(node)

    def emit_function_body(self, statements: list[ast.stmt]) -> None:
        """The function level: host-side set-up, then the one `with T.Kernel` block."""
        for stmt in statements:
            after_kernel = self.kernel_done and not isinstance(stmt, (ast.Return, ast.Pass)) and not _is_docstring(stmt)
            # Code after the kernel is an error; emitting it first gives the more specific one when there is
            # one (a buffer of the ended T.Kernel block, a tile op outside it).
            self.emit_stmt(stmt)
            if after_kernel:
                with self.located(stmt):
                    raise KernelError(
                        "code after the T.Kernel block is not supported: a kernel function holds one T.Kernel "
                        "block and nothing runs after it; move this inside the block"
                    )

    # ------------------------------------------------------------------

    def stmt_Pass(self, node: ast.Pass) -> None:
        pass

    def stmt_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant):
            return  # docstrings and stray constants
        self.eval(node.value)

    def stmt_Return(self, node: ast.Return) -> None:
        if self.eager is not None and node.value is not None and self.scope.kind == "function":
            self.eager_return(node)
        elif node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None):
            raise KernelError("a kernel returns nothing: write its results into tensor parameters", node.value)
        if self.scope.kind != "function":
            raise KernelError("`return` is only allowed at the end of the kernel function, not inside a block")
        self.returned = True

    def stmt_Assert(self, node: ast.Assert) -> None:
        condition = self.eval(node.test)
        if is_dynamic(condition):
            raise KernelError(
                "`assert` needs a compile-time condition; for a fact about symbolic dims or scalar parameters "
                "write T.assume(...)",
                node.test,
            )
        if not condition:
            message = self.eval(node.msg) if node.msg is not None else None
            text = f"assertion failed: {ast.unparse(node.test)}"
            raise KernelError(f"{text}: {message}" if message is not None else text, node.test)

    def stmt_Assign(self, node: ast.Assign) -> None:
        single = node.targets[0] if len(node.targets) == 1 else None
        self.pending_name = single.id if isinstance(single, ast.Name) else None
        try:
            value = self.eval(node.value)
        finally:
            self.pending_name = None
        for target in node.targets:
            self.assign(target, value, node)

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None and isinstance(node.target, ast.Name) and node.target.id in self.eager_declared \
                and self.scope.kind == "function":
            return  # an eager kernel's parameter declaration (frontend/eager.py)
        if node.value is None:
            raise KernelError("a declaration without a value is not supported; write `x: T.float32 = 0.0`")
        if not isinstance(node.target, ast.Name):
            raise KernelError("only a plain name can be declared with a type", node.target)
        dtype = self.dtype_value(self.eval(node.annotation), node.annotation)
        value = self.materialize(self.eval(node.value))
        with self.located(node.value):
            if isinstance(value, (bool, int, float)):
                typed = scalars.constant(value, dtype)
            else:
                typed = scalars.convert(self.operand(value, "a typed assignment"), dtype, explicit=False)
        self.bind(node.target.id, typed, node.target)

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        symbol, python_op = _BINARY[type(node.op)]
        target = node.target
        if isinstance(target, ast.Name):
            current = self.eval(target)
            rhs = self.eval(node.value)
            self.assign(target, self.apply_binary(symbol, python_op, current, rhs), node)
        elif isinstance(target, ast.Subscript):
            buffer = self.eval_buffer(target.value)
            if isinstance(buffer, View):
                buffer, indices = self.view_element(buffer, target.slice, "update")
            elif not isinstance(buffer, Buffer):
                raise KernelError("augmented assignment into a subscript needs a buffer on the left", target.value)
            else:
                indices = self.element_indices(buffer, target.slice, "update")
            with self.located(target):
                current = Scalar(memref.LoadOp(buffer.value, indices).result, buffer.dtype)
            rhs = self.eval(node.value)
            self.store(buffer, indices, self.apply_binary(symbol, python_op, current, rhs), node.value)
        else:
            raise KernelError("augmented assignment needs a name or a buffer element on the left", target)

    def apply_binary(self, symbol: str, python_op, left: Any, right: Any) -> Any:
        if not is_dynamic(left) and not is_dynamic(right):
            return self.fold(python_op, symbol, left, right)
        a, b = self.operand(left, f"'{symbol}'"), self.operand(right, f"'{symbol}'")
        return scalars.power(a, b) if symbol == "**" else scalars.binary(symbol, a, b)

    # ------------------------------------------------------------------

    def assign(self, target: ast.expr, value: Any, node: ast.AST) -> None:
        with self.located(target):
            if isinstance(target, ast.Name):
                if self.assigns_variable(target.id, value):
                    self.variable_store(self.lookup(target.id), value, target)
                    return
                self.bind(target.id, value, target)
            elif isinstance(target, (ast.Tuple, ast.List)):
                self.unpack(target, value)
            elif isinstance(target, ast.Subscript):
                buffer = self.eval_buffer(target.value)
                if isinstance(buffer, View):
                    self.store(*self.view_element(buffer, target.slice, "write"), value, target)
                    return
                if not isinstance(buffer, Buffer):
                    raise KernelError(
                        f"cannot assign into a subscript of a {type(buffer).__name__} value: only buffer elements "
                        "can be stored to",
                        target.value,
                    )
                indices = self.element_indices(buffer, target.slice, "write")
                self.store(buffer, indices, value, target)
            else:
                raise KernelError(f"cannot assign to {type(target).__name__} in kernel code")

    def unpack(self, target: ast.Tuple | ast.List, value: Any) -> None:
        if any(isinstance(e, ast.Starred) for e in target.elts):
            raise KernelError("starred assignment targets are not supported in kernel code")
        if not isinstance(value, (tuple, list)):
            raise KernelError(f"cannot unpack a {type(value).__name__} value into {len(target.elts)} names")
        if len(value) != len(target.elts):
            raise KernelError(f"cannot unpack {len(value)} values into {len(target.elts)} names")
        for element, item in zip(target.elts, value):
            self.assign(element, item, target)

    def store(self, buffer: Buffer, indices: list, value: Any, node: ast.AST) -> None:
        """`buffer[indices] = value`, converting to the buffer's dtype (floats never silently become ints)."""
        with self.located(node):
            value = self.materialize(value)
            if is_runtime(value) and not isinstance(value, Scalar):
                raise KernelError(
                    f"cannot store a {type(value).__name__} into an element of '{buffer.name}'; "
                    "to copy a tile use T.copy"
                )
            if not isinstance(value, (Scalar, bool, int, float)):
                raise KernelError(f"cannot store {value!r} into an element of '{buffer.name}'")
            if isinstance(value, Scalar):
                typed = scalars.convert(value, buffer.dtype, explicit=False)
            elif isinstance(value, float) and not buffer.dtype.is_float:
                raise KernelError(
                    f"cannot store the float {value!r} into {buffer.dtype} buffer '{buffer.name}' implicitly; "
                    f"write T.cast({value!r}, T.{buffer.dtype})"
                )
            else:
                typed = scalars.constant(value, buffer.dtype)
            memref.StoreOp(typed.value, buffer.value, indices)


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
