"""The user API: `@tilemlir.jit`, `tilemlir.compile`, `tilemlir.lower`, and compiled `Kernel` objects.

The frontend stage is built here; every later stage and all code generation
go through `tilemlir.driver` (`compile_module(module, info, options)`, which
returns a `CompileResult`, and `lower_module(module, stage, options)`), imported on
first use so that decorating a kernel loads no MLIR. Keyword options become
a typed record (`tilemlir.options`) before anything compiles.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import logging
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Callable

from tilemlir.config import settings
from tilemlir.diagnostics import CompileError, DeviceAssertionError, LaunchError, SourceLocation
from tilemlir.frontend.info import KernelInfo
from tilemlir.options import CpuOptions, CudaOptions, TargetOptions, known_options, options_for
from tilemlir.pass_configs import options_from_pass_configs
from tilemlir.pipeline import STAGES
from tilemlir.runtime.torch_ops import compiling, lookup, track

log = logging.getLogger("tilemlir.jit")
compile_log = logging.getLogger("tilemlir.compile")  # one INFO line per compile (TILEMLIR_LOG_COMPILES)

# The compile options (tilemlir.options): an eager function's compile() tells them from its T.const dims.
_COMPILE_OPTIONS = frozenset(f.name for record in (CudaOptions, CpuOptions) for f in fields(record))

FRONTEND = "frontend"
DEFAULT_TARGET = "cuda"


def _driver():
    """`tilemlir.driver`, imported on first use: it loads MLIR."""
    return importlib.import_module("tilemlir.driver")


# The compiler's own dependencies, which a runtime-only install (pyproject's `runtime` extra) leaves out.
COMPILER_MODULES = {"torch_mlir": "torch-mlir", "z3": "z3-solver", "llvmlite": "llvmlite"}


def _require_compiler() -> None:
    """A CompileError saying what to install when this is a runtime-only install."""
    missing = [package for module, package in COMPILER_MODULES.items() if importlib.util.find_spec(module) is None]
    if missing:
        raise CompileError(f"compiling a kernel needs tilemlir's compiler, but {', '.join(missing)} "
                           f"{'is' if len(missing) == 1 else 'are'} not installed (a runtime-only install): install "
                           "tilemlir with its dependencies to compile; tilemlir.runtime.load(directory) runs kernels "
                           "exported elsewhere")


def _user_facing(method: Callable) -> Callable:
    """`method` raising a CompileError, LaunchError or DeviceAssertionError with no traceback frames of
    tilemlir's own: the located message says what is wrong and where, and the frame that called
    tilemlir stays (the TILEMLIR_TRACEBACK knob keeps the whole traceback)."""

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except (CompileError, LaunchError, DeviceAssertionError) as exc:
            if settings().traceback:
                raise
            raise exc.with_traceback(None)  # noqa: B904 - the same exception, its internal frames dropped

    return wrapper


def known_stages() -> tuple[str, ...]:
    return STAGES


def _check_stage(stage: str) -> None:
    if stage not in STAGES:
        raise CompileError(f"unknown stage '{stage}' (known stages: {', '.join(STAGES)})")


@dataclass(frozen=True)
class FrontendResult:
    """A kernel's frontend IR, with and without locations, and its signature."""

    text: str
    located_text: str
    info: KernelInfo

    def ir(self, debuginfo: bool) -> str:
        return self.located_text if debuginfo else self.text

    def module(self):
        """A fresh `ir.Module` parsed from the text, in a new context (later stages may rewrite it)."""
        from tilemlir.context import make_context
        from tilemlir.mlir import ir

        return ir.Module.parse(self.located_text, make_context())


def _print(module, debuginfo: bool) -> str:
    return module.operation.get_asm(enable_debug_info=debuginfo, use_local_scope=debuginfo, assume_verified=True)


def _is_tensor_annotation(node: ast.expr | None) -> bool:
    """Whether a parameter annotation is a `T.Tensor(...)` call or a `T.Tensor[...]` subscript (or the
    same with `T.Buffer` or `T.StridedTensor`)."""
    if isinstance(node, ast.Call):
        callee = node.func
    elif isinstance(node, ast.Subscript):
        callee = node.value
    else:
        return False
    name = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", None)
    return name in ("Tensor", "Buffer", "StridedTensor")


