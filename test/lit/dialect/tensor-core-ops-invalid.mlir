// Every verifier rule of tile.ldmatrix, tile.stmatrix and tile.mma_sync, one chunk each.
// RUN: tile-opt %s --split-input-file --verify-diagnostics

func.func @ldmatrix_src_not_shared(%s: memref<16x16xf16, "local">, %d: memref<4xi32, "local">, %i: index) {
  // expected-error @+1 {{'tile.ldmatrix' op src must be a shared buffer}}
  "tile.ldmatrix"(%s, %d, %i, %i) {count = 4 : i64, trans = false, dst_offset = 0 : i64} : (memref<16x16xf16, "local">, memref<4xi32, "local">, index, index) -> ()
  return
}

// -----

func.func @ldmatrix_src_f32(%s: memref<16x16xf32, "shared">, %d: memref<4xi32, "local">, %i: index) {
  // expected-error @+1 {{'tile.ldmatrix' op src must hold 16-bit elements (f16 or bf16), got f32}}
  "tile.ldmatrix"(%s, %d, %i, %i) {count = 4 : i64, trans = false, dst_offset = 0 : i64} : (memref<16x16xf32, "shared">, memref<4xi32, "local">, index, index) -> ()
  return
}

// -----

func.func @ldmatrix_index_count(%s: memref<16x16xf16, "shared">, %d: memref<4xi32, "local">, %i: index) {
  // expected-error @+1 {{'tile.ldmatrix' op expects 2 indices (rank of src), got 1}}
  "tile.ldmatrix"(%s, %d, %i) {count = 4 : i64, trans = false, dst_offset = 0 : i64} : (memref<16x16xf16, "shared">, memref<4xi32, "local">, index) -> ()
  return
}

// -----

func.func @ldmatrix_short_rows(%s: memref<16x4xf16, "shared">, %d: memref<4xi32, "local">, %i: index) {
  // expected-error @+1 {{'tile.ldmatrix' op src rows must hold whole 16-byte rows of 8 elements, but its last dim is 4}}
  "tile.ldmatrix"(%s, %d, %i, %i) {count = 4 : i64, trans = false, dst_offset = 0 : i64} : (memref<16x4xf16, "shared">, memref<4xi32, "local">, index, index) -> ()
  return
}

// -----

func.func @ldmatrix_count(%s: memref<16x16xf16, "shared">, %d: memref<4xi32, "local">, %i: index) {
  // expected-error @+1 {{'tile.ldmatrix' op count must be 1, 2 or 4, got 3}}
  "tile.ldmatrix"(%s, %d, %i, %i) {count = 3 : i64, trans = false, dst_offset = 0 : i64} : (memref<16x16xf16, "shared">, memref<4xi32, "local">, index, index) -> ()
  return
}

// -----

func.func @ldmatrix_trans_not_bool(%s: memref<16x16xf16, "shared">, %d: memref<4xi32, "local">, %i: index) {
  // expected-error @+1 {{'tile.ldmatrix' op 'trans' must be a boolean}}
  "tile.ldmatrix"(%s, %d, %i, %i) {count = 4 : i64, trans = 1 : i64, dst_offset = 0 : i64} : (memref<16x16xf16, "shared">, memref<4xi32, "local">, index, index) -> ()
  return
}

// -----

func.func @ldmatrix_dst_f32(%s: memref<16x16xf16, "shared">, %d: memref<4xf32, "local">, %i: index) {
  // expected-error @+1 {{'tile.ldmatrix' op dst must hold i32 elements, got f32}}
  "tile.ldmatrix"(%s, %d, %i, %i) {count = 4 : i64, trans = false, dst_offset = 0 : i64} : (memref<16x16xf16, "shared">, memref<4xf32, "local">, index, index) -> ()
  return
}

// -----

