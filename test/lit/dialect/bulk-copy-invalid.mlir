// Every verifier rule of the TMA, mbarrier and bulk-group ops, one chunk each.
// RUN: tile-opt %s --split-input-file --verify-diagnostics

func.func @init_count() attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %full = memref.alloca() {name = "full"} : memref<2xi64, "shared">
    // expected-error @+1 {{'tile.mbarrier_init' op 'count' must be an arrival count in 1..1048575, got 0}}
    "tile.mbarrier_init"(%full, %c0) {count = 0 : i64} : (memref<2xi64, "shared">, index) -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @bars_not_i64() attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %full = memref.alloca() {name = "full"} : memref<2xi32, "shared">
    // expected-error @+1 {{'tile.mbarrier_arrive' op bars must be a rank-1 shared array of i64 mbarriers, got memref<2xi32, "shared">}}
    "tile.mbarrier_arrive"(%full, %c0) : (memref<2xi32, "shared">, index) -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @expect_tx_bytes() attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %full = memref.alloca() {name = "full"} : memref<2xi64, "shared">
    // expected-error @+1 {{'tile.mbarrier_arrive_expect_tx' op 'bytes' must be in 1..1048575, got 2000000}}
    "tile.mbarrier_arrive_expect_tx"(%full, %c0) {bytes = 2000000 : i64} : (memref<2xi64, "shared">, index) -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @undeclared_map(%A: memref<?x64xbf16>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %full = memref.alloca() {name = "full"} : memref<2xi64, "shared">
    %a = memref.alloca() {name = "A_s"} : memref<128x64xbf16, "shared">
    // expected-error @+1 {{'tile.tma_load' op tensor map 'A_map' is not declared in the function's 'tile.tensor_maps'}}
    "tile.tma_load"(%a, %full, %c0, %c0, %c0, %c0, %c0) {map = "A_map"} : (memref<128x64xbf16, "shared">, memref<2xi64, "shared">, index, index, index, index, index) -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @box_too_wide(%A: memref<?x256xbf16>) attributes {tile.entry, tile.tensor_maps = {A_map = {box = [64, 128], swizzle = 128 : i64, tensor = 0 : i64}}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %full = memref.alloca() {name = "full"} : memref<2xi64, "shared">
    %a = memref.alloca() {name = "A_s"} : memref<64x128xbf16, "shared">
    // expected-error @+1 {{'tile.tma_load' op tensor map 'A_map': the box's inner dim is 256 bytes: it must be a multiple of 16 and, swizzled, at most the 128-byte swizzle}}
    "tile.tma_load"(%a, %full, %c0, %c0, %c0, %c0, %c0) {map = "A_map"} : (memref<64x128xbf16, "shared">, memref<2xi64, "shared">, index, index, index, index, index) -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @coordinate_count(%A: memref<?x64xbf16>) attributes {tile.entry, tile.tensor_maps = {A_map = {box = [128, 64], swizzle = 128 : i64, tensor = 0 : i64}}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %full = memref.alloca() {name = "full"} : memref<2xi64, "shared">
    %a = memref.alloca() {name = "A_s"} : memref<128x64xbf16, "shared">
    // expected-error @+1 {{'tile.tma_load' op expects 2 dst indices, a barrier index and 2 coordinates (the rank of tensor map 'A_map'), got 4 index operands}}
    "tile.tma_load"(%a, %full, %c0, %c0, %c0, %c0) {map = "A_map"} : (memref<128x64xbf16, "shared">, memref<2xi64, "shared">, index, index, index, index) -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @element_type(%A: memref<?x64xf16>) attributes {tile.entry, tile.tensor_maps = {A_map = {box = [128, 64], swizzle = 128 : i64, tensor = 0 : i64}}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %full = memref.alloca() {name = "full"} : memref<2xi64, "shared">
    %a = memref.alloca() {name = "A_s"} : memref<128x64xbf16, "shared">
    // expected-error @+1 {{'tile.tma_load' op dst holds bf16 but tensor map 'A_map' describes f16}}
    "tile.tma_load"(%a, %full, %c0, %c0, %c0, %c0, %c0) {map = "A_map"} : (memref<128x64xbf16, "shared">, memref<2xi64, "shared">, index, index, index, index, index) -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @map_not_a_tensor(%n: index) attributes {tile.entry, tile.tensor_maps = {A_map = {box = [128, 64], swizzle = 128 : i64, tensor = 0 : i64}}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %full = memref.alloca() {name = "full"} : memref<2xi64, "shared">
    %a = memref.alloca() {name = "A_s"} : memref<128x64xbf16, "shared">
    // expected-error @+1 {{'tile.tma_load' op tensor map 'A_map': 'tensor' = 0 is not a global tensor argument of the function}}
    "tile.tma_load"(%a, %full, %c0, %c0, %c0, %c0, %c0) {map = "A_map"} : (memref<128x64xbf16, "shared">, memref<2xi64, "shared">, index, index, index, index, index) -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @fence_outside_launch() {
  // expected-error @+1 {{'tile.fence_mbarrier_init' op must be inside a gpu.launch (a thread-level op)}}
  "tile.fence_mbarrier_init"() : () -> ()
  return
}

// -----

func.func @store_src_not_shared(%C: memref<?x64xbf16>) attributes {tile.entry, tile.tensor_maps = {C_map = {box = [128, 64], swizzle = 128 : i64, tensor = 0 : i64}}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %c_s = memref.alloca() {name = "C_l"} : memref<128x64xbf16, "local">
    // expected-error @+1 {{'tile.tma_store' op src must be a shared buffer, got memref<128x64xbf16, "local">}}
    "tile.tma_store"(%c_s, %c0, %c0, %c0, %c0) {map = "C_map"} : (memref<128x64xbf16, "local">, index, index, index, index) -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @store_undeclared_map(%C: memref<?x64xbf16>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %c_s = memref.alloca() {name = "C_s"} : memref<128x64xbf16, "shared">
    // expected-error @+1 {{'tile.tma_store' op tensor map 'C_map' is not declared in the function's 'tile.tensor_maps'}}
    "tile.tma_store"(%c_s, %c0, %c0, %c0, %c0) {map = "C_map"} : (memref<128x64xbf16, "shared">, index, index, index, index) -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @store_coordinate_count(%C: memref<?x64xbf16>) attributes {tile.entry, tile.tensor_maps = {C_map = {box = [128, 64], swizzle = 128 : i64, tensor = 0 : i64}}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %c_s = memref.alloca() {name = "C_s"} : memref<128x64xbf16, "shared">
    // expected-error @+1 {{'tile.tma_store' op expects 2 src indices and 2 coordinates (the rank of tensor map 'C_map'), got 3 index operands}}
    "tile.tma_store"(%c_s, %c0, %c0, %c0) {map = "C_map"} : (memref<128x64xbf16, "shared">, index, index, index) -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @store_element_type(%C: memref<?x64xf16>) attributes {tile.entry, tile.tensor_maps = {C_map = {box = [128, 64], swizzle = 128 : i64, tensor = 0 : i64}}} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %c_s = memref.alloca() {name = "C_s"} : memref<128x64xbf16, "shared">
    // expected-error @+1 {{'tile.tma_store' op src holds bf16 but tensor map 'C_map' describes f16}}
    "tile.tma_store"(%c_s, %c0, %c0, %c0, %c0) {map = "C_map"} : (memref<128x64xbf16, "shared">, index, index, index, index) -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @wait_pending_range() attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    // expected-error @+1 {{'tile.bulk_wait_group_read' op 'pending' must be an integer in 0..63, got 64 : i64}}
    "tile.bulk_wait_group_read"() {pending = 64 : i64} : () -> ()
    gpu.terminator
  }
  return
}

// -----

func.func @store_outside_launch(%C: memref<?x64xbf16>) attributes {tile.entry, tile.tensor_maps = {C_map = {box = [128, 64], swizzle = 128 : i64, tensor = 0 : i64}}} {
  %c0 = arith.constant 0 : index
  %c_s = memref.alloca() {name = "C_s"} : memref<128x64xbf16, "shared">
  // expected-error @+1 {{'tile.tma_store' op must be inside a gpu.launch (a thread-level op)}}
  "tile.tma_store"(%c_s, %c0, %c0, %c0, %c0) {map = "C_map"} : (memref<128x64xbf16, "shared">, index, index, index, index) -> ()
  return
}

// -----

func.func @commit_outside_launch() {
  // expected-error @+1 {{'tile.bulk_commit_group' op must be inside a gpu.launch (a thread-level op)}}
  "tile.bulk_commit_group"() : () -> ()
  return
}

// -----

func.func @wait_outside_launch() {
  // expected-error @+1 {{'tile.bulk_wait_group_read' op must be inside a gpu.launch (a thread-level op)}}
  "tile.bulk_wait_group_read"() {pending = 0 : i64} : () -> ()
  return
}
