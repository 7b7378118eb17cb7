// Every verifier rule of tile.print and tile.device_assert, one chunk each: a chunk fails if its rule is removed.
// RUN: tile-opt %s --split-input-file --verify-diagnostics

func.func @print_of_a_buffer(%s: memref<8xf32, "shared">) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.print' op value must be a scalar (integer, index or float), got memref<8xf32, "shared">}}
    "tile.print"(%s, %bx, %c0, %c0) {msg = "s", thread = 0 : i64} : (memref<8xf32, "shared">, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @block_coordinate_not_index(%x: f32, %k: i32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.print' op operand #2 (block_y) must be index, got i32}}
    "tile.print"(%x, %bx, %k, %c0) {msg = "x", thread = 0 : i64} : (f32, index, i32, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @indices_without_a_buffer_name(%x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.print' op a buffer element's print has a 'buffer' name and its indices; a scalar's has neither, got 1 indices and no 'buffer'}}
    "tile.print"(%x, %bx, %c0, %c0, %c1) {msg = "x", thread = 0 : i64} : (f32, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @buffer_name_not_a_string(%x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.print' op 'buffer' must be a string, got 3 : i64}}
    "tile.print"(%x, %bx, %c0, %c0, %c1) {msg = "x", buffer = 3, shape = [8], thread = 0 : i64} : (f32, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @buffer_without_its_shape(%x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.print' op a buffer element's print needs a 'shape', an array of 2 positive integers (one per index), got [8]}}
    "tile.print"(%x, %bx, %c0, %c0, %c1, %c1) {msg = "x", buffer = "x", shape = [8], thread = 0 : i64} : (f32, index, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @thread_outside_the_block(%x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.print' op 'thread' must be a thread of the block (0 or more below the kernel's 32 threads), got 32 : i64}}
    "tile.print"(%x, %bx, %c0, %c0) {msg = "x", thread = 32 : i64} : (f32, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @print_inside_parallel(%x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    "tile.parallel"(%c8) ({
    ^bb0(%i: index):
      // expected-error @+1 {{'tile.print' op must not be inside a tile.parallel (its points run on different threads)}}
      "tile.print"(%x, %bx, %c0, %c0) {msg = "x", thread = 0 : i64} : (f32, index, index, index) -> ()
      "tile.yield"() : () -> ()
    }) : (index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @print_outside_a_kernel(%x: f32) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'tile.print' op must be inside a tile.kernel or a gpu.launch}}
  "tile.print"(%x, %c0, %c0, %c0) {msg = "x", thread = 0 : i64} : (f32, index, index, index) -> ()
  return
}

// -----

func.func @assert_of_an_i32(%k: i32) {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.device_assert' op cond must be i1, got i32}}
    "tile.device_assert"(%k) {msg = "k"} : (i32) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @assert_outside_a_kernel(%ok: i1) {
  // expected-error @+1 {{'tile.device_assert' op must be inside a tile.kernel or a gpu.launch}}
  "tile.device_assert"(%ok) {msg = "ok"} : (i1) -> ()
  return
}
