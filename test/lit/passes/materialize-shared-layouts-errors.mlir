// materialize-shared-layouts refuses a swizzled buffer used by an op whose indices it cannot rewrite.
// RUN: tile-opt %s -p materialize-shared-layouts --verify-diagnostics -o /dev/null

func.func @unknown_user(%n: index) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %s = memref.alloca() {name = "A_s", tile.swizzle = 128 : i64} : memref<8x64xf16, "shared">
    // expected-error @+1 {{memref.subview uses the swizzled shared buffer 'A_s', but materialize-shared-layouts rewrites only the indices of memref.load, memref.store, tile.atomic_add, tile.cp_async, tile.ldmatrix, tile.stmatrix, tile.tma_load, tile.tma_store, tile.wgmma_desc, vector.load, vector.store (add the op to dialects/shared_access.SHARED_INDEXED)}}
    %v = memref.subview %s[0, 0] [1, 64] [1, 1] : memref<8x64xf16, "shared"> to memref<64xf16, strided<[1]>, "shared">
    gpu.terminator
  }
  return
}