class JitFunction:
    """A function decorated with `@tilemlir.jit`: a kernel, or a factory returning one.

    A kernel's body has a top-level `with T.Kernel(...)` block; calling it
    compiles it (once per target) and launches it. A CUDA kernel compiled
    before, by any process, is loaded from the disk cache by its Python
    source (`tilemlir.source_cache`) without running the frontend. Any other decorated
    function is a factory: its parameters are compile-time values and it
    returns a kernel function; calling it returns a compiled `Kernel`,
    cached per distinct argument values.
    """

    def __init__(self, fn: Callable, out_idx=None, target: str | None = None, options: dict | None = None):
        if not callable(fn):
            raise TypeError(f"@tilemlir.jit decorates a function, got {fn!r}")
        self.fn = fn
        self.out_idx = out_idx
        self.target = target
        self.options = dict(options or {})
        self._kind: str | None = None
        self._eager = None  # an eager function's specialization: the EagerSpec its kernel is built with
        self._tensor_params: list[str] = []
        self._frontend: FrontendResult | None = None
        self._instances: dict = {}
        self._compiled: dict = {}
        self.trace_key = track(self)  # how a torch.compile trace finds this function (_traced_jit_call)
        functools.update_wrapper(self, fn)

    def __repr__(self) -> str:
        return f"<tilemlir.jit {self.kind} '{self.fn.__name__}'>"

    @property
    def kind(self) -> str:
        """"kernel", "factory" or "eager" (TileLang's eager style: tensor parameters declared in the body,
        tilemlir.frontend.eager)."""
        if self._kind is None:
            from tilemlir.frontend.eager import is_eager
            from tilemlir.frontend.source import load_source

            tree = load_source(self.fn).tree
            self._kind = "kernel" if any(isinstance(s, ast.With) for s in tree.body) else "factory"
            if self._kind == "kernel" and is_eager(tree):
                self._kind = "eager"
            self._tensor_params = [a.arg for a in tree.args.args if _is_tensor_annotation(a.annotation)]
        return self._kind

    def _missing_kernel_block(self) -> CompileError | None:
        """The error for a function with tensor parameters but no `with T.Kernel` block (a factory's
        parameters are compile-time values, so it is a kernel missing its block), else None."""
        if self.kind != "factory" or not self._tensor_params:
            return None
        names = ", ".join(f"'{n}'" for n in self._tensor_params)
        return CompileError(
            f"'{self.fn.__name__}' has tensor parameters ({names}) but no `with T.Kernel(...)` block at the top level "
            "of its body: a kernel's body is one `with T.Kernel(grid, threads=...) as bx:` block (a factory instead "
            "takes compile-time values and returns a kernel function)",
            self._def_location(),
        )

    # ------------------------------------------------------------------
    # Factories.

    @_user_facing
    def instantiate(self, *args, **kwargs) -> "JitFunction":
        """The kernel function a factory returns for these compile-time values (cached); for an eager
        function, its kernel specialized for these arguments (tensors and compile-time values)."""
        if self.kind == "eager":
            return self._eager_instance(args, kwargs)
        if self.kind != "factory":
            raise TypeError(f"'{self.fn.__name__}' is a kernel, not a factory: it takes no compile-time arguments")
        missing = self._missing_kernel_block()
        if missing is not None:
            raise missing
        key = self._key(args, kwargs)
        if key not in self._instances:
            self._instances[key] = self._make_instance(args, kwargs)
        return self._instances[key]

    def _key(self, args: tuple, kwargs: dict):
        bound = inspect.signature(self.fn).bind(*args, **kwargs)
        bound.apply_defaults()
        key = tuple(bound.arguments.items())
        arrays = [(name, value) for name, value in key if _is_array(value)]
        if arrays:
            raise CompileError(_array_to_factory_message(self.fn.__name__, arrays), self._def_location())
        try:
            hash(key)
        except TypeError:
            raise CompileError(
                f"the arguments of factory '{self.fn.__name__}' must be hashable compile-time values "
                "(ints, floats, strings, dtypes, tuples), so that its kernels can be cached",
                self._def_location(),
            ) from None
        return key

    def _make_instance(self, args: tuple, kwargs: dict) -> "JitFunction":
        kernel = self.fn(*args, **kwargs)
        if isinstance(kernel, JitFunction):
            kernel = kernel.fn
        if not inspect.isfunction(kernel):
            raise CompileError(
                f"factory '{self.fn.__name__}' must return a kernel function, got {type(kernel).__name__}",
                self._def_location(),
            )
        instance = JitFunction(kernel, self.out_idx, self.target, self.options)
        if instance.kind != "kernel":
            raise CompileError(
                f"factory '{self.fn.__name__}' returned '{kernel.__name__}', which has no `with T.Kernel(...)` block",
                self._def_location(),
            )
        return instance

    def _eager_instance(self, args: tuple, kwargs: dict, consts: dict | None = None) -> "JitFunction":
        from tilemlir.frontend.eager import eager_spec
        from tilemlir.frontend.source import load_source

        if self.out_idx is not None:
            raise CompileError(f"'{self.fn.__name__}' is an eager kernel: its outputs are the tensors it makes with "
                               "T.empty and returns, so it takes no out_idx", self._def_location())
        signature = inspect.signature(self.fn)
        try:
            bound = signature.bind(*args, **kwargs) if consts is None else signature.bind_partial(*args, **kwargs)
        except TypeError as exc:
            raise CompileError(f"eager kernel '{self.fn.__name__}': {exc}", self._def_location()) from None
        bound.apply_defaults()
        spec = eager_spec(load_source(self.fn), dict(bound.arguments), consts)
        try:
            hash(spec)
        except TypeError:
            raise CompileError(
                f"the compile-time arguments of eager kernel '{self.fn.__name__}' must be hashable (ints, floats, "
                "strings, dtypes, tuples), so that its kernels can be cached", self._def_location()) from None
        if spec not in self._instances:
            instance = JitFunction(self.fn, None, self.target, self.options)
            instance._kind, instance._eager = "kernel", spec
            self._instances[spec] = instance
        return self._instances[spec]

    def _eager_compile(self, target: str | None, keywords: dict) -> "Kernel":
        params = inspect.signature(self.fn).parameters
        arguments = {k: v for k, v in keywords.items() if k in params}
        options = {k: v for k, v in keywords.items() if k not in params and k in _COMPILE_OPTIONS}
        consts = {k: v for k, v in keywords.items() if k not in params and k not in _COMPILE_OPTIONS}
        return self._eager_instance((), arguments, consts).compile(target, **options)

    def _eager_call(self, args: tuple, kwargs: dict):
        """Compile (once per specialization) and launch an eager function; its T.empty outputs come back."""
        instance = self._eager_instance(args, kwargs)
        bound = inspect.signature(self.fn).bind(*args, **kwargs)
        return instance.compile()(*(bound.arguments[name] for name, _ in instance._eager.tensors))

    def _def_location(self) -> SourceLocation | None:
        code = getattr(self.fn, "__code__", None)
        return SourceLocation(code.co_filename, code.co_firstlineno, 1) if code else None

    # ------------------------------------------------------------------
    # Kernels.

    @_user_facing
    def frontend(self) -> FrontendResult:
        """The frontend IR and signature of this kernel (built once)."""
        if self.kind == "eager":
            raise CompileError(
                f"'{self.fn.__name__}' is an eager kernel: its signature comes from its arguments, so call it with "
                f"them, or use {self.fn.__name__}.instantiate(...) with them to get its kernel function",
                self._def_location(),
            )
        if self.kind != "kernel":
            raise self._missing_kernel_block() or CompileError(
                f"'{self.fn.__name__}' is a kernel factory: call it with its compile-time arguments, or use "
                f"{self.fn.__name__}.instantiate(...) to get its kernel function",
                self._def_location(),
            )
        if self._frontend is None:
            from tilemlir.frontend import build_module

            module, info = build_module(self.fn, eager=self._eager)
            out_idx = self._eager.out_idx if self._eager is not None else self._normalized_out_idx(info)
            info = replace(info, out_idx=out_idx)
            self._frontend = FrontendResult(_print(module, debuginfo=False), _print(module, debuginfo=True), info)
        return self._frontend

    def _normalized_out_idx(self, info: KernelInfo) -> tuple[int, ...]:
        if self.out_idx is None:
            return ()
        indices = [self.out_idx] if isinstance(self.out_idx, int) else list(self.out_idx)
        count = len(info.params)
        result = []
        for index in indices:
            if not isinstance(index, int) or not -count <= index < count:
                raise CompileError(
                    f"out_idx {index!r} is out of range for kernel '{info.name}' with {count} parameters",
                    self._def_location(),
                )
            index %= count
            if not info.params[index].is_tensor:
                raise CompileError(
                    f"out_idx {index} names the scalar parameter '{info.params[index].name}': outputs must be tensors",
                    self._def_location(),
                )
            result.append(index)
        return tuple(result)

    @_user_facing
    def compile(self, target: str | None = None, **options) -> "Kernel":
        """The compiled kernel for `target` (cached per target and options, in memory and on disk).

        For an eager function, as TileLang's `f.compile(M=1024, N=1024, block_M=32, ...)`: the keywords
        are its compile-time parameters and its T.const dims (the tensor arguments are not needed)."""
        if self.kind == "eager":
            return self._eager_compile(target, options)
        target = target or self.target or DEFAULT_TARGET
        merged = {**self.options, **options}
        record = options_for(target, merged)
        interpret = settings().interpret
        if interpret is not None:
            record = options_for("cpu", _interpreted_options(target, merged, interpret))
        if record not in self._compiled:
            _require_compiler()
            start = time.perf_counter()
            source_key = self._source_key(target, record, merged)
            kernel = self._cached(source_key, record, merged) if source_key else None
            cache = "no source cache" if not source_key else "source cache hit" if kernel else "source cache miss"
            if kernel is None:
                kernel = self._compile_fresh(record)
                if source_key:
                    from tilemlir import source_cache

                    source_cache.store(source_key, kernel.compiled)
            self._compiled[record] = kernel
            _log_compile(kernel, cache, time.perf_counter() - start)
        return self._compiled[record]

    def _source_key(self, target: str, record: TargetOptions, options: dict) -> str | None:
        """The source-level disk-cache key (CUDA only: CPU kernels are JIT-compiled in memory) of the
        options as given."""
        config = settings()
        # A hand-edited override or a dump request needs the compile to happen.
        if config.disable_cache or config.cuda_override is not None or config.dump_dir is not None:
            return None
        if not isinstance(record, CudaOptions) or not record.use_cache or self._eager is not None:
            return None  # (an eager function's kernels differ by specialization, not by source)
        from tilemlir import source_cache

        return source_cache.kernel_key(self.fn, target, options, self.out_idx)

    def _cached(self, source_key: str, record: CudaOptions, options: dict) -> "Kernel | None":
        from tilemlir import source_cache

        hit = source_cache.lookup(source_key, options)
        return Kernel(self, record, hit) if hit is not None else None

    def _compile_fresh(self, options: TargetOptions) -> "Kernel":
        start = time.perf_counter()
        frontend = self.frontend()
        python_seconds = time.perf_counter() - start  # the AST -> tile IR part (0 when built before)
        result = _driver().compile_module(frontend.module(), frontend.info, options)
        seconds = {"python": python_seconds, **result.compile_seconds}
        return Kernel(self, options, result.kernel, result.stage_ir, seconds)

    @_user_facing
    def __call__(self, *args, **kwargs):
        """A factory's compiled `Kernel` for these compile-time values; a kernel's launch on these arrays (compiled
        on first use); an eager function's outputs (specialized and compiled for these arguments)."""
        if compiling():
            return _traced_jit_call(self, args, kwargs)
        if self.kind == "factory":
            return self.instantiate(*args, **kwargs).compile()
        if self.kind == "eager":
            return self._eager_call(args, kwargs)
        return self.compile()(*args, **kwargs)


