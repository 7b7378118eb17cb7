"""Unique C++ identifiers for a kernel: Python names where known, short readable ones otherwise."""

from __future__ import annotations

import re

_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char16_t char32_t class
compl const constexpr const_cast continue decltype default delete do double dynamic_cast else enum
explicit export extern false float for friend goto if inline int long mutable namespace new noexcept
not not_eq nullptr operator or or_eq private protected public register reinterpret_cast return short
signed sizeof static static_assert static_cast struct switch template this thread_local throw true try
typedef typeid typename union unsigned using virtual void volatile wchar_t while xor xor_eq
""".split())
# CUDA builtins, the header types and functions the emitted code uses, and the emitter's own names.
_CUDA = frozenset("""
threadIdx blockIdx blockDim gridDim warpSize half half2 smem min max abs llabs
__nv_bfloat16 __nv_bfloat162 __half __half2 __nv_fp8_e4m3 __nv_fp8_e5m2 float2 float4 uint2 uint4 int4
atomicAdd printf assert isnan isinf isfinite
""".split())
# The math library's functions (float and double forms): a variable must not hide one the kernel calls.
_MATH = frozenset(f + suffix for f in """
exp exp2 expm1 log log2 log10 log1p sqrt rsqrt cbrt sin cos tan asin acos atan atan2 sinh cosh tanh asinh
acosh atanh erf erfc fabs ceil floor round rint trunc pow copysign fma fmod fmax fmin
""".split() for suffix in ("", "f"))

# Names C++ gives a meaning at namespace scope: a `__global__` function may not take them (`main` is the
# program's entry point; most TileLang examples name their kernel `main`).
_ENTRY_RESERVED = frozenset({"main"})

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def sanitize(name: str) -> str:
    """`name` made into a C identifier (invalid characters become `_`)."""
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", name) or "v"
    if cleaned[0].isdigit():
        cleaned = "v" + cleaned
    if cleaned.startswith("__") or cleaned.startswith("tl_"):
        cleaned = "u" + cleaned  # leading __ is reserved; tl_ is the emitter's helper prefix
    return cleaned


class Identifiers:
    """Hands out identifiers: `fresh("row")` -> row, row1, row2, ... unique among the names in scope.

    Names follow C++ block scopes: `push()` opens one, `pop()` frees the names
    declared in it, so sibling loops can both count with `i`. A name never
    shadows one still in scope."""

    def __init__(self) -> None:
        self._scopes: list[set[str]] = [set(_KEYWORDS) | set(_CUDA) | set(_MATH)]

    def fresh(self, base: str) -> str:
        return self._claim(base, self._scopes[-1])

    def kernel_name(self, name: str) -> str:
        """The `extern "C"` function's name: `name` as a C identifier, or `<name>_kernel` where C++ or CUDA
        takes that name (the runtime looks the function up by the name this returns)."""
        cleaned = sanitize(name)
        taken = self._taken(cleaned) or cleaned in _ENTRY_RESERVED
        return self.fresh_global(f"{cleaned}_kernel" if taken else cleaned)

    def fresh_global(self, base: str) -> str:
        """A name for the function's outermost scope (declared at the top, visible everywhere)."""
        return self._claim(base, self._scopes[0])

    def push(self) -> None:
        self._scopes.append(set())

    def pop(self) -> None:
        self._scopes.pop()

    def _claim(self, base: str, scope: set[str]) -> str:
        base = sanitize(base)
        name, n = base, 0
        stem = base + "_" if base[-1].isdigit() else base
        while self._taken(name) or not _IDENT.match(name):
            n += 1
            name = f"{stem}{n}"
        scope.add(name)
        return name

    def _taken(self, name: str) -> bool:
        return any(name in scope for scope in self._scopes)
