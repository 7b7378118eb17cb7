"""Reference loop nests of the tile ops: copy, fill, reduce, gemm, atomic_add.

Each `lower_*` builds the op's meaning out of scf/memref/arith/math right
before the op and erases it. A side with no memory space is a global
tensor: its accesses are bounds-checked (out-of-range reads give the read's
`tile.pad` attribute, or 0; out-of-range writes are dropped, and a copy
does not read what it would have written there). On-chip accesses are
left to `lower-tile-to-loops`' run-time checks. Run these before memory
spaces are erased.
"""

from __future__ import annotations

import math

from tilemlir.analysis.padding import PAD_ATTR, identity
from tilemlir.analysis.signedness import int_combine_op, is_unsigned
from tilemlir.backends.cpu import ir_builders as b
from tilemlir.dialects.tile import gemm_ring_indices, memory_space
from tilemlir.mlir import arith, ir
from tilemlir.mlir import math as math_dialect
from tilemlir.mlir import memref, scf


def is_global(ref: ir.Value) -> bool:
    return isinstance(ref.type, ir.MemRefType) and memory_space(ref.type) is None


def pad_value(op: ir.Operation, element: ir.Type) -> ir.Value:
    """The padding constant an out-of-range read by `op` reads (`tile.pad`, default 0)."""
    return b.constant(element, recorded_padding(op))


def recorded_padding(op: ir.Operation) -> int | float:
    """The number in `op`'s `tile.pad` attribute, 0 without one."""
    if PAD_ATTR not in op.attributes:
        return 0
    attr = op.attributes[PAD_ATTR]
    return ir.FloatAttr(attr).value if isinstance(attr, ir.FloatAttr) else ir.IntegerAttr(attr).value


def guarded_load(ref: ir.Value, indices: list[ir.Value], pad: ir.Value) -> ir.Value:
    """ref[indices], or `pad` when they are out of range."""
    inside = b.in_bounds(ref, indices)
    return b.if_else_value(inside, pad.type, lambda: memref.load(ref, indices), lambda: pad)


def guarded_store(value: ir.Value, ref: ir.Value, indices: list[ir.Value]) -> None:
    """ref[indices] = value, dropped when out of range."""
    with b.if_then(b.in_bounds(ref, indices)):
        memref.store(value, ref, indices)


def read(op: ir.Operation, ref: ir.Value, indices: list[ir.Value]) -> ir.Value:
    if not is_global(ref):
        return memref.load(ref, indices)
    return guarded_load(ref, indices, pad_value(op, ref.type.element_type))


def write(value: ir.Value, ref: ir.Value, indices: list[ir.Value]) -> None:
    if is_global(ref):
        guarded_store(value, ref, indices)
    else:
        memref.store(value, ref, indices)


def _built_at(op: ir.Operation):
    return op.location, ir.InsertionPoint(op)


def _shape_attr(op: ir.Operation) -> list[int]:
    return [ir.IntegerAttr(a).value for a in op.attributes["shape"]]


def lower_copy(op: ir.Operation) -> None:
    """dst[box] = src[box]; where dst is global, an element whose store is dropped is not read."""
    src, dst, *offsets = op.operands
    box = _shape_attr(op)
    src_offsets, dst_offsets = offsets[: src.type.rank], offsets[src.type.rank :]
    loc, ip = _built_at(op)
    with loc, ip, b.loop_nest(box) as ivs:
        dst_indices = _side_indices(dst_offsets, ivs)

        def copy_element() -> None:
            value = read(op, src, _side_indices(src_offsets, ivs))
            value = b.convert(value, dst.type.element_type, is_unsigned(src), is_unsigned(dst))
            memref.store(value, dst, dst_indices)

        if is_global(dst):
            with b.if_then(b.in_bounds(dst, dst_indices)):
                copy_element()
        else:
            copy_element()
    op.erase()


def _side_indices(offsets: list[ir.Value], box_ivs: list[ir.Value]) -> list[ir.Value]:
    """Right-aligned box mapping: a side of rank k uses the last k box dims."""
    lead = len(box_ivs) - len(offsets)
    return [arith.addi(offset, iv) for offset, iv in zip(offsets, box_ivs[lead:])]


def lower_fill(op: ir.Operation) -> None:
    dst, value = op.operands
    loc, ip = _built_at(op)
    with loc, ip, b.loop_nest(list(dst.type.shape)) as ivs:
        memref.store(value, dst, ivs)
    op.erase()


def reduce_identity(kind: str, element: ir.Type, unsigned: bool = False) -> ir.Value:
    """The start value of reduction `kind` (infinities for float max/min, unlike padding's finite stand-ins)."""
    if isinstance(element, ir.FloatType) and kind in ("max", "min"):
        return b.constant(element, -math.inf if kind == "max" else math.inf)
    return b.constant(element, identity(kind, element, unsigned))


