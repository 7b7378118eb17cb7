"""wgmma in the thread-level simulation: descriptors, the warpgroup collective, its fences and batches.

Semantics from the PTX ISA (9.7.15 "Asynchronous Warpgroup Level Matrix Multiply-Accumulate"; the
layouts, descriptor fields and D fragment live in `ptx_isa.py`), not from the compiler's lowering:

- `tile.wgmma_desc` becomes its 64-bit value: start field = (byte offset of the element in its
  buffer, which the compiler places 1024-byte aligned) >> 4, LBO >> 4 at bit 16, SBO >> 4 at bit
  32, base offset 0, the swizzle mode at bit 62 (128 B: 1, 64 B: 2, 32 B: 3). A start not 16-byte
  aligned is a recorded error.
- `tile.wgmma` is a warpgroup collective, alone in its phase (`phases.COLLECTIVE_OPS`): thread t
  computes its own D registers (`ptx_isa.wgmma_d_fragment`) as C + sum over k ascending (16 for
  f16 / bf16, 32 for e4m3 / e5m2, `ptx_isa.wgmma_k`) of A[row, k] * B[k, col] in float32, one rounding
  per operation (fp8 products are exact in float32). Each element is read from the
  buffer its descriptor was traced to (statically, to the defining `tile.wgmma_desc`), at
  swizzle(start + canonical offset) decoded from the descriptor's run-time bits. Every thread of
  the warpgroup must give the same descriptors. The result lands in `c` at issue; the checks below
  make any program that could tell the difference an error.
- Batches, per thread: a wgmma joins the open batch (number = the thread's commits so far),
  `tile.wgmma_commit` closes it, `tile.wgmma_wait {pending = N}` retires all but the newest N.
  Reading or writing a c register a wgmma wrote before a wait retired its batch is an error; so is
  a wgmma whose c registers other code touched since the thread's last `tile.wgmma_fence`, or with
  no fence before the thread's first wgmma (accumulator accesses by wgmmas are ordered without one,
  as the ISA allows for wgmmas of one shape), and a wgmma not committed, or committed and not
  retired, when the kernel ends.
- Shared memory: a generic-proxy write (store, or a cp.async landing at its wait) of an element a
  wgmma reads must be followed, in the writing thread, by a `tile.fence_proxy_async`, and that fence
  by a `gpu.barrier` before the wgmma (always a barrier: the wgmma reads for the whole warpgroup).
  A write (store, or cp.async at issue) of an element a wgmma still in flight reads is a race: the
  writer must be in the issuing warpgroup after its wait retired the batch, or come after a barrier
  that follows the warpgroup's wait (the wgmma's completion fences the proxies itself, so no
  fence.proxy.async is needed for this write-after-read). A wgmma reading an element a cp.async has
  not landed, or never written in the block, is an error as for any read. A TMA load (the async
  proxy, as wgmma reads) needs no proxy fence: its landing marks the element written (`async_write`),
  its issue is a write (`check_async_write`) that must not race a wgmma in flight. The TMA stores'
  proxy rule (`bulk_stores.py`) reads the same fence counts (`proxy_fence_counts`).

Per-thread and per-element state lives in i64 buffers reset at each block start (`reset`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tilemlir.backends.cpu import checks
from tilemlir.backends.cpu import ir_builders as b
from tilemlir.backends.cpu.access_index import as_i64, bounds, linear, vector_width
from tilemlir.backends.cpu.simulate import ptx_isa
from tilemlir.backends.cpu.simulate.phases import thread_id
from tilemlir.backends.cpu.simulate.block_state import BlockStates
from tilemlir.backends.cpu.simulate.values import ThreadState
from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects.warpgroup import WARPGROUP_OPS
from tilemlir.ir_util import ops_named
from tilemlir.mlir import arith, ir, memref, scf

WARPGROUP = ptx_isa.WARPGROUP
_ELEMENT_TYPES = {"f16": "f16", "bf16": "bf16", "e4m3": "f8E4M3FN", "e5m2": "f8E5M2"}  # ISA type -> element type


def _b_type_attr(op: ir.Operation) -> str:
    """Where a tile.wgmma names B's type: `b_type` when A's and B's differ, else `operand_type`."""
    return "b_type" if "b_type" in op.attributes else "operand_type"
_LOW = (1 << 32) - 1  # marks: (who << 32) | count
ASYNC_PROXY_WRITE = -2  # the `generic` mark of an element a TMA load wrote (-1: never written)


