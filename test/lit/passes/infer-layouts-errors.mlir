// infer-layouts rejects what no layout can satisfy, naming the fragment, both uses and the way out.
// RUN: tile-opt %s --split-input-file --verify-diagnostics -p infer-layouts

// s[i] and s[j] in one loop: s would have to sit with the threads of row i and of column j.
func.func @row_and_column(%X: memref<64x64xf32>, %S: memref<64xf32>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<64x64xf32, "fragment">
    %s = "tile.alloc_fragment"() {name = "s"} : () -> memref<64xf32, "fragment">
    "tile.copy"(%X, %x, %c0, %c0, %c0, %c0) {shape = [64, 64]} : (memref<64x64xf32>, memref<64x64xf32, "fragment">, index, index, index, index) -> ()
    "tile.copy"(%S, %s, %c0, %c0) {shape = [64]} : (memref<64xf32>, memref<64xf32, "fragment">, index, index) -> ()
    "tile.parallel"(%c64, %c64) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<64x64xf32, "fragment">
      // expected-note @+1 {{the layout it conflicts with comes from here: fragment 's' is read here}}
      %a = memref.load %s[%i] : memref<64xf32, "fragment">
      // expected-error @+2 {{layout conflict for fragment 's': the threads that run this use do not hold the elements it needs under the layout fragment 's' already has; copy the fragment through shared memory (T.copy into a T.alloc_shared buffer, then read that), or fix the layouts with T.annotate_layout}}
      // expected-note @+1 {{this use: fragment 's' is read here}}
      %b = memref.load %s[%j] : memref<64xf32, "fragment">
      %p = arith.mulf %v, %a : f32
      %q = arith.mulf %p, %b : f32
      memref.store %q, %x[%i, %j] : memref<64x64xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// Two annotations that disagree on who holds x[i, j].
func.func @annotations_disagree() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-note @+1 {{the layout it conflicts with comes from here: fragment 'x' is annotated with T.annotate_layout}}
    %x = "tile.alloc_fragment"() {name = "x", tile.annotated_layout = #tile.layout<affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, 1 : i64>} : () -> memref<128x128xf32, "fragment">
    // expected-error @+2 {{layout conflict for fragment 'y'}}
    // expected-note @+1 {{this use: fragment 'y' is annotated with T.annotate_layout}}
    %y = "tile.alloc_fragment"() {name = "y", tile.annotated_layout = #tile.layout<affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>, 1 : i64>} : () -> memref<128x128xf32, "fragment">
    "tile.parallel"(%c128, %c128) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<128x128xf32, "fragment">
      memref.store %v, %y[%i, %j] : memref<128x128xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

func.func @invalid_annotation() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{invalid T.annotate_layout for fragment 'x': thread digits cover 64 threads, not 128}}
    %x = "tile.alloc_fragment"() {name = "x", tile.annotated_layout = #tile.layout<affine_map<(d0) -> (d0 floordiv 2)>, affine_map<(d0) -> (d0 mod 2)>, 1 : i64>} : () -> memref<128xf32, "fragment">
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

func.func @written_through_a_projection() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<4x64xf32, "fragment">
    %m = "tile.alloc_fragment"() {name = "m"} : () -> memref<4xf32, "fragment">
    "tile.parallel"(%c4, %c64) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<4x64xf32, "fragment">
      // expected-error @+1 {{fragment 'm' is written inside a T.Parallel over 2 dims but indexed by only 1 of them: several points would write the same element (use T.reduce_* to combine them)}}
      memref.store %v, %m[%i] : memref<4xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

func.func @loop_longer_than_the_fragment() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c65 = arith.constant 65 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<64xf32, "fragment">
    %cst = arith.constant 1.0 : f32
    "tile.parallel"(%c65) ({
    ^bb0(%i: index):
      // expected-error @+1 {{T.Parallel extent 65 exceeds dim 0 of fragment 'x' (64)}}
      memref.store %cst, %x[%i] : memref<64xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}

// -----

func.func @nested(%n: index) attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-note @+1 {{the enclosing T.Parallel is here}}
    "tile.parallel"(%c4) ({
    ^bb0(%i: index):
      // expected-error @+1 {{T.Parallel loops cannot be nested inside another T.Parallel}}
      "tile.parallel"(%c4) ({
      ^bb0(%j: index):
        "tile.yield"() : () -> ()
      }) : (index) -> ()
      "tile.yield"() : () -> ()
    }) : (index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}

// -----

func.func @runtime_extent_over_a_fragment(%n: index) attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<64xf32, "fragment">
    %cst = arith.constant 1.0 : f32
    "tile.parallel"(%n) ({
    ^bb0(%i: index):
      // expected-error @+1 {{fragment 'x' is accessed inside a T.Parallel whose extents are not compile-time constants; fragment loops need constant extents}}
      memref.store %cst, %x[%i] : memref<64xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}
