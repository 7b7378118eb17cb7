// A symbolic dim of 'tile.arg_dims' that 'tile.symbols' does not name (the emitter reads each symbol as a
// kernel parameter) is a located error at the function, not a KeyError traceback.
// RUN: not emit-cuda %s 2>&1 | FileCheck %s
// CHECK: rows.py:3:0: error: 'tile.symbols' must name each symbolic dim of 'tile.arg_dims' once, ['M', 'N'], got ['M']
// CHECK-NOT: Traceback

module {
  func.func @rows(%X: memref<?x?xf32>) attributes {tile.entry, tile.arg_names = ["X"], tile.arg_dims = [["M", "N"]],
                                                  tile.symbols = ["M"]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %M = memref.dim %X, %c0 : memref<?x?xf32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %M, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
      %v = memref.load %X[%bx, %tx] : memref<?x?xf32>
      memref.store %v, %X[%bx, %tx] : memref<?x?xf32>
      gpu.terminator
    }
    return
  } loc("rows.py":3:0)
}
