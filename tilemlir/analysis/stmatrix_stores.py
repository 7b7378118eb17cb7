"""Whether a fragment's layout lets `stmatrix` store it, and the instructions that do (docs/tensor_cores.md,
"stmatrix").

`stmatrix.m8n8.x{count}` stores `count` 8x8 matrices of 16-bit elements for a warp: lane l holds, in one
32-bit register per matrix, the pair (row l / 4, columns 2 (l mod 4) and 2 (l mod 4) + 1) of each, and gives
the address of row l mod 8 of matrix l / 8. A fragment's layout fits when, for every thread t of warp w and
every even register o, registers o and o + 1 hold consecutive columns of one row, at (l / 4, 2 (l mod 4)) from
the element warp w's lane 0 holds in register o, and that element (the matrix's origin) lies on the 8 x 8
grid: so each (warp, register pair) is one matrix. The mma.sync and wgmma accumulator layouts fit (each warp's
rows 8 at a time, a lane's pair of columns in consecutive registers).

An instruction stores `count` consecutive register pairs, o_k + 2q for matrix q; lane l of warp w addresses
origin(w, o_k + 2 (l / 8)) + (l mod 8, 0). That is `lane_address(t) + offsets[k]`, lane_address(t) the same with
o = 0, when the origins of instruction k sit at one offset from those of registers 0, 2, ... in every warp,
which `stmatrix_plan` checks for every thread: the emitted address is a function of the thread plus a constant
per instruction. A box of the fragment (an epilogue stored in column slabs) takes the pairs whose matrices lie
in it, which must be the same registers in every thread; its offsets count from the box's origin.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tilemlir.analysis.layouts import TiledLayout

STMATRIX_ATTR = "tile.stmatrix"  # on a fragment -> shared copy stmatrix runs (select-stmatrix), lowered by partition-threads
WARP = 32
MATRIX = 8
COUNTS = (4, 2, 1)


@dataclass(frozen=True)
class StmatrixPlan:
    """`instructions` stmatrix.x`count` stores: instruction k's matrices are the register pairs starting at
    `registers[k]`, lane l of thread t's warp addressing `lane_address(t) + offsets[k]` (row, column of the
    tile), lane_address(t) what it addresses for registers 0, 2, ... 2 count - 2 of the fragment."""

    count: int
    registers: tuple[tuple[int, ...], ...]
    offsets: tuple[tuple[int, int], ...]

    @property
    def instructions(self) -> int:
        return len(self.registers)


def stmatrix_plan(layout: TiledLayout, offset: tuple[int, int] = (0, 0),
                  shape: tuple[int, int] | None = None) -> StmatrixPlan | None:
    """The stmatrix stores of the box of `shape` (default: all) at `offset` of a fragment of `layout` onto a tile
    of the box's shape, or None when its layout does not fit."""
    origins = matrix_origins(layout)
    if origins is None:
        return None
    pairs = _in_box(origins, np.array(offset), np.array(shape or layout.shape))
    for count in COUNTS:
        if pairs and len(pairs) % count == 0:
            plan = _grouped(origins, np.array(offset), pairs, count)
            if plan is not None:
                return plan
    return None


def matrix_origins(layout: TiledLayout) -> np.ndarray | None:
    """[threads, register pairs, 2]: the origin of the 8 x 8 matrix each thread's register pair belongs to,
    or None when the layout's pairs are not stmatrix fragments."""
    if layout.rank != 2 or layout.replicate != 1 or layout.is_padded or layout.threads % WARP \
            or layout.registers % 2:
        return None
    threads = np.arange(layout.threads)
    index, _ = layout.element_of(threads[:, None], np.arange(layout.registers)[None, :])
    first, second = index[:, 0::2], index[:, 1::2]
    if not (second == first + np.array([0, 1])).all():
        return None
    lanes = threads % WARP
    origins = first[threads - lanes]
    within = np.stack([lanes // 4, 2 * (lanes % 4)], axis=-1)[:, None, :]
    if not (first == origins + within).all() or (origins % MATRIX).any():
        return None
    return origins


def _in_box(origins: np.ndarray, offset: np.ndarray, shape: np.ndarray) -> list[int]:
    """The pairs whose matrices lie in the box, the same pairs in every thread; [] when the box cuts a matrix or
    the threads' pairs differ."""
    if (offset % MATRIX).any() or (shape % MATRIX).any():
        return []
    inside = ((origins >= offset) & (origins < offset + shape)).all(axis=-1)
    if not (inside == inside[0]).all():
        return []
    return [int(p) for p in np.flatnonzero(inside[0])]


def _grouped(origins: np.ndarray, box: np.ndarray, pairs: list[int], count: int) -> StmatrixPlan | None:
    """Consecutive pairs `count` at a time, each instruction's pairs consecutive registers, its rows (in the
    tile of the box at `box`) one offset in every thread from those of the fragment's first `count` pairs."""
    threads = origins.shape[0]
    groups = [pairs[k:k + count] for k in range(0, len(pairs), count)]
    if any(group != list(range(group[0], group[0] + count)) for group in groups):
        return None
    quarter = (np.arange(threads) % WARP) // MATRIX % count  # the matrix a lane addresses (lanes past count: wrap)
    base = origins[np.arange(threads), quarter]
    offsets = []
    for group in groups:
        offset = origins[np.arange(threads), group[0] + quarter] - box - base
        if not (offset == offset[0]).all():
            return None
        offsets.append((int(offset[0][0]), int(offset[0][1])))
    registers = tuple(tuple(2 * p for p in group) for group in groups)
    return StmatrixPlan(count, registers, tuple(offsets))
