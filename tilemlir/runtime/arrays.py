"""Describe array arguments: torch tensors, `__cuda_array_interface__`, `__dlpack__`.

`describe(obj, name)` returns an `ArrayDesc` (shape, strides in elements,
dtype name, data address, device ordinal) or raises `LaunchError` naming
the argument. Order of preference: torch tensors through their own
attributes (fast, and torch's array interface refuses bfloat16), then
`__cuda_array_interface__` (CuPy, Numba, fakes in tests), then DLPack
(JAX and others), parsed from the capsule with ctypes. Host arrays (numpy,
CPU tensors) get an error that points at the CPU backend.

`describe_host(array, name, written)` does the same for host arrays (numpy,
through `__array_interface__`), for the CPU backend, which reads their bytes
in place: a byte-swapped (big-endian) array, and a read-only one (bytes,
a read-only mmap, `writeable=False`) the kernel writes, are `LaunchError`s.

`torch_host_view(obj, name)` gives the CPU backend a torch CPU tensor's
memory as a numpy array (no copy; a dtype numpy lacks as the unsigned
integer of its width, with its name to view it as), and a torch tensor on a
GPU a `LaunchError` saying to move it; `torch_from_host(array, dtype)` turns
the backend's outputs back into tensors. `describe_abstract(tensor, name,
device_type)` describes a torch tensor by its metadata alone (a fake tensor of
torch.compile's trace: no address). torch is never imported here: a tensor
exists only where the caller imported torch.
"""

from __future__ import annotations

import ctypes
import sys
from typing import Any, Callable

from tilemlir.diagnostics import LaunchError
from tilemlir.runtime.checks import HOST, ArrayDesc
from tilemlir.runtime.dtypes import BY_DLPACK, DTYPES, NUMPY_ALIASES, name_from_typestr

PointerDevice = Callable[[int], "int | None"]

_HOST_HINT = ("GPU kernels take device arrays (torch CUDA tensors, CuPy arrays, anything with "
              "__cuda_array_interface__ or __dlpack__ on a CUDA device); to run on the CPU, compile with target='cpu' "
              "or set TILEMLIR_INTERPRET=1")
_torch_dtypes: dict[Any, str] = {}


