// plan-shared-memory: tile.smem_offset on every shared alloca; buffers share bytes only when their lives are
// apart with a block-wide barrier between; a 128-byte swizzle aligns to 1024; a use in a loop lives for the loop.
// RUN: tile-opt %s -p plan-shared-memory | FileCheck %s

// CHECK-LABEL: func.func @reuse
// P and Q are used before the first barrier, R after it: R reuses P's bytes. S (swizzle 128), live across that
// barrier, is aligned to 1024. L, used in a loop (whose inner barrier does not count), lives for the whole loop:
// no block-wide barrier separates it from R or S, so it goes past R. T, after the last barrier, reuses offset 0.
// CHECK: memref.alloca() {name = "P", tile.smem_offset = 0 : i64} : memref<64xf32, "shared">
// CHECK: memref.alloca() {name = "Q", tile.smem_offset = 256 : i64} : memref<10xf16, "shared">
// CHECK: memref.alloca() {name = "R", tile.smem_offset = 0 : i64} : memref<32xf32, "shared">
// CHECK: memref.alloca() {name = "S", tile.smem_offset = 1024 : i64, tile.swizzle = 128 : i64} : memref<8x64xf16, "shared">
// CHECK: memref.alloca() {name = "L", tile.smem_offset = 128 : i64} : memref<4xf32, "shared">
// CHECK: memref.alloca() {name = "T", tile.smem_offset = 0 : i64} : memref<4xf32, "shared">
func.func @reuse(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %f = arith.constant 1.0 : f32
  %h = arith.constant 1.0 : f16
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %p = memref.alloca() {name = "P"} : memref<64xf32, "shared">
    %q = memref.alloca() {name = "Q"} : memref<10xf16, "shared">
    %r = memref.alloca() {name = "R"} : memref<32xf32, "shared">
    %s = memref.alloca() {name = "S", tile.swizzle = 128 : i64} : memref<8x64xf16, "shared">
    %l = memref.alloca() {name = "L"} : memref<4xf32, "shared">
    %t = memref.alloca() {name = "T"} : memref<4xf32, "shared">
    memref.store %f, %p[%tx] : memref<64xf32, "shared">
    memref.store %h, %q[%c0] : memref<10xf16, "shared">
    memref.store %h, %s[%c0, %tx] : memref<8x64xf16, "shared">
    gpu.barrier
    memref.store %f, %r[%tx] : memref<32xf32, "shared">
    memref.store %h, %s[%c1, %tx] : memref<8x64xf16, "shared">
    scf.for %i = %c0 to %n step %c1 {
      memref.store %f, %l[%c0] : memref<4xf32, "shared">
      gpu.barrier
      %v = memref.load %l[%c1] : memref<4xf32, "shared">
    }
    gpu.barrier
    memref.store %f, %t[%c0] : memref<4xf32, "shared">
    gpu.terminator
  }
  return
}

