// Every verifier rule of the cp.async ops, one chunk each: a chunk fails if its rule is removed.
// RUN: tile-opt %s --split-input-file --verify-diagnostics

func.func @dst_not_shared(%A: memref<?x?xf16>, %f: memref<8x8xf16, "local">) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.cp_async' op dst must be a shared buffer, got "local" memory}}
    "tile.cp_async"(%f, %A, %c0, %c0, %c0, %c0) {bytes = 16 : i64} : (memref<8x8xf16, "local">, memref<?x?xf16>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @src_not_global(%s: memref<8x8xf16, "shared">) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.cp_async' op src must be a global tensor, got "shared" memory}}
    "tile.cp_async"(%s, %s, %c0, %c0, %c0, %c0) {bytes = 16 : i64} : (memref<8x8xf16, "shared">, memref<8x8xf16, "shared">, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @types_differ(%A: memref<?x?xf32>, %s: memref<8x8xf16, "shared">) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.cp_async' op dst and src element types differ: f16 vs f32}}
    "tile.cp_async"(%s, %A, %c0, %c0, %c0, %c0) {bytes = 16 : i64} : (memref<8x8xf16, "shared">, memref<?x?xf32>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @index_count(%A: memref<?x?xf16>, %s: memref<8x8xf16, "shared">) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.cp_async' op expects 2 dst indices and 2 src indices, then an optional src_bytes, got 3 index operands}}
    "tile.cp_async"(%s, %A, %c0, %c0, %c0) {bytes = 16 : i64} : (memref<8x8xf16, "shared">, memref<?x?xf16>, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @bad_size(%A: memref<?x?xf16>, %s: memref<8x8xf16, "shared">) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.cp_async' op 'bytes' must be 4, 8 or 16, got 32}}
    "tile.cp_async"(%s, %A, %c0, %c0, %c0, %c0) {bytes = 32 : i64} : (memref<8x8xf16, "shared">, memref<?x?xf16>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @partial_element(%A: memref<?x?xf64>, %s: memref<8x8xf64, "shared">) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.cp_async' op 'bytes' = 4 is not a whole number of f64 elements}}
    "tile.cp_async"(%s, %A, %c0, %c0, %c0, %c0) {bytes = 4 : i64} : (memref<8x8xf64, "shared">, memref<?x?xf64>, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @src_bytes_range(%A: memref<?x?xf16>, %s: memref<8x8xf16, "shared">) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c17 = arith.constant 17 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.cp_async' op src_bytes must be in 0..16, got 17}}
    "tile.cp_async"(%s, %A, %c0, %c0, %c0, %c0, %c17) {bytes = 16 : i64} : (memref<8x8xf16, "shared">, memref<?x?xf16>, index, index, index, index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @copy_outside_kernel(%A: memref<?x?xf16>, %s: memref<8x8xf16, "shared">) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'tile.cp_async' op must be inside a tile.kernel or a gpu.launch}}
  "tile.cp_async"(%s, %A, %c0, %c0, %c0, %c0) {bytes = 16 : i64} : (memref<8x8xf16, "shared">, memref<?x?xf16>, index, index, index, index) -> ()
  return
}

// -----

func.func @commit_outside_kernel() {
  // expected-error @+1 {{'tile.cp_async_commit' op must be inside a tile.kernel or a gpu.launch}}
  "tile.cp_async_commit"() : () -> ()
  return
}

// -----

func.func @wait_negative() {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.cp_async_wait' op 'pending' must be a non-negative integer, got -1 : i64}}
    "tile.cp_async_wait"() {pending = -1 : i64} : () -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @wait_outside_kernel() {
  // expected-error @+1 {{'tile.cp_async_wait' op must be inside a tile.kernel or a gpu.launch}}
  "tile.cp_async_wait"() {pending = 0 : i64} : () -> ()
  return
}

// -----

func.func @wait_without_pending() {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.cp_async_wait' op requires attribute 'pending'}}
    "tile.cp_async_wait"() : () -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}
