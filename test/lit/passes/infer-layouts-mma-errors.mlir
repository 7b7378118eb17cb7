// infer-layouts: a fragment both a tile.mma gemm's accumulator and annotated with another layout is a
// located error naming both uses; a fragment A needs warps only along M.
// RUN: tile-opt %s --split-input-file --verify-diagnostics -p infer-layouts

func.func @annotated_accumulator() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<64x32xf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<32x64xf16, "shared">
    // expected-error @+2 {{layout conflict for fragment 'C_f'}}
    // expected-note @+1 {{this use: fragment 'C_f' is annotated with T.annotate_layout}}
    %c = "tile.alloc_fragment"() {name = "C_f", tile.annotated_layout = #tile.layout<affine_map<(d0, d1) -> (d0 * 2 + d1 floordiv 32)>, affine_map<(d0, d1) -> (d1 mod 32)>, 1 : i64>} : () -> memref<64x64xf32, "fragment">
    // expected-note @+1 {{the layout it conflicts with comes from here: fragment 'C_f' is the accumulator of this T.gemm on tensor cores}}
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false, tile.mma = {shape = "m16n8k16", warps_m = 2 : i64, warps_n = 2 : i64}} : (memref<64x32xf16, "shared">, memref<32x64xf16, "shared">, memref<64x64xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

func.func @fragment_a_with_warps_on_n() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_fragment"() {name = "A_f"} : () -> memref<64x32xf16, "fragment">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<32x64xf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C_f"} : () -> memref<64x64xf32, "fragment">
    // expected-error @+1 {{a fragment A (fragment 'A_f') needs every warp along M (warps_n = 1), but this T.gemm's warp grid is 2x2}}
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false, tile.mma = {shape = "m16n8k16", warps_m = 2 : i64, warps_n = 2 : i64}} : (memref<64x32xf16, "fragment">, memref<32x64xf16, "shared">, memref<64x64xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}
