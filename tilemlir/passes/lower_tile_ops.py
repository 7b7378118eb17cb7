"""lower-tile-ops: tile.copy, tile.fill and tile.reduce become loops, warp shuffles and shared exchanges.

Takes tile-level IR after infer-layouts (every fragment and every static
tile.parallel has a `layout`). Gives tile-level IR without tile.copy (but
the `tile.tma` ring copies plan-pipeline marked, and the `tile.tma_store` and
`tile.stmatrix` copies select-tma-stores and select-stmatrix marked, which
tma-copies, tma-stores and partition-threads lower at the thread level), tile.fill
and tile.reduce, and with every buffer-valued tile.atomic_add
split into scalar ones; tile.gemm is left alone (lower-gemm-simt lowers
it, before infer-layouts). What replaces them:

- Element work is a `tile.parallel` with a `layout` (which thread runs which
  point): over the fragment's own layout when a fragment is involved (a
  copy box smaller than the fragment is masked with an `scf.if`), else over
  the box with a coalescing layout (16 bytes of the global element type per
  thread, consecutive threads on consecutive runs). Copies convert the
  element type. A copy whose destination is a "local" buffer runs in every
  thread (`scf.for` loops marked `tile.unroll`); a fragment-to-local or
  fragment-to-fragment copy with different layouts goes through a shared
  buffer.
- The shared stores of a `tile.async` copy (a plan-pipeline ring copy) carry `tile.async`,
  which async-copies turns into `tile.cp_async` after vectorize.
- Global reads get `tile.pad`: `analysis.padding.padding_attr`, computed for
  every read before anything is rewritten (also for the global
  `memref.load`s already in element code).
- `tile.reduce` of a fragment, into the fragment's projection `P` (the
  destination itself when its layout is `P`, else a `<dst>_partial`
  fragment merged into it afterwards):
  1. a `tile.parallel {tile.convergent}` over `P` sets every register slot
     to the identity (with `clear = false` the thread whose reduced-dim
     thread digits are all 0 keeps the old value, so it counts once);
  2. a `tile.parallel {tile.accumulate}` over the source combines each
     thread's own elements into its slots of `P`, in order;
  3. a `tile.parallel {tile.convergent}` over `P` runs the butterfly
     `gpu.shuffle xor` over the reduced dim's lanes (largest offset first);
  4. when the reduced dim also spans warps, one thread per warp writes its
     partial to a `<dst>_red` shared buffer `[elements, warps]` and every
     holder reads the row back and combines it (partition-threads puts the
     one barrier between).
  Reductions of shared or local sources run serially per destination
  element.

Parallel loops made here may hold thread-level ops (`gpu.thread_id`,
`gpu.shuffle`). `tile.accumulate` means a thread's points run in order and
may combine into a lower-rank fragment; `tile.convergent` means every
register slot of the domain runs, padding included (no masking), so all
lanes of a warp reach each shuffle.
"""

from __future__ import annotations

import math

from tilemlir.analysis import layout_ir as lir
from tilemlir.analysis.fragment_moves import copy_is_register_local, reduction_threads
from tilemlir.analysis.layouts import TiledLayout, same_holders, tiled_layout, vector_elements
from tilemlir.analysis.padding import PAD_ATTR, identity, padding_attr
from tilemlir.analysis.shared_layouts import ASYNC_ATTR
from tilemlir.analysis.stmatrix_stores import STMATRIX_ATTR
from tilemlir.analysis.tma_boxes import TMA_ATTR, TMA_STORE_ATTR
from tilemlir.analysis.signedness import is_unsigned, mark_unsigned
from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects import tile
from tilemlir.dialects.tile import FRAGMENT, LOCAL, SHARED, memory_space
from tilemlir.ir_util import constant_int, defining_op, enclosing, operation, walk_ops
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass
from tilemlir.rewriting.thread_builder import Builder, flat_index

ACCUMULATE_ATTR = "tile.accumulate"
CONVERGENT_ATTR = "tile.convergent"
ALL_REPLICAS_ATTR = "tile.all_replicas"


def _kept_whole(copy: ir.Operation) -> bool:
    """A copy lowered at the thread level: tma-copies', tma-stores' or partition-threads' (stmatrix)."""
    return any(attr in copy.attributes for attr in (TMA_ATTR, TMA_STORE_ATTR, STMATRIX_ATTR))


