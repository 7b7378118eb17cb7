"""Warp collectives of the thread-level simulation: `tile.ldmatrix`, `tile.stmatrix` and `tile.mma_sync`.

Each of these ops is alone in its phase (`phases.PhaseSplitter`), so when
the simulated thread `t` runs it every lane of its warp has finished the
code before and none has started the code after: `t` computes its own
results from its warp-mates' registers and addresses, read from their
per-thread copies, as a `gpu.shuffle` reads its partner's value.

Who holds what comes from the PTX ISA's fragment tables in
`ptx_isa.py` (`LDMATRIX_M8N8_B16`, `STMATRIX_M8N8_B16`, `FRAGMENTS`), embedded as constant
`memref.global` tables indexed by lane, never from tilemlir's layout code
(`analysis/mma_layouts.py`), so a lowering whose layouts disagree with the
hardware's computes a wrong result here.

- ldmatrix: lane l's register i, element e, is (row, col) of matrix i in
  the ldmatrix table; the row's address comes from lane `8 i + row` (with
  `.trans`, the matrix is transposed: the address of lane `8 i + col`,
  element `row`). The row's elements run along the buffer's last dim from
  the logical index that lane gave; its loads are the simulator's ordinary
  checked shared loads (bounds, never-written, races); a row not starting
  on a 16-byte boundary of the buffer is a recorded error. Only lanes below
  `8 * count` give addresses (the ISA's "Threads 0-7: addr0-addr7" table).
- stmatrix: lane l's element e of matrix i, `src[registers[i] + e]` (f32
  rounded to nearest even into dst's type, as `arith.truncf` is simulated),
  goes to (row, col) of matrix i in the stmatrix table: the row whose
  address lane `8 i + row` gave, element `col` (with `.trans`, the row of
  lane `8 i + col`, element `row`). Each is an ordinary checked shared store
  of lane l (never-written tracking, races, TMA-store and cp.async checks
  see the lane that supplied the value). Lanes below `8 * count` must give
  rows starting on a 16-byte boundary and lying inside the buffer, a
  recorded error otherwise (no element goes to such a row); the addresses
  of the other lanes are not used.
- mma_sync: D[row, col] for each of lane l's accumulator elements (the C
  table) is C + sum over k ascending of A[row, k] * B[k, col] in float32,
  one rounding per operation, an f16 D rounded once at the end (the model
  of `ptx_isa.mma_sync`); A's and B's elements are found through the
  inverse A and B tables (which lane, register and half holds them).
"""

from __future__ import annotations

import numpy as np

from tilemlir.backends.cpu import checks
from tilemlir.backends.cpu import ir_builders as b
from tilemlir.backends.cpu.access_index import bounds, linear
from tilemlir.backends.cpu.simulate import ptx_isa
from tilemlir.backends.cpu.simulate.values import ThreadState
from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects.tensor_core_ops import stmatrix_registers
from tilemlir.ir_util import walk_ops
from tilemlir.mlir import arith, ir, memref, scf

COLLECTIVES = ("tile.ldmatrix", "tile.stmatrix", "tile.mma_sync")
WARP = 32


