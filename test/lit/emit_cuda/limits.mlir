// A block's shared memory beyond what the target arch allows is an error at the buffer that crosses the
// limit (--arch: tilemlir/hardware.py's figures); the source itself does not depend on the arch.
// RUN: emit-cuda %s --arch sm_90a | FileCheck %s --check-prefix=FITS
// RUN: emit-cuda %s | FileCheck %s --check-prefix=FITS
// RUN: not emit-cuda %s --arch sm_86 2>&1 | FileCheck %s --check-prefix=SM86
// RUN: not emit-cuda %s --arch sm_75 2>&1 | FileCheck %s --check-prefix=SM75

// FITS: // grid (M, 1, 1), block (128, 1, 1), 106496 bytes of dynamic shared memory

// 'a' alone fits the 99 KiB of sm_86; 'b' ends past it.
// SM86: big.py:6:9: error: the block needs 106496 bytes (104 KiB) of shared memory ('a' 98304 bytes at offset 0, 'b' 8192 bytes at offset 98304), more than the 101376 bytes (99 KiB) one block may use on sm_86
// SM75: big.py:5:9: error: {{.*}} more than the 65536 bytes (64 KiB) one block may use on sm_75
// SM86-NOT: Traceback
// SM75-NOT: Traceback

module {
  func.func @big(%X: memref<?x128xf32>) attributes {tile.entry, tile.arg_names = ["X"], tile.arg_dims = [["M", 128]],
                                                    tile.symbols = ["M"]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %M = memref.dim %X, %c0 : memref<?x128xf32>
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %M, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
      %a = memref.alloca() {name = "a"} : memref<24576xf32, "shared"> loc("big.py":5:9)
      %b = memref.alloca() {name = "b"} : memref<2048xf32, "shared"> loc("big.py":6:9)
      %v = memref.load %X[%bx, %tx] : memref<?x128xf32>
      memref.store %v, %a[%tx] : memref<24576xf32, "shared">
      memref.store %v, %b[%tx] : memref<2048xf32, "shared">
      %w = memref.load %a[%tx] : memref<24576xf32, "shared">
      memref.store %w, %X[%bx, %tx] : memref<?x128xf32>
      gpu.terminator
    }
    return
  }
}
