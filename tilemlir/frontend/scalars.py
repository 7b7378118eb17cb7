"""Element code: constants, conversions, arithmetic, comparisons and math on run-time scalars.

Every function emits at the current insertion point and location (the
visitors set both) and raises `KernelError` for a user mistake. Operands are
`Scalar`s or Python numbers (at least one `Scalar` where it matters); the
numeric rules are those of docs/language.md.
"""

from __future__ import annotations

import functools
import math as pymath
import operator

from tilemlir import language as T
from tilemlir.analysis.signedness import int_attr
from tilemlir.frontend.source import KernelError
from tilemlir.frontend.types import (
    FLOAT_MAX,
    INDEX,
    compute_dtype,
    default_dtype,
    int_range,
    is_integer,
    is_signed,
    literal_dtype,
    mlir_type,
    promote,
)
from tilemlir.frontend.values import Scalar, is_number
from tilemlir.language import DType
from tilemlir.mlir import arith, ir
from tilemlir.mlir import math as mmath

# ----------------------------------------------------------------------------
# Constants and conversions.


def constant(value, dtype: DType) -> Scalar:
    """`value` (a Python number) as an `arith.constant` of `dtype`; KernelError if it does not fit."""
    type_ = mlir_type(dtype)
    if dtype.is_float:
        value = float(value)
        limit = FLOAT_MAX[dtype.name]
        if pymath.isfinite(value) and abs(value) > limit:
            raise KernelError(f"the constant {value!r} overflows {dtype} (largest finite value {limit:g})")
        if pymath.isinf(value) and dtype == T.float8_e4m3:
            raise KernelError("float8_e4m3 has no infinity; use its largest value, 448.0")
        attr = ir.FloatAttr.get(type_, value)
    else:
        if isinstance(value, float):
            raise KernelError(f"the float {value!r} needs an explicit conversion to {dtype}: write T.cast({value!r}, T.{dtype})")
        value = int(value)
        if dtype.kind == "bool" and value not in (0, 1):  # numpy's np.bool_(2) is True, a 1-bit truncation False
            raise KernelError(f"the int {value} is not a bool: write True or False, or T.cast({value}, T.bool) for "
                              f"{value} != 0")
        low, high = int_range(dtype) if dtype != INDEX else (-(1 << 63), (1 << 63) - 1)
        if not low <= value <= high:
            raise KernelError(f"the constant {value} does not fit in {dtype} (range {low}..{high})")
        if dtype.kind == "bool":
            attr = ir.BoolAttr.get(bool(value))
        else:
            attr = int_attr(type_, value)
    return Scalar(arith.ConstantOp(type_, attr).result, dtype, _expr(value))


def as_scalar(value, like: DType | None = None) -> Scalar:
    """A Scalar for a Scalar or a Python number (typed by `like` per the literal rules)."""
    if isinstance(value, Scalar):
        return value
    if not is_number(value):
        raise KernelError(f"expected a number or a run-time value, got {_describe(value)}")
    return constant(value, literal_dtype(value, like) if like is not None else default_dtype(value))


def _describe(value) -> str:
    from tilemlir.frontend.values import Buffer

    if isinstance(value, Buffer):
        return value.describe()
    return f"{type(value).__name__} {value!r}"


def implicit_ok(src: DType, dst: DType) -> bool:
    """Conversions done without T.cast: between floats, between integers, integer to float."""
    if src == dst:
        return True
    if dst.is_float:
        return src.is_float or is_integer(src)
    return is_integer(src) and is_integer(dst)


def convert(value: Scalar, dtype: DType, explicit: bool = True) -> Scalar:
    """`value` converted to `dtype`; with `explicit=False` only the implicit conversions are allowed."""
    src = value.dtype
    if src == dtype:
        return value
    if not explicit and not implicit_ok(src, dtype):
        raise KernelError(
            f"cannot convert {src} to {dtype} implicitly: write T.cast(value, T.{dtype})"
        )
    result = _convert(value.value, src, dtype)
    return Scalar(result, dtype, value.expr if is_integer(src) and is_integer(dtype) else None)


