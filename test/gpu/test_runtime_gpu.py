"""The GPU runtime on a real device: launches of hand-written CUDA through `tilemlir.runtime`.

Skipped without torch or a CUDA device. Fresh random inputs, poisoned outputs
where the kernel writes a caller's buffer, float64 references.
"""

import logging
import shutil
import subprocess

import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from tilemlir.diagnostics import LaunchError
from tilemlir.runtime import KernelSignature, ScalarParam, TensorParam, build, load  # noqa: E402
from tilemlir.testing import relative_error

RMSNORM = r"""#include <cuda_bf16.h>
extern "C" __global__ void __launch_bounds__(256)
rmsnorm(const __nv_bfloat16* __restrict__ X, const __nv_bfloat16* __restrict__ W, __nv_bfloat16* __restrict__ Y,
        float eps, long long M, long long N) {
  __shared__ float partial[8];
  const long long row = blockIdx.x;
  const __nv_bfloat16* x = X + row * N;
  float sum = 0.0f;
  for (long long c = threadIdx.x * 8; c < N; c += 256 * 8) {
    uint4 packed = *reinterpret_cast<const uint4*>(x + c);  // 16-byte loads: X must be 16-byte aligned
    const __nv_bfloat16* v = reinterpret_cast<const __nv_bfloat16*>(&packed);
    for (int i = 0; i < 8; ++i) {
      float f = __bfloat162float(v[i]);
      sum += f * f;
    }
  }
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = sum;
  __syncthreads();
  float total = 0.0f;
  for (int w = 0; w < 8; ++w) total += partial[w];
  const float inv = rsqrtf(total / (float)N + eps);
  for (long long c = threadIdx.x; c < N; c += 256)
    Y[row * N + c] = __float2bfloat16_rn(__bfloat162float(x[c]) * inv * __bfloat162float(W[c]));
}
"""

REVERSE = r"""extern "C" __global__ void __launch_bounds__(1024)
reverse_rows(const float* __restrict__ X, float* __restrict__ Y, long long M, long long N) {
  extern __shared__ float row[];
  const long long base = (long long)blockIdx.x * N;
  for (long long c = threadIdx.x; c < N; c += 1024) row[c] = X[base + c];
  __syncthreads();
  for (long long c = threadIdx.x; c < N; c += 1024) Y[base + c] = 2.0f * row[N - 1 - c];
}
"""


REVERSE_24K = r"""extern "C" __global__ void __launch_bounds__(1024)
reverse_rows(const float* __restrict__ X, float* __restrict__ Y, long long M) {
  constexpr long long N = 24576;  // 96 KB of shared memory, a constant in the signature
  extern __shared__ float row[];
  const long long base = (long long)blockIdx.x * N;
  for (long long c = threadIdx.x; c < N; c += 1024) row[c] = X[base + c];
  __syncthreads();
  for (long long c = threadIdx.x; c < N; c += 1024) Y[base + c] = 2.0f * row[N - 1 - c];
}
"""


TWO_OUTPUTS = r"""#include <cuda_bf16.h>
extern "C" __global__ void __launch_bounds__(256)
two_outputs(const float* __restrict__ X, float* __restrict__ Y, __nv_bfloat16* __restrict__ Z, float shift, int N) {
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < N) {
    Y[i] = X[i] + shift;
    Z[i] = __float2bfloat16_rn(X[i]);
  }
}
"""


def rmsnorm_signature(out_idx=(2,)):
    return KernelSignature(
        name="rmsnorm",
        params=(TensorParam("X", "bfloat16", ("M", "N"), 16), TensorParam("W", "bfloat16", ("N",)),
                TensorParam("Y", "bfloat16", ("M", "N")), ScalarParam("eps", "float32")),
        symbols=("M", "N"), grid=("M", "1", "1"), block=(256, 1, 1), cuda_params=("X", "W", "Y", "eps", "M", "N"),
        assumes=("N % 8 == 0",), out_idx=out_idx)


def reverse_signature(shared="N * 4", n="N"):
    return KernelSignature(
        name="reverse_rows",
        params=(TensorParam("X", "float32", ("M", n)), TensorParam("Y", "float32", ("M", n))),
        symbols=("M",) if n != "N" else ("M", "N"), grid=("M", "1", "1"), block=(1024, 1, 1),
        cuda_params=("X", "Y", "M") + (("N",) if n == "N" else ()), shared_bytes=shared, out_idx=(1,))


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEMLIR_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def rmsnorm():
    return build(RMSNORM, rmsnorm_signature())


def reference_rmsnorm(x, w, eps):
    x64, w64 = x.double(), w.double()
    return x64 * torch.rsqrt((x64 * x64).mean(dim=1, keepdim=True) + eps) * w64


def random_bf16(*shape, generator):
    return torch.randn(*shape, generator=generator, device="cuda", dtype=torch.float32).to(torch.bfloat16)


