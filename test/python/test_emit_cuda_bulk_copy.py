"""The CUDA of TMA-fed GEMMs (emit_cuda/bulk_copy.py): the mbarrier and TMA helpers, a whole wgmma kernel with
tma=True through NVRTC for sm_90a and ptxas's report on it (no spills, no serialized wgmma), its tensor-map
parameters in the signature, and the option's arch check."""

import re

import pytest

from support import static_gemm
from tilemlir.diagnostics import CompileError
from tilemlir.emit_cuda.bulk_copy import tma_load_helper
from tilemlir.runtime.nvrtc import CompileOptions, ptxas_report


def test_the_tma_helper_lists_coordinates_innermost_first():
    name, text = tma_load_helper(3)
    assert name == "tl_tma_load_3d"
    assert "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes" in text
    assert "[%0], [%1, {%3, %4, %5}], [%2];" in text
    assert '"r"(c0), "r"(c1), "r"(c2)' in text


@pytest.fixture(scope="module")
def tma_kernel():
    fn = static_gemm(128, 128, 64, n=4096, k=4096, threads=256, num_stages=4)
    return fn.compile("cuda", arch="sm_90a", tensor_cores="wgmma", tma=True)


def test_thread_0_issues_the_boxes_and_every_thread_waits(tma_kernel):
    body = tma_kernel.cuda_source()[tma_kernel.cuda_source().index("__global__"):]
    assert "const __grid_constant__ CUtensorMap A_map" in body and "const __grid_constant__ CUtensorMap B_map" in body
    # 4 barriers initialized by thread 0, fenced, then the block syncs; no cp.async, no proxy fence
    init = re.search(r"if \((\w+)\) \{\s+(tl_mbarrier_init\(&full\[\d\], 1\);\s+){4}tl_fence_mbarrier_init\(\);\s+\}\s+"
                     r"__syncthreads\(\);", body)
    assert init, body
    assert "cp_async" not in body and "tl_fence_proxy_async" not in body
    # per tile: one arrival for A's 128x64 box and B's two 64x64 panels, 16 + 2 x 8 KiB
    assert body.count("tl_mbarrier_arrive_expect_tx(") == 3 and body.count("32768);") == 3
    assert body.count("tl_tma_load_2d(&A_s[") == 3 and body.count("tl_tma_load_2d(&B_s[") == 6
    loop = body[body.index("for (int i = 0; i < 64; ++i)"):]
    barrier, issue, wait, wgmma = (loop.index(s) for s in ("__syncthreads();", "tl_tma_load_2d(", "tl_mbarrier_wait(",
                                                           "tl_wgmma_m64n128k16"))
    assert barrier < issue < wait < wgmma
    assert re.search(r"tl_mbarrier_wait\(&full\[slot\], \(unsigned\)\(\(i >> 2\) & 1\)\);", loop)


def test_the_signature_carries_the_maps(tma_kernel):
    maps = {m.name: (m.tensor, m.box, m.swizzle) for m in tma_kernel.signature.tensor_maps}
    assert maps == {"A_map": ("A", (128, 64), 128), "B_map": ("B", (64, 64), 128)}


def test_ptxas_neither_spills_nor_serializes_the_tma_gemm(tma_kernel):
    report = ptxas_report(tma_kernel.cuda_source(), "gemm", CompileOptions(arch="sm_90a"))
    assert "0 bytes spill stores, 0 bytes spill loads" in report, report
    assert "serializ" not in report.lower(), report
    registers = int(re.search(r"Used (\d+) registers", report).group(1))
    assert 64 <= registers <= 255  # 64 accumulators a thread


def test_tma_needs_hopper():
    fn = static_gemm(128, 128, 64, n=256, k=256)
    with pytest.raises(CompileError, match=r"option tma=True needs arch sm_90a \(Hopper's TMA\), not sm_80"):
        fn.compile("cuda", arch="sm_80", tma=True)
    with pytest.raises(CompileError, match="option tma for target 'cuda' must be True or False, got 'yes'"):
        fn.compile("cuda", arch="sm_90a", tma="yes")
