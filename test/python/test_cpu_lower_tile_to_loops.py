"""lower-tile-to-loops + the CPU JIT: hand-written tile-level kernels against float64 numpy references.

Every test uses fresh random inputs (never zeros), poisons outputs with NaN
first and compares by relative norm error.
"""

import ml_dtypes
import numpy as np
import pytest

from tilemlir.backends.cpu.kernel import build
from tilemlir.context import make_context
from tilemlir.diagnostics import CompileError, LaunchError
from tilemlir.mlir import ir
from tilemlir.testing import relative_error

BF16, E4M3, E5M2 = ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2
NUMPY = {"f16": np.float16, "bf16": BF16, "f32": np.float32, "f64": np.float64, "f8E4M3FN": E4M3,
         "f8E5M2": E5M2, "i8": np.int8, "i32": np.int32}


def compile_tile(text: str, **subs):
    for key in sorted(subs, key=len, reverse=True):  # $ATILEL before $ATILE
        text = text.replace(f"${key}", str(subs[key]))
    with make_context(), ir.Location.unknown():
        return build(ir.Module.parse(text), None, "tile")


def nan_like(shape, dtype):
    return np.full(shape, np.nan, dtype)


def randn(rng, shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------------------------------------
SOFTMAX = """
func.func @softmax(%X: memref<?x?xf32>, %Y: memref<?x?xf32>) attributes {tile.entry,
    tile.arg_names = ["X", "Y"], tile.arg_dims = [["M", "N"], ["M", "N"]], tile.symbols = ["M", "N"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %M = memref.dim %X, %c0 : memref<?x?xf32>
  %gx = arith.ceildivui %M, %c4 : index
  "tile.kernel"(%gx) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<4x64xf32, "fragment">
    %mx = "tile.alloc_fragment"() {name = "mx"} : () -> memref<4xf32, "fragment">
    %sm = "tile.alloc_fragment"() {name = "sm"} : () -> memref<4xf32, "fragment">
    %row = arith.muli %bx, %c4 : index
    "tile.copy"(%X, %x, %row, %c0, %c0, %c0) {shape = [4, 64]}
        : (memref<?x?xf32>, memref<4x64xf32, "fragment">, index, index, index, index) -> ()
    "tile.reduce"(%x, %mx) {kind = "max", dim = 1 : i64, clear = true}
        : (memref<4x64xf32, "fragment">, memref<4xf32, "fragment">) -> ()
    "tile.parallel"(%c4, %c64) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<4x64xf32, "fragment">
      %m = memref.load %mx[%i] : memref<4xf32, "fragment">
      %d = arith.subf %v, %m : f32
      %e = math.exp %d : f32
      memref.store %e, %x[%i, %j] : memref<4x64xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.reduce"(%x, %sm) {kind = "sum", dim = 1 : i64, clear = true}
        : (memref<4x64xf32, "fragment">, memref<4xf32, "fragment">) -> ()
    "tile.parallel"(%c4, %c64) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<4x64xf32, "fragment">
      %s = memref.load %sm[%i] : memref<4xf32, "fragment">
      %q = arith.divf %v, %s : f32
      memref.store %q, %x[%i, %j] : memref<4x64xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.copy"(%x, %Y, %c0, %c0, %row, %c0) {shape = [4, 64]}
        : (memref<4x64xf32, "fragment">, memref<?x?xf32>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}
"""


@pytest.mark.parametrize("shape", [(8, 64), (10, 50), (1, 7), (13, 64)])
def test_softmax_padding_makes_partial_rows_right(shape):
    kernel = compile_tile(SOFTMAX)
    rng = np.random.default_rng()
    x = randn(rng, shape) * 3
    y = nan_like(shape, np.float32)
    kernel(x, y)
    x64 = x.astype(np.float64)
    want = np.exp(x64 - x64.max(1, keepdims=True))
    want /= want.sum(1, keepdims=True)
    assert relative_error(y, want) < 1e-6


# ---------------------------------------------------------------------------------------------
RMSNORM = """
func.func @rmsnorm(%X: memref<?x256xbf16>, %W: memref<256xbf16>, %Y: memref<?x256xbf16>, %eps: f32)
    attributes {tile.entry, tile.arg_names = ["X", "W", "Y", "eps"],
                tile.arg_dims = [["M", 256], [256], ["M", 256], []], tile.symbols = ["M"]} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c256 = arith.constant 256 : index
  %n = arith.constant 256.0 : f32
  %M = memref.dim %X, %c0 : memref<?x256xbf16>
  %gx = arith.ceildivui %M, %c4 : index
  "tile.kernel"(%gx) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<4x256xf32, "fragment">
    %w = "tile.alloc_shared"() {name = "w"} : () -> memref<256xbf16, "shared">
    %sq = "tile.alloc_fragment"() {name = "sq"} : () -> memref<4x256xf32, "fragment">
    %ss = "tile.alloc_fragment"() {name = "ss"} : () -> memref<4xf32, "fragment">
    %row = arith.muli %bx, %c4 : index
    "tile.copy"(%X, %x, %row, %c0, %c0, %c0) {shape = [4, 256]}
        : (memref<?x256xbf16>, memref<4x256xf32, "fragment">, index, index, index, index) -> ()
    "tile.copy"(%W, %w, %c0, %c0) {shape = [256]} : (memref<256xbf16>, memref<256xbf16, "shared">, index, index) -> ()
    "tile.parallel"(%c4, %c256) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<4x256xf32, "fragment">
      %v2 = arith.mulf %v, %v : f32
      memref.store %v2, %sq[%i, %j] : memref<4x256xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.reduce"(%sq, %ss) {kind = "sum", dim = 1 : i64, clear = true}
        : (memref<4x256xf32, "fragment">, memref<4xf32, "fragment">) -> ()
    "tile.parallel"(%c4, %c256) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<4x256xf32, "fragment">
      %s = memref.load %ss[%i] : memref<4xf32, "fragment">
      %mean = arith.divf %s, %n : f32
      %t = arith.addf %mean, %eps : f32
      %r = math.rsqrt %t : f32
      %wv = memref.load %w[%j] : memref<256xbf16, "shared">
      %wf = arith.extf %wv : bf16 to f32
      %y0 = arith.mulf %v, %r : f32
      %y1 = arith.mulf %y0, %wf : f32
      memref.store %y1, %x[%i, %j] : memref<4x256xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.copy"(%x, %Y, %c0, %c0, %row, %c0) {shape = [4, 256]}
        : (memref<4x256xf32, "fragment">, memref<?x256xbf16>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}
"""


@pytest.mark.parametrize("rows", [8, 6, 1])
def test_rmsnorm_bf16(rows):
    kernel = compile_tile(RMSNORM)
    rng = np.random.default_rng()
    x, w = randn(rng, (rows, 256), BF16), randn(rng, 256, BF16)
    y = nan_like((rows, 256), BF16)
    kernel(x, w, y, 1e-5)
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    want = x64 / np.sqrt((x64 ** 2).mean(1, keepdims=True) + 1e-5) * w64
    assert relative_error(y, want) < 8e-3


def test_rmsnorm_output_rounds_like_ml_dtypes():
    kernel = compile_tile(RMSNORM)
    rng = np.random.default_rng()
    x, w = randn(rng, (4, 256), BF16), randn(rng, 256, BF16)
    y = nan_like((4, 256), BF16)
    kernel(x, w, y, 1e-5)
    x32, w32 = x.astype(np.float32), w.astype(np.float32)
    ss = (x32 * x32).astype(np.float64).sum(1, keepdims=True).astype(np.float32)
    r = 1 / np.sqrt(ss / np.float32(256) + np.float32(1e-5))
    want = ((x32 * r) * w32).astype(BF16)
    ulps = np.abs(y.view(np.int16).astype(np.int32) - want.view(np.int16).astype(np.int32))
    assert ulps.max() <= 1  # only the f32 sum order and rsqrt may differ


# ---------------------------------------------------------------------------------------------
COPY_2D = """
func.func @shift_copy(%A: memref<?x?x$S>, %B: memref<?x?x$D>, %r0: index, %c0_: index)
    attributes {tile.entry, tile.arg_names = ["A", "B", "r0", "c0"],
                tile.arg_dims = [["M", "N"], ["P", "Q"], [], []], tile.symbols = ["M", "N", "P", "Q"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %P = memref.dim %B, %c0 : memref<?x?x$D>
  %Q = memref.dim %B, %c1 : memref<?x?x$D>
  %gy = arith.ceildivui %P, %c8 : index
  %gx = arith.ceildivui %Q, %c16 : index
  "tile.kernel"(%gx, %gy) ({
  ^bb0(%bx: index, %by: index):
    %s = "tile.alloc_shared"() {name = "s"} : () -> memref<8x16x$S, "shared">
    %f = "tile.alloc_fragment"() {name = "f"} : () -> memref<8x16xf32, "fragment">
    %i0 = arith.muli %by, %c8 : index
    %j0 = arith.muli %bx, %c16 : index
    %si = arith.addi %i0, %r0 : index
    %sj = arith.addi %j0, %c0_ : index
    "tile.copy"(%A, %s, %si, %sj, %c0, %c0) {shape = [8, 16]}
        : (memref<?x?x$S>, memref<8x16x$S, "shared">, index, index, index, index) -> ()
    "tile.copy"(%s, %f, %c0, %c0, %c0, %c0) {shape = [8, 16]}
        : (memref<8x16x$S, "shared">, memref<8x16xf32, "fragment">, index, index, index, index) -> ()
    "tile.copy"(%f, %B, %c0, %c0, %i0, %j0) {shape = [8, 16]}
        : (memref<8x16xf32, "fragment">, memref<?x?x$D>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index, index) -> ()
  return
}
"""


@pytest.mark.parametrize("src,dst", [("f32", "f32"), ("bf16", "f16"), ("f16", "bf16"), ("f32", "f8E4M3FN"),
                                     ("f8E5M2", "f32"), ("i8", "f32")])
@pytest.mark.parametrize("shift", [(0, 0), (3, 5), (-2, -7)])
def test_copy_out_of_range_reads_zero_and_drops_writes(src, dst, shift):
    """B[i, j] = A[i + r0, j + c0], zero where that is outside A; B's own tail is never written past."""
    kernel = compile_tile(COPY_2D, S=src, D=dst)
    rng = np.random.default_rng()
    a = (rng.integers(-100, 100, (21, 37)) if src == "i8" else rng.standard_normal((21, 37)) * 4).astype(NUMPY[src])
    b = nan_like((19, 35), NUMPY[dst])
    kernel(a, b, *shift)
    want = np.zeros(b.shape)
    r0, c0 = shift
    for i in range(b.shape[0]):
        for j in range(b.shape[1]):
            if 0 <= i + r0 < a.shape[0] and 0 <= j + c0 < a.shape[1]:
                want[i, j] = float(a[i + r0, j + c0])
    want = want.astype(np.float32).astype(NUMPY[dst])  # the copy converts through f32
    assert np.array_equal(b.astype(np.float64), want.astype(np.float64), equal_nan=False)


COPY_RANK = """
func.func @row_bcast(%V: memref<?xf32>, %O: memref<?x32xf32>) attributes {tile.entry,
    tile.arg_names = ["V", "O"], tile.arg_dims = [["N"], ["M", 32]], tile.symbols = ["N", "M"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %M = memref.dim %O, %c0 : memref<?x32xf32>
  "tile.kernel"(%M) ({
  ^bb0(%bx: index):
    %f = "tile.alloc_fragment"() {name = "f"} : () -> memref<32xf32, "fragment">
    %col = arith.muli %bx, %c1 : index
    "tile.copy"(%V, %f, %col, %c0) {shape = [1, 32]}
        : (memref<?xf32>, memref<32xf32, "fragment">, index, index) -> ()
    "tile.copy"(%f, %O, %c0, %bx, %c0) {shape = [1, 32]}
        : (memref<32xf32, "fragment">, memref<?x32xf32>, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}
"""


def test_copy_box_is_right_aligned_on_lower_rank_sides():
    kernel = compile_tile(COPY_RANK)
    rng = np.random.default_rng()
    v = randn(rng, 40)
    out = nan_like((9, 32), np.float32)
    kernel(v, out)
    want = np.stack([np.concatenate([v[i:i + 32], np.zeros(max(0, i + 32 - 40))])[:32] for i in range(9)])
    assert np.array_equal(out, want.astype(np.float32))


# ---------------------------------------------------------------------------------------------
GEMM = """
func.func @gemm(%A: memref<?x?x$T>, %B: memref<?x?x$T>, %C: memref<?x?x$ACC>)
    attributes {tile.entry, tile.arg_names = ["A", "B", "C"],
                tile.arg_dims = [$ADIMS, $BDIMS, ["M", "N"]], tile.symbols = ["M", "N", "K"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant $ZERO : $ACC
  %M = memref.dim %C, %c0 : memref<?x?x$ACC>
  %N = memref.dim %C, %c1 : memref<?x?x$ACC>
  %K = memref.dim %A, $KDIM : memref<?x?x$T>
  %gx = arith.ceildivui %N, %c32 : index
  %gy = arith.ceildivui %M, %c32 : index
  %kt = arith.ceildivui %K, %c16 : index
  "tile.kernel"(%gx, %gy) ({
  ^bb0(%bx: index, %by: index):
    %As = "tile.alloc_shared"() {name = "A_s"} : () -> memref<$ATILEx$T, "shared">
    %Bs = "tile.alloc_shared"() {name = "B_s"} : () -> memref<$BTILEx$T, "shared">
    %acc = "tile.alloc_fragment"() {name = "acc"} : () -> memref<32x32x$ACC, "fragment">
    %m0 = arith.muli %by, %c32 : index
    %n0 = arith.muli %bx, %c32 : index
    "tile.fill"(%acc, %zero) : (memref<32x32x$ACC, "fragment">, $ACC) -> ()
    "tile.pipelined"(%c0, %kt, %c1) ({
    ^bb0(%k: index):
      %k0 = arith.muli %k, %c16 : index
      "tile.copy"(%A, %As, $AOFF, %c0, %c0) {shape = [$ATILEL]}
          : (memref<?x?x$T>, memref<$ATILEx$T, "shared">, index, index, index, index) -> ()
      "tile.copy"(%B, %Bs, $BOFF, %c0, %c0) {shape = [$BTILEL]}
          : (memref<?x?x$T>, memref<$BTILEx$T, "shared">, index, index, index, index) -> ()
      "tile.gemm"(%As, %Bs, %acc) {transpose_a = $TA, transpose_b = $TB}
          : (memref<$ATILEx$T, "shared">, memref<$BTILEx$T, "shared">, memref<32x32x$ACC, "fragment">) -> ()
      "tile.yield"() : () -> ()
    }) {num_stages = 2 : i64} : (index, index, index) -> ()
    "tile.copy"(%acc, %C, %c0, %c0, %m0, %n0) {shape = [32, 32]}
        : (memref<32x32x$ACC, "fragment">, memref<?x?x$ACC>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index, index) -> ()
  return
}
"""


def gemm_kernel(dtype: str, acc: str, trans_a: bool, trans_b: bool):
    a_tile, a_off, a_dims = ("16x32", "%k0, %m0", '["K", "M"]') if trans_a else ("32x16", "%m0, %k0", '["M", "K"]')
    b_tile, b_off, b_dims = ("32x16", "%n0, %k0", '["N", "K"]') if trans_b else ("16x32", "%k0, %n0", '["K", "N"]')
    return compile_tile(GEMM, T=dtype, ACC=acc, ZERO="0.0" if acc.startswith("f") else "0",
                        ATILE=a_tile, BTILE=b_tile,
                        ATILEL=a_tile.replace("x", ", "), BTILEL=b_tile.replace("x", ", "),
                        AOFF=a_off, BOFF=b_off, ADIMS=a_dims, BDIMS=b_dims, KDIM="%c0" if trans_a else "%c1",
                        TA=str(trans_a).lower(), TB=str(trans_b).lower())


@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True), (True, True)])
@pytest.mark.parametrize("dtype,acc,tol", [("f16", "f32", 1e-6), ("bf16", "f32", 1e-6), ("f32", "f32", 1e-6),
                                           ("f8E4M3FN", "f32", 1e-6), ("f16", "f16", 2e-3)])
