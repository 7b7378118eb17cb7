// tile.print and tile.device_assert parse, verify and print back (generic form).
// RUN: tile-opt %s | filecheck %s

// CHECK-LABEL: func.func @prints
// CHECK: "tile.print"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {msg = "x * 2", thread = 0 : i64} : (f32, index, index, index) -> ()
// CHECK: "tile.print"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {buffer = "acc", msg = "acc", shape = [4, 8], thread = 32 : i64, tile.unsigned} : (i32, index, index, index, index, index) -> ()
// CHECK: "tile.device_assert"(%{{.*}}) {msg = "x > 0"} : (i1) -> ()
func.func @prints(%x: f32, %n: i32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    "tile.print"(%x, %bx, %c0, %c0) {msg = "x * 2", thread = 0 : i64} : (f32, index, index, index) -> ()
    "tile.print"(%n, %bx, %c0, %c0, %c0, %c1) {msg = "acc", buffer = "acc", shape = [4, 8], thread = 32 : i64, tile.unsigned} : (i32, index, index, index, index, index) -> ()
    %ok = arith.cmpf ogt, %x, %zero : f32
    "tile.device_assert"(%ok) {msg = "x > 0"} : (i1) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}