def _convert(v: ir.Value, src: DType, dst: DType) -> ir.Value:
    out = mlir_type(dst)
    if src.is_float and dst.is_float:
        if src.bits == dst.bits:  # float16 <-> bfloat16, e4m3 <-> e5m2: through float32
            return _convert(_convert(v, src, T.float32), T.float32, dst)
        return (arith.ExtFOp if dst.bits > src.bits else arith.TruncFOp)(out, v).result
    if dst.is_float:
        if src == INDEX:
            return arith.SIToFPOp(out, arith.IndexCastOp(ir.IntegerType.get_signless(64), v).result).result
        return (arith.SIToFPOp if src.kind == "int" else arith.UIToFPOp)(out, v).result
    if dst.kind == "bool":
        if src.is_float:
            zero = arith.ConstantOp(v.type, ir.FloatAttr.get(v.type, 0.0)).result
            return arith.CmpFOp(arith.CmpFPredicate.UNE, v, zero).result
        zero = arith.ConstantOp(v.type, 0).result
        return arith.CmpIOp(arith.CmpIPredicate.ne, v, zero).result
    if src.is_float:
        if dst == INDEX:
            i64 = arith.FPToSIOp(ir.IntegerType.get_signless(64), v).result
            return arith.IndexCastOp(out, i64).result
        return (arith.FPToSIOp if dst.kind == "int" else arith.FPToUIOp)(out, v).result
    if INDEX in (src, dst):
        return (arith.IndexCastOp if is_signed(src) else arith.IndexCastUIOp)(out, v).result
    if dst.bits > src.bits:
        return (arith.ExtSIOp if src.kind == "int" else arith.ExtUIOp)(out, v).result
    if dst.bits < src.bits:
        return arith.TruncIOp(out, v).result
    return v  # same width, other signedness: the bits are the same


def to_index(value) -> Scalar:
    """An integer Scalar or Python int as an `index` Scalar."""
    if isinstance(value, bool) or (is_number(value) and not isinstance(value, int)):
        raise KernelError(f"expected an integer, got {value!r}")
    if isinstance(value, int):
        return constant(value, INDEX)
    if not isinstance(value, Scalar):
        raise KernelError(f"expected an integer, got {_describe(value)}")
    if not is_integer(value.dtype):
        raise KernelError(f"expected an integer, got a {value.dtype} value (convert it with T.cast(x, T.int32))")
    return convert(value, INDEX)


# ----------------------------------------------------------------------------
# Arithmetic.

_BIT_OPS = ("&", "|", "^", "<<", ">>")
_EXPR_OPS = ("+", "-", "*", "//", "%")

# Two bool operands give numpy's bool results: `& | ^`, `*` (and), `~` (not), T.max / T.min (or / and),
# abs / floor / ceil (the value). The rest is refused: numpy's `+` is `or` where Python counts, `-` and
# unary `-` are numpy errors, and numpy's `/ // % ** << >>` give float64 or int8.
_BOOL_LOGICAL = {"&": "&", "|": "|", "^": "^", "*": "&"}
_BOOL_HINTS = {
    "+": "write a | b for 'either', or T.cast(a, T.int32) + T.cast(b, T.int32) to count",
    "-": "write a ^ b for 'differ', or T.cast(a, T.int32) - T.cast(b, T.int32)",
    "/": "convert them first, e.g. T.cast(a, T.float32) / T.cast(b, T.float32)",
}


def _bool_operator_error(op: str) -> KernelError:
    hint = _BOOL_HINTS.get(op, f"convert them first, e.g. T.cast(a, T.int32) {op} T.cast(b, T.int32)")
    named = "'**' (T.pow)" if op == "**" else f"'{op}'"
    return KernelError(f"{named} is not defined on bool operands: {hint}")


def _bool_negate_error() -> KernelError:
    return KernelError(
        "unary '-' is not defined on a bool operand: write `not x` (or ~x) for logical negation, or -T.cast(x, T.int32)"
    )


_BOOL_FOLDS = {"&": operator.and_, "|": operator.or_, "^": operator.xor, "~": operator.not_}


