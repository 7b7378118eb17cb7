"""The padding value, in the read element type, that is the identity of a reduction after conversions.

An out-of-range global read is padding (docs/ir.md). Its value is written in
the *read* element type (`tile.pad`), but the reduction it must not change
reads a buffer of another type when the read is converted on the way (an
int8 global copied into a uint8 fragment, a float32 one into an int32
fragment, possibly through several copies). So the padding is chosen from
the reduced buffer's side: the value of the read type whose conversion
along the path is the reduction's identity in the reduced buffer's type
(its dtype and signedness); where no read value converts to it exactly
(-inf into an integer, an int8 into an int16 min), the read value whose
conversion comes closest (the lowest converted value for a max, the
highest for a min) among the read type's extremes, 0, -1 and the points
where an integer conversion on the path wraps.

A conversion is what `signedness.conversion_op` picks between two
(element type, unsigned) steps; it is modelled exactly in Python here:
integers keep their bits (sign- or zero-extended by the source's
signedness), integer <-> float conversions round to nearest / truncate
toward zero, and a conversion out of range (a float beyond the integer
type, a float overflowing a type without infinities) is not a candidate.
"""

from __future__ import annotations

import math

import numpy as np

from tilemlir.analysis.signedness import int_range

Step = tuple[str, bool]  # (element type as MLIR prints it, "i8" / "f32", read as unsigned)

_NUMPY_FLOATS = {"f16": np.float16, "f32": np.float32, "f64": np.float64}
_ML_DTYPES_FLOATS = {"f8E4M3FN": "float8_e4m3fn", "f8E5M2": "float8_e5m2", "f8E4M3FNUZ": "float8_e4m3fnuz",
                     "f8E5M2FNUZ": "float8_e5m2fnuz", "bf16": "bfloat16"}


def _float_dtype(type_name: str):
    """The numpy dtype of an MLIR float type (KeyError for one it does not know)."""
    if type_name in _NUMPY_FLOATS:
        return _NUMPY_FLOATS[type_name]
    name = _ML_DTYPES_FLOATS[type_name]
    import ml_dtypes  # here, not at the top: importing it costs every compile about half a second

    return getattr(ml_dtypes, name)


def _finfo(type_name: str):
    if type_name in _NUMPY_FLOATS:
        return np.finfo(_NUMPY_FLOATS[type_name])
    import ml_dtypes

    return ml_dtypes.finfo(_float_dtype(type_name))


def converted_identity(kind: str, read: Step, path: tuple[Step, ...]) -> int | float:
    """The read-type padding for reduction `kind` ("max" or "min") of a buffer reached from `read` by
    converting through the steps of `path` (the last step is the reduced buffer's)."""
    want = step_identity(kind, path[-1] if path else read)
    candidates = _candidates(read, path, want)
    images = [(value, _forward(value, read, path)) for value in candidates]
    images = [(value, image) for value, image in images if image is not None]
    for value, image in images:
        if image == want:
            return value
    better = min if kind == "max" else max
    return better(images, key=lambda pair: pair[1])[0]


def step_identity(kind: str, step: Step) -> int | float:
    """The identity of "max"/"min" in one step's type: its lowest/highest value (-inf/+inf where the
    type has infinities)."""
    type_name, unsigned = step
    lowest = kind == "max"
    if type_name.startswith("i"):
        low, high = int_range(int(type_name[1:]), unsigned)
        return low if lowest else high
    low, high = _float_range(type_name)
    return low if lowest else high


def _float_range(type_name: str) -> tuple[float, float]:
    if _rounds(math.inf, type_name) == math.inf:
        return -math.inf, math.inf
    info = _finfo(type_name)
    return float(info.min), float(info.max)


def _rounds(value: float, type_name: str) -> float:
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.array(value, np.float64).astype(_float_dtype(type_name)))


def _candidates(read: Step, path: tuple[Step, ...], want: int | float) -> list[int | float]:
    """The exact preimage first (when every step is an integer), then the points where the converted
    value can be extreme."""
    type_name, unsigned = read
    if not type_name.startswith("i"):
        low, high = _float_range(type_name)
        return [v for v in (want, _clamped_float(want, type_name), low, high) if _rounds(v, type_name) == v]
    width = int(type_name[1:])
    low, high = int_range(width, unsigned)
    values = [_integer_preimage(want, read, path)] if all(s[0].startswith("i") for s in path) else []
    if isinstance(want, int) or math.isfinite(want):
        values.append(min(max(int(want), low), high))
    values += [low, high, 0, -1]
    for step_type, _ in path:
        if step_type.startswith("i"):
            k = int(step_type[1:])
            values += [(1 << (k - 1)) - 1, 1 << (k - 1), (1 << k) - 1]
    return [_as_int(v, width, unsigned) for v in values]


def _clamped_float(want: int | float, type_name: str) -> float:
    """`want` within the finite range of `type_name`, rounded toward zero to one of its values."""
    info = _finfo(type_name)
    value = min(max(float(want), float(info.min)), float(info.max))
    rounded = _rounds(value, type_name)
    if abs(rounded) <= abs(value):
        return rounded
    dtype = _float_dtype(type_name)
    bits = np.array(rounded, dtype).view(f"u{np.dtype(dtype).itemsize}")
    return float((bits - 1).view(dtype))  # one step toward zero: floats are sign-magnitude


def _integer_preimage(want: int, read: Step, path: tuple[Step, ...]) -> int:
    """The read value whose bits, carried backwards through the integer steps, are `want`'s."""
    value = want
    for source_type, source_unsigned in reversed((read,) + path[:-1]):
        value = _as_int(value, int(source_type[1:]), source_unsigned)
    return value


def _as_int(value: int, width: int, unsigned: bool) -> int:
    """`value`'s low `width` bits, read as unsigned or signed (i1: 0 or 1)."""
    bits = value & ((1 << width) - 1)
    if not unsigned and width > 1 and bits >> (width - 1):
        return bits - (1 << width)
    return bits


def _forward(value: int | float, read: Step, path: tuple[Step, ...]) -> int | float | None:
    """`value` converted along `path`, or None where a conversion is out of range."""
    source = read
    for step in path:
        value = _convert(value, source, step)
        if value is None:
            return None
        source = step
    return value


def _convert(value: int | float, source: Step, dest: Step) -> int | float | None:
    dest_type, dest_unsigned = dest
    if source[0].startswith("i"):
        if dest_type.startswith("i"):
            return _as_int(value, int(dest_type[1:]), dest_unsigned)
        return _finite_or_inf(_rounds(float(value), dest_type))
    if dest_type.startswith("i"):
        if not math.isfinite(value):
            return None
        low, high = int_range(int(dest_type[1:]), dest_unsigned)
        truncated = math.trunc(value)
        return truncated if low <= truncated <= high else None
    return _finite_or_inf(_rounds(value, dest_type)) if dest_type != source[0] else value


def _finite_or_inf(value: float) -> float | None:
    return None if math.isnan(value) else value
