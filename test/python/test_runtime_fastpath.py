"""The fast call path (no GPU, no torch needed): a fake torch module and a fake
driver record what each path launches. The fast path must launch exactly what
the general path launches, and hand every call it does not fully check back
to the general path, whose LaunchError the caller then gets."""

import ctypes
import sys
import threading
import types

import pytest

from tilemlir.diagnostics import LaunchError
from tilemlir.runtime import arrays, driver, fastpath, native
from tilemlir.runtime.dtypes import DTYPES
from tilemlir.runtime.expr import Expr
from tilemlir.runtime.fastpath import SLOW, fast_call_source
from tilemlir.runtime.kernel import CompiledKernel
from tilemlir.runtime.nvrtc import CompileOptions
from tilemlir.runtime.signature import KernelSignature, ScalarParam, TensorParam

CONTEXT, OTHER_CONTEXT = 0xC0, 0xC1


# -- a fake torch: just the tensor API both paths read --------------------------------------
class FakeDType:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"fake.{self.name}"


class FakeTensor:
    next_address = 0x7F0000000000

    def __init__(self, shape, dtype, device=0, address=None, strides=None):
        self.shape, self.dtype, self._device = tuple(shape), dtype, device
        self._strides = tuple(strides) if strides is not None else _contiguous(self.shape)
        if address is None:
            address, FakeTensor.next_address = FakeTensor.next_address, FakeTensor.next_address + 0x100000
        self._address = address

    def get_device(self):
        return self._device

    @property
    def device(self):
        return f"cuda:{self._device}" if self._device >= 0 else "cpu"

    def is_contiguous(self):  # torch's rule: size-1 dims do not count, empty tensors are contiguous
        expected = 1
        for extent, stride in zip(reversed(self.shape), reversed(self._strides)):
            if extent != 1 and stride != expected and 0 not in self.shape:
                return False
            expected *= extent
        return True

    def stride(self):
        return self._strides

    def data_ptr(self):
        return self._address


def _contiguous(shape):
    strides, acc = [], 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    return tuple(reversed(strides))


def fake_torch(raw_stream=True):
    torch = types.ModuleType("torch")
    torch.Tensor = FakeTensor
    for d in DTYPES.values():
        setattr(torch, d.torch_name, FakeDType(d.torch_name))
    torch.empty_calls = []

    def empty(*size, dtype, device):
        torch.empty_calls.append((size, dtype, device))
        shape = size[0] if len(size) == 1 and isinstance(size[0], tuple) else size
        ordinal = device if isinstance(device, int) else device[1]
        return FakeTensor(shape, dtype, ordinal)

    torch.empty = empty
    torch.device = lambda kind, index: (kind, index)
    torch._C = types.SimpleNamespace()
    if raw_stream:
        torch._C._cuda_getCurrentRawStream = lambda device: 0x5000 + device
    return torch


# -- a fake driver: C entry points (ctypes callbacks) that record launches -------------------
GET_CONTEXT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p, ctypes.c_void_p,
                          ctypes.c_void_p)