def bool_fold(op: str, python_op):
    """The Python function that folds `op` on compile-time bools (all operands Python bools) to what the
    run-time code computes: numpy's bool results, and the same errors (Python's `~True` is -2, `True + True`
    is 2). `op` is a binary operator, a comparison, or one of the unary `~ - + not`."""
    if op in _BOOL_LOGICAL:
        return _BOOL_FOLDS[_BOOL_LOGICAL[op]]
    if op in _BOOL_FOLDS:
        return _BOOL_FOLDS[op]
    if op == "unary -":
        raise _bool_negate_error()
    if op == "unary +":
        return lambda value: value
    if op in ("+", "-", "/", "//", "%", "**", "<<", ">>"):
        raise _bool_operator_error(op)
    return python_op


def common_dtype(*values) -> DType:
    """The type that operands (Scalars and Python numbers, at least one Scalar) are computed in."""
    scalars = [v for v in values if isinstance(v, Scalar)]
    if not scalars:
        return compute_dtype(default_dtype(values[0]))
    dtype = scalars[0].dtype
    for s in scalars[1:]:
        dtype = promote(dtype, s.dtype)
    for v in values:
        if not isinstance(v, Scalar):
            dtype = promote(dtype, literal_dtype(v, dtype))
    return compute_dtype(dtype)


def _expr(value) -> str | None:
    """The Python formula of an operand, when it has one (see Scalar.expr)."""
    if isinstance(value, Scalar):
        return value.expr
    if isinstance(value, float):
        return repr(value) if pymath.isfinite(value) else None
    return repr(value) if isinstance(value, int) else None


def _identity_operand(op: str, a, b, dtype: DType):
    """The Scalar `a op b` equals when the other side is a neutral Python int (x * 1, x + 0, ...), else None.
    Integer arithmetic only: for floats `x + 0.0` is not `x` when x is -0.0."""
    if not is_integer(dtype):
        return None
    for scalar, number, number_is_right in ((a, b, True), (b, a, False)):
        if not isinstance(scalar, Scalar) or scalar.dtype != dtype or type(number) is not int:
            continue
        if (op == "*" and number == 1) or (op == "+" and number == 0):
            return scalar
        if number_is_right and ((op == "-" and number == 0) or (op == "//" and number == 1)):
            return scalar
    return None


def binary(op: str, a, b) -> Scalar:
    """`a op b` for op in + - * / // % ** & | ^ << >>."""
    dtype = common_dtype(a, b)
    same = _identity_operand(op, a, b, dtype)
    if same is not None:
        return same
    if dtype.kind == "bool":
        if op not in _BOOL_LOGICAL:
            raise _bool_operator_error(op)
        op = _BOOL_LOGICAL[op]
    lhs, rhs = (convert(as_scalar(x, dtype), dtype) for x in (a, b))
    if op in ("//", "%") and _is_constant_zero(rhs):
        raise _division_by_zero(op)
    if op in _BIT_OPS:
        result = _bitwise(op, lhs.value, rhs.value, dtype)
    elif dtype.is_float:
        result = _float_arith(op, lhs.value, rhs.value)
    else:
        result = _int_arith(op, lhs.value, rhs.value, dtype)
    ea, eb = _expr(a), _expr(b)
    expr = f"({ea} {op} {eb})" if op in _EXPR_OPS and ea is not None and eb is not None else None
    return Scalar(result, dtype, expr)


def _float_arith(op: str, a: ir.Value, b: ir.Value) -> ir.Value:
    if op == "+":
        return arith.AddFOp(a, b).result
    if op == "-":
        return arith.SubFOp(a, b).result
    if op == "*":
        return arith.MulFOp(a, b).result
    if op == "/":
        return arith.DivFOp(a, b).result
    if op == "//":
        return mmath.FloorOp(arith.DivFOp(a, b).result).result
    if op == "%":  # Python's: a - floor(a / b) * b, the sign of b
        quotient = mmath.FloorOp(arith.DivFOp(a, b).result).result
        return arith.SubFOp(a, arith.MulFOp(quotient, b).result).result
    return mmath.PowFOp(a, b).result


