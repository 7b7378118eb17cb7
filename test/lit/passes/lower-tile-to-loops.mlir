// lower-tile-to-loops: tile-level IR to upstream loops, the CPU backend's reference meaning.
// RUN: tile-opt %s --split-input-file -p lower-tile-to-loops,canonicalize,cse | FileCheck %s

// On-chip buffers become heap buffers at the function entry (names kept, memory
// spaces gone), poisoned with NaN at the start of every block; the grid is a loop.
// The copy reads out-of-range rows as the identity of the max they feed (-inf),
// and the copy into Y drops out-of-range writes. tile.assume is gone.
// CHECK-LABEL: func.func @row_max(
// CHECK-DAG: %[[NEG_INF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[NAN:.+]] = arith.constant 0x7FC00000 : f32
// CHECK-DAG: %[[R:.+]] = memref.alloc() {alignment = 64 : i64, name = "r"} : memref<4xf32>
// CHECK-DAG: %[[X:.+]] = memref.alloc() {alignment = 64 : i64, name = "x"} : memref<4x64xf32>
// CHECK-NOT: tile.assume
// CHECK: %[[M:.+]] = memref.dim %arg0
// CHECK: %[[GRID:.+]] = arith.ceildivui %[[M]]
// CHECK: scf.for %[[BX:.+]] = %{{.+}} to %[[GRID]]
// CHECK: memref.store %[[NAN]], %[[X]]
// CHECK: memref.store %[[NAN]], %[[R]]
// CHECK: %[[ROW:.+]] = arith.muli %[[BX]]
// CHECK: arith.cmpi slt, %{{.+}}, %[[M]] : index
// CHECK: scf.if %{{.+}} -> (f32) {
// CHECK-NEXT: memref.load %arg0
// CHECK-NEXT: scf.yield
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[NEG_INF]] : f32
// CHECK: scf.for {{.+}} iter_args(%[[ACC:.+]] = %[[NEG_INF]]) -> (f32) {
// CHECK: arith.maxnumf %[[ACC]]
// CHECK: memref.store {{.+}}, %[[R]]
// CHECK: scf.if
// CHECK-NEXT: memref.store {{.+}}, %arg1
// CHECK: memref.dealloc %[[X]]
// CHECK: memref.dealloc %[[R]]
// CHECK-NEXT: return
func.func @row_max(%X: memref<?x64xf32>, %Y: memref<?xf32>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %M = memref.dim %X, %c0 : memref<?x64xf32>
  %gx = arith.ceildivui %M, %c4 : index
  %ok = arith.cmpi sgt, %M, %c0 : index
  "tile.assume"(%ok) {expr = "M > 0"} : (i1) -> ()
  "tile.kernel"(%gx) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<4x64xf32, "fragment">
    %r = "tile.alloc_fragment"() {name = "r"} : () -> memref<4xf32, "fragment">
    %row = arith.muli %bx, %c4 : index
    "tile.copy"(%X, %x, %row, %c0, %c0, %c0) {shape = [4, 64]} : (memref<?x64xf32>, memref<4x64xf32, "fragment">, index, index, index, index) -> ()
    "tile.reduce"(%x, %r) {kind = "max", dim = 1 : i64, clear = true} : (memref<4x64xf32, "fragment">, memref<4xf32, "fragment">) -> ()
    "tile.copy"(%r, %Y, %c0, %row) {shape = [4]} : (memref<4xf32, "fragment">, memref<?xf32>, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// tile.pipelined is a serial loop; gemm accumulates in f32 over k ascending
// (loops m, k, n), honoring transpose_b; atomic_add of a tile is a guarded
// read-modify-write of each element; fill is a loop of stores.
// CHECK-LABEL: func.func @gemm_atomic(
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[ACC:.+]] = memref.alloc() {{.+}}name = "acc"} : memref<8x16xf32>
// CHECK-DAG: %[[B:.+]] = memref.alloc() {{.+}}name = "b"} : memref<16x8xf16>
// CHECK-DAG: %[[A:.+]] = memref.alloc() {{.+}}name = "a"} : memref<8x8xf16>
// CHECK: memref.store %[[ZERO]], %[[ACC]]
// CHECK: scf.for %{{.+}} = %c0 to %c2 step %c1 {
// CHECK: %[[AV:.+]] = memref.load %[[A]][%[[M:arg[0-9]+]], %[[K:arg[0-9]+]]] : memref<8x8xf16>
// CHECK-NEXT: %[[AF:.+]] = arith.extf %[[AV]] : f16 to f32
// CHECK-NEXT: scf.for %[[N:.+]] = %c0 to %c16
// CHECK-NEXT: %[[BV:.+]] = memref.load %[[B]][%[[N]], %[[K]]]
// CHECK-NEXT: %[[BF:.+]] = arith.extf %[[BV]] : f16 to f32
// CHECK-NEXT: %[[OLD:.+]] = memref.load %[[ACC]][%[[M]], %[[N]]]
// CHECK-NEXT: %[[P:.+]] = arith.mulf %[[AF]], %[[BF]] : f32
// CHECK-NEXT: %[[S:.+]] = arith.addf %[[OLD]], %[[P]] : f32
// CHECK-NEXT: memref.store %[[S]], %[[ACC]][%[[M]], %[[N]]]
// CHECK: %[[V:.+]] = memref.load %[[ACC]]
// CHECK: scf.if
// CHECK-NEXT: %[[G:.+]] = memref.load %arg2
// CHECK-NEXT: %[[SUM:.+]] = arith.addf %[[G]], %[[V]] : f32
// CHECK-NEXT: memref.store %[[SUM]], %arg2
func.func @gemm_atomic(%A: memref<?x8xf16>, %B: memref<16x8xf16>, %C: memref<?x16xf32>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %M = memref.dim %A, %c0 : memref<?x8xf16>
  %gx = arith.ceildivui %M, %c8 : index
  "tile.kernel"(%gx) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "a"} : () -> memref<8x8xf16, "shared">
    %b = "tile.alloc_shared"() {name = "b"} : () -> memref<16x8xf16, "shared">
    %acc = "tile.alloc_fragment"() {name = "acc"} : () -> memref<8x16xf32, "fragment">
    %row = arith.muli %bx, %c8 : index
    "tile.fill"(%acc, %zero) : (memref<8x16xf32, "fragment">, f32) -> ()
    "tile.pipelined"(%c0, %c2, %c1) ({
    ^bb0(%k: index):
      "tile.copy"(%A, %a, %row, %c0, %c0, %c0) {shape = [8, 8]} : (memref<?x8xf16>, memref<8x8xf16, "shared">, index, index, index, index) -> ()
      "tile.copy"(%B, %b, %c0, %c0, %c0, %c0) {shape = [16, 8]} : (memref<16x8xf16>, memref<16x8xf16, "shared">, index, index, index, index) -> ()
      "tile.gemm"(%a, %b, %acc) {transpose_a = false, transpose_b = true} : (memref<8x8xf16, "shared">, memref<16x8xf16, "shared">, memref<8x16xf32, "fragment">) -> ()
      "tile.yield"() : () -> ()
    }) {num_stages = 2 : i64} : (index, index, index) -> ()
    "tile.atomic_add"(%C, %acc, %row, %c0) : (memref<?x16xf32>, memref<8x16xf32, "fragment">, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}
