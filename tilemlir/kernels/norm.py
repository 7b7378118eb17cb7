"""RMSNorm and LayerNorm over rows of N, with float32 accumulation, plus fused residual-add variants.

    rmsnorm(N)(X, W, eps) -> Y                 Y = X / sqrt(mean(X^2) + eps) * W
    add_rmsnorm(N)(X, R, W, eps) -> (Y, H)     H = X + R (rounded to the dtype), Y = rmsnorm(H)
    layernorm(N)(X, W, B, eps) -> Y            Y = (X - mean) / sqrt(var + eps) * W + B
    add_layernorm(N)(X, R, W, B, eps) -> (Y, H)

`hold` is the dtype a row held in registers, and its weights, are kept in: float32 (converted
once, at the load) or the input dtype (half the registers, converted at each use; the same float32
math on the same values, so the same output bits). Streamed rows keep float32 chunks. The norms
default to float32: held in bf16 they were no faster at 4096-8192 columns on the H200, LayerNorm
up to 6% slower (benchmarks/RESULTS.md, session 4).

`add_layernorm` is compiled with fast math (see the note above it). The
weights are copied in just before the loop that uses them, so their
registers are not live across the row reductions. The fused variants add the
residual and then run the same normalization (`@T.macro`s below) as the plain ones.

Rows too wide for registers (`row_config` gives None, e.g. bf16 N > 16384) stream: one block per
row reads it in chunks of C columns (`_stream_shape`). A pass keeps a state per slot (a column of
the chunk, held by one thread across chunks), with no block reduction or barrier inside the loop:
- RMSNorm: pass 1 sums the squares, pass 2 reads the row again (from L2 for reasonable row
  counts) and writes Y.
- LayerNorm: three passes, the exact two-pass variance: the sum, then the squared deviations
  from the mean, then Y. The deviation pass's loop is kept rolled (`T.serial(unroll=False)`):
  unrolled, NVCC held the first pass's loads of the whole row for it instead of reading the row
  again, and spilled. On the H200 this is 10-20% faster than a Welford pass (2048 x 32768: 96.9
  -> 82.1 us), whose two floats of state a slot halved the chunk and the bytes in flight.
- Residual LayerNorm: pass 1 keeps Welford's running mean and M2 a slot, merged across slots
  with Chan et al.'s formula (as PyTorch's and Apex's LayerNorms do), then writes Y from H.
The fused kernels write H in their first pass and read it back later through the same fragment:
each thread reads only elements it wrote itself, which program order makes visible. Past the
row's end a ragged last chunk reads 0 (the padding rule), harmless in sums; the deviation and
Welford updates mask those slots explicitly (x - mean is not 0 there).
"""

import tilemlir
import tilemlir.language as T
from tilemlir.kernels.config import MAX_CHUNKS_PER_THREAD, held_dtype, row_config, streamed_chunk, tuned


@T.macro
def add_residual(x, r, h, i, j):
    """h = x + r (added in float32) rounded to h's dtype, and x = h: the residual stream the fused
    kernels return."""
    h[i, j] = T.cast(T.cast(x[i, j], T.float32) + T.cast(r[i, j], T.float32), h.dtype)
    x[i, j] = T.cast(h[i, j], x.dtype)


@T.macro
def row_mean_of(src, mean, N):
    """mean = the sum of src's rows (slots or elements) / N."""
    T.reduce_sum(src, mean, dim=1)
    for i in T.Parallel(src.shape[0]):
        mean[i] = mean[i] / N


@T.macro
def rms_normalize(x, sq, ss, w, y, W, Y, bx, eps):
    """Y's rows of block bx = x / sqrt(mean(x^2) + eps) * W through y (x itself where x is float32),
    given sq = x^2; ss holds the row scales."""
    block_M, N = x.shape
    T.reduce_sum(sq, ss, dim=1)
    for i in T.Parallel(block_M):
        ss[i] = T.rsqrt(ss[i] / N + eps)
    T.copy(W, w)
    for i, j in T.Parallel(block_M, N):
        y[i, j] = T.cast(x[i, j], T.float32) * ss[i] * T.cast(w[j], T.float32)
    T.copy(y, Y[bx * block_M, 0])


