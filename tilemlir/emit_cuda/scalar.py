"""Scalar `arith` / `math` / `affine` ops -> C++ expressions with the IR's exact semantics.

Numerics (docs: tilemlir/emit_cuda/__init__.py): float ops are written as
plain C++ operators and correctly rounded CUDA functions (`expf`, `sqrtf`,
`/`); the fast intrinsics (`__expf`, `__fdividef`, `rsqrtf`, ...) appear only
under `fast_math`. `half` and `__nv_bfloat16` arithmetic uses their C++
operators (one rounding, like the IR); math functions on them, and all fp8
arithmetic, compute in float and round once at the end. Integer ops read
their operands as signed C types; unsigned and floor/ceil ops use the plain
C form where both operands are proven non-negative, else an exact one. The
IR's sized-integer add, sub, mul and shift left wrap, where signed C
arithmetic would overflow (undefined behaviour): 32- and 64-bit ones, and
every shift left, compute on unsigned C operands (`(int)((unsigned int)a *
16777619u)`); `index` math stays plain (it does not overflow: see
`index_width`, which makes it 64-bit wherever 32 bits could).
`math.ipowi` calls a prelude helper per width (`tl_ipowi_i32`).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable

from tilemlir.analysis.affine_fold import AffineOps, fold_affine
from tilemlir.diagnostics.reporting import error
from tilemlir.emit_cuda import cexpr as C
from tilemlir.emit_cuda.cexpr import CExpr
from tilemlir.emit_cuda.conversions import CONVERSIONS, ConversionContext
from tilemlir.emit_cuda.ctype import FP8, CTypes, float_kind, int_width, is_bool, wrap_int
from tilemlir.emit_cuda.float_rounding import FloatRounding
from tilemlir.emit_cuda.prelude import Prelude
from tilemlir.emit_cuda.signs import Signs
from tilemlir.mlir import ir

_MATH = {  # op: (float, double, fast float)
    "exp": ("expf", "exp", "__expf"), "exp2": ("exp2f", "exp2", "exp2f"), "expm1": ("expm1f", "expm1", "expm1f"),
    "log": ("logf", "log", "__logf"), "log2": ("log2f", "log2", "__log2f"), "log10": ("log10f", "log10", "__log10f"),
    "log1p": ("log1pf", "log1p", "log1pf"), "sqrt": ("sqrtf", "sqrt", "sqrtf"), "cbrt": ("cbrtf", "cbrt", "cbrtf"),
    "sin": ("sinf", "sin", "__sinf"), "cos": ("cosf", "cos", "__cosf"), "tan": ("tanf", "tan", "__tanf"),
    "asin": ("asinf", "asin", "asinf"), "acos": ("acosf", "acos", "acosf"), "atan": ("atanf", "atan", "atanf"),
    "sinh": ("sinhf", "sinh", "sinhf"), "cosh": ("coshf", "cosh", "coshf"), "tanh": ("tanhf", "tanh", "tanhf"),
    "asinh": ("asinhf", "asinh", "asinhf"), "acosh": ("acoshf", "acosh", "acoshf"),
    "atanh": ("atanhf", "atanh", "atanhf"), "erf": ("erff", "erf", "erff"), "erfc": ("erfcf", "erfc", "erfcf"),
    "absf": ("fabsf", "fabs", "fabsf"), "ceil": ("ceilf", "ceil", "ceilf"), "floor": ("floorf", "floor", "floorf"),
    "round": ("roundf", "round", "roundf"), "roundeven": ("rintf", "rint", "rintf"),
    "trunc": ("truncf", "trunc", "truncf"), "atan2": ("atan2f", "atan2", "atan2f"),
    "powf": ("powf", "pow", "__powf"), "copysign": ("copysignf", "copysign", "copysignf"),
    "fma": ("fmaf", "fma", "fmaf"),
}
_FLOAT_OPS = {"arith.addf": "+", "arith.subf": "-", "arith.mulf": "*", "arith.divf": "/"}
_INT_OPS = {"arith.addi": "+", "arith.subi": "-", "arith.muli": "*", "arith.andi": "&", "arith.ori": "|",
            "arith.xori": "^", "arith.shli": "<<", "arith.shrsi": ">>"}
_CMPF = ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule", "une", "uno",
         "true")
_CMPI = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
_ORDERED = {"oeq": "==", "ogt": ">", "oge": ">=", "olt": "<", "ole": "<="}
_UNORDERED_NOT = {"ugt": "<=", "uge": "<", "ult": ">=", "ule": ">"}
# Sized-integer ops that wrap in the IR but overflow (undefined behaviour) on signed C operands:
# computed in unsigned C arithmetic. (`index` math does not overflow: index_width.py.)
_WRAPPING = {"arith.addi": "+", "arith.subi": "-", "arith.muli": "*", "arith.shli": "<<"}
_ICMP = {"eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
         "ult": "<", "ule": "<=", "ugt": ">", "uge": ">="}


def float32_literal(x: float) -> str:
    """The shortest decimal that reads back as the same float32, with an `f` suffix."""
    for digits in range(1, 10):  # 9 significant digits always suffice for float32
        text = f"{x:.{digits}g}"
        try:
            if struct.pack("<f", float(text)) == struct.pack("<f", x):
                break
        except OverflowError:  # rounded past FLT_MAX: more digits needed
            continue
    return _with_point(text) + "f"


def _with_point(text: str) -> str:
    return text if any(c in text for c in ".eEn") else text + ".0"


# The i1 ops written as C's `&&` / `||`, whose right side runs only sometimes. Read as unsigned, False <
# True (max is or, min is and); read as signed, True is -1 (max is and, min is or).
BOOL_SHORT_CIRCUIT = {"arith.andi": "&&", "arith.minui": "&&", "arith.maxsi": "&&",
                      "arith.ori": "||", "arith.maxui": "||", "arith.minsi": "||"}


class ScalarOps:
    def __init__(self, types: CTypes, signs: Signs, prelude: Prelude, fast_math: bool):
        self.types = types
        self.signs = signs
        self._prelude = prelude
        self._floats = FloatRounding(prelude)
        self._conversions = ConversionContext(types, signs, self._floats)
        self._fast = fast_math
        self._unsigned_forms: dict[CExpr, tuple[CExpr, int]] = {}  # `(int)(U-expr)` -> (U-expr, its bits)

    # -- entry point -----------------------------------------------------------------------
    def translate(self, op: ir.Operation, args: list[CExpr]) -> CExpr:
        """The expression of `op`'s result (per element, for elementwise vector ops)."""
        name = op.name
        result = element_type(op.results[0].type)
        if name in _FLOAT_OPS or name in ("arith.remf", "arith.negf", "arith.maximumf", "arith.minimumf",
                                          "arith.maxnumf", "arith.minnumf"):
            return self.float_binary(name, args, result)
        if name.startswith("math."):
            return self._math(op, args, result)
        if name == "arith.cmpf":
            return self._cmpf(op, args)
        if name == "arith.cmpi":
            return self._cmpi(op, args)
        if name == "arith.select":
            return C.cond(*args)
        if name in CONVERSIONS:
            return CONVERSIONS[name](self._conversions, op, args[0], element_type(op.operands[0].type), result)
        if name.startswith("affine."):
            return self._affine(op, args)
        if name.startswith("arith.") and len(args) == 2:
            try:
                return self.int_binary(name, args, result, list(op.operands))
            except ValueError as exc:
                raise error(op, str(exc)) from None
        raise error(op, f"'{name}' is not supported by the CUDA emitter")

    # -- constants ---------------------------------------------------------------------------
    def constant(self, attr, type_: ir.Type) -> CExpr:
        """A scalar constant from its attribute (or a Python number, an element of a dense constant)."""
        if isinstance(attr, ir.BoolAttr):
            return C.atom("true" if attr.value else "false")
        if isinstance(attr, ir.IntegerAttr):
            if is_bool(type_):
                return C.atom("true" if attr.value else "false")
            return C.int_lit(wrap_int(attr.value, type_, self.types.index_bits))
        if isinstance(attr, ir.FloatAttr):
            return self.float_constant(attr.value, type_)
        if isinstance(attr, float):  # an element of a dense vector constant
            return self.float_constant(attr, type_)
        if isinstance(attr, (bool, int)):
            return C.atom("true" if attr else "false") if is_bool(type_) else C.int_lit(wrap_int(int(attr), type_, self.types.index_bits))
        raise ValueError(f"constant {attr} has no scalar C form")

    def float_constant(self, value: float, type_: ir.Type) -> CExpr:
        kind = float_kind(type_)
        if kind == "f64":
            if math.isnan(value):
                return C.atom("CUDART_NAN")
            if math.isinf(value):
                return C.atom("CUDART_INF") if value > 0 else C.unary("-", C.atom("CUDART_INF"))
            text = _with_point(repr(value))
            return C.CExpr(text, C.UNARY if text.startswith("-") else C.ATOM)
        if math.isnan(value):
            single = C.atom("CUDART_NAN_F")
        elif math.isinf(value):
            single = C.atom("CUDART_INF_F") if value > 0 else C.unary("-", C.atom("CUDART_INF_F"))
        else:
            text = float32_literal(value)
            single = C.CExpr(text, C.UNARY if text.startswith("-") else C.ATOM)
        return self._floats.from_float(single, kind)

    def typed_int(self, e: CExpr, type_: ir.Type) -> CExpr:
        """`e`, with a literal given the exact C type (for overloads and templates)."""
        if e.value is None:
            return e
        ctype = self.types.scalar(type_)
        suffix = {"long long": "LL", "unsigned int": "u", "unsigned long long": "ull"}.get(ctype)
        if suffix:
            return C.CExpr(f"{e.value}{suffix}", C.UNARY if e.value < 0 else C.ATOM)
        return e if ctype == "int" else C.cast(ctype, e)

    # -- floats --------------------------------------------------------------------------------
    def float_binary(self, name: str, args: list[CExpr], type_: ir.Type) -> CExpr:
        kind = float_kind(type_)
        if kind in FP8:
            widened = [self._floats.to_float(a, kind) for a in args]
            return self._floats.from_float(self.float_binary(name, widened, ir.F32Type.get()), kind)
        if name == "arith.negf":
            return C.unary("-", args[0])
        a, b = args
        if name in _FLOAT_OPS:
            if name == "arith.divf" and self._fast and kind == "f32":
                return C.call("__fdividef", a, b)
            return C.binary(_FLOAT_OPS[name], a, b)
        if name in ("arith.maximumf", "arith.minimumf"):
            self._prelude.helper(f"maxmin_{kind}")
            return C.call("tl_maximum" if name == "arith.maximumf" else "tl_minimum", a, b)
        if name in ("arith.maxnumf", "arith.minnumf"):
            fn = {"f32": "fmaxf", "f64": "fmax", "f16": "__hmax", "bf16": "__hmax"}[kind]
            return C.call(fn.replace("max", "min") if name == "arith.minnumf" else fn, a, b)
        # arith.remf
        if kind in ("f16", "bf16"):
            remainder = C.call("fmodf", self._floats.to_float(a, kind), self._floats.to_float(b, kind))
            return self._floats.from_float(remainder, kind)
        return C.call("fmodf" if kind == "f32" else "fmod", a, b)

    def _math(self, op: ir.Operation, args: list[CExpr], type_: ir.Type) -> CExpr:
        fn = op.name.split(".", 1)[1]
        kind = float_kind(type_)
        if fn == "absi":
            return C.call("llabs" if self.types.scalar(type_) == "long long" else "abs", args[0])
        if fn == "ipowi" and int_width(type_) in (8, 16, 32, 64):
            helper = f"ipowi_i{int_width(type_)}"
            self._prelude.helper(helper)
            return C.call(f"tl_{helper}", *args)
        if fn in ("isnan", "isinf", "isfinite"):
            operand_kind = float_kind(element_type(op.operands[0].type))
            return C.call(fn, self._floats.to_float(args[0], operand_kind))
        if kind is None or (fn not in _MATH and fn != "rsqrt"):
            raise error(op, f"'{op.name}' on {type_} is not supported by the CUDA emitter")
        if kind in ("f16", "bf16") and fn in ("absf", "fma"):
            return C.call("__habs" if fn == "absf" else "__hfma", *args)
        if kind not in ("f32", "f64"):
            widened = [self._floats.to_float(a, kind) for a in args]
            return self._floats.from_float(self._math_f32(fn, widened, "f32"), kind)
        return self._math_f32(fn, args, kind)

    def _math_f32(self, fn: str, args: list[CExpr], kind: str) -> CExpr:
        if fn == "rsqrt":
            if self._fast:
                return C.call("rsqrtf" if kind == "f32" else "rsqrt", args[0])
            one = C.atom("1.0f" if kind == "f32" else "1.0")
            return C.binary("/", one, C.call("sqrtf" if kind == "f32" else "sqrt", args[0]))
        single, double, fast = _MATH[fn]
        if kind == "f64":
            return C.call(double, *args)
        return C.call(fast if self._fast else single, *args)

    def _cmpf(self, op: ir.Operation, args: list[CExpr]) -> CExpr:
        predicate = _CMPF[op.attributes["predicate"].value]
        kind = float_kind(element_type(op.operands[0].type))
        a, b = args
        if kind in FP8:
            a, b = self._floats.to_float(a, kind), self._floats.to_float(b, kind)
        if predicate in ("true", "false"):
            return C.atom(predicate)
        if predicate in _ORDERED:
            return C.binary(_ORDERED[predicate], a, b)
        if predicate == "une":
            return C.binary("!=", a, b)
        if predicate in _UNORDERED_NOT:
            return C.unary("!", C.binary(_UNORDERED_NOT[predicate], a, b))
        if predicate in ("one", "ueq"):
            either = C.binary("||", C.binary("<", a, b), C.binary(">", a, b))
            return either if predicate == "one" else C.unary("!", either)
        if predicate == "ord":
            return C.binary("&&", C.binary("==", a, a), C.binary("==", b, b))
        return C.binary("||", C.binary("!=", a, a), C.binary("!=", b, b))  # uno

    # -- integers ------------------------------------------------------------------------------
    def _cmpi(self, op: ir.Operation, args: list[CExpr]) -> CExpr:
        predicate = _CMPI[op.attributes["predicate"].value]
        a, b = args
        type_ = element_type(op.operands[0].type)
        if predicate.startswith("u") and not self.signs.all_nonneg(*op.operands) and not is_bool(type_):
            width = self.types.index_bits if isinstance(type_, ir.IndexType) else int_width(type_)
            a, b = self._as_unsigned(a, width), self._as_unsigned(b, width)
        return C.binary(_ICMP[predicate], a, b)

    def int_binary(self, name: str, args: list[CExpr], type_: ir.Type, operands: list[ir.Value]) -> CExpr:
        a, b = args
        if is_bool(type_):
            return self._bool_binary(name, a, b)
        nonneg = self.signs.all_nonneg(*operands) if operands else False
        result = self._int_binary(name, a, b, type_, nonneg)
        if result.value is not None:
            return C.int_lit(wrap_int(result.value, type_, self.types.index_bits))
        folded = result.op is None or result is a or result is b  # `x * 1`, `x + 0`: nothing to wrap
        if name in _WRAPPING and not folded and self._may_overflow(name, type_):
            return self._wrapping(name, a, b, type_)
        width = self.types.index_bits if isinstance(type_, ir.IndexType) else int_width(type_)
        if width < 32:  # C promotes to int: wrap back to the IR's width
            return C.cast(self.types.scalar(type_), result)
        return result

    def _int_binary(self, name: str, a: CExpr, b: CExpr, type_: ir.Type, nonneg: bool) -> CExpr:
        if name == "arith.addi":
            return C.add(a, b)
        if name == "arith.subi":
            return C.sub(a, b)
        if name == "arith.muli":
            return C.mul(a, b)
        if name in _INT_OPS:
            return C.binary(_INT_OPS[name], self._shift_base(name, a, type_), b)
        if name in ("arith.divsi", "arith.divui", "arith.floordivsi") and nonneg:
            return _div_nonneg(a, b)
        if name in ("arith.remsi", "arith.remui") and nonneg:
            return _rem_nonneg(a, b)
        if name == "arith.divsi":
            return C.div(a, b)
        if name == "arith.remsi":
            return C.rem(a, b)
        if name in ("arith.ceildivsi", "arith.ceildivui") and nonneg:
            return _ceildiv_nonneg(a, b)
        if name in ("arith.minsi", "arith.maxsi", "arith.minui", "arith.maxui"):
            return self._minmax(name, a, b, type_, nonneg)
        unsigned = self.types.unsigned(type_)
        if name in ("arith.divui", "arith.remui", "arith.shrui"):
            op = {"arith.divui": "/", "arith.remui": "%", "arith.shrui": ">>"}[name]
            if name == "arith.shrui" and nonneg:
                return C.binary(">>", a, b)
            width = self.types.index_bits if isinstance(type_, ir.IndexType) else int_width(type_)
            right = b if name == "arith.shrui" else self._as_unsigned(b, width)
            return self._signed(C.binary(op, self._as_unsigned(a, width), right), type_)
        if name in ("arith.floordivsi", "arith.ceildivsi", "arith.ceildivui"):
            self._prelude.helper("division")
            fn = "tl_floordiv" if name == "arith.floordivsi" else "tl_ceildiv"
            if name == "arith.ceildivui":
                return C.cast(self.types.scalar(type_), C.call(fn, C.cast(unsigned, a), C.cast(unsigned, b)))
            return C.call(fn, self.typed_int(a, type_), self.typed_int(b, type_))
        raise ValueError(f"'{name}' is not supported by the CUDA emitter")

    @staticmethod
    def _may_overflow(name: str, type_: ir.Type) -> bool:
        """Whether C's `int` arithmetic on operands of `type_` can overflow where the IR wraps: 32- and
        64-bit integers (narrower ones are promoted to int, where + - * fit), and any left shift (of a
        negative value, or into the sign bit)."""
        return isinstance(type_, ir.IntegerType) and (int_width(type_) >= 32 or name == "arith.shli")

    def _wrapping(self, name: str, a: CExpr, b: CExpr, type_: ir.Type) -> CExpr:
        """`a op b` modulo 2**width, as `(T)((U)a op (U)b)` with U the unsigned type of at least 32 bits."""
        bits = max(int_width(type_), 32)
        left = self._as_unsigned(a, bits)
        right = b if name == "arith.shli" else self._as_unsigned(b, bits)
        return self._signed(C.binary(_WRAPPING[name], left, right), type_)

    def _signed(self, inner: CExpr, type_: ir.Type) -> CExpr:
        """`inner`, computed in the unsigned C type of `type_`'s width (or int, below 32 bits), cast back
        to the signed C type; an operand of a later unsigned computation reuses `inner` itself."""
        result = C.cast(self.types.scalar(type_), inner)
        width = self.types.index_bits if isinstance(type_, ir.IndexType) else int_width(type_)
        if width >= 32:
            self._unsigned_forms[result] = (inner, width)
        return result

    def _as_unsigned(self, e: CExpr, bits: int) -> CExpr:
        """`e` read as the unsigned C type of `bits` bits: a literal's unsigned value (with a `u`/`ull`
        suffix from 32 bits), a result computed unsigned without its cast back to signed, else a cast."""
        if e.value is not None:
            value = e.value % (1 << bits)
            return C.CExpr(f"{value}{ {32: 'u', 64: 'ull'}.get(bits, '')}", C.ATOM)
        inner, inner_bits = self._unsigned_forms.get(e, (None, 0))
        if inner_bits == bits:
            return inner
        return C.cast(self.types.unsigned(ir.IntegerType.get_signless(bits)), e)

    def _shift_base(self, name: str, a: CExpr, type_: ir.Type) -> CExpr:
        return self.typed_int(a, type_) if name == "arith.shli" else a

    def _minmax(self, name: str, a: CExpr, b: CExpr, type_: ir.Type, nonneg: bool) -> CExpr:
        fn = "min" if "min" in name else "max"
        if name.endswith("ui") and not nonneg:
            unsigned = self.types.unsigned(type_)
            return C.cast(self.types.scalar(type_), C.call(fn, C.cast(unsigned, a), C.cast(unsigned, b)))
        return C.call(fn, self.typed_int(a, type_), self.typed_int(b, type_))

    def _bool_binary(self, name: str, a: CExpr, b: CExpr) -> CExpr:
        if name in BOOL_SHORT_CIRCUIT:
            return C.binary(BOOL_SHORT_CIRCUIT[name], a, b)
        if name == "arith.xori":
            if b.text == "true":
                return C.unary("!", a)
            return C.binary("!=", a, b)
        raise ValueError(f"'{name}' on i1 is not supported by the CUDA emitter")

    # -- affine ----------------------------------------------------------------------------------
    def _affine(self, op: ir.Operation, args: list[CExpr]) -> CExpr:
        amap = ir.AffineMapAttr(op.attributes["map"]).value
        operands = [(arg, self.signs.nonneg(v)) for arg, v in zip(args, op.operands)]
        ops = self._affine_ops()
        dims, symbols = operands[: amap.n_dims], operands[amap.n_dims :]
        results = [fold_affine(e, ops, dims, symbols)[0] for e in amap.results]
        if op.name == "affine.apply":
            return results[0]
        fn = "min" if op.name == "affine.min" else "max"
        index = ir.IndexType.get()
        out = self.typed_int(results[0], index)
        for other in results[1:]:
            out = C.call(fn, out, self.typed_int(other, index))
        return out

    def _affine_ops(self) -> AffineOps[_Signed]:
        """Affine nodes on (C expression, known non-negative): C's `/` and `%` where both operands
        are non-negative (there they round as floor does), the prelude's floor helpers elsewhere."""
        return AffineOps(
            constant=lambda value: (C.int_lit(value), value >= 0),
            add=lambda a, b: (C.add(a[0], b[0]), a[1] and b[1]),
            mul=_affine_mul,
            floordiv=self._affine_division("tl_floordiv", _div_nonneg),
            ceildiv=self._affine_division("tl_ceildiv", _ceildiv_nonneg),
            mod=self._affine_division("tl_floormod", _rem_nonneg),
        )

    def _affine_division(self, helper: str, nonneg_form: Callable[[CExpr, CExpr], CExpr]):
        index = ir.IndexType.get()

        def divide(lhs: _Signed, rhs: _Signed) -> _Signed:
            (a, a_pos), (b, b_pos) = lhs, rhs
            if a_pos and b_pos:
                return nonneg_form(a, b), True
            self._prelude.helper("division")
            return C.call(helper, self.typed_int(a, index), self.typed_int(b, index)), helper == "tl_floormod"

        return divide


