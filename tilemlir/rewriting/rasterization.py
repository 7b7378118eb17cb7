"""Block rasterization (`T.use_swizzle`, a kernel's `tile.rasterization`) as index arithmetic.

Launched blocks are numbered `id = x + y * gx` (x fastest), the order in which the hardware roughly
starts them. Rasterization maps that id to the block coordinates the kernel body sees so that blocks
running together cover a compact patch of the grid and share the A and B tiles they read in L2 (the
mapping of TileLang's `use_swizzle`):

- `order="row"`: the grid is cut into panels of `panel` consecutive rows (y), the last one ragged
  (`gy - (panels - 1) * panel` rows). Within a panel consecutive ids walk down its rows, then move to
  the next column (x); odd panels take the columns right to left, so each panel starts where the last
  ended.
- `order="column"`: the same with x and y exchanged (panels of `panel` columns, walked along x).

z is kept. Each panel is a rectangle of `rows * gx` ids with the column-major walk inside, so the map is
a bijection of the grid onto itself. Every division is by a compile-time constant when the grid is
static (the ragged panel's width is chosen by a select rather than dividing by a computed width), so the
prover relates the coordinates to the grid with linear facts, as it does the launched ones.
"""

from __future__ import annotations

from tilemlir.dialects.tile import Rasterization
from tilemlir.ir_util import constant_int
from tilemlir.mlir import ir
from tilemlir.rewriting.thread_builder import Builder


def rasterized_coordinates(b: Builder, raster: Rasterization, ids: list[ir.Value],
                           grid: list[ir.Value]) -> list[ir.Value]:
    """The coordinates the kernel body sees, built at `b` from the launched block ids `ids` (x, y[, z])
    over a grid of extents `grid` (2 or 3 index values)."""
    across, down = (0, 1) if raster.order == "row" else (1, 0)
    launched = b.add(ids[0], b.mul(ids[1], grid[0]))
    panel_ids = b.mul(grid[across], raster.panel)
    panel = _divide(b, launched, panel_ids)
    offset = _remainder(b, launched, panel_ids)
    last_panel = b.sub(b.div(b.add(grid[down], raster.panel - 1), raster.panel), 1)
    last_rows = b.sub(grid[down], b.mul(last_panel, raster.panel))
    if constant_int(last_rows) == raster.panel:
        step, row = b.div(offset, raster.panel), b.rem(offset, raster.panel)
    else:
        is_last = b.cmp("eq", panel, last_panel)
        step = b.select(is_last, _divide(b, offset, last_rows), b.div(offset, raster.panel))
        row = b.select(is_last, _remainder(b, offset, last_rows), b.rem(offset, raster.panel))
    backwards = b.cmp("ne", b.rem(panel, 2), 0)
    coordinates = list(ids)
    coordinates[across] = b.select(backwards, b.sub(b.sub(grid[across], 1), step), step)
    coordinates[down] = b.add(row, b.mul(panel, raster.panel))
    return coordinates


def _divide(b: Builder, a: ir.Value, divisor: ir.Value) -> ir.Value:
    constant = constant_int(divisor)
    if constant is not None:
        return b.div(a, constant)
    return b.op("arith.divui", [a, divisor], [a.type]).result


def _remainder(b: Builder, a: ir.Value, modulus: ir.Value) -> ir.Value:
    constant = constant_int(modulus)
    if constant is not None:
        return b.rem(a, constant)
    return b.op("arith.remui", [a, modulus], [a.type]).result
