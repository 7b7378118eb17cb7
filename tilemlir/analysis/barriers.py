"""Where a block's threads must meet at a `gpu.barrier`: the shared-memory hazards of tile-level IR.

`plan_barriers(kernel)` takes a `tile.kernel` of tile-level IR (after
lower-tile-ops) and gives the ops that need a `gpu.barrier` right before
them, each with the pair of accesses that needs it (partition-threads
creates the barriers; test-plan-barriers remarks them). A barrier goes
before the first shared-memory access that reads what another thread wrote
since the last barrier, or writes what another thread read since then
(read-after-write, write-after-read). Serial loops are planned twice: the
second time with what the end of the body leaves, for the hazards between
one iteration and the next. Pipeline rings (`tile.ring`) are left out:
plan-pipeline's one barrier per iteration orders them. A `tile.tma_store` copy
(select-tma-stores) reads its whole tile on behalf of every thread; a `tile.stmatrix`
copy (select-stmatrix) writes its whole tile so (a lane stores rows that other lanes'
registers hold).

Between tile operations a whole `tile.parallel` is one step: accesses of two
parallel loops with the same thread map and the same index variables are one
thread's and need none.

Thread code (a `tile.parallel` marked `tile.thread_loop`, which thread t runs
once as point t) is also planned inside, op by op, as TileLang's storage-sync
does: a barrier may stand in its loops and conditions that every thread runs
the same way (*uniform*: bounds and conditions computed from constants, values
defined outside the thread code and indices of uniform loops). A uniform loop
with an access that conflicts with what came before it gets its barrier before
the loop, then its body is planned from there (a barrier before the first read
after the writes, another at the top for the next iteration's writes after this
one's reads). A loop or condition that is not uniform is one step; a hazard
inside it that needs a barrier there is a CompileError located at it (CUDA needs
every thread of the block at a barrier). Two thread-code accesses are one
thread's when the indices of theirs that are functions of the thread index
alone, evaluated at every thread, agree and tell the threads apart (`s[tx, i]`
and `s[tx, j]`), or when only one same thread runs both (`if tx == 0:`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tilemlir.analysis import layout_ir as lir
from tilemlir.analysis.shared_layouts import RING_ATTR
from tilemlir.analysis.stmatrix_stores import STMATRIX_ATTR
from tilemlir.analysis.tma_boxes import TMA_STORE_ATTR
from tilemlir.diagnostics import reporting as diag
from tilemlir.dialects.tile import SHARED, THREAD_LOOP_ATTR, layout_parts, memory_space
from tilemlir.ir_util import constant_int, defining_op, inside, operation, walk_ops
from tilemlir.mlir import ir

_LOOPS = ("scf.for", "tile.pipelined", "scf.while")
# Integer ops a thread-index expression is evaluated through, at every thread.
_INDEX_MATH = {
    "arith.addi": np.add, "arith.subi": np.subtract, "arith.muli": np.multiply,
    "arith.divui": np.floor_divide, "arith.floordivsi": np.floor_divide, "arith.remui": np.remainder,
    "arith.divsi": lambda a, b: np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b)), "arith.remsi": np.fmod,
    "arith.andi": np.bitwise_and, "arith.ori": np.bitwise_or, "arith.xori": np.bitwise_xor,
    "arith.maxsi": np.maximum, "arith.minsi": np.minimum, "arith.maxui": np.maximum, "arith.minui": np.minimum,
}
_DIVISIONS = ("arith.divui", "arith.divsi", "arith.floordivsi", "arith.remui", "arith.remsi")
_UNSIGNED = ("arith.divui", "arith.remui", "arith.maxui", "arith.minui")
_COMPARISONS = {0: np.equal, 1: np.not_equal, 2: np.less, 3: np.less_equal, 4: np.greater, 5: np.greater_equal,
                6: np.less, 7: np.less_equal, 8: np.greater, 9: np.greater_equal}  # 6-9: unsigned
_THREAD_CODE = "thread code"  # marks a thread-code access's `who`: (it, threads, indices at threads, runners)
_CASTS = ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui")


@dataclass(frozen=True)
class SharedAccess:
    buffer: ir.Value
    write: bool
    atomic: bool  # a tile.atomic_add: a read and a write, unordered against other threads' atomic adds
    who: tuple | None  # which thread touches which element (None: unknown; in thread code, see _THREAD_CODE)
    op: ir.Operation | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Barrier:
    """A gpu.barrier needed right before `op`: `access` conflicts with another thread's `after`."""

    op: ir.Operation
    access: SharedAccess
    after: SharedAccess

    def describe(self) -> str:
        name = lir.name_of(defining_op(self.access.buffer))
        what = "adds atomically to" if self.access.atomic else "writes" if self.access.write else "reads"
        other = "added to" if self.after.atomic else "wrote" if self.after.write else "read"
        line = diag.source_location(self.after.op)
        where = f" at line {line.line}" if line is not None else ""
        return f"gpu.barrier before this op: it {what} shared '{name}' that another thread {other}{where}"


