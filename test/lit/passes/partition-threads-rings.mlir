// partition-threads' barrier planner leaves pipeline rings (tile.ring) to plan-pipeline's one barrier: a ring
// written and then read by other threads gets no barrier of its own; the same buffer without tile.ring does.
// RUN: tile-opt %s --split-input-file -p infer-layouts,lower-tile-ops,partition-threads | FileCheck %s

// CHECK-LABEL: func.func @ring
// CHECK: memref.alloca() {name = "X_s", tile.ring} : memref<2x16x64xf32, "shared">
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
func.func @ring(%X: memref<16x64xf32>, %Y: memref<64x16xf32>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_shared"() {name = "X_s", tile.ring} : () -> memref<2x16x64xf32, "shared">
    %f = "tile.alloc_fragment"() {name = "F"} : () -> memref<64x16xf32, "fragment">
    "tile.copy"(%X, %x, %c0, %c0, %c1, %c0, %c0) {shape = [1, 16, 64], tile.async} : (memref<16x64xf32>, memref<2x16x64xf32, "shared">, index, index, index, index, index) -> ()
    "tile.parallel"(%c64, %c16) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%c1, %j, %i] : memref<2x16x64xf32, "shared">
      memref.store %v, %f[%i, %j] : memref<64x16xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.copy"(%f, %Y, %c0, %c0, %c0, %c0) {shape = [64, 16]} : (memref<64x16xf32, "fragment">, memref<64x16xf32>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @plain
// CHECK: memref.store %{{.+}}, %[[X:.+]][%{{.+}}, %{{.+}}, %{{.+}}] : memref<2x16x64xf32, "shared">
// CHECK: gpu.barrier
// CHECK: memref.load %[[X]]
func.func @plain(%X: memref<16x64xf32>, %Y: memref<64x16xf32>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_shared"() {name = "X_s"} : () -> memref<2x16x64xf32, "shared">
    %f = "tile.alloc_fragment"() {name = "F"} : () -> memref<64x16xf32, "fragment">
    "tile.copy"(%X, %x, %c0, %c0, %c1, %c0, %c0) {shape = [1, 16, 64]} : (memref<16x64xf32>, memref<2x16x64xf32, "shared">, index, index, index, index, index) -> ()
    "tile.parallel"(%c64, %c16) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%c1, %j, %i] : memref<2x16x64xf32, "shared">
      memref.store %v, %f[%i, %j] : memref<64x16xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.copy"(%f, %Y, %c0, %c0, %c0, %c0) {shape = [64, 16]} : (memref<64x16xf32, "fragment">, memref<64x16xf32>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}
