"""The kernel ABI as the IR carries it, read in one place for the CUDA emitter and the CPU backend.

The entry function's `tile.arg_names`, `tile.arg_dims`, `tile.arg_dtypes`,
`tile.symbols` and `tile.out_idx` attributes and its `tile.assume` ops
(docs/ir.md; written by `tilemlir.frontend.signature`, checked by
`tilemlir.dialects.tile.entry_attributes_problem`) become a `KernelABI`
(`read_kernel_abi`); `dtype_name` is the one table from MLIR element types
to the runtime's dtype names; `tensor_params` and `kernel_signature` build
the runtime's `KernelSignature` from them, the same way for both backends.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from tilemlir.diagnostics.reporting import error
from tilemlir.dialects.tile import entry_attributes_problem
from tilemlir.ir_util import operation, walk_ops
from tilemlir.mlir import ir
from tilemlir.runtime.dtypes import DTYPES
from tilemlir.runtime.signature import KernelSignature, Param, ScalarParam, TensorParam, scalar_dtype_message

Dim = int | str

FLOAT_DTYPES = {
    "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
    "f8E4M3FN": "float8_e4m3", "f8E5M2": "float8_e5m2",
}
INTEGER_WIDTHS = (8, 16, 32, 64)


class UnsupportedDtype(ValueError):
    """An element type that is no kernel parameter dtype."""


def dtype_name(type_: ir.Type, index_bits: int | None = None) -> str:
    """The runtime's dtype name of an element type; `index` is `int{index_bits}` (None: no dtype)."""
    if isinstance(type_, ir.IntegerType):
        if type_.width == 1:
            return "bool"
        if type_.width in INTEGER_WIDTHS:
            return f"{'uint' if type_.is_unsigned else 'int'}{type_.width}"
    elif isinstance(type_, ir.IndexType) and index_bits is not None:
        return f"int{index_bits}"
    elif str(type_) in FLOAT_DTYPES:
        return FLOAT_DTYPES[str(type_)]
    raise UnsupportedDtype(f"type {type_} is not a kernel parameter dtype")


@dataclass(frozen=True)
class KernelABI:
    """What the entry function says about its parameters; `arg_dims` None for a scalar argument or
    a tensor the function gives no `tile.arg_dims` for."""

    function: ir.Operation
    name: str
    arg_names: tuple[str, ...]
    arg_dims: tuple[tuple[Dim, ...] | None, ...]
    arg_dtypes: tuple[str, ...] | None  # the language dtypes: uint8 and int8 are both i8
    symbols: tuple[str, ...]
    assumes: tuple[str, ...]
    out_idx: tuple[int, ...]

    @property
    def args(self) -> list[ir.BlockArgument]:
        return list(self.function.regions[0].blocks[0].arguments)


def read_kernel_abi(function, prefix: str = "") -> KernelABI:
    """The ABI of entry function `function`; a located CompileError (its message after `prefix`)
    when the attributes are malformed."""
    function = operation(function)
    problem = entry_attributes_problem(function)
    if problem is not None:
        raise error(function, prefix + problem)
    args = list(function.regions[0].blocks[0].arguments)
    names = _strings(function, "tile.arg_names", prefix) or [f"arg{i}" for i in range(len(args))]
    dtypes = _strings(function, "tile.arg_dtypes", prefix)
    return KernelABI(
        function=function,
        name=ir.StringAttr(function.attributes["sym_name"]).value if "sym_name" in function.attributes else "kernel",
        arg_names=tuple(names),
        arg_dims=tuple(_declared_dims(function, args)),
        arg_dtypes=None if dtypes is None else tuple(dtypes),
        symbols=tuple(_strings(function, "tile.symbols", prefix) or ()),
        assumes=tuple(_assumes(function, prefix)),
        out_idx=tuple(_ints(function, "tile.out_idx", prefix)),
    )


def tensor_shape(abi: KernelABI, index: int, prefix: str = "") -> tuple[Dim, ...]:
    """Tensor argument `index`'s dims: `tile.arg_dims`, else its static memref shape."""
    declared = abi.arg_dims[index]
    if declared is not None:
        return declared
    type_ = ir.MemRefType(abi.args[index].type)
    if any(d == ir.ShapedType.get_dynamic_size() for d in type_.shape):
        raise error(abi.function, f"{prefix}tensor {abi.arg_names[index]} has dynamic dims but the function has "
                                  "no 'tile.arg_dims'")
    return tuple(type_.shape)


