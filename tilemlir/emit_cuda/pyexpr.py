"""Host-side index values (grid extents) -> Python expressions over symbol and scalar names.

The result is in the language of `tilemlir.runtime.expr` (numbers, names,
``+ - * // %``, unary minus, ``min``/``max``, ``wrap``/``wrapu``), e.g.
``(M + 3) // 4``, and is exact: C-style (truncating) division and remainder
are accepted only where both operands are proven non-negative, where
Python's floor semantics agree.

Sized integers wrap, on the device and in MLIR's semantics, and so here.
Each value translates to a `Term`: an expression and the range of its
Python value. An index value's expression is its value (index arithmetic
is assumed not to wrap); an iN value's is congruent to its bits modulo
2**N. `addi`, `subi`, `muli`, `trunci` and casts of an index to iN keep that
with no wrap written (save where a sum or product could leave int64, where
the native plan computes: its operands are then read as signed first); an
op that reads the bits as a number (a signed or unsigned cast, division,
remainder, min, max) reduces them with ``wrap(x, N)`` (signed) or
``wrapu(x, N)`` (unsigned) only where the range does not prove the value
already inside that reading's range. Ranges start from what the runtime
checks before it computes a grid: a scalar parameter holds a value of its
dtype (an unsigned one its non-negative Python value), a symbol is below
2**31 in a 32-bit kernel (2**63 in a 64-bit one). So an int32 ``n * 4``
divided by 128 reads ``-(-wrap(n * 4, 32) // 128)`` while ``(M + 3) // 4``
needs no wrap, nor does a uint8 ``n`` divided by 200: that constant is
``-56 : i8`` in the IR and its unsigned reading, 200, here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from tilemlir.analysis.affine_fold import AffineOps, fold_affine
from tilemlir.diagnostics.reporting import error
from tilemlir.emit_cuda import folding, irutil
from tilemlir.emit_cuda.kernel import KernelIR
from tilemlir.mlir import ir
from tilemlir.runtime.expr import wrap, wrapu

_ATOM, _UNARY, _MUL, _ADD = 12, 11, 10, 9
_PREC = {"*": _MUL, "//": _MUL, "%": _MUL, "+": _ADD, "-": _ADD}
_CASTS = frozenset({"arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui", "arith.trunci"})
_SIGNED_CASTS = frozenset({"arith.index_cast", "arith.extsi"})
_SIGNED_OPS = frozenset({"arith.divsi", "arith.ceildivsi", "arith.floordivsi", "arith.remsi", "arith.minsi",
                         "arith.maxsi"})
_UNSIGNED_OPS = frozenset({"arith.divui", "arith.ceildivui", "arith.remui", "arith.minui", "arith.maxui"})
_INT64 = (-(2**63), 2**63 - 1)


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


# -- terms: an expression with the range of its value --------------------------------------------------


@dataclass(frozen=True)
class Term:
    """A translated value: its expression and the inclusive range [lo, hi] of the expression's value."""

    expr: PyExpr
    lo: int
    hi: int

    @property
    def nonneg(self) -> bool:
        return self.lo >= 0


def _const(value: int) -> Term:
    return Term(_lit(value), value, value)


def _t_add(a: Term, b: Term) -> Term:
    return Term(add(a.expr, b.expr), a.lo + b.lo, a.hi + b.hi)


def _t_sub(a: Term, b: Term) -> Term:
    return Term(sub(a.expr, b.expr), a.lo - b.hi, a.hi - b.lo)


def _t_mul(a: Term, b: Term) -> Term:
    products = [x * y for x in (a.lo, a.hi) for y in (b.lo, b.hi)]
    return Term(mul(a.expr, b.expr), min(products), max(products))


def _floor(x: int, d: int) -> int:
    return x // d