def reduce_combine(kind: str, acc: ir.Value, value: ir.Value, unsigned: bool = False) -> ir.Value:
    """acc (+) f(value) for reduction `kind`; floats max/min ignore NaN like CUDA's fmaxf/fminf;
    `unsigned` integers compare as unsigned and are their own absolute value, as bools (i1) always do:
    False < True makes max `or` and min `and`, numpy's max/min of bools."""
    floating = b.is_float(acc.type)
    unsigned = unsigned or acc.type == ir.IntegerType.get_signless(1)
    if kind.startswith("abs") and (floating or not unsigned):
        value = math_dialect.absf(value) if floating else math_dialect.absi(value)
    if not floating:
        return ir.Operation.create(int_combine_op(kind, unsigned), results=[acc.type], operands=[acc, value]).result
    if kind in ("sum", "abssum"):
        return arith.addf(acc, value)
    return arith.maxnumf(acc, value) if kind in ("max", "absmax") else arith.minnumf(acc, value)


def lower_reduce(op: ir.Operation) -> None:
    src, dst = op.operands
    kind = ir.StringAttr(op.attributes["kind"]).value
    dim = ir.IntegerAttr(op.attributes["dim"]).value
    clear = ir.BoolAttr(op.attributes["clear"]).value
    acc_type, unsigned = dst.type.element_type, is_unsigned(dst)
    kept = [s for d, s in enumerate(src.type.shape) if d != dim]
    loc, ip = _built_at(op)
    with loc, ip, b.loop_nest(kept) as out_ivs:
        dst_indices = out_ivs if out_ivs else [b.index(0)]
        init = reduce_identity(kind, acc_type, unsigned) if clear else memref.load(dst, dst_indices)
        loop = scf.ForOp(b.index(0), b.index(src.type.shape[dim]), b.index(1), [init])
        with ir.InsertionPoint(loop.body):
            src_indices = out_ivs[:dim] + [loop.induction_variable] + out_ivs[dim:]
            value = b.convert(memref.load(src, src_indices), acc_type, is_unsigned(src), unsigned)
            scf.YieldOp([reduce_combine(kind, loop.inner_iter_args[0], value, unsigned)])
        memref.store(loop.results[0], dst, dst_indices)
    op.erase()


def lower_gemm(op: ir.Operation) -> None:
    """C[m, n] += sum_k op(A)[m, k] * op(B)[k, n], in C's type, k ascending (loops m, k, n); a ring
    operand reads the tile its leading indices select."""
    a, bm, c = list(op.operands)[:3]
    ring_a, ring_b = gemm_ring_indices(op)
    trans_a = ir.BoolAttr(op.attributes["transpose_a"]).value
    trans_b = ir.BoolAttr(op.attributes["transpose_b"]).value
    m_extent, n_extent = c.type.shape
    k_extent = a.type.shape[-2] if trans_a else a.type.shape[-1]
    acc_type = c.type.element_type
    floating = b.is_float(acc_type)
    loc, ip = _built_at(op)
    with loc, ip, b.loop_nest([m_extent, k_extent]) as (m, k):
        a_value = b.convert(memref.load(a, ring_a + ([k, m] if trans_a else [m, k])), acc_type, is_unsigned(a),
                            is_unsigned(c))
        with b.loop_nest([n_extent]) as (n,):
            b_value = b.convert(memref.load(bm, ring_b + ([n, k] if trans_b else [k, n])), acc_type,
                                is_unsigned(bm), is_unsigned(c))
            old = memref.load(c, [m, n])
            product = arith.mulf(a_value, b_value) if floating else arith.muli(a_value, b_value)
            memref.store(arith.addf(old, product) if floating else arith.addi(old, product), c, [m, n])
    op.erase()


def lower_atomic_add(op: ir.Operation, guarded: bool = True, mark: str | None = None) -> None:
    """dst[indices (+ box)] += value, as a plain read-modify-write (blocks run one at a time);
    `guarded=False` leaves out-of-range targets to the caller's checks; `mark`: a unit attribute the
    load and the store get (the thread simulation's race checks tell atomic adds by it)."""
    dst, value, *indices = op.operands
    loc, ip = _built_at(op)
    with loc, ip:
        if not isinstance(value.type, ir.MemRefType):
            _add_into(dst, list(indices), value, guarded, mark)
        else:
            lead = dst.type.rank - value.type.rank
            with b.loop_nest(list(value.type.shape)) as ivs:
                target = list(indices[:lead]) + [arith.addi(i, iv) for i, iv in zip(indices[lead:], ivs)]
                _add_into(dst, target, memref.load(value, ivs), guarded, mark)
    op.erase()


def _add_into(dst: ir.Value, indices: list[ir.Value], value: ir.Value, guarded: bool, mark: str | None) -> None:
    def add() -> None:
        old = memref.load(dst, indices)
        new = arith.addf(old, value) if b.is_float(value.type) else arith.addi(old, value)
        store = memref.store(new, dst, indices)
        if mark is not None:
            for access in (old.owner, store.operation):
                access.attributes[mark] = ir.UnitAttr.get()

    if guarded and is_global(dst):
        with b.if_then(b.in_bounds(dst, indices)):
            add()
    else:
        add()


LOWERINGS = {
    "tile.copy": lower_copy,
    "tile.fill": lower_fill,
    "tile.reduce": lower_reduce,
    "tile.gemm": lower_gemm,
    "tile.atomic_add": lower_atomic_add,
}
