// plan-pipeline: T.Pipelined(num_stages > 1) copies become rings with a prologue, commit/wait groups and
// one barrier per iteration.
// RUN: tile-opt %s --split-input-file -p plan-pipeline | FileCheck %s
// The output verifies and re-parses.
// RUN: tile-opt %s --split-input-file -p plan-pipeline | tile-opt --split-input-file -o /dev/null

// Three stages over a run-time number of K tiles; the gemm (an mma one) reads both rings in slot t mod 3.
// CHECK-LABEL: func.func @mma_gemm
// CHECK-SAME: %[[N:[a-z0-9]+]]: index)
// CHECK: "tile.kernel"
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[C3:.+]] = arith.constant 3 : index
// CHECK-NEXT: %[[C2:.+]] = arith.constant 2 : index
// CHECK-NEXT: %[[C1:.+]] = arith.constant 1 : index
// CHECK-NEXT: %[[C0:.+]] = arith.constant 0 : index
// CHECK: %[[A:.+]] = "tile.alloc_shared"() {name = "A_s", tile.ring, tile.swizzle = 64 : i64} : () -> memref<3x128x32xbf16, "shared">
// CHECK: %[[B:.+]] = "tile.alloc_shared"() {name = "B_s", tile.ring, tile.swizzle = 128 : i64} : () -> memref<3x32x128xbf16, "shared">
// Prologue: tiles 0 and 1, each under `tile < n`, each committed.
// CHECK: %[[P0:.+]] = arith.cmpi ult, %[[C0]], %[[N]] : index
// CHECK-NEXT: scf.if %[[P0]] {
// CHECK: "tile.copy"(%{{.+}}, %[[A]], %{{.+}}, %{{.+}}, %[[C0]], %{{.+}}, %{{.+}}) {shape = [1, 128, 32], tile.async}
// CHECK: "tile.copy"(%{{.+}}, %[[B]], %{{.+}}, %{{.+}}, %[[C0]], %{{.+}}, %{{.+}}) {shape = [1, 32, 128], tile.async}
// CHECK: }
// CHECK-NEXT: "tile.cp_async_commit"() : () -> ()
// CHECK-NEXT: %[[P1:.+]] = arith.cmpi ult, %[[C1]], %[[N]] : index
// CHECK-NEXT: scf.if %[[P1]] {
// CHECK: "tile.copy"(%{{.+}}, %[[A]], %{{.+}}, %{{.+}}, %[[C1]], %{{.+}}, %{{.+}}) {shape = [1, 128, 32], tile.async}
// CHECK: "tile.copy"(%{{.+}}, %[[B]], %{{.+}}, %{{.+}}, %[[C1]], %{{.+}}, %{{.+}}) {shape = [1, 32, 128], tile.async}
// CHECK: }
// CHECK-NEXT: "tile.cp_async_commit"() : () -> ()
// Each iteration: wait for tile k, one barrier, copy tile k + 2 into slot (k + 2) mod 3 while it exists, commit.
// CHECK: "tile.pipelined"
// CHECK-NEXT: ^bb0(%[[K:.+]]: index):
// CHECK-NEXT: "tile.cp_async_wait"() {pending = 1 : i64} : () -> ()
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[NEXT:.+]] = arith.addi %[[K]], %[[C2]] : index
// CHECK-NEXT: %[[T2:.+]] = arith.addi %[[K]], %[[C2]] : index
// CHECK-NEXT: %[[SLOT2:.+]] = arith.remui %[[T2]], %[[C3]] : index
// CHECK-NEXT: %[[MORE:.+]] = arith.cmpi ult, %[[NEXT]], %[[N]] : index
// CHECK-NEXT: scf.if %[[MORE]] {
// CHECK: %[[ACOL:.+]] = arith.muli %[[NEXT]], %{{.+}} : index
// CHECK: "tile.copy"(%{{.+}}, %[[A]], %{{.+}}, %[[ACOL]], %[[SLOT2]], %{{.+}}, %{{.+}}) {shape = [1, 128, 32], tile.async}
// CHECK: "tile.copy"(%{{.+}}, %[[B]], %{{.+}}, %{{.+}}, %[[SLOT2]], %{{.+}}, %{{.+}}) {shape = [1, 32, 128], tile.async}
// CHECK: }
// CHECK-NEXT: "tile.cp_async_commit"() : () -> ()
// CHECK-NEXT: %[[SLOT:.+]] = arith.remui %[[K]], %[[C3]] : index
// CHECK-NEXT: "tile.gemm"(%[[A]], %[[B]], %{{.+}}, %[[SLOT]], %[[SLOT]]) {tile.mma = {shape = "m16n8k16", warps_m = 2 : i64, warps_n = 2 : i64}, transpose_a = false, transpose_b = false}
// CHECK-NEXT: "tile.yield"
// CHECK-NOT: "tile.copy"(%{{.+}}, %[[A]]
func.func @mma_gemm(%A: memref<?x?xbf16>, %B: memref<?x256xbf16>, %n: index) attributes {tile.entry} {
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
      "tile.copy"(%A, %a, %row, %col, %c0, %c0) {shape = [128, 32]} : (memref<?x?xbf16>, memref<128x32xbf16, "shared">, index, index, index, index) -> ()
      %brow = arith.muli %k, %c32 : index
      %bcol = arith.muli %bx, %c128 : index
      "tile.copy"(%B, %b, %brow, %bcol, %c0, %c0) {shape = [32, 128]} : (memref<?x256xbf16>, memref<32x128xbf16, "shared">, index, index, index, index) -> ()
      "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false, tile.mma = {shape = "m16n8k16", warps_m = 2 : i64, warps_n = 2 : i64}} : (memref<128x32xbf16, "shared">, memref<32x128xbf16, "shared">, memref<128x128xf32, "fragment">) -> ()
      "tile.yield"() : () -> ()
    }) {num_stages = 3 : i64} : (index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index, index) -> ()
  return
}

