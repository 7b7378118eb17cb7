// lower-gemm-mma on a wgmma gemm (tile.mma shape m64nNk16): per k16 step, one B descriptor and per 64-row
// block of the warpgroup's tile one A descriptor and one tile.wgmma, inside one fence / commit / wait 0; a
// proxy fence goes before every barrier of a launch whose threads store to shared memory.
// RUN: tile-opt %s --split-input-file -p lower-gemm-mma | FileCheck %s
// RUN: tile-opt %s --split-input-file -p lower-gemm-mma | tile-opt --split-input-file -o /dev/null

// 128x64 C over 2x1 warpgroups (m64n64 each), rings of 128x64 A (K-major) and 64x64 B (N-major), both
// in 128-byte panels: A's stride 8 rows x 128 bytes, B's leading offset the next panel (64 rows x 128 bytes).
// A thread stores A's element (a cp.async copy's store, say): the barrier after it gets the proxy fence.
// CHECK-LABEL: func.func @two_warpgroups_along_m
// CHECK: %[[A:.+]] = memref.alloca() {name = "A_s", tile.swizzle = 128 : i64}
// CHECK: %[[B:.+]] = memref.alloca() {name = "B_s", tile.swizzle = 128 : i64}
// CHECK: %[[C:.+]] = memref.alloca() {name = "C_f"
// CHECK: memref.store
// CHECK-NEXT: "tile.fence_proxy_async"() : () -> ()
// CHECK-NEXT: gpu.barrier
// CHECK: %[[TID:.+]] = gpu.thread_id x upper_bound 256
// CHECK: %[[GROUP:.+]] = arith.divui %[[TID]], %c128
// CHECK: %[[GM:.+]] = arith.remui %[[GROUP]], %c2
// CHECK: %[[ROW0:.+]] = arith.muli %[[GM]], %c64
// CHECK: "tile.wgmma_fence"() : () -> ()
// CHECK: scf.for %[[KS:.+]] = %c0 to %c4 step
// CHECK: %[[K0:.+]] = arith.muli %[[KS]], %c16
// CHECK: %[[DB:.+]] = "tile.wgmma_desc"(%[[B]], %[[SLOT:.+]], %[[K0]], %{{.+}}) {leading_bytes = 8192 : i64, stride_bytes = 1024 : i64, swizzle = 128 : i64}
// CHECK: %[[DA:.+]] = "tile.wgmma_desc"(%[[A]], %[[SLOT]], %[[ROW0]], %[[K0]]) {leading_bytes = 16 : i64, stride_bytes = 1024 : i64, swizzle = 128 : i64}
// CHECK: "tile.wgmma"(%[[DA]], %[[DB]], %[[C]]) {c_offset = 0 : i64, n = 64 : i64, operand_type = "bf16", trans_a = false, trans_b = true}
// CHECK-NEXT: } {tile.name = "ks", tile.unroll = 4 : i64}
// CHECK-NEXT: "tile.wgmma_commit"() : () -> ()
// CHECK-NEXT: "tile.wgmma_wait"() {pending = 0 : i64} : () -> ()
// CHECK-NOT: tile.gemm
#c = #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 2) mod 4 + (d0 mod 8) * 4 + ((d0 floordiv 16) mod 4) * 32 + (d0 floordiv 64) * 128)>, affine_map<(d0, d1) -> (d1 mod 2 + ((d0 floordiv 8) mod 2) * 2 + (d1 floordiv 8) * 4)>, 1 : i64>
func.func @two_warpgroups_along_m(%slot: index) attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
    %a = memref.alloca() {name = "A_s", tile.swizzle = 128 : i64} : memref<2x128x64xbf16, "shared">
    %b = memref.alloca() {name = "B_s", tile.swizzle = 128 : i64} : memref<2x64x64xbf16, "shared">
    %c = memref.alloca() {name = "C_f", tile.layout = #c} : memref<32xf32, "local">
    %zero = arith.constant 0.0 : bf16
    memref.store %zero, %a[%slot, %tx, %tx] : memref<2x128x64xbf16, "shared">
    gpu.barrier
    "tile.gemm"(%a, %b, %c, %slot, %slot) {tile.gemm_mnk = [128, 64, 64], tile.mma = {shape = "m64nNk16", warpgroups_m = 2 : i64, warpgroups_n = 1 : i64}, transpose_a = false, transpose_b = false} : (memref<2x128x64xbf16, "shared">, memref<2x64x64xbf16, "shared">, memref<32xf32, "local">, index, index) -> ()
    gpu.terminator
  }
  return
}

