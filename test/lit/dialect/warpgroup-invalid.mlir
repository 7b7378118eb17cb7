// Every verifier rule of the warpgroup ops, one chunk each.
// RUN: tile-opt %s --split-input-file --verify-diagnostics

func.func @desc_not_shared(%s: memref<64x64xbf16, "local">, %i: index) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'tile.wgmma_desc' op src must be a shared buffer}}
    %d = "tile.wgmma_desc"(%s, %i, %i) {leading_bytes = 16 : i64, stride_bytes = 1024 : i64, swizzle = 128 : i64} : (memref<64x64xbf16, "local">, index, index) -> i64
    gpu.terminator
  }
  return
}

// -----

func.func @desc_index_count(%s: memref<64x64xbf16, "shared">, %i: index) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'tile.wgmma_desc' op expects 2 indices (rank of src), got 1}}
    %d = "tile.wgmma_desc"(%s, %i) {leading_bytes = 16 : i64, stride_bytes = 1024 : i64, swizzle = 128 : i64} : (memref<64x64xbf16, "shared">, index) -> i64
    gpu.terminator
  }
  return
}

// -----

func.func @desc_stride_not_16(%s: memref<64x64xbf16, "shared">, %i: index) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'tile.wgmma_desc' op 'stride_bytes' must be a positive multiple of 16 below 262144, got 1000}}
    %d = "tile.wgmma_desc"(%s, %i, %i) {leading_bytes = 16 : i64, stride_bytes = 1000 : i64, swizzle = 128 : i64} : (memref<64x64xbf16, "shared">, index, index) -> i64
    gpu.terminator
  }
  return
}

// -----

func.func @desc_swizzle(%s: memref<64x64xbf16, "shared">, %i: index) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'tile.wgmma_desc' op 'swizzle' must be 32, 64 or 128 (bytes), got 16}}
    %d = "tile.wgmma_desc"(%s, %i, %i) {leading_bytes = 16 : i64, stride_bytes = 1024 : i64, swizzle = 16 : i64} : (memref<64x64xbf16, "shared">, index, index) -> i64
    gpu.terminator
  }
  return
}

// -----

func.func @desc_outside_launch(%s: memref<64x64xbf16, "shared">, %i: index) {
  // expected-error @+1 {{'tile.wgmma_desc' op must be inside a gpu.launch (a thread-level op)}}
  %d = "tile.wgmma_desc"(%s, %i, %i) {leading_bytes = 16 : i64, stride_bytes = 1024 : i64, swizzle = 128 : i64} : (memref<64x64xbf16, "shared">, index, index) -> i64
  return
}

// -----

func.func @wgmma_bad_n(%d: i64, %c: memref<128xf32, "local">) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'tile.wgmma' op n must be a multiple of 8 in 8..256, got 100}}
    "tile.wgmma"(%d, %d, %c) {n = 100 : i64, operand_type = "bf16", c_offset = 0 : i64, trans_a = false, trans_b = false} : (i64, i64, memref<128xf32, "local">) -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @wgmma_operand_type(%d: i64, %c: memref<128xf32, "local">) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'tile.wgmma' op operand_type must be one of f16, bf16, e4m3, e5m2, got 'f32'}}
    "tile.wgmma"(%d, %d, %c) {n = 128 : i64, operand_type = "f32", c_offset = 0 : i64, trans_a = false, trans_b = false} : (i64, i64, memref<128xf32, "local">) -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @wgmma_c_slice(%d: i64, %c: memref<128xf32, "local">) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'tile.wgmma' op c slice [96, 160) leaves the 128-element array}}
    "tile.wgmma"(%d, %d, %c) {n = 128 : i64, operand_type = "bf16", c_offset = 96 : i64, trans_a = false, trans_b = false} : (i64, i64, memref<128xf32, "local">) -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @wgmma_c_not_f32(%d: i64, %c: memref<128xf16, "local">) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'tile.wgmma' op c must be a rank-1 "local" f32 register array, got memref<128xf16, "local">}}
    "tile.wgmma"(%d, %d, %c) {n = 128 : i64, operand_type = "f16", c_offset = 0 : i64, trans_a = false, trans_b = false} : (i64, i64, memref<128xf16, "local">) -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @wgmma_wait_pending() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'tile.wgmma_wait' op 'pending' must be an integer in 0..7, got 9 : i64}}
    "tile.wgmma_wait"() {pending = 9 : i64} : () -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @fence_outside_launch() {
  // expected-error @+1 {{'tile.fence_proxy_async' op must be inside a gpu.launch (a thread-level op)}}
  "tile.fence_proxy_async"() : () -> ()
  return
}