@T.macro
def layer_normalize(x, sq, mean, rstd, w, b, y, W, B, Y, bx, eps):
    """Y's rows of block bx = (x - mean) / sqrt(var + eps) * W + B through y (x itself where x is
    float32); sq holds the centred squares."""
    block_M, N = x.shape
    row_mean_of(x, mean, N)
    for i, j in T.Parallel(block_M, N):
        centred = T.cast(x[i, j], T.float32) - mean[i]
        sq[i, j] = centred * centred
    T.reduce_sum(sq, rstd, dim=1)
    for i in T.Parallel(block_M):
        rstd[i] = T.rsqrt(rstd[i] / N + eps)
    T.copy(W, w)
    T.copy(B, b)
    for i, j in T.Parallel(block_M, N):
        y[i, j] = (T.cast(x[i, j], T.float32) - mean[i]) * rstd[i] * T.cast(w[j], T.float32) + T.cast(b[j], T.float32)
    T.copy(y, Y[bx * block_M, 0])


@tilemlir.jit(out_idx=[2])
def rmsnorm(N, dtype="bfloat16", max_chunks=MAX_CHUNKS_PER_THREAD, min_blocks=None, hold="float32"):
    M = T.symbolic("M")
    hold = held_dtype(hold, dtype)
    cfg = row_config(N, dtype, max_chunks)
    if cfg is None:
        return _streamed_rmsnorm(N, dtype, max_chunks, min_blocks)
    block_M = cfg.block_M
    resident = cfg.min_blocks(min_blocks)

    @T.prim_func
    def rmsnorm_kernel(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype),
                       Y: T.Tensor((M, N), dtype), eps: T.float32):
        with T.Kernel(T.ceildiv(M, block_M), threads=cfg.threads, min_blocks=resident) as bx:
            x = T.alloc_fragment((block_M, N), hold)
            y = x if hold == T.float32 else T.alloc_fragment((block_M, N), dtype)
            sq = T.alloc_fragment((block_M, N), T.float32)
            w = T.alloc_fragment((N,), hold)
            ss = T.alloc_fragment((block_M,), T.float32)
            T.copy(X[bx * block_M, 0], x)
            for i, j in T.Parallel(block_M, N):
                v = T.cast(x[i, j], T.float32)
                sq[i, j] = v * v
            rms_normalize(x, sq, ss, w, y, W, Y, bx, eps)

    return rmsnorm_kernel


@tilemlir.jit(out_idx=[3, 4])
def add_rmsnorm(N, dtype="bfloat16", max_chunks=MAX_CHUNKS_PER_THREAD, min_blocks=None, hold="float32"):
    M = T.symbolic("M")
    hold = held_dtype(hold, dtype)
    cfg = row_config(N, dtype, max_chunks)
    if cfg is None:
        return _streamed_add_rmsnorm(N, dtype, max_chunks, min_blocks)
    block_M = cfg.block_M
    resident = cfg.min_blocks(min_blocks)

    @T.prim_func
    def add_rmsnorm_kernel(X: T.Tensor((M, N), dtype), R: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype),
                           Y: T.Tensor((M, N), dtype), H: T.Tensor((M, N), dtype), eps: T.float32):
        with T.Kernel(T.ceildiv(M, block_M), threads=cfg.threads, min_blocks=resident) as bx:
            x = T.alloc_fragment((block_M, N), hold)
            r = T.alloc_fragment((block_M, N), hold)
            h = T.alloc_fragment((block_M, N), dtype)
            y = x if hold == T.float32 else T.alloc_fragment((block_M, N), dtype)
            sq = T.alloc_fragment((block_M, N), T.float32)
            w = T.alloc_fragment((N,), hold)
            ss = T.alloc_fragment((block_M,), T.float32)
            T.copy(X[bx * block_M, 0], x)
            T.copy(R[bx * block_M, 0], r)
            for i, j in T.Parallel(block_M, N):
                add_residual(x, r, h, i, j)
                v = T.cast(x[i, j], T.float32)
                sq[i, j] = v * v
            T.copy(h, H[bx * block_M, 0])
            rms_normalize(x, sq, ss, w, y, W, Y, bx, eps)

    return add_rmsnorm_kernel


