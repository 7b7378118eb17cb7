// lower-tile-to-loops: tile.print and tile.device_assert become calls into Python (backends/cpu/debug_calls.py),
// once per block: a print with its site number, the block, the printing thread, the element's row-major number
// and the value's bits (a float widened to f64); an assertion calls only where its condition is false (thread -1:
// the tile level has no threads). Each op's text is a JSON site of the function.
// RUN: tile-opt %s -p lower-tile-to-loops,canonicalize,cse | FileCheck %s

// CHECK: func.func private @tilemlir_debug_print(i64, i64, i64, i64, i64, i64, i64)
// CHECK: func.func private @tilemlir_debug_assert_failed(i64, i64, i64, i64, i64)
// CHECK-LABEL: func.func @k(
// CHECK-SAME: tile.assert_sites = ["{\22msg\22: \22x > 0\22, \22kernel\22: \22k\22, \22where\22: [\22{{[^"]+}}lower-tile-to-loops-debug.mlir\22, {{[0-9]+}}, 5]}"]
// CHECK-SAME: tile.print_sites = ["{\22msg\22: \22x\22, \22buffer\22: null, \22shape\22: [], \22kind\22: \22float\22, \22bits\22: 32}", "{\22msg\22: \22s\22, \22buffer\22: \22s\22, \22shape\22: [2, 4], \22kind\22: \22uint\22, \22bits\22: 16}"]
// CHECK: scf.for %[[BX:.+]] = %c0 to %c3 step %c1 {
// CHECK: %[[BXI:.+]] = arith.index_cast %[[BX]] : index to i64
// CHECK: %[[WIDE:.+]] = arith.extf %arg0 : f32 to f64
// CHECK-NEXT: %[[BITS:.+]] = arith.bitcast %[[WIDE]] : f64 to i64
// CHECK-NEXT: call @tilemlir_debug_print(%c0_i64, %[[BXI]], %c0_i64, %c0_i64, %c32_i64, %c0_i64, %[[BITS]])
// CHECK: scf.for %[[I:.+]] = %c0 to %c2 step %c1 {
// CHECK-NEXT: scf.for %[[J:.+]] = %c0 to %c4 step %c1 {
// CHECK-NEXT: %[[V:.+]] = memref.load %{{.+}}[%[[I]], %[[J]]] : memref<2x4xi16>
// CHECK: %[[ROW:.+]] = arith.muli %[[I]], %c4 : index
// CHECK-NEXT: %[[LINEAR:.+]] = arith.addi %[[J]], %[[ROW]] : index
// CHECK: %[[N:.+]] = arith.index_cast %[[LINEAR]] : index to i64
// CHECK-NEXT: %[[U:.+]] = arith.extui %[[V]] : i16 to i64
// CHECK-NEXT: call @tilemlir_debug_print(%c1_i64, %[[BXI]], %c0_i64, %c0_i64, %c0_i64, %[[N]], %[[U]])
// CHECK: %[[OK:.+]] = arith.cmpf ogt, %arg0, %cst : f32
// CHECK-NEXT: %[[FAILED:.+]] = arith.xori %[[OK]], %true : i1
// CHECK-NEXT: scf.if %[[FAILED]] {
// CHECK-NEXT: call @tilemlir_debug_assert_failed(%c0_i64, %[[BXI]], %c0_i64, %c0_i64, %c-1_i64)
// CHECK-NOT: tile.print
// CHECK-NOT: tile.device_assert
func.func @k(%x: f32) attributes {tile.entry, tile.arg_names = ["x"], tile.arg_dims = [[]], tile.arg_dtypes = ["float32"], tile.symbols = []} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  "tile.kernel"(%c3) ({
  ^bb0(%bx: index):
    %s = "tile.alloc_shared"() {name = "s", tile.unsigned} : () -> memref<2x4xi16, "shared">
    "tile.print"(%x, %bx, %c0, %c0) {msg = "x", thread = 32 : i64} : (f32, index, index, index) -> ()
    scf.for %i = %c0 to %c2 step %c1 {
      scf.for %j = %c0 to %c4 step %c1 {
        %v = memref.load %s[%i, %j] : memref<2x4xi16, "shared">
        "tile.print"(%v, %bx, %c0, %c0, %i, %j) {msg = "s", buffer = "s", shape = [2, 4], thread = 0 : i64, tile.unsigned} : (i16, index, index, index, index, index) -> ()
      }
    }
    %ok = arith.cmpf ogt, %x, %zero : f32
    "tile.device_assert"(%ok) {msg = "x > 0"} : (i1) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}