def _traced_jit_call(function: JitFunction, args: tuple, kwargs: dict):
    """`function(*args, **kwargs)` as torch.compile's trace sees it: compiling runs outside the trace
    (`_compile_for_trace`), the compiled kernel's call is its custom op (tilemlir.runtime.torch_ops)."""
    if _is_factory_for_trace(function.trace_key):
        return getattr(_TRACED_KERNELS, _compile_for_trace(function.trace_key, args, kwargs))
    return getattr(_TRACED_KERNELS, _compile_for_trace(function.trace_key, (), {}))(*args, **kwargs)


class _TracedKernels:
    """The kernels `_compile_for_trace` made, as attributes named by their launcher's trace key: a trace reads
    an attribute when it is asked for (a dict it read before would not show a kernel added later)."""


_TRACED_KERNELS = _TracedKernels()


def _is_factory_for_trace(key: str) -> bool:
    """Whether the JitFunction tracked as `key` is a factory (run by Dynamo, not traced: it may read the source)."""
    return lookup(key).kind == "factory"


def _compile_for_trace(key: str, args: tuple, kwargs: dict) -> str:
    """Compile the JitFunction tracked as `key` (a factory for `args`, `kwargs`) outside the trace; the name of
    the compiled kernel in `_TRACED_KERNELS`."""
    function = lookup(key)
    if function.kind == "eager":
        raise CompileError(f"'{function.fn.__name__}' is an eager kernel, specialized on its tensor arguments, "
                           "which torch.compile's trace does not have: compile it outside the compiled function, "
                           f"`kernel = {function.fn.__name__}.compile(...)`, and call `kernel` inside it",
                           function._def_location())
    kernel = function.instantiate(*args, **kwargs).compile() if function.kind == "factory" else function.compile()
    setattr(_TRACED_KERNELS, kernel.compiled.trace_key, kernel)
    return kernel.compiled.trace_key


