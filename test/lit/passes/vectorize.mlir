// vectorize: per-thread contiguous runs become vector loads/stores of up to 16 bytes when Z3 proves
// them contiguous, in range, aligned, and their guard whole; otherwise they stay scalar.
// RUN: tile-opt %s --split-input-file -p vectorize | FileCheck %s
// RUN: tile-opt %s --split-input-file -p vectorize --pass-statistics 2>&1 >/dev/null | FileCheck %s --check-prefix=STATS
// The inputs are what insert-guards and eliminate-guards give (final-pipeline.mlir runs the pipeline).

// Over the ten functions below.
// STATS: vectorize
// STATS-NEXT: (S) 0 prover-resource-outs
// STATS-NEXT: (S) 4 runs-scalar
// STATS-NEXT: (S) 10 runs-vectorized
// STATS-NEXT: (S) 10 vectorized-16B
// STATS-NEXT: (S) 0 vectorized-2B
// STATS-NEXT: (S) 1 vectorized-4B
// STATS-NEXT: (S) 0 vectorized-8B
// STATS-NEXT: (S) 3 vectorized-with-fallback

// bf16 rows of 4096, one row per block: each thread's run of 8 elements is one 16-byte load,
// stored whole into the register buffer.
// CHECK-LABEL: func.func @bf16_rows_4096_copy
// CHECK-NOT: scf.if
// CHECK: scf.for %[[K:.+]] = %{{.+}} to %{{.+}} step %{{.+}} {
// CHECK: %[[V:.+]] = vector.load %arg0[%{{.+}}, %{{.+}}] {alignment = 16 : i64} : memref<?x4096xbf16>, vector<8xbf16>
// CHECK-NEXT: vector.store %[[V]], %{{.+}}[%{{.+}}] : memref<32xbf16, "local">, vector<8xbf16>
// CHECK-NEXT: }
module {
  func.func @bf16_rows_4096_copy(%arg0: memref<?x4096xbf16>) attributes {tile.arg_dims = [["M", 4096]], tile.arg_names = ["X"], tile.entry, tile.symbols = ["M"]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c128 = arith.constant 128 : index
    %c1024 = arith.constant 1024 : index
    %dim = memref.dim %arg0, %c0 : memref<?x4096xbf16>
    gpu.launch blocks(%arg1, %arg2, %arg3) in (%arg7 = %dim, %arg8 = %c1, %arg9 = %c1) threads(%arg4, %arg5, %arg6) in (%arg10 = %c128, %arg11 = %c1, %arg12 = %c1) {
      %alloca = memref.alloca() : memref<32xbf16, "local">
      scf.for %arg13 = %c0 to %c4 step %c1 {
        scf.for %arg14 = %c0 to %c8 step %c1 {
          %0 = arith.muli %arg13, %c1024 : index
          %1 = arith.muli %arg4, %c8 : index
          %2 = arith.addi %0, %1 : index
          %3 = arith.addi %2, %arg14 : index
          %4 = arith.muli %arg13, %c8 : index
          %5 = arith.addi %4, %arg14 : index
          %6 = memref.load %arg0[%arg1, %3] {tile.pad = 0.000000e+00 : bf16} : memref<?x4096xbf16>
          memref.store %6, %alloca[%5] : memref<32xbf16, "local">
        }
      }
      gpu.terminator
    }
    return
  }
}

// -----

