// eliminate-guards: Z3 removes guards it proves always true, versions loops on invariant checks
// and on checks taken at a loop's last (or first) iteration, and splits a loop into an
// unguarded interior and a guarded tail.
// RUN: tile-opt %s --split-input-file -p eliminate-guards | FileCheck %s
// RUN: tile-opt %s --split-input-file -p eliminate-guards --pass-statistics 2>&1 >/dev/null | FileCheck %s --check-prefix=STATS
// The inputs are what insert-guards gives: thread-level IR with every possibly out-of-range access guarded.

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
module {
  func.func @static_n_divisible(%arg0: memref<8192xf16>) attributes {tile.arg_dims = [[8192]], tile.arg_names = ["X"], tile.entry, tile.symbols = []} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c128 = arith.constant 128 : index
    %c1024 = arith.constant 1024 : index
    %dim = memref.dim %arg0, %c0 : memref<8192xf16>
    %0 = arith.ceildivui %dim, %c1024 : index
    gpu.launch blocks(%arg1, %arg2, %arg3) in (%arg7 = %0, %arg8 = %c1, %arg9 = %c1) threads(%arg4, %arg5, %arg6) in (%arg10 = %c128, %arg11 = %c1, %arg12 = %c1) {
      %alloca = memref.alloca() : memref<8xf16, "local">
      scf.for %arg13 = %c0 to %c8 step %c1 {
        %1 = arith.muli %arg1, %c1024 : index
        %2 = arith.muli %arg4, %c8 : index
        %3 = arith.addi %1, %2 : index
        %4 = arith.addi %3, %arg13 : index
        %5 = memref.load %arg0[%4] {tile.pad = 0.000000e+00 : f16} : memref<8192xf16>
        memref.store %5, %alloca[%arg13] : memref<8xf16, "local">
      }
      gpu.terminator
    }
    return
  }
}

// -----

// A dynamic N can end inside a block's tile: the guard stays.
// CHECK-LABEL: func.func @dynamic_n
// CHECK: %[[OK:.+]] = arith.cmpi slt, %{{.+}}, %{{.+}} : index
// CHECK: scf.if %[[OK]] -> (f16) {
// CHECK: memref.load %arg0[%{{.+}}] {tile.pad = 0.000000e+00 : f16} : memref<?xf16>
// CHECK: } {tile.guard}
module {
  func.func @dynamic_n(%arg0: memref<?xf16>) attributes {tile.arg_dims = [["N"]], tile.arg_names = ["X"], tile.entry, tile.symbols = ["N"]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %dim = memref.dim %arg0, %c0 : memref<?xf16>
    %0 = arith.ceildivui %dim, %c128 : index
    gpu.launch blocks(%arg1, %arg2, %arg3) in (%arg7 = %0, %arg8 = %c1, %arg9 = %c1) threads(%arg4, %arg5, %arg6) in (%arg10 = %c128, %arg11 = %c1, %arg12 = %c1) {
      %alloca = memref.alloca() : memref<1xf16, "local">
      %1 = arith.muli %arg1, %c128 : index
      %2 = arith.addi %1, %arg4 : index
      %c0_0 = arith.constant 0 : index
      %dim_1 = memref.dim %arg0, %c0_0 : memref<?xf16>
      %3 = arith.cmpi slt, %2, %dim_1 : index
      %4 = scf.if %3 -> (f16) {
        %5 = memref.load %arg0[%2] {tile.pad = 0.000000e+00 : f16} : memref<?xf16>
        scf.yield %5 : f16
      } else {
        %cst = arith.constant 0.000000e+00 : f16
        scf.yield %cst : f16
      } {tile.guard}
      memref.store %4, %alloca[%c0] : memref<1xf16, "local">
      gpu.terminator
    }
    return
  }
}

// -----

