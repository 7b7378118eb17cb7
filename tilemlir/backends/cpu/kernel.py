"""`build` and `CpuKernel`: a tile-level or thread-level kernel made callable on numpy arrays.

    kernel = build(module, signature, level="tile")   # or level="thread"
    y = kernel(x, w, 1e-6)                            # numpy arrays (ml_dtypes for bf16/fp8) or torch CPU tensors

A call checks its arguments with the GPU runtime's `ArgumentBinder` (same
`LaunchError`s: count, dtype, rank, shapes and symbols, contiguity,
alignment, scalar ranges, `T.assume` facts) and `describe_host` (no
byte-swapped arrays, no read-only arrays the kernel writes), allocates the `out_idx`
outputs (filled with NaN, or the lowest signed / highest unsigned integer,
so unwritten elements show), runs the JIT-compiled function and returns the outputs (one array,
a tuple of several, or None), like `tilemlir.runtime.CompiledKernel`. Torch
CPU tensors are read and written in place (`runtime.arrays.torch_host_view`),
and then the outputs are torch tensors too.
"""

from __future__ import annotations

from collections.abc import Callable

import ml_dtypes
import numpy as np

from tilemlir.backends.cpu.native import NativeFunction
from tilemlir.backends.cpu.signature import (entry_function, located_signature_error, signature_from_info,
                                             signature_from_ir, written_params)
from tilemlir.backends.cpu.checks import SITES_ATTR, STATUS_WORDS, describe_status
from tilemlir.backends.cpu.debug_calls import ASSERT_SITES_ATTR, PRINT_SITES_ATTR, debug_context
from tilemlir.backends.cpu.simulate_threads import DEFAULT_OPTIONS, SimulateOptions
from tilemlir.diagnostics import TilemlirError
from tilemlir.frontend.info import KernelInfo
from tilemlir.mlir import ir
from tilemlir.pass_infra.runner import run_pipeline
from tilemlir.pipeline import cpu_thread_pipeline, cpu_tile_pipeline
from tilemlir.runtime.arrays import describe_host, torch_from_host, torch_host_view
from tilemlir.runtime.checks import HOST, ArgumentBinder
from tilemlir.runtime.signature import KernelSignature, SignatureError, TensorParam
from tilemlir.runtime.torch_ops import compiling, torch_op, traced_call, track

LEVELS = ("tile", "thread")
# LLVM optimization per level. A thread-level simulation is a large function (every thread's code, the
# simulator's checks) run on small tiles: at O2, LLVM took 60% of a tensor-core test's time and O0 halves
# its total; a tile-level kernel is small code over whole tensors, where O2's vectorized loops pay off.
# Both levels keep IEEE semantics at any level (no fast-math flags; FMAs are explicit in the IR).
LLVM_OPT_LEVELS = {"tile": 2, "thread": 0}
NUMPY_DTYPES = {
    "bool": np.bool_, "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32, "float64": np.float64,
    "float8_e4m3": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2,
}


class SimulationError(TilemlirError):
    """A kernel misbehaved in a CPU run, which stopped the access: an on-chip index out of its
    buffer or a read of an on-chip element never written (either level: a bug in the kernel,
    or at thread level in the GPU lowering), a data race on shared memory, an out-of-range
    global access or a misaligned vector access (thread level: the GPU lowering is wrong)."""