// Widening to f32 on the way in, and narrowing back on the way out: one 16-byte load
// whose lanes are extracted, and 8 narrowed values gathered into one 16-byte store.
// CHECK-LABEL: func.func @bf16_rows_4096_widen
// CHECK: %[[V:.+]] = vector.load %arg0[%{{.+}}, %{{.+}}] {alignment = 16 : i64} : memref<?x4096xbf16>, vector<8xbf16>
// CHECK: %[[E0:.+]] = vector.extract %[[V]][0] : bf16 from vector<8xbf16>
// CHECK-NEXT: arith.extf %[[E0]] : bf16 to f32
// CHECK: vector.extract %[[V]][7] : bf16 from vector<8xbf16>
// CHECK: %[[W:.+]] = vector.from_elements %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}} : vector<8xbf16>
// CHECK: vector.store %[[W]], %arg1[%{{.+}}, %{{.+}}] {alignment = 16 : i64} : memref<?x4096xbf16>, vector<8xbf16>
module {
  func.func @bf16_rows_4096_widen(%arg0: memref<?x4096xbf16>, %arg1: memref<?x4096xbf16>) attributes {tile.arg_dims = [["M", 4096], ["M", 4096]], tile.arg_names = ["X", "Y"], tile.entry, tile.symbols = ["M"]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c512 = arith.constant 512 : index
    %dim = memref.dim %arg0, %c0 : memref<?x4096xbf16>
    gpu.launch blocks(%arg2, %arg3, %arg4) in (%arg8 = %dim, %arg9 = %c1, %arg10 = %c1) threads(%arg5, %arg6, %arg7) in (%arg11 = %c512, %arg12 = %c1, %arg13 = %c1) {
      %alloca = memref.alloca() : memref<8xf32, "local">
      %0 = arith.muli %arg5, %c8 : index
      scf.for %arg14 = %c0 to %c8 step %c1 {
        %1 = arith.addi %0, %arg14 : index
        %2 = memref.load %arg0[%arg2, %1] {tile.pad = 0.000000e+00 : bf16} : memref<?x4096xbf16>
        %3 = arith.extf %2 : bf16 to f32
        memref.store %3, %alloca[%arg14] : memref<8xf32, "local">
      }
      scf.for %arg14 = %c0 to %c8 step %c1 {
        %1 = arith.addi %0, %arg14 : index
        %2 = memref.load %alloca[%arg14] : memref<8xf32, "local">
        %3 = arith.truncf %2 : f32 to bf16
        memref.store %3, %arg1[%arg2, %1] : memref<?x4096xbf16>
      }
      gpu.terminator
    }
    return
  }
}

// -----

// Rows of N = 1000 in 1024-wide tiles, feeding a max: a thread's 8 columns are all inside the
// row or all past its end (1000 is a multiple of 8), so each 16-byte vector keeps one guard,
// on its first lane, and a guarded-off vector reads -inf in every lane. Each branch stores its
// vector into the register buffer, so the guard is the copy's last op.
// CHECK-LABEL: func.func @bf16_rows_1000_max
// CHECK: %[[OK:.+]] = arith.cmpi slt, %{{.+}}, %{{.+}} : index
// CHECK-NEXT: scf.if %[[OK]] {
// CHECK-NEXT: %[[L:.+]] = vector.load %arg0[%{{.+}}, %{{.+}}] {alignment = 16 : i64} : memref<?x1000xbf16>, vector<8xbf16>
// CHECK-NEXT: vector.store %[[L]], %[[X:.+]][%[[R:.+]]] : memref<8xbf16, "local">, vector<8xbf16>
// CHECK-NEXT: } else {
// CHECK-NEXT: %[[NEG_INF:.+]] = arith.constant dense<0xFF80> : vector<8xbf16>
// CHECK-NEXT: vector.store %[[NEG_INF]], %[[X]][%[[R]]] : memref<8xbf16, "local">, vector<8xbf16>
// CHECK-NEXT: } {tile.guard}
// CHECK-NEXT: gpu.terminator
module {
  func.func @bf16_rows_1000_max(%arg0: memref<?x1000xbf16>) attributes {tile.arg_dims = [["M", 1000]], tile.arg_names = ["X"], tile.entry, tile.symbols = ["M"]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c128 = arith.constant 128 : index
    %dim = memref.dim %arg0, %c0 : memref<?x1000xbf16>
    gpu.launch blocks(%arg1, %arg2, %arg3) in (%arg7 = %dim, %arg8 = %c1, %arg9 = %c1) threads(%arg4, %arg5, %arg6) in (%arg10 = %c128, %arg11 = %c1, %arg12 = %c1) {
      %alloca = memref.alloca() : memref<8xbf16, "local">
      scf.for %arg13 = %c0 to %c8 step %c1 {
        %0 = arith.muli %arg4, %c8 : index
        %1 = arith.addi %0, %arg13 : index
        %c1000 = arith.constant 1000 : index
        %2 = arith.cmpi slt, %1, %c1000 : index
        %3 = scf.if %2 -> (bf16) {
          %4 = memref.load %arg0[%arg1, %1] {tile.pad = 0xFF80 : bf16} : memref<?x1000xbf16>
          scf.yield %4 : bf16
        } else {
          %cst = arith.constant 0xFF80 : bf16
          scf.yield %cst : bf16
        } {tile.guard}
        memref.store %3, %alloca[%arg13] : memref<8xbf16, "local">
      }
      gpu.terminator
    }
    return
  }
}

