"""Small IR-building helpers shared by the CPU backend's passes.

All helpers build at the current `ir.InsertionPoint` and `ir.Location`.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Sequence

from tilemlir.analysis.signedness import conversion_op, int_attr
from tilemlir.mlir import arith, ir, memref, scf

CMPI = arith.CmpIPredicate
CMPF = arith.CmpFPredicate


def index(value: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), value)


def constant(type_: ir.Type, value: int | float) -> ir.Value:
    """A scalar constant, or a splat when `type_` is a vector type."""
    if isinstance(type_, ir.VectorType):
        element = type_.element_type
        attr = _scalar_attr(element, value)
        return arith.constant(type_, ir.DenseElementsAttr.get_splat(type_, attr))
    return arith.constant(type_, _scalar_attr(type_, value))


def _scalar_attr(type_: ir.Type, value: int | float) -> ir.Attribute:
    if isinstance(type_, ir.FloatType):
        return ir.FloatAttr.get(type_, float(value))
    return int_attr(type_, int(value))


def element_type(type_: ir.Type) -> ir.Type:
    return type_.element_type if isinstance(type_, (ir.VectorType, ir.ShapedType)) else type_


def with_element_type(type_: ir.Type, element: ir.Type) -> ir.Type:
    """`type_` with its element type replaced (scalars: `element` itself)."""
    if isinstance(type_, ir.VectorType):
        return ir.VectorType.get(type_.shape, element)
    return element


def is_float(type_: ir.Type) -> bool:
    return isinstance(element_type(type_), ir.FloatType)


def is_int(type_: ir.Type) -> bool:
    return isinstance(element_type(type_), ir.IntegerType)


def bitwidth(type_: ir.Type) -> int:
    return element_type(type_).width


def for_nest(uppers: Sequence[ir.Value | int], lowers: Sequence[ir.Value | int | None] | None = None,
             steps: Sequence[ir.Value | int | None] | None = None) -> tuple[list[ir.Value], ir.OpView | None]:
    """Perfectly nested `scf.for` loops at the current insertion point: (induction variables,
    the innermost `scf.yield`, before which the body goes; None for an empty nest)."""
    lowers = lowers if lowers is not None else [None] * len(uppers)
    steps = steps if steps is not None else [None] * len(uppers)
    ivs: list[ir.Value] = []
    terminator = None
    for lower, upper, step in zip(lowers, uppers, steps):
        with ir.InsertionPoint(terminator) if terminator is not None else ir.InsertionPoint.current:
            loop = scf.ForOp(_as_index(0 if lower is None else lower), _as_index(upper), _as_index(1 if step is None else step))
        with ir.InsertionPoint(loop.body):
            terminator = scf.YieldOp([])
        ivs.append(loop.induction_variable)
    return ivs, terminator


@contextmanager
def loop_nest(extents: Sequence[ir.Value | int], starts: Sequence[ir.Value | int] | None = None) -> Iterator[list[ir.Value]]:
    """`for i0 in [start0, extent0): ... for in ...`; the body is built inside the `with`."""
    ivs, terminator = for_nest(extents, starts)
    if terminator is None:
        yield ivs
        return
    with ir.InsertionPoint(terminator):
        yield ivs


def _as_index(value: ir.Value | int) -> ir.Value:
    return index(value) if isinstance(value, int) else value


@contextmanager
def if_then(cond: ir.Value) -> Iterator[None]:
    """`scf.if cond { ... }` with no results; the body is built inside the `with`."""
    op = scf.IfOp(cond)
    with ir.InsertionPoint(op.then_block):
        yield_op = scf.YieldOp([])
    with ir.InsertionPoint(yield_op):
        yield


def if_else_value(cond: ir.Value, type_: ir.Type, then_fn, else_fn) -> ir.Value:
    """`scf.if cond -> type_`, each branch built by a function returning its value."""
    op = scf.IfOp(cond, [type_], has_else=True)
    with ir.InsertionPoint(op.then_block):
        scf.YieldOp([then_fn()])
    with ir.InsertionPoint(op.else_block):
        scf.YieldOp([else_fn()])
    return op.results[0]


def all_true(conds: Sequence[ir.Value]) -> ir.Value:
    result = conds[0] if conds else constant(ir.IntegerType.get_signless(1), 1)
    for cond in conds[1:]:
        result = arith.andi(result, cond)
    return result


def index_in_range(idx: ir.Value, size: ir.Value) -> ir.Value:
    """0 <= idx < size, reading index values as signed."""
    nonneg = arith.cmpi(CMPI.sge, idx, index(0))
    below = arith.cmpi(CMPI.slt, idx, size)
    return arith.andi(nonneg, below)


def memref_dim(ref: ir.Value, dim: int) -> ir.Value:
    size = ref.type.shape[dim]
    if size != ir.ShapedType.get_dynamic_size():
        return index(size)
    return memref.dim(ref, index(dim))


def in_bounds(ref: ir.Value, indices: Sequence[ir.Value]) -> ir.Value:
    """Whether `indices` lie inside memref `ref`."""
    return all_true([index_in_range(i, memref_dim(ref, d)) for d, i in enumerate(indices)])


def convert(value: ir.Value, to: ir.Type, src_unsigned: bool = False, dst_unsigned: bool = False) -> ir.Value:
    """Convert a scalar between element types the way a copy does (`signedness.conversion_op`:
    floats round to nearest even, float -> int truncates toward zero); the flags say which
    side's integers are unsigned (i1 always is)."""
    src = value.type
    if src == to:
        return value
    if is_float(src) and is_float(to) and bitwidth(to) == bitwidth(src):
        # f16 <-> bf16: through f32, which holds both exactly
        value = arith.extf(with_element_type(src, ir.F32Type.get()), value)
        return arith.truncf(to, value)
    name = conversion_op(element_type(src), element_type(to), src_unsigned, dst_unsigned)
    return ir.Operation.create(name, results=[to], operands=[value]).result


def inline_into_loop_nest(op: ir.Operation, uppers: Sequence[ir.Value], lowers: Sequence[ir.Value] | None = None,
                          steps: Sequence[ir.Value] | None = None) -> ir.OpView:
    """Replace region-holding `op` (one block, one index argument per loop, a terminator) by
    `scf.for` loops running its body; returns the innermost loop's `scf.yield`."""
    body = op.regions[0].blocks[0]
    with op.location, ir.InsertionPoint(op):
        ivs, terminator = for_nest(uppers, lowers, steps)
    for arg, iv in zip(body.arguments, ivs):
        arg.replace_all_uses_with(iv)
    for inner in list(body.operations)[:-1]:
        inner.operation.move_before(terminator)
    op.erase()
    return terminator