// -----

func.func @wgmma_fp8_is_k_major(%d: i64, %c: memref<128xf32, "local">) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'tile.wgmma' op fp8 operands are K-major only: trans_a and trans_b must be false}}
    "tile.wgmma"(%d, %d, %c) {n = 128 : i64, operand_type = "e4m3", c_offset = 0 : i64, trans_a = false, trans_b = true} : (i64, i64, memref<128xf32, "local">) -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @wgmma_types_mix_only_among_fp8(%d: i64, %c: memref<128xf32, "local">) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'tile.wgmma' op A and B types may differ only among the fp8 types e4m3, e5m2, got 'bf16' and 'e4m3'}}
    "tile.wgmma"(%d, %d, %c) {n = 128 : i64, operand_type = "bf16", b_type = "e4m3", c_offset = 0 : i64, trans_a = false, trans_b = false} : (i64, i64, memref<128xf32, "local">) -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @wgmma_b_type_is_a_string(%d: i64, %c: memref<128xf32, "local">) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'tile.wgmma' op 'b_type' must be a string}}
    "tile.wgmma"(%d, %d, %c) {n = 128 : i64, operand_type = "e4m3", b_type = 5 : i64, c_offset = 0 : i64, trans_a = false, trans_b = false} : (i64, i64, memref<128xf32, "local">) -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @setmaxnreg_action() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'tile.setmaxnreg' op 'action' must be one of inc, dec, got "more"}}
    "tile.setmaxnreg"() {action = "more", count = 232 : i64} : () -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @setmaxnreg_not_multiple_of_8() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'tile.setmaxnreg' op 'count' must be a multiple of 8 in 24..256, got 230 : i64}}
    "tile.setmaxnreg"() {action = "inc", count = 230 : i64} : () -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @setmaxnreg_too_many() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'tile.setmaxnreg' op 'count' must be a multiple of 8 in 24..256, got 264 : i64}}
    "tile.setmaxnreg"() {action = "inc", count = 264 : i64} : () -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @setmaxnreg_too_few() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'tile.setmaxnreg' op 'count' must be a multiple of 8 in 24..256, got 16 : i64}}
    "tile.setmaxnreg"() {action = "dec", count = 16 : i64} : () -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @setmaxnreg_outside_launch() {
  // expected-error @+1 {{'tile.setmaxnreg' op must be inside a gpu.launch (a thread-level op)}}
  "tile.setmaxnreg"() {action = "dec", count = 40 : i64} : () -> ()
  return
}

// -----

func.func @named_barrier_zero() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'tile.named_barrier' op 'id' must be an integer in 1..15 (0 is __syncthreads()'s), got 0 : i64}}
    "tile.named_barrier"() {id = 0 : i64, threads = 128 : i64} : () -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @named_barrier_id_too_big() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'tile.named_barrier' op 'id' must be an integer in 1..15 (0 is __syncthreads()'s), got 16 : i64}}
    "tile.named_barrier"() {id = 16 : i64, threads = 128 : i64} : () -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @named_barrier_partial_warp() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'tile.named_barrier' op 'threads' must be a positive multiple of 32 (whole warps), got 100 : i64}}
    "tile.named_barrier"() {id = 1 : i64, threads = 100 : i64} : () -> ()
    gpu.terminator
  }
  return
}