def _shape(value: ir.Value) -> tuple[int, ...]:
    return tuple(value.type.shape)


class _KernelLowering:
    def __init__(self, kernel: ir.Operation):
        self.kernel = kernel
        self.threads = lir.kernel_threads(kernel)
        self.block = kernel.regions[0].blocks[0]
        self.pool: dict = {}
        self.names = {lir.name_of(op) for op in walk_ops(kernel) if op.name.startswith("tile.alloc_")}
        self.pads: dict = {}
        self.asynchronous = False  # lowering a plan-pipeline ring copy: its shared stores get `tile.async`

    def builder(self, op: ir.Operation) -> Builder:
        return Builder(ir.InsertionPoint(op), op.location, self.block, self.pool)

    def run(self) -> None:
        ops = list(walk_ops(self.kernel))
        self._mark_padding(ops)
        for op in ops:
            if op.name == "tile.copy" and not _kept_whole(op):
                src, dst = op.operands[0], op.operands[1]
                offsets = list(op.operands[2:])
                box = [a.value for a in op.attributes["shape"]]
                self.asynchronous = ASYNC_ATTR in op.attributes
                self.copy(self.builder(op), src, dst, offsets[: src.type.rank], offsets[src.type.rank :], box,
                          pad=self.pads.get(op))
                self.asynchronous = False
                op.erase()
            elif op.name == "tile.fill":
                self.fill(self.builder(op), op.operands[0], op.operands[1])
                op.erase()
            elif op.name == "tile.reduce":
                self.reduce(op)
                op.erase()
            elif op.name == "tile.atomic_add" and isinstance(op.operands[1].type, ir.MemRefType):
                self.atomic_add(op)
                op.erase()

    def _mark_padding(self, ops) -> None:
        for op in ops:
            if op.name == "tile.copy" and memory_space(op.operands[0].type) is None:
                self.pads[op] = padding_attr(op)
            elif (op.name == "memref.load" and memory_space(op.operands[0].type) is None
                  and enclosing(op, "tile.parallel", stop="tile.kernel") is not None):
                op.attributes[PAD_ATTR] = padding_attr(op)

    # ------------------------------------------------------------- buffers

    def fresh_name(self, base: str) -> str:
        name, n = base, 1
        while name in self.names:
            name, n = f"{base}_{n}", n + 1
        self.names.add(name)
        return name

    def alloc(self, space: str, shape, element_type, base: str, loc, layout: TiledLayout | None = None,
              unsigned: bool = False) -> ir.Value:
        """A new buffer at the top of the kernel; `unsigned`: it holds an unsigned buffer's values."""
        make = {SHARED: tile.alloc_shared, FRAGMENT: tile.alloc_fragment, LOCAL: tile.alloc_local}[space]
        op = make(list(shape), element_type, self.fresh_name(base), loc=loc,
                  ip=ir.InsertionPoint.at_block_begin(self.block))
        if layout is not None:
            lir.set_layout(op, layout)
        mark_unsigned(op, unsigned)
        return op.results[0]

    def layout_of(self, value: ir.Value) -> TiledLayout:
        alloc = lir.fragment_alloc(value)
        layout = lir.checked_layout(alloc) if alloc is not None else None
        if layout is None:
            raise diag.error(alloc or self.kernel, "fragment has no layout: run infer-layouts before lower-tile-ops")
        return layout

    def box_layout(self, box, element_type: ir.Type) -> TiledLayout:
        """A coalescing layout for a loop over a box with no fragment in it."""
        box = tuple(box)
        eff = lir.effective_dims(box)
        layout = tiled_layout(tuple(box[k] for k in eff), self.threads, vector_elements(element_type))
        return lir.unsqueeze(layout, box)

    # ------------------------------------------------------------ parallels

    def parallel(self, b: Builder, extents, layout: TiledLayout, *flags: str):
        """A new tile.parallel before `b`'s point; returns (builder inside, loop variables)."""
        op = tile.parallel([b.index(e) for e in extents], loc=b.loc, ip=b.ip)
        lir.set_layout(op, layout)
        for flag in flags:
            op.operation.attributes[flag] = ir.UnitAttr.get()
        block = tile.body_block(op)
        yield_op = tile.yield_(loc=b.loc, ip=ir.InsertionPoint(block))
        return b.before(yield_op), list(block.arguments)

    def serial(self, b: Builder, extents, body) -> None:
        """Loops over `extents` run by every thread (`tile.unroll`: they index registers)."""
        if not extents:
            body(b, [])
            return
        with b.loop(extents[0]) as (inner, iv, _, _):
            self.serial(inner, extents[1:], lambda bb, ivs: body(bb, [iv, *ivs]))

    # ----------------------------------------------------------------- copy

    def copy(self, b: Builder, src, dst, src_off, dst_off, box, pad=None, combine: str | None = None) -> None:
        s_space, d_space = memory_space(src.type), memory_space(dst.type)
        if s_space == FRAGMENT and d_space in (FRAGMENT, LOCAL) and not self._same_fragment_frame(src, dst, src_off,
                                                                                               dst_off, box):
            staged = self.alloc(SHARED, box, src.type.element_type, f"{lir.name_of(defining_op(src))}_stage",
                                b.loc, unsigned=is_unsigned(src))
            zeros = [b.index(0)] * len(box)
            self.copy(b, src, staged, src_off, zeros, box)
            self.copy(b, staged, dst, zeros, dst_off, box, combine=combine)
            return
        if d_space == FRAGMENT:
            self._copy_over(b, dst, dst_off, box, src, src_off, dst, dst_off, pad, combine)
        elif s_space == FRAGMENT:
            self._copy_over(b, src, src_off, box, src, src_off, dst, dst_off, pad, combine)
        elif d_space == LOCAL:
            self.serial(b, list(box), lambda bb, p: self._move_box(bb, p, box, src, src_off, dst, dst_off, pad, combine))
        else:
            global_side = src if s_space is None else dst
            inner, p = self.parallel(b, box, self.box_layout(box, global_side.type.element_type))
            self._move_box(inner, p, box, src, src_off, dst, dst_off, pad, combine)

    def _same_fragment_frame(self, src, dst, src_off, dst_off, box) -> bool:
        """A whole fragment copied onto a whole fragment of the same holders (no exchange needed)."""
        if memory_space(dst.type) != FRAGMENT:
            return False
        if _shape(src) != _shape(dst) or tuple(box[-src.type.rank:]) != _shape(src):
            return False
        if any(constant_int(v) != 0 for v in [*src_off, *dst_off]):
            return False
        return copy_is_register_local(self.layout_of(src), self.layout_of(dst), whole_box=True)

    def _copy_over(self, b, frame, frame_off, box, src, src_off, dst, dst_off, pad, combine) -> None:
        """Copy driven by the fragment `frame`: its layout runs the loop, the box is masked onto it."""
        shape = _shape(frame)
        inner, p = self.parallel(b, shape, self.layout_of(frame))
        lead = len(box) - len(shape)
        box_point = [inner.index(0)] * lead + [inner.sub(p[k], frame_off[k]) for k in range(len(shape))]
        conditions = []
        for k in range(len(shape)):
            start, extent = constant_int(frame_off[k]), box[lead + k]
            if start != 0:
                conditions.append(inner.cmp("uge", p[k], frame_off[k]))
            if not (start == 0 and extent == shape[k]):
                conditions.append(inner.cmp("ult", box_point[lead + k], extent))
        condition = inner.and_(conditions)
        if condition is None:
            self._move_box(inner, box_point, box, src, src_off, dst, dst_off, pad, combine)
            return
        with inner.if_(condition) as masked:
            self._move_box(masked, box_point, box, src, src_off, dst, dst_off, pad, combine)

    def _move_box(self, b, box_point, box, src, src_off, dst, dst_off, pad, combine) -> None:
        """dst[dst_off + box_point] = convert(src[src_off + box_point]) (combined with the old value)."""
        value = b.load(src, self._side_index(b, box_point, box, src, src_off))
        if pad is not None:
            defining_op(value).attributes[PAD_ATTR] = pad
        value = b.convert(value, dst.type.element_type, is_unsigned(src), is_unsigned(dst))
        dst_index = self._side_index(b, box_point, box, dst, dst_off)
        if combine is not None:
            value = b.combine(combine, b.load(dst, dst_index), value, is_unsigned(dst))
        store = b.store(value, dst, dst_index)
        if self.asynchronous and memory_space(dst.type) == SHARED:
            store.attributes[ASYNC_ATTR] = ir.UnitAttr.get()

    @staticmethod
    def _side_index(b, box_point, box, side, offsets):
        rank = side.type.rank
        lead = len(box) - rank
        return [b.add(offsets[k], box_point[lead + k]) for k in range(rank)]

    # ----------------------------------------------------------------- fill

    def fill(self, b: Builder, dst, value) -> None:
        shape = _shape(dst)
        space = memory_space(dst.type)
        if space == LOCAL:
            self.serial(b, list(shape), lambda bb, p: bb.store(value, dst, p))
            return
        layout = self.layout_of(dst) if space == FRAGMENT else self.box_layout(shape, dst.type.element_type)
        inner, p = self.parallel(b, shape, layout)
        inner.store(value, dst, p)

    # --------------------------------------------------------------- reduce

    def reduce(self, op: ir.Operation) -> None:
        src, dst = op.operands[0], op.operands[1]
        kind = op.attributes["kind"].value
        dim = op.attributes["dim"].value
        clear = ir.BoolAttr(op.attributes["clear"]).value
        b = self.builder(op)
        if memory_space(src.type) == FRAGMENT:
            _FragmentReduction(self, b, src, dst, kind, dim, clear).lower()
        else:
            self._reduce_serially(b, src, dst, kind, dim, clear)

    def _reduce_serially(self, b, src, dst, kind, dim, clear) -> None:
        """Each destination element reduces its whole source line in one thread (shared or local sources)."""
        shape, space = _shape(dst), memory_space(dst.type)
        if space == LOCAL:
            self.serial(b, list(shape), lambda bb, p: self._serial_line(bb, src, dst, kind, dim, clear, p))
            return
        layout = self.layout_of(dst) if space == FRAGMENT else self.box_layout(shape, dst.type.element_type)
        inner, p = self.parallel(b, shape, layout)
        self._serial_line(inner, src, dst, kind, dim, clear, p)

    def _serial_line(self, b: Builder, src, dst, kind, dim, clear, point) -> None:
        element, unsigned = dst.type.element_type, is_unsigned(dst)
        start = b.load(dst, point) if not clear else b.const(identity(kind, element, unsigned), element)
        outer = list(point) if src.type.rank > 1 else []
        with b.loop(src.type.shape[dim], unroll=memory_space(src.type) == LOCAL, iter_args=[start]) as (
            inner, k, (acc,), loop
        ):
            value = inner.convert(inner.load(src, [*outer[:dim], k, *outer[dim:]]), element, is_unsigned(src), unsigned)
            if kind.startswith("abs"):
                value = inner.absolute(value, unsigned)
            inner.yield_([inner.combine(kind, acc, value, unsigned)])
        b.store(loop.results[0], dst, point)

    # ----------------------------------------------------------- atomic add

    def atomic_add(self, op: ir.Operation) -> None:
        dst, value = op.operands[0], op.operands[1]
        indices = list(op.operands[2:])
        b = self.builder(op)
        shape = _shape(value)
        layout = self.layout_of(value) if memory_space(value.type) == FRAGMENT else self.box_layout(
            shape, dst.type.element_type)
        inner, p = self.parallel(b, shape, layout)
        lead = dst.type.rank - len(shape)
        target = [*indices[:lead], *[inner.add(indices[lead + k], p[k]) for k in range(len(shape))]]
        element = inner.load(value, p)
        tile.atomic_add(dst, element, target, loc=inner.loc, ip=inner.ip)