def plan_barriers(kernel: ir.Operation) -> list[Barrier]:
    """The barriers a `tile.kernel` needs, in the order they were found (one per op)."""
    planner = _Planner()
    planner.block(kernel.regions[0].blocks[0], [])
    return planner.barriers


class _Planner:
    """Tile level: whole tile.parallel loops, tile.gemm and plain accesses are steps."""

    def __init__(self):
        self.barriers: list[Barrier] = []
        self.planned: list[ir.Operation] = []  # thread code planned inside already

    def marked(self, op: ir.Operation) -> bool:
        return any(b.op == op for b in self.barriers)

    def mark(self, op: ir.Operation, hazard: tuple[SharedAccess, SharedAccess]) -> None:
        if not self.marked(op):
            self.barriers.append(Barrier(op, *hazard))

    def block(self, block: ir.Block, state: list[SharedAccess]) -> list[SharedAccess]:
        for op in block.operations:
            op = operation(op)
            if self.marked(op) or op.name == "gpu.barrier":
                state = []
            if op.name in _LOOPS:
                state = self.loop(op, state)
            elif op.name == "scf.if":
                branches = [self.block(r.blocks[0], list(state)) for r in op.regions if len(r.blocks)]
                state = _union(state if len(branches) < 2 else [], *branches)
            else:
                state = self.step(op, _accesses(op), state)
                if THREAD_LOOP_ATTR in op.attributes and not any(op == p for p in self.planned):
                    self.planned.append(op)
                    _ThreadCode(self, op).plan()
        return state

    def step(self, op: ir.Operation, accesses: list[SharedAccess], state):
        hazard = _first_hazard(accesses, state)
        if hazard is not None:
            self.mark(op, hazard)
            state = []
        return state + accesses

    def loop(self, op: ir.Operation, state):
        body = op.regions[-1].blocks[0]
        end = self.block(body, list(state))
        end = self.block(body, _union(state, end))
        return _union(state, end)


