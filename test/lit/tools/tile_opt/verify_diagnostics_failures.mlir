// Mismatches are errors located at the expectation or the diagnostic, and exit 1.
// RUN: not tile-opt %S/Inputs/wrong_expectations.mlir --split-input-file --verify-diagnostics -p test-diagnostics 2>&1 | FileCheck %s

// CHECK-DAG: wrong_expectations.mlir:1:1: error: unexpected remark: unexpected one
// CHECK-DAG: wrong_expectations.mlir:2:6: error: expected remark "never produced" was not produced
// CHECK-DAG: wrong_expectations.mlir:4:6: error: 'remark' diagnostic emitted when expecting a 'error'
// CHECK-DAG: wrong_expectations.mlir:4:6: error: expected error "kind differs" was not produced
// CHECK-DAG: wrong_expectations.mlir:10:8: error: unexpected error: surprise
// CHECK-DAG: wrong_expectations.mlir:11:6: error: expected error "not the surprise" was not produced
