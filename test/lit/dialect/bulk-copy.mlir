// The TMA, mbarrier and bulk-group ops: parse, print, re-parse the printed form; the generic form round-trips too.
// RUN: tile-opt %s | tile-opt | FileCheck %s
// RUN: tile-opt %s --mlir-print-op-generic | tile-opt | FileCheck %s

// CHECK-LABEL: func.func @bulk_copies
func.func @bulk_copies(%A: memref<?x4096xbf16>, %C: memref<?x4096xbf16>) attributes {tile.entry, tile.tensor_maps = {A_map = {box = [128, 64], swizzle = 128 : i64, tensor = 0 : i64}, C_map = {box = [128, 64], swizzle = 128 : i64, tensor = 1 : i64}}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %a = memref.alloca() {name = "A_s", tile.swizzle = 128 : i64} : memref<3x128x64xbf16, "shared">
    %full = memref.alloca() {name = "full"} : memref<3xi64, "shared">
    // CHECK: "tile.mbarrier_init"(%{{.+}}, %{{.+}}) {count = 1 : i64} : (memref<3xi64, "shared">, index) -> ()
    "tile.mbarrier_init"(%full, %c0) {count = 1 : i64} : (memref<3xi64, "shared">, index) -> ()
    // CHECK: "tile.fence_mbarrier_init"() : () -> ()
    "tile.fence_mbarrier_init"() : () -> ()
    // CHECK: "tile.mbarrier_arrive_expect_tx"(%{{.+}}, %{{.+}}) {bytes = 16384 : i64}
    "tile.mbarrier_arrive_expect_tx"(%full, %c0) {bytes = 16384 : i64} : (memref<3xi64, "shared">, index) -> ()
    // CHECK: "tile.tma_load"(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) {map = "A_map"}
    "tile.tma_load"(%a, %full, %c1, %c0, %c0, %c0, %c128, %c0) {map = "A_map"} : (memref<3x128x64xbf16, "shared">, memref<3xi64, "shared">, index, index, index, index, index, index) -> ()
    // CHECK: "tile.mbarrier_wait"(%{{.+}}, %{{.+}}, %{{.+}}) : (memref<3xi64, "shared">, index, index) -> ()
    "tile.mbarrier_wait"(%full, %c0, %c0) : (memref<3xi64, "shared">, index, index) -> ()
    // CHECK: "tile.mbarrier_arrive"(%{{.+}}, %{{.+}}) : (memref<3xi64, "shared">, index) -> ()
    "tile.mbarrier_arrive"(%full, %c0) : (memref<3xi64, "shared">, index) -> ()
    // CHECK: "tile.tma_store"(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) {map = "C_map"} : (memref<3x128x64xbf16, "shared">, index, index, index, index, index) -> ()
    "tile.tma_store"(%a, %c1, %c0, %c0, %c128, %c0) {map = "C_map"} : (memref<3x128x64xbf16, "shared">, index, index, index, index, index) -> ()
    // CHECK: "tile.bulk_commit_group"() : () -> ()
    "tile.bulk_commit_group"() : () -> ()
    // CHECK: "tile.bulk_wait_group_read"() {pending = 1 : i64} : () -> ()
    "tile.bulk_wait_group_read"() {pending = 1 : i64} : () -> ()
    gpu.terminator
  }
  return
}
