"""The kernel builder: reads one kernel function's AST and emits its tile-level IR.

`KernelBuilder.build()` takes a parsed `KernelSource` and gives an `ir.Module`
holding one `func.func` in the shape docs/ir.md ("Tile level") fixes, plus the
`KernelInfo` of its signature. The work is split by topic into mixins
(expressions, calls, statements, control flow, tile ops, signature); this
module holds the shared state: the MLIR context, the name bindings and
scopes, and how positions and errors are attached.
"""

from __future__ import annotations

import ast
import difflib
import traceback
from contextlib import contextmanager
from typing import Any

from tilemlir.config import settings
from tilemlir.diagnostics import CompileError, Diagnostic, reporting as diag
from tilemlir.frontend.calls import CallMixin
from tilemlir.frontend.control import ControlMixin
from tilemlir.frontend.debug_ops import DebugOpsMixin
from tilemlir.frontend.eager import EagerMixin
from tilemlir.frontend.expressions import ExprMixin
from tilemlir.frontend.info import KernelInfo
from tilemlir.frontend.macros import MacroMixin
from tilemlir.frontend.reducers import ReducersMixin
from tilemlir.frontend.signature import SignatureMixin
from tilemlir.frontend.source import KernelError, KernelSource, is_unbound
from tilemlir.frontend.statements import StmtMixin
from tilemlir.frontend.tilelang_ops import TileLangOpsMixin
from tilemlir.frontend.threads import ThreadsMixin
from tilemlir.frontend.tileops import TileOpsMixin
from tilemlir.frontend.views import ViewsMixin
from tilemlir.frontend.values import Binding, KernelState, Scope, is_runtime
from tilemlir.mlir import MLIRError, func, ir

# A name rebound inside one of these scopes cannot carry its new value out (no loop-carried values).
_NO_CARRY_SCOPES = ("parallel", "pipelined")

_SCOPE_HINTS = {
    "kernel": "values and buffers of the T.Kernel block exist only inside it",
    "parallel": "a value computed inside T.Parallel exists once per point; store it into a buffer to keep it",
    "serial": "assign it before the loop to carry it through the iterations",
    "pipelined": "assign it before the loop, or keep it in a buffer",
    "if": "assign it in both branches, or before the `if`",
    "else": "assign it in both branches, or before the `if`",
    "thread": "per-thread values and T.alloc_local buffers end with their thread code, at T.sync_threads() or the "
              "next tile operation; keep what must outlive it in shared memory, indexed by the thread",
}


