"""tma-stores: select-tma-stores' `tile.tma_store` copies become one thread's TMA boxes out of shared memory.

Takes thread-level IR after partition-threads (which keeps the marked copies whole: `tile.copy
{tile.tma_store}` of a whole two-dimensional shared tile into a tensor argument) and after tma-copies (whose
tensor maps it shares). The barrier planner saw each such copy as a read of its tile by every thread, so a
`gpu.barrier` precedes it after the threads' writes of the tile and another follows before anything writes
the tile again. Gives, per copy (docs/tensor_cores.md, "TMA stores"):

- a `tile.fence_proxy_async` before that preceding barrier, unless one stands there already: every thread's
  generic-proxy writes of the tile are ordered before the async proxy's reads of it;
- in place of the copy, `if tid == 0` the `tile.tma_store`s of its boxes (`analysis/tma_boxes.tile_boxes`:
  one per swizzle panel, at the copy's coordinates plus the panel's column) and one `tile.bulk_commit_group`;
- `if tid == 0` a `tile.bulk_wait_group_read {pending = 0}` just before the block's next barrier (and its
  proxy fence), or right after the commit when no barrier follows: the tile is read before thread 0 reaches
  the next barrier, so a later write of it (or of a buffer sharing its bytes) after that barrier is safe,
  while until then the TMA engine reads it beside thread 0's work (an epilogue's next slab). The global
  writes complete on their own (the kernel's end makes them visible).

The maps go into the function's `tile.tensor_maps` as the loads' do (`rewriting/tensor_maps.py`).
"""

from __future__ import annotations

from tilemlir.analysis.tma_boxes import TMA_STORE_ATTR, buffer_swizzle, tile_boxes
from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects import bulk_copy, warpgroup
from tilemlir.ir_util import constant_int, enclosing, operation, ops_named, previous_op, walk_ops
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass
from tilemlir.rewriting.tensor_maps import TensorMaps
from tilemlir.rewriting.thread_builder import Builder


@register_pass("tma-stores", "tile.tma_store copies (thread level) -> thread 0's TMA boxes out of the shared tile, "
                             "after a proxy fence and the barrier, committed and read-waited")
def run(module: ir.Operation, options) -> None:
    module = operation(module)
    with module.context, module.location:
        for launch in ops_named(module, "gpu.launch"):
            copies = [op for op in walk_ops(launch) if op.name == "tile.copy" and TMA_STORE_ATTR in op.attributes]
            if copies:
                maps = TensorMaps(enclosing(launch, "func.func"))
                for copy in copies:
                    _lower(launch, copy, maps)
                maps.declare()


def _lower(launch: ir.Operation, copy: ir.Operation, maps: TensorMaps) -> None:
    _fence(_preceding_barrier(copy))
    src, dst = copy.operands[0], copy.operands[1]
    coords = list(copy.operands)[2 + src.type.rank:]
    box = tile_boxes(src.type, dst.type.rank, buffer_swizzle(src))
    name = maps.name(dst, box.box, box.swizzle)
    body = launch.regions[0].blocks[0]
    b = Builder(ir.InsertionPoint(copy), copy.location, body, {})
    elected = b.cmp("eq", b.thread_id(constant_int(launch.opview.blockSizeX)), b.index(0))
    following = _following_barrier(copy)
    with b.if_(elected) as issuer:
        for panel in range(box.panels):
            column = panel * box.panel_columns
            panel_coords = [*coords[:-1], issuer.add(coords[-1], column)]
            bulk_copy.tma_store(src, [issuer.index(0), issuer.index(column)], panel_coords, name, loc=copy.location,
                                ip=issuer.ip)
        bulk_copy.bulk_commit_group(loc=copy.location, ip=issuer.ip)
        if following is None:
            bulk_copy.bulk_wait_group_read(0, loc=copy.location, ip=issuer.ip)
    if following is not None:
        with b.at(_before_fence(following)).if_(elected) as waiter:
            bulk_copy.bulk_wait_group_read(0, loc=copy.location, ip=waiter.ip)
    copy.erase()


def _following_barrier(copy: ir.Operation) -> ir.Operation | None:
    """The next `gpu.barrier` of the copy's block, with only ops without regions before it (a loop or branch
    in between may hold a barrier and a write of the tile): thread 0 waits for the store's reads just before
    it, so the TMA engine reads the tile while thread 0 goes on (a write of the tile comes after a barrier)."""
    ops = [operation(op) for op in copy.block.operations]
    for op in ops[ops.index(copy) + 1:]:
        if op.name == "gpu.barrier":
            return op
        if op.regions:
            return None
    return None


def _before_fence(barrier: ir.Operation) -> ir.InsertionPoint:
    """Before the barrier, or before the proxy fence that precedes it."""
    previous = previous_op(barrier)
    return ir.InsertionPoint(previous if previous is not None and previous.name == "tile.fence_proxy_async"
                             else barrier)


def _preceding_barrier(copy: ir.Operation) -> ir.Operation:
    """The `gpu.barrier` of the copy's block before it, with no write of its tile in between."""
    ops = [operation(op) for op in copy.block.operations]
    tile = copy.operands[0]
    for op in reversed(ops[:ops.index(copy)]):
        if op.name == "gpu.barrier":
            return op
        if any(_writes(inner, tile) for inner in [op, *walk_ops(op)]):
            break
    raise diag.error(copy, "tma-stores: no gpu.barrier stands between the threads' writes of the tile and its TMA "
                           "store (run partition-threads, whose barrier planner places it, first)")


def _writes(op: ir.Operation, tile: ir.Value) -> bool:
    return op.name in ("memref.store", "vector.store") and op.operands[1] == tile


def _fence(barrier: ir.Operation) -> None:
    """A proxy fence before the barrier, unless one (perhaps before a store's read-wait) stands there."""
    previous = previous_op(barrier)
    if previous is not None and previous.name == "scf.if" and _waits(previous):
        previous = previous_op(previous)
    if previous is not None and previous.name == "tile.fence_proxy_async":
        return
    warpgroup.fence_proxy_async(loc=barrier.location, ip=ir.InsertionPoint(barrier))


def _waits(if_op: ir.Operation) -> bool:
    return any(op.name == "tile.bulk_wait_group_read" for op in walk_ops(if_op))
