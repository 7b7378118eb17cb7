"""RMSNorm and LayerNorm over rows of N, with float32 accumulation, plus fused residual-add variants.

    rmsnorm(N)(X, W, eps) -> Y                 Y = X / sqrt(mean(X^2) + eps) * W
    add_rmsnorm(N)(X, R, W, eps) -> (Y, H)     H = X + R (rounded to the dtype), Y = rmsnorm(H)
    layernorm(N)(X, W, B, eps) -> Y            Y = (X - mean) / sqrt(var + eps) * W + B
    add_layernorm(N)(X, R, W, B, eps) -> (Y, H)

`add_layernorm` is compiled with fast math (see the note above it). The
weights are copied in just before the loop that uses them, so their
registers are not live across the row reductions. The fused variants add the
residual and then run the same normalization (`@T.macro`s below) as the plain ones.
"""

import tilemlir
import tilemlir.language as T
from tilemlir.kernels.config import MAX_CHUNKS_PER_THREAD, row_config, tuned


@T.macro
def add_residual(x, r, h, i, j):
    """h = x + r rounded to h's dtype, and x = h: the residual stream the fused kernels return."""
    h[i, j] = T.cast(x[i, j] + r[i, j], h.dtype)
    x[i, j] = T.cast(h[i, j], T.float32)


@T.macro
def rms_normalize(x, sq, ss, w, W, Y, bx, eps):
    """Y's rows of block bx = x / sqrt(mean(x^2) + eps) * W, given sq = x^2; ss holds the row scales."""
    block_M, N = x.shape
    T.reduce_sum(sq, ss, dim=1)
    for i in T.Parallel(block_M):
        ss[i] = T.rsqrt(ss[i] / N + eps)
    T.copy(W, w)
    for i, j in T.Parallel(block_M, N):
        x[i, j] = x[i, j] * ss[i] * w[j]
    T.copy(x, Y[bx * block_M, 0])


@T.macro
def layer_normalize(x, sq, mean, rstd, w, b, W, B, Y, bx, eps):
    """Y's rows of block bx = (x - mean) / sqrt(var + eps) * W + B (x is centred in place, sq its square)."""
    block_M, N = x.shape
    T.reduce_sum(x, mean, dim=1)
    for i in T.Parallel(block_M):
        mean[i] = mean[i] / N
    for i, j in T.Parallel(block_M, N):
        x[i, j] = x[i, j] - mean[i]
        sq[i, j] = x[i, j] * x[i, j]
    T.reduce_sum(sq, rstd, dim=1)
    for i in T.Parallel(block_M):
        rstd[i] = T.rsqrt(rstd[i] / N + eps)
    T.copy(W, w)
    T.copy(B, b)
    for i, j in T.Parallel(block_M, N):
        x[i, j] = x[i, j] * rstd[i] * w[j] + b[j]
    T.copy(x, Y[bx * block_M, 0])


@tilemlir.jit(out_idx=[2])
def rmsnorm(N, dtype="bfloat16", max_chunks=MAX_CHUNKS_PER_THREAD, min_blocks=None):
    M = T.symbolic("M")
    cfg = row_config(N, dtype, max_chunks)
    block_M = cfg.block_M
    resident = cfg.min_blocks(min_blocks)

    @T.prim_func
    def rmsnorm_kernel(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype),
                       Y: T.Tensor((M, N), dtype), eps: T.float32):
        with T.Kernel(T.ceildiv(M, block_M), threads=cfg.threads, min_blocks=resident) as bx:
            x = T.alloc_fragment((block_M, N), T.float32)
            sq = T.alloc_fragment((block_M, N), T.float32)
            w = T.alloc_fragment((N,), T.float32)
            ss = T.alloc_fragment((block_M,), T.float32)
            T.copy(X[bx * block_M, 0], x)
            for i, j in T.Parallel(block_M, N):
                sq[i, j] = x[i, j] * x[i, j]
            rms_normalize(x, sq, ss, w, W, Y, bx, eps)

    return rmsnorm_kernel


@tilemlir.jit(out_idx=[3, 4])
def add_rmsnorm(N, dtype="bfloat16", max_chunks=MAX_CHUNKS_PER_THREAD, min_blocks=None):
    M = T.symbolic("M")
    cfg = row_config(N, dtype, max_chunks)
    block_M = cfg.block_M
    resident = cfg.min_blocks(min_blocks)

    @T.prim_func
    def add_rmsnorm_kernel(X: T.Tensor((M, N), dtype), R: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype),
                           Y: T.Tensor((M, N), dtype), H: T.Tensor((M, N), dtype), eps: T.float32):
        with T.Kernel(T.ceildiv(M, block_M), threads=cfg.threads, min_blocks=resident) as bx:
            x = T.alloc_fragment((block_M, N), T.float32)
            r = T.alloc_fragment((block_M, N), T.float32)
            h = T.alloc_fragment((block_M, N), dtype)
            sq = T.alloc_fragment((block_M, N), T.float32)
            w = T.alloc_fragment((N,), T.float32)
            ss = T.alloc_fragment((block_M,), T.float32)
            T.copy(X[bx * block_M, 0], x)
            T.copy(R[bx * block_M, 0], r)
            for i, j in T.Parallel(block_M, N):
                add_residual(x, r, h, i, j)
                sq[i, j] = x[i, j] * x[i, j]
            T.copy(h, H[bx * block_M, 0])
            rms_normalize(x, sq, ss, w, W, Y, bx, eps)

    return add_rmsnorm_kernel