class FakeDriver:
    def __init__(self, signature, context=CONTEXT, device=0):
        self.signature, self.context, self.device = signature, context, device
        self.launches, self.code, self.context_code = [], 0, 0
        self.raw = driver.RawDriver(GET_CONTEXT(self.get_context), LAUNCH(self.launch))

    def get_context(self, address):
        ctypes.c_void_p.from_address(address).value = self.context
        return self.context_code

    def launch(self, function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        assert extra is None
        self.launches.append(dict(function=function, grid=(gx, gy, gz), block=(bx, by, bz), shared=shared,
                                  stream=stream or 0, params=self.read_params(params), thread=threading.get_ident()))
        return self.code

    def read_params(self, address):
        sig = self.signature
        kinds = {p.name: p for p in sig.params}
        symbol = ctypes.c_int32 if sig.index_bits == 32 else ctypes.c_int64
        slots = (ctypes.c_void_p * len(sig.cuda_params)).from_address(address)
        values = {}
        for slot, name in zip(slots, sig.cuda_params):
            p = kinds.get(name)
            ctype = (ctypes.c_void_p if isinstance(p, TensorParam)
                     else DTYPES[p.dtype].scalar_ctype if isinstance(p, ScalarParam) else symbol)
            values[name] = ctype.from_address(slot).value
        return values


class FakeModule:
    def __init__(self, max_dynamic_shared=48 * 1024):
        self.handle = ctypes.c_void_p(0xF00D)
        self.max_dynamic_shared = max_dynamic_shared
        self.launched = False


@pytest.fixture(params=["native", "ctypes"])
def launcher(request, monkeypatch):
    """The native extension module, or None for the ctypes launch; the kernel is made to use it."""
    extension = native.load() if request.param == "native" else None
    if request.param == "native" and extension is None:
        pytest.skip("no C compiler or Python.h here: the native launcher cannot be built")
    monkeypatch.setattr(native, "load", lambda: extension)
    return extension


@pytest.fixture
def fake(monkeypatch, launcher):
    """Installs the fake torch and driver; `fake(signature)` gives (kernel, FakeDriver, torch)."""
    torch = fake_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(arrays, "_torch_dtypes", {})
    cuda = types.SimpleNamespace(CUresult=int, cuGetErrorName=lambda e: (0, b"CUDA_ERROR_FAKE"),
                                 cuGetErrorString=lambda e: (0, b"a fake failure"))
    monkeypatch.setattr(driver, "_cuda", cuda)

    def make(signature, **module):
        fake_driver = FakeDriver(signature)
        monkeypatch.setattr(driver, "current", lambda: (fake_driver.context, fake_driver.device))
        monkeypatch.setattr(driver, "raw", lambda: fake_driver.raw)
        kernel = CompiledKernel(signature, "// no source", b"", CompileOptions())
        kernel._modules[CONTEXT] = FakeModule(**module)
        kernel._modules[OTHER_CONTEXT] = FakeModule(**module)
        return kernel, fake_driver, torch

    return make


# -- signatures --------------------------------------------------------------------------------
def add_signature():
    return KernelSignature(name="add", params=tuple(TensorParam(n, "float32", ("n",), 16, written=n == "C")
                                                    for n in "ABC"),
                           symbols=("n",), grid=("(n + 4095) // 4096", "1", "1"), block=(256, 1, 1),
                           cuda_params=("A", "B", "C", "n"), out_idx=(2,), index_bits=32)


def scale_signature(**changes):
    fields = dict(
        name="scale",
        params=(TensorParam("A", "bfloat16", ("M", "N"), 16, written=False),
                TensorParam("B", "float32", ("N",), 4, written=False),
                TensorParam("W", "float16", (4, "N"), written=False), TensorParam("C", "bfloat16", ("M", "N"), 16),
                ScalarParam("alpha", "bfloat16"), ScalarParam("k", "int32"), TensorParam("R", "float32", ("M",))),
        symbols=("M", "N"),
        grid=("(M + 3) // 4", "N // 128", "k"),
        block=(128, 1, 1),
        shared_bytes="k * 1024",
        assumes=("N % 128 == 0", "M // k >= 1"),
        cuda_params=("N", "A", "alpha", "B", "W", "C", "k", "R", "M"),
        out_idx=(3, 6),
    )
    fields.update(changes)
    return KernelSignature(**fields)


def scale_args(torch, M=8, N=256, k=2, device=0):
    return [FakeTensor((M, N), torch.bfloat16, device), FakeTensor((N,), torch.float32, device),
            FakeTensor((4, N), torch.float16, device), 1.5, k]


def launch_twice(kernel, fake_driver, args, stream=None):
    """The first call takes the general path, which enables the fast path; then the fast path alone."""
    first = kernel(*args, stream=stream)
    assert kernel._fast is not None and len(fake_driver.launches) == 1
    second = kernel._fast.call(tuple(args), stream)
    assert second is not SLOW and len(fake_driver.launches) == 2
    return first, second


def without_output_pointers(launch, outputs):
    params = dict(launch["params"])
    for name in outputs:
        params.pop(name)
    return dict(launch, params=params, thread=None)


# -- the fast path launches what the general path launches ---------------------------------------
def test_fast_path_launches_exactly_what_the_general_path_launches(fake):
    kernel, fake_driver, torch = fake(add_signature())
    a, b = FakeTensor((5000,), torch.float32), FakeTensor((5000,), torch.float32)
    assert kernel._fast is None
    first = kernel(a, b)
    second = kernel(a, b)
    third = kernel(a, b)
    general, fast, fast_again = fake_driver.launches
    assert general == dict(function=0xF00D, grid=(2, 1, 1), block=(256, 1, 1), shared=0, stream=0x5000,
                           params=dict(A=a.data_ptr(), B=b.data_ptr(), C=first.data_ptr(), n=5000),
                           thread=threading.get_ident())
    assert fast == dict(general, params=dict(general["params"], C=second.data_ptr()))
    assert fast_again["params"]["C"] == third.data_ptr() != second.data_ptr()
    assert second.shape == (5000,) and second.dtype is torch.float32 and second.get_device() == 0
    assert torch.empty_calls[0] == (((5000,),), torch.float32, 0)  # general path: a tuple and an ordinal
    assert torch.empty_calls[1] == ((5000,), torch.float32, ("cuda", 0))  # fast path: dims as arguments


def test_scalars_symbols_assumes_shared_bytes_and_two_outputs(fake):
    kernel, fake_driver, torch = fake(scale_signature())
    args = scale_args(torch, M=10, N=384, k=3)
    (c1, r1), (c2, r2) = launch_twice(kernel, fake_driver, args)
    general, fast = fake_driver.launches
    assert general["grid"] == (3, 3, 3) and general["shared"] == 3072
    assert general["params"] == dict(N=384, A=args[0].data_ptr(), alpha=0x3FC0, B=args[1].data_ptr(),
                                     W=args[2].data_ptr(), C=c1.data_ptr(), k=3, R=r1.data_ptr(), M=10)
    assert without_output_pointers(fast, "CR") == without_output_pointers(general, "CR")
    assert (fast["params"]["C"], fast["params"]["R"]) == (c2.data_ptr(), r2.data_ptr())
    assert c2.shape == (10, 384) and c2.dtype is torch.bfloat16 and r2.shape == (10,) and r2.dtype is torch.float32


def test_explicit_streams_and_outputs_passed_by_the_caller(fake):
    sig = scale_signature(out_idx=())
    kernel, fake_driver, torch = fake(sig)
    args = scale_args(torch)
    args[3:3] = [FakeTensor((8, 256), torch.bfloat16)]
    args += [FakeTensor((8,), torch.float32)]
    assert launch_twice(kernel, fake_driver, args, stream=0x77) == (None, None)
    general, fast = fake_driver.launches
    assert general["stream"] == fast["stream"] == 0x77
    assert without_output_pointers(fast, "") == without_output_pointers(general, "")
    cupy_like = types.SimpleNamespace(ptr=0x99)
    kernel(*args, stream=cupy_like)
    assert fake_driver.launches[-1]["stream"] == 0x99
    with pytest.raises(LaunchError, match="stream= must be a CUDA stream .* got str"):
        kernel(*args, stream="fast")


# -- every check hands the call to the general path, which raises its error --------------------------
def bad_scale_calls(torch):
    def variant(index, value):
        args = scale_args(torch)
        args[index] = value
        return args

    bf16, f32 = torch.bfloat16, torch.float32
    return [
        (scale_args(torch)[:4], "takes 5 argument(s) (A, B, W, alpha, k), got 4"),
        (variant(0, FakeTensor((8, 256), f32)), "argument 'A': expected dtype bfloat16, got float32"),
        (variant(0, FakeTensor((2, 8, 256), bf16)), "argument 'A': expected 2 dim(s) (M, N), got 3 dim(s)"),
        (variant(2, FakeTensor((3, 256), torch.float16)), "argument 'W': dim 0 must be 4, got 3"),
        (variant(1, FakeTensor((384,), f32)), "argument 'B': dim 0 is 384, but symbol N = 256 was bound by "
                                              "argument 'A' dim 1"),
        (variant(0, FakeTensor((8, 256), bf16, strides=(1, 8))), "argument 'A': expected a C-contiguous array"),
        (variant(0, FakeTensor((8, 256), bf16, address=0x7F0000000008)), "argument 'A': data pointer "
                                                                          "0x7f0000000008 is not aligned to 16"),
        (variant(1, FakeTensor((256,), f32, address=0x7F0000000002)), "argument 'B': data pointer"),
        (variant(0, FakeTensor((8, 256), bf16, address=0)), "argument 'A': its data pointer is null, with 2048"),
        (variant(1, FakeTensor((256,), f32, device=1)), "argument 'B': expected an array on cuda:0 (the current "
                                                        "device), got one on cuda:1"),
        (variant(0, FakeTensor((8, 256), bf16, device=-1)), "argument 'A': got a torch tensor on"),
        (variant(0, [[1.0] * 256] * 8), "argument 'A': expected a CUDA array"),
        (variant(3, "1.5"), "argument 'alpha': expected a bfloat16 scalar: expected a number, got str"),
        (variant(3, 1e39), "argument 'alpha': expected a bfloat16 scalar: 1e+39 overflows bfloat16"),
        (variant(4, 2**31), "argument 'k': expected a int32 scalar: 2147483648 is out of range"),
        (variant(4, 2.0), "argument 'k': expected a int32 scalar: expected an integer, got float"),
        (scale_args(torch, N=200), "assumption 'N % 128 == 0' does not hold: N = 200"),
        (scale_args(torch, k=0), "assumption 'M // k >= 1' cannot be evaluated"),
        (scale_args(torch, M=8, k=9), "assumption 'M // k >= 1' does not hold: M = 8, k = 9"),
        (scale_args(torch, M=8, N=128 * 65536, k=1), "grid dim y = N // 128 evaluates to 65536"),
        (scale_args(torch, k=-1), "assumption 'M // k >= 1' does not hold"),
        (scale_args(torch, M=16, k=8), "kernel 'scale' asks for 8192 bytes of dynamic shared memory; cuda:0 "
                                       "allows 4096"),
    ]


def test_every_failing_check_is_the_general_paths_error(fake):
    kernel, fake_driver, torch = fake(scale_signature(), max_dynamic_shared=4096)
    launch_twice(kernel, fake_driver, scale_args(torch))
    launched = len(fake_driver.launches)
    for args, message in bad_scale_calls(torch):
        assert kernel._fast.call(tuple(args), None) is SLOW, message
        with pytest.raises(LaunchError) as info:
            kernel(*args)
        assert message in str(info.value)
    assert len(fake_driver.launches) == launched


def in_place_signature():
    """Y (passed in, written) = f(X, W) over n elements, plus an allocated output C."""
    params = (TensorParam("X", "float32", ("n",), 16, written=False), TensorParam("W", "float32", (64,), 16,
                                                                                     written=False),
              TensorParam("Y", "float32", ("n",), 16), TensorParam("C", "float32", ("n",), 16))
    return KernelSignature(name="in_place", params=params, symbols=("n",), grid=("4", "1", "1"), block=(64, 1, 1),
                           cuda_params=("X", "W", "Y", "C", "n"), out_idx=(3,))


def test_overlap_with_a_written_tensor_is_the_general_paths_error(fake):
    kernel, fake_driver, torch = fake(in_place_signature())
    f32, base = torch.float32, 0x7E0000000000
    w = FakeTensor((64,), f32)
    launch_twice(kernel, fake_driver, [FakeTensor((256,), f32), w, FakeTensor((256,), f32)])
    launched = len(fake_driver.launches)
    overlapping = [
        (FakeTensor((256,), f32, address=base), FakeTensor((256,), f32, address=base), "'Y'", "'X'"),
        (FakeTensor((256,), f32, address=base), FakeTensor((256,), f32, address=base + 1008), "'Y'", "'X'"),
        (FakeTensor((256,), f32, address=base + 1008), FakeTensor((256,), f32, address=base), "'Y'", "'X'"),
        (FakeTensor((256,), f32), FakeTensor((256,), f32, address=w.data_ptr() + 240), "'Y'", "'W'"),
    ]
    for x, y, written, other in overlapping:
        assert kernel._fast.call((x, w, y), None) is SLOW
        with pytest.raises(LaunchError) as info:
            kernel(x, w, y)
        assert str(info.value) == (f"argument {written} (written by the kernel) overlaps argument {other}: the "
                                   "kernel assumes its tensors do not alias (__restrict__); pass a separate output")
    assert len(fake_driver.launches) == launched


def test_adjacent_read_only_overlapping_and_empty_tensors_take_the_fast_path(fake):
    kernel, fake_driver, torch = fake(in_place_signature())
    f32, base = torch.float32, 0x7E0000000000
    launch_twice(kernel, fake_driver, [FakeTensor((256,), f32), FakeTensor((64,), f32), FakeTensor((256,), f32)])
    x = FakeTensor((256,), f32, address=base)
    accepted = [
        (x, FakeTensor((64,), f32, address=base), FakeTensor((256,), f32, address=base + 1024)),
        (x, FakeTensor((64,), f32, address=base + 2048), FakeTensor((256,), f32, address=base - 1024)),
        (FakeTensor((0,), f32, address=base + 16), FakeTensor((64,), f32, address=base),
         FakeTensor((0,), f32, address=base + 16)),  # empty: inside W's bytes, yet touching none
    ]
    for args in accepted:
        assert kernel._fast.call(args, None) is not SLOW
        assert fake_driver.launches[-1]["params"]["Y"] == args[2].data_ptr()


def test_32_bit_element_limits_of_inputs_and_outputs(fake):
    sig = KernelSignature(name="outer", params=(TensorParam("a", "float32", ("M",)), TensorParam("b", "float32", ("N",)),
                                                TensorParam("c", "float32", ("M", "N"))),
                          symbols=("M", "N"), grid=("1", "1", "1"), block=(32, 1, 1),
                          cuda_params=("a", "b", "c", "M", "N"), out_idx=(2,), index_bits=32)
    kernel, fake_driver, torch = fake(sig)
    launch_twice(kernel, fake_driver, [FakeTensor((3,), torch.float32), FakeTensor((5,), torch.float32)])
    big = [FakeTensor((65536,), torch.float32), FakeTensor((65536,), torch.float32)]
    assert kernel._fast.call(tuple(big), None) is SLOW
    with pytest.raises(LaunchError, match=r"output 'c' of shape \(65536, 65536\) has 4294967296 elements"):
        kernel(*big)
    huge = [FakeTensor((2**31,), torch.float32), FakeTensor((1,), torch.float32)]
    with pytest.raises(LaunchError, match="argument 'a': 2147483648 elements exceed the kernel's 32-bit indexing"):
        kernel(*huge)


def test_an_empty_grid_returns_outputs_without_a_launch(fake):
    kernel, fake_driver, torch = fake(add_signature())
    launch_twice(kernel, fake_driver, [FakeTensor((8,), torch.float32)] * 2)
    empty = [FakeTensor((0,), torch.float32)] * 2
    assert kernel._fast.call(tuple(empty), None) is SLOW
    assert kernel(*empty).shape == (0,)
    assert len(fake_driver.launches) == 2


def test_a_new_context_takes_the_general_path_and_is_registered(fake):
    kernel, fake_driver, torch = fake(add_signature())
    on_0 = [FakeTensor((8,), torch.float32)] * 2
    launch_twice(kernel, fake_driver, on_0)
    fake_driver.context, fake_driver.device = OTHER_CONTEXT, 1
    assert kernel._fast.call(tuple(on_0), None) is SLOW
    with pytest.raises(LaunchError, match="expected an array on cuda:1 \\(the current device\\), got one on cuda:0"):
        kernel(*on_0)
    on_1 = [FakeTensor((8,), torch.float32, device=1)] * 2
    kernel(*on_1)
    assert kernel._fast.call(tuple(on_1), None).get_device() == 1
    assert fake_driver.launches[-1]["stream"] == 0x5001
    fake_driver.context, fake_driver.device = CONTEXT, 0
    assert kernel._fast.call(tuple(on_0), None) is not SLOW
    fake_driver.context_code = 201  # CUDA_ERROR_INVALID_CONTEXT
    assert kernel._fast.call(tuple(on_0), None) is SLOW


def test_launch_failures_read_the_same_on_both_paths(fake):
    kernel, fake_driver, torch = fake(add_signature())
    args = (FakeTensor((8,), torch.float32),) * 2
    kernel(*args)
    fake_driver.code = 719
    messages = []
    for path in (kernel._call, kernel._fast.call):
        with pytest.raises(LaunchError) as info:
            path(args, None)
        messages.append(str(info.value))
    assert messages[0] == messages[1] == ("launching 'add' with grid (1, 1, 1), block (256, 1, 1), 0 B shared "
                                          "failed: CUDA_ERROR_FAKE (a fake failure)")
    assert len(fake_driver.launches) == 3


def test_threads_launch_with_their_own_parameter_slots(fake):
    kernel, fake_driver, torch = fake(add_signature())
    kernel(*[FakeTensor((8,), torch.float32)] * 2)
    inputs = {}
    together = threading.Barrier(4)  # all alive at once, so thread idents are distinct

    def work(a, b):
        inputs[threading.get_ident()] = (a.data_ptr(), b.data_ptr())
        together.wait()
        for _ in range(300):
            kernel(a, b)
        together.wait()

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=work, args=(FakeTensor((4096,), torch.float32),
                                                       FakeTensor((4096,), torch.float32))) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    fast = fake_driver.launches[1:]
    assert len(fast) == 1200
    assert len(set(inputs.values())) == 4
    assert all((launch["params"]["A"], launch["params"]["B"]) == inputs[launch["thread"]] for launch in fast)