def _int_arith(op: str, a: ir.Value, b: ir.Value, dtype: DType) -> ir.Value:
    signed = is_signed(dtype)
    if op == "+":
        return arith.AddIOp(a, b).result
    if op == "-":
        return arith.SubIOp(a, b).result
    if op == "*":
        return arith.MulIOp(a, b).result
    if op == "/":
        raise KernelError(
            "'/' on integers is ambiguous: write a // b for (floor) integer division, "
            "or convert first for a float result, e.g. T.cast(a, T.float32) / b"
        )
    if op == "//":
        return (arith.FloorDivSIOp if signed else arith.DivUIOp)(a, b).result
    if op == "%":
        if not signed:
            return arith.RemUIOp(a, b).result
        quotient = arith.FloorDivSIOp(a, b).result  # Python's modulo: the sign of b
        return arith.SubIOp(a, arith.MulIOp(quotient, b).result).result
    if dtype == INDEX:
        raise KernelError("'**' on index values: convert them first, e.g. T.cast(i, T.int32)")
    return mmath.IPowIOp(a, b).result if signed else _unsigned_power(a, b)


def _unsigned_power(base: ir.Value, exponent: ir.Value) -> ir.Value:
    """base ** exponent modulo 2**w for unsigned w-bit integers. math.ipowi reads its exponent as
    signed, so a top bit set in it is taken off: modulo 2**w (w >= 3) an odd base's powers repeat every
    2**(w-2) steps, so k and k - 2**(w-1) give the same power, and an even base's power is 0 once
    k >= w, as every such k is."""
    type_ = base.type
    width = ir.IntegerType(type_).width
    low_bits = arith.AndIOp(exponent, arith.ConstantOp(type_, int_attr(type_, (1 << (width - 1)) - 1)).result).result
    power = mmath.IPowIOp(base, low_bits).result
    zero = arith.ConstantOp(type_, 0).result
    top_bit = arith.CmpIOp(arith.CmpIPredicate.slt, exponent, zero).result
    even = arith.CmpIOp(arith.CmpIPredicate.eq, arith.AndIOp(base, arith.ConstantOp(type_, 1).result).result,
                        zero).result
    vanishes = arith.AndIOp(top_bit, even).result
    return arith.SelectOp(vanishes, zero, power).result


def _bitwise(op: str, a: ir.Value, b: ir.Value, dtype: DType) -> ir.Value:
    if dtype.is_float:
        raise KernelError(f"'{op}' needs integer or bool operands, got {dtype}")
    if op == "&":
        return arith.AndIOp(a, b).result
    if op == "|":
        return arith.OrIOp(a, b).result
    if op == "^":
        return arith.XOrIOp(a, b).result
    if op == "<<":
        return arith.ShLIOp(a, b).result
    return (arith.ShRSIOp if is_signed(dtype) else arith.ShRUIOp)(a, b).result


_FLOAT_PREDICATES = {"==": "OEQ", "!=": "UNE", "<": "OLT", "<=": "OLE", ">": "OGT", ">=": "OGE"}
_SIGNED_PREDICATES = {"==": "eq", "!=": "ne", "<": "slt", "<=": "sle", ">": "sgt", ">=": "sge"}
_UNSIGNED_PREDICATES = {"==": "eq", "!=": "ne", "<": "ult", "<=": "ule", ">": "ugt", ">=": "uge"}


def compare(op: str, a, b) -> Scalar:
    """`a op b` for == != < <= > >=; the result is a bool (i1). `!=` is true when either float is NaN."""
    dtype = common_dtype(a, b)
    lhs, rhs = (convert(as_scalar(x, dtype), dtype) for x in (a, b))
    ea, eb = _expr(a), _expr(b)
    expr = f"({ea} {op} {eb})" if ea is not None and eb is not None else None
    if dtype.is_float:
        predicate = getattr(arith.CmpFPredicate, _FLOAT_PREDICATES[op])
        return Scalar(arith.CmpFOp(predicate, lhs.value, rhs.value).result, T.bool, expr)
    table = _SIGNED_PREDICATES if is_signed(dtype) else _UNSIGNED_PREDICATES
    predicate = getattr(arith.CmpIPredicate, table[op])
    return Scalar(arith.CmpIOp(predicate, lhs.value, rhs.value).result, T.bool, expr)