def _i64() -> ir.Type:
    return ir.IntegerType.get_signless(64)


def _c64(value: int) -> ir.Value:
    return b.constant(_i64(), value - (1 << 64) if value >= 1 << 63 else value)


def _load(buffer: ir.Value, *indices) -> ir.Value:
    return memref.load(buffer, [b.index(i) if isinstance(i, int) else i for i in indices])


def _store(value: ir.Value, buffer: ir.Value, *indices) -> None:
    memref.store(value, buffer, [b.index(i) if isinstance(i, int) else i for i in indices])


def _increment(buffer: ir.Value, index: ir.Value) -> None:
    _store(arith.addi(_load(buffer, index), _c64(1)), buffer, index)


def _ne(x: ir.Value, y: ir.Value) -> ir.Value:
    return arith.cmpi(b.CMPI.ne, x, y)


def _packed(high: ir.Value, low: ir.Value) -> ir.Value:
    return arith.ori(arith.shli(as_i64(high), _c64(32)), as_i64(low))


def _high(mark: ir.Value) -> ir.Value:
    return arith.shrsi(mark, _c64(32))


def _low(mark: ir.Value) -> ir.Value:
    return arith.andi(mark, _c64(_LOW))


@dataclass
class _Operand:
    """A shared buffer some wgmma reads: where generic writes left each element, and per warpgroup
    the newest batch of a wgmma reading it (-1: none)."""

    name: str
    buffer: ir.Value
    generic: ir.Value  # [size]: (writer << 32) | proxy fences the writer had run before the write
    in_flight: ir.Value  # [warpgroups, size]

    @property
    def size(self) -> int:
        return math.prod(self.buffer.type.shape)


@dataclass
class _Accumulator:
    """A register array some wgmma accumulates into: per thread and register, the wgmma in flight
    into it ((wgmma number << 32) | batch, -1: none) and the thread's wgmma fence count when other
    code last touched it (-1: never)."""

    name: str
    pending: ir.Value  # [threads, size]
    touched: ir.Value  # [threads, size]


@dataclass(frozen=True)
class _Traced:
    """The tile.wgmma_desc a descriptor operand comes from (the op itself is lowered away first)."""

    where: str
    buffer: ir.Value
    swizzle: int


