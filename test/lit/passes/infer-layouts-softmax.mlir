// infer-layouts on softmax (dynamic M): a row in one warp, a row over 8 warps, 4 rows over 2 warps each.
// The row statistics m and s get the projection of x's layout: replicated over the threads of a row.
// RUN: tile-opt %s --split-input-file -p infer-layouts | FileCheck %s
// RUN: tile-opt %s --split-input-file -p infer-layouts,test-print-layouts --verify-diagnostics -o /dev/null

// CHECK-LABEL: func.func @sm_1warp
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[X:map[0-9]*]], #[[XR:map[0-9]*]], 1 : i64>, name = "x"}
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[M:map[0-9]*]], #[[MR:map[0-9]*]], 32 : i64>, name = "m"}
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[M]], #[[MR]], 32 : i64>, name = "s"}
// CHECK: }) {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>} : (index, index) -> ()
// CHECK: }) {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>} : (index, index) -> ()
func.func @sm_1warp(%X: memref<?x1024xf16>, %Y: memref<?x1024xf16>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %cBM = arith.constant 1 : index
  %cN = arith.constant 1024 : index
  %M = memref.dim %X, %c0 : memref<?x1024xf16>
  %grid = arith.ceildivui %M, %cBM : index
  "tile.kernel"(%grid) ({
  ^bb0(%bx: index):
    // expected-remark @+1 {{fragment 'x' 1x1024 over 32 threads, 32 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 8) mod 32)>, affine_map<(d0, d1) -> (d1 mod 8 + (d1 floordiv 256) * 8)>, 1 : i64>}}
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<1x1024xf32, "fragment">
    // expected-remark @+1 {{fragment 'm' 1 over 32 threads, 1 registers per thread, replicate 32: #tile.layout<affine_map<(d0)[s0] -> (s0)>, affine_map<(d0) -> (0)>, 32 : i64>}}
    %m = "tile.alloc_fragment"() {name = "m"} : () -> memref<1xf32, "fragment">
    // expected-remark @+1 {{fragment 's' 1 over 32 threads, 1 registers per thread, replicate 32: #tile.layout<affine_map<(d0)[s0] -> (s0)>, affine_map<(d0) -> (0)>, 32 : i64>}}
    %s = "tile.alloc_fragment"() {name = "s"} : () -> memref<1xf32, "fragment">
    %row = arith.muli %bx, %cBM : index
    "tile.copy"(%X, %x, %row, %c0, %c0, %c0) {shape = [1, 1024]} : (memref<?x1024xf16>, memref<1x1024xf32, "fragment">, index, index, index, index) -> ()
    // expected-remark @+1 {{reduce max 'x' dim 1: 32 registers a thread, 5 warp shuffles (xor 16, 8, 4, 2, 1), no shared memory}}
    "tile.reduce"(%x, %m) {kind = "max", dim = 1 : i64, clear = true} : (memref<1x1024xf32, "fragment">, memref<1xf32, "fragment">) -> ()
    "tile.parallel"(%cBM, %cN) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<1x1024xf32, "fragment">
      %mi = memref.load %m[%i] : memref<1xf32, "fragment">
      %d = arith.subf %v, %mi : f32
      %e = math.exp %d : f32
      memref.store %e, %x[%i, %j] : memref<1x1024xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    // expected-remark @+1 {{reduce sum 'x' dim 1: 32 registers a thread, 5 warp shuffles (xor 16, 8, 4, 2, 1), no shared memory}}
    "tile.reduce"(%x, %s) {kind = "sum", dim = 1 : i64, clear = true} : (memref<1x1024xf32, "fragment">, memref<1xf32, "fragment">) -> ()
    "tile.parallel"(%cBM, %cN) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<1x1024xf32, "fragment">
      %si = memref.load %s[%i] : memref<1xf32, "fragment">
      %q = arith.divf %v, %si : f32
      memref.store %q, %x[%i, %j] : memref<1x1024xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.copy"(%x, %Y, %c0, %c0, %row, %c0) {shape = [1, 1024]} : (memref<1x1024xf32, "fragment">, memref<?x1024xf16>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @sm_8warps
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[X:map[0-9]*]], #[[XR:map[0-9]*]], 1 : i64>, name = "x"}
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[M:map[0-9]*]], #[[MR:map[0-9]*]], 256 : i64>, name = "m"}
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[M]], #[[MR]], 256 : i64>, name = "s"}
// CHECK: }) {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>} : (index, index) -> ()
// CHECK: }) {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>} : (index, index) -> ()
func.func @sm_8warps(%X: memref<?x8192xf16>, %Y: memref<?x8192xf16>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %cBM = arith.constant 1 : index
  %cN = arith.constant 8192 : index
  %M = memref.dim %X, %c0 : memref<?x8192xf16>
  %grid = arith.ceildivui %M, %cBM : index
  "tile.kernel"(%grid) ({
  ^bb0(%bx: index):
    // expected-remark @+1 {{fragment 'x' 1x8192 over 256 threads, 32 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 8) mod 256)>, affine_map<(d0, d1) -> (d1 mod 8 + (d1 floordiv 2048) * 8)>, 1 : i64>}}
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<1x8192xf32, "fragment">
    // expected-remark @+1 {{fragment 'm' 1 over 256 threads, 1 registers per thread, replicate 256: #tile.layout<affine_map<(d0)[s0] -> (s0)>, affine_map<(d0) -> (0)>, 256 : i64>}}
    %m = "tile.alloc_fragment"() {name = "m"} : () -> memref<1xf32, "fragment">
    // expected-remark @+1 {{fragment 's' 1 over 256 threads, 1 registers per thread, replicate 256: #tile.layout<affine_map<(d0)[s0] -> (s0)>, affine_map<(d0) -> (0)>, 256 : i64>}}
    %s = "tile.alloc_fragment"() {name = "s"} : () -> memref<1xf32, "fragment">
    %row = arith.muli %bx, %cBM : index
    "tile.copy"(%X, %x, %row, %c0, %c0, %c0) {shape = [1, 8192]} : (memref<?x8192xf16>, memref<1x8192xf32, "fragment">, index, index, index, index) -> ()
    // expected-remark @+1 {{reduce max 'x' dim 1: 32 registers a thread, 5 warp shuffles (xor 16, 8, 4, 2, 1), a shared exchange over 8 warps}}
    "tile.reduce"(%x, %m) {kind = "max", dim = 1 : i64, clear = true} : (memref<1x8192xf32, "fragment">, memref<1xf32, "fragment">) -> ()
    "tile.parallel"(%cBM, %cN) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<1x8192xf32, "fragment">
      %mi = memref.load %m[%i] : memref<1xf32, "fragment">
      %d = arith.subf %v, %mi : f32
      %e = math.exp %d : f32
      memref.store %e, %x[%i, %j] : memref<1x8192xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    // expected-remark @+1 {{reduce sum 'x' dim 1: 32 registers a thread, 5 warp shuffles (xor 16, 8, 4, 2, 1), a shared exchange over 8 warps}}
    "tile.reduce"(%x, %s) {kind = "sum", dim = 1 : i64, clear = true} : (memref<1x8192xf32, "fragment">, memref<1xf32, "fragment">) -> ()
    "tile.parallel"(%cBM, %cN) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<1x8192xf32, "fragment">
      %si = memref.load %s[%i] : memref<1xf32, "fragment">
      %q = arith.divf %v, %si : f32
      memref.store %q, %x[%i, %j] : memref<1x8192xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.copy"(%x, %Y, %c0, %c0, %row, %c0) {shape = [1, 8192]} : (memref<1x8192xf32, "fragment">, memref<?x8192xf16>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 256 : i64} : (index) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @sm_rows
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[X:map[0-9]*]], #[[XR:map[0-9]*]], 1 : i64>, name = "x"}
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[M:map[0-9]*]], #[[MR:map[0-9]*]], 64 : i64>, name = "m"}
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[M]], #[[MR]], 64 : i64>, name = "s"}
// CHECK: }) {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>} : (index, index) -> ()
// CHECK: }) {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>} : (index, index) -> ()
func.func @sm_rows(%X: memref<?x4096xf16>, %Y: memref<?x4096xf16>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %cBM = arith.constant 4 : index
  %cN = arith.constant 4096 : index
  %M = memref.dim %X, %c0 : memref<?x4096xf16>
  %grid = arith.ceildivui %M, %cBM : index
  "tile.kernel"(%grid) ({
  ^bb0(%bx: index):
    // expected-remark @+1 {{fragment 'x' 4x4096 over 256 threads, 64 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 8) mod 64 + d0 * 64)>, affine_map<(d0, d1) -> (d1 mod 8 + (d1 floordiv 512) * 8)>, 1 : i64>}}
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<4x4096xf32, "fragment">
    // expected-remark @+1 {{fragment 'm' 4 over 256 threads, 1 registers per thread, replicate 64: #tile.layout<affine_map<(d0)[s0] -> (d0 * 64 + s0)>, affine_map<(d0) -> (0)>, 64 : i64>}}
    %m = "tile.alloc_fragment"() {name = "m"} : () -> memref<4xf32, "fragment">
    // expected-remark @+1 {{fragment 's' 4 over 256 threads, 1 registers per thread, replicate 64: #tile.layout<affine_map<(d0)[s0] -> (d0 * 64 + s0)>, affine_map<(d0) -> (0)>, 64 : i64>}}
    %s = "tile.alloc_fragment"() {name = "s"} : () -> memref<4xf32, "fragment">
    %row = arith.muli %bx, %cBM : index
    "tile.copy"(%X, %x, %row, %c0, %c0, %c0) {shape = [4, 4096]} : (memref<?x4096xf16>, memref<4x4096xf32, "fragment">, index, index, index, index) -> ()
    // expected-remark @+1 {{reduce max 'x' dim 1: 64 registers a thread, 5 warp shuffles (xor 16, 8, 4, 2, 1), a shared exchange over 2 warps}}
    "tile.reduce"(%x, %m) {kind = "max", dim = 1 : i64, clear = true} : (memref<4x4096xf32, "fragment">, memref<4xf32, "fragment">) -> ()
    "tile.parallel"(%cBM, %cN) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<4x4096xf32, "fragment">
      %mi = memref.load %m[%i] : memref<4xf32, "fragment">
      %d = arith.subf %v, %mi : f32
      %e = math.exp %d : f32
      memref.store %e, %x[%i, %j] : memref<4x4096xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    // expected-remark @+1 {{reduce sum 'x' dim 1: 64 registers a thread, 5 warp shuffles (xor 16, 8, 4, 2, 1), a shared exchange over 2 warps}}
    "tile.reduce"(%x, %s) {kind = "sum", dim = 1 : i64, clear = true} : (memref<4x4096xf32, "fragment">, memref<4xf32, "fragment">) -> ()
    "tile.parallel"(%cBM, %cN) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<4x4096xf32, "fragment">
      %si = memref.load %s[%i] : memref<4xf32, "fragment">
      %q = arith.divf %v, %si : f32
      memref.store %q, %x[%i, %j] : memref<4x4096xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.copy"(%x, %Y, %c0, %c0, %row, %c0) {shape = [4, 4096]} : (memref<4x4096xf32, "fragment">, memref<?x4096xf16>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 256 : i64} : (index) -> ()
  return
}

// -----

// A transposed access shares the layout transposed; a fragment-free loop over global memory gets a
// coalescing layout of 16-byte runs; a loop with run-time extents gets none (it is thread-strided).
// CHECK-LABEL: func.func @transpose_and_plain_loops
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[A:map[0-9]*]], #[[AR:map[0-9]*]], 1 : i64>, name = "a"}
// CHECK: }) {layout = #tile.layout<#[[A]], #[[AR]], 1 : i64>} : (index, index) -> ()
// CHECK: }) {layout = #tile.layout<#{{map[0-9]*}}, #{{map[0-9]*}}, 1 : i64>} : (index) -> ()
// CHECK: memref.store {{.*}} : memref<?xf16>
// CHECK-NEXT: "tile.yield"
// CHECK-NEXT: }) : (index) -> ()
func.func @transpose_and_plain_loops(%X: memref<?x32xf32>, %Y: memref<?x32xf32>, %Z: memref<?xf16>, %n: index) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c256 = arith.constant 256 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-remark @+1 {{fragment 'a' 32x32 over 128 threads, 8 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> (d1 floordiv 4 + (d0 mod 16) * 8)>, affine_map<(d0, d1) -> (d1 mod 4 + (d0 floordiv 16) * 4)>, 1 : i64>}}
    %a = "tile.alloc_fragment"() {name = "a"} : () -> memref<32x32xf32, "fragment">
    // expected-remark @+1 {{fragment 'b' 32x32 over 128 threads, 8 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> (d0 floordiv 4 + (d1 mod 16) * 8)>, affine_map<(d0, d1) -> (d0 mod 4 + (d1 floordiv 16) * 4)>, 1 : i64>}}
    %b = "tile.alloc_fragment"() {name = "b"} : () -> memref<32x32xf32, "fragment">
    "tile.copy"(%X, %a, %c0, %c0, %c0, %c0) {shape = [32, 32]} : (memref<?x32xf32>, memref<32x32xf32, "fragment">, index, index, index, index) -> ()
    "tile.parallel"(%c32, %c32) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %a[%i, %j] : memref<32x32xf32, "fragment">
      memref.store %v, %b[%j, %i] : memref<32x32xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.copy"(%b, %Y, %c0, %c0, %c0, %c0) {shape = [32, 32]} : (memref<32x32xf32, "fragment">, memref<?x32xf32>, index, index, index, index) -> ()
    "tile.parallel"(%c256) ({
    ^bb0(%i: index):
      %h = arith.constant 0.5 : f16
      memref.store %h, %Z[%i] : memref<?xf16>
      "tile.yield"() : () -> ()
    }) : (index) -> ()
    "tile.parallel"(%n) ({
    ^bb0(%i: index):
      %h = arith.constant 1.5 : f16
      memref.store %h, %Z[%i] : memref<?xf16>
      "tile.yield"() : () -> ()
    }) : (index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// T.annotate_layout wins, and the loops and the fragments read beside it follow it: here rows go to
// threads (one row of 64 per thread), so the row statistic needs no replication.
// CHECK-DAG: #[[ROWS:.+]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[COLS:.+]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @annotated
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[ROWS]], #[[COLS]], 1 : i64>, name = "x", tile.annotated_layout
// CHECK: }) {layout = #tile.layout<#[[ROWS]], #[[COLS]], 1 : i64>} : (index, index) -> ()
func.func @annotated(%X: memref<?x64xf32>, %Y: memref<?xf32>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-remark @+1 {{fragment 'x' 128x64 over 128 threads, 64 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, 1 : i64>}}
    %x = "tile.alloc_fragment"() {name = "x", tile.annotated_layout = #tile.layout<affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, 1 : i64>} : () -> memref<128x64xf32, "fragment">
    // expected-remark @+1 {{fragment 'r' 128 over 128 threads, 1 registers per thread, replicate 1: #tile.layout<affine_map<(d0) -> (d0)>, affine_map<(d0) -> (0)>, 1 : i64>}}
    %r = "tile.alloc_fragment"() {name = "r"} : () -> memref<128xf32, "fragment">
    "tile.copy"(%X, %x, %c0, %c0, %c0, %c0) {shape = [128, 64]} : (memref<?x64xf32>, memref<128x64xf32, "fragment">, index, index, index, index) -> ()
    // expected-remark @+1 {{reduce sum 'x' dim 1: 64 registers a thread, 0 warp shuffles, no shared memory}}
    "tile.reduce"(%x, %r) {kind = "sum", dim = 1 : i64, clear = true} : (memref<128x64xf32, "fragment">, memref<128xf32, "fragment">) -> ()
    "tile.parallel"(%c128, %c64) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<128x64xf32, "fragment">
      %s = memref.load %r[%i] : memref<128xf32, "fragment">
      %d = arith.divf %v, %s : f32
      memref.store %d, %x[%i, %j] : memref<128x64xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.copy"(%r, %Y, %c0, %c0) {shape = [128]} : (memref<128xf32, "fragment">, memref<?xf32>, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}



// -----

// An annotation may name a unit dim (`i * 32 + ...` of a 1 x N fragment, as a kernel written for
// block_M rows reads at block_M = 1): that digit is always 0 and drops out, and the annotation holds.
// CHECK-LABEL: func.func @annotated_unit_row
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#{{.+}}, #{{.+}}, 1 : i64>, name = "x", tile.annotated_layout
func.func @annotated_unit_row(%X: memref<?x576xf32>, %Y: memref<?xf32>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-remark @+1 {{fragment 'x' 1x576 over 32 threads, 18 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 2) mod 32)>, affine_map<(d0, d1) -> (d1 mod 2 + (d1 floordiv 64) * 2)>, 1 : i64>}}
    %x = "tile.alloc_fragment"() {name = "x", tile.annotated_layout = #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 2) mod 32 + d0 * 32)>, affine_map<(d0, d1) -> (d1 mod 2 + (d1 floordiv 64) * 2)>, 1 : i64>} : () -> memref<1x576xf32, "fragment">
    // expected-remark @+1 {{fragment 'r' 1 over 32 threads, 1 registers per thread, replicate 32}}
    %r = "tile.alloc_fragment"() {name = "r"} : () -> memref<1xf32, "fragment">
    "tile.copy"(%X, %x, %c0, %c0, %c0, %c0) {shape = [1, 576]} : (memref<?x576xf32>, memref<1x576xf32, "fragment">, index, index, index, index) -> ()
    // expected-remark @+1 {{reduce sum 'x' dim 1: 18 registers a thread, 5 warp shuffles (xor 16, 8, 4, 2, 1), no shared memory}}
    "tile.reduce"(%x, %r) {kind = "sum", dim = 1 : i64, clear = true} : (memref<1x576xf32, "fragment">, memref<1xf32, "fragment">) -> ()
    "tile.copy"(%r, %Y, %c0, %c0) {shape = [1]} : (memref<1xf32, "fragment">, memref<?xf32>, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}