class _ThreadCode:
    """The inside of one thread-code run: accesses at every thread, barriers where all threads meet."""

    def __init__(self, planner: _Planner, loop: ir.Operation):
        self.planner, self.loop_op = planner, loop
        self.tid = loop.regions[0].blocks[0].arguments[0]
        self.threads = constant_int(loop.operands[0])
        self.values: dict = {}  # memo of `at_threads`
        self.divergent: ir.Operation | None = None  # the outermost non-uniform loop or condition we are in

    def plan(self) -> None:
        # Accesses conflicting with what came before the run got a barrier before it (the planner's step).
        self.block(self.loop_op.regions[0].blocks[0], [])

    def block(self, block: ir.Block, state):
        for op in block.operations:
            op = operation(op)
            if self.planner.marked(op) or op.name == "gpu.barrier":
                state = []
            if op.name in _LOOPS or op.name == "scf.if":
                state = self.region_op(op, state)
            else:
                state = self.step(op, [self.access(inner) for inner in [op, *walk_ops(op)]
                                       if _shared_operand(inner) is not None], state)
        return state

    def step(self, op: ir.Operation, accesses, state):
        hazard = _first_hazard(accesses, state)
        if hazard is not None:
            self.mark(op, hazard)
            state = []
        return state + accesses

    def mark(self, op: ir.Operation, hazard) -> None:
        if self.divergent is not None:
            new, old = hazard
            raise diag.error(self.divergent, f"shared buffer '{lir.name_of(defining_op(new.buffer))}' needs a "
                                             f"gpu.barrier inside this {_what(self.divergent)}, which depends on "
                                             "the thread index: not every thread would reach it (CUDA needs every "
                                             "thread of the block at a barrier); move the accesses that need it out "
                                             "of it, or give it bounds or a condition every thread shares",
                             notes=[diag.note(new.op, "this access needs the barrier before it"),
                                    diag.note(old.op, "after this access of another thread")])
        self.planner.mark(op, hazard)

    def region_op(self, op: ir.Operation, state):
        """A loop or condition: a barrier before it for what came before, unless it is uniform and its
        own barriers order it (a uniform if), then its inside."""
        uniform = self.uniform(op)
        if not (uniform and op.name == "scf.if"):
            hazard = _first_hazard(self.accesses_in(op), state)
            if hazard is not None:
                self.mark(op, hazard)
                state = []
        outer = self.divergent
        if not uniform and outer is None:
            self.divergent = op
        try:
            if op.name == "scf.if":
                branches = [self.block(r.blocks[0], list(state)) for r in op.regions if len(r.blocks)]
                return _union(state if len(branches) < 2 else [], *branches)
            body = op.regions[-1].blocks[0]
            end = self.block(body, list(state))
            end = self.block(body, _union(state, end))
            return _union(state, end)
        finally:
            self.divergent = outer

    def accesses_in(self, op: ir.Operation) -> list[SharedAccess]:
        return [self.access(inner) for inner in walk_ops(op) if _shared_operand(inner) is not None]

    # ------------------------------------------------------------------ who touches what

    def access(self, op: ir.Operation) -> SharedAccess:
        indices = tuple(self.at_threads(v) for v in _indices(op))
        who = (_THREAD_CODE, self.threads, indices, self.runners(op))
        return SharedAccess(_shared_operand(op), _writes(op), _atomic(op), who, op)

    def runners(self, op: ir.Operation) -> tuple | None:
        """The threads that run `op` (a tuple of 0/1 per thread), when the conditions around it inside the
        thread code are functions of the thread index alone; None: every thread or unknown."""
        runs, node = None, op
        while node.parent != self.loop_op:
            branch, node = node, node.parent
            taken = self.at_threads(node.operands[0]) if node.name == "scf.if" else None
            if taken is not None:
                taken = np.asarray(taken) != 0
                here = taken if branch.block == node.regions[0].blocks[0] else ~taken
                runs = here if runs is None else runs & here
        return None if runs is None else tuple(int(v) for v in runs)

    def at_threads(self, value: ir.Value) -> tuple | None:
        """`value` at every thread, when it is a function of the thread index alone; else None."""
        if value not in self.values:
            result = self._evaluate(value)
            self.values[value] = None if result is None else tuple(int(v) for v in result)
        return self.values[value]

    def _evaluate(self, value: ir.Value):
        if value == self.tid:
            return np.arange(self.threads, dtype=np.int64)
        known = constant_int(value)
        if known is not None:
            return np.full(self.threads, known, dtype=np.int64)
        op = defining_op(value)
        if op is None or op.name not in (*_INDEX_MATH, *_CASTS, "arith.cmpi", "arith.select"):
            return None
        operands = [self.at_threads(v) for v in op.operands]
        if any(o is None for o in operands):
            return None
        operands = [np.asarray(o, dtype=np.int64) for o in operands]
        if op.name in _CASTS:
            return operands[0]
        if op.name == "arith.select":
            return np.where(operands[0] != 0, operands[1], operands[2])
        lhs, rhs = operands
        predicate = ir.IntegerAttr(op.attributes["predicate"]).value if op.name == "arith.cmpi" else None
        unsigned = op.name in _UNSIGNED or (predicate is not None and predicate >= 6)
        if (unsigned and ((lhs < 0).any() or (rhs < 0).any())) or (op.name in _DIVISIONS and (rhs == 0).any()):
            return None  # as unsigned a negative value is another number; a division by zero has none
        if predicate is not None:
            return _COMPARISONS[predicate](lhs, rhs).astype(np.int64)
        return _INDEX_MATH[op.name](lhs, rhs)

    # ------------------------------------------------------------------ uniformity

    def uniform(self, op: ir.Operation) -> bool:
        """Does every thread run this loop or condition the same way?"""
        if op.name == "scf.if":
            return self.is_uniform(op.operands[0])
        return op.name == "scf.for" and all(self.is_uniform(v) for v in list(op.operands)[:3])

    def is_uniform(self, value: ir.Value) -> bool:
        """Is `value` the same at every thread: built by arithmetic from constants, values defined outside
        the thread code and indices of uniform loops?"""
        op = defining_op(value)
        if op is None:
            owner = operation(value.owner.owner)
            if not inside(owner, self.loop_op):
                return True
            return owner != self.loop_op and owner.name == "scf.for" and value.arg_number == 0 \
                and self.uniform(owner)
        if not inside(op, self.loop_op):
            return True
        if op.regions or not op.name.startswith(("arith.", "math.", "index.")):
            return False
        return all(self.is_uniform(v) for v in op.operands)


def _what(op: ir.Operation) -> str:
    return "condition" if op.name == "scf.if" else "loop"


