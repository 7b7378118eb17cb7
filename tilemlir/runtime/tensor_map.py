"""Tensor maps (TMA descriptors): the `cuTensorMapEncodeTiled` call of one launch, and a cache of its results.

A signature's `tensor_maps` entry (`TensorMapParam`) is a ``const __grid_constant__ CUtensorMap``
kernel parameter derived from one tensor argument. At launch the runtime encodes it from that
argument's data pointer and shape (arguments are C-contiguous, checked before, so the byte strides
follow from the shape) with the entry's box, swizzle and L2 promotion, and passes the 128 bytes by
value (`cuLaunchKernel` copies them from a 128-byte aligned host buffer at the call).

The driver lists dims innermost first: a row-major tensor of shape (d0, ..., dn-1) and a box
(b0, ..., bn-1) are encoded as globalDim (dn-1, ..., d0), boxDim (bn-1, ..., b0), and globalStrides
the byte strides of dims n-2, ..., 0 (the innermost dim's, the element size, is implicit).

The requirements of `cuTensorMapEncodeTiled` (cuda.h, CUDA 13) a call can break, each a
`LaunchError` naming the map, the tensor and the requirement, raised before any launch:
the data pointer 16-byte aligned (interleave none), every dim from 1 to 2**31, every outer byte
stride a multiple of 16 below 2**40. The signature checked the rest (rank 1 to 5, box dims 1 to
256, the inner box a multiple of 16 bytes and within the swizzle width).

`TensorMapCache` keeps the maps it encoded by (data pointer, shape), which with C-contiguity is the
(pointer, shape, strides) the map depends on, so repeated launches on the same tensors encode
nothing; the fast paths look maps up through it (the C call plan keeps its own cache, launch.c).
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any, Callable, NamedTuple

from tilemlir.diagnostics import LaunchError
from tilemlir.runtime.dtypes import DTYPES
from tilemlir.runtime.signature import TensorMapParam

# The kernel parameter's C++ type where cuda.h is not included (NVRTC has no cuda.h): cuda.h's layout
# (CUDA 13 aligns it to 128 bytes, CUDA 12 to 64; the kernel's parameter offsets come from the cubin).
TENSOR_MAP_DECLARATION = """\
#ifndef __cuda_cuda_h__
typedef struct CUtensorMap_st { alignas(128) unsigned long long opaque[16]; } CUtensorMap;
#endif"""

MAP_BYTES = 128  # sizeof(CUtensorMap)
MAP_ALIGN = 128  # of an encoded map in host memory: cuTensorMapEncodeTiled asks 64, cuda.h's type has 128
GLOBAL_ALIGN = 16  # of the data pointer, without interleave
STRIDE_MULTIPLE = 16
MAX_DIM = 2**31
STRIDE_LIMIT = 2**40
CACHE_CAPACITY = 16  # maps kept per TensorMapParam

# CUtensorMapDataType by dtype; the 1-byte floats and bool have none of their own and move as bytes.
DATA_TYPES = {"bool": 0, "int8": 0, "uint8": 0, "float8_e4m3": 0, "float8_e5m2": 0, "int16": 1, "uint16": 1,
              "float16": 6, "bfloat16": 9, "int32": 3, "uint32": 2, "float32": 7, "int64": 5, "uint64": 4,
              "float64": 8}
SWIZZLES = {0: 0, 32: 1, 64: 2, 128: 3}  # bytes -> CUtensorMapSwizzle
L2_PROMOTIONS = {0: 0, 64: 1, 128: 2, 256: 3}  # bytes -> CUtensorMapL2promotion
INTERLEAVES = {"none": 0}  # -> CUtensorMapInterleave
OOB_FILLS = {"zero": 0}  # -> CUtensorMapFloatOOBfill (FLOAT_OOB_FILL_NONE fills zeros)


class EncodeArguments(NamedTuple):
    """The arguments of cuTensorMapEncodeTiled after the map itself, in the driver's order and units."""

    data_type: int
    rank: int
    address: int
    dims: tuple[int, ...]  # innermost first
    strides: tuple[int, ...]  # bytes, of dims 1 .. rank-1 in the driver's order
    box: tuple[int, ...]  # innermost first
    element_strides: tuple[int, ...]
    interleave: int
    swizzle: int
    l2_promotion: int
    oob_fill: int


def encode_arguments(tmap: TensorMapParam, address: int, shape: tuple[int, ...]) -> EncodeArguments:
    """The encode arguments of `tmap` for its tensor at `address` with C-contiguous `shape` (outermost
    first); LaunchError when the call breaks a requirement (module docstring)."""
    problem = requirement_problem(tmap, address, shape)
    if problem is not None:
        raise LaunchError(f"tensor map {tmap.name!r} of argument {tmap.tensor!r}: {problem}")
    return EncodeArguments(
        data_type=DATA_TYPES[tmap.dtype], rank=tmap.rank, address=address, dims=tuple(reversed(shape)),
        strides=tuple(reversed(byte_strides(tmap.dtype, shape)[:-1])), box=tuple(reversed(tmap.box)),
        element_strides=tuple(reversed(tmap.element_strides)), interleave=INTERLEAVES[tmap.interleave],
        swizzle=SWIZZLES[tmap.swizzle], l2_promotion=L2_PROMOTIONS[tmap.l2_promotion],
        oob_fill=OOB_FILLS[tmap.oob_fill])


