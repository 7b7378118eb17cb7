"""plan-shared-memory through the compiler: the pipelined gemm's rings share nothing, the planned offsets are the
emitted ones, and a plan past the device's shared memory is a located error naming the largest buffers."""

import re

import pytest

import tilemlir
from tilemlir.diagnostics import CompileError
from test_plan_pipeline import pipelined_gemm


def test_rings_get_disjoint_offsets_and_the_emitter_uses_them():
    kernel = tilemlir.compile(pipelined_gemm(4, N=256, K=256, block_M=64, block_N=64, block_K=32), target="cuda")
    source = kernel.cuda_source()
    # swizzled rings are flat (materialize-shared-layouts); the comment keeps their ring shape
    a = re.search(r"half\* A_s = reinterpret_cast<half\*>\(smem \+ (\d+)\);  // 4 x 64 x 32, swizzled", source)
    b = re.search(r"half\* B_s = reinterpret_cast<half\*>\(smem \+ (\d+)\);  // 4 x 32 x 64, swizzled", source)
    assert a and b, source
    ring = 4 * 64 * 32 * 2
    assert sorted([int(a.group(1)), int(b.group(1))]) == [0, ring]
    assert f"{2 * ring} bytes of dynamic shared memory" in source  # 64 KiB: the runtime raises the limit at load


def test_too_much_shared_memory_is_a_located_error():
    """The planned rings (8 stages of 128 KiB each side) are past sm_90a's limit: the emitter's located error at the
    ring that ends past it, naming both with their planned offsets."""
    fn = pipelined_gemm(8, N=1024, K=1024, block_M=128, block_N=128, block_K=64)
    with pytest.raises(CompileError) as info:
        tilemlir.compile(fn, target="cuda", arch="sm_90a")
    message = str(info.value)
    assert "test_plan_pipeline.py" in message
    assert re.search(r"the block needs 262144 bytes \(256 KiB\) of shared memory \('A_s' 131072 bytes at offset 0, "
                     r"'B_s' 131072 bytes at offset 131072\), more than the 232448 bytes \(227 KiB\) one block may use "
                     r"on sm_90a", message), message
