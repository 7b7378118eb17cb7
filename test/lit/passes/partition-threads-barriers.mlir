// Barriers in softmax and RMSNorm, through infer-layouts, lower-tile-ops and partition-threads: one per
// reduction whose row spans several warps (its shared exchange), none when a row sits in one warp.
// RUN: tile-opt %s --split-input-file -p infer-layouts,lower-tile-ops,partition-threads | FileCheck %s

// A row in one warp: shuffles only.
// CHECK-LABEL: func.func @rms_1warp
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
func.func @rms_1warp(%X: memref<?x1024xbf16>, %W: memref<1024xbf16>, %Y: memref<?x1024xbf16>, %eps: f32) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %cBM = arith.constant 1 : index
  %cN = arith.constant 1024 : index
  %nf = arith.constant 1024.0 : f32
  %M = memref.dim %X, %c0 : memref<?x1024xbf16>
  %grid = arith.ceildivui %M, %cBM : index
  "tile.kernel"(%grid) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<1x1024xf32, "fragment">
    %sq = "tile.alloc_fragment"() {name = "sq"} : () -> memref<1x1024xf32, "fragment">
    %w = "tile.alloc_fragment"() {name = "w"} : () -> memref<1024xf32, "fragment">
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

// A row over 4 warps: one exchange.
// CHECK-LABEL: func.func @rms_4warps
// CHECK-COUNT-1: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
func.func @rms_4warps(%X: memref<?x4096xbf16>, %W: memref<4096xbf16>, %Y: memref<?x4096xbf16>, %eps: f32) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %cBM = arith.constant 1 : index
  %cN = arith.constant 4096 : index
  %nf = arith.constant 4096.0 : f32
  %M = memref.dim %X, %c0 : memref<?x4096xbf16>
  %grid = arith.ceildivui %M, %cBM : index
  "tile.kernel"(%grid) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<1x4096xf32, "fragment">
    %sq = "tile.alloc_fragment"() {name = "sq"} : () -> memref<1x4096xf32, "fragment">
    %w = "tile.alloc_fragment"() {name = "w"} : () -> memref<4096xf32, "fragment">
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

