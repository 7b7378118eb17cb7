"""The Z3 prover: index arithmetic semantics, facts in scope, cache, and its deterministic budget.

Each test parses a small thread-level function, translates values tagged
`test.q = "name"` and asks the prover about them at the tagged op.
"""

from __future__ import annotations

import gc
import random

import pytest
import z3

import tilemlir
from tilemlir.analysis.prover import Prover, Verdict, clear_cache, solve
from tilemlir.config import DEFAULT_PROVER_RLIMIT
from tilemlir.context import make_context
from tilemlir.mlir import ir

HEADER = """
func.func @k(%X: memref<?x?xf32>, %Y: memref<?x64xf32>, %n: i32)
    attributes {tile.entry, tile.arg_names = ["X", "Y", "n"],
                tile.arg_dims = [["M", "N"], ["N", 64], []], tile.symbols = ["M", "N"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c128 = arith.constant 128 : index
  %M = memref.dim %X, %c0 : memref<?x?xf32>
  %N = memref.dim %X, %c1 : memref<?x?xf32>
  %g = arith.ceildivui %M, %c4 : index
"""

LAUNCH = """
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %g, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
"""

FOOTER = """
    gpu.terminator
  }
  return
}
"""


class Probe:
    """A parsed function with its prover and the values/ops tagged `test.q`."""

    def __init__(self, body: str, prelude: str = "", rlimit: int | None = None):
        self.context = make_context()
        with self.context:
            self.module = ir.Module.parse(HEADER + prelude + LAUNCH + body + FOOTER)
        self.func = self.module.body.operations[0].operation
        self.prover = Prover(self.func, rlimit=rlimit)
        self.tagged = {}

        def visit(op):
            if "test.q" in op.attributes:
                self.tagged[ir.StringAttr(op.attributes["test.q"]).value] = op
            return ir.WalkResult.ADVANCE

        self.func.walk(visit)

    def int(self, name: str) -> z3.ArithRef:
        """The integer variable `name` in the prover's context."""
        return z3.Int(name, self.prover.ctx)

    def term(self, name: str):
        op = self.tagged[name]
        return self.prover.terms.term(op.results[0])

    def prove(self, goal, at: str, extra=()) -> Verdict:
        return self.prover.prove(goal, self.tagged[at], extra).verdict


def test_block_ids_stay_below_the_grid_and_thread_ids_below_the_block():
    probe = Probe("""
    %r0 = arith.muli %bx, %c4 {test.q = "row0"} : index
    %t = arith.addi %tx, %c0 {test.q = "t"} : index
    """)
    row0, t = probe.term("row0"), probe.term("t")
    M = probe.int("sym.M")
    assert probe.prove(row0 < M, "row0") is Verdict.PROVED
    assert probe.prove(row0 + 3 < M, "row0") is Verdict.REFUTED  # ceildiv grid: the last block is partial
    assert probe.prove(z3.And(t >= 0, t < 128), "t") is Verdict.PROVED
    assert probe.prove(t < 127, "t") is Verdict.REFUTED


def test_loop_induction_variable_respects_lower_bound_upper_bound_and_step():
    probe = Probe("""
    %c3 = arith.constant 3 : index
    %c20 = arith.constant 20 : index
    scf.for %i = %c3 to %c20 step %c4 {
      %v = arith.addi %i, %c0 {test.q = "i"} : index
    }
    """)
    i = probe.term("i")
    assert probe.prove(i % 4 == 3, "i") is Verdict.PROVED
    assert probe.prove(i <= 19, "i") is Verdict.PROVED
    assert probe.prove(i < 19, "i") is Verdict.REFUTED  # 19 = 3 + 4 * 4 is an iteration
    assert probe.prove(i >= 3, "i") is Verdict.PROVED


