"""TMA-fed pipelines (plan-pipeline{tma} -> tma-copies) end to end in the CPU thread-level simulation, which runs
each TMA load from its tensor map with the hardware's zero fill and address swizzle, the mbarriers with their
phases (a wrong parity deadlocks, a read before the wait races) and the wgmma from its descriptors
(backends/cpu/simulate/, written from the PTX ISA, not from the lowering), against a float64 product and the
tile-level reference on fresh random inputs, at ragged M, N and K (the zero fill, no guard)."""

import ml_dtypes
import numpy as np
import pytest

import tilemlir
from support import static_gemm
from tilemlir.testing import relative_error


def operands(rng, m, n, k, trans_a, trans_b):
    dtype = ml_dtypes.bfloat16
    a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(dtype)
    want = (a.T if trans_a else a).astype(np.float64) @ (b.T if trans_b else b).astype(np.float64)
    return a, b, want


def simulated(fn, tensor_cores="wgmma"):
    kernel = tilemlir.compile(fn, target="cpu", level="thread", tensor_cores=tensor_cores, tma=True)
    return kernel, kernel.ir("final")


@pytest.mark.parametrize("block, threads, stages, shape, trans_a, trans_b", [
    ((64, 64, 64), 128, 3, (72, 72, 136), False, False),     # ragged M, N, K; one wgmma batch in flight
    ((64, 64, 32), 128, 2, (64, 64, 72), False, False),      # 64-byte A panels, B N-major, tiles a full stage ahead
    ((64, 128, 64), 128, 4, (65, 136, 128), False, False),   # B in two 128-byte panels, ragged N past the second
    ((64, 64, 64), 128, 3, (64, 72, 72), True, False),       # A stored K x M (M-major), ragged K
    ((64, 64, 64), 128, 3, (72, 64, 136), False, True),      # B stored N x K (K-major)
    ((128, 64, 32), 256, 3, (136, 64, 96), False, False),    # two warpgroups along M
    ((64, 128, 32), 256, 3, (64, 136, 72), False, False),    # two warpgroups along N
])
def test_tma_fed_wgmma_gemm_matches_float64(block, threads, stages, shape, trans_a, trans_b, rng):
    m, n, k = shape
    fn = static_gemm(*block, n=n, k=k, m=m, trans_a=trans_a, trans_b=trans_b, threads=threads, num_stages=stages)
    kernel, final = simulated(fn)
    assert final.count('"tile.tma_load"') >= 2 and '"tile.wgmma"' in final
    assert "tile.cp_async" not in final and "tile.fence_proxy_async" not in final
    a, b, want = operands(rng, m, n, k, trans_a, trans_b)
    got = kernel(a, b)
    assert relative_error(got, want) <= 1e-5
    reference = tilemlir.compile(fn, target="cpu", level="tile")(a, b)
    assert relative_error(got, reference) <= 1e-6


def test_a_copy_tma_cannot_run_stays_cp_async_in_the_same_loop(rng):
    """B's copy goes by TMA; A's rows are 40 bytes (K = 20), not a multiple of 16, so its copy stays cp.async:
    both kinds feed one wgmma in one loop, with the commit/wait groups and the proxy fences A's needs."""
    m, n, k = 64, 64, 20
    fn = static_gemm(64, 64, 16, n=n, k=k, num_stages=3)
    kernel, final = simulated(fn)
    assert final.count('"tile.tma_load"') == 2  # B's box in the prologue and in the loop
    assert "tile.cp_async_wait" in final and "tile.fence_proxy_async" in final
    a, b, want = operands(rng, m, n, k, False, False)
    assert relative_error(kernel(a, b), want) <= 1e-5


def test_mma_sync_reads_tma_tiles(rng):
    """tensor_cores=True (mma.sync, ldmatrix's generic reads) fed by TMA on swizzled rings."""
    m, n, k = 72, 64, 96
    fn = static_gemm(64, 64, 32, n=n, k=k, num_stages=3)
    kernel, final = simulated(fn, tensor_cores=True)
    assert '"tile.tma_load"' in final and '"tile.ldmatrix"' in final and "tile.cp_async" not in final
    a, b, want = operands(rng, m, n, k, False, False)
    assert relative_error(kernel(a, b), want) <= 1e-5


def test_without_the_option_nothing_is_tma():
    kernel = tilemlir.compile(static_gemm(64, 64, 64, n=64, k=128), target="cpu", level="thread",
                              tensor_cores="wgmma")
    final = kernel.ir("final")
    assert "tile.tma_load" not in final and "tile.mbarrier" not in final and "tile.cp_async" in final
