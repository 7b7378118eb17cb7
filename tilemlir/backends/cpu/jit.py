"""Loop-level MLIR (scf/memref/arith/math/vector, no memory spaces) -> LLVM IR -> machine code.

`to_llvm_ir` runs the upstream conversions (`math.fma` rounded once first,
see `fuse-fma`; narrow-float arithmetic widened to f32 and narrow-float
casts expanded, see `expand-narrow-floats`), and keeps the loops with a
float max or min out of LLVM's loop vectorizer, whose width choice aborts
on them (`tilemlir.backends.cpu.loop_hints`), and functions marked
`llvm.noinline` out of line;
`JitModule` optimizes the LLVM IR with llvmlite's new pass manager at O2
for the host CPU and JIT-compiles it with MCJIT.

No canonicalization runs after the narrow-float widening: it marks its
casts `contract`, and canonicalize would then fold `extf(truncf(x))` to
`x`, skipping the rounding of each narrow-float operation.

The MLIR bindings carry a newer LLVM than llvmlite. Its IR printer writes
float constants in forms the older parser rejects (`f0x33800000`,
`+qnan`, non-exact decimals such as `float 1.000000e-01`), so before
translation every float constant becomes an integer constant, `freeze`d
(which the translator cannot constant-fold) and bitcast; llvmlite's
optimizer folds it back.
"""

from __future__ import annotations

import math
import struct
import threading

import llvmlite.binding as llvm
import ml_dtypes
import numpy as np

from tilemlir.backends.cpu import expand_narrow_floats, fuse_fma, loop_hints
from tilemlir.backends.cpu.ir_builders import CMPF, constant
from tilemlir.diagnostics import CompileError
from tilemlir.mlir import MLIRError, PassManager, arith, ir, llvm as llvm_dialect, memref, translate_module_to_llvmir
from tilemlir.mlir import vector
from tilemlir.mlir import math as math_dialect

NARROW_TYPES = "f16,bf16,f8E4M3FN,f8E5M2"

_BEFORE_CASTS = (
    "builtin.module("
    "lower-affine,"
    f"func.func(arith-emulate-unsupported-floats{{source-types={NARROW_TYPES} target-type=f32}}),"
    "math-extend-to-supported-types)"
)
_AFTER_CASTS = (
    "builtin.module("
    "arith-expand,"
    "math-expand-ops,"
    "convert-math-to-funcs,"
    "convert-vector-to-scf,"
    "convert-scf-to-cf,"
    "convert-math-to-llvm,"
    "convert-math-to-libm,"
    "expand-strided-metadata,"
    "finalize-memref-to-llvm,"
    "convert-to-llvm,"
    "reconcile-unrealized-casts)"
)

_init_lock = threading.Lock()
_initialized = False


def to_llvm_ir(module: ir.Module) -> str:
    """Lower `module` (in place) to the LLVM dialect and translate it to LLVM IR text."""
    with module.context:
        fuse_fma.run(module.operation, None)
        _run(module, _BEFORE_CASTS)
        _expand_isinf(module)
        _scalarize_bool_vectors(module)
        expand_narrow_floats.run(module.operation, None)
        _run(module, _AFTER_CASTS)
        _check_fully_lowered(module)
        _keep_out_of_line(module)
        loop_hints.keep_min_max_loops_scalar(module)
        _opaque_float_constants(module)
        return translate_module_to_llvmir(module.operation)


def _expand_isinf(module: ir.Module) -> None:
    """`math.isinf x` as `|x| == inf`: upstream has no LLVM lowering for it."""
    found = []
    module.operation.walk(lambda op: (found.append(op) if op.name == "math.isinf" else None) or ir.WalkResult.ADVANCE)
    for op in found:
        value = op.operands[0]
        with op.location, ir.InsertionPoint(op):
            inf = constant(value.type, math.inf)
            result = arith.cmpf(CMPF.OEQ, math_dialect.absf(value), inf)
        op.results[0].replace_all_uses_with(result)
        op.erase()


