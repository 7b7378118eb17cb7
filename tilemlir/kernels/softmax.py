"""Row softmax: softmax(N, dtype)(X[M, N]) -> Y, float16/bfloat16 in and out, float32 math.

A row that fits in registers (`row_config`) is read once: loaded into a
fragment, reduced to its max, exponentiated in place, reduced to its sum and
scaled. A longer row streams through one block twice, in chunks of
`STREAM_THREADS` threads x max_chunks 16-byte chunks (8192 half-precision
elements by default): an online pass keeps the running max and a rescaled
running sum, a second pass writes exp(x - max) / sum. The chunk is a
quarter of `config.streamed_chunk`'s (1024 threads): this pass reduces each
chunk twice across the block, and 256-thread blocks are the shape of the
benchmark's 4096 x 65536 runs (benchmarks/RESULTS.md).

A ragged last chunk needs no mask: its columns past N are not read and
read as -inf, the identity of the max they feed (docs/ir.md), so they
leave the max alone and add exp(-inf - max) = 0 to the sum; the second
pass's stores past N are masked.
"""

import tilemlir
import tilemlir.language as T
from tilemlir.kernels.config import row_config, streamed_chunk

STREAM_THREADS = 256


@tilemlir.jit(out_idx=[1])
def softmax(N, dtype="float16", max_chunks=4, min_blocks=None):
    cfg = row_config(N, dtype, max_chunks)
    if cfg is None:
        return _online(N, dtype, max_chunks, min_blocks)
    return _one_pass(N, dtype, cfg, min_blocks)


def _one_pass(N, dtype, cfg, min_blocks):
    M = T.symbolic("M")
    block_M = cfg.block_M

    @T.prim_func
    def softmax_kernel(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=cfg.threads, min_blocks=min_blocks) as bx:
            x = T.alloc_fragment((block_M, N), T.float32)
            row_max = T.alloc_fragment((block_M,), T.float32)
            row_sum = T.alloc_fragment((block_M,), T.float32)
            if cfg.row_layout is not None:
                T.annotate_layout({x: cfg.row_layout})
            T.copy(X[bx * block_M, 0], x)
            T.reduce_max(x, row_max, dim=1)
            for i, j in T.Parallel(block_M, N):
                x[i, j] = T.exp(x[i, j] - row_max[i])
            T.reduce_sum(x, row_sum, dim=1)
            for i in T.Parallel(block_M):
                row_sum[i] = 1.0 / row_sum[i]
            for i, j in T.Parallel(block_M, N):
                x[i, j] = x[i, j] * row_sum[i]
            T.copy(x, Y[bx * block_M, 0])

    return softmax_kernel


def _online(N, dtype, max_chunks, min_blocks):
    M = T.symbolic("M")
    chunk = streamed_chunk(dtype, max_chunks, STREAM_THREADS)
    cfg = row_config(chunk, dtype, max_chunks)
    block_M = cfg.block_M
    n_chunks = T.ceildiv(N, chunk)

    @T.prim_func
    def softmax_online_kernel(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=cfg.threads, min_blocks=min_blocks) as bx:
            x = T.alloc_fragment((block_M, chunk), T.float32)
            m = T.alloc_fragment((block_M,), T.float32)
            s = T.alloc_fragment((block_M,), T.float32)
            chunk_max = T.alloc_fragment((block_M,), T.float32)
            chunk_sum = T.alloc_fragment((block_M,), T.float32)
            T.fill(m, -T.infinity(T.float32))
            T.clear(s)
            for k in T.serial(n_chunks):
                T.copy(X[bx * block_M, k * chunk], x)
                T.reduce_max(x, chunk_max, dim=1)
                for i in T.Parallel(block_M):
                    m_new = T.max(m[i], chunk_max[i])
                    s[i] = s[i] * T.exp(m[i] - m_new)
                    m[i] = m_new
                for i, j in T.Parallel(block_M, chunk):
                    x[i, j] = T.exp(x[i, j] - m[i])
                T.reduce_sum(x, chunk_sum, dim=1)
                for i in T.Parallel(block_M):
                    s[i] += chunk_sum[i]
            for i in T.Parallel(block_M):
                s[i] = 1.0 / s[i]
            for k in T.serial(n_chunks):
                T.copy(X[bx * block_M, k * chunk], x)
                for i, j in T.Parallel(block_M, chunk):
                    x[i, j] = T.exp(x[i, j] - m[i]) * s[i]
                T.copy(x, Y[bx * block_M, k * chunk])

    return softmax_online_kernel