// -----

// Rows of N = 1001: a row starts 2002 bytes after the previous one, so no vector wider
// than one element is aligned on odd rows. The run stays scalar, still guarded.
// CHECK-LABEL: func.func @bf16_rows_1001_scalar
// CHECK-NOT: vector.
// CHECK: scf.for
// CHECK: scf.if %{{.+}} -> (bf16) {
// CHECK-NEXT: memref.load %arg0[%{{.+}}, %{{.+}}] {tile.pad = 0.000000e+00 : bf16} : memref<?x1001xbf16>
// CHECK-NOT: vector.
// CHECK: return
module {
  func.func @bf16_rows_1001_scalar(%arg0: memref<?x1001xbf16>) attributes {tile.arg_dims = [["M", 1001]], tile.arg_names = ["X"], tile.entry, tile.symbols = ["M"]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c128 = arith.constant 128 : index
    %dim = memref.dim %arg0, %c0 : memref<?x1001xbf16>
    gpu.launch blocks(%arg1, %arg2, %arg3) in (%arg7 = %dim, %arg8 = %c1, %arg9 = %c1) threads(%arg4, %arg5, %arg6) in (%arg10 = %c128, %arg11 = %c1, %arg12 = %c1) {
      %alloca = memref.alloca() : memref<8xbf16, "local">
      scf.for %arg13 = %c0 to %c8 step %c1 {
        %0 = arith.muli %arg4, %c8 : index
        %1 = arith.addi %0, %arg13 : index
        %c1001 = arith.constant 1001 : index
        %2 = arith.cmpi slt, %1, %c1001 : index
        %3 = scf.if %2 -> (bf16) {
          %4 = memref.load %arg0[%arg1, %1] {tile.pad = 0.000000e+00 : bf16} : memref<?x1001xbf16>
          scf.yield %4 : bf16
        } else {
          %cst = arith.constant 0.000000e+00 : bf16
          scf.yield %cst : bf16
        } {tile.guard}
        memref.store %3, %alloca[%arg13] : memref<8xbf16, "local">
      }
      gpu.terminator
    }
    return
  }
}

// -----