def negate(a: Scalar) -> Scalar:
    dtype = compute_dtype(a.dtype)
    if dtype.kind == "bool":
        raise _bool_negate_error()
    a = convert(a, dtype)
    known = _float_constant(a)
    if known is not None:
        return constant(-known, dtype)
    if dtype.is_float:
        return Scalar(arith.NegFOp(a.value).result, dtype)
    expr = f"(-{a.expr})" if a.expr is not None else None
    return Scalar(arith.SubIOp(constant(0, dtype).value, a.value).result, dtype, expr)


def _division_by_zero(op: str) -> KernelError:
    what = "integer division" if op == "//" else "integer modulo"
    return KernelError(
        f"{what} by zero: the divisor is 0 at compile time (Python raises ZeroDivisionError; the GPU would give "
        "an arbitrary number)"
    )


# Casts that keep an integer zero exactly when it was zero (a truncation may make zero of a nonzero value).
_ZERO_PRESERVING_CASTS = ("arith.extsi", "arith.extui", "arith.index_cast", "arith.index_castui")


def _is_constant_zero(a: Scalar) -> bool:
    """Whether an integer or index Scalar is an `arith.constant` 0, through widening and index casts."""
    if not is_integer(a.dtype):
        return False
    op = getattr(a.value.owner, "operation", a.value.owner)
    while getattr(op, "name", None) in _ZERO_PRESERVING_CASTS:
        op = getattr(op.operands[0].owner, "operation", op.operands[0].owner)
    if getattr(op, "name", None) != "arith.constant" or not isinstance(op.attributes["value"], ir.IntegerAttr):
        return False
    return ir.IntegerAttr(op.attributes["value"]).value == 0


def _float_constant(a: Scalar) -> float | None:
    """The value of a float Scalar defined by an `arith.constant`, else None."""
    owner = a.value.owner
    op = getattr(owner, "operation", owner)
    if not a.dtype.is_float or getattr(op, "name", None) != "arith.constant":
        return None
    return ir.FloatAttr(op.attributes["value"]).value


def invert(a: Scalar) -> Scalar:
    """Bitwise `~` on integers; on a bool it is `not` (as in numpy)."""
    if a.dtype.kind == "bool":
        return logical_not(a)
    if not is_integer(a.dtype):
        raise KernelError(f"'~' needs an integer or bool operand, got {a.dtype}")
    all_ones = int_range(a.dtype)[1] if a.dtype.kind == "uint" else -1
    return Scalar(arith.XOrIOp(a.value, constant(all_ones, a.dtype).value).result, a.dtype)


def truth(value, what: str) -> Scalar:
    """A bool Scalar for a condition; numbers are not silently compared with zero."""
    if isinstance(value, Scalar) and value.dtype.kind == "bool":
        return value
    if isinstance(value, Scalar):
        raise KernelError(f"{what} must be a bool, got a {value.dtype} value: compare it explicitly, e.g. x != 0")
    return constant(bool(value), T.bool)


def logical(op: str, a: Scalar, b: Scalar) -> Scalar:
    """`and` / `or` on bool Scalars (both sides are evaluated)."""
    method = arith.AndIOp if op == "and" else arith.OrIOp
    expr = f"({a.expr} {op} {b.expr})" if a.expr is not None and b.expr is not None else None
    return Scalar(method(a.value, b.value).result, T.bool, expr)


def logical_not(a: Scalar) -> Scalar:
    expr = f"(not {a.expr})" if a.expr is not None else None
    return Scalar(arith.XOrIOp(a.value, constant(True, T.bool).value).result, T.bool, expr)


