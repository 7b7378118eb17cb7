"""The runtime `KernelSignature` of a kernel, for CPU runs that have none from the CUDA emitter.

`signature_from_info` converts the frontend's `KernelInfo`;
`signature_from_ir` reads a kernel function's ABI the way the CUDA emitter
does (`tilemlir.analysis.kernel_abi`: parameters, dtypes, symbols,
assumptions), `written` from how the function uses each tensor argument
(`written_params`). Both build it with `kernel_abi.kernel_signature`. The
GPU-only fields get neutral values (grid 1x1x1, block from `threads`): the
CPU backend uses the signature for its argument checks and outputs only.
"""

from __future__ import annotations

from typing import Collection, Sequence

from tilemlir import ir_util
from tilemlir.analysis.kernel_abi import kernel_signature, param_dtype, params, read_kernel_abi, tensor_shape
from tilemlir.diagnostics import CompileError
from tilemlir.diagnostics.reporting import error
from tilemlir.dialects.bulk_copy import stored_tensors
from tilemlir.frontend.info import KernelInfo
from tilemlir.ir_util import ops_named
from tilemlir.mlir import func, ir
from tilemlir.runtime.dtypes import DTYPES
from tilemlir.runtime.signature import (KernelSignature, ScalarParam, SignatureError, TensorParam,
                                        scalar_dtype_message)

PREFIX = "CPU backend: "
INDEX_BITS = 64  # the CPU backend computes index math in 64 bits


def entry_function(module: ir.Module) -> func.FuncOp:
    """The kernel function (see `tilemlir.ir_util.entry_function`), as a func.FuncOp view."""
    return ir_util.entry_function(module, "the CPU backend").opview


# (op, operand number) of the uses that only read a tensor argument; any other use may write it
_READS = frozenset({("memref.load", 0), ("vector.load", 0), ("vector.transfer_read", 0), ("memref.dim", 0),
                    ("tile.copy", 0), ("tile.gemm", 0), ("tile.gemm", 1), ("tile.reduce", 0)})


def written_params(module: ir.Module) -> frozenset[str]:
    """Names of the tensor arguments the kernel may store into: every use but a known read
    counts as a store, so a view or an unknown op errs on the side of `written`."""
    function = entry_function(module)
    names = read_kernel_abi(function, PREFIX).arg_names
    stored = stored_tensors(function.operation)
    return frozenset(name for i, (name, arg) in enumerate(zip(names, function.arguments))
                     if isinstance(arg.type, ir.MemRefType)
                     and (i in stored or any((use.owner.name, use.operand_number) not in _READS for use in arg.uses)))


def signature_from_ir(module: ir.Module, out_idx: Sequence[int] = ()) -> KernelSignature:
    function = entry_function(module)
    abi = read_kernel_abi(function, PREFIX)
    written_names = written_params(module)
    tensors = [i for i, arg in enumerate(abi.args) if isinstance(arg.type, ir.MemRefType)]
    shapes = {i: tensor_shape(abi, i, PREFIX) for i in tensors}
    written = {i for i in tensors if abi.arg_names[i] in written_names}
    return kernel_signature(abi.name, params(abi, INDEX_BITS, written, shapes, prefix=PREFIX), abi.symbols,
                            block=(_threads(function), 1, 1), assumes=abi.assumes, out_idx=tuple(out_idx))


def signature_from_info(info: KernelInfo, written: Collection[str] | None = None) -> KernelSignature:
    """`written`: names of the tensors the kernel stores into (`written_params`); None: all of them."""
    params_ = tuple(TensorParam(p.name, p.dtype, tuple(p.shape), written=written is None or p.name in written)
                    if p.is_tensor else ScalarParam(p.name, p.dtype) for p in info.params)
    return kernel_signature(info.name, params_, tuple(s.name for s in info.symbols), block=(info.threads, 1, 1),
                            assumes=tuple(info.assumes), out_idx=tuple(info.out_idx))


def located_signature_error(module: ir.Module, exc: SignatureError) -> CompileError:
    """`exc` as an error at the kernel's source: at the scalar parameter whose dtype no kernel argument can
    have, else at the function."""
    function = entry_function(module)
    abi = read_kernel_abi(function, PREFIX)
    for index, (arg, name) in enumerate(zip(abi.args, abi.arg_names)):
        if isinstance(arg.type, ir.MemRefType):
            continue
        dtype = param_dtype(abi, index, INDEX_BITS, PREFIX)
        if DTYPES[dtype].scalar_ctype is None:
            return error(arg.location, scalar_dtype_message(name, dtype))
    return error(function, f"the kernel signature of {function.sym_name.value} is invalid: {exc}")


def _threads(function: func.FuncOp) -> int:
    kernels = ops_named(function.operation, "tile.kernel")
    if kernels:
        return ir.IntegerAttr(kernels[0].attributes["threads"]).value
    return 1
