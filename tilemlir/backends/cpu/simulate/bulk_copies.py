"""TMA loads and mbarriers in the thread-level simulation (`dialects/bulk_copy.py`'s ops), and the boxes of
TMA stores (their bulk groups and ordering rules: `bulk_stores.py`, whose `BulkStores` this rewriter owns).

Semantics from the PTX ISA (9.7.13.15 "mbarrier", 9.7.9.25 "cp.async.bulk.tensor") and the driver's
`cuTensorMapEncodeTiled`, not from the compiler's pipeline code.

An mbarrier's state (one row of `state` per barrier, every `bars` array of the launch numbered in
one sequence): its expected arrival count (0: not initialized), pending arrivals, tx-count (signed:
a copy may complete before the arrival expecting it), the number of completed phases (the current
phase's parity is its low bit), the bytes of TMA loads in flight on it, who initialized it and when.

- `mbarrier_init {count}`: expected = pending = count, tx = 0, phase 0, nothing in flight; the
  initializing thread's later `fence_mbarrier_init` marks it visible to TMA. A TMA load completing on
  a barrier not so fenced, and any use by another thread in the barrier interval of its init (no
  `gpu.barrier` between), are errors; so is every use of an uninitialized barrier.
- `mbarrier_arrive`: pending -= 1; `mbarrier_arrive_expect_tx {bytes}`: tx += bytes, then the
  arrival. A phase completes when pending and tx are both zero: the count of completed phases goes
  up (the parity flips), pending = expected, tx = 0. An arrival with none pending (the phase still
  waits for bytes) is an error, and so are pending = 0 with tx < 0 (bytes beyond what the phase
  expected: on the GPU the phase completes before the copy has landed) and tx past 2**20 - 1.
- `mbarrier_wait(bars, i, parity)` (`try_wait.parity` in a loop): the ISA's `phaseParity` names the
  current phase or the one before it, so the wait holds when the current phase's parity differs
  from `parity` (the phase of parity `parity` is the one before, complete), and blocks while it is
  equal. On a fresh barrier a wait with parity 1 holds at once. A phase two behind is
  indistinguishable from the current one's predecessor, as on the GPU. A holding wait makes the
  thread an observer of every phase completed so far.
- `tma_load`: the box of the tensor map at `coords` (outermost first) is read from the global tensor
  when the op runs, elements outside the tensor's bounds as zeros, into a staging buffer; the whole
  box's bytes go in flight on the barrier, zero-filled ones included (the ISA counts the bounding
  box's bytes; the driver's `oobFill` NONE fills them with zeros). Its element (b_0, ..., b_{r-1})
  goes to the shared byte address `A = base + row-major offset of b in the box * element bytes`
  (`base` = the address of `dst[dst_indices]` from the buffer's start) with the hardware's swizzle of
  address bits: `A ^ (((A >> 7) & (W / 16 - 1)) << 4)` for swizzle W (16-byte chunks XORed with the
  128-byte row's index mod W / 16, repeating every 8 W bytes; plan-shared-memory aligns a swizzled
  buffer to 8 W, so buffer-relative bits are the address's). The box's inner dim must be exactly W
  bytes when swizzled (smaller inner dims are not modelled: a CompileError), `base` 128-byte aligned
  when swizzled and 16 otherwise. The destination elements are *pending* until the copy lands.
- Landing: the copies in flight on a barrier land (their staged values stored, uninstrumented: the
  async proxy is no thread; their tx bytes subtracted) when a thread's wait on that barrier is
  evaluated, before the wait's parity test. Touching a pending element is a race (the copy has not
  landed: no wait of its barrier ran since it was issued); touching a landed element in the barrier
  interval it landed in, from a thread that has not observed the phase it landed in, is a race too
  (the thread did not wait for it, nor a `gpu.barrier` separate it from a thread that did).
- A block ending with bytes in flight on a barrier is an error naming the last TMA load on it.
- `tma_store`: its box's elements are found in the source tile as a load's in its destination (the same
  address swizzle, alignment and end checks); those inside the tensor are read from shared memory and
  written to the global tensor when the op runs (the others are dropped), and each such read is checked
  as any read of a TMA destination is (not pending, not landed unobserved). A TMA load issued into a
  store's source, and its landing, are reported to `bulk_stores.py`.

Scheduling. A wait opens a phase (`phases.PhaseSplitter`), as a shuffle does, and that phase's thread
loop becomes a retry loop: each pass runs, in thread order, every thread that has not finished the
phase and whose wait now holds; a thread whose wait does not hold stays for the next pass. The loop
ends when every thread finished, or a pass finished none: a deadlock, reported for each blocked
thread with the wait's location, the barrier and the parity. So a thread's phase after a wait runs
when its wait holds, after other threads have run theirs; a phase after the wait's does not start
before every thread is past the wait (the phase order is program order). A program in which a wait
can only be satisfied by code *after* it in program order in other threads would report that
deadlock although the GPU ran it; warp-specialize's producer and consumer loops are such a program,
which `simulate/roles.py` fuses into one schedule first.

Not checked: a TMA load overwriting bytes other threads read before it was issued, ordered only by an
mbarrier (the epoch race shadows cannot see mbarrier ordering).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tilemlir.backends.cpu import buffers, checks
from tilemlir.backends.cpu import ir_builders as b
from tilemlir.backends.cpu.access_index import as_i64, bounds, linear, vector_width
from tilemlir.backends.cpu.simulate.bulk_stores import STORE_OPS, BulkStores
from tilemlir.backends.cpu.simulate.phases import ThreadLoop
from tilemlir.backends.cpu.simulate.values import ThreadState
from tilemlir.backends.cpu.simulate.warpgroup import Warpgroups
from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects.bulk_copy import BULK_COPY_OPS, MAX_TRANSACTION_BYTES, TensorMap, tensor_map
from tilemlir.ir_util import ops_named
from tilemlir.mlir import arith, ir, memref, scf

WAIT = "tile.mbarrier_wait"
# columns of the barrier state
EXPECTED, PENDING, TX, PHASE, IN_FLIGHT, INIT_MARK, FENCED, LAST_LOAD = range(8)
_FIELDS = 8
_THREAD_BITS = 12  # a mark's thread (block sizes up to 1024)
_PHASE_BITS = 32


def _i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)


def _c(value: int) -> ir.Value:
    return b.constant(_i64(), value)


@dataclass
class _Target:
    """A shared buffer some TMA load writes: staged values, pending marks (`barrier << 12 | thread`,
    -1: none), and where landed elements came from (the barrier interval, `barrier << 32 | phase`)."""

    name: str
    buffer: ir.Value
    staging: ir.Value
    pending: ir.Value
    landed_epoch: ir.Value
    landed_phase: ir.Value

    @property
    def size(self) -> int:
        return math.prod(self.buffer.type.shape)


class BulkCopies:
    def __init__(self, launch: ir.Operation, function: ir.Operation, checker: checks.Checker, n_threads: int,
                 groups: Warpgroups):
        self.launch, self.function, self.checker, self.n_threads = launch, function, checker, n_threads
        self.groups = groups  # the wgmma simulation: a load's issue must not race a wgmma, its landing is no generic write
        self.loads = ops_named(launch, "tile.tma_load")
        self.first_barrier: dict[ir.Value, int] = {}
        for op in ops_named(launch, *BULK_COPY_OPS):
            if op.name not in ("tile.fence_mbarrier_init", *STORE_OPS):
                bars = op.operands[1] if op.name == "tile.tma_load" else op.operands[0]
                if bars not in self.first_barrier:
                    self.first_barrier[bars] = sum(v.type.shape[0] for v in self.first_barrier)
        self.n_barriers = max(1, sum(v.type.shape[0] for v in self.first_barrier))
        loc = launch.location
        self.state = buffers.allocate_at_entry(function, ir.MemRefType.get([self.n_barriers, _FIELDS], _i64()), loc)
        # per thread: how many phases of each barrier it has seen complete (at its last holding wait)
        self.observed = buffers.allocate_at_entry(function, ir.MemRefType.get([n_threads, self.n_barriers], _i64()),
                                                  loc)
        for op in ops_named(launch, "tile.tma_load", "tile.tma_store"):
            self._map(op)  # a map the simulation cannot model is a CompileError before anything changes
        self.load_sites = [self._where(op) for op in self.loads]  # the waits' errors name them after they are gone
        self.targets: dict[ir.Value, _Target] = {}
        for op in self.loads:
            if op.operands[0] not in self.targets:
                self.targets[op.operands[0]] = self._target(op.operands[0], op.location)
        self.stores = BulkStores(launch, function, checker, n_threads, groups)

    def _map(self, op: ir.Operation) -> TensorMap:
        name = ir.StringAttr(op.attributes["map"]).value
        found = tensor_map(op, name)
        if isinstance(found, str):
            raise diag.error(op, found)
        inner = found.box[-1] * (b.bitwidth(op.operands[0].type.element_type) // 8)
        if found.swizzle and inner != found.swizzle:
            raise diag.error(op, f"cannot simulate {op.name} of tensor map '{name}': its box's inner dim is "
                                 f"{inner} bytes, the swizzle {found.swizzle}; only boxes whose inner dim is the "
                                 "whole swizzle span are modelled")
        return found

    def _target(self, buffer: ir.Value, loc: ir.Location) -> _Target:
        name = self.checker.buffers[buffer].name
        size = math.prod(buffer.type.shape)
        marks = [buffers.allocate_at_entry(self.function, ir.MemRefType.get([size], _i64()), loc) for _ in range(3)]
        staging = buffers.allocate_at_entry(self.function, buffer.type, loc, f"{name}_tma_staged")
        return _Target(name, buffer, staging, *marks)

    def reset(self) -> list[tuple[ir.Value, int]]:
        """(buffer, value) pairs to fill at every block start."""
        marks = [(m, -1) for t in self.targets.values() for m in (t.pending, t.landed_epoch, t.landed_phase)]
        return [(self.state, 0), (self.observed, 0), *marks, *self.stores.reset()]

    # -- the state of one barrier ----------------------------------------------------------------
    def _get(self, barrier: ir.Value, field: int) -> ir.Value:
        return memref.load(self.state, [barrier, b.index(field)])

    def _set(self, value: ir.Value, barrier: ir.Value, field: int) -> None:
        memref.store(value, self.state, [barrier, b.index(field)])

    def _add(self, barrier: ir.Value, field: int, amount: ir.Value) -> ir.Value:
        value = arith.addi(self._get(barrier, field), amount)
        self._set(value, barrier, field)
        return value

    def _name(self, bars: ir.Value) -> str:
        return self.checker.buffers[bars].name

    def _where(self, op: ir.Operation) -> str:
        return str(self.checker.where(op))

    def _record(self, template: str, thread, other, index) -> None:
        self.checker.record(self.checker.site(template), thread, other, index)

    def _epoch(self) -> ir.Value:
        return memref.load(self.checker.state, [b.index(0)])

    # -- rewriting ---------------------------------------------------------------------------------
    def check_accesses(self, state: ThreadState) -> None:
        """Before the checker instruments them: every access of a TMA destination checks its elements
        are neither pending nor landed unobserved."""
        for op in ops_named(self.launch, *checks.ACCESSES):
            reads = op.name.endswith("load")
            buffer = op.operands[0] if reads else op.operands[1]
            if buffer not in self.targets:
                continue
            loop = state.loop_of(op)
            indices = list(op.operands[1:] if reads else op.operands[2:])
            with op.location, ir.InsertionPoint(op):
                inside, _, _ = bounds(buffer, indices, False, vector_width(op))
                if inside is None:
                    self._check_elements(op, self.targets[buffer], indices, reads, loop.tid)
                else:
                    with b.if_then(inside):  # out of range: the checker reports the access itself
                        self._check_elements(op, self.targets[buffer], indices, reads, loop.tid)
        self.stores.check_accesses(state)

    def lower(self, state: ThreadState) -> None:
        """Rewrite the ops (after the phases are split and the accesses instrumented)."""
        lowerings = {"tile.mbarrier_init": self._init, "tile.mbarrier_arrive": self._arrive_op,
                     "tile.mbarrier_arrive_expect_tx": self._arrive_op, "tile.fence_mbarrier_init": self._fence,
                     "tile.tma_load": self._load, "tile.tma_store": self._store,
                     "tile.bulk_commit_group": self.stores.commit, "tile.bulk_wait_group_read": self.stores.wait}
        for op in ops_named(self.launch, *BULK_COPY_OPS):
            if op.name == WAIT:
                continue
            tid = state.loop_of(op).tid
            with op.location, ir.InsertionPoint(op):
                lowerings[op.name](op, tid)
            op.erase()
        for op in ops_named(self.launch, WAIT):
            self._schedule(op, state.loop_of(op))
        terminator = list(self.launch.regions[0].blocks[0].operations)[-1]
        with self.launch.location, ir.InsertionPoint(terminator):
            self._check_block_end()
            self.stores.check_block_end()

    # -- barrier ops -------------------------------------------------------------------------------
    def _barrier(self, op: ir.Operation, bars: ir.Value, index: ir.Value, tid: ir.Value, body) -> None:
        """Run `body(barrier)` (its number in `state`) if `bars[index]` is a barrier this thread may use."""
        size = bars.type.shape[0]
        in_range = b.index_in_range(index, b.index(size))
        who = f"thread {{thread}} of block {{block}} at {self._where(op)}"
        with b.if_then(arith.xori(in_range, b.constant(ir.IntegerType.get_signless(1), 1))):
            self._record(f"{op.name} on mbarrier '{self._name(bars)}'[{{index}}] (of {size}) by {who}: index out of "
                         "range", tid, b.index(0), index)
        with b.if_then(in_range):
            barrier = arith.addi(index, b.index(self.first_barrier[bars]))
            if op.name == "tile.mbarrier_init":
                body(barrier)
                return
            initialized = arith.cmpi(b.CMPI.ne, self._get(barrier, EXPECTED), _c(0))
            with b.if_then(arith.xori(initialized, b.constant(ir.IntegerType.get_signless(1), 1))):
                self._record(f"{op.name} on mbarrier '{self._name(bars)}'[{{index}}] by {who}: the barrier is not "
                             "initialized (no tile.mbarrier_init ran on it in this block)", tid, b.index(0), index)
            with b.if_then(initialized):
                mark = self._get(barrier, INIT_MARK)
                same_interval = arith.cmpi(b.CMPI.eq, arith.shrsi(mark, _c(_THREAD_BITS)), self._epoch())
                initializer = arith.andi(mark, _c((1 << _THREAD_BITS) - 1))
                other = arith.cmpi(b.CMPI.ne, initializer, as_i64(tid))
                with b.if_then(arith.andi(same_interval, other)):
                    self._record(f"{op.name} on mbarrier '{self._name(bars)}'[{{index}}] by {who}: thread {{other}} "
                                 "initialized it with no gpu.barrier between (its init may not be visible yet)",
                                 tid, initializer, index)
                body(barrier)

    def _init(self, op: ir.Operation, tid: ir.Value) -> None:
        count = ir.IntegerAttr(op.attributes["count"]).value

        def init(barrier):
            for field, value in ((EXPECTED, _c(count)), (PENDING, _c(count)), (TX, _c(0)), (PHASE, _c(0)),
                                 (IN_FLIGHT, _c(0)), (FENCED, _c(0)), (LAST_LOAD, _c(0))):
                self._set(value, barrier, field)
            mark = arith.ori(arith.shli(self._epoch(), _c(_THREAD_BITS)), as_i64(tid))
            self._set(mark, barrier, INIT_MARK)
            with b.loop_nest([self.n_threads]) as (thread,):
                memref.store(_c(0), self.observed, [thread, barrier])

        self._barrier(op, op.operands[0], op.operands[1], tid, init)

    def _fence(self, op: ir.Operation, tid: ir.Value) -> None:
        """The thread's initialized barriers become visible to TMA."""
        with b.loop_nest([self.n_barriers]) as (barrier,):
            mine = arith.cmpi(b.CMPI.eq, arith.andi(self._get(barrier, INIT_MARK), _c((1 << _THREAD_BITS) - 1)),
                              as_i64(tid))
            initialized = arith.cmpi(b.CMPI.ne, self._get(barrier, EXPECTED), _c(0))
            with b.if_then(arith.andi(mine, initialized)):
                self._set(_c(1), barrier, FENCED)

    def _arrive_op(self, op: ir.Operation, tid: ir.Value) -> None:
        bars, index = op.operands[0], op.operands[1]
        where = f"{op.name} at {self._where(op)} by thread {{thread}} of block {{block}} on mbarrier " \
                f"'{self._name(bars)}'[{{index}}]"

        def arrive(barrier):
            if op.name == "tile.mbarrier_arrive_expect_tx":
                tx = self._add(barrier, TX, _c(ir.IntegerAttr(op.attributes["bytes"]).value))
                with b.if_then(arith.cmpi(b.CMPI.sgt, tx, _c(MAX_TRANSACTION_BYTES))):
                    self._record(f"{where}: its tx-count {{other}} exceeds the ISA's {MAX_TRANSACTION_BYTES}",
                                 tid, tx, index)
            pending = self._add(barrier, PENDING, _c(-1))
            with b.if_then(arith.cmpi(b.CMPI.slt, pending, _c(0))):
                self._record(f"{where}: the phase's arrival count goes negative (more arrivals than its count "
                             "while it waits for {other} transaction bytes)", tid, self._get(barrier, TX), index)
            self._settle(barrier, lambda tx: self._record(
                f"{where}: the phase has all its arrivals but {{other}} transaction bytes more than its "
                "arrive_expect_tx announced (the phase would complete before its copies land)", tid,
                arith.subi(_c(0), tx), index))

        self._barrier(op, bars, index, tid, arrive)

    def _settle(self, barrier: ir.Value, overflow) -> None:
        """Complete the barrier's phase if its arrivals and bytes are all in (`overflow(tx)` records
        bytes beyond the expected ones, and the phase completes all the same)."""
        pending, tx = self._get(barrier, PENDING), self._get(barrier, TX)
        arrived = arith.cmpi(b.CMPI.eq, pending, _c(0))
        with b.if_then(arith.andi(arrived, arith.cmpi(b.CMPI.slt, tx, _c(0)))):
            overflow(tx)
        with b.if_then(arith.andi(arrived, arith.cmpi(b.CMPI.sle, tx, _c(0)))):
            self._add(barrier, PHASE, _c(1))
            self._set(self._get(barrier, EXPECTED), barrier, PENDING)
            self._set(_c(0), barrier, TX)

    # -- TMA loads ---------------------------------------------------------------------------------
    def _load(self, op: ir.Operation, tid: ir.Value) -> None:
        tmap = self._map(op)
        operands = list(op.operands)
        dst, bars = operands[0], operands[1]
        rank = dst.type.rank
        dst_indices, index, coords = operands[2:2 + rank], operands[2 + rank], operands[3 + rank:]
        where = f"tile.tma_load at {self._where(op)} by thread {{thread}} of block {{block}}"

        def issue(barrier):
            with b.if_then(arith.cmpi(b.CMPI.eq, self._get(barrier, FENCED), _c(0))):
                self._record(f"{where}: it completes on mbarrier '{self._name(bars)}'[{{index}}], whose init no "
                             "tile.fence_mbarrier_init of its initializing thread made visible to TMA", tid,
                             b.index(0), index)
            self._add(barrier, IN_FLIGHT, _c(tmap.box_bytes))
            number = arith.ori(arith.shli(_c(self._number(op)), _c(_THREAD_BITS)), as_i64(tid))
            self._set(number, barrier, LAST_LOAD)
            self._stage(op, tmap, self.targets[dst], dst_indices, coords, as_i64(barrier), tid, where)

        self._barrier(op, bars, index, tid, issue)

    def _number(self, op: ir.Operation) -> int:
        return next(k for k, load in enumerate(self.loads) if load == op)

    def _stage(self, op, tmap: TensorMap, target: _Target, dst_indices, coords, barrier, tid, where) -> None:
        element = target.buffer.type.element_type
        tensor = self.function.regions[0].blocks[0].arguments[tmap.tensor]
        mark = arith.ori(arith.shli(barrier, _c(_THREAD_BITS)), as_i64(tid))

        def stage(box, element_index):
            place = [arith.addi(c, i) for c, i in zip(coords, box)]
            inside = b.in_bounds(tensor, place)
            value = b.if_else_value(inside, element, lambda: memref.load(tensor, place), lambda: b.constant(element, 0))
            previous = memref.load(target.pending, [element_index])
            with b.if_then(arith.cmpi(b.CMPI.ne, previous, _c(-1))):
                self._record(f"{where}: it copies into element {{index}} of shared buffer '{target.name}', "
                             "which the TMA load of thread {other} still has pending", tid,
                             _thread_of(previous), element_index)
            self.groups.check_async_write(op, target.buffer, element_index, tid, "issues a TMA load into it")
            self.stores.check_async_write(op, target.buffer, element_index, tid, "issues a TMA load into it")
            memref.store(mark, target.pending, [element_index])
            memref.store(value, target.staging, _unflatten(element_index, target.buffer.type.shape))

        self._box(tmap, target.buffer, dst_indices, "destination", tid, where, stage)

    def _box(self, tmap: TensorMap, buffer: ir.Value, indices, role: str, tid, where: str, body) -> None:
        """`body(box, element)` for each element of the box (its indices in the box) and the element of
        `buffer` it lives at when the tile starts at `indices` (module docstring, `tma_load`); a tile not
        aligned to its swizzle, or running past the buffer's end, is a recorded error."""
        name = self.checker.buffers[buffer].name
        element_bytes = b.bitwidth(buffer.type.element_type) // 8
        base = arith.muli(linear(buffer, list(indices), 0), b.index(element_bytes))
        alignment = 128 if tmap.swizzle else 16
        misplaced = arith.remui(base, b.index(alignment))
        with b.if_then(arith.cmpi(b.CMPI.ne, misplaced, b.index(0))):
            self._record(f"{where}: its {role} in shared buffer '{name}' starts {{other}} bytes past a "
                         f"{alignment}-byte boundary (element {{index}})", tid, misplaced,
                         arith.divui(base, b.index(element_bytes)))
        with b.loop_nest(tmap.box) as box:
            offset = arith.muli(linear(buffer, list(box), 0, tmap.box), b.index(element_bytes))
            address = _swizzled(arith.addi(base, offset), tmap.swizzle)
            element_index = arith.divui(address, b.index(element_bytes))
            fits = arith.cmpi(b.CMPI.ult, element_index, b.index(math.prod(buffer.type.shape)))
            with b.if_then(arith.xori(fits, b.constant(ir.IntegerType.get_signless(1), 1))):
                self._record(f"{where}: its box runs past the end of shared buffer '{name}' (element "
                             "{index})", tid, b.index(0), element_index)
            with b.if_then(fits):
                body(box, element_index)

    # -- TMA stores ---------------------------------------------------------------------------------
    def _store(self, op: ir.Operation, tid: ir.Value) -> None:
        """The box's elements inside the tensor are read from `src` and written now (`bulk_stores.py`)."""
        tmap = self._map(op)
        operands = list(op.operands)
        src = operands[0]
        src_indices, coords = operands[1:1 + src.type.rank], operands[1 + src.type.rank:]
        tensor = self.function.regions[0].blocks[0].arguments[tmap.tensor]
        where = f"tile.tma_store at {self._where(op)} by thread {{thread}} of block {{block}}"
        self.stores.issue(op, tid)

        def read(box, element_index):
            place = [arith.addi(c, i) for c, i in zip(coords, box)]
            inside = b.in_bounds(tensor, place)
            self.stores.read(op, src, element_index, inside, tid)
            with b.if_then(inside):
                if src in self.targets:
                    self._check_element(op, self.targets[src], element_index, "reads", tid)
                value = memref.load(src, _unflatten(element_index, src.type.shape))
                memref.store(value, tensor, place)

        self._box(tmap, src, src_indices, "source", tid, where, read)

    def _land(self, barrier: ir.Value) -> None:
        """Every copy in flight on `barrier` lands; its bytes leave the tx-count."""
        in_flight = self._get(barrier, IN_FLIGHT)
        with b.if_then(arith.cmpi(b.CMPI.ne, in_flight, _c(0))):
            epoch = self._epoch()
            landed_at = arith.ori(arith.shli(as_i64(barrier), _c(_PHASE_BITS)), self._get(barrier, PHASE))
            for target in self.targets.values():
                written = self.checker.buffers[target.buffer].written
                with b.loop_nest([target.size]) as (element,):
                    mark = memref.load(target.pending, [element])
                    mine = arith.andi(arith.cmpi(b.CMPI.ne, mark, _c(-1)),
                                      arith.cmpi(b.CMPI.eq, arith.shrsi(mark, _c(_THREAD_BITS)), as_i64(barrier)))
                    with b.if_then(mine):
                        indices = _unflatten(element, target.buffer.type.shape)
                        memref.store(memref.load(target.staging, indices), target.buffer, indices)
                        self.groups.async_write(target.buffer, element)
                        self.stores.async_write(target.buffer, element)
                        if written is not None:
                            memref.store(b.constant(ir.IntegerType.get_signless(8), 1), written, indices)
                        memref.store(_c(-1), target.pending, [element])
                        memref.store(epoch, target.landed_epoch, [element])
                        memref.store(landed_at, target.landed_phase, [element])
            self._set(_c(0), barrier, IN_FLIGHT)
            self._add(barrier, TX, arith.subi(_c(0), in_flight))

    def _on_last_load(self, barrier: ir.Value, template, index: ir.Value) -> None:
        """Record the error `template(load)` names, `load` the last TMA load on `barrier`, by its thread."""
        last = self._get(barrier, LAST_LOAD)
        number, thread = arith.shrsi(last, _c(_THREAD_BITS)), arith.andi(last, _c((1 << _THREAD_BITS) - 1))
        for k, site in enumerate(self.load_sites):
            with b.if_then(arith.cmpi(b.CMPI.eq, number, _c(k))):
                self._record(template(f"tile.tma_load at {site}"), thread, b.index(0), index)

    # -- touching TMA destinations ----------------------------------------------------------------
    def _check_elements(self, op, target: _Target, indices, reads: bool, tid) -> None:
        for number in range(vector_width(op)):
            self._check_element(op, target, linear(target.buffer, indices, number), "reads" if reads else "writes",
                                tid)

    def _check_element(self, op, target: _Target, element: ir.Value, action: str, tid) -> None:
        """`element` of a TMA destination, touched by thread `tid`'s `op`, is neither pending nor landed unobserved."""
        at = f"data race on shared buffer '{target.name}' element {{index}} in block {{block}}: thread {{thread}} " \
             f"{action} it at {self._where(op)}"
        mark = memref.load(target.pending, [element])
        with b.if_then(arith.cmpi(b.CMPI.ne, mark, _c(-1))):
            self._record(f"{at} while the TMA load of thread {{other}} into it has not landed (no thread has "
                         "waited on its mbarrier since it was issued: a missing or misplaced tile.mbarrier_wait?)",
                         tid, _thread_of(mark), element)
        same_interval = arith.cmpi(b.CMPI.eq, memref.load(target.landed_epoch, [element]), self._epoch())
        with b.if_then(same_interval):
            landed_at = memref.load(target.landed_phase, [element])
            barrier = arith.index_cast(ir.IndexType.get(), arith.shrsi(landed_at, _c(_PHASE_BITS)))
            phase = arith.andi(landed_at, _c((1 << _PHASE_BITS) - 1))
            seen = memref.load(self.observed, [tid, barrier])
            with b.if_then(arith.cmpi(b.CMPI.sle, seen, phase)):
                self._record(f"{at}, which a TMA load wrote in phase {{other}} of its mbarrier, but the thread has "
                             "not waited for that phase (nor a gpu.barrier separated it from a thread that did)",
                             tid, phase, element)

    # -- waits --------------------------------------------------------------------------------------
    def _schedule(self, wait: ir.Operation, loop: ThreadLoop) -> None:
        """Make the wait's thread loop a retry loop (module docstring, "Scheduling")."""
        n = self.n_threads
        loc = wait.location
        blocked, waited_bar, waited_parity = (
            buffers.allocate_at_entry(self.function, ir.MemRefType.get([n], _i64()), loc) for _ in range(3))
        # [threads that finished the phase this pass, whether one is still blocked]
        passes = buffers.allocate_at_entry(self.function, ir.MemRefType.get([2], _i64()), loc)
        ops = [o.operation for o in wait.block.operations]
        after_wait = ops[ops.index(wait) + 1:-1]
        deadlock = (f"deadlock in block {{block}}: thread {{thread}} waits at {self._where(wait)} for the phase of "
                    f"parity {{other}} of mbarrier '{self._name(wait.operands[0])}'[{{index}}] to complete, and no "
                    "thread left to run can complete it (a wrong parity, a load nobody issues, too few arrivals, or "
                    "bytes an arrive_expect_tx announced that never come?)")
        with loc, ir.InsertionPoint(wait):
            holds = self._wait(wait, loop.tid, waited_bar, waited_parity)
            gate = scf.IfOp(holds, has_else=True)
            with ir.InsertionPoint(gate.then_block):
                rest_end = scf.YieldOp([])
            with ir.InsertionPoint(gate.else_block):
                memref.store(_c(1), blocked, [loop.tid])
                memref.store(arith.subi(memref.load(passes, [b.index(0)]), _c(1)), passes, [b.index(0)])
                memref.store(_c(1), passes, [b.index(1)])
                scf.YieldOp([])
        for op in after_wait:
            op.move_before(rest_end)
        wait.erase()
        self._guard_thread_loop(loop, blocked, passes)
        self._retry(loop, blocked, passes, deadlock, waited_bar, waited_parity)

    def _wait(self, wait: ir.Operation, tid, waited_bar, waited_parity) -> ir.Value:
        """Land the barrier's copies; whether the wait holds (an unusable barrier: it holds, reported)."""
        bars, index, parity = wait.operands
        result = memref.alloca(ir.MemRefType.get([], ir.IntegerType.get_signless(1)), [], [])
        memref.store(b.constant(ir.IntegerType.get_signless(1), 1), result, [])
        who = f"tile.mbarrier_wait at {self._where(wait)} by thread {{thread}} of block {{block}}"

        def test(barrier):
            with b.if_then(arith.cmpi(b.CMPI.ugt, parity, b.index(1))):
                self._record(f"{who} on mbarrier '{self._name(bars)}'[{{index}}]: parity {{other}} is not 0 or 1", tid,
                             parity, index)
            self._land(barrier)
            self._settle(barrier, lambda tx: self._on_last_load(barrier, lambda load: (
                f"mbarrier '{self._name(bars)}'[{{index}}] in block {{block}}: {load} by thread {{thread}} delivers "
                "more bytes than the phase's arrive_expect_tx announced (the phase would complete before the copy "
                "landed)"), index))
            phase = self._get(barrier, PHASE)
            holds = arith.cmpi(b.CMPI.ne, arith.andi(phase, _c(1)), as_i64(parity))
            memref.store(holds, result, [])
            with b.if_then(holds):
                memref.store(phase, self.observed, [tid, barrier])
            memref.store(as_i64(index), waited_bar, [tid])
            memref.store(as_i64(parity), waited_parity, [tid])

        self._barrier(wait, bars, index, tid, test)
        return memref.load(result, [])

    @staticmethod
    def _guard_thread_loop(loop: ThreadLoop, blocked: ir.Value, passes: ir.Value) -> None:
        """The thread loop's body runs for the threads still `blocked` (cleared first; the wait sets it again)."""
        body = loop.op.regions[0].blocks[0]
        ops = list(body.operations)
        with loop.op.location, ir.InsertionPoint(ops[-1]):
            waiting = arith.cmpi(b.CMPI.ne, memref.load(blocked, [loop.tid]), _c(0))
            guard = scf.IfOp(waiting)
            with ir.InsertionPoint(guard.then_block):
                end = scf.YieldOp([])
        for op in ops[:-1]:
            op.operation.move_before(end)
        with loop.op.location, ir.InsertionPoint(list(guard.then_block.operations)[0]):
            memref.store(_c(0), blocked, [loop.tid])
            memref.store(arith.addi(memref.load(passes, [b.index(0)]), _c(1)), passes, [b.index(0)])

    def _retry(self, loop: ThreadLoop, blocked, passes, deadlock: str, waited_bar, waited_parity) -> None:
        """Run the thread loop in passes until every thread is past its wait or a pass moves none."""
        with loop.op.location, ir.InsertionPoint(loop.op):
            with b.loop_nest([self.n_threads]) as (thread,):
                memref.store(_c(1), blocked, [thread])
            retry = scf.WhileOp([], [])
            before = retry.before.blocks.append()
            after = retry.after.blocks.append()
            with ir.InsertionPoint(before):
                memref.store(_c(0), passes, [b.index(0)])
                memref.store(_c(0), passes, [b.index(1)])
                marker = scf.YieldOp([])  # replaced below: the thread loop goes before it
        loop.op.move_before(marker)
        with loop.op.location, ir.InsertionPoint(marker):
            ran = arith.cmpi(b.CMPI.sgt, memref.load(passes, [b.index(0)]), _c(0))
            stuck = arith.cmpi(b.CMPI.ne, memref.load(passes, [b.index(1)]), _c(0))
            scf.ConditionOp(arith.andi(ran, stuck), [])
        marker.erase()
        with loop.op.location, ir.InsertionPoint(after):
            scf.YieldOp([])
        with loop.op.location, ir.InsertionPoint.after(retry.operation):
            with b.loop_nest([self.n_threads]) as (thread,):
                with b.if_then(arith.cmpi(b.CMPI.ne, memref.load(blocked, [thread]), _c(0))):
                    self._record(deadlock, thread, memref.load(waited_parity, [thread]),
                                 memref.load(waited_bar, [thread]))

    def _check_block_end(self) -> None:
        for bars, first in self.first_barrier.items():
            with b.loop_nest([bars.type.shape[0]]) as (index,):
                barrier = arith.addi(index, b.index(first))
                with b.if_then(arith.cmpi(b.CMPI.ne, self._get(barrier, IN_FLIGHT), _c(0))):
                    self._on_last_load(barrier, lambda load: (
                        f"block {{block}} ends with {load} by thread {{thread}} in flight on mbarrier "
                        f"'{self._name(bars)}'[{{index}}]: no thread waited on the barrier after it"), index)


def _swizzled(address: ir.Value, swizzle: int) -> ir.Value:
    if not swizzle:
        return address
    row_bits = arith.andi(arith.shrui(address, b.index(7)), b.index(swizzle // 16 - 1))
    return arith.xori(address, arith.shli(row_bits, b.index(4)))


def _unflatten(element: ir.Value, shape: list[int]) -> list[ir.Value]:
    indices, stride = [], math.prod(shape)
    for extent in shape:
        stride //= extent
        indices.append(arith.remui(arith.divui(element, b.index(stride)), b.index(extent)))
    return indices


def _thread_of(mark: ir.Value) -> ir.Value:
    return arith.andi(mark, _c((1 << _THREAD_BITS) - 1))


def bulk_copies(launch: ir.Operation, function: ir.Operation, checker: checks.Checker,
                n_threads: int, groups: Warpgroups) -> BulkCopies | None:
    """The launch's TMA and mbarrier rewriter, or None when it has none of their ops (its IR stays as it was)."""
    if not ops_named(launch, *BULK_COPY_OPS):
        return None
    return BulkCopies(launch, function, checker, n_threads, groups)
