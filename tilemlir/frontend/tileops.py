"""Tile operations: allocations, T.copy/fill/clear/reduce_*/gemm/atomic_add, T.annotate_layout, T.assume.

Shapes and dtypes are checked here, against the user's names and source
positions, before the op is built; the dialect verifiers then only see
well-formed ops. Copy boxes follow docs/ir.md: each side maps the box by
right alignment, leading box dims beyond a side's rank being 1.
"""

from __future__ import annotations

import ast
from typing import Any

from tilemlir import language as T
from tilemlir.analysis.signedness import mark_unsigned
from tilemlir.analysis.tma_boxes import DISABLE_TMA_ATTR
from tilemlir.dialects import tile
from tilemlir.dialects.tensor_core_ops import POLICY_ATTR
from tilemlir.frontend import scalars
from tilemlir.frontend.expressions import is_dynamic
from tilemlir.frontend.source import KernelError
from tilemlir.frontend.tilelang_ops import ATOMIC_HINTS, COPY_HINTS
from tilemlir.frontend.types import mlir_type
from tilemlir.frontend.values import Buffer, Region, Scalar, format_shape
from tilemlir.mlir import MLIRError, ir

_REDUCE_KINDS = {"reduce_sum": "sum", "reduce_max": "max", "reduce_min": "min",
                 "reduce_abssum": "abssum", "reduce_absmax": "absmax"}


def _box_text(extents: list) -> str:
    return "(" + ", ".join("?" if e is None else str(e) for e in extents) + ("," if len(extents) == 1 else "") + ")"


