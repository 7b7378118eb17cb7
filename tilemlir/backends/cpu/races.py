"""Data-race checks of shared memory in the thread-level simulation.

Every barrier interval (*epoch*) gets a number. Each shared element has a
shadow of its last writer and of its readers in the current epoch
(`epoch * 4096 + thread`, thread 4095 meaning several). A read of an
element another thread wrote in the same epoch, a write of an element
another thread wrote or read in the same epoch, is a race, except that
writing the value already there is harmless (replicated fragment elements
are written by all their holders). Atomic adds (`tile.atomic_add` into a
shared buffer, lowered to a load and a store marked `tile.sim_atomic`) have a
third shadow, of their adders: adds of several threads in one epoch do not
race with each other, but a plain read or write of the element by another
thread in that epoch races with them. The checker (`checks.Checker`) keeps the
epoch and records the errors.
"""

from __future__ import annotations

from tilemlir.backends.cpu import buffers
from tilemlir.backends.cpu import ir_builders as b
from tilemlir.backends.cpu.access_index import as_i64, lane, linear
from tilemlir.mlir import arith, ir, memref

SEVERAL = 4095
ATOMIC_ATTR = "tile.sim_atomic"  # on the load and store of a lowered tile.atomic_add into a shared buffer
_SHIFT = 12


def _i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)


class RaceShadows:
    """The writer and reader marks of one shared buffer's elements (-1: none yet)."""

    def __init__(self, function: ir.Operation, size: int, loc: ir.Location):
        self.writes, self.reads, self.atomics = (self._shadow(function, size, loc) for _ in range(3))

    @staticmethod
    def _shadow(function: ir.Operation, size: int, loc: ir.Location) -> ir.Value:
        shadow = buffers.allocate_at_entry(function, ir.MemRefType.get([size], _i64()), loc)
        with loc, ir.InsertionPoint.after(shadow.owner):
            minus_one = b.constant(_i64(), -1)
            with b.loop_nest([size]) as (i,):
                memref.store(minus_one, shadow, [i])
        return shadow

    def check_read(self, checker: "checks.Checker", op: ir.Operation, buffer: "checks.Buffer", element: ir.Value,
                   tid: ir.Value) -> None:
        epoch, me = _epoch_and_me(checker, tid)
        atomic = ATOMIC_ATTR in op.attributes
        writer = memref.load(self.writes, [element])
        with b.if_then(_other_in_epoch(writer, epoch, tid)):
            checker.record(checker.site(_race(checker, op, buffer, _adds(atomic, "reads"), "wrote it")), tid,
                           _thread_of(writer), element)
        if atomic:  # the read of an atomic add: checked against plain writes only, and not a plain read
            return
        adder = memref.load(self.atomics, [element])
        with b.if_then(_other_in_epoch(adder, epoch, tid)):
            checker.record(checker.site(_race(checker, op, buffer, "reads", "added to it atomically")), tid,
                           _thread_of(adder), element)
        reader = memref.load(self.reads, [element])
        several = b.constant(_i64(), SEVERAL)
        marks = arith.select(_other_in_epoch(reader, epoch, tid), arith.ori(_epoch_base(epoch), several), me)
        memref.store(marks, self.reads, [element])

    def check_write(self, checker: "checks.Checker", op: ir.Operation, buffer: "checks.Buffer", indices: list[ir.Value],
                    lane_number: int, new: ir.Value, tid: ir.Value) -> None:
        element = linear(buffer.value, indices, lane_number)
        old = memref.load(buffer.value, lane(indices, lane_number))
        differs = arith.xori(_same_bits(old, new), b.constant(ir.IntegerType.get_signless(1), 1))
        epoch, me = _epoch_and_me(checker, tid)
        atomic = ATOMIC_ATTR in op.attributes
        if not atomic:
            writer = memref.load(self.writes, [element])
            with b.if_then(arith.andi(_other_in_epoch(writer, epoch, tid), differs)):
                checker.record(checker.site(_race(checker, op, buffer, "writes", "wrote a different value to it")),
                               tid, _thread_of(writer), element)
            adder = memref.load(self.atomics, [element])
            with b.if_then(_other_in_epoch(adder, epoch, tid)):
                checker.record(checker.site(_race(checker, op, buffer, "writes", "added to it atomically")), tid,
                               _thread_of(adder), element)
        reader = memref.load(self.reads, [element])
        with b.if_then(arith.andi(_other_in_epoch(reader, epoch, tid), differs)):
            checker.record(checker.site(_race(checker, op, buffer, _adds(atomic, "overwrites"), "read it")), tid,
                           _thread_of(reader), element)
        if not atomic:
            memref.store(me, self.writes, [element])
            return
        # Atomic adds of several threads in one epoch are unordered but do not race: marks of their own.
        adder = memref.load(self.atomics, [element])
        several = b.constant(_i64(), SEVERAL)
        marks = arith.select(_other_in_epoch(adder, epoch, tid), arith.ori(_epoch_base(epoch), several), me)
        memref.store(marks, self.atomics, [element])


def _adds(atomic: bool, action: str) -> str:
    return "adds atomically to" if atomic else action


def _epoch_and_me(checker: "checks.Checker", tid: ir.Value):
    epoch = memref.load(checker.state, [b.index(0)])
    return epoch, arith.ori(_epoch_base(epoch), as_i64(tid))


def _race(checker: "checks.Checker", op: ir.Operation, buffer: "checks.Buffer", action: str, earlier: str) -> str:
    return (f"data race on shared buffer '{buffer.name}' element {{index}} in block {{block}}: thread {{thread}} "
            f"{action} it at {checker.where(op)}, but {{other_thread}} {earlier} since the last gpu.barrier "
            "(a missing gpu.barrier?)")


def _epoch_base(epoch: ir.Value) -> ir.Value:
    return arith.shli(epoch, b.constant(_i64(), _SHIFT))


def _thread_of(mark: ir.Value) -> ir.Value:
    return arith.andi(mark, b.constant(_i64(), (1 << _SHIFT) - 1))


def _other_in_epoch(mark: ir.Value, epoch: ir.Value, tid: ir.Value) -> ir.Value:
    same_epoch = arith.cmpi(b.CMPI.eq, arith.shrsi(mark, b.constant(_i64(), _SHIFT)), epoch)
    other = arith.cmpi(b.CMPI.ne, _thread_of(mark), as_i64(tid))
    return arith.andi(same_epoch, other)


def _same_bits(a: ir.Value, c: ir.Value) -> ir.Value:
    if isinstance(a.type, ir.FloatType):
        int_type = ir.IntegerType.get_signless(a.type.width)
        a, c = arith.bitcast(int_type, a), arith.bitcast(int_type, c)
    return arith.cmpi(b.CMPI.eq, a, c)