def test_without_the_raw_stream_api_or_with_constant_bad_grids_only_the_general_path_runs(fake):
    kernel, fake_driver, torch = fake(add_signature())
    del torch._C._cuda_getCurrentRawStream
    torch.cuda = types.SimpleNamespace(current_stream=lambda d: types.SimpleNamespace(cuda_stream=0x42))
    args = [FakeTensor((8,), torch.float32)] * 2
    kernel(*args)
    kernel(*args)
    assert kernel._fast is None and kernel._fast_unavailable
    assert [launch["stream"] for launch in fake_driver.launches] == [0x42, 0x42]
    assert not fastpath.available(scale_signature(grid=("0", "1", "1")), fake_torch())
    assert not fastpath.available(scale_signature(shared_bytes=-4), fake_torch())
    assert fastpath.available(scale_signature(), fake_torch())


def test_names_that_shadow_the_generated_codes_own_names(launcher):
    names = ("args", "stream", "device", "empty", "len", "slots", "SLOW", "Tensor", "launch", "t_x", "s_n")
    sig = KernelSignature(name="odd", params=tuple(TensorParam(n, "float32", ("min",)) for n in names[:-1])
                          + (ScalarParam(names[-1], "int64"),), symbols=("min",),
                          grid=("max(min, s_n) // 1", "1", "1"), block=(32, 1, 1),
                          cuda_params=names + ("min",), assumes=("min > 0",))
    torch = fake_torch()
    fake_driver = FakeDriver(sig)
    fast = fastpath.FastCall(sig, torch, fake_driver.raw, int, None, launcher)
    fast.register(CONTEXT, ctypes.c_void_p(0xF00D), 0, 0)
    tensors = [FakeTensor((6,), torch.float32) for _ in names[:-1]]
    assert fast.call(tuple(tensors) + (9,), None) is None
    launch = fake_driver.launches[0]
    assert launch["grid"] == (9, 1, 1)
    assert launch["params"] == {**{n: t.data_ptr() for n, t in zip(names, tensors)}, "s_n": 9, "min": 6}