@pytest.mark.parametrize("M, N", [(16384, 4096), (1000, 1000), (1, 8), (7, 4104)])
def test_rmsnorm_allocates_output_and_matches_float64(rmsnorm, M, N):
    gen = torch.Generator(device="cuda").manual_seed(M * 31 + N)
    x, w = random_bf16(M, N, generator=gen), random_bf16(N, generator=gen)
    y = rmsnorm(x, w, 1e-6)
    torch.cuda.synchronize()
    assert y.shape == (M, N) and y.dtype == torch.bfloat16 and y.device == x.device
    assert relative_error(y, reference_rmsnorm(x, w, 1e-6)) < 1e-2


def test_dynamic_m_reuses_one_kernel(rmsnorm):
    gen = torch.Generator(device="cuda").manual_seed(5)
    w = random_bf16(512, generator=gen)
    for M in (3, 64, 1025):
        x = random_bf16(M, 512, generator=gen)
        assert relative_error(rmsnorm(x, w, 1e-5), reference_rmsnorm(x, w, 1e-5)) < 1e-2


def test_in_place_output_is_fully_written():
    kernel = build(RMSNORM, rmsnorm_signature(out_idx=()))
    gen = torch.Generator(device="cuda").manual_seed(11)
    x, w = random_bf16(1000, 1000, generator=gen), random_bf16(1000, generator=gen)
    y = torch.full((1000, 1000), float("nan"), device="cuda", dtype=torch.bfloat16)
    assert kernel(x, w, y, 1e-6) is None
    torch.cuda.synchronize()
    assert not torch.isnan(y).any()
    assert relative_error(y, reference_rmsnorm(x, w, 1e-6)) < 1e-2


def test_bad_arguments_raise_launch_error_not_a_fault(rmsnorm):
    gen = torch.Generator(device="cuda").manual_seed(3)
    x, w = random_bf16(64, 1024, generator=gen), random_bf16(1024, generator=gen)
    with pytest.raises(LaunchError, match="argument 'X': expected dtype bfloat16, got float32"):
        rmsnorm(x.float(), w, 1e-6)
    with pytest.raises(LaunchError, match="argument 'W': dim 0 is 512, but symbol N = 1024 was bound by argument 'X'"):
        rmsnorm(x, w[:512], 1e-6)
    with pytest.raises(LaunchError, match="argument 'X': expected a C-contiguous array"):
        rmsnorm(random_bf16(1024, 64, generator=gen).t(), w, 1e-6)
    flat = random_bf16(64 * 1024 + 8, generator=gen)
    with pytest.raises(LaunchError, match="argument 'X': data pointer 0x[0-9a-f]+ is not aligned to 16 bytes"):
        rmsnorm(flat[1:1 + 64 * 1024].view(64, 1024), w, 1e-6)
    with pytest.raises(LaunchError, match="argument 'X': got a torch tensor on cpu"):
        rmsnorm(x.cpu(), w, 1e-6)
    with pytest.raises(LaunchError, match="assumption 'N % 8 == 0' does not hold: N = 1004"):
        rmsnorm(random_bf16(4, 1004, generator=gen), random_bf16(1004, generator=gen), 1e-6)
    with pytest.raises(LaunchError, match="argument 'eps': expected a float32 scalar"):
        rmsnorm(x, w, "1e-6")
    if torch.cuda.device_count() > 1:
        with pytest.raises(LaunchError, match="expected an array on cuda:0 \\(the current device\\), got one on cuda:1"):
            rmsnorm(x.to("cuda:1"), w, 1e-6)
    torch.cuda.synchronize()  # no asynchronous fault was left behind
    assert relative_error(rmsnorm(x, w, 1e-6), reference_rmsnorm(x, w, 1e-6)) < 1e-2


def test_dynamic_shared_memory_above_48kb():
    kernel = build(REVERSE, reverse_signature())
    gen = torch.Generator(device="cuda").manual_seed(7)
    for M, N in ((3, 40000), (130, 16384), (5, 1000)):  # 160 KB, 64 KB, 4 KB of shared memory
        x = torch.randn(M, N, generator=gen, device="cuda")
        assert torch.equal(kernel(x), 2.0 * x.flip(1))
    with pytest.raises(LaunchError, match="asks for 240000 bytes of dynamic shared memory; cuda:0 allows"):
        kernel(torch.randn(2, 60000, device="cuda"))


def test_constant_shared_memory_above_48kb():
    kernel = build(REVERSE_24K, reverse_signature(shared=str(24576 * 4), n=24576))
    x = torch.randn(9, 24576, device="cuda")
    assert torch.equal(kernel(x), 2.0 * x.flip(1))


