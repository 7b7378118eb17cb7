"""Control flow: `with T.Kernel`, loops, and `if`.

- `for` over `T.Parallel` -> `tile.parallel`; over `range`/`T.serial`/`T.unroll`
  -> `scf.for` (T.unroll and `T.serial(..., unroll=True)` add `tile.unroll`,
  `unroll=False` adds `tile.unroll = false`); over `T.Pipelined` ->
  `tile.pipelined`; over any compile-time iterable (tuple, list, a range
  *value*) -> unrolled at compile time.
- Scalars reassigned in an `scf.for` body become `iter_args`; their type is
  the promotion of every value assigned (the body is re-emitted when an
  assignment widens it). Names first bound inside a run-time loop or branch
  die with it.
- `if` on a compile-time value keeps one branch; on a run-time bool it is an
  `scf.if` whose results are the scalars either branch reassigns.
"""

from __future__ import annotations

import ast
import builtins
from typing import Any

from tilemlir.dialects import tile
from tilemlir.frontend import scalars
from tilemlir.frontend.expressions import is_dynamic
from tilemlir.frontend.source import KernelError
from tilemlir.frontend.statements import assigned_names
from tilemlir.frontend.types import INDEX, literal_dtype, number_dtype, promote
from tilemlir.frontend.values import Binding, KernelState, Scalar
from tilemlir.mlir import ir, scf

_LOOP_INTRINSICS = ("Parallel", "serial", "unroll", "Pipelined")
MAX_UNROLL = 4096
_RETRIES = 4


