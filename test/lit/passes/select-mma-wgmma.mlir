// select-mma{instruction=wgmma}: a gemm wgmma can run gets tile.mma = {shape = "m64nNk16"} with its warpgroup
// grid; the others keep the mma.sync choice, with a remark saying why not wgmma (select-mma-wgmma-remarks.mlir).
// RUN: tile-opt %s --split-input-file -p 'select-mma{instruction=wgmma}' | FileCheck %s
// RUN: tile-opt %s --split-input-file -p 'select-mma{instruction=wgmma}' | tile-opt --split-input-file -o /dev/null

// 128x128 C, 128 threads: one warpgroup, two m64n128 instructions.
// CHECK-LABEL: func.func @one_warpgroup
// CHECK: "tile.gemm"{{.*}}tile.mma = {shape = "m64nNk16", warpgroups_m = 1 : i64, warpgroups_n = 1 : i64}
func.func @one_warpgroup() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<128x64xbf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<64x128xbf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<128x128xf32, "fragment">
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false} : (memref<128x64xbf16, "shared">, memref<64x128xbf16, "shared">, memref<128x128xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// 128x256 C, 256 threads: both warpgroups along M (m64n256 each).
// CHECK-LABEL: func.func @two_along_m
// CHECK: "tile.gemm"{{.*}}tile.mma = {shape = "m64nNk16", warpgroups_m = 2 : i64, warpgroups_n = 1 : i64}
func.func @two_along_m() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<128x64xbf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<64x256xbf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<128x256xf32, "fragment">
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false} : (memref<128x64xbf16, "shared">, memref<64x256xbf16, "shared">, memref<128x256xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 256 : i64} : (index) -> ()
  return
}

// -----

// 64x256 C, 256 threads: M holds one m64 block, so the warpgroups split N (n128 each).
// CHECK-LABEL: func.func @split_n
// CHECK: "tile.gemm"{{.*}}tile.mma = {shape = "m64nNk16", warpgroups_m = 1 : i64, warpgroups_n = 2 : i64}
func.func @split_n() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<64x32xbf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<32x256xbf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<64x256xf32, "fragment">
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false} : (memref<64x32xbf16, "shared">, memref<32x256xbf16, "shared">, memref<64x256xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 256 : i64} : (index) -> ()
  return
}

// -----

// The full_col policy puts both warpgroups along N.
// CHECK-LABEL: func.func @full_col
// CHECK: "tile.gemm"{{.*}}tile.mma = {shape = "m64nNk16", warpgroups_m = 1 : i64, warpgroups_n = 2 : i64}
func.func @full_col() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<128x64xbf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<64x256xbf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<128x256xf32, "fragment">
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false, tile.gemm_policy = "full_col"} : (memref<128x64xbf16, "shared">, memref<64x256xbf16, "shared">, memref<128x256xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 256 : i64} : (index) -> ()
  return
}

// -----

// A stored K x M and B stored N x K take wgmma too (M-major A, K-major B).
// CHECK-LABEL: func.func @transposed
// CHECK: "tile.gemm"{{.*}}tile.mma = {shape = "m64nNk16", warpgroups_m = 1 : i64, warpgroups_n = 1 : i64}
func.func @transposed() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<64x128xbf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<128x64xbf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<128x128xf32, "fragment">
    "tile.gemm"(%a, %b, %c) {transpose_a = true, transpose_b = true} : (memref<64x128xbf16, "shared">, memref<128x64xbf16, "shared">, memref<128x128xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// B stored K x N in 32-byte panels (N = 16): n blocks of 16 columns, one panel each.
// CHECK-LABEL: func.func @narrow_b_panel
// CHECK: "tile.gemm"{{.*}}tile.mma = {shape = "m64nNk16", warpgroups_m = 1 : i64, warpgroups_n = 1 : i64}
func.func @narrow_b_panel() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<64x32xbf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<32x16xbf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<64x16xf32, "fragment">
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false} : (memref<64x32xbf16, "shared">, memref<32x16xbf16, "shared">, memref<64x16xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// fp8: wgmma m64nNk32, A M x K and B N x K (K-major both), 128-byte panels; two warpgroups along M.
// CHECK-LABEL: func.func @fp8_e4m3
// CHECK: "tile.gemm"{{.*}}tile.mma = {shape = "m64nNk32", warpgroups_m = 2 : i64, warpgroups_n = 1 : i64}
func.func @fp8_e4m3() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<128x128xf8E4M3FN, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<128x128xf8E4M3FN, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<128x128xf32, "fragment">
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = true} : (memref<128x128xf8E4M3FN, "shared">, memref<128x128xf8E4M3FN, "shared">, memref<128x128xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 256 : i64} : (index) -> ()
  return
}

// -----

// Attention's S = Q K^T feeding P, the fragment A of O += P V, 128 rows over 256 threads: each warpgroup holds
// one m64 block, so S's warp w holds rows 16 w .. 16 w + 15 as the 8x1 mma.sync gemm reading P does.
// CHECK-LABEL: func.func @attention_m64_per_warpgroup
// CHECK: "tile.gemm"{{.*}}tile.mma = {shape = "m64nNk16", warpgroups_m = 2 : i64, warpgroups_n = 1 : i64}
// CHECK: "tile.gemm"{{.*}}tile.mma = {shape = "m16n8k16", warps_m = 8 : i64, warps_n = 1 : i64}
func.func @attention_m64_per_warpgroup() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %q = "tile.alloc_shared"() {name = "Q_s"} : () -> memref<128x64xbf16, "shared">
    %k = "tile.alloc_shared"() {name = "K_s"} : () -> memref<128x64xbf16, "shared">
    %v = "tile.alloc_shared"() {name = "V_s"} : () -> memref<128x64xbf16, "shared">
    %s = "tile.alloc_fragment"() {name = "S"} : () -> memref<128x128xf32, "fragment">
    %p = "tile.alloc_fragment"() {name = "P"} : () -> memref<128x128xbf16, "fragment">
    %o = "tile.alloc_fragment"() {name = "O"} : () -> memref<128x64xf32, "fragment">
    "tile.gemm"(%q, %k, %s) {transpose_a = false, transpose_b = true} : (memref<128x64xbf16, "shared">, memref<128x64xbf16, "shared">, memref<128x128xf32, "fragment">) -> ()
    "tile.copy"(%s, %p, %c0, %c0, %c0, %c0) {shape = [128, 128]} : (memref<128x128xf32, "fragment">, memref<128x128xbf16, "fragment">, index, index, index, index) -> ()
    "tile.gemm"(%p, %v, %o) {transpose_a = false, transpose_b = false} : (memref<128x128xbf16, "fragment">, memref<128x64xbf16, "shared">, memref<128x64xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 256 : i64} : (index) -> ()
  return
}

// -----

// Mixed fp8 kinds (the ISA takes .e4m3 and .e5m2 for A and B independently); 32-byte rows (swizzle 32).
// CHECK-LABEL: func.func @fp8_mixed
// CHECK: "tile.gemm"{{.*}}tile.mma = {shape = "m64nNk32", warpgroups_m = 1 : i64, warpgroups_n = 1 : i64}
func.func @fp8_mixed() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<64x32xf8E5M2, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<64x32xf8E4M3FN, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<64x64xf32, "fragment">
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = true} : (memref<64x32xf8E5M2, "shared">, memref<64x32xf8E4M3FN, "shared">, memref<64x64xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}
