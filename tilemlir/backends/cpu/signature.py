"""The runtime `KernelSignature` of a kernel, for CPU runs that have none from the CUDA emitter.

`signature_from_info` converts the frontend's `KernelInfo`;
`signature_from_ir` reads a kernel function's tile-level attributes
(parameters from `tile.arg_names` / `tile.arg_dims` / `tile.arg_dtypes`
(which tells uint8 from int8) or else the argument types,
symbols from `tile.symbols`, assumptions from the `tile.assume` ops,
`written` from how the function uses each tensor argument: see
`written_params`). The
GPU-only fields get neutral values (grid 1x1x1, block from `threads`): the
CPU backend uses the signature for its argument checks and outputs only.
"""

from __future__ import annotations

from typing import Collection, Sequence

from tilemlir import ir_util
from tilemlir.diagnostics import CompileError
from tilemlir.diagnostics.reporting import error
from tilemlir.dialects.tile import entry_attributes_problem
from tilemlir.frontend.info import KernelInfo
from tilemlir.mlir import func, ir
from tilemlir.runtime.dtypes import DTYPES
from tilemlir.runtime.signature import KernelSignature, ScalarParam, SignatureError, TensorParam, scalar_dtype_message

DTYPE_NAMES = {
    "i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "index": "int64",
    "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
    "f8E4M3FN": "float8_e4m3", "f8E5M2": "float8_e5m2",
}


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
    names = _arg_names(function)
    return frozenset(name for name, arg in zip(names, function.arguments)
                     if isinstance(arg.type, ir.MemRefType)
                     and any((use.owner.name, use.operand_number) not in _READS for use in arg.uses))


def dtype_name(type_: ir.Type) -> str:
    name = DTYPE_NAMES.get(str(type_))
    if name is None:
        raise CompileError(f"CPU backend: element type {type_} has no runtime dtype")
    return name


def signature_from_ir(module: ir.Module, out_idx: Sequence[int] = ()) -> KernelSignature:
    function = entry_function(module)
    problem = entry_attributes_problem(function.operation)
    if problem is not None:
        raise error(function, f"CPU backend: {problem}")
    attrs = function.attributes
    types = list(function.type.inputs)
    names = _arg_names(function)
    written = written_params(module)
    dims = [_dims(d) for d in attrs["tile.arg_dims"]] if "tile.arg_dims" in attrs else [None] * len(types)
    dtypes = _strings(attrs["tile.arg_dtypes"]) if "tile.arg_dtypes" in attrs else [None] * len(types)
    params = []
    for name, type_, shape, dtype in zip(names, types, dims, dtypes):
        if isinstance(type_, ir.MemRefType):
            shape = shape if shape is not None else _static_shape(name, type_)
            params.append(TensorParam(name, dtype or dtype_name(type_.element_type), tuple(shape),
                                      written=name in written))
        else:
            params.append(ScalarParam(name, dtype or dtype_name(type_)))
    symbols = _strings(attrs["tile.symbols"]) if "tile.symbols" in attrs else []
    return KernelSignature(
        name=function.sym_name.value,
        params=tuple(params),
        symbols=tuple(symbols),
        grid=("1", "1", "1"),
        block=(_threads(function), 1, 1),
        cuda_params=tuple(names) + tuple(symbols),
        assumes=tuple(_assumes(function)),
        out_idx=tuple(out_idx),
    )


def signature_from_info(info: KernelInfo, written: Collection[str] | None = None) -> KernelSignature:
    """`written`: names of the tensors the kernel stores into (`written_params`); None: all of them."""
    params = tuple(TensorParam(p.name, p.dtype, tuple(p.shape), written=written is None or p.name in written)
                   if p.is_tensor else ScalarParam(p.name, p.dtype) for p in info.params)
    symbols = tuple(s.name for s in info.symbols)
    return KernelSignature(
        name=info.name,
        params=params,
        symbols=symbols,
        grid=("1", "1", "1"),
        block=(info.threads, 1, 1),
        cuda_params=tuple(p.name for p in info.params) + symbols,
        assumes=tuple(info.assumes),
        out_idx=tuple(info.out_idx),
    )


def located_signature_error(module: ir.Module, exc: SignatureError) -> CompileError:
    """`exc` as an error at the kernel's source: at the scalar parameter whose dtype no kernel argument can
    have, else at the function."""
    function = entry_function(module)
    for arg, name in zip(function.regions[0].blocks[0].arguments, _arg_names(function)):
        dtype = DTYPE_NAMES.get(str(arg.type))
        if dtype is not None and DTYPES[dtype].scalar_ctype is None:
            return error(arg.location, scalar_dtype_message(name, dtype))
    return error(function, f"the kernel signature of {function.sym_name.value} is invalid: {exc}")


def _arg_names(function: func.FuncOp) -> list[str]:
    attrs = function.attributes
    if "tile.arg_names" in attrs:
        return _strings(attrs["tile.arg_names"])
    return [f"arg{i}" for i in range(len(function.type.inputs))]


def _strings(attr: ir.Attribute) -> list[str]:
    return [ir.StringAttr(a).value for a in ir.ArrayAttr(attr)]


def _dims(attr: ir.Attribute) -> list[int | str]:
    return [ir.StringAttr(d).value if isinstance(d, ir.StringAttr) else ir.IntegerAttr(d).value
            for d in ir.ArrayAttr(attr)]


def _static_shape(name: str, type_: ir.MemRefType) -> list[int]:
    if any(d == ir.ShapedType.get_dynamic_size() for d in type_.shape):
        raise CompileError(f"CPU backend: argument {name!r} has dynamic dims but the function has no tile.arg_dims")
    return list(type_.shape)


def _walk_named(root: ir.Operation, name: str) -> list[ir.Operation]:
    found = []

    def visit(op):
        if op.name == name:
            found.append(op)
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return found


def _threads(function: func.FuncOp) -> int:
    kernels = _walk_named(function.operation, "tile.kernel")
    if kernels:
        return ir.IntegerAttr(kernels[0].attributes["threads"]).value
    return 1


def _assumes(function: func.FuncOp) -> list[str]:
    return [ir.StringAttr(op.attributes["expr"]).value for op in _walk_named(function.operation, "tile.assume")]
