"""Soundness fuzz of insert-guards, eliminate-guards and vectorize.

Random small kernels index a global tensor with random index expressions
over thread/block ids, loop induction variables (random bounds and steps,
some symbolic) and a symbolic dim. The kernel before the passes, run with
the guard meaning (an out-of-range read is the pad value, an out-of-range
write is dropped), is the reference. After the passes every access must be
in range and every vector access aligned (the interpreter raises
otherwise: a guard removed without cause fails here), and the results
must be identical, for every value of the symbolic dim in a small range
(brute-force enumeration of all points).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from thread_level_interpreter import Interpreter, Tensor
from tilemlir.context import make_context
from tilemlir.mlir import ir
from tilemlir.pass_infra.runner import run_pipeline

PIPELINE = "insert-guards,eliminate-guards,vectorize"
FUZZ = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FUZZ_RUNS = settings(FUZZ, max_examples=12)  # each example runs a bigger kernel


# -- random index expressions ------------------------------------------------------

LEAVES = ["%tid", "%bid", "%i", "%j", "%N"]


def expressions():
    leaf = st.one_of(st.sampled_from(LEAVES), st.integers(-3, 30))
    return st.recursive(
        leaf,
        lambda sub: st.one_of(
            st.tuples(st.sampled_from(["addi", "subi", "minsi", "maxsi"]), sub, sub),
            st.tuples(st.just("muli"), sub, st.integers(-2, 6)),
            st.tuples(st.sampled_from(["floordivsi", "remsi", "divsi", "ceildivsi"]), sub, st.integers(1, 6)),
            st.tuples(st.just("select"), st.sampled_from(["slt", "sge"]), sub, sub, sub, sub),
        ),
        max_leaves=6,
    )


class _Emitter:
    def __init__(self):
        self.lines: list[str] = []
        self.count = 0

    def fresh(self) -> str:
        self.count += 1
        return f"%e{self.count}"

    def const(self, value: int) -> str:
        name = self.fresh()
        self.lines.append(f"{name} = arith.constant {value} : index")
        return name

    def emit(self, expr) -> str:
        if isinstance(expr, int):
            return self.const(expr)
        if isinstance(expr, str):
            return expr
        kind = expr[0]
        if kind == "select":
            _, predicate, a, b, x, y = expr
            a, b, x, y = (self.emit(e) for e in (a, b, x, y))
            cond, name = self.fresh(), self.fresh()
            self.lines += [f"{cond} = arith.cmpi {predicate}, {a}, {b} : index",
                           f"{name} = arith.select {cond}, {x}, {y} : index"]
            return name
        lhs = self.emit(expr[1])
        rhs = self.emit(expr[2])
        name = self.fresh()
        self.lines.append(f"{name} = arith.{kind} {lhs}, {rhs} : index")
        return name


# -- kernel 1: one random index into a 1-D tensor ------------------------------------


def _loop_bound(choice: int) -> str:
    """A loop upper bound: a constant, or one that depends on the symbolic dim N."""
    return {0: "%c5", 1: "%N", 2: "%Nq", 3: "%c3"}[choice]


def _gather_kernel(expr, grid: int, block: int, outer, inner, assume_mod: int | None, slots: int,
                   unroll: bool = False) -> str:
    emitter = _Emitter()
    index = emitter.emit(expr)
    (lb1, ub1, st1), (lb2, ub2, st2) = outer, inner
    assume = ""
    if assume_mod:
        assume = (f"%am = arith.constant {assume_mod} : index\n  %ar = arith.remsi %N, %am : index\n"
                  f"  %aok = arith.cmpi eq, %ar, %c0 : index\n"
                  f'  "tile.assume"(%aok) {{expr = "N % {assume_mod} == 0"}} : (i1) -> ()')
    body = "\n          ".join(emitter.lines)
    return f"""
