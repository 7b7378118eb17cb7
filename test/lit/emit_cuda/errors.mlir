// Whatever the emitter cannot print is a located error, never a traceback.
// RUN: not emit-cuda %s 2>&1 | FileCheck %s
// CHECK: gemm.py:9:7: error: tile.gemm must be lowered before CUDA emission (run lower-gemm-simt
// CHECK-NOT: Traceback

module {
  func.func @gemm(%Y: memref<16x16xf32>) attributes {tile.entry, tile.arg_names = ["Y"], tile.arg_dims = [[16, 16]],
                                                     tile.symbols = []} {
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
      %a = memref.alloca() : memref<16x16xf16, "shared">
      %b = memref.alloca() : memref<16x16xf16, "shared">
      %c = memref.alloca() : memref<16x16xf32, "fragment">
      "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false}
          : (memref<16x16xf16, "shared">, memref<16x16xf16, "shared">, memref<16x16xf32, "fragment">) -> () loc("gemm.py":9:7)
      gpu.terminator
    }
    return
  }
}
