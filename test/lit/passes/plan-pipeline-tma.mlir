// plan-pipeline{tma=true}: ring copies TMA can run carry tile.tma instead of tile.async; when every ring copy of
// the loop does, there are no cp.async commit/wait groups (the barrier and tma-copies' mbarrier waits order the
// ring); a copy TMA cannot run stays cp.async with a remark saying why.
// RUN: tile-opt %s --split-input-file -p 'plan-pipeline{tma=true}' 2>/dev/null | FileCheck %s
// RUN: tile-opt %s --split-input-file --verify-diagnostics -p 'plan-pipeline{tma=true}' -o /dev/null
// The output verifies and re-parses.
// RUN: tile-opt %s --split-input-file -p 'plan-pipeline{tma=true}' 2>/dev/null | tile-opt --split-input-file -o /dev/null

// A wgmma gemm over tensors whose inner dims are static multiples of 16 bytes: both copies TMA, one batch in
// flight (tiles one ahead), no commit/wait groups.
// CHECK-LABEL: func.func @tma_gemm
// CHECK: %[[A:.+]] = "tile.alloc_shared"() {name = "A_s", tile.ring, tile.swizzle = 64 : i64} : () -> memref<3x128x32xbf16, "shared">
// CHECK: %[[B:.+]] = "tile.alloc_shared"() {name = "B_s", tile.ring, tile.swizzle = 128 : i64} : () -> memref<3x32x128xbf16, "shared">
// CHECK-NOT: tile.cp_async
// CHECK: "tile.copy"(%{{.+}}, %[[A]], %{{.+}}, %{{.+}}, %[[C0:.+]], %{{.+}}, %{{.+}}) {shape = [1, 128, 32], tile.tma}
// CHECK: "tile.copy"(%{{.+}}, %[[B]], %{{.+}}, %{{.+}}, %[[C0]], %{{.+}}, %{{.+}}) {shape = [1, 32, 128], tile.tma}
// CHECK: "tile.pipelined"
// CHECK-NEXT: ^bb0(%[[K:.+]]: index):
// CHECK-NEXT: gpu.barrier
// CHECK: %[[SLOT1:.+]] = arith.remui %{{.+}}, %{{.+}} : index
// CHECK: "tile.copy"(%{{.+}}, %[[A]], %{{.+}}, %{{.+}}, %[[SLOT1]], %{{.+}}, %{{.+}}) {shape = [1, 128, 32], tile.tma}
// CHECK: "tile.copy"(%{{.+}}, %[[B]], %{{.+}}, %{{.+}}, %[[SLOT1]], %{{.+}}, %{{.+}}) {shape = [1, 32, 128], tile.tma}
// CHECK-NOT: tile.cp_async
// CHECK: "tile.gemm"({{.+}}) {tile.mma = {shape = "m64nNk16", warpgroups_m = 1 : i64, warpgroups_n = 1 : i64}, tile.wgmma_pending = 1 : i64, transpose_a = false, transpose_b = false}
// CHECK-NOT: tile.cp_async
func.func @tma_gemm(%A: memref<?x256xbf16>, %B: memref<256x256xbf16>, %n: index) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  "tile.kernel"(%c1, %c1) ({
  ^bb0(%bx: index, %by: index):
    %a = "tile.alloc_shared"() {name = "A_s", tile.swizzle = 64 : i64} : () -> memref<128x32xbf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s", tile.swizzle = 128 : i64} : () -> memref<32x128xbf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C_f"} : () -> memref<128x128xf32, "fragment">
    "tile.pipelined"(%c0, %n, %c1) ({
    ^bb0(%k: index):
      %row = arith.muli %by, %c128 : index
      %col = arith.muli %k, %c32 : index
      "tile.copy"(%A, %a, %row, %col, %c0, %c0) {shape = [128, 32]} : (memref<?x256xbf16>, memref<128x32xbf16, "shared">, index, index, index, index) -> ()
      %brow = arith.muli %k, %c32 : index
      %bcol = arith.muli %bx, %c128 : index
      "tile.copy"(%B, %b, %brow, %bcol, %c0, %c0) {shape = [32, 128]} : (memref<256x256xbf16>, memref<32x128xbf16, "shared">, index, index, index, index) -> ()
      "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false, tile.mma = {shape = "m64nNk16", warpgroups_m = 1 : i64, warpgroups_n = 1 : i64}} : (memref<128x32xbf16, "shared">, memref<32x128xbf16, "shared">, memref<128x128xf32, "fragment">) -> ()
      "tile.yield"() : () -> ()
    }) {num_stages = 3 : i64} : (index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index, index) -> ()
  return
}

