// lower-gemm-mma: a tile.mma gemm (kept by partition-threads) becomes, per k16 step, ldmatrix x4 of A per
// m-atom, ldmatrix of B per pair of n-atoms (.trans for K x N, x2 for a lone atom) and one mma_sync per atom.
// RUN: tile-opt %s --split-input-file -p lower-gemm-mma | FileCheck %s
// RUN: tile-opt %s --split-input-file -p lower-gemm-mma | tile-opt --split-input-file -o /dev/null

// 32x16 C over 2x1 warps (one m-atom, two n-atoms a warp), K = 32: two k16 steps in a loop unrolled 2.
// Lane l of warp w: A row 16 w + l mod 16, chunk 8 (l / 16); B matrix q = l / 8 is k half q mod 2 of atom q / 2.
// CHECK-LABEL: func.func @shared_operands
// CHECK: %[[AF:.+]] = memref.alloca() {name = "a_frag"} : memref<4xi32, "local">
// CHECK: %[[BF:.+]] = memref.alloca() {name = "b_frag"} : memref<4xi32, "local">
// CHECK: %[[A:.+]] = memref.alloca() {name = "A_s"}
// CHECK: %[[B:.+]] = memref.alloca() {name = "B_s"}
// CHECK: %[[C:.+]] = memref.alloca() {name = "C_f"
// CHECK: %[[TID:.+]] = gpu.thread_id x upper_bound 64
// CHECK: %[[LANE:.+]] = arith.remui %[[TID]], %c32
// CHECK: %[[WARP:.+]] = arith.divui %[[TID]], %c32
// CHECK: %[[WM:.+]] = arith.remui %[[WARP]], %c2
// CHECK: %[[ROW0:.+]] = arith.muli %[[WM]], %c16
// CHECK: %[[LO16:.+]] = arith.remui %[[LANE]], %c16
// CHECK: %[[HI16:.+]] = arith.divui %[[LANE]], %c16
// CHECK: scf.for %[[KS:.+]] = %c0 to %c2 step
// CHECK: %[[K0:.+]] = arith.muli %[[KS]], %c16
// CHECK: %[[ROW:.+]] = arith.addi %[[ROW0]], %[[LO16]]
// CHECK: %[[CHUNK:.+]] = arith.muli %[[HI16]], %c8
// CHECK: %[[COL:.+]] = arith.addi %[[K0]], %[[CHUNK]]
// CHECK: "tile.ldmatrix"(%[[A]], %[[AF]], %[[ROW]], %[[COL]]) {count = 4 : i64, dst_offset = 0 : i64, trans = false}
// CHECK: "tile.ldmatrix"(%[[B]], %[[BF]], %{{.+}}, %{{.+}}) {count = 4 : i64, dst_offset = 0 : i64, trans = true}
// CHECK: "tile.mma_sync"(%[[AF]], %[[BF]], %[[C]]) {a_offset = 0 : i64, b_offset = 0 : i64, c_offset = 0 : i64, operand_type = "f16", shape = "m16n8k16"}
// CHECK: "tile.mma_sync"(%[[AF]], %[[BF]], %[[C]]) {a_offset = 0 : i64, b_offset = 2 : i64, c_offset = 4 : i64, operand_type = "f16", shape = "m16n8k16"}
// CHECK-NEXT: } {tile.name = "ks", tile.unroll = 2 : i64}
// CHECK-NOT: tile.gemm
#c = #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 2) mod 4 + (d0 mod 8) * 4 + (d0 floordiv 16) * 32)>, affine_map<(d0, d1) -> (d1 mod 2 + ((d0 floordiv 8) mod 2) * 2 + (d1 floordiv 8) * 4)>, 1 : i64>
func.func @shared_operands() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %a = memref.alloca() {name = "A_s"} : memref<32x32xf16, "shared">
    %b = memref.alloca() {name = "B_s"} : memref<32x16xf16, "shared">
    %c = memref.alloca() {name = "C_f", tile.layout = #c} : memref<8xf32, "local">
    "tile.gemm"(%a, %b, %c) {tile.gemm_mnk = [32, 16, 32], tile.mma = {shape = "m16n8k16", warps_m = 2 : i64, warps_n = 1 : i64}, transpose_a = false, transpose_b = false} : (memref<32x32xf16, "shared">, memref<32x16xf16, "shared">, memref<8xf32, "local">) -> ()
    gpu.terminator
  }
  return
}

// -----

