"""`simulate-threads`: run thread-level IR on one CPU thread, checking it as it runs.

Takes thread-level IR (docs/ir.md: `gpu.launch` with per-thread code,
"shared"/"local" allocas, `gpu.barrier`, `gpu.shuffle`, `vector`
accesses, guards); gives upstream loops with no memory spaces, which the
CPU backend JIT-compiles:

- each `gpu.launch` becomes a loop nest over its blocks; a block's body
  becomes phases, each a loop over the block's threads, split at every
  barrier and shuffle (`backends/cpu/simulate/phases.py`); values live
  across a split are kept per thread, shuffles read their partner lane's
  copy, "local" buffers get one copy per thread (`simulate/values.py`);
- shared and local buffers are heap buffers poisoned at each block start;
- every global, shared and local access is bounds-checked, every shared
  and local read checked to read an element written since the block
  started, and every shared access race-checked at run time
  (`backends/cpu/checks.py`); the function gets a trailing `memref<8xi64>`
  status argument and a `tile.sim_sites` attribute describing its errors
  (`check-races=false` leaves the race checks out);
- `tile.print` prints from its printing thread, `tile.device_assert` checks
  in every thread: calls into Python (`backends/cpu/debug_calls.py`);
- `tile.cp_async` reads its source when it runs and lands in shared memory
  at the `tile.cp_async_wait` that retires its group; touching a pending
  element before is a race error (`simulate/async_copies.py`);
- `tile.wgmma` runs as a warpgroup collective reading its operands through
  the ISA's descriptors, and its fences, batches and the proxy fence are
  checked (`simulate/warpgroup.py`);
- mbarriers keep their phases, arrivals and tx-count; `tile.tma_load` reads
  its box (zeros outside the tensor) and lands, swizzled as the hardware
  does, when a wait on its barrier runs; a wait opens a phase retried until
  the thread's wait holds, no progress being a deadlock error
  (`simulate/bulk_copies.py`); a warp-specialized launch's producer and
  consumer loops run in step, fused into one (`simulate/roles.py`);
- `tile.tma_store` reads its box from shared memory (swizzled as the load
  side decodes it) and writes the elements inside the tensor when issued;
  the box stays a pending read of the thread's bulk group until a
  `tile.bulk_wait_group_read` retires it: a write of it before (or after it
  in another thread without a barrier) is a race error, so are unfenced
  generic writes it reads and a block ending with a store uncommitted or a
  group unretired (`simulate/bulk_stores.py`). With
  `out-of-range=pad`, out-of-range global loads read their `tile.pad` (0
  without one) and out-of-range global stores are dropped, as guards would
  do, instead of being errors.

Constructs it cannot simulate (barriers under thread-dependent conditions,
thread-dependent bounds of a loop holding a barrier, nvgpu ops, ...) are a
CompileError naming them.
"""

from __future__ import annotations

from dataclasses import dataclass

from tilemlir.backends.cpu import buffers, tile_ops
from tilemlir.backends.cpu import ir_builders as b
from tilemlir.backends.cpu import checks, debug_calls, races
from tilemlir.backends.cpu.simulate import async_copies, bulk_copies, collectives, phases, roles, uniformity, \
    values, warpgroup
from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects.bulk_copy import BULK_COPY_OPS
from tilemlir.dialects.tile import memory_space
from tilemlir.dialects.warpgroup import WARPGROUP_OPS
from tilemlir.ir_util import ops_named
from tilemlir.mlir import arith, ir
from tilemlir.pass_infra.registry import register_pass

MAX_THREADS = 1024
_GPU_OPS = {"gpu.thread_id", "gpu.block_id", "gpu.block_dim", "gpu.grid_dim", "gpu.lane_id", "gpu.barrier",
            "gpu.shuffle", "gpu.terminator"}
_TILE_OPS = {"tile.atomic_add", "tile.cp_async", "tile.cp_async_commit", "tile.cp_async_wait", *phases.COLLECTIVE_OPS,
             *WARPGROUP_OPS, *BULK_COPY_OPS}


@dataclass(frozen=True)
class SimulateOptions:
    out_of_range: str = "error"  # "error": out-of-range global accesses are run-time errors; "pad": guards' meaning
    check_races: bool = True  # false: no shared-memory race checks (a race then shows only in the numbers)


DEFAULT_OPTIONS = SimulateOptions()


