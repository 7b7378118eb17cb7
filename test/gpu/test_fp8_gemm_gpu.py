"""fp8 GEMMs on the GPU: wgmma m64nNk32 through descriptors on e4m3, e5m2 and mixed operands (A M x K, B N x K:
K-major, the only form the ISA gives fp8) in 128, 64 and 32-byte swizzled rows, at ragged M, N and K; and
examples/fp8_gemm.py (DeepSeek-V3 block scales: sa per row and 128-wide K group, sb per 128 x 128 block) at an
issue-20 shape against a float64 product of the dequantized operands.

Each run draws fresh `randn` inputs (seed printed), fills the outputs with NaN bytes first, and compares by relative
norm error. The tensor cores add fp8 products with fewer bits than float32 inside an instruction (about 14, the
DeepSeek-V3 report measured), so the plain GEMMs' bound is looser than bf16's; the example promotes every 128-wide
group into float32 and rounds to bf16 at the end. Skipped without a GPU."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from example_cases import kernel_for  # noqa: E402
from mma_cases import FP8_GEMM_EXAMPLE, FP8_WGMMA_CASES, mma_kernel  # noqa: E402
from test_examples_gpu import with_caller_outputs  # noqa: E402

TORCH_FP8 = {"float8_e4m3": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2}
GROUP = 128


def generator():
    seed = int(np.random.SeedSequence().entropy % 2**31)
    print(f"seed {seed}")
    return torch.Generator(device="cuda").manual_seed(seed)


def relative_error(got, want) -> float:
    got = got.double()
    assert torch.isfinite(got).all(), "output has unwritten (NaN) or non-finite elements"
    return float(torch.linalg.norm(got - want) / torch.linalg.norm(want))


@pytest.mark.parametrize("name", sorted(FP8_WGMMA_CASES))
@pytest.mark.parametrize("m, n, k", [(128, 128, 128), (4096, 4096, 4096), (4095, 4096, 4096), (129, 520, 1000),
                                     (1, 256, 64)])
def test_fp8_wgmma_gemm(name, m, n, k):
    params = FP8_WGMMA_CASES[name]
    kernel = mma_kernel(name)
    assert "k32_f32_" in kernel.cuda_source()
    rng = generator()
    a = torch.randn((m, k), generator=rng, device="cuda").to(TORCH_FP8[params["dtype"]])
    b = torch.randn((n, k), generator=rng, device="cuda").to(TORCH_FP8[params.get("b_dtype", params["dtype"])])
    bias = torch.zeros(n, device="cuda")
    c = torch.empty((m, n), dtype=torch.float32, device="cuda")
    c.view(torch.uint8).fill_(0xFF)
    kernel(a, b, bias, c)
    torch.cuda.synchronize()
    assert relative_error(c, a.double() @ b.double().T) <= 2e-3


def quantized(x, rows_per_block):
    """x (float32, R x K) in e4m3 with a float32 scale per rows_per_block x 128 block (amax -> 448)."""
    rows, k = x.shape
    blocks = -(-rows // rows_per_block)
    padded = torch.zeros((blocks * rows_per_block, k), device=x.device)
    padded[:rows] = x
    tiles = padded.view(blocks, rows_per_block, k // GROUP, GROUP)
    scale = tiles.abs().amax(dim=(1, 3)).clamp(min=1e-4) / 448.0
    q = (tiles / scale[:, None, :, None]).to(torch.float8_e4m3fn).view(padded.shape)[:rows].contiguous()
    return q, scale.contiguous()


def dequantized(q, scale, rows_per_block):
    expanded = scale.double().repeat_interleave(rows_per_block, 0)[:q.shape[0]].repeat_interleave(GROUP, 1)
    return q.double() * expanded


@pytest.mark.parametrize("m", [4096, 4095, 129, 1])
def test_the_block_scaled_fp8_gemm_example(m):
    n, k = FP8_GEMM_EXAMPLE.params["N"], FP8_GEMM_EXAMPLE.params["K"]
    compiled = kernel_for(FP8_GEMM_EXAMPLE)
    assert "tl_wgmma_m64n128k32_f32_e4m3_e4m3" in compiled.cuda_source()
    kernel, _ = with_caller_outputs(compiled)
    rng = generator()
    a = torch.randn((m, k), generator=rng, device="cuda") * torch.rand((m, 1), generator=rng, device="cuda") * 10
    b = torch.randn((n, k), generator=rng, device="cuda")
    a_q, sa = quantized(a, 1)
    b_q, sb = quantized(b, GROUP)
    c = torch.empty((m, n), dtype=torch.bfloat16, device="cuda")
    c.view(torch.uint8).fill_(0xFF)
    kernel(a_q, b_q, sa, sb, c)
    torch.cuda.synchronize()
    assert relative_error(c, dequantized(a_q, sa, 1) @ dequantized(b_q, sb, GROUP).T) <= 5e-3
