"""What kernel-code names are bound to while the frontend reads a kernel.

A name is bound to a plain Python value (compile-time: ints, floats, tuples,
dtypes, `T.symbolic` dims, ...), a `Scalar` (a run-time SSA value), or a
`Buffer` (a tensor parameter or an on-chip allocation). Every binding
remembers the `Scope` it was made in; a binding whose scope has closed (the
body of a run-time loop or `if`, the `T.Kernel` block) cannot be used.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from tilemlir.language import DType, Symbolic
from tilemlir.mlir import ir

GLOBAL = "global"


@dataclass(frozen=True, eq=False)
class Scalar:
    """A run-time scalar. `expr` is its Python formula over symbolic dims and scalar
    parameters when it is computed before the kernel (grid sizes), else None."""

    value: ir.Value
    dtype: DType
    expr: str | None = None


@dataclass(eq=False)
class Buffer:
    """A global tensor (`space` "global") or an on-chip buffer ("shared", "fragment", "local")."""

    value: ir.Value
    dtype: DType
    shape: tuple  # ints and Symbolic dims
    space: str
    name: str
    node: ast.AST | None = None
    op: Any = None  # the tile.alloc_* op, None for parameters
    variable: bool = False  # T.alloc_var: its name reads and assigns element 0 (frontend/tilelang_ops.py)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_global(self) -> bool:
        return self.space == GLOBAL

    def describe(self) -> str:
        kind = "tensor" if self.is_global else f"{self.space} buffer"
        return f"{kind} '{self.name}' {format_shape(self.shape)}"


@dataclass(eq=False)
class Region:
    """A box inside a buffer, written `A[i, j]` (a start; extents come from elsewhere) or `A[a:b, :]`."""

    buffer: Buffer
    offsets: list  # index Scalars, one per buffer dim
    extents: list | None  # per dim an int or None when unknown; None for the start form
    node: ast.AST


@dataclass(eq=False)
class Scope:
    """A block of kernel code whose names die with it: the function, the kernel, a run-time loop or if branch."""

    kind: str  # "function", "kernel", "parallel", "serial", "pipelined", "if", "else", "thread"
    node: ast.AST
    depth: int
    parent: "Scope | None" = None
    active: bool = True

    def describe(self, line: int) -> str:
        what = {
            "function": "the kernel function",
            "kernel": "the T.Kernel block",
            "parallel": "the T.Parallel loop",
            "serial": "the loop",
            "pipelined": "the T.Pipelined loop",
            "if": "the `if` branch",
            "else": "the `else` branch",
            "thread": "the thread code starting",
        }[self.kind]
        return f"{what} at line {line}"

    def within(self, kind: str) -> "Scope | None":
        scope = self
        while scope is not None:
            if scope.kind == kind:
                return scope
            scope = scope.parent
        return None


@dataclass(eq=False)
class Binding:
    """A name's value, the scope it was bound in, and where; `unusable` explains why it cannot be read."""

    value: Any
    scope: Scope
    node: ast.AST | None = None
    unusable: str | None = None


@dataclass
class KernelState:
    """Facts about the one `T.Kernel` of the function, once it has been entered."""

    node: ast.AST
    scope: Scope
    threads: int
    grid: list = field(default_factory=list)
    thread_extents: tuple = (1, 1, 1)  # threads= as (x, y, z); `threads` is their product
    block_indices: list = field(default_factory=list)
    thread_mode: bool | None = None  # T.get_thread_binding appears in the T.Kernel block (None: not yet known)
    op: Any = None  # the tile.kernel
    swizzle: ast.AST | None = None  # the T.use_swizzle call, once there is one


def format_shape(shape) -> str:
    dims = [d.name if isinstance(d, Symbolic) else str(d) for d in shape]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def is_runtime(value: Any) -> bool:
    """Whether `value` holds IR values (a Scalar, Buffer or Region, possibly inside a tuple/list/dict)."""
    if isinstance(value, (Scalar, Buffer, Region)):
        return True
    if isinstance(value, (tuple, list)):
        return any(is_runtime(v) for v in value)
    if isinstance(value, dict):
        return any(is_runtime(k) or is_runtime(v) for k, v in value.items())
    return False


def is_number(value: Any) -> bool:
    return isinstance(value, (bool, int, float))
