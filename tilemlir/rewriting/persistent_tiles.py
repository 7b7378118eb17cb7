"""A persistent launch: at most `max_blocks` blocks, each walking the launch's tiles in a grid-stride loop.

The launch's grid (gx, gy, gz) becomes the tile space: tile i is the block (i mod gx, (i / gx) mod gy,
i / (gx * gy)) the unchanged launch would have run. The new grid is min(gx * gy * gz, max_blocks) x 1 x 1,
and block b runs tiles b, b + grid, b + 2 * grid, ... In each wrapped block the launch's block ids and grid
sizes (its region's arguments and any `gpu.block_id` / `gpu.grid_dim`) become the tile's coordinates and
the tile space, so everything derived from them (`T.use_swizzle`'s rasterization included) is unchanged.
Local buffers at the top of a wrapped block stay before its loop (one per thread, not one per tile).
"""

from __future__ import annotations

from tilemlir.ir_util import constant_int, inside, launch_grid, operation, set_launch_grid, walk_ops
from tilemlir.mlir import ir
from tilemlir.rewriting.thread_builder import Builder

_BLOCK_IDS, _GRID_SIZES = range(0, 3), range(6, 9)  # gpu.launch region arguments
_DIMS = ("x", "y", "z")
TILE_LOOP_ATTR = "tile.persistent_tiles"


def make_persistent(launch: ir.Operation, blocks: list[ir.Block], max_blocks: int) -> list[ir.Value]:
    """Wrap each of `blocks` (inside `launch`, together holding every use of the block ids) in the tile loop
    and shrink the grid; returns each block's tile ordinal r (0 for the block's first tile), carried by its
    loop."""
    tiles_of = launch_grid(launch)
    outside = Builder(ir.InsertionPoint(launch), launch.location, launch.block, {})
    tiles = outside.mul(outside.mul(tiles_of[0], tiles_of[1]), tiles_of[2])
    grid = outside.op("arith.minui", [tiles, outside.index(max_blocks)], [tiles.type]).result
    set_launch_grid(launch, [grid, outside.index(1), outside.index(1)])
    return [_wrap(launch, block, tiles, tiles_of) for block in blocks]


def _wrap(launch: ir.Operation, block: ir.Block, tiles: ir.Value, tiles_of: list[ir.Value]) -> ir.Value:
    body = launch.regions[0].blocks[0]
    args = list(body.arguments)
    ops = [operation(op) for op in block.operations][:-1]
    buffers = [op for op in ops if op.name == "memref.alloca" and not list(op.operands)]
    for op in buffers:
        op.move_before(ops[0])
    moved = [op for op in ops if op not in buffers]
    pool: dict = {}
    b = Builder(ir.InsertionPoint(operation(list(block.operations)[-1])), launch.location, body, pool)
    zero = b.index(0)
    loop = b.op("scf.for", [args[_BLOCK_IDS[0]], tiles, args[_GRID_SIZES[0]], zero], [zero.type], regions=1)
    loop.attributes[TILE_LOOP_ATTR] = ir.UnitAttr.get()
    inner = loop.regions[0].blocks.append(zero.type, zero.type)
    tile, ordinal = inner.arguments
    ib = b.at(ir.InsertionPoint(inner))
    end = ib.op("scf.yield", [ib.add(ordinal, 1)])
    ib = ib.before(end)
    coordinates = _coordinates(ib, tile, tiles_of)
    for op in moved:
        op.move_before(end)
    for dim in range(3):
        _replace_in(loop, args[_BLOCK_IDS[dim]], coordinates[dim])
        _replace_in(loop, args[_GRID_SIZES[dim]], tiles_of[dim])
    for op in walk_ops(loop):
        if op.name in ("gpu.block_id", "gpu.grid_dim"):
            dim = _DIMS.index(str(op.attributes["dimension"]).split()[-1].rstrip(">"))
            op.result.replace_all_uses_with((coordinates if op.name == "gpu.block_id" else tiles_of)[dim])
            op.erase()
    return ordinal


def _coordinates(b: Builder, tile: ir.Value, tiles_of: list[ir.Value]) -> list[ir.Value]:
    """(tile mod gx, (tile / gx) mod gy, tile / (gx * gy)), skipping what a grid extent of 1 makes trivial."""
    gx, gy, gz = tiles_of
    row = b.div(tile, gx)
    flat = constant_int(gz) == 1
    return [b.rem(tile, gx), row if flat else b.rem(row, gy), b.index(0) if flat else b.div(row, gy)]


def _replace_in(scope: ir.Operation, old: ir.Value, new: ir.Value) -> None:
    """`old` by `new` in the ops nested in `scope` (not in `scope`'s own operands: the loop's bounds)."""
    for use in list(old.uses):
        owner = operation(use.owner)
        if owner != scope and inside(owner, scope):
            use.owner.operands[use.operand_number] = new
