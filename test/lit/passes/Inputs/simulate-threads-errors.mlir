// Constructs simulate-threads cannot run: each is a located error naming it
// (run by ../simulate-threads.mlir).

func.func @divergent_barrier(%Y: memref<?xf32>) {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %first = arith.cmpi ult, %tx, %c32 : index
    // expected-note @+1 {{the condition}}
    scf.if %first {
      // expected-error @+1 {{cannot simulate a gpu.barrier under a thread-dependent condition}}
      gpu.barrier
    }
    gpu.terminator
  }
  return
}

// -----

func.func @thread_dependent_trip_count(%Y: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{its bounds depend on the thread}}
    scf.for %k = %c0 to %tx step %c1 {
      gpu.barrier
    }
    gpu.terminator
  }
  return
}

// -----

func.func @dynamic_block(%Y: memref<?xf32>, %n: index) {
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{block size x is not a constant}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %n, %sy = %c1, %sz = %c1) {
    gpu.terminator
  }
  return
}

// -----

func.func @unsupported(%Y: memref<?xf32>) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %v = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{cannot simulate gpu.subgroup_reduce on the CPU}}
    %r = gpu.subgroup_reduce add %v : (f32) -> f32
    gpu.terminator
  }
  return
}

// -----

func.func @untraceable_descriptor(%d: i64) {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %b = memref.alloca() {name = "B_s"} : memref<128xbf16, "shared">
    %acc = memref.alloca() {name = "C_f"} : memref<4xf32, "local">
    %db = "tile.wgmma_desc"(%b, %c0) {leading_bytes = 16 : i64, stride_bytes = 256 : i64, swizzle = 32 : i64} : (memref<128xbf16, "shared">, index) -> i64
    // expected-error @+1 {{cannot simulate tile.wgmma: its A descriptor traces to no tile.wgmma_desc}}
    "tile.wgmma"(%d, %db, %acc) {n = 8 : i64, operand_type = "bf16", c_offset = 0 : i64, trans_a = false, trans_b = false} : (i64, i64, memref<4xf32, "local">) -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @partial_warpgroup() {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %c96 = arith.constant 96 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c96, %sy = %c1, %sz = %c1) {
    %b = memref.alloca() {name = "B_s"} : memref<128xbf16, "shared">
    %acc = memref.alloca() {name = "C_f"} : memref<4xf32, "local">
    %db = "tile.wgmma_desc"(%b, %c0) {leading_bytes = 16 : i64, stride_bytes = 256 : i64, swizzle = 32 : i64} : (memref<128xbf16, "shared">, index) -> i64
    // expected-error @+1 {{cannot simulate tile.wgmma in a block of 96 threads: it runs on whole warpgroups of 128}}
    "tile.wgmma"(%db, %db, %acc) {n = 8 : i64, operand_type = "bf16", c_offset = 0 : i64, trans_a = false, trans_b = false} : (i64, i64, memref<4xf32, "local">) -> ()
    gpu.terminator
  }
  return
}
