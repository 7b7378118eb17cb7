// tile.print and tile.device_assert in CUDA: printf from the printing thread (the CPU backend's line: the value
// converted by its type, an unsigned integer as unsigned), __assertfail with the message, the Python file and line
// and the kernel.
// RUN: emit-cuda %s | FileCheck %s

// CHECK: const int tx = threadIdx.x;
// CHECK: int [[V:[a-z0-9]+]] = X[bx];
// CHECK: // k.py:7
// CHECK-NEXT: if (!((unsigned int)[[V]] < 4u)) __assertfail("v < 4 \"checked\"", "k.py", 7u, "k", sizeof(char));
// CHECK-NEXT: if (tx == 32) printf("v 100%%: block (%lld, %lld, %lld), thread 32: %llu\n", (long long)bx, 0LL, 0LL,
// CHECK-NEXT: (unsigned long long)(unsigned int)[[V]]);
// CHECK-NEXT: if (tx == 0) printf("f: block (%lld, %lld, %lld), thread 0: X[%lld] = %.9g\n", (long long)bx, 0LL, 0LL,
// CHECK-NEXT: (long long)tx, (double)(float)(unsigned int)[[V]]);
module {
  func.func @k(%X: memref<?xi32>) attributes {tile.entry, tile.arg_names = ["X"], tile.arg_dims = [["M"]], tile.arg_dtypes = ["uint32"], tile.symbols = ["M"]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %c4 = arith.constant 4 : i32
    %M = memref.dim %X, %c0 : memref<?xi32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %M, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
      %v = memref.load %X[%bx] : memref<?xi32>
      %ok = arith.cmpi ult, %v, %c4 : i32
      "tile.device_assert"(%ok) {msg = "v < 4 \"checked\""} : (i1) -> () loc("k.py":7:5)
      "tile.print"(%v, %bx, %c0, %c0) {msg = "v 100%", thread = 32 : i64, tile.unsigned} : (i32, index, index, index) -> ()
      %f = arith.uitofp %v : i32 to f32
      "tile.print"(%f, %bx, %c0, %c0, %tx) {msg = "f", buffer = "X", shape = [64], thread = 0 : i64} : (f32, index, index, index, index) -> ()
      gpu.terminator
    }
    return
  }
}
