// lower-tile-to-loops: tile-level IR to upstream loops, the CPU backend's reference meaning.
// RUN: tile-opt %s --split-input-file -p lower-tile-to-loops,canonicalize,cse | FileCheck %s

// On-chip buffers become heap buffers at the function entry (names kept, memory
// spaces gone), poisoned with NaN at the start of every block; the grid is a loop.
// The copy reads out-of-range rows as the identity of the max they feed (-inf),
// and the copy into Y drops out-of-range writes, reading nothing for them. tile.assume is gone.
// Every on-chip access is checked at run time. These are in range by construction
// (loop indices within the buffers), so no bounds check is built; a store sets the
// element's never-written byte (cleared at each block start), a load folds it into
// its site's lowest never-written index and count (no branch), which the block's end
// records; each site's message, with its source line, is in tile.sim_sites.
// The recorder: the first error (or the first after a weak one) fills the status words.
// CHECK-LABEL: func.func private @row_max__record_error(
// CHECK-SAME: %[[R_STATUS:[^:]+]]: memref<8xi64>, %[[R_STATE:[^:]+]]: memref<2xi64>, %[[SITE:[^:]+]]: i64, %{{[^:]+}}: i64, %{{[^:]+}}: i64, %[[INDEX:[^:]+]]: i64, %[[WEAK:[^:]+]]: i64, %[[N:[^:]+]]: i64) attributes {llvm.noinline} {
// CHECK: %[[ERRORS:.+]] = memref.load %[[R_STATUS]][%c0]
// CHECK: scf.if
// CHECK: memref.store %[[SITE]], %[[R_STATUS]][%c1]
// CHECK: memref.store %[[INDEX]], %[[R_STATUS]][%c5]
// CHECK: memref.store %[[WEAK]], %[[R_STATUS]][%c6]
// CHECK: %[[TOTAL:.+]] = arith.addi %[[ERRORS]], %[[N]] : i64
// CHECK-NEXT: memref.store %[[TOTAL]], %[[R_STATUS]][%c0]
// CHECK-LABEL: func.func @row_max(
// CHECK-SAME: %[[STATUS:[^:]+]]: memref<8xi64>) attributes {tile.entry, tile.sim_sites = [
// CHECK-SAME: "read of never-written element {index:4x64} of fragment buffer 'x' (4x64) at {{[^"]+}}lower-tile-to-loops.mlir:{{[0-9]+}}:5 by block {block}: the block had not stored to it",
// CHECK-NOT: out-of-range
// CHECK-DAG: %[[NEG_INF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[NAN:.+]] = arith.constant 0x7FC00000 : f32
// CHECK-DAG: %[[ZERO8:.+]] = arith.constant 0 : i8
// CHECK-DAG: %[[ONE8:.+]] = arith.constant 1 : i8
// CHECK-DAG: %[[RW:.+]] = memref.alloc() {alignment = 64 : i64} : memref<4xi8>
// CHECK-DAG: %[[R:.+]] = memref.alloc() {alignment = 64 : i64, name = "r"} : memref<4xf32>
// CHECK-DAG: %[[XW:.+]] = memref.alloc() {alignment = 64 : i64} : memref<4x64xi8>
// CHECK-DAG: %[[X:.+]] = memref.alloc() {alignment = 64 : i64, name = "x"} : memref<4x64xf32>
// CHECK-DAG: %[[STATE:.+]] = memref.alloc() {alignment = 64 : i64} : memref<2xi64>
// CHECK-NOT: tile.assume
// CHECK: %[[M:.+]] = memref.dim %arg0
// CHECK: %[[GRID:.+]] = arith.ceildivui %[[M]]
// CHECK: scf.for %[[BX:.+]] = %{{.+}} to %[[GRID]]
// CHECK: memref.store %[[NAN]], %[[X]]
// CHECK: memref.store %[[NAN]], %[[R]]
// CHECK: %[[BLOCK:.+]] = arith.index_cast %[[BX]] : index to i64
// CHECK-NEXT: memref.store %[[BLOCK]], %[[STATE]]
// CHECK: memref.store %[[ZERO8]], %[[XW]]
// CHECK: memref.store %[[ZERO8]], %[[RW]]
// CHECK: %[[ROW:.+]] = arith.muli %[[BX]]
// CHECK: arith.cmpi slt, %{{.+}}, %[[M]] : index
// CHECK: %[[V:.+]] = scf.if %{{.+}} -> (f32) {
// CHECK-NEXT: memref.load %arg0
// CHECK-NEXT: scf.yield
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[NEG_INF]] : f32
// CHECK: memref.store %[[ONE8]], %[[XW]][%[[I:.+]], %[[J:.+]]] : memref<4x64xi8>
// CHECK-NEXT: memref.store %[[V]], %[[X]][%[[I]], %[[J]]] : memref<4x64xf32>
// CHECK: scf.for {{.+}} iter_args(%[[ACC:.+]] = %[[NEG_INF]]) -> (f32) {
// CHECK-NEXT: %[[XV:.+]] = memref.load %[[X]][%[[I:.+]], %[[J:.+]]] : memref<4x64xf32>
// CHECK-NEXT: %[[WRITTEN:.+]] = memref.load %[[XW]][%[[I]], %[[J]]] : memref<4x64xi8>
// CHECK: %[[ELEMENT:.+]] = arith.index_cast %{{.+}} : index to i32
// CHECK-NEXT: %[[WRITTEN32:.+]] = arith.extui %[[WRITTEN]] : i8 to i32
// CHECK-NEXT: %[[FLAG:.+]] = arith.shli %[[WRITTEN32]], %c30_i32 : i32
// CHECK-NEXT: %[[CANDIDATE:.+]] = arith.addi %[[ELEMENT]], %[[FLAG]] : i32
// CHECK-NEXT: %[[LOWEST:.+]] = memref.load %[[X_LOWEST:alloca[_0-9]*]][%c0] : memref<1xi32>
// CHECK-NEXT: %[[MIN:.+]] = arith.minsi %[[LOWEST]], %[[CANDIDATE]] : i32
// CHECK-NEXT: memref.store %[[MIN]], %[[X_LOWEST]]
// CHECK-NEXT: %[[UNWRITTEN:.+]] = arith.subi %c1_i32, %[[WRITTEN32]] : i32
// CHECK-NEXT: %[[COUNT:.+]] = memref.load %[[X_COUNT:alloca[_0-9]*]][%c0] : memref<1xi32>
// CHECK-NEXT: %[[MORE:.+]] = arith.addi %[[COUNT]], %[[UNWRITTEN]] : i32
// CHECK-NEXT: memref.store %[[MORE]], %[[X_COUNT]]
// CHECK-NEXT: arith.maxnumf %[[ACC]], %[[XV]]
// CHECK: memref.store %[[ONE8]], %[[RW]]
// CHECK-NEXT: memref.store {{.+}}, %[[R]]
// CHECK: %[[IN_Y:.+]] = arith.andi
// CHECK-NEXT: scf.if %[[IN_Y]] {
// CHECK-NEXT: %[[RV:.+]] = memref.load %[[R]]
// CHECK: memref.store %[[RV]], %arg1
// The block's end: x's never-written reads, if any, are recorded (site 0, the lowest
// element, weak, that many) by the function's out-of-line recorder.
// CHECK: %[[READS:.+]] = memref.load %[[X_COUNT]]
// CHECK-NEXT: %[[ANY:.+]] = arith.cmpi ne, %[[READS]], %c0_i32 : i32
// CHECK-NEXT: scf.if %[[ANY]] {
// CHECK-NEXT: %[[FIRST32:.+]] = memref.load %[[X_LOWEST]]
// CHECK-NEXT: %[[FIRST:.+]] = arith.extsi %[[FIRST32]] : i32 to i64
// CHECK-NEXT: %[[TIMES:.+]] = arith.extsi %[[READS]] : i32 to i64
// CHECK-NEXT: func.call @row_max__record_error(%[[STATUS]], %[[STATE]], %c0_i64, %c0_i64, %c0_i64, %[[FIRST]], %c1_i64, %[[TIMES]])
// CHECK: memref.dealloc %[[X]]
// CHECK: memref.dealloc %[[R]]
// CHECK: return
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
// read-modify-write of each element; fill is a loop of stores. Each shared and
// fragment load is followed by its never-written bookkeeping, each store by its byte.
// CHECK-LABEL: func.func @gemm_atomic(
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[ACC:.+]] = memref.alloc() {{.+}}name = "acc"} : memref<8x16xf32>
// CHECK-DAG: %[[B:.+]] = memref.alloc() {{.+}}name = "b"} : memref<16x8xf16>
// CHECK-DAG: %[[A:.+]] = memref.alloc() {{.+}}name = "a"} : memref<8x8xf16>
// CHECK: memref.store %[[ZERO]], %[[ACC]]
// CHECK: scf.for %{{.+}} = %c0 to %c2 step %c1 {
// CHECK: memref.store %{{.+}}, %[[A]]
// CHECK: memref.store %{{.+}}, %[[B]]
// CHECK: %[[AV:.+]] = memref.load %[[A]][%[[M:arg[0-9]+]], %[[K:arg[0-9]+]]] : memref<8x8xf16>
// CHECK-NEXT: memref.load %{{.+}}[%[[M]], %[[K]]] : memref<8x8xi8>
// CHECK: %[[AF:.+]] = arith.extf %[[AV]] : f16 to f32
// CHECK-NEXT: scf.for %[[N:.+]] = %c0 to %c16
// CHECK-NEXT: %[[BV:.+]] = memref.load %[[B]][%[[N]], %[[K]]]
// CHECK: %[[BF:.+]] = arith.extf %[[BV]] : f16 to f32
// CHECK-NEXT: %[[OLD:.+]] = memref.load %[[ACC]][%[[M]], %[[N]]]
// CHECK: %[[P:.+]] = arith.mulf %[[AF]], %[[BF]] : f32
// CHECK-NEXT: %[[S:.+]] = arith.addf %[[OLD]], %[[P]] : f32
// CHECK-NEXT: memref.store %{{.+}}, %{{.+}}[%[[M]], %[[N]]] : memref<8x16xi8>
// CHECK-NEXT: memref.store %[[S]], %[[ACC]][%[[M]], %[[N]]]
// CHECK: %[[V:.+]] = memref.load %[[ACC]]
// CHECK: memref.dim %arg2
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

