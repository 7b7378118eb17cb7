"""Cheap integer ranges of thread-level index values, for skipping guards that are trivially unneeded.

`value_range(v)` gives `(lo, hi)` (inclusive; None = unbounded) from
constants, thread/block ids with constant extents, loop ranges with
constant-range bounds, static and symbolic (>= 0) dims, and add/sub/mul,
division and remainder by positive constants, min/max, casts and affine
maps. It never looks at facts between values: that is the prover's job.
Index arithmetic is assumed not to wrap; a cast to a sized integer that may
not hold the range, or an unsigned cast (`index_castui`, `extui`) of a value
that may be negative as signed (a uint8 200 is the i8 -56), gives the range
the cast really produces.
"""

from __future__ import annotations

from tilemlir.analysis.index_terms import constant_int, enclosing, launch_sizes
from tilemlir.mlir import ir

Range = tuple  # (lo | None, hi | None)
UNKNOWN: Range = (None, None)
_MAX_DEPTH = 64


def _add(a: Range, b: Range) -> Range:
    lo = None if a[0] is None or b[0] is None else a[0] + b[0]
    hi = None if a[1] is None or b[1] is None else a[1] + b[1]
    return lo, hi


def _neg(a: Range) -> Range:
    return (None if a[1] is None else -a[1], None if a[0] is None else -a[0])


def _mul(a: Range, b: Range) -> Range:
    if None in a or None in b:
        if a == (0, 0) or b == (0, 0):
            return 0, 0
        nonneg = a[0] is not None and a[0] >= 0 and b[0] is not None and b[0] >= 0
        return (a[0] * b[0], None) if nonneg else UNKNOWN
    products = [x * y for x in a for y in b]
    return min(products), max(products)