class Warpgroups(BlockStates):
    """The warpgroup ops of one launch. Made before the async copies are lowered (their issue checks
    `check_async_write`); `lower_thread_ops` before the phase split, `lower_wgmmas` after it."""

    def __init__(self, launch: ir.Operation, function: ir.Operation, checker: checks.Checker, n_threads: int,
                 names: dict[ir.Value, str]):
        self.launch, self.function, self.checker, self.n_threads = launch, function, checker, n_threads
        self.names = names
        self.wgmmas = ops_named(launch, "tile.wgmma")
        # TMA stores order generic writes by the proxy fence counts kept here (`bulk_stores.py`)
        self.active = bool(ops_named(launch, *WARPGROUP_OPS, "tile.tma_store"))
        self.groups = max(1, n_threads // WARPGROUP)
        self._reset: list[tuple[ir.Value, int]] = []
        self._tables: dict[str, str] = {}
        if not self.active:
            return
        if self.wgmmas and n_threads % WARPGROUP:
            raise diag.error(self.wgmmas[0], f"cannot simulate tile.wgmma in a block of {n_threads} threads: "
                                             f"it runs on whole warpgroups of {WARPGROUP}")
        self.traced = [(self._trace(op, 0, "A"), self._trace(op, 1, "B")) for op in self.wgmmas]
        loc = launch.location
        self.committed, self.retired, self.fences = (self._state([n_threads], 0, loc) for _ in range(3))
        self.proxy_fences, self.proxy_before = self._state([n_threads], 0, loc), self._state([n_threads], 0, loc)
        self.proxy_epoch = self._state([n_threads], -1, loc)
        self.group_retired = self._state([self.groups], 0, loc)
        self.group_retired_before = self._state([self.groups], 0, loc)
        self.group_wait_epoch = self._state([self.groups], -1, loc)
        self.issued = self._state([n_threads, max(1, len(self.wgmmas))], -1, loc)
        self.operands: dict[ir.Value, _Operand] = {}
        self.accumulators: dict[ir.Value, _Accumulator] = {}
        for op, pair in zip(self.wgmmas, self.traced):
            for traced in pair:
                if traced.buffer not in self.operands:
                    size = math.prod(traced.buffer.type.shape)
                    self.operands[traced.buffer] = _Operand(
                        names.get(traced.buffer, "shared"), traced.buffer, self._state([size], -1, loc),
                        self._state([self.groups, size], -1, loc))
            c = op.operands[2]
            if c not in self.accumulators:
                shape = [n_threads, *c.type.shape]
                name = ir.StringAttr(c.owner.attributes["name"]).value if "name" in c.owner.attributes else "c"
                self.accumulators[c] = _Accumulator(name, self._state(shape, -1, loc), self._state(shape, -1, loc))


    # -- which buffer a descriptor points into ---------------------------------------------------
    def _trace(self, op: ir.Operation, operand: int, which: str) -> _Traced:
        descs = [value.owner.operation for value in _descriptors(op.operands[operand], set())]
        buffers_ = {d.operands[0] for d in descs}
        swizzles = {ir.IntegerAttr(d.attributes["swizzle"]).value for d in descs}
        if len(buffers_) != 1 or len(swizzles) != 1:
            what = "no tile.wgmma_desc" if not descs else "tile.wgmma_desc ops of different buffers or swizzles"
            raise diag.error(op, f"cannot simulate tile.wgmma: its {which} descriptor traces to {what} (the "
                                 "simulator must know which shared buffer a descriptor points into: give it a "
                                 "tile.wgmma_desc result, possibly plus offsets)")
        buffer = buffers_.pop()
        etype = str(buffer.type.element_type)
        operand_type = ir.StringAttr(op.attributes["operand_type" if which == "A" else _b_type_attr(op)]).value
        if etype != _ELEMENT_TYPES.get(operand_type):
            raise diag.error(op, f"cannot simulate tile.wgmma with operand_type {operand_type} on its {which} "
                                 f"buffer of {etype} elements", [diag.note(descs[0], "the descriptor")])
        return _Traced(str(self.checker.where(descs[0])), buffer, swizzles.pop())

    # -- before the phase split -------------------------------------------------------------------
    def lower_thread_ops(self) -> None:
        """Descriptors, fences, commits and waits become plain per-thread IR; generic writes of the
        wgmma operand buffers and accesses of the accumulators get their checks; the kernel's end
        checks that every wgmma was retired."""
        if not self.active:
            return
        for op in ops_named(self.launch, *checks.ACCESSES):
            self._instrument_access(op)
        for op in ops_named(self.launch, "tile.wgmma_desc"):
            with op.location, ir.InsertionPoint(op):
                value = self._descriptor(op)
            op.results[0].replace_all_uses_with(value)
            op.erase()
        lowerings = {"tile.wgmma_fence": self._wgmma_fence, "tile.wgmma_commit": self._commit,
                     "tile.wgmma_wait": self._wait, "tile.fence_proxy_async": self._proxy_fence,
                     "tile.setmaxnreg": lambda op: None}  # registers are not modelled: the hint does nothing here
        for op in ops_named(self.launch, *lowerings):
            with op.location, ir.InsertionPoint(op):
                lowerings[op.name](op)
            op.erase()
        if self.wgmmas:
            terminator = list(self.launch.regions[0].blocks[0].operations)[-1]
            with self.launch.location, ir.InsertionPoint(terminator):
                self._check_all_retired()

    def _descriptor(self, op: ir.Operation) -> ir.Value:
        src, indices = op.operands[0], list(op.operands)[1:]
        element_bytes = b.bitwidth(src.type.element_type) // 8
        if math.prod(src.type.shape) * element_bytes > 1 << 18:
            raise diag.error(op, "cannot simulate tile.wgmma_desc into a buffer past the descriptor's 2**18-byte "
                                 "reach")
        offset = arith.muli(linear(src, indices, 0), b.index(element_bytes))
        misplaced = arith.remui(offset, b.index(16))
        with b.if_then(_ne(misplaced, b.index(0))):
            template = (f"tile.wgmma_desc at {self.checker.where(op)}: thread {{thread}} of block {{block}} described "
                        f"a matrix starting at byte {{index}} of shared buffer '{self.names.get(src, 'shared')}', "
                        "{other} bytes past a 16-byte boundary (a descriptor's start address is 16-byte aligned)")
            self.checker.record(self.checker.site(template), thread_id(), misplaced, offset)
        attr = {name: ir.IntegerAttr(op.attributes[name]).value for name in ("leading_bytes", "stride_bytes", "swizzle")}
        fixed = ptx_isa.MatrixDescriptor(0, attr["leading_bytes"], attr["stride_bytes"], attr["swizzle"]).bits()
        start = arith.andi(arith.shrui(as_i64(offset), _c64(4)), _c64(0x3FFF))
        return arith.ori(start, _c64(fixed))

    def _wgmma_fence(self, op: ir.Operation) -> None:
        _increment(self.fences, thread_id())

    def _commit(self, op: ir.Operation) -> None:
        _increment(self.committed, thread_id())

    def _wait(self, op: ir.Operation) -> None:
        tid = thread_id()
        pending = ir.IntegerAttr(op.attributes["pending"]).value
        retired = arith.maxsi(_load(self.retired, tid), arith.subi(_load(self.committed, tid), _c64(pending)))
        _store(retired, self.retired, tid)
        within = arith.remui(tid, b.index(WARPGROUP))
        with b.if_then(arith.cmpi(b.CMPI.eq, within, b.index(0))):  # the warpgroup's first thread speaks for it
            group = arith.divui(tid, b.index(WARPGROUP))
            epoch = self._epoch()
            with b.if_then(_ne(_load(self.group_wait_epoch, group), epoch)):
                _store(_load(self.group_retired, group), self.group_retired_before, group)
                _store(epoch, self.group_wait_epoch, group)
            _store(retired, self.group_retired, group)

    def _proxy_fence(self, op: ir.Operation) -> None:
        tid = thread_id()
        epoch = self._epoch()
        with b.if_then(_ne(_load(self.proxy_epoch, tid), epoch)):
            _store(_load(self.proxy_fences, tid), self.proxy_before, tid)
            _store(epoch, self.proxy_epoch, tid)
        _increment(self.proxy_fences, tid)

    def _epoch(self) -> ir.Value:
        return _load(self.checker.state, 0)

    def proxy_fence_counts(self, thread: ir.Value) -> tuple[ir.Value, ir.Value]:
        """How many tile.fence_proxy_async `thread` has run in the block, and how many of them before the
        current barrier interval (a write it fenced before then is ordered before every thread's async read)."""
        fences = _load(self.proxy_fences, thread)
        before = arith.select(_ne(_load(self.proxy_epoch, thread), self._epoch()), fences,
                              _load(self.proxy_before, thread))
        return fences, before

    def _check_all_retired(self) -> None:
        tid = thread_id()
        committed, retired = _load(self.committed, tid), _load(self.retired, tid)
        for number, op in enumerate(self.wgmmas):
            batch = _load(self.issued, tid, number)
            issued = _ne(batch, _c64(-1))
            for late, what in ((arith.cmpi(b.CMPI.sge, batch, committed), "a tile.wgmma_commit closed its batch"),
                               (arith.cmpi(b.CMPI.sge, batch, retired), "a tile.wgmma_wait retired its batch")):
                with b.if_then(arith.andi(issued, late)):
                    template = (f"tile.wgmma at {self.checker.where(op)}: thread {{thread}} of block {{block}} issued "
                                f"it (batch {{index}}) and the kernel ended before {what}")
                    self.checker.record(self.checker.site(template), tid, b.index(0), batch)
                issued = arith.andi(issued, arith.xori(late, b.constant(ir.IntegerType.get_signless(1), 1)))

    # -- accesses of operand buffers and accumulators -----------------------------------------------
    def _instrument_access(self, op: ir.Operation) -> None:
        reads = op.name.endswith("load")
        ref = op.operands[0] if reads else op.operands[1]
        indices = list(op.operands[1:] if reads else op.operands[2:])
        if ref in self.accumulators:
            with op.location, ir.InsertionPoint(op):
                self._per_lane(ref, indices, vector_width(op),
                               lambda element: self._touch_register(op, ref, element, reads))
        elif ref in self.operands and not reads:
            with op.location, ir.InsertionPoint(op):
                self._per_lane(ref, indices, vector_width(op),
                               lambda element: self._generic_write(op, self.operands[ref], element))

    @staticmethod
    def _per_lane(ref: ir.Value, indices, width: int, check) -> None:
        """`check(element)` for each in-range lane's row-major element (the checker reports the others)."""
        inside, _, _ = bounds(ref, indices, False, width)
        if inside is None:
            for number in range(width):
                check(linear(ref, indices, number))
            return
        with b.if_then(inside):
            for number in range(width):
                check(linear(ref, indices, number))

    def _touch_register(self, op: ir.Operation, ref: ir.Value, element: ir.Value, reads: bool) -> None:
        tid = thread_id()
        accumulator = self.accumulators[ref]
        mark = _load(accumulator.pending, tid, element)
        in_flight = arith.andi(_ne(mark, _c64(-1)), arith.cmpi(b.CMPI.sge, _low(mark), _load(self.retired, tid)))
        with b.if_then(in_flight):
            template = (f"thread {{thread}} of block {{block}} {'reads' if reads else 'writes'} accumulator register "
                        f"{accumulator.name}[{{index}}] at {self.checker.where(op)} while tile.wgmma #{{other}} into it "
                        f"has not been retired by a tile.wgmma_wait ({self._wgmma_legend(ref)})")
            self.checker.record(self.checker.site(template), tid, _high(mark), element)
        _store(_load(self.fences, tid), accumulator.touched, tid, element)

    def _wgmma_legend(self, c: ir.Value) -> str:
        return ", ".join(f"#{number} at {self.checker.where(op)}" for number, op in enumerate(self.wgmmas)
                         if op.operands[2] == c)

    def _generic_write(self, op: ir.Operation, operand: _Operand, element: ir.Value) -> None:
        tid = thread_id()
        self._check_not_in_flight(op, operand, element, tid, "writes it")
        _store(_packed(tid, _load(self.proxy_fences, tid)), operand.generic, element)

    def check_async_write(self, op: ir.Operation, buffer: ir.Value, element: ir.Value, tid: ir.Value,
                          action: str = "issues a cp.async into it") -> None:
        """A cp.async (or TMA load) issued into `buffer`'s `element`: a race with a wgmma in flight reading it."""
        if self.active and buffer in self.operands:
            self._check_not_in_flight(op, self.operands[buffer], element, tid, action)

    def async_write(self, buffer: ir.Value, element: ir.Value) -> None:
        """A TMA load landed in `buffer`'s `element`: written, through the proxy wgmma reads by."""
        if self.active and buffer in self.operands:
            _store(_c64(ASYNC_PROXY_WRITE), self.operands[buffer].generic, element)

    def _check_not_in_flight(self, op, operand: _Operand, element: ir.Value, tid: ir.Value, action: str) -> None:
        mine = arith.divui(tid, b.index(WARPGROUP))
        epoch = self._epoch()
        for group in range(self.groups):
            batch = _load(operand.in_flight, group, element)
            seen = arith.select(_ne(_load(self.group_wait_epoch, group), epoch), _load(self.group_retired, group),
                                _load(self.group_retired_before, group))
            retired = arith.select(arith.cmpi(b.CMPI.eq, mine, b.index(group)), _load(self.retired, tid), seen)
            with b.if_then(arith.andi(_ne(batch, _c64(-1)), arith.cmpi(b.CMPI.sge, batch, retired))):
                template = (f"data race on shared buffer '{operand.name}' element {{index}} in block {{block}}: thread "
                            f"{{thread}} {action} at {self.checker.where(op)} while a tile.wgmma of warpgroup {{other}} "
                            "reading it is in flight (its batch needs a tile.wgmma_wait retiring it, and a gpu.barrier "
                            "after that wait for threads of other warpgroups)")
                self.checker.record(self.checker.site(template), tid, b.index(group), element)

    # -- after the phase split: the wgmmas ---------------------------------------------------------
    def lower_wgmmas(self, state: ThreadState, expanded: dict[ir.Value, ir.Value],
                     async_pending: dict[ir.Value, ir.Value]) -> None:
        """Rewrite each wgmma (alone in its thread loop) into its threads' D computation and checks.
        `async_pending`: the pending marks of cp.async target buffers (`async_copies`)."""
        for number, op in enumerate(self.wgmmas):
            loop = state.loop_of(op)
            with op.location, ir.InsertionPoint(op):
                _Wgmma(self, state, loop, op, number, expanded[op.operands[2]], async_pending).lower()
            op.erase()

    def table(self, name: str, values: np.ndarray) -> ir.Value:
        """A constant i64 table (a private memref.global) read at the current insertion point."""
        symbol = f"__tile_sim_{name}"
        type_ = ir.MemRefType.get(list(values.shape), _i64())
        module = self.function.parent
        if symbol not in self._tables:
            with ir.InsertionPoint.at_block_begin(module.regions[0].blocks[0]):
                tensor = ir.RankedTensorType.get(list(values.shape), _i64())
                attr = ir.DenseElementsAttr.get(np.ascontiguousarray(values, dtype=np.int64), type=tensor)
                memref.GlobalOp(sym_name=symbol, type_=type_, sym_visibility="private", initial_value=attr,
                                constant=True)
            self._tables[symbol] = symbol
        return memref.get_global(type_, symbol)


class _Wgmma:
    """One tile.wgmma as the thread running its thread loop computes it."""

    def __init__(self, owner: Warpgroups, state: ThreadState, loop, op: ir.Operation, number: int, c: ir.Value,
                 async_pending: dict[ir.Value, ir.Value]):
        self.owner, self.state, self.op, self.number, self.c = owner, state, op, number, c
        self.checker = owner.checker
        self.async_pending = async_pending
        self.tid = state.thread_ids(loop)[3]
        self.n = ir.IntegerAttr(op.attributes["n"]).value
        self.c_offset = ir.IntegerAttr(op.attributes["c_offset"]).value
        self.traced = owner.traced[number]
        self.majors = tuple("mn" if ir.BoolAttr(op.attributes[f"trans_{x}"]).value else "k" for x in "ab")
        self.k = ptx_isa.wgmma_k(ir.StringAttr(op.attributes["operand_type"]).value)

    def where(self) -> str:
        return str(self.checker.where(self.op))

    def lower(self) -> None:
        tid = self.tid
        within = arith.remui(tid, b.index(WARPGROUP))
        self.group = arith.divui(tid, b.index(WARPGROUP))
        first = arith.subi(tid, within)
        fences = _load(self.owner.fences, tid)
        with b.if_then(arith.cmpi(b.CMPI.eq, fences, _c64(0))):
            template = (f"tile.wgmma at {self.where()}: thread {{thread}} of block {{block}} (warpgroup {{other}}) issued "
                        "it before any tile.wgmma_fence (wgmma.fence must come before a warpgroup's first wgmma)")
            self.checker.record(self.checker.site(template), tid, self.group, b.index(0))
        self.batch = _load(self.owner.committed, tid)
        _store(self.batch, self.owner.issued, tid, self.number)
        operands = [self._decoded(which, value, traced, first)
                    for which, value, traced in zip("AB", list(self.op.operands)[:2], self.traced)]
        d_table = self.owner.table(f"wgmma_m64n{self.n}k16_d", ptx_isa.wgmma_d_fragment(self.n).coords[:, :, 0, :])
        accumulator = self.owner.accumulators[self.op.operands[2]]
        with b.loop_nest([self.n // 2]) as (i,):
            register = arith.addi(i, b.index(self.c_offset))
            with b.if_then(arith.cmpi(b.CMPI.eq, _load(accumulator.touched, tid, register), fences)):
                template = (f"tile.wgmma at {self.where()}: thread {{thread}} of block {{block}}: its accumulator "
                            f"register {accumulator.name}[{{index}}] was accessed by other code since the thread's last "
                            "tile.wgmma_fence (wgmma.fence must order register accesses before a wgmma using them)")
                self.checker.record(self.checker.site(template), tid, b.index(0), register)
            row = _index(_load(d_table, within, i, 0))
            col = _index(_load(d_table, within, i, 1))
            k_loop = scf.ForOp(b.index(0), b.index(self.k), b.index(1), [memref.load(self.c, [tid, register])])
            with ir.InsertionPoint(k_loop.body):
                k, acc = k_loop.induction_variable, k_loop.inner_iter_args[0]
                x = self._element(operands[0], row, k)
                y = self._element(operands[1], col, k)
                scf.YieldOp([arith.addf(acc, arith.mulf(x, y))])
            memref.store(k_loop.results[0], self.c, [tid, register])
            _store(_packed(b.index(self.number), self.batch), accumulator.pending, tid, register)

    # -- descriptors ----------------------------------------------------------------------------
    def _decoded(self, which: str, value: ir.Value, traced: _Traced, first: ir.Value) -> "_Decoded":
        own = self._lane_value(value, self.tid)
        theirs = self._lane_value(value, first)
        with b.if_then(_ne(own, theirs)):
            template = (f"tile.wgmma at {self.where()}: thread {{thread}} of block {{block}}: its {which} descriptor "
                        "differs from thread {other}'s, the first of its warpgroup (a warpgroup's threads give one "
                        "descriptor)")
            self.checker.record(self.checker.site(template), self.tid, first, b.index(0))
        fields = arith.shrui(own, _c64(49))  # base offset (bits 51-49) and mode (bits 63-62) as one number
        expected = ptx_isa.MODE_OF_SWIZZLE[traced.swizzle] << 13
        with b.if_then(_ne(fields, _c64(expected))):
            template = (f"tile.wgmma at {self.where()}: thread {{thread}} of block {{block}}: its {which} descriptor's "
                        "bits 63-49 are {index}, not the swizzle mode of tile.wgmma_desc at "
                        f"{traced.where} with base offset 0 ({expected})")
            self.checker.record(self.checker.site(template), self.tid, b.index(0), fields)
        field = lambda shift: _index(arith.shli(arith.andi(arith.shrui(own, _c64(shift)), _c64(0x3FFF)), _c64(4)))
        major = self.majors[0 if which == "A" else 1]
        rows = ptx_isa.WGMMA_M if which == "A" else self.n
        element_bytes = b.bitwidth(traced.buffer.type.element_type) // 8
        terms = self.owner.table(f"wgmma_{major}_major_{traced.swizzle}b_{rows}x{self.k}_e{element_bytes}",
                                 ptx_isa.canonical_offset_terms(major, traced.swizzle, rows, element_bytes, self.k))
        return _Decoded(which, traced, self.owner.operands[traced.buffer], _flat(traced.buffer), terms,
                        field(0), field(16), field(32), element_bytes)

    def _lane_value(self, value: ir.Value, thread: ir.Value) -> ir.Value:
        if self.state.loop_defining(value) is None:
            return value
        return memref.load(self.state.storage(value), [thread])

    # -- one element of A or B -------------------------------------------------------------------
    def _element(self, operand: "_Decoded", mn: ir.Value, k: ir.Value) -> ir.Value:
        offset = _index(_load(operand.terms, mn, k, 0))
        offset = arith.addi(offset, arith.muli(_index(_load(operand.terms, mn, k, 1)), operand.leading))
        offset = arith.addi(offset, arith.muli(_index(_load(operand.terms, mn, k, 2)), operand.stride))
        address = _swizzled(arith.addi(operand.start, offset), operand.traced.swizzle)
        element = arith.divui(address, b.index(operand.element_bytes))
        size = operand.state.size
        inside = arith.cmpi(b.CMPI.ult, element, b.index(size))
        with b.if_then(inside):
            self._check_read(operand, element)
        element_type = operand.traced.buffer.type.element_type
        value = arith.select(inside, memref.load(operand.flat, [arith.select(inside, element, b.index(0))]),
                             b.constant(element_type, math.nan))
        with b.if_then(arith.xori(inside, b.constant(ir.IntegerType.get_signless(1), 1))):
            template = (f"tile.wgmma at {self.where()}: thread {{thread}} of block {{block}}: its {operand.which} "
                        f"descriptor reaches element {{index}} of shared buffer '{operand.state.name}' ({size} "
                        "elements), past its end")
            self.checker.record(self.checker.site(template), self.tid, b.index(0), element)
        return arith.extf(ir.F32Type.get(), value)

    def _check_read(self, operand: "_Decoded", element: ir.Value) -> None:
        owner, tid, name = self.owner, self.tid, operand.state.name
        mark = _load(operand.state.generic, element)
        never = arith.cmpi(b.CMPI.eq, mark, _c64(-1))
        with b.if_then(never):
            template = (f"tile.wgmma at {self.where()} read never-written element {{index}} of shared buffer '{name}' "
                        "(thread {thread} of block {block}): no thread of the block had stored to it")
            self.checker.record(self.checker.site(template), tid, b.index(0), element, weak=True)
        by_tma = arith.cmpi(b.CMPI.eq, mark, _c64(ASYNC_PROXY_WRITE))
        writer, fenced_before = _index(_high(mark)), _low(mark)
        writer = arith.select(arith.ori(never, by_tma), tid, writer)
        fences, fences_before_barrier = owner.proxy_fence_counts(writer)
        written = arith.xori(arith.ori(never, by_tma), b.constant(ir.IntegerType.get_signless(1), 1))  # generically
        unfenced = arith.andi(written, arith.cmpi(b.CMPI.sge, fenced_before, fences))
        with b.if_then(unfenced):
            template = (f"tile.wgmma at {self.where()} (thread {{thread}} of block {{block}}) reads element {{index}} of "
                        f"shared buffer '{name}', which thread {{other}} wrote through the generic proxy with no "
                        "tile.fence_proxy_async after the write (fence.proxy.async, then a gpu.barrier, must order it "
                        "before the wgmma's async-proxy read)")
            owner.checker.record(owner.checker.site(template), tid, writer, element)
        unordered = arith.andi(arith.andi(written, arith.xori(unfenced, b.constant(ir.IntegerType.get_signless(1), 1))),
                               arith.cmpi(b.CMPI.sge, fenced_before, fences_before_barrier))
        with b.if_then(unordered):
            template = (f"tile.wgmma at {self.where()} (thread {{thread}} of block {{block}}) reads element {{index}} of "
                        f"shared buffer '{name}', which thread {{other}} wrote and fenced (tile.fence_proxy_async), but "
                        "no gpu.barrier came between that fence and this wgmma")
            owner.checker.record(owner.checker.site(template), tid, writer, element)
        pending = self.async_pending.get(operand.traced.buffer)
        if pending is not None:
            copy = memref.load(pending, [element])
            with b.if_then(_ne(copy, _c64(-1))):
                template = (f"data race on shared buffer '{name}' element {{index}} in block {{block}}: tile.wgmma at "
                            f"{self.where()} (thread {{thread}}) reads it while the cp.async of thread {{other}} into "
                            "it has not landed (no tile.cp_async_wait of that thread retired its group before: a wrong "
                            "pending count?)")
                owner.checker.record(owner.checker.site(template), tid, arith.shrsi(copy, _c64(20)), element)
        _store(self.batch, operand.state.in_flight, self.group, element)


@dataclass
class _Decoded:
    """A wgmma operand as one thread decoded its descriptor (start, LBO, SBO in bytes)."""

    which: str
    traced: _Traced
    state: _Operand
    flat: ir.Value  # the buffer as one dimension, outside the checker's instrumentation
    terms: ir.Value  # [rows, 16, 3] canonical offset terms
    start: ir.Value
    leading: ir.Value
    stride: ir.Value
    element_bytes: int


def _descriptors(value: ir.Value, seen: set) -> set[ir.Value]:
    """The tile.wgmma_desc results `value` is computed from: directly, through integer arithmetic on
    them (an offset added to the start field), selects, and the values scf.for iteration arguments
    start from and are yielded and scf.if branches yield."""
    if value in seen:
        return set()
    seen.add(value)
    owner = value.owner
    if isinstance(owner, ir.Block):
        loop = owner.owner
        if loop.name == "scf.for" and value != owner.arguments[0]:
            number = list(owner.arguments).index(value) - 1
            yielded = list(owner.operations)[-1].operands[number]
            return _descriptors(loop.operands[3 + number], seen) | _descriptors(yielded, seen)
        return set()
    op = owner.operation
    if op.name == "tile.wgmma_desc":
        return {value}
    number = list(op.results).index(value)
    if op.name in ("scf.for", "scf.if"):
        found = _descriptors(op.operands[3 + number], seen) if op.name == "scf.for" else set()
        for region in op.regions:
            for block in region.blocks:
                found |= _descriptors(list(block.operations)[-1].operands[number], seen)
        return found
    if op.name in ("arith.addi", "arith.subi", "arith.ori", "arith.xori", "arith.andi", "arith.select"):
        found = set()
        for operand in op.operands:
            found |= _descriptors(operand, seen)
        return found
    return set()


def _index(value: ir.Value) -> ir.Value:
    return arith.index_cast(ir.IndexType.get(), value)


def _swizzled(address: ir.Value, swizzle: int) -> ir.Value:
    """`ptx_isa.swizzle_address` on an index value."""
    if swizzle == 0:
        return address
    bits = arith.andi(arith.shrui(address, b.index(7)), b.index(swizzle // 16 - 1))
    return arith.xori(address, arith.shli(bits, b.index(4)))


def _flat(buffer: ir.Value) -> ir.Value:
    """`buffer` viewed as one dimension through a new value, so the checker's access instrumentation
    (which knows buffers by value) leaves the wgmma's reads to the checks here."""
    type_ = buffer.type
    flat = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()] if type_.rank == 1 else [math.prod(type_.shape)],
                             type_.element_type)
    if type_.rank == 1:
        return memref.cast(flat, buffer)
    return memref.collapse_shape(flat, buffer, ir.ArrayAttr.get([ir.ArrayAttr.get(
        [ir.IntegerAttr.get(_i64(), d) for d in range(type_.rank)])]))