@pytest.mark.parametrize(
    "op, a, b, expected",
    [
        ("divsi", -7, 2, -3),  # C semantics: truncation toward zero
        ("remsi", -7, 2, -1),
        ("floordivsi", -7, 2, -4),
        ("ceildivsi", -7, 2, -3),
        ("ceildivsi", 7, 2, 4),
        ("divui", 7, 2, 3),
        ("remui", 7, 3, 1),
        ("ceildivui", 7, 2, 4),
        ("minsi", -7, 2, -7),
        ("maxsi", -7, 2, 2),
        ("minui", -7, 2, 2),  # -7 is huge unsigned
        ("maxui", -7, 2, -7),
        ("shli", 3, 2, 12),
        ("shrsi", -7, 1, -4),
        ("andi", 45, 7, 5),
    ],
)
def test_integer_ops_follow_their_mlir_semantics(op, a, b, expected):
    probe = Probe(f"""
    %a = arith.constant {a} : index
    %b = arith.constant {b} : index
    %r = arith.{op} %a, %b {{test.q = "r"}} : index
    """)
    r = probe.term("r")
    assert probe.prove(r == expected, "r") is Verdict.PROVED
    assert probe.prove(r == expected + 1, "r") is Verdict.REFUTED


def test_division_semantics_hold_for_symbolic_operands():
    probe = Probe("""
    %s = arith.subi %tx, %c4 : index
    %q = arith.divsi %s, %c4 {test.q = "q"} : index
    %f = arith.floordivsi %s, %c4 {test.q = "f"} : index
    %m = arith.remsi %s, %c4 {test.q = "m"} : index
    """)
    q, f, m = probe.term("q"), probe.term("f"), probe.term("m")
    tx = probe.int("tid.x")
    assert probe.prove(q * 4 + m == tx - 4, "m") is Verdict.PROVED
    assert probe.prove(z3.Implies(tx < 4, m <= 0), "m") is Verdict.PROVED  # remsi takes the dividend's sign
    assert probe.prove(f <= q, "f") is Verdict.PROVED
    assert probe.prove(f == q, "f") is Verdict.REFUTED  # they differ for negative non-multiples


def test_unsigned_division_of_a_possibly_negative_value_proves_nothing_about_it():
    probe = Probe("""
    %s = arith.subi %tx, %c4 : index
    %q = arith.divui %s, %c4 {test.q = "q"} : index
    %p = arith.divui %tx, %c4 {test.q = "p"} : index
    """)
    assert probe.prove(probe.term("q") < 32, "q") is Verdict.REFUTED
    assert probe.prove(probe.term("p") < 32, "p") is Verdict.PROVED


def test_affine_maps_use_floor_division_and_non_negative_mod():
    probe = Probe("""
    %s = arith.subi %tx, %c4 : index
    %a = affine.apply affine_map<(d0) -> ((d0 floordiv 8) * 8 + d0 mod 8)>(%s) {test.q = "a"}
    %b = affine.apply affine_map<(d0) -> (d0 mod 8)>(%s) {test.q = "b"}
    %c = affine.apply affine_map<(d0)[s0] -> (d0 ceildiv 4 + s0)>(%tx)[%c1] {test.q = "c"}
    %d = affine.min affine_map<(d0) -> (d0, 100)>(%tx) {test.q = "d"}
    """)
    tx = probe.int("tid.x")
    assert probe.prove(probe.term("a") == tx - 4, "a") is Verdict.PROVED
    assert probe.prove(z3.And(probe.term("b") >= 0, probe.term("b") < 8), "b") is Verdict.PROVED
    assert probe.prove(probe.term("c") == (tx + 3) / 4 + 1, "c") is Verdict.PROVED
    assert probe.prove(probe.term("d") <= 100, "d") is Verdict.PROVED
    assert probe.prove(probe.term("d") < 100, "d") is Verdict.REFUTED


def test_select_compare_and_casts():
    probe = Probe("""
    %lt = arith.cmpi slt, %tx, %c4 : index
    %s = arith.select %lt, %tx, %c4 {test.q = "s"} : index
    %i = arith.index_cast %tx : index to i32
    %back = arith.index_cast %i {test.q = "back"} : i32 to index
    %ni = arith.index_cast %n : i32 to index
    %nn = arith.addi %ni, %c0 {test.q = "n"} : index
    %sh = arith.shli %tx, %c4 {test.q = "sh"} : index
    """)
    tx = probe.int("tid.x")
    assert probe.prove(probe.term("s") <= 4, "s") is Verdict.PROVED
    assert probe.prove(probe.term("back") == tx, "back") is Verdict.PROVED
    assert probe.prove(probe.term("n") < 2**31, "n") is Verdict.PROVED  # an i32 scalar parameter
    assert probe.prove(probe.term("n") >= 0, "n") is Verdict.REFUTED
    assert probe.prove(probe.term("sh") == tx * 16, "sh") is Verdict.PROVED