def build(module: ir.Module, signature_info: KernelSignature | KernelInfo | None = None, level: str = "tile",
          *, out_idx: tuple[int, ...] = (), simulate: SimulateOptions = DEFAULT_OPTIONS,
          after_pass: Callable[[str, ir.Operation], None] | None = None) -> "CpuKernel":
    """Compile `module` for the CPU. `level="tile"`: tile-level IR (run through
    `cpu_tile_pipeline`); `level="thread"`: thread-level IR (through `cpu_thread_pipeline`,
    `simulate-threads` with the options `simulate`); then `cpu_llvm_pipeline`
    (`tilemlir.pipeline`). `signature_info`: the runtime's `KernelSignature`, or
    the frontend's `KernelInfo`, or None to derive it from the IR's `tile.*` attributes
    with `out_idx` naming the outputs. `after_pass(pass name, module)` is called after
    every pass (the driver's IR dumps). The module is not modified."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    signature = _signature(module, signature_info, out_idx)
    with module.context:
        work = ir.Module.parse(module.operation.get_asm(enable_debug_info=True))
        name = _ascii_entry_name(entry_function(work))
        run_pipeline(work, _level_pipeline(level, simulate), after_pass=after_pass)
        sites = _simulation_sites(work)
        debug_sites = _string_array(work, PRINT_SITES_ATTR), _string_array(work, ASSERT_SITES_ATTR)
    kernel = CpuKernel(signature, NativeFunction(work, name, after_pass, LLVM_OPT_LEVELS[level]), level, sites)
    if any(debug_sites):
        kernel.debug_sites = debug_sites
    return kernel


def _level_pipeline(level: str, simulate: SimulateOptions) -> list:
    if level == "tile":
        return cpu_tile_pipeline()
    return [(name, simulate) if name == "simulate-threads" else name for name in cpu_thread_pipeline()]


def _ascii_entry_name(function) -> str:
    """The entry's symbol, renamed to ASCII where the Python name is not (LLVM's JIT looks symbols up
    by ASCII names)."""
    name = function.sym_name.value
    if not name.isascii():
        name = "kernel_" + "".join(c if c.isascii() and (c.isalnum() or c == "_") else f"u{ord(c):x}" for c in name)
        function.attributes["sym_name"] = ir.StringAttr.get(name)
    return name


def _signature(module: ir.Module, info, out_idx: tuple[int, ...]) -> KernelSignature:
    if isinstance(info, KernelSignature):
        return info
    try:
        if isinstance(info, KernelInfo):
            return signature_from_info(info, written_params(module))
        if info is None:
            return signature_from_ir(module, out_idx)
    except SignatureError as exc:
        raise located_signature_error(module, exc) from None
    raise TypeError(f"signature_info must be a KernelSignature, a KernelInfo or None, got {type(info).__name__}")


def _string_array(module: ir.Module, name: str) -> list[str]:
    function = entry_function(module)
    if name not in function.attributes:
        return []
    return [ir.StringAttr(a).value for a in ir.ArrayAttr(function.attributes[name])]


def _simulation_sites(module: ir.Module) -> list[str] | None:
    function = entry_function(module)
    if SITES_ATTR not in function.attributes:
        return None
    return [ir.StringAttr(a).value for a in ir.ArrayAttr(function.attributes[SITES_ATTR])]


class CpuKernel:
    """A kernel JIT-compiled for the host; call it like the GPU kernel, with numpy arrays."""

    def __init__(self, signature: KernelSignature, function: NativeFunction, level: str, sites: list[str] | None):
        self.signature = signature
        self.level = level
        self._function = function
        self._binder = ArgumentBinder(signature)
        self._inputs = signature.input_indices
        self._sites = sites
        self.debug_sites: tuple[list[str], list[str]] | None = None  # (print, assert) sites: debug_calls.py
        self.trace_key = track(self)  # how a torch.compile trace finds this kernel (runtime.torch_ops)

    @property
    def name(self) -> str:
        return self.signature.name

    @property
    def llvm_ir(self) -> str:
        """The LLVM IR handed to llvmlite (before its optimizations)."""
        return self._function.llvm_ir

    def __repr__(self) -> str:
        return f"<CpuKernel {self.name} ({self.level} level)>"

    def __call__(self, *args, stream=None):
        """Run on `args`. `stream` is accepted so a call written for the GPU runs unchanged (the CPU runs
        each call to its end). With a torch tensor among the arguments the outputs are torch tensors.
        Traced by torch.compile, the call is one of this kernel's custom op (runtime.torch_ops)."""
        if compiling():
            return traced_call(self, args, stream)
        return self._run_call(args, torch_outputs=False)

    def launch(self, args: tuple):
        """The call with torch outputs, never through the custom op (the op's implementation)."""
        return self._run_call(args, torch_outputs=True)

    # torch.compile: the custom op's device and what names it (runtime.torch_ops)
    device_type = "cpu"

    def identity(self) -> bytes:
        return repr((self.level, self._sites, self.debug_sites)).encode() + b"\0" + self.llvm_ir.encode()

    def as_torch_op(self):
        """This kernel as a torch custom op (`torch.ops.tilemlir.<name>_<hash>.default`)."""
        return torch_op(self)

    def _run_call(self, args: tuple, torch_outputs: bool):
        binder = self._binder
        binder.check_count(args)
        params = self.signature.params
        args, torch_given = self._host_arrays(args)
        values = [describe_host(a, params[i].name, params[i].written) if isinstance(params[i], TensorParam) else a
                  for i, a in zip(self._inputs, args)]
        env = binder.bind(values, HOST)
        outputs = {index: _poisoned(shape, params[index].dtype) for index, shape in binder.output_shapes(env)}
        call_args = []
        given = iter(args)
        for index, param in enumerate(params):
            value = outputs[index] if index in outputs else next(given)
            call_args.append(np.asarray(value) if isinstance(param, TensorParam) else value)
        self._run(call_args)
        if not outputs:
            return None
        arrays = tuple(torch_from_host(outputs[i], params[i].dtype) if torch_given or torch_outputs else outputs[i]
                       for i in self.signature.out_idx)
        return arrays[0] if len(arrays) == 1 else arrays

    def _host_arrays(self, args: tuple) -> tuple[tuple, bool]:
        """`args` with each torch CPU tensor as a numpy array of its memory, and whether there was one."""
        params = self.signature.params
        arrays, torch_given = [], False
        for index, value in zip(self._inputs, args):
            view = torch_host_view(value, params[index].name) if isinstance(params[index], TensorParam) else None
            if view is not None:
                array, dtype = view
                value, torch_given = array.view(NUMPY_DTYPES.get(dtype, array.dtype)), True
            arrays.append(value)
        return tuple(arrays), torch_given

    def _run(self, call_args: list) -> None:
        if self.debug_sites is None:
            self._checked_run(call_args)
            return
        with debug_context(*self.debug_sites) as debug:
            self._checked_run(call_args)
        debug.raise_failure()

    def _checked_run(self, call_args: list) -> None:
        if self._sites is None:
            self._function(*call_args)
            return
        status = np.zeros(STATUS_WORDS, np.int64)
        self._function(*call_args, status)
        problem = describe_status(status, self._sites)
        if problem:
            raise SimulationError(f"kernel {self.name!r}: {problem}")


def _poisoned(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """An output array whose unwritten elements stand out: NaN, or the lowest signed integer, or the
    highest unsigned one (an unsigned lowest is 0, a common real value)."""
    array = np.empty(shape, NUMPY_DTYPES[dtype])
    if dtype == "bool":
        array.fill(False)
    elif np.issubdtype(array.dtype, np.unsignedinteger):
        array.fill(np.iinfo(array.dtype).max)
    elif np.issubdtype(array.dtype, np.integer):
        array.fill(np.iinfo(array.dtype).min)
    else:
        array.fill(np.nan)
    return array
