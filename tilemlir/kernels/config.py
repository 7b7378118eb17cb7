"""Block shapes for row kernels: how many threads share one row of N elements.

Every row factory takes `max_chunks` (the most 16-byte chunks of a row one
thread holds) to tune this, and `min_blocks` (T.Kernel's: resident blocks per
multiprocessor, which caps registers per thread); benchmarks/sweep_rows.py
measures the choices.

Every thread should own whole 16-byte chunks of the row (so each access is
one 16-byte vector load, coalesced across the warp) and only a few of them
(so the row stays in registers without spilling).
"""

from __future__ import annotations

from dataclasses import dataclass

import tilemlir.language as T
from tilemlir.dialects.tile import MAX_THREADS_PER_SM  # bounds a factory's min_blocks

CHUNK_BYTES = 16
# A row's fragments live in registers: float32 values of at most this many
# 16-byte chunks of the input per thread keep kernels with three or four
# row-sized fragments (LayerNorm: x, x^2, weight, bias) at a register count
# that still lets several blocks share a multiprocessor.
MAX_CHUNKS_PER_THREAD = 2
MIN_THREADS, MAX_THREADS = 128, 1024
# Narrow rows (several rows per 128-thread block) of the bf16 norms and SwiGLU ask for 8 resident
# blocks: at 8001 x 576, 9.3 / 11.4 / 15.3 / 11.9 us against 10.0 / 12.1 / 16.1 / 12.9 uncapped for
# RMSNorm / LayerNorm / residual LayerNorm / SwiGLU; 12 or 16 spill (benchmarks/sweep_rows.py).
NARROW_ROWS_MIN_BLOCKS = 8
LANES = 32
# A row of at most LANES x NARROW_MAX_CHUNKS 16-byte chunks that does not split evenly over whole
# warps is narrow: one warp per row (bf16 rows up to 2048 elements, fp32 up to 1024).
NARROW_MAX_CHUNKS = 8
# RowConfig.row_layout reads a narrow row in the widest of these chunks that splits it evenly over a
# warp's lanes. At 8001 x 576 bf16, 16-byte chunks (72 a row) leave the third load to 8 lanes; 4-byte
# chunks give every lane 9 loads, which keeps more requests in flight in these latency-bound kernels
# (on the H200, three interleaved rounds each, us): softmax 8.9-9.7 against 10.0-10.8, LayerNorm
# 10.9-11.0 against 11.5-12.2, per-row quant 8.7-9.3 against 9.6-10.2, residual LayerNorm 15.5-16.0
# against 15.6-16.0. The RMSNorms came out 0-7% slower and SwiGLU and the fp32 row reductions within
# noise, so they keep infer-layouts' layout.
NARROW_CHUNK_BYTES = (16, 8, 4)


# Row widths the general rule serves badly, with the block shape benchmarks/sweep_rows.py measured
# best there on the H200: (factory, N, dtype) -> (max_chunks, min_blocks). At 4001 x 7168:
# - layernorm: 128 threads x 7 chunks, 4 blocks per SM: 34.7 us, no spill. The default 448 threads
#   run 38.1 us uncapped (3 blocks fit), and capped at 4 blocks (34.4 us) spill 8 bytes.
# - quant_row_fp8: 128 threads x 7 chunks, 2 blocks: 26.6 us against 27.4 with 224 threads
#   (Triton 26.3-26.6); the same shape is 2.6% slower at 8192 columns, hence per width.
TUNED_ROWS = {("layernorm", 7168, "bfloat16"): (8, 4), ("quant_row_fp8", 7168, "bfloat16"): (8, 2)}


def tuned(factory: str, N: int, dtype: str, max_chunks: int | None, min_blocks: int | None,
          default_chunks: int) -> tuple[int, int | None]:
    """(max_chunks, min_blocks): the caller's values where given, else TUNED_ROWS's for this row
    width, else `default_chunks` and no min_blocks (the factory's own rule then applies)."""
    chunks, blocks = TUNED_ROWS.get((factory, N, dtype), (default_chunks, None))
    return (chunks if max_chunks is None else max_chunks, blocks if min_blocks is None else min_blocks)