// A vector of any length N: where the last lane is in range the whole vector is, so it loads
// at once; the one vector crossing N falls back to its guarded scalar lanes.
// CHECK-LABEL: func.func @f16_any_length
// CHECK: %[[SEVEN:.+]] = arith.constant 7 : index
// CHECK-NEXT: %[[LAST:.+]] = arith.addi %{{.+}}, %[[SEVEN]] : index
// CHECK: %[[OK:.+]] = arith.cmpi slt, %[[LAST]], %{{.+}} : index
// CHECK-NEXT: scf.if %[[OK]] {
// CHECK-NEXT: %[[L:.+]] = vector.load %arg0[%{{.+}}] {alignment = 16 : i64} : memref<?xf16>, vector<8xf16>
// CHECK-NEXT: vector.store %[[L]], %[[A:.+]][%[[R:.+]]] : memref<8xf16, "local">, vector<8xf16>
// CHECK: } else {
// CHECK-COUNT-8: memref.load %arg0
// CHECK: %[[LANES:.+]] = vector.from_elements
// CHECK-NEXT: vector.store %[[LANES]], %[[A]][%[[R]]] : memref<8xf16, "local">, vector<8xf16>
// CHECK-NEXT: } {tile.guard}
module {
  func.func @f16_any_length(%arg0: memref<?xf16>) attributes {tile.arg_dims = [["N"]], tile.arg_names = ["A"], tile.entry, tile.symbols = ["N"]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c128 = arith.constant 128 : index
    %c1024 = arith.constant 1024 : index
    %dim = memref.dim %arg0, %c0 : memref<?xf16>
    %0 = arith.ceildivui %dim, %c1024 : index
    gpu.launch blocks(%arg1, %arg2, %arg3) in (%arg7 = %0, %arg8 = %c1, %arg9 = %c1) threads(%arg4, %arg5, %arg6) in (%arg10 = %c128, %arg11 = %c1, %arg12 = %c1) {
      %alloca = memref.alloca() : memref<8xf16, "local">
      %1 = arith.muli %arg1, %c1024 : index
      %2 = arith.muli %arg4, %c8 : index
      %3 = arith.addi %1, %2 : index
      scf.for %arg13 = %c0 to %c8 step %c1 {
        %4 = arith.addi %3, %arg13 : index
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
        memref.store %6, %alloca[%arg13] : memref<8xf16, "local">
      }
      gpu.terminator
    }
    return
  }
}

// -----

// Two tensors of one length N, one vector per thread each: both whole-vector conditions read N
// from A, the first tensor N sizes (B's own dim is never read), so cse makes them one value and
// canonicalize merges the two guards: both 16-byte loads issue from one branch.
// CHECK-LABEL: func.func @f16_two_tensors_one_length
// CHECK: gpu.launch
// CHECK-NOT: memref.dim %arg1
// CHECK: %[[NA:.+]] = memref.dim %arg0, %{{.+}} : memref<?xf16>
// CHECK-NEXT: %[[SEVEN_A:.+]] = arith.constant 7 : index
// CHECK-NEXT: %[[LAST_A:.+]] = arith.addi %{{.+}}, %[[SEVEN_A]] : index
// CHECK-NEXT: %[[OK_A:.+]] = arith.cmpi slt, %[[LAST_A]], %[[NA]] : index
// CHECK-NEXT: scf.if %[[OK_A]] {
// CHECK-NEXT: vector.load %arg0
// CHECK-NOT: memref.dim %arg1
// CHECK: vector.from_elements
// CHECK-NEXT: vector.store
// CHECK-NEXT: } {tile.guard}
// CHECK-NOT: memref.dim %arg1
// CHECK: %[[NB:.+]] = memref.dim %arg0, %{{.+}} : memref<?xf16>
// CHECK-NEXT: %[[SEVEN_B:.+]] = arith.constant 7 : index
// CHECK-NEXT: %[[LAST_B:.+]] = arith.addi %{{.+}}, %[[SEVEN_B]] : index
// CHECK-NEXT: %[[OK_B:.+]] = arith.cmpi slt, %[[LAST_B]], %[[NB]] : index
// CHECK-NEXT: scf.if %[[OK_B]] {
// CHECK-NEXT: vector.load %arg1
// CHECK-NOT: memref.dim %arg1
// CHECK: gpu.terminator
module {
  func.func @f16_two_tensors_one_length(%arg0: memref<?xf16>, %arg1: memref<?xf16>) attributes {tile.arg_dims = [["N"], ["N"]], tile.arg_names = ["A", "B"], tile.entry, tile.symbols = ["N"]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c128 = arith.constant 128 : index
    %c1024 = arith.constant 1024 : index
    %dim = memref.dim %arg0, %c0 : memref<?xf16>
    %0 = arith.ceildivui %dim, %c1024 : index
    gpu.launch blocks(%arg2, %arg3, %arg4) in (%arg8 = %0, %arg9 = %c1, %arg10 = %c1) threads(%arg5, %arg6, %arg7) in (%arg11 = %c128, %arg12 = %c1, %arg13 = %c1) {
      %alloca = memref.alloca() : memref<8xf16, "local">
      %alloca_0 = memref.alloca() : memref<8xf16, "local">
      %1 = arith.muli %arg2, %c1024 : index
      %2 = arith.muli %arg5, %c8 : index
      %3 = arith.addi %1, %2 : index
      scf.for %arg14 = %c0 to %c8 step %c1 {
        %4 = arith.addi %3, %arg14 : index
        %c0_1 = arith.constant 0 : index
        %dim_2 = memref.dim %arg0, %c0_1 : memref<?xf16>
        %5 = arith.cmpi slt, %4, %dim_2 : index
        %6 = scf.if %5 -> (f16) {
          %7 = memref.load %arg0[%4] {tile.pad = 0.000000e+00 : f16} : memref<?xf16>
          scf.yield %7 : f16
        } else {
          %cst = arith.constant 0.000000e+00 : f16
          scf.yield %cst : f16
        } {tile.guard}
        memref.store %6, %alloca[%arg14] : memref<8xf16, "local">
      }
      scf.for %arg14 = %c0 to %c8 step %c1 {
        %4 = arith.addi %3, %arg14 : index
        %c0_1 = arith.constant 0 : index
        %dim_2 = memref.dim %arg1, %c0_1 : memref<?xf16>
        %5 = arith.cmpi slt, %4, %dim_2 : index
        %6 = scf.if %5 -> (f16) {
          %7 = memref.load %arg1[%4] {tile.pad = 0.000000e+00 : f16} : memref<?xf16>
          scf.yield %7 : f16
        } else {
          %cst = arith.constant 0.000000e+00 : f16
          scf.yield %cst : f16
        } {tile.guard}
        memref.store %6, %alloca_0[%arg14] : memref<8xf16, "local">
      }
      gpu.terminator
    }
    return
  }
}

