"""Host-side index values (grid extents) -> Python expressions over symbol and scalar names.

The result is in the language of `tilemlir.runtime.expr` (numbers, names,
``+ - * // %``, unary minus, ``min``/``max``), e.g. ``(M + 3) // 4``, and
is exact: C-style (truncating) division and remainder are accepted only
where both operands are proven non-negative, where Python's floor
semantics agree. An unsigned scalar parameter is non-negative here (the
runtime computes grids with its Python value), though not in device code,
where its C value is signed; an unsigned cast passes a value through only
when it is non-negative in that sense. An integer constant read by an
unsigned op (`ceildivui`, `index_castui`, ...) is its bits read as unsigned:
a uint8 ``n`` divided by 200 holds ``-56 : i8`` in the IR and 200 here.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilemlir.emit_cuda import folding, irutil
from tilemlir.emit_cuda.kernel import KernelIR
from tilemlir.emit_cuda.signs import Signs
from tilemlir.mlir import ir
from tilemlir.passes.diag import error

_ATOM, _UNARY, _MUL, _ADD = 12, 11, 10, 9
_PREC = {"*": _MUL, "//": _MUL, "%": _MUL, "+": _ADD, "-": _ADD}
_PASS_THROUGH = frozenset({"arith.index_cast", "arith.extsi", "arith.trunci"})
_UNSIGNED_CASTS = frozenset({"arith.index_castui", "arith.extui"})
_READS_UNSIGNED = _UNSIGNED_CASTS | {"arith.divui", "arith.ceildivui", "arith.remui", "arith.minui", "arith.maxui"}


@dataclass(frozen=True)
class PyExpr:
    text: str
    prec: int = _ATOM
    value: int | None = None


def _lit(value: int) -> PyExpr:
    return PyExpr(str(value), _UNARY if value < 0 else _ATOM, value)


def _binary(op: str, a: PyExpr, b: PyExpr) -> PyExpr:
    prec = _PREC[op]
    left = a.text if a.prec >= prec else f"({a.text})"
    right = b.text if b.prec > prec else f"({b.text})"
    return PyExpr(f"{left} {op} {right}", prec)


def _neg(a: PyExpr) -> PyExpr:
    if a.value is not None:
        return _lit(-a.value)
    return PyExpr(f"-{a.text}" if a.prec >= _UNARY else f"-({a.text})", _UNARY)


def _call(name: str, args: list[PyExpr]) -> PyExpr:
    return PyExpr(f"{name}({', '.join(a.text for a in args)})")


def add(a: PyExpr, b: PyExpr) -> PyExpr:
    return folding.add(a, b, _lit, _binary)


def sub(a: PyExpr, b: PyExpr) -> PyExpr:
    if b.value is not None:
        return add(a, _lit(-b.value))
    return _binary("-", a, b)


def mul(a: PyExpr, b: PyExpr) -> PyExpr:
    return folding.mul(a, b, _lit, _binary)


def floordiv(a: PyExpr, b: PyExpr) -> PyExpr:
    if a.value is not None and b.value:
        return _lit(a.value // b.value)
    if b.value == 1:
        return a
    return _binary("//", a, b)


def ceildiv(a: PyExpr, b: PyExpr, a_nonneg: bool) -> PyExpr:
    if a.value is not None and b.value:
        return _lit(-(-a.value // b.value))
    if b.value == 1:
        return a
    if a_nonneg and b.value is not None and b.value > 0:
        return floordiv(add(a, _lit(b.value - 1)), b)  # (M + 3) // 4
    return _neg(floordiv(_neg(a), b))


def mod(a: PyExpr, b: PyExpr) -> PyExpr:
    if a.value is not None and b.value:
        return _lit(a.value % b.value)
    return _binary("%", a, b)


class GridTranslator:
    """Translates values computed before the gpu.launch into Python expressions."""

    def __init__(self, kernel: KernelIR):
        self._kernel = kernel
        self._args = kernel.args
        unsigned = [a for a, dtype in zip(self._args, kernel.arg_dtypes or ()) if dtype.startswith("uint")]
        self._signs = Signs(kernel.launch, nonneg_roots=unsigned)

    def expr(self, value: ir.Value) -> str:
        return self._translate(value).text

    def _translate(self, value: ir.Value) -> PyExpr:
        op = irutil.defining_op(value)
        if op is None:
            return self._argument(value)
        number = irutil.const_int(value)
        if number is not None:
            return _lit(number)
        operands = list(op.operands)
        if op.name == "memref.dim":
            return self._dim(op)
        if op.name in _PASS_THROUGH or (op.name in _UNSIGNED_CASTS and self._nonneg_operand(op, operands[0])):
            return self._operand(op, operands[0])
        if op.name == "affine.apply":
            return self._affine(op)
        if op.name in ("affine.min", "affine.max"):
            return self._affine_minmax(op)
        if len(operands) != 2:
            raise self._unsupported(op)
        a, b = (self._operand(op, v) for v in operands)
        nonneg = all(self._nonneg_operand(op, v) for v in operands)
        return self._binary(op, a, b, nonneg)

    def _operand(self, op: ir.Operation, value: ir.Value) -> PyExpr:
        number = irutil.const_int(value)
        if number is not None and op.name in _READS_UNSIGNED and isinstance(value.type, ir.IntegerType):
            return _lit(number & ((1 << value.type.width) - 1))
        return self._translate(value)

    def _nonneg_operand(self, op: ir.Operation, value: ir.Value) -> bool:
        if op.name in _READS_UNSIGNED and irutil.const_int(value) is not None:
            return True
        return self._signs.nonneg(value)

    def _binary(self, op: ir.Operation, a: PyExpr, b: PyExpr, nonneg: bool) -> PyExpr:
        name = op.name
        if name == "arith.addi":
            return add(a, b)
        if name == "arith.subi":
            return sub(a, b)
        if name == "arith.muli":
            return mul(a, b)
        if name == "arith.floordivsi" or (name in ("arith.divsi", "arith.divui") and nonneg):
            return floordiv(a, b)
        if name == "arith.ceildivsi" or (name == "arith.ceildivui" and nonneg):
            return ceildiv(a, b, self._nonneg_operand(op, op.operands[0]))
        if name in ("arith.remsi", "arith.remui") and nonneg:
            return mod(a, b)
        if name in ("arith.minsi", "arith.maxsi") or (name in ("arith.minui", "arith.maxui") and nonneg):
            return _call("min" if "min" in name else "max", [a, b])
        raise self._unsupported(op)

    def _argument(self, value: ir.BlockArgument) -> PyExpr:
        for arg, name in zip(self._args, self._kernel.arg_names):
            if arg == value and isinstance(arg.type, (ir.IntegerType, ir.IndexType)):
                return PyExpr(name)
        raise error(self._kernel.launch, f"a grid extent depends on {value}, which is not an integer parameter")

    def _dim(self, op: ir.Operation) -> PyExpr:
        source, index = op.operands
        position = irutil.const_int(index)
        for arg, dims in zip(self._args, self._kernel.arg_dims):
            if arg == source and dims is not None and position is not None and 0 <= position < len(dims):
                dim = dims[position]
                return _lit(dim) if isinstance(dim, int) else PyExpr(dim)
        raise error(op, "memref.dim in a grid extent must read a constant dim of a kernel argument")

    def _affine(self, op: ir.Operation) -> PyExpr:
        amap = ir.AffineMapAttr(op.attributes["map"]).value
        operands = [self._translate(v) for v in op.operands]
        return _affine_expr(amap.results[0], operands[: amap.n_dims], operands[amap.n_dims:])

    def _affine_minmax(self, op: ir.Operation) -> PyExpr:
        amap = ir.AffineMapAttr(op.attributes["map"]).value
        operands = [self._translate(v) for v in op.operands]
        results = [_affine_expr(e, operands[: amap.n_dims], operands[amap.n_dims:]) for e in amap.results]
        return results[0] if len(results) == 1 else _call(op.name.split(".")[1], results)

    def _unsupported(self, op: ir.Operation):
        return error(op, f"'{op.name}' in a grid extent has no exact Python form "
                         "(grid extents use + - * floordiv ceildiv mod min max on non-negative values)")


def _affine_expr(expr, dims: list[PyExpr], syms: list[PyExpr]) -> PyExpr:
    """An affine expression in Python; affine floordiv/mod are Python's // and %, exactly."""
    if isinstance(expr, ir.AffineConstantExpr):
        return _lit(expr.value)
    if isinstance(expr, ir.AffineDimExpr):
        return dims[expr.position]
    if isinstance(expr, ir.AffineSymbolExpr):
        return syms[expr.position]
    lhs, rhs = _affine_expr(expr.lhs, dims, syms), _affine_expr(expr.rhs, dims, syms)
    if isinstance(expr, ir.AffineAddExpr):
        return add(lhs, rhs)
    if isinstance(expr, ir.AffineMulExpr):
        return mul(lhs, rhs)
    if isinstance(expr, ir.AffineFloorDivExpr):
        return floordiv(lhs, rhs)
    if isinstance(expr, ir.AffineCeilDivExpr):
        return ceildiv(lhs, rhs, False)
    return mod(lhs, rhs)
