"""warp-specialize: a TMA pipeline's launch becomes a producer warpgroup issuing the boxes and the user's
threads consuming them, synchronized only through `full` and `empty` mbarrier rings.

Takes thread-level IR after tma-copies: a `gpu.launch` of T threads (x only) whose one pipelined loop
(`scf.for {tile.num_stages = S}`) waits `full[t mod S]` for tile t and whose TMA issues (thread 0's
`scf.if` holding a `tile.mbarrier_arrive_expect_tx` and its `tile.tma_load`s, D of them before the loop,
one per iteration in it for tile t + D) feed it. Gives (docs/tensor_cores.md, "Warp specialization"):

- the launch on T + 128 threads; the consumers keep thread ids 0..T-1 (so every inferred layout and
  thread-indexed access stays as it was), the producer warpgroup is ids T..T+127;
- next to `full`, an `empty[S]` ring initialized with T / 32 arrivals a phase: lane 0 of every consumer
  warp arrives once the warp is past the wait that retires the slot's readers (one arrival per thread
  would serialize T shared-memory atomics on one word per tile); T not a multiple of 32: every thread;
- the shared buffers allocated before the split, then `scf.if tid >= T` (producer) `else` (consumers);
- producer: thread T alone runs the prologue's issues and the loop reduced to its issues; before issuing
  tile j >= S into slot s = j mod S it waits `empty[s]` with parity (j / S + 1) mod 2 (the phase in
  which the consumers released tile j - S); the other 127 producer threads do nothing;
- consumers: the body without the issues and without the loop's `gpu.barrier` (the rings' WAR order
  is `empty`'s now); after the loop's `tile.wgmma_wait {pending = P}` (the wgmma of tile t - P has
  retired, so nothing reads its slot) the consumers arrive on `empty[(t - P) mod S]` when t >= P;
  with no wgmma in the loop (synchronous reads) on `empty[t mod S]` at the end of the body.

- registers rebalanced (`tile.setmaxnreg`) when the consumers are whole warpgroups and T >= 256: ptxas
  gives every thread the launch bound's share at entry (`register_plan`), the producer warpgroup lowers
  its maximum to 40 and the consumers raise theirs by what it gave back; the launch records the entry
  count (`tile.entry_registers`), which the driver checks against the cubin.

- every other `gpu.barrier` the consumers reach (after the loop: an epilogue through shared memory)
  becomes `tile.named_barrier {id = 1, threads = T}`, a barrier of the consumers alone.

What it cannot split is a located error: a loop that also has cp.async ring copies (their commit groups
need every thread), producer work that depends on the thread id, a launch with more than one TMA loop,
a consumer barrier over threads that are not whole warps.
Without `enable` (the compile option `warp_specialize=True`) the pass does nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilemlir.analysis.accesses import is_shared
from tilemlir.analysis.shared_layouts import RING_ATTR
from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects import bulk_copy, warpgroup
from tilemlir.dialects.shared_access import shared_indices
from tilemlir.ir_util import (constant_int, defining_op, fresh_name, inside, next_op, operation, ops_named,
                              set_launch_block_x, walk_ops)
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass
from tilemlir.passes.partition_threads import NUM_STAGES_ATTR
from tilemlir.rewriting.persistent_tiles import TILE_LOOP_ATTR, make_persistent
from tilemlir.rewriting.thread_builder import Builder

PRODUCER_THREADS = 128  # one warpgroup
WARP = 32
CONSUMER_BARRIER = 1  # the named barrier of the consumers' own syncs (0 is __syncthreads())
PRODUCER_REGISTERS = 40  # a TMA issuer holds a few indices
REGISTER_FILE = 65536  # 32-bit registers of one SM, which one block of the split launch has to itself
EMPTY_BARRIERS = "empty"
ISSUE = "tile.mbarrier_arrive_expect_tx"
_ISSUE_OPS = (ISSUE, "tile.tma_load")
_RING_OPS = ("tile.mbarrier_wait", "tile.mbarrier_arrive", ISSUE, "tile.tma_load", "tile.wgmma_desc")
_PURE_PREFIXES = ("arith.", "index.", "affine.apply", "gpu.thread_id", "gpu.block_id", "gpu.grid_dim",
                  "gpu.block_dim", "memref.dim")


@dataclass(frozen=True)
class WarpSpecializeOptions:
    enable: bool = False  # the compile option warp_specialize=True
    persistent_blocks: int = 0  # the compile option persistent: a grid of at most this many blocks; 0: one tile each


@dataclass(frozen=True)
class RegisterPlan:
    entry: int  # per thread at launch: the launch bound's share of the register file, which ptxas allocates
    producer: int
    consumer: int


def register_plan(consumers: int) -> RegisterPlan | None:
    """setmaxnreg's counts for `consumers` threads beside the producer warpgroup, or None where there is
    nothing to gain (fewer than two consumer warpgroups already get up to 255 each) or they are not whole
    warpgroups. What the producer gives back is (entry - 40) * 128 registers; the consumers take it in
    multiples of 8, so the block never asks its pool for more than it holds."""
    if consumers % PRODUCER_THREADS or consumers < 2 * PRODUCER_THREADS:
        return None
    entry = REGISTER_FILE // (consumers + PRODUCER_THREADS) // 8 * 8
    raised = (entry - PRODUCER_REGISTERS) * PRODUCER_THREADS // consumers // 8 * 8
    consumer = min(warpgroup.SETMAXNREG_RANGE[1], entry + raised)
    return RegisterPlan(entry, PRODUCER_REGISTERS, consumer) if consumer > entry else None


@register_pass("warp-specialize", "a TMA pipeline's launch -> one producer warpgroup issuing the boxes (ids >= "
                                  "threads) and the user's threads consuming them, through full/empty mbarriers",
               WarpSpecializeOptions)
def run(module: ir.Operation, options: WarpSpecializeOptions) -> None:
    if not options.enable:
        return
    module = operation(module)
    with module.context, module.location:
        for launch in ops_named(module, "gpu.launch"):
            if any(op.name == "tile.tma_load" for op in walk_ops(launch)):
                _Split(launch, options.persistent_blocks).split()


class _Split:
    def __init__(self, launch: ir.Operation, persistent_blocks: int):
        self.launch = launch
        self.persistent_blocks = persistent_blocks
        self.body = launch.regions[0].blocks[0]
        self.threads = constant_int(launch.opview.blockSizeX)
        if self.threads is None:
            raise diag.error(launch, "warp-specialize needs a launch of a constant thread count")
        self.loop = self._loop()
        self.stages = ir.IntegerAttr(self.loop.attributes[NUM_STAGES_ATTR]).value
        self.full = self._full()
        self.pool: dict = {}
        self.bases: dict = {}  # per role: the k tiles its block went through before this tile (persistent)

    def split(self) -> None:
        init_barrier = self._init_barrier()
        empty = self._empty_barriers()
        self._hoist_shared(init_barrier)
        role = self._role_split(init_barrier)
        producer, consumer = role.regions[0].blocks[0], role.regions[1].blocks[0]
        if self.persistent_blocks:
            self._persist(producer, consumer)
        self._producer(producer, empty)
        self._consumer(consumer, empty)
        self.role = role
        self._widen_launch()
        plan = register_plan(self.threads)
        registers = ""
        if plan is not None:
            self._rebalance(plan, producer, consumer)
            registers = f", registers {plan.entry} at entry, {plan.producer} producer / {plan.consumer} consumer"
        persistent = f", persistent on at most {self.persistent_blocks} blocks" if self.persistent_blocks else ""
        diag.remark(self.launch, f"warp-specialize: {self.threads} consumer threads (ids 0..{self.threads - 1}) "
                                 f"and a producer warpgroup (ids {self.threads}..{self.threads + PRODUCER_THREADS - 1})"
                                 f" on {self.stages} full/empty stages{registers}{persistent}")

    def _rebalance(self, plan: RegisterPlan, producer: ir.Block, consumer: ir.Block) -> None:
        """Each role's whole warpgroups change their maximum first thing (setmaxnreg's .sync.aligned)."""
        loc = self.launch.location
        warpgroup.setmaxnreg("dec", plan.producer, loc=loc, ip=ir.InsertionPoint.at_block_begin(producer))
        warpgroup.setmaxnreg("inc", plan.consumer, loc=loc, ip=ir.InsertionPoint.at_block_begin(consumer))
        self.launch.attributes[warpgroup.ENTRY_REGISTERS] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), plan.entry)

    # ------------------------------------------------------------ what the launch holds

    def _loop(self) -> ir.Operation:
        loops = [op for op in walk_ops(self.launch) if op.name == "scf.for" and NUM_STAGES_ATTR in op.attributes
                 and any(inner.name == "tile.tma_load" for inner in walk_ops(op))]
        if len(loops) != 1:
            raise diag.error(self.launch, f"warp-specialize splits a launch with one TMA-fed pipelined loop, this "
                                          f"one has {len(loops)}")
        for op in walk_ops(self.launch):
            if op.name.startswith("tile.cp_async"):
                raise diag.error(op, "warp-specialize: this launch also has cp.async ring copies, whose commit "
                                     "groups every thread runs; only TMA copies can go to the producer "
                                     "(compile without warp_specialize, or make the copy TMA-able)")
        if operation(loops[0].parent) != self.launch and operation(loops[0].parent.parent) != self.launch:
            raise diag.error(loops[0], "warp-specialize: the pipelined loop must be at the launch's top level")
        return loops[0]

    def _full(self) -> ir.Value:
        waits = [op for op in walk_ops(self.loop) if op.name == "tile.mbarrier_wait"]
        if len(waits) != 1:
            raise diag.error(self.loop, f"warp-specialize: the pipelined loop must wait once on its full barriers "
                                        f"(tma-copies' form), it waits {len(waits)} times")
        return waits[0].operands[0]

    def _init_barrier(self) -> ir.Operation:
        """The gpu.barrier after the barriers' inits: the last op both roles run."""
        fence = next(op for op in walk_ops(self.launch) if op.name == "tile.fence_mbarrier_init")
        self.fence = fence
        op = _top_level(fence, self.body)
        while op is not None and op.name != "gpu.barrier":
            op = next_op(op)
        if op is None:
            raise diag.error(fence, "warp-specialize: no gpu.barrier follows the mbarrier inits")
        return op

    # ------------------------------------------------------------ rewriting

    def _empty_barriers(self) -> ir.Value:
        b = Builder(ir.InsertionPoint(operation(self.full.owner)), self.loop.location, self.body, self.pool)
        names = {ir.StringAttr(op.attributes["name"]).value for op in walk_ops(self.launch)
                 if op.name == "memref.alloca" and "name" in op.attributes}
        name = fresh_name(EMPTY_BARRIERS, names)
        empty = b.op("memref.alloca", results=[self.full.type], attributes={
            "operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, 0]), "name": ir.StringAttr.get(name)}).result
        inits = Builder(ir.InsertionPoint(self.fence), self.fence.location, self.body, self.pool)
        for slot in range(self.stages):
            bulk_copy.mbarrier_init(empty, inits.index(slot), self._arrivals(), loc=inits.loc, ip=inits.ip)
        return empty

    def _arrivals(self) -> int:
        """Arrivals that release a slot: one per consumer warp, or per thread when the threads are not whole warps."""
        return self.threads // WARP if self.threads % WARP == 0 else self.threads

    def _hoist_shared(self, init_barrier: ir.Operation) -> None:
        """Shared buffers before the split: both roles must name the same ones."""
        position = next_op(init_barrier)
        for op in list(self.body.operations):
            op = operation(op)
            if op.name == "memref.alloca" and is_shared(op.result.type) and _after_op(op, init_barrier):
                op.move_before(position)

    def _role_split(self, init_barrier: ir.Operation) -> ir.Operation:
        """`scf.if tid >= T` with every op after the shared buffers in its else block, cloned into its then block."""
        ops = list(self.body.operations)
        start = ops.index(init_barrier) + 1
        while operation(ops[start]).name == "memref.alloca":
            start += 1
        moved = [operation(op) for op in ops[start:-1]]
        b = Builder(ir.InsertionPoint(moved[0]), self.launch.location, self.body, self.pool)
        tid = b.thread_id(self.threads + PRODUCER_THREADS)
        role = b.op("scf.if", [b.cmp("uge", tid, b.index(self.threads))], regions=2)
        role.attributes[warpgroup.WARP_ROLES] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), self.threads)
        then_block, else_block = role.regions[0].blocks.append(), role.regions[1].blocks.append()
        for block in (then_block, else_block):
            ir.Operation.create("scf.yield", loc=self.launch.location, ip=ir.InsertionPoint(block))
        else_end = operation(list(else_block.operations)[0])
        for op in moved:
            op.move_before(else_end)
        # The producer's copy: a clone of the whole if maps the values inside it; its else block is the copy.
        twin = role.clone(ir.InsertionPoint(role))
        copy = list(twin.regions[1].blocks[0].operations)[:-1]
        then_end = operation(list(then_block.operations)[0])
        for op in copy:
            operation(op).move_before(then_end)
        twin.erase()
        self.role_tid = tid
        return role

    def _persist(self, producer: ir.Block, consumer: ir.Block) -> None:
        """Both roles walk the persistent schedule's tiles; each role's base is its ordinal r times n."""
        lower, _, step = list(self.loop.operands)[:3]
        if constant_int(lower) != 0 or constant_int(step) != 1:
            raise diag.error(self.loop, "persistent: the pipelined loop must count its k tiles from 0 in steps of 1")
        ordinals = make_persistent(self.launch, [producer, consumer], self.persistent_blocks)
        for block, ordinal in zip((producer, consumer), ordinals):
            tile_loop = operation(ordinal.owner.owner)
            k_loop = next(op for op in walk_ops(tile_loop) if op.name == "scf.for" and NUM_STAGES_ATTR in op.attributes)
            self.bases[block] = (ordinal, self._defined_before(list(k_loop.operands)[1], tile_loop))

    def _base(self, block: ir.Block) -> ir.Value | None:
        """r * n at the top of the role's tile loop body, or None when not persistent (built once the role's
        code is final: the clean-ups erase what nothing uses yet)."""
        if block not in self.bases:
            return None
        ordinal, tiles = self.bases[block]
        first = operation(list(ordinal.owner.operations)[0])
        return Builder(ir.InsertionPoint(first), self.loop.location, self.body, self.pool).mul(ordinal, tiles)

    def _defined_before(self, value: ir.Value, tile_loop: ir.Operation) -> ir.Value:
        """`value` (the loop's k tile count), its pure computation moved out of the tile loop if it is in it."""
        op = defining_op(value)
        if op is None or not inside(op, tile_loop):
            return value
        if not _is_pure(op) or op.regions:
            raise diag.error(op, "persistent: the number of k tiles must not depend on the tile")
        for operand in op.operands:
            self._defined_before(operand, tile_loop)
        op.move_before(tile_loop)
        return value

    def _work(self, block: ir.Block) -> ir.Block:
        """Where a role's per-tile work is: its block, or the body of its persistent tile loop."""
        loops = [operation(op) for op in block.operations if TILE_LOOP_ATTR in operation(op).attributes]
        return loops[0].regions[0].blocks[0] if loops else block

    def _producer(self, block: ir.Block, empty: ir.Value) -> None:
        """Thread T: the issues alone, each of a tile j >= S after the wait for empty[j mod S]."""
        _keep_only_issues(block)
        base = self._base(block)
        work = self._work(block)
        loop = next(operation(op) for op in work.operations if operation(op).name == "scf.for")
        prologue = [op for op in walk_ops_in(work) if op.name == ISSUE and not _within(op, loop)]
        if base is not None:
            self._count_globally(loop, base)
            self._prologue_globally(work, loop, base, prologue, empty)
        for issue in [op for op in walk_ops(loop) if op.name == ISSUE]:
            b = Builder(ir.InsertionPoint(issue), issue.location, self.body, self.pool)
            self._wait_empty(b, b.add(_iteration(b, loop), len(prologue)), base, issue.operands[1], empty)
        for op in walk_ops_in(block):
            if op.name == "gpu.thread_id":
                user = next(iter(op.result.uses), None)
                raise diag.error(user.owner if user else op, "warp-specialize: the producer's work depends on the "
                                                             "thread id (only TMA issues can go to the producer)")
        end = operation(list(block.operations)[-1])
        b = Builder(ir.InsertionPoint(operation(list(block.operations)[0])), self.launch.location, self.body,
                    self.pool)
        elected = b.op("scf.if", [b.cmp("eq", self.role_tid, b.index(self.threads))], regions=2)
        inner = elected.regions[0].blocks.append()
        inner_end = ir.Operation.create("scf.yield", loc=self.launch.location, ip=ir.InsertionPoint(inner))
        for op in list(block.operations):
            op = operation(op)
            if op != elected and op != end and _after_op(op, elected):
                op.move_before(inner_end)

    def _prologue_globally(self, work: ir.Block, loop: ir.Operation, base: ir.Value, prologue: list,
                           empty: ir.Value) -> None:
        """The prologue's issue j fills slot (base + j) mod S, after the wait for its release: the slots it
        fills last held the previous tile's k tiles."""
        slots: dict[int, ir.Value] = {}
        for op in [op for op in walk_ops_in(work) if op.name in _ISSUE_OPS and not _within(op, loop)]:
            positions = [1] if op.name == ISSUE else [2, 2 + ir.MemRefType(op.operands[0].type).rank]
            j = constant_int(op.operands[positions[0]])
            if j is None:
                raise diag.error(op, "persistent: a prologue TMA issue into a slot that is not a constant")
            b = Builder(ir.InsertionPoint(op), op.location, self.body, self.pool)
            if j not in slots:
                slots[j] = b.rem(b.add(base, j), self.stages)
            for position in positions:
                op.operands[position] = slots[j]
        for j, issue in enumerate(prologue):
            b = Builder(ir.InsertionPoint(issue), issue.location, self.body, self.pool)
            self._wait_empty(b, b.index(j), base, issue.operands[1], empty)

    def _count_globally(self, loop: ir.Operation, base: ir.Value) -> None:
        """Every slot `(t + c) mod S` and phase `(t + c) / S` of the loop's ring becomes one of the k tile
        base + t + c of the block's whole schedule; the k coordinates keep t."""
        t = loop.regions[0].blocks[0].arguments[0]
        for op in walk_ops(loop):
            if op.name not in ("arith.remui", "arith.divui") or constant_int(op.operands[1]) != self.stages \
                    or not _offset_of(op.operands[0], t) or not _feeds_ring(op.result, op):
                continue
            b = Builder(ir.InsertionPoint(op), op.location, self.body, self.pool)
            op.operands[0] = b.add(base, op.operands[0])

    def _wait_empty(self, b: Builder, tile: ir.Value, base: ir.Value | None, slot: ir.Value,
                    empty: ir.Value) -> None:
        """Before issuing k tile `tile` of this tile (base + tile of the schedule) into `slot`."""
        tile = tile if base is None else b.add(base, tile)
        with b.if_(b.cmp("uge", tile, b.index(self.stages))) as reused:
            parity = reused.rem(reused.add(reused.div(tile, self.stages), 1), 2)
            bulk_copy.mbarrier_wait(empty, slot, parity, loc=b.loc, ip=reused.ip)

    def _consumer(self, block: ir.Block, empty: ir.Value) -> None:
        """The user's threads: no issues, no loop barrier; each releases a slot once nothing reads it."""
        for issue in [op for op in walk_ops_in(block) if op.name == ISSUE]:
            operation(issue.parent).erase()
        work = self._work(block)
        loop = next(operation(op) for op in work.operations if operation(op).name == "scf.for"
                    and NUM_STAGES_ATTR in operation(op).attributes)
        for op in [op for op in walk_ops(loop) if op.name == "gpu.barrier" and operation(op.parent) == loop]:
            op.erase()
        _erase_dead(block)
        for op in walk_ops_in(block):
            if op.name == "gpu.barrier":
                self._consumer_barrier(op)
        base = self._base(block)
        if base is not None:
            self._count_globally(loop, base)
        waits = [op for op in walk_ops(loop) if op.name == "tile.wgmma_wait" and operation(op.parent) == loop]
        body = loop.regions[0].blocks[0]
        last = operation(list(body.operations)[-1])
        at = next_op(waits[-1]) if waits else last
        pending = ir.IntegerAttr(waits[-1].attributes["pending"]).value if waits else 0
        b = Builder(ir.InsertionPoint(at), loop.location, self.body, self.pool)
        t = _iteration(b, loop)
        self._release(b, b.sub(t, pending), [b.cmp("uge", t, b.index(pending))] if pending else [], base, empty)
        if base is not None:
            self._drain(work, loop, pending, base, empty)

    def _drain(self, work: ir.Block, loop: ir.Operation, pending: int, base: ir.Value, empty: ir.Value) -> None:
        """After the wait that retires the tile's last wgmmas, the release of its last `pending` k tiles (the
        next tile's stages reuse them); a barrier among the consumers ends the tile when they share memory
        other than the rings (the next tile's epilogue must not overwrite what a slower warp still reads)."""
        after = [operation(op) for op in work.operations]
        after = after[after.index(loop) + 1:]
        retire = next((op for op in after if op.name == "tile.wgmma_wait"), None)
        if pending and retire is None:
            raise diag.error(loop, "persistent: no wgmma_wait after the pipelined loop retires its last wgmmas")
        tiles = list(loop.operands)[1]
        drained = ir.InsertionPoint(next_op(retire if pending else loop))
        known = constant_int(tiles)
        for i in range(pending):
            b = Builder(drained, loop.location, self.body, self.pool)
            tile = b.sub(tiles, pending - i)
            self._release(b, tile, [] if known is not None and known >= pending else
                          [b.cmp("uge", tiles, b.index(pending - i))], base, empty)
        if any(op.name == "tile.named_barrier" for op in walk_ops_in(work)):
            self._end_tile(work, loop, drained)

    def _end_tile(self, work: ir.Block, loop: ir.Operation, drained: ir.InsertionPoint) -> None:
        """A barrier among the consumers between a tile's epilogue and the next tile's: a fast warp must not
        overwrite what a slow one, or thread 0's TMA store, still reads. At the end of the tile; with TMA stores
        and a k loop touching no other shared memory, at the start of the epilogue (`drained`), after thread
        0 waits for the stores' reads, which so run under the next tile's k loop; one more wait ends the
        schedule (the shared memory must be read before the block exits)."""
        waits = [op for op in walk_ops_in(work) if op.name == "tile.bulk_wait_group_read"]
        if not waits or _touches_shared(loop):
            warpgroup.named_barrier(CONSUMER_BARRIER, self.threads, loc=loop.location,
                                    ip=ir.InsertionPoint(operation(list(work.operations)[-1])))
            return
        waits[-1].erase()  # the tile's last store's: an earlier one orders its tile's reuse within the epilogue
        self._first_thread_waits(Builder(drained, loop.location, self.body, self.pool))
        warpgroup.named_barrier(CONSUMER_BARRIER, self.threads, loc=loop.location, ip=drained)
        tile_loop = operation(work.owner)
        self._first_thread_waits(Builder(ir.InsertionPoint(next_op(tile_loop)), loop.location, self.body, self.pool))

    def _first_thread_waits(self, b: Builder) -> None:
        """Thread 0, which issued the TMA stores: until its bulk groups have read their shared tiles."""
        with b.if_(b.cmp("eq", b.thread_id(self.threads + PRODUCER_THREADS), b.index(0))) as first:
            bulk_copy.bulk_wait_group_read(0, loc=first.loc, ip=first.ip)

    def _release(self, b: Builder, tile: ir.Value, conditions: list, base: ir.Value | None, empty: ir.Value) -> None:
        """The consumers' arrival on empty[slot of k tile `tile`] under `conditions`, by lane 0 of each warp."""
        if self._arrivals() != self.threads:
            conditions = [*conditions, b.cmp("eq", b.rem(b.thread_id(self.threads + PRODUCER_THREADS), WARP),
                                             b.index(0))]
        tile = tile if base is None else b.add(base, tile)
        if not conditions:
            bulk_copy.mbarrier_arrive(empty, b.rem(tile, self.stages), loc=b.loc, ip=b.ip)
            return
        with b.if_(b.and_(conditions)) as arrive:
            bulk_copy.mbarrier_arrive(empty, arrive.rem(tile, self.stages), loc=b.loc, ip=arrive.ip)

    def _consumer_barrier(self, barrier: ir.Operation) -> None:
        """A barrier among the consumers (an epilogue through shared memory): the producer never reaches it."""
        if self.threads % WARP:
            raise diag.error(barrier, f"warp-specialize: a barrier among {self.threads} consumer threads needs "
                                      f"whole warps (a named barrier counts warps)")
        warpgroup.named_barrier(CONSUMER_BARRIER, self.threads, loc=barrier.location, ip=ir.InsertionPoint(barrier))
        barrier.erase()

    def _widen_launch(self) -> None:
        b = Builder(ir.InsertionPoint(self.launch), self.launch.location, self.launch.block, {})
        set_launch_block_x(self.launch, b.index(self.threads + PRODUCER_THREADS))
        bound = ir.IntegerAttr.get(ir.IndexType.get(), self.threads + PRODUCER_THREADS)
        for op in walk_ops(self.launch):
            if op.name == "gpu.thread_id" and not _within(op, self.role):
                op.attributes["upper_bound"] = bound  # the role split's and the barrier inits' (producer: none)