def test_gemm_accumulates_in_accumulator_type(dtype, acc, tol, trans_a, trans_b):
    kernel = gemm_kernel(dtype, acc, trans_a, trans_b)
    rng = np.random.default_rng()
    m, n, k = 45, 70, 37
    a = randn(rng, (k, m) if trans_a else (m, k), NUMPY[dtype])
    b = randn(rng, (n, k) if trans_b else (k, n), NUMPY[dtype])
    c = nan_like((m, n), NUMPY[acc])
    kernel(a, b, c)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = (a64.T if trans_a else a64) @ (b64.T if trans_b else b64)
    assert relative_error(c, want) < tol


RING_GEMM = """
func.func @ring_gemm(%A: memref<?x?xf16>, %B: memref<?x?xf16>, %C: memref<?x?xf32>)
    attributes {tile.entry, tile.arg_names = ["A", "B", "C"],
                tile.arg_dims = [["M", "K"], ["K", "N"], ["M", "N"]], tile.symbols = ["M", "K", "N"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  %M = memref.dim %C, %c0 : memref<?x?xf32>
  %N = memref.dim %C, %c1 : memref<?x?xf32>
  %K = memref.dim %A, %c1 : memref<?x?xf16>
  %gx = arith.ceildivui %N, %c32 : index
  %gy = arith.ceildivui %M, %c32 : index
  %kt = arith.ceildivui %K, %c16 : index
  "tile.kernel"(%gx, %gy) ({
  ^bb0(%bx: index, %by: index):
    %Ar = "tile.alloc_shared"() {name = "A_ring"} : () -> memref<2x32x16xf16, "shared">
    %Br = "tile.alloc_shared"() {name = "B_ring"} : () -> memref<3x16x32xf16, "shared">
    %acc = "tile.alloc_fragment"() {name = "acc"} : () -> memref<32x32xf32, "fragment">
    %m0 = arith.muli %by, %c32 : index
    %n0 = arith.muli %bx, %c32 : index
    "tile.fill"(%acc, %zero) : (memref<32x32xf32, "fragment">, f32) -> ()
    scf.for %k = %c0 to %kt step %c1 {
      %k0 = arith.muli %k, %c16 : index
      %sa = arith.remui %k, %c2 : index
      %sb = arith.subi %c2, %sa : index
      "tile.copy"(%A, %Ar, %m0, %k0, %sa, %c0, %c0) {shape = [1, 32, 16]}
          : (memref<?x?xf16>, memref<2x32x16xf16, "shared">, index, index, index, index, index) -> ()
      "tile.copy"(%B, %Br, %k0, %n0, %sb, %c0, %c0) {shape = [1, 16, 32]}
          : (memref<?x?xf16>, memref<3x16x32xf16, "shared">, index, index, index, index, index) -> ()
      "tile.gemm"(%Ar, %Br, %acc, %sa, %sb) {transpose_a = false, transpose_b = false}
          : (memref<2x32x16xf16, "shared">, memref<3x16x32xf16, "shared">, memref<32x32xf32, "fragment">,
             index, index) -> ()
    }
    "tile.copy"(%acc, %C, %c0, %c0, %m0, %n0) {shape = [32, 32]}
        : (memref<32x32xf32, "fragment">, memref<?x?xf32>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index, index) -> ()
  return
}
"""