def _floordiv(a: Range, c: int) -> Range:
    return (None if a[0] is None else a[0] // c, None if a[1] is None else a[1] // c)


def _mod(a: Range, c: int) -> Range:
    if a[0] is not None and a[0] >= 0:
        if a[1] is not None and a[1] < c:
            return a
        return 0, c - 1
    return UNKNOWN


def _minmax(a: Range, b: Range, pick) -> Range:
    def combine(x, y, unbounded_wins):
        if x is None or y is None:
            return None if unbounded_wins else (y if x is None else x)
        return pick(x, y)

    is_min = pick is min
    return combine(a[0], b[0], is_min), combine(a[1], b[1], not is_min)


def _fitted(a: Range, type_: ir.Type) -> Range:
    """`a` as a value of `type_`: unchanged when every value fits, else unknown (it wraps)."""
    if not isinstance(type_, ir.IntegerType) or type_.width < 2:
        return a
    low, high = -(1 << (type_.width - 1)), (1 << (type_.width - 1)) - 1
    inside = a[0] is not None and a[1] is not None and low <= a[0] and a[1] <= high
    return a if inside else UNKNOWN


def _as_unsigned(a: Range, type_: ir.Type) -> Range:
    """The range of values of `type_` in range `a` (read as signed) when their bits are read as unsigned."""
    if not isinstance(type_, ir.IntegerType) or (a[0] is not None and a[0] >= 0):
        return a
    span = 1 << type_.width
    if a[0] is not None and a[1] is not None and a[1] < 0:
        return a[0] + span, a[1] + span
    return 0, span - 1


def _positive_constant(value) -> int | None:
    c = constant_int(value)
    return c if c is not None and c > 0 else None


def value_range(value: ir.Value, depth: int = 0) -> Range:
    if depth > _MAX_DEPTH:
        return UNKNOWN
    owner = value.owner
    if isinstance(owner, ir.Block):
        return _block_arg_range(value, owner, depth)
    op = owner.operation if isinstance(owner, ir.OpView) else owner
    return _op_range(op, value, depth)


def _rng(value, depth):
    return value_range(value, depth + 1)


def _block_arg_range(value, block: ir.Block, depth: int) -> Range:
    op = block.owner
    op = op.operation if isinstance(op, ir.OpView) else op
    index = value.arg_number
    if op.name == "gpu.launch":
        sizes = launch_sizes(op)
        if index >= 6:
            return _rng(sizes[index - 6], depth)
        hi = _rng(sizes[index], depth)[1]
        return 0, None if hi is None else hi - 1
    if op.name == "scf.for" and index == 0:
        lo = _rng(op.operands[0], depth)[0]
        hi = _rng(op.operands[1], depth)[1]
        return lo, None if hi is None else hi - 1
    return UNKNOWN


def _op_range(op: ir.Operation, value: ir.Value, depth: int) -> Range:
    name = op.name
    if name == "arith.constant":
        c = constant_int(value)
        return UNKNOWN if c is None else (c, c)
    if name in ("arith.index_cast", "arith.extsi"):
        return _fitted(_rng(op.operands[0], depth), value.type)
    if name in ("arith.index_castui", "arith.extui"):
        return _fitted(_as_unsigned(_rng(op.operands[0], depth), op.operands[0].type), value.type)
    if name == "memref.dim":
        dim = constant_int(op.operands[1])
        if dim is None:
            return 0, None
        size = op.operands[0].type.shape[dim]
        return (0, None) if size == ir.ShapedType.get_dynamic_size() else (size, size)
    if name in ("gpu.thread_id", "gpu.block_id"):
        launch = enclosing(op, "gpu.launch")
        if launch is None:
            return 0, None
        axis = "xyz".index(str(op.attributes["dimension"]).split()[-1].rstrip(">"))
        base = 3 if name == "gpu.thread_id" else 0
        return _rng(launch.regions[0].blocks[0].arguments[base + axis], depth)
    if name == "affine.apply":
        return _affine_range(op, depth)
    operands = list(op.operands)
    if name in ("arith.addi", "arith.subi", "arith.muli", "arith.minsi", "arith.maxsi"):
        a, b = _rng(operands[0], depth), _rng(operands[1], depth)
        result = {
            "arith.addi": lambda: _add(a, b),
            "arith.subi": lambda: _add(a, _neg(b)),
            "arith.muli": lambda: _mul(a, b),
            "arith.minsi": lambda: _minmax(a, b, min),
            "arith.maxsi": lambda: _minmax(a, b, max),
        }[name]()
        return _fitted(result, value.type)  # a sized integer wraps
    if name in ("arith.divsi", "arith.divui", "arith.floordivsi", "arith.remsi", "arith.remui"):
        c = _positive_constant(operands[1])
        a = _rng(operands[0], depth)
        if c is None or a[0] is None or a[0] < 0:
            return UNKNOWN
        return _mod(a, c) if name in ("arith.remsi", "arith.remui") else _floordiv(a, c)
    return UNKNOWN


def _affine_range(op: ir.Operation, depth: int) -> Range:
    amap = ir.AffineMapAttr(op.attributes["map"]).value
    ranges = [_rng(v, depth) for v in op.operands]
    return _expr_range(amap.results[0], ranges[: amap.n_dims], ranges[amap.n_dims :])


def _expr_range(expr, dims, symbols) -> Range:
    if isinstance(expr, ir.AffineConstantExpr):
        return expr.value, expr.value
    if isinstance(expr, ir.AffineDimExpr):
        return dims[expr.position]
    if isinstance(expr, ir.AffineSymbolExpr):
        return symbols[expr.position]
    lhs = _expr_range(expr.lhs, dims, symbols)
    if isinstance(expr, ir.AffineAddExpr):
        return _add(lhs, _expr_range(expr.rhs, dims, symbols))
    if isinstance(expr, ir.AffineMulExpr):
        return _mul(lhs, _expr_range(expr.rhs, dims, symbols))
    rhs = expr.rhs
    if not isinstance(rhs, ir.AffineConstantExpr) or rhs.value <= 0 or lhs[0] is None or lhs[0] < 0:
        return UNKNOWN
    if isinstance(expr, ir.AffineModExpr):
        return _mod(lhs, rhs.value)
    if isinstance(expr, ir.AffineFloorDivExpr):
        return _floordiv(lhs, rhs.value)
    return UNKNOWN