def _keep_only_issues(block: ir.Block) -> None:
    """Erase every op that is not a TMA issue, an op holding one or a value they use; inline the elected ifs."""
    for op in reversed(list(block.operations)[:-1]):
        op = operation(op)
        issues = [inner for inner in walk_ops(op) if inner.name == ISSUE]
        if not issues:
            if not _is_pure(op):
                op.erase()
            continue
        if op.name == "scf.if" and any(operation(i.parent) == op for i in issues):
            _inline_then(op)
        elif op.regions:
            _keep_only_issues(op.regions[0].blocks[0])
    _erase_dead(block)


def _offset_of(value: ir.Value, t: ir.Value) -> bool:
    """Whether `value` is `t` or `t + c` for a constant c."""
    if value == t:
        return True
    op = defining_op(value)
    if op is None or op.name != "arith.addi":
        return False
    a, b = op.operands
    return (a == t and constant_int(b) is not None) or (b == t and constant_int(a) is not None)


def _feeds_ring(value: ir.Value, op: ir.Operation) -> bool:
    """Whether `value` (a remainder or quotient by S) is a ring slot or phase: only index arithmetic lies between
    it and the ring's ops (mbarriers, TMA boxes, wgmma descriptors, loads of a `tile.ring` buffer). A value
    that also reaches other ops is an error: it cannot both count the block's schedule and the tile's k."""
    ring = data = False
    pending, seen = [value], set()
    while pending:
        for use in list(pending.pop().uses):
            user = operation(use.owner)
            if user.name.startswith("arith."):
                for result in user.results:
                    if result not in seen:
                        seen.add(result)
                        pending.append(result)
            elif user.name in _RING_OPS or any(_is_ring(v) for v in user.operands):
                ring = True
            else:
                data = True
    if ring and data:
        raise diag.error(op, "persistent: a ring slot (k tile mod num_stages) is also used as data")
    return ring


