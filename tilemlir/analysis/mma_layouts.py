"""Fragment layouts of mma.sync m16n8k16 gemms, as `TiledLayout` digits (docs/tensor_cores.md).

The accumulator C (M x N) of a gemm on a `warps_m x warps_n` warp grid:
each warp holds a `(M / warps_m) x (N / warps_n)` tile of m16n8 atoms, and
in an atom lane `l` holds rows `l / 4` and `l / 4 + 8`, columns
`2 (l mod 4)` and `+ 1` (the PTX ISA's accumulator fragment). As digits:

    thread = (col floordiv 2) mod 4 + (row mod 8) * 4 + warp_m * 32 + warp_n * 32 warps_m
    reg    = col mod 2 + ((row floordiv 8) mod 2) * 2 + n_atom * 4 + m_atom * 4 (WN / 8)

with `warp_m = row floordiv WM`, `n_atom = (col floordiv 8) mod (WN / 8)`,
`m_atom = (row floordiv 16) mod (WM / 16)`. So atom (m_atom, n_atom) of a
lane sits at registers `4 (m_atom (WN / 8) + n_atom) + 0..3` in the ISA's
c0..c3 order.

A fragment A (M x K, warps along M only) takes the m16k16 operand layout,
which for 16-bit elements is the accumulator layout of an m16n16 atom pair
(K as the column dim, one warp column): the k16 step `s` of m-atom `m` is
the 8 halves at register `8 (m (K / 16) + s)`, in the ISA's a0..a7 order.
So a C of one gemm copied to f16 is, register for register, the A of the next.

The accumulator of a wgmma m64nNk16 gemm on a `groups_m x groups_n` grid of warpgroups (128
threads each): warpgroup (g_m, g_n) holds a `TM x TN` tile (TM = M / groups_m, TN = N / groups_n)
as TM / 64 instructions of m64n{TN}; in one, warp w of the warpgroup holds rows 16 w .. 16 w + 15
and within them lane l the m16n8 accumulator's elements of every n8 block:

    thread = (col floordiv 2) mod 4 + (row mod 8) * 4 + ((row floordiv 16) mod 4) * 32
             + g_m * 128 + g_n * 128 groups_m
    reg    = col mod 2 + ((row floordiv 8) mod 2) * 2 + ((col floordiv 8) mod (TN / 8)) * 4
             + ((row floordiv 64) mod (TM / 64)) * TN / 2

so instruction i's TN / 2 registers are `i TN / 2 ...`, in the ISA's d0.. order.

Nothing here is checked against the hardware: the CPU simulation runs the
instructions from `backends/cpu/simulate/ptx_isa.py`'s tables instead, and
tests compare the two.
"""

from __future__ import annotations

import numpy as np

from tilemlir.analysis.layouts import Digit, LayoutError, TiledLayout
from tilemlir.dialects.tensor_core_ops import MmaChoice
from tilemlir.dialects.warpgroup import WARPGROUP, WGMMA_M

WARP = 32
ATOM_M, ATOM_N, ATOM_K = 16, 8, 16


def accumulator_layout(shape: tuple[int, int], threads: int, warps_m: int, warps_n: int) -> TiledLayout:
    """The layout of C (M x N) of an m16n8k16 gemm on a warps_m x warps_n grid."""
    m, n = shape
    if warps_m * warps_n * WARP != threads:
        raise LayoutError(f"a {warps_m}x{warps_n} warp grid has {warps_m * warps_n * WARP} threads, not {threads}")
    if m % (ATOM_M * warps_m) or n % (ATOM_N * warps_n):
        raise LayoutError(f"a {m}x{n} accumulator does not split into m16n8 atoms over {warps_m}x{warps_n} warps")
    tile_m, tile_n = m // warps_m, n // warps_n
    atoms_m, atoms_n = tile_m // ATOM_M, tile_n // ATOM_N
    digits = [
        Digit(1, 1, 2, reg=1),
        Digit(1, 2, 4, thread=1),
        Digit(1, ATOM_N, atoms_n, reg=4),
        Digit(1, tile_n, warps_n, thread=WARP * warps_m),
        Digit(0, 1, 8, thread=4),
        Digit(0, 8, 2, reg=2),
        Digit(0, ATOM_M, atoms_m, reg=4 * atoms_n),
        Digit(0, tile_m, warps_m, thread=WARP),
    ]
    return TiledLayout((m, n), threads, tuple(d for d in digits if d.size > 1)).checked()


def wgmma_accumulator_layout(shape: tuple[int, int], threads: int, groups_m: int, groups_n: int) -> TiledLayout:
    """The layout of C (M x N) of a wgmma m64nNk16 gemm on a groups_m x groups_n warpgroup grid."""
    m, n = shape
    if groups_m * groups_n * WARPGROUP != threads:
        raise LayoutError(f"a {groups_m}x{groups_n} warpgroup grid has {groups_m * groups_n * WARPGROUP} threads, "
                          f"not {threads}")
    if m % (WGMMA_M * groups_m) or n % (ATOM_N * groups_n):
        raise LayoutError(f"a {m}x{n} accumulator does not split into m64 x n8k blocks over {groups_m}x{groups_n} "
                          "warpgroups")
    tile_m, tile_n = m // groups_m, n // groups_n
    digits = [
        Digit(1, 1, 2, reg=1),
        Digit(1, 2, 4, thread=1),
        Digit(1, ATOM_N, tile_n // ATOM_N, reg=4),
        Digit(1, tile_n, groups_n, thread=WARPGROUP * groups_m),
        Digit(0, 1, 8, thread=4),
        Digit(0, 8, 2, reg=2),
        Digit(0, ATOM_M, WGMMA_M // ATOM_M, thread=WARP),
        Digit(0, WGMMA_M, tile_m // WGMMA_M, reg=tile_n // 2),
        Digit(0, tile_m, groups_m, thread=WARPGROUP),
    ]
    return TiledLayout((m, n), threads, tuple(d for d in digits if d.size > 1)).checked()


def gemm_accumulator_layout(choice: MmaChoice, shape: tuple[int, int], threads: int) -> TiledLayout:
    """The accumulator layout of a gemm select-mma recorded `choice` for."""
    if choice.wgmma:
        return wgmma_accumulator_layout(shape, threads, choice.grid_m, choice.grid_n)
    return accumulator_layout(shape, threads, choice.grid_m, choice.grid_n)


def operand_a_layout(shape: tuple[int, int], threads: int, warps_m: int) -> TiledLayout:
    """The layout of a fragment A (M x K) of an m16n8k16 gemm whose warps all run along M."""
    m, k = shape
    if k % ATOM_K:
        raise LayoutError(f"a fragment A with K = {k} does not split into k16 steps")
    return accumulator_layout((m, k), threads, warps_m, 1)


def atom_register(layout: TiledLayout, row: int, col: int) -> int:
    """The register of element (row, col) in `layout` (the same in every lane holding its atom)."""
    return int(layout.locate(np.array([row, col]))[1])