func.func @gather(%X: memref<?xf32>, %Y: memref<{grid * block}x{slots}xf32>)
    attributes {{tile.entry, tile.arg_names = ["X", "Y"], tile.arg_dims = [["N"], [{grid * block}, {slots}]],
                 tile.symbols = ["N"]}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %cg = arith.constant {grid} : index
  %cb = arith.constant {block} : index
  %N = memref.dim %X, %c0 : memref<?xf32>
  %Nq = arith.ceildivsi %N, %c4 : index
  {assume}
  gpu.launch blocks(%bid, %by, %bz) in (%gx = %cg, %gy = %c1, %gz = %c1)
             threads(%tid, %ty, %tz) in (%sx = %cb, %sy = %c1, %sz = %c1) {{
    %lb1 = arith.constant {lb1} : index
    %st1 = arith.constant {st1} : index
    %lb2 = arith.constant {lb2} : index
    %st2 = arith.constant {st2} : index
    %row0 = arith.muli %bid, %cb : index
    %row = arith.addi %row0, %tid : index
    scf.for %i = %lb1 to {_loop_bound(ub1)} step %st1 {{
      scf.for %j = %lb2 to {_loop_bound(ub2)} step %st2 {{
          {body}
          %v = memref.load %X[{index}] {{tile.pad = -7.0 : f32}} : memref<?xf32>
          %ki = arith.subi %i, %lb1 : index
          %kj = arith.subi %j, %lb2 : index
          %k0 = arith.muli %ki, %c5 : index
          %k = arith.addi %k0, %kj : index
          memref.store %v, %Y[%row, %k] : memref<{grid * block}x{slots}xf32>
      }}
    }}{" {tile.unroll}" if unroll else ""}
    gpu.terminator
  }}
  return
}}
"""


def _run_both(text: str, args_for_n, ns) -> dict:
    """Run the kernel before and after the passes for each N; return the output module's statistics."""
    with make_context():
        module = ir.Module.parse(text)
        reference = ir.Module.parse(text)
        report = run_pipeline(module, PIPELINE)
        func, ref_func = module.body.operations[0], reference.body.operations[0]
        for n in ns:
            ref_args = args_for_n(n)
            args = [a.copy() for a in ref_args]
            Interpreter(ref_func, oob="pad").run(ref_args)
            Interpreter(func, oob="error").run(args)
            for got, want in zip(args, ref_args):
                np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        return {name: stat.value for counters in report.statistics.values() for name, stat in counters.items()}


@FUZZ
@given(
    expr=expressions(),
    grid=st.integers(1, 3),
    block=st.integers(1, 6),
    outer=st.tuples(st.integers(0, 2), st.integers(0, 3), st.integers(1, 3)),
    inner=st.tuples(st.integers(0, 2), st.integers(0, 3), st.integers(1, 3)),
    assume_mod=st.sampled_from([None, 2, 4]),
    unroll=st.booleans(),
)
def test_removed_guards_hold_at_every_point(expr, grid, block, outer, inner, assume_mod, unroll):
    """`unroll` marks the outer loop tile.unroll: range versioning then takes it whatever its trip count."""
    _gather_everywhere(expr, grid, block, outer, inner, assume_mod, unroll)


@pytest.mark.parametrize("expr, outer, inner", [
    (("addi", ("muli", "%i", 4), "%j"), (0, 1, 1), (0, 3, 1)),  # grows in both: the last iteration
    (("addi", ("muli", ("subi", 9, "%i"), 4), "%j"), (1, 0, 2), (0, 3, 1)),  # shrinks in i: its first
    (("addi", ("muli", "%i", 4), "%j"), (2, 2, 3), (0, 3, 1)),  # i up to ceil(N / 4), step 3
])
def test_range_versioning_fires_and_holds(expr, outer, inner):
    """Hand-picked monotone gathers, the outer loop marked tile.unroll (its bound symbolic in the
    last case): range versioning must fire, and the result still hold for every N."""
    stats = _gather_everywhere(expr, 2, 3, outer, inner, None, unroll=True)
    assert stats["loops-range-versioned"] >= 1, stats


def _gather_everywhere(expr, grid, block, outer, inner, assume_mod, unroll) -> dict:
    max_n = 16
    slots = 5 * (max_n + 2) + max_n + 2
    text = _gather_kernel(expr, grid, block, outer, inner, assume_mod, slots, unroll)
    rng = np.random.default_rng(0)

    def args(n):
        x = Tensor(rng.standard_normal(n) + 10.0, 4)
        y = Tensor(np.full((grid * block, slots), np.nan), 4)
        return [x, y]

    ns = [n for n in range(0, max_n + 1) if assume_mod is None or n % assume_mod == 0]  # 0: an empty tensor
    return _run_both(text, args, ns)


# -- kernel 2: per-thread runs over rows (vectorize) ---------------------------------