def param_dtype(abi: KernelABI, index: int, index_bits: int, prefix: str = "") -> str:
    """Argument `index`'s runtime dtype: its element type's, or the unsigned one `tile.arg_dtypes` declares."""
    type_ = abi.args[index].type
    type_ = type_.element_type if isinstance(type_, ir.MemRefType) else type_
    if isinstance(type_, ir.IndexType):
        return f"int{index_bits}"
    try:
        name = dtype_name(type_)
    except UnsupportedDtype as exc:
        raise error(abi.function, prefix + str(exc)) from None
    declared = abi.arg_dtypes[index] if abi.arg_dtypes is not None else None
    if declared is None or declared == name:
        return name
    if declared != "u" + name or not name.startswith("int"):
        raise error(abi.function, f"{prefix}'tile.arg_dtypes' declares {declared} for an argument of element type "
                                  f"{type_}")
    return declared


def params(abi: KernelABI, index_bits: int, written: Collection[int], shapes: Mapping[int, tuple[Dim, ...]],
           aligns: Mapping[int, int] | None = None, prefix: str = "") -> tuple[Param, ...]:
    """The runtime parameters: tensors (argument indices in `shapes`) with their shape, their
    alignment (`aligns`, at least the element size) and whether the kernel stores into them
    (`written`); every other argument a scalar."""
    result: list[Param] = []
    for index, name in enumerate(abi.arg_names):
        dtype = param_dtype(abi, index, index_bits, prefix)
        if index not in shapes:
            if DTYPES[dtype].scalar_ctype is None:
                raise error(abi.args[index].location, scalar_dtype_message(name, dtype))
            result.append(ScalarParam(name, dtype))
        else:
            result.append(TensorParam(name, dtype, shapes[index], (aligns or {}).get(index, 0), index in written))
    return tuple(result)


def kernel_signature(name: str, params: tuple[Param, ...], symbols: tuple[str, ...], *,
                     block: tuple[int, int, int], assumes: tuple[str, ...], out_idx: tuple[int, ...],
                     grid: tuple[str, str, str] = ("1", "1", "1"), shared_bytes: int | str = 0,
                     index_bits: int = 64) -> KernelSignature:
    """The `KernelSignature` of a kernel whose CUDA parameters are its own, then its symbols (every
    backend's calling convention). The CPU backend leaves the GPU-only fields at their defaults."""
    return KernelSignature(
        name=name,
        params=params,
        symbols=symbols,
        grid=grid,
        block=block,
        cuda_params=(*(p.name for p in params), *symbols),
        shared_bytes=shared_bytes,
        assumes=assumes,
        out_idx=out_idx,
        index_bits=index_bits,
    )


def _declared_dims(function: ir.Operation, args: list[ir.BlockArgument]) -> list[tuple[Dim, ...] | None]:
    attr = function.attributes["tile.arg_dims"] if "tile.arg_dims" in function.attributes else None
    return [tuple(d.value for d in attr[i]) if attr is not None and isinstance(arg.type, ir.MemRefType) else None
            for i, arg in enumerate(args)]


def _strings(op: ir.Operation, name: str, prefix: str) -> list[str] | None:
    if name not in op.attributes:
        return None
    attr = op.attributes[name]
    if not isinstance(attr, ir.ArrayAttr) or not all(isinstance(a, ir.StringAttr) for a in attr):
        raise error(op, f"{prefix}'{name}' must be an array of strings")
    return [a.value for a in attr]


def _ints(op: ir.Operation, name: str, prefix: str) -> list[int]:
    if name not in op.attributes:
        return []
    attr = op.attributes[name]
    if not isinstance(attr, ir.ArrayAttr) or not all(isinstance(a, ir.IntegerAttr) for a in attr):
        raise error(op, f"{prefix}'{name}' must be an array of integers")
    return [a.value for a in attr]


def _assumes(function: ir.Operation, prefix: str) -> list[str]:
    facts = []
    for op in walk_ops(function):
        if op.name == "tile.assume":
            if "expr" not in op.attributes or not isinstance(op.attributes["expr"], ir.StringAttr):
                raise error(op, f"{prefix}tile.assume needs a string 'expr' attribute")
            facts.append(ir.StringAttr(op.attributes["expr"]).value)
    return facts
