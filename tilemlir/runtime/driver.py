"""The CUDA driver API, through cuda.bindings.driver, with every result checked.

Imported only when something is launched (or the current arch is asked
for), so `import tilemlir.runtime` stays cheap and works without a GPU.
Kernels run in the primary context of the current device, the one PyTorch
and CuPy use, so their streams and memory work with our launches.

The two calls made at every launch, cuCtxGetCurrent and cuLaunchKernel, go
through ctypes on libcuda.so.1 instead (`raw()`): cuda.bindings' wrapper
costs several microseconds a launch. They are called without ctypes
argtypes, whose per-argument conversion costs more than the call itself, so
callers pass small ints (grid, block, shared bytes) as Python ints and every
64-bit value (handles, pointers) as a ctypes object.
"""

from __future__ import annotations

import ctypes
import logging
from typing import Any, Callable, NamedTuple

from tilemlir.diagnostics import LaunchError
from tilemlir.hardware import MAX_STATIC_SHARED_BYTES
from tilemlir.runtime.checks import HOST
from tilemlir.runtime.tensor_map import ENCODE_ARGTYPES

log = logging.getLogger("tilemlir.runtime")

_cuda: Any = None
_unusable: LaunchError | None = None  # why the driver could not be initialized, to fail fast next time
_context_devices: dict[int, int] = {}  # current-context handle -> device ordinal
_streams: dict[int, Any] = {}  # stream handle -> CUstream object, to skip a conversion per launch


def cuda() -> Any:
    """The initialized `cuda.bindings.driver` module; LaunchError when there is no usable driver."""
    global _cuda, _unusable
    if _cuda is None:
        if _unusable is not None:
            raise LaunchError(str(_unusable))
        try:
            from cuda.bindings import driver

            (err,) = driver.cuInit(0)
        except Exception as exc:  # no libcuda.so: the loader raises its own error types
            _unusable = LaunchError(f"no usable CUDA driver ({type(exc).__name__}: {exc}); GPU kernels need an "
                                    "NVIDIA GPU and driver; on a machine without one, compile with target='cpu'")
            raise LaunchError(str(_unusable)) from None
        if int(err) != 0:
            _unusable = LaunchError(f"cuInit failed: {_error_text(driver, err)}; is an NVIDIA GPU visible?")
            raise LaunchError(str(_unusable))
        _cuda = driver
    return _cuda


def _error_text(driver: Any, err: Any) -> str:
    name = driver.cuGetErrorName(err)[1]
    text = driver.cuGetErrorString(err)[1]
    decode = lambda b: b.decode() if isinstance(b, bytes) else str(b)  # noqa: E731
    return f"{decode(name)} ({decode(text)})"


def check(result: tuple, what: str) -> Any:
    """`result` of a cuda.bindings call: its value, or LaunchError naming the call and the error."""
    err = result[0]
    if int(err) != 0:
        raise LaunchError(f"{what} failed: {_error_text(_cuda, err)}")
    return result[1] if len(result) == 2 else result[1:] if len(result) > 2 else None


def current() -> tuple[int, int]:
    """(context handle, device ordinal) of the current context; without one,
    device 0's primary context becomes current (as the CUDA runtime does)."""
    drv = _cuda or cuda()
    ctx = int(check(drv.cuCtxGetCurrent(), "cuCtxGetCurrent"))
    device = _context_devices.get(ctx)
    if device is None:
        ctx, device = _adopt_context(drv, ctx)
    return ctx, device


def current_device() -> int:
    return current()[1]


def _adopt_context(drv: Any, ctx: int) -> tuple[int, int]:
    if ctx == 0:
        device = check(drv.cuDeviceGet(0), "cuDeviceGet(0)")
        primary = check(drv.cuDevicePrimaryCtxRetain(device), "cuDevicePrimaryCtxRetain")
        check(drv.cuCtxSetCurrent(primary), "cuCtxSetCurrent")
        ctx = int(primary)
        log.debug("no current CUDA context; made device 0's primary context current")
    ordinal = int(check(drv.cuCtxGetDevice(), "cuCtxGetDevice"))
    _context_devices[ctx] = ordinal
    return ctx, ordinal


def device_attribute(device: int, name: str) -> int:
    drv = cuda()
    attribute = getattr(drv.CUdevice_attribute, name)
    return int(check(drv.cuDeviceGetAttribute(attribute, device), f"cuDeviceGetAttribute({name})"))


def current_arch() -> str:
    """'sm_90a' style name of the current device's arch (arch-specific 'a' from sm_90 on)."""
    device = current_device()
    major = device_attribute(device, "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR")
    minor = device_attribute(device, "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR")
    return f"sm_{major}{minor}{'a' if major >= 9 else ''}"


