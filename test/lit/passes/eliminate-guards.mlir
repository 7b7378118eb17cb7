// eliminate-guards: Z3 removes guards it proves always true, versions loops on invariant checks
// and on checks taken at a loop's last (or first) iteration, and splits a loop into an
// unguarded interior and a guarded tail.
// RUN: tile-opt %s --split-input-file -p insert-guards,eliminate-guards | FileCheck %s
// RUN: tile-opt %s --split-input-file -p insert-guards,eliminate-guards --pass-statistics 2>&1 >/dev/null | FileCheck %s --check-prefix=STATS

// Over the ten functions below.
// STATS: eliminate-guards
// STATS-NEXT: (S) 1 checks-dropped
// STATS-NEXT: (S) 2 guards-folded
// STATS-NEXT: (S) 15 guards-kept
// STATS-NEXT: (S) 8 guards-proved
// STATS-NEXT: (S) 0 guards-resource-out
// STATS-NEXT: (S) 5 loops-range-versioned
// STATS-NEXT: (S) 1 loops-split
// STATS-NEXT: (S) 1 loops-versioned

// N = 8192 is a multiple of the block's 1024 elements: the grid is exact, the guard goes (the range
// analysis already bounds the grid, ceildiv(8192, 1024) = 8, so insert-guards puts none there).
// CHECK-LABEL: func.func @static_n_divisible
// CHECK-NOT: scf.if
// CHECK: memref.load %arg0[%{{.+}}] {tile.pad = 0.000000e+00 : f16} : memref<8192xf16>
// CHECK-NOT: scf.if
// CHECK: return
func.func @static_n_divisible(%X: memref<8192xf16>) attributes {tile.entry, tile.arg_names = ["X"], tile.arg_dims = [[8192]], tile.symbols = []} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %c1024 = arith.constant 1024 : index
  %N = memref.dim %X, %c0 : memref<8192xf16>
  %g = arith.ceildivui %N, %c1024 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %g, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %x = memref.alloca() : memref<8xf16, "local">
    scf.for %v = %c0 to %c8 step %c1 {
      %base = arith.muli %bx, %c1024 : index
      %t = arith.muli %tx, %c8 : index
      %bt = arith.addi %base, %t : index
      %i = arith.addi %bt, %v : index
      %val = memref.load %X[%i] {tile.pad = 0.0 : f16} : memref<8192xf16>
      memref.store %val, %x[%v] : memref<8xf16, "local">
    }
    gpu.terminator
  }
  return
}

// -----

// A dynamic N can end inside a block's tile: the guard stays.
// CHECK-LABEL: func.func @dynamic_n
// CHECK: %[[OK:.+]] = arith.cmpi slt, %{{.+}}, %{{.+}} : index
// CHECK: scf.if %[[OK]] -> (f16) {
// CHECK: memref.load %arg0[%{{.+}}] {tile.pad = 0.000000e+00 : f16} : memref<?xf16>
// CHECK: } {tile.guard}
func.func @dynamic_n(%X: memref<?xf16>) attributes {tile.entry, tile.arg_names = ["X"], tile.arg_dims = [["N"]], tile.symbols = ["N"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %N = memref.dim %X, %c0 : memref<?xf16>
  %g = arith.ceildivui %N, %c128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %g, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %x = memref.alloca() : memref<1xf16, "local">
    %base = arith.muli %bx, %c128 : index
    %i = arith.addi %base, %tx : index
    %val = memref.load %X[%i] {tile.pad = 0.0 : f16} : memref<?xf16>
    memref.store %val, %x[%c0] : memref<1xf16, "local">
    gpu.terminator
  }
  return
}

// -----

// The same kernel with T.assume(N % 128 == 0): the guard goes again.
// CHECK-LABEL: func.func @dynamic_n_assumed_multiple
// CHECK: "tile.assume"
// CHECK-NOT: scf.if
// CHECK: memref.load %arg0[%{{.+}}] {tile.pad = 0.000000e+00 : f16} : memref<?xf16>
// CHECK-NOT: scf.if
// CHECK: return
func.func @dynamic_n_assumed_multiple(%X: memref<?xf16>) attributes {tile.entry, tile.arg_names = ["X"], tile.arg_dims = [["N"]], tile.symbols = ["N"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %N = memref.dim %X, %c0 : memref<?xf16>
  %rem = arith.remsi %N, %c128 : index
  %ok = arith.cmpi eq, %rem, %c0 : index
  "tile.assume"(%ok) {expr = "N % 128 == 0"} : (i1) -> ()
  %g = arith.ceildivui %N, %c128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %g, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %x = memref.alloca() : memref<1xf16, "local">
    %base = arith.muli %bx, %c128 : index
    %i = arith.addi %base, %tx : index
    %val = memref.load %X[%i] {tile.pad = 0.0 : f16} : memref<?xf16>
    memref.store %val, %x[%c0] : memref<1xf16, "local">
    gpu.terminator
  }
  return
}

