// partition-threads on a select-stmatrix copy: the wgmma accumulator (64 x 64 over one warpgroup, 32 registers a
// thread) into the swizzled tile as four stmatrix.x4 of consecutive register pairs; lane l of warp w addresses row
// 16 w + 8 ((l / 8) mod 2) + l mod 8, column 8 ((l / 8) / 2) (+ 16 k for instruction k).
// RUN: tile-opt %s -p partition-threads | FileCheck %s

// CHECK-LABEL: func.func @epilogue
// CHECK: %[[REGS:.+]] = memref.alloca() {name = "C_f", tile.layout = {{.+}}} : memref<32xf32, "local">
// CHECK: %[[TILE:.+]] = memref.alloca() {name = "C_s", tile.swizzle = 128 : i64} : memref<64x64xbf16, "shared">
// CHECK: "tile.stmatrix"(%[[TILE]], %[[REGS]], %[[ROW:[0-9]+]], %[[COL:[0-9]+]]) {registers = [0, 2, 4, 6], trans = false}
// CHECK-NEXT: %[[COL16:.+]] = arith.addi %[[COL]], %{{.+}} : index
// CHECK-NEXT: "tile.stmatrix"(%[[TILE]], %[[REGS]], %[[ROW]], %[[COL16]]) {registers = [8, 10, 12, 14], trans = false}
// CHECK: "tile.stmatrix"(%[[TILE]], %[[REGS]], %[[ROW]], %{{.+}}) {registers = [16, 18, 20, 22], trans = false}
// CHECK: "tile.stmatrix"(%[[TILE]], %[[REGS]], %[[ROW]], %{{.+}}) {registers = [24, 26, 28, 30], trans = false}
// CHECK-NOT: "tile.copy"
// CHECK-NOT: "tile.stmatrix"
#thread = affine_map<(d0, d1) -> ((d1 floordiv 2) mod 4 + (d0 mod 8) * 4 + (d0 floordiv 16) * 32)>
#reg = affine_map<(d0, d1) -> (d1 mod 2 + ((d0 floordiv 8) mod 2) * 2 + (d1 floordiv 8) * 4)>
func.func @epilogue(%C: memref<?x64xbf16>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %acc = "tile.alloc_fragment"() {layout = #tile.layout<#thread, #reg, 1 : i64>, name = "C_f"} : () -> memref<64x64xf32, "fragment">
    %bf = "tile.alloc_shared"() {name = "C_s", tile.swizzle = 128 : i64} : () -> memref<64x64xbf16, "shared">
    "tile.copy"(%acc, %bf, %c0, %c0, %c0, %c0) {shape = [64, 64], tile.stmatrix} : (memref<64x64xf32, "fragment">, memref<64x64xbf16, "shared">, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}
