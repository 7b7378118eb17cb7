// tma-copies refuses tile.tma copies that plan-pipeline did not lay out, with the reason at the copy.
// RUN: tile-opt %s --split-input-file --verify-diagnostics -p tma-copies

// A loop that is not a pipelined one (no tile.num_stages).
func.func @plain_loop(%A: memref<?x64xbf16>, %n: index) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %a = memref.alloca() {name = "A_s", tile.ring, tile.swizzle = 128 : i64} : memref<2x64x64xbf16, "shared">
    scf.for %k = %c0 to %n step %c1 {
      // expected-error @+1 {{a tile.tma copy must be in a pipelined loop (scf.for with tile.num_stages) or before it: run plan-pipeline{tma=true} and partition-threads first}}
      "tile.copy"(%A, %a, %k, %c0, %c0, %c0, %c0) {shape = [1, 64, 64], tile.tma} : (memref<?x64xbf16>, memref<2x64x64xbf16, "shared">, index, index, index, index, index) -> ()
    }
    gpu.terminator
  }
  return
}

// -----

// A ring filled only before any loop.
func.func @prologue_only(%A: memref<?x64xbf16>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %a = memref.alloca() {name = "A_s", tile.ring, tile.swizzle = 128 : i64} : memref<2x64x64xbf16, "shared">
    // expected-error @+1 {{a tile.tma copy's ring has no copy in a pipelined loop (plan-pipeline issues every tile after the prologue's in the loop)}}
    "tile.copy"(%A, %a, %c0, %c0, %c0, %c0, %c0) {shape = [1, 64, 64], tile.tma} : (memref<?x64xbf16>, memref<2x64x64xbf16, "shared">, index, index, index, index, index) -> ()
    gpu.terminator
  }
  return
}
