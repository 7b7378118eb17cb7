"""Tiled GEMM, C = A @ B, float16 inputs with a float32 accumulator.

Each block computes a `block_M x block_N` tile of C. It walks K in
`block_K` steps: tiles of A and B are copied into shared memory (software
pipelined `num_stages` deep) and multiplied into a register accumulator,
which is finally copied out (rounded to C's dtype). `enable_rasterization`
walks the blocks in panels `panel_size` tiles wide (`T.use_swizzle`, as
TileLang's example does) so that blocks running together share tiles of A
and B in L2.
"""

import tilemlir
import tilemlir.language as T


@tilemlir.jit(out_idx=[-1])
def matmul(N=4096, K=4096, block_M=128, block_N=128, block_K=32, dtype="float16", accum_dtype="float32",
           num_stages=3, threads=128, enable_rasterization=False, panel_size=10):
    M = T.symbolic("M")

    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), dtype)
            B_s = T.alloc_shared((block_K, block_N), dtype)
            C_f = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.use_swizzle(panel_size=panel_size, enable=enable_rasterization)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block_M, bx * block_N])

    return gemm


def make_inputs(rng, m=300, n=4096, k=4096, dtype="float16"):
    return [rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)]


def reference(a, b):
    return [a.astype("float64") @ b.astype("float64")]


if __name__ == "__main__":
    import sys

    from harness import run_example

    sys.exit(run_example(matmul.instantiate(), make_inputs, reference, tolerance=1e-3))
