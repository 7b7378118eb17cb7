"""tma-copies: the `tile.tma` ring copies of a pipelined loop become TMA boxes completing on mbarriers.

Takes thread-level IR after partition-threads (and lower-gemm-mma), in which plan-pipeline's ring
copies that TMA can run are still `tile.copy {tile.tma}` from a tensor argument into slot `s` of a
`[S, rows, cols]` ring (`tile.ring`), issued before a `scf.for {tile.num_stages = S}` (the
prologue's tiles) and in its body (tile t + D into slot (t + D) mod S, after the iteration's
barrier). Gives, per such loop (docs/tensor_cores.md, "TMA-fed pipelines"):

- `full`, a shared `[S]` array of mbarriers, initialized at the top of the launch by thread 0 with
  one arrival a phase, then `tile.fence_mbarrier_init` (the async proxy sees the inits) and a
  `gpu.barrier` (every thread does);
- in place of each run of copies into one slot (a tile's copies, A's and B's): `if tid == 0` one
  `tile.mbarrier_arrive_expect_tx` of every box's bytes (the zero-filled bytes past a ragged edge
  count as well) and the `tile.tma_load`s of its boxes (`analysis/tma_boxes.tile_boxes`: one per
  swizzle panel), completing on `full[slot]`;
- in the loop body after the issue of tile t + D: every thread waits `full[t mod S]` with parity
  `(t / S) mod 2` (tile t is slot t mod S's phase t / S), t = (k - lower) / step. Then the compute
  reads the slot; no cp.async wait and no proxy fence are needed for it (TMA's writes and wgmma's
  reads are both the async proxy, and a completed phase makes the bytes visible to a waiting
  thread's generic reads as well).

The tensor maps go into the function's `tile.tensor_maps` (`<tensor>_map`, `_1`... for other boxes
of the same tensor), which the emitter makes `__grid_constant__ CUtensorMap` parameters and the
runtime encodes per launch. The phases count the loop's tiles from 0, so plan-pipeline marks no
copies of a loop inside another loop.
"""

from __future__ import annotations

from tilemlir.analysis.tma_boxes import TMA_ATTR, TmaBoxes, buffer_swizzle, tile_boxes
from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects import bulk_copy
from tilemlir.dialects.tile import SHARED
from tilemlir.ir_util import after, constant_int, enclosing, fresh_name, next_op, operation, ops_named, walk_ops
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass
from tilemlir.passes.partition_threads import NUM_STAGES_ATTR
from tilemlir.rewriting.tensor_maps import TensorMaps
from tilemlir.rewriting.thread_builder import Builder

FULL_BARRIERS = "full"


@register_pass("tma-copies", "tile.tma ring copies (thread level) -> thread 0's TMA boxes on a full mbarrier per "
                             "slot, every thread waiting on it before the compute")
def run(module: ir.Operation, options) -> None:
    module = operation(module)
    with module.context, module.location:
        for launch in ops_named(module, "gpu.launch"):
            copies = [op for op in walk_ops(launch) if op.name == "tile.copy" and TMA_ATTR in op.attributes]
            if copies:
                _LaunchTma(launch, copies).lower()