_Signed = tuple[CExpr, bool]  # a C expression, and whether it is known to be non-negative


def _affine_mul(lhs: _Signed, rhs: _Signed) -> _Signed:
    (a, a_pos), (b, b_pos) = lhs, rhs
    if b.value == -1:
        return C.unary("-", a), False
    return C.mul(a, b), a_pos and b_pos


def _ceildiv_nonneg(a: CExpr, b: CExpr) -> CExpr:
    """ceil(a / b) for a >= 0, b > 0: `(a + b - 1) / b`."""
    if b.value == 1:
        return a
    if a.value is not None and b.value:
        return C.int_lit(-(-a.value // b.value))
    bias = C.int_lit(b.value - 1) if b.value is not None else C.sub(b, C.int_lit(1))
    return _div_nonneg(C.add(a, bias), b)


def _div_nonneg(a: CExpr, b: CExpr) -> CExpr:
    """a / b for a >= 0, b > 0: a shift where b is a power of two (C compilers cannot see a's sign, and
    `/` on a signed int costs them a rounding correction)."""
    power = _power_of_two(b)
    if power is None or a.value is not None:
        return C.div(a, b)
    return C.binary(">>", a, C.int_lit(power))


def _rem_nonneg(a: CExpr, b: CExpr) -> CExpr:
    """a % b for a >= 0, b > 0: a mask where b is a power of two."""
    power = _power_of_two(b)
    if power is None or a.value is not None:
        return C.rem(a, b)
    return C.binary("&", a, C.int_lit(b.value - 1))


def element_type(type_: ir.Type) -> ir.Type:
    return type_.element_type if isinstance(type_, ir.VectorType) else type_


def _power_of_two(divisor: CExpr) -> int | None:
    """log2 of a constant divisor 2, 4, 8, ...; None otherwise."""
    value = divisor.value
    if isinstance(value, int) and value > 1 and value & (value - 1) == 0:
        return value.bit_length() - 1
    return None