# LayerNorm with one row per block asks for 4 resident blocks per multiprocessor (fewer when its
# blocks are larger than 512 threads): at 4001 x 7168 its 448-thread blocks otherwise fit only 3
# (34 registers per thread, allocated in steps), 38.1 us against 34.4 with the cap; within 1%
# either way at 4096 and 8192 (benchmarks/sweep_rows.py on the H200). Narrow rows (several per
# block) take config.NARROW_ROWS_MIN_BLOCKS like the other norms. `min_blocks=1` leaves registers
# uncapped.
LAYERNORM_MIN_BLOCKS = 4


@tilemlir.jit(out_idx=[3])
def layernorm(N, dtype="bfloat16", max_chunks=None, min_blocks=None, hold="float32"):
    M = T.symbolic("M")
    hold = held_dtype(hold, dtype)
    max_chunks, min_blocks = tuned("layernorm", N, dtype, max_chunks, min_blocks, MAX_CHUNKS_PER_THREAD)
    cfg = row_config(N, dtype, max_chunks)
    if cfg is None:
        return _streamed_layernorm(N, dtype, max_chunks, min_blocks)
    block_M = cfg.block_M
    resident = cfg.min_blocks(min_blocks, LAYERNORM_MIN_BLOCKS)

    @T.prim_func
    def layernorm_kernel(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype),
                         Y: T.Tensor((M, N), dtype), eps: T.float32):
        with T.Kernel(T.ceildiv(M, block_M), threads=cfg.threads, min_blocks=resident) as bx:
            x = T.alloc_fragment((block_M, N), hold)
            y = x if hold == T.float32 else T.alloc_fragment((block_M, N), dtype)
            sq = T.alloc_fragment((block_M, N), T.float32)
            w = T.alloc_fragment((N,), hold)
            b = T.alloc_fragment((N,), hold)
            mean = T.alloc_fragment((block_M,), T.float32)
            rstd = T.alloc_fragment((block_M,), T.float32)
            if cfg.row_layout is not None:
                T.annotate_layout({x: cfg.row_layout})
            T.copy(X[bx * block_M, 0], x)
            layer_normalize(x, sq, mean, rstd, w, b, y, W, B, Y, bx, eps)

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
def add_layernorm(N, dtype="bfloat16", max_chunks=MAX_CHUNKS_PER_THREAD, min_blocks=None, hold="float32"):
    M = T.symbolic("M")
    hold = held_dtype(hold, dtype)
    cfg = row_config(N, dtype, max_chunks)
    if cfg is None:
        return _streamed_add_layernorm(N, dtype, max_chunks, min_blocks)
    block_M = cfg.block_M
    resident = cfg.min_blocks(min_blocks)

    @T.prim_func
    def add_layernorm_kernel(X: T.Tensor((M, N), dtype), R: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype),
                             B: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype), H: T.Tensor((M, N), dtype),
                             eps: T.float32):
        with T.Kernel(T.ceildiv(M, block_M), threads=cfg.threads, min_blocks=resident) as bx:
            x = T.alloc_fragment((block_M, N), hold)
            r = T.alloc_fragment((block_M, N), hold)
            h = T.alloc_fragment((block_M, N), dtype)
            y = x if hold == T.float32 else T.alloc_fragment((block_M, N), dtype)
            sq = T.alloc_fragment((block_M, N), T.float32)
            w = T.alloc_fragment((N,), hold)
            b = T.alloc_fragment((N,), hold)
            mean = T.alloc_fragment((block_M,), T.float32)
            rstd = T.alloc_fragment((block_M,), T.float32)
            if cfg.row_layout is not None:
                T.annotate_layout({x: cfg.row_layout})
            T.copy(X[bx * block_M, 0], x)
            T.copy(R[bx * block_M, 0], r)
            for i, j in T.Parallel(block_M, N):
                add_residual(x, r, h, i, j)
            T.copy(h, H[bx * block_M, 0])
            layer_normalize(x, sq, mean, rstd, w, b, y, W, B, Y, bx, eps)

    return add_layernorm_kernel


