"""The fast path against real torch tensors (CPU ones, with a fake driver whose
context says device -1): the torch calls it relies on behave as it assumes.
Skipped where torch is not installed."""

import ctypes

import pytest

from tilemlir.runtime import fastpath, native
from tilemlir.runtime.fastpath import SLOW
from tilemlir.runtime.signature import KernelSignature, ScalarParam, TensorParam

torch = pytest.importorskip("torch")
if not hasattr(torch._C, "_cuda_getCurrentRawStream"):  # the fast path reads CUDA torch's current stream
    pytest.skip("needs a CUDA build of torch (this one is CPU-only)", allow_module_level=True)

from test_runtime_fastpath import CONTEXT, FakeDriver  # noqa: E402  (after the skip: it needs no torch)


def rows_signature():
    return KernelSignature(name="rows", params=(TensorParam("X", "bfloat16", ("M", 64), 16), ScalarParam("eps", "float32"),
                                                TensorParam("Y", "float32", ("M", 64), 16)),
                           symbols=("M",), grid=("M", "1", "1"), block=(64, 1, 1), cuda_params=("X", "Y", "eps", "M"),
                           out_idx=(2,))


@pytest.fixture(params=["native", "ctypes"])
def fast(request, monkeypatch):
    assert hasattr(torch._C, "_cuda_getCurrentRawStream")
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda device: 0x51, raising=False)
    extension = native.load() if request.param == "native" else None
    if request.param == "native" and extension is None:
        pytest.skip("no C compiler or Python.h here: the native launcher cannot be built")
    sig = rows_signature()
    fake_driver = FakeDriver(sig)
    call = fastpath.FastCall(sig, torch, fake_driver.raw, int, None, extension)
    call.register(CONTEXT, ctypes.c_void_p(0xF00D), 0, 0)
    handle = call._contexts[CONTEXT][0]  # an int for the native launcher, a c_void_p for ctypes
    call._contexts[CONTEXT] = (handle, -1, torch.device("cpu"), 0)  # CPU tensors are on device -1
    return call, fake_driver


def test_real_tensors_launch_with_their_pointers_and_a_fresh_output(fast):
    call, fake_driver = fast
    x = torch.randn(6, 64).to(torch.bfloat16)
    y = call.call((x, 0.25), None)
    assert y.shape == (6, 64) and y.dtype is torch.float32 and y.is_contiguous() and y.device.type == "cpu"
    launch = fake_driver.launches[0]
    assert launch["grid"] == (6, 1, 1) and launch["stream"] == 0x51
    assert launch["params"] == dict(X=x.data_ptr(), Y=y.data_ptr(), eps=0.25, M=6)
    rows = torch.randn(10, 64).to(torch.bfloat16)[2:8]  # a contiguous view at an aligned offset
    call.call((rows, 1.0), None)
    assert fake_driver.launches[1]["params"]["X"] == rows.data_ptr()


def test_real_tensors_that_fail_a_check_go_to_the_general_path(fast):
    call, fake_driver = fast
    x = torch.randn(8, 64).to(torch.bfloat16)
    wide = torch.randn(8, 128).to(torch.bfloat16)
    flat = torch.randn(8 * 64 + 1).to(torch.bfloat16)
    for bad in (x.float(), x.t().contiguous().t(), wide[:, ::2], x[0], x.unsqueeze(0), x[:, :32],
                flat[1:].view(8, 64)):
        assert call.call((bad, 0.5), None) is SLOW
    assert call.call((x, "0.5"), None) is SLOW
    assert call.call((x.view(torch.int16).numpy(), 0.5), None) is SLOW
    assert fake_driver.launches == []


class NoStorage(torch.Tensor):
    """A wrapper subclass: shape, dtype and device, but no storage (data_ptr() is 0)."""

    @staticmethod
    def __new__(cls, like):
        return torch.Tensor._make_wrapper_subclass(cls, like.shape, dtype=like.dtype, device=like.device)

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise NotImplementedError(f"NoStorage has no data for {func}")


