"""Elementwise kernels over flat tensors of any length n: add, mul (C = A op B) and cast (Y = dtype(X)).

Each block handles one tile of THREADS x ELEMENTS_PER_THREAD elements:
every thread owns whole 16-byte chunks, so loads are 16-byte vectors
coalesced across the warp. Arithmetic happens in the tensors'
dtype (as PyTorch does); casts round to nearest even.
"""

import tilemlir
import tilemlir.language as T
from tilemlir.kernels.config import CHUNK_BYTES, ELEMENT_BYTES

# Defaults (factory arguments `threads` and `elements` override them).
# Elements per thread, whatever the dtype: 16-bit values take a whole register
# each, so more of them per thread would cost occupancy, not add bandwidth.
# 128 x 16 measured best of six shapes for bf16 on the H200 (benchmarks/sweep_elementwise.py).
THREADS = 128
ELEMENTS_PER_THREAD = 16


def _tile(dtype: str, threads: int, elements: int) -> int:
    return threads * max(elements, CHUNK_BYTES // ELEMENT_BYTES[dtype])


def _binary(dtype: str, op: str, threads: int, elements: int):
    n = T.symbolic("n")
    tile = _tile(dtype, threads, elements)

    @T.macro
    def combine(A, B, C, a, b, start):
        T.copy(A[start], a)
        T.copy(B[start], b)
        for i in T.Parallel(tile):
            if op == "add":
                a[i] = a[i] + b[i]
            else:
                a[i] = a[i] * b[i]
        T.copy(a, C[start])

    @T.prim_func
    def binary_kernel(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, tile), threads=threads) as bx:
            a = T.alloc_fragment((tile,), dtype)
            b = T.alloc_fragment((tile,), dtype)
            # A whole tile proves every bounds check away (eliminate-guards uses the if's
            # condition): straight-line code whose loads all issue before the first use.
            # Guarded 16-bit loads each wait for their data before the next one issues.
            # (bx < n // tile rather than (bx + 1) * tile <= n, which overflows near 2**31.)
            if bx < n // tile:
                combine(A, B, C, a, b, bx * tile)
            else:
                combine(A, B, C, a, b, bx * tile)

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

    @T.macro
    def convert(X, Y, x, start):
        T.copy(X[start], x)
        T.copy(x, Y[start])

    @T.prim_func
    def cast_kernel(X: T.Tensor((n,), src), Y: T.Tensor((n,), dst)):
        with T.Kernel(T.ceildiv(n, tile), threads=threads) as bx:
            x = T.alloc_fragment((tile,), src)
            if bx < n // tile:  # a whole tile: no bounds checks (see _binary)
                convert(X, Y, x, bx * tile)
            else:
                convert(X, Y, x, bx * tile)

    return cast_kernel
