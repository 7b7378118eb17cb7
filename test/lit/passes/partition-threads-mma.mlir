// partition-threads keeps a tile.mma gemm for lower-gemm-mma: C becomes its register array (keeping the
// layout), the gemm gains tile.gemm_mnk, and the shared operands' writes before it get a barrier.
// RUN: tile-opt %s -p partition-threads | FileCheck %s
// RUN: tile-opt %s -p partition-threads | tile-opt -o /dev/null

#c = #tile.layout<affine_map<(d0, d1) -> ((d1 floordiv 2) mod 4 + (d0 mod 8) * 4 + (d0 floordiv 16) * 32)>, affine_map<(d0, d1) -> (d1 mod 2 + ((d0 floordiv 8) mod 2) * 2 + (d1 floordiv 8) * 4)>, 1 : i64>
// CHECK-LABEL: func.func @kept
// CHECK: %[[A:.+]] = memref.alloca() {name = "A_s"} : memref<32x16xf16, "shared">
// CHECK: %[[B:.+]] = memref.alloca() {name = "B_s"} : memref<16x16xf16, "shared">
// CHECK: %[[C:.+]] = memref.alloca() {name = "C_f", tile.layout = #tile.layout<{{.*}}>} : memref<8xf32, "local">
// CHECK: memref.store %{{.+}}, %[[A]]
// CHECK: gpu.barrier
// CHECK-NEXT: "tile.gemm"(%[[A]], %[[B]], %[[C]]) {tile.gemm_mnk = [32, 16, 16], tile.mma = {shape = "m16n8k16", warps_m = 2 : i64, warps_n = 1 : i64}, transpose_a = false, transpose_b = false} : (memref<32x16xf16, "shared">, memref<16x16xf16, "shared">, memref<8xf32, "local">) -> ()
func.func @kept(%x: f16) attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_shared"() {name = "A_s"} : () -> memref<32x16xf16, "shared">
    %b = "tile.alloc_shared"() {name = "B_s"} : () -> memref<16x16xf16, "shared">
    %c = "tile.alloc_fragment"() {name = "C_f", layout = #c} : () -> memref<32x16xf32, "fragment">
    memref.store %x, %a[%c0, %c0] : memref<32x16xf16, "shared">
    "tile.gemm"(%a, %b, %c) {transpose_a = false, transpose_b = false, tile.mma = {shape = "m16n8k16", warps_m = 2 : i64, warps_n = 1 : i64}} : (memref<32x16xf16, "shared">, memref<16x16xf16, "shared">, memref<32x16xf32, "fragment">) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}