// -----

// A's rows have a run-time length: its copy stays cp.async, so the loop keeps its commit/wait groups; B's is TMA.
// CHECK-LABEL: func.func @mixed
// CHECK: "tile.copy"(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) {shape = [1, 128, 32], tile.async}
// CHECK: "tile.copy"(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) {shape = [1, 32, 128], tile.tma}
// CHECK: "tile.cp_async_commit"() : () -> ()
// CHECK: "tile.pipelined"
// CHECK-NEXT: ^bb0(%[[K:.+]]: index):
// CHECK-NEXT: "tile.cp_async_wait"() {pending = 0 : i64} : () -> ()
// CHECK-NEXT: gpu.barrier
// CHECK: {shape = [1, 128, 32], tile.async}
// CHECK: {shape = [1, 32, 128], tile.tma}
// CHECK: "tile.cp_async_commit"() : () -> ()
func.func @mixed(%A: memref<?x?xbf16>, %B: memref<?x256xbf16>, %n: index) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  "tile.kernel"(%c1, %c1) ({
  ^bb0(%bx: index, %by: index):
    %a = "tile.alloc_shared"() {name = "A_s", tile.swizzle = 64 : i64} : () -> memref<128x32xbf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s", tile.swizzle = 128 : i64} : () -> memref<32x128xbf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C_f"} : () -> memref<128x128xf32, "fragment">
    "tile.pipelined"(%c0, %n, %c1) ({
    ^bb0(%k: index):
      %row = arith.muli %by, %c128 : index
      %col = arith.muli %k, %c32 : index
      // expected-remark @+1 {{T.copy stays cp.async, not TMA: a dim of its tensor other than the outermost has a run-time size (a tensor map's byte strides must be known multiples of 16)}}
      "tile.copy"(%A, %a, %row, %col, %c0, %c0) {shape = [128, 32]} : (memref<?x?xbf16>, memref<128x32xbf16, "shared">, index, index, index, index) -> ()
      %brow = arith.muli %k, %c32 : index
      %bcol = arith.muli %bx, %c128 : index
      "tile.copy"(%B, %b, %brow, %bcol, %c0, %c0) {shape = [32, 128]} : (memref<?x256xbf16>, memref<32x128xbf16, "shared">, index, index, index, index) -> ()
      "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false, tile.mma = {shape = "m64nNk16", warpgroups_m = 1 : i64, warpgroups_n = 1 : i64}} : (memref<128x32xbf16, "shared">, memref<32x128xbf16, "shared">, memref<128x128xf32, "fragment">) -> ()
      "tile.yield"() : () -> ()
    }) {num_stages = 3 : i64} : (index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index, index) -> ()
  return
}

// -----

