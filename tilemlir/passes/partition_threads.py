"""partition-threads: tile level to thread level (SIMT), as docs/ir.md's thread-level section describes.

Takes tile-level IR after lower-tile-ops (no tile.copy/fill/reduce left
but `tile.tma` ring copies and `tile.tma_store` copies, which stay for tma-copies and tma-stores, and
`tile.stmatrix` copies, which become `rewriting/stmatrix_stores.py`'s stmatrix instructions here; every static tile.parallel and every fragment has a `layout`). Gives, per
kernel:

- `tile.kernel` -> one `gpu.launch` (grid from the kernel's grid operands,
  unused dims 1; block `(threads, 1, 1)`); the block indices are the
  launch's block-id arguments, or with `tile.rasterization` (T.use_swizzle)
  the coordinates `rewriting/rasterization.py` computes from them at the top
  of the body; `%tid = gpu.thread_id x upper_bound T` at the top of the body.
- Each fragment -> `memref.alloca() {name, tile.layout}` of its register
  count in "local" space; shared / local buffers -> `memref.alloca` in their
  space (a shared one keeps its `tile.swizzle` and `tile.ring`).
- Each `tile.parallel` -> the loop nest its layout implies: the thread
  digits come from `%tid` (`(tid floordiv c) mod n`), every register digit
  is an `scf.for` from 0 to its size marked `tile.unroll` (outermost: the
  largest register stride; innermost: consecutive registers, so contiguous
  elements sit in the innermost loop), the point's logical indices are
  rebuilt from the digits and the body runs once per point. Fragment
  accesses become loads/stores of the register slot, computed from the loop
  variables only (constants once the emitter unrolls). Points past a
  dim's extent in a padded layout are masked by an `scf.if` on the logical
  index, placed as far out as the digits it needs allow (not for
  `tile.convergent` loops). In a replicated domain only replica 0 writes
  shared or global memory (not for `tile.all_replicas` loops, whose bodies
  pick writers themselves); one that also reads a shared or global buffer
  it writes runs in replica 0 alone (and may write no registers). A loop without static extents (no fragments)
  becomes a thread-strided loop over its linearized space.
- Fragment accesses outside parallel loops need a fully replicated
  fragment; they index registers by the layout's local map. So do
  *gathers*, accesses inside a parallel indexed by other than its loop
  variables (`f[63 - i]`): the register slot is computed from the index
  values; the threads running each point must hold what it reads (checked
  with the indices evaluated at every point, or given by full
  replication), and a written gather needs the fragment and the loop fully
  replicated (every thread keeps its own copy current).
- `tile.pipelined` -> `scf.for` with `tile.num_stages`.
- `gpu.barrier`s where `analysis/barriers.py` plans them: before the first
  shared-memory access that reads what another thread wrote since the last
  barrier, or writes what another thread read since then, between tile
  operations and inside thread code's uniform loops and conditions.
- Global accesses keep their logical indices and any `tile.pad`; no bounds
  guards are added (insert-guards does that).

A `tile.gemm` with `tile.mma` (select-mma) stays, for lower-gemm-mma: its
fragment operands (C, and a fragment A) become their register arrays, the
alloca keeping the layout, and the gemm gains `tile.gemm_mnk = [M, N, K]`
(the register arrays no longer say); to barrier planning it is a read of
its shared operands by every thread. Any other `tile.gemm` left here
(lower-gemm-simt did not run) is a CompileError naming its line.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from tilemlir.analysis import layout_ir as lir
from tilemlir.analysis.barriers import plan_barriers
from tilemlir.analysis.index_values import gather_is_held
from tilemlir.analysis.layouts import Digit, TiledLayout
from tilemlir.analysis.shared_layouts import RING_ATTR, SWIZZLE_ATTR
from tilemlir.analysis.stmatrix_stores import STMATRIX_ATTR
from tilemlir.analysis.tma_boxes import TMA_ATTR, TMA_STORE_ATTR
from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects.tile import FRAGMENT, LOCAL, MIN_BLOCKS, SHARED, memory_space, rasterization
from tilemlir.dialects.tensor_core_ops import GEMM_MNK_ATTR, MMA_ATTR
from tilemlir.ir_util import constant_int, operation, ops_named, walk_ops
from tilemlir.mlir import gpu, ir
from tilemlir.pass_infra.registry import register_pass
from tilemlir.passes.lower_tile_ops import ACCUMULATE_ATTR, ALL_REPLICAS_ATTR, CONVERGENT_ATTR
from tilemlir.rewriting.rasterization import rasterized_coordinates
from tilemlir.rewriting.stmatrix_stores import store_by_stmatrix
from tilemlir.rewriting.thread_builder import Builder

LAYOUT_ON_ALLOCA = "tile.layout"
NUM_STAGES_ATTR = "tile.num_stages"
_UNLOWERED = ("tile.copy", "tile.fill", "tile.reduce")


@dataclass
class _Fragment:
    alloca: ir.Value
    layout: TiledLayout
    name: str


class _KernelPartition:
    def __init__(self, kernel: ir.Operation):
        self.kernel = kernel
        self.threads = lir.kernel_threads(kernel)
        self.fragments: dict[ir.Value, _Fragment] = {}

    def run(self) -> None:
        self._check_lowered()
        for barrier in plan_barriers(self.kernel):
            ir.Operation.create("gpu.barrier", loc=barrier.op.location, ip=ir.InsertionPoint(barrier.op))
        loc = self.kernel.location
        self.body = self._launch()
        self.b = Builder(ir.InsertionPoint.at_block_begin(self.body), loc, self.body)
        self.tid = self.b.thread_id(self.threads)
        ops = list(walk_ops(self.launch))
        allocs = [op for op in ops if op.name.startswith("tile.alloc_")]
        parallels = [op for op in ops if op.name == "tile.parallel"]
        pipelined = [op for op in ops if op.name == "tile.pipelined"]
        for op in allocs:
            self._alloca(op)
        for op in parallels:
            self._parallel(op)
        serial = [op for op in walk_ops(self.launch)
                  if op.name in ("memref.load", "memref.store") and self._fragment_operand(op) is not None]
        for op in serial:
            self._serial_access(op)
        for op in pipelined:
            self._pipelined(op)
        for op in ops_named(self.launch, "tile.gemm"):
            self._keep_mma_gemm(op)
        for op in ops_named(self.launch, "tile.copy"):
            if STMATRIX_ATTR in op.attributes:
                fragment = self.fragments[op.operands[0]]
                store_by_stmatrix(self.b.before(op).located(op.location), op, fragment.alloca, fragment.layout,
                                  self.tid)
                op.erase()
        for op in reversed(allocs):
            op.erase()

    def _check_lowered(self) -> None:
        for op in walk_ops(self.kernel):
            if op.name in _UNLOWERED and not any(a in op.attributes for a in (TMA_ATTR, TMA_STORE_ATTR, STMATRIX_ATTR)):
                raise diag.error(op, f"{op.name} must be lowered before partition-threads (run lower-tile-ops first)")
            if op.name == "tile.gemm" and MMA_ATTR not in op.attributes:
                raise diag.error(op, "tile.gemm must be lowered before partition-threads (run lower-gemm-simt first)")
        for op in walk_ops(self.kernel):
            if op.name == "tile.alloc_fragment":
                for use in op.results[0].uses:
                    user = operation(use.owner)
                    if user.name == "tile.gemm" and use.operand_number in (0, 2):
                        continue
                    if STMATRIX_ATTR in user.attributes and use.operand_number == 0:
                        continue
                    if user.name not in ("memref.load", "memref.store") or (
                            user.name == "memref.store" and use.operand_number == 0):
                        raise diag.error(user, f"fragment '{lir.name_of(op)}' is used by {user.name}, which "
                                               "partition-threads cannot map onto registers")

    # -------------------------------------------------------------- launch

    def _launch(self) -> ir.Block:
        kernel = self.kernel
        outer = Builder(ir.InsertionPoint(kernel), kernel.location, _function_block(kernel))
        one = outer.index(1)
        grid = list(kernel.operands) + [one] * (3 - len(kernel.operands))
        launch = gpu.LaunchOp(tuple(grid), (outer.index(self.threads), one, one), loc=kernel.location,
                              ip=ir.InsertionPoint(kernel))
        self.launch = launch.operation
        if MIN_BLOCKS in kernel.attributes:
            self.launch.attributes[MIN_BLOCKS] = kernel.attributes[MIN_BLOCKS]
        body = launch.regions[0].blocks[0]
        terminator = ir.Operation.create("gpu.terminator", loc=kernel.location, ip=ir.InsertionPoint(body))
        kernel_block = kernel.regions[0].blocks[0]
        coordinates = _block_coordinates(kernel, body)
        for k, arg in enumerate(kernel_block.arguments):
            arg.replace_all_uses_with(coordinates[k])
        _move_body(kernel_block, terminator)
        kernel.erase()
        return body

    # ------------------------------------------------------------- buffers

    def _alloca(self, op: ir.Operation) -> None:
        type_ = op.results[0].type
        space = memory_space(type_)
        attrs = {key: op.attributes[key] for key in ("name", SWIZZLE_ATTR, RING_ATTR) if key in op.attributes}
        if space == FRAGMENT:
            layout = lir.checked_layout(op, self.threads)
            if layout is None:
                raise diag.error(op, "fragment has no layout: run infer-layouts before partition-threads")
            shape = [layout.registers]
            attrs[LAYOUT_ON_ALLOCA] = op.attributes[lir.LAYOUT_ATTR]
            new_space = LOCAL
        else:
            shape, new_space = list(type_.shape), space
        new_type = ir.MemRefType.get(shape, type_.element_type, memory_space=ir.StringAttr.get(new_space))
        alloca = ir.Operation.create("memref.alloca", results=[new_type], operands=[],
                                     attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([0, 0]), **attrs},
                                     loc=op.location, ip=ir.InsertionPoint(op))
        if space == FRAGMENT:
            self.fragments[op.results[0]] = _Fragment(alloca.result, layout, lir.name_of(op))
        else:
            op.results[0].replace_all_uses_with(alloca.result)

    def _fragment_operand(self, op: ir.Operation) -> _Fragment | None:
        memref = op.operands[1] if op.name == "memref.store" else op.operands[0]
        return self.fragments.get(memref)

    # ------------------------------------------------------------ parallel

    def _parallel(self, op: ir.Operation) -> None:
        b = self.b.before(op).located(op.location)
        if lir.LAYOUT_ATTR not in op.attributes:
            if any(constant_int(v) is None for v in op.operands):
                _StridedLoop(self, op, b).emit()
                return
            raise diag.error(op, "T.Parallel has no layout: run infer-layouts before partition-threads")
        layout = lir.checked_layout(op, self.threads)
        _PartitionedLoop(self, op, layout, b).emit()
        op.erase()

    def _serial_access(self, op: ir.Operation) -> None:
        fragment = self._fragment_operand(op)
        if fragment.layout.replicate != self.threads:
            raise diag.error(op, f"fragment '{fragment.name}' is accessed outside T.Parallel but is not held "
                                 "by every thread (its layout is not fully replicated)")
        _replace_by_index(self.b.before(op).located(op.location), op, fragment)

    def _keep_mma_gemm(self, op: ir.Operation) -> None:
        a, b, c = list(op.operands)[:3]
        trans_a = ir.BoolAttr(op.attributes["transpose_a"]).value
        trans_b = ir.BoolAttr(op.attributes["transpose_b"]).value
        m, n = c.type.shape
        k = b.type.shape[-1] if trans_b else b.type.shape[-2]
        op.attributes[GEMM_MNK_ATTR] = ir.ArrayAttr.get([ir.IntegerAttr.get(ir.IntegerType.get_signless(64), v)
                                                         for v in (m, n, k)])
        for position in (0, 2):
            fragment = self.fragments.get(op.operands[position])
            if fragment is not None:
                op.operands[position] = fragment.alloca

    def _pipelined(self, op: ir.Operation) -> None:
        b = self.b.before(op).located(op.location)
        lower, upper, step = op.operands
        loop = b.op("scf.for", [lower, upper, step], regions=1)
        loop.attributes[NUM_STAGES_ATTR] = op.attributes["num_stages"]
        block = loop.regions[0].blocks.append(ir.IndexType.get())
        old = op.regions[0].blocks[0]
        old.arguments[0].replace_all_uses_with(block.arguments[0])
        yield_op = b.at(ir.InsertionPoint(block)).op("scf.yield")
        _move_body(old, yield_op)
        op.erase()


def _move_body(block: ir.Block, terminator: ir.Operation) -> None:
    """Moves a tile region's ops before `terminator` of the op replacing it; its tile.yield goes."""
    for op in list(block.operations):
        op = operation(op)
        if op.name == "tile.yield":
            op.erase()
        else:
            op.move_before(terminator)