def select(condition: Scalar, a, b) -> Scalar:
    """`a` where `condition` else `b`, in the operands' common type (arith.select)."""
    dtype = common_dtype(a, b) if (isinstance(a, Scalar) or isinstance(b, Scalar)) else default_dtype(a)
    if isinstance(a, Scalar) and isinstance(b, Scalar) and a.dtype == b.dtype:
        dtype = a.dtype
    lhs, rhs = (convert(as_scalar(x, dtype), dtype) for x in (a, b))
    return Scalar(arith.SelectOp(condition.value, lhs.value, rhs.value).result, dtype)


# ----------------------------------------------------------------------------
# Math functions.

_UNARY_FLOAT = {
    "exp": mmath.ExpOp,
    "exp2": mmath.Exp2Op,
    "log": mmath.LogOp,
    "log2": mmath.Log2Op,
    "sqrt": mmath.SqrtOp,
    "rsqrt": mmath.RsqrtOp,
    "tanh": mmath.TanhOp,
    "erf": mmath.ErfOp,
    "erfc": mmath.ErfcOp,
    "expm1": mmath.ExpM1Op,
    "log10": mmath.Log10Op,
    "log1p": mmath.Log1pOp,
    "cbrt": mmath.CbrtOp,
    "sin": mmath.SinOp,
    "cos": mmath.CosOp,
    "tan": mmath.TanOp,
    "asin": mmath.AsinOp,
    "acos": mmath.AcosOp,
    "atan": mmath.AtanOp,
    "sinh": mmath.SinhOp,
    "cosh": mmath.CoshOp,
    "asinh": mmath.AsinhOp,
    "acosh": mmath.AcoshOp,
    "atanh": mmath.AtanhOp,
    "floor": mmath.FloorOp,
    "ceil": mmath.CeilOp,
    "round": mmath.RoundOp,
    "trunc": mmath.TruncOp,
}
# rounding functions: an integer (or bool) operand is its own result
INTEGRAL_ROUNDING = ("floor", "ceil", "round", "trunc")

UNARY_FUNCTIONS = (*_UNARY_FLOAT, "sigmoid", "abs")


def _bool_function_error(what: str) -> KernelError:
    return KernelError(f"{what} is not defined on a bool operand: convert it first, e.g. T.cast(x, T.float32)")


def _fma_type_error(dtype: DType) -> KernelError:
    return KernelError(f"T.fma needs float operands, got {dtype}: convert them first, e.g. T.cast(x, T.float32)")


def refuse_bool_function(name: str) -> None:
    """Raise the error the run-time code gives for T.`name` on bool operands only; the functions defined on
    bools (max, min, abs and the rounding functions) pass."""
    if name == "pow":
        raise _bool_operator_error("**")
    if name == "fma":
        raise _fma_type_error(T.bool)
    if name in ("sigmoid", "atan2") or (name in _UNARY_FLOAT and name not in INTEGRAL_ROUNDING):
        raise _bool_function_error(f"T.{name}")


def float_operand(a, what: str) -> Scalar:
    """A float Scalar to apply the float function `what` to: ints become float32, fp8 float32."""
    a = as_scalar(a)
    if a.dtype.kind == "bool":
        raise _bool_function_error(what)
    dtype = compute_dtype(a.dtype) if a.dtype.is_float else T.float32
    return convert(a, dtype)


def unary_function(name: str, a) -> Scalar:
    if name == "abs":
        return absolute(a)
    if name in INTEGRAL_ROUNDING and isinstance(a, Scalar) and (is_integer(a.dtype) or a.dtype.kind == "bool"):
        return a
    x = float_operand(a, f"T.{name}")
    if name == "sigmoid":
        one = constant(1.0, x.dtype)
        e = mmath.ExpOp(arith.NegFOp(x.value).result).result
        return Scalar(arith.DivFOp(one.value, arith.AddFOp(one.value, e).result).result, x.dtype)
    return Scalar(_UNARY_FLOAT[name](x.value).result, x.dtype)


