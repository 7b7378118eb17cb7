"""Run a warp-specialized launch (warp-specialize's producer / consumer split) as one schedule.

The two roles synchronize only through mbarriers, each in its own loop; the phase splitter runs
program order, so it would run every producer iteration before the first consumer one and report the
producer's first `empty` wait as a deadlock the GPU never has. `fuse` rewrites the split launch into
a schedule the GPU could also run, the roles' loops in step: iteration t runs the producer's
iteration t (it issues tile t + D, after waiting for the consumers' release of tile t + D - S, which
the consumers' iteration t + D - S + P <= t - 1 made: D <= S - 1 - P), then the consumers'
iteration t (the wait for tile t, its reads, the release of tile t - P).

- The launch shrinks to the consumers' T threads (the `tile.warp_roles` attribute of the split);
  the producer's issues (`tile.mbarrier_arrive_expect_tx`, `tile.tma_load`) run on thread 0, the
  elected issuer's role, and its `empty` waits on every thread: in this schedule they hold for all
  threads at once, and a wait that never holds is the deadlock it would be on the GPU.
- Each role's code before its loop runs before the fused loop, the producer's first; the consumers'
  code after their loop runs after it, their named barrier (`tile.named_barrier`) as the shrunk
  launch's block barrier. Both loops must have the same bounds (the producer's is the
  consumers' loop reduced to its issues); their loop-carried values (ring slots) are both carried.

Still checked: every `full` and `empty` wait (a wrong parity, a missing arrival, bytes never
announced), tx counts, reads of tiles that have not landed. Not checked: a producer wait that holds
too early (in this schedule the consumers are already done with the slot when the producer reuses it).
"""

from __future__ import annotations

from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects.warpgroup import WARP_ROLES
from tilemlir.ir_util import constant_int, operation, ops_named, set_launch_block_x
from tilemlir.mlir import arith, gpu, ir, scf
from tilemlir.rewriting.persistent_tiles import TILE_LOOP_ATTR

_ISSUES = ("tile.mbarrier_arrive_expect_tx", "tile.tma_load")


def fuse(launch: ir.Operation) -> None:
    """Rewrite `launch`'s role split, if it has one, into the fused schedule (module docstring)."""
    body = launch.regions[0].blocks[0]
    roles = [operation(op) for op in body.operations if WARP_ROLES in operation(op).attributes]
    if not roles:
        return
    role = roles[0]
    consumers = ir.IntegerAttr(role.attributes[WARP_ROLES]).value
    producer_ops = _producer_ops(role)
    for op in producer_ops:
        for wait in ops_named(op, "tile.mbarrier_wait"):
            _acquire_releases(wait)
    consumer_ops = [operation(op) for op in role.regions[1].blocks[0].operations][:-1]
    with role.location, ir.InsertionPoint(role):
        tid = gpu.thread_id(gpu.Dimension.x)
        issuer = arith.cmpi(arith.CmpIPredicate.eq, tid, _index(0))
    _fuse_roles(role, producer_ops, consumer_ops, role)
    role.erase()
    for op in ops_named(launch, *_ISSUES):
        _elect(op, issuer)
    _consumer_barriers(launch, consumers)
    with launch.location, ir.InsertionPoint(launch):
        set_launch_block_x(launch, _index(consumers))


def _producer_ops(role: ir.Operation) -> list[ir.Operation]:
    """The elected thread's ops: the producer warpgroup's block holds (after setmaxnreg) one scf.if."""
    ops = [operation(op) for op in role.regions[0].blocks[0].operations][:-1]
    elected = [op for op in ops if op.name == "scf.if"]
    if len(elected) != 1 or any(op.name not in ("scf.if", "tile.setmaxnreg", "gpu.thread_id")
                                and not op.name.startswith("arith.") for op in ops):
        raise diag.error(role, "cannot simulate this warp-specialized launch: its producer warpgroup does more than "
                               "its elected thread's issues")
    return [operation(op) for op in elected[0].regions[0].blocks[0].operations][:-1]


def _fuse_roles(role: ir.Operation, producer_ops: list, consumer_ops: list, at: ir.Operation) -> None:
    """Before `at`: the producer's code before its loop, the consumers', the fused loop, the consumers' code
    after theirs (the producer has none but index arithmetic)."""
    consumer_loop = _role_loop(role, consumer_ops, "consumers'")
    producer_loop = _role_loop(role, producer_ops, "producer's")
    _check_same_bounds(producer_loop, consumer_loop)
    after = producer_ops[producer_ops.index(producer_loop) + 1:]
    if any(not op.name.startswith("arith.") for op in after):
        raise diag.error(role, "cannot simulate this warp-specialized launch: its producer does work after its loop")
    for op in producer_ops[:producer_ops.index(producer_loop)] + after:
        op.move_before(at)
    for op in consumer_ops[:consumer_ops.index(consumer_loop)]:
        op.move_before(at)
    _fuse_loops(role, producer_loop, consumer_loop, at)
    for op in consumer_ops[consumer_ops.index(consumer_loop) + 1:]:
        op.move_before(at)