def _block_coordinates(kernel: ir.Operation, body: ir.Block) -> list[ir.Value]:
    """The block coordinates the kernel's region reads: the launch's block ids, remapped by the kernel's
    `tile.rasterization` when it has one."""
    ids = list(body.arguments)[:len(kernel.operands)]
    raster = rasterization(kernel)
    if raster is None:
        return ids
    b = Builder(ir.InsertionPoint.at_block_begin(body), kernel.location, body)
    return rasterized_coordinates(b, raster, ids, list(kernel.operands))


def _function_block(op: ir.Operation) -> ir.Block:
    """The entry block of the function around `op` (constants there dominate the launch)."""
    func = op
    while func.name != "func.func":
        func = operation(func.parent)
    return func.regions[0].blocks[0]


def _replace_by_index(b: Builder, op: ir.Operation, fragment: _Fragment) -> None:
    """A fragment access whose register slot is computed from its index values by the layout's local map."""
    indices = list(op.operands[2:] if op.name == "memref.store" else op.operands[1:])
    terms = [(d.reg, b.digit(indices[d.dim], d.stride, d.size)) for d in fragment.layout.register_digits()]
    _replace_access(b, op, fragment.alloca, b.linear(terms))


def _replace_access(b: Builder, op: ir.Operation, alloca: ir.Value, register: ir.Value) -> None:
    if op.name == "memref.store":
        new = b.store(op.operands[0], alloca, [register])
    else:
        new = b.load(alloca, [register]).owner
        op.results[0].replace_all_uses_with(new.results[0])
    for attr in op.attributes:
        if attr.name not in new.attributes:
            new.attributes[attr.name] = attr.attr
    op.erase()


