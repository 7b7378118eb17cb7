# TileLang's examples/elementwise/example_elementwise_add.py, from https://github.com/tile-ai/tilelang/blob/a35008a42531c62b976ae4cec3855d4383db0f3c/examples/elementwise/example_elementwise_add.py
# Copyright (c) Tile-AI. MIT License: https://github.com/tile-ai/tilelang/blob/a35008a42531c62b976ae4cec3855d4383db0f3c/LICENSE
#
# Test data (test_tilelang_kernels.py), not tilemlir code: the kernel definitions of that file, unchanged
# except their import lines, which say tilemlir (each marked "# was: ..."); its driver code (torch on CUDA,
# benchmarks) and the imports only that code used are left out.
# fmt: off
# ruff: noqa

import tilemlir as tilelang  # was: import tilelang
import tilemlir.language as T  # was: import tilelang.language as T


@tilelang.jit
def elementwise_add(A, B, block_M, block_N, in_dtype, out_dtype, threads):
    M, N = T.const("M, N")

    A: T.Tensor((M, N), in_dtype)
    B: T.Tensor((M, N), in_dtype)
    C = T.empty((M, N), out_dtype)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_N), in_dtype)
        B_shared = T.alloc_shared((block_M, block_N), in_dtype)
        C_local = T.alloc_fragment((block_M, block_N), out_dtype)
        C_shared = T.alloc_shared((block_M, block_N), out_dtype)

        T.copy(A[by * block_M, bx * block_N], A_shared)
        T.copy(B[by * block_M, bx * block_N], B_shared)
        for local_y, local_x in T.Parallel(block_M, block_N):
            C_local[local_y, local_x] = A_shared[local_y, local_x] + B_shared[local_y, local_x]
        T.copy(C_local, C_shared)
        T.copy(C_shared, C[by * block_M, bx * block_N])

    return C