// -----

// Rows of a symbolic width N: nothing is known about where a row starts, so the runs stay
// scalar; with T.assume(N % 8 == 0) every row start is 16-byte aligned and they vectorize.
// CHECK-LABEL: func.func @rows_of_unknown_width
// CHECK-NOT: vector.load
// CHECK: memref.load %arg0
// CHECK-NOT: vector.load
// CHECK: return
// CHECK-LABEL: func.func @rows_of_width_assumed_multiple_of_8
// CHECK: vector.load %arg0[%{{.+}}, %{{.+}}] {alignment = 16 : i64} : memref<?x?xbf16>, vector<8xbf16>
module {
  func.func @rows_of_unknown_width(%arg0: memref<?x?xbf16>) attributes {tile.arg_dims = [["M", "N"]], tile.arg_names = ["X"], tile.entry, tile.symbols = ["M", "N"]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c128 = arith.constant 128 : index
    %dim = memref.dim %arg0, %c0 : memref<?x?xbf16>
    gpu.launch blocks(%arg1, %arg2, %arg3) in (%arg7 = %dim, %arg8 = %c1, %arg9 = %c1) threads(%arg4, %arg5, %arg6) in (%arg10 = %c128, %arg11 = %c1, %arg12 = %c1) {
      %alloca = memref.alloca() : memref<8xbf16, "local">
      scf.for %arg13 = %c0 to %c8 step %c1 {
        %0 = arith.muli %arg4, %c8 : index
        %1 = arith.addi %0, %arg13 : index
        %c1_0 = arith.constant 1 : index
        %dim_1 = memref.dim %arg0, %c1_0 : memref<?x?xbf16>
        %2 = arith.cmpi slt, %1, %dim_1 : index
        %3 = scf.if %2 -> (bf16) {
          %4 = memref.load %arg0[%arg1, %1] {tile.pad = 0.000000e+00 : bf16} : memref<?x?xbf16>
          scf.yield %4 : bf16
        } else {
          %cst = arith.constant 0.000000e+00 : bf16
          scf.yield %cst : bf16
        } {tile.guard}
        memref.store %3, %alloca[%arg13] : memref<8xbf16, "local">
      }
      gpu.terminator
    }
    return
  }
  func.func @rows_of_width_assumed_multiple_of_8(%arg0: memref<?x?xbf16>) attributes {tile.arg_dims = [["M", "N"]], tile.arg_names = ["X"], tile.entry, tile.symbols = ["M", "N"]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c128 = arith.constant 128 : index
    %dim = memref.dim %arg0, %c0 : memref<?x?xbf16>
    %dim_0 = memref.dim %arg0, %c1 : memref<?x?xbf16>
    %0 = arith.remsi %dim_0, %c8 : index
    %1 = arith.cmpi eq, %0, %c0 : index
    "tile.assume"(%1) {expr = "N % 8 == 0"} : (i1) -> ()
    gpu.launch blocks(%arg1, %arg2, %arg3) in (%arg7 = %dim, %arg8 = %c1, %arg9 = %c1) threads(%arg4, %arg5, %arg6) in (%arg10 = %c128, %arg11 = %c1, %arg12 = %c1) {
      %alloca = memref.alloca() : memref<8xbf16, "local">
      scf.for %arg13 = %c0 to %c8 step %c1 {
        %2 = arith.muli %arg4, %c8 : index
        %3 = arith.addi %2, %arg13 : index
        %c1_1 = arith.constant 1 : index
        %dim_2 = memref.dim %arg0, %c1_1 : memref<?x?xbf16>
        %4 = arith.cmpi slt, %3, %dim_2 : index
        %5 = scf.if %4 -> (bf16) {
          %6 = memref.load %arg0[%arg1, %3] {tile.pad = 0.000000e+00 : bf16} : memref<?x?xbf16>
          scf.yield %6 : bf16
        } else {
          %cst = arith.constant 0.000000e+00 : bf16
          scf.yield %cst : bf16
        } {tile.guard}
        memref.store %5, %alloca[%arg13] : memref<8xbf16, "local">
      }
      gpu.terminator
    }
    return
  }
}

