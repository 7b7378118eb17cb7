"""Element types the runtime knows, by their canonical signature names.

A signature names dtypes as ``bool``, ``int8`` .. ``int64``, ``uint8`` ..
``uint64``, ``float16``, ``bfloat16``, ``float32``, ``float64``,
``float8_e4m3`` (CUDA's ``__nv_fp8_e4m3``, torch's ``float8_e4m3fn``) and
``float8_e5m2``. This module maps them to and from the names other
libraries use (array-interface typestrs, DLPack codes, torch/numpy dtype
names) and to their C++ and ctypes spellings.
"""

from __future__ import annotations

import ctypes
import math
import operator
import struct
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class DType:
    name: str
    itemsize: int
    cxx: str  # C++ spelling in CUDA source (needs cuda_fp16/bf16/fp8 headers for the narrow floats)
    kind: str  # "bool", "int", "uint" or "float"
    typestr: str | None  # __cuda_array_interface__ typestr without byte order, e.g. "f4"
    dlpack: tuple[int, int]  # (type code, bits)
    torch_name: str  # attribute of the torch module
    scalar_ctype: Any | None  # ctypes type a scalar kernel parameter is passed as; None: not a scalar type


_DTYPES = (
    DType("bool", 1, "bool", "bool", "b1", (6, 8), "bool", ctypes.c_bool),
    DType("int8", 1, "signed char", "int", "i1", (0, 8), "int8", ctypes.c_int8),
    DType("int16", 2, "short", "int", "i2", (0, 16), "int16", ctypes.c_int16),
    DType("int32", 4, "int", "int", "i4", (0, 32), "int32", ctypes.c_int32),
    DType("int64", 8, "long long", "int", "i8", (0, 64), "int64", ctypes.c_int64),
    DType("uint8", 1, "unsigned char", "uint", "u1", (1, 8), "uint8", ctypes.c_uint8),
    DType("uint16", 2, "unsigned short", "uint", "u2", (1, 16), "uint16", ctypes.c_uint16),
    DType("uint32", 4, "unsigned int", "uint", "u4", (1, 32), "uint32", ctypes.c_uint32),
    DType("uint64", 8, "unsigned long long", "uint", "u8", (1, 64), "uint64", ctypes.c_uint64),
    DType("float16", 2, "half", "float", "f2", (2, 16), "float16", ctypes.c_uint16),
    DType("bfloat16", 2, "__nv_bfloat16", "float", None, (4, 16), "bfloat16", ctypes.c_uint16),
    DType("float32", 4, "float", "float", "f4", (2, 32), "float32", ctypes.c_float),
    DType("float64", 8, "double", "float", "f8", (2, 64), "float64", ctypes.c_double),
    DType("float8_e4m3", 1, "__nv_fp8_e4m3", "float", None, (10, 8), "float8_e4m3fn", None),
    DType("float8_e5m2", 1, "__nv_fp8_e5m2", "float", None, (12, 8), "float8_e5m2", None),
)

DTYPES: dict[str, DType] = {d.name: d for d in _DTYPES}
BY_TYPESTR: dict[str, str] = {d.typestr: d.name for d in _DTYPES if d.typestr}
BY_DLPACK: dict[tuple[int, int], str] = {d.dlpack: d.name for d in _DTYPES}
# numpy dtype names (ml_dtypes adds the narrow floats to numpy) that differ from ours
NUMPY_ALIASES = {"float8_e4m3fn": "float8_e4m3"}


def dtype(name: str) -> DType:
    """The dtype called `name`; ValueError naming the known ones otherwise."""
    found = DTYPES.get(name)
    if found is None:
        raise ValueError(f"unknown dtype {name!r} (known: {', '.join(DTYPES)})")
    return found


def name_from_typestr(typestr: str) -> str:
    """Our name for an array-interface typestr ("<f4" -> "float32"); for an
    unknown or big-endian typestr, a description that matches no dtype."""
    order, code = typestr[:1], typestr[1:]
    name = BY_TYPESTR.get(code)
    if name is None or (order == ">" and DTYPES[name].itemsize > 1):
        return f"typestr {typestr!r}"
    return name


def scalar_converter(d: DType) -> Callable[[Any], Any]:
    """value -> the Python value stored in the kernel parameter's ctypes slot
    (the bit pattern for 16-bit floats).

    Raises TypeError or OverflowError, with a message, for values the dtype cannot hold."""
    if d.kind == "float":
        return {"float16": _float16_bits, "bfloat16": _bfloat16_bits, "float32": _float32}.get(d.name, _as_float)
    if d.kind == "bool":
        return _as_bool
    bits = 8 * d.itemsize
    low, high = (0, 2**bits - 1) if d.kind == "uint" else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)

    def convert(value: Any) -> int:
        number = _as_int(value)
        if not low <= number <= high:
            raise OverflowError(f"{number} is out of range for {d.name} [{low}, {high}]")
        return number

    return convert


def _as_float(value: Any) -> float:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__float__"):
        raise TypeError(f"expected a number, got {type(value).__name__}")
    if getattr(value, "shape", ()) != ():
        raise TypeError(f"expected a number, got a {type(value).__name__} of shape {tuple(value.shape)}")
    return float(value)


def _as_int(value: Any) -> int:
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"expected an integer, got {type(value).__name__}") from None


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    raise TypeError(f"expected a bool, got {type(value).__name__}")


def _narrowed(value: float, narrowed: float, name: str) -> None:
    if math.isinf(narrowed) and math.isfinite(value):
        raise OverflowError(f"{value!r} overflows {name}")


_FLT_MAX = 3.4028234663852886e38


def _float32(value: Any) -> float:
    number = value if type(value) is float else _as_float(value)
    if -_FLT_MAX <= number <= _FLT_MAX:
        return number
    narrowed = ctypes.c_float(number).value
    _narrowed(number, narrowed, "float32")
    return number


def _float16_bits(value: Any) -> int:
    number = _as_float(value)
    try:
        return struct.unpack("<H", struct.pack("<e", number))[0]
    except OverflowError:
        raise OverflowError(f"{number!r} overflows float16") from None


def _bfloat16_bits(value: Any) -> int:
    """Round to bfloat16 (nearest even) and return the 16 bits."""
    number = _as_float(value)
    bits = struct.unpack("<I", struct.pack("<f", ctypes.c_float(number).value))[0]
    if (bits & 0x7F800000) == 0x7F800000 and bits & 0x007FFFFF:
        return (bits >> 16) | 0x40  # NaN stays a quiet NaN
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF
    _narrowed(number, float("inf") if (rounded & 0x7FFF) == 0x7F80 else 0.0, "bfloat16")
    return rounded