def atan2(y, x) -> Scalar:
    """The angle of the point (x, y), in (-pi, pi]: in the operands' common float type (integers as float32,
    half precision computed as compute_dtype says); refused on bools."""
    dtype = common_dtype(y, x)
    if dtype.kind == "bool" or any(isinstance(v, Scalar) and v.dtype.kind == "bool" for v in (y, x)):
        raise _bool_function_error("T.atan2")
    dtype = compute_dtype(dtype) if dtype.is_float else T.float32
    a, b = (convert(as_scalar(v, dtype), dtype) for v in (y, x))
    return Scalar(mmath.Atan2Op(a.value, b.value).result, dtype)


def absolute(a) -> Scalar:
    a = as_scalar(a)
    dtype = compute_dtype(a.dtype)
    a = convert(a, dtype)
    if dtype.is_float:
        return Scalar(mmath.AbsFOp(a.value).result, dtype)
    if dtype.kind in ("uint", "bool"):
        return a
    return Scalar(mmath.AbsIOp(a.value).result, dtype)


def extremum(name: str, values: list) -> Scalar:
    """T.max / T.min over two or more operands: maximumf/minimumf (NaN-propagating) for floats."""
    dtype = common_dtype(*values)
    scalars = [convert(as_scalar(v, dtype), dtype) for v in values]
    if dtype.kind == "bool":  # numpy's maximum / minimum of bools: or / and
        method = arith.OrIOp if name == "max" else arith.AndIOp
    elif dtype.is_float:
        method = arith.MaximumFOp if name == "max" else arith.MinimumFOp
    elif is_signed(dtype):
        method = arith.MaxSIOp if name == "max" else arith.MinSIOp
    else:
        method = arith.MaxUIOp if name == "max" else arith.MinUIOp
    result = scalars[0]
    exprs = [_expr(v) for v in values]
    for s in scalars[1:]:
        result = Scalar(method(result.value, s.value).result, dtype)
    expr = f"{name}({', '.join(exprs)})" if all(e is not None for e in exprs) else None
    return Scalar(result.value, dtype, expr)


def refuse_integer_fma(numbers: list) -> None:
    """Raise the error `fma` gives at run time when the compile-time `numbers` would be integers there
    (ints and bools are int32 unless a float makes them float32), so T.fma(2, 3, 4) does not fold to 10."""
    dtype = compute_dtype(functools.reduce(promote, (default_dtype(n) for n in numbers)))
    if not dtype.is_float:
        raise _fma_type_error(dtype)


def fma(a, b, c) -> Scalar:
    dtype = common_dtype(a, b, c)
    if not dtype.is_float:
        raise _fma_type_error(dtype)
    x, y, z = (convert(as_scalar(v, dtype), dtype) for v in (a, b, c))
    return Scalar(mmath.FmaOp(x.value, y.value, z.value).result, dtype)


def power(a, b) -> Scalar:
    """a ** b: math.powf on floats (ints become float32), math.ipowi on integers; refused on two bools."""
    dtype = common_dtype(a, b)
    if dtype.kind == "bool" or (is_integer(dtype) and dtype != INDEX):
        return binary("**", a, b)
    if dtype == INDEX:
        dtype = T.float32
    x, y = (convert(as_scalar(v, dtype), dtype) for v in (a, b))
    return Scalar(mmath.PowFOp(x.value, y.value).result, dtype)


def ceildiv_type_error(dtype: DType) -> KernelError:
    return KernelError(f"T.ceildiv needs integer operands, got {dtype}: convert them first, e.g. T.cast(x, T.int32)")


def ceildiv(a, b) -> Scalar:
    """ceil(a / b) on integers (arith.ceildivui on index values, dims being non-negative)."""
    dtype = common_dtype(a, b)
    if not is_integer(dtype):
        raise ceildiv_type_error(dtype)
    x, y = (convert(as_scalar(v, dtype), dtype) for v in (a, b))
    if _is_constant_zero(y):
        raise KernelError("T.ceildiv by zero")
    op = arith.CeilDivUIOp if dtype.kind in ("index", "uint") else arith.CeilDivSIOp
    ea, eb = _expr(a), _expr(b)
    expr = f"(-(-{ea} // {eb}))" if ea is not None and eb is not None else None
    return Scalar(op(x.value, y.value).result, dtype, expr)
