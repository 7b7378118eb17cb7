"""The `KernelSignature` of an emitted kernel (see tilemlir/runtime/signature.py for the schema)."""

from __future__ import annotations

from typing import Collection

from tilemlir.diagnostics.reporting import error
from tilemlir.emit_cuda import irutil
from tilemlir.emit_cuda.ctype import UnsupportedType, byte_size, dtype_name, vector_alignment
from tilemlir.emit_cuda.kernel import KernelIR
from tilemlir.emit_cuda.pyexpr import GridTranslator
from tilemlir.mlir import ir
from tilemlir.runtime.dtypes import DTYPES
from tilemlir.runtime.signature import (KernelSignature, ScalarParam, SignatureError, TensorParam,
                                        scalar_dtype_message)


def build_signature(kernel: KernelIR, name: str, shared_bytes: int, index_bits: int,
                    written: Collection[ir.Value]) -> KernelSignature:
    """The signature of `kernel`, whose CUDA function is called `name`; `written` holds the
    tensor arguments the kernel stores into (the others are `const` parameters)."""
    grid = GridTranslator(kernel, index_bits)
    aligns = _vector_alignments(kernel)
    params = []
    recorded = kernel.arg_dtypes or (None,) * len(kernel.args)
    for arg, param, dims, declared in zip(kernel.args, kernel.arg_names, kernel.arg_dims, recorded):
        dtype = _dtype(kernel, arg, index_bits, declared)
        if dims is None:
            if DTYPES[dtype].scalar_ctype is None:
                raise error(arg.location, scalar_dtype_message(param, dtype))
            params.append(ScalarParam(param, dtype))
        else:
            itemsize = byte_size(arg.type.element_type)
            params.append(TensorParam(param, dtype, dims, max(itemsize, aligns.get(arg, itemsize)), arg in written))
    try:
        return KernelSignature(
            name=name,
            params=tuple(params),
            symbols=kernel.symbols,
            grid=tuple(grid.expr(v) for v in kernel.launch_grid()),
            block=kernel.block,
            cuda_params=(*kernel.arg_names, *kernel.symbols),
            shared_bytes=shared_bytes,
            assumes=kernel.assumes,
            out_idx=kernel.out_idx,
            index_bits=index_bits,
        )
    except SignatureError as exc:
        raise error(kernel.func, f"the kernel signature of {kernel.name} is invalid: {exc}") from None


def _dtype(kernel: KernelIR, arg: ir.Value, index_bits: int, declared: str | None) -> str:
    """The runtime dtype of an argument: its element type's, or the unsigned one `tile.arg_dtypes` declares."""
    type_ = arg.type.element_type if isinstance(arg.type, ir.MemRefType) else arg.type
    if isinstance(type_, ir.IndexType):
        return f"int{index_bits}"
    try:
        name = dtype_name(type_)
    except UnsupportedType as exc:
        raise error(kernel.func, str(exc)) from None
    if declared is None or declared == name:
        return name
    if declared != "u" + name or not name.startswith("int"):
        raise error(kernel.func, f"'tile.arg_dtypes' declares {declared} for an argument of element type {type_}")
    return declared


def _vector_alignments(kernel: KernelIR) -> dict[ir.Value, int]:
    """Per tensor argument, the alignment its widest vector access needs."""
    aligns: dict[ir.Value, int] = {}
    for op in irutil.walk(kernel.launch):
        if op.name not in ("vector.load", "vector.store"):
            continue
        memref = op.operands[0] if op.name == "vector.load" else op.operands[1]
        vector_type = op.results[0].type if op.name == "vector.load" else op.operands[0].type
        aligns[memref] = max(aligns.get(memref, 1), vector_alignment(vector_type))
    return aligns
