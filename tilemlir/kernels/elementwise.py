"""Elementwise kernels over flat tensors of any length n: add, mul (C = A op B) and cast (Y = dtype(X)).

Each block handles one tile of THREADS x ELEMENTS_PER_THREAD elements:
every thread owns whole 16-byte chunks, so loads are 16-byte vectors
coalesced across the warp. Arithmetic happens in the tensors'
dtype (as PyTorch does); casts round to nearest even.

The bodies are written without bounds in mind. eliminate-guards versions
each copy's chunk loop on its last chunk being inside n (range
versioning), and canonicalize merges those ifs on the one condition, so a
thread whose chunks all lie inside n issues all its 16-byte loads back to
back, unguarded; only a thread whose last chunk crosses n (in the last
block) takes the guarded path.
(Guarded 16-bit loads would each wait for their data before the next one
issued: one load in flight per thread instead of all of them.)
"""

import tilemlir
import tilemlir.language as T
from tilemlir.kernels.config import CHUNK_BYTES, element_bytes

# Defaults (factory arguments `threads` and `elements` override them).
# Elements per thread, whatever the dtype: 16-bit values take a whole register
# each, so more of them per thread would cost occupancy, not add bandwidth.
# 128 x 16 measured best of six shapes for bf16 on the H200 (benchmarks/sweep_elementwise.py).
THREADS = 128
ELEMENTS_PER_THREAD = 16


def _tile(dtype: str, threads: int, elements: int) -> int:
    return threads * max(elements, CHUNK_BYTES // element_bytes(dtype))


def _binary(dtype: str, op: str, threads: int, elements: int):
    n = T.symbolic("n")
    tile = _tile(dtype, threads, elements)

    @T.prim_func
    def binary_kernel(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, tile), threads=threads) as bx:
            a = T.alloc_fragment((tile,), dtype)
            b = T.alloc_fragment((tile,), dtype)
            T.copy(A[bx * tile], a)
            T.copy(B[bx * tile], b)
            for i in T.Parallel(tile):
                if op == "add":
                    a[i] = a[i] + b[i]
                else:
                    a[i] = a[i] * b[i]
            T.copy(a, C[bx * tile])

    return binary_kernel


@tilemlir.jit(out_idx=[2])
def add(dtype="float32", threads=THREADS, elements=ELEMENTS_PER_THREAD):
    return _binary(dtype, "add", threads, elements)


@tilemlir.jit(out_idx=[2])
def mul(dtype="float32", threads=THREADS, elements=ELEMENTS_PER_THREAD):
    return _binary(dtype, "mul", threads, elements)


@tilemlir.jit(out_idx=[1])
def cast(src="float32", dst="bfloat16", threads=THREADS, elements=ELEMENTS_PER_THREAD):
    n = T.symbolic("n")
    tile = _tile(src, threads, elements)

    @T.prim_func
    def cast_kernel(X: T.Tensor((n,), src), Y: T.Tensor((n,), dst)):
        with T.Kernel(T.ceildiv(n, tile), threads=threads) as bx:
            x = T.alloc_fragment((tile,), src)
            T.copy(X[bx * tile], x)
            T.copy(x, Y[bx * tile])

    return cast_kernel