class _LaunchTma:
    def __init__(self, launch: ir.Operation, copies: list[ir.Operation]):
        self.launch, self.copies = launch, copies
        self.body = launch.regions[0].blocks[0]
        self.function = enclosing(launch, "func.func")
        self.threads = constant_int(launch.opview.blockSizeX)
        self.pool: dict = {}  # the launch's constants, made once
        self.top = Builder(ir.InsertionPoint.at_block_begin(self.body), launch.location, self.body, self.pool)
        self.maps = TensorMaps(self.function)

    def lower(self) -> None:
        loops = self._loops()
        names = {self._buffer_name(op) for op in walk_ops(self.launch) if op.name == "memref.alloca"}
        for loop in loops:
            name = fresh_name(FULL_BARRIERS, names)
            full = self._full_barriers(loop, name)
            issue = _top_level([c for c in self.copies if _inside(c, loop)][-1], loop)
            for group in self._groups(loop):
                self._issue(group, full)
            self._wait(loop, issue, full)
        self.maps.declare()

    # ------------------------------------------------------------ structure

    def _loops(self) -> list[ir.Operation]:
        """The pipelined loops whose rings the copies fill, each copy in its loop or in the launch body before it."""
        loops: list[ir.Operation] = []
        for copy in self.copies:
            loop = enclosing(copy, "scf.for", stop="gpu.launch")
            if loop is not None and NUM_STAGES_ATTR not in loop.attributes:
                raise diag.error(copy, "a tile.tma copy must be in a pipelined loop (scf.for with tile.num_stages) "
                                       "or before it: run plan-pipeline{tma=true} and partition-threads first")
            if loop is not None and loop not in loops:
                loops.append(loop)
        self.loop_of = {}
        for copy in self.copies:
            loop = enclosing(copy, "scf.for", stop="gpu.launch")
            ring = copy.operands[1]
            if loop is not None:
                self.loop_of.setdefault(ring, loop)
        for copy in self.copies:
            if copy.operands[1] not in self.loop_of:
                raise diag.error(copy, "a tile.tma copy's ring has no copy in a pipelined loop (plan-pipeline issues "
                                       "every tile after the prologue's in the loop)")
        return loops

    def _groups(self, loop: ir.Operation) -> list[list[ir.Operation]]:
        """The loop's copies as runs in one block into one slot (one tile's copies), in program order."""
        groups: list[list[ir.Operation]] = []
        for copy in self.copies:
            if self.loop_of[copy.operands[1]] != loop:
                continue
            last = groups[-1][-1] if groups else None
            if last is not None and last.block == copy.block and _slot(last) == _slot(copy) \
                    and _adjacent(last, copy):
                groups[-1].append(copy)
            else:
                groups.append([copy])
        return groups

    # ------------------------------------------------------------ rewriting

    def _full_barriers(self, loop: ir.Operation, name: str) -> ir.Value:
        """`full[S]` at the top of the launch, initialized by thread 0 (one arrival a phase), fenced, and a barrier."""
        stages = ir.IntegerAttr(loop.attributes[NUM_STAGES_ATTR]).value
        type_ = ir.MemRefType.get([stages], ir.IntegerType.get_signless(64), memory_space=ir.StringAttr.get(SHARED))
        b = self.top.located(loop.location)
        full = b.op("memref.alloca", results=[type_], attributes={
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, 0]), "name": ir.StringAttr.get(name)}).result
        with b.if_(self._elected(b)) as elected:
            for slot in range(stages):
                bulk_copy.mbarrier_init(full, elected.index(slot), 1, loc=elected.loc, ip=elected.ip)
            bulk_copy.fence_mbarrier_init(loc=elected.loc, ip=elected.ip)
        b.op("gpu.barrier")
        return full

    def _elected(self, b: Builder) -> ir.Value:
        return b.cmp("eq", b.thread_id(self.threads), b.index(0))

    def _issue(self, group: list[ir.Operation], full: ir.Value) -> None:
        """Thread 0: one arrival expecting every box's bytes of the group's tile, then the boxes."""
        last = group[-1]
        b = Builder(after(last), last.location, self.body, self.pool)
        slot = _slot(last)
        boxes = [self._boxes(copy) for copy in group]
        with b.if_(self._elected(b)) as elected:
            bulk_copy.mbarrier_arrive_expect_tx(full, slot, sum(box.tile_bytes for box in boxes), loc=last.location,
                                                ip=elected.ip)
            for copy, box in zip(group, boxes):
                self._loads(elected.located(copy.location), copy, box, full, slot)
        for copy in group:
            copy.erase()

    def _boxes(self, copy: ir.Operation) -> TmaBoxes:
        src, ring = copy.operands[0], copy.operands[1]
        return tile_boxes(ring.type, src.type.rank, buffer_swizzle(ring))

    def _loads(self, b: Builder, copy: ir.Operation, box: TmaBoxes, full: ir.Value, slot: ir.Value) -> None:
        src, ring = copy.operands[0], copy.operands[1]
        offsets = list(copy.operands)[2:]
        coords = offsets[:src.type.rank]
        name = self.maps.name(src, box.box, box.swizzle)
        for panel in range(box.panels):
            column = panel * box.panel_columns
            panel_coords = [*coords[:-1], b.add(coords[-1], column)]
            bulk_copy.tma_load(ring, full, [slot, b.index(0), b.index(column)], slot, panel_coords, name, loc=b.loc,
                               ip=b.ip)

    def _wait(self, loop: ir.Operation, issue: ir.Operation, full: ir.Value) -> None:
        """Every thread waits for tile t after `issue` (the op of the loop body issuing tile t + D):
        `full[t mod S]`, parity (t / S) mod 2."""
        body = loop.regions[0].blocks[0]
        stages = full.type.shape[0]
        position = issue
        following = next_op(position)
        if following is not None and following.name == "tile.cp_async_commit":
            position = following  # the cp.async copies of the tile go out first
        b = Builder(after(position), loop.location, self.body, self.pool)
        lower, _, step = list(loop.operands)[:3]
        t = b.sub(body.arguments[0], lower)
        known_step = constant_int(step)
        t = b.div(t, known_step) if known_step is not None else b.op(
            "arith.divui", [t, step], [t.type]).result
        bulk_copy.mbarrier_wait(full, b.rem(t, stages), b.rem(b.div(t, stages), 2), loc=loop.location, ip=b.ip)

    @staticmethod
    def _buffer_name(alloca: ir.Operation) -> str | None:
        return ir.StringAttr(alloca.attributes["name"]).value if "name" in alloca.attributes else None


def _slot(copy: ir.Operation) -> ir.Value:
    """The ring slot a copy fills: its first destination offset."""
    return list(copy.operands)[2 + copy.operands[0].type.rank]


def _adjacent(first: ir.Operation, second: ir.Operation) -> bool:
    """Whether only index arithmetic (the next copy's offsets) lies between two ops of one block."""
    op = next_op(first)
    while op is not None and op != second:
        if not op.name.startswith(("arith.", "index.", "affine.apply")):
            return False
        op = next_op(op)
    return op is not None


def _inside(op: ir.Operation, loop: ir.Operation) -> bool:
    found = enclosing(op, "scf.for", stop="gpu.launch")
    return found is not None and found == loop


def _top_level(op: ir.Operation, loop: ir.Operation) -> ir.Operation:
    """The op of `loop`'s body holding `op`."""
    while operation(op.parent) != loop:
        op = operation(op.parent)
    return op
