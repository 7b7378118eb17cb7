"""examples/fp8_gemm.py (DeepSeek-V3 block-scaled fp8 GEMM) on its wgmma path: the tile-level reference and the
thread-level simulation of the sm_90a lowering (wgmma m64nNk32 from descriptors, per the PTX ISA) against a float64
product of the dequantized operands at ragged M, and the CUDA for sm_90a through NVRTC: no spills, no waits ptxas
had to inject. Fresh random inputs each run; bf16 output, so the tolerance is bf16's rounding."""

import re

import ml_dtypes
import numpy as np
import pytest

import tilemlir
from support import example_module
from tilemlir.runtime.nvrtc import CompileOptions, ptxas_report
from tilemlir.testing import relative_error

example = example_module("fp8_gemm")
BF16_TOLERANCE = 5e-3


def check(kernel, m, n, k, rng):
    inputs = example.make_inputs(rng, m=m, n=n, k=k)
    got = kernel(*inputs)
    assert got.dtype == ml_dtypes.bfloat16 and got.shape == (m, n)
    assert relative_error(got, example.reference(*inputs)[0]) <= BF16_TOLERANCE


@pytest.mark.parametrize("m", [129, 255])
def test_the_tile_level_matches_the_dequantized_product(m, rng):
    kernel = tilemlir.compile(example.fp8_gemm.instantiate(N=256, K=384), target="cpu", tensor_cores="wgmma")
    check(kernel, m, 256, 384, rng)


def test_the_wgmma_lowering_in_the_thread_simulation(rng):
    """Two warpgroups along M of a 128 x 128 tile, each with a per-group and a running accumulator."""
    kernel = tilemlir.compile(example.fp8_gemm.instantiate(N=128, K=256), target="cpu", level="thread",
                              tensor_cores="wgmma")
    assert '"tile.wgmma"' in kernel.ir("final")
    assert '"tile.wgmma_wait"() {pending = 0' in kernel.ir("final")  # the group's sum is read in its iteration
    check(kernel, 129, 128, 256, rng)


def test_the_cuda_at_a_deepseek_shape_neither_spills_nor_waits_for_wgmma_behind_the_programs_back():
    kernel = example.fp8_gemm.instantiate(N=7168, K=2048).compile("cuda", arch="sm_90a", tensor_cores="wgmma")
    source = kernel.cuda_source()
    assert re.search(r"tl_wgmma_m64n128k32_f32_e4m3_e4m3\(group_sum, ", source)
    report = ptxas_report(source, "gemm", CompileOptions(arch="sm_90a"))
    assert "0 bytes spill stores, 0 bytes spill loads" in report, report
    assert "serializ" not in report.lower() and "injected" not in report, report


def test_block_n_must_share_one_b_scale():
    with pytest.raises(ValueError, match="block_N = 256 divide them"):
        example.fp8_gemm.instantiate(N=512, K=256, block_N=256).frontend()