class Collectives:
    """Rewrites the collectives of a launch's thread loops (after shuffles, before local buffers expand)."""

    def __init__(self, state: ThreadState, checker: checks.Checker, expanded: dict[ir.Value, ir.Value],
                 async_pending: dict[ir.Value, ir.Value]):
        self.state = state
        self.checker = checker
        self.expanded = expanded
        self.async_pending = async_pending  # the cp.async targets' pending marks (`async_copies.Lowered`)
        self.module = state.function.parent
        self._tables: dict[str, ir.Value] = {}

    def run(self) -> None:
        for loop in list(self.state.loops.values()):
            for op in list(walk_ops(loop.op)):
                if op.name == "tile.ldmatrix":
                    self._ldmatrix(op, loop)
                elif op.name == "tile.stmatrix":
                    self._stmatrix(op, loop)
                elif op.name == "tile.mma_sync":
                    self._mma(op, loop)

    # -- tables ---------------------------------------------------------------------------------
    def _table(self, name: str, values: np.ndarray) -> ir.Value:
        """A constant index table (a private memref.global of i64) read at the current insertion point."""
        symbol = f"__tile_sim_{name}"
        values = np.ascontiguousarray(values, dtype=np.int64)
        type_ = ir.MemRefType.get(list(values.shape), ir.IntegerType.get_signless(64))
        if symbol not in self._tables:
            with ir.InsertionPoint.at_block_begin(self.module.regions[0].blocks[0]):
                attr = ir.DenseElementsAttr.get(values, type=ir.RankedTensorType.get(list(values.shape),
                                                                                    ir.IntegerType.get_signless(64)))
                memref.GlobalOp(sym_name=symbol, type_=type_, sym_visibility="private", initial_value=attr,
                                constant=True)
            self._tables[symbol] = symbol
        return memref.get_global(type_, symbol)

    @staticmethod
    def _lookup(table: ir.Value, indices) -> ir.Value:
        return arith.index_cast(ir.IndexType.get(), memref.load(table, [b.index(i) if isinstance(i, int) else i
                                                                        for i in indices]))

    # -- per-lane values --------------------------------------------------------------------------
    def _lane_value(self, value: ir.Value, thread: ir.Value, loop) -> ir.Value:
        """`value` as thread `thread` computed it (itself when the whole block shares it), for the collective
        of thread loop `loop`."""
        defined_in = self.state.loop_defining(value)
        if defined_in is None:
            return value
        if defined_in is loop:  # alone in its phase, the op finds only thread ids defined in its own loop
            return _thread_id(self.state.thread_ids(loop).index(value), thread, self.state.block_dims)
        return memref.load(self.state.storage(value), [thread])

    def _registers(self, op: ir.Operation, value: ir.Value) -> ir.Value:
        if value not in self.expanded:
            raise diag.error(op, f"cannot simulate {op.name}: its register operand is not a \"local\" array")
        return self.expanded[value]

    # -- ldmatrix ---------------------------------------------------------------------------------
    def _ldmatrix(self, op: ir.Operation, loop) -> None:
        operands = list(op.operands)
        src, dst, indices = operands[0], self._registers(op, operands[1]), operands[2:]
        count = ir.IntegerAttr(op.attributes["count"]).value
        trans = ir.BoolAttr(op.attributes["trans"]).value
        offset = ir.IntegerAttr(op.attributes["dst_offset"]).value
        coords = ptx_isa.LDMATRIX_M8N8_B16.coords[:, 0, :, :]  # [lane, element, (row, col)]
        with op.location, ir.InsertionPoint(op):
            tid, lane = self.state.thread_ids(loop)[3], self.state.thread_ids(loop)[4]
            base = arith.subi(tid, lane)
            table = self._table("ldmatrix_m8n8_b16", coords)
            with self._used_lanes(lane, count):
                self._check_row_alignment(op, indices, loop)
            i16, i32 = ir.IntegerType.get_signless(16), ir.IntegerType.get_signless(32)
            for matrix in range(count):
                halves = []
                for element in range(2):
                    row, col = self._lookup(table, [lane, element, 0]), self._lookup(table, [lane, element, 1])
                    addressed, within = (col, row) if trans else (row, col)
                    owner = arith.addi(base, arith.addi(b.index(8 * matrix), addressed))
                    index = [self._lane_value(v, owner, loop) for v in indices]
                    index[-1] = arith.addi(index[-1], within)
                    bits = arith.bitcast(i16, memref.load(src, index))
                    halves.append(arith.extui(i32, bits))
                word = arith.ori(halves[0], arith.shli(halves[1], b.constant(i32, 16)))
                memref.store(word, dst, [tid, b.index(offset + matrix)])
        op.erase()

    @staticmethod
    def _used_lanes(lane: ir.Value, count: int):
        """A guard whose body runs on the lanes whose row addresses an ldmatrix or stmatrix of `count` matrices
        uses (the ISA's "Threads 0-7: addr0-addr7, ..." table: lanes below 8 * count)."""
        return b.if_then(arith.cmpi(b.CMPI.ult, lane, b.index(8 * count)))

    def _check_row_alignment(self, op: ir.Operation, indices, loop) -> None:
        """This lane's row address must be 16-byte aligned: its last index a multiple of 8 elements (rows
        of the buffer hold whole 16-byte rows, which the op's verifier requires)."""
        tid = self.state.thread_ids(loop)[3]
        last = self._lane_value(indices[-1], tid, loop)
        misplaced = arith.remui(last, b.index(8))
        with b.if_then(arith.cmpi(b.CMPI.ne, misplaced, b.index(0))):
            template = (f"{op.name.removeprefix('tile.')} at {self.checker.where(op)}: thread {{thread}} of block "
                        f"{{block}} addressed a row {{other}} elements past a 16-byte boundary (last index {{index}})")
            self.checker.record(self.checker.site(template), tid, misplaced, last)

    # -- stmatrix ---------------------------------------------------------------------------------
    def _stmatrix(self, op: ir.Operation, loop) -> None:
        operands = list(op.operands)
        dst, src, indices = operands[0], self._registers(op, operands[1]), operands[2:]
        registers = stmatrix_registers(op)
        trans = ir.BoolAttr(op.attributes["trans"]).value
        if self.state.n_threads % WARP:
            raise diag.error(op, f"cannot simulate tile.stmatrix in a block of {self.state.n_threads} threads: "
                                 f"it runs on whole warps of {WARP}")
        coords = ptx_isa.STMATRIX_M8N8_B16.coords[:, 0, :, :]  # [lane, element, (row, col)]
        element_type = dst.type.element_type
        with op.location, ir.InsertionPoint(op):
            tid, lane = self.state.thread_ids(loop)[3], self.state.thread_ids(loop)[4]
            base = arith.subi(tid, lane)
            table = self._table("stmatrix_m8n8_b16", coords)
            self._check_stmatrix_row(op, dst, indices, loop, len(registers))
            for matrix, offset in enumerate(registers):
                for element in range(2):
                    row, col = self._lookup(table, [lane, element, 0]), self._lookup(table, [lane, element, 1])
                    stored_row, within = (col, row) if trans else (row, col)
                    owner = arith.addi(base, arith.addi(b.index(8 * matrix), stored_row))
                    index = [self._lane_value(v, owner, loop) for v in indices]
                    value = memref.load(src, [tid, b.index(offset + element)])
                    if value.type != element_type:
                        value = arith.truncf(element_type, value)
                    self._store_in_row(op, dst, value, index, within, tid)
        op.erase()

    def _store_in_row(self, op: ir.Operation, dst: ir.Value, value: ir.Value, row: list[ir.Value], within: ir.Value,
                      tid: ir.Value) -> None:
        """Thread `tid` stores `value` as element `within` of the row starting at `row`, unless the row is
        misaligned or outside `dst` (an error its lane records)."""
        with b.if_then(self._row_usable(dst, row)):
            index = [*row[:-1], arith.addi(row[-1], within)]
            self._check_not_pending(op, dst, index, tid)
            memref.store(value, dst, index)

    def _check_stmatrix_row(self, op: ir.Operation, dst: ir.Value, indices, loop, count: int) -> None:
        """A lane whose address the instruction uses gives an aligned row inside `dst`."""
        tid, lane = self.state.thread_ids(loop)[3], self.state.thread_ids(loop)[4]
        with self._used_lanes(lane, count):
            self._check_row_alignment(op, indices, loop)
            inside, dim, bad_index = bounds(dst, [self._lane_value(v, tid, loop) for v in indices], False, 8)
            if inside is None:
                return
            with b.if_then(arith.xori(inside, b.constant(ir.IntegerType.get_signless(1), 1))):
                template = (f"stmatrix at {self.checker.where(op)}: thread {{thread}} of block {{block}} addressed "
                            f"a row outside {self.checker.buffers[dst].described()}: index {{index}} on dim "
                            "{other} (the row's 8 elements must lie inside the buffer)")
                self.checker.record(self.checker.site(template), tid, dim, bad_index)

    def _check_not_pending(self, op: ir.Operation, dst: ir.Value, index: list[ir.Value], tid: ir.Value) -> None:
        """Thread `tid` writing element `index` of a cp.async target must find its copy landed."""
        pending = self.async_pending.get(dst)
        if pending is None:
            return
        element = linear(dst, index, 0)
        mark, i64 = memref.load(pending, [element]), ir.IntegerType.get_signless(64)  # thread << 20 | group, or -1
        with b.if_then(arith.cmpi(b.CMPI.ne, mark, b.constant(i64, -1))):
            template = (f"data race on shared buffer '{self.checker.buffers[dst].name}' element {{index}} in block "
                        f"{{block}}: thread {{thread}} writes it by the stmatrix at {self.checker.where(op)} while the "
                        "cp.async of thread {other} into it has not landed (no tile.cp_async_wait of that thread "
                        "retired its group before this write: a wrong pending count?)")
            self.checker.record(self.checker.site(template), tid, arith.shrsi(mark, b.constant(i64, 20)), element)

    @staticmethod
    def _row_usable(dst: ir.Value, index: list[ir.Value]) -> ir.Value:
        """Whether the row starting at `index` is 16-byte aligned and inside `dst`."""
        aligned = arith.cmpi(b.CMPI.eq, arith.remui(index[-1], b.index(8)), b.index(0))
        inside, _, _ = bounds(dst, index, False, 8)
        return aligned if inside is None else arith.andi(aligned, inside)

    # -- mma.sync ---------------------------------------------------------------------------------
    def _mma(self, op: ir.Operation, loop) -> None:
        a, bm, c = (self._registers(op, v) for v in op.operands)
        atype = ir.StringAttr(op.attributes["operand_type"]).value
        ctype = str(c.type.element_type)
        inst = ptx_isa.Mma("m16n8k16", ctype, atype, atype, ctype)
        offsets = {name: ir.IntegerAttr(op.attributes[f"{name}_offset"]).value for name in ("a", "b", "c")}
        halves_a = str(a.type.element_type) != "i32"
        with op.location, ir.InsertionPoint(op):
            tid, lane = self.state.thread_ids(loop)[3], self.state.thread_ids(loop)[4]
            base = arith.subi(tid, lane)
            c_table = self._table(f"mma_m16n8k16_c_{ctype}", _element_coords(inst.fragment("c")))
            a_table = self._table(f"mma_m16n8k16_a_{atype}_holders", _holders(inst.fragment("a")))
            b_table = self._table(f"mma_m16n8k16_b_{atype}_holders", _holders(inst.fragment("b")))
            f32 = ir.F32Type.get()
            results = []
            for element in range(_element_coords(inst.fragment("c")).shape[1]):
                row, col = self._lookup(c_table, [lane, element, 0]), self._lookup(c_table, [lane, element, 1])
                start = memref.load(c, [tid, b.index(offsets["c"] + element)])
                start = start if ctype == "f32" else arith.extf(f32, start)
                k_loop = scf.ForOp(b.index(0), b.index(16), b.index(1), [start])
                with ir.InsertionPoint(k_loop.body):
                    k, acc = k_loop.induction_variable, k_loop.inner_iter_args[0]
                    x = self._operand(a, a_table, [row, k], base, offsets["a"], atype, halves_a)
                    y = self._operand(bm, b_table, [k, col], base, offsets["b"], atype, False)
                    scf.YieldOp([arith.addf(acc, arith.mulf(x, y))])
                results.append(k_loop.results[0])
            for element, value in enumerate(results):
                value = value if ctype == "f32" else arith.truncf(c.type.element_type, value)
                memref.store(value, c, [tid, b.index(offsets["c"] + element)])
        op.erase()

    def _operand(self, registers: ir.Value, holders: ir.Value, at, base: ir.Value, offset: int, etype: str,
                 halves: bool) -> ir.Value:
        """Element `at` of an A or B operand as float32, read from the lane of the warp holding it."""
        lane = self._lookup(holders, [*at, 0])
        reg = self._lookup(holders, [*at, 1])
        half = self._lookup(holders, [*at, 2])
        owner = arith.addi(base, lane)
        element_type = ir.F16Type.get() if etype == "f16" else ir.BF16Type.get()
        if halves:  # a register array of 16-bit elements, two per .b32 register, low half first
            slot = arith.addi(b.index(offset), arith.addi(arith.muli(reg, b.index(2)), half))
            value = memref.load(registers, [owner, slot])
        else:
            i32, i16 = ir.IntegerType.get_signless(32), ir.IntegerType.get_signless(16)
            word = memref.load(registers, [owner, arith.addi(b.index(offset), reg)])
            shift = arith.index_cast(i32, arith.muli(half, b.index(16)))
            value = arith.bitcast(element_type, arith.trunci(i16, arith.shrui(word, shift)))
        return arith.extf(ir.F32Type.get(), value)