def ring_gemm_inputs(rng, m=45, n=70, k=37):
    return randn(rng, (m, k), np.float16), randn(rng, (k, n), np.float16), nan_like((m, n), np.float32)


def test_gemm_reads_the_ring_slots_its_indices_select(rng):
    """A's tile k sits in slot k mod 2 of a 2-deep ring, B's in slot 2 - k mod 2 of a 3-deep one: only the
    slots the gemm's ring indices name hold this iteration's tiles."""
    a, b, c = ring_gemm_inputs(rng)
    compile_tile(RING_GEMM)(a, b, c)
    assert relative_error(c, a.astype(np.float64) @ b.astype(np.float64)) < 1e-6


def test_ring_gemm_through_lower_gemm_simt_at_thread_level(rng):
    """The thread pipeline (lower-gemm-simt reads the selected slots; select-mma off so this f16 gemm stays on
    CUDA cores) run in the CPU thread simulation."""
    from tilemlir.pass_infra.runner import run_pipeline
    from tilemlir.passes.select_mma import SelectMmaOptions
    from tilemlir.pipeline import passes_until

    a, b, c = ring_gemm_inputs(rng)
    passes = [("select-mma", SelectMmaOptions(enable=False)) if p == "select-mma" else p for p in passes_until("final")]
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(RING_GEMM)
        run_pipeline(module, passes)
        assert "tile.mma_sync" not in str(module)
        build(module, None, "thread")(a, b, c)
    assert relative_error(c, a.astype(np.float64) @ b.astype(np.float64)) < 1e-6


