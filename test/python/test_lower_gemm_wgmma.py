"""wgmma GEMMs (select-mma{instruction=wgmma} -> lower-gemm-mma) end to end in the CPU thread-level simulation,
which runs each wgmma from its descriptors with the hardware's canonical layouts and swizzle, checks the fences,
batches and proxy ordering (backends/cpu/simulate/warpgroup.py, written from the PTX ISA, not from the lowering),
against the tile-level reference and a float64 numpy product, on fresh random inputs: a descriptor offset,
swizzle or accumulator register of the lowering that disagrees with the ISA fails here."""

import ml_dtypes
import numpy as np
import pytest

import tilemlir
from support import static_gemm, tensor_core_gemm
from tilemlir.testing import relative_error


def operands(rng, m, n, k, trans_a, trans_b, dtype):
    a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(dtype)
    want = (a.T if trans_a else a).astype(np.float64) @ (b.T if trans_b else b).astype(np.float64)
    return a, b, want


def run_both(fn, a, b, bias):
    thread = tilemlir.compile(fn, target="cpu", level="thread", tensor_cores="wgmma")
    assert '"tile.wgmma"' in thread.ir("final"), "the gemm did not take the wgmma path"
    got = thread(a, b, bias)
    reference = tilemlir.compile(fn, target="cpu", level="tile")(a, b, bias)
    return got, reference


@pytest.mark.parametrize("block, threads, stages, shape, trans_a, trans_b", [
    ((64, 64, 64), 128, 2, (64, 64, 128), False, False),      # 128-byte A panels, B N-major in two panels
    ((64, 64, 32), 128, 3, (65, 64, 96), False, False),       # 64-byte A, ragged M, one batch in flight
    ((64, 64, 16), 128, 3, (64, 128, 64), False, False),      # 32-byte A
    ((64, 64, 64), 128, 3, (64, 64, 128), True, False),       # A stored K x M: M-major A
    ((64, 64, 64), 128, 3, (64, 64, 128), False, True),       # B stored N x K: K-major B
    ((64, 64, 32), 128, 2, (64, 64, 64), True, True),
    ((128, 64, 32), 256, 3, (128, 128, 64), False, False),    # two warpgroups along M
    ((64, 128, 32), 256, 3, (64, 128, 64), False, False),     # two warpgroups along N (n64 each)
])
def test_wgmma_gemm_matches_the_tile_reference(block, threads, stages, shape, trans_a, trans_b, rng):
    fn = tensor_core_gemm(*block, trans_a=trans_a, trans_b=trans_b, dtype="bfloat16", threads=threads,
                          num_stages=stages)
    a, b, want = operands(rng, *shape, trans_a, trans_b, ml_dtypes.bfloat16)
    bias = rng.standard_normal(shape[1]).astype(np.float32)
    got, reference = run_both(fn, a, b, bias)
    assert relative_error(got, want) <= 1e-5
    assert relative_error(got, reference) <= 1e-6


def test_a_wgmma_epilogue_reads_the_accumulator_layout(rng):
    """bias + ReLU in T.Parallel over C_f after the loop's last wait: the layout carries to the epilogue."""
    fn = tensor_core_gemm(64, 64, 32, dtype="float16", epilogue=True, num_stages=3)
    a, b, want = operands(rng, 64, 64, 96, False, False, np.float16)
    bias = rng.standard_normal(64).astype(np.float32)
    got, _ = run_both(fn, a, b, bias)
    assert relative_error(got, np.maximum(want + bias, 0)) <= 1e-5


FP8 = {"float8_e4m3": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2}


def test_a_bf16_epilogue_through_a_swizzled_shared_tile(rng):
    """The tile the accumulator is staged in is swizzled; wgmma's accumulator goes in by stmatrix (mma.sync's,
    on sm_90a without wgmma, by a 4-byte store of each lane's bf16 pair), the copy out reads 16-byte rows (or
    with tma=True is a TMA store); simulated thread by thread (races checked), C equals the direct epilogue's."""
    m, n, k = 136, 256, 192
    staged = static_gemm(128, 256, 64, n=n, k=k, threads=256, shared_epilogue=True, c_dtype="bfloat16")
    direct = static_gemm(128, 256, 64, n=n, k=k, threads=256, c_dtype="bfloat16")
    a = rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((k, n)).astype(ml_dtypes.bfloat16)
    for tma in (False, True):
        options = dict(level="thread", tensor_cores="wgmma", tma=tma)
        got = staged.compile("cpu", **options)(a, b)
        assert np.array_equal(got, direct.compile("cpu", **options)(a, b))
        assert relative_error(got, a.astype(np.float64) @ b.astype(np.float64)) <= 1e-2
    for tensor_cores, stmatrix, pairs in (("wgmma", 16, 0), ("mma_sync", 0, 1)):
        source = staged.compile("cuda", arch="sm_90a", tensor_cores=tensor_cores).cuda_source()
        assert "128 x 256, swizzled in 128-byte panels" in source.split("C_s =", 1)[1].split("\n", 1)[0]
        assert source.count("tl_stmatrix_x4_f32_bf16(&C_s[") == stmatrix
        assert source.count("*reinterpret_cast<bf16x2*>(&C_s[") == pairs
        assert source.count("*reinterpret_cast<const bf16x8*>(&C_s[") == 2  # the interior's and the ragged tail's


@pytest.mark.parametrize("block, threads, stages, shape, a_dtype, b_dtype", [
    ((64, 64, 128), 128, 2, (65, 64, 256), "float8_e4m3", "float8_e4m3"),   # 128-byte rows, ragged M, 4 k32 steps
    ((64, 64, 64), 128, 3, (64, 128, 128), "float8_e4m3", "float8_e5m2"),   # 64-byte rows, mixed kinds, in flight
    ((128, 64, 32), 256, 3, (128, 64, 96), "float8_e5m2", "float8_e5m2"),   # 32-byte rows, two warpgroups along M
])
def test_fp8_wgmma_gemm_matches_the_tile_reference(block, threads, stages, shape, a_dtype, b_dtype, rng):
    """wgmma m64nNk32 on fp8 operands, A M x K and B N x K (K-major, the only form the ISA gives fp8)."""
    m, n, k = shape
    fn = tensor_core_gemm(*block, trans_b=True, dtype=a_dtype, b_dtype=b_dtype, threads=threads, num_stages=stages)
    a = rng.standard_normal((m, k)).astype(FP8[a_dtype])
    b = rng.standard_normal((n, k)).astype(FP8[b_dtype])
    bias = rng.standard_normal(n).astype(np.float32)
    got, reference = run_both(fn, a, b, bias)
    want = a.astype(np.float64) @ b.astype(np.float64).T
    assert relative_error(got, want) <= 1e-6
    assert relative_error(got, reference) <= 1e-6
