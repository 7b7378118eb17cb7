"""analysis/mma_layouts.py against the PTX ISA's fragment tables (backends/cpu/simulate/ptx_isa.py): for every
lane and register, the element a layout puts there is the one the ISA says mma.sync holds there."""

import numpy as np
import pytest

from tilemlir.analysis import layouts
from tilemlir.analysis.layouts import LayoutError
from tilemlir.analysis.mma_layouts import accumulator_layout, atom_register, operand_a_layout, wgmma_accumulator_layout
from tilemlir.backends.cpu.simulate.ptx_isa import FRAGMENTS
from tilemlir.context import make_context
from tilemlir.mlir import ir


def isa_elements(fragment):
    """[lane, element] -> (row, col), elements register-major as register arrays hold them."""
    coords = fragment.coords
    return coords.reshape(coords.shape[0], -1, 2)


@pytest.mark.parametrize("ctype", ["f32", "f16"])
def test_one_atom_accumulator_is_the_isa_table(ctype):
    layout = accumulator_layout((16, 8), 32, 1, 1)
    table = isa_elements(FRAGMENTS["m16n8k16", "c", ctype])
    for lane in range(32):
        for reg in range(4):
            index, _ = layout.element_of(lane, reg)
            assert tuple(index) == tuple(table[lane, reg]), (lane, reg)


@pytest.mark.parametrize("etype", ["f16", "bf16"])
def test_one_atom_operand_a_is_the_isa_table(etype):
    layout = operand_a_layout((16, 16), 32, 1)
    table = isa_elements(FRAGMENTS["m16n8k16", "a", etype])
    for lane in range(32):
        for slot in range(8):
            index, _ = layout.element_of(lane, slot)
            assert tuple(index) == tuple(table[lane, slot]), (lane, slot)


@pytest.mark.parametrize("shape, warps", [((128, 128), (2, 2)), ((64, 128), (4, 1)), ((32, 64), (1, 2)),
                                          ((128, 64), (2, 4))])
def test_every_atom_of_the_warp_grid_holds_the_isa_fragment(shape, warps):
    """Atom (i, j) of warp (wm, wn): lane l's registers 4 (i * atoms_n + j) + r hold the ISA's c_r of that atom."""
    wm, wn = warps
    layout = accumulator_layout(shape, 32 * wm * wn, wm, wn)
    tile_m, tile_n = shape[0] // wm, shape[1] // wn
    table = isa_elements(FRAGMENTS["m16n8k16", "c", "f32"])
    for warp_m in range(wm):
        for warp_n in range(wn):
            warp = warp_m + wm * warp_n
            for i in range(tile_m // 16):
                for j in range(tile_n // 8):
                    row0, col0 = warp_m * tile_m + i * 16, warp_n * tile_n + j * 8
                    base = atom_register(layout, row0, col0)
                    assert base == 4 * (i * (tile_n // 8) + j)
                    for lane in range(32):
                        for r in range(4):
                            index, _ = layout.element_of(32 * warp + lane, base + r)
                            assert tuple(index) == (row0 + table[lane, r, 0], col0 + table[lane, r, 1])
    assert layouts.check_bijection(layout) is None


def test_the_design_digits_of_a_128x128_accumulator():
    """../shared/TENSOR_CORES.md section 1: the 2x2-warp 128x128 accumulator."""
    with make_context(), ir.Location.unknown():
        attr = str(layouts.to_attr(accumulator_layout((128, 128), 128, 2, 2)))
    assert "(d1 floordiv 2) mod 4 + (d0 mod 8) * 4 + (d0 floordiv 64) * 32 + (d1 floordiv 64) * 64" in attr
    assert "d1 mod 2 + ((d0 floordiv 8) mod 2) * 2 + ((d1 floordiv 8) mod 8) * 4 + ((d0 floordiv 16) mod 4) * 32" \
        in attr


def test_a_copied_accumulator_is_the_next_gemms_fragment_a():
    """C (M x N, warps on M) of one gemm and A (M x K = N) of the next put every element in the same register."""
    c = accumulator_layout((64, 64), 128, 4, 1)
    a = operand_a_layout((64, 64), 128, 4)
    points = c.all_elements()
    assert all(np.array_equal(x, y) for x, y in zip(c.locate(points), a.locate(points)))


def test_grids_that_do_not_tile_are_refused():
    with pytest.raises(LayoutError, match="does not split into m16n8 atoms"):
        accumulator_layout((48, 64), 128, 4, 1)
    with pytest.raises(LayoutError, match="has 128 threads, not 256"):
        accumulator_layout((64, 64), 256, 2, 2)
    with pytest.raises(LayoutError, match="k16 steps"):
        operand_a_layout((64, 24), 128, 4)


def isa_wgmma_d(thread: int, register: int) -> tuple[int, int]:
    """The PTX ISA's m64nNk16 D fragment (9.7.15.5.1.1): warp w of the warpgroup holds rows 16 w .. 16 w + 15,
    lane l rows l / 4 and l / 4 + 8 of them, register i column 8 (i / 4) + 2 (l mod 4) + i mod 2."""
    warp, lane = (thread % 128) // 32, thread % 32
    return 16 * warp + lane // 4 + 8 * ((register // 2) % 2), 8 * (register // 4) + 2 * (lane % 4) + register % 2


@pytest.mark.parametrize("n", [8, 64, 128, 256])
def test_one_wgmma_accumulator_is_the_isa_table(n):
    layout = wgmma_accumulator_layout((64, n), 128, 1, 1)
    for thread in range(128):
        for register in range(n // 2):
            index, _ = layout.element_of(thread, register)
            assert tuple(index) == isa_wgmma_d(thread, register), (thread, register)


@pytest.mark.parametrize("shape, threads, groups_m, groups_n", [((128, 128), 128, 1, 1), ((128, 256), 256, 2, 1),
                                                                 ((64, 256), 256, 1, 2), ((256, 128), 256, 2, 1)])
def test_wgmma_accumulators_tile_the_instruction_over_blocks_and_warpgroups(shape, threads, groups_m, groups_n):
    """Warpgroup (g_m, g_n) holds a TM x TN tile; its instruction i (rows 64 i ..) takes registers i TN / 2 ..."""
    layout = wgmma_accumulator_layout(shape, threads, groups_m, groups_n)
    assert layouts.check_bijection(layout) is None
    tile_m, tile_n = shape[0] // groups_m, shape[1] // groups_n
    for thread in range(threads):
        group = thread // 128
        row0, col0 = (group % groups_m) * tile_m, (group // groups_m) * tile_n
        for instruction in range(tile_m // 64):
            for register in range(tile_n // 2):
                row, col = isa_wgmma_d(thread, register)
                index, _ = layout.element_of(thread, instruction * tile_n // 2 + register)
                assert tuple(index) == (row0 + 64 * instruction + row, col0 + col)


def test_wgmma_accumulator_rejects_grids_that_do_not_tile():
    with pytest.raises(LayoutError, match="a 1x1 warpgroup grid has 128 threads, not 256"):
        wgmma_accumulator_layout((128, 128), 256, 1, 1)
    with pytest.raises(LayoutError, match="a 96x128 accumulator does not split into m64"):
        wgmma_accumulator_layout((96, 128), 128, 1, 1)
