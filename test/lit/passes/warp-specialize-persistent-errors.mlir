// warp-specialize{enable=true persistent-blocks=4} on launches it cannot make persistent: located errors.
// RUN: tile-opt %s --split-input-file --verify-diagnostics -p 'warp-specialize{enable=true persistent-blocks=4}'

// The ring's phases count k tiles from 0: a loop from 1 would need its start subtracted in every slot.
  func.func @loop_from_one(%arg0: memref<?x64xbf16>) attributes {tile.arg_names = ["A"], tile.entry, tile.tensor_maps = {A_map = {box = [64, 64], swizzle = 128 : i64, tensor = 0 : i64}}} {
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
      // expected-error @+1 {{persistent: the pipelined loop must count its k tiles from 0 in steps of 1}}
      scf.for %arg13 = %c1 to %0 step %c1 {
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

// -----

// k tile t mod 2 both picks the ring slot and indexes a tensor: it cannot count the block's schedule and the tile's k.
  func.func @slot_as_data(%arg0: memref<?x64xbf16>) attributes {tile.arg_names = ["A"], tile.entry, tile.tensor_maps = {A_map = {box = [64, 64], swizzle = 128 : i64, tensor = 0 : i64}}} {
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
        // expected-error @+1 {{persistent: a ring slot (k tile mod num_stages) is also used as data}}
        %10 = arith.remui %arg13, %c2 : index
        %13 = memref.load %alloca_3[%10, %arg4, %arg1] : memref<2x64x64xbf16, "shared">
        %14 = memref.load %arg0[%10, %arg4] : memref<?x64xbf16>
      } {tile.num_stages = 2 : i64}
      gpu.terminator
    }
    return
  }