def test_ring_gemm_through_lower_gemm_mma_at_thread_level(rng):
    """The same ring gemm on tensor cores: lower-gemm-mma's ldmatrix rows carry the ring indices, run in the CPU
    thread simulation with ldmatrix / mma.sync from the PTX ISA tables."""
    from tilemlir.pass_infra.runner import run_pipeline
    from tilemlir.pipeline import passes_until

    a, b, c = ring_gemm_inputs(rng)
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(RING_GEMM)
        run_pipeline(module, passes_until("final"))
        assert "tile.mma_sync" in str(module)
        build(module, None, "thread")(a, b, c)
    assert relative_error(c, a.astype(np.float64) @ b.astype(np.float64)) < 1e-6


def test_gemm_int8_is_exact():
    kernel = gemm_kernel("i8", "i32", False, True)
    rng = np.random.default_rng()
    a = rng.integers(-128, 128, (40, 50)).astype(np.int8)
    b = rng.integers(-128, 128, (33, 50)).astype(np.int8)
    c = np.full((40, 33), -12345, np.int32)
    kernel(a, b, c)
    assert np.array_equal(c, a.astype(np.int64) @ b.astype(np.int64).T)


# ---------------------------------------------------------------------------------------------
REDUCE = """
func.func @reduce(%X: memref<?x24x$S>, %Y: memref<?x$D>) attributes {tile.entry,
    tile.arg_names = ["X", "Y"], tile.arg_dims = [["M", 24], ["M"]], tile.symbols = ["M"]} {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %M = memref.dim %X, %c0 : memref<?x24x$S>
  %gx = arith.ceildivui %M, %c8 : index
  "tile.kernel"(%gx) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<8x24x$S, "fragment">
    %r = "tile.alloc_fragment"() {name = "r"} : () -> memref<8x$D, "fragment">
    %row = arith.muli %bx, %c8 : index
    "tile.copy"(%X, %x, %row, %c0, %c0, %c0) {shape = [8, 24]}
        : (memref<?x24x$S>, memref<8x24x$S, "fragment">, index, index, index, index) -> ()
    "tile.copy"(%Y, %r, %row, %c0) {shape = [8]} : (memref<?x$D>, memref<8x$D, "fragment">, index, index) -> ()
    "tile.reduce"(%x, %r) {kind = "$KIND", dim = 1 : i64, clear = $CLEAR}
        : (memref<8x24x$S, "fragment">, memref<8x$D, "fragment">) -> ()
    "tile.copy"(%r, %Y, %c0, %row) {shape = [8]} : (memref<8x$D, "fragment">, memref<?x$D>, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}
"""

