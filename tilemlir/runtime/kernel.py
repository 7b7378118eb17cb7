"""`CompiledKernel`: a signature, its CUDA source and cubin, callable on device arrays.

A call checks the arguments (`ArgumentBinder`), allocates the `out_idx`
outputs, evaluates the grid from the bound symbols and launches on the
current stream: the `stream=` argument when given, else PyTorch's current
stream when an argument is a torch tensor, else the stream an argument's
`__cuda_array_interface__` names, else the legacy default stream. Arrays
whose interface names another stream are waited for with an event.

Calls on torch tensors take the fast path from the second launch in a CUDA
context on: the same checks in straight-line code, done in C by the native
extension's call plan (`native_call.NativeCall`, through torch's DLPack
exchange API), or, where that cannot serve, by a Python function generated
for this signature (`fastpath.FastCall`, launching through the extension, or
ctypes without a C compiler). Anything
it does not handle, every failing check included, falls through to the
general path below, which raises the LaunchError.

A signature's tensor maps are encoded at each launch from their tensors'
arguments (`tensor_map.TensorMapCache`, one per map, shared with the Python
fast path; the C call plan keeps its own), after the checks and before the
launch, so a tensor TMA cannot describe is a LaunchError naming the map.

Inside a `torch.compile`d function a call is a call of the kernel's torch
custom op (`torch_ops`), whose implementation is `launch`: the same call on
PyTorch's current stream. A launch does no host synchronization and
allocates only through torch (its caching allocator, the graph's pool under
CUDA graph capture), so a torch tensor call can be captured in a CUDA graph.

The kernel only launches: the builder (builder.py) makes every kernel and
hands it the functions that `with_cuda_source` and `export` call, so this
module imports nothing that makes or stores kernels.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

from tilemlir.diagnostics import LaunchError, TilemlirError
from tilemlir.runtime import driver, native
from tilemlir.runtime.arrays import describe
from tilemlir.runtime.checks import ArgumentBinder
from tilemlir.runtime.dtypes import DTYPES
from tilemlir.runtime.fastpath import SLOW, FastCall, available
from tilemlir.runtime.native_call import NativeCall
from tilemlir.runtime.nvrtc import CompileOptions
from tilemlir.runtime.signature import KernelSignature, ScalarParam, TensorParam
from tilemlir.runtime.tensor_map import EncodedMap, TensorMapCache, driver_encode
from tilemlir.runtime.torch_ops import compiling, torch_op, traced_call, track

log = logging.getLogger("tilemlir.runtime")


def override_file_name(source: str, signature: KernelSignature) -> str:
    """The file that replaces generated `source` of kernel `signature` in ``TILEMLIR_CUDA_OVERRIDE``:
    ``<name>-<12 hex digits of the SHA-256 of the source and the signature>.cu``. The hash makes it
    one kernel's: kernels of one name (every factory instance of a `kernel`) get different files, and
    a file made from an older generated source of this kernel no longer applies."""
    digest = hashlib.sha256(source.encode() + b"\0" + signature.to_json().encode()).hexdigest()
    return f"{signature.name}-{digest[:12]}.cu"


class CompiledKernel:
    """A launchable kernel. Thread-safe; modules load lazily, once per CUDA context.

    `override_file` names the ``TILEMLIR_CUDA_OVERRIDE`` file that replaces its generated
    source (`override_file_name`; `build` keeps the generated source's name when it compiled an
    override).

    `build` (`runtime.build`) compiles the source `with_cuda_source` is given, and `export`
    (`builder.export`) writes the kernel's artifact; the builder passes both. A kernel made
    without them launches, and raises TilemlirError from those two methods."""

    def __init__(self, signature: KernelSignature, source: str, cubin: bytes, options: CompileOptions, *,
                 build: Callable[..., "CompiledKernel"] | None = None,
                 export: Callable[["CompiledKernel", Path], Path] | None = None):
        self._signature = signature
        self._source = source
        self._cubin = cubin
        self.options = options
        self._build = build
        self._export = export
        self.override_file = override_file_name(source, signature)
        self._binder = ArgumentBinder(signature)
        inputs = self._binder.inputs
        self._n_inputs = len(inputs)
        self._input_names = tuple(p.name for p in inputs)
        self._tensor_positions = tuple(i for i, p in enumerate(inputs) if isinstance(p, TensorParam))
        self._n_params = len(signature.params)
        self._tensor_params = tuple((pos, signature.input_indices[pos]) for pos in self._tensor_positions)
        param_index = {p.name: i for i, p in enumerate(signature.params)}
        self._map_tensors = tuple(param_index[m.tensor] for m in signature.tensor_maps)
        self._packer = _ParamPacker(signature)
        self._map_caches: tuple[TensorMapCache, ...] | None = None  # made at the first launch (they need the driver)
        self._modules: dict[int, driver.LoadedModule] = {}
        self._lock = threading.Lock()
        self._constant_shared = signature.exprs.constant_shared  # None: an expression, known per call
        self._fast: NativeCall | FastCall | None = None
        self._fast_unavailable = False
        self.trace_key = track(self)  # how a torch.compile trace finds this kernel (torch_ops.op_name)

    # -- what it is ------------------------------------------------------------------
    @property
    def signature(self) -> KernelSignature:
        return self._signature

    @property
    def name(self) -> str:
        return self._signature.name

    @property
    def cubin(self) -> bytes:
        return self._cubin

    @property
    def arch(self) -> str:
        return self.options.arch

    def cuda_source(self) -> str:
        return self._source

    def __repr__(self) -> str:
        return f"<CompiledKernel {self.name} for {self.arch}>"

    # -- hand tuning and artifacts ---------------------------------------------------
    def with_cuda_source(self, source: str, *, fmad: bool | None = None, fast_math: bool | None = None,
                         use_cache: bool = True) -> "CompiledKernel":
        """A new kernel compiled from edited `source`, with this kernel's signature
        (same argument checks, grid, outputs) and options unless overridden. Its
        `extern "C" __global__` function must keep this kernel's name and parameters."""
        build = self._made_with(self._build, "with_cuda_source")
        tuned = build(source, self._signature, arch=self.options.arch,
                      fmad=self.options.fmad if fmad is None else fmad,
                      fast_math=self.options.fast_math if fast_math is None else fast_math,
                      use_cache=use_cache, apply_override=False, origin="the source given to with_cuda_source")
        tuned.override_file = self.override_file  # still the file that replaces the generated source
        return tuned

    def export(self, directory: str | Path) -> Path:
        """Write `<name>.cu`, `<name>.cubin`, `signature.json`, `build.json` and a
        standalone `<name>_host.cu` launcher into `directory`; returns it."""
        return self._made_with(self._export, "export")(self, Path(directory))

    def _made_with(self, function: Callable | None, method: str) -> Callable:
        if function is None:
            raise TilemlirError(f"{method}: kernel {self.name!r} was made without the runtime's builder; "
                                "make it with tilemlir.runtime.build or tilemlir.runtime.load")
        return function

    # -- launching -------------------------------------------------------------------
    def __call__(self, *args: Any, stream: Any = None) -> Any:
        if compiling():  # traced by torch.compile: a call of this kernel's custom op (torch_ops)
            return traced_call(self, args, stream)
        fast = self._fast
        if fast is not None:
            result = fast.call(args, stream)
            if result is not SLOW:
                return result
        return self._call(args, stream)

    def launch(self, args: tuple) -> Any:
        """The call on PyTorch's current stream, never through the custom op (the op's implementation).
        It repeats `__call__`'s dispatch rather than sharing a helper: one Python frame less on every launch."""
        fast = self._fast
        if fast is not None:
            result = fast.call(args, None)
            if result is not SLOW:
                return result
        return self._call(args, None)

    # -- torch.compile ---------------------------------------------------------------
    device_type = "cuda"

    def identity(self) -> bytes:
        """What this kernel runs, for its custom op's name: the cubin."""
        return self._cubin

    def as_torch_op(self) -> Any:
        """This kernel as a torch custom op (`torch.ops.tilemlir.<name>_<hash>.default`, tilemlir.runtime.torch_ops)."""
        return torch_op(self)

    def _call(self, args: tuple, stream: Any) -> Any:
        """The general path: any array type, every check with its message."""
        binder = self._binder
        if len(args) != self._n_inputs:
            binder.check_count(args)
        explicit = None if stream is None else stream_handle(stream)
        values = list(args)
        names = self._input_names
        for pos in self._tensor_positions:
            values[pos] = describe(args[pos], names[pos], None, explicit or 1)
        env = binder.bind(values, None)
        context, device = driver.current()
        module = self._modules.get(context) or self._load(context)
        pointers, producers = self._gather(values, device)
        outputs = self._allocate(binder.output_shapes(env), args, device) if self._signature.out_idx else ()
        grid = binder.grid(env)
        shared = binder.shared_bytes(env)
        if shared > module.max_dynamic_shared:
            raise LaunchError(f"kernel {self.name!r} asks for {shared} bytes of dynamic shared memory; "
                              f"cuda:{device} allows {module.max_dynamic_shared}")
        torch = self._torch_arguments(args)
        handle = explicit if explicit is not None else _current_stream(torch, producers, device)
        if producers:
            for producer in producers:
                if _legacy_as_null(producer) != handle:
                    driver.stream_wait(handle, producer)
        if not module.launched:
            self._log_launch_path(args, device, handle, grid, shared)
            module.launched = True
        if grid[0] and grid[1] and grid[2]:
            for index, _, pointer in outputs:
                pointers[index] = pointer
            maps = self._tensor_maps(pointers, env) if self._signature.tensor_maps else ()
            self._launch(module, grid, shared, handle, pointers, env, maps)
            if torch is not None and not self._fast_unavailable:
                self._enable_fast_path(torch, context, module, device)
        if not outputs:
            return None
        return outputs[0][1] if len(outputs) == 1 else tuple(array for _, array, _ in outputs)

    def _gather(self, values: list[Any], device: int) -> tuple[list[int], list[int] | None]:
        """Data pointers by param index and the producer streams of the inputs; checks each input's device."""
        pointers = [0] * self._n_params
        producers = None
        for pos, index in self._tensor_params:
            desc = values[pos]
            if desc.device != device:
                desc = self._check_device(values, pos, device)
            if desc.stream is not None:
                producers = (producers or []) + [desc.stream]
            pointers[index] = desc.address
        return pointers, producers

    def _tensor_maps(self, pointers: list[int], env: list[Any]) -> list[EncodedMap]:
        """The encoded map of each `tensor_maps` entry for this launch (LaunchError naming a map that cannot be)."""
        caches = self.map_caches()
        return [cache.get(pointers[index], shape_of(self._signature.params[index], self._signature, env))
                for cache, index in zip(caches, self._map_tensors)]

    def map_caches(self) -> tuple[TensorMapCache, ...]:
        """One cache per `tensor_maps` entry, shared by every path of this kernel."""
        if self._map_caches is None:
            with self._lock:
                if self._map_caches is None:
                    encode_tiled = driver.raw().encode_tiled
                    if encode_tiled is None:
                        raise LaunchError(f"kernel {self.name!r} takes tensor maps, but this CUDA driver has no "
                                          "cuTensorMapEncodeTiled (TMA needs CUDA 12 or later)")
                    encode = driver_encode(encode_tiled)
                    self._map_caches = tuple(TensorMapCache(m, encode) for m in self._signature.tensor_maps)
        return self._map_caches

    def _check_device(self, values: list[Any], pos: int, device: int) -> Any:
        desc = values[pos]
        if desc.device is None and desc.address:  # array interface: ask the driver where the pointer lives
            values[pos] = desc = desc._replace(device=driver.pointer_device(desc.address))
        self._binder.check_devices(values, device)
        return desc

    def _log_launch_path(self, args: Sequence[Any], device: int, handle: int, grid: tuple, shared: int) -> None:
        kinds = ", ".join(f"{self._input_names[p]}: {type(args[p]).__module__}.{type(args[p]).__name__}"
                          for p in self._tensor_positions)
        log.debug("first launch of %s on cuda:%d: stream %#x, grid %s, block %s, %d B dynamic shared; arrays %s",
                  self.name, device, handle, grid, self._signature.block, shared, kinds or "none")

    def _load(self, context: int) -> driver.LoadedModule:
        with self._lock:
            module = self._modules.get(context)
            if module is None:
                module = driver.LoadedModule(self._cubin, self.name, self._constant_shared, self.arch)
                self._modules[context] = module
        return module

    def _torch_arguments(self, args: Sequence[Any]) -> Any:
        """The torch module when the first array argument is a torch tensor, else None."""
        if self._tensor_positions:
            torch = sys.modules.get("torch")
            if torch is not None and isinstance(args[self._tensor_positions[0]], torch.Tensor):
                return torch
        return None

    def _enable_fast_path(self, torch: Any, context: int, module: driver.LoadedModule, device: int) -> None:
        fast = self._fast
        if fast is None:
            if not available(self._signature, torch):
                self._fast_unavailable = True
                return
            extension = native.load() if len(self._signature.cuda_params) <= native.MAX_PARAMS else None
            raw = driver.raw()
            caches = self.map_caches() if self._signature.tensor_maps else ()
            fast = (NativeCall.create(self._signature, torch, raw, stream_handle, self._launch_failed, extension)
                    or FastCall(self._signature, torch, raw, stream_handle, self._launch_failed, extension, caches))
        if not fast.registered(context):
            fast.register(context, module.handle, device, module.max_dynamic_shared)
        self._fast = fast

    def _allocate(self, shapes: list[tuple[int, tuple[int, ...]]], args: Sequence[Any],
                  device: int) -> list[tuple[int, Any, int]]:
        """(param index, array, data pointer) per output, allocated by the framework of the first array input."""
        if not shapes:
            return []
        allocate = _allocator(args[self._tensor_positions[0]] if self._tensor_positions else None)
        params = self._signature.params
        return [(index, *allocate(shape, DTYPES[params[index].dtype], device, params[index].name))
                for index, shape in shapes]

    def _launch(self, module: driver.LoadedModule, grid: tuple[int, int, int], shared: int, handle: int,
                pointers: list[int], env: list[Any], maps: Sequence[EncodedMap]) -> None:
        block = self._signature.block
        launch = driver.raw().launch
        with self._lock:
            params = ctypes.c_void_p(self._packer.fill(pointers, env, maps))
            code = launch(module.handle, grid[0], grid[1], grid[2], block[0], block[1], block[2], shared,
                          ctypes.c_void_p(handle), params, None)
        if code:
            self._launch_failed(code, grid, shared)

    def _launch_failed(self, code: int, grid: tuple[int, int, int], shared: int) -> None:
        driver.check_code(code, f"launching {self.name!r} with grid {grid}, block {self._signature.block}, "
                                f"{shared} B shared")


