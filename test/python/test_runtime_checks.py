"""Argument checks against fake CUDA arrays (no GPU needed): every LaunchError, with its message."""

import ctypes

import ml_dtypes
import numpy as np
import pytest

from tilemlir.diagnostics import LaunchError
from tilemlir.runtime.arrays import describe, describe_host
from tilemlir.runtime.checks import HOST, ArgumentBinder, ArrayDesc
from tilemlir.runtime.dtypes import DTYPES, scalar_converter
from tilemlir.runtime.kernel import CompiledKernel, _ParamPacker
from tilemlir.runtime.nvrtc import CompileOptions
from tilemlir.runtime.signature import KernelSignature, ScalarParam, TensorParam


class FakeCudaArray:
    """Just enough of a device array: the CUDA array interface, v3."""

    def __init__(self, shape, typestr="<f4", strides=None, ptr=0x7F0000000000, stream=None, mask=None):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr, "data": (ptr, False),
                                         "strides": strides, "version": 3, "stream": stream, "mask": mask}


class FakeCudaDLPack:
    """A host numpy array that claims to live on cuda:3 over DLPack (to exercise the capsule parser)."""

    def __init__(self, array, versioned=True):
        self.array, self.versioned, self.streams = array, versioned, []

    def __dlpack_device__(self):
        return (2, 3)

    def __dlpack__(self, stream=None, max_version=None):
        self.streams.append(stream)
        if max_version is not None and not self.versioned:
            raise TypeError("unexpected keyword argument 'max_version'")
        return self.array.__dlpack__(max_version=max_version) if self.versioned else self.array.__dlpack__()


def matmul_like(**changes):
    fields = dict(
        name="scale",
        params=(TensorParam("A", "float32", ("M", "N"), 16, written=False),
                TensorParam("B", "float32", ("N",), 4, written=False),
                TensorParam("C", "float32", ("M", "N"), 16), ScalarParam("alpha", "float32"),
                ScalarParam("k", "int32")),
        symbols=("M", "N"),
        grid=("(M + 3) // 4", "N // 128", "1"),
        block=(128, 1, 1),
        cuda_params=("A", "B", "C", "alpha", "k", "M", "N"),
        assumes=("N % 128 == 0",),
        out_idx=(2,),
    )
    fields.update(changes)
    return KernelSignature(**fields)


def bind(args, sig=None, device=0, pointer_device=lambda ptr: 0):
    binder = ArgumentBinder(sig or matmul_like())
    binder.check_count(args)
    values = [describe(a, p.name, pointer_device) if isinstance(p, TensorParam) else a
              for p, a in zip(binder.inputs, args)]
    return binder, binder.bind(values, device)


def good_args(M=8, N=256):
    return [FakeCudaArray((M, N)), FakeCudaArray((N,)), 0.5, 3]


def launch_error(args, **kwargs):
    with pytest.raises(LaunchError) as info:
        bind(args, **kwargs)
    return str(info.value)


def test_good_arguments_bind_symbols_scalars_grid_and_outputs():
    binder, env = bind(good_args(M=10, N=384))
    assert env == [10, 384, 0.5, 3]
    assert binder.grid(env) == (3, 3, 1)
    assert binder.output_shapes(env) == [(2, (10, 384))]
    assert binder.shared_bytes(env) == 0


def test_wrong_number_of_arguments_names_inputs_and_outputs():
    message = launch_error(good_args()[:3])
    assert message == ("kernel 'scale' takes 4 argument(s) (A, B, alpha, k), got 3; output(s) C are allocated "
                       "by the kernel and returned, do not pass them")