class _FragmentReduction:
    """tile.reduce of a fragment: per-thread partials, butterfly shuffles, then a shared exchange across warps."""

    WARP = 32

    def __init__(self, lowering: _KernelLowering, b: Builder, src, dst, kind, dim, clear):
        self.low, self.b = lowering, b
        self.src, self.dst, self.kind, self.dim, self.clear = src, dst, kind, dim, clear
        self.src_layout = lowering.layout_of(src)
        self.plan = reduction_threads(self.src_layout, dim, _shape(dst))
        self.layout, self.lanes, self.warps, self.copies = self.plan.layout, self.plan.lanes, self.plan.warps, \
            self.plan.copies
        self.element = dst.type.element_type
        self.unsigned = is_unsigned(dst)

    def lower(self) -> None:
        direct = memory_space(self.dst.type) == FRAGMENT and same_holders(
            lir.squeeze(self.low.layout_of(self.dst)), lir.squeeze(self.layout))
        if direct:
            self.work, clear = self.dst, self.clear
        else:
            base = f"{lir.name_of(defining_op(self.dst))}_partial"
            self.work = self.low.alloc(FRAGMENT, _shape(self.dst), self.element, base, self.b.loc, self.layout,
                                       self.unsigned)
            clear = True
        self.work_layout = self.low.layout_of(self.work)
        self._init(clear)
        self._partials()
        if self.lanes:
            self._shuffle()
        if self.warps:
            self._exchange()
        if not direct:
            zeros = [self.b.index(0)] * self.dst.type.rank
            self.low.copy(self.b, self.work, self.dst, zeros, zeros, list(_shape(self.dst)),
                          combine=None if self.clear else self.kind)

    def _tid_digit(self, b: Builder, coeff: int, size: int) -> ir.Value:
        return b.digit(b.thread_id(self.low.threads), coeff, size)

    def _init(self, clear: bool) -> None:
        inner, p = self.low.parallel(self.b, _shape(self.work), self.work_layout, CONVERGENT_ATTR)
        value = inner.const(identity(self.kind, self.element, self.unsigned), self.element)
        if not clear:
            lead = inner.and_([inner.cmp("eq", self._tid_digit(inner, c, z), 0) for c, z in self.lanes + self.warps])
            if lead is not None:
                value = inner.select(lead, inner.load(self.work, p), value)
            else:
                value = inner.load(self.work, p)
        inner.store(value, self.work, p)

    def _partials(self) -> None:
        inner, p = self.low.parallel(self.b, _shape(self.src), self.src_layout, ACCUMULATE_ATTR)
        value = inner.convert(inner.load(self.src, p), self.element, is_unsigned(self.src), self.unsigned)
        if self.kind.startswith("abs"):
            value = inner.absolute(value, self.unsigned)
        target = [p[k] for k in range(len(p)) if k != self.dim] or [inner.index(0)]
        inner.store(self.combine(inner, inner.load(self.work, target), value), self.work, target)

    def combine(self, b: Builder, a: ir.Value, c: ir.Value) -> ir.Value:
        return b.combine(self.kind, a, c, self.unsigned)

    def _shuffle(self) -> None:
        inner, p = self.low.parallel(self.b, _shape(self.work), self.work_layout, CONVERGENT_ATTR)
        value = inner.load(self.work, p)
        for offset in self.plan.shuffle_offsets:
            value = self.combine(inner, value, inner.shuffle_xor(value, offset, self.WARP))
        inner.store(value, self.work, p)

    def _exchange(self) -> None:
        shape = _shape(self.work)
        slots = self.plan.exchange_slots
        base = f"{lir.name_of(defining_op(self.dst))}_red"
        red = self.low.alloc(SHARED, [math.prod(shape), slots], self.element, base, self.b.loc,
                             unsigned=self.unsigned)
        inner, p = self.low.parallel(self.b, shape, self.work_layout, ALL_REPLICAS_ATTR)
        writer = inner.and_([inner.cmp("eq", self._tid_digit(inner, c, z), 0) for c, z in self.lanes + self.copies])
        slot, stride = inner.index(0), 1
        for c, z in self.warps:
            slot = inner.add(slot, inner.mul(self._tid_digit(inner, c, z), stride))
            stride *= z
        row = flat_index(inner, p, shape)
        if writer is None:
            inner.store(inner.load(self.work, p), red, [row, slot])
        else:
            with inner.if_(writer) as write:
                write.store(write.load(self.work, p), red, [row, slot])
        inner, p = self.low.parallel(self.b, shape, self.work_layout)
        row = flat_index(inner, p, shape)
        start = inner.const(identity(self.kind, self.element, self.unsigned), self.element)
        with inner.loop(slots, iter_args=[start]) as (body, w, (acc,), loop):
            body.yield_([self.combine(body, acc, body.load(red, [row, w]))])
        inner.store(loop.results[0], self.work, p)


@register_pass("lower-tile-ops", "lower tile.copy/fill/reduce to parallel loops, warp shuffles and shared exchanges")
def run(module: ir.Operation, options) -> None:
    module = operation(module)
    with module.context, module.location:
        kernels = [op for op in walk_ops(module) if op.name == "tile.kernel"]
        for op in kernels:
                _KernelLowering(op).run()
