"""Run-time checks of the simulated threads: out-of-range accesses and shared-memory races.

Vector accesses that carry an `alignment` must be that aligned (from a base
aligned that much, which the runtime checks for global tensors).

Every error found at run time is counted in the kernel's status array (an
extra `memref<8xi64>` argument the simulator appends), and the first one is
described there: [count, site, thread, other, block, index, 0, 0]. A site
is a message template kept in the function's `tile.sim_sites` attribute;
`describe_status` turns the array into the message.

Races: every barrier interval (*epoch*) gets a number. Each shared element
has a shadow of its last writer and of its readers in the current epoch
(`epoch * 4096 + thread`, thread 4095 meaning several). A read of an
element another thread wrote in the same epoch, a write of an element
another thread wrote or read in the same epoch, is a race, except that
writing the value already there is harmless (replicated fragment elements
are written by all their holders).
"""

from __future__ import annotations

import math

from tilemlir.backends.cpu import buffers
from tilemlir.backends.cpu import ir_builders as b
from tilemlir.backends.cpu.tile_ops import recorded_padding
from tilemlir.mlir import arith, ir, memref, scf, vector
from tilemlir.passes import diag

STATUS_WORDS = 8
SITES_ATTR = "tile.sim_sites"
SEVERAL = 4095
_SHIFT = 12
ACCESSES = ("memref.load", "memref.store", "vector.load", "vector.store")


def describe_status(status, sites: list[str]) -> str | None:
    """The message of the first run-time error in `status`, or None when there was none."""
    count = int(status[0])
    if count == 0:
        return None
    other = int(status[3])
    message = sites[int(status[1])].format(
        thread=int(status[2]), other=other, block=int(status[4]), index=int(status[5]),
        other_thread="several threads" if other == SEVERAL else f"thread {other}",
    )
    more = f" ({count - 1} more error(s) after this one)" if count > 1 else ""
    return message + more


def _i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)


def _as_i64(value: ir.Value) -> ir.Value:
    return arith.index_cast(_i64(), value) if isinstance(value.type, ir.IndexType) else value


class Buffer:
    """An instrumented buffer: kind "global", "shared" or "local" (expanded per thread)."""

    def __init__(self, kind: str, name: str, value: ir.Value, shadows: tuple[ir.Value, ir.Value] | None = None):
        self.kind, self.name, self.value, self.shadows = kind, name, value, shadows


