// simulate-threads: a gpu.launch becomes loops over blocks and, between sync points,
// loops over the block's threads (tile.sim_thread_loop), with run-time checks.
// RUN: tile-opt %s -p "simulate-threads{check-races=false},canonicalize,cse" | FileCheck %s
// RUN: tile-opt %s -p simulate-threads,canonicalize,cse | FileCheck %s --check-prefix=RACES
// RUN: tile-opt %s -p "simulate-threads{out-of-range=pad check-races=false},canonicalize,cse" | FileCheck %s --check-prefix=PAD
// RUN: tile-opt %S/Inputs/simulate-threads-errors.mlir --split-input-file --verify-diagnostics -p simulate-threads

// The function gains a status argument; each error site is described in tile.sim_sites.
// CHECK-LABEL: func.func @k(
// CHECK-SAME: %[[X:.+]]: memref<?xf32>, %[[Y:.+]]: memref<?xf32>, %[[STATUS:.+]]: memref<8xi64>)
// CHECK-SAME: tile.sim_sites = ["out-of-range read of global tensor 'X' at
// CHECK-SAME: "read of never-written element {index:2} of local buffer 'regs' (2) at {{[^"]+}}: the thread had not stored to it"
// CHECK-SAME: "read of never-written element {index:64} of shared buffer 'sh' (64) at {{[^"]+}}: no thread of the block had stored to it"
// Values live across the shuffle and the barrier get per-thread arrays; the local
// buffer gets one copy per thread; the shared one is a plain buffer. Each has a
// never-written byte per element (per thread for the local one).
// CHECK-DAG: %[[SH_W:.+]] = memref.alloc() {alignment = 64 : i64} : memref<64xi8>
// CHECK-DAG: %[[REGS_W:.+]] = memref.alloc() {alignment = 64 : i64} : memref<64x2xi8>
// CHECK-DAG: %[[I_ACROSS:.+]] = memref.alloc() {alignment = 64 : i64} : memref<64xindex>
// CHECK-DAG: %[[V_ACROSS:.+]] = memref.alloc() {alignment = 64 : i64} : memref<64xf32>
// CHECK-DAG: %[[SH:.+]] = memref.alloc() {alignment = 64 : i64, name = "sh"} : memref<64xf32>
// CHECK-DAG: %[[REGS:.+]] = memref.alloc() {alignment = 64 : i64, name = "regs"} : memref<64x2xf32>
// CHECK: scf.for %[[BX:.+]] = %c0 to %{{.+}} step %c1 {
// Block start: buffers poisoned, a new barrier interval, nothing written.
// CHECK: memref.store %cst, %[[REGS]]
// CHECK: memref.store %cst, %[[SH]]
// CHECK: memref.store %c0_i8, %[[REGS_W]]
// CHECK: memref.store %c0_i8, %[[SH_W]]
// Phase 1 (up to the shuffle): the global read is bounds-checked; the value the
// shuffle exchanges is stored per thread.
// CHECK: scf.for %[[T1:.+]] = %c0 to %c64 step %c1 {
// CHECK: memref.store %[[I:.+]], %[[I_ACROSS]][%[[T1]]]
// CHECK: %[[V:.+]] = scf.if %{{.+}} -> (f32) {
// CHECK-NEXT: memref.load %[[X]][%[[I]]]
// CHECK: } else {
// CHECK: func.call @k__record_error(%[[STATUS]]
// CHECK: memref.store %[[V]], %[[V_ACROSS]][%[[T1]]]
// CHECK: memref.store %c1_i8, %[[REGS_W]][%[[T1]], %c0]
// CHECK-NEXT: memref.store %[[V]], %[[REGS]][%[[T1]], %c0]
// CHECK: } {tile.sim_thread_loop}
// Phase 2 (the shuffle up to the barrier): xor partner lane, own value when invalid.
// CHECK: scf.for %[[T2:.+]] = %c0 to %c64 step %c1 {
// CHECK: %[[LANE:.+]] = arith.remui %[[T2]], %c32
// CHECK: %[[SRC_LANE:.+]] = arith.xori %[[LANE]], %c1
// CHECK: %[[PARTNER:.+]] = arith.select %{{.+}}, %{{.+}}, %[[T2]] : index
// CHECK: %[[THEIRS:.+]] = memref.load %[[V_ACROSS]][%[[PARTNER]]]
// CHECK: %[[MINE:.+]] = memref.load %[[V_ACROSS]][%[[T2]]]
// CHECK: arith.addf %[[MINE]], %[[THEIRS]]
// CHECK: } {tile.sim_thread_loop}
// The barrier: the next barrier interval.
// CHECK: arith.addi %{{.+}}, %c1_i64 : i64
// Phase 3: per-thread copies read back, each checked to have been written.
// CHECK: scf.for %[[T3:.+]] = %c0 to %c64 step %c1 {
// CHECK: memref.load %[[REGS]][%[[T3]], %c0]
// CHECK-NEXT: %[[WRITTEN:.+]] = memref.load %[[REGS_W]][%[[T3]], %c0]
// CHECK-NEXT: arith.cmpi eq, %[[WRITTEN]], %c0_i8 : i8
// CHECK: memref.load %[[I_ACROSS]][%[[T3]]]
// CHECK: } {tile.sim_thread_loop}

