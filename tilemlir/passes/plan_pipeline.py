"""plan-pipeline: `T.Pipelined(num_stages=S > 1)` becomes an S-deep ring of asynchronous copies.

Takes tile-level IR after infer-layouts (and select-shared-layouts). Gives the same level, for
every `tile.pipelined` with `num_stages = S > 1` over `k` in `[lower, upper)` step `step`, tile
`t = (k - lower) / step` of `n` (docs/tensor_cores.md, "The pipeline"):

- A *ring copy* is a `tile.copy` at the top of the loop body from a global tensor into a shared
  buffer of the kernel that the body reads after it and nothing else touches: every use of the
  buffer is in the body, the copy (or copies) writing it come before every read, the reads are
  `memref.load`s, `tile.gemm` operands or `tile.copy` sources, and the copy's offsets are
  computed from `k` and values from outside by pure ops. Other copies stay as they are.
- Each ring copy's buffer becomes `[S, ...]` (`tile.ring`, its other attributes kept), slot
  `t mod S` holding tile t; the body's reads take the slot as a leading index (a gemm as ring
  indices, `gemm_ring_indices`; a copy from it as a leading offset).
- The copies run D = S-1 tiles ahead, or D = S-2 when S >= 3 and a ring feeds a wgmma gemm at the top
  of the body whose C nothing else in the loop touches: its batch stays in flight into the next
  iteration (such a gemm gets `tile.wgmma_pending = 1`: lower-gemm-mma waits for all but one
  batch, and for all after the loop), so its slot is the one not yet free. A C that another op
  reads or writes in the loop (attention's softmax reading S = Q K^T, a block-scaled fp8 GEMM's
  per-group accumulator cleared and promoted each iteration) is waited for in its iteration.
- Prologue, before the loop: for tiles i = 0 .. D-1, the ring copies of tile i into slot i under
  `lower + i * step < upper` (left out when constants decide it), each followed by
  `tile.cp_async_commit`.
- Each iteration: `tile.cp_async_wait {pending = D-1}` (tile t has landed), one `gpu.barrier`
  (tile t is visible to every thread, and every thread is done with slot (t+D) mod S: with D = S-1
  its reads were iteration t-1's, with S-2 a wgmma of iteration t-2 that each thread's wait retired
  in iteration t-1), the ring copies of tile t+D into slot (t+D) mod S under `k + D * step < upper`,
  a commit (an empty group near the end keeps the count uniform), then the body's compute on slot
  t mod S.
- Ring copies carry `tile.async`: lower-tile-ops marks their shared stores, async-copies turns
  those into `tile.cp_async` after vectorize. A ragged last tile reads zeros as every copy
  does outside its tensor (cp.async's zero fill once asynchronous), never a per-element guard
  of its own.
- With `tma=true` (the compile option `tma=True`, sm_90a), a ring copy TMA can run
  (`analysis/tma_boxes.tma_problem`) carries `tile.tma` instead, in a loop that no other loop
  encloses (its mbarriers' phases count the loop's tiles from 0); tma-copies lowers it at the
  thread level (an elected thread's boxes completing on an mbarrier per slot, every thread waiting
  on it before the compute). The others stay `tile.async`, each with a remark saying why. When every
  ring copy is TMA there are no commit/wait groups: the barrier and the mbarrier waits order the
  ring.

partition-threads' barrier planner skips `tile.ring` buffers: their ordering is the one barrier.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tilemlir.analysis.shared_layouts import ASYNC_ATTR, RING_ATTR
from tilemlir.analysis.tma_boxes import TMA_ATTR, tma_problem
from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects import async_copy, tile
from tilemlir.dialects.tensor_core_ops import WGMMA_PENDING_ATTR, mma_choice
from tilemlir.dialects.tile import SHARED, memory_space
from tilemlir.ir_util import constant_int, defining_op, inside, operation, ops_named
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass
from tilemlir.rewriting.thread_builder import Builder

_PURE_DIALECTS = ("arith.", "index.", "affine.apply")
_LOOPS = ("scf.for", "scf.while", "tile.pipelined")


@dataclass(frozen=True)
class PlanPipelineOptions:
    tma: bool = False  # ring copies TMA can run get tile.tma (sm_90a; the compile option tma=True)


@register_pass("plan-pipeline", "T.Pipelined(num_stages > 1): shared rings, a prologue, async copies (cp.async "
                                "commit/wait groups, or TMA) and one barrier per iteration", PlanPipelineOptions)
def run(module: ir.Operation, options: PlanPipelineOptions) -> None:
    module = operation(module)
    with module.context, module.location:
        for loop in ops_named(module, "tile.pipelined"):
            if loop.attributes["num_stages"].value > 1:
                _Pipeline(loop, options.tma).plan()


@dataclass
class _Ring:
    alloc: ir.Operation
    copies: list[ir.Operation] = field(default_factory=list)
    reads: list[ir.Operation] = field(default_factory=list)
    ring: ir.Value | None = None


class _Pipeline:
    def __init__(self, loop: ir.Operation, tma: bool):
        self.loop = loop
        self.tma = tma
        self.stages = loop.attributes["num_stages"].value
        self.body = tile.body_block(loop)
        self.k = self.body.arguments[0]
        kernel = operation(loop.parent)
        while kernel.name != "tile.kernel":
            kernel = operation(kernel.parent)
        self.kernel_block = kernel.regions[0].blocks[0]
        self.pool: dict = {}
        self.by_tma: set[ir.Operation] = set()

    def builder(self, ip: ir.InsertionPoint, loc: ir.Location) -> Builder:
        return Builder(ip, loc, self.kernel_block, self.pool)

    def plan(self) -> None:
        rings = self._rings()
        if not rings:
            return
        copies = [c for r in rings for c in r.copies]
        copies.sort(key=self._position)
        self.by_tma = self._tma_copies(copies)
        groups = len(self.by_tma) < len(copies)  # cp.async copies remain: commit/wait groups order them
        lower, upper, step = self.loop.operands
        loc = self.loop.location
        for r in rings:
            r.ring = self._ring_alloc(r.alloc)
        in_flight = self._in_flight_wgmmas(rings)
        ahead = self.stages - 1 - (1 if in_flight else 0)
        for gemm in in_flight:
            gemm.attributes[WGMMA_PENDING_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1)
        before = self.builder(ir.InsertionPoint(self.loop), loc)
        for i in range(ahead):
            k_i = before.add(lower, before.mul(step, i)) if constant_int(step) is not None else self._affine(
                before, lower, step, i)
            self._issue(before, copies, rings, k_i, before.index(i), upper)
            if groups:
                async_copy.cp_async_commit(loc=loc, ip=before.ip)
        first = operation(list(self.body.operations)[0])
        inner = self.builder(ir.InsertionPoint(first), loc)
        if groups:
            async_copy.cp_async_wait(ahead - 1, loc=loc, ip=inner.ip)
        inner.op("gpu.barrier")
        t = self._iteration(inner, lower, step)
        k_next = self._affine(inner, self.k, step, ahead)
        self._issue(inner, copies, rings, k_next, inner.rem(inner.add(t, ahead), self.stages), upper)
        if groups:
            async_copy.cp_async_commit(loc=loc, ip=inner.ip)
        slot = inner.rem(t, self.stages)
        ring_of = {r.alloc.results[0]: r.ring for r in rings}
        reads = list({read: None for r in rings for read in r.reads})
        for read in reads:
            self._read_slot(read, ring_of, slot)
        for copy in copies:
            slice_ops = self._offset_slice(copy)
            copy.erase()
            for op in reversed(slice_ops):
                if all(len(list(res.uses)) == 0 for res in op.results):
                    op.erase()
        for r in rings:
            r.alloc.erase()

    def _tma_copies(self, copies: list[ir.Operation]) -> set[ir.Operation]:
        """The ring copies TMA runs (with `tma`); a remark on each of the others saying why not."""
        if not self.tma:
            return set()
        nested = _enclosing_loop(self.loop)
        chosen = set()
        for copy in copies:
            problem = "its T.Pipelined loop is inside another loop" if nested else tma_problem(copy)
            if problem:
                diag.remark(copy, f"T.copy stays cp.async, not TMA: {problem}")
            else:
                chosen.add(copy)
        return chosen

    def _in_flight_wgmmas(self, rings: list[_Ring]) -> list[ir.Operation]:
        """The wgmma gemms at the top of the body reading a ring, which may stay in flight one iteration
        (with at least 3 stages: one slot for the copies ahead, one being read, one still read), unless
        other code of the body touches their C (a per-iteration accumulator read after its gemm)."""
        if self.stages < 3:
            return []
        gemms = {read: None for r in rings for read in r.reads if read.name == "tile.gemm"
                 and operation(read.parent) == self.loop and _is_wgmma(read) and self._only_gemm_touches_c(read)}
        return list(gemms)

    def _only_gemm_touches_c(self, gemm: ir.Operation) -> bool:
        """Whether nothing else in the loop reads or writes C (attention's softmax reads S = Q K^T right after
        its gemm, and clears it before the next): a batch in flight across iterations would race with that."""
        return all(operation(use.owner) == gemm or not inside(operation(use.owner), self.loop)
                   for use in gemm.operands[2].uses)

    # ------------------------------------------------------------ which copies

    def _rings(self) -> list[_Ring]:
        rings: dict[ir.Operation, _Ring] = {}
        for op in self.body.operations:
            op = operation(op)
            if op.name != "tile.copy" or memory_space(op.operands[0].type) is not None:
                continue
            dst = op.operands[1]
            alloc = defining_op(dst)
            if alloc is None or alloc.name != "tile.alloc_shared" or memory_space(dst.type) != SHARED:
                continue
            if self._offset_slice(op) is None:
                continue
            rings.setdefault(alloc, _Ring(alloc)).copies.append(op)
        return [r for r in rings.values() if self._ringable(r)]

    def _ringable(self, r: _Ring) -> bool:
        last_copy = max(self._position(c) for c in r.copies)
        for use in r.alloc.results[0].uses:
            user = operation(use.owner)
            if user in r.copies:
                continue
            if not inside(user, self.loop) or self._position(user) <= last_copy:
                return False
            reads = ((user.name == "memref.load")
                     or (user.name == "tile.gemm" and use.operand_number < 2 and user.operands[use.operand_number].type.rank == 2)
                     or (user.name == "tile.copy" and use.operand_number == 0))
            if not reads:
                return False
            r.reads.append(user)
        return bool(r.reads)

    def _position(self, op: ir.Operation) -> int:
        """Index of the top-level op of the loop body holding `op`."""
        while operation(op.parent) != self.loop:
            op = operation(op.parent)
        for index, candidate in enumerate(self.body.operations):
            if operation(candidate) == op:
                return index
        raise AssertionError("op not in the loop body")

    def _offset_slice(self, copy: ir.Operation) -> list[ir.Operation] | None:
        """The body ops (in order) the copy's offsets are computed by; None when one is not pure or
        not at the top of the body."""
        found: list[ir.Operation] = []
        pending = list(copy.operands)[2:]
        while pending:
            value = pending.pop()
            op = defining_op(value)
            if op is None or not inside(op, self.loop):
                continue
            if operation(op.parent) != self.loop or not op.name.startswith(_PURE_DIALECTS) or op.regions:
                return None
            if op not in found:
                found.append(op)
                pending += list(op.operands)
        return sorted(found, key=self._position)

    # ------------------------------------------------------------ rewriting

    def _ring_alloc(self, alloc: ir.Operation) -> ir.Value:
        type_ = alloc.results[0].type
        new = tile.alloc_shared([self.stages, *type_.shape], type_.element_type, loc=alloc.location,
                                ip=ir.InsertionPoint(alloc))
        _copy_attributes(alloc, new.operation)
        new.operation.attributes[RING_ATTR] = ir.UnitAttr.get()
        return new.results[0]

    def _iteration(self, b: Builder, lower: ir.Value, step: ir.Value) -> ir.Value:
        offset = b.sub(self.k, lower)
        divisor = constant_int(step)
        if divisor is not None:
            return b.div(offset, divisor)
        return b.op("arith.divui", [offset, step], [offset.type]).result

    @staticmethod
    def _affine(b: Builder, base: ir.Value, step: ir.Value, times: int) -> ir.Value:
        if constant_int(step) is not None:
            return b.add(base, constant_int(step) * times)
        return b.add(base, b.op("arith.muli", [step, b.index(times)], [step.type]).result)

    def _issue(self, b: Builder, copies, rings, k_value: ir.Value, slot: ir.Value, upper: ir.Value) -> None:
        """The ring copies of the tile at loop value `k_value` into `slot`, under `k_value < upper`."""
        known_k, known_upper = constant_int(k_value), constant_int(upper)
        if known_k is not None and known_upper is not None:
            if known_k < known_upper:
                self._copies(b, copies, rings, k_value, slot)
            return
        with b.if_(b.cmp("ult", k_value, upper)) as guarded:
            self._copies(guarded, copies, rings, k_value, slot)

    def _copies(self, b: Builder, copies, rings, k_value: ir.Value, slot: ir.Value) -> None:
        ring_of = {r.alloc.results[0]: r.ring for r in rings}
        for copy in copies:
            mapping = {self.k: k_value}
            for op in self._offset_slice(copy):
                clone = op.clone(ip=b.ip)
                for i, operand in enumerate(clone.operands):
                    if operand in mapping:
                        clone.operands[i] = mapping[operand]
                for old, new in zip(op.results, clone.results):
                    mapping[old] = new
            src, dst = copy.operands[0], copy.operands[1]
            offsets = [mapping.get(v, v) for v in list(copy.operands)[2:]]
            src_offsets, dst_offsets = offsets[:src.type.rank], offsets[src.type.rank:]
            box = [a.value for a in copy.attributes["shape"]]
            ring = ring_of[dst]
            if len(box) < ring.type.rank:
                box = [1] * (ring.type.rank - len(box)) + box
            new = tile.copy(src, ring, src_offsets, [slot, *dst_offsets], box, loc=copy.location, ip=b.ip)
            _copy_attributes(copy, new.operation)
            new.operation.attributes[TMA_ATTR if copy in self.by_tma else ASYNC_ATTR] = ir.UnitAttr.get()

    @staticmethod
    def _read_slot(read: ir.Operation, ring_of: dict[ir.Value, ir.Value], slot: ir.Value) -> None:
        """Rebuild `read` reading the rings in place of the buffers `ring_of` maps, in slot `slot`."""
        ip, loc = ir.InsertionPoint(read), read.location
        operands = list(read.operands)
        if read.name == "memref.load":
            new = ir.Operation.create("memref.load", results=[read.results[0].type],
                                      operands=[ring_of[operands[0]], slot, *operands[1:]], loc=loc, ip=ip)
        elif read.name == "tile.gemm":
            ring_a, ring_b = tile.gemm_ring_indices(read)
            lead_a = [slot] if operands[0] in ring_of else []
            lead_b = [slot] if operands[1] in ring_of else []
            a, b = (ring_of.get(v, v) for v in operands[:2])
            new = tile.gemm(a, b, operands[2], read.attributes["transpose_a"].value,
                            read.attributes["transpose_b"].value, [*lead_a, *ring_a, *lead_b, *ring_b], loc=loc,
                            ip=ip).operation
        else:
            src, dst = operands[0], operands[1]
            src_offsets, dst_offsets = operands[2:2 + src.type.rank], operands[2 + src.type.rank:]
            box = [a.value for a in read.attributes["shape"]]
            if len(box) < src.type.rank + 1:
                box = [1] + box
            new = tile.copy(ring_of[src], dst, [slot, *src_offsets], dst_offsets, box, loc=loc, ip=ip).operation
        _copy_attributes(read, new)
        for old, value in zip(read.results, new.results):
            old.replace_all_uses_with(value)
        read.erase()


def _enclosing_loop(op: ir.Operation) -> ir.Operation | None:
    """The innermost loop around `op` inside its tile.kernel, or None."""
    parent = operation(op.parent)
    while parent.name != "tile.kernel":
        if parent.name in _LOOPS:
            return parent
        parent = operation(parent.parent)
    return None


def _is_wgmma(gemm: ir.Operation) -> bool:
    choice = mma_choice(gemm)
    return choice is not None and choice.wgmma


def _copy_attributes(old: ir.Operation, new: ir.Operation) -> None:
    """The attributes of `old` that `new` (built in its place) does not set itself."""
    for name in old.attributes:
        if name not in new.attributes:
            new.attributes[name] = old.attributes[name]