// -----

// 64x64 C over 1x2 warpgroups (m64n32 each): B stored N x K (K-major, 64-byte panels: stride 512), its
// descriptor at the warpgroup's column block; A in 64-byte panels too.
// CHECK-LABEL: func.func @split_n_k_major_b
// CHECK: %[[GROUP:.+]] = arith.divui %{{.+}}, %c128
// CHECK: %[[COL0:.+]] = arith.muli %[[GROUP]], %c32
// CHECK: scf.for
// CHECK: "tile.wgmma_desc"(%{{.+}}, %[[COL0]], %{{.+}}) {leading_bytes = 16 : i64, stride_bytes = 512 : i64, swizzle = 64 : i64}
// CHECK: "tile.wgmma_desc"({{.+}}) {leading_bytes = 16 : i64, stride_bytes = 512 : i64, swizzle = 64 : i64}
// CHECK: "tile.wgmma"({{.+}}) {c_offset = 0 : i64, n = 32 : i64, operand_type = "f16", trans_a = false, trans_b = false}
// CHECK: } {tile.name = "ks", tile.unroll = 2 : i64}
// CHECK-NOT: tile.fence_proxy_async
#c = #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 2) mod 4 + (d0 mod 8) * 4 + (d0 floordiv 16) * 32 + (d1 floordiv 32) * 128)>, affine_map<(d0, d1) -> (d1 mod 2 + ((d0 floordiv 8) mod 2) * 2 + ((d1 floordiv 8) mod 4) * 4)>, 1 : i64>
func.func @split_n_k_major_b() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
    %a = memref.alloca() {name = "A_s", tile.swizzle = 64 : i64} : memref<64x32xf16, "shared">
    %b = memref.alloca() {name = "Bt_s", tile.swizzle = 64 : i64} : memref<64x32xf16, "shared">
    %c = memref.alloca() {name = "C_f", tile.layout = #c} : memref<16xf32, "local">
    "tile.gemm"(%a, %b, %c) {tile.gemm_mnk = [64, 64, 32], tile.mma = {shape = "m64nNk16", warpgroups_m = 1 : i64, warpgroups_n = 2 : i64}, transpose_a = false, transpose_b = true} : (memref<64x32xf16, "shared">, memref<64x32xf16, "shared">, memref<16xf32, "local">) -> ()
    gpu.terminator
  }
  return
}

// -----

// tile.wgmma_pending = 1 (a pipelined loop's gemm): the iteration waits for all but its own batch, and a
// wait for all follows the loop, before anything reads C.
// CHECK-LABEL: func.func @batch_in_flight
// CHECK: scf.for
// CHECK: "tile.wgmma_commit"() : () -> ()
// CHECK-NEXT: "tile.wgmma_wait"() {pending = 1 : i64} : () -> ()
// CHECK-NEXT: }
// CHECK-NEXT: "tile.wgmma_wait"() {pending = 0 : i64} : () -> ()
// CHECK-NEXT: gpu.terminator
#c = #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 2) mod 4 + (d0 mod 8) * 4 + ((d0 floordiv 16) mod 4) * 32)>, affine_map<(d0, d1) -> (d1 mod 2 + ((d0 floordiv 8) mod 2) * 2 + (d1 floordiv 8) * 4)>, 1 : i64>
func.func @batch_in_flight(%n: index) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %a = memref.alloca() {name = "A_s", tile.swizzle = 128 : i64} : memref<64x64xbf16, "shared">
    %b = memref.alloca() {name = "B_s", tile.swizzle = 128 : i64} : memref<64x64xbf16, "shared">
    %c = memref.alloca() {name = "C_f", tile.layout = #c} : memref<32xf32, "local">
    scf.for %k = %c0 to %n step %c1 {
      "tile.gemm"(%a, %b, %c) {tile.gemm_mnk = [64, 64, 64], tile.mma = {shape = "m64nNk16", warpgroups_m = 1 : i64, warpgroups_n = 1 : i64}, tile.wgmma_pending = 1 : i64, transpose_a = false, transpose_b = false} : (memref<64x64xbf16, "shared">, memref<64x64xbf16, "shared">, memref<32xf32, "local">) -> ()
    }
    gpu.terminator
  }
  return
}

// -----

