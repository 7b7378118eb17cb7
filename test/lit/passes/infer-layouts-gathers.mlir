// infer-layouts on gathers: fragment accesses inside a T.Parallel indexed by other than its loop
// variables. One the found layouts serve stays unreplicated; otherwise the fragment is fully
// replicated, and for a written gather the loop too.
// RUN: tile-opt %s --split-input-file -p infer-layouts | FileCheck %s

// x[i + 1] is held by another thread than the one running i: x, and the loop that writes x[i], replicate.
// CHECK-LABEL: func.func @shifted_index
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#{{map[0-9]*}}, #{{map[0-9]*}}, 128 : i64>, name = "x"}
// CHECK: }) {layout = #tile.layout<#{{map[0-9]*}}, #{{map[0-9]*}}, 128 : i64>} : (index) -> ()
func.func @shifted_index() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c63 = arith.constant 63 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<64xf32, "fragment">
    "tile.parallel"(%c63) ({
    ^bb0(%i: index):
      %k = arith.addi %i, %c1 : index
      %v = memref.load %x[%k] : memref<64xf32, "fragment">
      memref.store %v, %x[%i] : memref<64xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// A written diagonal: x and the loop are fully replicated (every thread writes its own copy).
// CHECK-LABEL: func.func @diagonal
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#{{map[0-9]*}}, #{{map[0-9]*}}, 64 : i64>, name = "x"}
// CHECK: }) {layout = #tile.layout<#{{map[0-9]*}}, #{{map[0-9]*}}, 64 : i64>} : (index) -> ()
func.func @diagonal() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<8x8xf32, "fragment">
    %cst = arith.constant 1.0 : f32
    "tile.parallel"(%c8) ({
    ^bb0(%i: index):
      memref.store %cst, %x[%i, %i] : memref<8x8xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}

// -----

// y[i - i mod 2] beside y[i] is held by the thread running i (16-byte runs of y, loaded from A): nothing
// replicates.
// CHECK-LABEL: func.func @pair_start
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[T:map[0-9]*]], #[[R:map[0-9]*]], 1 : i64>, name = "y"}
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[T]], #[[R]], 1 : i64>, name = "z"}
// CHECK: }) {layout = #tile.layout<#[[T]], #[[R]], 1 : i64>} : (index) -> ()
func.func @pair_start(%A: memref<64xf32>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %y = "tile.alloc_fragment"() {name = "y"} : () -> memref<64xf32, "fragment">
    %z = "tile.alloc_fragment"() {name = "z"} : () -> memref<64xf32, "fragment">
    "tile.parallel"(%c64) ({
    ^bb0(%i: index):
      %a = memref.load %A[%i] : memref<64xf32>
      memref.store %a, %y[%i] : memref<64xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index) -> ()
    "tile.parallel"(%c64) ({
    ^bb0(%i: index):
      %r = arith.remui %i, %c2 : index
      %k = arith.subi %i, %r : index
      %v = memref.load %y[%k] : memref<64xf32, "fragment">
      %w = memref.load %y[%i] : memref<64xf32, "fragment">
      %s = arith.addf %v, %w : f32
      memref.store %s, %z[%i] : memref<64xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}
