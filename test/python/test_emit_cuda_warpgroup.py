"""The CUDA of wgmma GEMMs (emit_cuda/warpgroup.py): the generated helpers, a whole kernel through NVRTC for
sm_90a, and ptxas's report on it: no spills and no serialized wgmma (ptxas serializes the instructions, and
says so only in its verbose report, when accumulator registers are touched inside the asynchronous window)."""

import re

import pytest

from support import tensor_core_gemm
from tilemlir.diagnostics import CompileError
from tilemlir.emit_cuda.warpgroup import wgmma_helper
from tilemlir.runtime.nvrtc import CompileOptions, ptxas_report


def test_the_wgmma_helper_binds_every_accumulator_and_the_majors_as_immediates():
    name, text = wgmma_helper(64, "bf16", trans_a=False, trans_b=True)
    assert name == "tl_wgmma_m64n64k16_f32_bf16_kn"
    assert "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16" in text
    assert re.findall(r'"\+f"\(d\[(\d+)\]\)', text) == [str(i) for i in range(32)]
    assert "{%0, %1," in text and "%31}, %32, %33, 1, 1, 1, 0, 1;" in text
    assert wgmma_helper(256, "f16", trans_a=True, trans_b=False)[0] == "tl_wgmma_m64n256k16_f32_f16_mk"


def test_the_fp8_helper_is_k32_with_no_imm_trans_and_names_both_types():
    name, text = wgmma_helper(128, "e4m3", trans_a=False, trans_b=False, b_type="e5m2")
    assert name == "tl_wgmma_m64n128k32_f32_e4m3_e5m2"
    assert "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e5m2" in text
    assert re.findall(r'"\+f"\(d\[(\d+)\]\)', text) == [str(i) for i in range(64)]
    assert "%63}, %64, %65, 1, 1, 1;" in text
    assert wgmma_helper(64, "e5m2", trans_a=False, trans_b=False)[0] == "tl_wgmma_m64n64k32_f32_e5m2_e5m2"


@pytest.fixture(scope="module")
def wgmma_kernel():
    fn = tensor_core_gemm(128, 128, 64, dtype="bfloat16", num_stages=3)
    return fn.compile("cuda", arch="sm_90a", tensor_cores="wgmma")


def test_a_pipelined_wgmma_gemm_fences_each_barrier_and_waits_its_batch(wgmma_kernel):
    source = wgmma_kernel.cuda_source()
    assert "extern __shared__ __align__(1024) unsigned char smem[];" in source
    body = source[source.index("__global__"):]
    # the ring's wait (copies one tile ahead: a wgmma batch stays in flight), then the writers' proxy fence,
    # then the barrier; per k16 step two m64n128 instructions
    assert re.search(r"tl_cp_async_wait<0>\(\);\s+tl_fence_proxy_async\(\);\s+__syncthreads\(\);", body)
    assert body.count("tl_fence_proxy_async();") == body.count("__syncthreads();")
    calls = re.findall(r"tl_wgmma_m64n128k16_f32_bf16_kn\((C_f(?: \+ \d+)?), ", body)
    assert calls and calls == ["C_f", "C_f + 64"] * (len(calls) // 2)  # the k loop may be split in two
    fence, loop, commit, wait, last = (body.index(s) for s in ("tl_wgmma_fence();", "#pragma unroll 4",
                                                               "tl_wgmma_commit();", "tl_wgmma_wait<1>();",
                                                               "tl_wgmma_wait<0>();"))
    assert fence < loop < commit < wait < last


def test_ptxas_neither_spills_nor_serializes_the_wgmma_gemm(wgmma_kernel):
    report = ptxas_report(wgmma_kernel.cuda_source(), "gemm", CompileOptions(arch="sm_90a"))
    assert "0 bytes spill stores, 0 bytes spill loads" in report, report
    assert "serializ" not in report.lower(), report
    registers = int(re.search(r"Used (\d+) registers", report).group(1))
    assert 128 <= registers <= 255  # 128 accumulators a thread, none demoted


def test_wgmma_needs_hopper_and_a_known_instruction():
    fn = tensor_core_gemm(128, 128, 64, dtype="bfloat16")
    with pytest.raises(CompileError, match="option tensor_cores='wgmma' needs arch sm_90a .Hopper's wgmma., not sm_80"):
        fn.compile("cuda", arch="sm_80", tensor_cores="wgmma")
    with pytest.raises(CompileError, match="option tensor_cores for target 'cuda' must be True, False, 'mma_sync' or "
                                           "'wgmma', got 'tcgen05'"):
        fn.compile("cuda", arch="sm_90a", tensor_cores="tcgen05")
