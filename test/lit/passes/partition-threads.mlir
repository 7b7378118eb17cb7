// partition-threads on lowered tile IR: tile.kernel -> gpu.launch, fragments -> "local" register arrays,
// each tile.parallel -> its per-thread loop nest, and gpu.barrier exactly where shared memory needs one.
// RUN: tile-opt %s --split-input-file -p partition-threads | FileCheck %s
// The output verifies and re-parses.
// RUN: tile-opt %s --split-input-file -p partition-threads | tile-opt --split-input-file -o /dev/null

// A row max over 2 warps (lower-tile-ops' output for T.reduce_absmax(x, m, clear=False)).
// CHECK-LABEL: func.func @row_max
// CHECK: gpu.launch blocks(%[[BX:.+]], %{{.+}}, %{{.+}}) in (%{{.+}} = %dim, %{{.+}} = %c1, %{{.+}} = %c1) threads(%{{.+}}, %{{.+}}, %{{.+}}) in (%{{.+}} = %c64, %{{.+}} = %c1, %{{.+}} = %c1) {
// CHECK: %[[TID:.+]] = gpu.thread_id x upper_bound 64
// CHECK: %[[RED:.+]] = memref.alloca() {name = "m_red"} : memref<1x2xf32, "shared">
// CHECK: %[[X:.+]] = memref.alloca() {name = "x", tile.layout = #tile.layout<{{.*}}>} : memref<4xf32, "local">
// CHECK: %[[M:.+]] = memref.alloca() {name = "m", tile.layout = #tile.layout<{{.*}}, 64 : i64>} : memref<1xf32, "local">
// The copy: register digit d1 mod 4 is the loop, thread digit (d1 floordiv 4) mod 64 is the thread id;
// the global load keeps its logical indices and its tile.pad, the register index is the loop variable.
// CHECK: scf.for %[[R:.+]] = %{{.+}} to %c4 step %{{.+}} {
// CHECK: %[[T4:.+]] = arith.muli %[[TID]], %c4 : index
// CHECK: %[[COL:.+]] = arith.addi %[[R]], %[[T4]] : index
// CHECK: %[[V:.+]] = memref.load %arg0[%{{.+}}, %[[COL]]] {tile.pad = 0.000000e+00 : f32} : memref<?x256xf32>
// CHECK: memref.store %[[V]], %[[X]][%[[R]]] : memref<4xf32, "local">
// CHECK: } {tile.unroll}
// CHECK: arith.select
// CHECK: memref.store %{{.+}}, %[[M]][%{{.+}}] : memref<1xf32, "local">
// CHECK: scf.for
// CHECK: math.absf
// CHECK: } {tile.unroll}
// CHECK-COUNT-5: gpu.shuffle xor
// CHECK: scf.if
// CHECK: memref.store %{{.+}}, %[[RED]]
// CHECK: gpu.barrier
// CHECK: scf.for {{.*}} iter_args
// CHECK: memref.load %[[RED]]
// M is replicated over all 64 threads: only thread 0 writes it to global memory.
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %[[TID]], %{{.+}} : index
// CHECK: scf.if %[[FIRST]] {
// CHECK-NEXT: memref.store %{{.+}}, %arg1[%{{.+}}] : memref<?xf32>
// CHECK-NOT: gpu.barrier
// CHECK-NOT: "tile.
// CHECK: gpu.terminator
#map = affine_map<(d0, d1) -> ((d1 floordiv 4) mod 64)>
#map1 = affine_map<(d0, d1) -> (d1 mod 4)>
#map2 = affine_map<(d0)[s0] -> (s0)>
#map3 = affine_map<(d0) -> (0)>
#map4 = affine_map<(d0, d1) -> (d1 floordiv 4)>
module {
  func.func @row_max(%arg0: memref<?x256xf32>, %arg1: memref<?xf32>) attributes {tile.entry} {
    %c0 = arith.constant 0 : index
    %dim = memref.dim %arg0, %c0 : memref<?x256xf32>
    "tile.kernel"(%dim) ({
    ^bb0(%arg2: index):
      %0 = "tile.alloc_shared"() {name = "m_red"} : () -> memref<1x2xf32, "shared">
      %c1_i32 = arith.constant 1 : i32
      %c2_i32 = arith.constant 2 : i32
      %c4_i32 = arith.constant 4 : i32
      %c8_i32 = arith.constant 8 : i32
      %c32_i32 = arith.constant 32 : i32
      %c16_i32 = arith.constant 16 : i32
      %c2 = arith.constant 2 : index
      %c32 = arith.constant 32 : index
      %cst = arith.constant 0.000000e+00 : f32
      %c0_0 = arith.constant 0 : index
      %c256 = arith.constant 256 : index
      %c1 = arith.constant 1 : index
      %1 = "tile.alloc_fragment"() {layout = #tile.layout<#map, #map1, 1 : i64>, name = "x"} : () -> memref<1x256xf32, "fragment">
      %2 = "tile.alloc_fragment"() {layout = #tile.layout<#map2, #map3, 64 : i64>, name = "m"} : () -> memref<1xf32, "fragment">
      "tile.parallel"(%c1, %c256) ({
      ^bb0(%arg3: index, %arg4: index):
        %3 = arith.addi %arg2, %arg3 : index
        %4 = memref.load %arg0[%3, %arg4] {tile.pad = 0.000000e+00 : f32} : memref<?x256xf32>
        memref.store %4, %1[%arg3, %arg4] : memref<1x256xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map4, #map1, 1 : i64>} : (index, index) -> ()
      "tile.parallel"(%c1) ({
      ^bb0(%arg3: index):
        %thread_id_x = gpu.thread_id x upper_bound 64
        %3 = arith.remui %thread_id_x, %c32 : index
        %4 = arith.cmpi eq, %3, %c0_0 : index
        %thread_id_x_1 = gpu.thread_id x upper_bound 64
        %5 = arith.divui %thread_id_x_1, %c32 : index
        %6 = arith.remui %5, %c2 : index
        %7 = arith.cmpi eq, %6, %c0_0 : index
        %8 = arith.andi %4, %7 : i1
        %9 = memref.load %2[%arg3] : memref<1xf32, "fragment">
        %10 = arith.select %8, %9, %cst : f32
        memref.store %10, %2[%arg3] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 64 : i64>, tile.convergent} : (index) -> ()
      "tile.parallel"(%c1, %c256) ({
      ^bb0(%arg3: index, %arg4: index):
        %3 = memref.load %1[%arg3, %arg4] : memref<1x256xf32, "fragment">
        %4 = math.absf %3 : f32
        %5 = memref.load %2[%arg3] : memref<1xf32, "fragment">
        %6 = arith.maximumf %5, %4 : f32
        memref.store %6, %2[%arg3] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map4, #map1, 1 : i64>, tile.accumulate} : (index, index) -> ()
      "tile.parallel"(%c1) ({
      ^bb0(%arg3: index):
        %3 = memref.load %2[%arg3] : memref<1xf32, "fragment">
        %shuffleResult, %valid = gpu.shuffle xor %3, %c16_i32, %c32_i32 : f32
        %4 = arith.maximumf %3, %shuffleResult : f32
        %shuffleResult_1, %valid_2 = gpu.shuffle xor %4, %c8_i32, %c32_i32 : f32
        %5 = arith.maximumf %4, %shuffleResult_1 : f32
        %shuffleResult_3, %valid_4 = gpu.shuffle xor %5, %c4_i32, %c32_i32 : f32
        %6 = arith.maximumf %5, %shuffleResult_3 : f32
        %shuffleResult_5, %valid_6 = gpu.shuffle xor %6, %c2_i32, %c32_i32 : f32
        %7 = arith.maximumf %6, %shuffleResult_5 : f32
        %shuffleResult_7, %valid_8 = gpu.shuffle xor %7, %c1_i32, %c32_i32 : f32
        %8 = arith.maximumf %7, %shuffleResult_7 : f32
        memref.store %8, %2[%arg3] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 64 : i64>, tile.convergent} : (index) -> ()
      "tile.parallel"(%c1) ({
      ^bb0(%arg3: index):
        %thread_id_x = gpu.thread_id x upper_bound 64
        %3 = arith.remui %thread_id_x, %c32 : index
        %4 = arith.cmpi eq, %3, %c0_0 : index
        %thread_id_x_1 = gpu.thread_id x upper_bound 64
        %5 = arith.divui %thread_id_x_1, %c32 : index
        %6 = arith.remui %5, %c2 : index
        scf.if %4 {
          %7 = memref.load %2[%arg3] : memref<1xf32, "fragment">
          memref.store %7, %0[%arg3, %6] : memref<1x2xf32, "shared">
        }
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 64 : i64>, tile.all_replicas} : (index) -> ()
      "tile.parallel"(%c1) ({
      ^bb0(%arg3: index):
        %3 = scf.for %arg4 = %c0_0 to %c2 step %c1 iter_args(%arg5 = %cst) -> (f32) {
          %4 = memref.load %0[%arg3, %arg4] : memref<1x2xf32, "shared">
          %5 = arith.maximumf %arg5, %4 : f32
          scf.yield %5 : f32
        } {tile.unroll}
        memref.store %3, %2[%arg3] : memref<1xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 64 : i64>} : (index) -> ()
      "tile.parallel"(%c1) ({
      ^bb0(%arg3: index):
        %3 = memref.load %2[%arg3] : memref<1xf32, "fragment">
        %4 = arith.addi %arg2, %arg3 : index
        memref.store %3, %arg1[%4] : memref<?xf32>
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#map2, #map3, 64 : i64>} : (index) -> ()
      "tile.yield"() : () -> ()
    }) {threads = 64 : i64} : (index) -> ()
    return
  }
}

// -----

// Shared memory reused across a serial loop: a barrier before the write of the next iteration (the
// previous one's reads by other threads), one between write and read; after the loop a write by the
// threads that read the same elements needs none, the read by other threads one.
// CHECK-LABEL: func.func @shared_reuse
// CHECK: scf.for
// CHECK-NEXT: arith.muli
// CHECK-NEXT: gpu.barrier
// CHECK: memref.store %{{.+}}, %[[S:.+]][%{{.+}}] : memref<128xf32, "shared">
// CHECK-NEXT: gpu.barrier
// CHECK: memref.load %[[S]]
// CHECK: }
// CHECK-NOT: gpu.barrier
// CHECK: memref.store %{{.+}}, %[[S]][%{{.+}}] : memref<128xf32, "shared">
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: memref.load %[[S]]
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
#w = #tile.layout<affine_map<(d0) -> (d0)>, affine_map<(d0) -> (0)>, 1 : i64>
#r = #tile.layout<affine_map<(d0) -> (d0 floordiv 2 + (d0 mod 2) * 64)>, affine_map<(d0) -> (0)>, 1 : i64>
func.func @shared_reuse(%X: memref<1024xf32>, %Y: memref<128xf32>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %s = "tile.alloc_shared"() {name = "s"} : () -> memref<128xf32, "shared">
    %acc = "tile.alloc_fragment"() {name = "acc", layout = #r} : () -> memref<128xf32, "fragment">
    scf.for %k = %c0 to %c8 step %c1 {
      %base = arith.muli %k, %c128 : index
      "tile.parallel"(%c128) ({
      ^bb0(%i: index):
        %g = arith.addi %base, %i : index
        %v = memref.load %X[%g] : memref<1024xf32>
        memref.store %v, %s[%i] : memref<128xf32, "shared">
        "tile.yield"() : () -> ()
      }) {layout = #w} : (index) -> ()
      "tile.parallel"(%c128) ({
      ^bb0(%i: index):
        %v = memref.load %s[%i] : memref<128xf32, "shared">
        %a = memref.load %acc[%i] : memref<128xf32, "fragment">
        %b = arith.addf %a, %v : f32
        memref.store %b, %acc[%i] : memref<128xf32, "fragment">
        "tile.yield"() : () -> ()
      }) {layout = #r} : (index) -> ()
    }
    "tile.parallel"(%c128) ({
    ^bb0(%i: index):
      %a = memref.load %acc[%i] : memref<128xf32, "fragment">
      memref.store %a, %s[%i] : memref<128xf32, "shared">
      "tile.yield"() : () -> ()
    }) {layout = #r} : (index) -> ()
    "tile.parallel"(%c128) ({
    ^bb0(%i: index):
      %v = memref.load %s[%i] : memref<128xf32, "shared">
      memref.store %v, %Y[%i] : memref<128xf32>
      "tile.yield"() : () -> ()
    }) {layout = #w} : (index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// tile.min_blocks (T.Kernel's min_blocks) moves to the gpu.launch, where the CUDA emitter reads it.
// CHECK-LABEL: func.func @min_blocks
// CHECK: gpu.launch
// CHECK: gpu.terminator
// CHECK-NEXT: } {tile.min_blocks = 4 : i64}
func.func @min_blocks(%X: memref<?xf32>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %n = memref.dim %X, %c0 : memref<?xf32>
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64, tile.min_blocks = 4 : i64} : (index) -> ()
  return
}