def test_dtype_rank_and_static_dims():
    args = good_args()
    args[0] = FakeCudaArray((8, 256), "<f2")
    assert launch_error(args) == "argument 'A': expected dtype float32, got float16"
    args[0] = FakeCudaArray((8, 256), "<V2")
    assert launch_error(args) == "argument 'A': expected dtype float32, got typestr '<V2'"
    args[0] = FakeCudaArray((8, 256), ">f4")
    assert launch_error(args) == "argument 'A': expected dtype float32, got typestr '>f4'"
    args[0] = FakeCudaArray((2, 8, 256))
    assert launch_error(args) == "argument 'A': expected 2 dim(s) (M, N), got 3 dim(s) (2, 8, 256)"
    sig = matmul_like(params=(TensorParam("A", "float32", ("M", 256)), TensorParam("B", "float32", ("N",)),
                              TensorParam("C", "float32", ("M", "N")), ScalarParam("alpha", "float32"),
                              ScalarParam("k", "int32")))
    args = [FakeCudaArray((8, 128)), FakeCudaArray((256,)), 0.5, 3]
    assert launch_error(args, sig=sig) == ("argument 'A': dim 1 must be 256, got 128 "
                                           "(expected shape (M, 256), got (8, 128))")


def test_symbol_mismatch_names_both_arguments():
    args = good_args(N=256)
    args[1] = FakeCudaArray((384,))
    assert launch_error(args) == ("argument 'B': dim 0 is 384, but symbol N = 256 was bound by argument 'A' dim 1 "
                                  "(shapes must agree)")


def test_strides_must_be_c_contiguous():
    args = good_args(M=8, N=256)
    args[0] = FakeCudaArray((8, 256), strides=(4, 32))  # a transposed view, in bytes
    assert launch_error(args) == ("argument 'A': expected a C-contiguous array (strides (256, 1) in elements), "
                                  "got strides (1, 8); call .contiguous() first")
    args[0] = FakeCudaArray((8, 256), strides=(1024, 4))  # explicit but contiguous strides are fine
    bind(args)
    args[0] = FakeCudaArray((1, 256), strides=(12345 * 4, 4))  # a size-1 dim's stride does not matter
    args[1] = FakeCudaArray((256,))
    bind(args)
    args[0] = FakeCudaArray((8, 256), strides=(2048, 6))
    assert "byte strides (2048, 6) are not multiples of the element size 4" in launch_error(args)


def test_alignment_of_the_data_pointer():
    args = good_args()
    args[0] = FakeCudaArray((8, 256), ptr=0x7F0000000004)
    assert launch_error(args) == ("argument 'A': data pointer 0x7f0000000004 is not aligned to 16 bytes, which the "
                                  "kernel's vector accesses need (a slice at an odd offset? copy it)")
    args[0] = FakeCudaArray((8, 256), ptr=0x7F0000000010)
    args[1] = FakeCudaArray((256,), ptr=0x7F0000000004)  # B only needs its element size
    bind(args)


def test_a_null_data_pointer_is_refused_unless_the_array_is_empty():
    """A tensor without storage (torch's wrapper subclasses report data_ptr() 0) would make the
    kernel read address 0: a GPU fault. An empty array may have a null pointer: nothing is read."""
    args = good_args(M=8, N=256)
    args[0] = FakeCudaArray((8, 256), ptr=0)
    assert launch_error(args) == ("argument 'A': its data pointer is null, with 2048 elements: a tensor without "
                                  "storage (a wrapper subclass or a fake tensor?) has nothing the kernel can read "
                                  "or write")
    args = good_args(M=0, N=256)
    args[0] = FakeCudaArray((0, 256), ptr=0)
    bind(args)


def test_element_count_limit_for_32_bit_indexing():
    args = [FakeCudaArray((2**16, 2**15)), FakeCudaArray((2**15,)), 0.5, 3]
    assert launch_error(args, sig=matmul_like(index_bits=32)) == (
        "argument 'A': 2147483648 elements exceed the kernel's 32-bit indexing (at most 2147483647); "
        "compile the kernel with index_bits=64 (tilemlir.compile(..., index_bits=64) or @tilemlir.jit(index_bits=64))")
    bind(args, sig=matmul_like(index_bits=64))


