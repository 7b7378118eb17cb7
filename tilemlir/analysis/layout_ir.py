"""Layouts on tile IR: reading and writing the `layout` attribute of fragments and parallel loops.

Shared by infer-layouts, lower-tile-ops and partition-threads. A
`tile.alloc_fragment`'s `layout` says which thread holds each element; a
`tile.parallel`'s `layout` (its *domain layout*) says which thread runs
each point of the loop, in the same `#tile.layout` form over the loop's
extents. Unit dims (extent 1) never carry digits, so layouts are chosen on
the *effective* dims (extent > 1) and widened back with `unsqueeze`.
"""

from __future__ import annotations

from dataclasses import replace

from tilemlir.analysis.layouts import LayoutError, TiledLayout, from_attr, to_attr
from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects.tile import memory_space
from tilemlir.ir_util import constant_int, defining_op, enclosing, operation
from tilemlir.mlir import ir

LAYOUT_ATTR = "layout"
ANNOTATED_ATTR = "tile.annotated_layout"


def kernel_threads(op: ir.Operation) -> int:
    kernel = op if op.name == "tile.kernel" else enclosing(op, "tile.kernel", stop="func.func")
    return kernel.attributes["threads"].value


def name_of(op: ir.Operation) -> str:
    attrs = operation(op).attributes
    for key in ("name", "tile.name"):
        if key in attrs:
            return ir.StringAttr(attrs[key]).value
    return "<unnamed>"


def is_fragment(value: ir.Value) -> bool:
    return isinstance(value.type, ir.MemRefType) and memory_space(value.type) == "fragment"


def static_extents(op: ir.Operation) -> list[int | None]:
    """Extents of a tile.parallel (None where not a constant)."""
    return [constant_int(v) for v in op.operands]


def shape_of(op: ir.Operation) -> tuple[int, ...]:
    """The static shape a layout on `op` describes (an alloc's type, a parallel's extents)."""
    if op.name == "tile.parallel":
        return tuple(static_extents(op))
    return tuple(op.results[0].type.shape)


def effective_dims(shape) -> list[int]:
    return [k for k, extent in enumerate(shape) if extent != 1]


def unsqueeze(layout: TiledLayout, shape: tuple[int, ...]) -> TiledLayout:
    """Widen a layout of the effective dims of `shape` back to all of `shape`."""
    eff = effective_dims(shape)
    digits = tuple(d if d.dim is None else replace(d, dim=eff[d.dim]) for d in layout.digits)
    return TiledLayout(tuple(shape), layout.threads, digits).checked()


def squeeze(layout: TiledLayout) -> TiledLayout:
    """The layout restricted to the effective dims. A digit of a unit dim (which a
    `T.annotate_layout` map can name, e.g. `i * 32` of a (1, N) fragment) is always 0, so it goes."""
    eff = effective_dims(layout.shape)
    new = {old: k for k, old in enumerate(eff)}
    digits = tuple(d if d.dim is None else replace(d, dim=new[d.dim])
                   for d in layout.digits if d.dim is None or d.dim in new)
    return TiledLayout(tuple(layout.shape[k] for k in eff), layout.threads, digits)


def get_layout(op, threads: int | None = None) -> TiledLayout | None:
    """The layout set on a tile.alloc_fragment or tile.parallel (None if it has none).

    `threads` defaults to the enclosing tile.kernel's block size."""
    op = operation(op)
    if LAYOUT_ATTR not in op.attributes:
        return None
    return from_attr(op.attributes[LAYOUT_ATTR], shape_of(op), threads or kernel_threads(op))


def checked_layout(op, threads: int | None = None) -> TiledLayout | None:
    """`get_layout`, with an invalid attribute reported as a CompileError located at `op`."""
    try:
        return get_layout(op, threads)
    except LayoutError as err:
        what = "T.Parallel" if operation(op).name == "tile.parallel" else f"fragment '{name_of(op)}'"
        raise diag.error(op, f"invalid layout on {what}: {err}") from None


def set_layout(op, layout: TiledLayout) -> None:
    operation(op).attributes[LAYOUT_ATTR] = to_attr(layout)


def fragment_alloc(value: ir.Value) -> ir.Operation | None:
    op = defining_op(value)
    return op if op is not None and op.name == "tile.alloc_fragment" else None
