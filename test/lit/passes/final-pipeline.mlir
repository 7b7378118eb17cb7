// The final stage's pipeline as the driver runs it (tilemlir/pipeline.py final_pipeline), on thread-level
// IR: what the passes do together that none does alone. Each pass's own file runs it alone.
// RUN: tile-opt %s --pipeline final | FileCheck %s

// Two tensors of one length N, one vector per thread each: both whole-vector conditions read N
// from A, the first tensor N sizes (B's own dim is never read), so cse makes them one value and
// canonicalize merges the two guards: both 16-byte loads issue from one branch.
// CHECK-LABEL: func.func @f16_two_tensors_one_length
// CHECK: scf.if %{{.+}} {
// CHECK-NEXT: %[[A:.+]] = vector.load %arg0[%[[I:.+]]] {alignment = 16 : i64} : memref<?xf16>, vector<8xf16>
// CHECK-NEXT: vector.store %[[A]], %{{.+}}[%{{.+}}] : memref<8xf16, "local">, vector<8xf16>
// CHECK-NEXT: %[[B:.+]] = vector.load %arg1[%[[I]]] {alignment = 16 : i64} : memref<?xf16>, vector<8xf16>
// CHECK-NEXT: vector.store %[[B]], %{{.+}}[%{{.+}}] : memref<8xf16, "local">, vector<8xf16>
// CHECK-NEXT: } else {
// CHECK-NOT: vector.load
// CHECK: gpu.terminator
func.func @f16_two_tensors_one_length(%A: memref<?xf16>, %B: memref<?xf16>) attributes {tile.entry, tile.arg_names = ["A", "B"], tile.arg_dims = [["N"], ["N"]], tile.symbols = ["N"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %c1024 = arith.constant 1024 : index
  %N = memref.dim %A, %c0 : memref<?xf16>
  %g = arith.ceildivui %N, %c1024 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %g, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %a = memref.alloca() : memref<8xf16, "local">
    %b = memref.alloca() : memref<8xf16, "local">
    %base = arith.muli %bx, %c1024 : index
    %t = arith.muli %tx, %c8 : index
    %bt = arith.addi %base, %t : index
    scf.for %v = %c0 to %c8 step %c1 {
      %i = arith.addi %bt, %v : index
      %val = memref.load %A[%i] {tile.pad = 0.0 : f16} : memref<?xf16>
      memref.store %val, %a[%v] : memref<8xf16, "local">
    }
    scf.for %v = %c0 to %c8 step %c1 {
      %i = arith.addi %bt, %v : index
      %val = memref.load %B[%i] {tile.pad = 0.0 : f16} : memref<?xf16>
      memref.store %val, %b[%v] : memref<8xf16, "local">
    }
    gpu.terminator
  }
  return
}