class Checker:
    def __init__(self, function: ir.Operation, status: ir.Value, pad_out_of_range: bool, check_races: bool):
        self.status = status
        self.pad_out_of_range = pad_out_of_range
        self.check_races = check_races
        self.sites: list[str] = []
        self.buffers: dict[ir.Value, Buffer] = {}
        loc = function.location
        self.state = buffers.allocate_at_entry(function, ir.MemRefType.get([2], _i64()), loc)  # [epoch, block]
        with loc, ir.InsertionPoint.after(self.state.owner):
            memref.store(b.constant(_i64(), 0), self.state, [b.index(0)])
        self.function = function

    def add_shared(self, name: str, value: ir.Value) -> None:
        if not self.check_races:
            self.buffers[value] = Buffer("shared", name, value)
            return
        size = math.prod(value.type.shape)
        shadows = []
        for _ in range(2):
            shadow = buffers.allocate_at_entry(self.function, ir.MemRefType.get([size], _i64()), value.owner.location)
            with value.owner.location, ir.InsertionPoint.after(shadow.owner):
                minus_one = b.constant(_i64(), -1)
                with b.loop_nest([size]) as (i,):
                    memref.store(minus_one, shadow, [i])
            shadows.append(shadow)
        self.buffers[value] = Buffer("shared", name, value, tuple(shadows))

    def add(self, kind: str, name: str, value: ir.Value) -> None:
        self.buffers[value] = Buffer(kind, name, value)

    # -- block-level events ------------------------------------------------------------
    def start_block(self, block_linear: ir.Value) -> None:
        self.next_epoch()
        memref.store(_as_i64(block_linear), self.state, [b.index(1)])

    def next_epoch(self) -> None:
        epoch = memref.load(self.state, [b.index(0)])
        memref.store(arith.addi(epoch, b.constant(_i64(), 1)), self.state, [b.index(0)])

    # -- recording -------------------------------------------------------------------------
    def site(self, template: str) -> int:
        if template not in self.sites:
            self.sites.append(template)
        return self.sites.index(template)

    def record(self, site: int, thread: ir.Value, other: ir.Value, index: ir.Value) -> None:
        count = memref.load(self.status, [b.index(0)])
        with b.if_then(arith.cmpi(b.CMPI.eq, count, b.constant(_i64(), 0))):
            block = memref.load(self.state, [b.index(1)])
            words = [b.constant(_i64(), site), _as_i64(thread), _as_i64(other), block, _as_i64(index)]
            for slot, word in enumerate(words, start=1):
                memref.store(word, self.status, [b.index(slot)])
        memref.store(arith.addi(count, b.constant(_i64(), 1)), self.status, [b.index(0)])

    # -- accesses ------------------------------------------------------------------------------
    def instrument(self, op: ir.Operation, tid: ir.Value) -> None:
        ref = op.operands[0] if op.name.endswith("load") else op.operands[1]
        buffer = self.buffers.get(ref)
        if buffer is None:
            return
        indices = list(op.operands[1:] if op.name.endswith("load") else op.operands[2:])
        checked = indices[1:] if buffer.kind == "local" else indices
        width = _vector_width(op)
        with op.location, ir.InsertionPoint(op):
            inside, dim, bad_index = _bounds(ref, indices, buffer.kind == "local", width)
        if op.name.endswith("load"):
            self._guard_load(op, buffer, inside, dim, bad_index, tid, checked, width)
        else:
            self._guard_store(op, buffer, inside, dim, bad_index, tid, checked, width)
        if "alignment" in op.attributes:
            if buffer.kind != "local":
                with op.location, ir.InsertionPoint(op):
                    self._check_alignment(op, buffer, indices, tid)
            # Checked above against the GPU's rule; on the host the access must not fault on
            # a misaligned address (LLVM would emit aligned vector instructions).
            del op.attributes["alignment"]

    def _check_alignment(self, op: ir.Operation, buffer: Buffer, indices: list[ir.Value], tid: ir.Value) -> None:
        """A vector access must be `alignment`-aligned, counted from a base aligned that much
        (the runtime checks the base; the vectorizer must prove the offset)."""
        alignment = ir.IntegerAttr(op.attributes["alignment"]).value
        element_bytes = max(1, b.bitwidth(buffer.value.type.element_type) // 8)
        offset = _linear_dynamic(buffer.value, indices)
        misplaced = arith.remui(arith.muli(offset, b.index(element_bytes)), b.index(alignment))
        with b.if_then(arith.cmpi(b.CMPI.ne, misplaced, b.index(0))):
            loc = diag.source_location(op) or op.location
            kind = "global tensor" if buffer.kind == "global" else f"{buffer.kind} buffer"
            template = (f"misaligned vector access of {kind} '{buffer.name}' at {loc}: thread {{thread}} of block "
                        f"{{block}} accessed element {{index}}, {{other}} bytes past a {alignment}-byte boundary")
            self.record(self.site(template), tid, misplaced, offset)

    def _where(self, op: ir.Operation, buffer: Buffer, access: str) -> str:
        loc = diag.source_location(op) or op.location
        kind = "global tensor" if buffer.kind == "global" else f"{buffer.kind} buffer"
        return f"out-of-range {access} of {kind} '{buffer.name}' at {loc}: " + \
            "thread {thread} of block {block} used index {index} on dim {other}"

    def _guard_load(self, op, buffer, inside, dim, bad_index, tid, indices, width) -> None:
        result = op.results[0]
        with op.location, ir.InsertionPoint(op):
            guard = scf.IfOp(inside, [result.type], has_else=True)
            with ir.InsertionPoint(guard.then_block):
                then_yield = scf.YieldOp([result])
            with ir.InsertionPoint(guard.else_block):
                if not (self.pad_out_of_range and buffer.kind == "global"):
                    self.record(self.site(self._where(op, buffer, "read")), tid, dim, bad_index)
                scf.YieldOp([_fallback(op, result.type, self.pad_out_of_range and buffer.kind == "global")])
        op.move_before(then_yield)
        result.replace_all_uses_except(guard.results[0], then_yield.operation)
        if buffer.shadows is not None:
            with op.location, ir.InsertionPoint(then_yield):
                for lane in range(width):
                    self._check_read(op, buffer, _linear(buffer.value, indices, lane), tid)

    def _guard_store(self, op, buffer, inside, dim, bad_index, tid, indices, width) -> None:
        with op.location, ir.InsertionPoint(op):
            guard = scf.IfOp(inside, has_else=True)
            with ir.InsertionPoint(guard.then_block):
                then_yield = scf.YieldOp([])
            with ir.InsertionPoint(guard.else_block):
                if not (self.pad_out_of_range and buffer.kind == "global"):
                    self.record(self.site(self._where(op, buffer, "write")), tid, dim, bad_index)
                scf.YieldOp([])
            if buffer.shadows is not None:
                with ir.InsertionPoint(then_yield):
                    for lane in range(width):
                        new = op.operands[0] if width == 1 and not _is_vector(op) else \
                            vector.extract(op.operands[0], [], [lane])
                        self._check_write(op, buffer, indices, lane, new, tid)
        op.move_before(then_yield)

    def _check_read(self, op, buffer, element, tid) -> None:
        writes, reads = buffer.shadows
        epoch, me = self._epoch_and_me(tid)
        writer = memref.load(writes, [element])
        with b.if_then(_other_in_epoch(writer, epoch, tid)):
            self.record(self.site(self._race(op, buffer, "reads", "wrote it")), tid, _thread_of(writer), element)
        reader = memref.load(reads, [element])
        several = b.constant(_i64(), SEVERAL)
        marks = arith.select(_other_in_epoch(reader, epoch, tid), arith.ori(_epoch_base(epoch), several), me)
        memref.store(marks, reads, [element])

    def _check_write(self, op, buffer, indices, lane, new, tid) -> None:
        writes, reads = buffer.shadows
        element = _linear(buffer.value, indices, lane)
        lane_indices = indices[:-1] + [arith.addi(indices[-1], b.index(lane))] if indices else indices
        old = memref.load(buffer.value, lane_indices)
        differs = arith.xori(_same_bits(old, new), b.constant(ir.IntegerType.get_signless(1), 1))
        epoch, me = self._epoch_and_me(tid)
        writer = memref.load(writes, [element])
        with b.if_then(arith.andi(_other_in_epoch(writer, epoch, tid), differs)):
            self.record(self.site(self._race(op, buffer, "writes", "wrote a different value to it")), tid,
                        _thread_of(writer), element)
        reader = memref.load(reads, [element])
        with b.if_then(arith.andi(_other_in_epoch(reader, epoch, tid), differs)):
            self.record(self.site(self._race(op, buffer, "overwrites", "read it")), tid, _thread_of(reader), element)
        memref.store(me, writes, [element])

    def _epoch_and_me(self, tid):
        epoch = memref.load(self.state, [b.index(0)])
        return epoch, arith.ori(_epoch_base(epoch), _as_i64(tid))

    def _race(self, op, buffer, action: str, earlier: str) -> str:
        loc = diag.source_location(op) or op.location
        return (f"data race on shared buffer '{buffer.name}' element {{index}} in block {{block}}: thread {{thread}} "
                f"{action} it at {loc}, but {{other_thread}} {earlier} since the last gpu.barrier "
                "(a missing gpu.barrier?)")


def _is_vector(op: ir.Operation) -> bool:
    return op.name.startswith("vector.")


def _vector_width(op: ir.Operation) -> int:
    if not _is_vector(op):
        return 1
    type_ = op.results[0].type if op.name == "vector.load" else op.operands[0].type
    if type_.rank != 1:
        raise diag.error(op, f"cannot simulate {op.name} of a {type_}: only 1-D vectors are supported")
    return type_.shape[0]


def _bounds(ref: ir.Value, indices: list[ir.Value], per_thread: bool, width: int):
    """(all in range, first bad dim, its index) of an access of `width` elements along the last dim."""
    first = 1 if per_thread else 0
    oks, dims, values = [], [], []
    for d in range(first, len(indices)):
        size = b.memref_dim(ref, d)
        idx = indices[d]
        if d == len(indices) - 1 and width > 1:
            size = arith.subi(size, b.index(width - 1))
        oks.append(b.index_in_range(idx, size))
        dims.append(d - first)
        values.append(idx)
    if not oks:
        return b.constant(ir.IntegerType.get_signless(1), 1), b.index(0), b.index(0)
    dim, value = b.index(dims[-1]), values[-1]
    for ok, d, v in reversed(list(zip(oks, dims, values))[:-1]):
        dim = arith.select(ok, dim, b.index(d))
        value = arith.select(ok, value, v)
    return b.all_true(oks), dim, value


def _linear(ref: ir.Value, indices: list[ir.Value], lane: int) -> ir.Value:
    shape = list(ref.type.shape)
    linear = b.index(lane)
    stride = 1
    for d in range(len(shape) - 1, -1, -1):
        linear = arith.addi(linear, arith.muli(indices[d], b.index(stride)))
        stride *= shape[d]
    return linear


def _linear_dynamic(ref: ir.Value, indices: list[ir.Value]) -> ir.Value:
    """Row-major element offset of `indices` in `ref` (dims read at run time where dynamic)."""
    linear, stride = b.index(0), b.index(1)
    for d in range(len(indices) - 1, -1, -1):
        linear = arith.addi(linear, arith.muli(indices[d], stride))
        stride = arith.muli(stride, b.memref_dim(ref, d))
    return linear


def _epoch_base(epoch: ir.Value) -> ir.Value:
    return arith.shli(epoch, b.constant(_i64(), _SHIFT))


def _thread_of(mark: ir.Value) -> ir.Value:
    return arith.andi(mark, b.constant(_i64(), (1 << _SHIFT) - 1))


def _other_in_epoch(mark: ir.Value, epoch: ir.Value, tid: ir.Value) -> ir.Value:
    same_epoch = arith.cmpi(b.CMPI.eq, arith.shrsi(mark, b.constant(_i64(), _SHIFT)), epoch)
    other = arith.cmpi(b.CMPI.ne, _thread_of(mark), _as_i64(tid))
    return arith.andi(same_epoch, other)


def _same_bits(a: ir.Value, c: ir.Value) -> ir.Value:
    if isinstance(a.type, ir.FloatType):
        int_type = ir.IntegerType.get_signless(a.type.width)
        a, c = arith.bitcast(int_type, a), arith.bitcast(int_type, c)
    return arith.cmpi(b.CMPI.eq, a, c)


def _fallback(op: ir.Operation, type_: ir.Type, padded: bool) -> ir.Value:
    """What an out-of-range load yields: its `tile.pad` (pad mode) or poison (NaN / 0)."""
    if padded:
        return b.constant(type_, recorded_padding(op))
    return b.constant(type_, math.nan if isinstance(b.element_type(type_), ir.FloatType) else 0)
