// keep-out-of-line: an llvm.func marked llvm.noinline (the run-time checks' recorder) gets LLVM's
// no_inline, so llvmlite's O2 keeps it one call instead of copying it into every check.
// RUN: tile-opt %s -p keep-out-of-line | FileCheck %s

// CHECK: llvm.func @record() attributes {no_inline} {
// CHECK-NOT: llvm.noinline
// CHECK: llvm.func @kernel() {
module {
  llvm.func @record() attributes {llvm.noinline} {
    llvm.return
  }
  llvm.func @kernel() {
    llvm.call @record() : () -> ()
    llvm.return
  }
}
