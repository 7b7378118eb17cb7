"""TMA stores' bulk async-groups in the thread-level simulation (`tile.tma_store`, `tile.bulk_commit_group`,
`tile.bulk_wait_group_read` of `dialects/bulk_copy.py`).

Semantics from the PTX ISA (9.7.9.25: "cp.async.bulk.tensor", "cp.async.bulk.commit_group",
"cp.async.bulk.wait_group"; the memory model's async proxy), not from the compiler's passes. The box itself is
decoded by the load side (`bulk_copies.py`: the same swizzled addresses, box by box); its values are read
from shared memory and written to the global tensor when the store is issued, so the result does not
depend on when the hardware would read. What makes that reading time invisible is checked here:

- Groups, per thread: a store joins the thread's open group (number = the thread's commits so far),
  `tile.bulk_commit_group` closes it, `tile.bulk_wait_group_read {pending = N}` retires every committed
  group but the newest N. Each shared element of a store's box is a *pending read* of the issuing
  thread's group until a wait retires it. A write of a pending element (a store or atomic, a cp.async
  landing at its wait, a TMA load at its issue) by any thread is a race; so is a write by another thread
  in the barrier interval of the retiring wait (no `gpu.barrier` between the wait and the write). A store
  not committed, or a committed group not retired, when the block ends is an error: the next block's
  writes would race it.
- Proxies: the store reads through the async proxy. The last generic-proxy write (a store or atomic, a
  cp.async landing) of each element of the box inside the tensor must be followed, in the writing thread,
  by a `tile.fence_proxy_async` before the store is issued, and, when the writer is another thread, a
  `gpu.barrier` after that fence. The fence counts are the wgmma simulation's (`warpgroup.py`). An element
  a TMA load wrote needs no fence (the async proxy wrote it); one never written in the block is a
  (weak) error, as any read of one is.
- Elements of the box outside the tensor are not written, nor their proxy order checked (their values
  are dropped); their shared elements are pending reads all the same.

Not checked: two threads' stores reading one shared element at once (the newer store's group alone
guards it); a cp.async into a store's source between its issue and its landing (it is checked where it
lands, at its wait); the global writes' visibility to reads later in the same kernel (they are visible
at once here, at the kernel's end on the GPU).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from tilemlir.backends.cpu import checks
from tilemlir.backends.cpu import ir_builders as b
from tilemlir.backends.cpu.access_index import as_i64, bounds, linear, vector_width
from tilemlir.backends.cpu.simulate.block_state import BlockStates
from tilemlir.backends.cpu.simulate.values import ThreadState
from tilemlir.backends.cpu.simulate.warpgroup import ASYNC_PROXY_WRITE, Warpgroups
from tilemlir.ir_util import ops_named
from tilemlir.mlir import arith, ir, memref

STORE_OPS = ("tile.tma_store", "tile.bulk_commit_group", "tile.bulk_wait_group_read")
# marks: (high << 32) | (op << 12) | thread, -1: none; `op` numbers a store (or a write) in its list
_THREAD_BITS = 12
_OP_BITS = 20


def _i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)


def _c(value: int) -> ir.Value:
    return b.constant(_i64(), value)


def _pack(high: ir.Value, number: ir.Value, thread: ir.Value) -> ir.Value:
    low = arith.ori(arith.shli(as_i64(number), _c(_THREAD_BITS)), as_i64(thread))
    return arith.ori(arith.shli(as_i64(high), _c(32)), low)


def _high(mark: ir.Value) -> ir.Value:
    return arith.shrsi(mark, _c(32))


def _number(mark: ir.Value) -> ir.Value:
    return arith.andi(arith.shrsi(mark, _c(_THREAD_BITS)), _c((1 << _OP_BITS) - 1))


def _thread(mark: ir.Value) -> ir.Value:
    return arith.andi(mark, _c((1 << _THREAD_BITS) - 1))


def _not(value: ir.Value) -> ir.Value:
    return arith.xori(value, b.constant(ir.IntegerType.get_signless(1), 1))


def _some(mark: ir.Value) -> ir.Value:
    return arith.cmpi(b.CMPI.ne, mark, _c(-1))


@dataclass
class _Source:
    """A shared buffer some TMA store reads, per element: the pending read (`group << 32 | store << 12 |
    thread`), the wait that retired the last one (`epoch << 32 | store << 12 | thread`), and the last write
    (`proxy fences the writer had run << 32 | write << 12 | writer`; ASYNC_PROXY_WRITE: a TMA load's)."""

    name: str
    buffer: ir.Value
    reading: ir.Value
    released: ir.Value
    written: ir.Value

    @property
    def size(self) -> int:
        return math.prod(self.buffer.type.shape)


class BulkStores(BlockStates):
    """The TMA stores and bulk groups of one launch. `bulk_copies.BulkCopies` owns it: it decodes each
    store's box and calls `issue` and `read`, lowers the commits and waits here, and reports its TMA loads'
    writes (`check_async_write` at issue, `async_write` at landing)."""

    def __init__(self, launch: ir.Operation, function: ir.Operation, checker: checks.Checker, n_threads: int,
                 groups: Warpgroups):
        self.launch, self.function, self.checker, self.n_threads = launch, function, checker, n_threads
        self.groups = groups  # its proxy fence counts order the generic writes before a store
        self.stores = ops_named(launch, "tile.tma_store")
        self.active = bool(ops_named(launch, *STORE_OPS))
        self.store_sites = [str(checker.where(op)) for op in self.stores]  # named after the ops are gone
        self.write_sites: list[str] = []  # the generic writes of the sources, numbered by `check_accesses`
        self._reset: list[tuple[ir.Value, int]] = []
        loc = launch.location
        # per thread: groups committed, groups retired, the store of its open group and of its newest
        # committed one (`group << 32 | store << 12`), -1: none
        self.committed, self.retired = self._state([n_threads], 0, loc), self._state([n_threads], 0, loc)
        self.open, self.newest = self._state([n_threads], -1, loc), self._state([n_threads], -1, loc)
        self.sources: dict[ir.Value, _Source] = {}
        for op in self.stores:
            buffer = op.operands[0]
            if buffer not in self.sources:
                size = math.prod(buffer.type.shape)
                self.sources[buffer] = _Source(checker.buffers[buffer].name, buffer,
                                               *(self._state([size], -1, loc) for _ in range(3)))


    def _record(self, template: str, thread, other, index, weak: bool = False) -> None:
        self.checker.record(self.checker.site(template), thread, other, index, weak=weak)

    def _on_op(self, sites: list[str], number: ir.Value, template: Callable[[str], str], thread, other,
               index) -> None:
        """Record `template(site)` for the op numbered `number` (a run-time value) in `sites`."""
        for k, site in enumerate(sites):
            with b.if_then(arith.cmpi(b.CMPI.eq, as_i64(number), _c(k))):
                self._record(template(site), thread, other, index)

    def _epoch(self) -> ir.Value:
        return memref.load(self.checker.state, [b.index(0)])

    # -- writes of the sources (before the checker instruments the accesses) ------------------------
    def check_accesses(self, state: ThreadState) -> None:
        """Every store into a source checks it does not race a store's read, and marks its writer."""
        for op in ops_named(self.launch, "memref.store", "vector.store"):
            buffer = op.operands[1]
            if buffer not in self.sources:
                continue
            number = len(self.write_sites)
            self.write_sites.append(str(self.checker.where(op)))
            tid = state.loop_of(op).tid
            indices = list(op.operands[2:])
            with op.location, ir.InsertionPoint(op):
                inside, _, _ = bounds(buffer, indices, False, vector_width(op))
                if inside is None:
                    self._generic_write(op, self.sources[buffer], indices, number, tid)
                else:
                    with b.if_then(inside):  # out of range: the checker reports the access itself
                        self._generic_write(op, self.sources[buffer], indices, number, tid)

    def _generic_write(self, op: ir.Operation, source: _Source, indices, number: int, tid) -> None:
        fences, _ = self.groups.proxy_fence_counts(tid)
        for lane in range(vector_width(op)):
            element = linear(source.buffer, indices, lane)
            self._check_write(op, source, element, tid, "writes it")
            memref.store(_pack(fences, b.index(number), tid), source.written, [element])

    def check_async_write(self, op: ir.Operation, buffer: ir.Value, element: ir.Value, tid: ir.Value,
                          action: str) -> None:
        """An async write (a TMA load issued into `buffer`'s `element`) must not race a store's read."""
        if buffer in self.sources:
            self._check_write(op, self.sources[buffer], element, tid, action)

    def async_write(self, buffer: ir.Value, element: ir.Value) -> None:
        """A TMA load landed in `buffer`'s `element`: written, through the proxy the stores read by."""
        if buffer in self.sources:
            memref.store(_c(ASYNC_PROXY_WRITE), self.sources[buffer].written, [element])

    def _check_write(self, op: ir.Operation, source: _Source, element: ir.Value, tid, action: str) -> None:
        race = (f"data race on shared buffer '{source.name}' element {{index}} in block {{block}}: thread {{thread}} "
                f"{action} at {self.checker.where(op)}")
        reading = memref.load(source.reading, [element])
        with b.if_then(_some(reading)):
            self._on_op(self.store_sites, _number(reading), lambda site: (
                f"{race} while tile.tma_store at {site} by thread {{other}} may still read it (no "
                "tile.bulk_wait_group_read of that thread has retired the bulk group holding the store: a missing "
                "commit or wait, or a pending count too high?)"), tid, _thread(reading), element)
        released = memref.load(source.released, [element])
        same_interval = arith.cmpi(b.CMPI.eq, _high(released), self._epoch())
        other = arith.cmpi(b.CMPI.ne, _thread(released), as_i64(tid))
        with b.if_then(arith.andi(same_interval, other)):
            self._on_op(self.store_sites, _number(released), lambda site: (
                f"{race} in the barrier interval in which thread {{other}}'s tile.bulk_wait_group_read retired "
                f"tile.tma_store at {site} reading it (no gpu.barrier between that wait and this write)"),
                tid, _thread(released), element)

    # -- the ops (after the phase split) -----------------------------------------------------------
    def issue(self, op: ir.Operation, tid: ir.Value) -> None:
        """Store `op` joins the thread's open group (before its box's `read`s)."""
        memref.store(_c(self._store_number(op)), self.open, [tid])

    def read(self, op: ir.Operation, buffer: ir.Value, element: ir.Value, inside: ir.Value, tid: ir.Value) -> None:
        """Store `op` reads `buffer`'s `element` for a box element that is `inside` the tensor."""
        source = self.sources[buffer]
        mark = _pack(memref.load(self.committed, [tid]), b.index(self._store_number(op)), tid)
        memref.store(mark, source.reading, [element])
        with b.if_then(inside):
            self._check_proxy(op, source, element, tid)

    def _store_number(self, op: ir.Operation) -> int:
        return next(k for k, store in enumerate(self.stores) if store == op)

    def _check_proxy(self, op: ir.Operation, source: _Source, element: ir.Value, tid: ir.Value) -> None:
        store = f"tile.tma_store at {self.checker.where(op)} (thread {{thread}} of block {{block}})"
        mark = memref.load(source.written, [element])
        with b.if_then(arith.cmpi(b.CMPI.eq, mark, _c(-1))):
            self._record(f"{store} reads never-written element {{index}} of shared buffer '{source.name}': no "
                         "thread of the block had stored to it", tid, b.index(0), element, weak=True)
        generic = arith.cmpi(b.CMPI.sge, mark, _c(0))
        writer = arith.select(generic, arith.index_cast(ir.IndexType.get(), _thread(mark)), tid)
        fences, fences_before_barrier = self.groups.proxy_fence_counts(writer)
        fenced_before = _high(mark)
        unfenced = arith.andi(generic, arith.cmpi(b.CMPI.sge, fenced_before, fences))
        with b.if_then(unfenced):
            self._on_op(self.write_sites, _number(mark), lambda site: (
                f"{store} reads element {{index}} of shared buffer '{source.name}', which thread {{other}} wrote at "
                f"{site} through the generic proxy with no tile.fence_proxy_async after the write (fence.proxy.async "
                "must order it before the store's async-proxy read)"), tid, writer, element)
        by_other = arith.cmpi(b.CMPI.ne, writer, tid)
        unordered = arith.andi(arith.andi(arith.andi(generic, _not(unfenced)), by_other),
                               arith.cmpi(b.CMPI.sge, fenced_before, fences_before_barrier))
        with b.if_then(unordered):
            self._on_op(self.write_sites, _number(mark), lambda site: (
                f"{store} reads element {{index}} of shared buffer '{source.name}', which thread {{other}} wrote at "
                f"{site} and fenced (tile.fence_proxy_async), but no gpu.barrier came between that fence and this "
                "store"), tid, writer, element)

    def commit(self, op: ir.Operation, tid: ir.Value) -> None:
        committed = memref.load(self.committed, [tid])
        store = memref.load(self.open, [tid])
        with b.if_then(_some(store)):
            memref.store(_pack(committed, store, b.index(0)), self.newest, [tid])
            memref.store(_c(-1), self.open, [tid])
        memref.store(arith.addi(committed, _c(1)), self.committed, [tid])

    def wait(self, op: ir.Operation, tid: ir.Value) -> None:
        """Retire the thread's committed groups but the newest `pending`: their reads are done."""
        pending = ir.IntegerAttr(op.attributes["pending"]).value
        before = memref.load(self.retired, [tid])
        retired = arith.maxsi(before, arith.subi(memref.load(self.committed, [tid]), _c(pending)))
        memref.store(retired, self.retired, [tid])
        with b.if_then(arith.cmpi(b.CMPI.sgt, retired, before)):
            epoch = self._epoch()
            for source in self.sources.values():
                with b.loop_nest([source.size]) as (element,):
                    mark = memref.load(source.reading, [element])
                    mine = arith.andi(_some(mark), arith.cmpi(b.CMPI.eq, _thread(mark), as_i64(tid)))
                    with b.if_then(arith.andi(mine, arith.cmpi(b.CMPI.slt, _high(mark), retired))):
                        memref.store(_c(-1), source.reading, [element])
                        memref.store(_pack(epoch, _number(mark), tid), source.released, [element])

    def check_block_end(self) -> None:
        """At the launch's end (block level): every store committed, every group holding one retired."""
        if not self.active:
            return
        with b.loop_nest([self.n_threads]) as (thread,):
            store = memref.load(self.open, [thread])
            with b.if_then(_some(store)):
                self._on_op(self.store_sites, store, lambda site: (
                    f"block {{block}} ends with tile.tma_store at {site} by thread {{thread}} not committed (no "
                    "tile.bulk_commit_group after it, so no tile.bulk_wait_group_read could retire it)"),
                    thread, b.index(0), b.index(0))
            newest = memref.load(self.newest, [thread])
            unretired = arith.cmpi(b.CMPI.sge, _high(newest), memref.load(self.retired, [thread]))
            with b.if_then(arith.andi(_some(newest), unretired)):
                self._on_op(self.store_sites, _number(newest), lambda site: (
                    f"block {{block}} ends while tile.tma_store at {site} by thread {{thread}} may still read its "
                    "shared tile (no tile.bulk_wait_group_read retired its bulk group: the next block's writes "
                    "would race it)"), thread, b.index(0), b.index(0))
