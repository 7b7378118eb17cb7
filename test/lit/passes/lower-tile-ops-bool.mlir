// lower-tile-ops on reductions of bools (i1): max is any and min is all (numpy's max/min of bools),
// so i1 partials combine as unsigned (False < True: arith.maxui / arith.minui) from identities False
// and True; signed i1 (true = -1) would make max an `and`. A sum into an integer counts: each bool
// widens with extui (extsi would add -1 for True).
// RUN: tile-opt %s --split-input-file -p lower-tile-ops | FileCheck %s
// RUN: tile-opt %s --split-input-file -p lower-tile-ops | FileCheck %s --check-prefix=UNSIGNED
// The output verifies and re-parses.
// RUN: tile-opt %s --split-input-file -p lower-tile-ops | tile-opt --split-input-file -o /dev/null
// Nothing anywhere compares or widens a bool as signed.
// UNSIGNED-NOT: arith.maxsi
// UNSIGNED-NOT: arith.minsi
// UNSIGNED-NOT: arith.extsi

#x = #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 4) mod 64)>, affine_map<(d0, d1) -> (d1 mod 4)>, 1 : i64>
#m = #tile.layout<affine_map<(d0)[s0] -> (s0)>, affine_map<(d0) -> (0)>, 64 : i64>
// A fragment row across 2 warps: per-thread partials, butterfly shuffles of i1, a shared exchange.
// CHECK-LABEL: func.func @any_all_count
// CHECK-DAG: %[[CNT_RED:.+]] = "tile.alloc_shared"() {name = "cnt_red"} : () -> memref<1x2xi32, "shared">
// CHECK-DAG: %[[ZERO:.+]] = arith.constant 0 : i32
// CHECK-DAG: %[[ALL_RED:.+]] = "tile.alloc_shared"() {name = "all_red"} : () -> memref<1x2xi1, "shared">
// CHECK-DAG: %[[TRUE:.+]] = arith.constant true
// CHECK-DAG: %[[ANY_RED:.+]] = "tile.alloc_shared"() {name = "any_red"} : () -> memref<1x2xi1, "shared">
// CHECK-DAG: %[[FALSE:.+]] = arith.constant false
// CHECK: %[[X:.+]] = "tile.alloc_fragment"() {{.*}} name = "x"
// CHECK: %[[ANY:.+]] = "tile.alloc_fragment"() {{.*}} name = "any"
// CHECK: %[[ALL:.+]] = "tile.alloc_fragment"() {{.*}} name = "all"
// CHECK: %[[CNT:.+]] = "tile.alloc_fragment"() {{.*}} name = "cnt"
// any: starts False, folds with maxui in each thread, across lanes and across warps.
// CHECK: memref.store %[[FALSE]], %[[ANY]]
// CHECK: %[[XV:.+]] = memref.load %[[X]]
// CHECK: %[[ACC:.+]] = memref.load %[[ANY]]
// CHECK: arith.maxui %[[ACC]], %[[XV]] : i1
// CHECK: %[[S16:[a-zA-Z0-9_]+]], %{{.*}} = gpu.shuffle xor %{{.*}}, %c16_i32, %c32_i32 : i1
// CHECK: arith.maxui %{{.*}}, %[[S16]] : i1
// CHECK: %[[S1:[a-zA-Z0-9_]+]], %{{.*}} = gpu.shuffle xor %{{.*}}, %c1_i32, %c32_i32 : i1
// CHECK: arith.maxui %{{.*}}, %[[S1]] : i1
// CHECK: memref.store {{.*}}, %[[ANY_RED]]
// CHECK: scf.for {{.*}} iter_args(%[[W:.+]] = %[[FALSE]]) -> (i1)
// CHECK: %[[PART:.+]] = memref.load %[[ANY_RED]]
// CHECK: arith.maxui %[[W]], %[[PART]] : i1
// all: starts True, folds with minui.
// CHECK: memref.store %[[TRUE]], %[[ALL]]
// CHECK: %[[XV2:.+]] = memref.load %[[X]]
// CHECK: %[[ACC2:.+]] = memref.load %[[ALL]]
// CHECK: arith.minui %[[ACC2]], %[[XV2]] : i1
// CHECK: %[[T16:[a-zA-Z0-9_]+]], %{{.*}} = gpu.shuffle xor %{{.*}}, %c16_i32, %c32_i32 : i1
// CHECK: arith.minui %{{.*}}, %[[T16]] : i1
// CHECK: memref.store {{.*}}, %[[ALL_RED]]
// CHECK: scf.for {{.*}} iter_args(%[[W2:.+]] = %[[TRUE]]) -> (i1)
// CHECK: %[[PART2:.+]] = memref.load %[[ALL_RED]]
// CHECK: arith.minui %[[W2]], %[[PART2]] : i1
// count: each bool widens to 0/1 and adds.
// CHECK: memref.store %[[ZERO]], %[[CNT]]
// CHECK: %[[XV3:.+]] = memref.load %[[X]]
// CHECK: %[[ONE:.+]] = arith.extui %[[XV3]] : i1 to i32
// CHECK: arith.addi %{{.*}}, %[[ONE]] : i32
// CHECK: gpu.shuffle xor %{{.*}}, %c16_i32, %c32_i32 : i32
// CHECK: memref.store {{.*}}, %[[CNT_RED]]
// CHECK: memref.store {{.*}}, %arg1
// CHECK: memref.store {{.*}}, %arg2
// CHECK: memref.store {{.*}}, %arg3
// CHECK-NOT: "tile.reduce"
func.func @any_all_count(%X: memref<?x256xi1>, %Y: memref<?xi1>, %Z: memref<?xi1>, %C: memref<?xi32>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %n = memref.dim %X, %c0 : memref<?x256xi1>
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x", layout = #x} : () -> memref<1x256xi1, "fragment">
    %any = "tile.alloc_fragment"() {name = "any", layout = #m} : () -> memref<1xi1, "fragment">
    %all = "tile.alloc_fragment"() {name = "all", layout = #m} : () -> memref<1xi1, "fragment">
    %cnt = "tile.alloc_fragment"() {name = "cnt", layout = #m} : () -> memref<1xi32, "fragment">
    "tile.copy"(%X, %x, %bx, %c0, %c0, %c0) {shape = [1, 256]} : (memref<?x256xi1>, memref<1x256xi1, "fragment">, index, index, index, index) -> ()
    "tile.reduce"(%x, %any) {kind = "max", dim = 1 : i64, clear = true} : (memref<1x256xi1, "fragment">, memref<1xi1, "fragment">) -> ()
    "tile.reduce"(%x, %all) {kind = "min", dim = 1 : i64, clear = true} : (memref<1x256xi1, "fragment">, memref<1xi1, "fragment">) -> ()
    "tile.reduce"(%x, %cnt) {kind = "sum", dim = 1 : i64, clear = true} : (memref<1x256xi1, "fragment">, memref<1xi32, "fragment">) -> ()
    "tile.copy"(%any, %Y, %c0, %bx) {shape = [1]} : (memref<1xi1, "fragment">, memref<?xi1>, index, index) -> ()
    "tile.copy"(%all, %Z, %c0, %bx) {shape = [1]} : (memref<1xi1, "fragment">, memref<?xi1>, index, index) -> ()
    "tile.copy"(%cnt, %C, %c0, %bx) {shape = [1]} : (memref<1xi32, "fragment">, memref<?xi32>, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}

// -----

#m = #tile.layout<affine_map<(d0)[s0] -> (d0 + s0 * 4)>, affine_map<(d0) -> (0)>, 8 : i64>
// A shared source reduces serially in one thread per row: the same unsigned combines; with
// clear = false, all starts from the fragment's old value instead of True.
// CHECK-LABEL: func.func @serial_any_all
// CHECK-DAG: %[[FALSE:.+]] = arith.constant false
// CHECK-DAG: %[[S:.+]] = "tile.alloc_shared"() {name = "s"}
// CHECK: %[[ANY:.+]] = "tile.alloc_fragment"() {{.*}} name = "any"
// CHECK: %[[ALL:.+]] = "tile.alloc_fragment"() {{.*}} name = "all"
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.+]] = %[[FALSE]]) -> (i1)
// CHECK: %[[V:.+]] = memref.load %[[S]]
// CHECK: arith.maxui %[[ACC]], %[[V]] : i1
// CHECK: memref.store {{.*}}, %[[ANY]]
// CHECK: %[[OLD:.+]] = memref.load %[[ALL]]
// CHECK: scf.for {{.*}} iter_args(%[[ACC2:.+]] = %[[OLD]]) -> (i1)
// CHECK: %[[V2:.+]] = memref.load %[[S]]
// CHECK: arith.minui %[[ACC2]], %[[V2]] : i1
// CHECK: memref.store {{.*}}, %[[ALL]]
func.func @serial_any_all(%X: memref<4x64xi1>, %Y: memref<4xi1>, %Z: memref<4xi1>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %s = "tile.alloc_shared"() {name = "s"} : () -> memref<4x64xi1, "shared">
    %any = "tile.alloc_fragment"() {name = "any", layout = #m} : () -> memref<4xi1, "fragment">
    %all = "tile.alloc_fragment"() {name = "all", layout = #m} : () -> memref<4xi1, "fragment">
    "tile.copy"(%X, %s, %c0, %c0, %c0, %c0) {shape = [4, 64]} : (memref<4x64xi1>, memref<4x64xi1, "shared">, index, index, index, index) -> ()
    "tile.reduce"(%s, %any) {kind = "max", dim = 1 : i64, clear = true} : (memref<4x64xi1, "shared">, memref<4xi1, "fragment">) -> ()
    "tile.reduce"(%s, %all) {kind = "min", dim = 1 : i64, clear = false} : (memref<4x64xi1, "shared">, memref<4xi1, "fragment">) -> ()
    "tile.copy"(%any, %Y, %c0, %c0) {shape = [4]} : (memref<4xi1, "fragment">, memref<4xi1>, index, index) -> ()
    "tile.copy"(%all, %Z, %c0, %c0) {shape = [4]} : (memref<4xi1, "fragment">, memref<4xi1>, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}