def test_symbolic_dims_are_one_variable_per_symbol_and_may_be_zero():
    probe = Probe("""
    %y0 = memref.dim %Y, %c0 : memref<?x64xf32>
    %y1 = memref.dim %Y, %c1 : memref<?x64xf32>
    %xn = memref.dim %X, %c1 : memref<?x?xf32>
    %a = arith.addi %y0, %c0 {test.q = "yrows"} : index
    %b = arith.addi %y1, %c0 {test.q = "ycols"} : index
    %c = arith.addi %xn, %c0 {test.q = "xcols"} : index
    """)
    assert probe.prove(probe.term("yrows") == probe.term("xcols"), "yrows") is Verdict.PROVED  # both are N
    assert probe.prove(probe.term("ycols") == 64, "ycols") is Verdict.PROVED
    assert probe.prove(probe.term("yrows") >= 0, "yrows") is Verdict.PROVED
    assert probe.prove(probe.term("yrows") >= 1, "yrows") is Verdict.REFUTED  # an empty tensor


def test_enclosing_if_conditions_are_facts_in_their_branch_only():
    probe = Probe("""
    %lt = arith.cmpi slt, %tx, %N : index
    scf.if %lt {
      %a = arith.addi %tx, %c0 {test.q = "then"} : index
    } else {
      %b = arith.addi %tx, %c0 {test.q = "else"} : index
    }
    %c = arith.addi %tx, %c0 {test.q = "after"} : index
    """)
    N = probe.int("sym.N")
    assert probe.prove(probe.term("then") < N, "then") is Verdict.PROVED
    assert probe.prove(probe.term("else") >= N, "else") is Verdict.PROVED
    assert probe.prove(probe.term("after") < N, "after") is Verdict.REFUTED


ASSUME_N_128 = """
  %c128b = arith.constant 128 : index
  %rem = arith.remsi %N, %c128b : index
  %ok = arith.cmpi eq, %rem, %c0 : index
  %pos = arith.cmpi sgt, %M, %c4 : index
  %both = arith.andi %ok, %pos : i1
  "tile.assume"(%both) {expr = "N % 128 == 0 and M > 4"} : (i1) -> ()
"""


def test_assumes_are_facts_where_they_dominate():
    probe = Probe("""
    %a = arith.addi %N, %c0 {test.q = "n"} : index
    """, prelude=ASSUME_N_128)
    n, M = probe.term("n"), probe.int("sym.M")
    assert probe.prove(n % 128 == 0, "n") is Verdict.PROVED
    assert probe.prove(M >= 5, "n") is Verdict.PROVED
    assert probe.prove(n % 256 == 0, "n") is Verdict.REFUTED
    without = Probe("""
    %a = arith.addi %N, %c0 {test.q = "n"} : index
    """)
    assert without.prove(without.term("n") % 128 == 0, "n") is Verdict.REFUTED


def test_facts_of_a_loop_the_query_is_not_in_are_left_out():
    # A loop from 1 to N claims nothing about N outside it: if its range were a fact, N >= 2 would follow.
    probe = Probe("""
    scf.for %i = %c1 to %N step %c1 {
      %v = arith.addi %i, %c0 {test.q = "i"} : index
    }
    %after = arith.addi %N, %c0 {test.q = "after"} : index
    """)
    N = probe.int("sym.N")
    assert probe.prove(N >= 2, "i") is Verdict.PROVED  # inside, the loop runs
    assert probe.prove(probe.term("after") >= 2, "after") is Verdict.REFUTED


def test_equal_queries_are_answered_from_the_cache():
    clear_cache()
    body = """
    %r0 = arith.muli %bx, %c4 {test.q = "row0"} : index
    """
    first = Probe(body)
    assert first.prove(first.term("row0") < first.int("sym.M"), "row0") is Verdict.PROVED
    assert first.prover.stats["cache-hits"] == 0
    second = Probe(body)  # another function, another Z3 context: the same query text
    assert second.prove(second.term("row0") < second.int("sym.M"), "row0") is Verdict.PROVED
    assert second.prover.stats["cache-hits"] == 1