@register_pass("simulate-threads", "thread-level IR (gpu.launch) -> loops over blocks and threads, with run-time "
                                   "race and bounds checks (CPU backend)", SimulateOptions)
def run(module: ir.Operation, options: SimulateOptions) -> None:
    if options.out_of_range not in ("error", "pad"):
        raise diag.error(module, f"simulate-threads: out-of-range must be 'error' or 'pad', got '{options.out_of_range}'")
    by_function: dict[ir.Operation, list[ir.Operation]] = {}
    for launch in ops_named(module, "gpu.launch"):
        by_function.setdefault(buffers.enclosing_function(launch), []).append(launch)
    for function, launches in by_function.items():
        with function.location:  # types built below need a location for their diagnostics
            checker = _checker(function, options)
            for launch in launches:
                _simulate(launch, function, checker)
            function.attributes[checks.SITES_ATTR] = ir.ArrayAttr.get([ir.StringAttr.get(s) for s in checker.sites])
            buffers.erase_memory_spaces(function)


def _checker(function: ir.Operation, options: SimulateOptions) -> checks.Checker:
    status = checks.add_status_argument(function)
    checker = checks.Checker(function, status, options.out_of_range == "pad", options.check_races)
    names = _arg_names(function)
    for arg, name in zip(function.regions[0].blocks[0].arguments, names):
        if isinstance(arg.type, ir.MemRefType) and arg != status:
            checker.add_global(name, arg)
    return checker


def _arg_names(function: ir.Operation) -> list[str]:
    count = len(function.regions[0].blocks[0].arguments)
    if "tile.arg_names" in function.attributes:
        names = [ir.StringAttr(a).value for a in ir.ArrayAttr(function.attributes["tile.arg_names"])]
        return names + [f"arg{i}" for i in range(len(names), count)]
    return [f"arg{i}" for i in range(count)]


def _simulate(launch: ir.Operation, function: ir.Operation, checker: checks.Checker) -> None:
    roles.fuse(launch)
    block_dims = _block_dims(launch)
    n_threads = block_dims[0] * block_dims[1] * block_dims[2]
    body = launch.regions[0].blocks[0]
    debug_calls.lower_debug_ops(launch, function, list(body.arguments)[:3], body.arguments[3])
    _reject_unsupported(launch)
    for op in ops_named(launch, "tile.atomic_add"):
        tile_ops.lower_atomic_add(op, guarded=False, mark=races.ATOMIC_ATTR)
    _hoist_constants(launch)
    on_chip, locals_ = _hoist_buffers(launch, function, checker, n_threads)
    names = {value: buffer.name for value, buffer in checker.buffers.items()}
    groups = warpgroup.Warpgroups(launch, function, checker, n_threads, names)
    copies = async_copies.lower_async_copies(launch, function, checker, n_threads, names, groups.check_async_write)
    groups.lower_thread_ops()
    bulk = bulk_copies.bulk_copies(launch, function, checker, n_threads, groups)
    demoted = phases.demote_results(launch, function, n_threads)
    dependent = uniformity.thread_dependent_values(launch, {old for old, _ in locals_})
    splitter = phases.PhaseSplitter(launch, n_threads, dependent)
    body = launch.regions[0].blocks[0]
    splitter.split(body)
    state = values.ThreadState(function, block_dims, splitter.phases.thread_loops)
    state.bind_thread_ids(list(body.arguments)[3:6])
    state.exchange_shuffles()
    collectives.Collectives(state, checker, dict(locals_), copies.pending).run()
    groups.lower_wgmmas(state, dict(locals_), copies.pending)
    for old, expanded in locals_:
        state.expand_local_buffer(old, expanded)
        old.owner.erase()
    state.carry_values_across_phases(_block_level_ops(launch, state))
    if bulk is not None:
        bulk.check_accesses(state)
    for loop in splitter.phases.thread_loops:
        for op in ops_named(loop.op, *checks.ACCESSES):
            checker.instrument(op, loop.tid)
    reset = copies.reset + groups.reset()
    if bulk is not None:
        bulk.lower(state)
        reset = reset + bulk.reset()
    for barrier in splitter.phases.barriers:
        with barrier.location, ir.InsertionPoint(barrier):
            checker.next_epoch()
        barrier.erase()
    _run_blocks(launch, [*on_chip, *demoted, *state.carried], checker, reset)