// One row of 1000 (padded to 1024) over 4 warps.
// CHECK-LABEL: func.func @rms_1000
// CHECK-COUNT-1: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
func.func @rms_1000(%X: memref<?x1000xbf16>, %W: memref<1000xbf16>, %Y: memref<?x1000xbf16>, %eps: f32) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %cBM = arith.constant 1 : index
  %cN = arith.constant 1000 : index
  %nf = arith.constant 1000.0 : f32
  %M = memref.dim %X, %c0 : memref<?x1000xbf16>
  %grid = arith.ceildivui %M, %cBM : index
  "tile.kernel"(%grid) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<1x1000xf32, "fragment">
    %sq = "tile.alloc_fragment"() {name = "sq"} : () -> memref<1x1000xf32, "fragment">
    %w = "tile.alloc_fragment"() {name = "w"} : () -> memref<1000xf32, "fragment">
    %rms = "tile.alloc_fragment"() {name = "rms"} : () -> memref<1xf32, "fragment">
    %row = arith.muli %bx, %cBM : index
    "tile.copy"(%X, %x, %row, %c0, %c0, %c0) {shape = [1, 1000]} : (memref<?x1000xbf16>, memref<1x1000xf32, "fragment">, index, index, index, index) -> ()
    "tile.copy"(%W, %w, %c0, %c0) {shape = [1000]} : (memref<1000xbf16>, memref<1000xf32, "fragment">, index, index) -> ()
    "tile.parallel"(%cBM, %cN) ({
    ^bb0(%i: index, %j: index):
      %v = memref.load %x[%i, %j] : memref<1x1000xf32, "fragment">
      %v2 = arith.mulf %v, %v : f32
      memref.store %v2, %sq[%i, %j] : memref<1x1000xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.reduce"(%sq, %rms) {kind = "sum", dim = 1 : i64, clear = true} : (memref<1x1000xf32, "fragment">, memref<1xf32, "fragment">) -> ()
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
      %v = memref.load %x[%i, %j] : memref<1x1000xf32, "fragment">
      %r = memref.load %rms[%i] : memref<1xf32, "fragment">
      %wj = memref.load %w[%j] : memref<1000xf32, "fragment">
      %a = arith.mulf %v, %r : f32
      %b = arith.mulf %a, %wj : f32
      memref.store %b, %x[%i, %j] : memref<1x1000xf32, "fragment">
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.copy"(%x, %Y, %c0, %c0, %row, %c0) {shape = [1, 1000]} : (memref<1x1000xf32, "fragment">, memref<?x1000xbf16>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// 4 rows, a warp each: no exchange.
// CHECK-LABEL: func.func @rms_rows
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
func.func @rms_rows(%X: memref<?x4096xbf16>, %W: memref<4096xbf16>, %Y: memref<?x4096xbf16>, %eps: f32) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %cBM = arith.constant 4 : index
  %cN = arith.constant 4096 : index
  %nf = arith.constant 4096.0 : f32
  %M = memref.dim %X, %c0 : memref<?x4096xbf16>
  %grid = arith.ceildivui %M, %cBM : index
  "tile.kernel"(%grid) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<4x4096xf32, "fragment">
    %sq = "tile.alloc_fragment"() {name = "sq"} : () -> memref<4x4096xf32, "fragment">
    %w = "tile.alloc_fragment"() {name = "w"} : () -> memref<4096xf32, "fragment">
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

// CHECK-LABEL: func.func @sm_1warp
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
func.func @sm_1warp(%X: memref<?x1024xf16>, %Y: memref<?x1024xf16>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %cBM = arith.constant 1 : index
  %cN = arith.constant 1024 : index
  %M = memref.dim %X, %c0 : memref<?x1024xf16>
  %grid = arith.ceildivui %M, %cBM : index
  "tile.kernel"(%grid) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<1x1024xf32, "fragment">
    %m = "tile.alloc_fragment"() {name = "m"} : () -> memref<1xf32, "fragment">
    %s = "tile.alloc_fragment"() {name = "s"} : () -> memref<1xf32, "fragment">
    %row = arith.muli %bx, %cBM : index
    "tile.copy"(%X, %x, %row, %c0, %c0, %c0) {shape = [1, 1024]} : (memref<?x1024xf16>, memref<1x1024xf32, "fragment">, index, index, index, index) -> ()
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

// max, then sum: two exchanges, two barriers.
// CHECK-LABEL: func.func @sm_8warps
// CHECK-COUNT-2: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
func.func @sm_8warps(%X: memref<?x8192xf16>, %Y: memref<?x8192xf16>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %cBM = arith.constant 1 : index
  %cN = arith.constant 8192 : index
  %M = memref.dim %X, %c0 : memref<?x8192xf16>
  %grid = arith.ceildivui %M, %cBM : index
  "tile.kernel"(%grid) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<1x8192xf32, "fragment">
    %m = "tile.alloc_fragment"() {name = "m"} : () -> memref<1xf32, "fragment">
    %s = "tile.alloc_fragment"() {name = "s"} : () -> memref<1xf32, "fragment">
    %row = arith.muli %bx, %cBM : index
    "tile.copy"(%X, %x, %row, %c0, %c0, %c0) {shape = [1, 8192]} : (memref<?x8192xf16>, memref<1x8192xf32, "fragment">, index, index, index, index) -> ()
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

// 4 rows, each over 2 warps.
// CHECK-LABEL: func.func @sm_rows
// CHECK-COUNT-2: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
func.func @sm_rows(%X: memref<?x4096xf16>, %Y: memref<?x4096xf16>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %cBM = arith.constant 4 : index
  %cN = arith.constant 4096 : index
  %M = memref.dim %X, %c0 : memref<?x4096xf16>
  %grid = arith.ceildivui %M, %cBM : index
  "tile.kernel"(%grid) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_fragment"() {name = "x"} : () -> memref<4x4096xf32, "fragment">
    %m = "tile.alloc_fragment"() {name = "m"} : () -> memref<4xf32, "fragment">
    %s = "tile.alloc_fragment"() {name = "s"} : () -> memref<4xf32, "fragment">
    %row = arith.muli %bx, %cBM : index
    "tile.copy"(%X, %x, %row, %c0, %c0, %c0) {shape = [4, 4096]} : (memref<?x4096xf16>, memref<4x4096xf32, "fragment">, index, index, index, index) -> ()
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
