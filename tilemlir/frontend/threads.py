"""Thread-level code inside a kernel: TileLang's `T.get_thread_binding()`, `T.sync_threads()`, 2-D/3-D
`threads=`, per-thread `T.alloc_local` buffers and scalars.

In TileLang every statement outside a tile operation runs on every thread of the block. Here a run of
kernel statements that use a thread index (a name bound by `T.get_thread_binding`) becomes *thread
code*: one `tile.parallel` over the block's threads marked `tile.thread_loop`, whose point `t` is
thread `t` (infer-layouts gives it the identity layout, so at thread level point `t` runs on thread
`t`; at tile level the points run in order). A run starts at the first such statement and ends at
`T.sync_threads()`, at a tile operation (`T.copy`, `T.fill`, `T.reduce_*`, `T.gemm`, reducers,
`T.Parallel` and `T.Pipelined` loops) and at the end of the enclosing block; Python values bound in a run end with it. An allocation or `tx = T.get_thread_binding()`
inside a run is emitted before it (its name bound outside it) and the run goes on.

In a kernel that asks for thread indices, `T.alloc_local` / `T.alloc_var` make per-thread buffers
that live through the whole kernel: a fragment with one row per thread (annotated: row t in thread
t's registers), which thread code indexes by its thread.

With `threads=(X, Y, Z)` the block has X * Y * Z threads; thread `t` has indices
`(t % X, t // X % Y, t // (X * Y))`, x fastest, as CUDA numbers them.
"""

from __future__ import annotations

import ast
import itertools
import math
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from tilemlir.dialects import tile
from tilemlir.dialects.tile import THREAD_LOOP_ATTR
from tilemlir.frontend import scalars
from tilemlir.frontend.source import KernelError
from tilemlir.frontend.types import INDEX
from tilemlir import language
from tilemlir.frontend.values import Scalar
from tilemlir.frontend.views import View
from tilemlir.mlir import ir

# Statements that end thread code: they act on whole tiles or on the whole block.
_TILE_LEVEL = {"copy", "fill", "clear", "reduce_sum", "reduce_max", "reduce_min", "reduce_abssum", "reduce_absmax",
               "gemm", "alloc_shared", "alloc_fragment", "annotate_layout", "assume", "sync_threads", "Parallel",
               "Pipelined", "alloc_reducer", "reducer_init", "finalize_reducer", "use_swizzle"}
_BINDINGS = {"get_thread_binding", "get_thread_bindings"}
_HOISTED = {"alloc_shared", "alloc_fragment", "alloc_local", "alloc_var", *_BINDINGS}


@dataclass(frozen=True)
class ThreadIndex:
    """`T.get_thread_binding(dim)`: the thread's index along dim 0 (x), 1 (y) or 2 (z) of `threads=`."""

    dim: int

    def __repr__(self) -> str:
        return f"T.get_thread_binding({self.dim})"


@dataclass
class _ThreadCode:
    op: Any
    thread: ir.Value  # the loop's point: the linear thread id
    depth: int  # the emit_body nesting it was opened at
    node: ast.AST
    exits: ExitStack


