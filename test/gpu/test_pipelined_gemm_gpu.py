"""The pipelined SIMT gemm on the GPU: T.Pipelined(num_stages=1..4) rings of cp.async copies with ragged M and K
(zero fill by src_bytes), and a ring past 48 KiB of shared memory (the runtime raises the kernel's limit at load).

Fresh random inputs, the output poisoned before each launch, float64 references. Skipped without a GPU.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

import tilemlir  # noqa: E402
import tilemlir.language as T  # noqa: E402


def pipelined_gemm(num_stages, N, K, block_M=64, block_N=64, block_K=32, threads=128, dtype="float16"):
    M = T.symbolic("M")

    @tilemlir.jit
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), dtype)
            B_s = T.alloc_shared((block_K, block_N), dtype)
            C_f = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block_M, bx * block_N])

    return gemm


def run(kernel, m, n, k, dtype=torch.float16, seed=0):
    generator = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn((m, k), generator=generator, device="cuda").to(dtype)
    b = torch.randn((k, n), generator=generator, device="cuda").to(dtype)
    c = torch.full((m, n), float("nan"), device="cuda")
    kernel(a, b, c)
    torch.cuda.synchronize()
    want = a.double() @ b.double()
    got = c.double()
    assert torch.isfinite(got).all(), "unwritten or non-finite output elements"
    return float(torch.linalg.norm(got - want) / torch.linalg.norm(want))


@pytest.mark.parametrize("num_stages", [1, 2, 3, 4])
@pytest.mark.parametrize("m, n, k", [(1024, 512, 512), (4095, 512, 520), (129, 256, 100)])
def test_pipelined_gemm(num_stages, m, n, k):
    """K = 520 and 100 leave a ragged last K tile (rows of 1040 / 200 bytes: 16- and 8-byte cp.async), M = 4095
    and 129 ragged row blocks."""
    kernel = tilemlir.compile(pipelined_gemm(num_stages, n, k), target="cuda")
    if num_stages > 1:
        assert "tl_cp_async_wait<" in kernel.cuda_source()
    assert run(kernel, m, n, k) <= 1e-3


def test_ring_past_48_kib_of_shared_memory():
    """4 stages of 64x128 and 128x64 f16 tiles: 128 KiB of dynamic shared memory."""
    kernel = tilemlir.compile(pipelined_gemm(4, 512, 1024, block_M=64, block_N=64, block_K=128), target="cuda")
    assert "131072 bytes of dynamic shared memory" in kernel.cuda_source()
    assert run(kernel, 1000, 512, 1024) <= 1e-3
