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

Races on shared memory are checked by `races.RaceShadows`.
"""

from __future__ import annotations

import math

from tilemlir.backends.cpu import buffers
from tilemlir.backends.cpu import ir_builders as b
from tilemlir.backends.cpu.access_index import as_i64, bounds, is_vector, lane, linear, linear_dynamic, vector_width
from tilemlir.backends.cpu.races import SEVERAL, RaceShadows
from tilemlir.backends.cpu.tile_ops import recorded_padding
from tilemlir.mlir import arith, func, ir, memref, scf, vector
from tilemlir.diagnostics import reporting as diag

STATUS_WORDS = 8
SITES_ATTR = "tile.sim_sites"
_WRITTEN_BIT = 30  # tile level: a read element's index, plus 2**30 if it was written
_NONE = 2**31 - 1  # no element read yet
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


def _i32() -> ir.Type:
    return ir.IntegerType.get_signless(32)


def _i8() -> ir.Type:
    return ir.IntegerType.get_signless(8)


class Buffer:
    """An instrumented buffer: kind "global", "shared", "fragment" or "local"; `per_thread`: its
    first index is the simulated thread's; `written`: its never-written shadow (on-chip buffers);
    `races`: its race shadows (shared buffers at thread level)."""

    def __init__(self, kind: str, name: str, value: ir.Value, per_thread: bool = False,
                 written: ir.Value | None = None, races: RaceShadows | None = None):
        self.kind, self.name, self.value = kind, name, value
        self.per_thread, self.written, self.races = per_thread, written, races

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
        self._recorder_name: str | None = None
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
        if not self.threads and math.prod(value.type.shape) >= 1 << _WRITTEN_BIT:
            raise diag.error(value.owner, f"the CPU backend checks on-chip buffers of fewer than 2**{_WRITTEN_BIT} "
                                          f"elements; '{name}' has {math.prod(value.type.shape)}")
        written = buffers.allocate_at_entry(self.function, ir.MemRefType.get(list(value.type.shape), _i8()), loc)
        races = None
        if kind == "shared" and self.check_races:
            races = RaceShadows(self.function, math.prod(value.type.shape), loc)
        self.buffers[value] = Buffer(kind, name, value, per_thread, written, races)

    # -- block-level events ------------------------------------------------------------
    def start_block(self, block_linear: ir.Value) -> None:
        """At a block's start: a new epoch, the block's number, every element unwritten."""
        self.next_epoch()
        memref.store(as_i64(block_linear), self.state, [b.index(1)])
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
        and it is not. A call of the function's one out-of-line recorder: inline, the dozens of sites
        made LLVM's work (and the CPU tests) much slower."""
        words = [b.constant(_i64(), site), b.constant(_i64(), 0) if thread is None else as_i64(thread),
                 as_i64(other), as_i64(index), b.constant(_i64(), int(weak)), times or b.constant(_i64(), 1)]
        func.CallOp([], self._recorder(), [self.status, self.state, *words])

    def _recorder(self) -> ir.FlatSymbolRefAttr:
        if self._recorder_name is None:
            self._recorder_name = _build_recorder(self.function, self.status.type, self.state.type)
        return ir.FlatSymbolRefAttr.get(self._recorder_name)

    @staticmethod
    def where(op: ir.Operation):
        """The Python file:line:col of `op` (its MLIR location without one)."""
        return diag.source_location(op) or op.location

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
        width = vector_width(op)
        with op.location, ir.InsertionPoint(op):
            inside, dim, bad_index = bounds(ref, indices, buffer.per_thread, width)
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
        offset = linear_dynamic(buffer.value, indices)
        misplaced = arith.remui(arith.muli(offset, b.index(element_bytes)), b.index(alignment))
        with b.if_then(arith.cmpi(b.CMPI.ne, misplaced, b.index(0))):
            template = (f"misaligned vector access of {buffer.described()} at {self.where(op)}: {self._who()} "
                        f"accessed element {{index}}, {{other}} bytes past a {alignment}-byte boundary")
            self.record(self.site(template), tid, misplaced, offset)

    def _where(self, op: ir.Operation, buffer: Buffer, access: str) -> str:
        return (f"out-of-range {access} of {buffer.described()} at {self.where(op)}: {self._who()} used index {{index}} "
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
            for number in range(width):
                if buffer.written is not None:
                    self._check_written(op, buffer, lane(indices, number), tid)
                if buffer.races is not None:
                    buffer.races.check_read(self, op, buffer, linear(buffer.value, indices, number), tid)

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
                for number in range(width):
                    if buffer.races is not None:
                        new = op.operands[0] if width == 1 and not is_vector(op) else \
                            vector.extract(op.operands[0], [], [number])
                        buffer.races.check_write(self, op, buffer, checked, number, new, tid)
                    if buffer.written is not None:
                        memref.store(b.constant(_i8(), 1), buffer.written, lane(indices, number))
        if inside is not None:
            op.move_before(then_yield)

    def _check_written(self, op, buffer: Buffer, indices: list[ir.Value], tid) -> None:
        """Record a read of an element with a clear never-written byte (its row-major index in the
        shape one thread, or the block, sees). At tile level without a branch: the site's lowest
        such index is kept (a min the loop vectorizer can reduce) and recorded when the block ends."""
        written = memref.load(buffer.written, indices)
        site = self.site(self._never_written(op, buffer))
        if self.threads:
            with b.if_then(arith.cmpi(b.CMPI.eq, written, b.constant(_i8(), 0))):
                element = linear(buffer.value, indices[1:] if buffer.per_thread else indices, 0, buffer.shape)
                self.record(site, tid, b.index(0), element, weak=True)
            return
        if site not in self._unwritten_reads:
            self._unwritten_reads[site] = (self._slot(op.location, _NONE), self._slot(op.location, 0))
        lowest_slot, count_slot = self._unwritten_reads[site]
        # the element's index, past 2**_WRITTEN_BIT if its byte is set, and 1 for an unwritten one:
        # arithmetic, not selects, so that LLVM sees plain integer min and add reductions (in i32:
        # on-chip buffers hold fewer than 2**_WRITTEN_BIT elements)
        i32 = _i32()
        element = arith.index_cast(i32, linear(buffer.value, indices[1:] if buffer.per_thread else indices, 0,
                                               buffer.shape))
        was_written = arith.extui(i32, written)
        candidate = arith.addi(element, arith.shli(was_written, b.constant(i32, _WRITTEN_BIT)))
        memref.store(arith.minsi(memref.load(lowest_slot, [b.index(0)]), candidate), lowest_slot, [b.index(0)])
        unwritten = arith.subi(b.constant(i32, 1), was_written)
        memref.store(arith.addi(memref.load(count_slot, [b.index(0)]), unwritten), count_slot, [b.index(0)])

    def _never_written(self, op, buffer: Buffer) -> str:
        shape = "x".join(str(s) for s in buffer.shape) or "1"
        if not self.threads:
            nobody = "the block had not stored to it"
        elif buffer.per_thread:
            nobody = "the thread had not stored to it"
        else:
            nobody = "no thread of the block had stored to it"
        return (f"read of never-written element {{index:{shape}}} of {buffer.described()} at {self.where(op)} "
                f"by {self._who()}: {nobody}")

    def _slot(self, loc: ir.Location, initial: int) -> ir.Value:
        """An i32 stack slot at the function entry (LLVM keeps it in a register: loops reduce into it)."""
        entry = self.function.regions[0].blocks[0]
        with loc, ir.InsertionPoint.at_block_begin(entry):
            slot = memref.alloca(ir.MemRefType.get([1], _i32()), [], [])
            memref.store(b.constant(_i32(), initial), slot, [b.index(0)])
        return slot

    def end_block(self) -> None:
        """At a tile-level block's end: record each site's reads of never-written elements (its lowest
        such index, and how many), and start the next block's from none."""
        for site, (lowest_slot, count_slot) in self._unwritten_reads.items():
            count = memref.load(count_slot, [b.index(0)])
            with b.if_then(arith.cmpi(b.CMPI.ne, count, b.constant(_i32(), 0))):
                lowest = arith.extsi(_i64(), memref.load(lowest_slot, [b.index(0)]))
                self.record(site, None, b.index(0), lowest, weak=True, times=arith.extsi(_i64(), count))
            memref.store(b.constant(_i32(), _NONE), lowest_slot, [b.index(0)])
            memref.store(b.constant(_i32(), 0), count_slot, [b.index(0)])


def _build_recorder(function: ir.Operation, status_type: ir.Type, state_type: ir.Type) -> str:
    """`func.func private @<function>__record_error(status, state, site, thread, other, index, weak, times)`
    before `function`, kept out of line (`llvm.noinline`): the status words' update of `Checker.record`."""
    name = f"{ir.StringAttr(function.attributes['sym_name']).value}__record_error"
    i64 = _i64()
    with function.location, ir.InsertionPoint(function):
        recorder = func.FuncOp(name, ([status_type, state_type] + [i64] * 6, []), visibility="private")
        recorder.attributes["llvm.noinline"] = ir.UnitAttr.get()
    entry = recorder.add_entry_block()
    status, state, site, thread, other, index, weak, times = entry.arguments
    with function.location, ir.InsertionPoint(entry):
        count = memref.load(status, [b.index(0)])
        zero = b.constant(i64, 0)
        first = arith.cmpi(b.CMPI.eq, count, zero)
        # a strong error replaces a weak first one
        replaces = arith.andi(arith.cmpi(b.CMPI.eq, weak, zero),
                              arith.cmpi(b.CMPI.ne, memref.load(status, [b.index(6)]), zero))
        with b.if_then(arith.ori(first, replaces)):
            block = memref.load(state, [b.index(1)])
            for slot, word in enumerate([site, thread, other, block, index, weak], start=1):
                memref.store(word, status, [b.index(slot)])
        memref.store(arith.addi(count, times), status, [b.index(0)])
        func.ReturnOp([])
    return name


def _fallback(op: ir.Operation, type_: ir.Type, padded: bool) -> ir.Value:
    """What an out-of-range load yields: its `tile.pad` (pad mode) or poison (NaN / 0)."""
    if padded:
        return b.constant(type_, recorded_padding(op))
    return b.constant(type_, math.nan if isinstance(b.element_type(type_), ir.FloatType) else 0)