// -----

// A gather: the column base comes from a register the run itself reads, so `base + v` is not
// contiguous (base differs per iteration) although the expression looks it. It stays scalar.
// CHECK-LABEL: func.func @gather_stays_scalar
// CHECK-NOT: vector.
// CHECK: scf.for
// CHECK: memref.load %arg0[%{{.+}}, %{{.+}}] {tile.pad = 0.000000e+00 : bf16} : memref<?x4096xbf16>
module {
  func.func @gather_stays_scalar(%arg0: memref<?x4096xbf16>, %arg1: memref<8xindex, "local">) attributes {tile.arg_dims = [["M", 4096], [8]], tile.arg_names = ["X", "cols"], tile.entry, tile.symbols = ["M"]} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c128 = arith.constant 128 : index
    %dim = memref.dim %arg0, %c0 : memref<?x4096xbf16>
    gpu.launch blocks(%arg2, %arg3, %arg4) in (%arg8 = %dim, %arg9 = %c1, %arg10 = %c1) threads(%arg5, %arg6, %arg7) in (%arg11 = %c128, %arg12 = %c1, %arg13 = %c1) {
      %alloca = memref.alloca() : memref<8xbf16, "local">
      scf.for %arg14 = %c0 to %c8 step %c1 {
        %0 = memref.load %arg1[%arg14] : memref<8xindex, "local">
        %1 = arith.muli %0, %c8 : index
        %2 = arith.addi %1, %arg14 : index
        %c0_0 = arith.constant 0 : index
        %3 = arith.cmpi sge, %2, %c0_0 : index
        %c4096 = arith.constant 4096 : index
        %4 = arith.cmpi slt, %2, %c4096 : index
        %5 = arith.andi %3, %4 : i1
        %6 = scf.if %5 -> (bf16) {
          %7 = memref.load %arg0[%arg2, %2] {tile.pad = 0.000000e+00 : bf16} : memref<?x4096xbf16>
          scf.yield %7 : bf16
        } else {
          %cst = arith.constant 0.000000e+00 : bf16
          scf.yield %cst : bf16
        } {tile.guard}
        memref.store %6, %alloca[%arg14] : memref<8xbf16, "local">
      }
      gpu.terminator
    }
    return
  }
}