// -----

// A loop over K in tiles of 32: the column check fails only in the last iteration. The loop
// becomes an unguarded interior up to max(ub - 1, lb) and a guarded one-iteration tail.
// CHECK-LABEL: func.func @k_loop_tail
// CHECK: %[[UB:.+]] = arith.ceildivui
// CHECK: gpu.launch
// CHECK: %[[LAST:.+]] = arith.subi %[[UB]], %{{.+}} : index
// CHECK: %[[SPLIT:.+]] = arith.maxsi %[[LAST]], %{{.+}} : index
// CHECK: %[[ACC:.+]] = scf.for %{{.+}} = %{{.+}} to %[[SPLIT]] step %{{.+}} iter_args(%{{.+}} = %{{.+}}) -> (f32) {
// CHECK-NOT: scf.if
// CHECK: memref.load %arg0[%{{.+}}, %{{.+}}] {tile.pad = 0.000000e+00 : f32} : memref<64x?xf32>
// CHECK-NOT: scf.if
// CHECK: scf.yield
// CHECK: %[[SUM:.+]] = scf.for %{{.+}} = %[[SPLIT]] to %[[UB]] step %{{.+}} iter_args(%{{.+}} = %[[ACC]]) -> (f32) {
// CHECK: scf.if %{{.+}} -> (f32) {
// CHECK: memref.load %arg0
// CHECK: } {tile.guard}
// CHECK: memref.store %[[SUM]], %arg1[%{{.+}}] : memref<64xf32>
func.func @k_loop_tail(%A: memref<64x?xf32>, %S: memref<64xf32>) attributes {tile.entry, tile.arg_names = ["A", "S"], tile.arg_dims = [[64, "K"], [64]], tile.symbols = ["K"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %K = memref.dim %A, %c1 : memref<64x?xf32>
  %tiles = arith.ceildivui %K, %c32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c64, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %sum = scf.for %k = %c0 to %tiles step %c1 iter_args(%acc = %zero) -> (f32) {
      %base = arith.muli %k, %c32 : index
      %col = arith.addi %base, %tx : index
      %a = memref.load %A[%bx, %col] {tile.pad = 0.0 : f32} : memref<64x?xf32>
      %next = arith.addf %acc, %a : f32
      scf.yield %next : f32
    }
    memref.store %sum, %S[%bx] : memref<64xf32>
    gpu.terminator
  }
  return
}

// -----

