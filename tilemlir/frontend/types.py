"""Element types on the MLIR side, and the numeric promotion rules of docs/language.md.

`INDEX` is the frontend's own dtype for loop indices, block indices and
symbolic dims (MLIR `index`); users never name it.
"""

from __future__ import annotations

import math

from tilemlir import language as T
from tilemlir.frontend.source import KernelError
from tilemlir.language import DType
from tilemlir.mlir import ir

INDEX = DType("index", "index", 64, "index")

_MLIR_TYPES = {
    "f16": ir.F16Type.get,
    "bf16": ir.BF16Type.get,
    "f32": ir.F32Type.get,
    "f64": ir.F64Type.get,
    "f8E4M3FN": ir.Float8E4M3FNType.get,
    "f8E5M2": ir.Float8E5M2Type.get,
    "index": ir.IndexType.get,
}

# Largest finite value of each float type: a Python literal beyond it would become inf (or NaN).
FLOAT_MAX = {
    "float16": 65504.0,
    "bfloat16": 3.3895313892515355e38,
    "float32": 3.4028234663852886e38,
    "float64": math.inf,
    "float8_e4m3": 448.0,
    "float8_e5m2": 57344.0,
}


def mlir_type(dtype: DType) -> ir.Type:
    if dtype.mlir in _MLIR_TYPES:
        return _MLIR_TYPES[dtype.mlir]()
    return ir.IntegerType.get_signless(dtype.bits)


def is_integer(dtype: DType) -> bool:
    return dtype.kind in ("int", "uint", "index")


def is_signed(dtype: DType) -> bool:
    return dtype.kind in ("int", "index")


def compute_dtype(dtype: DType) -> DType:
    """The type arithmetic on `dtype` values happens in: fp8 is widened to float32."""
    if dtype.is_float and dtype.bits == 8:
        return T.float32
    return dtype


def promote(a: DType, b: DType) -> DType:
    """The common type of two run-time operands (docs/language.md, "Promotion")."""
    a, b = compute_dtype(a), compute_dtype(b)
    if a == b:
        return a
    if a.is_float and b.is_float:
        if a.bits == b.bits:  # float16 with bfloat16
            return T.float32
        return a if a.bits > b.bits else b
    if a.is_float or b.is_float:
        return a if a.is_float else b
    if a.kind == "bool" or b.kind == "bool":
        return b if a.kind == "bool" else a
    if INDEX in (a, b):
        return INDEX
    if a.kind == b.kind:
        return a if a.bits > b.bits else b
    return _mixed_signedness(a, b)


def _mixed_signedness(a: DType, b: DType) -> DType:
    """A signed and an unsigned integer: the narrowest signed type holding both (as numpy does)."""
    signed, unsigned = (a, b) if a.kind == "int" else (b, a)
    if signed.bits > unsigned.bits:
        return signed
    if unsigned.bits == 64:
        raise KernelError(
            f"no integer type holds every {signed} and {unsigned} value: convert one side first, "
            f"e.g. T.cast(x, T.int64) or T.cast(x, T.uint64)"
        )
    return T.DTYPES[f"int{unsigned.bits * 2}"]


def default_dtype(value) -> DType:
    """The dtype a Python number gets when nothing else decides: bool, int32 or float32."""
    if isinstance(value, bool):
        return T.bool
    if isinstance(value, int):
        return T.int32
    return T.float32


def number_dtype(a, b) -> DType:
    """The run-time type two Python numbers share when they must become one value (float32, int32 or bool)."""
    if isinstance(a, float) or isinstance(b, float):
        return T.float32
    if isinstance(a, bool) and isinstance(b, bool):
        return T.bool
    return T.int32


def literal_dtype(value, other: DType) -> DType:
    """The dtype of a Python number combined with a run-time value of dtype `other`."""
    other = compute_dtype(other)
    if isinstance(value, float):
        return other if other.is_float else T.float32
    if isinstance(value, bool):
        return other
    if other.kind == "bool":
        return T.int32
    return other


def int_range(dtype: DType) -> tuple[int, int]:
    if dtype.kind == "bool":
        return 0, 1
    if dtype.kind == "uint":
        return 0, (1 << dtype.bits) - 1
    return -(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1
