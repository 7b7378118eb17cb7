"""Split a `gpu.launch` body into phases: loops over the block's threads between sync points.

A sync point is a `gpu.barrier` (every thread of the block) or a
`gpu.shuffle` (the threads of a warp exchange values). Ops between two
sync points run, for one thread after another, inside a *thread loop*
`scf.for %t = 0 to T` marked `tile.sim_thread_loop`; a shuffle opens the
phase after it. A warp collective on registers (`tile.ldmatrix`, `tile.stmatrix`,
`tile.mma_sync`: `simulate/collectives.py`) is a phase of its own, so its
lanes read each other's registers as the op found them; so is a warpgroup's
`tile.wgmma` (`simulate/warpgroup.py`), so that all its threads read shared
memory as it was when the last of them issued it. Control flow that contains a sync point stays outside the
thread loops and is split recursively:

- an `scf.for` with thread-independent bounds runs at block level, its
  body split (the loop is outermost, thread loops inside each phase);
- an `scf.if` with a thread-independent condition stays at block level;
- an `scf.if` whose condition depends on the thread may contain shuffles
  but no barrier (threads would not all reach it): it is dissolved and
  every thread loop of its branches runs under the thread's condition.

Loop-carried values and results of such ops are first moved to per-thread
memory (`demote_results`), so the block-level ops carry none. Thread ids
are left as `gpu.thread_id` ops; `tilemlir.backends.cpu.simulate.values`
binds them to the thread loop's variable afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tilemlir.backends.cpu import buffers
from tilemlir.backends.cpu import ir_builders as b
from tilemlir.diagnostics import reporting as diag
from tilemlir.mlir import arith, gpu, ir, memref, scf

THREAD_LOOP_ATTR = "tile.sim_thread_loop"
LINEAR_ATTR = "tile.sim_linear"  # on a gpu.thread_id placeholder: the linear thread id
# warp collectives on register arrays, and the warpgroup's wgmma (`simulate/warpgroup.py`): a phase each
COLLECTIVE_OPS = ("tile.ldmatrix", "tile.stmatrix", "tile.mma_sync", "tile.wgmma")
MBARRIER_WAIT = "tile.mbarrier_wait"  # opens a phase, as a shuffle does (simulate/bulk_copies.py)
SYNC_OPS = ("gpu.barrier", "gpu.shuffle", *COLLECTIVE_OPS, MBARRIER_WAIT)


@dataclass
class ThreadLoop:
    op: ir.Operation
    tid: ir.Value
    predicated: bool


@dataclass
class Phases:
    thread_loops: list[ThreadLoop] = field(default_factory=list)
    barriers: list[ir.Operation] = field(default_factory=list)


def ops_with_sync(root: ir.Operation) -> set[ir.Operation]:
    """Sync ops under `root` and every op (below `root`) that contains one."""
    found: set[ir.Operation] = set()

    def visit(op):
        if op.name in SYNC_OPS:
            current = op
            while current is not None and current != root and current not in found:
                found.add(current)
                current = current.parent
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return found


def thread_id() -> ir.Value:
    """A linear thread-id placeholder, bound to the enclosing thread loop's variable later."""
    tid = gpu.thread_id(gpu.Dimension.x)
    tid.owner.attributes[LINEAR_ATTR] = ir.UnitAttr.get()
    return tid


def demote_results(root: ir.Operation, function: ir.Operation, n_threads: int) -> list[ir.Value]:
    """Move the loop-carried values and results of sync-holding `scf.for` / `scf.if` ops
    under `root` to per-thread memory, leaving ops without results; returns that memory."""
    demoted = []
    for op in ops_with_sync(root):
        if op.name in ("scf.for", "scf.if") and len(op.results):
            storage = [buffers.allocate_at_entry(function, ir.MemRefType.get([n_threads], r.type), op.location)
                       for r in op.results]
            (_demote_for if op.name == "scf.for" else _demote_if)(op, storage)
            demoted += storage
    return demoted


def _store_all(values, storage) -> None:
    tid = thread_id()
    for value, buffer in zip(values, storage):
        memref.store(value, buffer, [tid])


def _load_all(storage) -> list[ir.Value]:
    tid = thread_id()
    return [memref.load(buffer, [tid]) for buffer in storage]


def _demote_for(op: ir.Operation, storage: list[ir.Value]) -> None:
    lower, upper, step, *inits = op.operands
    body = op.regions[0].blocks[0]
    with op.location:
        with ir.InsertionPoint(op):
            _store_all(inits, storage)
            loop = scf.ForOp(lower, upper, step)
        with ir.InsertionPoint(loop.body):
            new_yield = scf.YieldOp([])
        old_yield = list(body.operations)[-1]
        with ir.InsertionPoint(old_yield):
            _store_all(list(old_yield.operands), storage)
        with ir.InsertionPoint.at_block_begin(body):
            carried = _load_all(storage)
        with ir.InsertionPoint.after(op):
            finals = _load_all(storage)
    body.arguments[0].replace_all_uses_with(loop.induction_variable)
    for arg, value in zip(list(body.arguments)[1:], carried):
        arg.replace_all_uses_with(value)
    for result, value in zip(op.results, finals):
        result.replace_all_uses_with(value)
    for inner in list(body.operations)[:-1]:
        inner.operation.move_before(new_yield)
    op.erase()