def pointer_device(address: int) -> int:
    """Device ordinal of a device pointer; HOST for memory the driver does not know."""
    drv = _cuda or cuda()
    err, ordinal = drv.cuPointerGetAttribute(drv.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, address)
    return int(ordinal) if int(err) == 0 else HOST


class RawDriver(NamedTuple):
    """libcuda.so.1 entry points as raw ctypes functions returning the CUresult as an int."""

    get_context: Callable[..., int]  # cuCtxGetCurrent(byref(c_void_p))
    launch: Callable[..., int]  # cuLaunchKernel(c_void_p function, gx, gy, gz, bx, by, bz, shared,
    #                             c_void_p stream, c_void_p params, None)
    encode_tiled: Callable[..., int] | None = None  # cuTensorMapEncodeTiled, with tensor_map.ENCODE_ARGTYPES;
    #                                                 None: a driver older than CUDA 12 (no TMA)


_raw: RawDriver | None = None


def raw() -> RawDriver:
    """The ctypes entry points; call after `cuda()` has initialized the driver."""
    global _raw
    if _raw is None:
        try:
            library = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise LaunchError(f"cannot load libcuda.so.1 through ctypes: {exc}") from None
        _raw = RawDriver(library.cuCtxGetCurrent, library.cuLaunchKernel, _encode_tiled(library))
    return _raw


def _encode_tiled(library: ctypes.CDLL) -> Callable[..., int] | None:
    function = getattr(library, "cuTensorMapEncodeTiled", None)
    if function is not None:
        function.argtypes = ENCODE_ARGTYPES
        function.restype = ctypes.c_int
    return function


def check_code(code: int, what: str) -> None:
    """LaunchError for a nonzero CUresult `code` from a `raw()` call."""
    if code:
        check((_cuda.CUresult(code),), what)


def stream_object(handle: int) -> Any:
    stream = _streams.get(handle)
    if stream is None:
        stream = _streams[handle] = _cuda.CUstream(handle)
    return stream


def stream_wait(waiter: int, producer: int) -> None:
    """Order work on stream `waiter` after the work queued so far on stream `producer`."""
    drv = _cuda
    event = check(drv.cuEventCreate(drv.CUevent_flags.CU_EVENT_DISABLE_TIMING), "cuEventCreate")
    try:
        check(drv.cuEventRecord(event, stream_object(producer)), "cuEventRecord")
        check(drv.cuStreamWaitEvent(stream_object(waiter), event, 0), "cuStreamWaitEvent")
    finally:
        drv.cuEventDestroy(event)


class LoadedModule:
    """A cubin loaded into the current context, with its kernel function ready to launch."""

    def __init__(self, cubin: bytes, kernel_name: str, shared_bytes: int | None, arch: str):
        drv = _cuda or cuda()
        self.context, self.device = current()
        err, module = drv.cuModuleLoadData(cubin)
        if int(err) != 0:
            raise LaunchError(f"loading the cubin of {kernel_name!r} (built for {arch}) on cuda:{self.device} "
                              f"(arch {current_arch()}) failed: {_error_text(drv, err)}")
        self.module = module
        self.function = check(drv.cuModuleGetFunction(module, kernel_name.encode()),
                              f"cuModuleGetFunction({kernel_name!r})")
        self.handle = ctypes.c_void_p(int(self.function))  # for raw().launch
        static = int(check(drv.cuFuncGetAttribute(
            drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, self.function), "cuFuncGetAttribute"))
        optin = device_attribute(self.device, "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")
        self.max_dynamic_shared = optin - static
        wanted = self.max_dynamic_shared if shared_bytes is None else shared_bytes
        if shared_bytes is not None and shared_bytes > self.max_dynamic_shared:
            raise LaunchError(f"kernel {kernel_name!r} needs {shared_bytes} bytes of dynamic shared memory; "
                              f"cuda:{self.device} allows {self.max_dynamic_shared} ({optin} minus {static} static)")
        if wanted > MAX_STATIC_SHARED_BYTES - static:
            check(drv.cuFuncSetAttribute(
                self.function, drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, wanted),
                "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")
        self.launched = False  # the first launch logs its path
        self._unload = (drv, module, self.context)
        log.debug("loaded %s on cuda:%d (max dynamic shared %d bytes)", kernel_name, self.device, wanted)

    def __del__(self) -> None:
        drv, module, context = getattr(self, "_unload", (None, None, None))
        if drv is None:
            return
        try:  # best effort: at interpreter exit the driver may already be gone
            drv.cuCtxPushCurrent(drv.CUcontext(context))
            drv.cuModuleUnload(module)
            drv.cuCtxPopCurrent()
        except Exception:
            pass
