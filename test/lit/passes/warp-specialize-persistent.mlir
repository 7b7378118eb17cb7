// warp-specialize{enable=true persistent-blocks=4}: the split launch of a 2 x 3 grid becomes min(6, 4) blocks, each
// role walking tiles blockIdx.x, + gridDim.x, ... with the block ids replaced by the tile's (tile mod 2, tile / 2),
// and every ring slot and phase counting the k tiles of the block's whole schedule: base r * n + t for its r-th tile.
// RUN: tile-opt %s -p 'warp-specialize{enable=true persistent-blocks=4}' 2>/dev/null | FileCheck %s
// RUN: tile-opt %s -p 'warp-specialize{enable=true persistent-blocks=4}' 2>/dev/null | tile-opt -o /dev/null

// CHECK-LABEL: func.func @tiles
// CHECK: %[[N:.+]] = arith.divui %dim, %{{.+}} : index
// CHECK: %[[GRID:.+]] = arith.minui %[[C6:.+]], %[[C4:.+]] : index
// CHECK: gpu.launch blocks(%[[BX:.+]], %{{.+}}, %{{.+}}) in (%[[GX:.+]] = %[[GRID]], %{{.+}} = %c1{{.*}}, %{{.+}} = %c1{{.*}}) threads
// The producer: its tile loop, the prologue's issue of k tile 0 into slot base mod 2 after the wait for its release.
// CHECK: %[[ROLE:.+]] = arith.cmpi uge
// CHECK-NEXT: scf.if %[[ROLE]] {
// CHECK-NEXT: arith.cmpi eq
// CHECK-NEXT: scf.if %{{.+}} {
// CHECK-NEXT: scf.for %[[TILE:.+]] = %[[BX]] to %[[C6]] step %[[GX]] iter_args(%[[R:.+]] = %{{.+}}) -> (index) {
// CHECK-NEXT: %[[BASE:.+]] = arith.muli %[[R]], %[[N]] : index
// CHECK-NEXT: %[[NEXT:.+]] = arith.addi %[[R]], %{{.+}} : index
// CHECK-NEXT: %[[BY:.+]] = arith.divui %[[TILE]], %{{.+}} : index
// CHECK-NEXT: %[[ROW:.+]] = arith.muli %[[BY]], %{{.+}} : index
// CHECK-NEXT: %[[SLOT0:.+]] = arith.remui %[[BASE]], %[[C2:.+]] : index
// CHECK-NEXT: %[[REUSED0:.+]] = arith.cmpi uge, %[[BASE]], %[[C2]] : index
// CHECK-NEXT: scf.if %[[REUSED0]] {
// CHECK: "tile.mbarrier_wait"(%[[EMPTY:.+]], %[[SLOT0]], %{{.+}})
// CHECK: "tile.mbarrier_arrive_expect_tx"(%[[FULL:.+]], %[[SLOT0]])
// CHECK-NEXT: "tile.tma_load"(%{{.+}}, %[[FULL]], %[[SLOT0]], %{{.+}}, %{{.+}}, %[[SLOT0]], %[[ROW]], %{{.+}})
// In the k loop: k tile t + 1 is k tile base + t + 1 of the schedule; its coordinates keep t + 1.
// CHECK-NEXT: scf.for %[[K:.+]] = %{{.+}} to %[[N]] step
// CHECK-NEXT: %[[J:.+]] = arith.addi %[[K]], %{{.+}} : index
// CHECK-NEXT: %[[G:.+]] = arith.addi %[[BASE]], %[[J]] : index
// CHECK-NEXT: %[[SLOT:.+]] = arith.remui %[[G]], %{{.+}} : index
// CHECK: %[[COL:.+]] = arith.muli %[[J]], %{{.+}} : index
// CHECK: "tile.mbarrier_wait"(%[[EMPTY]], %[[SLOT]], %{{.+}})
// CHECK: "tile.tma_load"(%{{.+}}, %[[FULL]], %[[SLOT]], %{{.+}}, %{{.+}}, %[[SLOT]], %[[ROW]], %[[COL]])
// CHECK: scf.yield %[[NEXT]] : index
// CHECK-NEXT: } {tile.persistent_tiles}
// The consumers walk the same tiles: the full wait, the read at the tile's column, the release, all on base + t.
// CHECK: } else {
// CHECK-NEXT: scf.for %[[CTILE:.+]] = %[[BX]] to %[[C6]] step %[[GX]] iter_args(%[[CR:.+]] = %{{.+}}) -> (index) {
// CHECK-NEXT: %[[CBASE:.+]] = arith.muli %[[CR]], %[[N]] : index
// CHECK-NEXT: arith.addi %[[CR]]
// CHECK-NEXT: %[[CBX:.+]] = arith.remui %[[CTILE]], %{{.+}} : index
// CHECK-NEXT: scf.for %[[CK:.+]] = %{{.+}} to %[[N]] step
// CHECK-NEXT: %[[CG:.+]] = arith.addi %[[CBASE]], %[[CK]] : index
// CHECK-NEXT: %[[CSLOT:.+]] = arith.remui %[[CG]], %{{.+}} : index
// CHECK: "tile.mbarrier_wait"(%[[FULL]], %[[CSLOT]], %{{.+}})
// CHECK: memref.load %{{.+}}[%{{.+}}, %{{.+}}, %[[CBX]]]
// CHECK: %[[FREED:.+]] = arith.addi %[[CBASE]], %[[CK]] : index
// CHECK: %[[FREED_SLOT:.+]] = arith.remui %[[FREED]], %{{.+}} : index
// CHECK-NEXT: "tile.mbarrier_arrive"(%[[EMPTY]], %[[FREED_SLOT]])
// CHECK: } {tile.persistent_tiles}
// CHECK-NEXT: } {tile.warp_roles = 128 : i64}
  func.func @tiles(%arg0: memref<?x64xbf16>) attributes {tile.arg_names = ["A"], tile.entry, tile.tensor_maps = {A_map = {box = [64, 64], swizzle = 128 : i64, tensor = 0 : i64}}} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %dim = memref.dim %arg0, %c0 : memref<?x64xbf16>
    %0 = arith.divui %dim, %c64 : index
    gpu.launch blocks(%arg1, %arg2, %arg3) in (%arg7 = %c2, %arg8 = %c3, %arg9 = %c1) threads(%arg4, %arg5, %arg6) in (%arg10 = %c128, %arg11 = %c1, %arg12 = %c1) {
      %c2_0 = arith.constant 2 : index
      %c1_1 = arith.constant 1 : index
      %c0_2 = arith.constant 0 : index
      %alloca = memref.alloca() {name = "full"} : memref<2xi64, "shared">
      %thread_id_x = gpu.thread_id x upper_bound 128
      %1 = arith.cmpi eq, %thread_id_x, %c0_2 : index
      scf.if %1 {
        "tile.mbarrier_init"(%alloca, %c0_2) {count = 1 : i64} : (memref<2xi64, "shared">, index) -> ()
        "tile.mbarrier_init"(%alloca, %c1_1) {count = 1 : i64} : (memref<2xi64, "shared">, index) -> ()
        "tile.fence_mbarrier_init"() : () -> ()
      }
      gpu.barrier
      %alloca_3 = memref.alloca() {name = "A_s", tile.ring, tile.swizzle = 128 : i64} : memref<2x64x64xbf16, "shared">
      %row = arith.muli %arg2, %c64 : index
      %thread_id_x_4 = gpu.thread_id x upper_bound 128
      %3 = arith.cmpi eq, %thread_id_x_4, %c0_2 : index
      scf.if %3 {
        "tile.mbarrier_arrive_expect_tx"(%alloca, %c0) {bytes = 8192 : i64} : (memref<2xi64, "shared">, index) -> ()
        "tile.tma_load"(%alloca_3, %alloca, %c0, %c0_2, %c0_2, %c0, %row, %c0_2) {map = "A_map"} : (memref<2x64x64xbf16, "shared">, memref<2xi64, "shared">, index, index, index, index, index, index) -> ()
      }
      scf.for %arg13 = %c0 to %0 step %c1 {
        gpu.barrier
        %4 = arith.addi %arg13, %c1 : index
        %5 = arith.remui %4, %c2 : index
        %6 = arith.cmpi ult, %4, %0 : index
        scf.if %6 {
          %11 = arith.muli %4, %c64 : index
          %thread_id_x_5 = gpu.thread_id x upper_bound 128
          %12 = arith.cmpi eq, %thread_id_x_5, %c0_2 : index
          scf.if %12 {
            "tile.mbarrier_arrive_expect_tx"(%alloca, %5) {bytes = 8192 : i64} : (memref<2xi64, "shared">, index) -> ()
            "tile.tma_load"(%alloca_3, %alloca, %5, %c0_2, %c0_2, %5, %row, %11) {map = "A_map"} : (memref<2x64x64xbf16, "shared">, memref<2xi64, "shared">, index, index, index, index, index, index) -> ()
          }
        }
        %7 = arith.remui %arg13, %c2_0 : index
        %8 = arith.divui %arg13, %c2_0 : index
        %9 = arith.remui %8, %c2_0 : index
        "tile.mbarrier_wait"(%alloca, %7, %9) : (memref<2xi64, "shared">, index, index) -> ()
        %10 = arith.remui %arg13, %c2 : index
        %13 = memref.load %alloca_3[%10, %arg4, %arg1] : memref<2x64x64xbf16, "shared">
      } {tile.num_stages = 2 : i64}
      gpu.terminator
    }
    return
  }