REFERENCE_REDUCE = {
    "sum": lambda x: x.sum(1), "max": lambda x: x.max(1), "min": lambda x: x.min(1),
    "abssum": lambda x: np.abs(x).sum(1), "absmax": lambda x: np.abs(x).max(1),
}
COMBINE = {"sum": np.add, "abssum": np.add, "max": np.maximum, "min": np.minimum, "absmax": np.maximum}


@pytest.mark.parametrize("kind", list(REFERENCE_REDUCE))
@pytest.mark.parametrize("clear", [True, False])
@pytest.mark.parametrize("src,dst", [("f32", "f32"), ("f16", "f32"), ("bf16", "f64"), ("i8", "i32")])
def test_reduce_every_kind(kind, clear, src, dst):
    kernel = compile_tile(REDUCE, S=src, D=dst, KIND=kind, CLEAR=str(clear).lower())
    rng = np.random.default_rng()
    rows = 13  # not a multiple of the 8-row tile: the padded rows of the last block must not leak
    if src == "i8":
        x = rng.integers(-128, 128, (rows, 24)).astype(np.int8)
        y0 = rng.integers(-1000, 1000, rows).astype(np.int32)
    else:
        x = randn(rng, (rows, 24), NUMPY[src])
        y0 = randn(rng, rows, NUMPY[dst])
    y = y0.copy()
    kernel(x, y)
    want = REFERENCE_REDUCE[kind](x.astype(np.float64))
    magnitude = np.abs(x.astype(np.float64)).sum(1)
    if not clear:
        want = COMBINE[kind](want, y0.astype(np.float64))
        magnitude = magnitude + np.abs(y0.astype(np.float64))
    assert relative_error(y, want, magnitude) < 1e-6


