"""Dynamic float8 e4m3 quantization of bfloat16 activations, DeepSeek-style.

    quant_row_fp8(N)(X[M, N]) -> (Q[M, N] fp8, S[M] fp32)       per row: S = amax / 448
    quant_block_fp8(N)(X[M, N]) -> (Q, S[M, ceil(N/128)])       per 1 x 128 block

S is computed as amax * fp32(1/448), which is what PyTorch's `amax / 448`
does (it divides by a scalar through its reciprocal), and Q = fp8(x / S)
with a true division, rounded to nearest even; |x / S| <= 448 up to one
rounding, which the cast maps onto 448. So S and Q match PyTorch's
`s = amax / 448; (x / s).to(fp8)` bit for bit.

The division by the row's scale is done as Markstein's exact division by a
constant: with r = 1 / S correctly rounded, q = x * r and one FMA-corrected
step q + (x - q * S) * r give the correctly rounded x / S (three FMAs per
element instead of the ~10 instructions and slow-path branch of a general
IEEE division, which made these kernels instruction-bound). It holds while
the residual x - q * S does not underflow, i.e. for all but rows whose
values are within ~2^-100 of zero. An all-zero row (or block) gets a tiny scale instead of 0, so Q is
0 there instead of NaN.
"""

import tilemlir
import tilemlir.language as T
from tilemlir.kernels.config import row_config, tuned

FP8_MAX = 448.0
MIN_AMAX = 1e-30
GROUP = 128
BLOCK_ROWS = 32


# max_chunks=4 by default: 53.7 us against 57.3 us with 2 at 8192 x 8192 (benchmarks/sweep_rows.py on the H200);
# config.TUNED_ROWS overrides it for widths measured to do better otherwise.
@tilemlir.jit(out_idx=[1, 2])
def quant_row_fp8(N, dtype="bfloat16", max_chunks=None, min_blocks=None):
    M = T.symbolic("M")
    max_chunks, min_blocks = tuned("quant_row_fp8", N, dtype, max_chunks, min_blocks, 4)
    cfg = row_config(N, dtype, max_chunks)
    block_M = cfg.block_M

    @T.prim_func
    def quant_row_kernel(X: T.Tensor((M, N), dtype), Q: T.Tensor((M, N), T.float8_e4m3),
                         S: T.Tensor((M,), T.float32)):
        with T.Kernel(T.ceildiv(M, block_M), threads=cfg.threads, min_blocks=min_blocks) as bx:
            x = T.alloc_fragment((block_M, N), T.float32)
            scale = T.alloc_fragment((block_M,), T.float32)
            inv_scale = T.alloc_fragment((block_M,), T.float32)
            if cfg.row_layout is not None:
                T.annotate_layout({x: cfg.row_layout})
            T.copy(X[bx * block_M, 0], x)
            T.reduce_absmax(x, scale, dim=1)
            for i in T.Parallel(block_M):
                scale[i] = T.max(scale[i], MIN_AMAX) * (1.0 / FP8_MAX)
                inv_scale[i] = 1.0 / scale[i]
            for i, j in T.Parallel(block_M, N):
                q = x[i, j] * inv_scale[i]
                x[i, j] = T.fma(T.fma(-q, scale[i], x[i, j]), inv_scale[i], q)
            T.copy(x, Q[bx * block_M, 0])
            T.copy(scale, S[bx * block_M])

    return quant_row_kernel


@tilemlir.jit(out_idx=[1, 2])
def quant_block_fp8(N, dtype="bfloat16"):
    """One block per (128-column group, BLOCK_ROWS rows) tile: no serial loop, so many tiles are in flight."""
    M = T.symbolic("M")
    groups = T.ceildiv(N, GROUP)

    @T.prim_func
    def quant_block_kernel(X: T.Tensor((M, N), dtype), Q: T.Tensor((M, N), T.float8_e4m3),
                           S: T.Tensor((M, groups), T.float32)):
        with T.Kernel(groups, T.ceildiv(M, BLOCK_ROWS), threads=128) as (bg, bm):
            x = T.alloc_fragment((BLOCK_ROWS, GROUP), T.float32)
            scale = T.alloc_fragment((BLOCK_ROWS,), T.float32)
            inv_scale = T.alloc_fragment((BLOCK_ROWS,), T.float32)
            scale_col = T.alloc_fragment((BLOCK_ROWS, 1), T.float32)
            T.copy(X[bm * BLOCK_ROWS, bg * GROUP], x)
            T.reduce_absmax(x, scale, dim=1)
            for i in T.Parallel(BLOCK_ROWS):
                scale[i] = T.max(scale[i], MIN_AMAX) * (1.0 / FP8_MAX)
                inv_scale[i] = 1.0 / scale[i]
                scale_col[i, 0] = scale[i]
            for i, j in T.Parallel(BLOCK_ROWS, GROUP):
                q = x[i, j] * inv_scale[i]
                x[i, j] = T.fma(T.fma(-q, scale[i], x[i, j]), inv_scale[i], q)
            T.copy(x, Q[bm * BLOCK_ROWS, bg * GROUP])
            T.copy(scale_col, S[bm * BLOCK_ROWS, bg])

    return quant_block_kernel
