"""Fused SiLU-and-multiply (SwiGLU): silu_mul(N)(X[M, 2N]) -> Y[M, N] = silu(X[:, :N]) * X[:, N:].

It is compiled with `fast_math=True` (a jit option): exp and the division
use CUDA's fast intrinsics (error of a few float32 ulps). The result is
rounded to bfloat16 (8 bits of mantissa), so this changes only results that
sit on a bfloat16 rounding tie, while the correctly rounded expf and IEEE
division made the kernel instruction-bound. For IEEE math:
`tilemlir.compile(silu_mul.instantiate(N=...), target="cuda", fast_math=False)`.

A row too wide for registers (`row_config` gives None) has no reduction to
carry, so it is not streamed through one block: a 2-d grid gives each
block one row's tile of `TILE_THREADS` threads x max_chunks 16-byte chunks
(4096 bf16 columns by default), rows on grid x (which allows 2^31 - 1
blocks) and tiles on y. The stores of a ragged last tile past N are
masked; its gate copy reads the first columns of the up half there (inside
X, so not masked) into lanes whose results are not stored.
"""

import tilemlir
import tilemlir.language as T
from tilemlir.kernels.config import MAX_CHUNKS_PER_THREAD, row_config, streamed_chunk

TILE_THREADS = 256


@T.macro
def silu_times(gate, up):
    """gate = silu(gate) * up, element by element."""
    rows, cols = gate.shape
    for i, j in T.Parallel(rows, cols):
        g = gate[i, j]
        gate[i, j] = g / (1.0 + T.exp(-g)) * up[i, j]


@tilemlir.jit(out_idx=[1], fast_math=True)
def silu_mul(N, dtype="bfloat16", max_chunks=MAX_CHUNKS_PER_THREAD, min_blocks=None):
    cfg = row_config(N, dtype, max_chunks)
    if cfg is None:
        return _silu_mul_tiled(N, dtype, max_chunks, min_blocks)
    M = T.symbolic("M")
    block_M = cfg.block_M
    resident = cfg.min_blocks(min_blocks)

    @T.prim_func
    def silu_mul_kernel(X: T.Tensor((M, 2 * N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=cfg.threads, min_blocks=resident) as bx:
            gate = T.alloc_fragment((block_M, N), T.float32)
            up = T.alloc_fragment((block_M, N), T.float32)
            T.copy(X[bx * block_M, 0], gate)
            T.copy(X[bx * block_M, N], up)
            silu_times(gate, up)
            T.copy(gate, Y[bx * block_M, 0])

    return silu_mul_kernel


def _silu_mul_tiled(N, dtype, max_chunks, min_blocks):
    """One block per (row, column tile)."""
    M = T.symbolic("M")
    tile = streamed_chunk(dtype, max_chunks, TILE_THREADS)
    cfg = row_config(tile, dtype, max_chunks)
    tiles = T.ceildiv(N, tile)

    @T.prim_func
    def silu_mul_tiled_kernel(X: T.Tensor((M, 2 * N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(M, tiles, threads=cfg.threads, min_blocks=min_blocks) as (row, bt):
            gate = T.alloc_fragment((1, tile), T.float32)
            up = T.alloc_fragment((1, tile), T.float32)
            T.copy(X[row, bt * tile], gate)
            T.copy(X[row, N + bt * tile], up)
            silu_times(gate, up)
            T.copy(gate, Y[row, bt * tile])

    return silu_mul_tiled_kernel
