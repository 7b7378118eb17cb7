"""examples/gemm.py's matmul with `T.use_swizzle(panel, order)` (block rasterization) for the GPU tests: the remap
must hand every C tile to exactly one block on the hardware too, ragged grids and last panels included
(test_rasterization_gpu.py; artifacts `gemm_swizzle_*` from build_artifacts.py)."""

import tilemlir
import tilemlir.language as T


@tilemlir.jit(out_idx=[-1])
def matmul(N=2112, K=512, block_M=128, block_N=128, block_K=32, dtype="float16", accum_dtype="float32",
           num_stages=3, threads=128, panel=8, order="row"):
    M = T.symbolic("M")

    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), dtype)
            B_s = T.alloc_shared((block_K, block_N), dtype)
            C_f = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.use_swizzle(panel, order=order)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block_M, bx * block_N])

    return gemm


def make_inputs(rng, m=300, n=2112, k=512, dtype="float16"):
    return [rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)]


def reference(a, b):
    return [a.astype("float64") @ b.astype("float64")]
