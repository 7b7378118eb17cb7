"""Z3 prover for index facts of thread-level IR: is a condition true wherever an op runs?

`Prover(func)` answers `prove(goal, at)`: does the Z3 boolean `goal` (built
from `prover.terms`, see `index_terms`) hold at every execution of op `at`,
given the facts in scope there:

- the facts of every variable in the goal (thread and block ids in their
  ranges, loop induction variables in theirs, symbolic dims >= 0, ...),
  and of the variables those facts mention in turn;
- `tile.assume` conditions whose block encloses `at` and that come before it;
- the condition of every enclosing `scf.if` (negated in the else region);
- the range of every enclosing `scf.for` (inside it, it runs);
- `extra` facts the caller adds.

Only facts connected to the goal through shared variables are sent, so
equal questions give equal queries. A query is an SMT-LIB script (the
variables declared in name order, the facts in text order, then the negated
goal), and its verdict is a function of that text, the budget and the Z3
version alone, whatever the machine's load or what the process solved before:

- it runs under Z3's deterministic resource limit (`rlimit`, a count of
  solver steps), the same budget for every query (`TILEMLIR_PROVER_RLIMIT`),
  never under a wall-clock timeout;
- it is parsed into a fresh Z3 context: in a context that has solved other
  queries the same query can need more or less work (term ids, caches);
- Z3's SMT core solves it (`SimpleSolver`): Z3's default solver runs some
  nonlinear tactics under fixed wall-clock timeouts.

Verdicts are cached in-process by (query, budget). Terms are built in the
prover's own context (`Prover.ctx`), so compiles on other threads share no
Z3 state. Soundness is the caller's rule: only `Outcome.proved` lets a guard
go; `refuted`, `unknown` and `resource-out` all keep it.
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import dataclass

import z3

from tilemlir.analysis.accesses import ops_where
from tilemlir.analysis.index_terms import IndexTerms
from tilemlir.config import settings
from tilemlir.ir_util import operation
from tilemlir.mlir import ir

_CACHE_LIMIT = 200_000
_cache: dict = {}


class Verdict(enum.Enum):
    PROVED = "proved"
    REFUTED = "refuted"
    UNKNOWN = "unknown"
    RESOURCE_OUT = "resource-out"  # the query needed more than the budget


@dataclass(frozen=True)
class Outcome:
    verdict: Verdict
    query: str

    @property
    def proved(self) -> bool:
        return self.verdict is Verdict.PROVED

    @property
    def ran_out(self) -> bool:
        return self.verdict is Verdict.RESOURCE_OUT


def clear_cache() -> None:
    _cache.clear()


class Prover:
    """Answers index questions about one function; keeps counts in `stats`."""

    def __init__(self, func: ir.Operation, rlimit: int | None = None):
        self.ctx = z3.Context()
        self.terms = IndexTerms(func, self.ctx)
        self.rlimit = settings().prover_rlimit if rlimit is None else rlimit
        self.stats: Counter = Counter()
        self._assumes = ops_where(self.terms.func, lambda op: op.name == "tile.assume")
        self._term_vars: dict[int, tuple] = {}
        self._constants: dict[str, z3.ExprRef] = {}

    def prove(self, goal: z3.BoolRef, at: ir.Operation | None = None, extra=()) -> Outcome:
        """Whether `goal` holds wherever `at` executes (with `extra` facts)."""
        scoped = (self.scope_facts(at) if at is not None else []) + list(extra)
        facts = self._relevant(goal, scoped)
        query = self._query_text(facts, goal)
        self.stats["queries"] += 1
        key = (query, self.rlimit)
        verdict = _cache.get(key)
        if verdict is not None:
            self.stats["cache-hits"] += 1
        else:
            verdict = solve(query, self.rlimit)
            if len(_cache) > _CACHE_LIMIT:
                _cache.clear()
            _cache[key] = verdict
        self.stats[verdict.value] += 1
        return Outcome(verdict, query)

    def scope_facts(self, at: ir.Operation) -> list[z3.BoolRef]:
        """Assumes and enclosing `scf.if` conditions that hold wherever `at` runs."""
        at = operation(at)
        facts = []
        node = at
        while node is not None and node != self.terms.func:
            parent = node.parent
            if parent is None:
                break
            if parent.name == "scf.if":
                cond = self.terms.bool_term(parent.operands[0])
                facts.append(cond if node.block.region == parent.regions[0] else z3.Not(cond))
            if parent.name == "scf.for":
                iv = self.terms.loop_var(parent)
                facts.extend(self.terms.owned_facts.get(iv.decl().name(), ()))
            for assume in self._assumes:
                if assume.block == node.block and assume.is_before_in_block(node):
                    facts.append(self.terms.bool_term(assume.operands[0]))
            node = parent
        return facts

    def _query_text(self, facts: list, goal) -> str:
        """The SMT-LIB script asking whether `facts` imply `goal` (unsatisfiable: proved)."""
        names = set(self._vars_of(goal)).union(*(self._vars_of(f) for f in facts))
        constants = [self._constants[name] for name in sorted(names)]
        lines = [f"(declare-fun {c.sexpr()} () {c.sort().sexpr()})" for c in constants]
        lines += sorted({f"(assert {f.sexpr()})" for f in facts})
        lines.append(f"(assert (not {goal.sexpr()}))")
        return "\n".join(lines)

    def _relevant(self, goal, scoped: list) -> list:
        """The facts a query needs: scope facts connected to its variables, and the facts owned
        by every variable it (transitively) mentions — never those of a variable it does not."""
        wanted, expanded = set(self._vars_of(goal)), set()
        chosen: dict = {}
        pending = list(scoped)
        changed = True
        while changed:
            changed = False
            rest = []
            for fact in pending:
                names = self._vars_of(fact)
                if not names or names & wanted:
                    chosen[fact.get_id()] = fact
                    wanted |= names
                    changed = True
                else:
                    rest.append(fact)
            pending = rest
            for name in list(wanted - expanded):
                expanded.add(name)
                for fact in self.terms.owned_facts.get(name, ()):
                    chosen[fact.get_id()] = fact
                    wanted |= self._vars_of(fact)
                    changed = True
        return list(chosen.values())

    def variables(self, expr) -> frozenset:
        """Names of the variables in a Z3 term."""
        return self._vars_of(expr)

    def _vars_of(self, expr) -> frozenset:
        """Names of the uninterpreted constants in `expr`, memoized per subterm (terms share many)."""
        # Z3 reuses the id of a freed term: each entry keeps its term alive so the id stays its own.
        memo = self._term_vars
        stack = [(expr, False)]
        while stack:
            node, children_done = stack.pop()
            key = node.get_id()
            if key in memo:
                continue
            children = node.children()
            if not children_done and children:
                stack.append((node, True))
                stack.extend((c, False) for c in children if c.get_id() not in memo)
                continue
            if z3.is_const(node) and node.decl().kind() == z3.Z3_OP_UNINTERPRETED:
                names = frozenset([node.decl().name()])
                self._constants[node.decl().name()] = node
            else:
                names = frozenset().union(*(memo[c.get_id()][1] for c in children))
            memo[key] = (node, names)
        return memo[expr.get_id()][1]


def solve(query: str, rlimit: int) -> Verdict:
    """The verdict on SMT-LIB `query` (its last assertion the negated goal) within `rlimit`
    units of Z3 work, in a context of its own (see the module docstring for why)."""
    ctx = z3.Context()
    assertions = z3.parse_smt2_string(query, ctx=ctx)
    if z3.is_true(z3.simplify(assertions[len(assertions) - 1].arg(0))):
        return Verdict.PROVED
    solver = z3.SimpleSolver(ctx=ctx)
    solver.set("rlimit", rlimit)
    solver.set("ctrl_c", False)  # Z3 would take SIGINT to cancel the check, a verdict no input decides
    solver.add(assertions)
    result = solver.check()
    if result == z3.unsat:
        return Verdict.PROVED
    if result == z3.sat:
        return Verdict.REFUTED
    reason = solver.reason_unknown()  # the budget is the only thing that cancels a check
    return Verdict.RESOURCE_OUT if ("resource" in reason or "canceled" in reason) else Verdict.UNKNOWN
