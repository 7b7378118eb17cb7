"""Tensor-core GEMMs (mma.sync m16n8k16 through ldmatrix) on the GPU: bf16 and fp16 at several shapes, ragged M,
N and K, transposed operands, a fragment A, f16 accumulation, an epilogue, and examples/gemm.py itself.

Each run draws fresh `randn` inputs (seed printed), fills the outputs with NaN bytes first, and compares with a
float64 product on the GPU by relative norm error. Every kernel here must take the tensor-core path (its CUDA
calls the mma helper). Skipped without a GPU."""

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

import tilemlir  # noqa: E402
import tilemlir.language as T  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TORCH = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def gemm_kernel(block_M, block_N, block_K, trans_a=False, trans_b=False, dtype="float16", accum="float32",
                out_dtype="float32", threads=128, a_fragment=False, epilogue=False, num_stages=2):
    """C = op(A) @ op(B) (then + bias and ReLU with `epilogue`) over run-time M, N, K; C passed by the caller."""
    M, N, K = T.symbolic("M"), T.symbolic("N"), T.symbolic("K")
    a_shape = (K, M) if trans_a else (M, K)
    b_shape = (N, K) if trans_b else (K, N)
    a_tile = (block_K, block_M) if trans_a else (block_M, block_K)
    b_tile = (block_N, block_K) if trans_b else (block_K, block_N)

    @T.prim_func
    def gemm(A: T.Tensor(a_shape, dtype), B: T.Tensor(b_shape, dtype), bias: T.Tensor((N,), accum),
             C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            if a_fragment:
                A_t = T.alloc_fragment(a_tile, dtype)
            else:
                A_t = T.alloc_shared(a_tile, dtype)
            B_s = T.alloc_shared(b_tile, dtype)
            C_f = T.alloc_fragment((block_M, block_N), accum)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                if trans_a:
                    T.copy(A[k * block_K, by * block_M], A_t)
                else:
                    T.copy(A[by * block_M, k * block_K], A_t)
                if trans_b:
                    T.copy(B[bx * block_N, k * block_K], B_s)
                else:
                    T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_t, B_s, C_f, transpose_A=trans_a, transpose_B=trans_b)
            if epilogue:
                for i, j in T.Parallel(block_M, block_N):
                    C_f[i, j] = T.max(C_f[i, j] + bias[bx * block_N + j], 0)
            T.copy(C_f, C[by * block_M, bx * block_N])

    kernel = tilemlir.compile(gemm, target="cuda")
    assert "tl_mma_m16n8k16_" in kernel.cuda_source(), "the gemm did not take the tensor-core path"
    return kernel


def relative_error(got, want) -> float:
    got = got.double()
    assert torch.isfinite(got).all(), "output has unwritten (NaN) or non-finite elements"
    return float(torch.linalg.norm(got - want) / torch.linalg.norm(want))


def run(kernel, m, n, k, trans_a, trans_b, dtype, out_dtype, epilogue=False):
    seed = int(np.random.SeedSequence().entropy % 2**31)
    print(f"seed {seed}")
    generator = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn((k, m) if trans_a else (m, k), generator=generator, device="cuda").to(TORCH[dtype])
    b = torch.randn((n, k) if trans_b else (k, n), generator=generator, device="cuda").to(TORCH[dtype])
    bias = torch.randn(n, generator=generator, device="cuda")
    c = torch.empty((m, n), dtype=TORCH[out_dtype], device="cuda")
    c.view(torch.uint8).fill_(0xFF)
    kernel(a, b, bias.to(torch.float32), c)
    torch.cuda.synchronize()
    want = (a.T if trans_a else a).double() @ (b.T if trans_b else b).double()
    if epilogue:
        want = torch.clamp(want + bias.double(), min=0)
    return relative_error(c, want)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("m, n, k", [(128, 128, 128), (4096, 4096, 4096), (4095, 4096, 4096), (129, 512, 1000),
                                     (1, 256, 64), (4097, 7168, 2048)])
def test_128x128x32_tiles(dtype, m, n, k):
    kernel = gemm_kernel(128, 128, 32, dtype=dtype)
    assert run(kernel, m, n, k, False, False, dtype, "float32") <= 1e-4


@pytest.mark.parametrize("trans_a, trans_b", [(False, True), (True, False), (True, True)])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_transposed_operands(trans_a, trans_b, dtype):
    kernel = gemm_kernel(128, 128, 32, trans_a=trans_a, trans_b=trans_b, dtype=dtype)
    assert run(kernel, 1000, 768, 520, trans_a, trans_b, dtype, "float32") <= 1e-4


@pytest.mark.parametrize("block", [(64, 64, 64), (128, 256, 32), (256, 128, 32)])
def test_other_tiles_and_warp_grids(block):
    kernel = gemm_kernel(*block, threads=256 if block != (64, 64, 64) else 128, dtype="bfloat16")
    assert run(kernel, 1031, 1024, 1040, False, False, "bfloat16", "float32") <= 1e-4


def test_fragment_a_operand():
    kernel = gemm_kernel(64, 64, 32, dtype="bfloat16", a_fragment=True)
    assert run(kernel, 300, 256, 96, False, False, "bfloat16", "float32") <= 1e-4


def test_float16_accumulator_and_output():
    kernel = gemm_kernel(128, 128, 32, dtype="float16", accum="float16", out_dtype="float16")
    assert run(kernel, 512, 512, 256, False, False, "float16", "float16") <= 5e-3


def test_bias_relu_epilogue_into_bf16():
    kernel = gemm_kernel(128, 128, 32, dtype="bfloat16", out_dtype="bfloat16", epilogue=True)
    assert run(kernel, 777, 640, 384, False, False, "bfloat16", "bfloat16", epilogue=True) <= 1e-2


@pytest.mark.parametrize("m", [1, 127, 4095, 4097])
def test_the_gemm_example(m):
    """examples/gemm.py unchanged (f16 in, f16 out, f32 accumulator, 128x128x32 tiles, 3 stages)."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    import gemm

    from test_examples_gpu import with_caller_outputs

    compiled = tilemlir.compile(gemm.matmul.instantiate(N=4096, K=4096), target="cuda")
    assert "tl_mma_m16n8k16_f32_f16" in compiled.cuda_source()
    kernel, _ = with_caller_outputs(compiled)
    seed = int(np.random.SeedSequence().entropy % 2**31)
    print(f"seed {seed}")
    generator = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn((m, 4096), generator=generator, device="cuda").half()
    b = torch.randn((4096, 4096), generator=generator, device="cuda").half()
    c = torch.empty((m, 4096), dtype=torch.float16, device="cuda")
    c.view(torch.uint8).fill_(0xFF)
    kernel(a, b, c)
    torch.cuda.synchronize()
    assert relative_error(c, a.double() @ b.double()) <= 1e-3