# ---------------------------------------------------------------------------------------------
COLUMN_SUMS = """
func.func @colsum(%X: memref<?x?xf32>, %S: memref<?xf32>, %T: memref<1xf32>) attributes {tile.entry,
    tile.arg_names = ["X", "S", "T"], tile.arg_dims = [["M", "N"], ["N"], [1]], tile.symbols = ["M", "N"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %M = memref.dim %X, %c0 : memref<?x?xf32>
  %N = memref.dim %X, %c1 : memref<?x?xf32>
  %gy = arith.ceildivui %M, %c16 : index
  %gx = arith.ceildivui %N, %c16 : index
  "tile.kernel"(%gx, %gy) ({
  ^bb0(%bx: index, %by: index):
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<16x16xf32, "fragment">
    %s = "tile.alloc_fragment"() {name = "s"} : () -> memref<16xf32, "fragment">
    %t = "tile.alloc_fragment"() {name = "t"} : () -> memref<1xf32, "fragment">
    %r0 = arith.muli %by, %c16 : index
    %c0_ = arith.muli %bx, %c16 : index
    "tile.copy"(%X, %x, %r0, %c0_, %c0, %c0) {shape = [16, 16]}
        : (memref<?x?xf32>, memref<16x16xf32, "fragment">, index, index, index, index) -> ()
    "tile.reduce"(%x, %s) {kind = "sum", dim = 0 : i64, clear = true}
        : (memref<16x16xf32, "fragment">, memref<16xf32, "fragment">) -> ()
    "tile.atomic_add"(%S, %s, %c0_) : (memref<?xf32>, memref<16xf32, "fragment">, index) -> ()
    "tile.reduce"(%s, %t) {kind = "sum", dim = 0 : i64, clear = true}
        : (memref<16xf32, "fragment">, memref<1xf32, "fragment">) -> ()
    %total = memref.load %t[%c0] : memref<1xf32, "fragment">
    "tile.atomic_add"(%T, %total, %c0) : (memref<1xf32>, f32, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index, index) -> ()
  return
}
"""


