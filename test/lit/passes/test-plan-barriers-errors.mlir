// test-plan-barriers: a hazard that needs a barrier inside thread code's loop or condition that depends on the
// thread index is a located error (not every thread would reach the barrier).
// RUN: tile-opt %s --split-input-file --verify-diagnostics -p test-plan-barriers

#id = affine_map<(d0) -> (d0)>
#zero = affine_map<(d0) -> (0)>
func.func @loop_bound_from_thread(%A: memref<128xf32>) attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %s = "tile.alloc_shared"() {name = "s"} : () -> memref<128xf32, "shared">
    %c128 = arith.constant 128 : index
    "tile.parallel"(%c128) ({
    ^bb0(%t: index):
      %c0 = arith.constant 0 : index
      %c1_ = arith.constant 1 : index
      %v = arith.constant 1.0 : f32
      // expected-error @+1 {{shared buffer 's' needs a gpu.barrier inside this loop, which depends on the thread index}}
      scf.for %i = %c0 to %t step %c1_ {
        // expected-note @+1 {{after this access of another thread}}
        memref.store %v, %s[%t] : memref<128xf32, "shared">
        // expected-note @+1 {{this access needs the barrier before it}}
        %x = memref.load %s[%i] : memref<128xf32, "shared">
        memref.store %x, %A[%t] : memref<128xf32>
      }
      "tile.yield"() : () -> ()
    }) {layout = #tile.layout<#id, #zero, 1 : i64>, tile.thread_loop} : (index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

#id = affine_map<(d0) -> (d0)>
#zero = affine_map<(d0) -> (0)>
func.func @condition_from_thread(%A: memref<128xf32>) attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %s = "tile.alloc_shared"() {name = "s"} : () -> memref<128xf32, "shared">
    %c128 = arith.constant 128 : index
    "tile.parallel"(%c128) ({
    ^bb0(%t: index):
      %c0 = arith.constant 0 : index
      %c1_ = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      %v = arith.constant 1.0 : f32
      %low = arith.cmpi ult, %t, %c64 : index
      // expected-error @+1 {{shared buffer 's' needs a gpu.barrier inside this condition, which depends on the thread index}}
      scf.if %low {
        // expected-note @+1 {{after this access of another thread}}
        memref.store %v, %s[%t] : memref<128xf32, "shared">
        %next = arith.addi %t, %c1_ : index
        // expected-note @+1 {{this access needs the barrier before it}}
        %x = memref.load %s[%next] : memref<128xf32, "shared">
        memref.store %x, %A[%t] : memref<128xf32>
      }
      "tile.yield"() : () -> ()
    }) {layout = #tile.layout<#id, #zero, 1 : i64>, tile.thread_loop} : (index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}
