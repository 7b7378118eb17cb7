"""simulate-threads: hand-written thread-level kernels on the CPU, and the bugs the simulation catches.

A right kernel matches its float64 reference; the same kernel with a barrier
dropped, a broken layout or a removed guard is caught: by the race and
bounds checks (SimulationError) and, with the race checks off, by wrong
numbers.
"""

import numpy as np
import pytest

from tilemlir.backends.cpu.kernel import SimulationError, build
from tilemlir.backends.cpu.simulate_threads import SimulateOptions
from tilemlir.context import make_context
from tilemlir.diagnostics import CompileError
from tilemlir.mlir import arith, ir
from tilemlir.testing import relative_error

NO_RACE_CHECKS = SimulateOptions(check_races=False)


def compile_thread(text: str, options: SimulateOptions = SimulateOptions(), **subs):
    for key in sorted(subs, key=len, reverse=True):
        text = text.replace(f"${key}", str(subs[key]))
    with make_context(), ir.Location.unknown():
        return build(ir.Module.parse(text), None, "thread", simulate=options)


def drop_line(text: str, needle: str, occurrence: int = 0) -> str:
    lines = text.split("\n")
    hits = [i for i, line in enumerate(lines) if needle in line]
    del lines[hits[occurrence]]
    return "\n".join(lines)


def block_sums(x: np.ndarray, block: int, blocks: int) -> np.ndarray:
    x64 = np.concatenate([x.astype(np.float64), np.zeros(block * blocks - len(x))])
    return x64.reshape(blocks, block).sum(1)


HEADER = """
func.func @$NAME(%X: memref<?xf32>, %Y: memref<?xf32>) attributes {tile.entry,
    tile.arg_names = ["X", "Y"], tile.arg_dims = [["N"], ["G"]], tile.symbols = ["N", "G"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %N = memref.dim %X, %c0 : memref<?xf32>
  %G = memref.dim %Y, %c0 : memref<?xf32>
"""

# ---------------------------------------------------------------------------------------------
TREE_SUM = HEADER + """
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %G, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %red = memref.alloca() {name = "red"} : memref<128xf32, "shared">
    %base = arith.muli %bx, %c128 : index
    %i = arith.addi %base, %tx : index
    %in = arith.cmpi slt, %i, %N : index
    %v = scf.if %in -> f32 {
      %l = memref.load %X[%i] : memref<?xf32>
      scf.yield %l : f32
    } else {
      scf.yield %zero : f32
    }
    memref.store %v, %red[%tx] : memref<128xf32, "shared">
    gpu.barrier
    %c7 = arith.constant 7 : index
    %c64 = arith.constant 64 : index
    scf.for %k = %c0 to %c7 step %c1 {
      %s = arith.shrui %c64, %k : index
      %active = arith.cmpi ult, %tx, %s : index
      scf.if %active {
        %j = arith.addi %tx, %s : index
        %a = memref.load %red[%tx] : memref<128xf32, "shared">
        %b = memref.load %red[%j] : memref<128xf32, "shared">
        %sum = arith.addf %a, %b : f32
        memref.store %sum, %red[%tx] : memref<128xf32, "shared">
      }
      gpu.barrier
    }
    %is0 = arith.cmpi eq, %tx, %c0 : index
    scf.if %is0 {
      %r = memref.load %red[%c0] : memref<128xf32, "shared">
      memref.store %r, %Y[%bx] : memref<?xf32>
    }
    gpu.terminator
  }
  return
}
"""


