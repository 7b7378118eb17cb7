"""Row reductions of float32 rows: row_sum(N)(X) -> Y[M], row_max(N)(X) -> Y[M]."""

import tilemlir
import tilemlir.language as T
from tilemlir.kernels.config import row_config


def _row_reduce(N: int, kind: str, max_chunks: int, min_blocks: int | None):
    M = T.symbolic("M")
    cfg = row_config(N, "float32", max_chunks)
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


@tilemlir.jit(out_idx=[1])
def row_sum(N, max_chunks=4, min_blocks=None):
    return _row_reduce(N, "sum", max_chunks, min_blocks)


@tilemlir.jit(out_idx=[1])
def row_max(N, max_chunks=4, min_blocks=None):
    return _row_reduce(N, "max", max_chunks, min_blocks)