// -----

// Shared-memory runs are vectorized as global ones are: an epilogue converts each thread's pairs of
// accumulator registers into one 4-byte store of a shared tile, then copies the tile out in 16-byte rows
// (a shared vector load feeding the global vector store). A pair starting at an odd column (misaligned,
// and past the row's end at the last thread) stays scalar.
// CHECK-LABEL: func.func @shared_epilogue_runs
// CHECK: %[[P:.+]] = vector.from_elements %{{.+}}, %{{.+}} : vector<2xbf16>
// CHECK: vector.store %[[P]], %{{.+}}[%{{.+}}, %{{.+}}] {alignment = 4 : i64} : memref<64x256xbf16, "shared">, vector<2xbf16>
// CHECK: %[[R:.+]] = vector.load %{{.+}}[%{{.+}}, %{{.+}}] {alignment = 16 : i64} : memref<64x256xbf16, "shared">, vector<8xbf16>
// CHECK: vector.store %{{.+}}, %arg0[%{{.+}}, %{{.+}}] {alignment = 16 : i64} : memref<64x256xbf16>, vector<8xbf16>
// CHECK: scf.for
// CHECK: memref.store %{{.+}}, %{{.+}}[%{{.+}}, %{{.+}}] : memref<64x256xbf16, "shared">
module {
  func.func @shared_epilogue_runs(%arg0: memref<64x256xbf16>) attributes {tile.arg_names = ["C"], tile.entry} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %c128 = arith.constant 128 : index
    gpu.launch blocks(%arg1, %arg2, %arg3) in (%arg7 = %c1, %arg8 = %c1, %arg9 = %c1) threads(%arg4, %arg5, %arg6) in (%arg10 = %c128, %arg11 = %c1, %arg12 = %c1) {
      %regs = memref.alloca() : memref<2xf32, "local">
      %tile = memref.alloca() {name = "C_s"} : memref<64x256xbf16, "shared">
      %row = arith.divui %arg4, %c2 : index
      %col = arith.muli %arg4, %c2 : index
      scf.for %l = %c0 to %c2 step %c1 {
        %x = memref.load %regs[%l] : memref<2xf32, "local">
        %y = arith.truncf %x : f32 to bf16
        %c = arith.addi %col, %l : index
        memref.store %y, %tile[%row, %c] : memref<64x256xbf16, "shared">
      }
      gpu.barrier
      %r = arith.divui %arg4, %c32 : index
      %lane = arith.remui %arg4, %c32 : index
      %start = arith.muli %lane, %c8 : index
      scf.for %e = %c0 to %c8 step %c1 {
        %c = arith.addi %start, %e : index
        %v = memref.load %tile[%r, %c] : memref<64x256xbf16, "shared">
        memref.store %v, %arg0[%r, %c] : memref<64x256xbf16>
      }
      %odd = arith.addi %col, %c1 : index
      scf.for %l = %c0 to %c2 step %c1 {
        %x = memref.load %regs[%l] : memref<2xf32, "local">
        %y = arith.truncf %x : f32 to bf16
        %c = arith.addi %odd, %l : index
        memref.store %y, %tile[%row, %c] : memref<64x256xbf16, "shared">
      }
      gpu.terminator
    }
    return
  }
}