@dataclass(frozen=True)
class RowConfig:
    threads: int
    block_M: int = 1
    # The layout kernels annotate their row fragment with (T.annotate_layout), where the one
    # infer-layouts picks (16-byte chunks) would split the row unevenly over a warp.
    row_layout: T.Layout | None = None

    def min_blocks(self, asked: int | None, one_row: int | None = None) -> int | None:
        """The resident blocks to ask for: `asked` when given, else `one_row` for one row per
        block (at most what a multiprocessor holds) and NARROW_ROWS_MIN_BLOCKS for several."""
        if asked is not None:
            return asked
        wanted = one_row if self.block_M == 1 else NARROW_ROWS_MIN_BLOCKS
        return None if wanted is None else max(1, min(wanted, MAX_THREADS_PER_SM // self.threads))


def held_dtype(hold, dtype):
    """The dtype a kernel holds its row in registers: float32 (converted once, at the load) or the
    input dtype itself (half the registers for 16-bit inputs, converted at each use)."""
    if T.dtype(hold) not in (T.float32, T.dtype(dtype)):
        raise ValueError(f"hold must be float32 or the input dtype {T.dtype(dtype)}, got {T.dtype(hold)}")
    return T.dtype(hold)


def element_bytes(dtype) -> int:
    """Bytes per element of `dtype` (a T dtype or its name; a ValueError names the known ones)."""
    return max(1, T.dtype(dtype).bits // 8)


def positive_int(name: str, value) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def row_config(N: int, dtype: str, max_chunks: int = MAX_CHUNKS_PER_THREAD) -> RowConfig | None:
    """How a row of N elements spreads over a block, or None when it does not fit in registers
    (more than MAX_THREADS x max_chunks 16-byte chunks): the kernel then streams it in chunks of
    `streamed_chunk` elements.

    - Even rows: the fewest threads (whole warps, 128..1024) that each own the same number
      (<= max_chunks) of 16-byte chunks.
    - Narrow rows (at most LANES x NARROW_MAX_CHUNKS chunks): one warp per row, several rows per
      block.
    - Other rows: one row per block, the fewest warps (at least MIN_THREADS threads) that hold it
      with at most max_chunks chunks each; the last chunks are masked.
    """
    row_bytes = positive_int("the row width N", N) * element_bytes(dtype)
    positive_int("max_chunks", max_chunks)
    chunks = -(-row_bytes // CHUNK_BYTES)
    if row_bytes % CHUNK_BYTES == 0:
        for threads in range(MIN_THREADS, MAX_THREADS + 1, LANES):
            if chunks % threads == 0 and chunks // threads <= max_chunks:
                return RowConfig(threads)
    if chunks <= LANES * NARROW_MAX_CHUNKS:
        return RowConfig(threads=128, block_M=4, row_layout=warp_row_layout(N, dtype))
    warps = -(-chunks // (max_chunks * LANES))
    threads = max(MIN_THREADS, warps * LANES)
    return RowConfig(threads) if threads <= MAX_THREADS else None


def streamed_chunk(dtype: str, max_chunks: int = MAX_CHUNKS_PER_THREAD, threads: int = MAX_THREADS) -> int:
    """Elements of a long row one pass of a streaming kernel holds: `threads` threads x
    max_chunks 16-byte chunks (by default the most `row_config` keeps in registers)."""
    return threads * positive_int("max_chunks", max_chunks) * CHUNK_BYTES // element_bytes(dtype)


def warp_row_layout(N: int, dtype: str) -> T.Layout | None:
    """One warp per row (row i on warp i), read in the widest chunk of NARROW_CHUNK_BYTES that
    splits the row evenly over the lanes; None where that is 16 bytes (infer-layouts' own choice)
    or none does."""
    for chunk in NARROW_CHUNK_BYTES:
        vector = chunk // element_bytes(dtype)
        if vector >= 1 and N % (vector * LANES) == 0:
            if chunk == CHUNK_BYTES:
                return None
            return T.Layout(lambda i, j: (j // vector) % LANES + i * LANES,
                            lambda i, j: j % vector + (j // (vector * LANES)) * vector)
    return None
