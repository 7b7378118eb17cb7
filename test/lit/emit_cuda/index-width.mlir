// Index width: a block of 1536 elements, a tile that does not divide 2**31. At n = 2**31 - 1 the last
// block's guard bx * 1536 + tx * 4 + 1027 reaches 2**31 + 1023: 32-bit index math would overflow there,
// so the emitter chooses 64 bits, and refuses --index-bits 32 at the guard's Python line.
// RUN: emit-cuda %s | FileCheck %s
// RUN: not emit-cuda %s --index-bits 32 2>&1 | FileCheck %s --check-prefix=NARROW

// CHECK: // grid ((n + 1535) // 1536, 1, 1), block (128, 1, 1), 0 bytes of dynamic shared memory, 64-bit index math
// CHECK: long long n) {
// CHECK: const long long bx = blockIdx.x;
// CHECK: long long idx = bx * 1536;
// CHECK: long long idx1 = tx * 4;
// CHECK: if (idx + (idx1 + 1027) < n) {

// NARROW: add.py:43:13: error: index_bits=32 is not safe for this kernel: the index 'arith.addi' computes here may reach [1027, 2147484671], outside 32-bit int [-2147483648, 2147483647]
// NARROW-NOT: Traceback

module {
  func.func @add(%A: memref<?xf32>, %C: memref<?xf32>) attributes {tile.entry, tile.arg_names = ["A", "C"],
      tile.arg_dims = [["n"], ["n"]], tile.symbols = ["n"]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c128 = arith.constant 128 : index
    %c1027 = arith.constant 1027 : index
    %c1536 = arith.constant 1536 : index
    %n = memref.dim %A, %c0 : memref<?xf32>
    %grid = arith.ceildivui %n, %c1536 : index
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %grid, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
      %base = arith.muli %bx, %c1536 : index
      %lane = arith.muli %tx, %c4 : index
      %last = arith.addi %lane, %c1027 : index
      %end = arith.addi %base, %last : index loc("add.py":43:13)
      %pred = arith.cmpi slt, %end, %n : index
      scf.if %pred {
        %i = arith.addi %base, %lane : index
        %v = memref.load %A[%i] : memref<?xf32>
        memref.store %v, %C[%i] : memref<?xf32>
      }
      gpu.terminator
    }
    return
  }
}