// -----

// An on-chip index the IR does not bound is checked: out of range, the load does not
// happen (it yields NaN) and the error, with the index and its dim, goes to the status.
// CHECK-LABEL: func.func @pick(
// CHECK-SAME: %[[K:[^:]+]]: index, %[[STATUS:[^:]+]]: memref<8xi64>)
// CHECK-SAME: "out-of-range read of local buffer 'r' (4) at {{[^"]+}}lower-tile-to-loops.mlir:{{[0-9]+}}:10: block {block} used index {index} on dim {other}"
// CHECK: %[[NONNEG:.+]] = arith.cmpi sge, %[[K]], %c0 : index
// CHECK-NEXT: %[[BELOW:.+]] = arith.cmpi slt, %[[K]], %c4 : index
// CHECK-NEXT: %[[INSIDE:.+]] = arith.andi %[[NONNEG]], %[[BELOW]] : i1
// CHECK-NEXT: %[[V:.+]] = scf.if %[[INSIDE]] -> (f32) {
// CHECK-NEXT: memref.load %{{.+}}[%[[K]]] : memref<4xf32>
// CHECK: } else {
// CHECK-NEXT: %[[BAD:.+]] = arith.index_cast %[[K]] : index to i64
// CHECK-NEXT: func.call @pick__record_error(%[[STATUS]], %{{.+}}, %c0_i64, %c0_i64, %c0_i64, %[[BAD]], %c0_i64, %c1_i64)
// CHECK-NEXT: scf.yield %cst : f32
// CHECK: memref.store %[[V]], %arg0
func.func @pick(%Y: memref<1xf32>, %k: index) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %one = arith.constant 1.0 : f32
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %r = "tile.alloc_local"() {name = "r"} : () -> memref<4xf32, "local">
    "tile.fill"(%r, %one) : (memref<4xf32, "local">, f32) -> ()
    %v = memref.load %r[%k] : memref<4xf32, "local">
    memref.store %v, %Y[%c0] : memref<1xf32>
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

