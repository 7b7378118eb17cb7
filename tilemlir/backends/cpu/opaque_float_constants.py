"""`opaque-float-constants`: every float `llvm.mlir.constant` as an integer constant, `freeze`d and
bitcast (CPU backend).

Takes LLVM-dialect IR; gives the same IR with no float constant. The MLIR
bindings carry a newer LLVM than llvmlite: its IR printer writes float
constants in forms the older parser rejects (`f0x33800000`, `+qnan`,
non-exact decimals such as `float 1.000000e-01`). The translator cannot
constant-fold a `freeze`, so the bits reach llvmlite, whose optimizer folds
them back.
"""

from __future__ import annotations

import math
import struct

import ml_dtypes
import numpy as np

from tilemlir.diagnostics import CompileError
from tilemlir.ir_util import ops_named
from tilemlir.mlir import ir, llvm as llvm_dialect
from tilemlir.pass_infra.registry import register_pass


@register_pass("opaque-float-constants", "float llvm.mlir.constant -> freeze(integer bits) + bitcast, which "
                                         "llvmlite's older parser reads (CPU backend)")
def run(module: ir.Operation, options) -> None:
    for op in ops_named(module, "llvm.mlir.constant"):
        if _float_element(op.results[0].type) is not None:
            with op.location, ir.InsertionPoint(op):
                _as_bits(op)


def _as_bits(op: ir.Operation) -> None:
    type_ = op.results[0].type
    element = _float_element(type_)
    int_element = ir.IntegerType.get_signless(element.width)
    attr = op.attributes["value"]
    if isinstance(type_, ir.VectorType):
        int_type = ir.VectorType.get(type_.shape, int_element)
        values = _dense_float_bits(ir.DenseFPElementsAttr(attr), element, type_.shape)
        bits_attr = ir.DenseElementsAttr.get(
            [ir.IntegerAttr.get(int_element, _signed(v, element.width)) for v in values], type=int_type
        )
    else:
        int_type = int_element
        bits_attr = ir.IntegerAttr.get(int_element, _signed(_float_bits(ir.FloatAttr(attr).value, element), element.width))
    bits = llvm_dialect.ConstantOp(int_type, bits_attr).result
    value = llvm_dialect.bitcast(type_, llvm_dialect.freeze(bits))
    op.results[0].replace_all_uses_with(value)
    op.erase()


def _dense_float_bits(attr: ir.DenseFPElementsAttr, element: ir.FloatType, shape: list[int]) -> list[int]:
    """The bits of every element (the bindings cannot iterate f16/bf16 elements: read the text,
    whose decimals round-trip and whose hex forms are the bits)."""
    count = math.prod(shape)
    if attr.is_splat:
        return [_float_bits(ir.FloatAttr(attr.get_splat_value()).value, element)] * count
    text = str(attr)
    body = text[len("dense<"):text.rindex("]>") + 1].replace("[", " ").replace("]", " ")
    tokens = [t.strip() for t in body.split(",")]
    if len(tokens) != count:
        raise CompileError(f"CPU backend: cannot read the float constant {text}")
    return [int(t, 16) if t.startswith("0x") else _float_bits(float(t), element) for t in tokens]


def _float_element(type_: ir.Type) -> ir.FloatType | None:
    element = type_.element_type if isinstance(type_, ir.VectorType) else type_
    return element if isinstance(element, ir.FloatType) else None


def _float_bits(value: float, type_: ir.FloatType) -> int:
    name = str(type_)
    if name == "f64":
        return struct.unpack("<Q", struct.pack("<d", value))[0]
    if name == "f16":
        return struct.unpack("<H", struct.pack("<e", value))[0]
    if name == "bf16":
        return int(np.array(value, np.float64).astype(ml_dtypes.bfloat16).view(np.uint16))
    if name == "f32":
        return struct.unpack("<I", struct.pack("<f", value))[0]
    raise CompileError(f"CPU backend: float constant of type {name} has no LLVM form")


def _signed(bits: int, width: int) -> int:
    return bits - (1 << width) if bits >= 1 << (width - 1) else bits