@pytest.mark.parametrize("shape", [(32, 48), (37, 21)])
def test_atomic_add_accumulates_over_blocks(shape):
    kernel = compile_tile(COLUMN_SUMS)
    rng = np.random.default_rng()
    x = randn(rng, shape)
    s0, t0 = randn(rng, shape[1]), randn(rng, 1)
    s, t = s0.copy(), t0.copy()
    kernel(x, s, t)
    x64 = x.astype(np.float64)
    # relative to the summed magnitudes: a sum may cancel to near zero
    assert relative_error(s, s0 + x64.sum(0), np.abs(s0) + np.abs(x64).sum(0)) < 1e-6
    assert relative_error(t, t0 + x64.sum(), np.abs(t0) + np.abs(x64).sum()) < 1e-6


# ---------------------------------------------------------------------------------------------
ELEMENT_LOADS = """
func.func @rowmax(%X: memref<?x?xf32>, %Y: memref<?xf32>) attributes {tile.entry,
    tile.arg_names = ["X", "Y"], tile.arg_dims = [["M", "N"], ["M"]], tile.symbols = ["M", "N"]} {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %M = memref.dim %X, %c0 : memref<?x?xf32>
  %gx = arith.ceildivui %M, %c8 : index
  "tile.kernel"(%gx) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<8x32xf32, "fragment">
    %r = "tile.alloc_fragment"() {name = "r"} : () -> memref<8xf32, "fragment">
    %row = arith.muli %bx, %c8 : index
    "tile.parallel"(%c8, %c32) ({
    ^bb0(%i: index, %j: index):
      %gi = arith.addi %row, %i : index
      %v = memref.load %X[%gi, %j] : memref<?x?xf32>
      %two = arith.constant 2.0 : f32
      %n = arith.mulf %v, %two : f32
      memref.store %n, %x[%i, %j] : memref<8x32xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.reduce"(%x, %r) {kind = "min", dim = 1 : i64, clear = true}
        : (memref<8x32xf32, "fragment">, memref<8xf32, "fragment">) -> ()
    "tile.parallel"(%c8) ({
    ^bb0(%i: index):
      %gi = arith.addi %row, %i : index
      %v = memref.load %r[%i] : memref<8xf32, "fragment">
      memref.store %v, %Y[%gi] : memref<?xf32>
      "tile.yield"() : () -> ()
    }) : (index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}
"""