class KernelBuilder(ThreadsMixin, ExprMixin, CallMixin, MacroMixin, StmtMixin, ControlMixin, TileOpsMixin,
                    TileLangOpsMixin, ReducersMixin, ViewsMixin, EagerMixin, SignatureMixin, DebugOpsMixin):
    """Builds the tile-level module of one kernel function (see the module docstring)."""

    def __init__(self, source: KernelSource, context: ir.Context, eager=None):
        self.eager = eager  # an eager function's EagerSpec (frontend/eager.py), else None
        self.eager_declared: set[str] = set()
        self.source = source  # the function being read: the kernel, or the macro being inlined
        self.sources = [source]  # the kernel's and every macro's, to locate any AST node
        self.macro_sources: dict = {}
        self.macro_stack: list = []
        self.context = context
        self.env: dict[str, Binding] = {}
        self.scope = Scope("function", source.tree, 0)
        self.kernel: KernelState | None = None
        self.kernel_done = False
        self.returned = False
        self.pending_name: str | None = None
        self.assumes: list[str] = []
        self.buffer_count = 0
        self.postponed_annotation = False

    # ------------------------------------------------------------------
    # Entry point.

    def build(self) -> tuple[ir.Module, KernelInfo]:
        tree = self.source.tree
        with self.context, self.located(tree):
            module = ir.Module.create()
            params = self.read_params()
            with ir.InsertionPoint(module.body):
                func_op = self.declare_function(params)
            with ir.InsertionPoint(func_op.entry_block):
                self.bind_params(func_op, params)
                self.emit_function_body(tree.body)
                func.ReturnOp([])
        if self.kernel is None:
            raise self.source.error(
                tree, f"kernel function '{tree.name}' has no `with T.Kernel(...)` block: nothing would run on the device"
            )
        self.verify(module)
        return module, self.kernel_info(params)

    def verify(self, module: ir.Module) -> None:
        """Run the MLIR verifier; its findings become located CompileErrors."""
        try:
            module.operation.verify()
        except MLIRError as exc:
            diags = [diag.from_mlir(d) for d in exc.error_diagnostics]
            raise CompileError(diags or [Diagnostic("error", str(exc), self.source.location(self.source.tree))]) from None

    # ------------------------------------------------------------------
    # Positions and errors.

    def source_of(self, node: ast.AST) -> KernelSource:
        """The source `node` belongs to (the kernel's or a macro's), so every position lands in its own file."""
        for source in (self.source, *self.sources):
            if source.owns(node):
                return source
        return self.source

    def mlir_location(self, node: ast.AST) -> ir.Location:
        loc = self.source_of(node).location(node)
        return ir.Location.file(loc.file, loc.line, loc.col)

    @contextmanager
    def located(self, node: ast.AST):
        """Emit under `node`'s location; turn mistakes found inside into CompileErrors located there."""
        try:
            with self.mlir_location(node):
                yield
        except CompileError:
            raise
        except KernelError as exc:
            where = exc.node or node
            raise self.source_of(where).error(where, exc.message, exc.notes) from None
        except RecursionError:
            raise self.source_of(node).error(node, "kernel code nests too deeply") from None
        except Exception as exc:  # a compiler bug: still located, never a bare traceback
            notes = ()
            if settings().traceback:
                notes = (Diagnostic("note", "Python traceback:\n" + "".join(traceback.format_exception(exc)).rstrip()),)
            message = f"internal compiler error: {type(exc).__name__}: {exc} (please report this with the kernel)"
            raise self.source_of(node).error(node, message, notes) from None

    def line_of(self, node: ast.AST) -> int:
        return self.source_of(node).location(node).line

    def note(self, node: ast.AST, message: str) -> Diagnostic:
        return self.source_of(node).note(node, message)

    # ------------------------------------------------------------------
    # Scopes and name bindings.

    @contextmanager
    def scoped(self, kind: str, node: ast.AST):
        outer = self.scope
        self.scope = Scope(kind, node, outer.depth + 1, outer)
        try:
            yield self.scope
        finally:
            self.scope.active = False
            self.scope = outer

    def lookup(self, name: str) -> Any:
        binding = self.env.get(name)
        if binding is not None:
            if binding.unusable:
                raise KernelError(binding.unusable)
            if not binding.scope.active:
                scope = binding.scope
                where = scope.describe(self.line_of(scope.node))
                raise KernelError(
                    f"'{name}' is not defined here: it was assigned inside {where}, which has ended "
                    f"({_SCOPE_HINTS[scope.kind]})"
                )
            return binding.value
        value = self.source.resolve_free(name)
        if is_unbound(value):
            known = [*self.env, *self.source.visible_names()]
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            if self.postponed_annotation:
                hint += (
                    " (annotations are postponed by `from __future__ import annotations`, so a name used only in "
                    "an annotation is not captured from an enclosing function; drop that import or use the name "
                    "in the body too)"
                )
            raise KernelError(f"unknown name '{name}'{hint}")
        return value

    def bind(self, name: str, value: Any, node: ast.AST, loop_index: bool = False) -> None:
        """Bind `name` in the current scope; rebinding an outer scalar inside T.Parallel/T.Pipelined is an
        error (a loop's own index is exempt: it is new in every iteration)."""
        old = self.env.get(name)
        if old is not None and old.scope.active and not old.unusable and not loop_index:
            carries_value = isinstance(old.value, (int, float)) or is_runtime(old.value) or is_runtime(value)
            barrier = self.no_carry_scope_since(old.scope)
            if carries_value and barrier is not None:
                what = "T.Parallel" if barrier.kind == "parallel" else "T.Pipelined"
                raise KernelError(
                    f"cannot reassign '{name}' inside {what}: it was defined outside the loop and {what} does not "
                    "carry values between iterations; keep it in a fragment or local buffer, or use a new name",
                    node,
                    (self.note(old.node or node, f"'{name}' was defined here"),),
                )
        self.env[name] = Binding(value, self.scope, node)

    def no_carry_scope_since(self, outer: Scope) -> Scope | None:
        scope = self.scope
        while scope is not None and scope is not outer:
            if scope.kind in _NO_CARRY_SCOPES:
                return scope
            scope = scope.parent
        return None

    def in_scope(self, kind: str) -> Scope | None:
        return self.scope.within(kind)

    def require_kernel(self, what: str) -> None:
        if self.kernel is None or not self.kernel.scope.active:
            raise KernelError(f"{what} must be inside the `with T.Kernel(...)` block")

    def require_tile_level(self, what: str) -> None:
        """Tile operations act on whole tiles: inside the kernel, outside T.Parallel."""
        self.require_kernel(what)
        parallel = self.in_scope("parallel")
        if parallel is not None:
            raise KernelError(
                f"{what} works on whole tiles and cannot be used inside T.Parallel; move it before or after the loop",
                notes=(self.note(parallel.node, "the enclosing T.Parallel loop"),),
            )
        thread = self.in_scope("thread")
        if thread is not None:
            raise KernelError(
                f"{what} acts on the whole block and cannot be used in per-thread code (a macro's body, or a "
                "condition or loop over thread indices); move it out",
                notes=(self.note(thread.node, "the per-thread code starts here"),),
            )

