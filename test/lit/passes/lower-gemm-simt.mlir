// lower-gemm-simt: each tile.gemm becomes a tile.parallel over C whose points load C once, run a serial
// K loop carrying the sum in C's element type, and store it.
// RUN: tile-opt %s --split-input-file -p lower-gemm-simt | FileCheck %s
// The output verifies and re-parses.
// RUN: tile-opt %s --split-input-file -p lower-gemm-simt | tile-opt --split-input-file -o /dev/null

// f16 operands, f32 accumulator: each operand widens with extf, products add in f32.
// CHECK-LABEL: func.func @f16_to_f32
// CHECK-DAG: %[[K:.+]] = arith.constant 32 : index
// CHECK-DAG: %[[N:.+]] = arith.constant 128 : index
// CHECK-DAG: %[[M:.+]] = arith.constant 64 : index
// CHECK: %[[A:.+]] = "tile.alloc_shared"() {name = "A_s"}
// CHECK: %[[B:.+]] = "tile.alloc_shared"() {name = "B_s"}
// CHECK: %[[C:.+]] = "tile.alloc_fragment"() {name = "C"}
// CHECK: "tile.parallel"(%[[M]], %[[N]]) ({
// CHECK-NEXT: ^bb0(%[[I:.+]]: index, %[[J:.+]]: index):
// CHECK-NEXT: %[[START:.+]] = memref.load %[[C]][%[[I]], %[[J]]] : memref<64x128xf32, "fragment">
// CHECK-NEXT: %[[SUM:.+]] = scf.for %[[KV:.+]] = %{{.+}} to %[[K]] step %{{.+}} iter_args(%[[ACC:.+]] = %[[START]]) -> (f32) {
// CHECK-NEXT: %[[X:.+]] = memref.load %[[A]][%[[I]], %[[KV]]] : memref<64x32xf16, "shared">
// CHECK-NEXT: %[[XW:.+]] = arith.extf %[[X]] : f16 to f32
// CHECK-NEXT: %[[Y:.+]] = memref.load %[[B]][%[[KV]], %[[J]]] : memref<32x128xf16, "shared">
// CHECK-NEXT: %[[YW:.+]] = arith.extf %[[Y]] : f16 to f32
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[XW]], %[[YW]] : f32
// CHECK-NEXT: %[[NEXT:.+]] = arith.addf %[[ACC]], %[[P]] : f32
// CHECK-NEXT: scf.yield %[[NEXT]] : f32
// CHECK-NEXT: } {tile.name = "k", tile.result_names = ["acc"]}
// CHECK-NEXT: memref.store %[[SUM]], %[[C]][%[[I]], %[[J]]] : memref<64x128xf32, "fragment">
// CHECK-NEXT: "tile.yield"() : () -> ()
// CHECK-NEXT: }) : (index, index) -> ()
// CHECK-NOT: tile.gemm
func.func @f16_to_f32(%X: memref<64x32xf16>) attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<64x32xf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<32x128xf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<64x128xf32, "fragment">
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false} : (memref<64x32xf16, "shared">, memref<32x128xf16, "shared">, memref<64x128xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// Both operands transposed: A is K x M (read [k, i]), B is N x K (read [j, k]).
// CHECK-LABEL: func.func @transposed
// CHECK-DAG: %[[K:.+]] = arith.constant 16 : index
// CHECK-DAG: %[[N:.+]] = arith.constant 48 : index
// CHECK-DAG: %[[M:.+]] = arith.constant 32 : index
// CHECK: %[[A:.+]] = "tile.alloc_shared"() {name = "At_s"} : () -> memref<16x32xbf16, "shared">
// CHECK: %[[B:.+]] = "tile.alloc_shared"() {name = "Bt_s"} : () -> memref<48x16xbf16, "shared">
// CHECK: %[[C:.+]] = "tile.alloc_fragment"() {name = "C"}
// CHECK: "tile.parallel"(%[[M]], %[[N]]) ({
// CHECK-NEXT: ^bb0(%[[I:.+]]: index, %[[J:.+]]: index):
// CHECK: scf.for %[[KV:.+]] = %{{.+}} to %[[K]] step
// CHECK-NEXT: memref.load %[[A]][%[[KV]], %[[I]]] : memref<16x32xbf16, "shared">
// CHECK: memref.load %[[B]][%[[J]], %[[KV]]] : memref<48x16xbf16, "shared">
// CHECK-NOT: tile.gemm
func.func @transposed(%X: memref<64x32xf16>) attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "At_s"} : () -> memref<16x32xbf16, "shared">
    %b = "tile.alloc_shared"() {name = "Bt_s"} : () -> memref<48x16xbf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<32x48xf32, "fragment">
    "tile.gemm"(%a, %b, %c) {transpose_a = true, transpose_b = true} : (memref<16x32xbf16, "shared">, memref<48x16xbf16, "shared">, memref<32x48xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}

// -----

// int8 -> int32: a signed A widens with extsi, an unsigned B (tile.unsigned) with extui; muli / addi.
// A fragment A is first copied whole into a new shared buffer at the top of the kernel, read from there.
// CHECK-LABEL: func.func @int8_fragment
// CHECK: %[[STAGE:.+]] = "tile.alloc_shared"() {name = "A_f_gemm"} : () -> memref<16x64xi8, "shared">
// CHECK: %[[A:.+]] = "tile.alloc_fragment"() {name = "A_f"} : () -> memref<16x64xi8, "fragment">
// CHECK: %[[B:.+]] = "tile.alloc_shared"() {name = "B_s", tile.unsigned} : () -> memref<64x32xi8, "shared">
// CHECK: "tile.copy"(%[[A]], %[[STAGE]], %[[Z:.+]], %[[Z]], %[[Z]], %[[Z]]) {shape = [16, 64]}
// CHECK-NEXT: "tile.parallel"
// CHECK: scf.for {{.*}} -> (i32) {
// CHECK-NEXT: %[[X:.+]] = memref.load %[[STAGE]]
// CHECK-NEXT: arith.extsi %[[X]] : i8 to i32
// CHECK-NEXT: %[[Y:.+]] = memref.load %[[B]]
// CHECK-NEXT: arith.extui %[[Y]] : i8 to i32
// CHECK-NEXT: arith.muli
// CHECK-NEXT: arith.addi
// CHECK-NOT: tile.gemm
func.func @int8_fragment(%X: memref<64x32xf16>) attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_fragment"() {name = "A_f"} : () -> memref<16x64xi8, "fragment">
    %b = "tile.alloc_shared"() {name = "B_s", tile.unsigned} : () -> memref<64x32xi8, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<16x32xi32, "fragment">
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false} : (memref<16x64xi8, "fragment">, memref<64x32xi8, "shared">, memref<16x32xi32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}