class ControlMixin:
    """Kernel block, loops and branches for `KernelBuilder`."""

    # ------------------------------------------------------------------
    # with T.Kernel(...)

    def stmt_With(self, node: ast.With) -> None:
        item = node.items[0]
        call = item.context_expr
        callee = self.eval(call.func) if isinstance(call, ast.Call) else None
        if len(node.items) != 1 or getattr(callee, "__tilemlir_intrinsic__", None) != "Kernel":
            raise KernelError("`with` is only supported as `with T.Kernel(...) as ...:`", call)
        if self.kernel is not None:
            raise KernelError(
                "a kernel function holds exactly one T.Kernel block; split the work into two @tilemlir.jit kernels",
                notes=(self.note(self.kernel.node, "the first T.Kernel block"),),
            )
        if self.scope.kind != "function":
            raise KernelError("`with T.Kernel(...)` must be at the top level of the kernel function")
        args = self.bind_call("T.Kernel", call, ["threads", "min_blocks"], defaults={"threads": 128, "min_blocks": None},
                              varargs=True)
        grid = self.kernel_grid(call, args)
        extents = self.kernel_thread_extents(args)
        threads = extents[0] * extents[1] * extents[2]
        min_blocks = self.kernel_min_blocks(args, threads)
        op = tile.kernel([g.value for g in grid], threads, min_blocks=min_blocks)
        block = tile.body_block(op)
        with self.scoped("kernel", node) as scope:
            indices = [Scalar(arg, INDEX) for arg in block.arguments]
            self.kernel = KernelState(node, scope, threads, grid, tuple(extents), indices, op=op.operation)
            if item.optional_vars is not None:
                self.bind_block_indices(item.optional_vars, indices)
            with ir.InsertionPoint(block):
                self.emit_body(node.body)
                tile.yield_()
        self.kernel_done = True

    def intrinsic_use_swizzle(self, node: ast.Call) -> None:
        """`T.use_swizzle(panel_size, order="row", enable=True)`: the kernel's tile.rasterization."""
        self.require_kernel("T.use_swizzle")
        args = self.bind_call("T.use_swizzle", node, ["panel_size", "order", "enable"],
                              defaults={"order": "row", "enable": True})
        panel = self.compile_time_arg(args, "panel_size", int, "a compile-time integer (a Python int)")
        if panel < 1:
            raise KernelError(f"T.use_swizzle: panel_size must be at least 1, got {panel}", args.node_of("panel_size"))
        order = self.compile_time_arg(args, "order", str, "'row' or 'column'")
        if order not in tile.RASTER_ORDERS:
            raise KernelError(f"T.use_swizzle: order must be 'row' or 'column', got {order!r}", args.node_of("order"))
        enable = self.compile_time_arg(args, "enable", bool, "a compile-time bool")
        kernel = self.kernel
        if self.scope is not kernel.scope:
            raise KernelError("T.use_swizzle must stand directly in the `with T.Kernel(...)` block, outside any "
                              "loop or branch: it remaps the block indices of the whole kernel")
        if kernel.swizzle is not None:
            raise KernelError("a kernel takes one T.use_swizzle", notes=(self.note(kernel.swizzle, "the first one"),))
        if any(any(True for _ in index.value.uses) for index in kernel.block_indices):
            raise KernelError("T.use_swizzle must come before any use of the block indices: it remaps them for "
                              "the whole kernel")
        kernel.swizzle = node
        if enable and len(kernel.grid) > 1:
            tile.set_rasterization(kernel.op, tile.Rasterization(order, panel))

    def kernel_min_blocks(self, args, threads: int) -> int | None:
        if self.arg(args, "min_blocks") is None:
            return None
        value = self.compile_time_arg(args, "min_blocks", int, "a compile-time integer (a Python int)")
        if not 1 <= value <= tile.MAX_MIN_BLOCKS:
            raise KernelError(f"min_blocks must be in 1..{tile.MAX_MIN_BLOCKS}, got {value}", args.node_of("min_blocks"))
        if threads * value > tile.MAX_THREADS_PER_SM:
            raise KernelError(f"min_blocks={value} blocks of {threads} threads exceed the {tile.MAX_THREADS_PER_SM} "
                              "threads a multiprocessor holds", args.node_of("min_blocks"))
        return value

    def kernel_grid(self, call: ast.Call, args) -> list[Scalar]:
        if not args.rest:
            raise KernelError("T.Kernel needs 1 to 3 grid extents, e.g. T.Kernel(T.ceildiv(M, 4), threads=128)", call)
        extents = self.rest_args(args)
        if not 1 <= len(extents) <= 3:
            raise KernelError(f"T.Kernel takes 1 to 3 grid extents, got {len(extents)}", call)
        grid = []
        for position, value in enumerate(extents):
            where = args.rest[position] if position < len(args.rest) else call
            with self.located(where):
                value = self.materialize(value)
                if isinstance(value, int) and not isinstance(value, bool) and value <= 0:
                    raise KernelError(f"grid extents must be positive, got {value}")
                grid.append(scalars.to_index(self.operand(value, "a grid extent")))
        return grid

    def bind_block_indices(self, target: ast.expr, indices: list[Scalar]) -> None:
        if isinstance(target, ast.Name):
            self.bind(target.id, indices[0] if len(indices) == 1 else tuple(indices), target)
            return
        if not isinstance(target, (ast.Tuple, ast.List)) or not all(isinstance(e, ast.Name) for e in target.elts):
            raise KernelError("`as` takes a name or a tuple of names for the block indices", target)
        if len(target.elts) != len(indices):
            raise KernelError(
                f"T.Kernel has {len(indices)} grid dim{'s' if len(indices) > 1 else ''} but `as` names "
                f"{len(target.elts)} block indices",
                target,
            )
        for element, index in zip(target.elts, indices):
            self.bind(element.id, index, element)

    # ------------------------------------------------------------------
    # for loops

    def stmt_For(self, node: ast.For) -> None:
        if node.orelse:
            raise KernelError("`for ... else` is not supported in kernel code", node.orelse[0])
        kind = self.loop_kind(node.iter)
        if kind is None:
            self.emit_unrolled(node)
            return
        self.require_kernel(f"a `{kind}` loop")
        if kind == "Parallel":
            self.emit_parallel(node)
        elif kind == "Pipelined":
            self.emit_pipelined(node)
        else:
            self.emit_serial(node, kind)

    def loop_kind(self, iterable: ast.expr) -> str | None:
        if not isinstance(iterable, ast.Call):
            return None
        callee = self.eval(iterable.func)
        if callee is builtins.range:
            return "range"
        name = getattr(callee, "__tilemlir_intrinsic__", None)
        return name if name in _LOOP_INTRINSICS else None

    def emit_unrolled(self, node: ast.For) -> None:
        iterable = self.eval(node.iter)
        if is_dynamic(iterable):
            raise KernelError(
                "cannot iterate over a run-time value: loop with `for i in range(n)`, T.serial or T.Parallel",
                node.iter,
            )
        try:
            items = list(iterable)
        except TypeError:
            raise KernelError(f"cannot iterate over a {type(iterable).__name__} value", node.iter) from None
        if len(items) > MAX_UNROLL:
            raise KernelError(
                f"unrolling {len(items)} iterations at compile time is too many (at most {MAX_UNROLL}); "
                "write `for i in range(...)` for a run-time loop",
                node.iter,
            )
        for item in items:
            self.assign(node.target, item, node)
            self.emit_body(node.body)

    def loop_index_name(self, target: ast.expr) -> str:
        if not isinstance(target, ast.Name):
            raise KernelError("the loop index must be a single name", target)
        return target.id

    def loop_bounds(self, args, what: str) -> tuple[Scalar, Scalar, int]:
        values = self.rest_args(args)
        if not 1 <= len(values) <= 3:
            raise KernelError(f"{what} takes 1 to 3 bounds (stop, or start, stop[, step]), got {len(values)}", args.node)
        if len(values) == 1:
            values = [0, values[0]]
        start, stop = values[0], values[1]
        step = values[2] if len(values) == 3 else 1
        if not isinstance(step, int) or isinstance(step, bool) or step <= 0:
            raise KernelError(f"{what}: the step must be a positive compile-time integer, got {step!r}", args.node)
        bounds = []
        for value in (start, stop):
            value = self.materialize(value)
            if isinstance(value, Scalar) and not scalars.is_integer(value.dtype):
                raise KernelError(f"{what}: loop bounds must be integers, got a {value.dtype} value", args.node)
            bounds.append(scalars.to_index(self.operand(value, "a loop bound")))
        return bounds[0], bounds[1], step

    def emit_parallel(self, node: ast.For) -> None:
        call = node.iter
        outer = self.in_scope("parallel")
        if outer is not None:
            raise KernelError(
                "T.Parallel cannot be nested inside another T.Parallel: write one loop over all dims, "
                "e.g. `for i, j in T.Parallel(M, N)`",
                call,
                (self.note(outer.node, "the enclosing T.Parallel loop"),),
            )
        args = self.bind_call("T.Parallel", call, [], varargs=True)
        extents = self.rest_args(args)
        if not extents:
            raise KernelError("T.Parallel needs at least one extent", call)
        values = []
        for value in extents:
            value = self.materialize(value)
            if isinstance(value, int) and not isinstance(value, bool) and value <= 0:
                raise KernelError(f"T.Parallel extents must be positive, got {value}", call)
            values.append(scalars.to_index(self.operand(value, "a T.Parallel extent")))
        names = self.parallel_names(node.target, len(values))
        op = tile.parallel([v.value for v in values])
        block = tile.body_block(op)
        with self.scoped("parallel", node):
            for name, arg, target in zip(names, block.arguments, self.target_nodes(node.target)):
                self.bind(name, Scalar(arg, INDEX), target, loop_index=True)
            with ir.InsertionPoint(block):
                self.emit_body(node.body)
                tile.yield_()
        self.finish_reducer_updates(op.operation)

    def parallel_names(self, target: ast.expr, count: int) -> list[str]:
        nodes = self.target_nodes(target)
        if not all(isinstance(n, ast.Name) for n in nodes):
            raise KernelError("T.Parallel binds plain names: `for i, j in T.Parallel(M, N)`", target)
        if len(nodes) != count:
            raise KernelError(
                f"T.Parallel has {count} extent{'s' if count > 1 else ''} but the loop binds {len(nodes)} "
                f"name{'s' if len(nodes) > 1 else ''}",
                target,
            )
        return [n.id for n in nodes]

    @staticmethod
    def target_nodes(target: ast.expr) -> list[ast.expr]:
        return list(target.elts) if isinstance(target, (ast.Tuple, ast.List)) else [target]

    def emit_pipelined(self, node: ast.For) -> None:
        self.require_tile_level("T.Pipelined")
        args = self.bind_call("T.Pipelined", node.iter, ["num_stages"], defaults={"num_stages": 1}, varargs=True)
        lower, upper, step = self.loop_bounds(args, "T.Pipelined")
        stages = self.compile_time_arg(args, "num_stages", int, "a compile-time integer")
        if stages < 0:
            raise KernelError(f"T.Pipelined: num_stages must be at least 0, got {stages}", args.node_of("num_stages"))
        stages = max(stages, 1)  # TileLang's 0 (no software pipelining) is tilemlir's 1
        name = self.loop_index_name(node.target)
        op = tile.pipelined(lower.value, upper.value, scalars.to_index(step).value, stages)
        block = tile.body_block(op)
        with self.scoped("pipelined", node):
            self.bind(name, Scalar(block.arguments[0], INDEX), node.target, loop_index=True)
            with ir.InsertionPoint(block):
                self.emit_body(node.body)
                tile.yield_()

    def emit_serial(self, node: ast.For, kind: str) -> None:
        what = {"range": "range", "serial": "T.serial", "unroll": "T.unroll"}[kind]
        keywords = ["unroll"] if kind == "serial" else []
        args = self.bind_call(what, node.iter, keywords, defaults={"unroll": None}, varargs=True)
        lower, upper, step = self.loop_bounds(args, what)
        unroll = True if kind == "unroll" else self.unroll_request(args) if kind == "serial" else None
        name = self.loop_index_name(node.target)
        assigned = assigned_names(node.body)
        carried = {n: self.env[n].value.dtype for n in assigned if self.live_value(n, Scalar)}
        literals = {n: self.env[n].value for n in assigned if self.live_value(n, (bool, int, float))}
        for _ in range(_RETRIES):
            block = ir.InsertionPoint.current.block
            mark = len(block.operations)
            before = dict(self.env)
            step_value = scalars.to_index(step).value
            inits = [scalars.convert(scalars.as_scalar(self.env[n].value, t), t).value for n, t in carried.items()]
            loop = scf.ForOp(lower.value, upper.value, step_value, inits)
            if unroll is not None:
                loop.operation.attributes["tile.unroll"] = ir.UnitAttr.get() if unroll else ir.BoolAttr.get(False)
            with self.scoped("serial", node):
                self.bind(name, Scalar(loop.induction_variable, INDEX), node.target, loop_index=True)
                for (n, t), arg in zip(carried.items(), loop.inner_iter_args):
                    self.bind(n, Scalar(arg, t), node)
                with ir.InsertionPoint(loop.body):
                    self.emit_body(node.body)
                    widened = self.widened_carries(carried, literals, before)
                    if not widened:
                        finals = [self.carried_value(n, t) for n, t in carried.items()]
                        scf.YieldOp(finals)
            if not widened:
                for (n, t), result in zip(carried.items(), loop.results):
                    self.env[n] = Binding(Scalar(result, t), self.scope, node)
                return
            self.env = before
            _erase_from(block, mark)
            carried.update(widened)
        raise KernelError("the types of the values this loop carries do not settle; give them explicit types with T.cast")

    def unroll_request(self, args) -> bool | None:
        """T.serial's `unroll`: None lets the backend decide, True unrolls (as T.unroll), False never does."""
        if self.arg(args, "unroll") is None:
            return None
        return self.compile_time_arg(args, "unroll", bool, "a compile-time True or False")

    def live_value(self, name: str, kind) -> bool:
        binding = self.env.get(name)
        return (
            binding is not None
            and binding.scope.active
            and not binding.unusable
            and isinstance(binding.value, kind)
        )

    def widened_carries(self, carried: dict, literals: dict, before: dict) -> dict:
        """Carried names whose type must change (or compile-time numbers that became run-time values)."""
        changes = {}
        for name, dtype in carried.items():
            value = self.env[name].value
            if not isinstance(value, (Scalar, bool, int, float)):
                raise KernelError(
                    f"'{name}' is carried by the loop as a {dtype} value but the body rebinds it to "
                    f"{type(value).__name__}; loop-carried values must stay scalars",
                    self.env[name].node,
                )
            new = promote(dtype, value.dtype) if isinstance(value, Scalar) else dtype
            if new != dtype:
                changes[name] = new
        for name, initial in literals.items():
            if name in carried or self.env[name] is before.get(name):
                continue
            value = self.env[name].value
            if isinstance(value, Scalar):
                changes[name] = promote(literal_dtype(initial, value.dtype), value.dtype)
            elif isinstance(value, (bool, int, float)) and (type(value) is not type(initial) or value != initial):
                changes[name] = number_dtype(initial, value)
            elif not isinstance(value, (bool, int, float)):
                raise KernelError(
                    f"'{name}' holds a number before the loop but the body rebinds it to {type(value).__name__}",
                    self.env[name].node,
                )
        return changes

    def carried_value(self, name: str, dtype) -> ir.Value:
        value = self.env[name].value
        with self.located(self.env[name].node or self.source.tree):
            return scalars.convert(scalars.as_scalar(value, dtype), dtype).value

    # ------------------------------------------------------------------
    # if / elif / else

    def stmt_If(self, node: ast.If) -> None:
        condition = self.eval(node.test)
        if not is_dynamic(condition):
            self.emit_body(node.body if condition else node.orelse)
            return
        with self.located(node.test):
            flag = scalars.truth(self.operand(condition, "an `if` condition"), "an `if` condition")
        self.emit_runtime_if(node, flag)

    def emit_runtime_if(self, node: ast.If, flag: Scalar) -> None:
        before = dict(self.env)
        draft = scf.IfOp(flag.value, [], has_else=True)
        then_env = self.emit_branch(draft.then_block, node.body, "if", node, before)
        else_env = self.emit_branch(draft.else_block, node.orelse, "else", node.orelse[0] if node.orelse else node, before)
        self.env = dict(before)
        merged = self.merge_branches(node, before, then_env, else_env)
        then_values, else_values, types = [], [], []
        for name, dtype, then_value, else_value in merged:
            types.append(scalars.mlir_type(dtype))
            then_values.append(self.branch_value(draft.then_block, then_value, dtype, node))
            else_values.append(self.branch_value(draft.else_block, else_value, dtype, node))
        final = scf.IfOp(flag.value, types, has_else=bool(types) or _has_code(draft.else_block))
        _move_block(draft.then_block, final.then_block, then_values)
        if final.else_block is not None:
            _move_block(draft.else_block, final.else_block, else_values)
        draft.operation.erase()
        for (name, dtype, _, _), result in zip(merged, final.results):
            self.env[name] = Binding(Scalar(result, dtype), self.scope, node)

    def emit_branch(self, block: ir.Block, body: list[ast.stmt], kind: str, node: ast.AST, before: dict) -> dict:
        self.env = dict(before)
        with self.scoped(kind, node), ir.InsertionPoint(block):
            self.emit_body(body)
            scf.YieldOp([])
        return self.env

    def merge_branches(self, node: ast.If, before: dict, then_env: dict, else_env: dict) -> list:
        """(name, dtype, then value, else value) for each scalar a branch reassigns; rebinds the others."""
        merged = []
        names = [n for n in {**then_env, **else_env} if then_env.get(n) is not before.get(n) or else_env.get(n) is not before.get(n)]
        for name in names:
            outer = before.get(name)
            outer_live = outer is not None and outer.scope.active and not outer.unusable
            then_b = then_env.get(name) if then_env.get(name) is not before.get(name) else (outer if outer_live else None)
            else_b = else_env.get(name) if else_env.get(name) is not before.get(name) else (outer if outer_live else None)
            if then_b is None or else_b is None:
                self.env[name] = then_b or else_b  # bound in one branch only: dies with it
                continue
            dtype = self.merged_dtype(then_b.value, else_b.value)
            if dtype is None:
                if then_b.value is not else_b.value and then_b.value != else_b.value:
                    self.env[name] = Binding(
                        then_b.value,
                        self.scope,
                        node,
                        f"'{name}' is bound to different {type(then_b.value).__name__} values by the branches of the "
                        f"run-time `if` at line {self.line_of(node)}; only scalars can merge after a run-time `if`",
                    )
                else:
                    self.env[name] = Binding(then_b.value, self.scope, node)
                continue
            merged.append((name, dtype, then_b.value, else_b.value))
        return merged

    @staticmethod
    def merged_dtype(a: Any, b: Any):
        """The type of a value merged from two branches, or None when it stays compile-time or cannot merge."""
        if not all(isinstance(v, (Scalar, bool, int, float)) for v in (a, b)):
            return None
        if not isinstance(a, Scalar) and not isinstance(b, Scalar):
            if type(a) is type(b) and a == b:
                return None
            return number_dtype(a, b)
        if isinstance(a, Scalar) and isinstance(b, Scalar):
            return promote(a.dtype, b.dtype)
        scalar, number = (a, b) if isinstance(a, Scalar) else (b, a)
        return promote(literal_dtype(number, scalar.dtype), scalar.dtype)

    def branch_value(self, block: ir.Block, value: Any, dtype, node: ast.AST) -> ir.Value:
        terminator = list(block.operations)[-1]
        with self.located(node), ir.InsertionPoint(terminator):
            return scalars.convert(scalars.as_scalar(value, dtype), dtype).value


def _has_code(block: ir.Block) -> bool:
    return len(block.operations) > 1


def _move_block(source: ir.Block, target: ir.Block, results: list) -> None:
    """Move `source`'s operations (not its terminator) into `target`, ending with a yield of `results`."""
    with ir.InsertionPoint(target):
        terminator = scf.YieldOp(results)
    for op in list(source.operations)[:-1]:
        op.move_before(terminator)


def _erase_from(block: ir.Block, mark: int) -> None:
    """Erase the operations of `block` from index `mark` on (a discarded draft), last first."""
    for op in reversed(list(block.operations)[mark:]):
        op.erase()
