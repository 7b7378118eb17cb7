// tma-stores: select-tma-stores' tile.tma_store copies (kept whole to the thread level) become thread 0's TMA
// boxes, one per swizzle panel, committed and read-waited, after a proxy fence before the planned barrier.
// RUN: tile-opt %s --split-input-file -p tma-stores | FileCheck %s
// The output verifies and re-parses.
// RUN: tile-opt %s --split-input-file -p tma-stores | tile-opt --split-input-file -o /dev/null

// 256-byte bf16 rows: two 128-byte panels, the second at tile column 64 and tensor column col + 64; the tensor's
// map is declared beside the one a load already declared.
// CHECK-LABEL: func.func @two_panels
// CHECK-SAME: tile.tensor_maps = {A_map = {box = [64, 64], swizzle = 128 : i64, tensor = 0 : i64}, C_map = {box = [64, 64], swizzle = 128 : i64, tensor = 1 : i64}}
// CHECK: %[[CS:.+]] = memref.alloca() {name = "C_s", tile.swizzle = 128 : i64}
// CHECK: memref.store
// CHECK-NEXT: "tile.fence_proxy_async"() : () -> ()
// CHECK-NEXT: gpu.barrier
// CHECK: %[[TID:.+]] = gpu.thread_id x upper_bound 128
// CHECK-NEXT: %[[ELECTED:.+]] = arith.cmpi eq, %[[TID]], %[[Z:.+]] : index
// CHECK-NEXT: scf.if %[[ELECTED]] {
// CHECK-NEXT: "tile.tma_store"(%[[CS]], %[[Z]], %[[Z]], %[[ROW:.+]], %[[COL:[^)]+]]) {map = "C_map"}
// CHECK-NEXT: %[[COL64:.+]] = arith.addi %[[COL]], %[[C64:.+]] : index
// CHECK-NEXT: "tile.tma_store"(%[[CS]], %[[Z]], %[[C64]], %[[ROW]], %[[COL64]]) {map = "C_map"}
// CHECK-NEXT: "tile.bulk_commit_group"() : () -> ()
// CHECK-NEXT: "tile.bulk_wait_group_read"() {pending = 0 : i64} : () -> ()
// CHECK-NEXT: }
// CHECK-NOT: "tile.copy"
func.func @two_panels(%A: memref<?x64xbf16>, %C: memref<?x1024xbf16>) attributes {tile.entry, tile.arg_names = ["A", "C"], tile.tensor_maps = {A_map = {box = [64, 64], swizzle = 128 : i64, tensor = 0 : i64}}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c4, %gy = %c4, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %cs = memref.alloca() {name = "C_s", tile.swizzle = 128 : i64} : memref<64x128xbf16, "shared">
    %v = arith.constant 1.0 : bf16
    %r = arith.remui %tx, %c64 : index
    memref.store %v, %cs[%r, %c0] : memref<64x128xbf16, "shared">
    gpu.barrier
    %row = arith.muli %by, %c64 : index
    %col = arith.muli %bx, %c128 : index
    "tile.copy"(%cs, %C, %c0, %c0, %row, %col) {shape = [64, 128], tile.tma_store} : (memref<64x128xbf16, "shared">, memref<?x1024xbf16>, index, index, index, index) -> ()
    gpu.terminator
  }
  return
}

// -----

// A fence already before the barrier (lower-gemm-mma's, in a launch with wgmma) is not repeated; an unswizzled
// f32 tile is one box of the whole tile.
// CHECK-LABEL: func.func @fenced
// CHECK-SAME: tile.tensor_maps = {C_map = {box = [16, 16], swizzle = 0 : i64, tensor = 0 : i64}}
// CHECK: "tile.fence_proxy_async"() : () -> ()
// CHECK-NEXT: gpu.barrier
// CHECK-NOT: "tile.fence_proxy_async"
// CHECK: "tile.tma_store"
// CHECK-NOT: "tile.tma_store"
// CHECK: "tile.bulk_commit_group"
func.func @fenced(%C: memref<?x64xf32>) attributes {tile.entry, tile.arg_names = ["C"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %cs = memref.alloca() {name = "C_s"} : memref<16x16xf32, "shared">
    %v = arith.constant 1.0 : f32
    %r = arith.remui %tx, %c16 : index
    memref.store %v, %cs[%r, %c0] : memref<16x16xf32, "shared">
    "tile.fence_proxy_async"() : () -> ()
    gpu.barrier
    "tile.copy"(%cs, %C, %c0, %c0, %c0, %c16) {shape = [16, 16], tile.tma_store} : (memref<16x16xf32, "shared">, memref<?x64xf32>, index, index, index, index) -> ()
    gpu.terminator
  }
  return
}

// -----

// Two slabs: the first store's read-wait stands just before the barrier (and fence) that precedes the second
// store, so the TMA engine reads slab 0 while the threads write slab 1; the last store's wait follows its commit.
// CHECK-LABEL: func.func @slabs
// CHECK: "tile.tma_store"(%[[S0:[^,]+]],
// CHECK-NEXT: "tile.bulk_commit_group"
// CHECK-NEXT: }
// CHECK-NEXT: memref.store %{{.+}}, %[[S1:alloca_[0-9]+]][
// CHECK-NEXT: scf.if
// CHECK-NEXT: "tile.bulk_wait_group_read"() {pending = 0 : i64}
// CHECK-NEXT: }
// CHECK-NEXT: "tile.fence_proxy_async"
// CHECK-NEXT: gpu.barrier
// CHECK: scf.if
// CHECK-NEXT: "tile.tma_store"(%[[S1]],
// CHECK-NEXT: "tile.bulk_commit_group"
// CHECK-NEXT: "tile.bulk_wait_group_read"() {pending = 0 : i64}
func.func @slabs(%C: memref<?x64xf32>) attributes {tile.entry, tile.arg_names = ["C"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %s0 = memref.alloca() {name = "S0"} : memref<16x16xf32, "shared">
    %s1 = memref.alloca() {name = "S1"} : memref<16x16xf32, "shared">
    %v = arith.constant 1.0 : f32
    %r = arith.remui %tx, %c16 : index
    memref.store %v, %s0[%r, %c0] : memref<16x16xf32, "shared">
    "tile.fence_proxy_async"() : () -> ()
    gpu.barrier
    "tile.copy"(%s0, %C, %c0, %c0, %c0, %c0) {shape = [16, 16], tile.tma_store} : (memref<16x16xf32, "shared">, memref<?x64xf32>, index, index, index, index) -> ()
    memref.store %v, %s1[%r, %c0] : memref<16x16xf32, "shared">
    gpu.barrier
    "tile.copy"(%s1, %C, %c0, %c0, %c0, %c16) {shape = [16, 16], tile.tma_store} : (memref<16x16xf32, "shared">, memref<?x64xf32>, index, index, index, index) -> ()
    gpu.terminator
  }
  return
}
