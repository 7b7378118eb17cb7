"""MLIR element and vector types -> their CUDA C++ spellings and signature dtype names.

Signless and signed integers map to signed C types (the op, not the type,
says when an integer is read as unsigned); `index` is `int` or `long long`
depending on the kernel's index width. NVRTC ships no <stdint.h>, so the
fixed-width names are spelled with the builtin types.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilemlir.mlir import ir

_FLOATS = {  # (CUDA spelling, bytes); the runtime dtype names are analysis/kernel_abi.py's
    "f16": ("half", 2),
    "bf16": ("__nv_bfloat16", 2),
    "f32": ("float", 4),
    "f64": ("double", 8),
    "f8E4M3FN": ("__nv_fp8_e4m3", 1),
    "f8E5M2": ("__nv_fp8_e5m2", 1),
}
_SIGNED = {1: "bool", 8: "signed char", 16: "short", 32: "int", 64: "long long"}
_UNSIGNED = {1: "bool", 8: "unsigned char", 16: "unsigned short", 32: "unsigned int", 64: "unsigned long long"}
# Short names for the vector structs (`bf16x8`): they must not clash with CUDA's own (half2, float4, ...).
_SHORT = {"f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64", "f8E4M3FN": "e4m3", "f8E5M2": "e5m2"}

FP8 = ("f8E4M3FN", "f8E5M2")


class UnsupportedType(ValueError):
    """A type the CUDA emitter has no spelling for; the caller names the op."""


@dataclass(frozen=True)
class CTypes:
    """Type spelling for one kernel (the index width is a per-kernel choice)."""

    index_bits: int

    @property
    def index(self) -> str:
        return "int" if self.index_bits == 32 else "long long"

    def scalar(self, type_: ir.Type) -> str:
        """The C++ type of a scalar MLIR type."""
        if isinstance(type_, ir.IndexType):
            return self.index
        if isinstance(type_, ir.IntegerType):
            table = _UNSIGNED if type_.is_unsigned else _SIGNED
            if type_.width in table:
                return table[type_.width]
        elif str(type_) in _FLOATS:
            return _FLOATS[str(type_)][0]
        raise UnsupportedType(f"type {type_} has no CUDA spelling")

    def unsigned(self, type_: ir.Type) -> str:
        """The unsigned C++ type of the same width (for ops that read integers as unsigned)."""
        width = self.index_bits if isinstance(type_, ir.IndexType) else int_width(type_)
        return _UNSIGNED[width]

    def vector(self, type_: ir.VectorType) -> str:
        """The name of the aligned struct holding a 1-D vector (`bf16x8`)."""
        element = type_.element_type
        if isinstance(element, ir.IntegerType):
            short = ("u" if element.is_unsigned else "i") + str(element.width)
            if element.width == 1:
                short = "bool"
        elif str(element) in _SHORT:
            short = _SHORT[str(element)]
        else:
            raise UnsupportedType(f"vector element type {element} has no CUDA spelling")
        return f"{short}x{vector_length(type_)}"

    def of(self, type_: ir.Type) -> str:
        return self.vector(type_) if isinstance(type_, ir.VectorType) else self.scalar(type_)


def vector_length(type_: ir.VectorType) -> int:
    if type_.rank != 1 or getattr(type_, "scalable", False):
        raise UnsupportedType(f"only fixed 1-D vectors are supported, got {type_}")
    return type_.shape[0]


def int_width(type_: ir.Type) -> int:
    return type_.width if isinstance(type_, ir.IntegerType) else 0


def byte_size(type_: ir.Type) -> int:
    """Bytes of one element (bool counts as one)."""
    if isinstance(type_, ir.IntegerType):
        return max(1, type_.width // 8)
    if str(type_) in _FLOATS:
        return _FLOATS[str(type_)][1]
    raise UnsupportedType(f"type {type_} has no CUDA spelling")


def vector_alignment(type_: ir.VectorType) -> int:
    """Alignment of a vector struct: the largest power of two dividing its size, at most 16."""
    size = byte_size(type_.element_type) * vector_length(type_)
    align = 1
    while align < 16 and size % (align * 2) == 0:
        align *= 2
    return align


def float_kind(type_: ir.Type) -> str | None:
    """'f16', 'bf16', 'f32', 'f64', 'f8E4M3FN' or 'f8E5M2' for float types, else None."""
    name = str(type_)
    return name if name in _FLOATS else None


def is_unsigned(type_: ir.Type) -> bool:
    return isinstance(type_, ir.IntegerType) and type_.is_unsigned


def is_bool(type_: ir.Type) -> bool:
    return isinstance(type_, ir.IntegerType) and type_.width == 1


def wrap_int(value: int, type_: ir.Type, index_bits: int) -> int:
    """`value` wrapped to the two's-complement range of an integer type (signed unless unsigned)."""
    width = index_bits if isinstance(type_, ir.IndexType) else int_width(type_)
    if width <= 1 or width >= 128:
        return value
    value &= (1 << width) - 1
    if is_unsigned(type_):
        return value
    return value - (1 << width) if value >= 1 << (width - 1) else value
