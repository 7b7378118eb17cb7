// select-shared-layouts: tile.swizzle (the widest of 128/64/32 bytes dividing a row) on the shared operands
// of tile.mma gemms; SIMT gemms' operands and rows no swizzle divides get none.
// RUN: tile-opt %s --split-input-file -p select-shared-layouts | FileCheck %s

// CHECK-LABEL: func.func @mma_operands
// CHECK: "tile.alloc_shared"() {name = "A_s", tile.swizzle = 64 : i64} : () -> memref<128x32xbf16, "shared">
// CHECK: "tile.alloc_shared"() {name = "B_s", tile.swizzle = 128 : i64} : () -> memref<32x128xbf16, "shared">
// CHECK: "tile.alloc_shared"() {name = "Bt_s", tile.swizzle = 32 : i64} : () -> memref<64x16xf16, "shared">
// CHECK: "tile.alloc_shared"() {name = "X_s"} : () -> memref<128x32xbf16, "shared">
// CHECK: "tile.alloc_shared"() {name = "Y_s"} : () -> memref<32x128xbf16, "shared">
// CHECK: "tile.alloc_shared"() {name = "N_s"} : () -> memref<16x8xf16, "shared">
// CHECK: "tile.alloc_shared"() {name = "H_s", tile.swizzle = 32 : i64} : () -> memref<16x16xf16, "shared">
func.func @mma_operands(%n: index) {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<128x32xbf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<32x128xbf16, "shared">
    %bt = "tile.alloc_shared"() {name = "Bt_s"} : () -> memref<64x16xf16, "shared">
    %x = "tile.alloc_shared"() {name = "X_s"} : () -> memref<128x32xbf16, "shared">
    %y = "tile.alloc_shared"() {name = "Y_s"} : () -> memref<32x128xbf16, "shared">
    %nn = "tile.alloc_shared"() {name = "N_s"} : () -> memref<16x8xf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<128x128xf32, "fragment">
    %c2 = "tile.alloc_fragment"() {name = "C2"} : () -> memref<16x64xf32, "fragment">
    %c3 = "tile.alloc_fragment"() {name = "C3"} : () -> memref<8x8xf32, "fragment">
    %h = "tile.alloc_shared"() {name = "H_s"} : () -> memref<16x16xf16, "shared">
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false, tile.mma = {shape = "m16n8k16", warps_m = 2 : i64, warps_n = 2 : i64}} : (memref<128x32xbf16, "shared">, memref<32x128xbf16, "shared">, memref<128x128xf32, "fragment">) -> ()
    "tile.gemm"(%h, %bt, %c2) {transpose_a = false, transpose_b = true, tile.mma = {shape = "m16n8k16", warps_m = 1 : i64, warps_n = 4 : i64}} : (memref<16x16xf16, "shared">, memref<64x16xf16, "shared">, memref<16x64xf32, "fragment">) -> ()
    "tile.gemm"(%x, %y, %c) {transpose_a = false, transpose_b = false} : (memref<128x32xbf16, "shared">, memref<32x128xbf16, "shared">, memref<128x128xf32, "fragment">) -> ()
    "tile.gemm"(%nn, %nn, %c3) {transpose_a = true, transpose_b = false, tile.mma = {shape = "m16n8k16", warps_m = 1 : i64, warps_n = 1 : i64}} : (memref<16x8xf16, "shared">, memref<16x8xf16, "shared">, memref<8x8xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

// An epilogue staged through shared memory: the tile the accumulator of a tile.mma gemm is copied into is
// swizzled (its 512-byte rows: 128); the one a SIMT gemm's accumulator is copied into, and the tile it is
// copied out of again, are not.
// CHECK-LABEL: func.func @epilogue_tiles
// CHECK: "tile.alloc_shared"() {name = "C_s", tile.swizzle = 128 : i64} : () -> memref<64x256xbf16, "shared">
// CHECK: "tile.alloc_shared"() {name = "D_s"} : () -> memref<64x256xbf16, "shared">
// CHECK: "tile.alloc_shared"() {name = "E_s"} : () -> memref<64x256xbf16, "shared">
func.func @epilogue_tiles(%C: memref<64x256xbf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<64x64xbf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<64x256xbf16, "shared">
    %cs = "tile.alloc_shared"() {name = "C_s"} : () -> memref<64x256xbf16, "shared">
    %ds = "tile.alloc_shared"() {name = "D_s"} : () -> memref<64x256xbf16, "shared">
    %es = "tile.alloc_shared"() {name = "E_s"} : () -> memref<64x256xbf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C"} : () -> memref<64x256xf32, "fragment">
    %d = "tile.alloc_fragment"() {name = "D"} : () -> memref<64x256xf32, "fragment">
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false, tile.mma = {shape = "m16n8k16", warps_m = 2 : i64, warps_n = 2 : i64}} : (memref<64x64xbf16, "shared">, memref<64x256xbf16, "shared">, memref<64x256xf32, "fragment">) -> ()
    "tile.gemm"(%a, %b, %d) {transpose_a = false, transpose_b = false} : (memref<64x64xbf16, "shared">, memref<64x256xbf16, "shared">, memref<64x256xf32, "fragment">) -> ()
    "tile.copy"(%c, %cs, %c0, %c0, %c0, %c0) {shape = [64, 256]} : (memref<64x256xf32, "fragment">, memref<64x256xbf16, "shared">, index, index, index, index) -> ()
    "tile.copy"(%d, %ds, %c0, %c0, %c0, %c0) {shape = [64, 256]} : (memref<64x256xf32, "fragment">, memref<64x256xbf16, "shared">, index, index, index, index) -> ()
    "tile.copy"(%cs, %es, %c0, %c0, %c0, %c0) {shape = [64, 256]} : (memref<64x256xbf16, "shared">, memref<64x256xbf16, "shared">, index, index, index, index) -> ()
    "tile.copy"(%cs, %C, %c0, %c0, %c0, %c0) {shape = [64, 256]} : (memref<64x256xbf16, "shared">, memref<64x256xbf16>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}
