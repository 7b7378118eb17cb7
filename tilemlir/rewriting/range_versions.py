"""The conditions eliminate-guards versions a loop on: its checks, hoisted as they are or at an extreme iteration.

A loop `L` is versioned as `scf.if %c { L } else { copy of L }`; each
check `p` of a guard nested in `L` contributes to `%c`:

- `p` itself when it is invariant in `L` (computed from values defined
  outside `L` only): hoisting;
- `p` at the extreme iteration of the loops from `L` down to its guard
  (range versioning): every induction variable replaced by its value at the
  last iteration, `lb + ((ub - lb - 1) floordiv step) * step`, or at the
  first, `lb`, for indices that decrease; taken only when Z3 proves that
  this value, the facts in scope and the loops' ranges (`lb <= i < ub`, `i`
  on the step's lattice) imply `p` on every iteration.

`%c` is built before `L` from clones of the checks' arithmetic; a dim that a
symbol names (`tile.arg_dims`) is read from the first tensor that symbol
sizes, so the same check over two tensors of one length becomes one value
after cse, and the ifs of consecutive loops merge. Versioning itself never
changes what the loop computes (both branches run the same loop); the
checks go later, when the prover shows them from `%c`.
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

from tilemlir.analysis.index_terms import floor_div
from tilemlir.analysis.prover import Prover
from tilemlir.ir_util import constant_int, inside, operation
from tilemlir.mlir import ir
from tilemlir.rewriting.guards import Graveyard, binary, clone_slice, hoistable, index_constant, symbol_dims

LAST, FIRST = "last", "first"


@dataclass(frozen=True)
class Condition:
    """One check `leaf` of `guard`, hoisted out of the versioned loop: at the iteration `corners`
    names (LAST or FIRST) of each loop in `chain` (innermost first, the versioned loop last), or
    as it is when `chain` is empty."""

    leaf: ir.Value
    guard: ir.Operation
    chain: tuple
    corners: tuple
    term: z3.BoolRef  # the hoisted check, in Z3

    @property
    def ranged(self) -> bool:
        return bool(self.chain)


class Computable:
    """Whether a value can be computed before `loop`: from values defined outside it and, when
    `with_loop_ivs`, from induction variables of `loop` and of loops nested in it."""

    def __init__(self, loop: ir.Operation, with_loop_ivs: bool):
        self.loop = loop
        self.with_loop_ivs = with_loop_ivs
        self.memo: dict = {}

    def __call__(self, value: ir.Value) -> bool:
        if value not in self.memo:
            self.memo[value] = self._compute(value)
        return self.memo[value]

    def _compute(self, value: ir.Value) -> bool:
        owner = value.owner
        if isinstance(owner, ir.Block):
            holder = operation(owner.owner)
            if not inside(holder, self.loop):
                return True
            return self.with_loop_ivs and holder.name == "scf.for" and value.arg_number == 0
        op = operation(owner)
        if not inside(op, self.loop):
            return True
        return hoistable(op) and all(self(v) for v in op.operands)


class Conditions:
    """Finds and builds the versioning conditions of one loop."""

    def __init__(self, prover: Prover, loop: ir.Operation, ranged: bool):
        self.prover = prover
        self.loop = loop
        self.invariant = Computable(loop, with_loop_ivs=False)
        self.movable = Computable(loop, with_loop_ivs=True) if ranged else None
        self.memo: dict = {}

    def find(self, leaf: ir.Value, guard: ir.Operation) -> Condition | None:
        """The condition that check `leaf` of `guard` contributes, if any."""
        key = (leaf, guard)
        if key not in self.memo:
            self.memo[key] = self._find(leaf, guard)
        return self.memo[key]

    def _find(self, leaf: ir.Value, guard: ir.Operation) -> Condition | None:
        goal = self.prover.terms.bool_term(leaf)
        if self.invariant(leaf):
            return Condition(leaf, guard, (), (), goal)
        if self.movable is None or not self.movable(leaf):
            return None
        chain = _loops_up_to(guard, self.loop)
        if not all(self.movable(v) for loop in chain[:-1] for v in _bounds(loop)):
            return None
        corners = [self._corner(goal, loop, guard) for loop in chain]
        if None in corners:
            return None
        term = self._at(goal, chain, corners)
        return Condition(leaf, guard, tuple(chain), tuple(corners), term) if self._implies(term, goal, guard) else None

    def _corner(self, goal: z3.BoolRef, loop: ir.Operation, guard: ir.Operation) -> str | None:
        """The iteration of `loop` whose check implies the check on all of its iterations, the
        other loops' variables left free: the last for an index that grows, the first for one that shrinks."""
        for corner in (LAST, FIRST):
            if self.prover.prove(goal, guard, extra=[self._at(goal, [loop], [corner])]).proved:
                return corner
        return None

    def _at(self, goal: z3.BoolRef, chain: list, corners: list) -> z3.BoolRef:
        terms = self.prover.terms
        for loop, corner in zip(chain, corners):  # innermost first: inner bounds may use outer variables
            lb, ub, step = (terms.int_term(v) for v in _bounds(loop))
            goal = z3.substitute(goal, (terms.loop_var(loop), _extreme_term(lb, ub, step, corner)))
        return goal

    def _implies(self, candidate: z3.BoolRef, goal: z3.BoolRef, guard: ir.Operation) -> bool:
        """`candidate` implies `goal` wherever the guard runs, and may hold: a candidate that never
        holds would only version the loop into a dead copy."""
        if not self.prover.prove(goal, guard, extra=[candidate]).proved:
            return False
        return not self.prover.prove(z3.Not(candidate), self.loop).proved

    def build(self, condition: Condition, ip: ir.InsertionPoint, loc, graveyard: Graveyard) -> ir.Value | None:
        """`condition` computed at `ip` (before the loop); None when Z3 does not prove that the
        value built implies the check (the clones are then left to `graveyard`)."""
        leaf = condition.leaf
        roots = [leaf] + [v for loop in condition.chain for v in _bounds(loop)]
        mapping = symbol_dims(self.prover.terms, roots, self.loop, ip, loc)
        for loop, corner in reversed(list(zip(condition.chain, condition.corners))):  # outer values feed inner bounds
            lb, ub, step = (clone_slice(v, self.loop, mapping, ip, graveyard) for v in _bounds(loop))
            extreme = _extreme_value(lb, ub, step, corner, ip, loc)
            graveyard.note_operand(extreme)  # unused when the check does not read this loop's variable
            mapping[loop.regions[0].blocks[0].arguments[0]] = extreme
        value = clone_slice(leaf, self.loop, mapping, ip, graveyard)
        if condition.ranged:
            term = self.prover.terms.bool_term(value)
            if not self.prover.prove(self.prover.terms.bool_term(leaf), condition.guard, extra=[term]).proved:
                graveyard.note_operand(value)
                return None
        return value