// Both transposed, bf16, a lone n-atom a warp (N = 8): A loads .trans, B (N x K) plain and x2.
#c = #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 2) mod 4 + (d0 mod 8) * 4)>, affine_map<(d0, d1) -> (d1 mod 2 + ((d0 floordiv 8) mod 2) * 2)>, 1 : i64>
// CHECK-LABEL: func.func @transposed
// CHECK: "tile.ldmatrix"({{.+}}) {count = 4 : i64, dst_offset = 0 : i64, trans = true} : (memref<16x16xbf16, "shared">
// CHECK: "tile.ldmatrix"({{.+}}) {count = 2 : i64, dst_offset = 0 : i64, trans = false} : (memref<8x16xbf16, "shared">
// CHECK: "tile.mma_sync"({{.+}}) {a_offset = 0 : i64, b_offset = 0 : i64, c_offset = 0 : i64, operand_type = "bf16", shape = "m16n8k16"}
func.func @transposed() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %a = memref.alloca() {name = "At_s"} : memref<16x16xbf16, "shared">
    %b = memref.alloca() {name = "Bt_s"} : memref<8x16xbf16, "shared">
    %c = memref.alloca() {name = "C_f", tile.layout = #c} : memref<4xf32, "local">
    "tile.gemm"(%a, %b, %c) {tile.gemm_mnk = [16, 8, 16], tile.mma = {shape = "m16n8k16", warps_m = 1 : i64, warps_n = 1 : i64}, transpose_a = true, transpose_b = true} : (memref<16x16xbf16, "shared">, memref<8x16xbf16, "shared">, memref<4xf32, "local">) -> ()
    gpu.terminator
  }
  return
}

// -----

// A fragment A (f16 registers in the m16k16 layout): no ldmatrix for A, the k16 steps unrolled (offset 8 s).
#a = #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 2) mod 4 + (d0 mod 8) * 4)>, affine_map<(d0, d1) -> (d1 mod 2 + ((d0 floordiv 8) mod 2) * 2 + (d1 floordiv 8) * 4)>, 1 : i64>
#c = #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 2) mod 4 + (d0 mod 8) * 4)>, affine_map<(d0, d1) -> (d1 mod 2 + ((d0 floordiv 8) mod 2) * 2)>, 1 : i64>
// CHECK-LABEL: func.func @fragment_a
// CHECK-NOT: scf.for
// CHECK: "tile.ldmatrix"({{.+}}) {count = 2 : i64, dst_offset = 0 : i64, trans = true}
// CHECK: "tile.mma_sync"(%[[AH:.+]], %{{.+}}, %{{.+}}) {a_offset = 0 : i64, b_offset = 0 : i64, c_offset = 0 : i64, operand_type = "f16"
// CHECK: "tile.ldmatrix"({{.+}}) {count = 2 : i64, dst_offset = 0 : i64, trans = true}
// CHECK: "tile.mma_sync"(%[[AH]], %{{.+}}, %{{.+}}) {a_offset = 8 : i64, b_offset = 0 : i64, c_offset = 0 : i64, operand_type = "f16"
func.func @fragment_a() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %a = memref.alloca() {name = "A_f", tile.layout = #a} : memref<16xf16, "local">
    %b = memref.alloca() {name = "B_s"} : memref<32x8xf16, "shared">
    %c = memref.alloca() {name = "C_f", tile.layout = #c} : memref<4xf32, "local">
    "tile.gemm"(%a, %b, %c) {tile.gemm_mnk = [16, 8, 32], tile.mma = {shape = "m16n8k16", warps_m = 1 : i64, warps_n = 1 : i64}, transpose_a = false, transpose_b = false} : (memref<16xf16, "local">, memref<32x8xf16, "shared">, memref<4xf32, "local">) -> ()
    gpu.terminator
  }
  return
}

// -----

// A fragment A whose layout is written as a wgmma accumulator's over 2 warpgroups (attention's P, copied from
// S = Q K^T on wgmma): warp digit (d0 floordiv 16) mod 4 and warpgroup digit d0 floordiv 64 put every element
// where the 8x1 warp grid's one warp digit d0 floordiv 16 does, so it is that gemm's A layout.
#a = #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 2) mod 4 + (d0 mod 8) * 4 + ((d0 floordiv 16) mod 4) * 32 + (d0 floordiv 64) * 128)>, affine_map<(d0, d1) -> (d1 mod 2 + ((d0 floordiv 8) mod 2) * 2 + (d1 floordiv 8) * 4)>, 1 : i64>
#c = #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 2) mod 4 + (d0 mod 8) * 4 + (d0 floordiv 16) * 32)>, affine_map<(d0, d1) -> (d1 mod 2 + ((d0 floordiv 8) mod 2) * 2)>, 1 : i64>
// CHECK-LABEL: func.func @fragment_a_from_wgmma
// CHECK: "tile.mma_sync"({{.+}}) {a_offset = 0 : i64, b_offset = 0 : i64, c_offset = 0 : i64, operand_type = "bf16"
// CHECK-NOT: tile.gemm
func.func @fragment_a_from_wgmma() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
    %a = memref.alloca() {name = "P", tile.layout = #a} : memref<8xbf16, "local">
    %b = memref.alloca() {name = "V_s"} : memref<16x8xbf16, "shared">
    %c = memref.alloca() {name = "O", tile.layout = #c} : memref<4xf32, "local">
    "tile.gemm"(%a, %b, %c) {tile.gemm_mnk = [128, 8, 16], tile.mma = {shape = "m16n8k16", warps_m = 8 : i64, warps_n = 1 : i64}, transpose_a = false, transpose_b = false} : (memref<8xbf16, "local">, memref<16x8xbf16, "shared">, memref<4xf32, "local">) -> ()
    gpu.terminator
  }
  return
}
