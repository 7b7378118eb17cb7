"""Row softmax: softmax(N, dtype)(X[M, N]) -> Y, float16/bfloat16 in and out, float32 math.

A row that fits in registers is read once: loaded into a fragment, reduced
to its max, exponentiated in place, reduced to its sum and scaled. A longer
row (N above `MAX_ROW_IN_REGISTERS`) streams through a fragment in chunks
twice: an online pass keeps the running max and a rescaled running sum,
a second pass writes exp(x - max) / sum.
"""

import tilemlir
import tilemlir.language as T
from tilemlir.kernels.config import row_config

MAX_ROW_IN_REGISTERS = 16384
CHUNK = 8192


@tilemlir.jit(out_idx=[1])
def softmax(N, dtype="float16", max_chunks=4, min_blocks=None):
    if N <= MAX_ROW_IN_REGISTERS:
        return _one_pass(N, dtype, max_chunks, min_blocks)
    return _online(N, dtype, max_chunks, min_blocks)


def _one_pass(N, dtype, max_chunks, min_blocks):
    M = T.symbolic("M")
    cfg = row_config(N, dtype, max_chunks)
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
    assert N % CHUNK == 0, f"softmax: rows longer than {MAX_ROW_IN_REGISTERS} must be a multiple of {CHUNK}"
    M = T.symbolic("M")
    cfg = row_config(CHUNK, dtype, max_chunks)
    block_M = cfg.block_M
    n_chunks = N // CHUNK

    @T.prim_func
    def softmax_online_kernel(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=cfg.threads, min_blocks=min_blocks) as bx:
            x = T.alloc_fragment((block_M, CHUNK), T.float32)
            m = T.alloc_fragment((block_M,), T.float32)
            s = T.alloc_fragment((block_M,), T.float32)
            chunk_max = T.alloc_fragment((block_M,), T.float32)
            chunk_sum = T.alloc_fragment((block_M,), T.float32)
            T.fill(m, -T.infinity(T.float32))
            T.clear(s)
            for k in T.serial(n_chunks):
                T.copy(X[bx * block_M, k * CHUNK], x)
                T.reduce_max(x, chunk_max, dim=1)
                for i in T.Parallel(block_M):
                    m_new = T.max(m[i], chunk_max[i])
                    s[i] = s[i] * T.exp(m[i] - m_new)
                    m[i] = m_new
                for i, j in T.Parallel(block_M, CHUNK):
                    x[i, j] = T.exp(x[i, j] - m[i])
                T.reduce_sum(x, chunk_sum, dim=1)
                for i in T.Parallel(block_M):
                    s[i] += chunk_sum[i]
            for i in T.Parallel(block_M):
                s[i] = 1.0 / s[i]
            for k in T.serial(n_chunks):
                T.copy(X[bx * block_M, k * CHUNK], x)
                for i, j in T.Parallel(block_M, CHUNK):
                    x[i, j] = T.exp(x[i, j] - m[i]) * s[i]
                T.copy(x, Y[bx * block_M, k * CHUNK])

    return softmax_online_kernel