# LayerNorm with one row per block asks for 4 resident blocks per multiprocessor (fewer when its
# blocks are larger than 512 threads): at 4001 x 7168 its 448-thread blocks otherwise fit only 3
# (34 registers per thread, allocated in steps), 38.1 us against 34.4 with the cap; within 1%
# either way at 4096 and 8192 (benchmarks/sweep_rows.py on the H200). Narrow rows (several per
# block) take config.NARROW_ROWS_MIN_BLOCKS like the other norms. `min_blocks=1` leaves registers
# uncapped.
LAYERNORM_MIN_BLOCKS = 4


@tilemlir.jit(out_idx=[3])
def layernorm(N, dtype="bfloat16", max_chunks=None, min_blocks=None):
    M = T.symbolic("M")
    max_chunks, min_blocks = tuned("layernorm", N, dtype, max_chunks, min_blocks, MAX_CHUNKS_PER_THREAD)
    cfg = row_config(N, dtype, max_chunks)
    block_M = cfg.block_M
    resident = cfg.min_blocks(min_blocks, LAYERNORM_MIN_BLOCKS)

    @T.prim_func
    def layernorm_kernel(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype),
                         Y: T.Tensor((M, N), dtype), eps: T.float32):
        with T.Kernel(T.ceildiv(M, block_M), threads=cfg.threads, min_blocks=resident) as bx:
            x = T.alloc_fragment((block_M, N), T.float32)
            sq = T.alloc_fragment((block_M, N), T.float32)
            w = T.alloc_fragment((N,), T.float32)
            b = T.alloc_fragment((N,), T.float32)
            mean = T.alloc_fragment((block_M,), T.float32)
            rstd = T.alloc_fragment((block_M,), T.float32)
            if cfg.row_layout is not None:
                T.annotate_layout({x: cfg.row_layout})
            T.copy(X[bx * block_M, 0], x)
            layer_normalize(x, sq, mean, rstd, w, b, W, B, Y, bx, eps)

    return layernorm_kernel


# Residual LayerNorm is compiled with fast_math=True (rsqrtf, __fdividef, FMA contraction): its
# per-row tail (two reductions, an IEEE square root and division, then the weights' loads) sits on
# the critical path of a latency-bound kernel. On the H200, three interleaved rounds: 14.6-15.5 us
# against 15.3-16.1 at 8001 x 576, 60.6-60.7 against 61.2-61.7 at 4001 x 7168, 132.8-133.5 against
# 134.9-135.7 at 8192 x 8192, 134.2-135.3 against 135.5 at 16384 x 4096. The outputs are bfloat16
# (8 mantissa bits), so the few-ulp float32 differences reach them only at rounding ties; H is
# x + r rounded, which fast math does not touch. Plain LayerNorm stays IEEE: fast math made it 2.5-5%
# slower at 8192 and 4096 columns (48 registers instead of 40: 5 blocks per SM instead of 6).
@tilemlir.jit(out_idx=[4, 5], fast_math=True)
def add_layernorm(N, dtype="bfloat16", max_chunks=MAX_CHUNKS_PER_THREAD, min_blocks=None):
    M = T.symbolic("M")
    cfg = row_config(N, dtype, max_chunks)
    block_M = cfg.block_M
    resident = cfg.min_blocks(min_blocks)

    @T.prim_func
    def add_layernorm_kernel(X: T.Tensor((M, N), dtype), R: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype),
                             B: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype), H: T.Tensor((M, N), dtype),
                             eps: T.float32):
        with T.Kernel(T.ceildiv(M, block_M), threads=cfg.threads, min_blocks=resident) as bx:
            x = T.alloc_fragment((block_M, N), T.float32)
            r = T.alloc_fragment((block_M, N), T.float32)
            h = T.alloc_fragment((block_M, N), dtype)
            sq = T.alloc_fragment((block_M, N), T.float32)
            w = T.alloc_fragment((N,), T.float32)
            b = T.alloc_fragment((N,), T.float32)
            mean = T.alloc_fragment((block_M,), T.float32)
            rstd = T.alloc_fragment((block_M,), T.float32)
            if cfg.row_layout is not None:
                T.annotate_layout({x: cfg.row_layout})
            T.copy(X[bx * block_M, 0], x)
            T.copy(R[bx * block_M, 0], r)
            for i, j in T.Parallel(block_M, N):
                add_residual(x, r, h, i, j)
            T.copy(h, H[bx * block_M, 0])
            layer_normalize(x, sq, mean, rstd, w, b, W, B, Y, bx, eps)

    return add_layernorm_kernel
