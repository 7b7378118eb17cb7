// Barriers in softmax and RMSNorm, through infer-layouts, lower-tile-ops and partition-threads: one per
// reduction whose row spans several warps (its shared exchange), none when a row sits in one warp.
// RUN: tile-opt %s --split-input-file -p partition-threads | FileCheck %s
// The inputs are what infer-layouts and lower-tile-ops give: element loops over whole-tile fragments.

// A row in one warp: shuffles only.
// CHECK-LABEL: func.func @rms_1warp
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
#map = affine_map<(d0, d1) -> ((d1 floordiv 8) mod 32)>
#map1 = affine_map<(d0, d1) -> (d1 mod 8 + (d1 floordiv 256) * 8)>
#map2 = affine_map<(d0) -> ((d0 floordiv 8) mod 32)>
#map3 = affine_map<(d0) -> (d0 mod 8 + (d0 floordiv 256) * 8)>
#map4 = affine_map<(d0)[s0] -> (s0)>
#map5 = affine_map<(d0) -> (0)>
module {
  func.func @rms_1warp(%arg0: memref<?x1024xbf16>, %arg1: memref<1024xbf16>, %arg2: memref<?x1024xbf16>, %arg3: f32) attributes {tile.entry} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c1024 = arith.constant 1024 : index
    %cst = arith.constant 1.024000e+03 : f32
    %dim = memref.dim %arg0, %c0 : memref<?x1024xbf16>
    %0 = arith.ceildivui %dim, %c1 : index
    "tile.kernel"(%0) ({
    ^bb0(%arg4: index):
      %c1_i32 = arith.constant 1 : i32
      %c2_i32 = arith.constant 2 : i32
      %c4_i32 = arith.constant 4 : i32
      %c8_i32 = arith.constant 8 : i32
      %c32_i32 = arith.constant 32 : i32
      %c16_i32 = arith.constant 16 : i32
      %cst_0 = arith.constant 0.000000e+00 : f32
      %c0_1 = arith.constant 0 : index
      %c1024_2 = arith.constant 1024 : index
      %c1_3 = arith.constant 1 : index
      %1 = "tile.alloc_fragment"() {layout = #tile.layout<#map, #map1, 1 : i64>, name = "x"} : () -> memref<1x1024xf32, "fragment">
      %2 = "tile.alloc_fragment"() {layout = #tile.layout<#map, #map1, 1 : i64>, name = "sq"} : () -> memref<1x1024xf32, "fragment">
      %3 = "tile.alloc_fragment"() {layout = #tile.layout<#map2, #map3, 1 : i64>, name = "w"} : () -> memref<1024xf32, "fragment">
      %4 = "tile.alloc_fragment"() {layout = #tile.layout<#map4, #map5, 32 : i64>, name = "rms"} : () -> memref<1xf32, "fragment">
      %5 = arith.muli %arg4, %c1 : index
      "tile.parallel"(%c1_3, %c1024_2) ({
      ^bb0(%arg5: index, %arg6: index):
        %6 = arith.addi %5, %arg5 : index
        %7 = memref.load %arg0[%6, %arg6] {tile.pad = 0.000000e+00 : bf16} : memref<?x1024xbf16>
        %8 = arith.extf %7 : bf16 to f32
        memref.store %8, %1[%arg5, %arg6] : memref<1x1024xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.parallel"(%c1024_2) ({
      ^bb0(%arg5: index):
        %6 = memref.load %arg1[%arg5] {tile.pad = 0.000000e+00 : bf16} : memref<1024xbf16>
        %7 = arith.extf %6 : bf16 to f32
        memref.store %7, %3[%arg5] : memref<1024xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 1 : i64>} : (index) -> ()
      "tile.parallel"(%c1, %c1024) ({
      ^bb0(%arg5: index, %arg6: index):
        %6 = memref.load %1[%arg5, %arg6] : memref<1x1024xf32, "fragment">
        %7 = arith.mulf %6, %6 : f32
        memref.store %7, %2[%arg5, %arg6] : memref<1x1024xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.parallel"(%c1_3) ({
      ^bb0(%arg5: index):
        memref.store %cst_0, %4[%arg5] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map4, #map5, 32 : i64>, tile.convergent} : (index) -> ()
      "tile.parallel"(%c1_3, %c1024_2) ({
      ^bb0(%arg5: index, %arg6: index):
        %6 = memref.load %2[%arg5, %arg6] : memref<1x1024xf32, "fragment">
        %7 = memref.load %4[%arg5] : memref<1xf32, "fragment">
        %8 = arith.addf %7, %6 : f32
        memref.store %8, %4[%arg5] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>, tile.accumulate} : (index, index) -> ()
      "tile.parallel"(%c1_3) ({
      ^bb0(%arg5: index):
        %6 = memref.load %4[%arg5] : memref<1xf32, "fragment">
        %shuffleResult, %valid = gpu.shuffle xor %6, %c16_i32, %c32_i32 : f32
        %7 = arith.addf %6, %shuffleResult : f32
        %shuffleResult_4, %valid_5 = gpu.shuffle xor %7, %c8_i32, %c32_i32 : f32
        %8 = arith.addf %7, %shuffleResult_4 : f32
        %shuffleResult_6, %valid_7 = gpu.shuffle xor %8, %c4_i32, %c32_i32 : f32
        %9 = arith.addf %8, %shuffleResult_6 : f32
        %shuffleResult_8, %valid_9 = gpu.shuffle xor %9, %c2_i32, %c32_i32 : f32
        %10 = arith.addf %9, %shuffleResult_8 : f32
        %shuffleResult_10, %valid_11 = gpu.shuffle xor %10, %c1_i32, %c32_i32 : f32
        %11 = arith.addf %10, %shuffleResult_10 : f32
        memref.store %11, %4[%arg5] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map4, #map5, 32 : i64>, tile.convergent} : (index) -> ()
      "tile.parallel"(%c1) ({
      ^bb0(%arg5: index):
        %6 = memref.load %4[%arg5] : memref<1xf32, "fragment">
        %7 = arith.divf %6, %cst : f32
        %8 = arith.addf %7, %arg3 : f32
        %9 = math.rsqrt %8 : f32
        memref.store %9, %4[%arg5] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map4, #map5, 32 : i64>} : (index) -> ()
      "tile.parallel"(%c1, %c1024) ({
      ^bb0(%arg5: index, %arg6: index):
        %6 = memref.load %1[%arg5, %arg6] : memref<1x1024xf32, "fragment">
        %7 = memref.load %4[%arg5] : memref<1xf32, "fragment">
        %8 = memref.load %3[%arg6] : memref<1024xf32, "fragment">
        %9 = arith.mulf %6, %7 : f32
        %10 = arith.mulf %9, %8 : f32
        memref.store %10, %1[%arg5, %arg6] : memref<1x1024xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.parallel"(%c1_3, %c1024_2) ({
      ^bb0(%arg5: index, %arg6: index):
        %6 = memref.load %1[%arg5, %arg6] : memref<1x1024xf32, "fragment">
        %7 = arith.truncf %6 : f32 to bf16
        %8 = arith.addi %5, %arg5 : index
        memref.store %7, %arg2[%8, %arg6] : memref<?x1024xbf16>
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.yield"() : () -> ()
    }) {threads = 32 : i64} : (index) -> ()
    return
  }
}

// -----

// A row over 4 warps: one exchange.
// CHECK-LABEL: func.func @rms_4warps
// CHECK-COUNT-1: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
#map = affine_map<(d0, d1) -> ((d1 floordiv 8) mod 128)>
#map1 = affine_map<(d0, d1) -> (d1 mod 8 + (d1 floordiv 1024) * 8)>
#map2 = affine_map<(d0) -> ((d0 floordiv 8) mod 128)>
#map3 = affine_map<(d0) -> (d0 mod 8 + (d0 floordiv 1024) * 8)>
#map4 = affine_map<(d0)[s0] -> (s0)>
#map5 = affine_map<(d0) -> (0)>
module {
  func.func @rms_4warps(%arg0: memref<?x4096xbf16>, %arg1: memref<4096xbf16>, %arg2: memref<?x4096xbf16>, %arg3: f32) attributes {tile.entry} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4096 = arith.constant 4096 : index
    %cst = arith.constant 4.096000e+03 : f32
    %dim = memref.dim %arg0, %c0 : memref<?x4096xbf16>
    %0 = arith.ceildivui %dim, %c1 : index
    "tile.kernel"(%0) ({
    ^bb0(%arg4: index):
      %c4 = arith.constant 4 : index
      %c32 = arith.constant 32 : index
      %1 = "tile.alloc_shared"() {name = "rms_red"} : () -> memref<1x4xf32, "shared">
      %c1_i32 = arith.constant 1 : i32
      %c2_i32 = arith.constant 2 : i32
      %c4_i32 = arith.constant 4 : i32
      %c8_i32 = arith.constant 8 : i32
      %c32_i32 = arith.constant 32 : i32
      %c16_i32 = arith.constant 16 : i32
      %cst_0 = arith.constant 0.000000e+00 : f32
      %c0_1 = arith.constant 0 : index
      %c4096_2 = arith.constant 4096 : index
      %c1_3 = arith.constant 1 : index
      %2 = "tile.alloc_fragment"() {layout = #tile.layout<#map, #map1, 1 : i64>, name = "x"} : () -> memref<1x4096xf32, "fragment">
      %3 = "tile.alloc_fragment"() {layout = #tile.layout<#map, #map1, 1 : i64>, name = "sq"} : () -> memref<1x4096xf32, "fragment">
      %4 = "tile.alloc_fragment"() {layout = #tile.layout<#map2, #map3, 1 : i64>, name = "w"} : () -> memref<4096xf32, "fragment">
      %5 = "tile.alloc_fragment"() {layout = #tile.layout<#map4, #map5, 128 : i64>, name = "rms"} : () -> memref<1xf32, "fragment">
      %6 = arith.muli %arg4, %c1 : index
      "tile.parallel"(%c1_3, %c4096_2) ({
      ^bb0(%arg5: index, %arg6: index):
        %7 = arith.addi %6, %arg5 : index
        %8 = memref.load %arg0[%7, %arg6] {tile.pad = 0.000000e+00 : bf16} : memref<?x4096xbf16>
        %9 = arith.extf %8 : bf16 to f32
        memref.store %9, %2[%arg5, %arg6] : memref<1x4096xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.parallel"(%c4096_2) ({
      ^bb0(%arg5: index):
        %7 = memref.load %arg1[%arg5] {tile.pad = 0.000000e+00 : bf16} : memref<4096xbf16>
        %8 = arith.extf %7 : bf16 to f32
        memref.store %8, %4[%arg5] : memref<4096xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 1 : i64>} : (index) -> ()
      "tile.parallel"(%c1, %c4096) ({
      ^bb0(%arg5: index, %arg6: index):
        %7 = memref.load %2[%arg5, %arg6] : memref<1x4096xf32, "fragment">
        %8 = arith.mulf %7, %7 : f32
        memref.store %8, %3[%arg5, %arg6] : memref<1x4096xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.parallel"(%c1_3) ({
      ^bb0(%arg5: index):
        memref.store %cst_0, %5[%arg5] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map4, #map5, 128 : i64>, tile.convergent} : (index) -> ()
      "tile.parallel"(%c1_3, %c4096_2) ({
      ^bb0(%arg5: index, %arg6: index):
        %7 = memref.load %3[%arg5, %arg6] : memref<1x4096xf32, "fragment">
        %8 = memref.load %5[%arg5] : memref<1xf32, "fragment">
        %9 = arith.addf %8, %7 : f32
        memref.store %9, %5[%arg5] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>, tile.accumulate} : (index, index) -> ()
      "tile.parallel"(%c1_3) ({
      ^bb0(%arg5: index):
        %7 = memref.load %5[%arg5] : memref<1xf32, "fragment">
        %shuffleResult, %valid = gpu.shuffle xor %7, %c16_i32, %c32_i32 : f32
        %8 = arith.addf %7, %shuffleResult : f32
        %shuffleResult_4, %valid_5 = gpu.shuffle xor %8, %c8_i32, %c32_i32 : f32
        %9 = arith.addf %8, %shuffleResult_4 : f32
        %shuffleResult_6, %valid_7 = gpu.shuffle xor %9, %c4_i32, %c32_i32 : f32
        %10 = arith.addf %9, %shuffleResult_6 : f32
        %shuffleResult_8, %valid_9 = gpu.shuffle xor %10, %c2_i32, %c32_i32 : f32
        %11 = arith.addf %10, %shuffleResult_8 : f32
        %shuffleResult_10, %valid_11 = gpu.shuffle xor %11, %c1_i32, %c32_i32 : f32
        %12 = arith.addf %11, %shuffleResult_10 : f32
        memref.store %12, %5[%arg5] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map4, #map5, 128 : i64>, tile.convergent} : (index) -> ()
      "tile.parallel"(%c1_3) ({
      ^bb0(%arg5: index):
        %thread_id_x = gpu.thread_id x upper_bound 128
        %7 = arith.remui %thread_id_x, %c32 : index
        %8 = arith.cmpi eq, %7, %c0_1 : index
        %thread_id_x_4 = gpu.thread_id x upper_bound 128
        %9 = arith.divui %thread_id_x_4, %c32 : index
        %10 = arith.remui %9, %c4 : index
        scf.if %8 {
          %11 = memref.load %5[%arg5] : memref<1xf32, "fragment">
          memref.store %11, %1[%arg5, %10] : memref<1x4xf32, "shared">
        }
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map4, #map5, 128 : i64>, tile.all_replicas} : (index) -> ()
      "tile.parallel"(%c1_3) ({
      ^bb0(%arg5: index):
        %7 = scf.for %arg6 = %c0_1 to %c4 step %c1_3 iter_args(%arg7 = %cst_0) -> (f32) {
          %8 = memref.load %1[%arg5, %arg6] : memref<1x4xf32, "shared">
          %9 = arith.addf %arg7, %8 : f32
          scf.yield %9 : f32
        } {tile.unroll}
        memref.store %7, %5[%arg5] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map4, #map5, 128 : i64>} : (index) -> ()
      "tile.parallel"(%c1) ({
      ^bb0(%arg5: index):
        %7 = memref.load %5[%arg5] : memref<1xf32, "fragment">
        %8 = arith.divf %7, %cst : f32
        %9 = arith.addf %8, %arg3 : f32
        %10 = math.rsqrt %9 : f32
        memref.store %10, %5[%arg5] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map4, #map5, 128 : i64>} : (index) -> ()
      "tile.parallel"(%c1, %c4096) ({
      ^bb0(%arg5: index, %arg6: index):
        %7 = memref.load %2[%arg5, %arg6] : memref<1x4096xf32, "fragment">
        %8 = memref.load %5[%arg5] : memref<1xf32, "fragment">
        %9 = memref.load %4[%arg6] : memref<4096xf32, "fragment">
        %10 = arith.mulf %7, %8 : f32
        %11 = arith.mulf %10, %9 : f32
        memref.store %11, %2[%arg5, %arg6] : memref<1x4096xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.parallel"(%c1_3, %c4096_2) ({
      ^bb0(%arg5: index, %arg6: index):
        %7 = memref.load %2[%arg5, %arg6] : memref<1x4096xf32, "fragment">
        %8 = arith.truncf %7 : f32 to bf16
        %9 = arith.addi %6, %arg5 : index
        memref.store %8, %arg2[%9, %arg6] : memref<?x4096xbf16>
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.yield"() : () -> ()
    }) {threads = 128 : i64} : (index) -> ()
    return
  }
}

// -----

// One row of 1000 (padded to 1024) over 4 warps.
// CHECK-LABEL: func.func @rms_1000
// CHECK-COUNT-1: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
#map = affine_map<(d0, d1) -> ((d1 floordiv 8) mod 128)>
#map1 = affine_map<(d0, d1) -> (d1 mod 8)>
#map2 = affine_map<(d0) -> ((d0 floordiv 8) mod 128)>
#map3 = affine_map<(d0) -> (d0 mod 8)>
#map4 = affine_map<(d0)[s0] -> (s0)>
#map5 = affine_map<(d0) -> (0)>
module {
  func.func @rms_1000(%arg0: memref<?x1000xbf16>, %arg1: memref<1000xbf16>, %arg2: memref<?x1000xbf16>, %arg3: f32) attributes {tile.entry} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c1000 = arith.constant 1000 : index
    %cst = arith.constant 1.000000e+03 : f32
    %dim = memref.dim %arg0, %c0 : memref<?x1000xbf16>
    %0 = arith.ceildivui %dim, %c1 : index
    "tile.kernel"(%0) ({
    ^bb0(%arg4: index):
      %c4 = arith.constant 4 : index
      %c32 = arith.constant 32 : index
      %1 = "tile.alloc_shared"() {name = "rms_red"} : () -> memref<1x4xf32, "shared">
      %c1_i32 = arith.constant 1 : i32
      %c2_i32 = arith.constant 2 : i32
      %c4_i32 = arith.constant 4 : i32
      %c8_i32 = arith.constant 8 : i32
      %c32_i32 = arith.constant 32 : i32
      %c16_i32 = arith.constant 16 : i32
      %cst_0 = arith.constant 0.000000e+00 : f32
      %c0_1 = arith.constant 0 : index
      %c1000_2 = arith.constant 1000 : index
      %c1_3 = arith.constant 1 : index
      %2 = "tile.alloc_fragment"() {layout = #tile.layout<#map, #map1, 1 : i64>, name = "x"} : () -> memref<1x1000xf32, "fragment">
      %3 = "tile.alloc_fragment"() {layout = #tile.layout<#map, #map1, 1 : i64>, name = "sq"} : () -> memref<1x1000xf32, "fragment">
      %4 = "tile.alloc_fragment"() {layout = #tile.layout<#map2, #map3, 1 : i64>, name = "w"} : () -> memref<1000xf32, "fragment">
      %5 = "tile.alloc_fragment"() {layout = #tile.layout<#map4, #map5, 128 : i64>, name = "rms"} : () -> memref<1xf32, "fragment">
      %6 = arith.muli %arg4, %c1 : index
      "tile.parallel"(%c1_3, %c1000_2) ({
      ^bb0(%arg5: index, %arg6: index):
        %7 = arith.addi %6, %arg5 : index
        %8 = memref.load %arg0[%7, %arg6] {tile.pad = 0.000000e+00 : bf16} : memref<?x1000xbf16>
        %9 = arith.extf %8 : bf16 to f32
        memref.store %9, %2[%arg5, %arg6] : memref<1x1000xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.parallel"(%c1000_2) ({
      ^bb0(%arg5: index):
        %7 = memref.load %arg1[%arg5] {tile.pad = 0.000000e+00 : bf16} : memref<1000xbf16>
        %8 = arith.extf %7 : bf16 to f32
        memref.store %8, %4[%arg5] : memref<1000xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 1 : i64>} : (index) -> ()
      "tile.parallel"(%c1, %c1000) ({
      ^bb0(%arg5: index, %arg6: index):
        %7 = memref.load %2[%arg5, %arg6] : memref<1x1000xf32, "fragment">
        %8 = arith.mulf %7, %7 : f32
        memref.store %8, %3[%arg5, %arg6] : memref<1x1000xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.parallel"(%c1_3) ({
      ^bb0(%arg5: index):
        memref.store %cst_0, %5[%arg5] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map4, #map5, 128 : i64>, tile.convergent} : (index) -> ()
      "tile.parallel"(%c1_3, %c1000_2) ({
      ^bb0(%arg5: index, %arg6: index):
        %7 = memref.load %3[%arg5, %arg6] : memref<1x1000xf32, "fragment">
        %8 = memref.load %5[%arg5] : memref<1xf32, "fragment">
        %9 = arith.addf %8, %7 : f32
        memref.store %9, %5[%arg5] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>, tile.accumulate} : (index, index) -> ()
      "tile.parallel"(%c1_3) ({
      ^bb0(%arg5: index):
        %7 = memref.load %5[%arg5] : memref<1xf32, "fragment">
        %shuffleResult, %valid = gpu.shuffle xor %7, %c16_i32, %c32_i32 : f32
        %8 = arith.addf %7, %shuffleResult : f32
        %shuffleResult_4, %valid_5 = gpu.shuffle xor %8, %c8_i32, %c32_i32 : f32
        %9 = arith.addf %8, %shuffleResult_4 : f32
        %shuffleResult_6, %valid_7 = gpu.shuffle xor %9, %c4_i32, %c32_i32 : f32
        %10 = arith.addf %9, %shuffleResult_6 : f32
        %shuffleResult_8, %valid_9 = gpu.shuffle xor %10, %c2_i32, %c32_i32 : f32
        %11 = arith.addf %10, %shuffleResult_8 : f32
        %shuffleResult_10, %valid_11 = gpu.shuffle xor %11, %c1_i32, %c32_i32 : f32
        %12 = arith.addf %11, %shuffleResult_10 : f32
        memref.store %12, %5[%arg5] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map4, #map5, 128 : i64>, tile.convergent} : (index) -> ()
      "tile.parallel"(%c1_3) ({
      ^bb0(%arg5: index):
        %thread_id_x = gpu.thread_id x upper_bound 128
        %7 = arith.remui %thread_id_x, %c32 : index
        %8 = arith.cmpi eq, %7, %c0_1 : index
        %thread_id_x_4 = gpu.thread_id x upper_bound 128
        %9 = arith.divui %thread_id_x_4, %c32 : index
        %10 = arith.remui %9, %c4 : index
        scf.if %8 {
          %11 = memref.load %5[%arg5] : memref<1xf32, "fragment">
          memref.store %11, %1[%arg5, %10] : memref<1x4xf32, "shared">
        }
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map4, #map5, 128 : i64>, tile.all_replicas} : (index) -> ()
      "tile.parallel"(%c1_3) ({
      ^bb0(%arg5: index):
        %7 = scf.for %arg6 = %c0_1 to %c4 step %c1_3 iter_args(%arg7 = %cst_0) -> (f32) {
          %8 = memref.load %1[%arg5, %arg6] : memref<1x4xf32, "shared">
          %9 = arith.addf %arg7, %8 : f32
          scf.yield %9 : f32
        } {tile.unroll}
        memref.store %7, %5[%arg5] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map4, #map5, 128 : i64>} : (index) -> ()
      "tile.parallel"(%c1) ({
      ^bb0(%arg5: index):
        %7 = memref.load %5[%arg5] : memref<1xf32, "fragment">
        %8 = arith.divf %7, %cst : f32
        %9 = arith.addf %8, %arg3 : f32
        %10 = math.rsqrt %9 : f32
        memref.store %10, %5[%arg5] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map4, #map5, 128 : i64>} : (index) -> ()
      "tile.parallel"(%c1, %c1000) ({
      ^bb0(%arg5: index, %arg6: index):
        %7 = memref.load %2[%arg5, %arg6] : memref<1x1000xf32, "fragment">
        %8 = memref.load %5[%arg5] : memref<1xf32, "fragment">
        %9 = memref.load %4[%arg6] : memref<1000xf32, "fragment">
        %10 = arith.mulf %7, %8 : f32
        %11 = arith.mulf %10, %9 : f32
        memref.store %11, %2[%arg5, %arg6] : memref<1x1000xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.parallel"(%c1_3, %c1000_2) ({
      ^bb0(%arg5: index, %arg6: index):
        %7 = memref.load %2[%arg5, %arg6] : memref<1x1000xf32, "fragment">
        %8 = arith.truncf %7 : f32 to bf16
        %9 = arith.addi %6, %arg5 : index
        memref.store %8, %arg2[%9, %arg6] : memref<?x1000xbf16>
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.yield"() : () -> ()
    }) {threads = 128 : i64} : (index) -> ()
    return
  }
}

// -----

// 4 rows, a warp each: no exchange.
// CHECK-LABEL: func.func @rms_rows
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
#map = affine_map<(d0, d1) -> ((d1 floordiv 8) mod 32 + d0 * 32)>
#map1 = affine_map<(d0, d1) -> (d1 mod 8 + (d1 floordiv 256) * 8)>
#map2 = affine_map<(d0)[s0] -> ((d0 floordiv 8) mod 32 + s0 * 32)>
#map3 = affine_map<(d0) -> (d0 mod 8 + (d0 floordiv 256) * 8)>
#map4 = affine_map<(d0)[s0] -> (d0 * 32 + s0)>
#map5 = affine_map<(d0) -> (0)>
module {
  func.func @rms_rows(%arg0: memref<?x4096xbf16>, %arg1: memref<4096xbf16>, %arg2: memref<?x4096xbf16>, %arg3: f32) attributes {tile.entry} {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c4096 = arith.constant 4096 : index
    %cst = arith.constant 4.096000e+03 : f32
    %dim = memref.dim %arg0, %c0 : memref<?x4096xbf16>
    %0 = arith.ceildivui %dim, %c4 : index
    "tile.kernel"(%0) ({
    ^bb0(%arg4: index):
      %c1_i32 = arith.constant 1 : i32
      %c2_i32 = arith.constant 2 : i32
      %c4_i32 = arith.constant 4 : i32
      %c8_i32 = arith.constant 8 : i32
      %c32_i32 = arith.constant 32 : i32
      %c16_i32 = arith.constant 16 : i32
      %cst_0 = arith.constant 0.000000e+00 : f32
      %c0_1 = arith.constant 0 : index
      %c4096_2 = arith.constant 4096 : index
      %c4_3 = arith.constant 4 : index
      %1 = "tile.alloc_fragment"() {layout = #tile.layout<#map, #map1, 1 : i64>, name = "x"} : () -> memref<4x4096xf32, "fragment">
      %2 = "tile.alloc_fragment"() {layout = #tile.layout<#map, #map1, 1 : i64>, name = "sq"} : () -> memref<4x4096xf32, "fragment">
      %3 = "tile.alloc_fragment"() {layout = #tile.layout<#map2, #map3, 4 : i64>, name = "w"} : () -> memref<4096xf32, "fragment">
      %4 = "tile.alloc_fragment"() {layout = #tile.layout<#map4, #map5, 32 : i64>, name = "rms"} : () -> memref<4xf32, "fragment">
      %5 = arith.muli %arg4, %c4 : index
      "tile.parallel"(%c4_3, %c4096_2) ({
      ^bb0(%arg5: index, %arg6: index):
        %6 = arith.addi %5, %arg5 : index
        %7 = memref.load %arg0[%6, %arg6] {tile.pad = 0.000000e+00 : bf16} : memref<?x4096xbf16>
        %8 = arith.extf %7 : bf16 to f32
        memref.store %8, %1[%arg5, %arg6] : memref<4x4096xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.parallel"(%c4096_2) ({
      ^bb0(%arg5: index):
        %6 = memref.load %arg1[%arg5] {tile.pad = 0.000000e+00 : bf16} : memref<4096xbf16>
        %7 = arith.extf %6 : bf16 to f32
        memref.store %7, %3[%arg5] : memref<4096xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 4 : i64>} : (index) -> ()
      "tile.parallel"(%c4, %c4096) ({
      ^bb0(%arg5: index, %arg6: index):
        %6 = memref.load %1[%arg5, %arg6] : memref<4x4096xf32, "fragment">
        %7 = arith.mulf %6, %6 : f32
        memref.store %7, %2[%arg5, %arg6] : memref<4x4096xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.parallel"(%c4_3) ({
      ^bb0(%arg5: index):
        memref.store %cst_0, %4[%arg5] : memref<4xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map4, #map5, 32 : i64>, tile.convergent} : (index) -> ()
      "tile.parallel"(%c4_3, %c4096_2) ({
      ^bb0(%arg5: index, %arg6: index):
        %6 = memref.load %2[%arg5, %arg6] : memref<4x4096xf32, "fragment">
        %7 = memref.load %4[%arg5] : memref<4xf32, "fragment">
        %8 = arith.addf %7, %6 : f32
        memref.store %8, %4[%arg5] : memref<4xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>, tile.accumulate} : (index, index) -> ()
      "tile.parallel"(%c4_3) ({
      ^bb0(%arg5: index):
        %6 = memref.load %4[%arg5] : memref<4xf32, "fragment">
        %shuffleResult, %valid = gpu.shuffle xor %6, %c16_i32, %c32_i32 : f32
        %7 = arith.addf %6, %shuffleResult : f32
        %shuffleResult_4, %valid_5 = gpu.shuffle xor %7, %c8_i32, %c32_i32 : f32
        %8 = arith.addf %7, %shuffleResult_4 : f32
        %shuffleResult_6, %valid_7 = gpu.shuffle xor %8, %c4_i32, %c32_i32 : f32
        %9 = arith.addf %8, %shuffleResult_6 : f32
        %shuffleResult_8, %valid_9 = gpu.shuffle xor %9, %c2_i32, %c32_i32 : f32
        %10 = arith.addf %9, %shuffleResult_8 : f32
        %shuffleResult_10, %valid_11 = gpu.shuffle xor %10, %c1_i32, %c32_i32 : f32
        %11 = arith.addf %10, %shuffleResult_10 : f32
        memref.store %11, %4[%arg5] : memref<4xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map4, #map5, 32 : i64>, tile.convergent} : (index) -> ()
      "tile.parallel"(%c4) ({
      ^bb0(%arg5: index):
        %6 = memref.load %4[%arg5] : memref<4xf32, "fragment">
        %7 = arith.divf %6, %cst : f32
        %8 = arith.addf %7, %arg3 : f32
        %9 = math.rsqrt %8 : f32
        memref.store %9, %4[%arg5] : memref<4xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map4, #map5, 32 : i64>} : (index) -> ()
      "tile.parallel"(%c4, %c4096) ({
      ^bb0(%arg5: index, %arg6: index):
        %6 = memref.load %1[%arg5, %arg6] : memref<4x4096xf32, "fragment">
        %7 = memref.load %4[%arg5] : memref<4xf32, "fragment">
        %8 = memref.load %3[%arg6] : memref<4096xf32, "fragment">
        %9 = arith.mulf %6, %7 : f32
        %10 = arith.mulf %9, %8 : f32
        memref.store %10, %1[%arg5, %arg6] : memref<4x4096xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.parallel"(%c4_3, %c4096_2) ({
      ^bb0(%arg5: index, %arg6: index):
        %6 = memref.load %1[%arg5, %arg6] : memref<4x4096xf32, "fragment">
        %7 = arith.truncf %6 : f32 to bf16
        %8 = arith.addi %5, %arg5 : index
        memref.store %7, %arg2[%8, %arg6] : memref<?x4096xbf16>
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.yield"() : () -> ()
    }) {threads = 128 : i64} : (index) -> ()
    return
  }
}

// -----

// CHECK-LABEL: func.func @sm_1warp
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
#map = affine_map<(d0, d1) -> ((d1 floordiv 8) mod 32)>
#map1 = affine_map<(d0, d1) -> (d1 mod 8 + (d1 floordiv 256) * 8)>
#map2 = affine_map<(d0)[s0] -> (s0)>
#map3 = affine_map<(d0) -> (0)>
module {
  func.func @sm_1warp(%arg0: memref<?x1024xf16>, %arg1: memref<?x1024xf16>) attributes {tile.entry} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c1024 = arith.constant 1024 : index
    %dim = memref.dim %arg0, %c0 : memref<?x1024xf16>
    %0 = arith.ceildivui %dim, %c1 : index
    "tile.kernel"(%0) ({
    ^bb0(%arg2: index):
      %cst = arith.constant 0.000000e+00 : f32
      %c1_i32 = arith.constant 1 : i32
      %c2_i32 = arith.constant 2 : i32
      %c4_i32 = arith.constant 4 : i32
      %c8_i32 = arith.constant 8 : i32
      %c32_i32 = arith.constant 32 : i32
      %c16_i32 = arith.constant 16 : i32
      %cst_0 = arith.constant 0xFF800000 : f32
      %c0_1 = arith.constant 0 : index
      %c1024_2 = arith.constant 1024 : index
      %c1_3 = arith.constant 1 : index
      %1 = "tile.alloc_fragment"() {layout = #tile.layout<#map, #map1, 1 : i64>, name = "x"} : () -> memref<1x1024xf32, "fragment">
      %2 = "tile.alloc_fragment"() {layout = #tile.layout<#map2, #map3, 32 : i64>, name = "m"} : () -> memref<1xf32, "fragment">
      %3 = "tile.alloc_fragment"() {layout = #tile.layout<#map2, #map3, 32 : i64>, name = "s"} : () -> memref<1xf32, "fragment">
      %4 = arith.muli %arg2, %c1 : index
      "tile.parallel"(%c1_3, %c1024_2) ({
      ^bb0(%arg3: index, %arg4: index):
        %5 = arith.addi %4, %arg3 : index
        %6 = memref.load %arg0[%5, %arg4] {tile.pad = 0xFC00 : f16} : memref<?x1024xf16>
        %7 = arith.extf %6 : f16 to f32
        memref.store %7, %1[%arg3, %arg4] : memref<1x1024xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.parallel"(%c1_3) ({
      ^bb0(%arg3: index):
        memref.store %cst_0, %2[%arg3] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 32 : i64>, tile.convergent} : (index) -> ()
      "tile.parallel"(%c1_3, %c1024_2) ({
      ^bb0(%arg3: index, %arg4: index):
        %5 = memref.load %1[%arg3, %arg4] : memref<1x1024xf32, "fragment">
        %6 = memref.load %2[%arg3] : memref<1xf32, "fragment">
        %7 = arith.maximumf %6, %5 : f32
        memref.store %7, %2[%arg3] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>, tile.accumulate} : (index, index) -> ()
      "tile.parallel"(%c1_3) ({
      ^bb0(%arg3: index):
        %5 = memref.load %2[%arg3] : memref<1xf32, "fragment">
        %shuffleResult, %valid = gpu.shuffle xor %5, %c16_i32, %c32_i32 : f32
        %6 = arith.maximumf %5, %shuffleResult : f32
        %shuffleResult_4, %valid_5 = gpu.shuffle xor %6, %c8_i32, %c32_i32 : f32
        %7 = arith.maximumf %6, %shuffleResult_4 : f32
        %shuffleResult_6, %valid_7 = gpu.shuffle xor %7, %c4_i32, %c32_i32 : f32
        %8 = arith.maximumf %7, %shuffleResult_6 : f32
        %shuffleResult_8, %valid_9 = gpu.shuffle xor %8, %c2_i32, %c32_i32 : f32
        %9 = arith.maximumf %8, %shuffleResult_8 : f32
        %shuffleResult_10, %valid_11 = gpu.shuffle xor %9, %c1_i32, %c32_i32 : f32
        %10 = arith.maximumf %9, %shuffleResult_10 : f32
        memref.store %10, %2[%arg3] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 32 : i64>, tile.convergent} : (index) -> ()
      "tile.parallel"(%c1, %c1024) ({
      ^bb0(%arg3: index, %arg4: index):
        %5 = memref.load %1[%arg3, %arg4] : memref<1x1024xf32, "fragment">
        %6 = memref.load %2[%arg3] : memref<1xf32, "fragment">
        %7 = arith.subf %5, %6 : f32
        %8 = math.exp %7 : f32
        memref.store %8, %1[%arg3, %arg4] : memref<1x1024xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.parallel"(%c1_3) ({
      ^bb0(%arg3: index):
        memref.store %cst, %3[%arg3] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 32 : i64>, tile.convergent} : (index) -> ()
      "tile.parallel"(%c1_3, %c1024_2) ({
      ^bb0(%arg3: index, %arg4: index):
        %5 = memref.load %1[%arg3, %arg4] : memref<1x1024xf32, "fragment">
        %6 = memref.load %3[%arg3] : memref<1xf32, "fragment">
        %7 = arith.addf %6, %5 : f32
        memref.store %7, %3[%arg3] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>, tile.accumulate} : (index, index) -> ()
      "tile.parallel"(%c1_3) ({
      ^bb0(%arg3: index):
        %5 = memref.load %3[%arg3] : memref<1xf32, "fragment">
        %shuffleResult, %valid = gpu.shuffle xor %5, %c16_i32, %c32_i32 : f32
        %6 = arith.addf %5, %shuffleResult : f32
        %shuffleResult_4, %valid_5 = gpu.shuffle xor %6, %c8_i32, %c32_i32 : f32
        %7 = arith.addf %6, %shuffleResult_4 : f32
        %shuffleResult_6, %valid_7 = gpu.shuffle xor %7, %c4_i32, %c32_i32 : f32
        %8 = arith.addf %7, %shuffleResult_6 : f32
        %shuffleResult_8, %valid_9 = gpu.shuffle xor %8, %c2_i32, %c32_i32 : f32
        %9 = arith.addf %8, %shuffleResult_8 : f32
        %shuffleResult_10, %valid_11 = gpu.shuffle xor %9, %c1_i32, %c32_i32 : f32
        %10 = arith.addf %9, %shuffleResult_10 : f32
        memref.store %10, %3[%arg3] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 32 : i64>, tile.convergent} : (index) -> ()
      "tile.parallel"(%c1, %c1024) ({
      ^bb0(%arg3: index, %arg4: index):
        %5 = memref.load %1[%arg3, %arg4] : memref<1x1024xf32, "fragment">
        %6 = memref.load %3[%arg3] : memref<1xf32, "fragment">
        %7 = arith.divf %5, %6 : f32
        memref.store %7, %1[%arg3, %arg4] : memref<1x1024xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.parallel"(%c1_3, %c1024_2) ({
      ^bb0(%arg3: index, %arg4: index):
        %5 = memref.load %1[%arg3, %arg4] : memref<1x1024xf32, "fragment">
        %6 = arith.truncf %5 : f32 to f16
        %7 = arith.addi %4, %arg3 : index
        memref.store %6, %arg1[%7, %arg4] : memref<?x1024xf16>
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.yield"() : () -> ()
    }) {threads = 32 : i64} : (index) -> ()
    return
  }
}

// -----

// max, then sum: two exchanges, two barriers.
// CHECK-LABEL: func.func @sm_8warps
// CHECK-COUNT-2: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
#map = affine_map<(d0, d1) -> ((d1 floordiv 8) mod 256)>
#map1 = affine_map<(d0, d1) -> (d1 mod 8 + (d1 floordiv 2048) * 8)>
#map2 = affine_map<(d0)[s0] -> (s0)>
#map3 = affine_map<(d0) -> (0)>
module {
  func.func @sm_8warps(%arg0: memref<?x8192xf16>, %arg1: memref<?x8192xf16>) attributes {tile.entry} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8192 = arith.constant 8192 : index
    %dim = memref.dim %arg0, %c0 : memref<?x8192xf16>
    %0 = arith.ceildivui %dim, %c1 : index
    "tile.kernel"(%0) ({
    ^bb0(%arg2: index):
      %1 = "tile.alloc_shared"() {name = "s_red"} : () -> memref<1x8xf32, "shared">
      %cst = arith.constant 0.000000e+00 : f32
      %c8 = arith.constant 8 : index
      %c32 = arith.constant 32 : index
      %2 = "tile.alloc_shared"() {name = "m_red"} : () -> memref<1x8xf32, "shared">
      %c1_i32 = arith.constant 1 : i32
      %c2_i32 = arith.constant 2 : i32
      %c4_i32 = arith.constant 4 : i32
      %c8_i32 = arith.constant 8 : i32
      %c32_i32 = arith.constant 32 : i32
      %c16_i32 = arith.constant 16 : i32
      %cst_0 = arith.constant 0xFF800000 : f32
      %c0_1 = arith.constant 0 : index
      %c8192_2 = arith.constant 8192 : index
      %c1_3 = arith.constant 1 : index
      %3 = "tile.alloc_fragment"() {layout = #tile.layout<#map, #map1, 1 : i64>, name = "x"} : () -> memref<1x8192xf32, "fragment">
      %4 = "tile.alloc_fragment"() {layout = #tile.layout<#map2, #map3, 256 : i64>, name = "m"} : () -> memref<1xf32, "fragment">
      %5 = "tile.alloc_fragment"() {layout = #tile.layout<#map2, #map3, 256 : i64>, name = "s"} : () -> memref<1xf32, "fragment">
      %6 = arith.muli %arg2, %c1 : index
      "tile.parallel"(%c1_3, %c8192_2) ({
      ^bb0(%arg3: index, %arg4: index):
        %7 = arith.addi %6, %arg3 : index
        %8 = memref.load %arg0[%7, %arg4] {tile.pad = 0xFC00 : f16} : memref<?x8192xf16>
        %9 = arith.extf %8 : f16 to f32
        memref.store %9, %3[%arg3, %arg4] : memref<1x8192xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.parallel"(%c1_3) ({
      ^bb0(%arg3: index):
        memref.store %cst_0, %4[%arg3] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 256 : i64>, tile.convergent} : (index) -> ()
      "tile.parallel"(%c1_3, %c8192_2) ({
      ^bb0(%arg3: index, %arg4: index):
        %7 = memref.load %3[%arg3, %arg4] : memref<1x8192xf32, "fragment">
        %8 = memref.load %4[%arg3] : memref<1xf32, "fragment">
        %9 = arith.maximumf %8, %7 : f32
        memref.store %9, %4[%arg3] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>, tile.accumulate} : (index, index) -> ()
      "tile.parallel"(%c1_3) ({
      ^bb0(%arg3: index):
        %7 = memref.load %4[%arg3] : memref<1xf32, "fragment">
        %shuffleResult, %valid = gpu.shuffle xor %7, %c16_i32, %c32_i32 : f32
        %8 = arith.maximumf %7, %shuffleResult : f32
        %shuffleResult_4, %valid_5 = gpu.shuffle xor %8, %c8_i32, %c32_i32 : f32
        %9 = arith.maximumf %8, %shuffleResult_4 : f32
        %shuffleResult_6, %valid_7 = gpu.shuffle xor %9, %c4_i32, %c32_i32 : f32
        %10 = arith.maximumf %9, %shuffleResult_6 : f32
        %shuffleResult_8, %valid_9 = gpu.shuffle xor %10, %c2_i32, %c32_i32 : f32
        %11 = arith.maximumf %10, %shuffleResult_8 : f32
        %shuffleResult_10, %valid_11 = gpu.shuffle xor %11, %c1_i32, %c32_i32 : f32
        %12 = arith.maximumf %11, %shuffleResult_10 : f32
        memref.store %12, %4[%arg3] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 256 : i64>, tile.convergent} : (index) -> ()
      "tile.parallel"(%c1_3) ({
      ^bb0(%arg3: index):
        %thread_id_x = gpu.thread_id x upper_bound 256
        %7 = arith.remui %thread_id_x, %c32 : index
        %8 = arith.cmpi eq, %7, %c0_1 : index
        %thread_id_x_4 = gpu.thread_id x upper_bound 256
        %9 = arith.divui %thread_id_x_4, %c32 : index
        %10 = arith.remui %9, %c8 : index
        scf.if %8 {
          %11 = memref.load %4[%arg3] : memref<1xf32, "fragment">
          memref.store %11, %2[%arg3, %10] : memref<1x8xf32, "shared">
        }
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 256 : i64>, tile.all_replicas} : (index) -> ()
      "tile.parallel"(%c1_3) ({
      ^bb0(%arg3: index):
        %7 = scf.for %arg4 = %c0_1 to %c8 step %c1_3 iter_args(%arg5 = %cst_0) -> (f32) {
          %8 = memref.load %2[%arg3, %arg4] : memref<1x8xf32, "shared">
          %9 = arith.maximumf %arg5, %8 : f32
          scf.yield %9 : f32
        } {tile.unroll}
        memref.store %7, %4[%arg3] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 256 : i64>} : (index) -> ()
      "tile.parallel"(%c1, %c8192) ({
      ^bb0(%arg3: index, %arg4: index):
        %7 = memref.load %3[%arg3, %arg4] : memref<1x8192xf32, "fragment">
        %8 = memref.load %4[%arg3] : memref<1xf32, "fragment">
        %9 = arith.subf %7, %8 : f32
        %10 = math.exp %9 : f32
        memref.store %10, %3[%arg3, %arg4] : memref<1x8192xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.parallel"(%c1_3) ({
      ^bb0(%arg3: index):
        memref.store %cst, %5[%arg3] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 256 : i64>, tile.convergent} : (index) -> ()
      "tile.parallel"(%c1_3, %c8192_2) ({
      ^bb0(%arg3: index, %arg4: index):
        %7 = memref.load %3[%arg3, %arg4] : memref<1x8192xf32, "fragment">
        %8 = memref.load %5[%arg3] : memref<1xf32, "fragment">
        %9 = arith.addf %8, %7 : f32
        memref.store %9, %5[%arg3] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>, tile.accumulate} : (index, index) -> ()
      "tile.parallel"(%c1_3) ({
      ^bb0(%arg3: index):
        %7 = memref.load %5[%arg3] : memref<1xf32, "fragment">
        %shuffleResult, %valid = gpu.shuffle xor %7, %c16_i32, %c32_i32 : f32
        %8 = arith.addf %7, %shuffleResult : f32
        %shuffleResult_4, %valid_5 = gpu.shuffle xor %8, %c8_i32, %c32_i32 : f32
        %9 = arith.addf %8, %shuffleResult_4 : f32
        %shuffleResult_6, %valid_7 = gpu.shuffle xor %9, %c4_i32, %c32_i32 : f32
        %10 = arith.addf %9, %shuffleResult_6 : f32
        %shuffleResult_8, %valid_9 = gpu.shuffle xor %10, %c2_i32, %c32_i32 : f32
        %11 = arith.addf %10, %shuffleResult_8 : f32
        %shuffleResult_10, %valid_11 = gpu.shuffle xor %11, %c1_i32, %c32_i32 : f32
        %12 = arith.addf %11, %shuffleResult_10 : f32
        memref.store %12, %5[%arg3] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 256 : i64>, tile.convergent} : (index) -> ()
      "tile.parallel"(%c1_3) ({
      ^bb0(%arg3: index):
        %thread_id_x = gpu.thread_id x upper_bound 256
        %7 = arith.remui %thread_id_x, %c32 : index
        %8 = arith.cmpi eq, %7, %c0_1 : index
        %thread_id_x_4 = gpu.thread_id x upper_bound 256
        %9 = arith.divui %thread_id_x_4, %c32 : index
        %10 = arith.remui %9, %c8 : index
        scf.if %8 {
          %11 = memref.load %5[%arg3] : memref<1xf32, "fragment">
          memref.store %11, %1[%arg3, %10] : memref<1x8xf32, "shared">
        }
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 256 : i64>, tile.all_replicas} : (index) -> ()
      "tile.parallel"(%c1_3) ({
      ^bb0(%arg3: index):
        %7 = scf.for %arg4 = %c0_1 to %c8 step %c1_3 iter_args(%arg5 = %cst) -> (f32) {
          %8 = memref.load %1[%arg3, %arg4] : memref<1x8xf32, "shared">
          %9 = arith.addf %arg5, %8 : f32
          scf.yield %9 : f32
        } {tile.unroll}
        memref.store %7, %5[%arg3] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 256 : i64>} : (index) -> ()
      "tile.parallel"(%c1, %c8192) ({
      ^bb0(%arg3: index, %arg4: index):
        %7 = memref.load %3[%arg3, %arg4] : memref<1x8192xf32, "fragment">
        %8 = memref.load %5[%arg3] : memref<1xf32, "fragment">
        %9 = arith.divf %7, %8 : f32
        memref.store %9, %3[%arg3, %arg4] : memref<1x8192xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.parallel"(%c1_3, %c8192_2) ({
      ^bb0(%arg3: index, %arg4: index):
        %7 = memref.load %3[%arg3, %arg4] : memref<1x8192xf32, "fragment">
        %8 = arith.truncf %7 : f32 to f16
        %9 = arith.addi %6, %arg3 : index
        memref.store %8, %arg1[%9, %arg4] : memref<?x8192xf16>
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.yield"() : () -> ()
    }) {threads = 256 : i64} : (index) -> ()
    return
  }
}

// -----

// 4 rows, each over 2 warps.
// CHECK-LABEL: func.func @sm_rows
// CHECK-COUNT-2: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
#map = affine_map<(d0, d1) -> ((d1 floordiv 8) mod 64 + d0 * 64)>
#map1 = affine_map<(d0, d1) -> (d1 mod 8 + (d1 floordiv 512) * 8)>
#map2 = affine_map<(d0)[s0] -> (d0 * 64 + s0)>
#map3 = affine_map<(d0) -> (0)>
module {
  func.func @sm_rows(%arg0: memref<?x4096xf16>, %arg1: memref<?x4096xf16>) attributes {tile.entry} {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %c4096 = arith.constant 4096 : index
    %dim = memref.dim %arg0, %c0 : memref<?x4096xf16>
    %0 = arith.ceildivui %dim, %c4 : index
    "tile.kernel"(%0) ({
    ^bb0(%arg2: index):
      %1 = "tile.alloc_shared"() {name = "s_red"} : () -> memref<4x2xf32, "shared">
      %cst = arith.constant 0.000000e+00 : f32
      %c1 = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c32 = arith.constant 32 : index
      %2 = "tile.alloc_shared"() {name = "m_red"} : () -> memref<4x2xf32, "shared">
      %c1_i32 = arith.constant 1 : i32
      %c2_i32 = arith.constant 2 : i32
      %c4_i32 = arith.constant 4 : i32
      %c8_i32 = arith.constant 8 : i32
      %c32_i32 = arith.constant 32 : i32
      %c16_i32 = arith.constant 16 : i32
      %cst_0 = arith.constant 0xFF800000 : f32
      %c0_1 = arith.constant 0 : index
      %c4096_2 = arith.constant 4096 : index
      %c4_3 = arith.constant 4 : index
      %3 = "tile.alloc_fragment"() {layout = #tile.layout<#map, #map1, 1 : i64>, name = "x"} : () -> memref<4x4096xf32, "fragment">
      %4 = "tile.alloc_fragment"() {layout = #tile.layout<#map2, #map3, 64 : i64>, name = "m"} : () -> memref<4xf32, "fragment">
      %5 = "tile.alloc_fragment"() {layout = #tile.layout<#map2, #map3, 64 : i64>, name = "s"} : () -> memref<4xf32, "fragment">
      %6 = arith.muli %arg2, %c4 : index
      "tile.parallel"(%c4_3, %c4096_2) ({
      ^bb0(%arg3: index, %arg4: index):
        %7 = arith.addi %6, %arg3 : index
        %8 = memref.load %arg0[%7, %arg4] {tile.pad = 0xFC00 : f16} : memref<?x4096xf16>
        %9 = arith.extf %8 : f16 to f32
        memref.store %9, %3[%arg3, %arg4] : memref<4x4096xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.parallel"(%c4_3) ({
      ^bb0(%arg3: index):
        memref.store %cst_0, %4[%arg3] : memref<4xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 64 : i64>, tile.convergent} : (index) -> ()
      "tile.parallel"(%c4_3, %c4096_2) ({
      ^bb0(%arg3: index, %arg4: index):
        %7 = memref.load %3[%arg3, %arg4] : memref<4x4096xf32, "fragment">
        %8 = memref.load %4[%arg3] : memref<4xf32, "fragment">
        %9 = arith.maximumf %8, %7 : f32
        memref.store %9, %4[%arg3] : memref<4xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>, tile.accumulate} : (index, index) -> ()
      "tile.parallel"(%c4_3) ({
      ^bb0(%arg3: index):
        %7 = memref.load %4[%arg3] : memref<4xf32, "fragment">
        %shuffleResult, %valid = gpu.shuffle xor %7, %c16_i32, %c32_i32 : f32
        %8 = arith.maximumf %7, %shuffleResult : f32
        %shuffleResult_4, %valid_5 = gpu.shuffle xor %8, %c8_i32, %c32_i32 : f32
        %9 = arith.maximumf %8, %shuffleResult_4 : f32
        %shuffleResult_6, %valid_7 = gpu.shuffle xor %9, %c4_i32, %c32_i32 : f32
        %10 = arith.maximumf %9, %shuffleResult_6 : f32
        %shuffleResult_8, %valid_9 = gpu.shuffle xor %10, %c2_i32, %c32_i32 : f32
        %11 = arith.maximumf %10, %shuffleResult_8 : f32
        %shuffleResult_10, %valid_11 = gpu.shuffle xor %11, %c1_i32, %c32_i32 : f32
        %12 = arith.maximumf %11, %shuffleResult_10 : f32
        memref.store %12, %4[%arg3] : memref<4xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 64 : i64>, tile.convergent} : (index) -> ()
      "tile.parallel"(%c4_3) ({
      ^bb0(%arg3: index):
        %thread_id_x = gpu.thread_id x upper_bound 256
        %7 = arith.remui %thread_id_x, %c32 : index
        %8 = arith.cmpi eq, %7, %c0_1 : index
        %thread_id_x_4 = gpu.thread_id x upper_bound 256
        %9 = arith.divui %thread_id_x_4, %c32 : index
        %10 = arith.remui %9, %c2 : index
        scf.if %8 {
          %11 = memref.load %4[%arg3] : memref<4xf32, "fragment">
          memref.store %11, %2[%arg3, %10] : memref<4x2xf32, "shared">
        }
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 64 : i64>, tile.all_replicas} : (index) -> ()
      "tile.parallel"(%c4_3) ({
      ^bb0(%arg3: index):
        %7 = scf.for %arg4 = %c0_1 to %c2 step %c1 iter_args(%arg5 = %cst_0) -> (f32) {
          %8 = memref.load %2[%arg3, %arg4] : memref<4x2xf32, "shared">
          %9 = arith.maximumf %arg5, %8 : f32
          scf.yield %9 : f32
        } {tile.unroll}
        memref.store %7, %4[%arg3] : memref<4xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 64 : i64>} : (index) -> ()
      "tile.parallel"(%c4, %c4096) ({
      ^bb0(%arg3: index, %arg4: index):
        %7 = memref.load %3[%arg3, %arg4] : memref<4x4096xf32, "fragment">
        %8 = memref.load %4[%arg3] : memref<4xf32, "fragment">
        %9 = arith.subf %7, %8 : f32
        %10 = math.exp %9 : f32
        memref.store %10, %3[%arg3, %arg4] : memref<4x4096xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.parallel"(%c4_3) ({
      ^bb0(%arg3: index):
        memref.store %cst, %5[%arg3] : memref<4xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 64 : i64>, tile.convergent} : (index) -> ()
      "tile.parallel"(%c4_3, %c4096_2) ({
      ^bb0(%arg3: index, %arg4: index):
        %7 = memref.load %3[%arg3, %arg4] : memref<4x4096xf32, "fragment">
        %8 = memref.load %5[%arg3] : memref<4xf32, "fragment">
        %9 = arith.addf %8, %7 : f32
        memref.store %9, %5[%arg3] : memref<4xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>, tile.accumulate} : (index, index) -> ()
      "tile.parallel"(%c4_3) ({
      ^bb0(%arg3: index):
        %7 = memref.load %5[%arg3] : memref<4xf32, "fragment">
        %shuffleResult, %valid = gpu.shuffle xor %7, %c16_i32, %c32_i32 : f32
        %8 = arith.addf %7, %shuffleResult : f32
        %shuffleResult_4, %valid_5 = gpu.shuffle xor %8, %c8_i32, %c32_i32 : f32
        %9 = arith.addf %8, %shuffleResult_4 : f32
        %shuffleResult_6, %valid_7 = gpu.shuffle xor %9, %c4_i32, %c32_i32 : f32
        %10 = arith.addf %9, %shuffleResult_6 : f32
        %shuffleResult_8, %valid_9 = gpu.shuffle xor %10, %c2_i32, %c32_i32 : f32
        %11 = arith.addf %10, %shuffleResult_8 : f32
        %shuffleResult_10, %valid_11 = gpu.shuffle xor %11, %c1_i32, %c32_i32 : f32
        %12 = arith.addf %11, %shuffleResult_10 : f32
        memref.store %12, %5[%arg3] : memref<4xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 64 : i64>, tile.convergent} : (index) -> ()
      "tile.parallel"(%c4_3) ({
      ^bb0(%arg3: index):
        %thread_id_x = gpu.thread_id x upper_bound 256
        %7 = arith.remui %thread_id_x, %c32 : index
        %8 = arith.cmpi eq, %7, %c0_1 : index
        %thread_id_x_4 = gpu.thread_id x upper_bound 256
        %9 = arith.divui %thread_id_x_4, %c32 : index
        %10 = arith.remui %9, %c2 : index
        scf.if %8 {
          %11 = memref.load %5[%arg3] : memref<4xf32, "fragment">
          memref.store %11, %1[%arg3, %10] : memref<4x2xf32, "shared">
        }
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 64 : i64>, tile.all_replicas} : (index) -> ()
      "tile.parallel"(%c4_3) ({
      ^bb0(%arg3: index):
        %7 = scf.for %arg4 = %c0_1 to %c2 step %c1 iter_args(%arg5 = %cst) -> (f32) {
          %8 = memref.load %1[%arg3, %arg4] : memref<4x2xf32, "shared">
          %9 = arith.addf %arg5, %8 : f32
          scf.yield %9 : f32
        } {tile.unroll}
        memref.store %7, %5[%arg3] : memref<4xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 64 : i64>} : (index) -> ()
      "tile.parallel"(%c4, %c4096) ({
      ^bb0(%arg3: index, %arg4: index):
        %7 = memref.load %3[%arg3, %arg4] : memref<4x4096xf32, "fragment">
        %8 = memref.load %5[%arg3] : memref<4xf32, "fragment">
        %9 = arith.divf %7, %8 : f32
        memref.store %9, %3[%arg3, %arg4] : memref<4x4096xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.parallel"(%c4_3, %c4096_2) ({
      ^bb0(%arg3: index, %arg4: index):
        %7 = memref.load %3[%arg3, %arg4] : memref<4x4096xf32, "fragment">
        %8 = arith.truncf %7 : f32 to f16
        %9 = arith.addi %6, %arg3 : index
        memref.store %8, %arg1[%9, %arg4] : memref<?x4096xf16>
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map, #map1, 1 : i64>} : (index, index) -> ()
      "tile.yield"() : () -> ()
    }) {threads = 256 : i64} : (index) -> ()
    return
  }
}

// -----

// Thread code (tile.thread_loop) with a loop that writes a shared row every thread reads (TileLang's naive
// GEMV): the barriers stand inside the loop, at the top of its body and before the read loop.
// CHECK-LABEL: func.func @gemv
// CHECK: gpu.launch
// CHECK: scf.for
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: scf.for
// CHECK: memref.store {{.*}} : memref<128xf32, "shared">
// CHECK: gpu.barrier
// CHECK-NEXT: scf.for
// CHECK: memref.load {{.*}} : memref<128xf32, "shared">
// CHECK: gpu.terminator
#id = affine_map<(d0) -> (d0)>
#zero = affine_map<(d0) -> (0)>
// TileLang's naive GEMV: each iteration writes the shared row every thread reads. A barrier before the
// read loop (read after the other threads' writes) and one at the top of the body (the next iteration's
// writes after this one's reads); B_s[t, k] is thread t's own row and needs none.
func.func @gemv(%A: memref<256xf32>, %B: memref<128x256xf32>, %C: memref<128xf32>) attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a_s = "tile.alloc_shared"() {name = "A_s"} : () -> memref<128xf32, "shared">
    %b_s = "tile.alloc_shared"() {name = "B_s"} : () -> memref<128x128xf32, "shared">
    %c128 = arith.constant 128 : index
    "tile.parallel"(%c128) ({
    ^bb0(%t: index):
      %c0 = arith.constant 0 : index
      %c1_ = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c128_ = arith.constant 128 : index
      %zero = arith.constant 0.0 : f32
      %acc = scf.for %bk = %c0 to %c2 step %c1_ iter_args(%sum = %zero) -> f32 {
                scf.for %k = %c0 to %c128_ step %c1_ {
          %base = arith.muli %bk, %c128_ : index
          %g = arith.addi %base, %k : index
          %x = memref.load %A[%g] : memref<256xf32>
          memref.store %x, %a_s[%k] : memref<128xf32, "shared">
          %y = memref.load %B[%t, %g] : memref<128x256xf32>
          memref.store %y, %b_s[%t, %k] : memref<128x128xf32, "shared">
        }
                %part = scf.for %k = %c0 to %c128_ step %c1_ iter_args(%s = %sum) -> f32 {
          %x = memref.load %a_s[%k] : memref<128xf32, "shared">
          %y = memref.load %b_s[%t, %k] : memref<128x128xf32, "shared">
          %p = arith.mulf %x, %y : f32
          %n = arith.addf %s, %p : f32
          scf.yield %n : f32
        }
        scf.yield %part : f32
      }
      memref.store %acc, %C[%t] : memref<128xf32>
      "tile.yield"() : () -> ()
    }) {layout = #tile.layout<#id, #zero, 1 : i64>, tile.thread_loop} : (index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

