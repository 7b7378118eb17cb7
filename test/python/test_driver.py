"""The compiler driver: its option checks (the typed `index_bits` option on both targets) and `lower`, which
lowers as compile does for the same options."""

import re

import pytest

import tilemlir
import tilemlir.language as T
from support import static_gemm
from tilemlir.diagnostics import CompileError

n = T.symbolic("n")


def scale(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
    with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
        for i in T.Parallel(128):
            Y[bx * 128 + i] = X[bx * 128 + i] * 2.0


def test_index_bits_chooses_the_cuda_kernels_index_width():
    assert tilemlir.compile(scale, target="cuda").signature.index_bits == 32
    wide = tilemlir.compile(scale, target="cuda", index_bits=64)
    assert wide.signature.index_bits == 64 and "long long n) {" in wide.cuda_source()
    decorated = tilemlir.jit(index_bits=64)(scale)
    assert decorated.compile().signature.index_bits == 64


@pytest.mark.parametrize("target, value", [("cuda", 16), ("cuda", 64.0), ("cuda", True), ("cuda", "64"),
                                           ("cpu", 16)])
def test_index_bits_must_be_an_int_the_target_has(target, value):
    choices = "32 or 64" if target == "cuda" else "64"
    with pytest.raises(CompileError, match=rf"option index_bits for target '{target}' must be {choices}, or None "
                                           rf"to let the compiler choose, got {re.escape(repr(value))}$"):
        tilemlir.compile(scale, target=target, index_bits=value)


def test_the_cpu_target_computes_indices_in_64_bits_only():
    with pytest.raises(CompileError, match=r"option index_bits for target 'cpu' must be 64, or None to let the "
                                           r"compiler choose, got 32; the CPU backend \(the reference\) computes "
                                           r"index math in 64 bits"):
        tilemlir.compile(scale, target="cpu", index_bits=32)
    assert tilemlir.compile(scale, target="cpu", index_bits=64) is not None


def test_lower_lowers_as_compile_does_with_the_same_options():
    """`tilemlir.lower` takes compile's target and options: on sm_90a a gemm is wgmma by default, mma.sync when
    asked, and its ring copies (static inner dims) TMA boxes with tma=True; the CUDA compile's thread stage is that same text."""
    gemm = static_gemm(64, 64, 32, n=128, k=96)
    default = tilemlir.lower(gemm, "thread", arch="sm_90a")
    mma_sync = tilemlir.lower(gemm, "thread", arch="sm_90a", tensor_cores="mma_sync")
    tma = tilemlir.lower(gemm, "thread", arch="sm_90a", tma=True)
    assert 'tile.wgmma' in default and 'tile.mma_sync' not in default and 'tile.tma_load' not in default
    assert 'tile.mma_sync' in mma_sync and 'tile.wgmma' not in mma_sync
    assert 'tile.wgmma' in tma and 'tile.tma_load' in tma
    assert tilemlir.compile(gemm, target="cuda", arch="sm_90a", tma=True).ir("thread") == tma
    with pytest.raises(CompileError, match="option tma=True needs arch sm_90a"):
        tilemlir.lower(gemm, "thread", arch="sm_80", tma=True)
