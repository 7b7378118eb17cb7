"""plan-pipeline end to end: the SIMT gemm (lower-gemm-simt) inside T.Pipelined(num_stages=2, 3, 4), run at thread
level on the CPU (races, out-of-range accesses and reads of unwritten shared elements are errors) against the tile-level
reference and a float64 product, with M and K not multiples of their blocks (the ragged tiles read zeros)."""

import numpy as np
import pytest

import tilemlir
import tilemlir.language as T
from tilemlir.pass_infra.runner import run_pipeline


def pipelined_gemm(num_stages, block_M=32, block_N=32, block_K=16, threads=128, dtype="float16"):
    M, N, K = T.symbolic("M"), T.symbolic("N"), T.symbolic("K")

    @tilemlir.jit(out_idx=[2])
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


def rel_err(got, want) -> float:
    got = np.asarray(got, np.float64)
    assert np.isfinite(got).all()
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


@pytest.mark.parametrize("num_stages", [2, 3, 4])
@pytest.mark.parametrize("m, n, k", [(45, 64, 37), (64, 32, 16 * 5 + 3), (33, 40, 20)])
def test_pipelined_simt_gemm_matches_the_reference(num_stages, m, n, k, rng):
    fn = pipelined_gemm(num_stages)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    want = a.astype(np.float64) @ b.astype(np.float64)
    got = tilemlir.compile(fn, target="cpu", level="thread")(a, b)
    reference = tilemlir.compile(fn, target="cpu", level="tile")(a, b)
    assert rel_err(got, want) <= 1e-3
    assert np.array_equal(got, reference)  # same products in the same k order at both levels


def test_fewer_tiles_than_stages(rng):
    """K = 20: two K tiles in a 4-stage ring; the prologue's third tile and every in-loop copy are skipped."""
    fn = pipelined_gemm(4)
    a = rng.standard_normal((40, 20)).astype(np.float16)
    b = rng.standard_normal((20, 32)).astype(np.float16)
    got = tilemlir.compile(fn, target="cpu", level="thread")(a, b)
    assert rel_err(got, a.astype(np.float64) @ b.astype(np.float64)) <= 1e-3


@pytest.mark.parametrize("num_stages", [2, 3, 4])
def test_ring_depth_and_group_counts(num_stages):
    module = pipelined_gemm(num_stages).frontend().module()
    with module.context:
        run_pipeline(module, "lower-gemm-simt,infer-layouts,plan-pipeline")
        text = str(module)
    assert f'memref<{num_stages}x32x16xf16, "shared">' in text and f'memref<{num_stages}x16x32xf16, "shared">' in text
    assert text.count('"tile.cp_async_commit"') == num_stages  # S-1 in the prologue, one per iteration
    assert text.count(f'"tile.cp_async_wait"() {{pending = {num_stages - 2} : i64}}') == 1
    assert text.count("tile.async") == 2 * num_stages  # the two copies, S-1 times before the loop and once in it