// 4 rows per block, 8 columns per thread. The row loop is range-versioned on its last row
// and on the thread's last column (N = 1000 < 1024: not every thread's columns are in range):
// the then copy has no check left. In the else copy the row check, invariant in the column
// loop, is hoisted out of it (loop versioning): the then copy keeps the column check, and in
// the else copy the load is the pad.
// CHECK-LABEL: func.func @rows_versioned
// CHECK: gpu.launch
// CHECK: %[[M:.+]] = memref.dim %arg0, %{{.+}} : memref<?x1000xf32>
// CHECK: %[[LAST_ROW:.+]] = arith.constant 3 : index
// CHECK: %[[ROW3:.+]] = arith.addi %{{.+}}, %[[LAST_ROW]] : index
// CHECK: %[[ROWS_OK:.+]] = arith.cmpi slt, %[[ROW3]], %[[M]] : index
// CHECK: %[[COLS_OK:.+]] = arith.cmpi slt, %{{.+}}, %{{.+}} : index
// CHECK: %[[ALL_OK:.+]] = arith.andi %[[ROWS_OK]], %[[COLS_OK]] : i1
// CHECK-NEXT: scf.if %[[ALL_OK]] {
// CHECK-NOT: scf.if
// CHECK: } else {
// CHECK: scf.for %[[R:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK: %[[ROW:.+]] = arith.addi %{{.+}}, %[[R]] : index
// CHECK: %[[ROW_OK:.+]] = arith.cmpi slt, %[[ROW]], %{{.+}} : index
// CHECK-NEXT: scf.if %[[ROW_OK]] {
// CHECK-NEXT: scf.for
// CHECK: %[[COL_OK:.+]] = arith.cmpi slt, %{{.+}}, %{{.+}} : index
// CHECK-NEXT: scf.if %[[COL_OK]] -> (f32) {
// CHECK-NEXT: memref.load %arg0[%[[ROW]], %{{.+}}] {tile.pad = 0xFF800000 : f32} : memref<?x1000xf32>
// CHECK: } {tile.guard}
// CHECK: } else {
// CHECK-NEXT: scf.for
// CHECK-NOT: memref.load %arg0
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: memref.store
// CHECK: } {tile.guard}
// CHECK: } {tile.guard}
func.func @rows_versioned(%X: memref<?x1000xf32>) attributes {tile.entry, tile.arg_names = ["X"], tile.arg_dims = [["M", 1000]], tile.symbols = ["M"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %M = memref.dim %X, %c0 : memref<?x1000xf32>
  %g = arith.ceildivui %M, %c4 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %g, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %x = memref.alloca() : memref<32xf32, "local">
    scf.for %r = %c0 to %c4 step %c1 {
      %row0 = arith.muli %bx, %c4 : index
      %row = arith.addi %row0, %r : index
      scf.for %v = %c0 to %c8 step %c1 {
        %t = arith.muli %tx, %c8 : index
        %col = arith.addi %t, %v : index
        %rr = arith.muli %r, %c8 : index
        %reg = arith.addi %rr, %v : index
        %val = memref.load %X[%row, %col] {tile.pad = 0xFF800000 : f32} : memref<?x1000xf32>
        memref.store %val, %x[%reg] : memref<32xf32, "local">
      }
    }
    gpu.terminator
  }
  return
}

// -----

// A guard the enclosing if already decides: true in the then branch, false in the else.
// CHECK-LABEL: func.func @decided_by_enclosing_if
// CHECK: scf.if %{{.+}} {
// CHECK-NEXT: memref.store %{{.+}}, %arg0[%{{.+}}] : memref<?xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT: }
func.func @decided_by_enclosing_if(%Y: memref<?xf32>) attributes {tile.entry, tile.arg_names = ["Y"], tile.arg_dims = [["N"]], tile.symbols = ["N"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %one = arith.constant 1.0 : f32
  %N = memref.dim %Y, %c0 : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %in = arith.cmpi slt, %tx, %N : index
    scf.if %in {
      memref.store %one, %Y[%tx] : memref<?xf32>
    } else {
      memref.store %one, %Y[%tx] : memref<?xf32>
    }
    gpu.terminator
  }
  return
}
// -----