def test_two_outputs_with_32_bit_symbols():
    kernel = build(TWO_OUTPUTS, KernelSignature(
        name="two_outputs",
        params=(TensorParam("X", "float32", ("N",)), TensorParam("Y", "float32", ("N",)),
                TensorParam("Z", "bfloat16", ("N",)), ScalarParam("shift", "float32")),
        symbols=("N",), grid=("(N + 255) // 256", "1", "1"), block=(256, 1, 1),
        cuda_params=("X", "Y", "Z", "shift", "N"), out_idx=(1, 2), index_bits=32))
    gen = torch.Generator(device="cuda").manual_seed(23)
    for n in (1, 255, 100003):
        x = torch.randn(n, generator=gen, device="cuda")
        y, z = kernel(x, 0.75)
        assert y.dtype == torch.float32 and z.dtype == torch.bfloat16 and z.shape == (n,)
        assert torch.equal(y, x + 0.75) and torch.equal(z, x.to(torch.bfloat16))


def test_debug_log_names_the_launch_path(caplog):
    caplog.set_level(logging.DEBUG, logger="tilemlir.runtime")
    kernel = build(REVERSE, reverse_signature())
    kernel(torch.randn(2, 100, device="cuda"))
    messages = [r.getMessage() for r in caplog.records]
    assert any("cold compile of reverse_rows" in m for m in messages)
    assert any(m.startswith("first launch of reverse_rows on cuda:0: stream") and "X: torch.Tensor" in m
               for m in messages)


def test_side_stream_and_explicit_stream(rmsnorm):
    gen = torch.Generator(device="cuda").manual_seed(9)
    x, w = random_bf16(2048, 4096, generator=gen), random_bf16(4096, generator=gen)
    want = reference_rmsnorm(x, w, 1e-6)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = rmsnorm(x, w, 1e-6)
        y_explicit = rmsnorm(x, w, 1e-6, stream=side)
    side.synchronize()
    assert relative_error(y, want) < 1e-2 and torch.equal(y, y_explicit)


def test_dlpack_only_arguments():
    class OnlyDLPack:
        def __init__(self, tensor):
            self.tensor = tensor

        def __dlpack__(self, **kwargs):
            return self.tensor.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.tensor.__dlpack_device__()

    kernel = build(RMSNORM, rmsnorm_signature(out_idx=()))
    gen = torch.Generator(device="cuda").manual_seed(13)
    x, w = random_bf16(300, 2048, generator=gen), random_bf16(2048, generator=gen)
    y = torch.full_like(x, float("nan"))
    kernel(OnlyDLPack(x), OnlyDLPack(w), OnlyDLPack(y), 1e-6)
    torch.cuda.synchronize()
    assert relative_error(y, reference_rmsnorm(x, w, 1e-6)) < 1e-2


def test_cupy_arrays_in_and_out():
    cupy = pytest.importorskip("cupy")
    kernel = build(REVERSE, reverse_signature())
    x = cupy.random.standard_normal((17, 5000), dtype=cupy.float32)
    y = kernel(x)
    assert isinstance(y, cupy.ndarray) and y.shape == (17, 5000)
    assert bool((y == 2.0 * x[:, ::-1]).all())


def test_exported_artifact_loads_and_runs(rmsnorm, tmp_path):
    kernel = load(rmsnorm.export(tmp_path / "art"))
    gen = torch.Generator(device="cuda").manual_seed(17)
    x, w = random_bf16(100, 4096, generator=gen), random_bf16(4096, generator=gen)
    assert relative_error(kernel(x, w, 1e-6), reference_rmsnorm(x, w, 1e-6)) < 1e-2


def test_with_cuda_source_hand_tuned_variant(rmsnorm):
    tuned = rmsnorm.with_cuda_source(rmsnorm.cuda_source().replace("rsqrtf(total / (float)N + eps)",
                                                                   "1.0f / sqrtf(total / (float)N + eps)"))
    gen = torch.Generator(device="cuda").manual_seed(19)
    x, w = random_bf16(512, 2048, generator=gen), random_bf16(2048, generator=gen)
    assert relative_error(tuned(x, w, 1e-6), reference_rmsnorm(x, w, 1e-6)) < 1e-2
    with pytest.raises(LaunchError, match="expected dtype bfloat16"):
        tuned(x.half(), w, 1e-6)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_standalone_host_launcher_builds_and_runs(rmsnorm, tmp_path):
    if torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("the launcher is built for sm_90a")
    out = rmsnorm.export(tmp_path / "host")
    subprocess.run(["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "rmsnorm.cu", "rmsnorm_host.cu", "-o", "rmsnorm"],
                   cwd=out, check=True, capture_output=True, timeout=300)
    run = subprocess.run(["./rmsnorm", "M=1000", "N=1000", "eps=0.000001", "iters=5"], cwd=out, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert "rmsnorm: grid (1000, 1, 1) block (256, 1, 1) shared 0 B:" in run.stdout and "us per launch" in run.stdout
    bad = subprocess.run(["./rmsnorm", "M=4", "N=1004"], cwd=out, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "assumption N % 8 == 0 does not hold" in bad.stderr