// -----

// Three stages feeding a wgmma gemm: its batch stays in flight one iteration (tile.wgmma_pending = 1), so the
// copies run one tile ahead, not two: the prologue copies tile 0, each iteration waits for all groups and
// copies tile k + 1 into slot (k + 1) mod 3 (the slot iteration k - 2's wgmma read, retired in k - 1).
// CHECK-LABEL: func.func @wgmma_gemm
// CHECK: %[[A:.+]] = "tile.alloc_shared"() {name = "A_s", tile.ring, tile.swizzle = 64 : i64} : () -> memref<3x128x32xbf16, "shared">
// CHECK: "tile.copy"(%{{.+}}, %[[A]], %{{.+}}, %{{.+}}, %[[C0:.+]], %{{.+}}, %{{.+}}) {shape = [1, 128, 32], tile.async}
// CHECK: "tile.cp_async_commit"() : () -> ()
// CHECK-NEXT: "tile.pipelined"
// CHECK-NEXT: ^bb0(%[[K:.+]]: index):
// CHECK-NEXT: "tile.cp_async_wait"() {pending = 0 : i64} : () -> ()
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[NEXT:.+]] = arith.addi %[[K]], %[[C1:.+]] : index
// CHECK-NEXT: %[[T1:.+]] = arith.addi %[[K]], %[[C1]] : index
// CHECK-NEXT: %[[SLOT1:.+]] = arith.remui %[[T1]], %{{.+}} : index
// CHECK: "tile.copy"(%{{.+}}, %[[A]], %{{.+}}, %{{.+}}, %[[SLOT1]], %{{.+}}, %{{.+}}) {shape = [1, 128, 32], tile.async}
// CHECK: "tile.gemm"({{.+}}) {tile.mma = {shape = "m64nNk16", warpgroups_m = 1 : i64, warpgroups_n = 1 : i64}, tile.wgmma_pending = 1 : i64, transpose_a = false, transpose_b = false}
func.func @wgmma_gemm(%A: memref<?x?xbf16>, %B: memref<?x256xbf16>, %n: index) attributes {tile.entry} {
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

// Three stages feeding a wgmma gemm whose C the body also clears and reads (attention's S = Q K^T): a batch in
// flight into the next iteration would race with those, so the gemm is waited for in its iteration and the
// copies run two tiles ahead (prologue tiles 0 and 1, wait for all but one group).
// CHECK-LABEL: func.func @wgmma_accumulator_read_in_the_body
// CHECK: "tile.cp_async_commit"() : () -> ()
// CHECK: "tile.cp_async_commit"() : () -> ()
// CHECK-NEXT: "tile.pipelined"
// CHECK-NEXT: ^bb0(%{{.+}}: index):
// CHECK-NEXT: "tile.cp_async_wait"() {pending = 1 : i64} : () -> ()
// CHECK-NOT: tile.wgmma_pending
// CHECK: "tile.gemm"({{.+}}) {tile.mma = {shape = "m64nNk16", warpgroups_m = 1 : i64, warpgroups_n = 1 : i64}, transpose_a = false, transpose_b = true}
func.func @wgmma_accumulator_read_in_the_body(%Q: memref<?x64xbf16>, %K: memref<?x64xbf16>, %n: index) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %q = "tile.alloc_shared"() {name = "Q_s", tile.swizzle = 128 : i64} : () -> memref<64x64xbf16, "shared">
    %k_s = "tile.alloc_shared"() {name = "K_s", tile.swizzle = 128 : i64} : () -> memref<64x64xbf16, "shared">
    %s = "tile.alloc_fragment"() {name = "S"} : () -> memref<64x64xf32, "fragment">
    %m = "tile.alloc_fragment"() {name = "row_max"} : () -> memref<64xf32, "fragment">
    "tile.copy"(%Q, %q, %c0, %c0, %c0, %c0) {shape = [64, 64]} : (memref<?x64xbf16>, memref<64x64xbf16, "shared">, index, index, index, index) -> ()
    "tile.pipelined"(%c0, %n, %c1) ({
    ^bb0(%k: index):
      %row = arith.muli %k, %c64 : index
      "tile.copy"(%K, %k_s, %row, %c0, %c0, %c0) {shape = [64, 64]} : (memref<?x64xbf16>, memref<64x64xbf16, "shared">, index, index, index, index) -> ()
      "tile.fill"(%s, %zero) : (memref<64x64xf32, "fragment">, f32) -> ()
      "tile.gemm"(%q, %k_s, %s) {transpose_a = false, transpose_b = true, tile.mma = {shape = "m64nNk16", warpgroups_m = 1 : i64, warpgroups_n = 1 : i64}} : (memref<64x64xbf16, "shared">, memref<64x64xbf16, "shared">, memref<64x64xf32, "fragment">) -> ()
      "tile.reduce"(%s, %m) {kind = "max", dim = 1 : i64, clear = false} : (memref<64x64xf32, "fragment">, memref<64xf32, "fragment">) -> ()
      "tile.yield"() : () -> ()
    }) {num_stages = 3 : i64} : (index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// Two stages over a constant trip count: the prologue needs no guard; element code reads the ring in its
// slot (here the load of a SIMT-lowered gemm's K loop) and a copy out of the ring reads it at a leading
// offset. A copy into a buffer also read after the loop stays synchronous.
// CHECK-LABEL: func.func @element_reads
// CHECK: %[[X:.+]] = "tile.alloc_shared"() {name = "X_s", tile.ring} : () -> memref<2x16x64xf32, "shared">
// CHECK: %[[Y:.+]] = "tile.alloc_shared"() {name = "Y_s"} : () -> memref<16x64xf32, "shared">
// CHECK-NOT: scf.if
// CHECK: "tile.copy"(%{{.+}}, %[[X]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) {shape = [1, 16, 64], tile.async}
// CHECK-NEXT: "tile.cp_async_commit"() : () -> ()
// CHECK: "tile.pipelined"
// CHECK-NEXT: ^bb0(%[[K:.+]]: index):
// CHECK-NEXT: "tile.cp_async_wait"() {pending = 0 : i64} : () -> ()
// CHECK-NEXT: gpu.barrier
// CHECK: %[[SLOT:.+]] = arith.remui %[[K]], %{{.+}} : index
// CHECK: "tile.copy"(%{{.+}}, %[[Y]], {{.+}}) {shape = [16, 64]}
// CHECK: "tile.copy"(%[[X]], %{{.+}}, %[[SLOT]], %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) {shape = [1, 16, 64]}
// CHECK: memref.load %[[X]][%[[SLOT]], %{{.+}}, %{{.+}}] : memref<2x16x64xf32, "shared">
// CHECK: memref.load %[[Y]][%{{.+}}, %{{.+}}] : memref<16x64xf32, "shared">
func.func @element_reads(%X: memref<?x64xf32>, %Out: memref<16x64xf32>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_shared"() {name = "X_s"} : () -> memref<16x64xf32, "shared">
    %y = "tile.alloc_shared"() {name = "Y_s"} : () -> memref<16x64xf32, "shared">
    %f = "tile.alloc_fragment"() {name = "F"} : () -> memref<16x64xf32, "fragment">
    "tile.pipelined"(%c0, %c8, %c1) ({
    ^bb0(%k: index):
      %row = arith.muli %k, %c16 : index
      "tile.copy"(%X, %x, %row, %c0, %c0, %c0) {shape = [16, 64]} : (memref<?x64xf32>, memref<16x64xf32, "shared">, index, index, index, index) -> ()
      "tile.copy"(%X, %y, %row, %c0, %c0, %c0) {shape = [16, 64]} : (memref<?x64xf32>, memref<16x64xf32, "shared">, index, index, index, index) -> ()
      "tile.copy"(%x, %f, %c0, %c0, %c0, %c0) {shape = [16, 64]} : (memref<16x64xf32, "shared">, memref<16x64xf32, "fragment">, index, index, index, index) -> ()
      "tile.parallel"(%c16, %c64) ({
      ^bb0(%i: index, %j: index):
        %v = memref.load %x[%i, %j] : memref<16x64xf32, "shared">
        %w = memref.load %y[%i, %j] : memref<16x64xf32, "shared">
        %s = arith.addf %v, %w : f32
        memref.store %s, %f[%i, %j] : memref<16x64xf32, "fragment">
        "tile.yield"() : () -> ()
      }) : (index, index) -> ()
      "tile.yield"() : () -> ()
    }) {num_stages = 2 : i64} : (index, index, index) -> ()
    "tile.copy"(%y, %Out, %c0, %c0, %c0, %c0) {shape = [16, 64]} : (memref<16x64xf32, "shared">, memref<16x64xf32>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}

// -----

// num_stages = 1: nothing to pipeline.
// CHECK-LABEL: func.func @one_stage
// CHECK-NOT: tile.ring
// CHECK-NOT: tile.cp_async
// CHECK: "tile.copy"(%{{.+}}, %{{.+}}, {{.+}}) {shape = [16, 64]} : (memref<?x64xf32>, memref<16x64xf32, "shared">
func.func @one_stage(%X: memref<?x64xf32>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c16 = arith.constant 16 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %x = "tile.alloc_shared"() {name = "X_s"} : () -> memref<16x64xf32, "shared">
    %f = "tile.alloc_fragment"() {name = "F"} : () -> memref<16x64xf32, "fragment">
    "tile.pipelined"(%c0, %c8, %c1) ({
    ^bb0(%k: index):
      %row = arith.muli %k, %c16 : index
      "tile.copy"(%X, %x, %row, %c0, %c0, %c0) {shape = [16, 64]} : (memref<?x64xf32>, memref<16x64xf32, "shared">, index, index, index, index) -> ()
      "tile.copy"(%x, %f, %c0, %c0, %c0, %c0) {shape = [16, 64]} : (memref<16x64xf32, "shared">, memref<16x64xf32, "fragment">, index, index, index, index) -> ()
      "tile.yield"() : () -> ()
    }) {num_stages = 1 : i64} : (index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}
