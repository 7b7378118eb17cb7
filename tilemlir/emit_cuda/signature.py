"""The `KernelSignature` of an emitted kernel (see tilemlir/runtime/signature.py for the schema)."""

from __future__ import annotations

import dataclasses
from typing import Collection

from tilemlir.analysis.kernel_abi import kernel_signature, params
from tilemlir.diagnostics.reporting import error
from tilemlir.emit_cuda import irutil
from tilemlir.emit_cuda.ctype import byte_size, vector_alignment
from tilemlir.emit_cuda.kernel import KernelIR
from tilemlir.emit_cuda.pyexpr import GridTranslator
from tilemlir.mlir import ir
from tilemlir.runtime.signature import KernelSignature, SignatureError, TensorMapParam


def build_signature(kernel: KernelIR, name: str, shared_bytes: int, index_bits: int,
                    written: Collection[ir.Value]) -> KernelSignature:
    """The signature of `kernel`, whose CUDA function is called `name`; `written` holds the
    tensor arguments the kernel stores into (the others are `const` parameters)."""
    grid = GridTranslator(kernel, index_bits)
    aligns = _vector_alignments(kernel)
    args = kernel.args
    shapes = {i: dims for i, dims in enumerate(kernel.arg_dims) if dims is not None}
    widest = {i: max(byte_size(args[i].type.element_type), aligns.get(args[i], 0)) for i in shapes}
    try:
        signature = kernel_signature(
            name,
            params(kernel.abi, index_bits, {i for i in shapes if args[i] in written}, shapes, widest),
            kernel.symbols,
            grid=tuple(grid.expr(v) for v in kernel.launch_grid()),
            block=kernel.block,
            shared_bytes=shared_bytes,
            assumes=kernel.assumes,
            out_idx=kernel.out_idx,
            index_bits=index_bits,
        )
        return _with_tensor_maps(signature, kernel) if kernel.tensor_maps else signature
    except SignatureError as exc:
        raise error(kernel.func, f"the kernel signature of {kernel.name} is invalid: {exc}") from None


def _with_tensor_maps(signature: KernelSignature, kernel: KernelIR) -> KernelSignature:
    """`signature` with the kernel's tensor maps, CUDA parameters after its arguments and before its
    symbols (the emitter's header order)."""
    dtypes = {p.name: p.dtype for p in signature.params}
    maps = tuple(TensorMapParam(m.tensor, m.name, dtypes.get(m.tensor, "?"), m.box, m.swizzle,
                                l2_promotion=m.l2_promotion) for m in kernel.tensor_maps)
    arguments = signature.cuda_params[:len(signature.params)]
    return dataclasses.replace(signature, tensor_maps=maps,
                               cuda_params=(*arguments, *(m.name for m in maps), *signature.symbols))


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