def test_symbols_must_fit_32_bit_indexing_even_when_every_tensor_is_empty():
    """M = 2**31 bound by empty tensors passes every element count but would reach the kernel
    truncated to int32; the binder refuses it, and a 64-bit kernel takes it."""
    args = [FakeCudaArray((2**31, 0)), FakeCudaArray((0,)), 0.5, 3]
    assert launch_error(args, sig=matmul_like(index_bits=32)) == (
        "symbol M = 2147483648 exceeds the kernel's 32-bit indexing (at most 2147483647); "
        "compile the kernel with index_bits=64 (tilemlir.compile(..., index_bits=64) or @tilemlir.jit(index_bits=64))")
    args[0] = FakeCudaArray((2**31 - 1, 0))
    bind(args, sig=matmul_like(index_bits=32))
    args[0] = FakeCudaArray((2**31, 0))
    bind(args, sig=matmul_like(index_bits=64))


def test_scalars_must_convert_to_their_dtype():
    args = good_args()
    args[2] = "0.5"
    assert launch_error(args) == "argument 'alpha': expected a float32 scalar: expected a number, got str"
    args[2] = np.ones(3)
    assert launch_error(args) == "argument 'alpha': expected a float32 scalar: expected a number, got a ndarray of shape (3,)"
    args[2] = 1e300
    assert launch_error(args) == "argument 'alpha': expected a float32 scalar: 1e+300 overflows float32"
    args[2], args[3] = np.float32(0.25), 2.5
    assert launch_error(args) == "argument 'k': expected a int32 scalar: expected an integer, got float"
    args[3] = 2**31
    assert launch_error(args) == ("argument 'k': expected a int32 scalar: 2147483648 is out of range for int32 "
                                  "[-2147483648, 2147483647]")
    args[3] = np.int64(-5)
    _, env = bind(args)
    assert env[2:] == [0.25, -5]


def test_scalar_bit_patterns():
    bf16 = scalar_converter(DTYPES["bfloat16"])
    assert bf16(1.0) == 0x3F80
    assert bf16(1.0 + 2**-8) == 0x3F80  # a tie rounds to even
    assert bf16(1.0 + 3 * 2**-8) == 0x3F82
    assert bf16(-2.0) == 0xC000
    assert bf16(float("inf")) == 0x7F80
    with pytest.raises(OverflowError, match="overflows bfloat16"):
        bf16(3.4e38)
    f16 = scalar_converter(DTYPES["float16"])
    assert f16(1.0) == 0x3C00 and f16(-0.5) == 0xB800
    with pytest.raises(OverflowError, match="overflows float16"):
        f16(1e5)
    with pytest.raises(TypeError, match="expected a bool, got int"):
        scalar_converter(DTYPES["bool"])(1)
    assert scalar_converter(DTYPES["uint8"])(255) == 255
    with pytest.raises(OverflowError, match=r"-1 is out of range for uint8 \[0, 255\]"):
        scalar_converter(DTYPES["uint8"])(-1)


def test_assumptions_name_the_expression_and_the_values():
    args = [FakeCudaArray((8, 200)), FakeCudaArray((200,)), 0.5, 3]
    assert launch_error(args) == "assumption 'N % 128 == 0' does not hold: N = 200"
    sig = matmul_like(assumes=("M // k > 1",))
    args = [FakeCudaArray((8, 256)), FakeCudaArray((256,)), 0.5, 0]
    assert launch_error(args, sig=sig) == ("assumption 'M // k > 1' cannot be evaluated (integer division or modulo "
                                           "by zero) with M = 8, k = 0")


def in_place(*, written=("Y",), out_idx=()):
    """Y = f(X, W) with Y passed in; `written` names the tensors the kernel stores into."""
    params = tuple(TensorParam(n, "float32", ("n",), 4, written=n in written) for n in ("X", "W", "Y"))
    return KernelSignature(name="axpy", params=params, symbols=("n",), grid=("1", "1", "1"), block=(128, 1, 1),
                           cuda_params=("X", "W", "Y", "n"), out_idx=out_idx)


