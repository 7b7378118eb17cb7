"""TileLang's `T.reshape(src, shape)` and `T.view(src, shape=None, dtype=None)`: the same elements under
another shape.

A view is not a new buffer: an element `view[i, j]` is the element of `src` at the same row-major
position (the view's indices linearized by its shape, then split by `src`'s shape), so reads and
writes through the view and through `src` see each other, as in TileLang. The element counts must be
equal (compared as products of ints and symbolic dims). Views are for element access: tile operations
take the original buffer (a located error says so), and a `T.view` to another dtype (a bit
reinterpretation) is refused.
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass

from tilemlir import language as T
from tilemlir.frontend import scalars
from tilemlir.frontend.source import KernelError
from tilemlir.frontend.values import Buffer, Scalar, format_shape


@dataclass(eq=False)
class View:
    """`T.reshape` / `T.view` of `base` with shape `shape` (ints, symbolic dims, dim expressions)."""

    base: Buffer
    shape: tuple
    name: str
    per_thread = False  # a PerThreadBuffer (frontend/threads.py): indexed by the thread, not reshaped
    variable = False  # a per-thread T.alloc_var: its name reads and assigns element 0

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def dtype(self):
        return self.base.dtype

    def describe(self) -> str:
        return f"view '{self.name}' {format_shape(self.shape)} of {self.base.describe()}"

    def __repr__(self) -> str:
        return f"{self.describe()} (a view supports element access; tile operations take '{self.base.name}')"


class ViewsMixin:
    """Views for `KernelBuilder` (see the module docstring)."""

    def intrinsic_reshape(self, node: ast.Call) -> View:
        args = self.bind_call("T.reshape", node, ["src", "shape"])
        return self.make_view(args, self.arg(args, "shape"), "T.reshape")

    def intrinsic_view(self, node: ast.Call) -> View:
        args = self.bind_call("T.view", node, ["src", "shape", "dtype"], defaults={"shape": None, "dtype": None})
        src = self.view_source(args, "T.view")
        dtype = self.arg(args, "dtype")
        if dtype is not None and self.dtype_value(dtype, args.node_of("dtype")) != src.dtype:
            raise KernelError(f"T.view to another dtype (reinterpreting the bits of {src.dtype} '{src.name}') is not "
                              "supported; convert the values with T.cast", args.node_of("dtype"))
        shape = self.arg(args, "shape")
        return self.make_view(args, src.shape if shape is None else shape, "T.view")

    def view_source(self, args, what: str) -> Buffer:
        src = self.arg(args, "src")
        if isinstance(src, View):
            src = src.base  # a view of a view is a view of the buffer
        if not isinstance(src, Buffer):
            raise KernelError(f"{what} needs a buffer, got {src!r}", args.node_of("src"))
        return src

    def make_view(self, args, shape, what: str) -> View:
        src = self.view_source(args, what)
        node = args.node_of("shape")
        shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
        for dim in shape:
            if isinstance(dim, Scalar) and dim.expr is not None and scalars.is_integer(dim.dtype):
                continue  # computed from symbolic dims in kernel code (`M * N`)
            if not isinstance(dim, (T.Symbolic, T.DimExpr)) and (isinstance(dim, bool) or not isinstance(dim, int)
                                                                   or dim <= 0):
                shown = "a run-time value" if isinstance(dim, Scalar) else repr(dim)
                raise KernelError(f"{what}: dims must be positive ints, symbolic dims or products of them, got "
                                  f"{shown}", node)
        if _element_count(shape) != _element_count(src.shape) or _element_count(shape) is None:
            raise KernelError(f"{what}: the shape {format_shape(shape)} does not hold the {format_shape(src.shape)} "
                              f"elements of '{src.name}' (the element counts must be equal)", node)
        return View(src, shape, self.pending_name or f"{src.name}_view")

    def view_element(self, view: View, slice_node: ast.expr, access: str) -> tuple[Buffer, list]:
        """The base buffer and its indices of `view[...]`."""
        self.check_element_access(view.base, access)
        if view.per_thread:
            return view.base, self.per_thread_element(view, self.element_indices(view, slice_node, access))
        nodes = slice_node.elts if isinstance(slice_node, ast.Tuple) else [slice_node]
        if any(isinstance(n, ast.Slice) for n in nodes) or len(nodes) != view.rank:
            raise KernelError(f"{view.describe()} is indexed by one index per dim ({view.rank}), not by slices",
                              slice_node)
        linear: Scalar | int = 0
        for dim, index_node in zip(view.shape, nodes):
            with self.located(index_node):
                index = self.materialize(self.eval(index_node))
                linear = self.index_arith("+", self.index_arith("*", linear, dim), index)
        indices = []
        for dim in reversed(view.base.shape):
            indices.append(self.index_arith("%", linear, dim))
            linear = self.index_arith("//", linear, dim)
        return view.base, [scalars.to_index(i).value for i in reversed(indices)]

    def index_arith(self, op: str, a, b):
        if isinstance(a, int) and isinstance(b, int):
            return {"+": a + b, "*": a * b, "%": a % b, "//": a // b}[op]
        a, b = (scalars.to_index(self.materialize(v)) if not isinstance(v, int) else v for v in (a, b))
        return scalars.binary(op, a, b)


def _element_count(shape) -> tuple | None:
    """(int product, symbolic factors) of a shape, or None when a dim is not a product of ints and symbols."""
    constant, symbols = 1, Counter()
    for dim in shape:
        factors = _factors(dim)
        if factors is None:
            return None
        for factor in factors:
            if isinstance(factor, int):
                constant *= factor
            else:
                symbols[factor.name] += 1
    return constant, tuple(sorted(symbols.items()))


def _factors(dim) -> list | None:
    if isinstance(dim, (int, T.Symbolic)):
        return [dim]
    if isinstance(dim, Scalar):
        return _expr_factors(ast.parse(dim.expr, mode="eval").body)
    if isinstance(dim, T.DimExpr) and dim.op == "*":
        left, right = _factors(dim.left), _factors(dim.right)
        return None if left is None or right is None else left + right
    return None


def _expr_factors(node: ast.expr) -> list | None:
    """The factors of a kernel-code dim's Python formula (`(M * N)`), or None if it is not a product."""
    if isinstance(node, ast.Name):
        return [T.Symbolic(node.id)]
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return [node.value]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        left, right = _expr_factors(node.left), _expr_factors(node.right)
        return None if left is None or right is None else left + right
    return None
