// The cp.async ops: parse, print, re-parse the printed form; the generic form round-trips too.
// RUN: tile-opt %s | tile-opt | FileCheck %s
// RUN: tile-opt %s --mlir-print-op-generic | tile-opt | FileCheck %s

// CHECK-LABEL: func.func @async_copies
func.func @async_copies(%A: memref<?x?xbf16>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %s = "tile.alloc_shared"() {name = "A_s"} : () -> memref<2x128x32xbf16, "shared">
    // CHECK: "tile.cp_async"(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) {bytes = 16 : i64} : (memref<2x128x32xbf16, "shared">, memref<?x?xbf16>, index, index, index, index, index) -> ()
    "tile.cp_async"(%s, %A, %c1, %c0, %c8, %bx, %c8) {bytes = 16 : i64} : (memref<2x128x32xbf16, "shared">, memref<?x?xbf16>, index, index, index, index, index) -> ()
    // CHECK: "tile.cp_async"(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[N:.+]]) {bytes = 8 : i64}
    "tile.cp_async"(%s, %A, %c1, %c0, %c8, %bx, %c8, %n) {bytes = 8 : i64} : (memref<2x128x32xbf16, "shared">, memref<?x?xbf16>, index, index, index, index, index, index) -> ()
    // CHECK: "tile.cp_async_commit"() : () -> ()
    "tile.cp_async_commit"() : () -> ()
    // CHECK: "tile.cp_async_wait"() {pending = 1 : i64} : () -> ()
    "tile.cp_async_wait"() {pending = 1 : i64} : () -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}