class _PartitionedLoop:
    """One tile.parallel with a layout, emitted as its per-thread loop nest."""

    def __init__(self, part: _KernelPartition, op: ir.Operation, layout: TiledLayout, b: Builder):
        self.part, self.op, self.layout, self.b = part, op, layout, b
        self.block = op.regions[0].blocks[0]
        self.extents = [constant_int(v) for v in op.operands]
        self.convergent = CONVERGENT_ATTR in op.attributes
        self.values: dict[Digit, ir.Value] = {}

    def emit(self) -> None:
        accesses = self._fragment_accesses()
        for d in self.layout.thread_digits():
            bounded = d.thread * d.size == self.part.threads
            self.values[d] = self.b.digit(self.part.tid, d.thread, d.size, bounded=bounded)
        masks = [] if self.convergent else self._masks()
        loops = sorted(self.layout.register_digits(), key=lambda d: -d.reg)
        self._nest(self.b, loops, masks, accesses)

    def _fragment_accesses(self):
        accesses = []
        for inner in walk_ops(self.op):
            if inner.name not in ("memref.load", "memref.store"):
                continue
            fragment = self.part._fragment_operand(inner)
            if fragment is None:
                continue
            indices = list(inner.operands[2:] if inner.name == "memref.store" else inner.operands[1:])
            dims = []
            for k, index in enumerate(indices):
                if fragment.layout.shape[k] == 1:
                    dims.append(None)
                elif isinstance(index, ir.BlockArgument) and index.owner == self.block:
                    dims.append(index.arg_number)
                else:
                    dims = None
                    break
            if dims is None or len({d for d in dims if d is not None}) != len([d for d in dims if d is not None]):
                self._check_gather(inner, fragment, indices)
                dims = None
            else:
                self._check_holders(inner, fragment, dims)
            accesses.append((inner, fragment, dims))
        return accesses

    def _check_gather(self, op, fragment: _Fragment, indices) -> None:
        """A gather: every runner holds what it touches; a write goes to the element's only copy, or the
        fragment and the loop are fully replicated (every thread keeps its own copy current)."""
        full = self.part.threads
        if op.name == "memref.store":
            if fragment.layout.replicate == full and self.layout.replicate == full:
                return
            if fragment.layout.replicate != 1 or not self._gather_held(fragment, indices):
                raise diag.error(op, f"fragment '{fragment.name}' is written at an index other than the T.Parallel "
                                     "loop variables by threads that do not hold its only copy, so the fragment and "
                                     "the loop must be fully replicated")
            return
        if fragment.layout.replicate == full:
            return
        if not self._gather_held(fragment, indices):
            raise diag.error(op, f"fragment '{fragment.name}' is read by threads that do not hold the element "
                                 "(its layout disagrees with the layout of this T.Parallel)")

    def _gather_held(self, fragment: _Fragment, indices) -> bool:
        return gather_is_held(self.layout, fragment.layout, list(self.block.arguments), indices)

    def _check_holders(self, op, fragment: _Fragment, dims) -> None:
        # An accumulating loop's writes are per-thread partials: every holder need not run.
        every_holder = op.name == "memref.store" and ACCUMULATE_ATTR not in self.op.attributes
        if not _threads_hold(self.layout, fragment.layout, dims, every_holder):
            raise diag.error(op, f"fragment '{fragment.name}' is accessed by threads that do not hold the element "
                                 "(its layout disagrees with the layout of this T.Parallel)")

    def _masks(self):
        """Per padded dim, `index < extent` as (digits it needs, base, bound): digits of stride >= base,
        scaled by 1/base, below bound (base divides the extent, so the run below it needs no test)."""
        masks = []
        for k, (extent, padded) in enumerate(zip(self.extents, self.layout.padded_shape)):
            if padded <= extent:
                continue
            digits = self.layout.dim_digits(k)
            base = max((d.stride for d in digits if extent % d.stride == 0), default=1)
            needed = [d for d in digits if d.stride >= base]
            masks.append((needed, base, extent // base))
        return masks

    def _nest(self, b: Builder, loops: list[Digit], masks, accesses) -> None:
        ready = [m for m in masks if all(d.is_thread or d in self.values for d in m[0])]
        pending = [m for m in masks if m not in ready]
        if ready:
            conditions = [b.cmp("ult", b.linear([(d.stride // base, self.values[d]) for d in needed]), bound)
                          for needed, base, bound in ready]
            with b.if_(b.and_(conditions)) as inner:
                self._nest(inner, loops, pending, accesses)
            return
        if loops:
            digit = loops[0]
            with b.loop(digit.size) as (inner, iv, _, _):
                self.values[digit] = iv
                self._nest(inner, loops[1:], pending, accesses)
            return
        self._body(b, accesses)

    def _body(self, b: Builder, accesses) -> None:
        layout = self.layout
        point = [b.linear([(d.stride, self.values[d]) for d in layout.dim_digits(k)]) for k in range(layout.rank)]
        registers = [(op, fragment, self._register(b, fragment.layout, dims, point))
                     for op, fragment, dims in accesses if dims is not None]
        gathers = [(op, fragment) for op, fragment, dims in accesses if dims is None]
        writes = list(_writes_to_memory(walk_ops(self.op)))
        primary = None
        if writes and layout.replicate > 1 and ALL_REPLICAS_ATTR not in self.op.attributes:
            primary = b.and_([b.cmp("eq", self.values[d], 0) for d in layout.dim_digits(None)])
        for k, arg in enumerate(self.block.arguments):
            arg.replace_all_uses_with(point[k])
        whole = primary is not None and self._only_primary_runs(writes)
        with (b.if_(primary) if whole else _same(b)) as body:
            for inner in list(self.block.operations):
                inner = operation(inner)
                if inner.name == "tile.yield":
                    continue
                inner.move_before(_ip_op(body))
        for op, fragment, register in registers:
            _replace_access(b.before(op).located(op.location), op, fragment.alloca, register)
        for op, fragment in gathers:
            _replace_by_index(b.before(op).located(op.location), op, fragment)
        if primary is not None and not whole:
            for inner in writes:
                _guard(b.before(inner).located(inner.location), inner, primary)

    def _only_primary_runs(self, writes) -> bool:
        """A replicated loop that reads a shared or global buffer it writes runs in replica 0 alone (the
        others would read it while replica 0 writes it); it may then write no registers, which every
        replica must."""
        rewritten = [w for w in writes if w.name == "memref.store" and any(
            r.name == "memref.load" and r.operands[0] == w.operands[1] for r in walk_ops(self.op))]
        if not rewritten:
            return False
        for inner in walk_ops(self.op):
            if inner.name == "memref.store" and memory_space(inner.operands[1].type) in (FRAGMENT, LOCAL):
                raise diag.error(inner, "this T.Parallel runs on every thread that holds its fragments (their "
                                        "layout is replicated), reads and writes one shared or global buffer, and "
                                        "writes registers: the threads would race on the buffer; split the loop",
                                 notes=[diag.note(rewritten[0], "the buffer is written here")])
        return True

    def _register(self, b: Builder, layout: TiledLayout, dims, point) -> ir.Value:
        """Register slot of the fragment element at this point, from the digits of the loop layout."""
        terms = []
        for g in layout.register_digits():
            k = dims[g.dim]
            terms.append((g.reg, self._digit_value(b, k, g, point)))
        return b.linear(terms)

    def _digit_value(self, b: Builder, k: int, g: Digit, point) -> ir.Value:
        """`(index[k] floordiv g.stride) mod g.size` from the loop's own digits when they line up."""
        digits = self.layout.dim_digits(k)
        low, high = g.stride, g.stride * g.size
        inside = [d for d in digits if low <= d.stride < high]
        straddles = any(d.stride < low < d.stride * d.size or d.stride < high < d.stride * d.size for d in digits)
        if straddles or (inside and inside[0].stride != low):
            return b.digit(point[k], g.stride, g.size)
        return b.linear([(d.stride // low, self.values[d]) for d in inside])


@contextmanager
def _same(b: Builder):
    yield b


def _ip_op(b: Builder) -> ir.Operation:
    """The op `b` inserts before (every insertion point made here is before a terminator)."""
    return operation(b.ip.ref_operation)


def _writes_to_memory(ops):
    for op in ops:
        if op.name == "tile.atomic_add":
            yield op
        elif op.name == "memref.store" and memory_space(op.operands[1].type) in (None, SHARED):
            yield op


def _guard(b: Builder, op: ir.Operation, condition: ir.Value) -> None:
    with b.if_(condition) as inner:
        op.move_before(_ip_op(inner))


class _StridedLoop:
    """A tile.parallel with run-time extents (no fragments): thread t runs linear points t, t + T, ..."""

    def __init__(self, part: _KernelPartition, op: ir.Operation, b: Builder):
        self.part, self.op, self.b = part, op, b

    def emit(self) -> None:
        b, op = self.b, self.op
        for inner in walk_ops(op):
            if inner.name in ("memref.load", "memref.store") and self.part._fragment_operand(inner) is not None:
                raise diag.error(inner, "a T.Parallel with run-time extents cannot access fragments")
        extents = list(op.operands)
        total = extents[0]
        for e in extents[1:]:
            total = b.op("arith.muli", [total, e], [total.type]).result
        loop = b.op("scf.for", [self.part.tid, total, b.index(self.part.threads)], regions=1)
        block = loop.regions[0].blocks.append(ir.IndexType.get())
        inner = b.at(ir.InsertionPoint(block))
        yield_op = inner.op("scf.yield")
        inner = inner.before(yield_op)
        rest, point = block.arguments[0], []
        for e in reversed(extents):
            point.append(inner.op("arith.remui", [rest, e], [rest.type]).result)
            rest = inner.op("arith.divui", [rest, e], [rest.type]).result
        point.reverse()
        old = op.regions[0].blocks[0]
        for k, arg in enumerate(old.arguments):
            arg.replace_all_uses_with(point[k])
        for moved in list(old.operations):
            moved = operation(moved)
            if moved.name == "tile.yield":
                continue
            moved.move_before(yield_op)
        op.erase()


def _threads_hold(domain: TiledLayout, fragment: TiledLayout, dims, write: bool) -> bool:
    """Does every thread running a point hold the fragment element it touches (and, for writes, every
    holder of a touched element run it, so no copy goes stale)?"""
    points = domain.all_elements()
    columns = [points[:, k] if k is not None else np.zeros(len(points), dtype=np.int64) for k in dims]
    flat = np.ravel_multi_index(columns, fragment.shape) if dims else np.zeros(len(points), dtype=np.int64)
    table = fragment.holders()
    pairs = []
    for replica in range(domain.replicate):
        thread, _ = domain.locate(points, replica)
        if not (table[flat] == thread[:, None]).any(axis=1).all():
            return False
        pairs.append(flat * domain.threads + thread)
    if not write:
        return True
    # runners are holders; equal sets exactly when every touched element has `replicate` distinct runners
    runner_pairs = np.unique(np.concatenate(pairs))
    return len(runner_pairs) == len(np.unique(flat)) * fragment.replicate


@register_pass("partition-threads", "turn tile.kernel / tile.parallel into gpu.launch and per-thread loops")
def run(module: ir.Operation, options) -> None:
    module = operation(module)
    with module.context, module.location:
        kernels = [op for op in walk_ops(module) if op.name == "tile.kernel"]
        for kernel in kernels:
            _KernelPartition(kernel).run()
