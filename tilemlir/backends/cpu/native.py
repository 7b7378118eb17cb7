"""Call a loop-level `func.func` on numpy arrays: JIT it and pass memref descriptors via ctypes.

`NativeFunction(module, name, after_pass)` takes a module whose function `name` has
only upstream loop-level ops (what `lower-tile-to-loops` or
`simulate-threads` give), lowers and JIT-compiles it, and calls its
`_mlir_ciface_` entry. Memref arguments are C-contiguous numpy arrays
(passed as `{allocated, aligned, offset, sizes[r], strides[r]}`
descriptors); scalar arguments are Python numbers converted to the
argument's MLIR type. f16/bf16 scalars travel as their 16 bits, because
ctypes has no half types: the entry is rewritten to take i16 and bitcast.
No argument checks happen here (see `tilemlir.backends.cpu.kernel`).
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

import ml_dtypes
import numpy as np

from tilemlir.backends.cpu.jit import JitModule, to_llvm_ir
from tilemlir.diagnostics import CompileError
from tilemlir.mlir import arith, func, ir

_SCALAR_CTYPES = {
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
    "i1": ctypes.c_bool,
    "i8": ctypes.c_int8,
    "i16": ctypes.c_int16,
    "i32": ctypes.c_int32,
    "i64": ctypes.c_int64,
    "index": ctypes.c_int64,
}
_HALF_NUMPY = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}


@functools.cache
def descriptor_struct(rank: int) -> type[ctypes.Structure]:
    """The ctypes layout of a ranked memref descriptor."""
    fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_int64)]
    if rank:
        fields += [("sizes", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
    return type(f"MemRef{rank}D", (ctypes.Structure,), {"_fields_": fields})


def descriptor(array: np.ndarray) -> ctypes.Structure:
    """A descriptor viewing `array` (which must outlive the call)."""
    desc = descriptor_struct(array.ndim)()
    desc.allocated = desc.aligned = array.ctypes.data
    desc.offset = 0
    if array.ndim:
        desc.sizes[:] = array.shape
        desc.strides[:] = [s // array.itemsize if array.itemsize else 0 for s in array.strides]
    return desc


class NativeFunction:
    """A JIT-compiled loop-level function; call it with one value per MLIR argument."""

    def __init__(self, module: ir.Module, name: str, after_pass: Callable[[str, ir.Operation], None] | None = None,
                 opt_level: int = 2):
        self.name = name
        with module.context:
            entry = _find_function(module, name)
            self.arg_types = [str(t) for t in entry.type.inputs]
            self._ranks = [t.rank if isinstance(t, ir.MemRefType) else None for t in entry.type.inputs]
            _pass_halves_as_bits(entry)
            entry.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
        self.llvm_ir = to_llvm_ir(module, after_pass)
        self._jit = JitModule(self.llvm_ir, opt_level)
        argtypes = [
            ctypes.POINTER(descriptor_struct(rank)) if rank is not None else _scalar_ctype(type_)
            for rank, type_ in zip(self._ranks, self.arg_types)
        ]
        self._cfunc = ctypes.CFUNCTYPE(None, *argtypes)(self._jit.address(f"_mlir_ciface_{name}"))

    def __call__(self, *args) -> None:
        if len(args) != len(self.arg_types):
            raise TypeError(f"{self.name} takes {len(self.arg_types)} arguments, got {len(args)}")
        keep, converted = [], []
        for value, rank, type_ in zip(args, self._ranks, self.arg_types):
            if rank is None:
                converted.append(_scalar_value(value, type_))
                continue
            desc = descriptor(value)
            keep.append(desc)
            converted.append(ctypes.pointer(desc))
        self._cfunc(*converted)


def _find_function(module: ir.Module, name: str):
    for op in module.body.operations:
        if isinstance(op.opview, func.FuncOp) and op.opview.sym_name.value == name:
            return op.opview
    raise CompileError(f"CPU backend: the module has no function '{name}'")


def _scalar_ctype(type_: str):
    if type_ in _HALF_NUMPY:
        return ctypes.c_uint16
    if type_ not in _SCALAR_CTYPES:
        raise CompileError(f"CPU backend: scalar arguments of type {type_} are not supported")
    return _SCALAR_CTYPES[type_]


def _scalar_value(value, type_: str):
    if type_ in _HALF_NUMPY:
        return int(np.array(value, dtype=_HALF_NUMPY[type_]).view(np.uint16))
    if type_ in ("f32", "f64"):
        return float(value)
    if type_ == "i1":
        return bool(value)
    return int(value)


def _pass_halves_as_bits(entry) -> None:
    """Make f16/bf16 scalar arguments i16 at the ABI, bitcast back at the top of the body."""
    block = entry.body.blocks[0]
    i16 = ir.IntegerType.get_signless(16)
    new_inputs = []
    for arg in block.arguments:
        if str(arg.type) not in _HALF_NUMPY:
            new_inputs.append(arg.type)
            continue
        half = arg.type
        arg.set_type(i16)
        with ir.InsertionPoint.at_block_begin(block), entry.location:
            cast = arith.bitcast(half, arg)
        arg.replace_all_uses_except(cast, cast.owner.operation)
        new_inputs.append(i16)
    entry.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(new_inputs, entry.type.results))
