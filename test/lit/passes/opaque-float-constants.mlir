// opaque-float-constants: every float llvm.mlir.constant as its integer bits, frozen and bitcast
// (llvmlite's older LLVM parser rejects the float forms the newer printer writes).
// RUN: tile-opt %s -p opaque-float-constants | FileCheck %s

// 0.1f is 0x3DCCCCCD; f16 1.0 and -2.0 are 0x3C00 and 0xC000 (signed: -16384); the quiet NaN 0x7FC00000.
// CHECK-LABEL: llvm.func @consts(
// CHECK: %[[A:.+]] = llvm.mlir.constant(1036831949 : i32) : i32
// CHECK: %[[AF:.+]] = llvm.freeze %[[A]] : i32
// CHECK: %[[AB:.+]] = llvm.bitcast %[[AF]] : i32 to f32
// CHECK: %[[B:.+]] = llvm.mlir.constant(dense<[15360, -16384]> : vector<2xi16>) : vector<2xi16>
// CHECK: %[[BF:.+]] = llvm.freeze %[[B]] : vector<2xi16>
// CHECK: llvm.bitcast %[[BF]] : vector<2xi16> to vector<2xf16>
// CHECK: %[[C:.+]] = llvm.mlir.constant(2143289344 : i32) : i32
// CHECK: %[[CF:.+]] = llvm.freeze %[[C]] : i32
// CHECK: %[[CB:.+]] = llvm.bitcast %[[CF]] : i32 to f32
// Integer constants stay as they are.
// CHECK: llvm.mlir.constant(3 : i32) : i32
// CHECK: llvm.fadd %[[AB]], %[[CB]] : f32
llvm.func @consts() -> f32 {
  %a = llvm.mlir.constant(1.000000e-01 : f32) : f32
  %b = llvm.mlir.constant(dense<[1.0, -2.0]> : vector<2xf16>) : vector<2xf16>
  %c = llvm.mlir.constant(0x7FC00000 : f32) : f32
  %i = llvm.mlir.constant(3 : i32) : i32
  %s = llvm.fadd %a, %c : f32
  llvm.return %s : f32
}