BASE = 0x7F0000000000
OVERLAP = ("argument 'Y' (written by the kernel) overlaps argument 'X': the kernel assumes its tensors do not "
           "alias (__restrict__); pass a separate output")


def arrays_at(x, w, y, n=256):
    return [FakeCudaArray((n,), ptr=BASE + x), FakeCudaArray((n,), ptr=BASE + w), FakeCudaArray((n,), ptr=BASE + y)]


@pytest.mark.parametrize("y_offset", [0, 4, 1020, -4, -1020])
def test_a_written_tensor_overlapping_another_is_rejected(y_offset):
    assert launch_error(arrays_at(0, 8192, y_offset), sig=in_place()) == OVERLAP


@pytest.mark.parametrize("y_offset", [1024, -1024, 4096])
def test_adjacent_or_disjoint_ranges_are_accepted(y_offset):
    _, env = bind(arrays_at(0, 8192, y_offset), sig=in_place())
    assert env == [256]


def test_overlapping_read_only_tensors_and_empty_tensors_are_accepted():
    _, env = bind(arrays_at(0, 0, 4096), sig=in_place())
    assert env == [256]
    _, env = bind(arrays_at(0, 0, 0, n=0), sig=in_place())
    assert env == [0]


def test_the_written_tensor_is_named_first_and_overlap_is_in_bytes():
    message = launch_error(arrays_at(0, 8192, 1020), sig=in_place(written=("X",)))
    assert message.startswith("argument 'X' (written by the kernel) overlaps argument 'Y'")
    message = launch_error(arrays_at(8192, 0, 1020), sig=in_place(written=("Y", "W")))
    assert message.startswith("argument 'W' (written by the kernel) overlaps argument 'Y'")
    sig = KernelSignature(name="cast", params=(TensorParam("X", "float64", ("n",), written=False),
                                               TensorParam("Y", "float16", (8,))),
                          symbols=("n",), grid=("1", "1", "1"), block=(32, 1, 1), cuda_params=("X", "Y", "n"))
    x = FakeCudaArray((4,), typestr="<f8", ptr=BASE)
    assert launch_error([x, FakeCudaArray((8,), typestr="<f2", ptr=BASE + 24)], sig=sig).startswith(
        "argument 'Y' (written by the kernel) overlaps argument 'X'")  # X's 32 bytes reach past Y's start
    bind([x, FakeCudaArray((8,), typestr="<f2", ptr=BASE + 32)], sig=sig)


def test_outputs_the_runtime_allocates_are_not_checked():
    binder, env = bind(arrays_at(0, 0, 0)[:2], sig=in_place(out_idx=(2,)))
    assert binder.output_shapes(env) == [(2, (256,))]


def test_host_arrays_sharing_memory_are_rejected_too():
    binder = ArgumentBinder(in_place())
    x = np.arange(512, dtype=np.float32)
    values = [describe_host(a, n) for a, n in zip((x[:256], np.ones(256, np.float32), x[128:384]), "XWY")]
    with pytest.raises(LaunchError, match=r"^argument 'Y' \(written by the kernel\) overlaps argument 'X'"):
        binder.bind(values, HOST)
    values[2] = describe_host(x[256:], "Y")
    assert binder.bind(values, HOST) == [256]


def test_device_must_be_the_current_one():
    message = launch_error(good_args(), pointer_device=lambda ptr: 1)
    assert message == "argument 'A': expected an array on cuda:0 (the current device), got one on cuda:1"
    message = launch_error(good_args(), pointer_device=lambda ptr: HOST)
    assert message == "argument 'A': expected an array on cuda:0 (the current device), got one on host memory"
    binder, env = bind(good_args(), device=None, pointer_device=lambda ptr: 1)  # device check deferred
    with pytest.raises(LaunchError, match="expected an array on cuda:2"):
        binder.check_devices([describe(a, "A", lambda ptr: 1) if i < 2 else a for i, a in enumerate(good_args())], 2)