# What torch._dynamo.assume_constant_result sets (without importing torch): Dynamo runs these, not traces them.
_is_factory_for_trace._dynamo_marked_constant = True
_compile_for_trace._dynamo_marked_constant = True

_CPU_OPTIONS = frozenset(f.name for f in fields(CpuOptions))


def _interpreted_options(target: str, options: dict, level: str) -> dict:
    """The CPU options TILEMLIR_INTERPRET compiles with instead of `options` (checked for `target`): the CUDA
    target's own (arch, fmad, use_cache, 32-bit index math) are dropped, and the knob's level is used unless
    a CPU compile asked for one."""
    kept = {}
    for name, value in options.items():
        if name in _CPU_OPTIONS and not (name == "index_bits" and value == 32):
            kept[name] = value
        else:
            log.debug("TILEMLIR_INTERPRET: option %s=%r has no meaning on the CPU target, ignored", name, value)
    kept.setdefault("level", level)
    return kept


def _log_compile(kernel: "Kernel", cache: str, seconds: float) -> None:
    """The one INFO line of a compile on `tilemlir.compile` (`cache`: what the source-level cache did);
    TILEMLIR_LOG_COMPILES=1 shows it on stderr."""
    if settings().log_compiles:
        _show_compile_log()
    if not compile_log.isEnabledFor(logging.INFO):
        return
    where = f"cuda {kernel.arch}" if kernel.target == "cuda" else f"cpu ({kernel.level} level)"
    stages = ", ".join(f"{stage} {t * 1e3:.1f} ms" for stage, t in kernel.compile_seconds.items())
    compile_log.info("compiled kernel '%s' for %s: %s, %.1f ms%s", kernel.name, where, cache, seconds * 1e3,
                     f" ({stages})" if stages else "")


