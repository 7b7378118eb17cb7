// simulate-threads on wgmma (backends/cpu/simulate/warpgroup.py): descriptors become the ISA's 64-bit
// values, the wgmma is a phase of its own computing each thread's D registers from the ISA's tables,
// fences, commits and waits become per-thread counters, and each rule has its error site.
// RUN: tile-opt %s -p "simulate-threads{check-races=false},canonicalize,cse" | FileCheck %s

func.func @k(%C: memref<128x4xf32>) attributes {tile.entry, tile.arg_names = ["C"], tile.arg_dims = [[128, 4]], tile.symbols = []} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : bf16
  %fzero = arith.constant 0.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %a = memref.alloca() {name = "A_s", tile.swizzle = 128 : i64} : memref<4096xbf16, "shared">
    %b = memref.alloca() {name = "B_s", tile.swizzle = 32 : i64} : memref<128xbf16, "shared">
    %acc = memref.alloca() {name = "C_f"} : memref<4xf32, "local">
    memref.store %zero, %a[%tx] : memref<4096xbf16, "shared">
    memref.store %fzero, %acc[%c0] : memref<4xf32, "local">
    "tile.fence_proxy_async"() : () -> ()
    gpu.barrier
    %da = "tile.wgmma_desc"(%a, %c64) {leading_bytes = 16 : i64, stride_bytes = 1024 : i64, swizzle = 128 : i64} : (memref<4096xbf16, "shared">, index) -> i64
    %db = "tile.wgmma_desc"(%b, %c0) {leading_bytes = 16 : i64, stride_bytes = 256 : i64, swizzle = 32 : i64} : (memref<128xbf16, "shared">, index) -> i64
    "tile.wgmma_fence"() : () -> ()
    "tile.wgmma"(%da, %db, %acc) {n = 8 : i64, operand_type = "bf16", c_offset = 0 : i64, trans_a = false, trans_b = false} : (i64, i64, memref<4xf32, "local">) -> ()
    "tile.wgmma_commit"() : () -> ()
    "tile.wgmma_wait"() {pending = 0 : i64} : () -> ()
    %v = memref.load %acc[%c0] : memref<4xf32, "local">
    memref.store %v, %C[%tx, %c0] : memref<128x4xf32>
    gpu.terminator
  }
  return
}


// The ISA's tables as constant globals: the D fragment and the canonical offset terms of each operand.
// CHECK-DAG: memref.global "private" constant @__tile_sim_wgmma_m64n8k16_d : memref<128x4x2xi64>
// CHECK-DAG: memref.global "private" constant @__tile_sim_wgmma_k_major_128b_64x16_e2 : memref<64x16x3xi64>
// CHECK-DAG: memref.global "private" constant @__tile_sim_wgmma_k_major_32b_8x16_e2 : memref<8x16x3xi64>
// CHECK-LABEL: func.func @k(
// CHECK-SAME: tile.sim_sites = [
// Writes of a wgmma operand (line 18) and accesses of its accumulator (19, 28) are checked against the
// wgmma (line 25) in flight; the descriptor (22) against misalignment; the wgmma against the kernel's end,
// a missing wgmma fence and a missing proxy fence.
// CHECK-SAME: "data race on shared buffer 'A_s' element {index} in block {block}: thread {thread} writes it at {{[^"]+}}simulate-threads-wgmma.mlir:18:5 while a tile.wgmma of warpgroup {other} reading it is in flight
// CHECK-SAME: "thread {thread} of block {block} writes accumulator register C_f[{index}] at {{[^"]+}}:19:5 while tile.wgmma #{other} into it has not been retired by a tile.wgmma_wait (#0 at {{[^"]+}}:25:5)"
// CHECK-SAME: "thread {thread} of block {block} reads accumulator register C_f[{index}] at {{[^"]+}}:28:10 while
// CHECK-SAME: "tile.wgmma_desc at {{[^"]+}}:22:11: thread {thread} of block {block} described a matrix starting at byte {index} of shared buffer 'A_s'
// CHECK-SAME: "tile.wgmma at {{[^"]+}}:25:5: thread {thread} of block {block} issued it (batch {index}) and the kernel ended before a tile.wgmma_commit closed its batch"
// CHECK-SAME: "tile.wgmma at {{[^"]+}}:25:5: thread {thread} of block {block} (warpgroup {other}) issued it before any tile.wgmma_fence
// CHECK-SAME: "tile.wgmma at {{[^"]+}}:25:5 (thread {thread} of block {block}) reads element {index} of shared buffer 'A_s', which thread {other} wrote through the generic proxy with no tile.fence_proxy_async after the write
// Start field (byte 128) >> 4 = 8, LBO 16 >> 4 at bit 16, SBO 1024 >> 4 at bit 32, 128-byte swizzle (1) at bit 62;
// B: SBO 256 >> 4, 32-byte swizzle (3).
// CHECK-DAG: %[[DESC_A:.+]] = arith.constant 4611686293305360392 : i64
// CHECK-DAG: %[[DESC_B:.+]] = arith.constant -4611685949707845632 : i64
// The phase after the barrier: descriptors kept per thread, the fence counted.
// CHECK: } {tile.sim_thread_loop}
// CHECK: scf.for %[[T:.+]] = %c0 to %c128 step %c1 {
// CHECK-NEXT: memref.store %[[DESC_A]], %{{.+}}[%[[T]]] : memref<128xi64>
// CHECK-NEXT: memref.store %[[DESC_B]], %{{.+}}[%[[T]]] : memref<128xi64>
// CHECK: } {tile.sim_thread_loop}
// The wgmma alone in its phase: warpgroup of the thread, its descriptors against the first thread's, the
// registers of D from the fragment table, K = 16 products per register.
// CHECK: scf.for %[[W:.+]] = %c0 to %c128 step %c1 {
// CHECK: arith.remui %[[W]], %c128 : index
// CHECK: memref.get_global @__tile_sim_wgmma_k_major_128b_64x16_e2
// CHECK: memref.get_global @__tile_sim_wgmma_m64n8k16_d
// CHECK: scf.for %{{.+}} = %c0 to %c4 step %c1 {
// CHECK: scf.for %{{.+}} = %c0 to %c16 step %c1 iter_args(%[[ACC:.+]] = %{{.+}}) -> (f32) {
// CHECK: %[[PRODUCT:.+]] = arith.mulf %{{.+}}, %{{.+}} : f32
// CHECK-NEXT: %[[SUM:.+]] = arith.addf %[[ACC]], %[[PRODUCT]] : f32
// CHECK-NEXT: scf.yield %[[SUM]] : f32
// CHECK: } {tile.sim_thread_loop}
// CHECK-NOT: tile.wgmma
// CHECK-NOT: tile.fence_proxy_async
