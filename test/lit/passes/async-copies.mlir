// async-copies: tile.async shared stores of a global vector load become one tile.cp_async; guards become
// its zero fill.
// RUN: tile-opt %s --split-input-file -p async-copies | FileCheck %s
// The output verifies and re-parses.
// RUN: tile-opt %s --split-input-file -p async-copies | tile-opt --split-input-file -o /dev/null

// A plain 16-byte run, a guarded 8-byte load, and a row guard whose else-branch zero-fills the same elements.
// CHECK-LABEL: func.func @copies
// CHECK: %[[S:.+]] = memref.alloca() {name = "A_s", tile.ring} : memref<2x4x16xf16, "shared">
// CHECK: "tile.cp_async"(%[[S]], %[[A:.+]], %[[C0:.+]], %[[R:.+]], %[[COL:.+]], %[[R]], %[[COL]]) {bytes = 16 : i64}
// CHECK-NOT: memref.store
// CHECK: %[[OK:.+]] = arith.cmpi slt, %{{.+}}, %{{.+}} : index
// CHECK: %[[N8:.+]] = arith.constant 8 : index
// CHECK: %[[Z:.+]] = arith.constant 0 : index
// CHECK: %[[SB:.+]] = arith.select %[[OK]], %[[N8]], %[[Z]] : index
// CHECK: "tile.cp_async"(%[[S]], %[[A]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[SB]]) {bytes = 8 : i64}
// CHECK: %[[ROW:.+]] = arith.cmpi slt, %{{.+}}, %{{.+}} : index
// CHECK-NOT: scf.if
// CHECK: %[[ROWB:.+]] = arith.select %[[ROW]], %{{.+}}, %{{.+}} : index
// CHECK: "tile.cp_async"(%[[S]], %[[A]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[ROWB]]) {bytes = 16 : i64}
// CHECK-NOT: tile.async
func.func @copies(%A: memref<?x64xf16>, %r: index, %m: index) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f16
  %zeros = arith.constant dense<0.0> : vector<4xf16>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %s = memref.alloca() {name = "A_s", tile.ring} : memref<2x4x16xf16, "shared">
    %col = arith.muli %tx, %c8 : index
    %v = vector.load %A[%r, %col] {alignment = 16 : i64} : memref<?x64xf16>, vector<8xf16>
    %e0 = vector.extract %v[0] : f16 from vector<8xf16>
    memref.store %e0, %s[%c0, %r, %col] {tile.async} : memref<2x4x16xf16, "shared">
    %i1 = arith.addi %col, %c1 : index
    %e1 = vector.extract %v[1] : f16 from vector<8xf16>
    memref.store %e1, %s[%c0, %r, %i1] {tile.async} : memref<2x4x16xf16, "shared">
    %i2 = arith.addi %col, %c2 : index
    %e2 = vector.extract %v[2] : f16 from vector<8xf16>
    memref.store %e2, %s[%c0, %r, %i2] {tile.async} : memref<2x4x16xf16, "shared">
    %i3 = arith.addi %col, %c3 : index
    %e3 = vector.extract %v[3] : f16 from vector<8xf16>
    memref.store %e3, %s[%c0, %r, %i3] {tile.async} : memref<2x4x16xf16, "shared">
    %i4 = arith.addi %col, %c4 : index
    %e4 = vector.extract %v[4] : f16 from vector<8xf16>
    memref.store %e4, %s[%c0, %r, %i4] {tile.async} : memref<2x4x16xf16, "shared">
    %i5 = arith.addi %col, %c5 : index
    %e5 = vector.extract %v[5] : f16 from vector<8xf16>
    memref.store %e5, %s[%c0, %r, %i5] {tile.async} : memref<2x4x16xf16, "shared">
    %i6 = arith.addi %col, %c6 : index
    %e6 = vector.extract %v[6] : f16 from vector<8xf16>
    memref.store %e6, %s[%c0, %r, %i6] {tile.async} : memref<2x4x16xf16, "shared">
    %i7 = arith.addi %col, %c7 : index
    %e7 = vector.extract %v[7] : f16 from vector<8xf16>
    memref.store %e7, %s[%c0, %r, %i7] {tile.async} : memref<2x4x16xf16, "shared">
    %c4q = arith.muli %tx, %c4 : index
    %ok = arith.cmpi slt, %c4q, %m : index
    %g = scf.if %ok -> (vector<4xf16>) {
      %w = vector.load %A[%r, %c4q] {alignment = 8 : i64} : memref<?x64xf16>, vector<4xf16>
      scf.yield %w : vector<4xf16>
    } else {
      scf.yield %zeros : vector<4xf16>
    } {tile.guard}
    %g0 = vector.extract %g[0] : f16 from vector<4xf16>
    memref.store %g0, %s[%c1, %r, %c4q] {tile.async} : memref<2x4x16xf16, "shared">
    %j1 = arith.addi %c4q, %c1 : index
    %g1 = vector.extract %g[1] : f16 from vector<4xf16>
    memref.store %g1, %s[%c1, %r, %j1] {tile.async} : memref<2x4x16xf16, "shared">
    %j2 = arith.addi %c4q, %c2 : index
    %g2 = vector.extract %g[2] : f16 from vector<4xf16>
    memref.store %g2, %s[%c1, %r, %j2] {tile.async} : memref<2x4x16xf16, "shared">
    %j3 = arith.addi %c4q, %c3 : index
    %g3 = vector.extract %g[3] : f16 from vector<4xf16>
    memref.store %g3, %s[%c1, %r, %j3] {tile.async} : memref<2x4x16xf16, "shared">
    %rowok = arith.cmpi slt, %r, %m : index
    scf.if %rowok {
      %u = vector.load %A[%r, %col] {alignment = 16 : i64} : memref<?x64xf16>, vector<8xf16>
      %u0 = vector.extract %u[0] : f16 from vector<8xf16>
      memref.store %u0, %s[%c1, %c0, %col] {tile.async} : memref<2x4x16xf16, "shared">
      %u1 = vector.extract %u[1] : f16 from vector<8xf16>
      memref.store %u1, %s[%c1, %c0, %i1] {tile.async} : memref<2x4x16xf16, "shared">
      %u2 = vector.extract %u[2] : f16 from vector<8xf16>
      memref.store %u2, %s[%c1, %c0, %i2] {tile.async} : memref<2x4x16xf16, "shared">
      %u3 = vector.extract %u[3] : f16 from vector<8xf16>
      memref.store %u3, %s[%c1, %c0, %i3] {tile.async} : memref<2x4x16xf16, "shared">
      %u4 = vector.extract %u[4] : f16 from vector<8xf16>
      memref.store %u4, %s[%c1, %c0, %i4] {tile.async} : memref<2x4x16xf16, "shared">
      %u5 = vector.extract %u[5] : f16 from vector<8xf16>
      memref.store %u5, %s[%c1, %c0, %i5] {tile.async} : memref<2x4x16xf16, "shared">
      %u6 = vector.extract %u[6] : f16 from vector<8xf16>
      memref.store %u6, %s[%c1, %c0, %i6] {tile.async} : memref<2x4x16xf16, "shared">
      %u7 = vector.extract %u[7] : f16 from vector<8xf16>
      memref.store %u7, %s[%c1, %c0, %i7] {tile.async} : memref<2x4x16xf16, "shared">
    } else {
      scf.for %l = %c0 to %c8 step %c1 {
        %at = arith.addi %l, %col : index
        memref.store %zero, %s[%c1, %c0, %at] {tile.async} : memref<2x4x16xf16, "shared">
      } {tile.unroll}
    } {tile.guard}
    gpu.terminator
  }
  return
}

