"""Tensor-core GEMMs (select-mma -> lower-gemm-mma) run end to end in the CPU thread-level simulation, where
ldmatrix and mma.sync execute from the PTX ISA's fragment tables (backends/cpu/simulate/ptx_isa.py), against the
tile-level reference and a float64 numpy product, on fresh random inputs, outputs poisoned by the runtime: a
layout of analysis/mma_layouts.py or an address of lower-gemm-mma that disagrees with the hardware fails here."""

import re

import ml_dtypes
import numpy as np
import pytest

import tilemlir
import tilemlir.language as T
from tilemlir.backends.cpu.kernel import SimulationError, build
from tilemlir.dialects.tile import SHARED, memory_space
from tilemlir.ir_util import ops_named
from tilemlir.mlir import ir
from tilemlir.pass_infra.runner import run_pipeline
from tilemlir.pipeline import passes_until
from support import example_module, tensor_core_gemm as mma_gemm
from tilemlir.testing import relative_error




def operands(rng, m, n, k, trans_a, trans_b, dtype):
    a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(dtype)
    want = (a.T if trans_a else a).astype(np.float64) @ (b.T if trans_b else b).astype(np.float64)
    return a, b, want


def run_both(fn, a, b, bias):
    thread = tilemlir.compile(fn, target="cpu", level="thread")
    assert "tile.mma_sync" in thread.ir("thread"), "the gemm did not take the tensor-core path"
    got = thread(a, b, bias)
    reference = tilemlir.compile(fn, target="cpu", level="tile")(a, b, bias)
    return got, reference


@pytest.mark.parametrize("block, shape, trans_a, trans_b", [
    ((64, 64, 64), (64, 64, 64), False, False),          # one block, 2x2 warps of 32x32, 4 k16 steps
    ((128, 128, 32), (128, 256, 64), False, False),      # the example's tiles: 2x2 warps of 64x64, 2 k16 steps
    ((64, 64, 32), (65, 64, 32), False, False),          # ragged M: the copies guard, the gemm does not
    ((64, 64, 32), (64, 96, 64), True, False),           # A stored K x M: ldmatrix.trans for A
    ((64, 64, 32), (64, 64, 64), False, True),           # B stored N x K: ldmatrix without .trans for B
    ((32, 64, 16), (96, 64, 48), True, True),
])
def test_mma_gemm_matches_the_tile_reference(block, shape, trans_a, trans_b, rng):
    """f32 accumulation in ascending k at both levels (mma.sync modelled per the ISA): equal bit for bit."""
    fn = mma_gemm(*block, trans_a=trans_a, trans_b=trans_b)
    a, b, want = operands(rng, *shape, trans_a, trans_b, np.float16)
    bias = rng.standard_normal(shape[1]).astype(np.float32)
    got, reference = run_both(fn, a, b, bias)
    assert relative_error(got, want) <= 1e-5
    assert np.array_equal(got, reference)


def test_bfloat16_with_a_fragment_a_operand(rng):
    """A fragment A (warps all along M) feeds mma.sync from its own registers: no ldmatrix for A."""
    fn = mma_gemm(64, 32, 32, dtype="bfloat16", a_fragment=True)
    thread_ir = tilemlir.compile(fn, target="cpu", level="thread").ir("thread")
    assert not re.search(r'"tile.ldmatrix"\(%\w+, %\w+, [^)]*\) \{count = 4 : i64, dst_offset = \d+ : i64, '
                         r'trans = false\} : \(memref<64x32xbf16', thread_ir)
    a, b, want = operands(rng, 64, 64, 64, False, False, ml_dtypes.bfloat16)
    bias = rng.standard_normal(64).astype(np.float32)
    got, reference = run_both(fn, a, b, bias)
    assert relative_error(got, want) <= 1e-5
    assert np.array_equal(got, reference)


def test_float16_accumulator(rng):
    """f16 C: mma.sync rounds each 16-term partial sum once, the reference every addition: close, not equal."""
    fn = mma_gemm(64, 64, 32, accum="float16")
    a, b, want = operands(rng, 64, 64, 64, False, False, np.float16)
    bias = rng.standard_normal(64).astype(np.float16)
    got, reference = run_both(fn, a, b, bias)
    assert relative_error(got, want) <= 5e-3
    assert relative_error(got, reference) <= 5e-3


def test_epilogue_over_the_accumulator(rng):
    """bias + ReLU in a T.Parallel over C_f: the loop takes C's mma layout, each thread its own elements."""
    fn = mma_gemm(64, 64, 32, epilogue=True, policy=T.GemmWarpPolicy.FullRow)
    a, b, want = operands(rng, 64, 128, 64, False, False, np.float16)
    bias = rng.standard_normal(128).astype(np.float32)
    got, reference = run_both(fn, a, b, bias)
    assert relative_error(got, np.maximum(want + bias, 0)) <= 1e-5
    assert np.array_equal(got, reference)


