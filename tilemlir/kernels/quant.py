"""Dynamic float8 e4m3 quantization of bfloat16 activations, DeepSeek-style.

    quant_row_fp8(N)(X[M, N]) -> (Q[M, N] fp8, S[M] fp32)       per row: S = amax / 448
    quant_block_fp8(N)(X[M, N]) -> (Q, S[M, ceil(N/128)])       per 1 x 128 block (the last one ragged)

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

`hold` (quant_row_fp8) is the dtype the row is kept in registers: float32, converted once at the
load, or the input dtype, half the registers for bfloat16, converted at each use. Either way the
same float32 math runs on the same values, so S and Q are the same bits. By default (None) rows
wider than WIDE_ROW_THREADS threads are held in a 16-bit input dtype, the others in float32.

A row too wide for registers (`row_config` gives None) is read twice, one
block per row in passes of `STREAM_THREADS` threads x max_chunks 16-byte
chunks (16384 bf16 elements by default): the first pass folds
each chunk's absmax into the row's (a ragged last chunk reads its missing
columns as 0, absmax's identity), the second re-reads X and quantizes and
stores each chunk. The max of the same values in any order is the same
number, so S and Q are bitwise those of the one-pass kernel.
"""

import tilemlir
import tilemlir.language as T
from tilemlir.kernels.config import element_bytes, held_dtype, positive_int, row_config, streamed_chunk, tuned

FP8_MAX = 448.0
MIN_AMAX = 1e-30
GROUP = 128
BLOCK_ROWS = 32
# A streamed row's passes are 512 threads x max_chunks 16-byte chunks, half of config.streamed_chunk:
# at 1024 threads (64 registers each) NVRTC spilled 48-88 bytes a thread where a row is two or three
# passes (N = 65536, 66536), the quantizing pass's loop being unrolled; 512 threads stay at 34-105
# registers and no spill for N from 40000 to 300000.
STREAM_THREADS = 512


@T.macro
def fp8_scales(scale, inv_scale, i):
    """Row i's scale from its amax (S = amax * fp32(1/448), a tiny scale for an all-zero row) and 1 / S."""
    scale[i] = T.max(scale[i], MIN_AMAX) * (1.0 / FP8_MAX)
    inv_scale[i] = 1.0 / scale[i]


@T.macro
def quantize(x, scale, inv_scale, out):
    """out = x / scale row by row, correctly rounded (Markstein: q + (x - q * S) * (1 / S)); x is
    read as float32 whatever it is held in, and out may be x itself."""
    rows, cols = x.shape
    for i, j in T.Parallel(rows, cols):
        v = T.cast(x[i, j], T.float32)
        q = v * inv_scale[i]
        out[i, j] = T.fma(T.fma(-q, scale[i], v), inv_scale[i], q)


# max_chunks=4 by default: 53.7 us against 57.3 us with 2 at 8192 x 8192 (benchmarks/sweep_rows.py on the H200);
# config.TUNED_ROWS overrides it for widths measured to do better otherwise.
# A row of more than WIDE_ROW_THREADS threads is held in its 16-bit input dtype, WIDE_ROW_MIN_BLOCKS
# blocks per multiprocessor (32 registers a thread at 1024 threads, no spill). Held in float32 such
# a row took 54-56 registers, so one 1024-thread block per multiprocessor, idle through the row's
# reduction. On the H200, 2048 rows: 78.0 -> 55.6 us at N = 32768, 71.2 -> 49.4 at 28672 (bf16
# without the cap), 47.0 -> 42.3 at 20000. At 4096-8192 columns bf16 was within 2% either way, so
# float32 stays there.
WIDE_ROW_THREADS = 512
WIDE_ROW_MIN_BLOCKS = 2


