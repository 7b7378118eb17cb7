"""Row reductions of float32 rows: row_sum(N)(X) -> Y[M], row_max(N)(X) -> Y[M].

A row that fits in registers (`row_config`) is loaded once and reduced. A
longer row streams through one block in passes of `streamed_chunk`
elements, each reduced into a running per-row accumulator (`clear=False`).
A ragged last pass needs no mask: the columns past N are not read and read
as the reduction's identity (0 for the sum, -inf for the max; docs/ir.md).
"""

import tilemlir
import tilemlir.language as T
from tilemlir.kernels.config import row_config, streamed_chunk


def _row_reduce(N: int, kind: str, max_chunks: int, min_blocks: int | None):
    cfg = row_config(N, "float32", max_chunks)
    if cfg is None:
        return _streamed_row_reduce(N, kind, max_chunks, min_blocks)
    M = T.symbolic("M")
    block_M = cfg.block_M

    @T.prim_func
    def row_reduce_kernel(X: T.Tensor((M, N), T.float32), Y: T.Tensor((M,), T.float32)):
        with T.Kernel(T.ceildiv(M, block_M), threads=cfg.threads, min_blocks=min_blocks) as bx:
            x = T.alloc_fragment((block_M, N), T.float32)
            y = T.alloc_fragment((block_M,), T.float32)
            T.copy(X[bx * block_M, 0], x)
            if kind == "sum":
                T.reduce_sum(x, y, dim=1)
            else:
                T.reduce_max(x, y, dim=1)
            T.copy(y, Y[bx * block_M])

    return row_reduce_kernel


def _streamed_row_reduce(N: int, kind: str, max_chunks: int, min_blocks: int | None):
    """One row per block, read in passes of `chunk` columns into a running accumulator."""
    M = T.symbolic("M")
    chunk = streamed_chunk("float32", max_chunks)
    cfg = row_config(chunk, "float32", max_chunks)
    passes = T.ceildiv(N, chunk)

    @T.prim_func
    def row_reduce_streamed_kernel(X: T.Tensor((M, N), T.float32), Y: T.Tensor((M,), T.float32)):
        with T.Kernel(M, threads=cfg.threads, min_blocks=min_blocks) as bx:
            x = T.alloc_fragment((1, chunk), T.float32)
            y = T.alloc_fragment((1,), T.float32)
            if kind == "sum":
                T.clear(y)
            else:
                T.fill(y, -T.infinity(T.float32))
            for k in T.serial(passes):
                T.copy(X[bx, k * chunk], x)
                if kind == "sum":
                    T.reduce_sum(x, y, dim=1, clear=False)
                else:
                    T.reduce_max(x, y, dim=1, clear=False)
            T.copy(y, Y[bx])

    return row_reduce_streamed_kernel


@tilemlir.jit(out_idx=[1])
def row_sum(N, max_chunks=4, min_blocks=None):
    return _row_reduce(N, "sum", max_chunks, min_blocks)


@tilemlir.jit(out_idx=[1])
def row_max(N, max_chunks=4, min_blocks=None):
    return _row_reduce(N, "max", max_chunks, min_blocks)
