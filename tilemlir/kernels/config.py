"""Block shapes for row kernels: how many threads share one row of N elements.

Every thread should own whole 16-byte chunks of the row (so each access is
one 16-byte vector load, coalesced across the warp) and only a few of them
(so the row stays in registers without spilling).
"""

from __future__ import annotations

from dataclasses import dataclass

ELEMENT_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3": 1, "float8_e5m2": 1}
CHUNK_BYTES = 16
MAX_CHUNKS_PER_THREAD = 8
THREAD_CHOICES = (128, 256, 512, 1024, 64, 32)


@dataclass(frozen=True)
class RowConfig:
    threads: int
    block_M: int = 1


def row_config(N: int, dtype: str) -> RowConfig:
    """Threads per row such that every thread owns the same number (<= 8) of 16-byte chunks."""
    chunks, rest = divmod(N * ELEMENT_BYTES[dtype], CHUNK_BYTES)
    if rest == 0:
        for threads in THREAD_CHOICES:
            if chunks % threads == 0 and chunks // threads <= MAX_CHUNKS_PER_THREAD:
                return RowConfig(threads)
    # Narrow or odd rows: one warp per row, several rows per block.
    return RowConfig(threads=128, block_M=4)
