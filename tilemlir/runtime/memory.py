"""Device arrays to and from host numpy arrays, and byte fills, through the CUDA driver.

Works for any array `arrays.describe` reads (torch CUDA tensors, CuPy,
anything with ``__cuda_array_interface__`` or a CUDA ``__dlpack__``),
bfloat16 and float8 included (as ml_dtypes arrays on the host). Every call
synchronizes the current context first, so work queued on any stream that
writes the array has finished. Imports no MLIR.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from tilemlir.diagnostics import LaunchError
from tilemlir.runtime import driver
from tilemlir.runtime.arrays import describe
from tilemlir.runtime.checks import ArrayDesc
from tilemlir.runtime.checks import _contiguous as row_major_strides
from tilemlir.runtime.dtypes import DTYPES

_ML_DTYPES = {"bfloat16": "bfloat16", "float8_e4m3": "float8_e4m3fn", "float8_e5m2": "float8_e5m2"}


def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype of a runtime dtype name (ml_dtypes' for bfloat16 and float8)."""
    if name in _ML_DTYPES:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, _ML_DTYPES[name]))
    if name not in DTYPES:
        raise LaunchError(f"no numpy dtype for {name!r} (known: {', '.join(DTYPES)})")
    return np.dtype(name)


def _device_array(array: Any, name: str) -> tuple[ArrayDesc, np.dtype]:
    desc = describe(array, name)
    if desc.dtype not in DTYPES:
        raise LaunchError(f"{name}: unsupported element type ({desc.dtype})")
    driver.current()
    driver.check(driver.cuda().cuCtxSynchronize(), "cuCtxSynchronize")
    return desc, numpy_dtype(desc.dtype)


def _span(desc: ArrayDesc) -> int:
    """Elements from the first to one past the last element the array covers."""
    if desc.strides is None or 0 in desc.shape:
        return math.prod(desc.shape)
    if any(s < 0 for s in desc.strides):
        raise LaunchError("arrays with negative strides are not supported")
    return 1 + sum((d - 1) * s for d, s in zip(desc.shape, desc.strides))


def to_host(array: Any, name: str = "array") -> np.ndarray:
    """A new host copy of device array `array`, with its shape (strides are not kept)."""
    desc, dtype = _device_array(array, name)
    span = _span(desc)
    buffer = np.empty(span, dtype)
    if span:
        driver.check(driver.cuda().cuMemcpyDtoH(buffer.ctypes.data, desc.address, span * dtype.itemsize),
                     f"cuMemcpyDtoH ({name})")
    if desc.strides is None:
        return buffer.reshape(desc.shape)
    strides = tuple(s * dtype.itemsize for s in desc.strides)
    return np.lib.stride_tricks.as_strided(buffer, desc.shape, strides).copy()


def _contiguous(array: Any, name: str, what: str) -> tuple[ArrayDesc, np.dtype]:
    desc, dtype = _device_array(array, name)
    if desc.strides is not None and desc.strides != row_major_strides(desc.shape):
        raise LaunchError(f"{name}: {what} needs a C-contiguous array, got strides {desc.strides}")
    return desc, dtype


def fill_bytes(array: Any, byte: int, name: str = "array") -> None:
    """Set every byte of C-contiguous device array `array` to `byte` (0xFF: NaN floats, -1 integers)."""
    desc, dtype = _contiguous(array, name, "a byte fill")
    count = math.prod(desc.shape) * dtype.itemsize
    if count:
        driver.check(driver.cuda().cuMemsetD8(desc.address, byte, count), f"cuMemsetD8 ({name})")


def from_host(array: Any, host: np.ndarray, name: str = "array") -> None:
    """Copy host array `host` (same shape and element size) into C-contiguous device array `array`."""
    desc, dtype = _contiguous(array, name, "a copy from the host")
    host = np.ascontiguousarray(host)
    if tuple(host.shape) != tuple(desc.shape) or host.dtype.itemsize != dtype.itemsize:
        raise LaunchError(f"{name}: cannot copy a {host.dtype} array of shape {host.shape} into a {desc.dtype} "
                          f"array of shape {tuple(desc.shape)}")
    if host.nbytes:
        driver.check(driver.cuda().cuMemcpyHtoD(desc.address, host.ctypes.data, host.nbytes), f"cuMemcpyHtoD ({name})")