class TileOpsMixin:
    """Tile-level operations for `KernelBuilder`."""

    # ------------------------------------------------------------------
    # Allocation.

    def intrinsic_alloc_shared(self, node: ast.Call) -> Buffer:
        return self.allocate(node, "shared", tile.alloc_shared)

    def intrinsic_alloc_fragment(self, node: ast.Call) -> Buffer:
        return self.allocate(node, "fragment", tile.alloc_fragment)

    def intrinsic_alloc_local(self, node: ast.Call) -> Buffer:
        return self.allocate(node, "local", tile.alloc_local)

    def allocate(self, node: ast.Call, space: str, build) -> Buffer:
        what = f"T.alloc_{space}"
        self.require_tile_level(what)
        if self.scope is not self.kernel.scope:
            raise KernelError(
                f"{what}: allocate buffers at the top level of the T.Kernel block, not inside a loop or `if`"
            )
        args = self.bind_call(what, node, ["shape", "dtype", "scope"], defaults={"scope": None})
        shape = self.static_shape(self.arg(args, "shape"), args.node_of("shape"), what)
        dtype = self.dtype_value(self.arg(args, "dtype"), args.node_of("dtype"))
        space, build = self.allocation_scope(what, space, build, self.arg(args, "scope"), args.node_of("scope"))
        if space == "local" and self.thread_mode():
            return self.per_thread_buffer(node, shape, dtype)
        return self.new_buffer(node, space, build, shape, dtype)

    @staticmethod
    def allocation_scope(what: str, space: str, build, scope: Any, node: ast.AST):
        """The memory space and builder of TileLang's `scope=` (which decides where the buffer lives, whichever
        T.alloc_* names it)."""
        if scope is None:
            return space, build
        spaces = {"shared": ("shared", tile.alloc_shared), "shared.dyn": ("shared", tile.alloc_shared),
                  "local.fragment": ("fragment", tile.alloc_fragment), "local": ("local", tile.alloc_local)}
        if scope not in spaces:
            raise KernelError(f"{what}: scope {scope!r} is not supported (TileLang's 'shared', 'shared.dyn', "
                              "'local.fragment' and 'local' are)", node)
        return spaces[scope]

    def new_buffer(self, node: ast.Call, space: str, build, shape: list[int], dtype: T.DType) -> Buffer:
        """An on-chip buffer of `shape` and `dtype`, named after the assignment that makes it."""
        self.buffer_count += 1
        name = self.pending_name or f"buf{self.buffer_count}"
        op = build(shape, mlir_type(dtype), name)
        mark_unsigned(op, dtype.kind == "uint")
        return Buffer(op.result, dtype, tuple(shape), space, name, node, op)

    def static_shape(self, shape: Any, node: ast.AST, what: str) -> list[int]:
        if isinstance(shape, (int, T.Symbolic)) or is_dynamic(shape) and not isinstance(shape, tuple):
            shape = (shape,)
        if not isinstance(shape, (tuple, list)) or not shape:
            raise KernelError(f"{what}: the shape must be a tuple of positive ints, got {shape!r}", node)
        for dim in shape:
            if isinstance(dim, T.Symbolic):
                raise KernelError(
                    f"{what}: the symbolic dim '{dim.name}' is used where a compile-time constant is required; "
                    "on-chip buffers need a constant shape: use a block size (a Python int) and loop over the "
                    "symbolic dim in tiles",
                    node,
                )
            if isinstance(dim, T.DimExpr):
                raise KernelError(f"{what}: {dim!r} depends on symbolic dims, but on-chip buffers need a constant "
                                  "shape", node)
            if isinstance(dim, Scalar):
                raise KernelError(
                    f"{what}: a run-time value is used where a compile-time constant is required; on-chip buffers "
                    "need a constant shape",
                    node,
                )
            if not isinstance(dim, int) or isinstance(dim, bool) or dim <= 0:
                raise KernelError(f"{what}: dims must be positive ints, got {dim!r}", node)
        return list(shape)

    # ------------------------------------------------------------------
    # Tile arguments: whole buffers, start indices, slices.

    def tile_arg(self, node: ast.expr, what: str) -> Region:
        """A buffer argument of a tile op: `A` (whole), `A[i, j]` (a start) or `A[a:b, :]` (a slice)."""
        with self.located(node):
            if isinstance(node, ast.Subscript):
                base = self.eval(node.value)
                if isinstance(base, Buffer):
                    return self.subscript_region(base, node)
            value = self.eval(node)
            if not isinstance(value, Buffer):
                shown = f"a run-time {value.dtype} value" if isinstance(value, Scalar) else repr(value)
                raise KernelError(f"{what} needs a buffer or a buffer region here, got {shown}")
            zero = scalars.constant(0, scalars.INDEX)
            extents = [d if isinstance(d, int) else None for d in value.shape]
            return Region(value, [zero] * value.rank, extents, node)

    def subscript_region(self, buffer: Buffer, node: ast.Subscript) -> Region:
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if len(items) != buffer.rank:
            got = f"{len(items)} {'index' if len(items) == 1 else 'indices'}"
            raise KernelError(f"wrong number of indices: {buffer.describe()} has rank {buffer.rank}, got {got}", node.slice)
        sliced = any(isinstance(item, ast.Slice) for item in items)
        offsets, extents = [], []
        for dim, item in enumerate(items):
            if isinstance(item, ast.Slice):
                offset, extent = self.slice_bounds(buffer, dim, item)
            else:
                offset, extent = self.element_index(buffer, dim, item), 1
            offsets.append(offset)
            extents.append(extent)
        return Region(buffer, offsets, extents if sliced else None, node)

    def slice_bounds(self, buffer: Buffer, dim: int, item: ast.Slice) -> tuple[Scalar, int | None]:
        """The start and extent of a slice. A slice to the end of its dim (`a:`, or `a:M` where M is
        the dim's size) with a run-time start or a symbolic size has extent None: the other side gives
        it, as for a start index. Any other extent must be a compile-time constant."""
        with self.located(item):
            self.check_slice_step(item)
            lower = 0 if item.lower is None else self.materialize(self.eval(item.lower))
            size = buffer.shape[dim]
            upper = None if item.upper is None else self.eval(item.upper)
            to_the_end = upper is None or (isinstance(upper, (int, T.Symbolic)) and upper == size)
            if to_the_end:
                upper = size if isinstance(size, int) else None
            if isinstance(lower, int) and isinstance(upper, int):
                extent = upper - lower
            elif to_the_end:
                extent = None
            else:
                extent = self.linear_difference(item.upper, item.lower)
                if extent is None:
                    raise KernelError(
                        f"the slice {ast.unparse(item)} of dim {dim} of '{buffer.name}' has a run-time extent, "
                        "but a tile's extent must be a compile-time constant (such as `k * 64:(k + 1) * 64` or "
                        "`i:i + 64`): copy a tile of constant extent, and select the elements to keep by index "
                        "in T.Parallel (`T.if_then_else(j < n, ...)`)"
                    )
            if extent is not None and extent <= 0:
                raise KernelError(f"the slice of dim {dim} of '{buffer.name}' is empty")
            return scalars.to_index(self.operand(lower, "a slice bound")), extent

    def check_slice_step(self, item: ast.Slice) -> None:
        if item.step is None:
            return
        step = self.eval(item.step)
        if isinstance(step, int) and not isinstance(step, bool) and step == 1:
            return
        shown = "a run-time step" if is_dynamic(step) else f"step {step!r}"
        raise KernelError(
            f"strided slices are not supported in tile arguments (the slice {ast.unparse(item)} has {shown}): "
            "a tile is a contiguous box; read strided elements by index in T.Parallel"
        )

    def linear_difference(self, upper: ast.expr, lower: ast.expr | None) -> int | None:
        """upper - lower when it is a compile-time constant (e.g. `(k + 1) * BK` minus `k * BK`), else None."""
        high = self.linear_form(upper)
        low = self.linear_form(lower) if lower is not None else {(): 0}
        if high is None or low is None:
            return None
        diff = dict(high)
        for term, coef in low.items():
            diff[term] = diff.get(term, 0) - coef
        if any(coef for term, coef in diff.items() if term != ()):
            return None
        return diff.get((), 0)

    def linear_form(self, node: ast.expr) -> dict | None:
        """`node` as {term: coefficient} with () the constant; None when it is not linear in named terms."""
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return {(): node.value}
        if isinstance(node, (ast.Name, ast.Attribute)):
            value = self.eval(node)
            if isinstance(value, int) and not isinstance(value, bool):
                return {(): value}
            return {(ast.dump(node),): 1}
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self.linear_form(node.operand)
            return None if inner is None else {t: -c for t, c in inner.items()}
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            left, right = self.linear_form(node.left), self.linear_form(node.right)
            if left is None or right is None:
                return None
            sign = 1 if isinstance(node.op, ast.Add) else -1
            result = dict(left)
            for term, coef in right.items():
                result[term] = result.get(term, 0) + sign * coef
            return result
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            left, right = self.linear_form(node.left), self.linear_form(node.right)
            if left is None or right is None:
                return None
            for a, b in ((left, right), (right, left)):
                if set(a) <= {()}:
                    return {t: c * a.get((), 0) for t, c in b.items()}
            return None
        return {(ast.dump(node),): 1}

    # ------------------------------------------------------------------
    # T.copy

    def intrinsic_copy(self, node: ast.Call) -> None:
        self.require_tile_level("T.copy")
        args = self.bind_call("T.copy", node, ["src", "dst", *COPY_HINTS], defaults=dict.fromkeys(COPY_HINTS))
        self.check_copy_hints(args)
        src = self.tile_arg(args.nodes["src"], "T.copy")
        dst = self.tile_arg(args.nodes["dst"], "T.copy")
        if src.buffer.is_global and dst.buffer.is_global:
            raise KernelError(
                "T.copy cannot copy global to global: one side must be a shared, fragment or local buffer", node
            )
        if dst.buffer.dtype.kind == "bool" and src.buffer.dtype.kind != "bool":
            raise KernelError(
                f"T.copy cannot convert {src.buffer.dtype} '{src.buffer.name}' into bool '{dst.buffer.name}' "
                "implicitly (numpy's astype(bool) is `!= 0`, a 1-bit truncation keeps the low bit): convert in "
                "T.Parallel with T.cast(value, T.bool), which is `!= 0`",
                node,
            )
        box = self.copy_box(src, dst, node)
        copy = tile.copy(src.buffer.value, dst.buffer.value, [o.value for o in src.offsets],
                         [o.value for o in dst.offsets], box)
        if self.arg(args, "disable_tma"):
            copy.operation.attributes[DISABLE_TMA_ATTR] = ir.UnitAttr.get()

    def copy_box(self, src: Region, dst: Region, node: ast.AST) -> list[int]:
        rank = max(src.buffer.rank, dst.buffer.rank)
        sides = [self.padded_extents(src, rank), self.padded_extents(dst, rank)]
        if src.extents is None and dst.extents is None:
            raise KernelError(
                "T.copy cannot tell the tile's shape: both sides are start indices; make one side a whole buffer "
                "or a slice such as A[i:i + 64, :]",
                node,
            )
        box = []
        for dim, (a, b) in enumerate(zip(*sides)):
            if a is not None and b is not None and a != b:
                raise KernelError(
                    f"shape mismatch in T.copy: the source tile {_box_text(sides[0])} of '{src.buffer.name}' and the "
                    f"destination tile {_box_text(sides[1])} of '{dst.buffer.name}' differ in dim {dim} "
                    "(shapes are matched right-aligned; leading dims of the larger side must be 1)",
                    node,
                )
            if a is None and b is None:
                raise KernelError(
                    f"T.copy cannot tell the extent of dim {dim}: it is symbolic on both sides; give it with a slice "
                    "of constant extent or copy into a buffer of known shape",
                    node,
                )
            box.append(a if a is not None else b)
        return box

    @staticmethod
    def padded_extents(region: Region, rank: int) -> list:
        extents = region.extents if region.extents is not None else [None] * region.buffer.rank
        return [1] * (rank - len(extents)) + list(extents)

    # ------------------------------------------------------------------
    # T.fill / T.clear

    def intrinsic_fill(self, node: ast.Call) -> None:
        args = self.bind_call("T.fill", node, ["buffer", "value"])
        if self.fills_per_thread(args):
            self.fill_per_thread(self.arg(args, "buffer"), self.arg(args, "value"), args.node_of("value"))
            return
        self.require_tile_level("T.fill")
        buffer = self.fill_target(args, "T.fill")
        value = self.materialize(self.arg(args, "value"))
        with self.located(args.node_of("value")):
            tile.fill(buffer.value, self.scalar_for(buffer, value, "T.fill").value)

    def intrinsic_clear(self, node: ast.Call) -> None:
        args = self.bind_call("T.clear", node, ["buffer"])
        if self.fills_per_thread(args):
            self.fill_per_thread(self.arg(args, "buffer"), 0, node)
            return
        self.require_tile_level("T.clear")
        buffer = self.fill_target(args, "T.clear")
        tile.fill(buffer.value, scalars.constant(0, buffer.dtype).value)

    def fills_per_thread(self, args) -> bool:
        """T.fill / T.clear of a per-thread buffer in thread code: each thread fills its own copy."""
        return getattr(self.arg(args, "buffer"), "per_thread", False) and self.thread_code is not None

    def fill_target(self, args, what: str) -> Buffer:
        """The buffer T.fill / T.clear writes; for a per-thread buffer outside thread code (every thread fills
        its own, as in TileLang), the fragment that holds every thread's copy."""
        value = self.arg(args, "buffer")
        if getattr(value, "per_thread", False):
            return value.base
        return self.on_chip_buffer(args, "buffer", what)

    def scalar_for(self, buffer: Buffer, value: Any, what: str) -> Scalar:
        """`value` converted to `buffer`'s element type (floats never silently become integers)."""
        if isinstance(value, Scalar):
            return scalars.convert(value, buffer.dtype, explicit=False)
        if isinstance(value, float) and not buffer.dtype.is_float:
            raise KernelError(f"{what}: the float {value!r} does not implicitly convert to {buffer.dtype}; use T.cast")
        if not isinstance(value, (bool, int, float)):
            raise KernelError(f"{what} needs a scalar value, got {value!r}")
        return scalars.constant(value, buffer.dtype)

    def on_chip_buffer(self, args, name: str, what: str, spaces=("shared", "fragment", "local")) -> Buffer:
        node = args.node_of(name)
        value = self.arg(args, name)
        if not isinstance(value, Buffer):
            raise KernelError(f"{what}: '{name}' must be a whole buffer, got {value!r}", node)
        if value.space not in spaces:
            allowed = " or ".join(spaces)
            raise KernelError(f"{what}: '{name}' must be a {allowed} buffer, but {value.describe()} is not", node)
        return value

    # ------------------------------------------------------------------
    # Reductions, gemm, atomics

    def intrinsic_reduce_sum(self, node):
        self.reduce(node, "reduce_sum")

    def intrinsic_reduce_max(self, node):
        self.reduce(node, "reduce_max")

    def intrinsic_reduce_min(self, node):
        self.reduce(node, "reduce_min")

    def intrinsic_reduce_abssum(self, node):
        self.reduce(node, "reduce_abssum")

    def intrinsic_reduce_absmax(self, node):
        self.reduce(node, "reduce_absmax")

    def reduce(self, node: ast.Call, name: str) -> None:
        what = f"T.{name}"
        self.require_tile_level(what)
        args = self.bind_call(what, node, ["src", "dst", "dim", "clear"], defaults={"dim": -1, "clear": True})
        src = self.on_chip_buffer(args, "src", what)
        dst = self.on_chip_buffer(args, "dst", what)
        dim = self.compile_time_arg(args, "dim", int, "a compile-time integer")
        clear = self.compile_time_arg(args, "clear", bool, "True or False")
        if not -src.rank <= dim < src.rank:
            raise KernelError(f"{what}: dim {dim} is out of range for the rank-{src.rank} '{src.name}'", args.node_of("dim"))
        dim %= src.rank
        if src.dtype.kind == "bool" and dst.dtype.kind == "bool" and name in ("reduce_sum", "reduce_abssum"):
            raise KernelError(
                f"{what} into a bool destination is not defined ('{dst.name}' is bool): a sum of bools counts them; "
                f"reduce into an integer fragment (e.g. int32), or write T.reduce_max({src.name}, {dst.name}) for 'any'",
                args.node_of("dst"),
            )
        expected = tuple(s for i, s in enumerate(src.shape) if i != dim) or (1,)
        if tuple(dst.shape) != expected:
            raise KernelError(
                f"shape mismatch in {what}: reducing '{src.name}' {format_shape(src.shape)} along dim {dim} gives "
                f"{format_shape(expected)}, but dst '{dst.name}' is {format_shape(dst.shape)}",
                args.node_of("dst"),
            )
        if src.dtype.kind == "bool" and not (dst.dtype.kind == "bool" or scalars.is_integer(dst.dtype)):
            raise KernelError(
                f"dtype mismatch in {what}: '{src.name}' is bool but dst '{dst.name}' is {dst.dtype}; a bool reduces "
                "into a bool or an integer dst",
                args.node_of("dst"),
            )
        if src.dtype.kind != "bool" and not self.widens(src.dtype, dst.dtype):
            raise KernelError(
                f"dtype mismatch in {what}: '{src.name}' is {src.dtype} but dst '{dst.name}' is {dst.dtype}; the dst "
                "must have the same type or a wider one of the same kind (an unsigned src may also go into a wider "
                "signed dst)",
                args.node_of("dst"),
            )
        tile.reduce(src.value, dst.value, _REDUCE_KINDS[name], dim, clear)

    @staticmethod
    def widens(src, dst) -> bool:
        if src == dst:
            return True
        if src.is_float and dst.is_float:
            return dst.bits > src.bits
        if not (src.is_int and dst.is_int) or dst.bits <= src.bits:
            return False
        return src.kind == dst.kind or src.kind == "uint"  # every value of src fits in dst

    def intrinsic_gemm(self, node: ast.Call) -> None:
        self.require_tile_level("T.gemm")
        args = self.bind_call(
            "T.gemm", node, ["A", "B", "C", "transpose_A", "transpose_B", "policy"],
            defaults={"transpose_A": False, "transpose_B": False, "policy": None},
        )
        a = self.on_chip_buffer(args, "A", "T.gemm", ("shared", "fragment"))
        b = self.on_chip_buffer(args, "B", "T.gemm", ("shared", "fragment"))
        c = self.on_chip_buffer(args, "C", "T.gemm", ("fragment",))
        trans_a = self.compile_time_arg(args, "transpose_A", bool, "True or False")
        trans_b = self.compile_time_arg(args, "transpose_B", bool, "True or False")
        for label, buffer in (("A", a), ("B", b), ("C", c)):
            if buffer.rank != 2:
                raise KernelError(f"T.gemm: {label} must be a 2-d tile, but '{buffer.name}' has rank {buffer.rank}",
                                  args.node_of(label))
        m, ka = (a.shape[1], a.shape[0]) if trans_a else a.shape
        kb, n = (b.shape[1], b.shape[0]) if trans_b else b.shape
        if ka != kb:
            raise KernelError(
                f"shape mismatch in T.gemm: A '{a.name}' {format_shape(a.shape)} gives K = {ka} but B '{b.name}' "
                f"{format_shape(b.shape)} gives K = {kb} (transpose_A={trans_a}, transpose_B={trans_b})",
                node,
            )
        if tuple(c.shape) != (m, n):
            raise KernelError(
                f"shape mismatch in T.gemm: the accumulator C '{c.name}' is {format_shape(c.shape)} but A x B is "
                f"({m}, {n})",
                args.node_of("C"),
            )
        if a.dtype != b.dtype and not {a.dtype, b.dtype} <= {T.float8_e4m3, T.float8_e5m2}:
            raise KernelError(f"dtype mismatch in T.gemm: A '{a.name}' is {a.dtype} but B '{b.name}' is {b.dtype}", node)
        for label, buffer in (("A", a), ("B", b), ("C", c)):
            if buffer.dtype.kind == "bool":
                raise KernelError(f"T.gemm is not defined on bool tiles ('{buffer.name}' is bool): convert them first, "
                                  "e.g. into float16 tiles with T.cast in T.Parallel", args.node_of(label))
        policy = self.arg(args, "policy")
        if policy is not None and not isinstance(policy, T.GemmWarpPolicy):
            raise KernelError(f"T.gemm: 'policy' must be a T.GemmWarpPolicy (Square, FullRow or FullCol), got {policy!r}",
                              args.node_of("policy"))
        op = tile.gemm(a.value, b.value, c.value, trans_a, trans_b)
        if policy is not None:
            op.operation.attributes[POLICY_ATTR] = ir.StringAttr.get(policy.value)

    def intrinsic_atomic_add(self, node: ast.Call) -> None:
        self.require_kernel("T.atomic_add")
        args = self.bind_call("T.atomic_add", node, ["dst", "value", *ATOMIC_HINTS],
                              defaults=dict.fromkeys(ATOMIC_HINTS))
        self.check_atomic_hints(args)
        dst = self.tile_arg(args.nodes["dst"], "T.atomic_add")
        if not (dst.buffer.is_global or dst.buffer.space == "shared"):
            raise KernelError(
                f"T.atomic_add adds into global tensors and shared buffers; '{dst.buffer.name}' is a "
                f"{dst.buffer.space} buffer",
                args.nodes["dst"],
            )
        if dst.buffer.dtype.kind == "bool":
            raise KernelError(
                f"T.atomic_add is not defined on bool tensors ('{dst.buffer.name}' is bool): add into an int32 "
                "tensor, converting with T.cast(x, T.int32)",
                args.nodes["dst"],
            )
        value = self.materialize(self.arg(args, "value"))
        with self.located(args.node_of("value")):
            if isinstance(value, Buffer):
                self.require_tile_level("T.atomic_add of a tile")
                self.check_atomic_tile(dst, value)
                operand = value.value
            else:
                operand = self.scalar_for(dst.buffer, value, "T.atomic_add").value
        tile.atomic_add(dst.buffer.value, operand, [o.value for o in dst.offsets])

    def check_atomic_tile(self, dst: Region, value: Buffer) -> None:
        if value.is_global:
            raise KernelError("T.atomic_add adds an on-chip tile or a scalar, not a global tensor")
        if value.dtype != dst.buffer.dtype:
            raise KernelError(
                f"dtype mismatch in T.atomic_add: '{value.name}' is {value.dtype} but '{dst.buffer.name}' is "
                f"{dst.buffer.dtype}; atomics do not convert, so copy into a {dst.buffer.dtype} buffer first"
            )
        if value.rank > dst.buffer.rank:
            raise KernelError(f"T.atomic_add: '{value.name}' has rank {value.rank}, more than '{dst.buffer.name}'")
        if dst.extents is not None:
            mine = [1] * (dst.buffer.rank - value.rank) + list(value.shape)
            if any(e is not None and e != m for e, m in zip(dst.extents, mine)):
                raise KernelError(
                    f"shape mismatch in T.atomic_add: the region {_box_text(dst.extents)} of '{dst.buffer.name}' "
                    f"and '{value.name}' {format_shape(value.shape)} differ"
                )

    # ------------------------------------------------------------------
    # Layout annotations and assumptions

    def intrinsic_annotate_layout(self, node: ast.Call) -> None:
        self.require_tile_level("T.annotate_layout")
        args = self.bind_call("T.annotate_layout", node, ["layouts"])
        layouts = self.arg(args, "layouts")
        if not isinstance(layouts, dict):
            raise KernelError("T.annotate_layout takes a dict {fragment: T.Layout(...)}", args.node_of("layouts"))
        for buffer, layout in layouts.items():
            if not isinstance(buffer, Buffer) or buffer.space != "fragment":
                raise KernelError(f"T.annotate_layout: keys must be fragments, got {getattr(buffer, 'name', buffer)!r}")
            if isinstance(layout, T.Fragment):
                layout = self.fragment_layout(buffer, layout)
            if not isinstance(layout, T.Layout):
                raise KernelError(f"T.annotate_layout: the layout of '{buffer.name}' must be a T.Layout or "
                                  f"T.Fragment, got {layout!r}")
            buffer.op.operation.attributes["tile.annotated_layout"] = self.layout_attribute(buffer, layout)

    def fragment_layout(self, buffer: Buffer, fragment: T.Fragment) -> T.Layout:
        if fragment.shape != tuple(buffer.shape):
            raise KernelError(f"T.annotate_layout: {fragment!r} describes shape {fragment.shape}, but "
                              f"{buffer.describe()} is {tuple(buffer.shape)}")
        try:
            return fragment.layout()
        except (TypeError, ValueError) as exc:
            raise KernelError(f"T.annotate_layout: bad T.Fragment for '{buffer.name}': {exc}") from None

    def layout_attribute(self, buffer: Buffer, layout: T.Layout) -> ir.Attribute:
        try:
            texts = layout.affine_maps(buffer.rank)
        except (TypeError, ValueError) as exc:
            raise KernelError(f"T.annotate_layout: bad layout for '{buffer.name}': {exc}") from None
        maps = []
        for text in texts:
            try:
                maps.append(ir.AffineMapAttr(ir.Attribute.parse(text)).value)
            except (MLIRError, ValueError) as exc:
                raise KernelError(f"T.annotate_layout: '{text}' is not a valid affine map: {exc}") from None
        attr = tile.make_layout(maps[0], maps[1], layout.replicate)
        problem = tile.check_layout(attr, buffer.rank)
        if problem:
            raise KernelError(f"T.annotate_layout: bad layout for '{buffer.name}': {problem}")
        return attr

    def intrinsic_assume(self, node: ast.Call) -> None:
        args = self.bind_call("T.assume", node, ["condition"])
        condition = self.arg(args, "condition")
        where = args.node_of("condition")
        if not is_dynamic(condition):
            if not condition:
                raise KernelError(f"T.assume({ast.unparse(where)}) is false at compile time", where)
            return
        flag = scalars.truth(self.operand(condition, "T.assume"), "the condition of T.assume")
        if flag.expr is None:
            raise KernelError(
                "T.assume may only state facts about symbolic dims, scalar parameters and constants "
                "(the runtime checks it at launch)",
                where,
            )
        self.assumes.append(flag.expr)
        tile.assume(flag.value, flag.expr)
