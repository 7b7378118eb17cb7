// strip-tile-attributes: every tile.* attribute removed before the conversion to LLVM; others stay.
// RUN: tile-opt %s -p strip-tile-attributes | FileCheck %s

// CHECK-NOT: tile.
// CHECK: func.func @f(%arg0: memref<4xf32>) attributes {other = 2 : i32} {
// CHECK: arith.constant 0 : index
// CHECK-NOT: tile.
module attributes {tile.keep = 1 : i32} {
  func.func @f(%x: memref<4xf32>) attributes {tile.entry, tile.arg_names = ["x"], other = 2 : i32} {
    %c0 = arith.constant {tile.pad = 0.0 : f32} 0 : index
    return
  }
}