func.func @ldmatrix_dst_not_local(%s: memref<16x16xf16, "shared">, %d: memref<4xi32, "shared">, %i: index) {
  // expected-error @+1 {{'tile.ldmatrix' op dst must be a rank-1 "local" register array}}
  "tile.ldmatrix"(%s, %d, %i, %i) {count = 4 : i64, trans = false, dst_offset = 0 : i64} : (memref<16x16xf16, "shared">, memref<4xi32, "shared">, index, index) -> ()
  return
}

// -----

func.func @ldmatrix_dst_slice(%s: memref<16x16xf16, "shared">, %d: memref<4xi32, "local">, %i: index) {
  // expected-error @+1 {{'tile.ldmatrix' op dst slice [2, 6) leaves the 4-element array}}
  "tile.ldmatrix"(%s, %d, %i, %i) {count = 4 : i64, trans = false, dst_offset = 2 : i64} : (memref<16x16xf16, "shared">, memref<4xi32, "local">, index, index) -> ()
  return
}

// -----

func.func @ldmatrix_missing_count(%s: memref<16x16xf16, "shared">, %d: memref<4xi32, "local">, %i: index) {
  // expected-error @+1 {{'tile.ldmatrix' op requires attribute 'count'}}
  "tile.ldmatrix"(%s, %d, %i, %i) {trans = false, dst_offset = 0 : i64} : (memref<16x16xf16, "shared">, memref<4xi32, "local">, index, index) -> ()
  return
}

// -----

func.func @stmatrix_dst_not_shared(%d: memref<16x16xbf16, "local">, %s: memref<8xf32, "local">, %i: index) {
  // expected-error @+1 {{'tile.stmatrix' op dst must be a shared buffer}}
  "tile.stmatrix"(%d, %s, %i, %i) {registers = [0, 2, 4, 6], trans = false} : (memref<16x16xbf16, "local">, memref<8xf32, "local">, index, index) -> ()
  return
}

// -----

func.func @stmatrix_dst_f32(%d: memref<16x16xf32, "shared">, %s: memref<8xf32, "local">, %i: index) {
  // expected-error @+1 {{'tile.stmatrix' op dst must hold 16-bit elements (f16 or bf16), got f32}}
  "tile.stmatrix"(%d, %s, %i, %i) {registers = [0, 2, 4, 6], trans = false} : (memref<16x16xf32, "shared">, memref<8xf32, "local">, index, index) -> ()
  return
}

// -----

func.func @stmatrix_index_count(%d: memref<16x16xbf16, "shared">, %s: memref<8xf32, "local">, %i: index) {
  // expected-error @+1 {{'tile.stmatrix' op expects 2 indices (rank of dst), got 1}}
  "tile.stmatrix"(%d, %s, %i) {registers = [0, 2, 4, 6], trans = false} : (memref<16x16xbf16, "shared">, memref<8xf32, "local">, index) -> ()
  return
}

// -----

func.func @stmatrix_short_rows(%d: memref<16x4xbf16, "shared">, %s: memref<8xf32, "local">, %i: index) {
  // expected-error @+1 {{'tile.stmatrix' op dst rows must hold whole 16-byte rows of 8 elements, but its last dim is 4}}
  "tile.stmatrix"(%d, %s, %i, %i) {registers = [0, 2, 4, 6], trans = false} : (memref<16x4xbf16, "shared">, memref<8xf32, "local">, index, index) -> ()
  return
}

// -----

func.func @stmatrix_missing_registers(%d: memref<16x16xbf16, "shared">, %s: memref<8xf32, "local">, %i: index) {
  // expected-error @+1 {{'tile.stmatrix' op requires attribute 'registers'}}
  "tile.stmatrix"(%d, %s, %i, %i) {trans = false} : (memref<16x16xbf16, "shared">, memref<8xf32, "local">, index, index) -> ()
  return
}

// -----

func.func @stmatrix_registers_not_array(%d: memref<16x16xbf16, "shared">, %s: memref<8xf32, "local">, %i: index) {
  // expected-error @+1 {{'tile.stmatrix' op attribute 'registers' must be an array, got 0 : i64}}
  "tile.stmatrix"(%d, %s, %i, %i) {registers = 0 : i64, trans = false} : (memref<16x16xbf16, "shared">, memref<8xf32, "local">, index, index) -> ()
  return
}

