"""plan-pipeline end to end: the SIMT gemm (lower-gemm-simt) inside T.Pipelined(num_stages=2, 3, 4), run at thread
level on the CPU (races, out-of-range accesses and reads of unwritten shared elements are errors) against the tile-level
reference and a float64 product, with M and K not multiples of their blocks (the ragged tiles read zeros)."""

import numpy as np
import pytest

import tilemlir
import tilemlir.language as T
from tilemlir.backends.cpu.kernel import SimulationError, build
from tilemlir.ir_util import ops_named
from tilemlir.mlir import ir
from tilemlir.pass_infra.runner import run_pipeline
from tilemlir.pipeline import passes_until
from tilemlir.testing import relative_error


def simt_passes_until(stage: str) -> list[str]:
    """The pipeline's passes with select-mma selecting nothing: these tests pipeline the CUDA-core gemm
    (test_lower_gemm_mma.py pipelines the tensor-core one)."""
    return ["select-mma{enable=false}" if p == "select-mma" else p for p in passes_until(stage)]


def pipelined_gemm(num_stages, N=None, K=None, block_M=32, block_N=32, block_K=16, threads=128, dtype="float16"):
    """M run-time; N and K run-time when None, else compile-time (rows of known length: the copies vectorize,
    so the ring copies become cp.async)."""
    M = T.symbolic("M")
    N = T.symbolic("N") if N is None else N
    K = T.symbolic("K") if K is None else K

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


@pytest.mark.parametrize("num_stages", [2, 3, 4])
@pytest.mark.parametrize("m, n, k, static", [(45, 64, 37, False), (64, 32, 16 * 5 + 3, True), (33, 40, 20, True),
                                             (70, 64, 48, True)])
def test_pipelined_simt_gemm_matches_the_reference(num_stages, m, n, k, static, rng):
    """Static N and K: cp.async copies (4-byte ones where K rows are not 16-byte multiples), the ragged
    last K tile and the rows past M zero-filled by src_bytes."""
    fn = pipelined_gemm(num_stages, *((n, k) if static else (None, None)))
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    want = a.astype(np.float64) @ b.astype(np.float64)
    got = tilemlir.compile(fn, target="cpu", level="thread", tensor_cores=False)(a, b)
    reference = tilemlir.compile(fn, target="cpu", level="tile", tensor_cores=False)(a, b)
    assert relative_error(got, want) <= 1e-3
    assert np.array_equal(got, reference)  # same products in the same k order at both levels


def test_fewer_tiles_than_stages(rng):
    """K = 20: two K tiles in a 4-stage ring; the prologue's third tile and every in-loop copy are skipped."""
    fn = pipelined_gemm(4)
    a = rng.standard_normal((40, 20)).astype(np.float16)
    b = rng.standard_normal((20, 32)).astype(np.float16)
    got = tilemlir.compile(fn, target="cpu", level="thread", tensor_cores=False)(a, b)
    assert relative_error(got, a.astype(np.float64) @ b.astype(np.float64)) <= 1e-3


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


# -- cp.async in the thread-level simulation ----------------------------------------------------------------------


def final_module(fn):
    module = fn.frontend().module()
    with module.context:
        run_pipeline(module, ",".join(simt_passes_until("final")))
    return module


@pytest.mark.parametrize("k, copy_bytes", [(64, 16), (50, 4)])
def test_copies_are_asynchronous_at_thread_level(k, copy_bytes):
    text = str(final_module(pipelined_gemm(3, N=64, K=k)))
    assert "tile.async}" not in text  # every ring store became a cp.async
    assert f'"tile.cp_async"(%alloca, %arg0, ' in text and "bytes = 16 : i64" in text  # B rows of 128 bytes
    assert f"bytes = {copy_bytes} : i64" in text


@pytest.mark.parametrize("num_stages", [2, 3, 4])
def test_a_wait_that_retires_too_little_is_a_race(num_stages, rng):
    """The loop waits for one group fewer than tile k needs: its compute reads elements still in flight."""
    fn = pipelined_gemm(num_stages, N=32, K=50)
    a = rng.standard_normal((40, 50)).astype(np.float16)
    b = rng.standard_normal((50, 32)).astype(np.float16)
    module = final_module(fn)
    right = build(module, fn.frontend().info, level="thread")(a, b)  # the planned count: no race
    assert relative_error(right, a.astype(np.float64) @ b.astype(np.float64)) <= 1e-3
    with module.context:
        waits = [op for op in ops_named(module.operation, "tile.cp_async_wait")]
        assert [w.attributes["pending"].value for w in waits] == [num_stages - 2] * len(waits)
        for wait in waits:
            wait.attributes["pending"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), num_stages - 1)
    kernel = build(module, fn.frontend().info, level="thread")
    with pytest.raises(SimulationError, match=r"data race on shared buffer 'A_s' .* while the cp.async of "
                                                  r"thread \d+ into it has not landed"):
        kernel(a, b)


# -- swizzled rings (materialize-shared-layouts) -----------------------------------------------------------------


def swizzled_final_module(fn, widths):
    """The final-stage IR with `tile.swizzle` forced onto the shared tiles (a SIMT gemm gets none itself)."""
    module = fn.frontend().module()
    passes = simt_passes_until("final")
    with module.context:
        run_pipeline(module, ",".join(passes[:passes.index("plan-pipeline")]))
        allocs = ops_named(module.operation, "tile.alloc_shared")
        for alloc, width in zip(allocs, widths):
            alloc.attributes["tile.swizzle"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), width)
        run_pipeline(module, ",".join(passes[passes.index("plan-pipeline"):]))
    return module


@pytest.mark.parametrize("widths", [(64, 64), (32, 128)])
def test_swizzled_rings_compute_the_same_gemm(widths, rng):
    """A_s rows are 32 f16 = 64 bytes, B_s rows 64 f16 = 128 bytes: both swizzled, cp.async into the permuted
    16-byte atoms and the gemm reading through the same permutation give the unswizzled result bit for bit."""
    fn = pipelined_gemm(3, N=64, K=80, block_M=32, block_N=64, block_K=32)
    a = rng.standard_normal((50, 80)).astype(np.float16)
    b = rng.standard_normal((80, 64)).astype(np.float16)
    module = swizzled_final_module(fn, widths)
    assert str(module).count("arith.xori") >= 2 and str(module).count("tile.materialized") == 2
    got = build(module, fn.frontend().info, level="thread")(a, b)
    plain = build(final_module(fn), fn.frontend().info, level="thread")(a, b)
    assert np.array_equal(got, plain)
    assert relative_error(got, a.astype(np.float64) @ b.astype(np.float64)) <= 1e-3


def test_tile_level_reference_runs_the_planned_pipeline(rng):
    """The CPU tile level after plan-pipeline: ring copies as copies, commit/wait and the barrier as nothing; the
    result is the unpipelined reference's, bit for bit."""
    fn = pipelined_gemm(3, N=32, K=50)
    module = fn.frontend().module()
    with module.context:
        run_pipeline(module, "lower-gemm-simt,infer-layouts,plan-pipeline")
        assert "tile.cp_async_wait" in str(module) and "gpu.barrier" in str(module)
    a = rng.standard_normal((40, 50)).astype(np.float16)
    b = rng.standard_normal((50, 32)).astype(np.float16)
    planned = build(module, fn.frontend().info, level="tile")(a, b)
    assert np.array_equal(planned, tilemlir.compile(fn, target="cpu", level="tile", tensor_cores=False)(a, b))