def _bounds(loop: ir.Operation) -> list[ir.Value]:
    return list(loop.operands)[:3]


def _loops_up_to(op: ir.Operation, outer: ir.Operation) -> list[ir.Operation]:
    """The `scf.for` ops enclosing `op`, innermost first, up to and including `outer`."""
    loops, node = [], op.parent
    while node is not None:
        if node.name == "scf.for":
            loops.append(node)
        if node == outer:
            return loops
        node = node.parent
    raise ValueError("the op is not inside the loop")


def _extreme_term(lb, ub, step, corner: str):
    if corner == FIRST:
        return lb
    return lb + floor_div(ub - lb - 1, step) * step


def _extreme_value(lb: ir.Value, ub: ir.Value, step: ir.Value, corner: str, ip, loc) -> ir.Value:
    """The induction variable's value at the first or last iteration, as IR at `ip`."""
    if corner == FIRST:
        return lb
    lo, hi, st = (constant_int(v) for v in (lb, ub, step))
    if None not in (lo, hi, st):
        return index_constant(lo + (hi - lo - 1) // st * st, ip, loc)
    if st == 1:
        return binary("arith.subi", ub, index_constant(1, ip, loc), ip, loc)
    span = binary("arith.subi", binary("arith.subi", ub, lb, ip, loc), index_constant(1, ip, loc), ip, loc)
    steps = binary("arith.floordivsi", span, step, ip, loc)
    return binary("arith.addi", lb, binary("arith.muli", steps, step, ip, loc), ip, loc)