def test_rank_0_tensors_and_generated_source_reads_each_tensor_once(launcher):
    sig = KernelSignature(name="fill", params=(TensorParam("x", "float32", ()), TensorParam("y", "float32", ())),
                          symbols=(), grid=("1", "1", "1"), block=(32, 1, 1), cuda_params=("x", "y"), out_idx=(1,))
    torch = fake_torch()
    fake_driver = FakeDriver(sig)
    fast = fastpath.FastCall(sig, torch, fake_driver.raw, int, None, launcher)
    fast.register(CONTEXT, ctypes.c_void_p(1), 0, 0)
    y = fast.call((FakeTensor((), torch.float32),), None)
    assert y.shape == () and torch.empty_calls == [(((),), torch.float32, ("cuda", 0))]
    source = fast_call_source(add_signature(), native=launcher is not None)
    for method in ("get_device()", "is_contiguous()", ".shape", "data_ptr()"):
        assert source.count(f"t_A{'.' if method[0] != '.' else ''}{method}") == 1


@pytest.mark.parametrize("text", ["(M + 3) // 4", "-N % 4", "1 < M <= 10 < 11", "M > 0 and N < 0", "M < 0 or K",
                                  "not M", "min(M, N, K)", "max(M, 4) * 2", "+M - -N", "0 or 0", "True"])
