"""analysis/shared_layouts.py: the tile.swizzle permutation and the bank-conflict counter that judges it."""

import itertools
import random

import numpy as np
import pytest

from tilemlir.analysis.mma_layouts import wgmma_accumulator_layout

from tilemlir.analysis.shared_layouts import (
    SWIZZLE_ROW_PERIOD, UNUSED_LEADING_BYTES, buffer_alignment, ideal_wavefronts, physical_element, shifted_element,
    swizzle_problem, swizzle_width, swizzled_byte, wavefronts, wgmma_descriptor_offsets)

BF16 = 2
TILES = [(128, 32), (32, 128)]  # an A tile (BM x BK) and a B tile (BK x BN) of a 128x128x32 gemm


def byte_address(row: int, col: int, shape, width: int) -> int:
    return physical_element([row, col], shape, BF16, width) * BF16


def test_swizzle_width_is_the_largest_dividing_pattern():
    assert [swizzle_width(b) for b in (16, 32, 48, 64, 96, 128, 256, 384)] == [0, 32, 0, 64, 32, 128, 128, 128]
    assert [swizzle_width(shape[1] * BF16) for shape in TILES] == [64, 128]


def test_swizzled_byte_is_the_contract_formula():
    rng = random.Random(7)
    for width in (32, 64, 128):
        for _ in range(500):
            offset = rng.randrange(0, 1 << 14)
            expected = offset ^ (((offset >> 7) & (width // 16 - 1)) << 4)
            assert swizzled_byte(offset, width) == expected
    assert swizzled_byte(12345, 0) == 12345


@pytest.mark.parametrize("shape", [(128, 32), (32, 128), (3, 64, 64), (16, 48), (2, 8, 16)])
def test_physical_index_is_a_permutation_keeping_16_byte_atoms(shape):
    width = swizzle_width(shape[-1] * BF16)
    places = [physical_element(list(index), shape, BF16, width) for index in itertools.product(*map(range, shape))]
    assert sorted(places) == list(range(len(places)))
    for start in range(0, len(places), 8):  # eight bf16 = one 16-byte atom, never split
        assert places[start:start + 8] == list(range(places[start], places[start] + 8))
        assert places[start] % 8 == 0


@pytest.mark.parametrize("shape, element_bytes", [((3, 128, 32), 2), ((2, 32, 128), 2), ((64, 64), 2), ((16, 96), 2),
                                                   ((32, 32), 4), ((64, 128), 1), ((8, 6), 2)])
def test_whole_row_periods_and_panels_commute_with_the_permutation(shape, element_bytes):
    """Moving a logical index by 8k rows and p whole panels moves its physical element by shifted_element, from
    any row and column (past the tile too: materialize-shared-layouts splits sums of non-negative terms)."""
    width = swizzle_width(shape[-1] * element_bytes)
    per_panel = width // element_bytes if width else 1
    rng = random.Random(11)
    for _ in range(400):
        lead = [rng.randrange(size) for size in shape[:-2]]
        row, col = rng.randrange(2 * shape[-2]), rng.randrange(2 * shape[-1])
        rows_ahead = SWIZZLE_ROW_PERIOD * rng.randrange(0, 9)
        columns_ahead = per_panel * rng.randrange(0, 4)
        moved = physical_element([*lead, row + rows_ahead, col + columns_ahead], shape, element_bytes, width)
        base = physical_element([*lead, row, col], shape, element_bytes, width)
        assert moved == base + shifted_element(rows_ahead, columns_ahead, shape, element_bytes, width)
    if width:  # and a step that is not a whole period does not commute: the rule is not vacuous
        assert any(physical_element([*([0] * len(shape[:-2])), r + 1, 0], shape, element_bytes, width)
                   != physical_element([*([0] * len(shape[:-2])), r, 0], shape, element_bytes, width) + per_panel
                   for r in range(8))


def test_ring_slots_are_whole_tiles():
    shape = (3, 32, 128)
    tile = 32 * 128
    for slot in range(3):
        places = {physical_element([slot, r, c], shape, BF16, 128) for r in range(32) for c in range(128)}
        assert places == set(range(slot * tile, (slot + 1) * tile))


def ldmatrix_x4_addresses(shape, width, row0, col0):
    """Lane addresses of an ldmatrix.x4 of the 16x16 block at (row0, col0): lanes 8i..8i+7 give the
    rows of matrix i, matrices (rows 0-7, cols 0-7), (rows 8-15, cols 0-7), (0-7, 8-15), (8-15, 8-15)."""
    addresses = []
    for lane in range(32):
        matrix, row = divmod(lane, 8)
        addresses.append(byte_address(row0 + row + 8 * (matrix % 2), col0 + 8 * (matrix // 2), shape, width))
    return addresses


@pytest.mark.parametrize("shape", TILES)
def test_ldmatrix_reads_are_conflict_free_only_when_swizzled(shape):
    rows, cols = shape
    width = swizzle_width(cols * BF16)
    blocks = [(r, c) for r in range(0, rows, 16) for c in range(0, cols, 16)]
    for row0, col0 in blocks:
        assert wavefronts(ldmatrix_x4_addresses(shape, width, row0, col0), 16) == ideal_wavefronts(32, 16) == 4
    worst = max(wavefronts(ldmatrix_x4_addresses(shape, 0, row0, col0), 16) for row0, col0 in blocks)
    # unswizzled rows of 64 bytes put rows r and r + 2 in one bank group (4-way), of 256 bytes all 8 (8-way)
    assert worst == {(128, 32): 16, (32, 128): 32}[shape]


@pytest.mark.parametrize("shape", TILES)
@pytest.mark.parametrize("threads", [128, 256])
def test_cp_async_16_byte_writes_are_conflict_free(shape, threads):
    """Thread t of the block copies 16-byte chunks t, t + threads, ... of the row-major tile."""
    rows, cols = shape
    chunks_per_row = cols * BF16 // 16
    for width in (swizzle_width(cols * BF16), 0):
        for first in range(0, rows * chunks_per_row, 32):
            lanes = [divmod(chunk, chunks_per_row) for chunk in range(first, first + 32)]
            addresses = [byte_address(r, c * 8, shape, width) for r, c in lanes]
            assert wavefronts(addresses, 16) == 4


@pytest.mark.parametrize("shape, threads", [((128, 256), 256), ((64, 128), 128)])
def test_accumulator_pair_stores_into_an_epilogue_tile_are_conflict_free_only_when_swizzled(shape, threads):
    """Each warp's 4-byte store of one bf16 pair per lane of a wgmma accumulator (registers 2i, 2i + 1
    hold adjacent columns), as vectorize makes the epilogue's copy into the tile select-shared-layouts
    swizzles."""
    layout = wgmma_accumulator_layout(shape, threads, threads // 128, 1)
    width = swizzle_width(shape[1] * BF16)
    assert width == 128
    worst = {}
    for w in (width, 0):
        counts = []
        for warp in range(threads // 32):
            lanes = range(warp * 32, warp * 32 + 32)
            for reg in range(0, layout.registers, 2):
                index, _ = layout.element_of(np.array(lanes), reg)
                counts.append(wavefronts([byte_address(int(r), int(c), shape, w) for r, c in index], 4))
        worst[w] = max(counts)
    assert worst == {width: ideal_wavefronts(32, 4), 0: 8}


def test_wavefront_counter_counts_conflicts_and_broadcasts():
    assert wavefronts([4 * lane for lane in range(32)], 4) == 1
    assert wavefronts([128 * lane for lane in range(32)], 4) == 32  # every lane in bank 0, distinct words
    assert wavefronts([0] * 32, 4) == 1  # one word: a broadcast
    assert wavefronts([256 * lane for lane in range(8)], 16) == 8
    with pytest.raises(ValueError, match="not aligned"):
        wavefronts([8], 16)


def test_swizzle_problems():
    assert swizzle_problem(128, (32, 128), BF16) is None
    assert swizzle_problem(0, (7,), BF16) is None
    assert "one of 0, 32, 64, 128" in swizzle_problem(48, (32, 128), BF16)
    assert "multiple of 128 bytes, got 64" in swizzle_problem(128, (128, 32), BF16)
    assert "rank 2 or more" in swizzle_problem(64, (64,), BF16)


@pytest.mark.parametrize("width", [32, 64, 128])
def test_wgmma_descriptor_offsets_follow_the_panels(width):
    """Stride: the next 8-row group, 8W bytes on in a panel of W-byte rows, either major. Leading: for an
    MN-major tile the next W-byte panel (`rows` rows of W bytes on); a K-major one's is unused (16)."""
    element_bytes = 2
    rows, cols = 64, 4 * width // element_bytes
    per_panel = width // element_bytes
    # the byte distances in the layout itself, from physical_element
    eight_rows_on = (physical_element([8, 0], (rows, cols), element_bytes, width)
                     - physical_element([0, 0], (rows, cols), element_bytes, width)) * element_bytes
    next_panel = (physical_element([0, per_panel], (rows, cols), element_bytes, width)
                  - physical_element([0, 0], (rows, cols), element_bytes, width)) * element_bytes
    assert wgmma_descriptor_offsets(rows, width, k_major=True) == (UNUSED_LEADING_BYTES, eight_rows_on)
    assert wgmma_descriptor_offsets(rows, width, k_major=False) == (next_panel, eight_rows_on)
    assert (eight_rows_on, next_panel) == (8 * width, rows * width)


def test_wgmma_descriptor_offsets_reject_unswizzled_and_ragged_tiles():
    with pytest.raises(ValueError, match="wgmma reads 32, 64 or 128-byte swizzled tiles, not swizzle 0"):
        wgmma_descriptor_offsets(64, 0, k_major=True)
    with pytest.raises(ValueError, match="a wgmma tile's rows come in groups of 8, not 12"):
        wgmma_descriptor_offsets(12, 128, k_major=False)


@pytest.mark.parametrize("width, wgmma, align", [(0, False, 16), (64, False, 16), (128, False, 1024), (32, True, 256),
                                                 (64, True, 512), (128, True, 1024), (0, True, 16)])
def test_buffer_alignment_starts_the_hardware_swizzle_pattern(width, wgmma, align):
    assert buffer_alignment(width, wgmma) == align
