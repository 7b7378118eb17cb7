"""The top of the translation unit: includes, the vector structs and the `tl_` helpers a kernel uses.

Each helper is emitted only when the kernel calls it. The helpers give
exact IR semantics where CUDA's own functions differ:

- `tl_maximum` / `tl_minimum`: `arith.maximumf` / `minimumf` propagate NaN
  and order -0 below +0 (`fmaxf` returns the non-NaN operand instead);
  PTX `max.NaN` / `min.NaN` do exactly this in one instruction.
- `tl_to_e4m3` / `tl_to_e5m2`: `arith.truncf` to fp8 rounds to nearest
  even and does not saturate: e4m3 has no infinity, so magnitudes that
  round above 448 (and inf, NaN) become NaN; e5m2 overflows to inf. This
  is also what `torch.Tensor.to(torch.float8_e4m3fn / float8_e5m2)` does,
  bit for bit (NaN keeps the input's sign). The hardware conversion
  (`cvt.rn.satfinite`) is exact below the overflow threshold, so the helper
  costs one compare and select more than a saturating cast.
- `tl_floordiv` / `tl_ceildiv` / `tl_floormod`: floor/ceil rounding for
  operands whose sign is unknown (C `/` and `%` truncate).
- `tl_ipowi_i8` ... `tl_ipowi_i64`: `math.ipowi`, base ** exponent modulo
  2**bits by square-and-multiply in unsigned C arithmetic (signed C products
  would overflow). A negative exponent gives what MLIR's expansion
  (convert-math-to-funcs) gives: 1 ** k is 1, (-1) ** k is -1 for odd k and
  1 for even, every other base 0. For base 0 MLIR divides 1 by 0 (undefined
  behaviour); the CPU backend's LLVM merges that case with base 1, so the
  helper returns 1 as well.
- `tl_cp_async_cg16` / `_ca8` / `_ca4`, `tl_cp_async_commit`, `tl_cp_async_wait<N>`: cp.async and its
  groups (`emit_cuda/async_copy.py`).
"""

from __future__ import annotations

import re

# Each header is included when the code uses what it declares (NVRTC parses every header it is
# given, about 30 ms each; the fp8 header pulls in the other two).
INCLUDES = (
    ("#include <cuda_fp16.h>", re.compile(r"\bhalf\b|__half|half_rn|2half|__h[a-z]+\(")),
    ("#include <cuda_bf16.h>", re.compile(r"bfloat16")),
    ("#include <cuda_fp8.h>", re.compile(r"__nv_fp8|tl_to_e[45]m2?")),
    ("#include <math_constants.h>", re.compile(r"\bCUDART_")),
)

_MAXMIN_F32 = """\
__device__ __forceinline__ float tl_maximum(float a, float b) {
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}
__device__ __forceinline__ float tl_minimum(float a, float b) {
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}"""

_MAXMIN_F64 = """\
__device__ __forceinline__ double tl_maximum(double a, double b) {
  if (a != a || b != b) return a + b;
  if (a == b) return __longlong_as_double(__double_as_longlong(a) & __double_as_longlong(b));
  return a > b ? a : b;
}
__device__ __forceinline__ double tl_minimum(double a, double b) {
  if (a != a || b != b) return a + b;
  if (a == b) return __longlong_as_double(__double_as_longlong(a) | __double_as_longlong(b));
  return a < b ? a : b;
}"""

_MAXMIN_16 = """\
__device__ __forceinline__ {t} tl_maximum({t} a, {t} b) {{ return __hmax_nan(a, b); }}
__device__ __forceinline__ {t} tl_minimum({t} a, {t} b) {{ return __hmin_nan(a, b); }}"""

_E4M3 = """\
__device__ __forceinline__ __nv_fp8_e4m3 tl_to_e4m3(float x) {
  __nv_fp8_e4m3 r;
  r.__x = fabsf(x) <= 464.0f ? __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)
                             : (__nv_fp8_storage_t)(((__float_as_uint(x) >> 24) & 0x80u) | 0x7Fu);
  return r;
}"""

_E5M2 = """\
__device__ __forceinline__ __nv_fp8_e5m2 tl_to_e5m2(float x) {
  const float a = fabsf(x);
  __nv_fp8_e5m2 r;
  r.__x = a < 61440.0f ? __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2)
                       : (__nv_fp8_storage_t)(((__float_as_uint(x) >> 24) & 0x80u) | (a != a ? 0x7Fu : 0x7Cu));
  return r;
}"""

_FP8_FROM_F64 = """\
__device__ __forceinline__ __nv_fp8_{fmt} tl_to_{fmt}(double x) {{
  __nv_fp8_{fmt} r;
  r.__x = __nv_cvt_double_to_fp8(x, __NV_NOSAT, __NV_{FMT});
  return r;
}}"""