def _block_dims(launch: ir.Operation) -> tuple[int, int, int]:
    view = launch.opview
    dims = []
    for name, value in zip("xyz", (view.blockSizeX, view.blockSizeY, view.blockSizeZ)):
        owner = value.owner
        if not (isinstance(owner, ir.OpView) and owner.operation.name == "arith.constant"):
            raise diag.error(launch, f"cannot simulate a gpu.launch whose block size {name} is not a constant")
        dims.append(ir.IntegerAttr(owner.operation.attributes["value"]).value)
    if not 1 <= dims[0] * dims[1] * dims[2] <= MAX_THREADS or min(dims) < 1:
        raise diag.error(launch, f"gpu.launch block size {tuple(dims)} must have 1 to {MAX_THREADS} threads")
    if len(view.asyncDependencies) or len(launch.regions[0].blocks[0].arguments) != 12:
        raise diag.error(launch, "cannot simulate an async gpu.launch or one with clusters or workgroup attributions")
    return tuple(dims)


def _reject_unsupported(launch: ir.Operation) -> None:
    unsupported = []

    def visit(op):
        name = op.name
        dialect = name.split(".")[0]
        if (dialect == "gpu" and name not in _GPU_OPS) or (dialect == "tile" and name not in _TILE_OPS) \
                or dialect in ("nvgpu", "nvvm"):
            unsupported.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    for op in launch.regions[0].blocks[0].operations:
        op.operation.walk(visit)
        if unsupported:
            raise diag.error(unsupported[0], f"cannot simulate {unsupported[0].name} on the CPU")


def _hoist_constants(launch: ir.Operation) -> None:
    for op in ops_named(launch, "arith.constant"):
        op.move_before(launch)


def _hoist_buffers(launch, function, checker, n_threads):
    """Shared allocas -> block-wide heap buffers; local ones -> one copy per thread."""
    on_chip, locals_ = [], []
    for op in ops_named(launch, "memref.alloca"):
        type_ = op.results[0].type
        name = ir.StringAttr(op.attributes["name"]).value if "name" in op.attributes else "alloca"
        if memory_space(type_) == "shared":
            buffer = buffers.allocate_at_entry(function, type_, op.location, name)
            op.results[0].replace_all_uses_with(buffer)
            op.erase()
            checker.add_on_chip("shared", name, buffer)
        else:
            per_thread = ir.MemRefType.get([n_threads, *type_.shape], type_.element_type)
            buffer = buffers.allocate_at_entry(function, per_thread, op.location, name)
            op.move_before(launch)
            locals_.append((op.results[0], buffer))
            checker.add_on_chip("local", name, buffer, per_thread=True)
        on_chip.append(buffer)
    return on_chip, locals_


def _block_level_ops(launch: ir.Operation, state: values.ThreadState) -> list[ir.Operation]:
    found = []

    def visit(op):
        if phases.THREAD_LOOP_ATTR in op.attributes:
            return ir.WalkResult.SKIP
        if op != launch and len(op.operands):
            found.append(op)
        return ir.WalkResult.ADVANCE

    launch.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def _run_blocks(launch: ir.Operation, on_chip: list[ir.Value], checker: checks.Checker,
                reset: list[tuple[ir.Value, int]]) -> None:
    """Replace the launch by loops over its blocks, each block starting with poisoned buffers (and
    `reset`'s buffers filled with their values)."""
    view = launch.opview
    body = launch.regions[0].blocks[0]
    grid = [view.gridSizeX, view.gridSizeY, view.gridSizeZ]
    args = list(body.arguments)
    for arg, value in zip(args[6:], [*grid, view.blockSizeX, view.blockSizeY, view.blockSizeZ]):
        arg.replace_all_uses_with(value)
    for op in ops_named(launch, "gpu.block_id", "gpu.grid_dim"):
        source = args[:3] if op.name == "gpu.block_id" else grid
        op.results[0].replace_all_uses_with(source["xyz".index(str(op.attributes["dimension"]).split()[-1][0])])
        op.erase()
    with launch.location, ir.InsertionPoint.at_block_begin(body):
        for buffer in on_chip:
            buffers.poison(buffer)
        for buffer, value in reset:
            async_copies.fill(buffer, value)
        bx, by, bz = args[:3]
        linear = arith.addi(arith.muli(arith.addi(arith.muli(bz, grid[1]), by), grid[0]), bx)
        checker.start_block(linear)
    b.inline_into_loop_nest(launch, grid)

