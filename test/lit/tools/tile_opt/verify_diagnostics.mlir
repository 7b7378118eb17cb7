// The --verify-diagnostics protocol: every designator form, every severity, and
// diagnostics from the parser, the verifier and our passes. Line numbers stay
// those of this file across --split-input-file chunks.
// RUN: tile-opt %s --split-input-file --verify-diagnostics -p test-diagnostics

// Same line, @+N, @-N, @above, @below; remarks and warnings from a pass.
func.func @designators() attributes {test.remark = "on the func line"} { // expected-remark {{on the func line}}
  // expected-warning @+1 {{two below}}
  %0 = arith.constant {test.warning = "two below"} 1 : i32
  %1 = arith.constant {test.remark = "one above"} 2 : i32
  // expected-remark @-1 {{one above}}
  %2 = arith.constant {test.remark = "last plain line"} 3 : i32
  // expected-remark @above {{last plain line}}
  // expected-remark @below {{next plain line}}
  // expected-warning @below {{also on the next plain line}}
  %3 = arith.constant {test.remark = "next plain line", test.warning = "also on the next plain line"} 4 : i32
  return
}

// -----

// A chunk of its own: line numbers are still those of the whole file.
func.func @errors_and_notes() {
  // expected-error @+2 {{first failure}}
  // expected-note @+1 {{a note at the same op}}
  %0 = arith.constant {test.error = "first failure", test.note = "a note at the same op"} 1 : i32
  // expected-error @+1 {{second failure}}
  %1 = arith.constant {test.error = "second failure"} 2 : i32
  return
}

// -----

// Parse errors are diagnostics too; a substring of the message is enough.
func.func @parse_error() {
  // expected-error @+1 {{expected SSA operand}}
  %0 = arith.addi
}

// -----

// expected-error-re with a regex part; the verifier's error is located at the op.
func.func @verifier_error(%s: memref<4xf32, "shared">, %v: f16) {
  // expected-error-re @+1 {{value type f{{[0-9]+}} must equal the dst element type f32}}
  "tile.fill"(%s, %v) : (memref<4xf32, "shared">, f16) -> ()
  return
}
