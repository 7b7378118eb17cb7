"""tilemlir.testing and autotuner.select on a real device, with hand-written CUDA built by the runtime
(no MLIR needed): do_bench against a kernel that spins for a known time, the L2 flush, device arrays in
assert_close, the byte fills and copies of runtime.memory, and select rejecting a kernel that leaves
elements unwritten and picking the faster of two correct ones.

Skipped without torch or a CUDA device.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from tilemlir.autotuner.select import Candidate, best, select  # noqa: E402
from tilemlir.runtime import KernelSignature, ScalarParam, TensorParam, build  # noqa: E402
from tilemlir.runtime.memory import fill_bytes, from_host, to_host  # noqa: E402
from tilemlir.testing import as_numpy, assert_close, do_bench  # noqa: E402

SPIN = r"""extern "C" __global__ void spin(float* __restrict__ Y, long long nanoseconds, int N) {
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < nanoseconds);
  if (threadIdx.x == 0 && blockIdx.x == 0) Y[0] = 1.0f;
}
"""

# Y[i] = 2 X[i] for i < N / DIVIDE (DIVIDE 1: all of Y), after spinning `nanoseconds`.
DOUBLE = r"""extern "C" __global__ void __launch_bounds__(256)
double_{tag}(const float* __restrict__ X, float* __restrict__ Y, long long nanoseconds, int N) {{
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {{ asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); }} while (now - start < nanoseconds);
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < N / {divide}) Y[i] = 2.0f * X[i];
}}
"""


def spin_signature():
    return KernelSignature(name="spin", params=(TensorParam("Y", "float32", ("N",)),
                                                ScalarParam("nanoseconds", "int64")),
                           symbols=("N",), grid=("1", "1", "1"), block=(32, 1, 1),
                           cuda_params=("Y", "nanoseconds", "N"), index_bits=32)


def double_kernel(tag, divide):
    signature = KernelSignature(
        name=f"double_{tag}", params=(TensorParam("X", "float32", ("N",), written=False),
                                      TensorParam("Y", "float32", ("N",)), ScalarParam("nanoseconds", "int64")),
        symbols=("N",), grid=("(N + 255) // 256", "1", "1"), block=(256, 1, 1),
        cuda_params=("X", "Y", "nanoseconds", "N"), index_bits=32)
    return build(DOUBLE.format(tag=tag, divide=divide), signature)


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEMLIR_CACHE_DIR", str(tmp_path / "cache"))


def test_do_bench_measures_a_kernel_of_known_duration():
    kernel = build(SPIN, spin_signature())
    y = torch.empty(1, device="cuda")
    for nanoseconds in (50_000, 500_000):
        ms = do_bench(lambda: kernel(y, nanoseconds), warmup=5, rep=50)
        assert nanoseconds * 1e-6 <= ms <= nanoseconds * 1e-6 * 1.2 + 0.01
    times = do_bench(lambda: kernel(y, 50_000), warmup=5, rep=20, return_mode="all")
    assert len(times) >= 100 and min(times) >= 0.05


def test_the_l2_flush_makes_a_cache_resident_read_slower():
    x = torch.randn(4 * 2**20, device="cuda")  # 16 MiB: fits the H200's L2
    flushed = do_bench(lambda: x.sum(), warmup=10, rep=50)
    resident = do_bench(lambda: x.sum(), warmup=10, rep=50, flush_l2=False)
    assert flushed > 1.1 * resident


def test_device_arrays_compare_and_copy(rng):
    values = rng.standard_normal((64, 48))
    tensor = torch.tensor(values, device="cuda", dtype=torch.bfloat16)
    assert_close(tensor, values)
    strided = torch.tensor(values, device="cuda", dtype=torch.float32).t()  # through the generic path
    np.testing.assert_array_equal(to_host(strided), values.astype(np.float32).T)
    wrong = values.copy()
    wrong[5, 7] += 1.0
    with pytest.raises(AssertionError, match=r"worst at \(5, 7\)"):
        assert_close(tensor, wrong)
    y = torch.empty(100, device="cuda", dtype=torch.float16)
    fill_bytes(y, 0xFF)
    assert (as_numpy(y).view(np.uint16) == 0xFFFF).all()
    host = rng.standard_normal(100).astype(np.float16)
    from_host(y, host)
    np.testing.assert_array_equal(y.cpu().numpy(), host)


def test_select_rejects_unwritten_elements_and_picks_the_faster_kernel(rng):
    x = torch.tensor(rng.standard_normal(4096), device="cuda", dtype=torch.float32)
    y = torch.tensor(rng.standard_normal(4096), device="cuda", dtype=torch.float32)
    before = y.clone()
    slow, half, fast = double_kernel("slow", 1), double_kernel("half", 2), double_kernel("fast", 1)
    spins = {"slow": 200_000, "half": 0, "fast": 20_000}
    candidates = [Candidate({"kernel": name}, k) for name, k in (("slow", slow), ("half", half), ("fast", fast))]
    trials = select(candidates, (x, y, 0), run=lambda kernel, args, config: kernel(args[0], args[1],
                                                                                   spins[config["kernel"]]),
                    ref_prog=lambda x, y, ns: 2.0 * x.double(), progress=False)
    assert trials[1].stage == "check" and "2048 of 4096 elements" in trials[1].error
    assert best(trials).config == {"kernel": "fast"}
    assert trials[0].ms > trials[2].ms * 3
    torch.testing.assert_close(y, before, rtol=0, atol=0)  # the caller's Y holds its values again
