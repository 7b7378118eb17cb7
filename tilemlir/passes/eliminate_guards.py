"""eliminate-guards: remove, hoist and split bounds guards that Z3 proves redundant.

Takes thread-level IR with guards (`scf.if` marked `tile.guard`, from
insert-guards; see `tilemlir.rewriting.guards`) and gives the same IR with
fewer checks. For each guard, innermost first, with the facts in scope
(`tilemlir.analysis.prover`):

- every check (leaf of its `arith.andi` chain) proved true is dropped; a
  guard with no check left is removed and its then branch runs alone;
- a guard proved false everywhere is replaced by its else branch (the
  load's pad value; a store disappears);
- loop versioning: the outermost enclosing `scf.for` that qualifies (and
  holds no barrier, shuffle or other collective op) becomes
  `scf.if %c { loop } else { copy of loop }` (the new `scf.if` is itself a
  guard), and the copies are simplified again: the then copy loses the
  checks `%c` implies, the else copy folds what fails. `%c` is the
  conjunction, over the loop's guards, of (`tilemlir.rewriting.range_versions`)
  - hoisting: checks invariant in the loop (computed only from values
    defined outside it), as they are;
  - range versioning: checks that are not invariant but hold on every
    iteration when they hold at the last one (an index that grows with the
    induction variables, compared `<` a bound) or at the first (one that
    shrinks), taken there: each induction variable from the loop down to
    the check replaced by `lb + ((ub - lb - 1) floordiv step) * step` (or
    `lb`), and only when Z3 proves that this value and the loops' ranges
    imply the check. To bound code growth, only loops of at most
    `max-range-trips` iterations or marked `tile.unroll` are range-versioned,
    never a vector run (vectorize versions those per vector), each loop at
    most once and at most `max-versioned` loops per function. A dim a symbol
    names is read from the symbol's first tensor, so after cse consecutive
    loops' versions share one condition and canonicalize merges their ifs;
- tail split: when the checks hold on every iteration but the last
  `max-tail` ones, the loop becomes an unguarded interior loop followed by
  a guarded tail loop over the same induction variable.

Only `proved` answers remove anything; `refuted`, `unknown` and a query
that ran out of the prover's budget (`TILEMLIR_PROVER_RLIMIT`) keep the
check. At the end the pass recounts the guards and checks that
every one that disappeared had a proof (`guards-removed-without-proof`
must be 0, else it reports an internal error).

Statistics: guards-proved, guards-folded, guards-kept, guards-resource-out,
checks-dropped, loops-versioned (hoisting only), loops-range-versioned
(at least one check at an extreme iteration), loops-split, prover-queries,
prover-cache-hits, prover-resource-outs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import z3

from tilemlir.analysis.accesses import ops_where
from tilemlir.analysis.index_terms import ceil_div
from tilemlir.analysis.prover import Outcome, Prover, Verdict
from tilemlir.diagnostics import reporting as diag
from tilemlir.ir_util import constant_int, operation, root_of
from tilemlir.mlir import ir
from tilemlir.pass_infra.registry import register_pass
from tilemlir.rewriting.guards import (
    Graveyard,
    binary,
    check_leaves,
    conjunction,
    guards_in,
    index_constant,
    inline_else,
    inline_then,
    make_guard,
    run_per_function,
    set_condition,
    yield_,
)
from tilemlir.rewriting.persistent_tiles import TILE_LOOP_ATTR
from tilemlir.rewriting.range_versions import Conditions

_MAX_ROUNDS = 64
_VECTOR_RUN_TRIPS = 16
# Ops whose threads must all reach them together: a loop holding one is never versioned.
_COLLECTIVE_PREFIXES = ("gpu.barrier", "gpu.shuffle", "gpu.subgroup", "gpu.all_reduce", "nvgpu.", "tile.")

_STATISTICS = {
    "guards-proved": "guards removed: Z3 proved every check true",
    "guards-folded": "guards replaced by their else branch: Z3 proved them false",
    "guards-kept": "guards left after the pass",
    "guards-resource-out": "kept guards with at least one query that ran out of the prover's budget",
    "checks-dropped": "checks proved true and dropped from guards that stay",
    "loops-versioned": "loops versioned on loop-invariant checks (guard hoisting)",
    "loops-range-versioned": "loops versioned on checks taken at their extreme iteration (range versioning)",
    "loops-split": "loops split into an unguarded interior and a guarded tail",
    "prover-queries": "Z3 queries asked",
    "prover-cache-hits": "Z3 queries answered from the cache",
    "prover-resource-outs": "Z3 queries that ran out of the prover's budget (TILEMLIR_PROVER_RLIMIT)",
}


@dataclass(frozen=True)
class EliminateGuardsOptions:
    max_tail: int = 2  # split a loop when its guard fails only in the last max-tail iterations
    max_versioned: int = 16  # loop versionings per function
    max_split: int = 16  # loop splits per function
    max_loop_ops: int = 400  # larger loops are neither versioned nor split
    max_range_trips: int = 64  # range-version loops of at most this many iterations (or marked tile.unroll)


@register_pass("eliminate-guards", "remove, hoist and split bounds guards Z3 proves redundant", EliminateGuardsOptions)
def run(module, options: EliminateGuardsOptions) -> None:
    run_per_function(_entry_functions(operation(module)), lambda func: _Eliminator(func, options).run(), _STATISTICS)


def _entry_functions(root: ir.Operation) -> list[ir.Operation]:
    return ops_where(root, lambda op: op.name == "func.func" and any(True for _ in _launches(op)))


def _launches(func: ir.Operation):
    for block in func.regions[0].blocks:
        for op in block.operations:
            if operation(op).name == "gpu.launch":
                yield operation(op)


class _Eliminator:
    def __init__(self, func: ir.Operation, options: EliminateGuardsOptions):
        self.func = func
        self.options = options
        self.prover = Prover(func)
        self.graveyard = Graveyard()
        self.stats: Counter = Counter()
        self.proofs: list[list[Outcome]] = []
        self.ran_out: set = set()
        self.created = 0
        self.discarded = 0
        self.restructured: set = set()

    def run(self) -> Counter:
        start = len(guards_in(self.func))
        for _ in range(_MAX_ROUNDS):
            for guard in guards_in(self.func):
                self._simplify(guard)
            if not self._restructure_one():
                break
        kept = guards_in(self.func)
        self.stats["guards-kept"] = len(kept)
        self.stats["guards-resource-out"] = sum(1 for g in kept if g in self.ran_out)
        self.stats["prover-queries"] = self.prover.stats["queries"]
        self.stats["prover-cache-hits"] = self.prover.stats["cache-hits"]
        self.stats["prover-resource-outs"] = self.prover.stats[Verdict.RESOURCE_OUT.value]
        self._check_proofs(start, len(kept))
        self.prover = None
        self.ran_out.clear()
        self.restructured.clear()
        self.graveyard.release(root_of(self.func))
        return self.stats

    def _check_proofs(self, start: int, kept: int) -> None:
        removed = self.stats["guards-proved"] + self.stats["guards-folded"]
        unproved = (start + self.created - self.discarded - kept) - removed
        unproved += sum(1 for outcomes in self.proofs if not all(o.proved for o in outcomes))
        if unproved or len(self.proofs) != removed:
            raise diag.error(self.func, f"eliminate-guards: {unproved} guard(s) removed without a proof (internal error)")

    # -- per guard -----------------------------------------------------------------

    def _simplify(self, guard: ir.Operation) -> None:
        terms = self.prover.terms
        leaves = check_leaves(guard.operands[0])
        goals = [terms.bool_term(leaf) for leaf in leaves]
        outcomes = [self.prover.prove(goal, guard) for goal in goals]
        if any(o.ran_out for o in outcomes):
            self.ran_out.add(guard)
        if all(o.proved for o in outcomes):
            self.proofs.append(outcomes)
            self.stats["guards-proved"] += 1
            self.discarded += _guards_in_region(guard, 1)
            inline_then(guard, self.graveyard)
            return
        never = self.prover.prove(z3.Not(z3.And(*goals)), guard)
        if never.proved:
            self.proofs.append([never])
            self.stats["guards-folded"] += 1
            self.discarded += _guards_in_region(guard, 0)
            inline_else(guard, self.graveyard)
            return
        remaining = [leaf for leaf, o in zip(leaves, outcomes) if not o.proved]
        if len(remaining) < len(leaves):
            self.stats["checks-dropped"] += len(leaves) - len(remaining)
            set_condition(guard, conjunction(remaining, ir.InsertionPoint(guard), guard.location), self.graveyard)

    # -- restructuring -------------------------------------------------------------

    def _restructure_one(self) -> bool:
        """Version or split one loop around a remaining guard; False when none applies."""
        for guard in guards_in(self.func):
            loops = _enclosing_loops(guard)
            for loop in reversed(loops):
                if self._try_version(loop, guard):
                    return True
            for loop in loops:
                if self._try_split(loop, guard):
                    return True
        return False

    def _eligible(self, loop: ir.Operation) -> bool:
        """A persistent launch's tile loop is the whole kernel body: a copy would double it (and split the roles'
        matching loops), its guards are versioned in the loops inside it."""
        return loop not in self.restructured and _op_count(loop) <= self.options.max_loop_ops \
            and TILE_LOOP_ATTR not in loop.attributes

    def _try_version(self, loop: ir.Operation, guard: ir.Operation) -> bool:
        versioned = self.stats["loops-versioned"] + self.stats["loops-range-versioned"]
        if versioned >= self.options.max_versioned or not self._eligible(loop) or _holds_collective(loop):
            return False
        conditions = Conditions(self.prover, loop, ranged=self._range_eligible(loop))
        if not any(conditions.find(leaf, guard) for leaf in check_leaves(guard.operands[0])):
            return False
        return self._version(loop, conditions)

    def _range_eligible(self, loop: ir.Operation) -> bool:
        """Whether range versioning may copy `loop`: a short loop (or one the emitter unrolls anyway)
        that is not a vector run (vectorize versions those per vector)."""
        trips = _constant_trips(loop)
        if trips is not None and trips <= _VECTOR_RUN_TRIPS and not _has_inner_loop(loop):
            return False
        return (trips is not None and trips <= self.options.max_range_trips) or _marked_unroll(loop)

    def _version(self, loop: ir.Operation, conditions: Conditions) -> bool:
        """Version `loop` on the conditions of every guard in it, one per distinct check;
        False when none could be built."""
        loc, ip = loop.location, ir.InsertionPoint(loop)
        chosen, seen = [], set()
        for guard in guards_in(loop):
            for leaf in check_leaves(guard.operands[0]):
                condition = conditions.find(leaf, guard)
                if condition is not None and condition.term.sexpr() not in seen:
                    seen.add(condition.term.sexpr())
                    chosen.append(condition)
        built = [(c, conditions.build(c, ip, loc, self.graveyard)) for c in chosen]
        built = [(c, value) for c, value in built if value is not None]
        if not built:
            return False
        cond = conjunction([value for _, value in built], ip, loc)
        version = make_guard(cond, [r.type for r in loop.results], loc, ip, with_else=True)
        for old, new in zip(loop.results, version.results):
            old.replace_all_uses_with(new)
        then_block, else_block = version.regions[0].blocks[0], version.regions[1].blocks[0]
        loop.move_before(yield_(list(loop.results), then_block, loc))
        copy = loop.clone(ip=ir.InsertionPoint(else_block))
        yield_(list(copy.results), else_block, loc)
        self.restructured.update({loop, copy})
        self.created += 1 + len(guards_in(copy))
        ranged = any(c.ranged for c, _ in built)
        self.stats["loops-range-versioned" if ranged else "loops-versioned"] += 1
        return True

    def _try_split(self, loop: ir.Operation, guard: ir.Operation) -> bool:
        if self.stats["loops-split"] >= self.options.max_split or not self._eligible(loop):
            return False
        trips = _constant_trips(loop)
        if trips is not None and trips <= _VECTOR_RUN_TRIPS and not _has_inner_loop(loop):
            return False  # a candidate vector run: vectorize handles its guards whole
        terms = self.prover.terms
        view = loop.opview
        lb, ub, step = (terms.int_term(v) for v in (view.lowerBound, view.upperBound, view.step))
        iv = terms.loop_var(loop)
        goals = [terms.bool_term(leaf) for leaf in check_leaves(guard.operands[0])]
        if not any(_mentions(goal, iv) for goal in goals):
            return False
        for tail in range(1, self.options.max_tail + 1):
            if trips is not None and trips <= tail:
                return False
            interior = ceil_div(ub - lb, step) - tail
            split = lb + z3.If(interior > 0, interior, 0) * step
            if self.prover.prove(split <= lb, loop).proved:
                continue  # no interior iteration could ever run
            if all(self.prover.prove(goal, guard, extra=[iv < split]).proved for goal in goals):
                self._split(loop, tail)
                return True
        return False

    def _split(self, loop: ir.Operation, tail: int) -> None:
        loc, ip = loop.location, ir.InsertionPoint(loop)
        split = _split_point(loop, tail, ip, loc)
        interior = loop.clone(ip=ip)
        interior.operands[1] = split
        rest = loop.clone(ip=ip)
        rest.operands[0] = split
        for i, result in enumerate(interior.results):
            rest.operands[3 + i] = result
        for old, new in zip(loop.results, rest.results):
            old.replace_all_uses_with(new)
        self.restructured.update({interior, rest})
        copies = len(guards_in(interior)) + len(guards_in(rest))
        self.discarded += len(guards_in(loop))
        self.created += copies
        self.graveyard.bury(loop)
        self.stats["loops-split"] += 1


# -- helpers -----------------------------------------------------------------------


def _guards_in_region(guard: ir.Operation, index: int) -> int:
    return sum(len(guards_in(operation(op))) for block in guard.regions[index].blocks for op in block.operations)


def _has_inner_loop(loop: ir.Operation) -> bool:
    found = [False]

    def visit(op):
        if op != loop and op.name in ("scf.for", "scf.while", "scf.parallel"):
            found[0] = True
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    loop.walk(visit)
    return found[0]


def _enclosing_loops(op: ir.Operation) -> list[ir.Operation]:
    """Enclosing `scf.for` ops inside the launch, innermost first."""
    loops, node = [], op.parent
    while node is not None and node.name != "gpu.launch":
        if node.name == "scf.for":
            loops.append(node)
        node = node.parent
    return loops


def _op_count(root: ir.Operation) -> int:
    count = [0]

    def visit(op):
        count[0] += 1
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return count[0]


def _holds_collective(root: ir.Operation) -> bool:
    found = [False]

    def visit(op):
        if op.name.startswith(_COLLECTIVE_PREFIXES):
            found[0] = True
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    root.walk(visit)
    return found[0]


def _mentions(expr, var) -> bool:
    target = var.get_id()
    stack, seen = [expr], set()
    while stack:
        node = stack.pop()
        if node.get_id() == target:
            return True
        if node.get_id() not in seen:
            seen.add(node.get_id())
            stack.extend(node.children())
    return False


def _marked_unroll(loop: ir.Operation) -> bool:
    """Whether the loop asks to be unrolled (`tile.unroll` other than `false`)."""
    if "tile.unroll" not in loop.attributes:
        return False
    attr = loop.attributes["tile.unroll"]
    return not (isinstance(attr, ir.BoolAttr) and not attr.value)


def _constant_trips(loop: ir.Operation) -> int | None:
    lb, ub, step = (constant_int(v) for v in list(loop.operands)[:3])
    if None in (lb, ub, step) or step <= 0:
        return None
    return max(0, -(-(ub - lb) // step))


def _split_point(loop: ir.Operation, tail: int, ip, loc) -> ir.Value:
    """lb + max(trips - tail, 0) * step: where the last `tail` iterations begin."""
    lb, ub, step = list(loop.operands)[:3]
    values = [constant_int(v) for v in (lb, ub, step)]
    if None not in values:
        lo, hi, st = values
        return index_constant(lo + max(0, -(-(hi - lo) // st) - tail) * st, ip, loc)
    if values[2] == 1:
        last = binary("arith.subi", ub, index_constant(tail, ip, loc), ip, loc)
        return binary("arith.maxsi", last, lb, ip, loc)
    span = binary("arith.subi", ub, lb, ip, loc)
    trips = binary("arith.ceildivsi", span, step, ip, loc)
    interior = binary("arith.subi", trips, index_constant(tail, ip, loc), ip, loc)
    interior = binary("arith.maxsi", interior, index_constant(0, ip, loc), ip, loc)
    return binary("arith.addi", lb, binary("arith.muli", interior, step, ip, loc), ip, loc)
