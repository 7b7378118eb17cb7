// warp-specialize{enable=true}: tma-copies' launch becomes a producer warpgroup (ids 128..255, thread 128 issuing,
// each tile j >= S after its wait on `empty`) and the user's 128 threads consuming (full waits, an `empty` arrival
// from lane 0 of each warp once nothing reads the slot).
// RUN: tile-opt %s -p 'warp-specialize{enable=true}' 2>/dev/null | FileCheck %s
// The output verifies and re-parses.
// RUN: tile-opt %s -p 'warp-specialize{enable=true}' 2>/dev/null | tile-opt -o /dev/null
// Without enable the pass changes nothing.
// RUN: tile-opt %s -p warp-specialize | FileCheck %s --check-prefix=OFF
// OFF: threads(%{{.+}}) in (%{{.+}} = %c128,
// OFF-NOT: "empty"

// Two stages, synchronous reads of the slot (no wgmma): a consumer releases slot t mod 2 at the end of iteration t.
// CHECK-LABEL: func.func @one_ring
// CHECK: %[[C256:.+]] = arith.constant 256 : index
// CHECK: gpu.launch {{.+}} threads({{.+}}) in (%{{.+}} = %[[C256]],
// CHECK: %[[EMPTY:.+]] = memref.alloca() {name = "empty"} : memref<2xi64, "shared">
// CHECK: %[[FULL:.+]] = memref.alloca() {name = "full"} : memref<2xi64, "shared">
// CHECK: %[[TID0:.+]] = gpu.thread_id x upper_bound 256
// CHECK: "tile.mbarrier_init"(%[[FULL]], %{{.+}}) {count = 1 : i64}
// CHECK: "tile.mbarrier_init"(%[[FULL]], %{{.+}}) {count = 1 : i64}
// A slot is released by lane 0 of each of the 4 consumer warps.
// CHECK: "tile.mbarrier_init"(%[[EMPTY]], %{{.+}}) {count = 4 : i64}
// CHECK: "tile.mbarrier_init"(%[[EMPTY]], %{{.+}}) {count = 4 : i64}
// CHECK-NEXT: "tile.fence_mbarrier_init"()
// CHECK: gpu.barrier
// The ring is allocated before the split, so both roles name it.
// CHECK-NEXT: %[[A:.+]] = memref.alloca() {name = "A_s"
// CHECK-NEXT: %[[TID:.+]] = gpu.thread_id x upper_bound 256
// CHECK-NEXT: %[[PRODUCER:.+]] = arith.cmpi uge, %[[TID]], %[[C128:.+]] : index
// CHECK-NEXT: scf.if %[[PRODUCER]] {
// CHECK-NEXT: %[[ELECTED:.+]] = arith.cmpi eq, %[[TID]], %[[C128]] : index
// CHECK-NEXT: scf.if %[[ELECTED]] {
// The prologue's tile 0: no empty wait.
// CHECK: scf.if
// CHECK-NEXT: "tile.mbarrier_arrive_expect_tx"(%[[FULL]], %{{.+}}) {bytes = 8192 : i64}
// CHECK-NEXT: "tile.tma_load"(%[[A]], %[[FULL]]
// CHECK-NEXT: }
// The loop reduced to its issues: tile j = k + 1 into slot j mod 2, after empty[j mod 2] phase j / 2 - 1 when j >= 2.
// CHECK-NEXT: scf.for %[[K:.+]] = {{.+}} {
// CHECK-NOT: gpu.barrier
// CHECK: %[[SLOT1:.+]] = arith.remui
// CHECK: scf.if
// CHECK: %[[J:.+]] = arith.addi %[[K]], %{{.+}} : index
// CHECK-NEXT: %[[REUSED:.+]] = arith.cmpi uge, %[[J]], %[[C2:.+]] : index
// CHECK-NEXT: scf.if %[[REUSED]] {
// CHECK-NEXT: %[[PHASE:.+]] = arith.divui %[[J]], %[[C2]] : index
// CHECK-NEXT: %[[PREV:.+]] = arith.addi %[[PHASE]], %{{.+}} : index
// CHECK-NEXT: %[[PARITY:.+]] = arith.remui %[[PREV]], %[[C2]] : index
// CHECK-NEXT: "tile.mbarrier_wait"(%[[EMPTY]], %[[SLOT1]], %[[PARITY]])
// CHECK-NEXT: }
// CHECK-NEXT: "tile.mbarrier_arrive_expect_tx"(%[[FULL]], %[[SLOT1]]) {bytes = 8192 : i64}
// CHECK-NEXT: "tile.tma_load"(%[[A]], %[[FULL]], %[[SLOT1]]
// CHECK-NEXT: }
// CHECK-NEXT: } {tile.num_stages = 2 : i64}
// CHECK-NEXT: }
// The consumers: the full wait, the read, the release; no issue and no barrier.
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.for %[[KC:.+]] = {{.+}} {
// CHECK-NOT: "tile.tma_load"
// CHECK-NOT: gpu.barrier
// CHECK: "tile.mbarrier_wait"(%[[FULL]]
// CHECK: memref.load %[[A]]
// CHECK-NEXT: %[[CTID:.+]] = gpu.thread_id x
// CHECK-NEXT: %[[LANE:.+]] = arith.remui %[[CTID]], %{{.+}} : index
// CHECK-NEXT: %[[LEAD:.+]] = arith.cmpi eq, %[[LANE]], %{{.+}} : index
// CHECK-NEXT: scf.if %[[LEAD]] {
// CHECK-NEXT: %[[FREED:.+]] = arith.remui %[[KC]], %{{.+}} : index
// CHECK-NEXT: "tile.mbarrier_arrive"(%[[EMPTY]], %[[FREED]])
// CHECK-NEXT: }
// CHECK-NEXT: } {tile.num_stages = 2 : i64}
// CHECK-NEXT: }
// CHECK-NEXT: gpu.terminator
  func.func @one_ring(%arg0: memref<?x64xbf16>) attributes {tile.arg_names = ["A"], tile.entry, tile.tensor_maps = {A_map = {box = [64, 64], swizzle = 128 : i64, tensor = 0 : i64}}} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %dim = memref.dim %arg0, %c0 : memref<?x64xbf16>
    %0 = arith.divui %dim, %c64 : index
    gpu.launch blocks(%arg1, %arg2, %arg3) in (%arg7 = %c1, %arg8 = %c1, %arg9 = %c1) threads(%arg4, %arg5, %arg6) in (%arg10 = %c128, %arg11 = %c1, %arg12 = %c1) {
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
      %2 = arith.cmpi ult, %c0, %0 : index
      scf.if %2 {
        %thread_id_x_4 = gpu.thread_id x upper_bound 128
        %3 = arith.cmpi eq, %thread_id_x_4, %c0_2 : index
        scf.if %3 {
          "tile.mbarrier_arrive_expect_tx"(%alloca, %c0) {bytes = 8192 : i64} : (memref<2xi64, "shared">, index) -> ()
          "tile.tma_load"(%alloca_3, %alloca, %c0, %c0_2, %c0_2, %c0, %c0, %c0_2) {map = "A_map"} : (memref<2x64x64xbf16, "shared">, memref<2xi64, "shared">, index, index, index, index, index, index) -> ()
        }
      }
      scf.for %arg13 = %c0 to %0 step %c1 {
        gpu.barrier
        %3 = arith.addi %arg13, %c1 : index
        %4 = arith.remui %3, %c2 : index
        %5 = arith.cmpi ult, %3, %0 : index
        scf.if %5 {
          %11 = arith.muli %3, %c64 : index
          %thread_id_x_4 = gpu.thread_id x upper_bound 128
          %12 = arith.cmpi eq, %thread_id_x_4, %c0_2 : index
          scf.if %12 {
            "tile.mbarrier_arrive_expect_tx"(%alloca, %4) {bytes = 8192 : i64} : (memref<2xi64, "shared">, index) -> ()
            "tile.tma_load"(%alloca_3, %alloca, %4, %c0_2, %c0_2, %4, %11, %c0_2) {map = "A_map"} : (memref<2x64x64xbf16, "shared">, memref<2xi64, "shared">, index, index, index, index, index, index) -> ()
          }
        }
        %6 = arith.remui %arg13, %c2_0 : index
        %7 = arith.divui %arg13, %c2_0 : index
        %8 = arith.remui %7, %c2_0 : index
        "tile.mbarrier_wait"(%alloca, %6, %8) : (memref<2xi64, "shared">, index, index) -> ()
        %9 = arith.remui %arg13, %c2 : index
        %10 = memref.load %alloca_3[%9, %arg4, %c0] : memref<2x64x64xbf16, "shared">
      } {tile.num_stages = 2 : i64}
      gpu.terminator
    }
    return
  }

