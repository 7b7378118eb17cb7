// test-print-layouts alone: a remark at every fragment allocation with its layout (or why it has none), and at
// every fragment copy and reduction how lower-tile-ops will move its data.
// RUN: tile-opt %s --verify-diagnostics -p test-print-layouts

func.func @print() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-remark @+1 {{fragment 'x' 4x128 over 128 threads, 4 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> (d0 * 32 + d1 floordiv 4)>, affine_map<(d0, d1) -> (d1 mod 4)>, 1 : i64>}}
    %x = "tile.alloc_fragment"() {name = "x", layout = #tile.layout<affine_map<(d0, d1) -> (d0 * 32 + d1 floordiv 4)>, affine_map<(d0, d1) -> (d1 mod 4)>, 1 : i64>} : () -> memref<4x128xf32, "fragment">
    // A replicated layout: each row statistic is held by the 32 threads of its row.
    // expected-remark @+1 {{fragment 'm' 4 over 128 threads, 1 registers per thread, replicate 32: #tile.layout<affine_map<(d0)[s0] -> (d0 * 32 + s0)>, affine_map<(d0) -> (0)>, 32 : i64>}}
    %m = "tile.alloc_fragment"() {name = "m", layout = #tile.layout<affine_map<(d0)[s0] -> (d0 * 32 + s0)>, affine_map<(d0) -> (0)>, 32 : i64>} : () -> memref<4xf32, "fragment">
    // A padded layout: 100 columns in runs of 4 over 128 threads cover 512 (masked registers).
    // expected-remark @+1 {{fragment 'p' 100 (padded to 512) over 128 threads, 4 registers per thread, replicate 1}}
    %p = "tile.alloc_fragment"() {name = "p", layout = #tile.layout<affine_map<(d0) -> ((d0 floordiv 4) mod 128)>, affine_map<(d0) -> (d0 mod 4)>, 1 : i64>} : () -> memref<100xf32, "fragment">
    // expected-remark @+1 {{fragment 'q' has no layout}}
    %q = "tile.alloc_fragment"() {name = "q"} : () -> memref<8xf32, "fragment">
    // expected-remark @+1 {{fragment 'r' has an invalid layout: thread digits cover 8 threads, not 128}}
    %r = "tile.alloc_fragment"() {name = "r", layout = #tile.layout<affine_map<(d0) -> (d0)>, affine_map<(d0) -> (0)>, 1 : i64>} : () -> memref<8xf32, "fragment">
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}


// How lower-tile-ops will move data: a copy between fragments whose layouts put elements on other threads goes
// through shared memory; a reduce whose dim spans warps adds a shared exchange after the shuffles.
func.func @exchange() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-remark @+1 {{fragment 'x' 4x128 over 128 threads}}
    %x = "tile.alloc_fragment"() {name = "x", layout = #tile.layout<affine_map<(d0, d1) -> (d0 * 32 + d1 floordiv 4)>, affine_map<(d0, d1) -> (d1 mod 4)>, 1 : i64>} : () -> memref<4x128xf32, "fragment">
    // expected-remark @+1 {{fragment 'y' 4x128 over 128 threads}}
    %y = "tile.alloc_fragment"() {name = "y", layout = #tile.layout<affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>, 1 : i64>} : () -> memref<4x128xf32, "fragment">
    // expected-remark @+1 {{fragment 'total' 4 over 128 threads}}
    %t = "tile.alloc_fragment"() {name = "total", layout = #tile.layout<affine_map<(d0)[s0] -> (s0)>, affine_map<(d0) -> (d0)>, 128 : i64>} : () -> memref<4xf32, "fragment">
    // expected-remark @+1 {{copy 'x' -> 'y': through shared memory}}
    "tile.copy"(%x, %y, %c0, %c0, %c0, %c0) {shape = [4, 128]} : (memref<4x128xf32, "fragment">, memref<4x128xf32, "fragment">, index, index, index, index) -> ()
    // expected-remark @+1 {{reduce sum 'y' dim 1: 1 register a thread, 5 warp shuffles (xor 16, 8, 4, 2, 1), a shared exchange over 4 warps}}
    "tile.reduce"(%y, %t) {kind = "sum", dim = 1 : i64, clear = true} : (memref<4x128xf32, "fragment">, memref<4xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}