def run_block_sum(kernel, n=1000, block=128):
    rng = np.random.default_rng()
    x = rng.standard_normal(n).astype(np.float32)
    blocks = -(-n // block)
    y = np.full(blocks, np.nan, np.float32)
    kernel(x, y)
    return y, block_sums(x, block, blocks)


def test_tree_reduction_through_shared_memory():
    y, want = run_block_sum(compile_thread(TREE_SUM, NAME="tree_sum"))
    assert relative_error(y, want) < 1e-6


@pytest.mark.parametrize("barrier", [0, 1], ids=["after-fill", "inside-loop"])
def test_dropped_barrier_is_a_race(barrier):
    broken = drop_line(TREE_SUM, "gpu.barrier", barrier)
    with pytest.raises(SimulationError, match=r"data race on shared buffer 'red'.*missing gpu.barrier"):
        run_block_sum(compile_thread(broken, NAME="tree_sum"))


def test_dropped_barrier_gives_wrong_numbers_without_race_checks():
    """Without the loop's barrier, thread 0 runs all its steps before thread 64 has added anything.
    (Without the first barrier the numbers happen to stay right: the barrier loop that follows
    already ends the phase, a legal schedule; only the race check sees that bug.)"""
    broken = drop_line(TREE_SUM, "gpu.barrier", 1)
    y, want = run_block_sum(compile_thread(broken, NO_RACE_CHECKS, NAME="tree_sum"))
    assert not relative_error(y, want) < 1e-3


# ---------------------------------------------------------------------------------------------
WARP_SUM = HEADER + """
  %c64 = arith.constant 64 : index
  %c5 = arith.constant 5 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %w32 = arith.constant 32 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %G, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %ws = memref.alloca() {name = "warp_sums"} : memref<2xf32, "shared">
    %base = arith.muli %bx, %c64 : index
    %i = arith.addi %base, %tx : index
    %in = arith.cmpi slt, %i, %N : index
    %v = scf.if %in -> f32 {
      %l = memref.load %X[%i] : memref<?xf32>
      scf.yield %l : f32
    } else {
      scf.yield %zero : f32
    }
    %r = scf.for %k = %c0 to %c5 step %c1 iter_args(%acc = %v) -> (f32) {
      %off = arith.shrui %c16, %k : index
      %off32 = arith.index_cast %off : index to i32
      %s, %valid = gpu.shuffle xor %acc, %off32, %w32 : f32
      %n = arith.addf %acc, %s : f32
      scf.yield %n : f32
    }
    %lane = arith.remui %tx, %c32 : index
    %warp = arith.divui %tx, %c32 : index
    %lead = arith.cmpi eq, %lane, %c0 : index
    scf.if %lead {
      memref.store %r, %ws[%warp] : memref<2xf32, "shared">
    }
    gpu.barrier
    %t0 = arith.cmpi eq, %tx, %c0 : index
    scf.if %t0 {
      %a = memref.load %ws[%c0] : memref<2xf32, "shared">
      %b = memref.load %ws[%c1] : memref<2xf32, "shared">
      %t = arith.addf %a, %b : f32
      memref.store %t, %Y[%bx] : memref<?xf32>
    }
    gpu.terminator
  }
  return
}
"""


def test_warp_shuffle_reduction_in_a_loop():
    y, want = run_block_sum(compile_thread(WARP_SUM, NAME="warp_sum"), n=300, block=64)
    assert relative_error(y, want) < 1e-6


def test_shuffle_with_wrong_offsets_is_wrong():
    broken = WARP_SUM.replace("%off = arith.shrui %c16, %k : index", "%off = arith.shrui %c32, %k : index")
    y, want = run_block_sum(compile_thread(broken, NAME="warp_sum"), n=300, block=64)
    assert not relative_error(y, want) < 1e-3


# ---------------------------------------------------------------------------------------------
FIRST_WARP_FINISHES = HEADER + """
  %c64 = arith.constant 64 : index
  %c32 = arith.constant 32 : index
  %w32 = arith.constant 32 : i32
  %o16 = arith.constant 16 : i32
  %o8 = arith.constant 8 : i32
  %o4 = arith.constant 4 : i32
  %o2 = arith.constant 2 : i32
  %o1 = arith.constant 1 : i32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %G, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %sh = memref.alloca() {name = "partials"} : memref<64xf32, "shared">
    %base = arith.muli %bx, %c64 : index
    %i = arith.addi %base, %tx : index
    %in = arith.cmpi slt, %i, %N : index
    %v = scf.if %in -> f32 {
      %l = memref.load %X[%i] : memref<?xf32>
      scf.yield %l : f32
    } else {
      scf.yield %zero : f32
    }
    memref.store %v, %sh[%tx] : memref<64xf32, "shared">
    gpu.barrier
    %first = arith.cmpi ult, %tx, %c32 : index
    scf.if %first {
      %j = arith.addi %tx, %c32 : index
      %a = memref.load %sh[%tx] : memref<64xf32, "shared">
      %b = memref.load %sh[%j] : memref<64xf32, "shared">
      %p0 = arith.addf %a, %b : f32
      %s1, %v1 = gpu.shuffle xor %p0, %o16, %w32 : f32
      %p1 = arith.addf %p0, %s1 : f32
      %s2, %v2 = gpu.shuffle xor %p1, %o8, %w32 : f32
      %p2 = arith.addf %p1, %s2 : f32
      %s3, %v3 = gpu.shuffle xor %p2, %o4, %w32 : f32
      %p3 = arith.addf %p2, %s3 : f32
      %s4, %v4 = gpu.shuffle xor %p3, %o2, %w32 : f32
      %p4 = arith.addf %p3, %s4 : f32
      %s5, %v5 = gpu.shuffle xor %p4, %o1, %w32 : f32
      %p5 = arith.addf %p4, %s5 : f32
      %lead = arith.cmpi eq, %tx, %c0 : index
      scf.if %lead {
        memref.store %p5, %Y[%bx] : memref<?xf32>
      }
    }
    gpu.terminator
  }
  return
}
"""


def test_shuffles_under_a_warp_uniform_condition():
    y, want = run_block_sum(compile_thread(FIRST_WARP_FINISHES, NAME="first_warp"), n=250, block=64)
    assert relative_error(y, want) < 1e-6


# ---------------------------------------------------------------------------------------------
ROTATE = """
func.func @rotate(%X: memref<?xf32>, %Y: memref<?xf32>) attributes {tile.entry,
    tile.arg_names = ["X", "Y"], tile.arg_dims = [["N"], ["N"]], tile.symbols = ["N"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %two = arith.constant dense<2.0> : vector<4xf32>
  %N = memref.dim %X, %c0 : memref<?xf32>
  %G = arith.divui %N, %c128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %G, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %regs = memref.alloca() {name = "regs"} : memref<4xf32, "local">
    %sh = memref.alloca() {name = "tile"} : memref<128xf32, "shared">
    %base = arith.muli %bx, %c128 : index
    %mine = arith.muli %tx, %c4 : index
    %g = arith.addi %base, %mine : index
    %v = vector.load %X[%g] {alignment = 16 : i64} : memref<?xf32>, vector<4xf32>
    vector.store %v, %regs[%c0] : memref<4xf32, "local">, vector<4xf32>
    gpu.barrier
    %r = vector.load %regs[%c0] : memref<4xf32, "local">, vector<4xf32>
    %d = arith.mulf %r, %two : vector<4xf32>
    vector.store %d, %sh[%mine] : memref<128xf32, "shared">, vector<4xf32>
    gpu.barrier
    %next = arith.addi %tx, %c1 : index
    %nt = arith.remui %next, %c32 : index
    %theirs = arith.muli %nt, %c4 : index
    %w = vector.load %sh[%theirs] : memref<128xf32, "shared">, vector<4xf32>
    vector.store %w, %Y[%g] : memref<?xf32>, vector<4xf32>
    gpu.terminator
  }
  return
}
"""


def rotate_reference(x):
    blocks = x.reshape(-1, 32, 4) * 2
    return np.roll(blocks, -1, axis=1).reshape(-1)


def test_local_registers_and_vector_accesses_survive_barriers():
    kernel = compile_thread(ROTATE)
    x = np.random.default_rng().standard_normal(512).astype(np.float32)
    y = np.full_like(x, np.nan)
    kernel(x, y)
    assert np.array_equal(y, rotate_reference(x))


def test_dropped_barrier_before_vector_reads_is_a_race():
    broken = drop_line(ROTATE, "gpu.barrier", 1)
    kernel = compile_thread(broken)
    x = np.random.default_rng().standard_normal(256).astype(np.float32)
    with pytest.raises(SimulationError, match="data race on shared buffer 'tile'"):
        kernel(x, np.full_like(x, np.nan))


# ---------------------------------------------------------------------------------------------
TRANSPOSE = """
func.func @transpose(%X: memref<?x?xf32>, %Y: memref<?x?xf32>) attributes {tile.entry,
    tile.arg_names = ["X", "Y"], tile.arg_dims = [["M", "N"], ["N", "M"]], tile.symbols = ["M", "N"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %M = memref.dim %X, %c0 : memref<?x?xf32>
  %N = memref.dim %X, %c1 : memref<?x?xf32>
  %gx = arith.ceildivui %N, %c16 : index
  %gy = arith.ceildivui %M, %c16 : index
  gpu.launch blocks(%bx, %by, %bz) in (%sgx = %gx, %sgy = %gy, %sgz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c16, %sz = %c1) {
    %t = memref.alloca() {name = "t"} : memref<16x17xf32, "shared">
    %r0 = arith.muli %by, %c16 : index
    %k0 = arith.muli %bx, %c16 : index
    %r = arith.addi %r0, %ty : index
    %k = arith.addi %k0, %tx : index
    %rin = arith.cmpi slt, %r, %M : index
    %kin = arith.cmpi slt, %k, %N : index
    %in = arith.andi %rin, %kin : i1
    scf.if %in {
      %v = memref.load %X[%r, %k] : memref<?x?xf32>
      memref.store %v, %t[%ty, %tx] : memref<16x17xf32, "shared">
    }
    gpu.barrier
    %orow = arith.addi %k0, %ty : index
    %ocol = arith.addi %r0, %tx : index
    %orin = arith.cmpi slt, %orow, %N : index
    %ocin = arith.cmpi slt, %ocol, %M : index
    %oin = arith.andi %orin, %ocin : i1
    scf.if %oin {
      %w = memref.load %t[%tx, %ty] : memref<16x17xf32, "shared">
      memref.store %w, %Y[%orow, %ocol] : memref<?x?xf32>
    }
    gpu.terminator
  }
  return
}
"""


@pytest.mark.parametrize("shape", [(32, 48), (21, 35)])
def test_two_dimensional_thread_blocks(shape):
    kernel = compile_thread(TRANSPOSE)
    x = np.random.default_rng().standard_normal(shape).astype(np.float32)
    y = np.full(shape[::-1], np.nan, np.float32)
    kernel(x, y)
    assert np.array_equal(y, x.T)


def test_transpose_without_barrier_is_a_race():
    kernel = compile_thread(drop_line(TRANSPOSE, "gpu.barrier"))
    x = np.random.default_rng().standard_normal((16, 16)).astype(np.float32)
    with pytest.raises(SimulationError, match="data race on shared buffer 't'"):
        kernel(x, np.full_like(x, np.nan))


# ---------------------------------------------------------------------------------------------
ROW_EXP = """
func.func @row_exp(%X: memref<?x64xf32>, %Y: memref<?x64xf32>) attributes {tile.entry,
    tile.arg_names = ["X", "Y"], tile.arg_dims = [["M", 64], ["M", 64]], tile.symbols = ["M"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %M = memref.dim %X, %c0 : memref<?x64xf32>
  %G = arith.ceildivui %M, %c4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %G, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %x = memref.alloca() {name = "x"} : memref<4xf32, "local">
    %row_in_tile = arith.divui %tx, $ROW_DIVISOR : index
    %q = arith.remui %tx, %c16 : index
    %col0 = arith.muli %q, %c4 : index
    %r0 = arith.muli %bx, %c4 : index
    %row = arith.addi %r0, %row_in_tile : index
    %inside = arith.cmpi slt, %row, %M : index
    scf.for %reg = %c0 to %c4 step %c1 {
      %col = arith.addi %col0, %reg : index
      %v = scf.if %inside -> f32 {
        %l = memref.load %X[%row, %col] : memref<?x64xf32>
        scf.yield %l : f32
      } else {
        %p = arith.constant 0.0 : f32
        scf.yield %p : f32
      }
      %e = math.exp %v : f32
      memref.store %e, %x[%reg] : memref<4xf32, "local">
    }
    scf.if %inside {
      scf.for %reg = %c0 to %c4 step %c1 {
        %col = arith.addi %col0, %reg : index
        %e = memref.load %x[%reg] : memref<4xf32, "local">
        memref.store %e, %Y[%row, %col] : memref<?x64xf32>
      }
    }
    gpu.terminator
  }
  return
}
"""


def test_fragment_layout_right_and_broken():
    """Thread t holds row t / 16, columns 4 (t % 16) .. +3 of each 4x64 tile; a broken thread
    map (row t / 32) leaves rows of every tile unwritten, and the run disagrees with numpy."""
    x = np.random.default_rng().standard_normal((10, 64)).astype(np.float32)
    right, broken = compile_thread(ROW_EXP, ROW_DIVISOR="%c16"), compile_thread(ROW_EXP, ROW_DIVISOR="%c64")
    for kernel, should_match in ((right, True), (broken, False)):
        y = np.full_like(x, np.nan)
        kernel(x, y)
        assert (relative_error(y, np.exp(x.astype(np.float64))) < 1e-6) == should_match


# ---------------------------------------------------------------------------------------------
SCALE = """
func.func @scale(%X: memref<?xf32>, %Y: memref<?xf32>) attributes {tile.entry,
    tile.arg_names = ["X", "Y"], tile.arg_dims = [["N"], ["N"]], tile.symbols = ["N"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %two = arith.constant 2.0 : f32
  %N = memref.dim %X, %c0 : memref<?xf32>
  %G = arith.ceildivui %N, %c64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %G, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %base = arith.muli %bx, %c64 : index
    %i = arith.addi %base, %tx : index
    %v = memref.load %X[%i] {tile.pad = 7.0 : f32} : memref<?xf32>
    %d = arith.mulf %v, %two : f32
    memref.store %d, %Y[%i] : memref<?xf32>
    gpu.terminator
  }
  return
}
"""


def test_unguarded_out_of_range_access_is_caught():
    kernel = compile_thread(SCALE)
    x = np.random.default_rng().standard_normal(100).astype(np.float32)
    with pytest.raises(SimulationError, match=r"out-of-range read of global tensor 'X'.*index 100 on dim 0"):
        kernel(x, np.full_like(x, np.nan))
    x64 = np.random.default_rng().standard_normal(128).astype(np.float32)
    y = np.full_like(x64, np.nan)
    kernel(x64, y)  # in range everywhere: no error
    assert np.array_equal(y, 2 * x64)


def test_pad_mode_reads_the_pad_and_drops_stores():
    kernel = compile_thread(SCALE, SimulateOptions(out_of_range="pad"))
    x = np.random.default_rng().standard_normal(100).astype(np.float32)
    y = np.full_like(x, np.nan)
    kernel(x, y)
    assert np.array_equal(y, 2 * x)


# ---------------------------------------------------------------------------------------------
REPLICATED = HEADER + """
  %c64 = arith.constant 64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %G, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %sh = memref.alloca() {name = "scale"} : memref<1xf32, "shared">
    %v = memref.load %X[%bx] : memref<?xf32>
    %w = $WRITTEN
    memref.store %w, %sh[%c0] : memref<1xf32, "shared">
    gpu.barrier
    %t0 = arith.cmpi eq, %tx, %c0 : index
    scf.if %t0 {
      %s = memref.load %sh[%c0] : memref<1xf32, "shared">
      memref.store %s, %Y[%bx] : memref<?xf32>
    }
    gpu.terminator
  }
  return
}
"""


def test_threads_writing_the_same_value_is_not_a_race():
    kernel = compile_thread(REPLICATED, NAME="replicated", WRITTEN="arith.addf %v, %zero : f32")
    x = np.random.default_rng().standard_normal(6).astype(np.float32) + 1
    y = np.full_like(x, np.nan)
    kernel(x, y)
    assert np.array_equal(y, x)


def test_threads_writing_different_values_is_a_race():
    written = "arith.index_cast %tx : index to i32\n    %w2 = arith.sitofp %w : i32 to f32"
    text = REPLICATED.replace("memref.store %w, %sh", "memref.store %w2, %sh")
    kernel = compile_thread(text, NAME="replicated", WRITTEN=written)
    x = np.ones(3, np.float32)
    with pytest.raises(SimulationError, match=r"thread 1 writes it .* but thread 0 wrote a different value"):
        kernel(x, np.full_like(x, np.nan))


# ---------------------------------------------------------------------------------------------
# Every thread adds its element into one of 4 shared sums (thread t into sum t mod 4), then thread 0
# writes sum 0 + 2 * sum 1 + 3 * sum 2 + 4 * sum 3: atomic adds of several threads in one epoch do not
# race; a plain access of their element by another thread before a barrier does.
SHARED_ATOMIC = HEADER + """
  %c32 = arith.constant 32 : index
  %c4 = arith.constant 4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %G, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %sums = memref.alloca() {name = "sums"} : memref<4xf32, "shared">
    %slot = arith.remui %tx, %c4 : index
    %first = arith.cmpi ult, %tx, %c4 : index
    scf.if %first {
      memref.store %zero, %sums[%tx] : memref<4xf32, "shared">
    }
    gpu.barrier
    %base = arith.muli %bx, %c32 : index
    %i = arith.addi %base, %tx : index
    %v = memref.load %X[%i] : memref<?xf32>
    "tile.atomic_add"(%sums, %v, %slot) : (memref<4xf32, "shared">, f32, index) -> ()
    $READ_FIRST
    gpu.barrier
    %is0 = arith.cmpi eq, %tx, %c0 : index
    scf.if %is0 {
      %total = scf.for %k = %c0 to %c4 step %c1 iter_args(%t = %zero) -> f32 {
        %s = memref.load %sums[%k] : memref<4xf32, "shared">
        %k1 = arith.addi %k, %c1 : index
        %ki = arith.index_cast %k1 : index to i32
        %w = arith.sitofp %ki : i32 to f32
        %ws = arith.mulf %s, %w : f32
        %n = arith.addf %t, %ws : f32
        scf.yield %n : f32
      }
      memref.store %total, %Y[%bx] : memref<?xf32>
    }
    gpu.terminator
  }
  return
}
"""


def test_shared_atomic_adds_do_not_race_with_each_other():
    kernel = compile_thread(SHARED_ATOMIC, NAME="shared_atomic", READ_FIRST="")
    x = np.random.default_rng().standard_normal(64).astype(np.float32)
    y = np.full(2, np.nan, np.float32)
    kernel(x, y)
    want = x.astype(np.float64).reshape(2, 8, 4).sum(1) @ np.arange(1, 5)
    assert relative_error(y, want) < 1e-6


@pytest.mark.parametrize("access, words", [
    ("%r = memref.load %sums[%c0] : memref<4xf32, \"shared\">", "thread 1 reads it .* but thread 0 added to it "
     "atomically"),
    ("memref.store %v, %sums[%c0] : memref<4xf32, \"shared\">", "thread 1 writes it .* but thread 0 added to it "
     "atomically"),
])
def test_plain_access_beside_shared_atomic_adds_is_a_race(access, words):
    """Each thread's add, then a plain access of sum 0 before the barrier: thread 1 meets thread 0's add
    (threads run one after another in a phase)."""
    kernel = compile_thread(SHARED_ATOMIC, NAME="shared_atomic", READ_FIRST=access)
    x = np.ones(64, np.float32)
    with pytest.raises(SimulationError, match=words):
        kernel(x, np.full(2, np.nan, np.float32))


# ---------------------------------------------------------------------------------------------
ATOMIC = HEADER + """
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %G, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %base = arith.muli %bx, %c32 : index
    %i = arith.addi %base, %tx : index
    %in = arith.cmpi slt, %i, %N : index
    scf.if %in {
      %v = memref.load %X[%i] : memref<?xf32>
      "tile.atomic_add"(%Y, %v, %c0) : (memref<?xf32>, f32, index) -> ()
    }
    gpu.terminator
  }
  return
}
"""


def test_thread_level_atomic_add():
    kernel = compile_thread(ATOMIC, NAME="atomic")
    x = np.random.default_rng().standard_normal(70).astype(np.float32)
    y = np.array([0.5, np.nan, np.nan], np.float32)  # only Y[0] is touched; the grid has 3 blocks
    kernel(x, y)
    assert abs(y[0] - (0.5 + x.astype(np.float64).sum())) < 1e-5 and np.isnan(y[1:]).all()


# ---------------------------------------------------------------------------------------------
def test_barrier_under_thread_dependent_condition_is_rejected():
    text = TREE_SUM.replace("""      scf.if %active {
        %j = arith.addi %tx, %s : index""", """      scf.if %active {
        gpu.barrier
        %j = arith.addi %tx, %s : index""")
    with pytest.raises(CompileError, match="gpu.barrier under a thread-dependent condition"):
        compile_thread(text, NAME="tree_sum")


def test_barrier_loop_with_thread_dependent_bounds_is_rejected():
    text = TREE_SUM.replace("scf.for %k = %c0 to %c7 step %c1 {", "scf.for %k = %c0 to %tx step %c1 {")
    with pytest.raises(CompileError, match="bounds depend on the thread"):
        compile_thread(text, NAME="tree_sum")


def test_unsupported_gpu_op_is_named():
    text = WARP_SUM.replace("%n = arith.addf %acc, %s : f32", "%n = gpu.subgroup_reduce add %acc : (f32) -> f32")
    with pytest.raises(CompileError, match="cannot simulate gpu.subgroup_reduce"):
        compile_thread(text, NAME="warp_sum")


def test_dynamic_block_size_is_rejected():
    text = TREE_SUM.replace("(%sx = %c128,", "(%sx = %G,")
    with pytest.raises(CompileError, match="block size x is not a constant"):
        compile_thread(text, NAME="tree_sum")


def test_misaligned_vector_access_is_caught():
    text = ROTATE.replace("%v = vector.load %X[%g]", "%g1 = arith.addi %g, %c1 : index\n"
                          "    %v = vector.load %X[%g1]")
    kernel = compile_thread(text)
    x = np.random.default_rng().standard_normal(256).astype(np.float32)
    with pytest.raises(SimulationError, match=r"misaligned vector access of global tensor 'X'.*element 1, "
                                              r"4 bytes past a 16-byte boundary"):
        kernel(x, np.full_like(x, np.nan))


# ---------------------------------------------------------------------------------------------
# The real pipeline with a bug planted between its passes: the simulation must disagree.
def _example_frontend(name: str, **params):
    import importlib
    import sys
    from pathlib import Path

    examples = Path(__file__).resolve().parents[2] / "examples"
    if str(examples) not in sys.path:
        sys.path.insert(0, str(examples))
    module = importlib.import_module(name)
    factory = next(v for v in vars(module).values() if hasattr(v, "instantiate"))
    return module, factory.instantiate(**params).frontend()


def _run_example(module, frontend, ir_module, rows, options=SimulateOptions()):
    kernel = build(ir_module, frontend.info, "thread", simulate=options)
    inputs = module.make_inputs(np.random.default_rng(), rows=rows, n=frontend.info.params[0].shape[1])
    got = kernel(*inputs)
    got = got[0] if isinstance(got, tuple) else got
    return relative_error(got, module.reference(*inputs)[0])


def _ops(root, name):
    found = []
    root.walk(lambda op: (found.append(op) if op.name == name else None) or ir.WalkResult.ADVANCE)
    return found


def test_dropped_barrier_after_partition_threads_is_caught():
    from tilemlir.pass_infra.runner import run_pipeline

    module, frontend = _example_frontend("softmax", N=2048, block_M=2, block_N=1024)
    right, broken = frontend.module(), frontend.module()
    for ir_module in (right, broken):
        with ir_module.context:
            run_pipeline(ir_module, "infer-layouts,lower-tile-ops,partition-threads")
    barriers = _ops(broken.operation, "gpu.barrier")
    assert barriers, "softmax's cross-warp reductions exchange through shared memory behind barriers"
    barriers[0].erase()
    assert _run_example(module, frontend, right, rows=6) < 2e-3
    with pytest.raises(SimulationError, match="data race on shared buffer"):
        _run_example(module, frontend, broken, rows=6)


def _misplace_fragment_loads(ir_module, flip: int) -> int:
    """A layout bug planted after partition-threads: the index math of every read of the first
    tensor uses thread id `t ^ flip` (the copy into the fragment follows another thread map than
    the code using it). Returns how many thread ids it redirected."""
    function = next(op for op in ir_module.body.operations if op.operation.name == "func.func")
    tensor = function.regions[0].blocks[0].arguments[0]
    loads = [op for op in _ops(function.operation, "memref.load") + _ops(function.operation, "vector.load")
             if op.operands[0] == tensor]
    index_math, work = set(), [v.owner for load in loads for v in list(load.operands)[1:]]
    while work:
        owner = work.pop()
        if not isinstance(owner, ir.OpView) or owner.operation in index_math:
            continue
        index_math.add(owner.operation)
        work.extend(v.owner for v in owner.operation.operands)
    redirected = 0
    for tid in [op for op in index_math if op.name == "gpu.thread_id"]:
        with tid.location, ir.InsertionPoint.after(tid):
            flipped = arith.xori(tid.results[0], arith.constant(ir.IndexType.get(), flip))
        for user in [u for u in index_math if u != tid and tid.results[0] in list(u.operands)]:
            user.replace_uses_of_with(tid.results[0], flipped)
            redirected += 1
    return redirected


def test_fragment_loaded_with_another_layout_gives_wrong_numbers():
    """rmsnorm's 4x1024 fragment: a row per 32 threads. If the copy into it follows a thread map
    with rows swapped pairwise (thread t reads what thread t ^ 32 should), the run disagrees."""
    from tilemlir.pass_infra.runner import run_pipeline

    module, frontend = _example_frontend("rmsnorm", N=1024, block_M=4, threads=128)
    results = []
    for plant_bug in (False, True):
        ir_module = frontend.module()
        with ir_module.context:
            run_pipeline(ir_module, "infer-layouts,lower-tile-ops,partition-threads,insert-guards")
            if plant_bug:
                assert _misplace_fragment_loads(ir_module, 32) > 0
        results.append(_run_example(module, frontend, ir_module, rows=8))
    assert results[0] < 1e-2
    assert not results[1] < 1e-2


def test_every_carried_value_keeps_the_array_its_store_writes(monkeypatch):
    """A value read across a sync point gets a per-thread array written by a store of that value.
    Rewriting a local buffer's loads (or a shuffle) erases ops whose results may already have
    arrays; their replacements must take the arrays over. A stale key (an erased value) could
    later match an unrelated value created at the same address, which then read another value's
    array: softmax rows came out NaN once in tens of compiles in one process."""
    import tilemlir
    from tilemlir.backends.cpu.simulate import values
    from tilemlir.kernels import softmax

    checked = []
    carry = values.ThreadState.carry_values_across_phases

    def checked_carry(self, block_level_ops):
        carry(self, block_level_ops)
        for value, array in self._storage.items():
            stored = [use.owner.operands[0] for use in array.uses if use.owner.name == "memref.store"]
            assert stored and all(v == value for v in stored), f"array of {value} stores {stored}"
            checked.append(value)

    monkeypatch.setattr(values.ThreadState, "carry_values_across_phases", checked_carry)
    softmax.softmax._instances.clear()
    kernel = tilemlir.compile(softmax.softmax.instantiate(N=4096, dtype="float16", max_chunks=1), target="cpu",
                              level="thread")
    softmax.softmax._instances.clear()
    assert checked, "the softmax kernel carries no value across a sync point: the test checks nothing"
    x = (np.random.default_rng().standard_normal((3, 4096)) - 6).astype(np.float16)
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(1, keepdims=True))
    want = e / e.sum(1, keepdims=True)
    got = kernel(x).astype(np.float64)
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 2e-3