@functools.cache
def _show_compile_log() -> None:
    """Turn the compile log on (once): INFO level, and a stderr handler unless logging already has one."""
    compile_log.setLevel(logging.INFO)
    if not compile_log.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        compile_log.addHandler(handler)


def _is_array(value: Any) -> bool:
    """Whether `value` is an array (numpy, torch, CuPy, ...): what a kernel takes and a factory does not."""
    return any(hasattr(value, a) for a in ("__dlpack__", "__cuda_array_interface__", "__array_interface__"))


def _array_to_factory_message(factory: str, arrays: list[tuple[str, Any]]) -> str:
    name, value = arrays[0]
    shape = getattr(value, "shape", None)
    shown = f"{type(value).__module__}.{type(value).__name__}"
    if shape is not None:
        shown += f" of shape {tuple(shape)}"
    return (f"'{factory}' is a kernel factory: its parameters are compile-time values (ints, floats, strings, dtypes, "
            f"tuples), but parameter '{name}' got an array ({shown}); call the factory with its compile-time "
            f"values to get the kernel, then call the kernel with the arrays: `kernel = {factory}(...)`, "
            "`kernel(x, ...)`")


class Kernel:
    """A compiled kernel: call it to launch; `.ir(stage)` shows its IR; `.info` its signature.

    The same object whether this process compiled it or loaded it from the
    source-level disk cache (then `stage_ir` is empty and `.ir(stage)`
    lowers the frontend IR on demand). `compiled` is the launchable kernel:
    a `tilemlir.runtime.CompiledKernel` (CUDA) or a CPU backend `CpuKernel`.
    """

    def __init__(self, function: JitFunction, options: TargetOptions, compiled: Any,
                 stage_ir: dict[str, str] | None = None, compile_seconds: dict[str, float] | None = None):
        self._function = function
        self.options = options
        self.compiled = compiled
        self.stage_ir = dict(stage_ir or {})
        self.compile_seconds = dict(compile_seconds or {})

    @property
    def target(self) -> str:
        """"cuda" or "cpu"."""
        return "cuda" if isinstance(self.options, CudaOptions) else "cpu"

    @property
    def _frontend(self) -> FrontendResult:
        # Built on demand: a kernel loaded from the source-level disk cache has not run the frontend.
        return self._function.frontend()

    @property
    def info(self) -> KernelInfo:
        """The frontend's signature (`tilemlir.frontend.info.KernelInfo`): parameters, symbols, grid, threads."""
        return self._frontend.info

    @property
    def signature(self):
        """The runtime's `KernelSignature`: parameters, dtypes, shapes, outputs."""
        return self.compiled.signature

    @property
    def name(self) -> str:
        """The kernel's name: its `def`'s."""
        return self.signature.name

    @_user_facing
    def ir(self, stage: str = FRONTEND, debuginfo: bool = False) -> str:
        """The IR text after `stage` ("frontend", "thread" or "final"), as `tilemlir.lower` gives it."""
        _check_stage(stage)
        if stage == FRONTEND:
            return self._frontend.ir(debuginfo)
        if stage in self.stage_ir:
            return self.stage_ir[stage]
        if self.stage_ir:
            raise CompileError(
                f"stage '{stage}' is not part of this kernel's compilation (it has: {', '.join(self.stage_ir)})"
            )
        return _driver().lower_module(self._frontend.module(), stage, self.options)

    def as_torch_op(self):
        """This kernel as a torch custom op, `torch.ops.tilemlir.<name>_<hash>.default` (an `OpOverload`):
        what a call inside a `torch.compile`d function becomes (docs/api.md, "torch.compile and CUDA graphs")."""
        return self.compiled.as_torch_op()

    def __call__(self, *args, **kwargs):
        """Launch on the inputs (the parameters not in `out_idx`, in order); returns the outputs."""
        try:
            return self.compiled(*args, **kwargs)
        except (LaunchError, DeviceAssertionError) as exc:  # inline, not @_user_facing: a launch is on the hot path
            if settings().traceback:
                raise
            raise exc.with_traceback(None)  # noqa: B904 - the same exception, its internal frames dropped

    # CUDA kernels.

    def cuda_source(self) -> str:
        """The CUDA C++ source NVRTC compiled (CUDA kernels)."""
        return self._cuda("cuda_source").cuda_source()

    @property
    def cubin(self) -> bytes:
        """The compiled cubin (CUDA kernels)."""
        return self._cuda("cubin").cubin

    @property
    def arch(self) -> str:
        """The arch the cubin is for, e.g. "sm_90a" (CUDA kernels)."""
        return self._cuda("arch").arch

    @property
    def override_file(self) -> str:
        """The TILEMLIR_CUDA_OVERRIDE file name that replaces this kernel's generated source."""
        return self._cuda("override_file").override_file

    def export(self, directory: str | Path) -> Path:
        """Write the kernel as a directory that `tilemlir.runtime.load` reads without MLIR."""
        return self._cuda("export").export(directory)

    def with_cuda_source(self, source: str, **options):
        """A runtime kernel built from hand-edited CUDA `source` with this kernel's signature."""
        return self._cuda("with_cuda_source").with_cuda_source(source, **options)

    def _cuda(self, member: str):
        if self.target != "cuda":
            raise AttributeError(f"'{member}' is a CUDA kernel's; kernel '{self.name}' is compiled for {self.target}")
        return self.compiled

    # CPU kernels.

    @property
    def level(self) -> str:
        """"tile" or "thread": what the CPU kernel runs (CPU kernels)."""
        return self._cpu("level").level

    @property
    def llvm_ir(self) -> str:
        """The LLVM IR handed to llvmlite (before its optimizations)."""
        return self._cpu("llvm_ir").llvm_ir

    def _cpu(self, member: str):
        if self.target != "cpu":
            raise AttributeError(f"'{member}' is a CPU kernel's; kernel '{self.name}' is compiled for {self.target}")
        return self.compiled

    def __repr__(self) -> str:
        return f"<tilemlir.Kernel '{self.name}' target={self.target}>"


