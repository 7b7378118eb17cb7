// Our passes and upstream passes in one pipeline, in both spellings, and the reports.
// RUN: tile-opt %s -p test-diagnostics,canonicalize | FileCheck %s
// RUN: tile-opt %s --pass-pipeline='builtin.module(test-diagnostics{fail-fast=false}, func.func(canonicalize, cse))' | FileCheck %s
// RUN: tile-opt %s -o %t -p test-diagnostics,canonicalize,test-diagnostics --pass-statistics --mlir-timing 2>&1 | FileCheck %s --check-prefix=REPORT
// RUN: tile-opt %s -o %t -p test-diagnostics,canonicalize --mlir-print-ir-after-all 2>&1 | FileCheck %s --check-prefix=AFTER-ALL
// RUN: tile-opt %s -o %t -p 'test-diagnostics,func.func(canonicalize)' --mlir-print-ir-before=canonicalize 2>&1 | FileCheck %s --check-prefix=BEFORE
// RUN: tile-opt %s -o %t -p test-diagnostics --mlir-print-ir-after=test-diagnostics --mlir-print-debuginfo 2>&1 | FileCheck %s --check-prefix=DEBUGINFO

// CHECK-LABEL: func.func @fold
// CHECK-NEXT: %[[C:.+]] = arith.constant 5 : i32
// CHECK-NEXT: return %[[C]] : i32
func.func @fold() -> i32 attributes {test.statistic = "functions"} {
  %0 = arith.constant {test.statistic = "constants"} 2 : i32
  %1 = arith.constant {test.statistic = "constants"} 3 : i32
  %2 = arith.addi %0, %1 : i32
  return %2 : i32
}

// REPORT: Execution time report
// REPORT: Parser
// REPORT-NEXT: test-diagnostics
// REPORT-NEXT: canonicalize
// REPORT-NEXT: test-diagnostics
// REPORT-NEXT: Output
// REPORT-NEXT: Total
// Counters add up over both runs of the pass; the second run sees the folded constant only.
// REPORT: Pass statistics report
// REPORT: test-diagnostics
// REPORT-NEXT: (S) 2 constants - ops carrying this test.statistic
// REPORT-NEXT: (S) 2 functions - ops carrying this test.statistic

// AFTER-ALL: // -----// IR Dump After test-diagnostics //----- //
// AFTER-ALL: arith.addi
// AFTER-ALL: // -----// IR Dump After canonicalize //----- //
// AFTER-ALL-NOT: arith.addi
// AFTER-ALL: arith.constant 5 : i32

// BEFORE-NOT: IR Dump Before test-diagnostics
// BEFORE: // -----// IR Dump Before func.func(canonicalize) //----- //
// BEFORE: arith.addi

// DEBUGINFO: IR Dump After test-diagnostics
// DEBUGINFO: arith.addi {{.*}} loc(#[[LOC:loc[0-9]*]])
// DEBUGINFO: #[[LOC]] = loc("{{.*}}pipeline.mlir":15:8)