def stream_handle(stream: Any) -> int:
    """A raw CUDA stream handle from an int, a torch/CuPy stream, a CUstream, or
    anything with `__cuda_stream__`."""
    if isinstance(stream, int):
        return stream
    for attribute in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
        value = getattr(stream, attribute, None)
        if isinstance(value, int):
            return value
    protocol = getattr(stream, "__cuda_stream__", None)
    if protocol is not None:
        return int(protocol()[1])
    try:
        return int(stream)  # cuda.bindings CUstream
    except (TypeError, ValueError):
        raise LaunchError(f"stream= must be a CUDA stream (int handle, torch/CuPy stream, CUstream), "
                          f"got {type(stream).__name__}") from None


def _current_stream(torch: Any, producers: list[int] | None, device: int) -> int:
    """PyTorch's current stream when the arrays are torch tensors (`torch` not None), else the
    first producer's stream, else the legacy default stream."""
    if torch is not None:
        return _torch_current_stream(torch, device)
    return _legacy_as_null(producers[0]) if producers else 0


def _torch_current_stream(torch: Any, device: int) -> int:
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return raw(device) if raw is not None else torch.cuda.current_stream(device).cuda_stream


def _legacy_as_null(handle: int) -> int:
    return 0 if handle == 1 else handle  # the array interface's 1 is the legacy default stream, handle 0


