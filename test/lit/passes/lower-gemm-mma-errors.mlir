// lower-gemm-mma: a C whose layout is not the mma accumulator layout of the gemm's warp grid, and a gemm
// reaching the thread level without tile.mma, are located errors.
// RUN: tile-opt %s --split-input-file --verify-diagnostics -p lower-gemm-mma

#rows = #tile.layout<affine_map<(d0, d1) -> (d0 * 2 + d1 floordiv 4)>, affine_map<(d0, d1) -> (d1 mod 4)>, 1 : i64>
func.func @wrong_c_layout() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %a = memref.alloca() {name = "A_s"} : memref<16x16xf16, "shared">
    %b = memref.alloca() {name = "B_s"} : memref<16x8xf16, "shared">
    %c = memref.alloca() {name = "C_f", tile.layout = #rows} : memref<4xf32, "local">
    // expected-error @+1 {{the C operand of this T.gemm on tensor cores does not hold the mma.sync layout of its 1x1 warp grid}}
    "tile.gemm"(%a, %b, %c) {tile.gemm_mnk = [16, 8, 16], tile.mma = {shape = "m16n8k16", warps_m = 1 : i64, warps_n = 1 : i64}, transpose_a = false, transpose_b = false} : (memref<16x16xf16, "shared">, memref<16x8xf16, "shared">, memref<4xf32, "local">) -> ()
    gpu.terminator
  }
  return
}
