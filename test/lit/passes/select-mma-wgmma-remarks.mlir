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

// -----

// Attention's S = Q K^T feeding P, the fragment A of O += P V: with one warpgroup over 128 rows a wgmma C
// would hold rows 16 w + 64 i in warp w, while the mma.sync gemm reading P (and O's row statistics) hold
// 32 whole rows per warp, so S stays on mma.sync too.
// CHECK-LABEL: func.func @attention_two_m64_blocks
func.func @attention_two_m64_blocks() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %q = "tile.alloc_shared"() {name = "Q_s"} : () -> memref<128x64xbf16, "shared">
    %k = "tile.alloc_shared"() {name = "K_s"} : () -> memref<64x64xbf16, "shared">
    %v = "tile.alloc_shared"() {name = "V_s"} : () -> memref<64x64xbf16, "shared">
    %s = "tile.alloc_fragment"() {name = "S"} : () -> memref<128x64xf32, "fragment">
    %p = "tile.alloc_fragment"() {name = "P"} : () -> memref<128x64xbf16, "fragment">
    %o = "tile.alloc_fragment"() {name = "O"} : () -> memref<128x64xf32, "fragment">
    // expected-remark @+1 {{T.gemm runs on mma.sync, not wgmma: C is the fragment A of a T.gemm on mma.sync, whose warps each hold 32 whole rows; a wgmma C holds those rows only with every warpgroup along M at 64 rows each (M = 64 here, not 128)}}
    "tile.gemm"(%q, %k, %s) {transpose_a = false, transpose_b = true} : (memref<128x64xbf16, "shared">, memref<64x64xbf16, "shared">, memref<128x64xf32, "fragment">) -> ()
    "tile.copy"(%s, %p, %c0, %c0, %c0, %c0) {shape = [128, 64]} : (memref<128x64xf32, "fragment">, memref<128x64xbf16, "fragment">, index, index, index, index) -> ()
    // expected-remark @+1 {{T.gemm runs on mma.sync, not wgmma: wgmma reads A from shared memory here (a fragment A is not supported yet)}}
    "tile.gemm"(%p, %v, %o) {transpose_a = false, transpose_b = false} : (memref<128x64xbf16, "fragment">, memref<64x64xbf16, "shared">, memref<128x64xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}