class ThreadsMixin:
    """Thread code for `KernelBuilder` (see the module docstring)."""

    thread_code: _ThreadCode | None = None
    body_depth = 0

    # ------------------------------------------------------------------ T.Kernel(threads=...)

    def kernel_thread_extents(self, args) -> list[int]:
        """`threads=` as (x, y, z) extents: an int, or a tuple or list of 1 to 3 ints."""
        value = self.arg(args, "threads")
        node = args.node_of("threads")
        if not isinstance(value, (tuple, list)):
            value = self.compile_time_arg(args, "threads", int, "a compile-time integer (a Python int)")
        extents = list(value) if isinstance(value, (tuple, list)) else [value]
        if not 1 <= len(extents) <= 3 or any(isinstance(e, bool) or not isinstance(e, int) for e in extents):
            raise KernelError(f"T.Kernel: 'threads' must be a compile-time int or a tuple of 1 to 3 ints, got "
                              f"{value!r}", node)
        if any(e < 1 for e in extents) or not 1 <= math.prod(extents) <= tile.MAX_THREADS:
            got = value if isinstance(value, int) else f"{tuple(value)!r} ({math.prod(extents)} in all)"
            raise KernelError(f"threads must be in 1..{tile.MAX_THREADS}, got {got}", node)
        return extents + [1] * (3 - len(extents))

    # ------------------------------------------------------------------ statements

    def emit_body(self, statements: list[ast.stmt]) -> None:
        self.body_depth += 1
        try:
            for stmt in statements:
                if self.hoists(stmt):
                    with self.outside_thread_code():
                        self.emit_stmt(stmt)
                    continue
                self.place_statement(stmt)
                self.emit_stmt(stmt)
            self.end_thread_code(self.body_depth)
        finally:
            self.body_depth -= 1

    def place_statement(self, stmt: ast.stmt) -> None:
        """Open thread code for a statement that needs it; end it before one that acts on the block."""
        if self.kernel is None or not self.kernel.scope.active or self.in_scope("parallel") is not None:
            return
        code = self.thread_code
        if code is not None and code.depth != self.body_depth:
            return  # inside a statement of the thread code
        tile_level = (self.uses_intrinsics(stmt, _TILE_LEVEL) and not self.fills_a_per_thread_buffer(stmt)) \
            or self.binds_thread_indices(stmt)
        if code is not None:
            if tile_level:
                self.end_thread_code(self.body_depth)
            return
        if not tile_level and self.needs_threads(stmt):
            self.begin_thread_code(stmt)

    def hoists(self, stmt: ast.stmt) -> bool:
        """A shared or fragment allocation, or `tx = T.get_thread_binding()`, at the top of open thread code:
        emitted before it, its name bound beside it, so the thread code goes on."""
        code = self.thread_code
        if code is None or code.depth != self.body_depth or not isinstance(stmt, ast.Assign):
            return False
        value = stmt.value
        return isinstance(value, ast.Call) and self.intrinsic_name(value.func) in _HOISTED

    @contextmanager
    def outside_thread_code(self):
        code, scope = self.thread_code, self.scope
        self.thread_code, self.scope = None, scope.parent
        try:
            with ir.InsertionPoint(code.op):
                yield
        finally:
            self.thread_code, self.scope = code, scope

    def binds_thread_indices(self, stmt: ast.stmt) -> bool:
        """`tx = T.get_thread_binding()`: bound where the kernel's names live, outside any thread code."""
        value = getattr(stmt, "value", None)
        return isinstance(value, ast.Call) and self.intrinsic_name(value.func) in _BINDINGS

    def needs_threads(self, stmt: ast.stmt) -> bool:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name):
                binding = self.env.get(node.id)
                if binding is not None and (_holds_thread_index(binding.value)
                                            or isinstance(binding.value, PerThreadBuffer)):
                    return True
        return self.uses_intrinsics(stmt, _BINDINGS)  # `if T.get_thread_binding() < 32:`

    def thread_mode(self) -> bool:
        """Does the kernel ask for thread indices (`T.get_thread_binding` anywhere in its T.Kernel block)?
        Its `T.alloc_local` / `T.alloc_var` buffers are then per-thread buffers."""
        if self.kernel.thread_mode is None:
            self.kernel.thread_mode = any(
                isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))
                and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) in _BINDINGS
                for node in ast.walk(self.kernel.node))
        return self.kernel.thread_mode

    def per_thread_buffer(self, node: ast.Call, shape: list, dtype, init=None, init_node=None) -> "PerThreadBuffer":
        """A `T.alloc_local` / `T.alloc_var` of a kernel with thread code: a fragment with one row per thread
        (row t held by thread t), which thread code indexes by its thread."""
        threads = self.kernel.threads
        full = [threads, *shape]
        fragment = self.new_buffer(node, "fragment", tile.alloc_fragment, full, dtype)
        strides = [math.prod(shape[k + 1:]) for k in range(len(shape))]
        dims = ", ".join(f"d{k}" for k in range(len(full)))
        register = " + ".join(f"d{k + 1} * {s}" for k, s in enumerate(strides)) or "0"
        layout = language.Layout(f"({dims}) -> (d0)", f"({dims}) -> ({register})")
        fragment.op.operation.attributes["tile.annotated_layout"] = self.layout_attribute(fragment, layout)
        if init is not None:
            with self.located(init_node or node):
                tile.fill(fragment.value, self.scalar_for(fragment, self.materialize(init), "T.alloc_var").value)
        return PerThreadBuffer(fragment, tuple(shape), fragment.name)

    def per_thread_element(self, buffer: "PerThreadBuffer", indices: list) -> list:
        """The fragment indices of `buffer[indices]` in the thread code being emitted."""
        if self.thread_code is None:
            raise KernelError(f"per-thread buffer '{buffer.name}' is used outside thread code: inside T.Parallel or "
                              "a tile operation it has no thread; read and write it in the kernel's per-thread "
                              "statements")
        return [self.thread_code.thread, *indices]

    def fill_per_thread(self, buffer: "PerThreadBuffer", value: Any, node: ast.AST) -> None:
        """This thread's `T.fill(buffer, value)`: `value` (evaluated once) into every element of its copy."""
        value = self.materialize(value)
        for index in itertools.product(*(range(n) for n in buffer.shape)):
            indices = [scalars.constant(i, INDEX).value for i in index]
            self.store(buffer.base, self.per_thread_element(buffer, indices), value, node)

    def fills_a_per_thread_buffer(self, stmt: ast.stmt) -> bool:
        """`T.fill(buf, v)` / `T.clear(buf)` of a per-thread buffer: per-thread code, not a tile operation."""
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if not isinstance(call, ast.Call) or self.intrinsic_name(call.func) not in ("fill", "clear"):
            return False
        target = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "buffer"), None)
        binding = self.env.get(target.id) if isinstance(target, ast.Name) else None
        return binding is not None and isinstance(binding.value, PerThreadBuffer)

    def uses_intrinsics(self, stmt: ast.stmt, names) -> bool:
        for node in ast.walk(stmt):
            target = node.func if isinstance(node, ast.Call) else node.iter if isinstance(node, ast.For) else None
            if isinstance(target, ast.Call):
                target = target.func
            if target is not None and self.intrinsic_name(target) in names:
                return True
        return False

    def intrinsic_name(self, node: ast.expr) -> str | None:
        if not isinstance(node, (ast.Name, ast.Attribute)):
            return None
        try:
            value = self.peek(node)
        except Exception:  # noqa: BLE001 - not resolvable without effects: not an intrinsic
            return None
        return getattr(value, "__tilemlir_intrinsic__", None)

    def peek(self, node: ast.expr) -> Any:
        """The value of a name or an attribute chain, without emitting anything."""
        if isinstance(node, ast.Name):
            binding = self.env.get(node.id)
            return binding.value if binding is not None else self.source.resolve_free(node.id)
        return getattr(self.peek(node.value), node.attr)

    def begin_thread_code(self, stmt: ast.stmt) -> None:
        exits = ExitStack()
        with self.located(stmt):
            op = tile.parallel([scalars.constant(self.kernel.threads, INDEX).value])
        op.attributes[THREAD_LOOP_ATTR] = ir.UnitAttr.get()
        block = tile.body_block(op)
        exits.enter_context(ir.InsertionPoint(block))
        exits.enter_context(self.scoped("thread", stmt))
        self.thread_code = _ThreadCode(op, block.arguments[0], self.body_depth, stmt, exits)

    def end_thread_code(self, depth: int) -> None:
        code = self.thread_code
        if code is None or code.depth != depth:
            return
        with self.located(code.node):
            tile.yield_()
        self.thread_code = None
        code.exits.close()

    # ------------------------------------------------------------------ intrinsics

    def intrinsic_get_thread_binding(self, node: ast.Call) -> ThreadIndex:
        args = self.bind_call("T.get_thread_binding", node, ["dim"], defaults={"dim": 0})
        self.require_kernel("T.get_thread_binding")
        return ThreadIndex(self.query_dim(args))

    def intrinsic_get_thread_bindings(self, node: ast.Call) -> list:
        self.bind_call("T.get_thread_bindings", node, [])
        self.require_kernel("T.get_thread_bindings")
        return [ThreadIndex(d) for d in range(3)]

    def intrinsic_get_thread_extent(self, node: ast.Call) -> int:
        args = self.bind_call("T.get_thread_extent", node, ["dim"], defaults={"dim": 0})
        self.require_kernel("T.get_thread_extent")
        return self.kernel.thread_extents[self.query_dim(args)]

    def intrinsic_get_thread_extents(self, node: ast.Call) -> list:
        self.bind_call("T.get_thread_extents", node, [])
        self.require_kernel("T.get_thread_extents")
        return list(self.kernel.thread_extents)

    def intrinsic_get_block_binding(self, node: ast.Call) -> Any:
        args = self.bind_call("T.get_block_binding", node, ["dim"], defaults={"dim": 0})
        self.require_kernel("T.get_block_binding")
        return self.block_dim_value(self.query_dim(args), self.kernel.block_indices)

    def intrinsic_get_block_bindings(self, node: ast.Call) -> list:
        self.bind_call("T.get_block_bindings", node, [])
        self.require_kernel("T.get_block_bindings")
        return [self.block_dim_value(d, self.kernel.block_indices) for d in range(3)]

    def intrinsic_get_block_extent(self, node: ast.Call) -> Any:
        args = self.bind_call("T.get_block_extent", node, ["dim"], defaults={"dim": 0})
        self.require_kernel("T.get_block_extent")
        return self.block_dim_value(self.query_dim(args), self.kernel.grid, missing=1)

    def intrinsic_get_block_extents(self, node: ast.Call) -> list:
        self.bind_call("T.get_block_extents", node, [])
        self.require_kernel("T.get_block_extents")
        return [self.block_dim_value(d, self.kernel.grid, missing=1) for d in range(3)]

    def query_dim(self, args) -> int:
        dim = self.compile_time_arg(args, "dim", int, "0, 1 or 2")
        if dim not in (0, 1, 2):
            raise KernelError(f"{args.what}: dim must be 0, 1 or 2, got {dim}", args.node_of("dim"))
        return dim

    @staticmethod
    def block_dim_value(dim: int, values: list, missing: int = 0) -> Any:
        """Grid dim `dim`'s value; a dim the grid does not have is `missing` (index 0, extent 1), as in CUDA."""
        return values[dim] if dim < len(values) else missing

    def intrinsic_sync_threads(self, node: ast.Call) -> None:
        args = self.bind_call("T.sync_threads", node, ["barrier_id", "arrive_count"],
                              defaults={"barrier_id": None, "arrive_count": None})
        for name in ("barrier_id", "arrive_count"):
            if self.arg(args, name) is not None:
                raise KernelError(f"T.sync_threads: {name}= (named barriers) is not supported: it synchronizes the "
                                  "whole block", args.node_of(name))
        self.require_tile_level("T.sync_threads")
        ir.Operation.create("gpu.barrier")

    # ------------------------------------------------------------------ values

    def thread_index_value(self, index: ThreadIndex) -> Scalar:
        """The index's value in the thread code being emitted (a located error outside it)."""
        code = self.thread_code
        if code is None:
            raise KernelError(
                f"{index!r} is used outside thread code: a thread index has a value only in the statements of the "
                "T.Kernel block that run per thread, not inside T.Parallel or T.Pipelined headers, nor in a "
                "condition or loop that holds T.sync_threads() or a tile operation (every thread must reach "
                "those the same way; tile operations on a range of threads, TileLang's `if tx < 32:` around "
                "them, are not supported)")
        x, y, _ = self.kernel.thread_extents
        t = Scalar(code.thread, INDEX)
        parts = {0: (1, x), 1: (x, y), 2: (x * y, None)}
        stride, size = parts[index.dim]
        value = t if stride == 1 else scalars.binary("//", t, stride)
        if size is not None and size != self.kernel.threads // stride:
            value = scalars.binary("%", value, size)
        return value


class PerThreadBuffer(View):
    """A `T.alloc_local` / `T.alloc_var` of a kernel with thread code: `base` has one row per thread."""

    per_thread = True

    def describe(self) -> str:
        return f"per-thread buffer '{self.name}' {self.shape}"

    def __repr__(self) -> str:
        return f"{self.describe()} (read and write its elements in per-thread code)"


def _holds_thread_index(value: Any) -> bool:
    if isinstance(value, ThreadIndex):
        return True
    if isinstance(value, (tuple, list)):
        return any(_holds_thread_index(v) for v in value)
    return False
