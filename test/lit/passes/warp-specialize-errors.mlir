// warp-specialize{enable=true} on launches it cannot split: located errors.
// RUN: tile-opt %s --split-input-file --verify-diagnostics -p 'warp-specialize{enable=true}'

// A cp.async ring copy's commit groups need every thread: only TMA copies can go to the producer.
  func.func @cp_async_in_the_loop(%arg0: memref<?x64xbf16>) attributes {tile.arg_names = ["A"], tile.entry, tile.tensor_maps = {A_map = {box = [64, 64], swizzle = 128 : i64, tensor = 0 : i64}}} {
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
      // expected-error @+1 {{warp-specialize: this launch also has cp.async ring copies}}
      "tile.cp_async_commit"() : () -> ()
        "tile.mbarrier_wait"(%alloca, %6, %8) : (memref<2xi64, "shared">, index, index) -> ()
        %9 = arith.remui %arg13, %c2 : index
        %10 = memref.load %alloca_3[%9, %arg4, %c0] : memref<2x64x64xbf16, "shared">
      } {tile.num_stages = 2 : i64}
      gpu.terminator
    }
    return
  }

// -----

// A barrier among consumers that are not whole warps: a named barrier counts warps.
  func.func @a_consumer_barrier_over_partial_warps(%arg0: memref<?x64xbf16>) attributes {tile.arg_names = ["A"], tile.entry, tile.tensor_maps = {A_map = {box = [64, 64], swizzle = 128 : i64, tensor = 0 : i64}}} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c64 = arith.constant 64 : index
    %c100 = arith.constant 100 : index
    %dim = memref.dim %arg0, %c0 : memref<?x64xbf16>
    %0 = arith.divui %dim, %c64 : index
    gpu.launch blocks(%arg1, %arg2, %arg3) in (%arg7 = %c1, %arg8 = %c1, %arg9 = %c1) threads(%arg4, %arg5, %arg6) in (%arg10 = %c100, %arg11 = %c1, %arg12 = %c1) {
      %c2_0 = arith.constant 2 : index
      %c1_1 = arith.constant 1 : index
      %c0_2 = arith.constant 0 : index
      %alloca = memref.alloca() {name = "full"} : memref<2xi64, "shared">
      %thread_id_x = gpu.thread_id x upper_bound 100
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
        %thread_id_x_4 = gpu.thread_id x upper_bound 100
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
          %thread_id_x_4 = gpu.thread_id x upper_bound 100
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
    // expected-error @+1 {{warp-specialize: a barrier among 100 consumer threads needs whole warps (a named barrier counts warps)}}
    gpu.barrier
      gpu.terminator
    }
    return
  }
