// select-stmatrix{enable=true}: a whole fragment whose layout stmatrix stores (here the wgmma accumulator of 64 x 64
// over one warpgroup) copied onto a whole 16-bit shared tile gets tile.stmatrix; copies of another layout, into a
// 32-bit tile, of part of the fragment, or into global memory do not. Disabled (not sm_90a) nothing changes.
// RUN: tile-opt %s -p 'select-stmatrix{enable=true}' | FileCheck %s
// RUN: tile-opt %s -p select-stmatrix | FileCheck %s --check-prefix=OFF

#thread = affine_map<(d0, d1) -> ((d1 floordiv 2) mod 4 + (d0 mod 8) * 4 + (d0 floordiv 16) * 32)>
#reg = affine_map<(d0, d1) -> (d1 mod 2 + ((d0 floordiv 8) mod 2) * 2 + (d1 floordiv 8) * 4)>
#rows = affine_map<(d0, d1) -> (d0 * 2 + d1 floordiv 32)>
#cols = affine_map<(d0, d1) -> (d1 mod 32)>
// CHECK-LABEL: func.func @epilogue
// CHECK: "tile.copy"(%[[ACC:[0-9]+]], %[[BF:[0-9]+]], %{{.+}}) {shape = [64, 64], tile.stmatrix}
// CHECK-NEXT: "tile.copy"(%[[ACC]], %{{.+}}) {shape = [64, 64]} :
// CHECK-NEXT: "tile.copy"(%[[ACC]], %[[BF]], %{{.+}}) {shape = [32, 64]} :
// CHECK-NEXT: "tile.copy"(%{{.+}}, %[[BF]], %{{.+}}) {shape = [64, 64]} :
// CHECK-NEXT: "tile.copy"(%[[ACC]], %{{.+}}) {shape = [64, 64]} :
// OFF-NOT: tile.stmatrix
func.func @epilogue(%C: memref<?x64xbf16>) attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %acc = "tile.alloc_fragment"() {layout = #tile.layout<#thread, #reg, 1 : i64>, name = "C_f"} : () -> memref<64x64xf32, "fragment">
    %rowwise = "tile.alloc_fragment"() {layout = #tile.layout<#rows, #cols, 1 : i64>, name = "D_f"} : () -> memref<64x64xf32, "fragment">
    %bf = "tile.alloc_shared"() {name = "C_s", tile.swizzle = 128 : i64} : () -> memref<64x64xbf16, "shared">
    %f32 = "tile.alloc_shared"() {name = "F_s"} : () -> memref<64x64xf32, "shared">
    "tile.copy"(%acc, %bf, %c0, %c0, %c0, %c0) {shape = [64, 64]} : (memref<64x64xf32, "fragment">, memref<64x64xbf16, "shared">, index, index, index, index) -> ()
    "tile.copy"(%acc, %f32, %c0, %c0, %c0, %c0) {shape = [64, 64]} : (memref<64x64xf32, "fragment">, memref<64x64xf32, "shared">, index, index, index, index) -> ()
    "tile.copy"(%acc, %bf, %c0, %c0, %c0, %c0) {shape = [32, 64]} : (memref<64x64xf32, "fragment">, memref<64x64xbf16, "shared">, index, index, index, index) -> ()
    "tile.copy"(%rowwise, %bf, %c0, %c0, %c0, %c0) {shape = [64, 64]} : (memref<64x64xf32, "fragment">, memref<64x64xbf16, "shared">, index, index, index, index) -> ()
    "tile.copy"(%acc, %C, %c0, %c0, %c0, %c0) {shape = [64, 64]} : (memref<64x64xf32, "fragment">, memref<?x64xbf16>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// A column slab of the accumulator (epilogue-slabs's) onto a slab tile: stmatrix of the slab's registers; a
// box whose columns cut the 8 x 8 matrices is refused.
// CHECK-LABEL: func.func @slab
// CHECK: "tile.copy"({{.+}}) {shape = [64, 32], tile.stmatrix}
// CHECK-NEXT: "tile.copy"({{.+}}) {shape = [64, 32]} :
func.func @slab() attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %acc = "tile.alloc_fragment"() {layout = #tile.layout<#thread, #reg, 1 : i64>, name = "C_f"} : () -> memref<64x64xf32, "fragment">
    %slab = "tile.alloc_shared"() {name = "C_s_slab0", tile.swizzle = 64 : i64} : () -> memref<64x32xbf16, "shared">
    "tile.copy"(%acc, %slab, %c0, %c32, %c0, %c0) {shape = [64, 32]} : (memref<64x64xf32, "fragment">, memref<64x32xbf16, "shared">, index, index, index, index) -> ()
    "tile.copy"(%acc, %slab, %c0, %c4, %c0, %c0) {shape = [64, 32]} : (memref<64x64xf32, "fragment">, memref<64x32xbf16, "shared">, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// stmatrix converts only f32 registers (or stores the tile's own type): an f16 accumulator into a bf16 tile stays
// a thread copy; into an f16 tile it is stmatrix's.
// CHECK-LABEL: func.func @conversions
// CHECK: "tile.copy"({{.+}}) {shape = [64, 64]} : (memref<64x64xf16, "fragment">, memref<64x64xbf16, "shared">
// CHECK-NEXT: "tile.copy"({{.+}}) {shape = [64, 64], tile.stmatrix} : (memref<64x64xf16, "fragment">, memref<64x64xf16, "shared">
func.func @conversions() attributes {tile.entry} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %acc = "tile.alloc_fragment"() {layout = #tile.layout<#thread, #reg, 1 : i64>, name = "H_f"} : () -> memref<64x64xf16, "fragment">
    %bf = "tile.alloc_shared"() {name = "B_s", tile.swizzle = 128 : i64} : () -> memref<64x64xbf16, "shared">
    %h = "tile.alloc_shared"() {name = "H_s", tile.swizzle = 128 : i64} : () -> memref<64x64xf16, "shared">
    "tile.copy"(%acc, %bf, %c0, %c0, %c0, %c0) {shape = [64, 64]} : (memref<64x64xf16, "fragment">, memref<64x64xbf16, "shared">, index, index, index, index) -> ()
    "tile.copy"(%acc, %h, %c0, %c0, %c0, %c0) {shape = [64, 64]} : (memref<64x64xf16, "fragment">, memref<64x64xf16, "shared">, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}
