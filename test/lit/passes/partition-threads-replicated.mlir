// partition-threads on a replicated loop (every thread holds the fragment it reads): a loop that reads
// a shared buffer it writes runs in replica 0 alone, its whole body under one scf.if (the other
// replicas would read the buffer while replica 0 writes it); a loop that only writes is guarded per
// write.
// RUN: tile-opt %s -p partition-threads | FileCheck %s

// CHECK-LABEL: func.func @read_modify_write
// CHECK: %[[P:.+]] = arith.cmpi eq
// CHECK: scf.if %[[P]] {
// CHECK-NEXT: memref.load %{{.*}} : memref<64xf32, "shared">
// CHECK: memref.load %{{.*}} : memref<64xf32, "local">
// CHECK: arith.addf
// CHECK-NEXT: memref.store %{{.*}} : memref<64xf32, "shared">
// CHECK-NEXT: }
func.func @read_modify_write() attributes {tile.entry} {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    %f = "tile.alloc_fragment"() {name = "f", layout = #tile.layout<affine_map<(d0)[s0] -> (s0)>, affine_map<(d0) -> (d0)>, 32 : i64>} : () -> memref<64xf32, "fragment">
    %s = "tile.alloc_shared"() {name = "s"} : () -> memref<64xf32, "shared">
    "tile.parallel"(%c64) ({
    ^bb0(%i: index):
      %a = memref.load %s[%i] : memref<64xf32, "shared">
      %b = memref.load %f[%i] : memref<64xf32, "fragment">
      %c = arith.addf %a, %b : f32
      memref.store %c, %s[%i] : memref<64xf32, "shared">
      "tile.yield"() : () -> ()
    }) {layout = #tile.layout<affine_map<(d0)[s0] -> (s0)>, affine_map<(d0) -> (d0)>, 32 : i64>} : (index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}
