"""cp.async in the thread-level simulation: copies that land at the wait that retires their group.

Semantics from the PTX ISA (9.7.9.25.3, "cp.async", "cp.async.commit_group", "cp.async.wait_group"),
not from the compiler's pipeline code. Per thread, a `tile.cp_async` joins the thread's open group;
`tile.cp_async_commit` closes it (groups are numbered 0, 1, ... per thread); `tile.cp_async_wait
{pending = N}` completes every group of the thread but the newest N. Rewritten into plain IR
before the block is split into phases:

- a copy reads its source now (the first `src_bytes`; the rest are zeros, and nothing is read for
  them) into a *staging* buffer shaped like the destination, and marks each destination element
  *pending*: `thread << 20 | group`. Marking an element another copy has pending is an error;
- a wait lands, in element order, every pending element of the thread's retired groups: a
  `memref.store` of the staged value into the shared buffer, which the checker instruments like
  any store of that thread at that point (bounds, never-written tracking, the race epochs: a
  reader in another thread needs a barrier after the wait);
- every read and synchronous write of a destination buffer first checks that the element is not
  pending: touching it before a wait retired its copy is a race the hardware would lose
  (`AsyncCopyRace` in the PTX tables' terms), reported with the copying thread.

`reset(...)` gives the buffers to clear at each block start (pending marks, group counters).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from tilemlir.backends.cpu import buffers, checks
from tilemlir.backends.cpu import ir_builders as b
from tilemlir.backends.cpu.access_index import as_i64, bounds, lane, linear, vector_width
from tilemlir.backends.cpu.simulate.phases import thread_id
from tilemlir.dialects.async_copy import cp_async_indices, cp_async_src_bytes
from tilemlir.ir_util import ops_named
from tilemlir.mlir import arith, ir, memref, scf

_GROUP_BITS = 20


def _i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)


@dataclass
class _Target:
    """A shared buffer some cp.async writes: its staged values and pending marks."""

    name: str
    buffer: ir.Value
    staging: ir.Value
    pending: ir.Value


IssueCheck = Callable[[ir.Operation, ir.Value, ir.Value, ir.Value], None]


class AsyncCopies:
    def __init__(self, launch: ir.Operation, function: ir.Operation, checker: checks.Checker, n_threads: int,
                 names: dict[ir.Value, str], on_issue: IssueCheck | None = None):
        self.launch, self.function, self.checker, self.n_threads = launch, function, checker, n_threads
        self.on_issue = on_issue
        self.copies = ops_named(launch, "tile.cp_async")
        self.targets: dict[ir.Value, _Target] = {}
        for op in self.copies:
            buffer = op.operands[0]
            if buffer not in self.targets:
                self.targets[buffer] = self._target(buffer, names.get(buffer, "shared"), op.location)
        self.groups = buffers.allocate_at_entry(function, ir.MemRefType.get([n_threads], _i64()), launch.location)

    def _target(self, buffer: ir.Value, name: str, loc: ir.Location) -> _Target:
        type_ = buffer.type
        staging = buffers.allocate_at_entry(self.function, type_, loc, f"{name}_staged")
        size = 1
        for dim in type_.shape:
            size *= dim
        pending = buffers.allocate_at_entry(self.function, ir.MemRefType.get([size], _i64()), loc)
        return _Target(name, buffer, staging, pending)

    def reset(self) -> list[tuple[ir.Value, int]]:
        """(buffer, value) pairs to fill at every block start."""
        return [(self.groups, 0), *[(t.pending, -1) for t in self.targets.values()]]


    def lower(self) -> None:
        """Rewrite the launch's copies, commits and waits; check the accesses of the targets."""
        accesses = [op for op in ops_named(self.launch, *checks.ACCESSES) if _buffer_of(op) in self.targets]
        for op in accesses:
            with op.location, ir.InsertionPoint(op):
                self._check_not_pending(op)
        for op in ops_named(self.launch, "tile.ldmatrix"):
            if op.operands[0] in self.targets:
                with op.location, ir.InsertionPoint(op):
                    self._check_ldmatrix_row(op)
        for op in self.copies:
            with op.location, ir.InsertionPoint(op):
                self._copy(op)
            op.erase()
        for op in ops_named(self.launch, "tile.cp_async_commit"):
            with op.location, ir.InsertionPoint(op):
                tid = thread_id()
                count = memref.load(self.groups, [tid])
                memref.store(arith.addi(count, b.constant(_i64(), 1)), self.groups, [tid])
            op.erase()
        for op in ops_named(self.launch, "tile.cp_async_wait"):
            with op.location, ir.InsertionPoint(op):
                self._wait(op.attributes["pending"].value)
            op.erase()

    # -- the three ops -----------------------------------------------------------------------
    def _copy(self, op: ir.Operation) -> None:
        target = self.targets[op.operands[0]]
        src = op.operands[1]
        dst_indices, src_indices = cp_async_indices(op)
        element = target.buffer.type.element_type
        count = op.attributes["bytes"].value // max(1, b.bitwidth(element) // 8)
        src_bytes = cp_async_src_bytes(op)
        tid = thread_id()
        mark = arith.ori(arith.shli(as_i64(tid), b.constant(_i64(), _GROUP_BITS)), memref.load(self.groups, [tid]))
        inside, dim, bad_index = bounds(target.buffer, dst_indices, False, count)
        if inside is None:
            self._stage(op, target, src, src_indices, dst_indices, count, src_bytes, element, tid, mark)
            return
        in_range = scf.IfOp(inside, has_else=True)
        with ir.InsertionPoint(in_range.then_block):
            self._stage(op, target, src, src_indices, dst_indices, count, src_bytes, element, tid, mark)
            scf.YieldOp([])
        with ir.InsertionPoint(in_range.else_block):
            template = (f"out-of-range cp.async into shared buffer '{target.name}' at {self.checker.where(op)}: "
                        "thread {thread} of block {block} used index {index} on dim {other}")
            self.checker.record(self.checker.site(template), tid, dim, bad_index)
            scf.YieldOp([])

    def _stage(self, op, target, src, src_indices, dst_indices, count, src_bytes, element, tid, mark) -> None:
        for number in range(count):
            value = self._source_lane(src, src_indices, number, src_bytes, element)
            memref.store(value, target.staging, lane(dst_indices, number))
            element_index = linear(target.buffer, dst_indices, number)
            if self.on_issue is not None:
                self.on_issue(op, target.buffer, element_index, tid)
            previous = memref.load(target.pending, [element_index])
            with b.if_then(arith.cmpi(b.CMPI.ne, previous, b.constant(_i64(), -1))):
                self.checker.record(self.checker.site(self._race(op, target, "copies into", "copy")), tid,
                                    _thread_of(previous), element_index)
            memref.store(mark, target.pending, [element_index])

    @staticmethod
    def _source_lane(src, src_indices, number: int, src_bytes, element: ir.Type) -> ir.Value:
        """Lane `number` of the copy's source: read when within `src_bytes`, else zero (nothing read)."""
        if src_bytes is None:
            return memref.load(src, lane(src_indices, number))
        element_bytes = max(1, b.bitwidth(element) // 8)
        within = arith.cmpi(b.CMPI.ult, b.index(number * element_bytes), src_bytes)
        return b.if_else_value(within, element, lambda: memref.load(src, lane(src_indices, number)),
                               lambda: b.constant(element, 0))

    def _wait(self, pending_groups: int) -> None:
        tid = thread_id()
        retired = arith.subi(memref.load(self.groups, [tid]), b.constant(_i64(), pending_groups))
        for target in self.targets.values():
            shape = list(target.buffer.type.shape)
            with b.loop_nest(shape) as indices:
                element_index = linear(target.buffer, list(indices), 0)
                mark = memref.load(target.pending, [element_index])
                mine = arith.cmpi(b.CMPI.eq, arith.shrsi(mark, b.constant(_i64(), _GROUP_BITS)), as_i64(tid))
                group = arith.andi(mark, b.constant(_i64(), (1 << _GROUP_BITS) - 1))
                lands = arith.andi(arith.andi(mine, arith.cmpi(b.CMPI.ne, mark, b.constant(_i64(), -1))),
                                   arith.cmpi(b.CMPI.slt, group, retired))
                with b.if_then(lands):
                    memref.store(memref.load(target.staging, list(indices)), target.buffer, list(indices))
                    memref.store(b.constant(_i64(), -1), target.pending, [element_index])

    # -- touching a pending element --------------------------------------------------------------
    def _check_not_pending(self, op: ir.Operation) -> None:
        reads = op.name.endswith("load")
        indices = list(op.operands[1:] if reads else op.operands[2:])
        self._check_elements(op, self.targets[_buffer_of(op)], indices, vector_width(op), reads)

    def _check_ldmatrix_row(self, op: ir.Operation) -> None:
        """An ldmatrix lane reads the 16-byte row its indices start (the collective reads it for its matrix)."""
        target = self.targets[op.operands[0]]
        width = 16 * 8 // ir.MemRefType(target.buffer.type).element_type.width
        self._check_elements(op, target, list(op.operands[2:]), width, True)

    def _check_elements(self, op: ir.Operation, target: _Target, indices, width: int, reads: bool) -> None:
        tid = thread_id()
        inside, _, _ = bounds(target.buffer, indices, False, width)
        if inside is None:
            self._pending_lanes(op, target, indices, width, reads, tid)
            return
        with b.if_then(inside):  # out of range: the checker reports the access itself
            self._pending_lanes(op, target, indices, width, reads, tid)

    def _pending_lanes(self, op, target: _Target, indices, width: int, reads: bool, tid) -> None:
        for number in range(width):
            element_index = linear(target.buffer, indices, number)
            mark = memref.load(target.pending, [element_index])
            with b.if_then(arith.cmpi(b.CMPI.ne, mark, b.constant(_i64(), -1))):
                action = "reads" if reads else "writes"
                self.checker.record(self.checker.site(self._race(op, target, action, "access")), tid,
                                    _thread_of(mark), element_index)

    def _race(self, op: ir.Operation, target: _Target, action: str, what: str) -> str:
        return (f"data race on shared buffer '{target.name}' element {{index}} in block {{block}}: thread {{thread}} "
                f"{action} it at {self.checker.where(op)} while the cp.async of thread {{other}} into it has not "
                f"landed (no tile.cp_async_wait of that thread retired its group before this {what}: a wrong "
                "pending count?)")


def _buffer_of(op: ir.Operation) -> ir.Value:
    return op.operands[0] if op.name.endswith("load") else op.operands[1]


def _thread_of(mark: ir.Value) -> ir.Value:
    return arith.shrsi(mark, b.constant(_i64(), _GROUP_BITS))


def fill(buffer: ir.Value, value: int) -> None:
    """Set every element of an i64 `buffer` to `value` at the current insertion point."""
    constant = b.constant(_i64(), value)
    with b.loop_nest(list(buffer.type.shape)) as indices:
        memref.store(constant, buffer, indices)


@dataclass
class Lowered:
    """What the rest of the simulation needs of the lowered copies: the buffers to reset at each block
    start, and each target buffer's pending marks (`thread << 20 | group`, -1: none)."""

    reset: list[tuple[ir.Value, int]] = field(default_factory=list)
    pending: dict[ir.Value, ir.Value] = field(default_factory=dict)


def lower_async_copies(launch: ir.Operation, function: ir.Operation, checker: checks.Checker, n_threads: int,
                       names: dict[ir.Value, str], on_issue: IssueCheck | None = None) -> Lowered:
    """Rewrite the launch's cp.async ops (`AsyncCopies.lower`; `on_issue(op, buffer, element, thread)`
    builds extra checks of each element a copy is issued into). Nothing when the launch has no
    cp.async op: its IR stays as it was."""
    if not ops_named(launch, "tile.cp_async", "tile.cp_async_commit", "tile.cp_async_wait"):
        return Lowered()
    copies = AsyncCopies(launch, function, checker, n_threads, names, on_issue)
    copies.lower()
    return Lowered(copies.reset(), {buffer: target.pending for buffer, target in copies.targets.items()})
