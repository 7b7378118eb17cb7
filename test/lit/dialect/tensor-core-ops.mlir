// tile.stmatrix: parse, print, re-parse the printed form; the generic form round-trips too.
// RUN: tile-opt %s | tile-opt | FileCheck %s
// RUN: tile-opt %s --mlir-print-op-generic | tile-opt | FileCheck %s

// CHECK-LABEL: func.func @stmatrix_forms
func.func @stmatrix_forms(%row: index, %col: index, %flat: index) {
  %c_s = memref.alloca() {name = "C_s"} : memref<64x64xbf16, "shared">
  %c_f = memref.alloca() {name = "C_f"} : memref<32xf32, "local">
  // CHECK: "tile.stmatrix"(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) {registers = [0, 2, 4, 6], trans = false} : (memref<64x64xbf16, "shared">, memref<32xf32, "local">, index, index) -> ()
  "tile.stmatrix"(%c_s, %c_f, %row, %col) {registers = [0, 2, 4, 6], trans = false} : (memref<64x64xbf16, "shared">, memref<32xf32, "local">, index, index) -> ()
  // CHECK: "tile.stmatrix"(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) {registers = [30, 7], trans = true} : (memref<64x64xbf16, "shared">, memref<32xf32, "local">, index, index) -> ()
  "tile.stmatrix"(%c_s, %c_f, %row, %col) {registers = [30, 7], trans = true} : (memref<64x64xbf16, "shared">, memref<32xf32, "local">, index, index) -> ()
  // 16-bit registers, no conversion; a flat (materialized) buffer takes one physical index
  %h_s = memref.alloca() {name = "H_s", tile.materialized} : memref<2048xf16, "shared">
  %h_f = memref.alloca() {name = "H_f"} : memref<8xf16, "local">
  // CHECK: "tile.stmatrix"(%{{.+}}, %{{.+}}, %{{.+}}) {registers = [4], trans = false} : (memref<2048xf16, "shared">, memref<8xf16, "local">, index) -> ()
  "tile.stmatrix"(%h_s, %h_f, %flat) {registers = [4], trans = false} : (memref<2048xf16, "shared">, memref<8xf16, "local">, index) -> ()
  return
}
