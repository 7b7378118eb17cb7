// partition-threads refuses what it cannot partition, with the reason at the op.
// RUN: tile-opt %s --split-input-file --verify-diagnostics -p partition-threads

func.func @gemm(%A: memref<64x32xf16>) attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<64x32xf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<32x64xf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C", layout = #tile.layout<affine_map<(d0, d1) -> (d0 + (d1 floordiv 32) * 64)>, affine_map<(d0, d1) -> (d1 mod 32)>, 1 : i64>} : () -> memref<64x64xf32, "fragment">
    // expected-error @+1 {{tile.gemm must be lowered before partition-threads (run lower-gemm-simt first)}}
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false} : (memref<64x32xf16, "shared">, memref<32x64xf16, "shared">, memref<64x64xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

func.func @unlowered(%X: memref<64xf32>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %s = "tile.alloc_shared"() {name = "s"} : () -> memref<64xf32, "shared">
    // expected-error @+1 {{tile.copy must be lowered before partition-threads (run lower-tile-ops first)}}
    "tile.copy"(%X, %s, %c0, %c0) {shape = [64]} : (memref<64xf32>, memref<64xf32, "shared">, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}

// -----

func.func @no_layout() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{fragment has no layout: run infer-layouts before partition-threads}}
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<64xf32, "fragment">
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}

// -----

func.func @serial_read_of_a_spread_fragment(%Y: memref<1xf32>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x", layout = #tile.layout<affine_map<(d0) -> (d0)>, affine_map<(d0) -> (0)>, 1 : i64>} : () -> memref<64xf32, "fragment">
    // expected-error @+1 {{fragment 'x' is accessed outside T.Parallel but is not held by every thread (its layout is not fully replicated)}}
    %v = memref.load %x[%c0] : memref<64xf32, "fragment">
    memref.store %v, %Y[%c0] : memref<1xf32>
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}

// -----

func.func @loop_disagrees_with_fragment() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x", layout = #tile.layout<affine_map<(d0) -> (d0)>, affine_map<(d0) -> (0)>, 1 : i64>} : () -> memref<64xf32, "fragment">
    %cst = arith.constant 1.0 : f32
    "tile.parallel"(%c64) ({
    ^bb0(%i: index):
      // expected-error @+1 {{fragment 'x' is accessed by threads that do not hold the element (its layout disagrees with the layout of this T.Parallel)}}
      memref.store %cst, %x[%i] : memref<64xf32, "fragment">
      "tile.yield"() : () -> ()
    }) {layout = #tile.layout<affine_map<(d0) -> (d0 floordiv 2 + (d0 mod 2) * 32)>, affine_map<(d0) -> (0)>, 1 : i64>} : (index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}

// -----

func.func @invalid_layout() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{invalid layout on fragment 'x': thread digits cover 32 threads, not 64}}
    %x = "tile.alloc_fragment"() {name = "x", layout = #tile.layout<affine_map<(d0) -> (d0 floordiv 2)>, affine_map<(d0) -> (d0 mod 2)>, 1 : i64>} : () -> memref<64xf32, "fragment">
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}

// -----

func.func @fragment_escapes() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x", layout = #tile.layout<affine_map<(d0) -> (d0)>, affine_map<(d0) -> (0)>, 1 : i64>} : () -> memref<64xf32, "fragment">
    // expected-error @+1 {{fragment 'x' is used by memref.cast, which partition-threads cannot map onto registers}}
    %y = memref.cast %x : memref<64xf32, "fragment"> to memref<?xf32, "fragment">
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}

// -----

// x[63 - i] is held by thread 63 - i, but thread i runs point i.
func.func @gather_read_by_a_non_holder(%Y: memref<64xf32>) attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c63 = arith.constant 63 : index
  %c64 = arith.constant 64 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x", layout = #tile.layout<affine_map<(d0) -> (d0)>, affine_map<(d0) -> (0)>, 1 : i64>} : () -> memref<64xf32, "fragment">
    "tile.parallel"(%c64) ({
    ^bb0(%i: index):
      %k = arith.subi %c63, %i : index
      // expected-error @+1 {{fragment 'x' is read by threads that do not hold the element (its layout disagrees with the layout of this T.Parallel)}}
      %v = memref.load %x[%k] : memref<64xf32, "fragment">
      memref.store %v, %Y[%i] : memref<64xf32>
      "tile.yield"() : () -> ()
    }) {layout = #tile.layout<affine_map<(d0) -> (d0)>, affine_map<(d0) -> (0)>, 1 : i64>} : (index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}

// -----

func.func @gather_write_to_a_spread_fragment() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c63 = arith.constant 63 : index
  %c64 = arith.constant 64 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x", layout = #tile.layout<affine_map<(d0) -> (d0)>, affine_map<(d0) -> (0)>, 1 : i64>} : () -> memref<64xf32, "fragment">
    %cst = arith.constant 1.0 : f32
    "tile.parallel"(%c64) ({
    ^bb0(%i: index):
      %k = arith.subi %c63, %i : index
      // expected-error @+1 {{fragment 'x' is written at an index other than the T.Parallel loop variables by threads that do not hold its only copy, so the fragment and the loop must be fully replicated}}
      memref.store %cst, %x[%k] : memref<64xf32, "fragment">
      "tile.yield"() : () -> ()
    }) {layout = #tile.layout<affine_map<(d0) -> (d0)>, affine_map<(d0) -> (0)>, 1 : i64>} : (index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}