def _first_hazard(accesses, state) -> tuple[SharedAccess, SharedAccess] | None:
    return next(((a, p) for a in accesses for p in state if _conflict(a, p)), None)


def _union(*states):
    merged = []
    for state in states:
        for access in state:
            if access not in merged:
                merged.append(access)
    return merged


def _conflict(new: SharedAccess, old: SharedAccess) -> bool:
    """A read after another thread's write, or a write after another thread's read, of one buffer."""
    if new.buffer != old.buffer or (new.atomic and old.atomic):
        return False
    if not (new.atomic or old.atomic) and new.write == old.write:
        return False
    if new.who is None or old.who is None:
        return True
    if new.who[0] == _THREAD_CODE and old.who[0] == _THREAD_CODE:
        return not _one_thread(new.who, old.who)
    return new.who != old.who


def _one_thread(new: tuple, old: tuple) -> bool:
    """Do two thread-code accesses touch a common element only from one thread? So when no two threads
    that run them touch elements that agree in the indices of both that are functions of the thread
    index alone (`s[tx]` and `s[tx + 128]`, `s[tx, i]` and `s[tx, j]`; inside `if tx == 0:` any)."""
    _, threads, new_indices, new_runners = new
    _, _, old_indices, old_runners = old
    known = [(a, b) for a, b in zip(new_indices, old_indices) if a is not None and b is not None]
    holders: dict[tuple, set[int]] = {}
    for t in range(threads):
        if old_runners is None or old_runners[t]:
            holders.setdefault(tuple(b[t] for _, b in known), set()).add(t)
    for t in range(threads):
        if new_runners is None or new_runners[t]:
            if holders.get(tuple(a[t] for a, _ in known), set()) - {t}:
                return False
    return True


def _accesses(op: ir.Operation) -> list[SharedAccess]:
    """Shared-memory accesses of one tile-level step (a whole tile.parallel, a tile.gemm, or a plain
    load/store)."""
    if op.name == "tile.gemm":
        return [SharedAccess(v, False, False, None, op) for v in op.operands[:2]
                if memory_space(v.type) == SHARED and not _is_ring(v)]
    if op.name == "tile.parallel":
        return [_parallel_access(op, inner) for inner in walk_ops(op) if _shared_operand(inner) is not None]
    if op.name == "tile.copy" and TMA_STORE_ATTR in op.attributes:  # one thread's TMA boxes: no thread's own
        return [SharedAccess(op.operands[0], False, False, None, op)]
    if op.name == "tile.copy" and STMATRIX_ATTR in op.attributes:  # each lane stores rows other lanes hold
        return [SharedAccess(op.operands[1], True, False, None, op)]
    return [SharedAccess(_shared_operand(inner), _writes(inner), _atomic(inner), None, inner)
            for inner in [op, *walk_ops(op)] if _shared_operand(inner) is not None]


def _writes(op: ir.Operation) -> bool:
    return op.name.endswith("store") or _atomic(op)


def _atomic(op: ir.Operation) -> bool:
    return op.name == "tile.atomic_add"


def _indices(op: ir.Operation) -> list[ir.Value]:
    return list(op.operands[2:] if _writes(op) else op.operands[1:])


def _shared_operand(op: ir.Operation) -> ir.Value | None:
    """The shared buffer `op` accesses, None also for a pipeline ring (its one barrier orders it)."""
    if op.name not in ("memref.load", "memref.store", "vector.load", "vector.store", "tile.atomic_add"):
        return None
    memref = op.operands[0] if op.name.endswith("load") or _atomic(op) else op.operands[1]
    return memref if memory_space(memref.type) == SHARED and not _is_ring(memref) else None


def _is_ring(buffer: ir.Value) -> bool:
    owner = defining_op(buffer)
    return owner is not None and RING_ATTR in owner.attributes


def _parallel_access(parallel: ir.Operation, op: ir.Operation) -> SharedAccess:
    indices = _indices(op)
    block = parallel.regions[0].blocks[0]
    who = None
    if lir.LAYOUT_ATTR in parallel.attributes and all(
        isinstance(i, ir.BlockArgument) and i.owner == block for i in indices
    ) and operation(op.parent) == parallel:
        thread_map, _, replicate = layout_parts(parallel.attributes[lir.LAYOUT_ATTR])
        # In a replicated loop replica 0 writes and every replica reads: never one thread.
        if replicate == 1:
            who = (str(thread_map), tuple(lir.static_extents(parallel)), tuple(i.arg_number for i in indices))
    return SharedAccess(_shared_operand(op), _writes(op), _atomic(op), who, op)