// The same kernel with T.assume(N % 128 == 0): the guard goes again.
// CHECK-LABEL: func.func @dynamic_n_assumed_multiple
// CHECK: "tile.assume"
// CHECK-NOT: scf.if
// CHECK: memref.load %arg0[%{{.+}}] {tile.pad = 0.000000e+00 : f16} : memref<?xf16>
// CHECK-NOT: scf.if
// CHECK: return
module {
  func.func @dynamic_n_assumed_multiple(%arg0: memref<?xf16>) attributes {tile.arg_dims = [["N"]], tile.arg_names = ["X"], tile.entry, tile.symbols = ["N"]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c128 = arith.constant 128 : index
    %dim = memref.dim %arg0, %c0 : memref<?xf16>
    %0 = arith.remsi %dim, %c128 : index
    %1 = arith.cmpi eq, %0, %c0 : index
    "tile.assume"(%1) {expr = "N % 128 == 0"} : (i1) -> ()
    %2 = arith.ceildivui %dim, %c128 : index
    gpu.launch blocks(%arg1, %arg2, %arg3) in (%arg7 = %2, %arg8 = %c1, %arg9 = %c1) threads(%arg4, %arg5, %arg6) in (%arg10 = %c128, %arg11 = %c1, %arg12 = %c1) {
      %alloca = memref.alloca() : memref<1xf16, "local">
      %3 = arith.muli %arg1, %c128 : index
      %4 = arith.addi %3, %arg4 : index
      %c0_0 = arith.constant 0 : index
      %dim_1 = memref.dim %arg0, %c0_0 : memref<?xf16>
      %5 = arith.cmpi slt, %4, %dim_1 : index
      %6 = scf.if %5 -> (f16) {
        %7 = memref.load %arg0[%4] {tile.pad = 0.000000e+00 : f16} : memref<?xf16>
        scf.yield %7 : f16
      } else {
        %cst = arith.constant 0.000000e+00 : f16
        scf.yield %cst : f16
      } {tile.guard}
      memref.store %6, %alloca[%c0] : memref<1xf16, "local">
      gpu.terminator
    }
    return
  }
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
module {
  func.func @k_loop_tail(%arg0: memref<64x?xf32>, %arg1: memref<64xf32>) attributes {tile.arg_dims = [[64, "K"], [64]], tile.arg_names = ["A", "S"], tile.entry, tile.symbols = ["K"]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %cst = arith.constant 0.000000e+00 : f32
    %dim = memref.dim %arg0, %c1 : memref<64x?xf32>
    %0 = arith.ceildivui %dim, %c32 : index
    gpu.launch blocks(%arg2, %arg3, %arg4) in (%arg8 = %c64, %arg9 = %c1, %arg10 = %c1) threads(%arg5, %arg6, %arg7) in (%arg11 = %c32, %arg12 = %c1, %arg13 = %c1) {
      %1 = scf.for %arg14 = %c0 to %0 step %c1 iter_args(%arg15 = %cst) -> (f32) {
        %2 = arith.muli %arg14, %c32 : index
        %3 = arith.addi %2, %arg5 : index
        %c1_0 = arith.constant 1 : index
        %dim_1 = memref.dim %arg0, %c1_0 : memref<64x?xf32>
        %4 = arith.cmpi slt, %3, %dim_1 : index
        %5 = scf.if %4 -> (f32) {
          %7 = memref.load %arg0[%arg2, %3] {tile.pad = 0.000000e+00 : f32} : memref<64x?xf32>
          scf.yield %7 : f32
        } else {
          %cst_2 = arith.constant 0.000000e+00 : f32
          scf.yield %cst_2 : f32
        } {tile.guard}
        %6 = arith.addf %arg15, %5 : f32
        scf.yield %6 : f32
      }
      memref.store %1, %arg1[%arg2] : memref<64xf32>
      gpu.terminator
    }
    return
  }
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
module {
  func.func @rows_versioned(%arg0: memref<?x1000xf32>) attributes {tile.arg_dims = [["M", 1000]], tile.arg_names = ["X"], tile.entry, tile.symbols = ["M"]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c128 = arith.constant 128 : index
    %dim = memref.dim %arg0, %c0 : memref<?x1000xf32>
    %0 = arith.ceildivui %dim, %c4 : index
    gpu.launch blocks(%arg1, %arg2, %arg3) in (%arg7 = %0, %arg8 = %c1, %arg9 = %c1) threads(%arg4, %arg5, %arg6) in (%arg10 = %c128, %arg11 = %c1, %arg12 = %c1) {
      %alloca = memref.alloca() : memref<32xf32, "local">
      scf.for %arg13 = %c0 to %c4 step %c1 {
        %1 = arith.muli %arg1, %c4 : index
        %2 = arith.addi %1, %arg13 : index
        scf.for %arg14 = %c0 to %c8 step %c1 {
          %3 = arith.muli %arg4, %c8 : index
          %4 = arith.addi %3, %arg14 : index
          %5 = arith.muli %arg13, %c8 : index
          %6 = arith.addi %5, %arg14 : index
          %c0_0 = arith.constant 0 : index
          %dim_1 = memref.dim %arg0, %c0_0 : memref<?x1000xf32>
          %7 = arith.cmpi slt, %2, %dim_1 : index
          %c1000 = arith.constant 1000 : index
          %8 = arith.cmpi slt, %4, %c1000 : index
          %9 = arith.andi %7, %8 : i1
          %10 = scf.if %9 -> (f32) {
            %11 = memref.load %arg0[%2, %4] {tile.pad = 0xFF800000 : f32} : memref<?x1000xf32>
            scf.yield %11 : f32
          } else {
            %cst = arith.constant 0xFF800000 : f32
            scf.yield %cst : f32
          } {tile.guard}
          memref.store %10, %alloca[%6] : memref<32xf32, "local">
        }
      }
      gpu.terminator
    }
    return
  }
}

// -----

// A guard the enclosing if already decides: true in the then branch, false in the else.
// CHECK-LABEL: func.func @decided_by_enclosing_if
// CHECK: scf.if %{{.+}} {
// CHECK-NEXT: memref.store %{{.+}}, %arg0[%{{.+}}] : memref<?xf32>
// CHECK-NEXT: } else {
// CHECK-NEXT: }
module {
  func.func @decided_by_enclosing_if(%arg0: memref<?xf32>) attributes {tile.arg_dims = [["N"]], tile.arg_names = ["Y"], tile.entry, tile.symbols = ["N"]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    %cst = arith.constant 1.000000e+00 : f32
    %dim = memref.dim %arg0, %c0 : memref<?xf32>
    gpu.launch blocks(%arg1, %arg2, %arg3) in (%arg7 = %c1, %arg8 = %c1, %arg9 = %c1) threads(%arg4, %arg5, %arg6) in (%arg10 = %c64, %arg11 = %c1, %arg12 = %c1) {
      %0 = arith.cmpi slt, %arg4, %dim : index
      scf.if %0 {
        %c0_0 = arith.constant 0 : index
        %dim_1 = memref.dim %arg0, %c0_0 : memref<?xf32>
        %1 = arith.cmpi slt, %arg4, %dim_1 : index
        scf.if %1 {
          memref.store %cst, %arg0[%arg4] : memref<?xf32>
        } {tile.guard}
      } else {
        %c0_0 = arith.constant 0 : index
        %dim_1 = memref.dim %arg0, %c0_0 : memref<?xf32>
        %1 = arith.cmpi slt, %arg4, %dim_1 : index
        scf.if %1 {
          memref.store %cst, %arg0[%arg4] : memref<?xf32>
        } {tile.guard}
      }
      gpu.terminator
    }
    return
  }
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
module {
  func.func @chunks_range_versioned(%arg0: memref<?xf16>, %arg1: memref<?xf16>) attributes {tile.arg_dims = [["n"], ["n"]], tile.arg_names = ["A", "B"], tile.entry, tile.symbols = ["n"]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %c128 = arith.constant 128 : index
    %c1024 = arith.constant 1024 : index
    %c2048 = arith.constant 2048 : index
    %dim = memref.dim %arg0, %c0 : memref<?xf16>
    %0 = arith.ceildivui %dim, %c2048 : index
    gpu.launch blocks(%arg2, %arg3, %arg4) in (%arg8 = %0, %arg9 = %c1, %arg10 = %c1) threads(%arg5, %arg6, %arg7) in (%arg11 = %c128, %arg12 = %c1, %arg13 = %c1) {
      %alloca = memref.alloca() : memref<16xf16, "local">
      %alloca_0 = memref.alloca() : memref<16xf16, "local">
      %1 = arith.muli %arg2, %c2048 : index
      %2 = arith.muli %arg5, %c8 : index
      scf.for %arg14 = %c0 to %c2 step %c1 {
        scf.for %arg15 = %c0 to %c8 step %c1 {
          %3 = arith.muli %arg14, %c1024 : index
          %4 = arith.addi %2, %3 : index
          %5 = arith.addi %4, %arg15 : index
          %6 = arith.addi %1, %5 : index
          %7 = arith.muli %arg14, %c8 : index
          %8 = arith.addi %7, %arg15 : index
          %c0_1 = arith.constant 0 : index
          %dim_2 = memref.dim %arg0, %c0_1 : memref<?xf16>
          %9 = arith.cmpi slt, %6, %dim_2 : index
          %10 = scf.if %9 -> (f16) {
            %11 = memref.load %arg0[%6] {tile.pad = 0.000000e+00 : f16} : memref<?xf16>
            scf.yield %11 : f16
          } else {
            %cst = arith.constant 0.000000e+00 : f16
            scf.yield %cst : f16
          } {tile.guard}
          memref.store %10, %alloca[%8] : memref<16xf16, "local">
        } {tile.unroll}
      } {tile.unroll}
      scf.for %arg14 = %c0 to %c2 step %c1 {
        scf.for %arg15 = %c0 to %c8 step %c1 {
          %3 = arith.muli %arg14, %c1024 : index
          %4 = arith.addi %2, %3 : index
          %5 = arith.addi %4, %arg15 : index
          %6 = arith.addi %1, %5 : index
          %7 = arith.muli %arg14, %c8 : index
          %8 = arith.addi %7, %arg15 : index
          %c0_1 = arith.constant 0 : index
          %dim_2 = memref.dim %arg1, %c0_1 : memref<?xf16>
          %9 = arith.cmpi slt, %6, %dim_2 : index
          %10 = scf.if %9 -> (f16) {
            %11 = memref.load %arg1[%6] {tile.pad = 0.000000e+00 : f16} : memref<?xf16>
            scf.yield %11 : f16
          } else {
            %cst = arith.constant 0.000000e+00 : f16
            scf.yield %cst : f16
          } {tile.guard}
          memref.store %10, %alloca_0[%8] : memref<16xf16, "local">
        } {tile.unroll}
      } {tile.unroll}
      gpu.terminator
    }
    return
  }
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
module {
  func.func @non_monotone_kept(%arg0: memref<?xf32>) attributes {tile.arg_dims = [["N"]], tile.arg_names = ["X"], tile.entry, tile.symbols = ["N"]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %c128 = arith.constant 128 : index
    %dim = memref.dim %arg0, %c0 : memref<?xf32>
    %0 = arith.ceildivui %dim, %c128 : index
    gpu.launch blocks(%arg1, %arg2, %arg3) in (%arg7 = %0, %arg8 = %c1, %arg9 = %c1) threads(%arg4, %arg5, %arg6) in (%arg10 = %c32, %arg11 = %c1, %arg12 = %c1) {
      %alloca = memref.alloca() : memref<12xf32, "local">
      %1 = arith.muli %arg1, %c128 : index
      %2 = arith.muli %arg4, %c4 : index
      %3 = arith.addi %1, %2 : index
      scf.for %arg13 = %c0 to %c3 step %c1 {
        scf.for %arg14 = %c0 to %c4 step %c1 {
          %4 = arith.remsi %arg13, %c2 : index
          %5 = arith.muli %4, %c64 : index
          %6 = arith.addi %3, %5 : index
          %7 = arith.addi %6, %arg14 : index
          %8 = arith.muli %arg13, %c4 : index
          %9 = arith.addi %8, %arg14 : index
          %c0_0 = arith.constant 0 : index
          %dim_1 = memref.dim %arg0, %c0_0 : memref<?xf32>
          %10 = arith.cmpi slt, %7, %dim_1 : index
          %11 = scf.if %10 -> (f32) {
            %12 = memref.load %arg0[%7] {tile.pad = 0.000000e+00 : f32} : memref<?xf32>
            scf.yield %12 : f32
          } else {
            %cst = arith.constant 0.000000e+00 : f32
            scf.yield %cst : f32
          } {tile.guard}
          memref.store %11, %alloca[%9] : memref<12xf32, "local">
        }
      }
      gpu.terminator
    }
    return
  }
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
module {
  func.func @decreasing_index(%arg0: memref<?xf32>) attributes {tile.arg_dims = [["N"]], tile.arg_names = ["X"], tile.entry, tile.symbols = ["N"]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %c128 = arith.constant 128 : index
    %dim = memref.dim %arg0, %c0 : memref<?xf32>
    %0 = arith.ceildivui %dim, %c128 : index
    gpu.launch blocks(%arg1, %arg2, %arg3) in (%arg7 = %0, %arg8 = %c1, %arg9 = %c1) threads(%arg4, %arg5, %arg6) in (%arg10 = %c8, %arg11 = %c1, %arg12 = %c1) {
      %alloca = memref.alloca() : memref<16xf32, "local">
      %1 = arith.muli %arg1, %c128 : index
      %2 = arith.muli %arg4, %c4 : index
      %3 = arith.addi %1, %2 : index
      scf.for %arg13 = %c0 to %c4 step %c1 {
        scf.for %arg14 = %c0 to %c4 step %c1 {
          %4 = arith.subi %c3, %arg13 : index
          %5 = arith.muli %4, %c32 : index
          %6 = arith.addi %3, %5 : index
          %7 = arith.addi %6, %arg14 : index
          %8 = arith.muli %arg13, %c4 : index
          %9 = arith.addi %8, %arg14 : index
          %c0_0 = arith.constant 0 : index
          %dim_1 = memref.dim %arg0, %c0_0 : memref<?xf32>
          %10 = arith.cmpi slt, %7, %dim_1 : index
          %11 = scf.if %10 -> (f32) {
            %12 = memref.load %arg0[%7] {tile.pad = 0.000000e+00 : f32} : memref<?xf32>
            scf.yield %12 : f32
          } else {
            %cst = arith.constant 0.000000e+00 : f32
            scf.yield %cst : f32
          } {tile.guard}
          memref.store %11, %alloca[%9] : memref<16xf32, "local">
        }
      }
      gpu.terminator
    }
    return
  }
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
module {
  func.func @symbolic_trips(%arg0: memref<?xf32>, %arg1: memref<?xf32>) attributes {tile.arg_dims = [["N"], ["K"]], tile.arg_names = ["X", "Kt"], tile.entry, tile.symbols = ["N", "K"]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %dim = memref.dim %arg1, %c0 : memref<?xf32>
    gpu.launch blocks(%arg2, %arg3, %arg4) in (%arg8 = %c1, %arg9 = %c1, %arg10 = %c1) threads(%arg5, %arg6, %arg7) in (%arg11 = %c1, %arg12 = %c1, %arg13 = %c1) {
      %alloca = memref.alloca() : memref<4xf32, "local">
      scf.for %arg14 = %c1 to %dim step %c2 {
        scf.for %arg15 = %c0 to %c4 step %c1 {
          %0 = arith.muli %arg14, %c4 : index
          %1 = arith.addi %0, %arg15 : index
          %c0_0 = arith.constant 0 : index
          %dim_1 = memref.dim %arg0, %c0_0 : memref<?xf32>
          %2 = arith.cmpi slt, %1, %dim_1 : index
          %3 = scf.if %2 -> (f32) {
            %4 = memref.load %arg0[%1] {tile.pad = 0.000000e+00 : f32} : memref<?xf32>
            scf.yield %4 : f32
          } else {
            %cst = arith.constant 0.000000e+00 : f32
            scf.yield %cst : f32
          } {tile.guard}
          memref.store %3, %alloca[%arg15] : memref<4xf32, "local">
        }
      } {tile.unroll}
      scf.for %arg14 = %c1 to %dim step %c2 {
        scf.for %arg15 = %c0 to %c4 step %c1 {
          %0 = arith.muli %arg14, %c4 : index
          %1 = arith.addi %0, %arg15 : index
          %c0_0 = arith.constant 0 : index
          %dim_1 = memref.dim %arg0, %c0_0 : memref<?xf32>
          %2 = arith.cmpi slt, %1, %dim_1 : index
          %3 = scf.if %2 -> (f32) {
            %4 = memref.load %arg0[%1] {tile.pad = 0.000000e+00 : f32} : memref<?xf32>
            scf.yield %4 : f32
          } else {
            %cst = arith.constant 0.000000e+00 : f32
            scf.yield %cst : f32
          } {tile.guard}
          memref.store %3, %alloca[%arg15] : memref<4xf32, "local">
        }
      }
      gpu.terminator
    }
    return
  }
}
