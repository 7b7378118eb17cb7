"""Tensor-core GEMMs on the GPU, mma.sync m16n8k16 through ldmatrix and wgmma m64nNk16 through descriptors, fed by
cp.async or (tma=True) TMA boxes on mbarriers: bf16 and fp16 at several shapes, ragged M, N and K, transposed
operands, a fragment A, f16 accumulation, an epilogue, and examples/gemm.py itself.

Each run draws fresh `randn` inputs (seed printed), fills the outputs with NaN bytes first, and compares with a
float64 product on the GPU by relative norm error. Every kernel here must take its tensor-core path (its CUDA
calls the mma.sync or wgmma helper). Skipped without a GPU."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

from example_cases import kernel_for  # noqa: E402
from mma_cases import GEMM_EXAMPLE, mma_kernel  # noqa: E402

TORCH = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}


def relative_error(got, want) -> float:
    got = got.double()
    assert torch.isfinite(got).all(), "output has unwritten (NaN) or non-finite elements"
    return float(torch.linalg.norm(got - want) / torch.linalg.norm(want))


def run(kernel, m, n, k, trans_a, trans_b, dtype, out_dtype, epilogue=False, accum="float32"):
    seed = int(np.random.SeedSequence().entropy % 2**31)
    print(f"seed {seed}")
    generator = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn((k, m) if trans_a else (m, k), generator=generator, device="cuda").to(TORCH[dtype])
    b = torch.randn((n, k) if trans_b else (k, n), generator=generator, device="cuda").to(TORCH[dtype])
    bias = torch.randn(n, generator=generator, device="cuda")
    c = torch.empty((m, n), dtype=TORCH[out_dtype], device="cuda")
    c.view(torch.uint8).fill_(0xFF)
    kernel(a, b, bias.to(TORCH[accum]), c)  # bias has the accumulator's dtype
    torch.cuda.synchronize()
    want = (a.T if trans_a else a).double() @ (b.T if trans_b else b).double()
    if epilogue:
        want = torch.clamp(want + bias.double(), min=0)
    return relative_error(c, want)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("m, n, k", [(128, 128, 128), (4096, 4096, 4096), (4095, 4096, 4096), (129, 512, 1000),
                                     (1, 256, 64), (4097, 7168, 2048)])
def test_128x128x32_tiles(dtype, m, n, k):
    kernel = mma_kernel(f"mma_{'bf16' if dtype == 'bfloat16' else 'f16'}_128x128x32")
    assert run(kernel, m, n, k, False, False, dtype, "float32") <= 1e-4


@pytest.mark.parametrize("trans_a, trans_b", [(False, True), (True, False), (True, True)])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_transposed_operands(trans_a, trans_b, dtype):
    kernel = mma_kernel(f"mma_{'bf16' if dtype == 'bfloat16' else 'f16'}_trans_{int(trans_a)}{int(trans_b)}")
    assert run(kernel, 1000, 768, 520, trans_a, trans_b, dtype, "float32") <= 1e-4


@pytest.mark.parametrize("block", [(64, 64, 64), (128, 256, 32), (256, 128, 32)])
def test_other_tiles_and_warp_grids(block):
    kernel = mma_kernel("mma_bf16_{}x{}x{}".format(*block))
    assert run(kernel, 1031, 1024, 1040, False, False, "bfloat16", "float32") <= 1e-4


def test_fragment_a_operand():
    kernel = mma_kernel("mma_bf16_fragment_a")
    assert run(kernel, 300, 256, 96, False, False, "bfloat16", "float32") <= 1e-4


def test_float16_accumulator_and_output():
    kernel = mma_kernel("mma_f16_accumulate_f16")
    assert run(kernel, 512, 512, 256, False, False, "float16", "float16", accum="float16") <= 5e-3


def test_bias_relu_epilogue_into_bf16():
    kernel = mma_kernel("mma_bf16_bias_relu")
    assert run(kernel, 777, 640, 384, False, False, "bfloat16", "bfloat16", epilogue=True) <= 1e-2


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("block_k", [64, 32, 16])
@pytest.mark.parametrize("m, n, k", [(128, 128, 128), (4096, 4096, 4096), (4095, 4096, 4096), (129, 512, 1000),
                                     (1, 256, 64)])
def test_wgmma_128x128_tiles_every_swizzle(dtype, block_k, m, n, k):
    kernel = mma_kernel(f"wgmma_{'bf16' if dtype == 'bfloat16' else 'f16'}_128x128x{block_k}")
    assert run(kernel, m, n, k, False, False, dtype, "float32") <= 1e-4


@pytest.mark.parametrize("trans_a, trans_b", [(False, True), (True, False), (True, True)])
def test_wgmma_transposed_operands(trans_a, trans_b):
    kernel = mma_kernel(f"wgmma_bf16_trans_{int(trans_a)}{int(trans_b)}")
    assert run(kernel, 1000, 768, 520, trans_a, trans_b, "bfloat16", "float32") <= 1e-4


@pytest.mark.parametrize("name", ["wgmma_bf16_64x64x64", "wgmma_bf16_128x256x64", "wgmma_bf16_256x128x64",
                                  "wgmma_bf16_64x256x32_split_n"])
def test_wgmma_other_tiles_and_warpgroup_grids(name):
    assert run(mma_kernel(name), 1031, 1024, 1040, False, False, "bfloat16", "float32") <= 1e-4


def test_wgmma_bias_relu_epilogue_into_bf16():
    kernel = mma_kernel("wgmma_bf16_bias_relu")
    assert run(kernel, 777, 640, 384, False, False, "bfloat16", "bfloat16", epilogue=True) <= 1e-2


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("m", [4096, 4095, 129, 1])
def test_tma_wgmma_4096(dtype, m):
    """TMA-fed wgmma (tma=True) at N = K = 4096, ragged M: the boxes past M arrive as zeros."""
    kernel = mma_kernel(f"tma_wgmma_{'bf16' if dtype == 'bfloat16' else 'f16'}_128x128x64_4096")
    assert run(kernel, m, 4096, 4096, False, False, dtype, "float32") <= 1e-4


@pytest.mark.parametrize("block_k", [64, 32, 16])
@pytest.mark.parametrize("m", [1031, 129])
def test_tma_wgmma_ragged_every_swizzle(block_k, m):
    """N = K = 1000: the last column and k tiles are partly outside the tensors (TMA's zero fill, no guard)."""
    kernel = mma_kernel(f"tma_wgmma_bf16_128x128x{block_k}_ragged")
    assert run(kernel, m, 1000, 1000, False, False, "bfloat16", "float32") <= 1e-4


@pytest.mark.parametrize("trans_a, trans_b", [(False, True), (True, False), (True, True)])
def test_tma_wgmma_transposed_operands(trans_a, trans_b):
    kernel = mma_kernel(f"tma_wgmma_bf16_trans_{int(trans_a)}{int(trans_b)}")
    assert run(kernel, 1000, 768, 520, trans_a, trans_b, "bfloat16", "float32") <= 1e-4


@pytest.mark.parametrize("name", ["tma_wgmma_bf16_128x256x64", "tma_wgmma_bf16_256x128x64", "tma_mma_bf16_128x128x32"])
def test_tma_other_tiles_and_mma_sync(name):
    assert run(mma_kernel(name), 1031, 1024, 1040, False, False, "bfloat16", "float32") <= 1e-4


@pytest.mark.parametrize("m", [4096, 4095, 129])
def test_warp_specialized_wgmma_4096(m):
    """warp_specialize=True: the producer warpgroup's TMA boxes, the consumers' wgmma, full/empty rings."""
    assert run(mma_kernel("ws_wgmma_bf16_128x128x64_4096"), m, 4096, 4096, False, False, "bfloat16", "float32") <= 1e-4


@pytest.mark.parametrize("name, n, k", [("ws_wgmma_bf16_128x128x64_ragged", 1000, 1000),
                                        ("ws_wgmma_bf16_128x256x64", 1024, 1040)])
def test_warp_specialized_ragged_and_two_consumer_warpgroups(name, n, k):
    assert run(mma_kernel(name), 1031, n, k, False, False, "bfloat16", "float32") <= 1e-4


@pytest.mark.parametrize("m", [4096, 4095, 129])
def test_persistent_warp_specialized_wgmma(m):
    """persistent=True: 132 blocks walk the tiles; each role's ring counts the k tiles of its whole schedule."""
    assert run(mma_kernel("ws_persistent_bf16_128x256x64_4096"), m, 4096, 4096, False, False, "bfloat16",
               "float32") <= 1e-4


def test_persistent_on_few_blocks_with_ragged_edges():
    """Seven blocks through 9 x 8 ragged tiles: the slots a tile's last k tiles held are released after its
    last wgmma_wait and refilled with the next tile's first while the consumers store."""
    assert run(mma_kernel("ws_persistent_bf16_128x128x64_ragged"), 1031, 1000, 1000, False, False, "bfloat16",
               "float32") <= 1e-4


@pytest.mark.parametrize("name, m, n", [("ws_persistent_bf16_128x256x64_staged", 4095, 4096),
                                        ("ws_persistent_bf16_128x128x64_staged_ragged", 1031, 1000),
                                        ("ws_persistent_bf16_128x256x64_staged_slabs", 4095, 4096)])
def test_persistent_epilogue_through_shared_memory(name, m, n):
    """T.copy(C_f, C_s); T.copy(C_s, C): stmatrix into a swizzled shared tile, thread 0's TMA boxes out, the
    boxes' reads waited for before the next tile's epilogue; TMA clips the ragged M and N."""
    assert run(mma_kernel(name), m, n, n, False, False, "bfloat16", "bfloat16") <= 1e-2


def test_tma_wgmma_bias_relu_epilogue_into_bf16():
    kernel = mma_kernel("tma_wgmma_bf16_bias_relu")
    assert run(kernel, 777, 640, 384, False, False, "bfloat16", "bfloat16", epilogue=True) <= 1e-2


@pytest.mark.parametrize("m", [1, 127, 4095, 4097])
def test_the_gemm_example(m):
    """examples/gemm.py unchanged (f16 in, f16 out, f32 accumulator, 128x128x32 tiles, 3 stages)."""
    from test_examples_gpu import with_caller_outputs

    compiled = kernel_for(GEMM_EXAMPLE)
    assert "tl_wgmma_m64n" in compiled.cuda_source()  # tensor_cores=True on sm_90a: wgmma
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
