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
