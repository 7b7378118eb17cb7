// infer-layouts fixes C of a tile.mma gemm to the m16n8 accumulator layout over its warp grid and
// propagates it: the T.Parallel over C joins it, a row reduce's destination takes its projection.
// RUN: tile-opt %s -p infer-layouts,test-print-layouts --verify-diagnostics
// RUN: tile-opt %s -p infer-layouts | FileCheck %s

// The T.Parallel over C_f runs each point on the thread holding it: C's maps.
// CHECK: #[[THREAD:map[0-9]*]] = affine_map<(d0, d1) -> ((d1 floordiv 2) mod 4 + (d0 mod 8) * 4 + (d0 floordiv 16) * 32)>
// CHECK: #[[REG:map[0-9]*]] = affine_map<(d0, d1) -> (d1 mod 2 + ((d0 floordiv 8) mod 2) * 2 + (d1 floordiv 8) * 4)>
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[THREAD]], #[[REG]], 1 : i64>, name = "C_f"}
// CHECK: "tile.parallel"
// CHECK: }) {layout = #tile.layout<#[[THREAD]], #[[REG]], 1 : i64>}
func.func @mma(%X: memref<64xf32>) attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<64x32xf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<32x64xf16, "shared">
    // expected-remark @+1 {{fragment 'C_f' 64x64 over 128 threads, 32 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 2) mod 4 + (d0 mod 8) * 4 + (d0 floordiv 16) * 32)>, affine_map<(d0, d1) -> (d1 mod 2 + ((d0 floordiv 8) mod 2) * 2 + (d1 floordiv 8) * 4)>, 1 : i64>}}
    %c = "tile.alloc_fragment"() {name = "C_f"} : () -> memref<64x64xf32, "fragment">
    // expected-remark @+1 {{fragment 'row_sum' 64 over 128 threads, 2 registers per thread, replicate 4: #tile.layout<affine_map<(d0)[s0] -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + s0)>, affine_map<(d0) -> ((d0 floordiv 8) mod 2)>, 4 : i64>}}
    %m = "tile.alloc_fragment"() {name = "row_sum"} : () -> memref<64xf32, "fragment">
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false, tile.mma = {shape = "m16n8k16", warps_m = 4 : i64, warps_n = 1 : i64}} : (memref<64x32xf16, "shared">, memref<32x64xf16, "shared">, memref<64x64xf32, "fragment">) -> ()
    "tile.parallel"(%c64, %c64) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %c[%i, %j] : memref<64x64xf32, "fragment">
      %w = arith.addf %v, %v : f32
      memref.store %w, %c[%i, %j] : memref<64x64xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    // expected-remark @+1 {{reduce sum 'C_f' dim 1: 16 registers a thread, 2 warp shuffles (xor 2, 1), no shared memory}}
    "tile.reduce"(%c, %m) {kind = "sum", dim = 1 : i64, clear = true} : (memref<64x64xf32, "fragment">, memref<64xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}