// Shared tiles only TMA writes (a tile.tma ring copy, lowered later by tma-copies): no thread stores to shared
// memory, so the ring's barrier needs no proxy fence (TMA and wgmma are both the async proxy).
// CHECK-LABEL: func.func @tma_fed
// CHECK: gpu.barrier
// CHECK-NOT: tile.fence_proxy_async
// CHECK: "tile.wgmma"
#c = #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 2) mod 4 + (d0 mod 8) * 4 + ((d0 floordiv 16) mod 4) * 32)>, affine_map<(d0, d1) -> (d1 mod 2 + ((d0 floordiv 8) mod 2) * 2 + (d1 floordiv 8) * 4)>, 1 : i64>
func.func @tma_fed(%A: memref<?x64xbf16>, %n: index) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %a = memref.alloca() {name = "A_s", tile.ring, tile.swizzle = 128 : i64} : memref<2x64x64xbf16, "shared">
    %b = memref.alloca() {name = "B_s", tile.swizzle = 128 : i64} : memref<64x64xbf16, "shared">
    %c = memref.alloca() {name = "C_f", tile.layout = #c} : memref<32xf32, "local">
    scf.for %k = %c0 to %n step %c1 {
      gpu.barrier
      %row = arith.muli %k, %c64 : index
      "tile.copy"(%A, %a, %row, %c0, %c0, %c0, %c0) {shape = [1, 64, 64], tile.tma} : (memref<?x64xbf16>, memref<2x64x64xbf16, "shared">, index, index, index, index, index) -> ()
      "tile.gemm"(%a, %b, %c, %c0) {tile.gemm_mnk = [64, 64, 64], tile.mma = {shape = "m64nNk16", warpgroups_m = 1 : i64, warpgroups_n = 1 : i64}, transpose_a = false, transpose_b = false} : (memref<2x64x64xbf16, "shared">, memref<64x64xbf16, "shared">, memref<32xf32, "local">, index) -> ()
    } {tile.num_stages = 2 : i64}
    gpu.terminator
  }
  return
}

// -----

// fp8 (tile.mma shape m64nNk32): 64x64 C, one warpgroup, A e4m3 and B e5m2 both K-major (B stored N x K) in
// 128-byte rows. A k32 step is 32 bytes of K: four steps over K = 128, each one wgmma with B's type named.
// CHECK-LABEL: func.func @fp8_mixed_k32
// CHECK: "tile.wgmma_fence"() : () -> ()
// CHECK: scf.for %[[KS:.+]] = %c0 to %c4 step
// CHECK: %[[K0:.+]] = arith.muli %[[KS]], %c32
// CHECK: %[[DB:.+]] = "tile.wgmma_desc"(%{{.+}}, %{{.+}}, %[[K0]]) {leading_bytes = 16 : i64, stride_bytes = 1024 : i64, swizzle = 128 : i64} : (memref<64x128xf8E5M2, "shared">
// CHECK: %[[DA:.+]] = "tile.wgmma_desc"(%{{.+}}, %{{.+}}, %[[K0]]) {leading_bytes = 16 : i64, stride_bytes = 1024 : i64, swizzle = 128 : i64} : (memref<64x128xf8E4M3FN, "shared">
// CHECK: "tile.wgmma"(%[[DA]], %[[DB]], %{{.+}}) {b_type = "e5m2", c_offset = 0 : i64, n = 64 : i64, operand_type = "e4m3", trans_a = false, trans_b = false}
// CHECK-NEXT: } {tile.name = "ks", tile.unroll = 4 : i64}
// CHECK-NEXT: "tile.wgmma_commit"() : () -> ()
// CHECK-NEXT: "tile.wgmma_wait"() {pending = 0 : i64} : () -> ()
#c = #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 2) mod 4 + (d0 mod 8) * 4 + (d0 floordiv 16) * 32)>, affine_map<(d0, d1) -> (d1 mod 2 + ((d0 floordiv 8) mod 2) * 2 + (d1 floordiv 8) * 4)>, 1 : i64>
func.func @fp8_mixed_k32() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %a = memref.alloca() {name = "A_s", tile.swizzle = 128 : i64} : memref<64x128xf8E4M3FN, "shared">
    %b = memref.alloca() {name = "B_s", tile.swizzle = 128 : i64} : memref<64x128xf8E5M2, "shared">
    %c = memref.alloca() {name = "C_f", tile.layout = #c} : memref<32xf32, "local">
    "tile.gemm"(%a, %b, %c) {tile.gemm_mnk = [64, 64, 128], tile.mma = {shape = "m64nNk32", warpgroups_m = 1 : i64, warpgroups_n = 1 : i64}, transpose_a = false, transpose_b = true} : (memref<64x128xf8E4M3FN, "shared">, memref<64x128xf8E5M2, "shared">, memref<32xf32, "local">) -> ()
    gpu.terminator
  }
  return
}