def byte_strides(dtype: str, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The byte strides of a C-contiguous array of `shape` (outermost first)."""
    strides, stride = [], DTYPES[dtype].itemsize
    for extent in reversed(shape):
        strides.append(stride)
        stride *= extent
    return tuple(reversed(strides))


def requirement_problem(tmap: TensorMapParam, address: int, shape: tuple[int, ...]) -> str | None:
    """Which requirement of cuTensorMapEncodeTiled the tensor at `address` of `shape` breaks, or None."""
    if len(shape) != tmap.rank:
        return f"expected a tensor of rank {tmap.rank}, got shape {tuple(shape)}"
    for axis, extent in enumerate(shape):
        if not 1 <= extent <= MAX_DIM:
            empty = " (a tensor map cannot describe an empty tensor)" if extent == 0 else ""
            return f"dim {axis} is {extent}; each dim must be from 1 to 2**31{empty}"
    if address % GLOBAL_ALIGN:
        return (f"data pointer {address:#x} is not {GLOBAL_ALIGN}-byte aligned, which TMA needs "
                "(a slice at an odd offset? copy it)")
    for axis, stride in enumerate(byte_strides(tmap.dtype, shape)[:-1]):
        if stride % STRIDE_MULTIPLE or stride >= STRIDE_LIMIT:
            return (f"the stride of dim {axis} is {stride} bytes (shape {tuple(shape)}, {tmap.dtype}); TMA needs "
                    f"a multiple of {STRIDE_MULTIPLE} below 2**40 (pad the rows to a multiple of "
                    f"{STRIDE_MULTIPLE // DTYPES[tmap.dtype].itemsize} elements)")
    return None


# The driver entry point's signature: (CUtensorMap*, CUtensorMapDataType, rank, void* address,
# const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box, const cuuint32_t* element strides,
# interleave, swizzle, l2 promotion, oob fill) -> CUresult
ENCODE_ARGTYPES = (ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                   ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int)

Encode = Callable[[EncodeArguments, int], int]  # (arguments, address of the 128-byte map) -> CUresult


def driver_encode(encode_tiled: Any) -> Encode:
    """An `Encode` calling the ctypes function `encode_tiled` (driver.raw().encode_tiled)."""

    def encode(args: EncodeArguments, out: int) -> int:
        dims = (ctypes.c_uint64 * args.rank)(*args.dims)
        strides = (ctypes.c_uint64 * max(args.rank - 1, 1))(*args.strides)
        box = (ctypes.c_uint32 * args.rank)(*args.box)
        element_strides = (ctypes.c_uint32 * args.rank)(*args.element_strides)
        return encode_tiled(out, args.data_type, args.rank, args.address, ctypes.addressof(dims),
                            ctypes.addressof(strides), ctypes.addressof(box), ctypes.addressof(element_strides),
                            args.interleave, args.swizzle, args.l2_promotion, args.oob_fill)

    return encode


class EncodedMap:
    """One encoded CUtensorMap in a MAP_ALIGN-aligned host buffer; `address` is valid while this object lives."""

    __slots__ = ("_buffer", "address")

    def __init__(self) -> None:
        self._buffer = (ctypes.c_ubyte * (MAP_BYTES + MAP_ALIGN - 1))()
        base = ctypes.addressof(self._buffer)
        self.address = base + (-base % MAP_ALIGN)

    def raw(self) -> bytes:
        return ctypes.string_at(self.address, MAP_BYTES)


class TensorMapCache:
    """The maps of one `TensorMapParam` encoded so far, by (data pointer, shape); at most `capacity`, the
    oldest dropped first. Thread-safe: a caller holds the EncodedMap it got while it launches, so a map
    dropped meanwhile stays valid for it."""

    def __init__(self, tmap: TensorMapParam, encode: Encode, capacity: int = CACHE_CAPACITY):
        self.tmap = tmap
        self._encode = encode
        self._capacity = capacity
        self._maps: dict[tuple[int, tuple[int, ...]], EncodedMap] = {}
        self._lock = threading.Lock()
        self.encodes = 0  # calls of the driver, for tests and benchmarks

    def get(self, address: int, shape: tuple[int, ...]) -> EncodedMap:
        """The map of the tensor at `address` of `shape`; LaunchError naming the map when it cannot be encoded."""
        key = (address, tuple(shape))
        found = self._maps.get(key)
        if found is not None:
            return found
        args = encode_arguments(self.tmap, address, key[1])
        encoded = EncodedMap()
        code = self._encode(args, encoded.address)
        if code:
            raise LaunchError(f"tensor map {self.tmap.name!r} of argument {self.tmap.tensor!r}: cuTensorMapEncodeTiled "
                              f"failed with {_result_name(code)} for {args}")
        with self._lock:
            self.encodes += 1
            self._maps[key] = encoded
            while len(self._maps) > self._capacity:
                del self._maps[next(iter(self._maps))]
        return encoded

    def lookup(self, address: int, shape: tuple[int, ...]) -> EncodedMap | None:
        """`get` for the fast path: None where `get` raises (the general path then reports)."""
        found = self._maps.get((address, shape))
        if found is not None:
            return found
        try:
            return self.get(address, shape)
        except LaunchError:
            return None


def _result_name(code: int) -> str:
    try:
        from cuda.bindings import driver

        return f"{driver.CUresult(code).name} ({code})"
    except (ImportError, ValueError):
        return f"CUresult {code}"
