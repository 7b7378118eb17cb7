// simulate-threads: tile.print calls into Python from its printing thread only, tile.device_assert in every
// simulated thread where its condition is false, naming that thread (backends/cpu/debug_calls.py).
// RUN: tile-opt %s -p "simulate-threads{check-races=false},canonicalize,cse" | FileCheck %s

// CHECK-LABEL: func.func @k(
// CHECK-SAME: tile.assert_sites = ["{\22msg\22: \22v < 4\22, \22kernel\22: \22k\22, \22where\22: [\22{{[^"]+}}simulate-threads-debug.mlir\22, {{[0-9]+}}, 5]}"]
// CHECK-SAME: tile.print_sites = ["{\22msg\22: \22v\22, \22buffer\22: null, \22shape\22: [], \22kind\22: \22int\22, \22bits\22: 32}"]
// CHECK: scf.for %[[BX:.+]] = %c0 to %dim step %c1 {
// CHECK: %[[BXI:.+]] = arith.index_cast %[[BX]] : index to i64
// CHECK: scf.for %[[LOOP:.+]] = %c0 to %c64 step %c1 {
// CHECK-NEXT: %[[T:.+]] = arith.remui %[[LOOP]], %c64 : index
// CHECK: %[[V:.+]] = scf.if
// CHECK: %[[FAILED:.+]] = arith.cmpi sge, %[[V]], %c4_i32 : i32
// CHECK-NEXT: scf.if %[[FAILED]] {
// CHECK-NEXT: %[[TI:.+]] = arith.index_cast %[[T]] : index to i64
// CHECK-NEXT: func.call @tilemlir_debug_assert_failed(%c0_i64, %[[BXI]], %c0_i64, %c0_i64, %[[TI]])
// CHECK: %[[BITS:.+]] = arith.extsi %[[V]] : i32 to i64
// CHECK-NEXT: %[[MINE:.+]] = arith.cmpi eq, %[[T]], %c32 : index
// CHECK-NEXT: scf.if %[[MINE]] {
// CHECK-NEXT: func.call @tilemlir_debug_print(%c0_i64, %[[BXI]], %c0_i64, %c0_i64, %c32_i64, %c0_i64, %[[BITS]])
// CHECK: } {tile.sim_thread_loop}
// CHECK-NOT: tile.print
// CHECK-NOT: tile.device_assert
func.func @k(%X: memref<?xi32>) attributes {tile.entry, tile.arg_names = ["X"], tile.arg_dims = [["M"]], tile.arg_dtypes = ["int32"], tile.symbols = ["M"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c4 = arith.constant 4 : i32
  %M = memref.dim %X, %c0 : memref<?xi32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %M, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %v = memref.load %X[%tx] : memref<?xi32>
    %ok = arith.cmpi slt, %v, %c4 : i32
    "tile.device_assert"(%ok) {msg = "v < 4"} : (i1) -> ()
    "tile.print"(%v, %bx, %c0, %c0) {msg = "v", thread = 32 : i64} : (i32, index, index, index) -> ()
    gpu.terminator
  }
  return
}
