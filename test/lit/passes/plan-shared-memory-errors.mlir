// plan-shared-memory: more than the arch lets one block use is a located error naming the largest buffers.
// RUN: tile-opt %s -p 'plan-shared-memory{arch=sm_90a}' --verify-diagnostics -o /dev/null
// Without the arch option the pass only plans (the CUDA emitter checks the limit of the compile's arch).
// RUN: tile-opt %s -p plan-shared-memory -o /dev/null


// More than sm_90a lets one block use: a located error naming the largest buffers.
func.func @too_big(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %f = arith.constant 1.0 : f32
  // expected-error @+1 {{the block needs 245760 bytes (240 KiB) of shared memory, more than the 232448 bytes (227 KiB) one block may use on sm_90a; the largest buffers: 'Big' 196608 bytes (192 KiB), 'Mid' 49152 bytes (48 KiB)}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    // expected-note @+1 {{'Big' takes 196608 bytes (192 KiB)}}
    %big = memref.alloca() {name = "Big"} : memref<3x128x128xf32, "shared">
    // expected-note @+1 {{'Mid' takes 49152 bytes (48 KiB)}}
    %mid = memref.alloca() {name = "Mid"} : memref<96x128xf32, "shared">
    memref.store %f, %big[%c0, %c0, %tx] : memref<3x128x128xf32, "shared">
    memref.store %f, %mid[%c0, %tx] : memref<96x128xf32, "shared">
    gpu.terminator
  }
  return
}
