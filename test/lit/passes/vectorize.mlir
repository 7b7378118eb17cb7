// vectorize: per-thread contiguous runs become vector loads/stores of up to 16 bytes when Z3 proves
// them contiguous, in range, aligned, and their guard whole; otherwise they stay scalar.
// RUN: tile-opt %s --split-input-file -p insert-guards,eliminate-guards,vectorize | FileCheck %s
// RUN: tile-opt %s --split-input-file -p insert-guards,eliminate-guards,vectorize --pass-statistics 2>&1 >/dev/null | FileCheck %s --check-prefix=STATS
// RUN: tile-opt %s --split-input-file -p insert-guards,eliminate-guards,vectorize,canonicalize,cse,canonicalize | FileCheck %s --check-prefix=MERGED

// Over the nine functions below.
// STATS: vectorize
// STATS-NEXT: (S) 0 prover-resource-outs
// STATS-NEXT: (S) 3 runs-scalar
// STATS-NEXT: (S) 8 runs-vectorized
// STATS-NEXT: (S) 8 vectorized-16B
// STATS-NEXT: (S) 0 vectorized-2B
// STATS-NEXT: (S) 0 vectorized-4B
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
func.func @bf16_rows_4096_copy(%X: memref<?x4096xbf16>) attributes {tile.entry, tile.arg_names = ["X"], tile.arg_dims = [["M", 4096]], tile.symbols = ["M"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %c1024 = arith.constant 1024 : index
  %M = memref.dim %X, %c0 : memref<?x4096xbf16>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %M, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %x = memref.alloca() : memref<32xbf16, "local">
    scf.for %k = %c0 to %c4 step %c1 {
      scf.for %v = %c0 to %c8 step %c1 {
        %a = arith.muli %k, %c1024 : index
        %b = arith.muli %tx, %c8 : index
        %ab = arith.addi %a, %b : index
        %col = arith.addi %ab, %v : index
        %r = arith.muli %k, %c8 : index
        %reg = arith.addi %r, %v : index
        %val = memref.load %X[%bx, %col] {tile.pad = 0.0 : bf16} : memref<?x4096xbf16>
        memref.store %val, %x[%reg] : memref<32xbf16, "local">
      }
    }
    gpu.terminator
  }
  return
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
func.func @bf16_rows_4096_widen(%X: memref<?x4096xbf16>, %Y: memref<?x4096xbf16>) attributes {tile.entry, tile.arg_names = ["X", "Y"], tile.arg_dims = [["M", 4096], ["M", 4096]], tile.symbols = ["M"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c512 = arith.constant 512 : index
  %M = memref.dim %X, %c0 : memref<?x4096xbf16>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %M, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c512, %sy = %c1, %sz = %c1) {
    %x = memref.alloca() : memref<8xf32, "local">
    %b = arith.muli %tx, %c8 : index
    scf.for %v = %c0 to %c8 step %c1 {
      %col = arith.addi %b, %v : index
      %val = memref.load %X[%bx, %col] {tile.pad = 0.0 : bf16} : memref<?x4096xbf16>
      %w = arith.extf %val : bf16 to f32
      memref.store %w, %x[%v] : memref<8xf32, "local">
    }
    scf.for %v = %c0 to %c8 step %c1 {
      %col = arith.addi %b, %v : index
      %w = memref.load %x[%v] : memref<8xf32, "local">
      %n = arith.truncf %w : f32 to bf16
      memref.store %n, %Y[%bx, %col] : memref<?x4096xbf16>
    }
    gpu.terminator
  }
  return
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
func.func @bf16_rows_1000_max(%X: memref<?x1000xbf16>) attributes {tile.entry, tile.arg_names = ["X"], tile.arg_dims = [["M", 1000]], tile.symbols = ["M"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %M = memref.dim %X, %c0 : memref<?x1000xbf16>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %M, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %x = memref.alloca() : memref<8xbf16, "local">
    scf.for %v = %c0 to %c8 step %c1 {
      %b = arith.muli %tx, %c8 : index
      %col = arith.addi %b, %v : index
      %val = memref.load %X[%bx, %col] {tile.pad = 0xFF80 : bf16} : memref<?x1000xbf16>
      memref.store %val, %x[%v] : memref<8xbf16, "local">
    }
    gpu.terminator
  }
  return
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
func.func @bf16_rows_1001_scalar(%X: memref<?x1001xbf16>) attributes {tile.entry, tile.arg_names = ["X"], tile.arg_dims = [["M", 1001]], tile.symbols = ["M"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %M = memref.dim %X, %c0 : memref<?x1001xbf16>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %M, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %x = memref.alloca() : memref<8xbf16, "local">
    scf.for %v = %c0 to %c8 step %c1 {
      %b = arith.muli %tx, %c8 : index
      %col = arith.addi %b, %v : index
      %val = memref.load %X[%bx, %col] {tile.pad = 0.0 : bf16} : memref<?x1001xbf16>
      memref.store %val, %x[%v] : memref<8xbf16, "local">
    }
    gpu.terminator
  }
  return
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
func.func @f16_any_length(%A: memref<?xf16>) attributes {tile.entry, tile.arg_names = ["A"], tile.arg_dims = [["N"]], tile.symbols = ["N"]} {
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
    %base = arith.muli %bx, %c1024 : index
    %t = arith.muli %tx, %c8 : index
    %bt = arith.addi %base, %t : index
    scf.for %v = %c0 to %c8 step %c1 {
      %i = arith.addi %bt, %v : index
      %val = memref.load %A[%i] {tile.pad = 0.0 : f16} : memref<?xf16>
      memref.store %val, %a[%v] : memref<8xf16, "local">
    }
    gpu.terminator
  }
  return
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
// MERGED-LABEL: func.func @f16_two_tensors_one_length
// MERGED: scf.if %{{.+}} {
// MERGED-NEXT: %[[A:.+]] = vector.load %arg0[%[[I:.+]]] {alignment = 16 : i64} : memref<?xf16>, vector<8xf16>
// MERGED-NEXT: vector.store %[[A]], %{{.+}}[%{{.+}}] : memref<8xf16, "local">, vector<8xf16>
// MERGED-NEXT: %[[B:.+]] = vector.load %arg1[%[[I]]] {alignment = 16 : i64} : memref<?xf16>, vector<8xf16>
// MERGED-NEXT: vector.store %[[B]], %{{.+}}[%{{.+}}] : memref<8xf16, "local">, vector<8xf16>
// MERGED-NEXT: } else {
// MERGED-NOT: vector.load
// MERGED: gpu.terminator
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
func.func @rows_of_unknown_width(%X: memref<?x?xbf16>) attributes {tile.entry, tile.arg_names = ["X"], tile.arg_dims = [["M", "N"]], tile.symbols = ["M", "N"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %M = memref.dim %X, %c0 : memref<?x?xbf16>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %M, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %x = memref.alloca() : memref<8xbf16, "local">
    scf.for %v = %c0 to %c8 step %c1 {
      %b = arith.muli %tx, %c8 : index
      %col = arith.addi %b, %v : index
      %val = memref.load %X[%bx, %col] {tile.pad = 0.0 : bf16} : memref<?x?xbf16>
      memref.store %val, %x[%v] : memref<8xbf16, "local">
    }
    gpu.terminator
  }
  return
}
func.func @rows_of_width_assumed_multiple_of_8(%X: memref<?x?xbf16>) attributes {tile.entry, tile.arg_names = ["X"], tile.arg_dims = [["M", "N"]], tile.symbols = ["M", "N"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %M = memref.dim %X, %c0 : memref<?x?xbf16>
  %N = memref.dim %X, %c1 : memref<?x?xbf16>
  %rem = arith.remsi %N, %c8 : index
  %ok = arith.cmpi eq, %rem, %c0 : index
  "tile.assume"(%ok) {expr = "N % 8 == 0"} : (i1) -> ()
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %M, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %x = memref.alloca() : memref<8xbf16, "local">
    scf.for %v = %c0 to %c8 step %c1 {
      %b = arith.muli %tx, %c8 : index
      %col = arith.addi %b, %v : index
      %val = memref.load %X[%bx, %col] {tile.pad = 0.0 : bf16} : memref<?x?xbf16>
      memref.store %val, %x[%v] : memref<8xbf16, "local">
    }
    gpu.terminator
  }
  return
}

// -----

// A gather: the column base comes from a register the run itself reads, so `base + v` is not
// contiguous (base differs per iteration) although the expression looks it. It stays scalar.
// CHECK-LABEL: func.func @gather_stays_scalar
// CHECK-NOT: vector.
// CHECK: scf.for
// CHECK: memref.load %arg0[%{{.+}}, %{{.+}}] {tile.pad = 0.000000e+00 : bf16} : memref<?x4096xbf16>
func.func @gather_stays_scalar(%X: memref<?x4096xbf16>, %cols: memref<8xindex, "local">) attributes {tile.entry, tile.arg_names = ["X", "cols"], tile.arg_dims = [["M", 4096], [8]], tile.symbols = ["M"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c128 = arith.constant 128 : index
  %M = memref.dim %X, %c0 : memref<?x4096xbf16>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %M, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %x = memref.alloca() : memref<8xbf16, "local">
    scf.for %v = %c0 to %c8 step %c1 {
      %chunk = memref.load %cols[%v] : memref<8xindex, "local">
      %base = arith.muli %chunk, %c8 : index
      %col = arith.addi %base, %v : index
      %val = memref.load %X[%bx, %col] {tile.pad = 0.0 : bf16} : memref<?x4096xbf16>
      memref.store %val, %x[%v] : memref<8xbf16, "local">
    }
    gpu.terminator
  }
  return
}
