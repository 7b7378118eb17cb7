// select-mma{instruction=wgmma}: a gemm wgmma cannot run keeps the mma.sync choice, with a remark saying why.
// RUN: tile-opt %s --split-input-file --verify-diagnostics -p 'select-mma{instruction=wgmma}'

// A fragment A stays on mma.sync.
// CHECK-LABEL: func.func @fragment_a
func.func @fragment_a() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_fragment"() {name = "A_s"} : () -> memref<64x32xbf16, "fragment">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<32x64xbf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<64x64xf32, "fragment">
    // expected-remark @+1 {{T.gemm runs on mma.sync, not wgmma: wgmma reads A from shared memory here (a fragment A is not supported yet)}}
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false} : (memref<64x32xbf16, "fragment">, memref<32x64xbf16, "shared">, memref<64x64xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// An f16 accumulator stays on mma.sync.
// CHECK-LABEL: func.func @f16_accumulator
func.func @f16_accumulator() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<64x32xf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<32x64xf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<64x64xf16, "fragment">
    // expected-remark @+1 {{T.gemm runs on mma.sync, not wgmma: wgmma accumulates in f32 here, not f16}}
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false} : (memref<64x32xf16, "shared">, memref<32x64xf16, "shared">, memref<64x64xf16, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// 96 threads are not whole warpgroups.
// CHECK-LABEL: func.func @partial_warpgroup
func.func @partial_warpgroup() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<48x32xbf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<32x64xbf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<48x64xf32, "fragment">
    // expected-remark @+1 {{T.gemm runs on mma.sync, not wgmma: the block's 96 threads are not whole warpgroups of 128}}
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false} : (memref<48x32xbf16, "shared">, memref<32x64xbf16, "shared">, memref<48x64xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 96 : i64} : (index) -> ()
  return
}

// -----

// M = 32 has no m64 block.
// CHECK-LABEL: func.func @m_not_64
func.func @m_not_64() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<32x32xbf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<32x64xbf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<32x64xf32, "fragment">
    // expected-remark @+1 {{T.gemm runs on mma.sync, not wgmma: no grid of 1 warpgroups tiles C (32x64) into m64 rows and n blocks of at most 256 columns, each a multiple of 64}}
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false} : (memref<32x32xbf16, "shared">, memref<32x64xbf16, "shared">, memref<32x64xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}
