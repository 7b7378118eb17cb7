"""Cheap integer ranges of thread-level index values: for skipping trivially unneeded guards, and for
proving that a kernel's index math fits in 32 bits.

`value_range(v)` gives `(lo, hi)` (inclusive; None = unbounded) from
constants, thread/block ids with constant extents, loop ranges with
constant-range bounds, static and symbolic (>= 0) dims, and add/sub/mul,
division, ceiling division and remainder by positive constants, min/max,
select, casts and affine maps; inside a branch of an `scf.if` on a value
compared with a constant (`tx < 32`: a partial tile's threads), that value
is narrowed to where the branch runs. `Intervals(known)` does the same with the
ranges of some values given by the caller (`known(v)`, None where it has
no better one than the analysis): a symbolic dim bounded by what the
runtime accepts, a scalar parameter by its C type; it keeps every range it
computes. It never looks at facts between values: that is the prover's job.
Index arithmetic is assumed not to wrap; a cast to a sized integer that may
not hold the range, or an unsigned cast (`index_castui`, `extui`) of a value
that may be negative as signed (a uint8 200 is the i8 -56), gives the range
the cast really produces.
"""

from __future__ import annotations

from collections.abc import Callable

from tilemlir.analysis.affine_fold import AffineOps, fold_affine
from tilemlir.analysis.index_terms import launch_sizes
from tilemlir.ir_util import constant_int, enclosing, operation
from tilemlir.mlir import ir

Range = tuple  # (lo | None, hi | None)
UNKNOWN: Range = (None, None)
_CARRIED_WIDENINGS = 16  # an iter_arg's range must settle within this many widenings (a ring of 16 slots)
_MAX_DEPTH = 64


def add(a: Range, b: Range) -> Range:
    lo = None if a[0] is None or b[0] is None else a[0] + b[0]
    hi = None if a[1] is None or b[1] is None else a[1] + b[1]
    return lo, hi


def neg(a: Range) -> Range:
    return (None if a[1] is None else -a[1], None if a[0] is None else -a[0])


def mul(a: Range, b: Range) -> Range:
    if None in a or None in b:
        if a == (0, 0) or b == (0, 0):
            return 0, 0
        nonneg = a[0] is not None and a[0] >= 0 and b[0] is not None and b[0] >= 0
        return (a[0] * b[0], None) if nonneg else UNKNOWN
    products = [x * y for x in a for y in b]
    return min(products), max(products)


