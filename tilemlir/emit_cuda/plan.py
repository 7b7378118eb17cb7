"""Which values the emitter folds into the expression that uses them, and which it names.

The rule that keeps the CUDA readable without changing what it computes:

- *atoms* (scalar constants, `memref.dim`, thread and block ids, elements
  of a named vector) are always written in place;
- a pure scalar op (`arith`, `math`, `affine.apply`) with exactly one use in
  the same block is folded into that use;
- a load, a ternary `scf.if` (one scalar result, branches of pure ops and
  loads only) or a warp shuffle is folded the same way only if moving it
  down to the statement that finally evaluates it is invisible: no write to
  the memory it reads (a barrier counts as a write to shared and global
  memory) lies in between, it does not end up in a `for` header (evaluated
  every iteration), and a shuffle never lands where C evaluates it
  conditionally (`?:`, `&&`, `||`), since every lane must execute it;
- everything else gets a name.
"""

from __future__ import annotations

from tilemlir.diagnostics.reporting import error
from tilemlir.dialects.tile import memory_space
from tilemlir.emit_cuda import irutil
from tilemlir.emit_cuda.scalar import BOOL_SHORT_CIRCUIT
from tilemlir.mlir import ir

ATOM_OPS = frozenset({"memref.dim", "gpu.thread_id", "gpu.block_id", "gpu.block_dim", "gpu.grid_dim",
                      "gpu.lane_id"})
PURE_OPS = frozenset({"affine.apply", "affine.min", "affine.max", "vector.reduction"})
WRITES = frozenset({"memref.store", "vector.store", "tile.atomic_add"})
ALL_SHARED_AND_GLOBAL = "barrier"
MAX_FOLDED_REDUCTION = 4  # longer vector.reductions become a loop statement


def is_vector(value: ir.Value) -> bool:
    return isinstance(value.type, ir.VectorType)


