// Every tile op and the layout attribute: parse, print, re-parse the printed form, print again.
// RUN: tile-opt %s | tile-opt | FileCheck %s
// The generic form (what other tools exchange) round-trips too.
// RUN: tile-opt %s --mlir-print-op-generic | tile-opt | FileCheck %s

// CHECK-DAG: #[[$THREAD:.+]] = affine_map<(d0, d1) -> (d0 * 32 + d1 floordiv 4)>
// CHECK-DAG: #[[$LOCAL:.+]] = affine_map<(d0, d1) -> (d1 mod 4)>
// CHECK-DAG: #[[$REPL:.+]] = affine_map<(d0)[s0] -> (d0 + s0 * 4)>
// CHECK-DAG: #[[$ZERO:.+]] = affine_map<(d0) -> (0)>

// CHECK-LABEL: func.func @kernel_and_allocs
// CHECK-SAME: (%[[N:.+]]: index)
func.func @kernel_and_allocs(%n: index) {
  %c2 = arith.constant 2 : index
  // CHECK: %[[C2:.+]] = arith.constant 2 : index
  // CHECK: "tile.kernel"(%[[N]], %[[C2]]) ({
  // CHECK-NEXT: ^bb0(%{{.+}}: index, %{{.+}}: index):
  "tile.kernel"(%n, %c2) ({
  ^bb0(%bx: index, %by: index):
    // CHECK-NEXT: "tile.alloc_shared"() {name = "A_s"} : () -> memref<128x32xf16, "shared">
    %s = "tile.alloc_shared"() {name = "A_s"} : () -> memref<128x32xf16, "shared">
    // CHECK-NEXT: "tile.alloc_fragment"() {layout = #tile.layout<#[[$THREAD]], #[[$LOCAL]], 1 : i64>, name = "acc"} : () -> memref<4x128xf32, "fragment">
    %f = "tile.alloc_fragment"() {name = "acc", layout = #tile.layout<affine_map<(d0, d1) -> (d0 * 32 + d1 floordiv 4)>, affine_map<(d0, d1) -> (d1 mod 4)>, 1 : i64>} : () -> memref<4x128xf32, "fragment">
    // CHECK-NEXT: "tile.alloc_fragment"() {layout = #tile.layout<#[[$REPL]], #[[$ZERO]], 32 : i64>} : () -> memref<4xf32, "fragment">
    %r = "tile.alloc_fragment"() {layout = #tile.layout<affine_map<(d0)[s0] -> (d0 + s0 * 4)>, affine_map<(d0) -> (0)>, 32 : i64>} : () -> memref<4xf32, "fragment">
    // CHECK-NEXT: "tile.alloc_local"() {name = "tmp"} : () -> memref<8xf32, "local">
    %l = "tile.alloc_local"() {name = "tmp"} : () -> memref<8xf32, "local">
    // CHECK-NEXT: "tile.yield"() : () -> ()
    "tile.yield"() : () -> ()
  // CHECK-NEXT: }) {threads = 128 : i64} : (index, index) -> ()
  }) {threads = 128 : i64} : (index, index) -> ()
  return
}

// CHECK-LABEL: func.func @three_dim_grid
func.func @three_dim_grid(%x: index, %y: index, %z: index) {
  // CHECK: "tile.kernel"(%{{.+}}, %{{.+}}, %{{.+}}) ({
  // CHECK-NEXT: ^bb0(%{{.+}}: index, %{{.+}}: index, %{{.+}}: index):
  // CHECK: }) {threads = 1024 : i64} : (index, index, index) -> ()
  "tile.kernel"(%x, %y, %z) ({
  ^bb0(%bx: index, %by: index, %bz: index):
    "tile.yield"() : () -> ()
  }) {threads = 1024 : i64} : (index, index, index) -> ()
  return
}

// CHECK-LABEL: func.func @copy_fill_parallel
// CHECK-SAME: (%[[X:[^:]+]]: memref<?x1024xbf16>, %[[Y:[^:]+]]: memref<?x1024xbf16>)
func.func @copy_fill_parallel(%X: memref<?x1024xbf16>, %Y: memref<?x1024xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c1024 = arith.constant 1024 : index
  %zero = arith.constant 0.0 : f32
  // CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
  // CHECK-DAG: %[[C4:.+]] = arith.constant 4 : index
  // CHECK-DAG: %[[C1024:.+]] = arith.constant 1024 : index
  // CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // CHECK: %[[FRAG:.+]] = "tile.alloc_fragment"() {name = "x"} : () -> memref<4x1024xf32, "fragment">
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<4x1024xf32, "fragment">
    // CHECK-NEXT: %[[ROW:.+]] = "tile.alloc_local"() : () -> memref<1024xf32, "local">
    %row = "tile.alloc_local"() : () -> memref<1024xf32, "local">
    // CHECK-NEXT: "tile.fill"(%[[FRAG]], %[[ZERO]]) : (memref<4x1024xf32, "fragment">, f32) -> ()
    "tile.fill"(%x, %zero) : (memref<4x1024xf32, "fragment">, f32) -> ()
    // CHECK-NEXT: "tile.copy"(%[[X]], %[[FRAG]], %{{.+}}, %[[C0]], %[[C0]], %[[C0]]) {shape = [4, 1024]}
    // CHECK-SAME: : (memref<?x1024xbf16>, memref<4x1024xf32, "fragment">, index, index, index, index) -> ()
    "tile.copy"(%X, %x, %bx, %c0, %c0, %c0) {shape = [4, 1024]} : (memref<?x1024xbf16>, memref<4x1024xf32, "fragment">, index, index, index, index) -> ()
    // A rank-1 side takes the last box dim; the leading box dim is 1.
    // CHECK-NEXT: "tile.copy"(%[[FRAG]], %[[ROW]], %[[C0]], %[[C0]], %[[C0]]) {shape = [1, 1024]}
    "tile.copy"(%x, %row, %c0, %c0, %c0) {shape = [1, 1024]} : (memref<4x1024xf32, "fragment">, memref<1024xf32, "local">, index, index, index) -> ()
    // CHECK-NEXT: "tile.parallel"(%[[C4]], %[[C1024]]) ({
    // CHECK-NEXT: ^bb0(%[[I:.+]]: index, %[[J:.+]]: index):
    "tile.parallel"(%c4, %c1024) ({
    ^bb0(%i: index, %j: index):
      // CHECK-NEXT: %[[V:.+]] = memref.load %[[FRAG]][%[[I]], %[[J]]] : memref<4x1024xf32, "fragment">
      // CHECK-NEXT: %[[W:.+]] = arith.mulf %[[V]], %[[V]] : f32
      // CHECK-NEXT: memref.store %[[W]], %[[FRAG]][%[[I]], %[[J]]] : memref<4x1024xf32, "fragment">
      // CHECK-NEXT: "tile.yield"() : () -> ()
      %v = memref.load %x[%i, %j] : memref<4x1024xf32, "fragment">
      %w = arith.mulf %v, %v : f32
      memref.store %w, %x[%i, %j] : memref<4x1024xf32, "fragment">
      "tile.yield"() : () -> ()
    // CHECK-NEXT: }) : (index, index) -> ()
    }) : (index, index) -> ()
    // CHECK-NEXT: "tile.copy"(%[[FRAG]], %[[Y]], %[[C0]], %[[C0]], %{{.+}}, %[[C0]]) {shape = [4, 1024]}
    "tile.copy"(%x, %Y, %c0, %c0, %bx, %c0) {shape = [4, 1024]} : (memref<4x1024xf32, "fragment">, memref<?x1024xbf16>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// CHECK-LABEL: func.func @reduce_kinds
func.func @reduce_kinds() {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // CHECK: %[[SRC:.+]] = "tile.alloc_fragment"() : () -> memref<4x64xf16, "fragment">
    // CHECK-NEXT: %[[DST:.+]] = "tile.alloc_fragment"() : () -> memref<4xf32, "fragment">
    // CHECK-NEXT: %[[ONE:.+]] = "tile.alloc_local"() : () -> memref<1xf32, "local">
    // CHECK-NEXT: %[[VEC:.+]] = "tile.alloc_shared"() : () -> memref<64xf32, "shared">
    %src = "tile.alloc_fragment"() : () -> memref<4x64xf16, "fragment">
    %dst = "tile.alloc_fragment"() : () -> memref<4xf32, "fragment">
    %one = "tile.alloc_local"() : () -> memref<1xf32, "local">
    %vec = "tile.alloc_shared"() : () -> memref<64xf32, "shared">
    // CHECK-NEXT: "tile.reduce"(%[[SRC]], %[[DST]]) {clear = true, dim = 1 : i64, kind = "sum"} : (memref<4x64xf16, "fragment">, memref<4xf32, "fragment">) -> ()
    // CHECK-NEXT: "tile.reduce"(%[[SRC]], %[[DST]]) {clear = false, dim = 1 : i64, kind = "max"}
    // CHECK-NEXT: "tile.reduce"(%[[SRC]], %[[DST]]) {clear = true, dim = 1 : i64, kind = "min"}
    // CHECK-NEXT: "tile.reduce"(%[[SRC]], %[[DST]]) {clear = true, dim = 1 : i64, kind = "abssum"}
    // CHECK-NEXT: "tile.reduce"(%[[SRC]], %[[DST]]) {clear = true, dim = 1 : i64, kind = "absmax"}
    // CHECK-NEXT: "tile.reduce"(%[[VEC]], %[[ONE]]) {clear = true, dim = 0 : i64, kind = "sum"} : (memref<64xf32, "shared">, memref<1xf32, "local">) -> ()
    "tile.reduce"(%src, %dst) {kind = "sum", dim = 1 : i64, clear = true} : (memref<4x64xf16, "fragment">, memref<4xf32, "fragment">) -> ()
    "tile.reduce"(%src, %dst) {kind = "max", dim = 1 : i64, clear = false} : (memref<4x64xf16, "fragment">, memref<4xf32, "fragment">) -> ()
    "tile.reduce"(%src, %dst) {kind = "min", dim = 1 : i64, clear = true} : (memref<4x64xf16, "fragment">, memref<4xf32, "fragment">) -> ()
    "tile.reduce"(%src, %dst) {kind = "abssum", dim = 1 : i64, clear = true} : (memref<4x64xf16, "fragment">, memref<4xf32, "fragment">) -> ()
    "tile.reduce"(%src, %dst) {kind = "absmax", dim = 1 : i64, clear = true} : (memref<4x64xf16, "fragment">, memref<4xf32, "fragment">) -> ()
    "tile.reduce"(%vec, %one) {kind = "sum", dim = 0 : i64, clear = true} : (memref<64xf32, "shared">, memref<1xf32, "local">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// CHECK-LABEL: func.func @gemm_and_pipelined
// CHECK-SAME: (%[[A:[^:]+]]: memref<?x?xf16>, %[[B:[^:]+]]: memref<?x?xf16>, %[[KT:[^:]+]]: index)
func.func @gemm_and_pipelined(%A: memref<?x?xf16>, %B: memref<?x?xf16>, %kt: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  // CHECK-DAG: %[[C0:.+]] = arith.constant 0 : index
  // CHECK-DAG: %[[C1:.+]] = arith.constant 1 : index
  "tile.kernel"(%c1, %c1) ({
  ^bb0(%bx: index, %by: index):
    // CHECK: %[[AS:.+]] = "tile.alloc_shared"() : () -> memref<128x32xf16, "shared">
    // CHECK-NEXT: %[[BS:.+]] = "tile.alloc_shared"() : () -> memref<128x32xf16, "shared">
    // CHECK-NEXT: %[[AF:.+]] = "tile.alloc_fragment"() : () -> memref<32x128xf16, "fragment">
    // CHECK-NEXT: %[[C:.+]] = "tile.alloc_fragment"() : () -> memref<128x128xf32, "fragment">
    %As = "tile.alloc_shared"() : () -> memref<128x32xf16, "shared">
    %Bs = "tile.alloc_shared"() : () -> memref<128x32xf16, "shared">
    %Af = "tile.alloc_fragment"() : () -> memref<32x128xf16, "fragment">
    %C = "tile.alloc_fragment"() : () -> memref<128x128xf32, "fragment">
    // CHECK-NEXT: %[[AR:.+]] = "tile.alloc_shared"() : () -> memref<3x32x128xf16, "shared">
    %Ar = "tile.alloc_shared"() : () -> memref<3x32x128xf16, "shared">
    // CHECK-NEXT: "tile.pipelined"(%[[C0]], %[[KT]], %[[C1]]) ({
    // CHECK-NEXT: ^bb0(%[[K:.+]]: index):
    "tile.pipelined"(%c0, %kt, %c1) ({
    ^bb0(%k: index):
      // CHECK-NEXT: "tile.copy"(%[[A]], %[[AS]], %{{.+}}, %[[K]], %[[C0]], %[[C0]]) {shape = [128, 32]}
      "tile.copy"(%A, %As, %bx, %k, %c0, %c0) {shape = [128, 32]} : (memref<?x?xf16>, memref<128x32xf16, "shared">, index, index, index, index) -> ()
      // CHECK-NEXT: "tile.copy"(%[[B]], %[[BS]], %{{.+}}, %[[K]], %[[C0]], %[[C0]]) {shape = [128, 32]}
      "tile.copy"(%B, %Bs, %by, %k, %c0, %c0) {shape = [128, 32]} : (memref<?x?xf16>, memref<128x32xf16, "shared">, index, index, index, index) -> ()
      // C[128x128] += A_s[128x32] x B_s^T[32x128]
      // CHECK-NEXT: "tile.gemm"(%[[AS]], %[[BS]], %[[C]]) {transpose_a = false, transpose_b = true}
      // CHECK-SAME: : (memref<128x32xf16, "shared">, memref<128x32xf16, "shared">, memref<128x128xf32, "fragment">) -> ()
      "tile.gemm"(%As, %Bs, %C) {transpose_a = false, transpose_b = true} : (memref<128x32xf16, "shared">, memref<128x32xf16, "shared">, memref<128x128xf32, "fragment">) -> ()
      // C[128x128] += A_f^T[128x32] x B_s^T[32x128]
      // CHECK-NEXT: "tile.gemm"(%[[AF]], %[[BS]], %[[C]]) {transpose_a = true, transpose_b = true}
      "tile.gemm"(%Af, %Bs, %C) {transpose_a = true, transpose_b = true} : (memref<32x128xf16, "fragment">, memref<128x32xf16, "shared">, memref<128x128xf32, "fragment">) -> ()
      // C[128x128] += A_ring[k mod 3]^T x B_s^T: a ring operand's tile is selected by its leading index
      // CHECK-NEXT: %[[SLOT:.+]] = arith.remui %[[K]], %{{.+}} : index
      // CHECK-NEXT: "tile.gemm"(%[[AR]], %[[BS]], %[[C]], %[[SLOT]]) {transpose_a = true, transpose_b = true}
      // CHECK-SAME: : (memref<3x32x128xf16, "shared">, memref<128x32xf16, "shared">, memref<128x128xf32, "fragment">, index) -> ()
      %slot = arith.remui %k, %c3 : index
      "tile.gemm"(%Ar, %Bs, %C, %slot) {transpose_a = true, transpose_b = true} : (memref<3x32x128xf16, "shared">, memref<128x32xf16, "shared">, memref<128x128xf32, "fragment">, index) -> ()
      // CHECK-NEXT: "tile.yield"() : () -> ()
      "tile.yield"() : () -> ()
    // CHECK-NEXT: }) {num_stages = 3 : i64} : (index, index, index) -> ()
    }) {num_stages = 3 : i64} : (index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 256 : i64} : (index, index) -> ()
  return
}

// CHECK-LABEL: func.func @atomic_add_and_assume
// CHECK-SAME: (%[[OUT:[^:]+]]: memref<?x64xf32>, %[[N:[^:]+]]: index)
func.func @atomic_add_and_assume(%Out: memref<?x64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %one = arith.constant 1.0 : f32
  // CHECK: %[[REM:.+]] = arith.remui %[[N]], %{{.+}} : index
  // CHECK-NEXT: %[[COND:.+]] = arith.cmpi eq, %[[REM]], %{{.+}} : index
  // CHECK-NEXT: "tile.assume"(%[[COND]]) {expr = "N % 128 == 0"} : (i1) -> ()
  %rem = arith.remui %n, %c128 : index
  %cond = arith.cmpi eq, %rem, %c0 : index
  "tile.assume"(%cond) {expr = "N % 128 == 0"} : (i1) -> ()
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // CHECK: %[[ACC:.+]] = "tile.alloc_fragment"() : () -> memref<4x64xf32, "fragment">
    %acc = "tile.alloc_fragment"() : () -> memref<4x64xf32, "fragment">
    // CHECK-NEXT: "tile.atomic_add"(%[[OUT]], %{{.+}}, %{{.+}}, %{{.+}}) : (memref<?x64xf32>, f32, index, index) -> ()
    "tile.atomic_add"(%Out, %one, %bx, %c0) : (memref<?x64xf32>, f32, index, index) -> ()
    // CHECK-NEXT: "tile.atomic_add"(%[[OUT]], %[[ACC]], %{{.+}}, %{{.+}}) : (memref<?x64xf32>, memref<4x64xf32, "fragment">, index, index) -> ()
    "tile.atomic_add"(%Out, %acc, %bx, %c0) : (memref<?x64xf32>, memref<4x64xf32, "fragment">, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}