def shape_of(param: TensorParam, signature: KernelSignature, env: list[Any]) -> tuple[int, ...]:
    """The shape of tensor `param` in a call whose symbols are bound in `env`."""
    return tuple(env[signature.symbols.index(d)] if isinstance(d, str) else d for d in param.shape)


def _allocator(example: Any):
    torch = sys.modules.get("torch")
    module = type(example).__module__ if example is not None else ""
    if (torch is not None and isinstance(example, torch.Tensor)) or (example is None and _importable("torch")):
        return _torch_empty
    if module.startswith("cupy") or (example is None and _importable("cupy")):
        return _cupy_empty
    raise LaunchError(f"cannot allocate outputs next to inputs of type {type(example).__name__}; "
                      "pass torch tensors or CuPy arrays, or pass the output as an argument")


def _importable(name: str) -> bool:
    try:
        __import__(name)
        return True
    except ImportError:
        return False


def _torch_empty(shape: tuple[int, ...], dtype: Any, device: int, name: str) -> tuple[Any, int]:
    import torch

    torch_dtype = getattr(torch, dtype.torch_name, None)
    if torch_dtype is None:
        raise LaunchError(f"output {name!r}: this torch has no dtype {dtype.torch_name}")
    array = torch.empty(shape, dtype=torch_dtype, device=device)
    return array, array.data_ptr()


