// tma-stores: what it cannot lower is a located error.
// RUN: tile-opt %s --split-input-file --verify-diagnostics -p tma-stores -o /dev/null

// No barrier between the threads' writes of the tile and its store: the barrier planner's, missing.
func.func @unplanned(%C: memref<?x64xf32>) attributes {tile.entry, tile.arg_names = ["C"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %cs = memref.alloca() {name = "C_s"} : memref<16x16xf32, "shared">
    %v = arith.constant 1.0 : f32
    gpu.barrier
    %r = arith.remui %tx, %c16 : index
    memref.store %v, %cs[%r, %c0] : memref<16x16xf32, "shared">
    // expected-error @+1 {{tma-stores: no gpu.barrier stands between the threads' writes of the tile and its TMA store (run partition-threads, whose barrier planner places it, first)}}
    "tile.copy"(%cs, %C, %c0, %c0, %c0, %c16) {shape = [16, 16], tile.tma_store} : (memref<16x16xf32, "shared">, memref<?x64xf32>, index, index, index, index) -> ()
    gpu.terminator
  }
  return
}
