"""Exact references for fused multiply-adds: what one rounding of a * b + c gives.

`correctly_rounded(x, dtype)`: the exact rational `x` rounded to nearest even
in `dtype` (float32, float16, bfloat16, float8_e4m3fn, float8_e5m2), by
integer arithmetic on `Fraction`s: slow, per element, the definition.

`fma_float32(a, b, c)`: numpy float32 arrays, vectorized and exact. a * b
is exact in float64 (48 significant bits); the exact sum a * b + c is its
rounded float64 sum plus the error TwoSum gives exactly, rounded to odd
(the last bit set where the error is not zero), then rounded to float32:
rounding to odd at 53 bits, then to nearest at 24 <= 53 - 2 bits, rounds
once (Boldo and Melquiond). Rounding the float64 sum to float32 directly
would round twice.
"""

from fractions import Fraction

import ml_dtypes
import numpy as np

# dtype: (mantissa bits, exponent bias, largest finite value, overflow gives inf (else NaN))
FORMATS = {
    np.dtype(np.float32): (23, 127, float(np.finfo(np.float32).max), True),
    np.dtype(np.float16): (10, 15, 65504.0, True),
    np.dtype(ml_dtypes.bfloat16): (7, 127, float(ml_dtypes.finfo(ml_dtypes.bfloat16).max), True),
    np.dtype(ml_dtypes.float8_e4m3fn): (3, 7, 448.0, False),
    np.dtype(ml_dtypes.float8_e5m2): (2, 15, 57344.0, True),
}


def correctly_rounded(x: Fraction, dtype) -> float:
    """`x` rounded to nearest, ties to even, in `dtype` (a nonzero x; subnormals and overflow handled)."""
    man_bits, bias, largest, has_inf = FORMATS[np.dtype(dtype)]
    magnitude = abs(x)
    exp = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** exp > magnitude:
        exp -= 1
    ulp = Fraction(2) ** (max(exp, 1 - bias) - man_bits)
    units, rest = divmod(magnitude, ulp)
    if rest > ulp / 2 or (rest == ulp / 2 and units % 2):
        units += 1
    value = units * ulp
    if value > largest:
        return float("inf") * (1 if x > 0 else -1) if has_inf else float("nan")
    return float(value) * (1 if x > 0 else -1)


def fma_exact(a, b, c, dtype) -> np.ndarray:
    """Elementwise a * b + c rounded once to `dtype` (finite operands; an exact zero takes the
    sign IEEE addition gives it)."""
    out = []
    for x, y, z in zip(*(np.asarray(v, dtype).astype(np.float64).ravel() for v in (a, b, c))):
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        out.append(correctly_rounded(exact, dtype) if exact else x * y + z)
    return np.array(out, np.float64).astype(dtype).reshape(np.shape(a))


def fma_float32(a, b, c) -> np.ndarray:
    """Elementwise fmaf(a, b, c) of float32 arrays, exactly (see the module doc)."""
    a, b, c = (np.asarray(v, np.float32).astype(np.float64) for v in (a, b, c))
    product = a * b
    total = product + c
    c_part = total - product
    error = (product - (total - c_part)) + (c - c_part)
    bits = total.view(np.int64)
    outward = (total < 0) != (error > 0)
    neighbour = np.where(outward, bits + 1, bits - 1)
    odd = np.where((error != 0) & np.isfinite(error) & (bits % 2 == 0), neighbour, bits)
    return odd.view(np.float64).astype(np.float32)