def jit(fn: Callable | None = None, *, out_idx=None, target: str | None = None, pass_configs: dict | None = None,
        **options):
    """Decorate a kernel function or a kernel factory (see `JitFunction`).

    `out_idx` (an int or a list, negative counting from the end) names the
    tensor parameters the runtime allocates and returns; `target` and the
    other keyword options are passed on to `compile`. `pass_configs` takes
    TileLang's `{PassConfigKey.X: value}` (tilemlir.pass_configs): the keys
    with a meaning here become options (an explicit option wins).
    """
    def decorate(f: Callable) -> JitFunction:
        code = getattr(f, "__code__", None)
        where = SourceLocation(code.co_filename, code.co_firstlineno, 1) if code else None
        own = _drop_tilelang_keywords(options, where)
        known = known_options()
        unknown = sorted(set(own) - set(known))
        if unknown:
            raise CompileError(f"unknown option(s) for tilemlir.jit: {', '.join(unknown)} (known: "
                               f"{', '.join(['out_idx', 'target', 'pass_configs', *known])})", where)
        merged = {**options_from_pass_configs(pass_configs, where), **own}
        return JitFunction(f, out_idx, _jit_target(target, where), merged)

    return decorate if fn is None else decorate(fn)


# TileLang's `jit` keywords that choose how TileLang builds and loads a kernel: tilemlir has its own way.
_TILELANG_EXECUTION_BACKENDS = (None, "auto", "dlpack", "ctypes", "cython", "nvrtc", "tvm_ffi", "torch", "cutedsl")
_TILELANG_JIT_KEYWORDS = {
    "execution_backend": "tilemlir launches through its own runtime",
    "target_host": "tilemlir's host code is Python",
    "verbose": "tilemlir logs on the `tilemlir` loggers",
    "debug_root_path": "use TILEMLIR_DUMP_DIR to keep the IR and CUDA",
    "compile_flags": "tilemlir passes its own NVRTC flags",
}