// With race checks, every shared element has a writer and a reader shadow.
// RACES-LABEL: func.func @k(
// RACES-SAME: data race on shared buffer 'sh'
// RACES-COUNT-2: memref.alloc() {alignment = 64 : i64} : memref<64xi64>

// In pad mode an out-of-range global read yields its tile.pad and records nothing.
// PAD-LABEL: func.func @k(
// PAD: %[[SEVEN:.+]] = arith.constant 7.000000e+00 : f32
// PAD: scf.if %{{.+}} -> (f32) {
// PAD-NEXT: memref.load %arg0
// PAD-NEXT: scf.yield
// PAD-NEXT: } else {
// PAD-NEXT: scf.yield %[[SEVEN]] : f32
func.func @k(%X: memref<?xf32>, %Y: memref<?xf32>) attributes {tile.arg_names = ["X", "Y"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %w = arith.constant 32 : i32
  %o = arith.constant 1 : i32
  %G = memref.dim %Y, %c0 : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %G, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %regs = memref.alloca() {name = "regs"} : memref<2xf32, "local">
    %sh = memref.alloca() {name = "sh"} : memref<64xf32, "shared">
    %base = arith.muli %bx, %c64 : index
    %i = arith.addi %base, %tx : index
    %v = memref.load %X[%i] {tile.pad = 7.0 : f32} : memref<?xf32>
    memref.store %v, %regs[%c0] : memref<2xf32, "local">
    %s, %valid = gpu.shuffle xor %v, %o, %w : f32
    %p = arith.addf %v, %s : f32
    memref.store %p, %sh[%tx] : memref<64xf32, "shared">
    gpu.barrier
    %r = memref.load %regs[%c0] : memref<2xf32, "local">
    %q = memref.load %sh[%c0] : memref<64xf32, "shared">
    %t = arith.addf %r, %q : f32
    memref.store %t, %Y[%i] : memref<?xf32>
    gpu.terminator
  }
  return
}

// A memref argument in an on-chip space (thread-level IR may have one) loses the space in the signature as
// well as in the body, so the output verifies (found by test_fuzz_ir_passes: the block argument and the
// function type disagreed).
// CHECK-LABEL: func.func @local_argument(
// CHECK-SAME: %{{.+}}: memref<?xf32>, %{{.+}}: memref<8xindex>, %{{.+}}: memref<8xi64>)
// CHECK-NOT: "local"
// CHECK: return
func.func @local_argument(%X: memref<?xf32>, %cols: memref<8xindex, "local">) attributes {tile.entry, tile.arg_names = ["X", "cols"], tile.arg_dims = [["M"], [8]], tile.symbols = ["M"]} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %col = memref.load %cols[%tx] : memref<8xindex, "local">
    %v = arith.index_cast %col : index to i32
    %f = arith.sitofp %v : i32 to f32
    memref.store %f, %X[%tx] : memref<?xf32>
    gpu.terminator
  }
  return
}
