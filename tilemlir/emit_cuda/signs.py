"""Which integer values are known to be non-negative.

Unsigned IR ops (`divui`, `ceildivui`, `cmpi ult`, ...) and floor-rounding
ones (`floordivsi`) agree with plain C `/`, `%` and `<` on non-negative
operands, so where this analysis proves both operands non-negative the
emitter writes the readable form; elsewhere it writes the exact one.
Overflow is not modelled for `index` values: index arithmetic does not wrap
(at 64 bits it is the IR's own width; a 32-bit kernel is one whose index
values `index_width` proved to fit in an int). Sized integers do wrap (a
uint8 200 + 100 is 44, an int8 100 + 100 is -56), so `addi`, `muli` and
`shli` prove nothing about them, nor does a cast of an index to fewer than
32 bits. An unsigned quotient, remainder or right shift is at most its
first operand (and `minui` at most either), whatever the other operand's
sign: `divui %x, -56 : i8` divides by 200.
"""

from __future__ import annotations

from tilemlir.emit_cuda import irutil
from tilemlir.mlir import ir

# ops whose result is non-negative when all their operands are
_ALL = frozenset({
    "arith.divsi", "arith.ceildivsi", "arith.floordivsi", "arith.remsi", "arith.minsi", "arith.maxui",
    "arith.shrsi", "arith.ori", "arith.xori", "arith.extsi", "affine.min", "affine.max",
})
# ... when their first operand is (the result is at most it, read as unsigned)
_FIRST = frozenset({"arith.divui", "arith.ceildivui", "arith.remui", "arith.shrui"})
# ... and these when they do not wrap: index results only
_NO_WRAP = frozenset({"arith.addi", "arith.muli", "arith.shli"})
_INDEX_CASTS = frozenset({"arith.index_cast", "arith.index_castui"})
# ops whose result is non-negative when any operand is
_ANY = frozenset({"arith.maxsi", "arith.andi", "arith.minui"})
_ALWAYS = frozenset({"memref.dim", "gpu.thread_id", "gpu.block_id", "gpu.block_dim", "gpu.grid_dim",
                     "gpu.lane_id", "arith.extui"})


class Signs:
    """Signs of the values in and before `launch`, whose ids and sizes are non-negative."""

    def __init__(self, launch: ir.Operation):
        self._launch_args = list(irutil.single_block(launch).arguments)
        self._memo: dict[ir.Value, bool] = {}

    def nonneg(self, value: ir.Value) -> bool:
        if value not in self._memo:
            self._memo[value] = False  # cycles (loop-carried values) stay unproven
            self._memo[value] = self._compute(value)
        return self._memo[value]

    def all_nonneg(self, *values: ir.Value) -> bool:
        return all(self.nonneg(v) for v in values)

    def _compute(self, value: ir.Value) -> bool:
        op = irutil.defining_op(value)
        if op is None:
            return self._block_arg(value)
        if op.name == "arith.constant":
            number = irutil.const_int(value)
            return number is not None and number >= 0
        if op.name in _ALWAYS:
            return True
        operands = list(op.operands)
        if op.name in _ANY:
            return any(self.nonneg(v) for v in operands)
        if op.name in _FIRST:
            return self.nonneg(operands[0])
        if op.name in _ALL or (op.name in _NO_WRAP and isinstance(value.type, ir.IndexType)):
            return all(self.nonneg(v) for v in operands)
        if op.name in _INDEX_CASTS and not _narrower_than_32_bits(value.type):
            return self.nonneg(operands[0])
        if op.name == "arith.select":
            return self.nonneg(operands[1]) and self.nonneg(operands[2])
        if op.name == "affine.apply":
            return all(self.nonneg(v) for v in operands) and _affine_nonneg(op)
        return False

    def _block_arg(self, value: ir.BlockArgument) -> bool:
        if any(value == arg for arg in self._launch_args):
            return True
        owner = irutil.operation(value.owner.owner)
        if owner.name == "scf.for" and value.arg_number == 0:
            return self.nonneg(owner.operands[0])
        return False


def _narrower_than_32_bits(type_: ir.Type) -> bool:
    return isinstance(type_, ir.IntegerType) and type_.width < 32


def _affine_nonneg(op: ir.Operation) -> bool:
    """Every constant in the map is non-negative (mod results always are)."""
    amap = ir.AffineMapAttr(op.attributes["map"]).value
    return all(_expr_nonneg(e) for e in amap.results)


def _expr_nonneg(expr) -> bool:
    if isinstance(expr, ir.AffineConstantExpr):
        return expr.value >= 0
    if isinstance(expr, ir.AffineModExpr):
        return True
    if isinstance(expr, ir.AffineBinaryExpr):
        return _expr_nonneg(expr.lhs) and _expr_nonneg(expr.rhs)
    return True  # dims and symbols: their operands were checked