@tilemlir.jit(out_idx=[1, 2])
def quant_row_fp8(N, dtype="bfloat16", max_chunks=None, min_blocks=None, hold=None):
    M = T.symbolic("M")
    max_chunks, min_blocks = tuned("quant_row_fp8", N, dtype, max_chunks, min_blocks, 4)
    cfg = row_config(N, dtype, max_chunks)
    if hold is None and cfg is not None and cfg.threads > WIDE_ROW_THREADS and element_bytes(dtype) == 2:
        hold = dtype
        min_blocks = cfg.min_blocks(min_blocks, WIDE_ROW_MIN_BLOCKS)
    hold = held_dtype(hold or T.float32, dtype)
    if cfg is None:
        return _quant_row_streamed(N, dtype, max_chunks, min_blocks, hold)
    block_M = cfg.block_M

    @T.prim_func
    def quant_row_kernel(X: T.Tensor((M, N), dtype), Q: T.Tensor((M, N), T.float8_e4m3),
                         S: T.Tensor((M,), T.float32)):
        with T.Kernel(T.ceildiv(M, block_M), threads=cfg.threads, min_blocks=min_blocks) as bx:
            x = T.alloc_fragment((block_M, N), hold)
            q = T.alloc_fragment((block_M, N), T.float8_e4m3)
            scale = T.alloc_fragment((block_M,), T.float32)
            inv_scale = T.alloc_fragment((block_M,), T.float32)
            if cfg.row_layout is not None:
                T.annotate_layout({x: cfg.row_layout})
            T.copy(X[bx * block_M, 0], x)
            T.reduce_absmax(x, scale, dim=1)
            for i in T.Parallel(block_M):
                fp8_scales(scale, inv_scale, i)
            quantize(x, scale, inv_scale, q)
            T.copy(q, Q[bx * block_M, 0])
            T.copy(scale, S[bx * block_M])

    return quant_row_kernel


def _quant_row_streamed(N, dtype, max_chunks, min_blocks, hold):
    """One row per block: an absmax pass over chunks of the row, then a quantizing pass."""
    M = T.symbolic("M")
    chunk = streamed_chunk(dtype, max_chunks, STREAM_THREADS)
    cfg = row_config(chunk, dtype, max_chunks)
    passes = T.ceildiv(N, chunk)

    @T.prim_func
    def quant_row_streamed_kernel(X: T.Tensor((M, N), dtype), Q: T.Tensor((M, N), T.float8_e4m3),
                                  S: T.Tensor((M,), T.float32)):
        with T.Kernel(M, threads=cfg.threads, min_blocks=min_blocks) as bx:
            x = T.alloc_fragment((1, chunk), hold)
            q = T.alloc_fragment((1, chunk), T.float8_e4m3)
            scale = T.alloc_fragment((1,), T.float32)
            inv_scale = T.alloc_fragment((1,), T.float32)
            T.clear(scale)
            for k in T.serial(passes):
                T.copy(X[bx, k * chunk], x)
                T.reduce_absmax(x, scale, dim=1, clear=False)
            for i in T.Parallel(1):
                fp8_scales(scale, inv_scale, i)
            for k in T.serial(passes):
                T.copy(X[bx, k * chunk], x)
                quantize(x, scale, inv_scale, q)
                T.copy(q, Q[bx, k * chunk])
            T.copy(scale, S[bx])

    return quant_row_streamed_kernel


@tilemlir.jit(out_idx=[1, 2])
def quant_block_fp8(N, dtype="bfloat16", block_rows=BLOCK_ROWS, threads=128, min_blocks=None):
    """One block per (128-column group, block_rows rows) tile: no serial loop, so many tiles are in flight.
    Any N: the last group of a row is its last N % 128 columns, and a row of N < 128 is one group (a
    tile of N columns)."""
    M = T.symbolic("M")
    groups = T.ceildiv(positive_int("the row width N", N), GROUP)
    width = min(N, GROUP)

    @T.prim_func
    def quant_block_kernel(X: T.Tensor((M, N), dtype), Q: T.Tensor((M, N), T.float8_e4m3),
                           S: T.Tensor((M, groups), T.float32)):
        with T.Kernel(groups, T.ceildiv(M, block_rows), threads=threads, min_blocks=min_blocks) as (bg, bm):
            x = T.alloc_fragment((block_rows, width), T.float32)
            scale = T.alloc_fragment((block_rows,), T.float32)
            inv_scale = T.alloc_fragment((block_rows,), T.float32)
            scale_col = T.alloc_fragment((block_rows, 1), T.float32)
            T.copy(X[bm * block_rows, bg * GROUP], x)
            T.reduce_absmax(x, scale, dim=1)
            for i in T.Parallel(block_rows):
                fp8_scales(scale, inv_scale, i)
                scale_col[i, 0] = scale[i]
            quantize(x, scale, inv_scale, x)
            T.copy(x, Q[bm * block_rows, bg * GROUP])
            T.copy(scale_col, S[bm * block_rows, bg])

    return quant_block_kernel