def _thread_id(which: int, thread: ir.Value, block_dims: tuple[int, int, int]) -> ir.Value:
    """Id `which` of `ThreadState.thread_ids`' (x, y, z, linear, lane) of linear thread `thread`."""
    dim_x, dim_y, _ = block_dims
    if which == 0:
        return arith.remui(thread, b.index(dim_x))
    if which == 1:
        return arith.remui(arith.divui(thread, b.index(dim_x)), b.index(dim_y))
    if which == 2:
        return arith.divui(thread, b.index(dim_x * dim_y))
    return thread if which == 3 else arith.remui(thread, b.index(WARP))


def _element_coords(fragment: ptx_isa.Fragment) -> np.ndarray:
    """[lane, element, (row, col)] with elements register-major (register r, element e at r * per + e)."""
    coords = fragment.coords
    return coords.reshape(coords.shape[0], coords.shape[1] * coords.shape[2], 2)


def _holders(fragment: ptx_isa.Fragment) -> np.ndarray:
    """[row, col, (lane, register, half)]: which lane holds each matrix element, where (the inverse table)."""
    table = np.full((fragment.rows, fragment.cols, 3), -1, dtype=np.int64)
    for lane in range(fragment.coords.shape[0]):
        for reg in range(fragment.registers):
            for half in range(fragment.per_register):
                row, col = fragment.coords[lane, reg, half]
                table[row, col] = (lane, reg, half)
    if (table < 0).any():
        raise ValueError(f"{fragment.name}: some element is held by no lane")
    return table