def _demote_if(op: ir.Operation, storage: list[ir.Value]) -> None:
    with op.location:
        for region in op.regions:
            for block in region.blocks:
                old_yield = list(block.operations)[-1]
                with ir.InsertionPoint(old_yield):
                    _store_all(list(old_yield.operands), storage)
                    scf.YieldOp([])
                old_yield.operation.erase()
        with ir.InsertionPoint(op):
            new_if = scf.IfOp(op.operands[0], has_else=len(op.regions[1].blocks) > 0)
        with ir.InsertionPoint.after(op):
            finals = _load_all(storage)
    for result, value in zip(op.results, finals):
        result.replace_all_uses_with(value)
    for old_region, new_region in zip(op.regions, new_if.regions):
        if len(old_region.blocks):
            with ir.InsertionPoint(new_region.blocks[0]):
                terminator = scf.YieldOp([])
            for inner in list(old_region.blocks[0].operations)[:-1]:
                inner.operation.move_before(terminator)
    op.erase()


class PhaseSplitter:
    """Rewrites a launch body (after `demote_results`) into thread loops and block-level control."""

    def __init__(self, launch: ir.Operation, n_threads: int, dependent: set[ir.Value]):
        self.n_threads = n_threads
        self.dependent = dependent
        self.sync_ops = ops_with_sync(launch)
        self.barrier_in = {op: barrier for op in self.sync_ops if (barrier := _first_barrier(op)) is not None}
        self.phases = Phases()

    def split(self, block: ir.Block, predicates: list[tuple[ir.Value, bool]] = ()) -> None:
        predicates = list(predicates)
        segment: list[ir.Operation] = []
        for op in [o.operation for o in block.operations][:-1]:
            if op not in self.sync_ops:
                segment.append(op)
                continue
            self._close(segment, predicates)
            segment = []
            if op.name in ("gpu.shuffle", MBARRIER_WAIT):
                segment = [op]
            elif op.name in COLLECTIVE_OPS:
                if predicates:
                    raise diag.error(op, f"cannot simulate {op.name} under a thread-dependent condition: the "
                                         "threads of its warp (warpgroup for tile.wgmma) would not all run it")
                # alone in its phase: every lane reads its warp-mates' registers as the op found them
                self._close([op], predicates)
            elif op.name == "gpu.barrier":
                if predicates:
                    raise diag.error(op, "cannot simulate a gpu.barrier under a thread-dependent condition: "
                                         "the threads of the block would not all reach it")
                self.phases.barriers.append(op)
            elif op.name == "scf.for":
                self._split_for(op, predicates)
            elif op.name == "scf.if":
                self._split_if(op, predicates)
            else:
                raise diag.error(op, f"cannot simulate a gpu.barrier or gpu.shuffle inside {op.name}")
        self._close(segment, predicates)

    def _split_for(self, op: ir.Operation, predicates) -> None:
        if any(v in self.dependent for v in list(op.operands)[:3]):
            raise diag.error(op, "cannot simulate this scf.for: it holds a gpu.barrier or gpu.shuffle but its "
                                 "bounds depend on the thread (every thread must run the same iterations)")
        self.split(op.regions[0].blocks[0], predicates)

    def _split_if(self, op: ir.Operation, predicates) -> None:
        cond = op.operands[0]
        if cond not in self.dependent:
            for region in op.regions:
                for block in region.blocks:
                    self.split(block, predicates)
            return
        if op in self.barrier_in:
            raise diag.error(self.barrier_in[op], "cannot simulate a gpu.barrier under a thread-dependent "
                             "condition: the threads of the block would not all reach it",
                             [diag.note(op, "the condition")])
        for region, taken in zip(op.regions, (True, False)):
            for block in region.blocks:
                self.split(block, predicates + [(cond, taken)])
                for inner in [o.operation for o in block.operations][:-1]:
                    inner.move_before(op)
        op.erase()

    def _close(self, segment: list[ir.Operation], predicates) -> None:
        if not segment:
            return
        first = segment[0]
        with first.location, ir.InsertionPoint(first):
            loop = scf.ForOp(b.index(0), b.index(self.n_threads), b.index(1))
            with ir.InsertionPoint(loop.body):
                target = scf.YieldOp([])
            if predicates:
                with ir.InsertionPoint(target):
                    guard = scf.IfOp(_all_taken(predicates))
                with ir.InsertionPoint(guard.then_block):
                    target = scf.YieldOp([])
        loop.operation.attributes[THREAD_LOOP_ATTR] = ir.UnitAttr.get()
        for op in segment:
            op.move_before(target)
        self.phases.thread_loops.append(ThreadLoop(loop.operation, loop.induction_variable, bool(predicates)))


def _all_taken(predicates) -> ir.Value:
    true = b.constant(ir.IntegerType.get_signless(1), 1)
    return b.all_true([cond if taken else arith.xori(cond, true) for cond, taken in predicates])


def _first_barrier(op: ir.Operation) -> ir.Operation | None:
    found = []

    def visit(inner):
        if inner.name == "gpu.barrier":
            found.append(inner)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found[0] if found else None
