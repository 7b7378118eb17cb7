// select-mma: an f16/bf16 gemm whose C tiles into m16n8 atoms per warp gets tile.mma with its warp grid.
// RUN: tile-opt %s --split-input-file -p select-mma | FileCheck %s
// RUN: tile-opt %s --split-input-file -p select-mma | tile-opt --split-input-file -o /dev/null

// 128x128 C over 4 warps: the squarest split is 2x2 (64x64 a warp).
// CHECK-LABEL: func.func @square
// CHECK: "tile.gemm"{{.*}}tile.mma = {shape = "m16n8k16", warps_m = 2 : i64, warps_n = 2 : i64}
func.func @square() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<128x32xf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<32x128xf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<128x128xf32, "fragment">
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false} : (memref<128x32xf16, "shared">, memref<32x128xf16, "shared">, memref<128x128xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// 8 warps on 128x64 bf16 with B transposed: 4x2 (32x32 a warp) is the squarest.
// CHECK-LABEL: func.func @eight_warps
// CHECK: "tile.gemm"{{.*}}tile.mma = {shape = "m16n8k16", warps_m = 4 : i64, warps_n = 2 : i64}
func.func @eight_warps() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<128x64xbf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<64x64xbf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<128x64xf32, "fragment">
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = true} : (memref<128x64xbf16, "shared">, memref<64x64xbf16, "shared">, memref<128x64xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 256 : i64} : (index) -> ()
  return
}

// -----

// The policy overrides: full_row puts all 4 warps along M, full_col along N.
// CHECK-LABEL: func.func @policies
// CHECK: "tile.gemm"{{.*}}tile.mma = {shape = "m16n8k16", warps_m = 4 : i64, warps_n = 1 : i64}
// CHECK: "tile.gemm"{{.*}}tile.mma = {shape = "m16n8k16", warps_m = 1 : i64, warps_n = 4 : i64}
func.func @policies() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<128x32xf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<32x128xf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<128x128xf32, "fragment">
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false, tile.gemm_policy = "full_row"} : (memref<128x32xf16, "shared">, memref<32x128xf16, "shared">, memref<128x128xf32, "fragment">) -> ()
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false, tile.gemm_policy = "full_col"} : (memref<128x32xf16, "shared">, memref<32x128xf16, "shared">, memref<128x128xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// C feeds a reduce over N: every warp along M, so a row stays in one warp.
// CHECK-LABEL: func.func @feeds_row_reduce
// CHECK: "tile.gemm"{{.*}}tile.mma = {shape = "m16n8k16", warps_m = 4 : i64, warps_n = 1 : i64}
func.func @feeds_row_reduce() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<64x32xf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<32x64xf16, "shared">
    %c = "tile.alloc_fragment"() {name = "S"} : () -> memref<64x64xf32, "fragment">
    %m = "tile.alloc_fragment"() {name = "row_max"} : () -> memref<64xf32, "fragment">
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false} : (memref<64x32xf16, "shared">, memref<32x64xf16, "shared">, memref<64x64xf32, "fragment">) -> ()
    "tile.reduce"(%c, %m) {kind = "max", dim = 1 : i64, clear = true} : (memref<64x64xf32, "fragment">, memref<64xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// A ring A (a 3-deep pipeline's slots) and transposed A; f16 accumulation for f16 inputs.
// CHECK-LABEL: func.func @ring_and_f16_accumulator
// CHECK: "tile.gemm"{{.*}}tile.mma = {shape = "m16n8k16", warps_m = 2 : i64, warps_n = 2 : i64}
// CHECK: "tile.gemm"{{.*}}tile.mma = {shape = "m16n8k16", warps_m = 2 : i64, warps_n = 2 : i64}
func.func @ring_and_f16_accumulator() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_ring"} : () -> memref<3x64x32xf16, "shared">
    %at = "tile.alloc_shared"() {name = "At_s"} : () -> memref<32x64xf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<32x64xf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<64x64xf32, "fragment">
    %h = "tile.alloc_fragment"() {name = "H"} : () -> memref<64x64xf16, "fragment">
    "tile.gemm"(%a, %b, %c, %bx) {transpose_a = false, transpose_b = false} : (memref<3x64x32xf16, "shared">, memref<32x64xf16, "shared">, memref<64x64xf32, "fragment">, index) -> ()
    "tile.gemm"(%at, %b, %h) {transpose_a = true, transpose_b = false} : (memref<32x64xf16, "shared">, memref<32x64xf16, "shared">, memref<64x64xf16, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// Not for tensor cores: f32 operands, K = 8, 48 threads; these stay for lower-gemm-simt.
// CHECK-LABEL: func.func @ineligible
// CHECK-NOT: tile.mma
func.func @ineligible() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<64x32xf32, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<32x64xf32, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<64x64xf32, "fragment">
    %a8 = "tile.alloc_shared"() {name = "A8_s"} : () -> memref<64x8xf16, "shared">
    %b8 = "tile.alloc_shared"() {name = "B8_s"} : () -> memref<8x64xf16, "shared">
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false} : (memref<64x32xf32, "shared">, memref<32x64xf32, "shared">, memref<64x64xf32, "fragment">) -> ()
    "tile.gemm"(%a8, %b8, %c) {transpose_a = false, transpose_b = false} : (memref<64x8xf16, "shared">, memref<8x64xf16, "shared">, memref<64x64xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}
