// lower-gemm-simt takes tile-level IR: a tile.gemm whose block is a gpu.launch (thread-level IR,
// which still holds it) is a located error, never an internal compiler error.
// RUN: tile-opt %s --split-input-file --verify-diagnostics -p lower-gemm-simt
// The emitter's own test input, unmodified, as the issue ran it:
// RUN: not tile-opt %S/../emit_cuda/errors.mlir -p lower-gemm-simt 2>&1 | FileCheck %s
// CHECK: gemm.py:9:7: error: tile.gemm is not inside a tile.kernel: lower-gemm-simt takes tile-level IR
// CHECK-NOT: internal

func.func @gemm_in_a_gpu_launch(%Y: memref<16x16xf32>) {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %a = memref.alloca() : memref<16x16xf16, "shared">
    %b = memref.alloca() : memref<16x16xf16, "shared">
    %c = memref.alloca() : memref<16x16xf32, "fragment">
    // expected-error @+1 {{tile.gemm is not inside a tile.kernel: lower-gemm-simt takes tile-level IR (docs/ir.md), where a gemm's block is a tile.kernel, not a gpu.launch}}
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false}
        : (memref<16x16xf16, "shared">, memref<16x16xf16, "shared">, memref<16x16xf32, "fragment">) -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @gemm_in_no_kernel(%a: memref<16x16xf16, "shared">, %b: memref<16x16xf16, "shared">,
                             %c: memref<16x16xf32, "fragment">) {
  // expected-error @+1 {{tile.gemm is not inside a tile.kernel}}
  "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false}
      : (memref<16x16xf16, "shared">, memref<16x16xf16, "shared">, memref<16x16xf32, "fragment">) -> ()
  return
}