// -----

// Not copies: a lane converted on the way, a pad other than zero, a store without tile.async.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: tile.cp_async
func.func @kept(%A: memref<?x64xf32>, %r: index, %m: index) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %ninf = arith.constant dense<0xFF800000> : vector<1xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %s = memref.alloca() {name = "S"} : memref<4x64xf32, "shared">
    %v = vector.load %A[%r, %tx] {alignment = 4 : i64} : memref<?x64xf32>, vector<1xf32>
    %e = vector.extract %v[0] : f32 from vector<1xf32>
    %n = arith.negf %e : f32
    memref.store %n, %s[%c0, %tx] {tile.async} : memref<4x64xf32, "shared">
    %ok = arith.cmpi slt, %r, %m : index
    %g = scf.if %ok -> (vector<1xf32>) {
      %w = vector.load %A[%r, %tx] {alignment = 4 : i64} : memref<?x64xf32>, vector<1xf32>
      scf.yield %w : vector<1xf32>
    } else {
      scf.yield %ninf : vector<1xf32>
    } {tile.guard}
    %g0 = vector.extract %g[0] : f32 from vector<1xf32>
    memref.store %g0, %s[%c1, %tx] {tile.async} : memref<4x64xf32, "shared">
    %u = vector.load %A[%r, %tx] {alignment = 4 : i64} : memref<?x64xf32>, vector<1xf32>
    %u0 = vector.extract %u[0] : f32 from vector<1xf32>
    memref.store %u0, %s[%c0, %tx] : memref<4x64xf32, "shared">
    gpu.terminator
  }
  return
}
