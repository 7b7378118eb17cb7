"""The kernel signature: parameters to `func.func` arguments, symbolic dims to `memref.dim`, `KernelInfo`.

Parameters are annotated `T.Tensor(shape, dtype)` (a global tensor, a
`memref` with `?` for symbolic dims) or a dtype (a scalar). The function
carries `tile.entry`, `tile.arg_names`, `tile.arg_dims`, `tile.symbols`
(docs/ir.md) and `tile.arg_dtypes`, the language dtype names (which tell
uint8 from int8, both `i8` in MLIR).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from tilemlir import language as T
from tilemlir.frontend.info import KernelInfo, ParamInfo, SymbolInfo
from tilemlir.frontend.source import KernelError
from tilemlir.frontend.types import INDEX, mlir_type
from tilemlir.frontend.values import GLOBAL, Buffer, Scalar
from tilemlir.mlir import arith, func, ir, memref


@dataclass
class Param:
    name: str
    node: ast.arg
    tensor: T.Tensor | None
    dtype: T.DType

    def mlir_type(self) -> ir.Type:
        if self.tensor is None:
            return mlir_type(self.dtype)
        dynamic = ir.ShapedType.get_dynamic_size()
        dims = [d if isinstance(d, int) else dynamic for d in self.tensor.shape]
        return ir.MemRefType.get(dims, mlir_type(self.dtype))

    def info(self) -> ParamInfo:
        if self.tensor is None:
            return ParamInfo(self.name, "scalar", self.dtype.name)
        shape = tuple(d if isinstance(d, int) else d.name for d in self.tensor.shape)
        return ParamInfo(self.name, "tensor", self.dtype.name, shape)


class SignatureMixin:
    """Function signature handling for `KernelBuilder`."""

    def read_params(self) -> list[Param]:
        args = self.source.tree.args
        for extra in (args.vararg, args.kwarg, *args.kwonlyargs):
            if extra is not None:
                raise KernelError("kernel parameters must be plain positional parameters", extra)
        params = []
        for arg in [*args.posonlyargs, *args.args]:
            params.append(self.read_param(arg))
        return params

    def read_param(self, arg: ast.arg) -> Param:
        with self.located(arg):
            if arg.annotation is None:
                raise KernelError(
                    f"parameter '{arg.arg}' needs a type: T.Tensor(shape, dtype) for a tensor, or a dtype such as "
                    "T.float32 for a scalar"
                )
            annotation = self.annotation_value(arg)
            if isinstance(annotation, T.Tensor):
                return Param(arg.arg, arg, annotation, annotation.dtype)
            try:
                return Param(arg.arg, arg, None, T.dtype(annotation))
            except ValueError as exc:
                raise KernelError(
                    f"parameter '{arg.arg}' must be annotated with T.Tensor(shape, dtype) or a dtype: {exc}",
                    arg.annotation,
                ) from None

    def annotation_value(self, arg: ast.arg):
        """The evaluated annotation: Python already evaluated it at `def` time in the enclosing scope
        (names used only in annotations are no closure cells), unless annotations are postponed strings."""
        evaluated = getattr(self.source.fn, "__annotations__", {}).get(arg.arg)
        if evaluated is not None and not isinstance(evaluated, str):
            return evaluated
        self.postponed_annotation = isinstance(evaluated, str)
        try:
            return self.eval(arg.annotation)
        finally:
            self.postponed_annotation = False

    def declare_function(self, params: list[Param]) -> func.FuncOp:
        function_type = ir.FunctionType.get([p.mlir_type() for p in params], [])
        op = func.FuncOp(self.source.name, function_type)
        attrs = op.operation.attributes
        attrs["tile.entry"] = ir.UnitAttr.get()
        attrs["tile.arg_names"] = _strings([p.name for p in params])
        attrs["tile.arg_dims"] = ir.ArrayAttr.get([_dims(p) for p in params])
        attrs["tile.symbols"] = _strings(self.symbol_order(params))
        attrs["tile.arg_dtypes"] = _strings([p.dtype.name for p in params])
        op.add_entry_block(arg_locs=[self.mlir_location(p.node) for p in params])
        return op

    def symbol_order(self, params: list[Param]) -> list[str]:
        names: dict[str, None] = {}
        for p in params:
            for dim in p.tensor.shape if p.tensor else ():
                if isinstance(dim, T.Symbolic):
                    names.setdefault(dim.name)
        return list(names)

    def bind_params(self, func_op: func.FuncOp, params: list[Param]) -> None:
        """Bind parameter names, and read every symbolic dim once with `memref.dim` on its first tensor."""
        self.params = params
        self.symbols: dict[str, Scalar] = {}
        self.symbol_sources: list[SymbolInfo] = []
        for index, (p, value) in enumerate(zip(params, func_op.arguments)):
            if p.tensor is None:
                self.bind(p.name, Scalar(value, p.dtype, p.name), p.node)
                continue
            self.bind(p.name, Buffer(value, p.dtype, p.tensor.shape, GLOBAL, p.name, p.node), p.node)
            for dim, size in enumerate(p.tensor.shape):
                if isinstance(size, T.Symbolic) and size.name not in self.symbols:
                    with self.mlir_location(p.node):
                        position = arith.ConstantOp(ir.IndexType.get(), dim).result
                        read = memref.DimOp(value, position).result
                    self.symbols[size.name] = Scalar(read, INDEX, size.name)
                    self.symbol_sources.append(SymbolInfo(size.name, index, dim))

    def symbol_value(self, symbol: T.Symbolic) -> Scalar:
        if symbol.name not in self.symbols:
            raise KernelError(
                f"the symbolic dim '{symbol.name}' is not a dim of any tensor parameter, so its value is unknown at "
                "launch; use it in a parameter's T.Tensor shape"
            )
        return self.symbols[symbol.name]

    def kernel_info(self, params: list[Param]) -> KernelInfo:
        kernel = self.kernel
        return KernelInfo(
            name=self.source.name,
            params=tuple(p.info() for p in params),
            symbols=tuple(self.symbol_sources),
            grid=tuple(g.expr for g in kernel.grid),
            threads=kernel.threads,
            assumes=tuple(self.assumes),
            source_file=self.source.file,
            source_line=self.source.location(self.source.tree).line,
        )


def _strings(values: list[str]) -> ir.ArrayAttr:
    return ir.ArrayAttr.get([ir.StringAttr.get(v) for v in values])


def _dims(param: Param) -> ir.ArrayAttr:
    if param.tensor is None:
        return ir.ArrayAttr.get([])
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get(
        [ir.IntegerAttr.get(i64, d) if isinstance(d, int) else ir.StringAttr.get(d.name) for d in param.tensor.shape]
    )