def _ceil(x: int, d: int) -> int:
    return -(-x // d)


def _quotient(a: Term, b: Term, divide: Callable[[int, int], int]) -> tuple[int, int]:
    """The range of `divide(x, d)` over x in a and d != 0 in b: rounded quotients are monotone in
    each operand on either side of 0, so the extremes are at the corners (d = +-1 included)."""
    divisors = [d for d in (b.lo, b.hi, -1, 1) if d != 0 and b.lo <= d <= b.hi]
    values = [divide(x, d) for x in (a.lo, a.hi) for d in divisors] or [0]  # always / 0: raises at launch
    return min(values), max(values)


def _t_floordiv(a: Term, b: Term) -> Term:
    return Term(floordiv(a.expr, b.expr), *_quotient(a, b, _floor))


def _t_ceildiv(a: Term, b: Term, a_nonneg: bool) -> Term:
    return Term(ceildiv(a.expr, b.expr, a_nonneg), *_quotient(a, b, _ceil))


def _t_mod(a: Term, b: Term) -> Term:
    """Python's `%`: the sign of the divisor, below it in magnitude (and at most a, for a >= 0)."""
    if b.lo > 0 and a.nonneg:
        lo, hi = (a.lo, a.hi) if a.hi < b.lo else (0, min(b.hi - 1, a.hi))
    elif b.lo > 0:
        lo, hi = 0, b.hi - 1
    elif b.hi < 0:
        lo, hi = b.lo + 1, 0
    else:
        lo, hi = min(b.lo + 1, 0), max(b.hi - 1, 0)
    return Term(mod(a.expr, b.expr), lo, hi)


def _t_minmax(name: str, terms: list[Term]) -> Term:
    if len(terms) == 1:
        return terms[0]
    pick = min if name == "min" else max
    return Term(_call(name, [t.expr for t in terms]), pick(t.lo for t in terms), pick(t.hi for t in terms))


def _signed(t: Term, bits: int) -> Term:
    """`t`'s low `bits` bits read as a signed integer: `t` itself where its range is inside."""
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if low <= t.lo and t.hi <= high:
        return t
    if t.expr.value is not None:
        return _const(wrap(t.expr.value, bits))
    return Term(_call("wrap", [t.expr, _lit(bits)]), low, high)


def _unsigned(t: Term, bits: int) -> Term:
    """`t`'s low `bits` bits read as an unsigned integer: `t` itself where its range is inside."""
    high = (1 << bits) - 1
    if 0 <= t.lo and t.hi <= high:
        return t
    if t.expr.value is not None:
        return _const(wrapu(t.expr.value, bits))
    return Term(_call("wrapu", [t.expr, _lit(bits)]), 0, high)


def _read(t: Term, type_: ir.Type, signed: bool) -> Term:
    """The number a value of `type_` holds, read as signed or unsigned; an index value is its own."""
    if not isinstance(type_, ir.IntegerType):
        return t
    return _signed(t, type_.width) if signed else _unsigned(t, type_.width)


def _ring(combine: Callable[[Term, Term], Term], a: Term, b: Term, type_: ir.Type) -> Term:
    """`addi`/`subi`/`muli`: congruent modulo 2**N without a wrap; operands read as signed first where
    the result would leave int64 (where the native plan's programs compute) and that helps."""
    result = combine(a, b)
    fits = _INT64[0] <= result.lo and result.hi <= _INT64[1]
    if fits or not isinstance(type_, ir.IntegerType) or type_.width >= 64:
        return result
    return combine(_signed(a, type_.width), _signed(b, type_.width))


_RING = {"arith.addi": _t_add, "arith.subi": _t_sub, "arith.muli": _t_mul}


class GridTranslator:
    """Translates values computed before the gpu.launch into Python expressions."""

    def __init__(self, kernel: KernelIR, index_bits: int):
        self._kernel = kernel
        self._args = kernel.args
        self._dtypes = kernel.arg_dtypes or (None,) * len(kernel.args)
        self._index_bits = index_bits

    def expr(self, value: ir.Value) -> str:
        return self._translate(value).expr.text

    def _translate(self, value: ir.Value) -> Term:
        op = irutil.defining_op(value)
        if op is None:
            return self._argument(value)
        number = irutil.const_int(value)
        if number is not None:
            return _const(number)
        if op.name == "memref.dim":
            return self._dim(op)
        if op.name in _CASTS:
            return self._cast(op)
        if op.name == "affine.apply":
            return self._affine(op)
        if op.name in ("affine.min", "affine.max"):
            return self._affine_minmax(op)
        if len(op.operands) != 2:
            raise self._unsupported(op)
        return self._binary(op, value.type)

    def _cast(self, op: ir.Operation) -> Term:
        """A truncation, or a cast of an index to a sized integer, keeps the bits it has; a cast
        from a sized integer reads them (`extsi`/`index_cast` signed, `extui`/`index_castui` not)."""
        source = op.operands[0]
        term = self._translate(source)
        if op.name == "arith.trunci":
            return term
        return _read(term, source.type, signed=op.name in _SIGNED_CASTS)

    def _binary(self, op: ir.Operation, type_: ir.Type) -> Term:
        name = op.name
        a, b = (self._translate(v) for v in op.operands)
        if name in _RING:
            return _ring(_RING[name], a, b, type_)
        if name in _SIGNED_OPS or name in _UNSIGNED_OPS:
            a, b = (_read(t, v.type, signed=name in _SIGNED_OPS) for t, v in zip((a, b), op.operands))
        nonneg = a.nonneg and b.nonneg
        if name == "arith.floordivsi" or (name in ("arith.divsi", "arith.divui") and nonneg):
            return _t_floordiv(a, b)
        if name == "arith.ceildivsi" or (name == "arith.ceildivui" and nonneg):
            return _t_ceildiv(a, b, a.nonneg)
        if name in ("arith.remsi", "arith.remui") and nonneg:
            return _t_mod(a, b)
        if name in ("arith.minsi", "arith.maxsi") or (name in ("arith.minui", "arith.maxui") and nonneg):
            return _t_minmax("min" if "min" in name else "max", [a, b])
        raise self._unsupported(op)

    def _argument(self, value: ir.BlockArgument) -> Term:
        for arg, name, dtype in zip(self._args, self._kernel.arg_names, self._dtypes):
            if arg == value and isinstance(arg.type, (ir.IntegerType, ir.IndexType)):
                return Term(PyExpr(name), *self._scalar_range(arg.type, dtype))
        raise error(self._kernel.launch, f"a grid extent depends on {value}, which is not an integer parameter")

    def _scalar_range(self, type_: ir.Type, dtype: str | None) -> tuple[int, int]:
        """The values the runtime lets a scalar parameter of `type_` (declared `dtype`) hold."""
        bits = type_.width if isinstance(type_, ir.IntegerType) else self._index_bits
        if bits == 1 or (dtype or "").startswith("uint"):
            return 0, (1 << bits) - 1  # a bool is False or True; an unsigned value is non-negative
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def _dim(self, op: ir.Operation) -> Term:
        source, index = op.operands
        position = irutil.const_int(index)
        for arg, dims in zip(self._args, self._kernel.arg_dims):
            if arg == source and dims is not None and position is not None and 0 <= position < len(dims):
                dim = dims[position]
                return _const(dim) if isinstance(dim, int) else Term(PyExpr(dim), 0, self._symbol_max())
        raise error(op, "memref.dim in a grid extent must read a constant dim of a kernel argument")

    def _symbol_max(self) -> int:
        """The runtime refuses a symbol beyond the kernel's signed index type."""
        return (1 << (self._index_bits - 1)) - 1

    def _affine(self, op: ir.Operation) -> Term:
        amap = ir.AffineMapAttr(op.attributes["map"]).value
        operands = [self._translate(v) for v in op.operands]
        return _affine_term(amap.results[0], operands[: amap.n_dims], operands[amap.n_dims:])

    def _affine_minmax(self, op: ir.Operation) -> Term:
        amap = ir.AffineMapAttr(op.attributes["map"]).value
        operands = [self._translate(v) for v in op.operands]
        results = [_affine_term(e, operands[: amap.n_dims], operands[amap.n_dims:]) for e in amap.results]
        return _t_minmax(op.name.split(".")[1], results)

    def _unsupported(self, op: ir.Operation):
        return error(op, f"'{op.name}' in a grid extent has no exact Python form "
                         "(grid extents use + - * floordiv ceildiv mod min max on non-negative values)")


_PY_AFFINE = AffineOps(
    constant=_const,
    add=_t_add,
    mul=_t_mul,
    floordiv=_t_floordiv,
    ceildiv=lambda a, b: _t_ceildiv(a, b, False),
    mod=_t_mod,
)


def _affine_term(expr, dims: list[Term], syms: list[Term]) -> Term:
    """An affine expression in Python; affine floordiv/mod are Python's // and %, exactly."""
    return fold_affine(expr, _PY_AFFINE, dims, syms)