# Streaming (rows for which row_config gives None; see the module docstring). A block keeps its
# slots' state for the whole row next to the chunk being read: one float a slot for RMSNorm and
# LayerNorm's sum and deviation passes, two for residual LayerNorm's Welford pass, whose chunks (and
# LayerNorm's output pass, with weights and biases) give each thread half as many columns. Blocks
# of 512 threads, 2 per multiprocessor (64 registers a thread): ptxas (sm_90a) then spills nothing
# at any of 11 bf16 widths from 16392 to 262144 columns (ragged, odd and whole-chunk ones; LayerNorm's
# three passes at 13). With 3 or 4 blocks (40 or 32 registers) most widths spill, up to hundreds of
# bytes; the Welford pass in RMSNorm's chunks spills 28-42 bytes at some widths; 1024-thread blocks
# hold one row a multiprocessor, idle through its reductions.
STREAM_THREADS = 512
STREAM_MIN_BLOCKS = 2


def _stream_shape(N, dtype, chunks_per_thread, min_blocks):
    """(C, chunks, resident): the columns one pass holds (STREAM_THREADS x chunks_per_thread
    16-byte chunks of input), the passes over a row, and the blocks per multiprocessor to ask for
    (the caller's min_blocks, else STREAM_MIN_BLOCKS)."""
    C = streamed_chunk(dtype, chunks_per_thread, STREAM_THREADS)
    return C, -(-N // C), STREAM_MIN_BLOCKS if min_blocks is None else min_blocks


@T.macro
def accumulate_squares(x, acc):
    """acc += x^2, slot by slot (a column past the row was read as 0)."""
    block_M, C = x.shape
    for i, j in T.Parallel(block_M, C):
        acc[i, j] += x[i, j] * x[i, j]


@T.macro
def accumulate(x, acc):
    """acc += x, slot by slot (a column past the row was read as 0)."""
    block_M, C = x.shape
    for i, j in T.Parallel(block_M, C):
        acc[i, j] += x[i, j]


@T.macro
def accumulate_deviations(x, row_mean, acc, width):
    """acc += (x - mean)^2 in the chunk's first `width` slots (a compile-time int): past the end of
    the row a ragged last chunk reads 0, which is no deviation."""
    block_M, C = x.shape
    for i, j in T.Parallel(block_M, C):
        deviation = x[i, j] - row_mean[i]
        if width == C:
            acc[i, j] += deviation * deviation
        else:
            acc[i, j] = T.if_then_else(j < width, acc[i, j] + deviation * deviation, acc[i, j])


@T.macro
def rms_scale(acc, ss, N, eps):
    """ss = 1 / sqrt(sum of the row's squares / N + eps)."""
    T.reduce_sum(acc, ss, dim=1)
    for i in T.Parallel(acc.shape[0]):
        ss[i] = T.rsqrt(ss[i] / N + eps)


@T.macro
def rms_write(src, x, w, Src, W, Y, ss, bx, chunks):
    """Pass 2 of RMSNorm: Y = Src * ss * W, chunk by chunk, read through `src`."""
    block_M, C = x.shape
    for k in T.serial(chunks):
        T.copy(Src[bx, k * C], src)
        T.copy(W[k * C], w)
        for i, j in T.Parallel(block_M, C):
            x[i, j] = src[i, j] * ss[i] * w[j]
        T.copy(x, Y[bx, k * C])


@T.macro
def read_residual(X, R, H, x, r, h, bx, k):
    """Chunk k of the row: h = X + R rounded to H's dtype, stored to H, and x = h."""
    block_M, C = x.shape
    T.copy(X[bx, k * C], x)
    T.copy(R[bx, k * C], r)
    for i, j in T.Parallel(block_M, C):
        add_residual(x, r, h, i, j)
    T.copy(h, H[bx, k * C])


@T.macro
def welford_update(x, mean, m2, k, width):
    """Welford's update of each slot's running mean and M2 with chunk k's value there, in the
    chunk's first `width` slots (a compile-time int): the others, past the end of the row in a
    ragged last chunk, read 0, and 0 - mean is no identity."""
    block_M, C = x.shape
    inv_count = 1.0 / T.cast(k + 1, T.float32)  # every slot in the row has seen chunks 0..k
    for i, j in T.Parallel(block_M, C):
        delta = x[i, j] - mean[i, j]
        moved = mean[i, j] + delta * inv_count
        if width == C:
            m2[i, j] += delta * (x[i, j] - moved)
            mean[i, j] = moved
        else:
            m2[i, j] = T.if_then_else(j < width, m2[i, j] + delta * (x[i, j] - moved), m2[i, j])
            mean[i, j] = T.if_then_else(j < width, moved, mean[i, j])


@T.macro
def slot_count(j, N, C):
    """How many of a row's N columns slot j of a C-column chunk saw."""
    return T.cast(j < N % C, T.float32) + N // C


@T.macro
def combine_slots(mean, m2, scratch, row_mean, rstd, N, eps):
    """Chan et al.'s combination of the slots' (count, mean, M2) into the row's mean and
    1 / sqrt(var + eps)."""
    block_M, C = mean.shape
    for i, j in T.Parallel(block_M, C):
        scratch[i, j] = mean[i, j] * slot_count(j, N, C)
    T.reduce_sum(scratch, row_mean, dim=1)
    for i in T.Parallel(block_M):
        row_mean[i] = row_mean[i] / N
    for i, j in T.Parallel(block_M, C):
        spread = mean[i, j] - row_mean[i]
        scratch[i, j] = m2[i, j] + slot_count(j, N, C) * spread * spread
    T.reduce_sum(scratch, rstd, dim=1)
    for i in T.Parallel(block_M):
        rstd[i] = T.rsqrt(rstd[i] / N + eps)


@T.macro
def layer_write(src, x, w, b, Src, W, B, Y, row_mean, rstd, bx, chunks):
    """Pass 2 of LayerNorm: Y = (Src - mean) * rstd * W + B, chunk by chunk, read through `src`."""
    block_M, C = x.shape
    for k in T.serial(chunks):
        T.copy(Src[bx, k * C], src)
        T.copy(W[k * C], w)
        T.copy(B[k * C], b)
        for i, j in T.Parallel(block_M, C):
            x[i, j] = (src[i, j] - row_mean[i]) * rstd[i] * w[j] + b[j]
        T.copy(x, Y[bx, k * C])


def _streamed_rmsnorm(N, dtype, max_chunks, min_blocks):
    M = T.symbolic("M")
    C, chunks, resident = _stream_shape(N, dtype, max_chunks, min_blocks)

    @T.prim_func
    def rmsnorm_streamed_kernel(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype),
                                Y: T.Tensor((M, N), dtype), eps: T.float32):
        with T.Kernel(M, threads=STREAM_THREADS, min_blocks=resident) as bx:
            x = T.alloc_fragment((1, C), T.float32)
            acc = T.alloc_fragment((1, C), T.float32)
            w = T.alloc_fragment((C,), T.float32)
            ss = T.alloc_fragment((1,), T.float32)
            T.clear(acc)
            for k in T.serial(chunks):
                T.copy(X[bx, k * C], x)
                accumulate_squares(x, acc)
            rms_scale(acc, ss, N, eps)
            rms_write(x, x, w, X, W, Y, ss, bx, chunks)

    return rmsnorm_streamed_kernel


