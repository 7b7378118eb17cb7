// lower-tile-ops on tile IR whose layouts are already set (as infer-layouts leaves it).
// RUN: tile-opt %s --split-input-file -p lower-tile-ops | FileCheck %s
// The output verifies and re-parses.
// RUN: tile-opt %s --split-input-file -p lower-tile-ops | tile-opt --split-input-file -o /dev/null

#x = #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 4) mod 64)>, affine_map<(d0, d1) -> (d1 mod 4)>, 1 : i64>
#m = #tile.layout<affine_map<(d0)[s0] -> (s0)>, affine_map<(d0) -> (0)>, 64 : i64>
// A global read gets tile.pad: here 0, the identity of the absmax it feeds.
// CHECK-LABEL: func.func @row_max
// CHECK: %[[RED:.+]] = "tile.alloc_shared"() {name = "m_red"} : () -> memref<1x2xf32, "shared">
// CHECK: %[[X:.+]] = "tile.alloc_fragment"() {layout = #tile.layout<#[[XT:map[0-9]*]], #[[XR:map[0-9]*]], 1 : i64>, name = "x"}
// CHECK: %[[M:.+]] = "tile.alloc_fragment"() {layout = #tile.layout<#[[MT:map[0-9]*]], #[[MR:map[0-9]*]], 64 : i64>, name = "m"}
// CHECK: "tile.parallel"
// CHECK: memref.load %arg0[{{.*}}] {tile.pad = 0.000000e+00 : f32}
// CHECK: memref.store {{.*}}, %[[X]]
// 1. Every slot of m starts at the identity; with clear = false the thread whose reduced-dim digits
//    are all 0 (lane 0 of warp 0) keeps the old value, so it is counted once.
// CHECK: "tile.parallel"
// CHECK: gpu.thread_id x upper_bound 64
// CHECK: arith.select %{{.*}}, %{{.*}}, %[[ZERO:.+]] : f32
// CHECK: tile.convergent
// 2. Each thread folds its own elements into its copy of m, in order.
// CHECK: "tile.parallel"
// CHECK: math.absf
// CHECK: memref.load %[[M]]
// CHECK: arith.maximumf
// CHECK: memref.store {{.*}}, %[[M]]
// CHECK: tile.accumulate
// 3. Butterfly over the 32 lanes, largest offset first, run by every lane of every warp.
// CHECK: "tile.parallel"
// CHECK: gpu.shuffle xor %{{.*}}, %c16_i32, %c32_i32 : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c8_i32, %c32_i32 : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c4_i32, %c32_i32 : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c2_i32, %c32_i32 : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32, %c32_i32 : f32
// CHECK: tile.convergent
// 4. The row spans 2 warps: lane 0 of each warp writes its partial, every holder combines them.
// CHECK: "tile.parallel"
// CHECK: scf.if
// CHECK: memref.store {{.*}}, %[[RED]]
// CHECK: tile.all_replicas
// CHECK: "tile.parallel"
// CHECK: scf.for {{.*}} iter_args
// CHECK: memref.load %[[RED]]
// CHECK: arith.maximumf
// CHECK: } {tile.unroll}
// CHECK: memref.store {{.*}}, %[[M]]
// CHECK: "tile.parallel"
// CHECK: memref.store {{.*}}, %arg1[{{.*}}] : memref<?xf32>
// CHECK-NOT: "tile.copy"
// CHECK-NOT: "tile.reduce"
func.func @row_max(%X: memref<?x256xf32>, %Y: memref<?xf32>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %n = memref.dim %X, %c0 : memref<?x256xf32>
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x", layout = #x} : () -> memref<1x256xf32, "fragment">
    %m = "tile.alloc_fragment"() {name = "m", layout = #m} : () -> memref<1xf32, "fragment">
    "tile.copy"(%X, %x, %bx, %c0, %c0, %c0) {shape = [1, 256]} : (memref<?x256xf32>, memref<1x256xf32, "fragment">, index, index, index, index) -> ()
    "tile.reduce"(%x, %m) {kind = "absmax", dim = 1 : i64, clear = false} : (memref<1x256xf32, "fragment">, memref<1xf32, "fragment">) -> ()
    "tile.copy"(%m, %Y, %c0, %bx) {shape = [1]} : (memref<1xf32, "fragment">, memref<?xf32>, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}

// -----

// Copies between every level convert element types; a fragment-to-fragment copy between different
// layouts is staged through shared memory; a local buffer is filled by every thread in unrolled loops;
// a buffer-valued atomic_add becomes one scalar atomic_add per element.
// CHECK-LABEL: func.func @copies
// CHECK: %[[STAGE:.+]] = "tile.alloc_shared"() {name = "a_stage"} : () -> memref<32x32xf32, "shared">
// CHECK: %[[S:.+]] = "tile.alloc_shared"() {name = "s"}
// CHECK: %[[L:.+]] = "tile.alloc_local"() {name = "l"}
// CHECK: %[[A:.+]] = "tile.alloc_fragment"() {layout = #tile.layout<#[[AT:map[0-9]*]], #[[AR:map[0-9]*]], 1 : i64>, name = "a"}
// CHECK: %[[B:.+]] = "tile.alloc_fragment"() {layout = #tile.layout<#[[BT:map[0-9]*]], #[[BR:map[0-9]*]], 1 : i64>, name = "b"}
// global -> shared: a coalescing loop of its own.
// CHECK: "tile.parallel"(%{{.*}}, %{{.*}})
// CHECK: memref.load %arg0[{{.*}}] {tile.pad = 0.000000e+00 : f16}
// CHECK: memref.store {{.*}}, %[[S]]
// shared -> local: every thread, all of it.
// CHECK: scf.for
// CHECK: scf.for
// CHECK: memref.load %[[S]]
// CHECK: arith.extf {{.*}} : f16 to f32
// CHECK: memref.store {{.*}}, %[[L]]
// CHECK: } {tile.unroll}
// CHECK: } {tile.unroll}
// shared -> fragment runs over the fragment's layout.
// CHECK: memref.load %[[S]]
// CHECK: memref.store {{.*}}, %[[A]]
// CHECK: }) {layout = #tile.layout<#[[AT]], #[[AR]], 1 : i64>}
// fill
// CHECK: memref.store %cst, %[[B]]
// CHECK: }) {layout = #tile.layout<#[[BT]], #[[BR]], 1 : i64>}
// fragment a -> fragment b (different layouts): a -> stage, stage -> b.
// CHECK: memref.load %[[A]]
// CHECK: memref.store {{.*}}, %[[STAGE]]
// CHECK: }) {layout = #tile.layout<#[[AT]], #[[AR]], 1 : i64>}
// CHECK: memref.load %[[STAGE]]
// CHECK: memref.store {{.*}}, %[[B]]
// CHECK: }) {layout = #tile.layout<#[[BT]], #[[BR]], 1 : i64>}
// CHECK: memref.load %[[B]]
// CHECK: arith.truncf {{.*}} : f32 to f16
// CHECK: memref.store {{.*}}, %arg1
// CHECK: memref.load %[[L]]
// CHECK: "tile.atomic_add"(%arg2, %{{.*}}, %{{.*}}, %{{.*}}) : (memref<4x32xf32>, f32, index, index) -> ()
#t = #tile.layout<affine_map<(d0, d1) -> (d1 floordiv 4 + (d0 mod 16) * 8)>, affine_map<(d0, d1) -> (d1 mod 4 + (d0 floordiv 16) * 4)>, 1 : i64>
#r = #tile.layout<affine_map<(d0, d1) -> (d0 + (d1 floordiv 8) * 32)>, affine_map<(d0, d1) -> (d1 mod 8)>, 1 : i64>
func.func @copies(%X: memref<?x32xf16>, %Y: memref<?x32xf16>, %Acc: memref<4x32xf32>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cst = arith.constant 2.0 : f32
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %s = "tile.alloc_shared"() {name = "s"} : () -> memref<32x32xf16, "shared">
    %l = "tile.alloc_local"() {name = "l"} : () -> memref<4x32xf32, "local">
    %a = "tile.alloc_fragment"() {name = "a", layout = #t} : () -> memref<32x32xf32, "fragment">
    %b = "tile.alloc_fragment"() {name = "b", layout = #r} : () -> memref<32x32xf32, "fragment">
    "tile.copy"(%X, %s, %c0, %c0, %c0, %c0) {shape = [32, 32]} : (memref<?x32xf16>, memref<32x32xf16, "shared">, index, index, index, index) -> ()
    "tile.copy"(%s, %l, %c0, %c0, %c0, %c0) {shape = [4, 32]} : (memref<32x32xf16, "shared">, memref<4x32xf32, "local">, index, index, index, index) -> ()
    "tile.copy"(%s, %a, %c0, %c0, %c0, %c0) {shape = [32, 32]} : (memref<32x32xf16, "shared">, memref<32x32xf32, "fragment">, index, index, index, index) -> ()
    "tile.fill"(%b, %cst) : (memref<32x32xf32, "fragment">, f32) -> ()
    "tile.copy"(%a, %b, %c0, %c0, %c0, %c0) {shape = [32, 32]} : (memref<32x32xf32, "fragment">, memref<32x32xf32, "fragment">, index, index, index, index) -> ()
    "tile.copy"(%b, %Y, %c0, %c0, %c0, %c0) {shape = [32, 32]} : (memref<32x32xf32, "fragment">, memref<?x32xf16>, index, index, index, index) -> ()
    "tile.atomic_add"(%Acc, %l, %c0, %c0) : (memref<4x32xf32>, memref<4x32xf32, "local">, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

#x = #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 8) mod 32)>, affine_map<(d0, d1) -> (d1 mod 8)>, 1 : i64>
#m = #tile.layout<affine_map<(d0)[s0] -> (s0)>, affine_map<(d0) -> (0)>, 32 : i64>
// Unsigned buffers (a uint16 argument by tile.arg_dtypes, allocations marked tile.unsigned): the
// padding and the identity of max are 0, partials combine with maxui, and the copy to float32
// converts with uitofp.
// CHECK-LABEL: func.func @unsigned_row_max
// CHECK: %[[ZERO:.+]] = arith.constant 0 : i16
// CHECK: "tile.alloc_fragment"() {layout = {{.*}}, name = "x", tile.unsigned}
// CHECK: %[[M:.+]] = "tile.alloc_fragment"() {layout = {{.*}}, name = "m", tile.unsigned}
// CHECK: memref.load %arg0[{{.*}}] {tile.pad = 0 : i16}
// CHECK: memref.store %[[ZERO]], %[[M]]
// CHECK: arith.maxui
// CHECK: gpu.shuffle xor %{{.*}}, %c16_i32, %c32_i32 : i16
// CHECK: arith.maxui
// CHECK: memref.load %[[M]]
// CHECK: arith.uitofp {{.*}} : i16 to f32
// CHECK-NOT: arith.maxsi
// CHECK-NOT: arith.sitofp
func.func @unsigned_row_max(%X: memref<?x?xi16>, %Y: memref<?xf32>)
    attributes {tile.entry, tile.arg_dtypes = ["uint16", "float32"]} {
  %c0 = arith.constant 0 : index
  %n = memref.dim %X, %c0 : memref<?x?xi16>
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x", layout = #x, tile.unsigned} : () -> memref<1x256xi16, "fragment">
    %m = "tile.alloc_fragment"() {name = "m", layout = #m, tile.unsigned} : () -> memref<1xi16, "fragment">
    "tile.copy"(%X, %x, %bx, %c0, %c0, %c0) {shape = [1, 256]} : (memref<?x?xi16>, memref<1x256xi16, "fragment">, index, index, index, index) -> ()
    "tile.reduce"(%x, %m) {kind = "max", dim = 1 : i64, clear = true} : (memref<1x256xi16, "fragment">, memref<1xi16, "fragment">) -> ()
    "tile.copy"(%m, %Y, %c0, %bx) {shape = [1]} : (memref<1xi16, "fragment">, memref<?xf32>, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}
