"""Fused SiLU-and-multiply (SwiGLU): silu_mul(N)(X[M, 2N]) -> Y[M, N] = silu(X[:, :N]) * X[:, N:].

It is compiled with `fast_math=True` (a jit option): exp and the division
use CUDA's fast intrinsics (error of a few float32 ulps). The result is
rounded to bfloat16 (8 bits of mantissa), so this changes only results that
sit on a bfloat16 rounding tie, while the correctly rounded expf and IEEE
division made the kernel instruction-bound. For IEEE math:
`tilemlir.compile(silu_mul.instantiate(N=...), target="cuda", fast_math=False)`.
"""

import tilemlir
import tilemlir.language as T
from tilemlir.kernels.config import MAX_CHUNKS_PER_THREAD, row_config


@tilemlir.jit(out_idx=[1], fast_math=True)
def silu_mul(N, dtype="bfloat16", max_chunks=MAX_CHUNKS_PER_THREAD, min_blocks=None):
    M = T.symbolic("M")
    cfg = row_config(N, dtype, max_chunks)
    block_M = cfg.block_M
    resident = cfg.min_blocks(min_blocks)

    @T.prim_func
    def silu_mul_kernel(X: T.Tensor((M, 2 * N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=cfg.threads, min_blocks=resident) as bx:
            gate = T.alloc_fragment((block_M, N), T.float32)
            up = T.alloc_fragment((block_M, N), T.float32)
            T.copy(X[bx * block_M, 0], gate)
            T.copy(X[bx * block_M, N], up)
            for i, j in T.Parallel(block_M, N):
                g = gate[i, j]
                gate[i, j] = g / (1.0 + T.exp(-g)) * up[i, j]
            T.copy(gate, Y[bx * block_M, 0])

    return silu_mul_kernel