def _scalarize_bool_vectors(module: ir.Module) -> None:
    """Each 1-D `vector.load` / `vector.store` of i1 lanes as one `memref.load` / `memref.store` per lane:
    LLVM packs a `<N x i1>` in memory into bits, where a memref of i1 (a numpy bool array) has a byte each."""
    found = []

    def visit(op):
        if op.name in ("vector.load", "vector.store"):
            element = _vector_of(op).element_type
            if _vector_of(op).rank == 1 and isinstance(element, ir.IntegerType) and element.width == 1:
                found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in found:
        is_load = op.name == "vector.load"
        buffer, *indices = op.operands if is_load else op.operands[1:]
        with op.location, ir.InsertionPoint(op):
            step = [constant(ir.IndexType.get(), k) for k in range(1, _vector_of(op).shape[0])]
            lanes = [indices] + [[*indices[:-1], arith.addi(indices[-1], k)] for k in step]
            if is_load:
                loaded = [memref.load(buffer, at) for at in lanes]
                op.results[0].replace_all_uses_with(vector.from_elements(_vector_of(op), loaded))
            else:
                for k, at in enumerate(lanes):
                    memref.store(vector.extract(op.operands[0], [], [k]), buffer, at)
        op.erase()


def _vector_of(op) -> ir.VectorType:
    """The vector type a `vector.load` gives or a `vector.store` takes."""
    return ir.VectorType(op.results[0].type if op.name == "vector.load" else op.operands[0].type)


def _run(module: ir.Module, pipeline: str) -> None:
    try:
        PassManager.parse(pipeline).run(module.operation)
    except MLIRError as exc:
        messages = "; ".join(d.message for d in exc.error_diagnostics) or str(exc)
        raise CompileError(f"CPU backend: lowering to LLVM failed: {messages}") from None


def _check_fully_lowered(module: ir.Module) -> None:
    leftovers: list[str] = []

    def visit(op):
        name = op.name
        if not (name.startswith("llvm.") or name == "builtin.module") and name not in leftovers:
            leftovers.append(name)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if leftovers:
        raise CompileError(f"CPU backend: cannot lower {', '.join(leftovers)} to LLVM")


def _keep_out_of_line(module: ir.Module) -> None:
    """Functions marked `llvm.noinline` (the run-time checks' recorder) get LLVM's `noinline`."""
    for op in module.body.operations:
        if op.name == "llvm.func" and "llvm.noinline" in op.attributes:
            del op.attributes["llvm.noinline"]
            op.attributes["no_inline"] = ir.UnitAttr.get()


def _opaque_float_constants(module: ir.Module) -> None:
    constants = []

    def visit(op):
        if op.name == "llvm.mlir.constant" and _float_element(op.results[0].type) is not None:
            constants.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in constants:
        type_ = op.results[0].type
        element = _float_element(type_)
        int_element = ir.IntegerType.get_signless(element.width)
        attr = op.attributes["value"]
        with op.location, ir.InsertionPoint(op):
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


def _initialize() -> None:
    global _initialized
    with _init_lock:
        if not _initialized:
            llvm.initialize_native_target()
            llvm.initialize_native_asmprinter()
            _initialized = True


class JitModule:
    """LLVM IR text optimized (O2, host CPU) and compiled in memory; keeps the engine alive."""

    def __init__(self, llvm_ir: str):
        _initialize()
        module = llvm.parse_assembly(llvm_ir)
        module.verify()
        target = llvm.Target.from_default_triple()
        self._machine = target.create_target_machine(
            cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(), opt=2
        )
        tuning = llvm.create_pipeline_tuning_options(speed_level=2)
        builder = llvm.create_pass_builder(self._machine, tuning)
        builder.getModulePassManager().run(module, builder)
        self._engine = llvm.create_mcjit_compiler(module, self._machine)
        self._engine.finalize_object()
        self.optimized_ir = str(module)

    def address(self, symbol: str) -> int:
        address = self._engine.get_function_address(symbol)
        if not address:
            raise CompileError(f"CPU backend: JIT module has no function '{symbol}'")
        return address
