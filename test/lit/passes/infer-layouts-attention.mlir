// infer-layouts on attention's shape (examples/flash_attention.py): S = Q K^T and O += P V on mma.sync (every
// warp along M: S feeds a reduce over N and, through the copy, P, the fragment A of the second gemm). S's
// accumulator layout carries to the softmax loop, to P (so the S -> P copy is register-local) and, projected,
// to the row statistics (each row on the 4 lanes of a quad: the reductions are registers and 2 shuffles), and
// O's accumulator layout puts rows on the same threads, so the rescale loop reads them where they are.
// RUN: tile-opt %s -p select-mma,infer-layouts,test-print-layouts --verify-diagnostics

func.func @attention(%X: memref<64xf32>) attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %q = "tile.alloc_shared"() {name = "Q_s"} : () -> memref<64x64xbf16, "shared">
    %k = "tile.alloc_shared"() {name = "K_s"} : () -> memref<64x64xbf16, "shared">
    %v = "tile.alloc_shared"() {name = "V_s"} : () -> memref<64x64xbf16, "shared">
    // expected-remark @+1 {{fragment 'S' 64x64 over 128 threads, 32 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 2) mod 4 + (d0 mod 8) * 4 + (d0 floordiv 16) * 32)>, affine_map<(d0, d1) -> (d1 mod 2 + ((d0 floordiv 8) mod 2) * 2 + (d1 floordiv 8) * 4)>, 1 : i64>}}
    %s = "tile.alloc_fragment"() {name = "S"} : () -> memref<64x64xf32, "fragment">
    // expected-remark @+1 {{fragment 'P' 64x64 over 128 threads, 32 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 2) mod 4 + (d0 mod 8) * 4 + (d0 floordiv 16) * 32)>, affine_map<(d0, d1) -> (d1 mod 2 + ((d0 floordiv 8) mod 2) * 2 + (d1 floordiv 8) * 4)>, 1 : i64>}}
    %p = "tile.alloc_fragment"() {name = "P"} : () -> memref<64x64xbf16, "fragment">
    // expected-remark @+1 {{fragment 'O' 64x64 over 128 threads, 32 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 2) mod 4 + (d0 mod 8) * 4 + (d0 floordiv 16) * 32)>, affine_map<(d0, d1) -> (d1 mod 2 + ((d0 floordiv 8) mod 2) * 2 + (d1 floordiv 8) * 4)>, 1 : i64>}}
    %o = "tile.alloc_fragment"() {name = "O"} : () -> memref<64x64xf32, "fragment">
    // expected-remark @+1 {{fragment 'row_max' 64 over 128 threads, 2 registers per thread, replicate 4: #tile.layout<affine_map<(d0)[s0] -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + s0)>, affine_map<(d0) -> ((d0 floordiv 8) mod 2)>, 4 : i64>}}
    %m = "tile.alloc_fragment"() {name = "row_max"} : () -> memref<64xf32, "fragment">
    // expected-remark @+1 {{fragment 'row_sum' 64 over 128 threads, 2 registers per thread, replicate 4: #tile.layout<affine_map<(d0)[s0] -> ((d0 mod 8) * 4 + (d0 floordiv 16) * 32 + s0)>, affine_map<(d0) -> ((d0 floordiv 8) mod 2)>, 4 : i64>}}
    %l = "tile.alloc_fragment"() {name = "row_sum"} : () -> memref<64xf32, "fragment">
    "tile.gemm"(%q, %k, %s) {transpose_a = false, transpose_b = true} : (memref<64x64xbf16, "shared">, memref<64x64xbf16, "shared">, memref<64x64xf32, "fragment">) -> ()
    // expected-remark @+1 {{reduce max 'S' dim 1: 16 registers a thread, 2 warp shuffles (xor 2, 1), no shared memory}}
    "tile.reduce"(%s, %m) {kind = "max", dim = 1 : i64, clear = true} : (memref<64x64xf32, "fragment">, memref<64xf32, "fragment">) -> ()
    "tile.parallel"(%c64, %c64) ({
    ^bb0(%i: index, %j: index):
      %x = memref.load %s[%i, %j] : memref<64x64xf32, "fragment">
      %mx = memref.load %m[%i] : memref<64xf32, "fragment">
      %d = arith.subf %x, %mx : f32
      %e = math.exp2 %d : f32
      memref.store %e, %s[%i, %j] : memref<64x64xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    // expected-remark @+1 {{reduce sum 'S' dim 1: 16 registers a thread, 2 warp shuffles (xor 2, 1), no shared memory}}
    "tile.reduce"(%s, %l) {kind = "sum", dim = 1 : i64, clear = true} : (memref<64x64xf32, "fragment">, memref<64xf32, "fragment">) -> ()
    "tile.parallel"(%c64, %c64) ({
    ^bb0(%i: index, %j: index):
      %x = memref.load %o[%i, %j] : memref<64x64xf32, "fragment">
      %mx = memref.load %m[%i] : memref<64xf32, "fragment">
      %y = arith.mulf %x, %mx : f32
      memref.store %y, %o[%i, %j] : memref<64x64xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    // expected-remark @+1 {{copy 'S' -> 'P': register-local}}
    "tile.copy"(%s, %p, %c0, %c0, %c0, %c0) {shape = [64, 64]} : (memref<64x64xf32, "fragment">, memref<64x64xbf16, "fragment">, index, index, index, index) -> ()
    "tile.gemm"(%p, %v, %o) {transpose_a = false, transpose_b = false} : (memref<64x64xbf16, "fragment">, memref<64x64xbf16, "shared">, memref<64x64xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