def test_an_ldmatrix_of_a_tile_still_in_flight_is_a_race(rng):
    """examples/gemm.py's 3-stage cp.async ring (static N, K: the copies are cp.async) with a wait that
    retires one group too few: an ldmatrix reads a ring slot whose cp.async has not landed (the simulation
    checks ldmatrix rows as it checks loads)."""
    fn = example_module("gemm").matmul.instantiate(N=64, K=96, block_M=64, block_N=64, block_K=32)
    a, b, want = operands(rng, 70, 64, 96, False, False, np.float16)
    module = fn.frontend().module()
    with module.context:
        run_pipeline(module, ",".join(passes_until("final")))
    assert relative_error(build(module, fn.frontend().info, level="thread")(a, b), want) <= 1e-3
    with module.context:
        shared_loads = [op for op in ops_named(module.operation, "memref.load", "vector.load")
                        if memory_space(op.operands[0].type) == SHARED]
        assert ops_named(module.operation, "tile.ldmatrix") and not shared_loads  # only ldmatrix reads the rings
        waits = ops_named(module.operation, "tile.cp_async_wait")
        assert waits and ops_named(module.operation, "tile.cp_async")
        for wait in waits:
            wait.attributes["pending"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 2)
    with pytest.raises(SimulationError, match=r"data race on shared buffer '[AB]_s' .* reads it at .* while the "
                                              r"cp.async of thread \d+ into it has not landed"):
        build(module, fn.frontend().info, level="thread")(a, b)


def test_policy_reaches_the_gemm_and_a_bad_one_is_a_located_error():
    from tilemlir.pass_infra.runner import run_pipeline

    for policy, grid in ((T.GemmWarpPolicy.FullCol, (1, 4)), (T.GemmWarpPolicy.FullRow, (4, 1)),
                         (T.GemmWarpPolicy.Square, (2, 2)), (None, (2, 2))):
        module = mma_gemm(64, 64, 32, policy=policy).frontend().module()
        with module.context:
            run_pipeline(module, "select-mma")
            text = module.operation.get_asm()
        assert ("tile.gemm_policy" in text) == (policy is not None)
        assert policy is None or f'tile.gemm_policy = "{policy.value}"' in text
        assert f"warps_m = {grid[0]} : i64, warps_n = {grid[1]} : i64" in text
    bad = mma_gemm(64, 64, 32, policy="rows")
    with pytest.raises(tilemlir.CompileError, match=r"support.py:\d+:\d+: .*'policy' must be a "
                                                    r"T.GemmWarpPolicy \(Square, FullRow or FullCol\), got 'rows'"):
        bad.frontend()


# -- the CUDA of examples/gemm.py (NVRTC here, no GPU) -------------------------------------------------------------


@pytest.fixture(scope="module")
def example_kernel():
    """The example on mma.sync (sm_90a's default is wgmma: test_lower_gemm_wgmma.py)."""
    return tilemlir.compile(example_module("gemm").matmul.instantiate(N=4096, K=4096), target="cuda",
                            tensor_cores="mma_sync")


def test_example_takes_the_tensor_core_path(example_kernel):
    """128x128x32 tiles on 2x2 warps: per k16 step 4 ldmatrix.x4 of A, 4 ldmatrix.x4.trans of B, 32 mma.sync;
    one line each, the step loop unrolled twice, each helper defined once."""
    source = example_kernel.cuda_source()
    body = source[source.index("#pragma unroll 2\n"):]
    assert len(re.findall(r"^\s*tl_ldmatrix_x4\(a_frag( \+ \d+)?, &A_s\[", body, re.M)) == 4
    assert len(re.findall(r"^\s*tl_ldmatrix_x4_trans\(b_frag( \+ \d+)?, &B_s\[", body, re.M)) == 4
    calls = re.findall(r"^\s*tl_mma_m16n8k16_f32_f16\(C_f( \+ (\d+))?, a_frag( \+ \d+)?, b_frag( \+ \d+)?\);$", body,
                       re.M)
    assert sorted(int(c[1] or 0) for c in calls) == list(range(0, 128, 4))
    for helper in ("tl_ldmatrix_x4(", "tl_ldmatrix_x4_trans(", "tl_mma_m16n8k16_f32_f16("):
        assert source.count(f"__device__ __forceinline__ void {helper}") == 1


def test_example_sass_keeps_the_fragments_in_registers(example_kernel, tmp_path):
    from benchmarks.sass import find_cuobjdump, inspect_cubin

    if find_cuobjdump() is None:
        pytest.skip("no cuobjdump")
    import subprocess

    cubin = tmp_path / "gemm.cubin"
    cubin.write_bytes(example_kernel.cubin)
    usage = inspect_cubin(cubin)
    assert usage["local"] == 0 and usage["stack"] == 0 and usage["local_insts"] == 0, usage
    sass = subprocess.run([find_cuobjdump(), "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    opcodes = re.findall(r"/\*[0-9a-f]{4}\*/\s+([A-Z][A-Z0-9_]*)", sass)
    # two k16 steps of 32 mma.sync (m16n8k16 is one HMMA.16816) and 8 ldmatrix per K tile
    assert opcodes.count("HMMA") == 64
    assert opcodes.count("LDSM") == 16
