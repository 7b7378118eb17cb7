"""The CUDA of TMA-fed GEMMs (emit_cuda/bulk_copy.py): the mbarrier and TMA helpers, a whole wgmma kernel with
tma=True through NVRTC for sm_90a and ptxas's report on it (no spills, no serialized wgmma), its tensor-map
parameters in the signature, and the option's arch check; TMA stores and their bulk groups from a hand-written
thread-level kernel through NVRTC."""

import re

import pytest

from support import body_of, compiles, emit_text, kernel_module, static_gemm
from tilemlir.diagnostics import CompileError
from tilemlir.emit_cuda.bulk_copy import tma_load_helper, tma_store_helper
from tilemlir.runtime.nvrtc import CompileOptions, ptxas_report


def test_the_tma_helper_lists_coordinates_innermost_first():
    name, text = tma_load_helper(3)
    assert name == "tl_tma_load_3d"
    assert "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes" in text
    assert "[%0], [%1, {%3, %4, %5}], [%2];" in text
    assert '"r"(c0), "r"(c1), "r"(c2)' in text


def test_the_tma_store_helper_lists_coordinates_innermost_first():
    name, text = tma_store_helper(3)
    assert name == "tl_tma_store_3d"
    assert "(const CUtensorMap* map, const void* src, int c0, int c1, int c2)" in text
    assert "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" in text
    assert '"r"(c0), "r"(c1), "r"(c2)' in text


# every thread fills two 16 x 64 halves of a shared tile and fences; thread 0 stores each half's box (the
# second 8 rows further down, pending 1 then 0 to show the count is an immediate)
STORE_BODY = """
      %cs = memref.alloca() {name = "C_s"} : memref<2x16x64xbf16, "shared">
      %row = arith.muli %bx, %c32 : index
      scf.for %i = %c0 to %c32 step %c1 {
        %r = arith.addi %row, %i : index
        %v = memref.load %X[%r, %tx] : memref<?x64xbf16>
        %h = arith.remui %i, %c2 : index
        %s = arith.divui %i, %c2 : index
        memref.store %v, %cs[%h, %s, %tx] : memref<2x16x64xbf16, "shared">
      }
      "tile.fence_proxy_async"() : () -> ()
      gpu.barrier
      %is0 = arith.cmpi eq, %tx, %c0 : index
      scf.if %is0 {
        %second = arith.addi %row, %c8 : index
        "tile.tma_store"(%cs, %c0, %c0, %c0, %row, %c0) {map = "C_map"}
            : (memref<2x16x64xbf16, "shared">, index, index, index, index, index) -> ()
        "tile.bulk_commit_group"() : () -> ()
        "tile.tma_store"(%cs, %c1, %c0, %c0, %second, %c0) {map = "C_map"}
            : (memref<2x16x64xbf16, "shared">, index, index, index, index, index) -> ()
        "tile.bulk_commit_group"() : () -> ()
        "tile.bulk_wait_group_read"() {pending = 1 : i64} : () -> ()
        "tile.bulk_wait_group_read"() {pending = 0 : i64} : () -> ()
      }
"""


def test_tma_stores_commit_and_wait_are_one_helper_call_each_and_compile_for_hopper():
    emitted = emit_text(kernel_module(STORE_BODY, [("X", "memref<?x64xbf16>"), ("C", "memref<?x64xbf16>")],
                                      attrs=", tile.tensor_maps = {C_map = {tensor = 1 : i64, box = [16, 64], "
                                            "swizzle = 128 : i64}}"))
    body = body_of(emitted.source)
    assert "const __grid_constant__ CUtensorMap C_map" in body
    issue = re.search(r"if \(tx == 0\) \{\s+"
                      r"tl_tma_store_2d\(&C_map, &C_s\[0\]\[0\]\[0\], \(int\)0, \(int\)(\w+)\);\s+"
                      r"tl_bulk_commit_group\(\);\s+"
                      r"tl_tma_store_2d\(&C_map, &C_s\[1\]\[0\]\[0\], \(int\)0, \(int\)\(\1 \+ 8\)\);\s+"
                      r"tl_bulk_commit_group\(\);\s+"
                      r"tl_bulk_wait_group_read<1>\(\);\s+tl_bulk_wait_group_read<0>\(\);\s+\}", body)
    assert issue, body
    assert body.index("tl_fence_proxy_async();") < body.index("__syncthreads();") < issue.start()
    prelude = emitted.source[:emitted.source.index('extern "C"')]
    assert prelude.count("tl_tma_store_2d(") == 1 and prelude.count("void tl_bulk_commit_group()") == 1
    assert prelude.index("CUtensorMap_st") < prelude.index("tl_tma_store_2d(")
    ptx = compiles(emitted)
    assert len(re.findall(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.bulk_group \[%rd\d+, \{%r\d+, %r\d+\}\], "
                          r"\[%r\d+\];", ptx)) == 2, ptx
    assert ptx.count("cp.async.bulk.commit_group;") == 2
    assert "cp.async.bulk.wait_group.read 1;" in ptx and "cp.async.bulk.wait_group.read 0;" in ptx


def test_a_kernel_without_stores_has_no_bulk_group_helpers(tma_kernel):
    source = tma_kernel.cuda_source()
    assert "tl_tma_store" not in source and "tl_bulk_commit_group" not in source and "wait_group.read" not in source


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