def _cupy_empty(shape: tuple[int, ...], dtype: Any, device: int, name: str) -> tuple[Any, int]:
    import cupy

    if dtype.typestr is None:
        raise LaunchError(f"output {name!r}: CuPy has no {dtype.name} arrays; pass torch tensors instead")
    with cupy.cuda.Device(device):
        array = cupy.empty(shape, dtype=dtype.name)
    return array, array.data.ptr


class _ParamPacker:
    """The kernel parameter block: one ctypes slot per CUDA parameter and the
    array of their addresses, built once; a launch only stores new values."""

    def __init__(self, signature: KernelSignature):
        env_slot = {name: i for i, name in enumerate(signature.env_names)}
        param_index = {p.name: i for i, p in enumerate(signature.params)}
        map_index = {m.name: i for i, m in enumerate(signature.tensor_maps)}
        symbol_type = ctypes.c_int32 if signature.index_bits == 32 else ctypes.c_int64
        self._slots: list[Any] = []
        pointer_sources, env_sources, map_sources = [], [], []
        for position, name in enumerate(signature.cuda_params):
            index = param_index.get(name)
            param = signature.params[index] if index is not None else None
            if name in map_index:  # the array entry itself points at the map's 128 bytes, set per launch
                slot = None
                map_sources.append((position, map_index[name]))
            elif isinstance(param, TensorParam):
                slot = ctypes.c_void_p()
                pointer_sources.append((slot, index))
            else:
                ctype = DTYPES[param.dtype].scalar_ctype if isinstance(param, ScalarParam) else symbol_type
                slot = ctype()
                env_sources.append((slot, env_slot[name]))
            self._slots.append(slot)
        self._pointer_sources = tuple(pointer_sources)
        self._env_sources = tuple(env_sources)
        self._map_sources = tuple(map_sources)
        self._array = (ctypes.c_void_p * max(len(self._slots), 1))(
            *[0 if s is None else ctypes.addressof(s) for s in self._slots])
        self.address = ctypes.addressof(self._array) if self._slots else 0

    def fill(self, pointers: list[int], env: list[Any], maps: Sequence[Any] = ()) -> int:
        """The parameter block's address with this launch's values: data pointers by param index,
        the expression environment, and the EncodedMap of each tensor map."""
        for slot, index in self._pointer_sources:
            slot.value = pointers[index]
        for slot, index in self._env_sources:
            slot.value = env[index]
        for position, index in self._map_sources:
            self._array[position] = maps[index].address
        return self.address