// Two inputs of one length n, each copied in 2 chunks of 8 per thread (as the elementwise
// kernels are): the check of the last element of the last chunk implies every other, so each
// chunk loop is range-versioned on it. Both conditions read n from A (the first tensor n
// sizes), so after cse they are one value. The inner loops are vector runs: vectorize, not
// this pass, versions them in the else copies.
// CHECK-LABEL: func.func @chunks_range_versioned
// CHECK: gpu.launch
// CHECK: %[[N:.+]] = memref.dim %arg0, %{{.+}} : memref<?xf16>
// CHECK: %[[OK:.+]] = arith.cmpi slt, %{{.+}}, %[[N]] : index
// CHECK-NEXT: scf.if %[[OK]] {
// CHECK-NOT: scf.if
// CHECK: memref.load %arg0
// CHECK-NOT: scf.if
// CHECK: } else {
// CHECK-NEXT: scf.for
// CHECK-NEXT: scf.for
// CHECK-NOT: scf.for
// CHECK: scf.if %{{.+}} -> (f16) {
// CHECK-NEXT: memref.load %arg0
// CHECK: } {tile.guard}
// CHECK: } {tile.guard}
// CHECK: %[[N2:.+]] = memref.dim %arg0, %{{.+}} : memref<?xf16>
// CHECK: %[[OK2:.+]] = arith.cmpi slt, %{{.+}}, %[[N2]] : index
// CHECK-NEXT: scf.if %[[OK2]] {
// CHECK-NOT: scf.if
// CHECK: memref.load %arg1
// CHECK-NOT: scf.if
// CHECK: } else {
// CHECK: scf.if %{{.+}} -> (f16) {
// CHECK-NEXT: memref.load %arg1
func.func @chunks_range_versioned(%A: memref<?xf16>, %B: memref<?xf16>) attributes {tile.entry, tile.arg_names = ["A", "B"], tile.arg_dims = [["n"], ["n"]], tile.symbols = ["n"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %c1024 = arith.constant 1024 : index
  %c2048 = arith.constant 2048 : index
  %n = memref.dim %A, %c0 : memref<?xf16>
  %g = arith.ceildivui %n, %c2048 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %g, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %a = memref.alloca() : memref<16xf16, "local">
    %b = memref.alloca() : memref<16xf16, "local">
    %base = arith.muli %bx, %c2048 : index
    %t = arith.muli %tx, %c8 : index
    scf.for %k = %c0 to %c2 step %c1 {
      scf.for %v = %c0 to %c8 step %c1 {
        %ck = arith.muli %k, %c1024 : index
        %tk = arith.addi %t, %ck : index
        %o = arith.addi %tk, %v : index
        %i = arith.addi %base, %o : index
        %rk = arith.muli %k, %c8 : index
        %r = arith.addi %rk, %v : index
        %x = memref.load %A[%i] {tile.pad = 0.0 : f16} : memref<?xf16>
        memref.store %x, %a[%r] : memref<16xf16, "local">
      } {tile.unroll}
    } {tile.unroll}
    scf.for %k = %c0 to %c2 step %c1 {
      scf.for %v = %c0 to %c8 step %c1 {
        %ck = arith.muli %k, %c1024 : index
        %tk = arith.addi %t, %ck : index
        %o = arith.addi %tk, %v : index
        %i = arith.addi %base, %o : index
        %rk = arith.muli %k, %c8 : index
        %r = arith.addi %rk, %v : index
        %y = memref.load %B[%i] {tile.pad = 0.0 : f16} : memref<?xf16>
        memref.store %y, %b[%r] : memref<16xf16, "local">
      } {tile.unroll}
    } {tile.unroll}
    gpu.terminator
  }
  return
}

// -----

