// epilogue-slabs{enable=true limit=232448} (sm_90a's 227 KiB): a staged epilogue tile the block's shared
// memory cannot hold (here 192 KiB of rings and a 64 KiB tile) becomes two 128 x 64 slab buffers, swizzled as the
// tile, and its two copies one pair per 64-column slab; a tile that fits, or one with other uses, stays whole.
// RUN: tile-opt %s --split-input-file -p 'epilogue-slabs{enable=true direct=true limit=232448}' 2>/dev/null | FileCheck %s
// RUN: tile-opt %s --split-input-file --verify-diagnostics -p 'epilogue-slabs{enable=true direct=true limit=232448}' -o /dev/null
// RUN: tile-opt %s --split-input-file -p epilogue-slabs | FileCheck %s --check-prefix=OFF

#thread = affine_map<(d0, d1) -> ((d1 floordiv 2) mod 4 + (d0 mod 8) * 4 + ((d0 floordiv 16) mod 4) * 32 + (d0 floordiv 64) * 128)>
#reg = affine_map<(d0, d1) -> (d1 mod 2 + ((d0 floordiv 8) mod 2) * 2 + (d1 floordiv 8) * 4)>
// CHECK-LABEL: func.func @over
// CHECK: %[[S0:.+]] = "tile.alloc_shared"() {name = "C_s_slab0", tile.swizzle = 128 : i64} : () -> memref<128x64xbf16, "shared">
// CHECK-NEXT: %[[S1:.+]] = "tile.alloc_shared"() {name = "C_s_slab1", tile.swizzle = 128 : i64} : () -> memref<128x64xbf16, "shared">
// CHECK-NOT: name = "C_s"
// CHECK: "tile.copy"(%[[F:[0-9]+]], %[[S0]], %[[Z:.+]], %[[Z]], %[[Z]], %[[Z]]) {shape = [128, 64]}
// CHECK-NEXT: "tile.copy"(%[[S0]], %arg0, %[[Z]], %[[Z]], %[[ROW:.+]], %[[COL:[0-9a-z_]+]]) {shape = [128, 64]}
// CHECK-NEXT: "tile.copy"(%[[F]], %[[S1]], %[[Z]], %{{.+}}, %[[Z]], %[[Z]]) {shape = [128, 64]}
// CHECK-NEXT: %[[C64:.+]] = arith.addi %[[COL]], %{{.+}} : index
// CHECK-NEXT: "tile.copy"(%[[S1]], %arg0, %[[Z]], %[[Z]], %[[ROW]], %[[C64]]) {shape = [128, 64]}
// CHECK: "tile.copy"(%[[F]], %[[S0]], {{.+}}) {shape = [128, 64]}
// CHECK: "tile.copy"(%[[F]], %[[S1]], {{.+}}) {shape = [128, 64]}
// CHECK: "tile.copy"(%[[S1]], %arg0, {{.+}}) {shape = [128, 64]}
// CHECK-NEXT: "tile.yield"
// OFF-LABEL: func.func @over
// OFF-NOT: slab
func.func @over(%C: memref<?x512xbf16>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  "tile.kernel"(%c2, %c2) ({
  ^bb0(%bx: index, %by: index):
    %ring = "tile.alloc_shared"() {name = "B_s", tile.ring, tile.swizzle = 128 : i64} : () -> memref<4x192x128xbf16, "shared">
    %acc = "tile.alloc_fragment"() {layout = #tile.layout<#thread, #reg, 1 : i64>, name = "C_f"} : () -> memref<128x256xf32, "fragment">
    %cs = "tile.alloc_shared"() {name = "C_s", tile.swizzle = 128 : i64} : () -> memref<128x256xbf16, "shared">
    "tile.copy"(%acc, %cs, %c0, %c0, %c0, %c0) {shape = [128, 256]} : (memref<128x256xf32, "fragment">, memref<128x256xbf16, "shared">, index, index, index, index) -> ()
    %row = arith.muli %by, %c128 : index
    %col = arith.muli %bx, %c256 : index
    "tile.copy"(%cs, %C, %c0, %c0, %row, %col) {shape = [128, 256]} : (memref<128x256xbf16, "shared">, memref<?x512xbf16>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 256 : i64} : (index, index) -> ()
  return
}

// -----

#thread = affine_map<(d0, d1) -> ((d1 floordiv 2) mod 4 + (d0 mod 8) * 4 + ((d0 floordiv 16) mod 4) * 32 + (d0 floordiv 64) * 128)>
#reg = affine_map<(d0, d1) -> (d1 mod 2 + ((d0 floordiv 8) mod 2) * 2 + (d1 floordiv 8) * 4)>
// Three stages fit (144 KiB + 64 KiB); a tile also read by the threads is not a staged epilogue's.
// CHECK-LABEL: func.func @fits_or_read
// CHECK-NOT: slab
func.func @fits_or_read(%C: memref<?x512xbf16>, %D: memref<?x512xbf16>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  "tile.kernel"(%c2) ({
  ^bb0(%bx: index):
    %ring = "tile.alloc_shared"() {name = "B_s", tile.ring, tile.swizzle = 128 : i64} : () -> memref<3x192x128xbf16, "shared">
    %acc = "tile.alloc_fragment"() {layout = #tile.layout<#thread, #reg, 1 : i64>, name = "C_f"} : () -> memref<128x256xf32, "fragment">
    %cs = "tile.alloc_shared"() {name = "C_s", tile.swizzle = 128 : i64} : () -> memref<128x256xbf16, "shared">
    %ds = "tile.alloc_shared"() {name = "D_s", tile.swizzle = 128 : i64} : () -> memref<128x256xbf16, "shared">
    "tile.copy"(%acc, %cs, %c0, %c0, %c0, %c0) {shape = [128, 256]} : (memref<128x256xf32, "fragment">, memref<128x256xbf16, "shared">, index, index, index, index) -> ()
    "tile.copy"(%cs, %C, %c0, %c0, %c0, %c0) {shape = [128, 256]} : (memref<128x256xbf16, "shared">, memref<?x512xbf16>, index, index, index, index) -> ()
    "tile.copy"(%acc, %ds, %c0, %c0, %c0, %c0) {shape = [128, 256]} : (memref<128x256xf32, "fragment">, memref<128x256xbf16, "shared">, index, index, index, index) -> ()
    %v = memref.load %ds[%c0, %c0] : memref<128x256xbf16, "shared">
    "tile.copy"(%ds, %D, %c0, %c0, %c0, %c0) {shape = [128, 256]} : (memref<128x256xbf16, "shared">, memref<?x512xbf16>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 256 : i64} : (index) -> ()
  return
}

// -----

#thread = affine_map<(d0, d1) -> ((d1 floordiv 2) mod 4 + (d0 mod 8) * 4 + ((d0 floordiv 16) mod 4) * 32 + (d0 floordiv 64) * 128)>
#reg = affine_map<(d0, d1) -> (d1 mod 2 + ((d0 floordiv 8) mod 2) * 2 + (d1 floordiv 8) * 4)>
// direct=true: the accumulator copied straight into C (examples/gemm.py's epilogue) goes out through two slab
// buffers named after it; one with disable_tma=True, and one into a tensor TMA cannot store (a run-time inner dim:
// a remark), stay direct.
// CHECK-LABEL: func.func @direct
// CHECK: %[[S0:.+]] = "tile.alloc_shared"() {name = "C_f_slab0", tile.swizzle = 128 : i64} : () -> memref<128x64xbf16, "shared">
// CHECK-NEXT: %[[S1:.+]] = "tile.alloc_shared"() {name = "C_f_slab1", tile.swizzle = 128 : i64} : () -> memref<128x64xbf16, "shared">
// CHECK-NEXT: %[[F:.+]] = "tile.alloc_fragment"
// CHECK: "tile.copy"(%[[F]], %[[S0]], {{.+}}) {shape = [128, 64]}
// CHECK-NEXT: "tile.copy"(%[[S0]], %arg0, {{.+}}) {shape = [128, 64]}
// CHECK: "tile.copy"(%[[S1]], %arg0, {{.+}}) {shape = [128, 64]}
// CHECK: "tile.copy"(%[[S1]], %arg0, {{.+}}) {shape = [128, 64]}
// CHECK-NEXT: "tile.copy"(%[[F]], %arg1, {{.+}}) {shape = [128, 256], tile.disable_tma}
// CHECK-NEXT: "tile.copy"(%[[F]], %arg2, {{.+}}) {shape = [128, 256]}
// CHECK-NOT: slab
// OFF-LABEL: func.func @direct
// OFF-NOT: slab
func.func @direct(%C: memref<?x512xbf16>, %D: memref<?x512xbf16>, %E: memref<?x?xbf16>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  "tile.kernel"(%c2) ({
  ^bb0(%bx: index):
    %acc = "tile.alloc_fragment"() {layout = #tile.layout<#thread, #reg, 1 : i64>, name = "C_f"} : () -> memref<128x256xf32, "fragment">
    "tile.copy"(%acc, %C, %c0, %c0, %c0, %c0) {shape = [128, 256]} : (memref<128x256xf32, "fragment">, memref<?x512xbf16>, index, index, index, index) -> ()
    "tile.copy"(%acc, %D, %c0, %c0, %c0, %c0) {shape = [128, 256], tile.disable_tma} : (memref<128x256xf32, "fragment">, memref<?x512xbf16>, index, index, index, index) -> ()
    // expected-remark @+1 {{the accumulator's copy out stays direct: TMA cannot store its slabs: a dim of its tensor other than the outermost has a run-time size (a tensor map's byte strides must be known multiples of 16)}}
    "tile.copy"(%acc, %E, %c0, %c0, %c0, %c0) {shape = [128, 256]} : (memref<128x256xf32, "fragment">, memref<?x?xbf16>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 256 : i64} : (index) -> ()
  return
}
