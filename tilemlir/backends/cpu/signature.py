"""The runtime `KernelSignature` of a kernel, for CPU runs that have none from the CUDA emitter.

`signature_from_info` converts the frontend's `KernelInfo`;
`signature_from_ir` reads a kernel function's tile-level attributes
(parameters from `tile.arg_names` / `tile.arg_dims` / `tile.arg_dtypes`
(which tells uint8 from int8) or else the argument types,
symbols from `tile.symbols`, assumptions from the `tile.assume` ops). The
GPU-only fields get neutral values (grid 1x1x1, block from `threads`): the
CPU backend uses the signature for its argument checks and outputs only.
"""

from __future__ import annotations

from typing import Sequence

from tilemlir.errors import CompileError
from tilemlir.frontend.info import KernelInfo
from tilemlir.mlir import func, ir
from tilemlir.runtime.signature import KernelSignature, ScalarParam, TensorParam

DTYPE_NAMES = {
    "i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "index": "int64",
    "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
    "f8E4M3FN": "float8_e4m3", "f8E5M2": "float8_e5m2",
}


def entry_function(module: ir.Module) -> func.FuncOp:
    """The kernel function: the one marked `tile.entry`, else the module's only function."""
    functions = [op for op in module.body.operations if isinstance(op, func.FuncOp)]
    marked = [f for f in functions if "tile.entry" in f.attributes]
    if len(marked) == 1:
        return marked[0]
    if not marked and len(functions) == 1:
        return functions[0]
    raise CompileError(f"CPU backend: expected one kernel function (marked tile.entry), found "
                       f"{len(marked) or len(functions)}")


def dtype_name(type_: ir.Type) -> str:
    name = DTYPE_NAMES.get(str(type_))
    if name is None:
        raise CompileError(f"CPU backend: element type {type_} has no runtime dtype")
    return name


def signature_from_ir(module: ir.Module, out_idx: Sequence[int] = ()) -> KernelSignature:
    function = entry_function(module)
    attrs = function.attributes
    types = list(function.type.inputs)
    names = _strings(attrs["tile.arg_names"]) if "tile.arg_names" in attrs else [f"arg{i}" for i in range(len(types))]
    dims = [_dims(d) for d in attrs["tile.arg_dims"]] if "tile.arg_dims" in attrs else [None] * len(types)
    dtypes = _strings(attrs["tile.arg_dtypes"]) if "tile.arg_dtypes" in attrs else [None] * len(types)
    params = []
    for name, type_, shape, dtype in zip(names, types, dims, dtypes):
        if isinstance(type_, ir.MemRefType):
            shape = shape if shape is not None else _static_shape(name, type_)
            params.append(TensorParam(name, dtype or dtype_name(type_.element_type), tuple(shape)))
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


def signature_from_info(info: KernelInfo) -> KernelSignature:
    params = tuple(TensorParam(p.name, p.dtype, tuple(p.shape)) if p.is_tensor else ScalarParam(p.name, p.dtype)
                   for p in info.params)
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
