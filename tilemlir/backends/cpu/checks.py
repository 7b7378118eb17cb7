"""Run-time checks of CPU runs: out-of-range accesses, reads of never-written on-chip elements,
shared-memory races, misaligned vector accesses.

Both levels use them. `simulate-threads` checks every global, shared and
local access of the simulated threads and races on shared memory;
`lower-tile-to-loops` checks every access to an on-chip buffer (shared,
fragment, local), whose out-of-range index would otherwise read or write
past a heap buffer. An out-of-range access does not happen: a load yields
poison (NaN or 0), a store is dropped, and the error is recorded.

Never-written elements: each on-chip buffer has a shadow byte per element
(per thread for a thread-level "local" buffer), cleared when a block
starts, set by every store; a load of an element whose byte is clear is an
error. (The buffers are also poisoned at each block start, so the value
read is NaN or 0xA5...) At tile level each load site keeps the lowest
such element index and a count, without a branch, and the block's end
records them: a branch per load kept LLVM from vectorizing the loops,
which then ran 2-3x slower.

Vector accesses that carry an `alignment` must be that aligned (from a base
aligned that much, which the runtime checks for global tensors).

Every error found at run time is counted in the kernel's status array (an
extra `memref<8xi64>` argument appended to the function), and the first
one is described there: [count, site, thread, other, block, index, weak, 0].
A read of a never-written element is a *weak* error: a later error of any
other kind replaces its description (a thread that reads shared memory
before a missing barrier reads a never-written element, and the race found
when its writer runs is the better diagnosis). A site is a message
template kept in the function's `tile.sim_sites` attribute;
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
_WRITTEN_BIT = 62  # tile level: a read element's index, plus 2**62 if it was written
_NONE = 2**63 - 1  # no element read yet
ACCESSES = ("memref.load", "memref.store", "vector.load", "vector.store")


class _Element:
    """A status word that formats as a row-major element index (`{index:4x16}` -> `[2, 5]`)."""

    def __init__(self, linear: int):
        self.linear = linear

    def __format__(self, shape: str) -> str:
        if not shape:
            return str(self.linear)
        coords, rest = [], self.linear
        for size in reversed([int(s) for s in shape.split("x")]):
            coords.append(rest % size)
            rest //= size
        return "[" + ", ".join(str(c) for c in reversed(coords)) + "]"


def describe_status(status, sites: list[str]) -> str | None:
    """The message of the first run-time error in `status`, or None when there was none."""
    count = int(status[0])
    if count == 0:
        return None
    other = int(status[3])
    message = sites[int(status[1])].format(
        thread=int(status[2]), other=other, block=int(status[4]), index=_Element(int(status[5])),
        other_thread="several threads" if other == SEVERAL else f"thread {other}",
    )
    more = f" ({count - 1} more error(s) after this one)" if count > 1 else ""
    return message + more


def add_status_argument(function: ir.Operation) -> ir.Value:
    """Append the `memref<STATUS_WORDS x i64>` status argument to `function` and return it."""
    entry = function.regions[0].blocks[0]
    status_type = ir.MemRefType.get([STATUS_WORDS], _i64())
    status = entry.add_argument(status_type, function.location)
    func_type = ir.TypeAttr(function.attributes["function_type"]).value
    function.attributes["function_type"] = ir.TypeAttr.get(
        ir.FunctionType.get([*func_type.inputs, status_type], func_type.results))
    return status


def _i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)


def _i8() -> ir.Type:
    return ir.IntegerType.get_signless(8)


def _as_i64(value: ir.Value) -> ir.Value:
    return arith.index_cast(_i64(), value) if isinstance(value.type, ir.IndexType) else value


class Buffer:
    """An instrumented buffer: kind "global", "shared", "fragment" or "local"; `per_thread`: its
    first index is the simulated thread's; `written`: its never-written shadow (on-chip buffers);
    `shadows`: its race shadows (shared buffers at thread level)."""

    def __init__(self, kind: str, name: str, value: ir.Value, per_thread: bool = False,
                 written: ir.Value | None = None, shadows: tuple[ir.Value, ir.Value] | None = None):
        self.kind, self.name, self.value = kind, name, value
        self.per_thread, self.written, self.shadows = per_thread, written, shadows

    @property
    def shape(self) -> list[int]:
        """The shape one thread (or the block) sees."""
        shape = list(self.value.type.shape)
        return shape[1:] if self.per_thread else shape

    def described(self) -> str:
        if self.kind == "global":
            return f"global tensor '{self.name}'"
        return f"{self.kind} buffer '{self.name}' ({'x'.join(str(s) for s in self.shape) or 'scalar'})"


class Checker:
    """Instruments one function. `threads`: the code is the thread level's, one simulated thread at a
    time (messages name the thread; shared buffers can race); else the tile level's, one block at a time."""

    def __init__(self, function: ir.Operation, status: ir.Value, pad_out_of_range: bool = False,
                 check_races: bool = False, threads: bool = True):
        self.status = status
        self.pad_out_of_range = pad_out_of_range
        self.check_races = check_races and threads
        self.threads = threads
        self.sites: list[str] = []
        self.buffers: dict[ir.Value, Buffer] = {}
        # tile level: site -> (its lowest never-written index read, how many such reads) this block
        self._unwritten_reads: dict[int, tuple[ir.Value, ir.Value]] = {}
        loc = function.location
        self.state = buffers.allocate_at_entry(function, ir.MemRefType.get([2], _i64()), loc)  # [epoch, block]
        with loc, ir.InsertionPoint.after(self.state.owner):
            memref.store(b.constant(_i64(), 0), self.state, [b.index(0)])
        self.function = function

    def add_global(self, name: str, value: ir.Value) -> None:
        self.buffers[value] = Buffer("global", name, value)

    def add_on_chip(self, kind: str, name: str, value: ir.Value, per_thread: bool = False) -> None:
        """Register on-chip buffer `value` (a heap buffer at the function entry): it gets its
        never-written shadow, and race shadows when it is shared and races are checked."""
        loc = value.owner.location
        written = buffers.allocate_at_entry(self.function, ir.MemRefType.get(list(value.type.shape), _i8()), loc)
        shadows = None
        if kind == "shared" and self.check_races:
            size = math.prod(value.type.shape)
            shadows = tuple(self._race_shadow(size, loc) for _ in range(2))
        self.buffers[value] = Buffer(kind, name, value, per_thread, written, shadows)

    def _race_shadow(self, size: int, loc: ir.Location) -> ir.Value:
        shadow = buffers.allocate_at_entry(self.function, ir.MemRefType.get([size], _i64()), loc)
        with loc, ir.InsertionPoint.after(shadow.owner):
            minus_one = b.constant(_i64(), -1)
            with b.loop_nest([size]) as (i,):
                memref.store(minus_one, shadow, [i])
        return shadow

    # -- block-level events ------------------------------------------------------------
    def start_block(self, block_linear: ir.Value) -> None:
        """At a block's start: a new epoch, the block's number, every element unwritten."""
        self.next_epoch()
        memref.store(_as_i64(block_linear), self.state, [b.index(1)])
        zero = b.constant(_i8(), 0)
        for buffer in self.buffers.values():
            if buffer.written is not None:
                with b.loop_nest(list(buffer.written.type.shape)) as ivs:
                    memref.store(zero, buffer.written, ivs)

    def next_epoch(self) -> None:
        epoch = memref.load(self.state, [b.index(0)])
        memref.store(arith.addi(epoch, b.constant(_i64(), 1)), self.state, [b.index(0)])

    # -- recording -------------------------------------------------------------------------
    def site(self, template: str) -> int:
        if template not in self.sites:
            self.sites.append(template)
        return self.sites.index(template)

    def record(self, site: int, thread: ir.Value | None, other: ir.Value, index: ir.Value, weak: bool = False,
               times: ir.Value | None = None) -> None:
        """Count an error (`times` of them); describe it if it is the first, or the first was weak
        and it is not."""
        count = memref.load(self.status, [b.index(0)])
        describe = arith.cmpi(b.CMPI.eq, count, b.constant(_i64(), 0))
        if not weak:
            first_weak = arith.cmpi(b.CMPI.ne, memref.load(self.status, [b.index(6)]), b.constant(_i64(), 0))
            describe = arith.ori(describe, first_weak)
        with b.if_then(describe):
            block = memref.load(self.state, [b.index(1)])
            thread_word = b.constant(_i64(), 0) if thread is None else _as_i64(thread)
            words = [b.constant(_i64(), site), thread_word, _as_i64(other), block, _as_i64(index),
                     b.constant(_i64(), int(weak))]
            for slot, word in enumerate(words, start=1):
                memref.store(word, self.status, [b.index(slot)])
        memref.store(arith.addi(count, times or b.constant(_i64(), 1)), self.status, [b.index(0)])

    def _who(self) -> str:
        return "thread {thread} of block {block}" if self.threads else "block {block}"

    # -- accesses ------------------------------------------------------------------------------
    def instrument(self, op: ir.Operation, tid: ir.Value | None = None) -> None:
        """Check access `op` (memref/vector load or store) if its buffer is registered; `tid`: the
        simulated thread (None at tile level)."""
        ref = op.operands[0] if op.name.endswith("load") else op.operands[1]
        buffer = self.buffers.get(ref)
        if buffer is None:
            return
        indices = list(op.operands[1:] if op.name.endswith("load") else op.operands[2:])
        checked = indices[1:] if buffer.per_thread else indices
        width = _vector_width(op)
        with op.location, ir.InsertionPoint(op):
            inside, dim, bad_index = _bounds(ref, indices, buffer.per_thread, width)
        if op.name.endswith("load"):
            self._guard_load(op, buffer, inside, dim, bad_index, tid, indices, width)
        else:
            self._guard_store(op, buffer, inside, dim, bad_index, tid, indices, checked, width)
        if "alignment" in op.attributes:
            if not buffer.per_thread:
                with op.location, ir.InsertionPoint(op):
                    self._check_alignment(op, buffer, indices, tid)
            # Checked above against the GPU's rule; on the host the access must not fault on
            # a misaligned address (LLVM would emit aligned vector instructions).
            del op.attributes["alignment"]

    def _check_alignment(self, op: ir.Operation, buffer: Buffer, indices: list[ir.Value], tid) -> None:
        """A vector access must be `alignment`-aligned, counted from a base aligned that much
        (the runtime checks the base; the vectorizer must prove the offset)."""
        alignment = ir.IntegerAttr(op.attributes["alignment"]).value
        element_bytes = max(1, b.bitwidth(buffer.value.type.element_type) // 8)
        offset = _linear_dynamic(buffer.value, indices)
        misplaced = arith.remui(arith.muli(offset, b.index(element_bytes)), b.index(alignment))
        with b.if_then(arith.cmpi(b.CMPI.ne, misplaced, b.index(0))):
            template = (f"misaligned vector access of {buffer.described()} at {_at(op)}: {self._who()} "
                        f"accessed element {{index}}, {{other}} bytes past a {alignment}-byte boundary")
            self.record(self.site(template), tid, misplaced, offset)

    def _where(self, op: ir.Operation, buffer: Buffer, access: str) -> str:
        return (f"out-of-range {access} of {buffer.described()} at {_at(op)}: {self._who()} used index {{index}} "
                "on dim {other}")

    def _guard_load(self, op, buffer, inside, dim, bad_index, tid, indices, width) -> None:
        result = op.results[0]
        if inside is None:  # in range by construction
            then_point = ir.InsertionPoint.after(op)
        else:
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
            then_point = ir.InsertionPoint(then_yield)
        with op.location, then_point:
            for lane in range(width):
                if buffer.written is not None:
                    self._check_written(op, buffer, _lane(indices, lane), tid)
                if buffer.shadows is not None:
                    self._check_read(op, buffer, _linear(buffer.value, indices, lane), tid)

    def _guard_store(self, op, buffer, inside, dim, bad_index, tid, indices, checked, width) -> None:
        with op.location, ir.InsertionPoint(op):
            if inside is None:  # in range by construction
                then_point = ir.InsertionPoint(op)
            else:
                guard = scf.IfOp(inside, has_else=True)
                with ir.InsertionPoint(guard.then_block):
                    then_yield = scf.YieldOp([])
                with ir.InsertionPoint(guard.else_block):
                    if not (self.pad_out_of_range and buffer.kind == "global"):
                        self.record(self.site(self._where(op, buffer, "write")), tid, dim, bad_index)
                    scf.YieldOp([])
                then_point = ir.InsertionPoint(then_yield)
            with then_point:
                for lane in range(width):
                    if buffer.shadows is not None:
                        new = op.operands[0] if width == 1 and not _is_vector(op) else \
                            vector.extract(op.operands[0], [], [lane])
                        self._check_write(op, buffer, checked, lane, new, tid)
                    if buffer.written is not None:
                        memref.store(b.constant(_i8(), 1), buffer.written, _lane(indices, lane))
        if inside is not None:
            op.move_before(then_yield)

    def _check_written(self, op, buffer: Buffer, indices: list[ir.Value], tid) -> None:
        """Record a read of an element with a clear never-written byte (its row-major index in the
        shape one thread, or the block, sees). At tile level without a branch: the site's lowest
        such index is kept (a min the loop vectorizer can reduce) and recorded when the block ends."""
        written = memref.load(buffer.written, indices)
        element = _as_i64(_linear(buffer.value, indices[1:] if buffer.per_thread else indices, 0, buffer.shape))
        site = self.site(self._never_written(op, buffer))
        if self.threads:
            with b.if_then(arith.cmpi(b.CMPI.eq, written, b.constant(_i8(), 0))):
                self.record(site, tid, b.index(0), element, weak=True)
            return
        if site not in self._unwritten_reads:
            self._unwritten_reads[site] = (self._slot(op.location, _NONE), self._slot(op.location, 0))
        lowest_slot, count_slot = self._unwritten_reads[site]
        # the element's index, past 2**_WRITTEN_BIT if its byte is set, and 1 for an unwritten one:
        # arithmetic, not selects, so that LLVM sees plain integer min and add reductions
        was_written = arith.extui(_i64(), written)
        candidate = arith.addi(element, arith.shli(was_written, b.constant(_i64(), _WRITTEN_BIT)))
        memref.store(arith.minsi(memref.load(lowest_slot, [b.index(0)]), candidate), lowest_slot, [b.index(0)])
        unwritten = arith.subi(b.constant(_i64(), 1), was_written)
        memref.store(arith.addi(memref.load(count_slot, [b.index(0)]), unwritten), count_slot, [b.index(0)])

    def _never_written(self, op, buffer: Buffer) -> str:
        shape = "x".join(str(s) for s in buffer.shape) or "1"
        if not self.threads:
            nobody = "the block had not stored to it"
        elif buffer.per_thread:
            nobody = "the thread had not stored to it"
        else:
            nobody = "no thread of the block had stored to it"
        return (f"read of never-written element {{index:{shape}}} of {buffer.described()} at {_at(op)} "
                f"by {self._who()}: {nobody}")

    def _slot(self, loc: ir.Location, initial: int) -> ir.Value:
        """An i64 stack slot at the function entry (LLVM keeps it in a register: loops reduce into it)."""
        entry = self.function.regions[0].blocks[0]
        with loc, ir.InsertionPoint.at_block_begin(entry):
            slot = memref.alloca(ir.MemRefType.get([1], _i64()), [], [])
            memref.store(b.constant(_i64(), initial), slot, [b.index(0)])
        return slot

    def end_block(self) -> None:
        """At a tile-level block's end: record each site's reads of never-written elements (its lowest
        such index, and how many), and start the next block's from none."""
        for site, (lowest_slot, count_slot) in self._unwritten_reads.items():
            count = memref.load(count_slot, [b.index(0)])
            with b.if_then(arith.cmpi(b.CMPI.ne, count, b.constant(_i64(), 0))):
                lowest = memref.load(lowest_slot, [b.index(0)])
                self.record(site, None, b.index(0), lowest, weak=True, times=count)
            memref.store(b.constant(_i64(), _NONE), lowest_slot, [b.index(0)])
            memref.store(b.constant(_i64(), 0), count_slot, [b.index(0)])

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
        old = memref.load(buffer.value, _lane(indices, lane))
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
        return (f"data race on shared buffer '{buffer.name}' element {{index}} in block {{block}}: thread {{thread}} "
                f"{action} it at {_at(op)}, but {{other_thread}} {earlier} since the last gpu.barrier "
                "(a missing gpu.barrier?)")


def _at(op: ir.Operation):
    return diag.source_location(op) or op.location


def _is_vector(op: ir.Operation) -> bool:
    return op.name.startswith("vector.")


def _vector_width(op: ir.Operation) -> int:
    if not _is_vector(op):
        return 1
    type_ = op.results[0].type if op.name == "vector.load" else op.operands[0].type
    if type_.rank != 1:
        raise diag.error(op, f"cannot simulate {op.name} of a {type_}: only 1-D vectors are supported")
    return type_.shape[0]


def _lane(indices: list[ir.Value], lane: int) -> list[ir.Value]:
    """The indices of lane `lane` of a vector access at `indices` (lanes run along the last dim)."""
    if lane == 0 or not indices:
        return indices
    return indices[:-1] + [arith.addi(indices[-1], b.index(lane))]


def _bounds(ref: ir.Value, indices: list[ir.Value], per_thread: bool, width: int):
    """(all in range, first bad dim, its index) of an access of `width` elements along the last dim;
    dims whose index is in range by construction (`static_range`) are not checked, and when no
    dim is left all three are None."""
    first = 1 if per_thread else 0
    oks, dims, values = [], [], []
    for d in range(first, len(indices)):
        idx = indices[d]
        lanes = width if d == len(indices) - 1 else 1
        extent = ref.type.shape[d]
        known = static_range(idx)
        if extent != ir.ShapedType.get_dynamic_size() and known and known[0] >= 0 and known[1] + lanes <= extent:
            continue
        size = b.memref_dim(ref, d)
        if lanes > 1:
            size = arith.subi(size, b.index(lanes - 1))
        oks.append(b.index_in_range(idx, size))
        dims.append(d - first)
        values.append(idx)
    if not oks:
        return None, None, None
    dim, value = b.index(dims[-1]), values[-1]
    for ok, d, v in reversed(list(zip(oks, dims, values))[:-1]):
        dim = arith.select(ok, dim, b.index(d))
        value = arith.select(ok, value, v)
    return b.all_true(oks), dim, value


def static_range(value: ir.Value, depth: int = 8) -> tuple[int, int] | None:
    """[lo, hi] of index `value` where the IR alone bounds it: constants, induction variables of
    `scf.for` loops with constant bounds and step, and +, -, * and non-negative % of those."""
    owner = value.owner
    if isinstance(owner, ir.Block):
        loop = owner.owner
        if loop.name != "scf.for" or value != owner.arguments[0]:
            return None
        bounds = [_constant(v) for v in list(loop.operands)[:3]]
        if None in bounds or bounds[2] <= 0 or bounds[1] <= bounds[0]:
            return None
        lower, upper, step = bounds
        return lower, lower + (upper - 1 - lower) // step * step
    if depth == 0:
        return None
    if owner.name == "arith.constant":
        number = _constant(value)
        return None if number is None else (number, number)
    ranges = [static_range(operand, depth - 1) for operand in owner.operands]
    if not ranges or None in ranges:
        return None
    if owner.name == "arith.addi":
        return ranges[0][0] + ranges[1][0], ranges[0][1] + ranges[1][1]
    if owner.name == "arith.subi":
        return ranges[0][0] - ranges[1][1], ranges[0][1] - ranges[1][0]
    if owner.name == "arith.muli":
        products = [x * y for x in ranges[0] for y in ranges[1]]
        return min(products), max(products)
    if owner.name in ("arith.remsi", "arith.remui") and ranges[0][0] >= 0 and ranges[1][0] > 0:
        return 0, min(ranges[0][1], ranges[1][1] - 1)
    return None


def _constant(value: ir.Value) -> int | None:
    owner = value.owner
    if isinstance(owner, ir.Block) or owner.name != "arith.constant" or not isinstance(value.type, ir.IndexType):
        return None
    return ir.IntegerAttr(owner.attributes["value"]).value


def _linear(ref: ir.Value, indices: list[ir.Value], lane: int, shape: list[int] | None = None) -> ir.Value:
    """Row-major element offset of `indices` (+ `lane` along the last dim) in static `shape`
    (default: `ref`'s)."""
    shape = list(ref.type.shape) if shape is None else shape
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
