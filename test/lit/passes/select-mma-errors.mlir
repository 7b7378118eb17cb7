// select-mma: a requested warp policy no grid satisfies is a located error; a gemm left on CUDA cores
// gets a remark saying why.
// RUN: tile-opt %s --split-input-file --verify-diagnostics -p select-mma

func.func @policy_does_not_fit() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<32x32xf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<32x128xf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<32x128xf32, "fragment">
    // expected-error @+1 {{T.gemm policy 'full_row': no grid of 4 warps with that split tiles C (32x128) into m16n8 atoms}}
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false, tile.gemm_policy = "full_row"} : (memref<32x32xf16, "shared">, memref<32x128xf16, "shared">, memref<32x128xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

func.func @unknown_policy() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<32x32xf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<32x128xf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<32x128xf32, "fragment">
    // expected-error @+1 {{'tile.gemm_policy' must be one of square, full_row, full_col, got 'diagonal'}}
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false, tile.gemm_policy = "diagonal"} : (memref<32x32xf16, "shared">, memref<32x128xf16, "shared">, memref<32x128xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

func.func @remarks() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<32x32xf32, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<32x32xf32, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<32x32xf32, "fragment">
    %h = "tile.alloc_shared"() {name = "H_s"} : () -> memref<32x32xf16, "shared">
    %c8 = "tile.alloc_fragment"() {name = "C8"} : () -> memref<8x32xf32, "fragment">
    %h8 = "tile.alloc_shared"() {name = "H8_s"} : () -> memref<8x32xf16, "shared">
    // expected-remark @+1 {{T.gemm runs on CUDA cores: the tensor-core path takes f16 or bf16 operands, not f32}}
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false} : (memref<32x32xf32, "shared">, memref<32x32xf32, "shared">, memref<32x32xf32, "fragment">) -> ()
    // expected-remark @+1 {{T.gemm runs on CUDA cores: no grid of 4 warps tiles C (8x32) into whole m16n8 atoms per warp}}
    "tile.gemm"(%h8, %h, %c8) {transpose_a = false, transpose_b = false} : (memref<8x32xf16, "shared">, memref<32x32xf16, "shared">, memref<8x32xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// A fragment A needs every warp along M: 4 warps cannot each take m16 rows of M = 32.
func.func @fragment_a_too_few_rows() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_fragment"() {name = "A_f"} : () -> memref<32x32xf16, "fragment">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<32x64xf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<32x64xf32, "fragment">
    // expected-remark @+1 {{T.gemm runs on CUDA cores: a fragment A needs every warp along M, and 4 warps do not tile M = 32 into m16 atoms each}}
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false} : (memref<32x32xf16, "fragment">, memref<32x64xf16, "shared">, memref<32x64xf32, "fragment">) -> ()
    // expected-error @+1 {{T.gemm policy 'full_col' splits N over 4 warps, but a fragment A needs every warp along M}}
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false, tile.gemm_policy = "full_col"} : (memref<32x32xf16, "fragment">, memref<32x64xf16, "shared">, memref<32x64xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}
