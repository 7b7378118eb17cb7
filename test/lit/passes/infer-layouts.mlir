// infer-layouts on RMSNorm (dynamic M): one row over 1, 2, 4 and 8 warps, 4 rows (a warp each),
// and 1000 columns (not a multiple of 16 bytes x threads: padded, masked registers). The weight w[j]
// is read beside x[i, j] and gets x's layout projected onto j (replicated over the row groups);
// rms[i] gets it projected onto i (replicated over the threads of a row).
// RUN: tile-opt %s --split-input-file -p infer-layouts | FileCheck %s
// RUN: tile-opt %s --split-input-file -p infer-layouts,test-print-layouts --verify-diagnostics -o /dev/null

// CHECK-LABEL: func.func @rms_1warp
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[X:map[0-9]*]], #[[XR:map[0-9]*]], 1 : i64>, name = "x"}
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>, name = "sq"}
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[RMS:map[0-9]*]], #[[RMSR:map[0-9]*]], 32 : i64>, name = "rms"}
// The loops take the layout of the fragments they index.
// CHECK: }) {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>} : (index, index) -> ()
// CHECK: }) {layout = #tile.layout<#[[RMS]], #[[RMSR]], 32 : i64>} : (index) -> ()
// CHECK: }) {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>} : (index, index) -> ()
func.func @rms_1warp(%X: memref<?x1024xbf16>, %W: memref<1024xbf16>, %Y: memref<?x1024xbf16>, %eps: f32) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %cBM = arith.constant 1 : index
  %cN = arith.constant 1024 : index
  %nf = arith.constant 1024.0 : f32
  %M = memref.dim %X, %c0 : memref<?x1024xbf16>
  %grid = arith.ceildivui %M, %cBM : index
  "tile.kernel"(%grid) ({
  ^bb0(%bx: index):
    // expected-remark @+1 {{fragment 'x' 1x1024 over 32 threads, 32 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 8) mod 32)>, affine_map<(d0, d1) -> (d1 mod 8 + (d1 floordiv 256) * 8)>, 1 : i64>}}
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<1x1024xf32, "fragment">
    // expected-remark @+1 {{fragment 'sq' 1x1024 over 32 threads, 32 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 8) mod 32)>, affine_map<(d0, d1) -> (d1 mod 8 + (d1 floordiv 256) * 8)>, 1 : i64>}}
    %sq = "tile.alloc_fragment"() {name = "sq"} : () -> memref<1x1024xf32, "fragment">
    // expected-remark @+1 {{fragment 'w' 1024 over 32 threads, 32 registers per thread, replicate 1: #tile.layout<affine_map<(d0) -> ((d0 floordiv 8) mod 32)>, affine_map<(d0) -> (d0 mod 8 + (d0 floordiv 256) * 8)>, 1 : i64>}}
    %w = "tile.alloc_fragment"() {name = "w"} : () -> memref<1024xf32, "fragment">
    // expected-remark @+1 {{fragment 'rms' 1 over 32 threads, 1 registers per thread, replicate 32: #tile.layout<affine_map<(d0)[s0] -> (s0)>, affine_map<(d0) -> (0)>, 32 : i64>}}
    %rms = "tile.alloc_fragment"() {name = "rms"} : () -> memref<1xf32, "fragment">
    %row = arith.muli %bx, %cBM : index
    "tile.copy"(%X, %x, %row, %c0, %c0, %c0) {shape = [1, 1024]} : (memref<?x1024xbf16>, memref<1x1024xf32, "fragment">, index, index, index, index) -> ()
    "tile.copy"(%W, %w, %c0, %c0) {shape = [1024]} : (memref<1024xbf16>, memref<1024xf32, "fragment">, index, index) -> ()
    "tile.parallel"(%cBM, %cN) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<1x1024xf32, "fragment">
      %v2 = arith.mulf %v, %v : f32
      memref.store %v2, %sq[%i, %j] : memref<1x1024xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    // expected-remark @+1 {{reduce sum 'sq' dim 1: 32 registers a thread, 5 warp shuffles (xor 16, 8, 4, 2, 1), no shared memory}}
    "tile.reduce"(%sq, %rms) {kind = "sum", dim = 1 : i64, clear = true} : (memref<1x1024xf32, "fragment">, memref<1xf32, "fragment">) -> ()
    "tile.parallel"(%cBM) ({
    ^bb0(%i: index):
      %s = memref.load %rms[%i] : memref<1xf32, "fragment">
      %mean = arith.divf %s, %nf : f32
      %e = arith.addf %mean, %eps : f32
      %r = math.rsqrt %e : f32
      memref.store %r, %rms[%i] : memref<1xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index) -> ()
    "tile.parallel"(%cBM, %cN) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<1x1024xf32, "fragment">
      %r = memref.load %rms[%i] : memref<1xf32, "fragment">
      %wj = memref.load %w[%j] : memref<1024xf32, "fragment">
      %a = arith.mulf %v, %r : f32
      %b = arith.mulf %a, %wj : f32
      memref.store %b, %x[%i, %j] : memref<1x1024xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.copy"(%x, %Y, %c0, %c0, %row, %c0) {shape = [1, 1024]} : (memref<1x1024xf32, "fragment">, memref<?x1024xbf16>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @rms_2warps
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[X:map[0-9]*]], #[[XR:map[0-9]*]], 1 : i64>, name = "x"}
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>, name = "sq"}
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[RMS:map[0-9]*]], #[[RMSR:map[0-9]*]], 64 : i64>, name = "rms"}
// The loops take the layout of the fragments they index.
// CHECK: }) {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>} : (index, index) -> ()
// CHECK: }) {layout = #tile.layout<#[[RMS]], #[[RMSR]], 64 : i64>} : (index) -> ()
// CHECK: }) {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>} : (index, index) -> ()
func.func @rms_2warps(%X: memref<?x2048xbf16>, %W: memref<2048xbf16>, %Y: memref<?x2048xbf16>, %eps: f32) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %cBM = arith.constant 1 : index
  %cN = arith.constant 2048 : index
  %nf = arith.constant 2048.0 : f32
  %M = memref.dim %X, %c0 : memref<?x2048xbf16>
  %grid = arith.ceildivui %M, %cBM : index
  "tile.kernel"(%grid) ({
  ^bb0(%bx: index):
    // expected-remark @+1 {{fragment 'x' 1x2048 over 64 threads, 32 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 8) mod 64)>, affine_map<(d0, d1) -> (d1 mod 8 + (d1 floordiv 512) * 8)>, 1 : i64>}}
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<1x2048xf32, "fragment">
    // expected-remark @+1 {{fragment 'sq' 1x2048 over 64 threads, 32 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 8) mod 64)>, affine_map<(d0, d1) -> (d1 mod 8 + (d1 floordiv 512) * 8)>, 1 : i64>}}
    %sq = "tile.alloc_fragment"() {name = "sq"} : () -> memref<1x2048xf32, "fragment">
    // expected-remark @+1 {{fragment 'w' 2048 over 64 threads, 32 registers per thread, replicate 1: #tile.layout<affine_map<(d0) -> ((d0 floordiv 8) mod 64)>, affine_map<(d0) -> (d0 mod 8 + (d0 floordiv 512) * 8)>, 1 : i64>}}
    %w = "tile.alloc_fragment"() {name = "w"} : () -> memref<2048xf32, "fragment">
    // expected-remark @+1 {{fragment 'rms' 1 over 64 threads, 1 registers per thread, replicate 64: #tile.layout<affine_map<(d0)[s0] -> (s0)>, affine_map<(d0) -> (0)>, 64 : i64>}}
    %rms = "tile.alloc_fragment"() {name = "rms"} : () -> memref<1xf32, "fragment">
    %row = arith.muli %bx, %cBM : index
    "tile.copy"(%X, %x, %row, %c0, %c0, %c0) {shape = [1, 2048]} : (memref<?x2048xbf16>, memref<1x2048xf32, "fragment">, index, index, index, index) -> ()
    "tile.copy"(%W, %w, %c0, %c0) {shape = [2048]} : (memref<2048xbf16>, memref<2048xf32, "fragment">, index, index) -> ()
    "tile.parallel"(%cBM, %cN) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<1x2048xf32, "fragment">
      %v2 = arith.mulf %v, %v : f32
      memref.store %v2, %sq[%i, %j] : memref<1x2048xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    // expected-remark @+1 {{reduce sum 'sq' dim 1: 32 registers a thread, 5 warp shuffles (xor 16, 8, 4, 2, 1), a shared exchange over 2 warps}}
    "tile.reduce"(%sq, %rms) {kind = "sum", dim = 1 : i64, clear = true} : (memref<1x2048xf32, "fragment">, memref<1xf32, "fragment">) -> ()
    "tile.parallel"(%cBM) ({
    ^bb0(%i: index):
      %s = memref.load %rms[%i] : memref<1xf32, "fragment">
      %mean = arith.divf %s, %nf : f32
      %e = arith.addf %mean, %eps : f32
      %r = math.rsqrt %e : f32
      memref.store %r, %rms[%i] : memref<1xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index) -> ()
    "tile.parallel"(%cBM, %cN) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<1x2048xf32, "fragment">
      %r = memref.load %rms[%i] : memref<1xf32, "fragment">
      %wj = memref.load %w[%j] : memref<2048xf32, "fragment">
      %a = arith.mulf %v, %r : f32
      %b = arith.mulf %a, %wj : f32
      memref.store %b, %x[%i, %j] : memref<1x2048xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.copy"(%x, %Y, %c0, %c0, %row, %c0) {shape = [1, 2048]} : (memref<1x2048xf32, "fragment">, memref<?x2048xbf16>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @rms_4warps
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[X:map[0-9]*]], #[[XR:map[0-9]*]], 1 : i64>, name = "x"}
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>, name = "sq"}
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[RMS:map[0-9]*]], #[[RMSR:map[0-9]*]], 128 : i64>, name = "rms"}
// The loops take the layout of the fragments they index.
// CHECK: }) {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>} : (index, index) -> ()
// CHECK: }) {layout = #tile.layout<#[[RMS]], #[[RMSR]], 128 : i64>} : (index) -> ()
// CHECK: }) {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>} : (index, index) -> ()
func.func @rms_4warps(%X: memref<?x4096xbf16>, %W: memref<4096xbf16>, %Y: memref<?x4096xbf16>, %eps: f32) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %cBM = arith.constant 1 : index
  %cN = arith.constant 4096 : index
  %nf = arith.constant 4096.0 : f32
  %M = memref.dim %X, %c0 : memref<?x4096xbf16>
  %grid = arith.ceildivui %M, %cBM : index
  "tile.kernel"(%grid) ({
  ^bb0(%bx: index):
    // expected-remark @+1 {{fragment 'x' 1x4096 over 128 threads, 32 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 8) mod 128)>, affine_map<(d0, d1) -> (d1 mod 8 + (d1 floordiv 1024) * 8)>, 1 : i64>}}
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<1x4096xf32, "fragment">
    // expected-remark @+1 {{fragment 'sq' 1x4096 over 128 threads, 32 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 8) mod 128)>, affine_map<(d0, d1) -> (d1 mod 8 + (d1 floordiv 1024) * 8)>, 1 : i64>}}
    %sq = "tile.alloc_fragment"() {name = "sq"} : () -> memref<1x4096xf32, "fragment">
    // expected-remark @+1 {{fragment 'w' 4096 over 128 threads, 32 registers per thread, replicate 1: #tile.layout<affine_map<(d0) -> ((d0 floordiv 8) mod 128)>, affine_map<(d0) -> (d0 mod 8 + (d0 floordiv 1024) * 8)>, 1 : i64>}}
    %w = "tile.alloc_fragment"() {name = "w"} : () -> memref<4096xf32, "fragment">
    // expected-remark @+1 {{fragment 'rms' 1 over 128 threads, 1 registers per thread, replicate 128: #tile.layout<affine_map<(d0)[s0] -> (s0)>, affine_map<(d0) -> (0)>, 128 : i64>}}
    %rms = "tile.alloc_fragment"() {name = "rms"} : () -> memref<1xf32, "fragment">
    %row = arith.muli %bx, %cBM : index
    "tile.copy"(%X, %x, %row, %c0, %c0, %c0) {shape = [1, 4096]} : (memref<?x4096xbf16>, memref<1x4096xf32, "fragment">, index, index, index, index) -> ()
    "tile.copy"(%W, %w, %c0, %c0) {shape = [4096]} : (memref<4096xbf16>, memref<4096xf32, "fragment">, index, index) -> ()
    "tile.parallel"(%cBM, %cN) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<1x4096xf32, "fragment">
      %v2 = arith.mulf %v, %v : f32
      memref.store %v2, %sq[%i, %j] : memref<1x4096xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    // expected-remark @+1 {{reduce sum 'sq' dim 1: 32 registers a thread, 5 warp shuffles (xor 16, 8, 4, 2, 1), a shared exchange over 4 warps}}
    "tile.reduce"(%sq, %rms) {kind = "sum", dim = 1 : i64, clear = true} : (memref<1x4096xf32, "fragment">, memref<1xf32, "fragment">) -> ()
    "tile.parallel"(%cBM) ({
    ^bb0(%i: index):
      %s = memref.load %rms[%i] : memref<1xf32, "fragment">
      %mean = arith.divf %s, %nf : f32
      %e = arith.addf %mean, %eps : f32
      %r = math.rsqrt %e : f32
      memref.store %r, %rms[%i] : memref<1xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index) -> ()
    "tile.parallel"(%cBM, %cN) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<1x4096xf32, "fragment">
      %r = memref.load %rms[%i] : memref<1xf32, "fragment">
      %wj = memref.load %w[%j] : memref<4096xf32, "fragment">
      %a = arith.mulf %v, %r : f32
      %b = arith.mulf %a, %wj : f32
      memref.store %b, %x[%i, %j] : memref<1x4096xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.copy"(%x, %Y, %c0, %c0, %row, %c0) {shape = [1, 4096]} : (memref<1x4096xf32, "fragment">, memref<?x4096xbf16>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @rms_8warps
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[X:map[0-9]*]], #[[XR:map[0-9]*]], 1 : i64>, name = "x"}
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>, name = "sq"}
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[RMS:map[0-9]*]], #[[RMSR:map[0-9]*]], 256 : i64>, name = "rms"}
// The loops take the layout of the fragments they index.
// CHECK: }) {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>} : (index, index) -> ()
// CHECK: }) {layout = #tile.layout<#[[RMS]], #[[RMSR]], 256 : i64>} : (index) -> ()
// CHECK: }) {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>} : (index, index) -> ()
func.func @rms_8warps(%X: memref<?x8192xbf16>, %W: memref<8192xbf16>, %Y: memref<?x8192xbf16>, %eps: f32) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %cBM = arith.constant 1 : index
  %cN = arith.constant 8192 : index
  %nf = arith.constant 8192.0 : f32
  %M = memref.dim %X, %c0 : memref<?x8192xbf16>
  %grid = arith.ceildivui %M, %cBM : index
  "tile.kernel"(%grid) ({
  ^bb0(%bx: index):
    // expected-remark @+1 {{fragment 'x' 1x8192 over 256 threads, 32 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 8) mod 256)>, affine_map<(d0, d1) -> (d1 mod 8 + (d1 floordiv 2048) * 8)>, 1 : i64>}}
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<1x8192xf32, "fragment">
    // expected-remark @+1 {{fragment 'sq' 1x8192 over 256 threads, 32 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 8) mod 256)>, affine_map<(d0, d1) -> (d1 mod 8 + (d1 floordiv 2048) * 8)>, 1 : i64>}}
    %sq = "tile.alloc_fragment"() {name = "sq"} : () -> memref<1x8192xf32, "fragment">
    // expected-remark @+1 {{fragment 'w' 8192 over 256 threads, 32 registers per thread, replicate 1: #tile.layout<affine_map<(d0) -> ((d0 floordiv 8) mod 256)>, affine_map<(d0) -> (d0 mod 8 + (d0 floordiv 2048) * 8)>, 1 : i64>}}
    %w = "tile.alloc_fragment"() {name = "w"} : () -> memref<8192xf32, "fragment">
    // expected-remark @+1 {{fragment 'rms' 1 over 256 threads, 1 registers per thread, replicate 256: #tile.layout<affine_map<(d0)[s0] -> (s0)>, affine_map<(d0) -> (0)>, 256 : i64>}}
    %rms = "tile.alloc_fragment"() {name = "rms"} : () -> memref<1xf32, "fragment">
    %row = arith.muli %bx, %cBM : index
    "tile.copy"(%X, %x, %row, %c0, %c0, %c0) {shape = [1, 8192]} : (memref<?x8192xbf16>, memref<1x8192xf32, "fragment">, index, index, index, index) -> ()
    "tile.copy"(%W, %w, %c0, %c0) {shape = [8192]} : (memref<8192xbf16>, memref<8192xf32, "fragment">, index, index) -> ()
    "tile.parallel"(%cBM, %cN) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<1x8192xf32, "fragment">
      %v2 = arith.mulf %v, %v : f32
      memref.store %v2, %sq[%i, %j] : memref<1x8192xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    // expected-remark @+1 {{reduce sum 'sq' dim 1: 32 registers a thread, 5 warp shuffles (xor 16, 8, 4, 2, 1), a shared exchange over 8 warps}}
    "tile.reduce"(%sq, %rms) {kind = "sum", dim = 1 : i64, clear = true} : (memref<1x8192xf32, "fragment">, memref<1xf32, "fragment">) -> ()
    "tile.parallel"(%cBM) ({
    ^bb0(%i: index):
      %s = memref.load %rms[%i] : memref<1xf32, "fragment">
      %mean = arith.divf %s, %nf : f32
      %e = arith.addf %mean, %eps : f32
      %r = math.rsqrt %e : f32
      memref.store %r, %rms[%i] : memref<1xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index) -> ()
    "tile.parallel"(%cBM, %cN) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<1x8192xf32, "fragment">
      %r = memref.load %rms[%i] : memref<1xf32, "fragment">
      %wj = memref.load %w[%j] : memref<8192xf32, "fragment">
      %a = arith.mulf %v, %r : f32
      %b = arith.mulf %a, %wj : f32
      memref.store %b, %x[%i, %j] : memref<1x8192xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.copy"(%x, %Y, %c0, %c0, %row, %c0) {shape = [1, 8192]} : (memref<1x8192xf32, "fragment">, memref<?x8192xbf16>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 256 : i64} : (index) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @rms_rows
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[X:map[0-9]*]], #[[XR:map[0-9]*]], 1 : i64>, name = "x"}
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>, name = "sq"}
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[RMS:map[0-9]*]], #[[RMSR:map[0-9]*]], 32 : i64>, name = "rms"}
// The loops take the layout of the fragments they index.
// CHECK: }) {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>} : (index, index) -> ()
// CHECK: }) {layout = #tile.layout<#[[RMS]], #[[RMSR]], 32 : i64>} : (index) -> ()
// CHECK: }) {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>} : (index, index) -> ()
func.func @rms_rows(%X: memref<?x4096xbf16>, %W: memref<4096xbf16>, %Y: memref<?x4096xbf16>, %eps: f32) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %cBM = arith.constant 4 : index
  %cN = arith.constant 4096 : index
  %nf = arith.constant 4096.0 : f32
  %M = memref.dim %X, %c0 : memref<?x4096xbf16>
  %grid = arith.ceildivui %M, %cBM : index
  "tile.kernel"(%grid) ({
  ^bb0(%bx: index):
    // expected-remark @+1 {{fragment 'x' 4x4096 over 128 threads, 128 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 8) mod 32 + d0 * 32)>, affine_map<(d0, d1) -> (d1 mod 8 + (d1 floordiv 256) * 8)>, 1 : i64>}}
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<4x4096xf32, "fragment">
    // expected-remark @+1 {{fragment 'sq' 4x4096 over 128 threads, 128 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 8) mod 32 + d0 * 32)>, affine_map<(d0, d1) -> (d1 mod 8 + (d1 floordiv 256) * 8)>, 1 : i64>}}
    %sq = "tile.alloc_fragment"() {name = "sq"} : () -> memref<4x4096xf32, "fragment">
    // expected-remark @+1 {{fragment 'w' 4096 over 128 threads, 128 registers per thread, replicate 4: #tile.layout<affine_map<(d0)[s0] -> ((d0 floordiv 8) mod 32 + s0 * 32)>, affine_map<(d0) -> (d0 mod 8 + (d0 floordiv 256) * 8)>, 4 : i64>}}
    %w = "tile.alloc_fragment"() {name = "w"} : () -> memref<4096xf32, "fragment">
    // expected-remark @+1 {{fragment 'rms' 4 over 128 threads, 1 registers per thread, replicate 32: #tile.layout<affine_map<(d0)[s0] -> (d0 * 32 + s0)>, affine_map<(d0) -> (0)>, 32 : i64>}}
    %rms = "tile.alloc_fragment"() {name = "rms"} : () -> memref<4xf32, "fragment">
    %row = arith.muli %bx, %cBM : index
    "tile.copy"(%X, %x, %row, %c0, %c0, %c0) {shape = [4, 4096]} : (memref<?x4096xbf16>, memref<4x4096xf32, "fragment">, index, index, index, index) -> ()
    "tile.copy"(%W, %w, %c0, %c0) {shape = [4096]} : (memref<4096xbf16>, memref<4096xf32, "fragment">, index, index) -> ()
    "tile.parallel"(%cBM, %cN) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<4x4096xf32, "fragment">
      %v2 = arith.mulf %v, %v : f32
      memref.store %v2, %sq[%i, %j] : memref<4x4096xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    // expected-remark @+1 {{reduce sum 'sq' dim 1: 128 registers a thread, 5 warp shuffles (xor 16, 8, 4, 2, 1), no shared memory}}
    "tile.reduce"(%sq, %rms) {kind = "sum", dim = 1 : i64, clear = true} : (memref<4x4096xf32, "fragment">, memref<4xf32, "fragment">) -> ()
    "tile.parallel"(%cBM) ({
    ^bb0(%i: index):
      %s = memref.load %rms[%i] : memref<4xf32, "fragment">
      %mean = arith.divf %s, %nf : f32
      %e = arith.addf %mean, %eps : f32
      %r = math.rsqrt %e : f32
      memref.store %r, %rms[%i] : memref<4xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index) -> ()
    "tile.parallel"(%cBM, %cN) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<4x4096xf32, "fragment">
      %r = memref.load %rms[%i] : memref<4xf32, "fragment">
      %wj = memref.load %w[%j] : memref<4096xf32, "fragment">
      %a = arith.mulf %v, %r : f32
      %b = arith.mulf %a, %wj : f32
      memref.store %b, %x[%i, %j] : memref<4x4096xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.copy"(%x, %Y, %c0, %c0, %row, %c0) {shape = [4, 4096]} : (memref<4x4096xf32, "fragment">, memref<?x4096xbf16>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// CHECK-LABEL: func.func @rms_1000
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[X:map[0-9]*]], #[[XR:map[0-9]*]], 1 : i64>, name = "x"}
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>, name = "sq"}
// CHECK: "tile.alloc_fragment"() {layout = #tile.layout<#[[RMS:map[0-9]*]], #[[RMSR:map[0-9]*]], 32 : i64>, name = "rms"}
// The loops take the layout of the fragments they index.
// CHECK: }) {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>} : (index, index) -> ()
// CHECK: }) {layout = #tile.layout<#[[RMS]], #[[RMSR]], 32 : i64>} : (index) -> ()
// CHECK: }) {layout = #tile.layout<#[[X]], #[[XR]], 1 : i64>} : (index, index) -> ()
func.func @rms_1000(%X: memref<?x1000xbf16>, %W: memref<1000xbf16>, %Y: memref<?x1000xbf16>, %eps: f32) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %cBM = arith.constant 8 : index
  %cN = arith.constant 1000 : index
  %nf = arith.constant 1000.0 : f32
  %M = memref.dim %X, %c0 : memref<?x1000xbf16>
  %grid = arith.ceildivui %M, %cBM : index
  "tile.kernel"(%grid) ({
  ^bb0(%bx: index):
    // expected-remark @+1 {{fragment 'x' 8x1000 (padded to 8x1024) over 128 threads, 64 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 8) mod 32 + (d0 mod 4) * 32)>, affine_map<(d0, d1) -> (d1 mod 8 + ((d1 floordiv 256) mod 4) * 8 + (d0 floordiv 4) * 32)>, 1 : i64>}}
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<8x1000xf32, "fragment">
    // expected-remark @+1 {{fragment 'sq' 8x1000 (padded to 8x1024) over 128 threads, 64 registers per thread, replicate 1: #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 8) mod 32 + (d0 mod 4) * 32)>, affine_map<(d0, d1) -> (d1 mod 8 + ((d1 floordiv 256) mod 4) * 8 + (d0 floordiv 4) * 32)>, 1 : i64>}}
    %sq = "tile.alloc_fragment"() {name = "sq"} : () -> memref<8x1000xf32, "fragment">
    // expected-remark @+1 {{fragment 'w' 1000 (padded to 1024) over 128 threads, 32 registers per thread, replicate 4: #tile.layout<affine_map<(d0)[s0] -> ((d0 floordiv 8) mod 32 + s0 * 32)>, affine_map<(d0) -> (d0 mod 8 + ((d0 floordiv 256) mod 4) * 8)>, 4 : i64>}}
    %w = "tile.alloc_fragment"() {name = "w"} : () -> memref<1000xf32, "fragment">
    // expected-remark @+1 {{fragment 'rms' 8 over 128 threads, 2 registers per thread, replicate 32: #tile.layout<affine_map<(d0)[s0] -> ((d0 mod 4) * 32 + s0)>, affine_map<(d0) -> (d0 floordiv 4)>, 32 : i64>}}
    %rms = "tile.alloc_fragment"() {name = "rms"} : () -> memref<8xf32, "fragment">
    %row = arith.muli %bx, %cBM : index
    "tile.copy"(%X, %x, %row, %c0, %c0, %c0) {shape = [8, 1000]} : (memref<?x1000xbf16>, memref<8x1000xf32, "fragment">, index, index, index, index) -> ()
    "tile.copy"(%W, %w, %c0, %c0) {shape = [1000]} : (memref<1000xbf16>, memref<1000xf32, "fragment">, index, index) -> ()
    "tile.parallel"(%cBM, %cN) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<8x1000xf32, "fragment">
      %v2 = arith.mulf %v, %v : f32
      memref.store %v2, %sq[%i, %j] : memref<8x1000xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    // expected-remark @+1 {{reduce sum 'sq' dim 1: 32 registers a thread, 5 warp shuffles (xor 16, 8, 4, 2, 1), no shared memory}}
    "tile.reduce"(%sq, %rms) {kind = "sum", dim = 1 : i64, clear = true} : (memref<8x1000xf32, "fragment">, memref<8xf32, "fragment">) -> ()
    "tile.parallel"(%cBM) ({
    ^bb0(%i: index):
      %s = memref.load %rms[%i] : memref<8xf32, "fragment">
      %mean = arith.divf %s, %nf : f32
      %e = arith.addf %mean, %eps : f32
      %r = math.rsqrt %e : f32
      memref.store %r, %rms[%i] : memref<8xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index) -> ()
    "tile.parallel"(%cBM, %cN) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<8x1000xf32, "fragment">
      %r = memref.load %rms[%i] : memref<8xf32, "fragment">
      %wj = memref.load %w[%j] : memref<1000xf32, "fragment">
      %a = arith.mulf %v, %r : f32
      %b = arith.mulf %a, %wj : f32
      memref.store %b, %x[%i, %j] : memref<8x1000xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.copy"(%x, %Y, %c0, %c0, %row, %c0) {shape = [8, 1000]} : (memref<8x1000xf32, "fragment">, memref<?x1000xbf16>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}