def test_expression_python_source_evaluates_like_the_closure(text):
    expr = Expr(text)
    env = {"M": 10, "N": -7, "K": 3}
    source = expr.to_python(lambda name: f"s_{name}")
    assert eval(source, {}, {f"s_{n}": v for n, v in env.items()}) == expr.closure({"M": 0, "N": 1, "K": 2})(
        [env["M"], env["N"], env["K"]])


SCALARS = {"bool": True, "int8": -7, "int16": -300, "int32": -70000, "int64": -(2**40), "uint8": 250,
           "uint16": 65000, "uint32": 2**32 - 5, "uint64": 2**64 - 9, "float16": -2.5, "bfloat16": 3.25,
           "float32": 0.1, "float64": 1e300}


def test_every_scalar_dtype_reaches_the_kernel_with_the_same_bits(fake):
    names = {dtype: f"s_{dtype}" for dtype in SCALARS}
    sig = KernelSignature(name="scalars", params=(TensorParam("x", "int8", ("n",)),)
                          + tuple(ScalarParam(names[d], d) for d in SCALARS), symbols=("n",),
                          grid=("n", "1", "1"), block=(32, 1, 1), cuda_params=("n", *reversed(names.values()), "x"),
                          index_bits=32)
    kernel, fake_driver, torch = fake(sig)
    launch_twice(kernel, fake_driver, [FakeTensor((3,), torch.int8), *SCALARS.values()])
    general, fast = fake_driver.launches
    assert fast == general
    assert general["params"]["s_uint64"] == 2**64 - 9 and general["params"]["s_int64"] == -(2**40)
    assert general["params"]["s_bfloat16"] == 0x4050 and general["params"]["s_float16"] == 0xC100
    assert general["params"]["s_float32"] == ctypes.c_float(0.1).value and general["params"]["s_bool"] is True


