"""Loops with a float max or min stay out of LLVM's loop vectorizer, whose width choice aborted
the process on them (llvmlite's LLVM has assertions on); every other loop is still vectorized."""

import os
import re
import subprocess
import sys

import numpy as np

import tilemlir
import tilemlir.language as T
from tilemlir.backends.cpu import keep_min_max_loops_scalar
from tilemlir.context import make_context
from tilemlir.mlir import ir

SWEEP = os.path.join(os.path.dirname(__file__), "cpu_width_sweep.py")
SCALAR = '#llvm.loop_annotation<vectorize = <width = 1 : i32>, interleave = <count = 1 : i32>>'

LOOPS = """
llvm.func @f(%p: !llvm.ptr, %n: i64) {
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  %init = llvm.mlir.constant(0.0 : f32) : f32
  llvm.br ^sum(%c0, %init : i64, f32)
^sum(%i: i64, %s: f32):
  %more = llvm.icmp "slt" %i, %n : i64
  llvm.cond_br %more, ^sum_body, ^outer(%c0 : i64)
^sum_body:
  %a = llvm.getelementptr %p[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %x = llvm.load %a : !llvm.ptr -> f32
  %s2 = llvm.fadd %s, %x : f32
  %i2 = llvm.add %i, %c1 : i64
  llvm.br ^sum(%i2, %s2 : i64, f32) {tag = "sum"}
^outer(%k: i64):
  %outer_more = llvm.icmp "slt" %k, %n : i64
  llvm.cond_br %outer_more, ^inner(%c0, %init : i64, f32), ^done
^inner(%j: i64, %m: f32):
  %inner_more = llvm.icmp "slt" %j, %n : i64
  llvm.cond_br %inner_more, ^inner_body, ^outer_latch
^inner_body:
  %b = llvm.getelementptr %p[%j] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %y = llvm.load %b : !llvm.ptr -> f32
  %m2 = llvm.intr.maxnum(%m, %y) : (f32, f32) -> f32
  %j2 = llvm.add %j, %c1 : i64
  llvm.br ^inner(%j2, %m2 : i64, f32) {tag = "inner"}
^outer_latch:
  %k2 = llvm.add %k, %c1 : i64
  llvm.br ^outer(%k2 : i64) {tag = "outer"}
^done:
  llvm.return
}
"""


def test_only_the_loops_computing_a_float_max_or_min_are_kept_scalar():
    """The max loop and the loop around it (which becomes innermost if the inner one is
    unrolled) are marked; the sum loop is left to the vectorizer."""
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(LOOPS)
        keep_min_max_loops_scalar.run(module.operation, None)
        marked = {}
        for block in module.body.operations[0].regions[0].blocks:
            terminator = list(block.operations)[-1]
            if "tag" in terminator.attributes:
                annotation = terminator.attributes["loop_annotation"] if "loop_annotation" in terminator.attributes else None
                marked[ir.StringAttr(terminator.attributes["tag"]).value] = str(annotation) if annotation else None
    assert marked == {"sum": None, "inner": SCALAR, "outer": SCALAR}


@tilemlir.jit(out_idx=[2])
def add_rows(N):
    @T.prim_func
    def add_kernel(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32), C: T.Tensor((N,), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            for i in T.Parallel(N):
                C[i] = A[i] + B[i]

    return add_kernel


def test_loops_without_a_max_or_min_are_still_vectorized(rng):
    kernel = tilemlir.compile(add_rows.instantiate(N=1024), target="cpu", level="tile")
    optimized = kernel.compiled._function._jit.optimized_ir
    assert re.search(r"fadd <\d+ x float>", optimized)
    a, b = rng.standard_normal((2, 1024)).astype(np.float32)
    assert np.array_equal(kernel(a, b), a + b)


def test_the_max_reductions_that_aborted_the_vectorizer_compile_and_run_at_every_width():
    """An abort kills the process, so the compiles run in one of their own. Which widths abort
    depends on the host (the cost models are the host CPU's): row_max runs at every width
    1..96 (every trip count of the max loop the fix must keep away from the vectorizer), the
    other two at the widths seen to abort on two hosts (issue 14's and this project's machine),
    one at each end of each run of aborting widths."""
    row_max = ",".join(str(n) for n in range(1, 97))
    specs = [f"row_max:tile:{row_max}", "quant_row_fp8:tile:22,23,28,31,36,39,88,95",
             "softmax_f16:tile:30,31,36,39,44,47,72,79,88,95", "row_max:thread:31,47,95"]
    result = subprocess.run([sys.executable, SWEEP, *specs], capture_output=True, text=True, timeout=900)
    last = result.stdout.strip().splitlines()[-1:] or ["(nothing printed)"]
    assert result.returncode == 0, f"exit {result.returncode} after '{last[0]}':\n{result.stderr[-2000:]}"
    assert result.stdout.count("\nok ") + result.stdout.startswith("ok ") == 96 + 8 + 10 + 3
    assert not result.stderr, result.stderr[-2000:]