def test_host_arrays_and_non_arrays_get_clear_errors():
    args = good_args()
    args[0] = np.zeros((8, 256), np.float32)
    message = launch_error(args)
    assert message.startswith("argument 'A': got a host array (ndarray); GPU kernels take device arrays")
    assert "compile with target='cpu'" in message
    args[0] = [[1.0] * 256] * 8
    assert launch_error(args) == ("argument 'A': expected a CUDA array (torch tensor, CuPy array, or anything with "
                                  "__cuda_array_interface__ or __dlpack__), got list")
    args[0] = FakeCudaArray((8, 256), mask=object())
    assert launch_error(args) == "argument 'A': masked arrays are not supported"
    args[0] = type("Broken", (), {"__cuda_array_interface__": {"shape": (8, 256)}})()
    assert launch_error(args).startswith("argument 'A': malformed array interface (KeyError('typestr')")


def test_grid_and_shared_bytes_errors():
    binder = ArgumentBinder(matmul_like(grid=("M - 10", "1", "1"), assumes=()))
    assert binder.grid([12, 256, 1.0, 1]) == (2, 1, 1)
    assert binder.grid([10, 256, 1.0, 1]) == (0, 1, 1)
    with pytest.raises(LaunchError, match=r"grid dim x = M - 10 evaluates to -2 with M = 8, N = 256, alpha = 1.0, "
                                          r"k = 1; it must be an int in \[0, 2147483647\]"):
        binder.grid([8, 256, 1.0, 1])
    binder = ArgumentBinder(matmul_like(grid=("1", "M", "1"), assumes=()))
    with pytest.raises(LaunchError, match=r"grid dim y = M evaluates to 70000 .* in \[0, 65535\]"):
        binder.grid([70000, 256, 1.0, 1])
    binder = ArgumentBinder(matmul_like(grid=("N // k", "1", "1"), shared_bytes="N * 4 - 2048", assumes=()))
    with pytest.raises(LaunchError, match=r"cannot be evaluated \(integer division or modulo by zero\)"):
        binder.grid([8, 256, 1.0, 0])
    assert binder.shared_bytes([8, 1024, 1.0, 1]) == 2048
    with pytest.raises(LaunchError, match="shared_bytes = N \\* 4 - 2048 evaluates to -1024"):
        binder.shared_bytes([8, 256, 1.0, 1])


def test_output_element_limit_for_32_bit_indexing():
    sig = KernelSignature(name="outer", params=(TensorParam("a", "float32", ("M",)), TensorParam("b", "float32", ("N",)),
                                                TensorParam("c", "float32", ("M", "N"))),
                          symbols=("M", "N"), grid=("M", "1", "1"), block=(32, 1, 1), cuda_params=("a", "b", "c", "M", "N"),
                          out_idx=(2,), index_bits=32)
    binder = ArgumentBinder(sig)
    with pytest.raises(LaunchError, match="output 'c' of shape \\(65536, 65536\\) has 4294967296 elements"):
        binder.output_shapes([65536, 65536])


def test_dlpack_capsules_are_parsed_both_versions():
    array = np.arange(24, dtype=np.float32).reshape(4, 6)
    for versioned in (True, False):
        fake = FakeCudaDLPack(array, versioned)
        desc = describe(fake, "X", dlpack_stream=7)
        assert desc == ArrayDesc((4, 6), (6, 1), "float32", array.ctypes.data, 3)
        assert fake.streams[0] == 7
    transposed = FakeCudaDLPack(np.ascontiguousarray(array.T).T[1:])
    desc = describe(transposed, "X")
    assert desc.shape == (3, 6) and desc.strides == (1, 4) and desc.dtype == "float32"
    assert desc.address == transposed.array.ctypes.data
    fake_host = type("HostDL", (), {"__dlpack__": lambda s, **k: None, "__dlpack_device__": lambda s: (1, 0)})()
    with pytest.raises(LaunchError, match="argument 'X': got a host array \\(HostDL\\)"):
        describe(fake_host, "X")


