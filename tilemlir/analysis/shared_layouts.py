"""Swizzled shared-memory layouts: the one place the `tile.swizzle` byte permutation is written.

`tile.swizzle = W` (0, 32, 64 or 128) on a shared buffer (docs/tensor_cores.md) stores each tile
(its last two dims; leading dims, a ring's slot, pick the tile) in panels of W bytes of every row,
panel p at `p * rows * W`, and within a panel XORs the 16-byte chunk bits of the byte offset
`L = r * W + c` with its bits 7 and up: `L' = L ^ (((L >> 7) & (W / 16 - 1)) << 4)`. That is the
32/64/128-byte swizzle of TMA and wgmma: the eight 16-byte rows an ldmatrix phase reads, one per
row of eight consecutive rows, land in eight different 16-byte bank groups. The atom is 16 bytes,
so an aligned 16-byte access (a cp.async, a vector load) stays one contiguous access.

`physical_element` computes the permuted element index over an `IndexArithmetic`: Python ints
(`INT_ARITHMETIC`, the tests' and the bank-conflict counter's) or an IR builder
(materialize-shared-layouts), so the compiler and its checks share this code.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from tilemlir.dialects.tile import SWIZZLE_ATTR, SWIZZLE_WIDTHS, swizzle_problem  # noqa: F401  (re-exported)

RING_ATTR = "tile.ring"  # on a pipelined ring buffer (plan-pipeline)
ASYNC_ATTR = "tile.async"  # on a ring copy, then on its shared stores (lower-tile-ops)
CHUNK_BYTES = 16
BANKS = 32
BANK_BYTES = 4


class IndexArithmetic(Protocol):
    """Non-negative integer arithmetic on some representation of values."""

    def add(self, a: Any, b: Any) -> Any: ...
    def mul(self, a: Any, b: int) -> Any: ...
    def div(self, a: Any, b: int) -> Any: ...
    def rem(self, a: Any, b: int) -> Any: ...
    def xor(self, a: Any, b: Any) -> Any: ...
    def const(self, a: int) -> Any: ...


class _Ints:
    def add(self, a, b):
        return a + b

    def mul(self, a, b):
        return a * b

    def div(self, a, b):
        return a // b

    def rem(self, a, b):
        return a % b

    def xor(self, a, b):
        return a ^ b

    def const(self, a):
        return a


INT_ARITHMETIC: IndexArithmetic = _Ints()


def swizzle_width(row_bytes: int) -> int:
    """The swizzle for tiles whose rows are `row_bytes` long: the largest of 128/64/32 dividing it, 0
    when none does (rows shorter than 32 bytes or not a multiple of it are left unswizzled)."""
    for width in (128, 64, 32):
        if row_bytes % width == 0:
            return width
    return 0


def swizzled_byte(offset: Any, width: int, ar: IndexArithmetic = INT_ARITHMETIC) -> Any:
    """`L ^ (((L >> 7) & (W / 16 - 1)) << 4)`: the byte offset `offset` within a panel, permuted."""
    if width == 0:
        return offset
    mask = width // CHUNK_BYTES
    chunk_bits = ar.mul(ar.rem(ar.div(offset, 128), mask), CHUNK_BYTES)
    return ar.xor(offset, chunk_bits)


def physical_element(indices: Sequence[Any], shape: Sequence[int], element_bytes: int, width: int,
                     ar: IndexArithmetic = INT_ARITHMETIC) -> Any:
    """The linear element index at which logical element `indices` of a `shape` buffer swizzled
    `width` is stored (row-major linear when `width` is 0)."""
    if width == 0:
        linear = ar.const(0)
        for index, size in zip(indices, shape):
            linear = ar.add(ar.mul(linear, size), index)
        return linear
    *lead, row, col = indices
    *lead_shape, rows, cols = shape
    tile = ar.const(0)
    for index, size in zip(lead, lead_shape):
        tile = ar.add(ar.mul(tile, size), index)
    per_panel = width // element_bytes
    panel, within = ar.div(col, per_panel), ar.rem(col, per_panel)
    in_panel = ar.add(ar.mul(row, width), ar.mul(within, element_bytes))
    byte = ar.add(ar.add(ar.mul(tile, rows * cols * element_bytes), ar.mul(panel, rows * width)),
                  swizzled_byte(in_panel, width, ar))
    return ar.div(byte, element_bytes)


# Adding 8 rows to a row adds 8W to the in-panel offset L: a multiple of 128 (so bits 0-6, the XOR's
# target bits among them, are untouched by the carry) whose bits 7 .. 7 + log2(W/16) - 1 are zero (so the
# XOR's selector is unchanged). The permutation therefore commutes with it, and with whole panels.
SWIZZLE_ROW_PERIOD = 8


def shifted_element(rows_ahead: Any, panel_columns_ahead: Any, shape: Sequence[int], element_bytes: int, width: int,
                    ar: IndexArithmetic = INT_ARITHMETIC) -> Any:
    """How far the physical element moves when a logical index moves `rows_ahead` rows (a multiple of
    SWIZZLE_ROW_PERIOD) and `panel_columns_ahead` columns (a multiple of a panel's W / element_bytes columns):

        physical_element([..., r + rows_ahead, c + panel_columns_ahead])
            == physical_element([..., r, c]) + shifted_element(rows_ahead, panel_columns_ahead)

    for every r, c >= 0. materialize-shared-layouts keeps such terms (a warp's row block, an unrolled loop's
    step) outside the permutation, so the CUDA compiler sees one permuted lane offset plus constants."""
    if width == 0:
        return ar.add(ar.mul(rows_ahead, shape[-1]), panel_columns_ahead)
    per_panel = width // element_bytes
    rows = shape[-2]
    # 8k rows are 8kW bytes of the same panel: rows_ahead * per_panel elements; columns a whole number of
    # panels ahead are (columns / per_panel) * rows * W bytes: columns * rows elements
    return ar.add(ar.mul(rows_ahead, per_panel), ar.mul(panel_columns_ahead, rows))


BASE_ALIGN = 16
SWIZZLE_128_ALIGN = 1024
TMA_ALIGN = 128  # of a TMA box's shared tile
TMA_OPS = ("tile.tma_load", "tile.tma_store")
HARDWARE_SWIZZLED = ("tile.wgmma_desc", *TMA_OPS)  # ops whose hardware swizzles by address bits


def buffer_alignment(width: int, hardware_swizzled: bool, tma_written: bool = False) -> int:
    """Bytes a shared buffer swizzled `width` must be aligned to. The hardware swizzles (TMA's, wgmma's)
    take their XOR from address bits, so the pattern starts at an 8W-byte boundary (ISA: 1024, 512,
    256); ldmatrix addresses are computed, but 128-byte panels keep 1024 so the two agree. A buffer TMA
    writes or reads starts at 128 bytes at least."""
    if width and hardware_swizzled:
        return SWIZZLE_ROW_PERIOD * width
    if tma_written:
        return max(TMA_ALIGN, SWIZZLE_128_ALIGN if width == 128 else BASE_ALIGN)
    return SWIZZLE_128_ALIGN if width == 128 else BASE_ALIGN


def alloca_alignment(alloca: Any) -> int:
    """`buffer_alignment` of a shared alloca: its `tile.swizzle`, and whether a `tile.wgmma_desc` reads it or a
    TMA box writes or reads it."""
    width = alloca.attributes[SWIZZLE_ATTR].value if SWIZZLE_ATTR in alloca.attributes else 0
    buffer_uses = [use.owner.name for use in alloca.results[0].uses if use.operand_number == 0]
    return buffer_alignment(width, any(name in HARDWARE_SWIZZLED for name in buffer_uses), any(name in TMA_OPS for name in buffer_uses))


# -- wgmma descriptors -----------------------------------------------------------------------------

# The descriptor's leading byte offset where the ISA does not use it (K-major swizzled tiles): 1 in its units.
UNUSED_LEADING_BYTES = 16


def wgmma_descriptor_offsets(rows: int, width: int, k_major: bool) -> tuple[int, int]:
    """(leading, stride) byte offsets of the wgmma descriptor of a tile of `rows` rows stored as above.

    The ISA's canonical swizzled layouts are built of atoms of 8 rows of W bytes (an 8W-byte block,
    swizzled as `swizzled_byte` permutes it). Stride: from one 8-row group of the strided dimension
    to the next, 8W here for both majors (rows are W apart within a panel). Leading, for an
    MN-major tile (rows along K, the W bytes of a row along M or N): from one W-byte panel of M or N
    to the next, `rows * W`; unused for a K-major tile (its K extent per instruction, 32 bytes, lies
    in one panel, and the next panel is a later k step's start address)."""
    if width not in SWIZZLE_WIDTHS or width == 0:
        raise ValueError(f"wgmma reads 32, 64 or 128-byte swizzled tiles, not swizzle {width}")
    if rows % SWIZZLE_ROW_PERIOD:
        raise ValueError(f"a wgmma tile's rows come in groups of {SWIZZLE_ROW_PERIOD}, not {rows}")
    stride = SWIZZLE_ROW_PERIOD * width
    return (UNUSED_LEADING_BYTES if k_major else rows * width), stride


# -- bank conflicts -------------------------------------------------------------------------------


def wavefronts(byte_addresses: Sequence[int], access_bytes: int) -> int:
    """Shared-memory wavefronts one warp-wide access takes: lanes in phases of 128 bytes' worth
    (32 lanes of 4 bytes, 16 of 8, 8 of 16, one ldmatrix matrix a phase), each phase as many
    wavefronts as the most distinct 4-byte words any bank holds among its lanes' words."""
    per_phase = max(1, BANKS * BANK_BYTES // access_bytes)
    total = 0
    for start in range(0, len(byte_addresses), per_phase):
        words_by_bank: dict[int, set[int]] = {}
        for address in byte_addresses[start:start + per_phase]:
            if address % access_bytes:
                raise ValueError(f"address {address} is not aligned to its {access_bytes}-byte access")
            for word in range(address // BANK_BYTES, (address + access_bytes) // BANK_BYTES):
                words_by_bank.setdefault(word % BANKS, set()).add(word)
        total += max(len(words) for words in words_by_bank.values())
    return total


def ideal_wavefronts(lanes: int, access_bytes: int) -> int:
    """Wavefronts of a conflict-free access of `lanes` lanes."""
    return -(-lanes * access_bytes // (BANKS * BANK_BYTES))
