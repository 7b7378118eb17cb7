"""The TileLang 0.1.15 peer of the GEMM benchmark, written as a TileLang user writes a GEMM.

The configuration BENCHMARKING.md measured at 684 TFLOP/s (bf16 8192^3): 128 x 256 x 64 tiles,
3 pipeline stages, 256 threads, block rasterization (`T.use_swizzle`). One compile per static
(M, N, K, dtype); C is a parameter (no `out_idx`), so the harness passes a poisoned C.
Importing this module imports tilelang; the harness imports it lazily and records why when that fails.
"""

from __future__ import annotations

import tilelang
import tilelang.language as T

BLOCK_M, BLOCK_N, BLOCK_K, STAGES, THREADS, PANEL = 128, 256, 64, 3, 256, 10


@tilelang.jit
def matmul(M, N, K, dtype, block_M=BLOCK_M, block_N=BLOCK_N, block_K=BLOCK_K, num_stages=STAGES,
           threads=THREADS):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), dtype)
            B_s = T.alloc_shared((block_K, block_N), dtype)
            C_f = T.alloc_fragment((block_M, block_N), "float32")
            T.use_swizzle(panel_size=PANEL, enable=True)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block_M, bx * block_N])

    return main


def factory_call(m: int, n: int, k: int, dtype: str):
    """(factory, args) whose `factory.get_tir(*args)` elaborates the kernel, as bench_memory_bound's
    parallel TileLang compile takes them."""
    return matmul, (m, n, k, dtype)


CONFIG = f"{BLOCK_M}x{BLOCK_N}x{BLOCK_K}, {STAGES} stages, {THREADS} threads, use_swizzle({PANEL})"