def _streamed_add_rmsnorm(N, dtype, max_chunks, min_blocks):
    M = T.symbolic("M")
    C, chunks, resident = _stream_shape(N, dtype, max_chunks, min_blocks)

    @T.prim_func
    def add_rmsnorm_streamed_kernel(X: T.Tensor((M, N), dtype), R: T.Tensor((M, N), dtype),
                                    W: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype),
                                    H: T.Tensor((M, N), dtype), eps: T.float32):
        with T.Kernel(M, threads=STREAM_THREADS, min_blocks=resident) as bx:
            x = T.alloc_fragment((1, C), T.float32)
            r = T.alloc_fragment((1, C), T.float32)
            h = T.alloc_fragment((1, C), dtype)
            acc = T.alloc_fragment((1, C), T.float32)
            w = T.alloc_fragment((C,), T.float32)
            ss = T.alloc_fragment((1,), T.float32)
            T.clear(acc)
            for k in T.serial(chunks):
                read_residual(X, R, H, x, r, h, bx, k)
                accumulate_squares(x, acc)
            rms_scale(acc, ss, N, eps)
            rms_write(h, x, w, H, W, Y, ss, bx, chunks)

    return add_rmsnorm_streamed_kernel


def _streamed_layernorm(N, dtype, max_chunks, min_blocks):
    """Three passes: the row's sum and its squared deviations from the mean, in RMSNorm's chunks
    (one float of state a slot), then Y in chunks half as wide (its weights and biases take the room)."""
    M = T.symbolic("M")
    C, chunks, resident = _stream_shape(N, dtype, max_chunks, min_blocks)
    C_out, chunks_out, _ = _stream_shape(N, dtype, max(1, max_chunks // 2), min_blocks)

    @T.prim_func
    def layernorm_streamed_kernel(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype),
                                  B: T.Tensor((N,), dtype), Y: T.Tensor((M, N), dtype), eps: T.float32):
        with T.Kernel(M, threads=STREAM_THREADS, min_blocks=resident) as bx:
            x = T.alloc_fragment((1, C), T.float32)
            acc = T.alloc_fragment((1, C), T.float32)
            y = T.alloc_fragment((1, C_out), T.float32)
            w = T.alloc_fragment((C_out,), T.float32)
            b = T.alloc_fragment((C_out,), T.float32)
            row_mean = T.alloc_fragment((1,), T.float32)
            rstd = T.alloc_fragment((1,), T.float32)
            T.clear(acc)
            for k in T.serial(chunks):
                T.copy(X[bx, k * C], x)
                accumulate(x, acc)
            row_mean_of(acc, row_mean, N)
            T.clear(acc)
            for k in T.serial(N // C, unroll=False):
                T.copy(X[bx, k * C], x)
                accumulate_deviations(x, row_mean, acc, C)
            for k in T.serial(N // C, chunks):  # the ragged last chunk, if any
                T.copy(X[bx, k * C], x)
                accumulate_deviations(x, row_mean, acc, N % C)
            rms_scale(acc, rstd, N, eps)
            layer_write(y, y, w, b, X, W, B, Y, row_mean, rstd, bx, chunks_out)

    return layernorm_streamed_kernel


def _streamed_add_layernorm(N, dtype, max_chunks, min_blocks):
    M = T.symbolic("M")
    C, chunks, resident = _stream_shape(N, dtype, max(1, max_chunks // 2), min_blocks)

    @T.prim_func
    def add_layernorm_streamed_kernel(X: T.Tensor((M, N), dtype), R: T.Tensor((M, N), dtype),
                                      W: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype),
                                      Y: T.Tensor((M, N), dtype), H: T.Tensor((M, N), dtype), eps: T.float32):
        with T.Kernel(M, threads=STREAM_THREADS, min_blocks=resident) as bx:
            x = T.alloc_fragment((1, C), T.float32)
            r = T.alloc_fragment((1, C), T.float32)
            h = T.alloc_fragment((1, C), dtype)
            mean = T.alloc_fragment((1, C), T.float32)
            m2 = T.alloc_fragment((1, C), T.float32)
            w = T.alloc_fragment((C,), T.float32)
            b = T.alloc_fragment((C,), T.float32)
            row_mean = T.alloc_fragment((1,), T.float32)
            rstd = T.alloc_fragment((1,), T.float32)
            T.clear(mean)
            T.clear(m2)
            for k in T.serial(N // C):
                read_residual(X, R, H, x, r, h, bx, k)
                welford_update(x, mean, m2, k, C)
            for k in T.serial(N // C, chunks):
                read_residual(X, R, H, x, r, h, bx, k)
                welford_update(x, mean, m2, k, N % C)
            combine_slots(mean, m2, x, row_mean, rstd, N, eps)
            layer_write(h, x, w, b, H, W, B, Y, row_mean, rstd, bx, chunks)

    return add_layernorm_streamed_kernel