// tile.rasterization (T.use_swizzle): the block loops' indices feed the remap of rewriting/rasterization.py,
// as on the GPU, and the body reads its coordinates (here a 5 x 3 grid in panels of 2 rows).
// CHECK-LABEL: func.func @rasterized(
// CHECK: scf.for %[[BX:.+]] = %c0 to %c5 step %c1 {
// CHECK-NEXT: scf.for %[[BY:.+]] = %c0 to %c3 step %c1 {
// CHECK: %[[YX:.+]] = arith.muli %[[BY]], %c5 : index
// CHECK: %[[ID:.+]] = arith.addi %[[BX]], %[[YX]] : index
// CHECK: %[[PANEL:.+]] = arith.divui %[[ID]], %c10 : index
// CHECK: %[[MIRROR:.+]] = arith.subi %c4, %[[STEP:.+]] : index
// CHECK-NEXT: %[[X:.+]] = arith.select %{{.+}}, %[[MIRROR]], %[[STEP]] : index
// CHECK-NEXT: %[[BASE:.+]] = arith.muli %[[PANEL]], %c2 : index
// CHECK: %[[Y:.+]] = arith.addi %{{.+}}, %[[BASE]] : index
// CHECK: scf.if
// CHECK-NEXT: memref.store %{{.+}}, %arg0[%[[Y]], %[[X]]] : memref<3x5xi32>
func.func @rasterized(%out: memref<3x5xi32>) attributes {tile.entry} {
  %c5 = arith.constant 5 : index
  %c3 = arith.constant 3 : index
  "tile.kernel"(%c5, %c3) ({
  ^bb0(%bx: index, %by: index):
    %one = arith.constant 1 : i32
    memref.store %one, %out[%by, %bx] : memref<3x5xi32>
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64, tile.rasterization = {order = "row", panel = 2 : i64}} : (index, index) -> ()
  return
}
