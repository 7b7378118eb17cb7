// select-mma{instruction=wgmma} on fp8 gemms: wgmma m64nNk32 is their only tensor-core path, so a gemm it
// cannot run is a located error naming what the instruction takes (no silent fall back to CUDA cores).
// RUN: tile-opt %s --split-input-file --verify-diagnostics -p 'select-mma{instruction=wgmma}'

// B stored K x N: fp8 wgmma has no imm-trans.
func.func @fp8_b_not_k_major() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<64x64xf8E4M3FN, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<64x64xf8E4M3FN, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<64x64xf32, "fragment">
    // expected-error @+1 {{T.gemm on e4m3 x e4m3 operands runs on wgmma m64nNk32.f32.e4m3.e4m3, which cannot take this one: fp8 wgmma reads K-major operands only: A stored M x K (transpose_A=False) and B stored N x K (transpose_B=True), got transpose_A=False, transpose_B=False}}
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false} : (memref<64x64xf8E4M3FN, "shared">, memref<64x64xf8E4M3FN, "shared">, memref<64x64xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// A stored K x M.
func.func @fp8_a_transposed() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<64x64xf8E5M2, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<64x64xf8E5M2, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<64x64xf32, "fragment">
    // expected-error @+1 {{T.gemm on e5m2 x e5m2 operands runs on wgmma m64nNk32.f32.e5m2.e5m2, which cannot take this one: fp8 wgmma reads K-major operands only: A stored M x K (transpose_A=False) and B stored N x K (transpose_B=True), got transpose_A=True, transpose_B=True}}
    "tile.gemm"(%a, %b, %c) {transpose_a = true, transpose_b = true} : (memref<64x64xf8E5M2, "shared">, memref<64x64xf8E5M2, "shared">, memref<64x64xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// A fragment A.
func.func @fp8_fragment_a() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_fragment"() {name = "A_s"} : () -> memref<64x64xf8E4M3FN, "fragment">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<64x64xf8E4M3FN, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<64x64xf32, "fragment">
    // expected-error @+1 {{T.gemm on e4m3 x e4m3 operands runs on wgmma m64nNk32.f32.e4m3.e4m3, which cannot take this one: wgmma reads A from shared memory here (a fragment A is not supported yet)}}
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = true} : (memref<64x64xf8E4M3FN, "fragment">, memref<64x64xf8E4M3FN, "shared">, memref<64x64xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// M = 32: no m64 block.
func.func @fp8_m_too_small() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<32x64xf8E4M3FN, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<64x64xf8E4M3FN, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<32x64xf32, "fragment">
    // expected-error @+1 {{T.gemm on e4m3 x e4m3 operands runs on wgmma m64nNk32.f32.e4m3.e4m3, which cannot take this one: no grid of 1 warpgroups tiles C (32x64) into m64 rows and n blocks of at most 256 columns, each a multiple of 8}}
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = true} : (memref<32x64xf8E4M3FN, "shared">, memref<64x64xf8E4M3FN, "shared">, memref<32x64xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// 16-byte rows (K = 16): not a swizzled tile wgmma reads.
func.func @fp8_rows_too_short() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<64x16xf8E4M3FN, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<64x16xf8E4M3FN, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<64x64xf32, "fragment">
    // expected-error @+1 {{T.gemm on e4m3 x e4m3 operands runs on wgmma m64nNk32.f32.e4m3.e4m3, which cannot take this one: A must be a two-dimensional T.alloc_shared whose rows are a multiple of 32 bytes (wgmma reads swizzled shared tiles)}}
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = true} : (memref<64x16xf8E4M3FN, "shared">, memref<64x16xf8E4M3FN, "shared">, memref<64x64xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}
