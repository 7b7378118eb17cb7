"""examples/flash_attention.py on the CPU target against a float64 numpy reference (output and log-sum-exp).

The tile level (the reference meaning) over the kernel's variants: causal or not, head dims 64 and 128,
grouped-query attention, sequences that the blocks do not divide (and shorter than one block). The
thread level (the GPU lowering simulated thread by thread, ldmatrix / mma.sync / wgmma from the PTX
ISA's tables) on the tensor-core paths: mma.sync for both gemms, and wgmma for S = Q K^T with P V on
mma.sync from registers. Fresh random inputs; the runtime poisons the outputs (NaN), and
`relative_error` is infinite for a NaN, so an element never written fails.
"""

import functools
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import tilemlir
from tilemlir.testing import relative_error

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import flash_attention as fa  # noqa: E402

# bf16 inputs, P rounded to bf16 before P V, bf16 output: about 2e-3 of relative norm error
OUTPUT_TOLERANCE = 1e-2
LSE_TOLERANCE = 1e-5  # float32 statistics of bf16-rounded inputs (the reference reads the same rounded inputs)


@functools.cache
def kernel(level="tile", tensor_cores=True, **params):
    fn = fa.flash_attention.instantiate(**params)
    return tilemlir.compile(fn, target="cpu", level=level, tensor_cores=tensor_cores)


def check(compiled, params, seq):
    q, k, v = fa.make_inputs(np.random.default_rng(), batch=params.get("batch", 1), heads=params["heads"],
                             kv_heads=params.get("kv_heads"), seq=seq, dim=params["dim"])
    out, lse = compiled(q, k, v)
    want_out, want_lse = fa.reference(q, k, v, causal=params.get("causal", False))
    assert out.shape == want_out.shape and lse.shape == want_lse.shape
    assert relative_error(out, want_out) <= OUTPUT_TOLERANCE
    assert relative_error(lse, want_lse) <= LSE_TOLERANCE


TILE_CASES = [
    dict(heads=2, dim=64),
    dict(heads=2, dim=64, causal=True),
    dict(heads=2, dim=128, causal=True),
    dict(batch=2, heads=4, kv_heads=2, dim=64, causal=True),
    dict(heads=2, dim=64, block_M=128, block_N=64, threads=256, causal=True),
]


@pytest.mark.parametrize("seq", [128, 100, 17])
@pytest.mark.parametrize("params", TILE_CASES, ids=lambda p: "-".join(f"{k}{v}" for k, v in p.items()))
def test_tile_level(params, seq):
    check(kernel(**params), params, seq)


# (params, tensor_cores, the instruction helper the thread level must run)
THREAD_CASES = [
    (dict(batch=1, heads=4, kv_heads=2, dim=64, causal=True), True, "tile.mma_sync"),
    (dict(heads=1, dim=64), "wgmma", "tile.wgmma"),
    (dict(heads=1, dim=64, causal=True, num_stages=3), "wgmma", "tile.wgmma"),
]


@pytest.mark.parametrize("params, tensor_cores, op", THREAD_CASES,
                         ids=[f"{tc}-{'-'.join(f'{k}{v}' for k, v in p.items())}" for p, tc, _ in THREAD_CASES])
def test_thread_level_on_tensor_cores(params, tensor_cores, op):
    compiled = kernel("thread", tensor_cores, **params)
    thread_ir = compiled.ir("thread")
    assert op in thread_ir and "tile.mma_sync" in thread_ir  # P V runs on mma.sync from P's registers
    assert "tile.ldmatrix" in thread_ir
    for seq in (128, 100):
        check(compiled, params, seq)


def test_the_row_statistics_follow_the_accumulator_without_shared_memory():
    """S's accumulator layout carries to P, the softmax loops and the row statistics: the S -> P copy and
    the reductions need no shared buffer (a row is 4 lanes of a warp: registers, then 2 shuffles)."""
    fn = fa.flash_attention.instantiate(heads=1, dim=64)
    compiled = tilemlir.compile(fn, target="cpu", level="thread", tensor_cores=True)
    thread_ir = compiled.ir("thread")
    shared = re.findall(r'memref\.alloca\(\) \{name = "(\w+)"[^\n]*"shared">', thread_ir)
    assert sorted(shared) == ["K_s", "Q_s", "V_s"]
    assert thread_ir.count("gpu.shuffle xor") == 4  # row max and row sum: offsets 2 and 1