// Two consumer warpgroups: the launch starts every thread at 65536 / 384 registers rounded down to a multiple of 8
// (168), the producer warpgroup lowers its maximum to 40 and the consumers raise theirs to 168 + 128 * 128 / 256.
// CHECK-LABEL: func.func @two_consumer_warpgroups
// CHECK: gpu.launch
// CHECK: %[[PRODUCER2:.+]] = arith.cmpi uge, %{{.+}}, %{{.+}} : index
// CHECK-NEXT: scf.if %[[PRODUCER2]] {
// CHECK-NEXT: "tile.setmaxnreg"() {action = "dec", count = 40 : i64}
// CHECK-NEXT: arith.cmpi eq
// CHECK: } else {
// CHECK-NEXT: "tile.setmaxnreg"() {action = "inc", count = 232 : i64}
// CHECK-NEXT: scf.for
// A barrier after the loop is the consumers' own: named barrier 1 of their 256 threads.
// CHECK: } {tile.num_stages = 2 : i64}
// CHECK-NEXT: "tile.named_barrier"() {id = 1 : i64, threads = 256 : i64}
// CHECK-NEXT: memref.load
// CHECK: gpu.terminator
// CHECK-NEXT: } {tile.entry_registers = 168 : i64}
  func.func @two_consumer_warpgroups(%arg0: memref<?x64xbf16>) attributes {tile.arg_names = ["A"], tile.entry, tile.tensor_maps = {A_map = {box = [64, 64], swizzle = 128 : i64, tensor = 0 : i64}}} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    %c256 = arith.constant 256 : index
    %dim = memref.dim %arg0, %c0 : memref<?x64xbf16>
    %0 = arith.divui %dim, %c64 : index
    gpu.launch blocks(%arg1, %arg2, %arg3) in (%arg7 = %c1, %arg8 = %c1, %arg9 = %c1) threads(%arg4, %arg5, %arg6) in (%arg10 = %c256, %arg11 = %c1, %arg12 = %c1) {
      %c2_0 = arith.constant 2 : index
      %c1_1 = arith.constant 1 : index
      %c0_2 = arith.constant 0 : index
      %alloca = memref.alloca() {name = "full"} : memref<2xi64, "shared">
      %thread_id_x = gpu.thread_id x upper_bound 256
      %1 = arith.cmpi eq, %thread_id_x, %c0_2 : index
      scf.if %1 {
        "tile.mbarrier_init"(%alloca, %c0_2) {count = 1 : i64} : (memref<2xi64, "shared">, index) -> ()
        "tile.mbarrier_init"(%alloca, %c1_1) {count = 1 : i64} : (memref<2xi64, "shared">, index) -> ()
        "tile.fence_mbarrier_init"() : () -> ()
      }
      gpu.barrier
      %alloca_3 = memref.alloca() {name = "A_s", tile.ring, tile.swizzle = 128 : i64} : memref<2x64x64xbf16, "shared">
      %2 = arith.cmpi ult, %c0, %0 : index
      scf.if %2 {
        %thread_id_x_4 = gpu.thread_id x upper_bound 256
        %3 = arith.cmpi eq, %thread_id_x_4, %c0_2 : index
        scf.if %3 {
          "tile.mbarrier_arrive_expect_tx"(%alloca, %c0) {bytes = 8192 : i64} : (memref<2xi64, "shared">, index) -> ()
          "tile.tma_load"(%alloca_3, %alloca, %c0, %c0_2, %c0_2, %c0, %c0, %c0_2) {map = "A_map"} : (memref<2x64x64xbf16, "shared">, memref<2xi64, "shared">, index, index, index, index, index, index) -> ()
        }
      }
      scf.for %arg13 = %c0 to %0 step %c1 {
        gpu.barrier
        %3 = arith.addi %arg13, %c1 : index
        %4 = arith.remui %3, %c2 : index
        %5 = arith.cmpi ult, %3, %0 : index
        scf.if %5 {
          %11 = arith.muli %3, %c64 : index
          %thread_id_x_4 = gpu.thread_id x upper_bound 256
          %12 = arith.cmpi eq, %thread_id_x_4, %c0_2 : index
          scf.if %12 {
            "tile.mbarrier_arrive_expect_tx"(%alloca, %4) {bytes = 8192 : i64} : (memref<2xi64, "shared">, index) -> ()
            "tile.tma_load"(%alloca_3, %alloca, %4, %c0_2, %c0_2, %4, %11, %c0_2) {map = "A_map"} : (memref<2x64x64xbf16, "shared">, memref<2xi64, "shared">, index, index, index, index, index, index) -> ()
          }
        }
        %6 = arith.remui %arg13, %c2_0 : index
        %7 = arith.divui %arg13, %c2_0 : index
        %8 = arith.remui %7, %c2_0 : index
        "tile.mbarrier_wait"(%alloca, %6, %8) : (memref<2xi64, "shared">, index, index) -> ()
        %9 = arith.remui %arg13, %c2 : index
        %10 = memref.load %alloca_3[%9, %c0, %c0] : memref<2x64x64xbf16, "shared">
      } {tile.num_stages = 2 : i64}
      gpu.barrier
      %last = memref.load %alloca_3[%c0, %c0, %c0] : memref<2x64x64xbf16, "shared">
      gpu.terminator
    }
    return
  }
