// insert-guards: every global access a range analysis cannot keep in bounds gets a tile.guard scf.if.
// RUN: tile-opt %s --split-input-file -p insert-guards | FileCheck %s
// RUN: tile-opt %s --split-input-file -p insert-guards --pass-statistics 2>&1 >/dev/null | FileCheck %s --check-prefix=STATS

// Over the four functions below: 1 + 1 + (1 + 4 lanes) + 1 guards; the in-range store of
// @store_both_checks and the vector store of @vector_load need none.
// STATS: insert-guards
// STATS-NEXT: (S) 2 accesses-in-range
// STATS-NEXT: (S) 8 guards-inserted

// A load of a dynamic row: only the row check is needed (the column stays in 0..4095 for every
// thread and loop iteration); the else branch yields the load's tile.pad (-inf: a max reduction).
// CHECK-LABEL: func.func @row_of_dynamic_rows
// CHECK: gpu.launch blocks(%[[BX:[^,]+]], 
// CHECK: scf.for

// CHECK: %[[M:.+]] = memref.dim %arg0, %{{.+}} : memref<?x4096xf32>
// CHECK: %[[OK:.+]] = arith.cmpi slt, %[[BX]], %[[M]] : index
// CHECK-NOT: arith.cmpi
// CHECK: %[[V:.+]] = scf.if %[[OK]] -> (f32) {
// CHECK-NEXT: %[[L:.+]] = memref.load %arg0[%[[BX]], %{{[0-9]+}}] {tile.pad = 0xFF800000 : f32} : memref<?x4096xf32>
// CHECK-NEXT: scf.yield %[[L]] : f32
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[NEG_INF:.+]] = arith.constant 0xFF800000 : f32
// CHECK-NEXT: scf.yield %[[NEG_INF]] : f32
// CHECK-NEXT: } {tile.guard}
// CHECK: memref.store %[[V]], %{{.+}}[%{{.+}}] : memref<32xf32, "local">
func.func @row_of_dynamic_rows(%X: memref<?x4096xf32>) attributes {tile.entry, tile.arg_names = ["X"], tile.arg_dims = [["M", 4096]], tile.symbols = ["M"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %c1024 = arith.constant 1024 : index
  %M = memref.dim %X, %c0 : memref<?x4096xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %M, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %x = memref.alloca() {name = "x"} : memref<32xf32, "local">
    scf.for %k = %c0 to %c4 step %c1 {
      scf.for %v = %c0 to %c8 step %c1 {
        %a = arith.muli %k, %c1024 : index
        %b = arith.muli %tx, %c8 : index
        %ab = arith.addi %a, %b : index
        %col = arith.addi %ab, %v : index
        %r = arith.muli %k, %c8 : index
        %reg = arith.addi %r, %v : index
        %val = memref.load %X[%bx, %col] {tile.pad = 0xFF800000 : f32} : memref<?x4096xf32>
        memref.store %val, %x[%reg] : memref<32xf32, "local">
      }
    }
    gpu.terminator
  }
  return
}

// -----

// A store whose index can be negative and can pass the end gets both checks; a store to a
// local buffer and an access the range analysis keeps in range get none.
// CHECK-LABEL: func.func @store_both_checks
// CHECK: %[[I:.+]] = arith.subi %{{.+}}, %{{.+}} : index
// CHECK: memref.store %{{.+}}, %arg0[%{{.+}}] : memref<64xf32>
// CHECK: %[[ZERO:.+]] = arith.constant 0 : index
// CHECK: %[[LO:.+]] = arith.cmpi sge, %[[I]], %[[ZERO]] : index
// CHECK: %[[N:.+]] = arith.constant 64 : index
// CHECK: %[[HI:.+]] = arith.cmpi slt, %[[I]], %[[N]] : index
// CHECK: %[[OK:.+]] = arith.andi %[[LO]], %[[HI]] : i1
// CHECK: scf.if %[[OK]] {
// CHECK-NEXT: memref.store %{{.+}}, %arg0[%[[I]]] : memref<64xf32>
// CHECK-NEXT: } {tile.guard}
func.func @store_both_checks(%Y: memref<64xf32>) attributes {tile.entry, tile.arg_names = ["Y"], tile.arg_dims = [[64]], tile.symbols = []} {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %c2 = arith.constant 2 : index
    %twice = arith.muli %tx, %c2 : index
    %i = arith.subi %twice, %c3 : index
    memref.store %one, %Y[%tx] : memref<64xf32>
    memref.store %one, %Y[%i] : memref<64xf32>
    gpu.terminator
  }
  return
}

// -----

// A vector load that may leave the tensor runs whole when every lane is in range, else
// lane by lane, each lane under its own guard.
// CHECK-LABEL: func.func @vector_load
// CHECK: %[[LAST:.+]] = arith.addi %[[I:.+]], %{{.+}} : index
// CHECK: %[[OK:.+]] = arith.cmpi slt, %[[LAST]], %{{.+}} : index
// CHECK: scf.if %[[OK]] -> (vector<4xf32>) {
// CHECK-NEXT: vector.load %arg0[%[[I]]] : memref<?xf32>, vector<4xf32>
// CHECK: } else {
// CHECK-COUNT-4: } {tile.guard}
// CHECK: vector.from_elements %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : vector<4xf32>
// CHECK: } {tile.guard}
func.func @vector_load(%X: memref<?xf32>, %Y: memref<256xf32>) attributes {tile.entry, tile.arg_names = ["X", "Y"], tile.arg_dims = [["N"], [256]], tile.symbols = ["N"]} {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %i = arith.muli %tx, %c4 : index
    %v = vector.load %X[%i] : memref<?xf32>, vector<4xf32>
    vector.store %v, %Y[%i] : memref<256xf32>, vector<4xf32>
    gpu.terminator
  }
  return
}

// -----

// A scalar atomic add into a global tensor is a write: it is dropped out of range.
// CHECK-LABEL: func.func @atomic_add
// CHECK: %[[OK:.+]] = arith.cmpi slt, %{{.+}}, %{{.+}} : index
// CHECK-NEXT: scf.if %[[OK]] {
// CHECK-NEXT: "tile.atomic_add"(%arg0, %{{.+}}, %{{.+}}) : (memref<?xf32>, f32, index) -> ()
// CHECK-NEXT: } {tile.guard}
func.func @atomic_add(%Out: memref<?xf32>) attributes {tile.entry, tile.arg_names = ["Out"], tile.arg_dims = [["N"]], tile.symbols = ["N"]} {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    "tile.atomic_add"(%Out, %one, %tx) : (memref<?xf32>, f32, index) -> ()
    gpu.terminator
  }
  return
}
