"""Index arithmetic of the CPU backend's run-time checks: which dims of an access need a bounds
check (`static_range` proves the others), the check itself, and row-major element offsets.

A vector access of `width` lanes covers `width` consecutive elements along its last dim.
"""

from __future__ import annotations

from tilemlir.backends.cpu import ir_builders as b
from tilemlir.mlir import arith, ir
from tilemlir.diagnostics import reporting as diag


def is_vector(op: ir.Operation) -> bool:
    return op.name.startswith("vector.")


def vector_width(op: ir.Operation) -> int:
    if not is_vector(op):
        return 1
    type_ = op.results[0].type if op.name == "vector.load" else op.operands[0].type
    if type_.rank != 1:
        raise diag.error(op, f"cannot simulate {op.name} of a {type_}: only 1-D vectors are supported")
    return type_.shape[0]


def lane(indices: list[ir.Value], number: int) -> list[ir.Value]:
    """The indices of lane `number` of a vector access at `indices` (lanes run along the last dim)."""
    if number == 0 or not indices:
        return indices
    return indices[:-1] + [arith.addi(indices[-1], b.index(number))]


def as_i64(value: ir.Value) -> ir.Value:
    """An index value as i64 (other integers unchanged), for the status words."""
    return arith.index_cast(ir.IntegerType.get_signless(64), value) if isinstance(value.type, ir.IndexType) else value


def bounds(ref: ir.Value, indices: list[ir.Value], per_thread: bool, width: int):
    """(all in range, first bad dim, its index) of an access of `width` elements along the last dim;
    dims whose index is in range by construction (`static_range`) are not checked, and when no
    dim is left all three are None."""
    first = 1 if per_thread else 0
    oks, dims, values = [], [], []
    for d in range(first, len(indices)):
        idx = indices[d]
        lanes = width if d == len(indices) - 1 else 1
        extent = ref.type.shape[d]
        known = static_range(idx)
        if extent != ir.ShapedType.get_dynamic_size() and known and known[0] >= 0 and known[1] + lanes <= extent:
            continue
        size = b.memref_dim(ref, d)
        if lanes > 1:
            size = arith.subi(size, b.index(lanes - 1))
        oks.append(b.index_in_range(idx, size))
        dims.append(d - first)
        values.append(idx)
    if not oks:
        return None, None, None
    dim, value = b.index(dims[-1]), values[-1]
    for ok, d, v in reversed(list(zip(oks, dims, values))[:-1]):
        dim = arith.select(ok, dim, b.index(d))
        value = arith.select(ok, value, v)
    return b.all_true(oks), dim, value


def static_range(value: ir.Value, depth: int = 8) -> tuple[int, int] | None:
    """[lo, hi] of index `value` where the IR alone bounds it: constants, induction variables of
    `scf.for` loops with constant bounds and step, and +, -, * and non-negative % of those."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        loop = owner.owner
        if loop.name != "scf.for" or value != owner.arguments[0]:
            return None
        bounds = [_constant(v) for v in list(loop.operands)[:3]]
        if None in bounds or bounds[2] <= 0 or bounds[1] <= bounds[0]:
            return None
        lower, upper, step = bounds
        return lower, lower + (upper - 1 - lower) // step * step
    if depth == 0:
        return None
    if owner.name == "arith.constant":
        number = _constant(value)
        return None if number is None else (number, number)
    ranges = [static_range(operand, depth - 1) for operand in owner.operands]
    if not ranges or None in ranges:
        return None
    if owner.name == "arith.addi":
        return ranges[0][0] + ranges[1][0], ranges[0][1] + ranges[1][1]
    if owner.name == "arith.subi":
        return ranges[0][0] - ranges[1][1], ranges[0][1] - ranges[1][0]
    if owner.name == "arith.muli":
        products = [x * y for x in ranges[0] for y in ranges[1]]
        return min(products), max(products)
    if owner.name in ("arith.remsi", "arith.remui") and ranges[0][0] >= 0 and ranges[1][0] > 0:
        return 0, min(ranges[0][1], ranges[1][1] - 1)
    return None


def _constant(value: ir.Value) -> int | None:
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.name != "arith.constant" or not isinstance(value.type, ir.IndexType):
        return None
    return ir.IntegerAttr(owner.attributes["value"]).value


def linear(ref: ir.Value, indices: list[ir.Value], lane: int, shape: list[int] | None = None) -> ir.Value:
    """Row-major element offset of `indices` (+ `lane` along the last dim) in static `shape`
    (default: `ref`'s)."""
    shape = list(ref.type.shape) if shape is None else shape
    linear = b.index(lane)
    stride = 1
    for d in range(len(shape) - 1, -1, -1):
        linear = arith.addi(linear, arith.muli(indices[d], b.index(stride)))
        stride *= shape[d]
    return linear


def linear_dynamic(ref: ir.Value, indices: list[ir.Value]) -> ir.Value:
    """Row-major element offset of `indices` in `ref` (dims read at run time where dynamic)."""
    linear, stride = b.index(0), b.index(1)
    for d in range(len(indices) - 1, -1, -1):
        linear = arith.addi(linear, arith.muli(indices[d], stride))
        stride = arith.muli(stride, b.memref_dim(ref, d))
    return linear
