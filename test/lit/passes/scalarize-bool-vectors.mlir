// scalarize-bool-vectors: a 1-D vector access of i1 lanes as one memref access per lane (LLVM packs
// <N x i1> into bits in memory; a memref of i1, a numpy bool array, has a byte per lane).
// RUN: tile-opt %s -p scalarize-bool-vectors | FileCheck %s

// CHECK-LABEL: func.func @bools(
// CHECK-NOT: vector.load
// CHECK: %[[I1:.+]] = arith.addi %arg1, %{{.+}} : index
// CHECK: %[[I2:.+]] = arith.addi %arg1, %{{.+}} : index
// CHECK: %[[L0:.+]] = memref.load %arg0[%arg1] : memref<8xi1>
// CHECK: %[[L1:.+]] = memref.load %arg0[%[[I1]]] : memref<8xi1>
// CHECK: %[[L2:.+]] = memref.load %arg0[%[[I2]]] : memref<8xi1>
// CHECK: %[[V:.+]] = vector.from_elements %[[L0]], %[[L1]], %[[L2]] : vector<3xi1>
// CHECK: %[[S1:.+]] = arith.addi %arg1, %{{.+}} : index
// CHECK: %[[S2:.+]] = arith.addi %arg1, %{{.+}} : index
// CHECK: %[[E0:.+]] = vector.extract %[[V]][0] : i1 from vector<3xi1>
// CHECK: memref.store %[[E0]], %arg0[%arg1] : memref<8xi1>
// CHECK: %[[E1:.+]] = vector.extract %[[V]][1] : i1 from vector<3xi1>
// CHECK: memref.store %[[E1]], %arg0[%[[S1]]] : memref<8xi1>
// CHECK: %[[E2:.+]] = vector.extract %[[V]][2] : i1 from vector<3xi1>
// CHECK: memref.store %[[E2]], %arg0[%[[S2]]] : memref<8xi1>
// CHECK-NOT: vector.store
// CHECK: return
func.func @bools(%m: memref<8xi1>, %i: index) {
  %v = vector.load %m[%i] : memref<8xi1>, vector<3xi1>
  vector.store %v, %m[%i] : memref<8xi1>, vector<3xi1>
  return
}

// Other element types keep their vector accesses.
// CHECK-LABEL: func.func @not_bools(
// CHECK: vector.load %arg0[%arg1] : memref<8xf32>, vector<4xf32>
func.func @not_bools(%m: memref<8xf32>, %i: index) -> vector<4xf32> {
  %v = vector.load %m[%i] : memref<8xf32>, vector<4xf32>
  return %v : vector<4xf32>
}