// -----

func.func @stmatrix_registers_empty(%d: memref<16x16xbf16, "shared">, %s: memref<8xf32, "local">, %i: index) {
  // expected-error @+1 {{'tile.stmatrix' op 'registers' must give 1, 2 or 4 register offsets (one per matrix), got 0}}
  "tile.stmatrix"(%d, %s, %i, %i) {registers = [], trans = false} : (memref<16x16xbf16, "shared">, memref<8xf32, "local">, index, index) -> ()
  return
}

// -----

func.func @stmatrix_three_registers(%d: memref<16x16xbf16, "shared">, %s: memref<8xf32, "local">, %i: index) {
  // expected-error @+1 {{'tile.stmatrix' op 'registers' must give 1, 2 or 4 register offsets (one per matrix), got 3}}
  "tile.stmatrix"(%d, %s, %i, %i) {registers = [0, 2, 4], trans = false} : (memref<16x16xbf16, "shared">, memref<8xf32, "local">, index, index) -> ()
  return
}

// -----

func.func @stmatrix_registers_not_integers(%d: memref<16x16xbf16, "shared">, %s: memref<8xf32, "local">, %i: index) {
  // expected-error @+1 {{'tile.stmatrix' op 'registers' must be an array of integers, got [0, "two"]}}
  "tile.stmatrix"(%d, %s, %i, %i) {registers = [0, "two"], trans = false} : (memref<16x16xbf16, "shared">, memref<8xf32, "local">, index, index) -> ()
  return
}

// -----

func.func @stmatrix_trans_not_bool(%d: memref<16x16xbf16, "shared">, %s: memref<8xf32, "local">, %i: index) {
  // expected-error @+1 {{'tile.stmatrix' op 'trans' must be a boolean}}
  "tile.stmatrix"(%d, %s, %i, %i) {registers = [0, 2, 4, 6], trans = 1 : i64} : (memref<16x16xbf16, "shared">, memref<8xf32, "local">, index, index) -> ()
  return
}

// -----

func.func @stmatrix_missing_trans(%d: memref<16x16xbf16, "shared">, %s: memref<8xf32, "local">, %i: index) {
  // expected-error @+1 {{'tile.stmatrix' op requires attribute 'trans'}}
  "tile.stmatrix"(%d, %s, %i, %i) {registers = [0, 2, 4, 6]} : (memref<16x16xbf16, "shared">, memref<8xf32, "local">, index, index) -> ()
  return
}

// -----

func.func @stmatrix_src_not_local(%d: memref<16x16xbf16, "shared">, %s: memref<8xf32, "shared">, %i: index) {
  // expected-error @+1 {{'tile.stmatrix' op src must be a rank-1 "local" register array}}
  "tile.stmatrix"(%d, %s, %i, %i) {registers = [0, 2, 4, 6], trans = false} : (memref<16x16xbf16, "shared">, memref<8xf32, "shared">, index, index) -> ()
  return
}

// -----

func.func @stmatrix_src_rank_2(%d: memref<16x16xbf16, "shared">, %s: memref<2x8xf32, "local">, %i: index) {
  // expected-error @+1 {{'tile.stmatrix' op src must be a rank-1 "local" register array}}
  "tile.stmatrix"(%d, %s, %i, %i) {registers = [0, 2, 4, 6], trans = false} : (memref<16x16xbf16, "shared">, memref<2x8xf32, "local">, index, index) -> ()
  return
}

// -----

func.func @stmatrix_src_other_half(%d: memref<16x16xbf16, "shared">, %s: memref<8xf16, "local">, %i: index) {
  // expected-error @+1 {{'tile.stmatrix' op src must hold f32 or bf16 (the element type of dst) elements, got f16}}
  "tile.stmatrix"(%d, %s, %i, %i) {registers = [0, 2, 4, 6], trans = false} : (memref<16x16xbf16, "shared">, memref<8xf16, "local">, index, index) -> ()
  return
}

