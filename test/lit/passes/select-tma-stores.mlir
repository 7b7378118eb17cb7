// select-tma-stores{enable=true}: a copy of a whole two-dimensional shared tile into a tensor argument gets
// tile.tma_store; the copies TMA cannot run stay as they are, with a remark saying why. Disabled (the default,
// tma=False) the pass changes nothing.
// RUN: tile-opt %s --split-input-file -p 'select-tma-stores{enable=true}' 2>/dev/null | FileCheck %s
// RUN: tile-opt %s --split-input-file --verify-diagnostics -p 'select-tma-stores{enable=true}' -o /dev/null
// RUN: tile-opt %s --split-input-file -p select-tma-stores 2>/dev/null | FileCheck %s --check-prefix=OFF

// A staged epilogue: the swizzled bf16 tile into C at the block's origin (a multiple of 8 elements).
// CHECK-LABEL: func.func @staged_epilogue
// CHECK: "tile.copy"(%{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}) {shape = [128, 256], tile.tma_store}
// OFF-LABEL: func.func @staged_epilogue
// OFF-NOT: tile.tma_store
func.func @staged_epilogue(%C: memref<?x1024xbf16>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c128 = arith.constant 128 : index
  %c256 = arith.constant 256 : index
  "tile.kernel"(%c4, %c4) ({
  ^bb0(%bx: index, %by: index):
    %cs = "tile.alloc_shared"() {name = "C_s", tile.swizzle = 128 : i64} : () -> memref<128x256xbf16, "shared">
    %row = arith.muli %by, %c128 : index
    %col = arith.muli %bx, %c256 : index
    "tile.copy"(%cs, %C, %c0, %c0, %row, %col) {shape = [128, 256]} : (memref<128x256xbf16, "shared">, memref<?x1024xbf16>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index, index) -> ()
  return
}

// -----

// Unswizzled f32 rows of 64 bytes: one box of the whole tile.
// CHECK-LABEL: func.func @unswizzled
// CHECK: "tile.copy"{{.+}}tile.tma_store
func.func @unswizzled(%C: memref<?x64xf32>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %cs = "tile.alloc_shared"() {name = "C_s"} : () -> memref<16x16xf32, "shared">
    %row = arith.muli %bx, %c16 : index
    "tile.copy"(%cs, %C, %c0, %c0, %row, %c16) {shape = [16, 16]} : (memref<16x16xf32, "shared">, memref<?x64xf32>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// What TMA cannot store: part of the tile, a conversion, an inner start off the 16-byte grain, a run-time inner
// dim, a tensor the kernel also reads.
// CHECK-LABEL: func.func @refused
// CHECK-NOT: tile.tma_store
func.func @refused(%C: memref<?x512xbf16>, %D: memref<?x512xf32>, %E: memref<?x?xbf16>, %F: memref<?x512xbf16>, %H: memref<?x512xbf16>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %cs = "tile.alloc_shared"() {name = "C_s", tile.swizzle = 128 : i64} : () -> memref<64x128xbf16, "shared">
    %g = "tile.alloc_shared"() {name = "G_s"} : () -> memref<64x128xbf16, "shared">
    // expected-remark @+1 {{T.copy to global memory stays a thread copy, not a TMA store: its box [32, 128] is not the whole [64, 128] tile}}
    "tile.copy"(%cs, %C, %c0, %c0, %c0, %c0) {shape = [32, 128]} : (memref<64x128xbf16, "shared">, memref<?x512xbf16>, index, index, index, index) -> ()
    // expected-remark @+1 {{T.copy to global memory stays a thread copy, not a TMA store: it converts bf16 to f32 (TMA copies bytes)}}
    "tile.copy"(%cs, %D, %c0, %c0, %c0, %c0) {shape = [64, 128]} : (memref<64x128xbf16, "shared">, memref<?x512xf32>, index, index, index, index) -> ()
    // expected-remark @+1 {{T.copy to global memory stays a thread copy, not a TMA store: its start along the tensor's innermost dim is not provably a multiple of 16 bytes (8 elements; a box off that grain faults at the tensor's edge)}}
    "tile.copy"(%cs, %F, %c0, %c0, %c0, %c4) {shape = [64, 128]} : (memref<64x128xbf16, "shared">, memref<?x512xbf16>, index, index, index, index) -> ()
    // expected-remark @+1 {{T.copy to global memory stays a thread copy, not a TMA store: a dim of its tensor other than the outermost has a run-time size (a tensor map's byte strides must be known multiples of 16)}}
    "tile.copy"(%cs, %E, %c0, %c0, %c0, %c0) {shape = [64, 128]} : (memref<64x128xbf16, "shared">, memref<?x?xbf16>, index, index, index, index) -> ()
    // expected-remark @+1 {{T.copy to global memory stays a thread copy, not a TMA store: the kernel accesses its destination tensor elsewhere too (a TMA store completes asynchronously)}}
    "tile.copy"(%g, %H, %c0, %c0, %c0, %c0) {shape = [64, 128]} : (memref<64x128xbf16, "shared">, memref<?x512xbf16>, index, index, index, index) -> ()
    %h = memref.load %H[%c0, %c0] : memref<?x512xbf16>
    memref.store %h, %g[%c0, %c0] : memref<64x128xbf16, "shared">
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}