_DIVISION = """\
template <typename T> __device__ __forceinline__ T tl_floordiv(T a, T b) {
  const T q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename T> __device__ __forceinline__ T tl_ceildiv(T a, T b) {
  const T q = a / b;
  return (a % b != 0 && ((a < 0) == (b < 0))) ? q + 1 : q;
}
template <typename T> __device__ __forceinline__ T tl_floormod(T a, T b) {
  const T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}"""

_IPOWI = """\
__device__ __forceinline__ {t} tl_ipowi_i{bits}({t} base, {t} exponent) {{
  if (exponent < 0) {{
    if (base == -1) return (exponent & 1) ? -1 : 1;
    return base == 0 || base == 1 ? 1 : 0;
  }}
  {u} power = 1, square = ({u})base;
  for ({t} k = exponent; k != 0; k >>= 1) {{
    if (k & 1) power *= square;
    square *= square;
  }}
  return ({t})power;
}}"""
# (C type, the unsigned type its powers are computed in: narrower ones would be promoted to int)
_IPOWI_TYPES = {8: ("signed char", "unsigned int"), 16: ("short", "unsigned int"), 32: ("int", "unsigned int"),
                64: ("long long", "unsigned long long")}

# cp.async (PTX ISA 9.7.9.25.3): the shared address as a 32-bit state-space address; `src_bytes`
# below the copy size reads that many and zero-fills the rest (cp-size, src-size).
_CP_ASYNC = """\
__device__ __forceinline__ void tl_cp_async_{kind}{size}(void* dst, const void* src) {{
  asm volatile("cp.async.{kind}.shared.global [%0], [%1], {size};" :: "r"((unsigned)__cvta_generic_to_shared(dst)),
               "l"(src) : "memory");
}}
__device__ __forceinline__ void tl_cp_async_{kind}{size}(void* dst, const void* src, unsigned src_bytes) {{
  asm volatile("cp.async.{kind}.shared.global [%0], [%1], {size}, %2;"
               :: "r"((unsigned)__cvta_generic_to_shared(dst)), "l"(src), "r"(src_bytes) : "memory");
}}"""

_CP_ASYNC_COMMIT = """\
__device__ __forceinline__ void tl_cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }"""

_CP_ASYNC_WAIT = """\
template <int N> __device__ __forceinline__ void tl_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
}"""

HELPERS = {
    "maxmin_f32": _MAXMIN_F32, "maxmin_f64": _MAXMIN_F64, "maxmin_f16": _MAXMIN_16.format(t="half"),
    "maxmin_bf16": _MAXMIN_16.format(t="__nv_bfloat16"),
    "e4m3": _E4M3, "e4m3_f64": _FP8_FROM_F64.format(fmt="e4m3", FMT="E4M3"),
    "e5m2": _E5M2, "e5m2_f64": _FP8_FROM_F64.format(fmt="e5m2", FMT="E5M2"),
    "division": _DIVISION,
    **{f"ipowi_i{bits}": _IPOWI.format(t=t, u=u, bits=bits) for bits, (t, u) in _IPOWI_TYPES.items()},
    **{f"cp_async_{kind}{size}": _CP_ASYNC.format(kind=kind, size=size)
       for kind, size in (("cg", 16), ("ca", 8), ("ca", 4))},
    "cp_async_commit": _CP_ASYNC_COMMIT, "cp_async_wait": _CP_ASYNC_WAIT,
}


class Prelude:
    """Collects the vector structs and helpers a kernel uses, in first-use order."""

    def __init__(self) -> None:
        self._structs: dict[str, str] = {}
        self._helpers: list[str] = []
        self._generated: dict[str, str] = {}  # helpers made for the kernel (tensor-core instructions), by name

    def vector_struct(self, name: str, element: str, length: int, align: int) -> str:
        if name not in self._structs:
            self._structs[name] = f"struct __align__({align}) {name} {{ {element} v[{length}]; }};"
        return name

    def helper(self, key: str) -> None:
        if key not in self._helpers:
            self._helpers.append(key)

    def helper_text(self, name: str, text: str) -> None:
        """A helper generated for this kernel (one per instruction kind), emitted after the fixed ones in
        first-use order."""
        self._generated.setdefault(name, text)

    def text(self, body: str) -> str:
        """The prelude of a translation unit whose kernel function is `body`."""
        parts = []
        if self._structs:
            parts.append("\n".join(self._structs.values()))
        parts += [HELPERS[key] for key in sorted(self._helpers, key=list(HELPERS).index)]
        parts += list(self._generated.values())
        code = "\n".join(parts) + body
        includes = [line for line, used in INCLUDES if used.search(code)]
        return "\n\n".join(["\n".join(includes), *parts] if includes else parts) + "\n"
