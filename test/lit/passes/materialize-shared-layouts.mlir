// materialize-shared-layouts: accesses of a tile.swizzle shared buffer index its physical element
// (L' = L ^ (((L >> 7) & (W/16 - 1)) << 4) within W-byte panels), unswizzled buffers are left alone.
// RUN: tile-opt %s -p materialize-shared-layouts | FileCheck %s
// The output verifies and re-parses.
// RUN: tile-opt %s -p materialize-shared-layouts | tile-opt -o /dev/null

// A 16-byte cp.async into a 64-byte-swizzled 2-slot ring and a load from it: row r's chunk bits are XORed
// with (r * 64 >> 7) mod 4 and slot 1 starts at byte 512 (2 x 8 x 32 halves); the buffer becomes
// one-dimensional and each access takes the one physical element index (the byte / 2).
// CHECK-LABEL: func.func @swizzled
// CHECK-SAME: (%{{.+}}: memref<?x32xf16>, %[[R:[a-z0-9]+]]: index
// CHECK-DAG: %[[C16:.+]] = arith.constant 16 : index
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : index
// CHECK-DAG: %[[C128:.+]] = arith.constant 128 : index
// CHECK-DAG: %[[C512:.+]] = arith.constant 512 : index
// CHECK-DAG: %[[C64:.+]] = arith.constant 64 : index
// CHECK-DAG: %[[C2:.+]] = arith.constant 2 : index
// CHECK: %[[S:.+]] = memref.alloca() {name = "A_s", tile.logical_shape = array<i64: 2, 8, 32>, tile.materialized, tile.swizzle = 64 : i64} : memref<512xf16, "shared">
// CHECK: %[[U:.+]] = memref.alloca() {name = "U_s"} : memref<8x32xf16, "shared">
// CHECK: %[[ROWB:.+]] = arith.muli %[[R]], %[[C64]] : index
// CHECK: %[[L:.+]] = arith.addi %[[ROWB]], %{{.+}} : index
// CHECK: %[[SLOT:.+]] = arith.addi %[[C512]], %{{.+}} : index
// CHECK: %[[HI:.+]] = arith.divui %[[L]], %[[C128]] : index
// CHECK: %[[M:.+]] = arith.remui %[[HI]], %[[C4]] : index
// CHECK: %[[X:.+]] = arith.muli %[[M]], %[[C16]] : index
// CHECK: %[[SW:.+]] = arith.xori %[[L]], %[[X]] : index
// CHECK: %[[BYTE:.+]] = arith.addi %[[SLOT]], %[[SW]] : index
// CHECK: %[[E:.+]] = arith.divui %[[BYTE]], %[[C2]] : index
// CHECK: "tile.cp_async"(%[[S]], %{{.+}}, %[[E]], %[[R]], %{{.+}}) {bytes = 16 : i64} : (memref<512xf16, "shared">, memref<?x32xf16>, index, index, index) -> ()
// CHECK: arith.xori
// CHECK: memref.load %[[S]][%{{.+}}] : memref<512xf16, "shared">
// CHECK: memref.load %[[U]][%[[R]], %{{.+}}] : memref<8x32xf16, "shared">
func.func @swizzled(%A: memref<?x32xf16>, %r: index, %c: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %s = memref.alloca() {name = "A_s", tile.swizzle = 64 : i64} : memref<2x8x32xf16, "shared">
    %u = memref.alloca() {name = "U_s"} : memref<8x32xf16, "shared">
    %col = arith.muli %c, %c8 : index
    "tile.cp_async"(%s, %A, %c1, %r, %col, %r, %col) {bytes = 16 : i64} : (memref<2x8x32xf16, "shared">, memref<?x32xf16>, index, index, index, index, index) -> ()
    %v = memref.load %s[%c1, %r, %c] : memref<2x8x32xf16, "shared">
    %w = memref.load %u[%r, %c] : memref<8x32xf16, "shared">
    gpu.terminator
  }
  return
}

// Terms of whole swizzle periods (8 rows) and whole panels (64 halves of a 128-byte panel) are added after the
// permutation: [r + 8, c + 64] of a 16 x 128 tile is the permuted [r, c] plus 8 * 64 + 64 * 16 = 1536 elements.
// CHECK-LABEL: func.func @periods
// CHECK: %[[P:.+]] = arith.divui %{{.+}}, %c2{{[_0-9]*}} : index
// CHECK: %[[L:.+]] = arith.addi %[[P]], %c1536{{[_0-9]*}} : index
// CHECK: memref.load %{{.+}}[%[[L]]] : memref<2048xf16, "shared">
func.func @periods(%r: index, %c: index) {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %s = memref.alloca() {name = "B_s", tile.swizzle = 128 : i64} : memref<16x128xf16, "shared">
    %row = arith.addi %r, %c8 : index
    %col = arith.addi %c64, %c : index
    %v = memref.load %s[%row, %col] : memref<16x128xf16, "shared">
    gpu.terminator
  }
  return
}

// An atomic add into a swizzled buffer indexes its physical element like any access.
// CHECK-LABEL: func.func @swizzled_atomic
// CHECK: %[[S:.+]] = memref.alloca() {name = "H_s", tile.logical_shape = array<i64: 8, 32>, tile.materialized, tile.swizzle = 128 : i64} : memref<256xf32, "shared">
// CHECK: arith.xori
// CHECK: "tile.atomic_add"(%[[S]], %{{.+}}, %{{.+}}) : (memref<256xf32, "shared">, f32, index) -> ()
func.func @swizzled_atomic(%r: index, %c: index, %v: f32) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %h = memref.alloca() {name = "H_s", tile.swizzle = 128 : i64} : memref<8x32xf32, "shared">
    "tile.atomic_add"(%h, %v, %r, %c) : (memref<8x32xf32, "shared">, f32, index, index) -> ()
    gpu.terminator
  }
  return
}