// -----

func.func @stmatrix_src_i32(%d: memref<16x16xf16, "shared">, %s: memref<8xi32, "local">, %i: index) {
  // expected-error @+1 {{'tile.stmatrix' op src must hold f32 or f16 (the element type of dst) elements, got i32}}
  "tile.stmatrix"(%d, %s, %i, %i) {registers = [0, 2, 4, 6], trans = false} : (memref<16x16xf16, "shared">, memref<8xi32, "local">, index, index) -> ()
  return
}

// -----

func.func @stmatrix_src_slice(%d: memref<16x16xbf16, "shared">, %s: memref<8xf32, "local">, %i: index) {
  // expected-error @+1 {{'tile.stmatrix' op src slice [7, 9) leaves the 8-element array}}
  "tile.stmatrix"(%d, %s, %i, %i) {registers = [0, 2, 4, 7], trans = false} : (memref<16x16xbf16, "shared">, memref<8xf32, "local">, index, index) -> ()
  return
}

// -----

func.func @stmatrix_src_negative_offset(%d: memref<16x16xbf16, "shared">, %s: memref<8xf32, "local">, %i: index) {
  // expected-error @+1 {{'tile.stmatrix' op src slice [-2, 0) leaves the 8-element array}}
  "tile.stmatrix"(%d, %s, %i, %i) {registers = [-2, 2], trans = false} : (memref<16x16xbf16, "shared">, memref<8xf32, "local">, index, index) -> ()
  return
}

// -----

func.func @mma_shape(%a: memref<4xi32, "local">, %b: memref<2xi32, "local">, %c: memref<4xf32, "local">) {
  // expected-error @+1 {{'tile.mma_sync' op shape must be one of m16n8k16, got 'm16n8k8'}}
  "tile.mma_sync"(%a, %b, %c) {shape = "m16n8k8", operand_type = "f16", a_offset = 0 : i64, b_offset = 0 : i64, c_offset = 0 : i64} : (memref<4xi32, "local">, memref<2xi32, "local">, memref<4xf32, "local">) -> ()
  return
}

// -----

func.func @mma_operand_type(%a: memref<4xi32, "local">, %b: memref<2xi32, "local">, %c: memref<4xf32, "local">) {
  // expected-error @+1 {{'tile.mma_sync' op operand_type must be f16 or bf16, got 'f8'}}
  "tile.mma_sync"(%a, %b, %c) {shape = "m16n8k16", operand_type = "f8", a_offset = 0 : i64, b_offset = 0 : i64, c_offset = 0 : i64} : (memref<4xi32, "local">, memref<2xi32, "local">, memref<4xf32, "local">) -> ()
  return
}

// -----

func.func @mma_a_slice(%a: memref<4xi32, "local">, %b: memref<2xi32, "local">, %c: memref<4xf32, "local">) {
  // expected-error @+1 {{'tile.mma_sync' op a slice [1, 5) leaves the 4-element array}}
  "tile.mma_sync"(%a, %b, %c) {shape = "m16n8k16", operand_type = "f16", a_offset = 1 : i64, b_offset = 0 : i64, c_offset = 0 : i64} : (memref<4xi32, "local">, memref<2xi32, "local">, memref<4xf32, "local">) -> ()
  return
}

// -----

func.func @mma_a_halves_wrong_type(%a: memref<8xbf16, "local">, %b: memref<2xi32, "local">, %c: memref<4xf32, "local">) {
  // expected-error @+1 {{'tile.mma_sync' op a must hold f16 elements, got bf16}}
  "tile.mma_sync"(%a, %b, %c) {shape = "m16n8k16", operand_type = "f16", a_offset = 0 : i64, b_offset = 0 : i64, c_offset = 0 : i64} : (memref<8xbf16, "local">, memref<2xi32, "local">, memref<4xf32, "local">) -> ()
  return
}

// -----