def test_a_tensor_without_storage_goes_to_the_general_path(fast):
    call, fake_driver = fast
    x = NoStorage(torch.randn(8, 64).to(torch.bfloat16))
    assert x.data_ptr() == 0
    assert call.call((x, 0.5), None) is SLOW
    assert fake_driver.launches == []


def test_empty_takes_dims_as_separate_arguments():
    assert torch.empty(3, 4, dtype=torch.float16, device=torch.device("cpu")).shape == (3, 4)
    assert torch.empty((), dtype=torch.float16, device=torch.device("cpu")).shape == ()


AXPY = r"""
extern "C" __global__ void __launch_bounds__(256) axpy(const float* __restrict__ A, const float* __restrict__ B,
                                                       float* __restrict__ C, float alpha, int n) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) C[i] = A[i] * alpha + B[i];
}
"""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("launcher", ["plan", "native", "ctypes"])
def test_gpu_fast_path_results_streams_and_errors(launcher, monkeypatch, tmp_path):
    from tilemlir.diagnostics import LaunchError
    from tilemlir.runtime import build
    from tilemlir.runtime.native_call import NativeCall

    monkeypatch.setenv("TILEMLIR_CACHE_DIR", str(tmp_path))
    if launcher != "plan":
        monkeypatch.setattr(NativeCall, "create", classmethod(lambda cls, *args: None))
    if launcher == "ctypes":
        monkeypatch.setattr(native, "load", lambda: None)
    sig = KernelSignature(name="axpy", params=(*(TensorParam(n, "float32", ("n",)) for n in "ABC"),
                                               ScalarParam("alpha", "float32")),
                          symbols=("n",), grid=("(n + 255) // 256", "1", "1"), block=(256, 1, 1),
                          cuda_params=("A", "B", "C", "alpha", "n"), out_idx=(2,), index_bits=32)
    kernel = build(AXPY, sig, use_cache=False)
    gen = torch.Generator(device="cuda").manual_seed(29)
    a, b = (torch.randn(10007, generator=gen, device="cuda") for _ in range(2))
    assert torch.equal(kernel(a, b, 0.5), a * 0.5 + b)  # the general path, which enables the fast path
    if launcher == "plan":
        assert isinstance(kernel._fast, NativeCall)
    else:
        assert isinstance(kernel._fast, fastpath.FastCall) and kernel._fast._native == (launcher == "native")
    for n in (1, 256, 100003):
        a, b = (torch.randn(n, generator=gen, device="cuda") for _ in range(2))
        c = kernel._fast.call((a, b, 0.5), None)
        assert c is not SLOW and torch.equal(c, a * 0.5 + b)  # alpha = 0.5: the product is exact
        assert torch.equal(kernel(a, b, -2.0), a * -2.0 + b)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        on_side = kernel(a, b, 0.5)
    explicit = kernel(a, b, 0.5, stream=side)
    side.synchronize()
    assert torch.equal(on_side, a * 0.5 + b) and torch.equal(explicit, on_side)
    with pytest.raises(LaunchError, match="argument 'A': expected dtype float32, got float64"):
        kernel(a.double(), b, 0.5)
    with pytest.raises(LaunchError, match="argument 'B': dim 0 is 5, but symbol n = 100003 was bound by argument 'A'"):
        kernel(a, b[:5], 0.5)
    with pytest.raises(LaunchError, match="argument 'A': got a torch tensor on cpu"):
        kernel(a.cpu(), b, 0.5)
    with pytest.raises(LaunchError, match="argument 'A': got a torch tensor on meta"):
        kernel(torch.empty_like(a, device="meta"), b, 0.5)
    with pytest.raises(LaunchError, match="argument 'A': its data pointer is null, with 100003 elements"):
        kernel(NoStorage(a), b, 0.5)
    torch.cuda.synchronize()