class InlinePlan:
    def __init__(self, func: ir.Operation):
        self._kind: dict[ir.Operation, str | None] = {}
        self._inlined: dict[ir.Operation, bool] = {}
        self._writes: dict[ir.Operation, frozenset] = {}
        self._positions: dict[ir.Operation, int] = {}
        for op in [func, *irutil.walk(func)]:
            for region in op.regions:
                for block in region.blocks:
                    for i, inner in enumerate(irutil.block_ops(block)):
                        self._positions[inner] = i
        self._check_guards(func)

    # -- queries ---------------------------------------------------------------------------
    def is_atom(self, op: ir.Operation) -> bool:
        return self.kind(op) == "atom"

    def is_inlined(self, op: ir.Operation) -> bool:
        """Whether `op`'s (single, scalar) result is written into its user's expression."""
        if op not in self._inlined:
            self._inlined[op] = False  # no cycles through SSA, but stay safe
            self._inlined[op] = self._decide(op)
        return self._inlined[op]

    def is_ternary(self, op: ir.Operation) -> bool:
        return self.kind(op) == "ternary"

    def kind(self, op: ir.Operation) -> str | None:
        """'atom', 'pure', 'load', 'ternary', 'shuffle', or None for ops that are statements."""
        if op not in self._kind:
            self._kind[op] = self._classify(op)
        return self._kind[op]

    # -- classification ----------------------------------------------------------------------
    def _classify(self, op: ir.Operation) -> str | None:
        name = op.name
        if name == "gpu.shuffle":
            return "shuffle" if not list(op.results[1].uses) and not is_vector(op.results[0]) else None
        if len(op.results) != 1 or isinstance(op.results[0].type, ir.MemRefType):
            return None
        if name == "arith.constant":
            value = op.attributes["value"]
            if not is_vector(op.results[0]):
                return "atom"
            return "atom" if isinstance(value, ir.DenseElementsAttr) and value.is_splat else None
        if is_vector(op.results[0]):
            return self._classify_vector(op)
        if name in ATOM_OPS or name == "vector.extract":
            return "atom"
        if name == "vector.reduction" and op.operands[0].type.shape[0] > MAX_FOLDED_REDUCTION:
            return None
        if name.startswith("arith.") or name.startswith("math.") or name in PURE_OPS:
            return "pure"
        if name == "memref.load":
            return "load"
        if name == "scf.if" and self._ternary_branches(op):
            return "ternary"
        return None

    def _classify_vector(self, op: ir.Operation) -> str | None:
        """Vector values folded element by element into an elementwise consumer."""
        name = op.name
        if name in ("vector.broadcast", "vector.splat") and not is_vector(op.operands[0]):
            return "pure"
        if name.startswith("arith.") or name.startswith("math."):
            return "pure"
        if name == "vector.load" and memory_space(op.operands[0].type) == "local":
            return "load"
        return None

    def _ternary_branches(self, op: ir.Operation) -> bool:
        if len(op.regions[1].blocks) == 0:
            return False
        for region_index in (0, 1):
            block = irutil.single_block(op, region_index)
            for inner in irutil.block_ops(block)[:-1]:
                kind = self.kind(inner)
                if kind == "atom":
                    continue
                if kind not in ("pure", "load", "ternary") or is_vector(inner.results[0]):
                    return False
                uses = irutil.users(inner.results[0])
                if len(uses) != 1 or uses[0][0].block != block:
                    return False
        return True

    # -- the folding decision -------------------------------------------------------------------
    def _decide(self, op: ir.Operation) -> bool:
        kind = self.kind(op)
        if kind == "atom":
            return True
        if kind is None:
            return False
        uses = irutil.users(op.results[0])
        if len(uses) != 1:
            return False
        user, operand = uses[0]
        if user.block != op.block:
            return False
        if is_vector(op.results[0]) and not _consumes_elements(user, operand, kind):
            return False
        if kind == "pure":
            return True
        return self._movable(op, user, operand)

    def _movable(self, op: ir.Operation, user: ir.Operation, operand: int) -> bool:
        """Whether a load / ternary / shuffle can be evaluated where its use chain ends."""
        conditional = False
        while True:
            conditional |= _conditional_operand(user, operand)
            if user.name == "scf.for" and operand < 3:
                return False
            if not self.is_inlined(user):
                break
            user, operand = irutil.users(user.results[0])[0]
        if conditional and op.name == "gpu.shuffle":
            return False
        reads = self._reads(op)
        start, end = self._positions[op], self._positions[user]
        for other in irutil.block_ops(op.block)[start + 1:end]:
            if _conflicts(self._writes_of(other), reads):
                return False
        return True

    def _reads(self, op: ir.Operation) -> list[ir.Value]:
        if op.name in ("memref.load", "vector.load"):
            return [op.operands[0]]
        return [inner.operands[0] for inner in irutil.walk(op) if inner.name == "memref.load"]

    def _writes_of(self, op: ir.Operation) -> frozenset:
        if op not in self._writes:
            written: set = set()
            for inner in [op, *irutil.walk(op)]:
                if inner.name in WRITES:
                    written.add(inner.operands[1] if inner.name != "tile.atomic_add" else inner.operands[0])
                elif inner.name == "gpu.barrier":
                    written.add(ALL_SHARED_AND_GLOBAL)
            self._writes[op] = frozenset(written)
        return self._writes[op]

    # -- guards -----------------------------------------------------------------------------------
    def _check_guards(self, func: ir.Operation) -> None:
        """A load guarded by `arith.select` must be folded into it, or it would run unguarded."""
        for op in irutil.walk(func):
            if op.name != "arith.select" or not irutil.has_attr(op, "tile.guard"):
                continue
            for value in list(op.operands)[1:]:
                load = irutil.defining_op(value)
                if load is not None and load.name == "memref.load" and not self.is_inlined(load):
                    raise error(load, "a load guarded by an arith.select must have that select as its only use, "
                                      "with no write to its memory in between (else it would run unguarded)")


def _consumes_elements(user: ir.Operation, operand: int, kind: str) -> bool:
    """Whether `user` reads a vector operand element by element (so the vector can be folded into it).
    A vector.extract may have many uses, so a load is not folded into it."""
    if user.name in ("vector.store", "vector.reduction") or (user.name == "vector.extract" and kind != "load"):
        return operand == 0
    return (user.name.startswith("arith.") or user.name.startswith("math.")) and is_vector(user.results[0])


def _conditional_operand(user: ir.Operation, operand: int) -> bool:
    """Whether C evaluates this operand only sometimes (`?:` branches, right side of `&&`/`||`)."""
    if user.name == "arith.select":
        return operand > 0
    if user.name in BOOL_SHORT_CIRCUIT and operand == 1:
        type_ = user.results[0].type
        return isinstance(type_, ir.IntegerType) and type_.width == 1
    return False


def _conflicts(writes: frozenset, reads: list[ir.Value]) -> bool:
    if not writes:
        return False
    for memref in reads:
        if memref in writes:
            return True
        if ALL_SHARED_AND_GLOBAL in writes and memory_space(memref.type) != "local":
            return True
    return False