def _touches_shared(loop: ir.Operation) -> bool:
    """Whether the loop accesses a shared buffer other than its rings (and their mbarriers)."""
    for op in walk_ops(loop):
        access = shared_indices(op)
        if access is not None and not _is_ring(op.operands[access.buffer]):
            return True
    return False


def _is_ring(value: ir.Value) -> bool:
    op = defining_op(value)
    return op is not None and op.name == "memref.alloca" and RING_ATTR in op.attributes


def _inline_then(if_op: ir.Operation) -> None:
    for op in list(if_op.regions[0].blocks[0].operations)[:-1]:
        operation(op).move_before(if_op)
    if_op.erase()


def _erase_dead(block: ir.Block) -> None:
    """Erase pure ops without uses and result-less scf.ifs with empty branches, to a fixpoint. Each sweep runs
    backwards (pre-order reversed): an op's users, and the ops nested in it, go before it."""
    changed = True
    while changed:
        changed = False
        for op in reversed([operation(o) for o in walk_ops_in(block)]):
            if (_is_pure(op) and all(not list(r.uses) for r in op.results)) or _empty_if(op):
                op.erase()
                changed = True


def walk_ops_in(block: ir.Block) -> list[ir.Operation]:
    ops = []
    for op in block.operations:
        op = operation(op)
        ops.append(op)
        for region in op.regions:
            for inner in region.blocks:
                ops += walk_ops_in(inner)
    return ops


def _empty_if(op: ir.Operation) -> bool:
    return op.name == "scf.if" and not op.results and all(
        len(list(region.blocks[0].operations)) <= 1 for region in op.regions if len(region.blocks))


def _is_pure(op: ir.Operation) -> bool:
    if op.name == "memref.alloca":
        return not is_shared(op.result.type)
    return op.name.startswith(_PURE_PREFIXES)


def _iteration(b: Builder, loop: ir.Operation) -> ir.Value:
    """t = (k - lower) / step of the loop's iteration k."""
    lower, _, step = list(loop.operands)[:3]
    return b.div(b.sub(loop.regions[0].blocks[0].arguments[0], lower), step)


def _within(op: ir.Operation, ancestor: ir.Operation) -> bool:
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        if operation(parent) == ancestor:
            return True
        parent = parent.parent
    return False


def _top_level(op: ir.Operation, block: ir.Block) -> ir.Operation:
    while op.block != block:
        op = operation(op.parent)
    return op


def _after_op(op: ir.Operation, anchor: ir.Operation) -> bool:
    ops = [operation(o) for o in op.block.operations]
    return ops.index(op) > ops.index(anchor)