def test_element_code_reads_pad_with_the_identity_and_writes_are_dropped():
    kernel = compile_tile(ELEMENT_LOADS)
    rng = np.random.default_rng()
    x = randn(rng, (11, 20)) + 5  # all positive: a 0 padding would win the min
    y = nan_like(11, np.float32)
    kernel(x, y)
    assert np.array_equal(y, (2 * x).min(1))


# ---------------------------------------------------------------------------------------------
SCALE = """
func.func @scale(%X: memref<?xf32>, %Y: memref<?x$T>, %a: $T, %n: i32) attributes {tile.entry,
    tile.arg_names = ["X", "Y", "a", "n"], tile.arg_dims = [["N"], ["N"], [], []], tile.symbols = ["N"]} {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %N = memref.dim %X, %c0 : memref<?xf32>
  %gx = arith.ceildivui %N, %c32 : index
  %ok = arith.cmpi eq, %N, %N : index
  "tile.assume"(%ok) {expr = "N % 4 == 0"} : (i1) -> ()
  "tile.kernel"(%gx) ({
  ^bb0(%bx: index):
    %base = arith.muli %bx, %c32 : index
    "tile.parallel"(%c32) ({
    ^bb0(%i: index):
      %gi = arith.addi %base, %i : index
      %v = memref.load %X[%gi] : memref<?xf32>
      %af = arith.extf %a : $T to f32
      %nf = arith.sitofp %n : i32 to f32
      %p = arith.mulf %v, %af : f32
      %q = arith.addf %p, %nf : f32
      %r = arith.truncf %q : f32 to $T
      memref.store %r, %Y[%gi] : memref<?x$T>
      "tile.yield"() : () -> ()
    }) : (index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}
"""


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_narrow_scalar_arguments(dtype):
    kernel = compile_tile(SCALE, T=dtype)
    rng = np.random.default_rng()
    x = randn(rng, 100)
    y = nan_like(100, NUMPY[dtype])
    kernel(x, y, 1.7, -3)
    a = np.float32(np.array(1.7, NUMPY[dtype]))
    want = (x * a + np.float32(-3)).astype(NUMPY[dtype])
    assert np.array_equal(y.view(np.uint16), want.view(np.uint16))


def test_assume_is_checked_at_launch():
    kernel = compile_tile(SCALE, T="bf16")
    x = np.ones(10, np.float32) * 2
    with pytest.raises(LaunchError, match=r"N % 4 == 0"):
        kernel(x, nan_like(10, BF16), 1.0, 1)


# ---------------------------------------------------------------------------------------------
def test_out_idx_outputs_are_allocated_and_returned():
    with make_context(), ir.Location.unknown():
        kernel = build(ir.Module.parse(SOFTMAX), None, "tile", out_idx=(1,))
    x = randn(np.random.default_rng(), (5, 30))
    y = kernel(x)
    assert y.shape == x.shape and y.dtype == np.float32
    want = np.exp(x - x.max(1, keepdims=True))
    assert relative_error(y, want / want.sum(1, keepdims=True)) < 1e-6


def test_launch_errors_match_the_gpu_runtime():
    kernel = compile_tile(SOFTMAX)
    x = np.ones((4, 8), np.float32)
    with pytest.raises(LaunchError, match="takes 2 argument"):
        kernel(x)
    with pytest.raises(LaunchError, match="expected dtype float32, got float64"):
        kernel(x.astype(np.float64), x.copy())
    with pytest.raises(LaunchError, match="symbol M"):
        kernel(x, np.ones((5, 8), np.float32))
    with pytest.raises(LaunchError, match="C-contiguous"):
        kernel(np.ones((8, 8), np.float32)[::2], x.copy())


def test_unknown_level_is_rejected():
    with make_context(), ir.Location.unknown(), pytest.raises(ValueError, match="level"):
        build(ir.Module.parse(SOFTMAX), None, "warp")


def test_module_is_not_modified():
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(SOFTMAX)
        before = str(module)
        build(module, None, "tile")
        assert str(module) == before


def test_unlowerable_op_is_a_compile_error():
    text = SOFTMAX.replace("%e = math.exp %d : f32", "%e = math.exp %d : f32\n      gpu.barrier")
    with pytest.raises(CompileError, match="gpu.barrier"):
        compile_tile(text)