func.func @mma_a_halves_odd(%a: memref<16xf16, "local">, %b: memref<2xi32, "local">, %c: memref<4xf32, "local">) {
  // expected-error @+1 {{'tile.mma_sync' op a slice of f16 halves must start at an even offset, got 3}}
  "tile.mma_sync"(%a, %b, %c) {shape = "m16n8k16", operand_type = "f16", a_offset = 3 : i64, b_offset = 0 : i64, c_offset = 0 : i64} : (memref<16xf16, "local">, memref<2xi32, "local">, memref<4xf32, "local">) -> ()
  return
}

// -----

func.func @mma_c_type(%a: memref<4xi32, "local">, %b: memref<2xi32, "local">, %c: memref<4xf64, "local">) {
  // expected-error @+1 {{'tile.mma_sync' op c must hold f32 or f16 accumulators, got f64}}
  "tile.mma_sync"(%a, %b, %c) {shape = "m16n8k16", operand_type = "f16", a_offset = 0 : i64, b_offset = 0 : i64, c_offset = 0 : i64} : (memref<4xi32, "local">, memref<2xi32, "local">, memref<4xf64, "local">) -> ()
  return
}

// -----

func.func @mma_bf16_f16_accumulator(%a: memref<4xi32, "local">, %b: memref<2xi32, "local">, %c: memref<4xf16, "local">) {
  // expected-error @+1 {{'tile.mma_sync' op bf16 inputs accumulate in f32 only, got an f16 accumulator}}
  "tile.mma_sync"(%a, %b, %c) {shape = "m16n8k16", operand_type = "bf16", a_offset = 0 : i64, b_offset = 0 : i64, c_offset = 0 : i64} : (memref<4xi32, "local">, memref<2xi32, "local">, memref<4xf16, "local">) -> ()
  return
}

// -----

func.func @mma_b_slice(%a: memref<4xi32, "local">, %b: memref<2xi32, "local">, %c: memref<4xf32, "local">) {
  // expected-error @+1 {{'tile.mma_sync' op b slice [2, 4) leaves the 2-element array}}
  "tile.mma_sync"(%a, %b, %c) {shape = "m16n8k16", operand_type = "f16", a_offset = 0 : i64, b_offset = 2 : i64, c_offset = 0 : i64} : (memref<4xi32, "local">, memref<2xi32, "local">, memref<4xf32, "local">) -> ()
  return
}

// -----

func.func @mma_c_slice(%a: memref<4xi32, "local">, %b: memref<2xi32, "local">, %c: memref<8xf32, "local">) {
  // expected-error @+1 {{'tile.mma_sync' op c slice [6, 10) leaves the 8-element array}}
  "tile.mma_sync"(%a, %b, %c) {shape = "m16n8k16", operand_type = "f16", a_offset = 0 : i64, b_offset = 0 : i64, c_offset = 6 : i64} : (memref<4xi32, "local">, memref<2xi32, "local">, memref<8xf32, "local">) -> ()
  return
}

// -----

func.func @mma_c_f16_odd(%a: memref<4xi32, "local">, %b: memref<2xi32, "local">, %c: memref<8xf16, "local">) {
  // expected-error @+1 {{'tile.mma_sync' op an f16 c slice must start at an even offset (f16x2 registers)}}
  "tile.mma_sync"(%a, %b, %c) {shape = "m16n8k16", operand_type = "f16", a_offset = 0 : i64, b_offset = 0 : i64, c_offset = 1 : i64} : (memref<4xi32, "local">, memref<2xi32, "local">, memref<8xf16, "local">) -> ()
  return
}

// -----

func.func @mma_b_not_local(%a: memref<4xi32, "local">, %b: memref<2xi32, "shared">, %c: memref<4xf32, "local">) {
  // expected-error @+1 {{'tile.mma_sync' op b must be a rank-1 "local" register array}}
  "tile.mma_sync"(%a, %b, %c) {shape = "m16n8k16", operand_type = "f16", a_offset = 0 : i64, b_offset = 0 : i64, c_offset = 0 : i64} : (memref<4xi32, "local">, memref<2xi32, "shared">, memref<4xf32, "local">) -> ()
  return
}