def test_the_native_launcher_rejects_malformed_calls_without_crashing():
    extension = native.load()
    if extension is None:
        pytest.skip("no C compiler or Python.h here: the native launcher cannot be built")
    fake_driver = FakeDriver(add_signature())
    launcher = ctypes.cast(fake_driver.raw.launch, ctypes.c_void_p).value
    config = (launcher, 1, 1, 1, 1, 32, 1, 1, 0, 0)
    with pytest.raises(TypeError, match="one kind per value"):
        extension.launch(*config, b"pp", 1)
    with pytest.raises(ValueError, match="unknown parameter kind z"):
        extension.launch(*config, b"z", 1)
    with pytest.raises(TypeError, match="an integer is required"):
        extension.launch(*config, b"p", "not a pointer")
    assert fake_driver.launches == []
    assert extension.launch(*config, b"pppi", 0x10, 0x20, 0x30, -3) == 0
    assert fake_driver.launches[0]["params"] == dict(A=0x10, B=0x20, C=0x30, n=-3)
    getter = ctypes.cast(fake_driver.raw.get_context, ctypes.c_void_p).value
    assert extension.current_context(getter) == CONTEXT
    fake_driver.context_code = 201
    assert extension.current_context(getter) == 0


def test_native_launcher_is_built_once_into_the_cache_and_optional(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEMLIR_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(native.shutil, "which", lambda name: None)
    assert native._build_and_import() is None  # no compiler: the fast path uses ctypes
    assert not list(tmp_path.rglob("*.so"))
    monkeypatch.undo()
    monkeypatch.setenv("TILEMLIR_CACHE_DIR", str(tmp_path))
    if native.shutil.which("cc") is None and native.shutil.which("gcc") is None:
        pytest.skip("no C compiler here")
    built = native._build_and_import()
    if built is None:
        pytest.skip("no Python.h here")
    (library,) = tmp_path.rglob("*.so")
    stamp = library.stat().st_mtime_ns
    monkeypatch.setattr(native.shutil, "which", lambda name: None)  # loads what is there, compiles nothing
    assert native._build_and_import() is not None and library.stat().st_mtime_ns == stamp


def test_fast_path_source_refuses_symbols_beyond_32_bits():
    """The Python fast path checks each symbol against the 32-bit limit, as the binder does."""
    sig = KernelSignature(name="rows", params=(TensorParam("a", "float32", ("M", "K")),),
                          symbols=("M", "K"), grid=("M", "1", "1"), block=(32, 1, 1),
                          cuda_params=("a", "M", "K"), index_bits=32)
    source = fast_call_source(sig, native=True)
    assert "if s_M >= 2147483648 or s_K >= 2147483648:\n            return SLOW" in source
    wide = KernelSignature(name="rows", params=sig.params, symbols=sig.symbols, grid=sig.grid, block=sig.block,
                           cuda_params=sig.cuda_params, index_bits=64)
    assert "2147483648" not in fast_call_source(wide, native=True)
