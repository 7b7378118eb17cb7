"""TileLang's reducers: `T.alloc_reducer`, `T.reducer_init`, `T.reducer_update`, `T.finalize_reducer`.

A reducer is a deferred reduction: `acc = T.alloc_reducer(shape, dtype, op)`, then
`T.reducer_init(acc[, init])`, any number of `T.reducer_update(acc[indices], value)`, and
`T.finalize_reducer(acc, dst)` writes into the fragment `dst`, for every element, `init` (the op's
identity without one) combined with every contribution to it, each exactly once. The reducer itself
is never read or written otherwise.

Here a reducer is a fragment holding the running result (filled with `init` at `reducer_init`, so it
counts once). An update outside T.Parallel combines into it directly. Inside a T.Parallel its
indices must be loop variables, in the loop's order: indexed by all of them, each point updates its
own element; indexed by fewer, the contributions go into a fragment over the loop's extents (filled
with the identity before the loop), which `tile.reduce` ops after the loop fold into the reducer
(`clear=False`), one reduced dim at a time. `finalize_reducer` is a `tile.copy` into `dst`.

The identity of max / min is the dtype's lowest / largest finite value, as TileLang's. The bitwise
ops and the legacy `replication=` reducers are refused by name.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from tilemlir.dialects import tile
from tilemlir.frontend import scalars
from tilemlir.frontend.source import KernelError
from tilemlir.frontend.tilelang_ops import finite_extreme
from tilemlir.frontend.types import INDEX, mlir_type
from tilemlir.frontend.values import Buffer, Scalar
from tilemlir.ir_util import constant_int, operation
from tilemlir.mlir import ir, memref

_OPS = ("sum", "max", "min")
_BITWISE = ("bitand", "bitor", "bitxor")


@dataclass(eq=False)
class Reducer:
    """A reducer handle: its result fragment, combine op, and where its epoch stands."""

    storage: Buffer
    op: str
    state: str = "allocated"  # "allocated" -> "open" (reducer_init) -> "finalized"
    partials: dict = field(default_factory=dict)  # parallel op -> (partial fragment, kept loop dims)

    @property
    def name(self) -> str:
        return self.storage.name

    def __repr__(self) -> str:
        return f"reducer '{self.name}'"

    def __getitem__(self, _):
        raise KernelError(f"reducer '{self.name}' cannot be read or written directly: contribute with "
                          f"T.reducer_update({self.name}[...], value), then read the fragment "
                          f"T.finalize_reducer({self.name}, dst) writes")

    def identity(self) -> Any:
        if self.op == "sum":
            return 0.0 if self.storage.dtype.is_float else 0
        return finite_extreme(self.storage.dtype, largest=self.op == "min")


class ReducersMixin:
    """Reducers for `KernelBuilder` (see the module docstring)."""

    def intrinsic_alloc_reducer(self, node: ast.Call) -> Reducer:
        args = self.bind_call("T.alloc_reducer", node, ["shape", "dtype", "op", "replication"],
                              defaults={"op": "sum", "replication": None})
        op = self.arg(args, "op")
        if self.arg(args, "replication") is not None:
            raise KernelError("T.alloc_reducer: the legacy reducer (replication=) is not supported; use "
                              "T.reducer_init, T.reducer_update and T.finalize_reducer(acc, dst)",
                              args.node_of("replication"))
        if op in _BITWISE:
            raise KernelError(f"T.alloc_reducer: op={op!r} (a bitwise reducer) is not supported; the ops are "
                              f"{', '.join(_OPS)}", args.node_of("op"))
        if op not in _OPS:
            raise KernelError(f"T.alloc_reducer: op must be one of {', '.join(_OPS + _BITWISE)}, got {op!r}",
                              args.node_of("op"))
        self.require_tile_level("T.alloc_reducer")
        if self.scope is not self.kernel.scope:
            raise KernelError("T.alloc_reducer: allocate reducers at the top level of the T.Kernel block, not inside a "
                              "loop or `if`")
        shape = self.static_shape(self.arg(args, "shape"), args.node_of("shape"), "T.alloc_reducer")
        dtype = self.dtype_value(self.arg(args, "dtype"), args.node_of("dtype"))
        return Reducer(self.new_buffer(node, "fragment", tile.alloc_fragment, shape, dtype), op)

    def intrinsic_reducer_init(self, node: ast.Call) -> None:
        self.require_tile_level("T.reducer_init")
        args = self.bind_call("T.reducer_init", node, ["reducer", "init"], defaults={"init": None})
        reducer = self.reducer_arg(args.nodes["reducer"], "T.reducer_init")
        if reducer.state != "allocated":
            raise KernelError(f"T.reducer_init: reducer '{reducer.name}' is already initialized (once per "
                              "T.alloc_reducer)", node)
        init = self.arg(args, "init")
        value = reducer.identity() if init is None else self.materialize(init)
        with self.located(args.node_of("init") if init is not None else node):
            tile.fill(reducer.storage.value, self.scalar_for(reducer.storage, value, "T.reducer_init").value)
        reducer.state = "open"

    def intrinsic_reducer_update(self, node: ast.Call) -> None:
        if len(node.args) != 2 or node.keywords:
            raise KernelError("T.reducer_update takes the target `acc[indices]` and the contribution", node)
        target, value_node = node.args
        if not isinstance(target, ast.Subscript):
            raise KernelError("T.reducer_update: the first argument must be written `acc[indices]`", target)
        reducer = self.reducer_arg(target.value, "T.reducer_update")
        if reducer.state != "open":
            raise KernelError(f"T.reducer_update: reducer '{reducer.name}' is "
                              + ("not initialized: call T.reducer_init first" if reducer.state == "allocated"
                                 else "finalized: its epoch has ended"), node)
        indices = self.element_indices(reducer.storage, target.slice, "update")
        value = self.materialize(self.eval(value_node))
        with self.located(value_node):
            contribution = scalars.convert(scalars.as_scalar(value, reducer.storage.dtype), reducer.storage.dtype,
                                           explicit=False)
        parallel = self.enclosing_parallel_op()
        if parallel is None:
            self.combine_into(reducer, reducer.storage, indices, contribution)
            return
        kept = self.kept_loop_dims(parallel, reducer, indices, target)
        if len(kept) == len(parallel.regions[0].blocks[0].arguments):
            self.combine_into(reducer, reducer.storage, indices, contribution)
            return
        partial = self.partial_for(reducer, parallel, kept, node)
        point = list(parallel.regions[0].blocks[0].arguments)
        self.combine_into(reducer, partial, point, contribution)

    def intrinsic_finalize_reducer(self, node: ast.Call) -> None:
        self.require_tile_level("T.finalize_reducer")
        args = self.bind_call("T.finalize_reducer", node, ["reducer", "dst", "batch", "annotations"],
                              defaults={"dst": None, "batch": 1, "annotations": None})
        reducer = self.reducer_arg(args.nodes["reducer"], "T.finalize_reducer")
        dst = self.arg(args, "dst")
        if dst is None:
            raise KernelError("T.finalize_reducer: the legacy in-place form is not supported; pass the destination "
                              "fragment: T.finalize_reducer(acc, dst)", node)
        if not isinstance(dst, Buffer) or dst.space != "fragment":
            raise KernelError(f"T.finalize_reducer: dst must be a fragment, got {dst!r}", args.node_of("dst"))
        if tuple(dst.shape) != tuple(reducer.storage.shape) or dst.dtype != reducer.storage.dtype:
            raise KernelError(f"T.finalize_reducer: dst {dst.describe()} ({dst.dtype}) must have the reducer's shape "
                              f"and dtype {reducer.storage.describe()} ({reducer.storage.dtype})", args.node_of("dst"))
        if reducer.state != "open":
            raise KernelError(f"T.finalize_reducer: reducer '{reducer.name}' is "
                              + ("not initialized" if reducer.state == "allocated" else "already finalized"), node)
        zeros = [scalars.constant(0, INDEX).value] * dst.rank
        tile.copy(reducer.storage.value, dst.value, zeros, zeros, list(dst.shape))
        reducer.state = "finalized"

    # ------------------------------------------------------------------ helpers

    def reducer_arg(self, node: ast.expr, what: str) -> Reducer:
        value = self.eval(node)
        if not isinstance(value, Reducer):
            raise KernelError(f"{what} needs a reducer made by T.alloc_reducer, got {value!r}", node)
        return value

    def enclosing_parallel_op(self) -> ir.Operation | None:
        if self.in_scope("parallel") is None:
            return None
        op = operation(ir.InsertionPoint.current.block.owner)
        while op.name != "tile.parallel":
            op = operation(op.parent)
        return op

    def kept_loop_dims(self, parallel: ir.Operation, reducer: Reducer, indices: list, target: ast.Subscript) -> list:
        """The loop dims the update's indices are, in order (unit reducer dims may take any index)."""
        block = parallel.regions[0].blocks[0]
        kept = []
        for k, index in enumerate(indices):
            if reducer.storage.shape[k] == 1 and not (isinstance(index, ir.BlockArgument) and index.owner == block):
                continue
            if not (isinstance(index, ir.BlockArgument) and index.owner == block):
                raise KernelError("T.reducer_update inside T.Parallel: the reducer's indices must be the loop's "
                                  "variables", target.slice)
            kept.append(index.arg_number)
        if kept != sorted(set(kept)):
            raise KernelError("T.reducer_update inside T.Parallel: the reducer's indices must be distinct loop "
                              "variables in the loop's order", target.slice)
        return kept

    def partial_for(self, reducer: Reducer, parallel: ir.Operation, kept: list, node: ast.AST) -> Buffer:
        """The fragment over the loop's extents that collects this loop's contributions (made at the first)."""
        if parallel in reducer.partials:
            partial, before = reducer.partials[parallel]
            if before != kept:
                raise KernelError("T.reducer_update: one T.Parallel updates this reducer at different indices", node)
            return partial
        extents = [constant_int(v) for v in parallel.operands]
        if any(e is None for e in extents):
            raise KernelError("T.reducer_update inside a T.Parallel whose extents are not compile-time constants, "
                              "indexed by only some of its variables, is not supported", node)
        kept_shape = tuple(extents[k] for k in kept)
        if tuple(reducer.storage.shape) != (kept_shape or (1,)):
            raise KernelError(f"T.reducer_update: the loop's extents at the reducer's indices {kept_shape} differ "
                              f"from the reducer's shape {tuple(reducer.storage.shape)}", node)
        kernel_block = self.kernel_block_of(parallel)
        storage = reducer.storage
        with ir.InsertionPoint.at_block_begin(kernel_block), self.located(node):
            op = tile.alloc_fragment(extents, mlir_type(storage.dtype), f"{reducer.name}_partial")
        partial = Buffer(op.result, storage.dtype, tuple(extents), "fragment", f"{reducer.name}_partial", node, op)
        with ir.InsertionPoint(parallel), self.located(node):
            tile.fill(partial.value, scalars.constant(reducer.identity(), storage.dtype).value)
        reducer.partials[parallel] = (partial, kept)
        self.pending_reductions().append((reducer, parallel, node))
        return partial

    def pending_reductions(self) -> list:
        """(reducer, parallel, node) of the partials to fold after their loops."""
        return self.__dict__.setdefault("_pending_reductions", [])

    def kernel_block_of(self, op: ir.Operation) -> ir.Block:
        while op.name != "tile.kernel":
            op = operation(op.parent)
        return op.regions[0].blocks[0]

    def combine_into(self, reducer: Reducer, buffer: Buffer, indices: list, contribution: Scalar) -> None:
        current = Scalar(memref.LoadOp(buffer.value, indices).result, buffer.dtype)
        if reducer.op == "sum":
            combined = scalars.binary("+", current, contribution)
        else:
            combined = scalars.extremum(reducer.op, [current, contribution])
        memref.StoreOp(combined.value, buffer.value, indices)

    def finish_reducer_updates(self, parallel: ir.Operation) -> None:
        """After a T.Parallel: fold each reducer's partials into it, one reduced loop dim at a time."""
        pending = self.pending_reductions()
        for reducer, op, node in [p for p in pending if p[1] == parallel]:
            partial, kept = reducer.partials.pop(op)
            with self.located(node):
                self.fold_partial(reducer, partial, kept, parallel)
        pending[:] = [p for p in pending if p[1] != parallel]

    def fold_partial(self, reducer: Reducer, partial: Buffer, kept: list, parallel: ir.Operation) -> None:
        storage = reducer.storage
        current = partial
        removed = [d for d in range(partial.rank) if d not in kept]
        for n, dim in enumerate(sorted(removed, reverse=True)):
            last = n == len(removed) - 1
            if last:
                tile.reduce(current.value, storage.value, reducer.op, dim, False)
                return
            shape = [s for k, s in enumerate(current.shape) if k != dim]
            name = f"{reducer.name}_partial{n + 1}"
            with ir.InsertionPoint.at_block_begin(self.kernel_block_of(parallel)):
                op = tile.alloc_fragment(shape, mlir_type(storage.dtype), name)
            step = Buffer(op.result, storage.dtype, tuple(shape), "fragment", name, None, op)
            tile.reduce(current.value, step.value, reducer.op, dim, True)
            current = step