def test_describe_host_for_the_cpu_backend():
    array = np.zeros((5, 7), np.float16)[:, 1:]
    desc = describe_host(array, "X")
    assert desc == ArrayDesc((5, 6), (7, 1), "float16", array.ctypes.data, HOST, None)
    sig = KernelSignature(name="k", params=(TensorParam("X", "float16", ("M", 6)),), symbols=("M",),
                          grid=("M", "1", "1"), block=(32, 1, 1), cuda_params=("X", "M"))
    with pytest.raises(LaunchError, match="expected a C-contiguous array"):
        ArgumentBinder(sig).bind([desc], HOST)
    assert ArgumentBinder(sig).bind([describe_host(np.ones((5, 6), np.float16))], HOST) == [5]


def test_describe_host_rejects_byte_swapped_and_read_only_arrays():
    swapped = np.zeros(4, ml_dtypes.bfloat16).view(np.dtype(ml_dtypes.bfloat16).newbyteorder(">"))
    with pytest.raises(LaunchError, match=r"argument 'X': a big-endian bfloat16 array \(typestr '>V2'\)"):
        describe_host(swapped, "X")
    assert describe_host(np.zeros(4, ">i1"), "X").dtype == "int8"  # one byte: no byte order
    frozen = np.zeros(4, np.float32)
    frozen.flags.writeable = False
    assert describe_host(frozen, "X").dtype == "float32"  # only read: fine
    with pytest.raises(LaunchError, match="argument 'X': the kernel writes this array, but it is read-only"):
        describe_host(frozen, "X", written=True)


def test_param_packer_writes_each_kernel_parameter():
    sig = KernelSignature(name="k", params=(TensorParam("X", "bfloat16", ("M",)), ScalarParam("s", "bfloat16"),
                                            ScalarParam("f", "float64"), ScalarParam("b", "bool")),
                          symbols=("M",), grid=("M", "1", "1"), block=(32, 1, 1), cuda_params=("M", "X", "s", "b", "f"),
                          index_bits=32)
    packer = _ParamPacker(sig)
    address = packer.fill([0xDEAD0000, 0, 0, 0], [77, 0x3F80, 2.5, True])
    slots = (ctypes.c_void_p * 5).from_address(address)
    assert ctypes.c_int32.from_address(slots[0]).value == 77
    assert ctypes.c_void_p.from_address(slots[1]).value == 0xDEAD0000
    assert ctypes.c_uint16.from_address(slots[2]).value == 0x3F80
    assert ctypes.c_bool.from_address(slots[3]).value is True
    assert ctypes.c_double.from_address(slots[4]).value == 2.5


def _driver_available():
    from tilemlir.runtime import driver

    try:
        driver.cuda()
        return True
    except LaunchError:
        return False


def test_kernel_call_checks_arguments_before_touching_the_gpu():
    kernel = CompiledKernel(matmul_like(), "// no source", b"", CompileOptions())
    with pytest.raises(LaunchError, match="takes 4 argument"):
        kernel(*good_args()[:2])
    args = good_args()
    args[1] = FakeCudaArray((128,))
    with pytest.raises(LaunchError, match="symbol N = 256 was bound by argument 'A'"):
        kernel(*args)
    with pytest.raises(LaunchError, match="stream= must be a CUDA stream"):
        kernel(*good_args(), stream="fast")
    if not _driver_available():
        with pytest.raises(LaunchError, match="no usable CUDA driver .* compile with target='cpu'"):
            kernel(*good_args())
