"""eliminate-guards: only proofs remove guards, and the pass checks that at its end.

(The rewrites themselves are covered by test/lit/passes/eliminate-guards.mlir
and, for soundness, test_guards_fuzz.py.)
"""

from __future__ import annotations

import pytest

from tilemlir.analysis.prover import clear_cache
from tilemlir.context import make_context
from tilemlir.diagnostics import CompileError
from tilemlir.mlir import ir
from tilemlir.pass_infra.runner import run_pipeline
from tilemlir.passes import eliminate_guards
from tilemlir.rewriting.guards import guards_in, inline_then

KERNEL = """
func.func @rows(%X: memref<?x4096xf32>, %Y: memref<?xf32>)
    attributes {tile.entry, tile.arg_names = ["X", "Y"], tile.arg_dims = [["M", 4096], ["N"]],
                tile.symbols = ["M", "N"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %M = memref.dim %X, %c0 : memref<?x4096xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %M, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %v = memref.load %X[%bx, %tx] {tile.pad = 0.0 : f32} : memref<?x4096xf32>
    memref.store %v, %Y[%bx] : memref<?xf32>
    gpu.terminator
  }
  return
}
"""


def _statistics(report) -> dict:
    return {name: stat.value for counters in report.statistics.values() for name, stat in counters.items()}


def _guards(module) -> int:
    return len(guards_in(module.body.operations[0].operation))


def test_guards_are_removed_when_proved():
    clear_cache()
    with make_context():
        module = ir.Module.parse(KERNEL)
        stats = _statistics(run_pipeline(module, "insert-guards,eliminate-guards"))
        # bx < M holds (grid = M); bx < N does not: Y has its own length.
        assert (stats["guards-inserted"], stats["guards-proved"], stats["guards-kept"]) == (2, 1, 1)
        assert _guards(module) == 1


def test_a_query_out_of_budget_keeps_its_guard_and_is_counted(monkeypatch):
    monkeypatch.setenv("TILEMLIR_PROVER_RLIMIT", "1")
    with make_context():
        module = ir.Module.parse(KERNEL)
        stats = _statistics(run_pipeline(module, "insert-guards,eliminate-guards"))
        assert stats["guards-proved"] == 0 and stats["guards-folded"] == 0
        assert stats["guards-kept"] == 2 and stats["guards-resource-out"] == 2
        assert stats["prover-resource-outs"] == stats["prover-queries"] - stats["prover-cache-hits"] > 0
        assert _guards(module) == 2


def test_a_guard_removed_without_proof_is_an_internal_error(monkeypatch):
    clear_cache()

    def careless(self, guard):  # drops every guard, recording nothing
        inline_then(guard, self.graveyard)

    monkeypatch.setattr(eliminate_guards._Eliminator, "_simplify", careless)
    with make_context():
        module = ir.Module.parse(KERNEL)
        with pytest.raises(CompileError, match=r"2 guard\(s\) removed without a proof"):
            run_pipeline(module, "insert-guards,eliminate-guards")


CHUNKS = """
func.func @chunks(%X: memref<?xf32>) attributes {tile.entry, tile.arg_names = ["X"], tile.arg_dims = [["N"]],
                                                 tile.symbols = ["N"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %c384 = arith.constant 384 : index
  %N = memref.dim %X, %c0 : memref<?xf32>
  %g = arith.ceildivui %N, %c384 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %g, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %x = memref.alloca() : memref<12xf32, "local">
    %base = arith.muli %bx, %c384 : index
    %t = arith.muli %tx, %c4 : index
    %bt = arith.addi %base, %t : index
    scf.for %k = %c0 to %c3 step %c1 {
      scf.for %v = %c0 to %c4 step %c1 {
        %off = arith.muli %k, %c32 : index
        %o = arith.addi %bt, %off : index
        %i = arith.addi %o, %v : index
        %r0 = arith.muli %k, %c4 : index
        %r = arith.addi %r0, %v : index
        %val = memref.load %X[%i] {tile.pad = 0.0 : f32} : memref<?xf32>
        memref.store %val, %x[%r] : memref<12xf32, "local">
      }
    }
    gpu.terminator
  }
  return
}
"""


@pytest.mark.parametrize("max_trips, versioned", [(64, 1), (3, 1), (2, 0)])
def test_range_versioning_is_bounded_by_trip_count(max_trips, versioned):
    """The 3-chunk loop is range-versioned (its guard then proved in the copy that runs when
    the last chunk is in range) only when max-range-trips allows 3 iterations."""
    clear_cache()
    with make_context():
        module = ir.Module.parse(CHUNKS)
        stats = _statistics(run_pipeline(module, f"insert-guards,eliminate-guards{{max-range-trips={max_trips}}}"))
        assert stats["loops-range-versioned"] == versioned
        assert (stats["guards-proved"], stats["guards-kept"]) == ((1, 2) if versioned else (0, 1))
        assert _guards(module) == stats["guards-kept"]


def test_a_bad_budget_is_a_diagnostic_naming_the_knob(monkeypatch):
    monkeypatch.setenv("TILEMLIR_PROVER_RLIMIT", "lots")
    with make_context():
        module = ir.Module.parse(KERNEL)
        with pytest.raises(CompileError, match="TILEMLIR_PROVER_RLIMIT must be an integer from 1 to 4294967295, got 'lots'"):
            run_pipeline(module, "insert-guards,eliminate-guards")