def _drop_tilelang_keywords(options: dict, where: SourceLocation | None) -> dict:
    """`options` without TileLang's `jit` keywords (checked, then ignored with a debug line each)."""
    backend = options.get("execution_backend")
    if backend not in _TILELANG_EXECUTION_BACKENDS:
        raise CompileError(f"unknown execution_backend {backend!r} (TileLang's: "
                           f"{', '.join(map(repr, _TILELANG_EXECUTION_BACKENDS[1:]))})", where)
    kept = {}
    for key, value in options.items():
        if key in _TILELANG_JIT_KEYWORDS:
            log.debug("jit keyword %s=%r ignored: %s", key, value, _TILELANG_JIT_KEYWORDS[key])
        else:
            kept[key] = value
    return kept


def _jit_target(target: Any, where: SourceLocation | None) -> str | None:
    """tilemlir's target for `jit(target=...)`; TileLang's "auto" is the default target."""
    if target is None or target == "auto":
        return None
    if target in ("cuda", "cpu"):
        return target
    raise CompileError(f"target {target!r} is not supported: tilemlir compiles for 'cuda' and "
                       "'cpu' (the exact reference backend)", where)


def _kernel_function(fn) -> JitFunction:
    if isinstance(fn, Kernel):
        raise TypeError("pass the kernel function, not a compiled Kernel (use kernel.ir(stage) for that)")
    if not isinstance(fn, JitFunction):
        fn = JitFunction(fn)
    return fn


@_user_facing
def compile(fn, target: str = DEFAULT_TARGET, **options) -> Kernel:  # noqa: A001 - the public name
    """Compile kernel function `fn` (decorated or not) for `target` ("cuda" or "cpu")."""
    return _kernel_function(fn).compile(target, **options)


@_user_facing
def lower(fn, stage: str = FRONTEND, debuginfo: bool = False, target: str | None = None, **options) -> str:
    """The IR text of kernel function `fn` after `stage` ("frontend", "thread" or "final"), lowered as
    `tilemlir.compile(fn, target, **options)` lowers it (e.g. wgmma or mma.sync, TMA or cp.async).

    The text parses in `tile-opt`; `debuginfo=True` includes the `loc(...)` of every op.
    """
    _check_stage(stage)
    function = _kernel_function(fn)
    record = options_for(target or function.target or DEFAULT_TARGET, {**function.options, **options})
    frontend = function.frontend()
    if stage == FRONTEND:
        return frontend.ir(debuginfo)
    return _driver().lower_module(frontend.module(), stage, record)


__all__ = ["jit", "compile", "lower", "JitFunction", "Kernel", "FrontendResult", "known_stages"]