// Not monotone: chunk k of 3 reads at offset (k mod 2) * 64, largest in the middle iteration,
// so neither the last nor the first iteration's check implies the others. The guard stays where
// it is and no loop is versioned.
// CHECK-LABEL: func.func @non_monotone_kept
// CHECK: gpu.launch
// CHECK-NOT: scf.if
// CHECK: scf.for
// CHECK-NEXT: scf.for
// CHECK-NOT: scf.for
// CHECK: scf.if %{{.+}} -> (f32) {
// CHECK-NEXT: memref.load %arg0
// CHECK: } {tile.guard}
// CHECK-NOT: scf.if
// CHECK: gpu.terminator
func.func @non_monotone_kept(%X: memref<?xf32>) attributes {tile.entry, tile.arg_names = ["X"], tile.arg_dims = [["N"]], tile.symbols = ["N"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %N = memref.dim %X, %c0 : memref<?xf32>
  %g = arith.ceildivui %N, %c128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %g, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {
    %x = memref.alloca() : memref<12xf32, "local">
    %base = arith.muli %bx, %c128 : index
    %t = arith.muli %tx, %c4 : index
    %bt = arith.addi %base, %t : index
    scf.for %k = %c0 to %c3 step %c1 {
      scf.for %v = %c0 to %c4 step %c1 {
        %half = arith.remsi %k, %c2 : index
        %off = arith.muli %half, %c64 : index
        %o = arith.addi %bt, %off : index
        %i = arith.addi %o, %v : index
        %rk = arith.muli %k, %c4 : index
        %r = arith.addi %rk, %v : index
        %val = memref.load %X[%i] {tile.pad = 0.0 : f32} : memref<?xf32>
        memref.store %val, %x[%r] : memref<12xf32, "local">
      }
    }
    gpu.terminator
  }
  return
}

// -----

// A decreasing index: chunk k reads at (3 - k) * 32, so the first iteration's check implies
// the others, and the loop is versioned on the check with k = 0 (the loop's lower bound).
// CHECK-LABEL: func.func @decreasing_index
// CHECK: %[[LB:.+]] = arith.constant 0 : index
// CHECK: gpu.launch
// CHECK: arith.subi %{{.+}}, %[[LB]] : index
// CHECK: %[[OK:.+]] = arith.cmpi slt, %{{.+}}, %{{.+}} : index
// CHECK-NEXT: scf.if %[[OK]] {
// CHECK-NOT: scf.if
// CHECK: } else {
// CHECK: scf.if %{{.+}} -> (f32) {
// CHECK-NEXT: memref.load %arg0
// CHECK: } {tile.guard}
// CHECK: } {tile.guard}
func.func @decreasing_index(%X: memref<?xf32>) attributes {tile.entry, tile.arg_names = ["X"], tile.arg_dims = [["N"]], tile.symbols = ["N"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %N = memref.dim %X, %c0 : memref<?xf32>
  %g = arith.ceildivui %N, %c128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %g, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %x = memref.alloca() : memref<16xf32, "local">
    %base = arith.muli %bx, %c128 : index
    %t = arith.muli %tx, %c4 : index
    %bt = arith.addi %base, %t : index
    scf.for %k = %c0 to %c4 step %c1 {
      scf.for %v = %c0 to %c4 step %c1 {
        %back = arith.subi %c3, %k : index
        %off = arith.muli %back, %c32 : index
        %o = arith.addi %bt, %off : index
        %i = arith.addi %o, %v : index
        %rk = arith.muli %k, %c4 : index
        %r = arith.addi %rk, %v : index
        %val = memref.load %X[%i] {tile.pad = 0.0 : f32} : memref<?xf32>
        memref.store %val, %x[%r] : memref<16xf32, "local">
      }
    }
    gpu.terminator
  }
  return
}

// -----

// A trip count known only at run time: K chunks from 1 in steps of 2. Marked tile.unroll, the
// loop is range-versioned on its last iteration, lb + ((ub - lb - 1) floordiv step) * step;
// the same loop unmarked may run any number of times and is left alone (its guard stays).
// CHECK-LABEL: func.func @symbolic_trips
// CHECK: gpu.launch
// CHECK: %[[K:.+]] = memref.dim %arg1, %{{.+}} : memref<?xf32>
// CHECK: %[[SPAN:.+]] = arith.subi %[[K]], %[[LB:.+]] : index
// CHECK: %[[SPAN1:.+]] = arith.subi %[[SPAN]], %{{.+}} : index
// CHECK: %[[STEPS:.+]] = arith.floordivsi %[[SPAN1]], %[[STEP:.+]] : index
// CHECK: %[[OFF:.+]] = arith.muli %[[STEPS]], %[[STEP]] : index
// CHECK: %[[LAST:.+]] = arith.addi %[[LB]], %[[OFF]] : index
// CHECK: arith.muli %[[LAST]], %{{.+}} : index
// CHECK: %[[OK:.+]] = arith.cmpi slt, %{{.+}}, %{{.+}} : index
// CHECK-NEXT: scf.if %[[OK]] {
// CHECK-NEXT: scf.for
// CHECK-NOT: scf.if
// CHECK: } {tile.unroll}
// CHECK-NEXT: } else {
// CHECK: } {tile.unroll}
// CHECK-NEXT: } {tile.guard}
// CHECK-NEXT: scf.for
// CHECK-NEXT: scf.for
// CHECK-NOT: scf.for
// CHECK: scf.if %{{.+}} -> (f32) {
// CHECK: } {tile.guard}
// CHECK-NOT: scf.if
// CHECK: gpu.terminator
func.func @symbolic_trips(%X: memref<?xf32>, %Kt: memref<?xf32>) attributes {tile.entry, tile.arg_names = ["X", "Kt"], tile.arg_dims = [["N"], ["K"]], tile.symbols = ["N", "K"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %K = memref.dim %Kt, %c0 : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %x = memref.alloca() : memref<4xf32, "local">
    scf.for %k = %c1 to %K step %c2 {
      scf.for %v = %c0 to %c4 step %c1 {
        %o = arith.muli %k, %c4 : index
        %i = arith.addi %o, %v : index
        %val = memref.load %X[%i] {tile.pad = 0.0 : f32} : memref<?xf32>
        memref.store %val, %x[%v] : memref<4xf32, "local">
      }
    } {tile.unroll}
    scf.for %k = %c1 to %K step %c2 {
      scf.for %v = %c0 to %c4 step %c1 {
        %o = arith.muli %k, %c4 : index
        %i = arith.addi %o, %v : index
        %val = memref.load %X[%i] {tile.pad = 0.0 : f32} : memref<?xf32>
        memref.store %val, %x[%v] : memref<4xf32, "local">
      }
    }
    gpu.terminator
  }
  return
}
