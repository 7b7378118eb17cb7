// test-plan-barriers alone: a remark at every op partition-threads will put a gpu.barrier before, here inside
// thread code (a tile.parallel marked tile.thread_loop, point t run by thread t), as TileLang's storage-sync does.
// RUN: tile-opt %s --split-input-file --verify-diagnostics -p test-plan-barriers

#id = affine_map<(d0) -> (d0)>
#zero = affine_map<(d0) -> (0)>
// TileLang's naive GEMV: each iteration writes the shared row every thread reads. A barrier before the
// read loop (read after the other threads' writes) and one at the top of the body (the next iteration's
// writes after this one's reads); B_s[t, k] is thread t's own row and needs none.
func.func @gemv(%A: memref<256xf32>, %B: memref<128x256xf32>, %C: memref<128xf32>) attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a_s = "tile.alloc_shared"() {name = "A_s"} : () -> memref<128xf32, "shared">
    %b_s = "tile.alloc_shared"() {name = "B_s"} : () -> memref<128x128xf32, "shared">
    %c128 = arith.constant 128 : index
    "tile.parallel"(%c128) ({
    ^bb0(%t: index):
      %c0 = arith.constant 0 : index
      %c1_ = arith.constant 1 : index
      %c2 = arith.constant 2 : index
      %c128_ = arith.constant 128 : index
      %zero = arith.constant 0.0 : f32
      %acc = scf.for %bk = %c0 to %c2 step %c1_ iter_args(%sum = %zero) -> f32 {
        // expected-remark @+1 {{gpu.barrier before this op: it writes shared 'A_s' that another thread read at line 36}}
        scf.for %k = %c0 to %c128_ step %c1_ {
          %base = arith.muli %bk, %c128_ : index
          %g = arith.addi %base, %k : index
          %x = memref.load %A[%g] : memref<256xf32>
          memref.store %x, %a_s[%k] : memref<128xf32, "shared">
          %y = memref.load %B[%t, %g] : memref<128x256xf32>
          memref.store %y, %b_s[%t, %k] : memref<128x128xf32, "shared">
        }
        // expected-remark @+1 {{gpu.barrier before this op: it reads shared 'A_s' that another thread wrote at line 30}}
        %part = scf.for %k = %c0 to %c128_ step %c1_ iter_args(%s = %sum) -> f32 {
          %x = memref.load %a_s[%k] : memref<128xf32, "shared">
          %y = memref.load %b_s[%t, %k] : memref<128x128xf32, "shared">
          %p = arith.mulf %x, %y : f32
          %n = arith.addf %s, %p : f32
          scf.yield %n : f32
        }
        scf.yield %part : f32
      }
      memref.store %acc, %C[%t] : memref<128xf32>
      "tile.yield"() : () -> ()
    }) {layout = #tile.layout<#id, #zero, 1 : i64>, tile.thread_loop} : (index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

#id = affine_map<(d0) -> (d0)>
#zero = affine_map<(d0) -> (0)>
// Each thread touches only its own elements (s[t], s[t + 128]: functions of the thread index alone, one
// thread's each), and inside `if t == 0` only thread 0 runs: no barrier.
func.func @own_elements(%A: memref<128xf32>) attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %s = "tile.alloc_shared"() {name = "s"} : () -> memref<256xf32, "shared">
    %c128 = arith.constant 128 : index
    "tile.parallel"(%c128) ({
    ^bb0(%t: index):
      %c0 = arith.constant 0 : index
      %c1_ = arith.constant 1 : index
      %c8 = arith.constant 8 : index
      %c128_ = arith.constant 128 : index
      %hi = arith.addi %t, %c128_ : index
      scf.for %i = %c0 to %c8 step %c1_ {
        %x = memref.load %s[%t] : memref<256xf32, "shared">
        memref.store %x, %s[%hi] : memref<256xf32, "shared">
        %y = memref.load %s[%hi] : memref<256xf32, "shared">
        memref.store %y, %s[%t] : memref<256xf32, "shared">
      }
      %first = arith.cmpi eq, %t, %c0 : index
      scf.if %first {
        %z = memref.load %s[%c0] : memref<256xf32, "shared">
        %z2 = arith.addf %z, %z : f32
        memref.store %z2, %s[%c0] : memref<256xf32, "shared">
        %w = memref.load %s[%c0] : memref<256xf32, "shared">
        memref.store %w, %A[%c0] : memref<128xf32>
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
// A neighbour exchange in a loop: the read of s[(t + 1) mod 128] after the writes, and the next
// iteration's write after it. The read of s before the loop makes its first write a hazard too, ordered by
// the barrier before the loop (not one per iteration). A uniform condition (from the block index) may hold
// a barrier.
func.func @neighbours(%A: memref<128xf32>, %n: index) attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %s = "tile.alloc_shared"() {name = "s"} : () -> memref<128xf32, "shared">
    %c128 = arith.constant 128 : index
    "tile.parallel"(%c128) ({
    ^bb0(%t: index):
      %c0 = arith.constant 0 : index
      %c1_ = arith.constant 1 : index
      %c127 = arith.constant 127 : index
      %r = arith.subi %c127, %t : index
      %v = memref.load %s[%r] : memref<128xf32, "shared">
      %next = arith.addi %t, %c1_ : index
      %c128_ = arith.constant 128 : index
      %left = arith.remui %next, %c128_ : index
      // expected-remark @+1 {{gpu.barrier before this op: it writes shared 's' that another thread read at line 112}}
      scf.for %i = %c0 to %n step %c1_ {
        // expected-remark @+1 {{gpu.barrier before this op: it writes shared 's' that another thread read at line 121}}
        memref.store %v, %s[%t] : memref<128xf32, "shared">
        // expected-remark @+1 {{gpu.barrier before this op: it reads shared 's' that another thread wrote at line 119}}
        %x = memref.load %s[%left] : memref<128xf32, "shared">
        memref.store %x, %A[%t] : memref<128xf32>
      }
      %odd = arith.cmpi ugt, %bx, %c0 : index
      scf.if %odd {
        // expected-remark @+1 {{gpu.barrier before this op: it writes shared 's' that another thread read at line 121}}
        memref.store %v, %s[%t] : memref<128xf32, "shared">
      }
      "tile.yield"() : () -> ()
    }) {layout = #tile.layout<#id, #zero, 1 : i64>, tile.thread_loop} : (index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

#pair = affine_map<(d0, d1) -> (d0 * 2 + d1 floordiv 64)>
#reg = affine_map<(d0, d1) -> (d1 mod 64)>
// A TMA store (select-tma-stores' tile.tma_store copy) reads the whole tile for every thread: a barrier after
// the threads' writes of it, and another before the next writes, in the next iteration of the loop.
func.func @tma_store(%C: memref<?x128xf32>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %cs = "tile.alloc_shared"() {name = "C_s"} : () -> memref<64x128xf32, "shared">
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    scf.for %i = %c0 to %c4 step %c1 {
      // expected-remark @+1 {{gpu.barrier before this op: it writes shared 'C_s' that another thread read at line 161}}
      "tile.parallel"(%c64, %c128) ({
      ^bb0(%r: index, %c: index):
        %v = arith.constant 1.0 : f32
        memref.store %v, %cs[%r, %c] : memref<64x128xf32, "shared">
        "tile.yield"() : () -> ()
      }) {layout = #tile.layout<#pair, #reg, 1 : i64>} : (index, index) -> ()
      %row = arith.muli %i, %c64 : index
      // expected-remark @+1 {{gpu.barrier before this op: it reads shared 'C_s' that another thread wrote at line 156}}
      "tile.copy"(%cs, %C, %c0, %c0, %row, %c0) {shape = [64, 128], tile.tma_store} : (memref<64x128xf32, "shared">, memref<?x128xf32>, index, index, index, index) -> ()
    }
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}