def _cubes(probe: Probe) -> z3.BoolRef:
    """No positive cube is a sum of two positive cubes: true, and far beyond any budget Z3 is given."""
    x, y, z = z3.Ints("x y z", probe.prover.ctx)
    return z3.Or(x <= 0, y <= 0, z <= 0, x * x * x + y * y * y != z * z * z + probe.term("a") * 0)


def test_a_query_that_runs_out_of_its_budget_is_not_a_proof():
    probe = Probe("""
    %a = arith.muli %tx, %N {test.q = "a"} : index
    """, rlimit=20_000)
    outcome = probe.prover.prove(_cubes(probe), probe.tagged["a"])
    assert outcome.verdict is Verdict.RESOURCE_OUT and outcome.ran_out and not outcome.proved
    assert probe.prover.stats["resource-out"] == 1


def test_the_cache_keeps_each_verdict_under_its_budget():
    clear_cache()
    body = """
    %r0 = arith.muli %bx, %c4 {test.q = "row0"} : index
    """
    verdicts = []
    for rlimit in (10, None, 10):
        probe = Probe(body, rlimit=rlimit)
        verdicts.append((probe.prove(probe.term("row0") < probe.int("sym.M"), "row0"), probe.prover.stats["cache-hits"]))
    assert verdicts == [(Verdict.RESOURCE_OUT, 0), (Verdict.PROVED, 0), (Verdict.RESOURCE_OUT, 1)]


def test_the_budget_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("TILEMLIR_PROVER_RLIMIT", "12345")
    assert Probe("").prover.rlimit == 12345


def _kernel_queries(monkeypatch) -> list[str]:
    """The query texts the prover solves while lowering a library kernel."""
    from tilemlir.analysis import prover
    from tilemlir.kernels.quant import quant_block_fp8

    clear_cache()
    queries = []

    def recording(query, rlimit):
        queries.append(query)
        return solve(query, rlimit)

    monkeypatch.setattr(prover, "solve", recording)
    tilemlir.lower(quant_block_fp8.instantiate(N=576), "final")
    monkeypatch.undo()
    clear_cache()
    return queries


def _least_budget(query: str) -> int:
    low, high = 1, 1
    while solve(query, high) is Verdict.RESOURCE_OUT:
        low, high = high + 1, high * 2
    while low < high:
        middle = (low + high) // 2
        low, high = (middle + 1, high) if solve(query, middle) is Verdict.RESOURCE_OUT else (low, middle)
    return high


def test_a_verdict_depends_on_the_query_and_the_budget_not_on_what_was_solved_before(monkeypatch):
    # Z3 counts work per context, and the same query in a context that solved others needs
    # more or less of it (in one context, a quarter of these verdicts at their least budget
    # change): each query gets a fresh context.
    rng = random.Random(14)
    queries = rng.sample(_kernel_queries(monkeypatch), 30)
    least = {q: _least_budget(q) for q in queries}
    queries = [q for q in queries if least[q] > 1]
    assert len(queries) >= 20
    for query in reversed(queries):
        for other in rng.sample(queries, 3):
            solve(other, DEFAULT_PROVER_RLIMIT)
        assert solve(query, least[query]) in (Verdict.PROVED, Verdict.REFUTED)
        assert solve(query, least[query] - 1) is Verdict.RESOURCE_OUT


def test_a_prover_leaves_no_z3_object_to_the_cycle_collector():
    """The collector runs on whichever thread allocates: it must never free Z3 terms of a
    context another thread's compile is using. Every Z3 object goes when its prover goes."""
    from tilemlir.kernels.norm import rmsnorm

    kernel = rmsnorm.instantiate(N=4096)
    kernel.frontend()

    def contexts() -> int:
        return sum(isinstance(o, z3.Context) for o in gc.get_objects())

    gc.collect()
    gc.disable()
    try:
        before = contexts()
        tilemlir.lower(kernel, "final")
        after = contexts()
    finally:
        gc.enable()
    assert after == before
