// tma-copies: plan-pipeline's tile.tma ring copies (kept whole to the thread level) become thread 0's TMA boxes,
// one arrive_expect_tx of the tile's bytes per slot on a `full` mbarrier, and every thread's parity wait after
// the loop issues the next tile.
// RUN: tile-opt %s --split-input-file -p tma-copies | FileCheck %s
// The output verifies and re-parses.
// RUN: tile-opt %s --split-input-file -p tma-copies | tile-opt --split-input-file -o /dev/null

// Two stages, three rings: A in one 128-byte panel, B (256-byte rows) in two panels, X unswizzled in one box.
// CHECK-LABEL: func.func @three_rings
// CHECK-SAME: tile.tensor_maps = {A_map = {box = [64, 64], swizzle = 128 : i64, tensor = 0 : i64}, B_map = {box = [64, 64], swizzle = 128 : i64, tensor = 1 : i64}, X_map = {box = [16, 32], swizzle = 0 : i64, tensor = 2 : i64}}
// CHECK: gpu.launch
// The barriers: thread 0 initializes them (one arrival a phase) and fences the inits; then every thread syncs.
// CHECK: %[[FULL:.+]] = memref.alloca() {name = "full"} : memref<2xi64, "shared">
// CHECK-NEXT: %[[TID:.+]] = gpu.thread_id x upper_bound 128
// CHECK-NEXT: %[[ELECTED:.+]] = arith.cmpi eq, %[[TID]], %[[Z:.+]] : index
// CHECK-NEXT: scf.if %[[ELECTED]] {
// CHECK-NEXT: "tile.mbarrier_init"(%[[FULL]], %[[Z]]) {count = 1 : i64}
// CHECK-NEXT: "tile.mbarrier_init"(%[[FULL]], %{{.+}}) {count = 1 : i64}
// CHECK-NEXT: "tile.fence_mbarrier_init"()
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK: %[[A:.+]] = memref.alloca() {name = "A_s"
// CHECK: %[[B:.+]] = memref.alloca() {name = "B_s"
// CHECK: %[[X:.+]] = memref.alloca() {name = "X_s"
// Tile 0: 8192 + 16384 + 2048 bytes on full[0]; B's second panel at column 64 of the tile and of the tensor.
// (Tile 0's slot and coordinates are the function's zero, the tile's origin the launch's.)
// CHECK: scf.if
// CHECK: %[[TID0:.+]] = gpu.thread_id x
// CHECK-NEXT: %[[ELECTED0:.+]] = arith.cmpi eq, %[[TID0]], %[[Z]] : index
// CHECK-NEXT: scf.if %[[ELECTED0]] {
// CHECK-NEXT: "tile.mbarrier_arrive_expect_tx"(%[[FULL]], %[[C0:.+]]) {bytes = 26624 : i64}
// CHECK-NEXT: "tile.tma_load"(%[[A]], %[[FULL]], %[[C0]], %[[Z]], %[[Z]], %[[C0]], %[[C0]], %[[Z]]) {map = "A_map"}
// CHECK-NEXT: "tile.tma_load"(%[[B]], %[[FULL]], %[[C0]], %[[Z]], %[[Z]], %[[C0]], %[[C0]], %[[Z]]) {map = "B_map"}
// CHECK-NEXT: "tile.tma_load"(%[[B]], %[[FULL]], %[[C0]], %[[Z]], %[[C64:.+]], %[[C0]], %[[C0]], %[[C64]]) {map = "B_map"}
// CHECK-NEXT: "tile.tma_load"(%[[X]], %[[FULL]], %[[C0]], %[[Z]], %[[Z]], %[[C0]], %[[C0]], %[[Z]]) {map = "X_map"}
// CHECK-NEXT: }
// CHECK-NOT: "tile.copy"
// Iteration k: the barrier, tile k + 1 into slot (k + 1) mod 2, then the wait for tile k: full[k mod 2], parity (k / 2) mod 2.
// CHECK: scf.for %[[K:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK-NEXT: gpu.barrier
// CHECK: %[[SLOT1:.+]] = arith.remui
// CHECK: scf.if
// CHECK: scf.if %{{.+}} {
// CHECK-NEXT: "tile.mbarrier_arrive_expect_tx"(%[[FULL]], %[[SLOT1]]) {bytes = 26624 : i64}
// CHECK-NEXT: "tile.tma_load"(%[[A]], %[[FULL]], %[[SLOT1]], %[[Z]], %[[Z]], %[[SLOT1]], %[[ROW:.+]], %[[Z]]) {map = "A_map"}
// CHECK-NEXT: "tile.tma_load"(%[[B]], %[[FULL]], %[[SLOT1]], %[[Z]], %[[Z]], %[[SLOT1]], %[[ROW]], %[[Z]]) {map = "B_map"}
// CHECK-NEXT: "tile.tma_load"(%[[B]], %[[FULL]], %[[SLOT1]], %[[Z]], %[[C64]], %[[SLOT1]], %[[ROW]], %[[C64]]) {map = "B_map"}
// CHECK-NEXT: "tile.tma_load"(%[[X]], %[[FULL]], %[[SLOT1]], %[[Z]], %[[Z]], %[[SLOT1]], %{{.+}}, %[[Z]]) {map = "X_map"}
// CHECK-NEXT: }
// CHECK-NEXT: }
// (t = k: the loop starts at 0 with step 1.)
// CHECK-NEXT: %[[SLOT:.+]] = arith.remui %[[K]], %[[C2:.+]] : index
// CHECK-NEXT: %[[PHASE:.+]] = arith.divui %[[K]], %[[C2]] : index
// CHECK-NEXT: %[[PARITY:.+]] = arith.remui %[[PHASE]], %[[C2]] : index
// CHECK-NEXT: "tile.mbarrier_wait"(%[[FULL]], %[[SLOT]], %[[PARITY]])
// CHECK-NEXT: arith.remui
// CHECK-NEXT: memref.load %[[A]]
// CHECK-NOT: "tile.copy"
func.func @three_rings(%A: memref<?x64xbf16>, %B: memref<4096x128xbf16>, %X: memref<?x32xf32>) attributes {tile.entry, tile.arg_names = ["A", "B", "X"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %rows = memref.dim %A, %c0 : memref<?x64xbf16>
  %n = arith.divui %rows, %c64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %a = memref.alloca() {name = "A_s", tile.ring, tile.swizzle = 128 : i64} : memref<2x64x64xbf16, "shared">
    %b = memref.alloca() {name = "B_s", tile.ring, tile.swizzle = 128 : i64} : memref<2x64x128xbf16, "shared">
    %x = memref.alloca() {name = "X_s", tile.ring} : memref<2x16x32xf32, "shared">
    %first = arith.cmpi ult, %c0, %n : index
    scf.if %first {
      "tile.copy"(%A, %a, %c0, %c0, %c0, %c0, %c0) {shape = [1, 64, 64], tile.tma} : (memref<?x64xbf16>, memref<2x64x64xbf16, "shared">, index, index, index, index, index) -> ()
      "tile.copy"(%B, %b, %c0, %c0, %c0, %c0, %c0) {shape = [1, 64, 128], tile.tma} : (memref<4096x128xbf16>, memref<2x64x128xbf16, "shared">, index, index, index, index, index) -> ()
      "tile.copy"(%X, %x, %c0, %c0, %c0, %c0, %c0) {shape = [1, 16, 32], tile.tma} : (memref<?x32xf32>, memref<2x16x32xf32, "shared">, index, index, index, index, index) -> ()
    }
    scf.for %k = %c0 to %n step %c1 {
      gpu.barrier
      %next = arith.addi %k, %c1 : index
      %slot1 = arith.remui %next, %c2 : index
      %more = arith.cmpi ult, %next, %n : index
      scf.if %more {
        %row = arith.muli %next, %c64 : index
        "tile.copy"(%A, %a, %row, %c0, %slot1, %c0, %c0) {shape = [1, 64, 64], tile.tma} : (memref<?x64xbf16>, memref<2x64x64xbf16, "shared">, index, index, index, index, index) -> ()
        "tile.copy"(%B, %b, %row, %c0, %slot1, %c0, %c0) {shape = [1, 64, 128], tile.tma} : (memref<4096x128xbf16>, memref<2x64x128xbf16, "shared">, index, index, index, index, index) -> ()
        %xrow = arith.muli %next, %c16 : index
        "tile.copy"(%X, %x, %xrow, %c0, %slot1, %c0, %c0) {shape = [1, 16, 32], tile.tma} : (memref<?x32xf32>, memref<2x16x32xf32, "shared">, index, index, index, index, index) -> ()
      }
      %slot = arith.remui %k, %c2 : index
      %v = memref.load %a[%slot, %tx, %c0] : memref<2x64x64xbf16, "shared">
      %w = memref.load %b[%slot, %tx, %c0] : memref<2x64x128xbf16, "shared">
      %u = memref.load %x[%slot, %c0, %c0] : memref<2x16x32xf32, "shared">
    } {tile.num_stages = 2 : i64}
    gpu.terminator
  }
  return
}