def describe(obj: Any, name: str, pointer_device: PointerDevice | None = None, dlpack_stream: int = 1) -> ArrayDesc:
    """The description of device array `obj`, passed as argument `name`.

    `pointer_device(address)` gives the device of an array-interface pointer
    (the array interface has no device field); without it the device is
    None (unknown). `dlpack_stream` is the stream the kernel will run on,
    as DLPack's `stream` argument (1: the legacy default stream)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        return _describe_torch(obj, name)
    cai = _cuda_array_interface(obj)
    if cai is not None:
        return describe_interface(cai, name, pointer_device)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        return _describe_dlpack(obj, name, dlpack_stream)
    if hasattr(obj, "__array_interface__"):
        raise LaunchError(f"argument {name!r}: got a host array ({type(obj).__name__}); {_HOST_HINT}")
    raise LaunchError(f"argument {name!r}: expected a CUDA array (torch tensor, CuPy array, or anything with "
                      f"__cuda_array_interface__ or __dlpack__), got {type(obj).__name__}")


def describe_host(obj: Any, name: str = "array", written: bool = False) -> ArrayDesc:
    """The description of a host array with `__array_interface__` (numpy),
    device HOST. Numpy's dtype names decide the dtype, so ml_dtypes'
    bfloat16 / float8 arrays are recognized too. `written`: the kernel
    stores into the array, so it must be writable."""
    interface = getattr(obj, "__array_interface__", None)
    if interface is None:
        raise LaunchError(f"argument {name!r}: expected a host array (numpy), got {type(obj).__name__}")
    dtype_name = getattr(getattr(obj, "dtype", None), "name", None)
    desc = describe_interface(interface, name, None, device=HOST)
    _check_host_bytes(interface, dtype_name or desc.dtype, name, written)
    if dtype_name is not None:
        dtype_name = NUMPY_ALIASES.get(dtype_name, dtype_name)
        if dtype_name in DTYPES:
            desc = desc._replace(dtype=dtype_name)
            desc = desc._replace(strides=_byte_strides(interface.get("strides"), DTYPES[dtype_name].itemsize, name))
    return desc


def torch_host_view(obj: Any, name: str) -> tuple[Any, str] | None:
    """(a numpy array of torch CPU tensor `obj`'s memory, its dtype name), None when `obj` is no torch
    tensor. bfloat16 and float8 tensors come as the integers of their width (numpy has no such dtype; the
    caller views them as its own). A tensor on another device is a LaunchError."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(obj, torch.Tensor):
        return None
    if obj.device.type != "cpu":
        raise _not_on_host(name, obj.device)
    tensor = obj.detach()
    dtype = _torch_dtype_name(tensor.dtype)
    if dtype in DTYPES and DTYPES[dtype].typestr is None:
        tensor = tensor.view(getattr(torch, _SAME_WIDTH_INTEGERS[DTYPES[dtype].itemsize][1]))
    try:
        return tensor.numpy(), dtype
    except (TypeError, RuntimeError) as exc:  # a dtype numpy cannot hold (complex32, ...), a conjugate view
        raise LaunchError(f"argument {name!r}: a torch tensor of dtype {tensor.dtype} the CPU target cannot read "
                          f"({exc})") from None


def torch_from_host(array: Any, dtype: str) -> Any:
    """The torch tensor sharing the memory of the CPU backend's output `array` of dtype `dtype`."""
    torch = sys.modules["torch"]
    if DTYPES[dtype].typestr is None:
        numpy_name, _ = _SAME_WIDTH_INTEGERS[DTYPES[dtype].itemsize]
        return torch.from_numpy(array.view(numpy_name)).view(getattr(torch, DTYPES[dtype].torch_name))
    return torch.from_numpy(array)


# numpy's and torch's integer of each width that bfloat16 and float8 data travel as between them
_SAME_WIDTH_INTEGERS = {1: ("u1", "uint8"), 2: ("i2", "int16")}


def _check_host_bytes(interface: dict[str, Any], dtype_name: str, name: str, written: bool) -> None:
    typestr = str(interface.get("typestr", ""))
    native = "<" if sys.byteorder == "little" else ">"
    if typestr[:1] in "<>" and typestr[:1] != native and typestr[2:] not in ("", "1"):
        order = "big" if typestr[0] == ">" else "little"
        raise LaunchError(f"argument {name!r}: a {order}-endian {dtype_name} array (typestr {typestr!r}); the CPU "
                          f"backend reads {sys.byteorder}-endian data in place: convert it first, e.g. "
                          f"x.astype(x.dtype.newbyteorder('='))")
    if written and bool(interface["data"][1]):
        raise LaunchError(f"argument {name!r}: the kernel writes this array, but it is read-only (bytes, a "
                          "read-only mmap, writeable=False): pass a writable array, e.g. np.array(x)")


def _cuda_array_interface(obj: Any) -> dict[str, Any] | None:
    try:
        return getattr(obj, "__cuda_array_interface__", None)
    except Exception:  # a producer that cannot export this array (e.g. a dtype it has no typestr for)
        return None


def _describe_torch(t: Any, name: str) -> ArrayDesc:
    device = t.get_device()
    if device < 0:
        raise _not_on_gpu(name, t.device)
    dtype = _torch_dtypes.get(t.dtype)
    if dtype is None:
        dtype = _torch_dtype_name(t.dtype)
    return ArrayDesc(t.shape, None if t.is_contiguous() else t.stride(), dtype, t.data_ptr(), device)


def describe_abstract(t: Any, name: str, device_type: str) -> ArrayDesc:
    """The description of torch tensor `t` from its metadata alone, for a kernel running on `device_type`
    ("cuda" or "cpu"): a fake tensor under torch.compile has no data, so the address and the device
    ordinal are None (unknown, not checked). Its dims may be symbolic (SymInt)."""
    if t.device.type not in (device_type, "meta"):
        raise _not_on_gpu(name, t.device) if device_type == "cuda" else _not_on_host(name, t.device)
    strides = None if t.is_contiguous() else tuple(t.stride())
    return ArrayDesc(tuple(t.shape), strides, _torch_dtype_name(t.dtype), None, None)


def _not_on_gpu(name: str, device: Any) -> LaunchError:
    return LaunchError(f"argument {name!r}: got a torch tensor on {device}; {_HOST_HINT}")


def _not_on_host(name: str, device: Any) -> LaunchError:
    return LaunchError(f"argument {name!r}: a torch tensor on {device}, but this kernel runs on the CPU "
                       f"(target='cpu' or TILEMLIR_INTERPRET): pass {name}.cpu() and move the results back with "
                       ".to(device)")


def _torch_dtype_name(torch_dtype: Any) -> str:
    torch = sys.modules["torch"]
    if not _torch_dtypes:
        for d in DTYPES.values():
            found = getattr(torch, d.torch_name, None)
            if found is not None:
                _torch_dtypes[found] = d.name
    return _torch_dtypes.get(torch_dtype, str(torch_dtype))


def describe_interface(interface: dict[str, Any], name: str, pointer_device: PointerDevice | None,
                       device: int | None = None) -> ArrayDesc:
    """Parse a `__cuda_array_interface__` / `__array_interface__` dict."""
    try:
        shape = tuple(int(d) for d in interface["shape"])
        typestr = interface["typestr"]
        address = int(interface["data"][0])
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise LaunchError(f"argument {name!r}: malformed array interface ({exc!r})") from None
    if interface.get("mask") is not None:
        raise LaunchError(f"argument {name!r}: masked arrays are not supported")
    dtype = name_from_typestr(typestr)
    itemsize = DTYPES[dtype].itemsize if dtype in DTYPES else max(int(typestr[2:] or 1), 1)
    strides = _byte_strides(interface.get("strides"), itemsize, name)
    if device is None and pointer_device is not None and address:
        device = pointer_device(address)
    return ArrayDesc(shape, strides, dtype, address, device, interface.get("stream"))


def _byte_strides(strides: Any, itemsize: int, name: str) -> tuple[int, ...] | None:
    if strides is None:
        return None
    if any(s % itemsize for s in strides):
        raise LaunchError(f"argument {name!r}: byte strides {tuple(strides)} are not multiples of the "
                          f"element size {itemsize}; expected a C-contiguous array")
    return tuple(s // itemsize for s in strides)


# -- DLPack ----------------------------------------------------------------------------
_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST, _KDL_CUDA_MANAGED = 1, 2, 3, 13


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("version", ctypes.c_uint32 * 2),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", _DLTensor),
    ]


_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
_capsule_is_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _describe_dlpack(obj: Any, name: str, stream: int) -> ArrayDesc:
    device_type, device_id = obj.__dlpack_device__()
    if device_type in (_KDL_CPU, _KDL_CUDA_HOST):
        raise LaunchError(f"argument {name!r}: got a host array ({type(obj).__name__}); {_HOST_HINT}")
    if device_type not in (_KDL_CUDA, _KDL_CUDA_MANAGED):
        raise LaunchError(f"argument {name!r}: DLPack device type {device_type} is not CUDA")
    try:
        capsule = obj.__dlpack__(stream=stream, max_version=(1, 0))
    except TypeError:  # a producer older than DLPack 1.0
        capsule = obj.__dlpack__(stream=stream)
    # The capsule is not consumed: its destructor calls the producer's deleter,
    # and `obj` keeps the memory alive for the duration of the call.
    if _capsule_is_valid(capsule, b"dltensor_versioned"):
        tensor = _DLManagedTensorVersioned.from_address(_capsule_pointer(capsule, b"dltensor_versioned")).dl_tensor
    elif _capsule_is_valid(capsule, b"dltensor"):
        tensor = _DLManagedTensor.from_address(_capsule_pointer(capsule, b"dltensor")).dl_tensor
    else:
        raise LaunchError(f"argument {name!r}: __dlpack__ returned no DLPack capsule")
    ndim = tensor.ndim
    shape = tuple(tensor.shape[i] for i in range(ndim))
    strides = tuple(tensor.strides[i] for i in range(ndim)) if tensor.strides else None
    code = (tensor.dtype.code, tensor.dtype.bits)
    dtype = BY_DLPACK.get(code) if tensor.dtype.lanes == 1 else None
    if dtype is None:
        dtype = f"DLPack dtype (code {code[0]}, bits {code[1]}, lanes {tensor.dtype.lanes})"
    address = (tensor.data or 0) + tensor.byte_offset
    return ArrayDesc(shape, strides, dtype, address, device_id)