def floordiv(a: Range, c: int) -> Range:
    """`a` divided by the positive constant `c`, rounded down."""
    return (None if a[0] is None else a[0] // c, None if a[1] is None else a[1] // c)


def ceildiv(a: Range, c: int) -> Range:
    """`a` divided by the positive constant `c`, rounded up."""
    return (None if a[0] is None else -(-a[0] // c), None if a[1] is None else -(-a[1] // c))


def mod(a: Range, c: int) -> Range:
    if a[0] is not None and a[0] >= 0:
        if a[1] is not None and a[1] < c:
            return a
        return 0, c - 1
    return UNKNOWN


def bitwise(name: str, a: Range, b: Range) -> Range:
    """`arith.andi` / `ori` / `xori` of ranges: bounded where the operands are known non-negative
    (an and by a non-negative bound, an or / xor below the next power of two of both bounds)."""
    def bound(r: Range) -> int | None:
        return r[1] if r[0] is not None and r[0] >= 0 and r[1] is not None else None

    ha, hb = bound(a), bound(b)
    if name == "arith.andi":
        known = [h for h in (ha, hb) if h is not None]
        return (0, min(known)) if known else UNKNOWN
    if ha is None or hb is None:
        return UNKNOWN
    return 0, (1 << max(ha, hb).bit_length()) - 1


def union(a: Range, b: Range) -> Range:
    lo = None if a[0] is None or b[0] is None else min(a[0], b[0])
    hi = None if a[1] is None or b[1] is None else max(a[1], b[1])
    return lo, hi


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


# the gpu.launch region arguments (block ids, thread ids, grid sizes, block sizes) an id op reads
_LAUNCH_ARGS = {"gpu.block_id": 0, "gpu.thread_id": 3, "gpu.grid_dim": 6, "gpu.block_dim": 9}
_DIVISIONS = {"arith.divsi": floordiv, "arith.divui": floordiv, "arith.floordivsi": floordiv,
              "arith.ceildivsi": ceildiv, "arith.ceildivui": ceildiv, "arith.remsi": mod, "arith.remui": mod}


class Intervals:
    """Ranges of the values of one function; `known(v)` gives those the caller knows better (or None)."""

    def __init__(self, known: Callable[[ir.Value], Range | None] | None = None):
        self._known = known
        self._memo: dict[ir.Value, Range] = {}
        self._capped = False  # whether the query under way met the depth limit

    def range(self, value: ir.Value, depth: int = 0) -> Range:
        if value in self._memo:
            return self._memo[value]
        if depth > _MAX_DEPTH:
            self._capped = True
            return UNKNOWN
        outer, self._capped = self._capped, False
        result = self._compute(value, depth)
        if not self._capped:  # a range cut short by the depth limit is not kept: a shallower query may do better
            self._memo[value] = result
        self._capped = outer or self._capped
        return result

    def _compute(self, value: ir.Value, depth: int) -> Range:
        given = self._known(value) if self._known is not None else None
        if given is not None:
            return given
        owner = value.owner
        if isinstance(owner, ir.Block):
            return self._block_arg_range(value, owner, depth)
        return self._op_range(operation(owner), value, depth)

    def _rng(self, value, depth):
        return self.range(value, depth + 1)

    def operand_range(self, op: ir.Operation, value: ir.Value, depth: int = 0) -> Range:
        """The range of `value` where `op` uses it: inside an `scf.if` on `value < c` (say), below c."""
        result = self._rng(value, depth)
        child, parent = op, op.parent
        while parent is not None and parent.name != "func.func":
            if parent.name == "scf.if":
                taken = child.block == parent.regions[0].blocks[0]
                for subject, bound in _facts(parent.operands[0], taken):
                    if subject == value:
                        result = _intersect(result, bound)
            child, parent = parent, parent.parent
        return result

    def _block_arg_range(self, value, block: ir.Block, depth: int) -> Range:
        op = block.owner
        op = operation(op)
        index = value.arg_number
        if op.name == "gpu.launch":
            sizes = launch_sizes(op)
            if index >= 6:
                return self._rng(sizes[index - 6], depth)
            hi = self._rng(sizes[index], depth)[1]
            return 0, None if hi is None else hi - 1
        if op.name == "scf.for" and index == 0:
            lo = self.operand_range(op, op.operands[0], depth)[0]
            hi = self.operand_range(op, op.operands[1], depth)[1]
            return lo, None if hi is None else hi - 1
        if op.name == "scf.for":
            return self._carried_range(op, value, depth)
        return UNKNOWN

    def _carried_range(self, loop: ir.Operation, value: ir.BlockArgument, depth: int) -> Range:
        """An iter_arg's range: one that holds its initial value and, assumed of the argument, its yielded
        value (an inductive invariant), found by widening the initial range a few times; else unknown."""
        number = value.arg_number - 1
        carried = self.operand_range(loop, loop.operands[3 + number], depth)
        yielded = operation(list(loop.regions[0].blocks[0].operations)[-1]).operands[number]
        for _ in range(_CARRIED_WIDENINGS):
            if carried[0] is None or carried[1] is None:
                return UNKNOWN
            assumed = carried

            def known(v, assumed=assumed):
                if v == value:
                    return assumed
                return self._known(v) if self._known is not None else None

            step = Intervals(known).range(yielded, depth + 1)
            if step[0] is not None and step[1] is not None and assumed[0] <= step[0] and step[1] <= assumed[1]:
                return assumed
            carried = union(assumed, step)
        return UNKNOWN

    def _op_range(self, op: ir.Operation, value: ir.Value, depth: int) -> Range:
        name = op.name
        if name == "arith.constant":
            c = constant_int(value)
            return UNKNOWN if c is None else (c, c)
        if name in ("arith.index_cast", "arith.extsi"):
            return _fitted(self.operand_range(op, op.operands[0], depth), value.type)
        if name in ("arith.index_castui", "arith.extui"):
            return _fitted(_as_unsigned(self.operand_range(op, op.operands[0], depth), op.operands[0].type), value.type)
        if name == "memref.dim":
            dim = constant_int(op.operands[1])
            if dim is None:
                return 0, None
            size = op.operands[0].type.shape[dim]
            return (0, None) if size == ir.ShapedType.get_dynamic_size() else (size, size)
        if name in _LAUNCH_ARGS:
            launch = enclosing(op, "gpu.launch")
            if launch is None:
                return 0, None
            axis = "xyz".index(str(op.attributes["dimension"]).split()[-1].rstrip(">"))
            return self._rng(launch.regions[0].blocks[0].arguments[_LAUNCH_ARGS[name] + axis], depth)
        if name == "gpu.lane_id":
            return 0, 31
        if name in ("affine.apply", "affine.min", "affine.max"):
            return self._affine_range(op, depth)
        if name == "scf.for":  # what the last iteration yields (or the initial value): the iter_arg's invariant
            number = list(op.results).index(value)
            return self._rng(op.regions[0].blocks[0].arguments[1 + number], depth)
        operands = list(op.operands)
        if name == "arith.select":
            picked = [r for r in (self._selected_range(op, operands[1], True, depth),
                                  self._selected_range(op, operands[2], False, depth)) if r is not None]
            return UNKNOWN if not picked else picked[0] if len(picked) == 1 else union(*picked)
        if name in ("arith.addi", "arith.subi", "arith.muli", "arith.minsi", "arith.maxsi"):
            a, b = self.operand_range(op, operands[0], depth), self.operand_range(op, operands[1], depth)
            result = {
                "arith.addi": lambda: add(a, b),
                "arith.subi": lambda: add(a, neg(b)),
                "arith.muli": lambda: mul(a, b),
                "arith.minsi": lambda: _minmax(a, b, min),
                "arith.maxsi": lambda: _minmax(a, b, max),
            }[name]()
            return _fitted(result, value.type)  # a sized integer wraps
        if name in ("arith.andi", "arith.ori", "arith.xori"):
            a, b = self.operand_range(op, operands[0], depth), self.operand_range(op, operands[1], depth)
            return bitwise(name, a, b)
        if name in _DIVISIONS:
            c = _positive_constant(operands[1])
            a = self.operand_range(op, operands[0], depth)
            if c is None or a[0] is None or a[0] < 0:
                return UNKNOWN
            return _DIVISIONS[name](a, c)
        return UNKNOWN

    def _selected_range(self, select: ir.Operation, value: ir.Value, taken: bool, depth: int) -> Range | None:
        """The range of a select's operand where the select picks it (None: never): `select(x == c, 0, x)`
        picks x only where x != c, which shortens x's range at an end that is c."""
        result = self.operand_range(select, value, depth)
        for subject, bound in _facts(select.operands[0], taken):
            if subject == value:
                result = _intersect(result, bound)
        for subject, excluded in _exclusions(select.operands[0], taken):
            if subject == value and result is not None:
                result = _without(result, excluded)
        return result

    def _affine_range(self, op: ir.Operation, depth: int) -> Range:
        amap = ir.AffineMapAttr(op.attributes["map"]).value
        ranges = [self.operand_range(op, v, depth) for v in op.operands]
        results = [expr_range(e, ranges[: amap.n_dims], ranges[amap.n_dims :]) for e in amap.results]
        if op.name == "affine.apply":
            return results[0]
        pick = min if op.name == "affine.min" else max
        combined = results[0]
        for other in results[1:]:
            combined = _minmax(combined, other, pick)
        return combined


def value_range(value: ir.Value, depth: int = 0) -> Range:
    return Intervals().range(value, depth)


def _intersect(a: Range, b: Range) -> Range:
    lo = b[0] if a[0] is None else a[0] if b[0] is None else max(a[0], b[0])
    hi = b[1] if a[1] is None else a[1] if b[1] is None else min(a[1], b[1])
    return lo, hi


def _unsigned_below(c: int) -> Range:
    """x with x < c as unsigned, for c >= 0: [0, c) read as signed too (a negative x is a huge unsigned)."""
    return (0, c - 1) if c >= 0 else UNKNOWN


# cmpi predicates (MLIR's numbering) -> the range of `x` where `x pred c` holds, and where it does not
_BOUNDS = {
    0: (lambda c: (c, c), lambda c: UNKNOWN),  # eq
    1: (lambda c: UNKNOWN, lambda c: (c, c)),  # ne
    2: (lambda c: (None, c - 1), lambda c: (c, None)),  # slt
    3: (lambda c: (None, c), lambda c: (c + 1, None)),  # sle
    4: (lambda c: (c + 1, None), lambda c: (None, c)),  # sgt
    5: (lambda c: (c, None), lambda c: (None, c - 1)),  # sge
    6: (_unsigned_below, lambda c: UNKNOWN),  # ult
    7: (lambda c: _unsigned_below(c + 1), lambda c: UNKNOWN),  # ule
    8: (lambda c: UNKNOWN, lambda c: _unsigned_below(c + 1)),  # ugt
    9: (lambda c: UNKNOWN, _unsigned_below),  # uge
}
_MIRRORED = {0: 0, 1: 1, 2: 4, 3: 5, 4: 2, 5: 3, 6: 8, 7: 9, 8: 6, 9: 7}  # `c pred x` is `x mirrored-pred c`


def _facts(condition: ir.Value, holds: bool) -> list[tuple[ir.Value, Range]]:
    """(x, range of x) implied by `condition` being true (`holds`) or false: comparisons of a value
    with a constant, and, where it holds, both sides of an `andi`."""
    owner = condition.owner
    if isinstance(owner, ir.Block):
        return []
    op = operation(owner)
    if op.name == "arith.andi" and holds:
        return _facts(op.operands[0], True) + _facts(op.operands[1], True)
    compared = _constant_comparison(condition)
    if compared is None:
        return []
    x, predicate, c = compared
    return [(x, _BOUNDS[predicate][0 if holds else 1](c))]


def _exclusions(condition: ir.Value, holds: bool) -> list[tuple[ir.Value, int]]:
    """(x, c) where `condition` having the truth `holds` says x != c: `x == c` false, `x != c` true."""
    compared = _constant_comparison(condition)
    if compared is None:
        return []
    x, predicate, c = compared
    return [(x, c)] if (predicate, holds) in ((0, False), (1, True)) else []


def _constant_comparison(condition: ir.Value) -> tuple[ir.Value, int, int] | None:
    """(x, predicate, c) when `condition` is an `arith.cmpi` of a value x with a constant c, written as
    `x predicate c` (mirrored when the constant is on the left), else None."""
    owner = condition.owner
    if isinstance(owner, ir.Block) or operation(owner).name != "arith.cmpi":
        return None
    op = operation(owner)
    predicate = ir.IntegerAttr(op.attributes["predicate"]).value
    x, y = op.operands
    c = constant_int(y)
    if c is None and constant_int(x) is not None:
        x, c, predicate = y, constant_int(x), _MIRRORED[predicate]
    return None if c is None else (x, predicate, c)


def _without(a: Range, c: int) -> Range | None:
    """`a` less the value c where c is one of its ends (None: nothing is left)."""
    lo, hi = a
    if lo == hi == c:
        return None
    if lo == c:
        return c + 1, hi
    if hi == c:
        return lo, c - 1
    return a


def _divisor(b: Range) -> int | None:
    return b[0] if b[0] is not None and b[0] == b[1] and b[0] > 0 else None


def _affine_division(divide: Callable[[Range, int], Range]) -> Callable[[Range, Range], Range]:
    def node(a: Range, b: Range) -> Range:
        c = _divisor(b)
        return UNKNOWN if c is None else divide(a, c)

    return node


def _floor_mod(a: Range, c: int) -> Range:
    return mod(a, c) if a[0] is not None and a[0] >= 0 else (0, c - 1)


# Affine maps in the domain of ranges: MLIR's floor, ceiling and modulo rounding, by positive constants.
AFFINE_RANGES = AffineOps(constant=lambda c: (c, c), add=add, mul=mul, floordiv=_affine_division(floordiv),
                          ceildiv=_affine_division(ceildiv), mod=_affine_division(_floor_mod))


def expr_range(expr, dims, symbols) -> Range:
    """The range of an affine expression whose dims and symbols have the given ranges."""
    return fold_affine(expr, AFFINE_RANGES, dims, symbols)