def _rows_kernel(cols: int, run: int, chunks: int, rows: int, block: int, offset: int, widen: bool,
                 store_back: bool, symbolic_cols: bool = False, assume_cols_mod: int | None = None) -> str:
    dim = "?" if symbolic_cols else str(cols)
    dims = '"N"' if symbolic_cols else str(cols)
    symbols = '["M", "N"]' if symbolic_cols else '["M"]'
    assume = ""
    if assume_cols_mod:
        assume = (f"%cn = memref.dim %X, %c1 : memref<?x{dim}xbf16>\n  %cm = arith.constant {assume_cols_mod} : index\n"
                  f"  %cr = arith.remsi %cn, %cm : index\n  %cok = arith.cmpi eq, %cr, %c0 : index\n"
                  f'  "tile.assume"(%cok) {{expr = "N % {assume_cols_mod} == 0"}} : (i1) -> ()')
    local_type = "f32" if widen else "bf16"
    convert = "%w = arith.extf %x : bf16 to f32" if widen else ""
    value = "%w" if widen else "%x"
    regs = rows * chunks * run
    back = ""
    if store_back:
        back = f"""
          %y = memref.load %regs[%reg] : memref<{regs}x{local_type}, "local">
          memref.store %y, %Z[%row, %col] : memref<?x{dim}x{local_type}>"""
    return f"""
func.func @rows(%X: memref<?x{dim}xbf16>, %Z: memref<?x{dim}x{local_type}>)
    attributes {{tile.entry, tile.arg_names = ["X", "Z"], tile.arg_dims = [["M", {dims}], ["M", {dims}]],
                 tile.symbols = {symbols}}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %crows = arith.constant {rows} : index
  %cchunks = arith.constant {chunks} : index
  %crun = arith.constant {run} : index
  %cb = arith.constant {block} : index
  %cstride = arith.constant {block * run} : index
  %coff = arith.constant {offset} : index
  %M = memref.dim %X, %c0 : memref<?x{dim}xbf16>
  {assume}
  %g = arith.ceildivsi %M, %crows : index
  gpu.launch blocks(%bid, %by, %bz) in (%gx = %g, %gy = %c1, %gz = %c1)
             threads(%tid, %ty, %tz) in (%sx = %cb, %sy = %c1, %sz = %c1) {{
    %regs = memref.alloca() : memref<{regs}x{local_type}, "local">
    scf.for %r = %c0 to %crows step %c1 {{
      %row0 = arith.muli %bid, %crows : index
      %row = arith.addi %row0, %r : index
      scf.for %c = %c0 to %cchunks step %c1 {{
        scf.for %v = %c0 to %crun step %c1 {{
          %a = arith.muli %c, %cstride : index
          %b = arith.muli %tid, %crun : index
          %ab = arith.addi %a, %b : index
          %abo = arith.addi %ab, %coff : index
          %col = arith.addi %abo, %v : index
          %rc = arith.muli %r, %cchunks : index
          %rcc = arith.addi %rc, %c : index
          %rr = arith.muli %rcc, %crun : index
          %reg = arith.addi %rr, %v : index
          %x = memref.load %X[%row, %col] {{tile.pad = -3.0 : bf16}} : memref<?x{dim}xbf16>
          {convert}
          memref.store {value}, %regs[%reg] : memref<{regs}x{local_type}, "local">
        }}
        scf.for %v = %c0 to %crun step %c1 {{
          %a = arith.muli %c, %cstride : index
          %b = arith.muli %tid, %crun : index
          %ab = arith.addi %a, %b : index
          %abo = arith.addi %ab, %coff : index
          %col = arith.addi %abo, %v : index
          %rc = arith.muli %r, %cchunks : index
          %rcc = arith.addi %rc, %c : index
          %rr = arith.muli %rcc, %crun : index
          %reg = arith.addi %rr, %v : index{back}
        }}
      }}
    }}
    gpu.terminator
  }}
  return
}}
"""


@FUZZ_RUNS
@given(
    cols=st.sampled_from([8, 12, 16, 24, 40, 64]),
    run=st.sampled_from([2, 4, 8, 16]),
    chunks=st.integers(1, 2),
    rows=st.integers(1, 2),
    block=st.integers(1, 4),
    offset=st.sampled_from([0, 0, 1, 2, 4]),
    widen=st.booleans(),
    symbolic_cols=st.sampled_from([None, None, 1, 8]),
)
def test_vector_accesses_are_aligned_and_in_range(cols, run, chunks, rows, block, offset, widen, symbolic_cols):
    """`symbolic_cols`: None for a static width, else a symbolic one assumed a multiple of it."""
    assume = symbolic_cols if symbolic_cols and symbolic_cols > 1 else None
    if assume and cols % assume:
        cols *= 2  # every width drawn becomes a multiple of 8 when doubled
    text = _rows_kernel(cols, run, chunks, rows, block, offset, widen, store_back=True,
                        symbolic_cols=symbolic_cols is not None, assume_cols_mod=assume)
    rng = np.random.default_rng(1)

    def args(m):
        x = Tensor(rng.standard_normal((m, cols)) + 5.0, 2)
        z = Tensor(np.full((m, cols), np.nan), 4 if widen else 2)
        return [x, z]

    stats = _run_both(text, args, range(1, 2 * rows + 2))
    if rows > 1:  # (one row per block: the grid proves the row check)
        assert stats["loops-range-versioned"] >= 1, stats  # the row loop, on its last row's check
    vectors = sum(stats[f"vectorized-{w}B"] for w in (16, 8, 4))
    if offset == 0 and (symbolic_cols is None and cols % run == 0 or symbolic_cols == 8):
        assert vectors > 0, stats
