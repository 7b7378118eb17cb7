"""analysis/stmatrix_stores.py: which fragment layouts stmatrix stores, and the plan of instructions that stores
a whole fragment. Each plan is checked by running it as the ISA defines stmatrix (lane l gives row l mod 8 of
matrix l / 8, its register pair q is (row l / 4, columns 2 (l mod 4) + 0, 1) of matrix q), in numpy: every element
of the tile is written exactly once, with the register its layout puts it in."""

import numpy as np
import pytest

from tilemlir.analysis.layouts import tiled_layout
from tilemlir.analysis.mma_layouts import accumulator_layout, wgmma_accumulator_layout
from tilemlir.analysis.stmatrix_stores import matrix_origins, stmatrix_plan


def run_plan(layout, plan, shape=None):
    """[rows, cols] of (thread, register) that the plan's instructions store at each element of the tile (of
    `shape`, default the fragment's)."""
    rows, cols = shape or layout.shape
    stored = np.full((rows, cols, 2), -1)
    threads = np.arange(layout.threads)
    lanes = threads % 32
    origins = matrix_origins(layout)
    quarter = (lanes // 8) % plan.count
    lane_address = origins[threads, quarter] + np.stack([lanes % 8, np.zeros_like(lanes)], axis=-1)
    for pairs, offset in zip(plan.registers, plan.offsets):
        address = lane_address + np.array(offset)
        for warp in range(0, layout.threads, 32):
            for q, register in enumerate(pairs):
                for lane in range(32):
                    row, col = address[warp + 8 * q + lane // 4] + [0, 2 * (lane % 4)]  # lane 8q + r: row r of q
                    for e in range(2):
                        assert (stored[row, col + e] == -1).all(), "an element stored twice"
                        stored[row, col + e] = (warp + lane, register + e)
    return stored


@pytest.mark.parametrize("layout", [
    wgmma_accumulator_layout((128, 256), 256, 2, 1),  # two warpgroups along M
    wgmma_accumulator_layout((64, 256), 256, 1, 2),   # two along N
    wgmma_accumulator_layout((64, 64), 128, 1, 1),
    accumulator_layout((128, 128), 128, 2, 2),         # mma.sync's, 2 x 2 warps
    accumulator_layout((64, 64), 128, 2, 2),
    accumulator_layout((16, 8), 32, 1, 1),             # one m16n8 atom: two matrices
], ids=lambda layout: layout.describe())
def test_the_plan_stores_every_element_once_from_its_register(layout):
    plan = stmatrix_plan(layout)
    assert plan is not None
    assert plan.instructions * plan.count * 2 == layout.registers
    stored = run_plan(layout, plan)
    elements = layout.all_elements()
    thread, register = layout.locate(elements)
    assert (stored[elements[:, 0], elements[:, 1], 0] == thread).all()
    assert (stored[elements[:, 0], elements[:, 1], 1] == register).all()


@pytest.mark.parametrize("layout, offset, shape", [
    *[(wgmma_accumulator_layout((128, 256), 256, 2, 1), offset, shape)
      for offset, shape in (((0, 0), (128, 64)), ((0, 64), (128, 64)), ((0, 192), (128, 64)), ((0, 128), (128, 128)))],
    # one warpgroup over 128 rows: a slab's pairs are two runs of registers, one per 64-row wgmma
    (wgmma_accumulator_layout((128, 128), 128, 1, 1), (0, 64), (128, 64)),
])
def test_a_box_of_the_fragment_is_stored_from_its_registers(layout, offset, shape):
    """A column slab of an accumulator (an epilogue stored in slabs): the plan stores every element of the slab
    once, at its place in the slab's tile, from the register the layout puts it in."""
    plan = stmatrix_plan(layout, offset, shape)
    slabs = layout.shape[1] // shape[1]
    assert plan is not None and plan.instructions * plan.count * 2 * slabs == layout.registers
    stored = run_plan(layout, plan, shape)
    elements = layout.all_elements()
    inside = ((elements >= offset) & (elements < np.add(offset, shape))).all(axis=1)
    elements = elements[inside]
    thread, register = layout.locate(elements)
    local = elements - offset
    assert (stored[local[:, 0], local[:, 1], 0] == thread).all()
    assert (stored[local[:, 0], local[:, 1], 1] == register).all()


def test_a_box_that_cuts_a_matrix_or_leaves_warps_out_is_refused():
    layout = wgmma_accumulator_layout((128, 256), 256, 2, 1)
    assert stmatrix_plan(layout, (0, 4), (128, 64)) is None
    assert stmatrix_plan(layout, (0, 0), (60, 64)) is None
    # mma.sync's 2 x 2 warps: columns 64..127 are the second warp column's alone, the others hold none of them
    assert stmatrix_plan(accumulator_layout((128, 128), 128, 2, 2), (0, 64), (128, 64)) is None


def test_the_wgmma_accumulator_takes_x4_stores_of_consecutive_pairs():
    plan = stmatrix_plan(wgmma_accumulator_layout((128, 256), 256, 2, 1))
    assert plan.count == 4 and plan.instructions == 16
    assert plan.registers[:2] == ((0, 2, 4, 6), (8, 10, 12, 14))
    assert plan.offsets[:3] == ((0, 0), (0, 16), (0, 32))


@pytest.mark.parametrize("layout", [
    tiled_layout((64, 64), 128, 4),  # the coalescing layout: 4 consecutive columns a thread
    tiled_layout((64,), 128).lift([0], (64, 64)),  # rows over threads, every column in registers, replicated
], ids=["coalescing", "replicated"])
def test_layouts_stmatrix_cannot_store(layout):
    assert stmatrix_plan(layout) is None