// What else TMA cannot run: a converting copy, rows of 24 bytes, a tile of 4 rows swizzled, a start 8 bytes into
// the rows (a box off the 16-byte grain faults at the tensor's edge), a pipelined loop in another loop (its
// mbarriers' phases would not start at 0 in the next outer iteration).
// CHECK-LABEL: func.func @not_tma
// CHECK-NOT: tile.tma
func.func @not_tma(%X: memref<?x64xf32>, %Y: memref<?x12xbf16>, %Z: memref<?x64xbf16>, %V: memref<?x128xbf16>, %n: index) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_shared"() {name = "X_s"} : () -> memref<16x64xbf16, "shared">
    %y = "tile.alloc_shared"() {name = "Y_s"} : () -> memref<16x12xbf16, "shared">
    %z = "tile.alloc_shared"() {name = "Z_s", tile.swizzle = 128 : i64} : () -> memref<4x64xbf16, "shared">
    %w = "tile.alloc_shared"() {name = "W_s"} : () -> memref<16x64xbf16, "shared">
    %v_s = "tile.alloc_shared"() {name = "V_s"} : () -> memref<16x64xbf16, "shared">
    %d_s = "tile.alloc_shared"() {name = "D_s"} : () -> memref<16x64xbf16, "shared">
    "tile.pipelined"(%c0, %n, %c1) ({
    ^bb0(%k: index):
      %row = arith.muli %k, %c16 : index
      %zrow = arith.muli %k, %c4 : index
      // expected-remark @+1 {{T.copy stays cp.async, not TMA: it converts f32 to bf16 (TMA copies bytes)}}
      "tile.copy"(%X, %x, %row, %c0, %c0, %c0) {shape = [16, 64]} : (memref<?x64xf32>, memref<16x64xbf16, "shared">, index, index, index, index) -> ()
      // expected-remark @+1 {{T.copy stays cp.async, not TMA: a byte stride of its tensor, 24, is not a multiple of 16}}
      "tile.copy"(%Y, %y, %row, %c0, %c0, %c0) {shape = [16, 12]} : (memref<?x12xbf16>, memref<16x12xbf16, "shared">, index, index, index, index) -> ()
      // expected-remark @+1 {{T.copy stays cp.async, not TMA: its swizzled tile's rows, 4, are not a multiple of 8}}
      "tile.copy"(%Z, %z, %zrow, %c0, %c0, %c0) {shape = [4, 64]} : (memref<?x64xbf16>, memref<4x64xbf16, "shared">, index, index, index, index) -> ()
      // expected-remark @+1 {{T.copy stays cp.async, not TMA: its start along the tensor's innermost dim is not provably a multiple of 16 bytes (8 elements; a box off that grain faults at the tensor's edge)}}
      "tile.copy"(%V, %v_s, %row, %c4, %c0, %c0) {shape = [16, 64]} : (memref<?x128xbf16>, memref<16x64xbf16, "shared">, index, index, index, index) -> ()
      // expected-remark @+1 {{T.copy stays cp.async, not TMA: it says disable_tma=True}}
      "tile.copy"(%Z, %d_s, %row, %c0, %c0, %c0) {shape = [16, 64], tile.disable_tma} : (memref<?x64xbf16>, memref<16x64xbf16, "shared">, index, index, index, index) -> ()
      %q = memref.load %d_s[%c0, %c0] : memref<16x64xbf16, "shared">
      %u = memref.load %x[%c0, %c0] : memref<16x64xbf16, "shared">
      %r = memref.load %v_s[%c0, %c0] : memref<16x64xbf16, "shared">
      %v = memref.load %y[%c0, %c0] : memref<16x12xbf16, "shared">
      %s = memref.load %z[%c0, %c0] : memref<4x64xbf16, "shared">
      "tile.yield"() : () -> ()
    }) {num_stages = 2 : i64} : (index, index, index) -> ()
    scf.for %i = %c0 to %c2 step %c1 {
      "tile.pipelined"(%c0, %n, %c1) ({
      ^bb0(%k: index):
        %row = arith.muli %k, %c16 : index
        // expected-remark @+1 {{T.copy stays cp.async, not TMA: its T.Pipelined loop is inside another loop}}
        "tile.copy"(%Z, %w, %row, %c0, %c0, %c0) {shape = [16, 64]} : (memref<?x64xbf16>, memref<16x64xbf16, "shared">, index, index, index, index) -> ()
        %t = memref.load %w[%c0, %c0] : memref<16x64xbf16, "shared">
        "tile.yield"() : () -> ()
      }) {num_stages = 2 : i64} : (index, index, index) -> ()
    }
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}