def _role_loop(role: ir.Operation, ops: list[ir.Operation], whose: str) -> ir.Operation:
    loops = [op for op in ops if op.name == "scf.for" and ops_named(op, "tile.mbarrier_wait")]
    if len(loops) != 1:
        raise diag.error(role, f"cannot simulate this warp-specialized launch: the {whose} code has {len(loops)} "
                               f"loops with mbarrier waits, not one")
    return loops[0]


def _check_same_bounds(producer: ir.Operation, consumer: ir.Operation) -> None:
    for p, c in zip(list(producer.operands)[:3], list(consumer.operands)[:3]):
        if p != c and (constant_int(p) is None or constant_int(p) != constant_int(c)):
            raise diag.error(producer, "cannot simulate this warp-specialized launch: the producer's and the "
                                       "consumers' loops have different bounds")


def _fuse_loops(role: ir.Operation, producer: ir.Operation, consumer: ir.Operation, at: ir.Operation) -> None:
    """One scf.for before `at` running the producer's iteration, then the consumers', carrying both's values;
    loops over a persistent launch's tiles (whose bodies hold the k loops) fuse their bodies in turn."""
    n_consumer = len(consumer.results)
    lower, upper, step = list(consumer.operands)[:3]
    with consumer.location, ir.InsertionPoint(at):
        fused = scf.ForOp(lower, upper, step, [*list(consumer.operands)[3:], *list(producer.operands)[3:]])
    for name in ("tile.num_stages", TILE_LOOP_ATTR):
        if name in consumer.attributes:
            fused.operation.attributes[name] = consumer.attributes[name]
    args = list(fused.body.arguments)
    roles = ((producer, [args[0], *args[1 + n_consumer:]]), (consumer, [args[0], *args[1:1 + n_consumer]]))
    yielded = {loop: list(operation(list(loop.regions[0].blocks[0].operations)[-1]).operands) for loop, _ in roles}
    with consumer.location, ir.InsertionPoint(fused.body):
        end = scf.YieldOp([*yielded[consumer], *yielded[producer]]).operation
    bodies = []
    for loop, new_args in roles:
        block = loop.regions[0].blocks[0]
        for old, new in zip(block.arguments, new_args):
            old.replace_all_uses_with(new)
        bodies.append([operation(op) for op in block.operations][:-1])
    if TILE_LOOP_ATTR in consumer.attributes:
        _fuse_roles(role, *bodies, end)
    else:
        for op in bodies[0] + bodies[1]:
            op.move_before(end)
    for old, new in zip([*consumer.results, *producer.results], fused.results):
        old.replace_all_uses_with(new)


def _acquire_releases(wait: ir.Operation) -> None:
    """A block barrier before the producer's `empty` wait: in this schedule the wait holds only once every
    consumer warp has arrived, past the wgmma_wait that retired its reads of the slot; the barrier makes those
    retirements visible to the issuing thread, as the mbarrier's acquire does on the GPU (the wgmma race
    shadows see a warpgroup's retirements from other warpgroups only across a barrier)."""
    at = wait
    while operation(at.parent).name == "scf.if":
        at = operation(at.parent)  # every thread reaches the barrier, also where the wait is skipped
    with wait.location, ir.InsertionPoint(at):
        gpu.barrier()


def _elect(op: ir.Operation, issuer: ir.Value) -> None:
    """`op` inside an `scf.if` on thread 0, where it stands."""
    with op.location, ir.InsertionPoint(op):
        guard = scf.IfOp(issuer)
        with ir.InsertionPoint(guard.then_block):
            scf.YieldOp([])
    op.move_before(operation(list(guard.then_block.operations)[0]))


def _consumer_barriers(launch: ir.Operation, consumers: int) -> None:
    """The consumers' named barrier is the block barrier of the shrunk launch."""
    for op in ops_named(launch, "tile.named_barrier"):
        if ir.IntegerAttr(op.attributes["threads"]).value != consumers:
            raise diag.error(op, f"cannot simulate a named barrier of {ir.IntegerAttr(op.attributes['threads']).value}"
                                 f" threads in a launch of {consumers} consumers")
        with op.location, ir.InsertionPoint(op):
            gpu.barrier()
        op.erase()


def _index(value: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), value)
