// Every verifier rule of the tile dialect, one chunk each: a chunk fails if its rule is removed.
// RUN: tile-opt %s --split-input-file --verify-diagnostics

// Op structure (checked before the op's own rules, naming what is wrong).

func.func @fill_missing_operand(%a: memref<4xf32, "shared">) {
  // expected-error @+1 {{'tile.fill' op expects 2 operand(s) (dst, value), got 1}}
  "tile.fill"(%a) : (memref<4xf32, "shared">) -> ()
  return
}

// -----

func.func @copy_too_few_operands(%a: memref<4xf32, "shared">) {
  // expected-error @+1 {{'tile.copy' op expects at least 2 operand(s) (src, dst, offsets...), got 1}}
  "tile.copy"(%a) {shape = [4]} : (memref<4xf32, "shared">) -> ()
  return
}

// -----

func.func @fill_dst_not_memref(%v: f32) {
  // expected-error @+1 {{'tile.fill' op operand #0 (dst) must be a memref, got f32}}
  "tile.fill"(%v, %v) : (f32, f32) -> ()
  return
}

// -----

func.func @parallel_extent_not_index(%n: i32) {
  // expected-error @+1 {{'tile.parallel' op operand #0 (extents) must be index, got i32}}
  "tile.parallel"(%n) ({
  ^bb0(%i: index):
    "tile.yield"() : () -> ()
  }) : (i32) -> ()
  return
}

// -----

func.func @alloc_without_result(%n: index) {
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.alloc_shared' op expects 1 result(s) (result), got 0}}
    "tile.alloc_shared"() : () -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @alloc_tensor_result(%n: index) {
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.alloc_shared' op result #0 (result) must be a memref, got tensor<4xf32>}}
    %s = "tile.alloc_shared"() : () -> tensor<4xf32>
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @reduce_missing_kind(%a: memref<4x4xf32, "fragment">, %b: memref<4xf32, "fragment">) {
  // expected-error @+1 {{'tile.reduce' op requires attribute 'kind'}}
  "tile.reduce"(%a, %b) {dim = 1 : i64, clear = true} : (memref<4x4xf32, "fragment">, memref<4xf32, "fragment">) -> ()
  return
}

// -----

func.func @reduce_kind_not_string(%a: memref<4x4xf32, "fragment">, %b: memref<4xf32, "fragment">) {
  // expected-error @+1 {{'tile.reduce' op attribute 'kind' must be a string, got 3 : i64}}
  "tile.reduce"(%a, %b) {kind = 3 : i64, dim = 1 : i64, clear = true} : (memref<4x4xf32, "fragment">, memref<4xf32, "fragment">) -> ()
  return
}

// -----

func.func @kernel_without_region(%n: index) {
  // expected-error @+1 {{'tile.kernel' op expects 1 region(s), got 0}}
  "tile.kernel"(%n) {threads = 32 : i64} : (index) -> ()
  return
}

// -----
// tile.yield

func.func @yield_outside_tile_region() {
  // expected-error @+1 {{'tile.yield' op must terminate a tile.kernel, tile.parallel or tile.pipelined region, not func.func}}
  "tile.yield"() : () -> ()
}

// -----
// tile.kernel

func.func @kernel_no_grid() {
  // expected-error @+1 {{'tile.kernel' op must have 1 to 3 grid extents, got 0}}
  "tile.kernel"() ({
  ^bb0:
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : () -> ()
  return
}

// -----

func.func @kernel_four_dim_grid(%n: index) {
  // expected-error @+1 {{'tile.kernel' op must have 1 to 3 grid extents, got 4}}
  "tile.kernel"(%n, %n, %n, %n) ({
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index, index, index, index) -> ()
  return
}

// -----

func.func @kernel_zero_threads(%n: index) {
  // expected-error @+1 {{'tile.kernel' op 'threads' must be in 1..1024, got 0}}
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    "tile.yield"() : () -> ()
  }) {threads = 0 : i64} : (index) -> ()
  return
}

// -----

func.func @kernel_min_blocks_zero(%n: index) {
  // expected-error @+1 {{'tile.kernel' op 'tile.min_blocks' must be an integer in 1..32, got 0 : i64}}
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64, tile.min_blocks = 0 : i64} : (index) -> ()
  return
}

// -----

func.func @kernel_min_blocks_over_the_threads_of_a_multiprocessor(%n: index) {
  // expected-error @+1 {{'tile.kernel' op 'tile.min_blocks' = 3 blocks of 1024 threads exceed the 2048 threads a multiprocessor holds}}
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    "tile.yield"() : () -> ()
  }) {threads = 1024 : i64, tile.min_blocks = 3 : i64} : (index) -> ()
  return
}

// -----

func.func @kernel_rasterization_panel_zero(%n: index) {
  // expected-error @+1 {{'tile.kernel' op 'tile.rasterization' must be {order = "row" | "column", panel = <positive integer>}, got {order = "row", panel = 0 : i64}}}
  "tile.kernel"(%n, %n) ({
  ^bb0(%bx: index, %by: index):
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64, tile.rasterization = {order = "row", panel = 0 : i64}} : (index, index) -> ()
  return
}

// -----

func.func @kernel_rasterization_unknown_order(%n: index) {
  // expected-error @+1 {{'tile.kernel' op 'tile.rasterization' must be {order = "row" | "column", panel = <positive integer>}, got {order = "diagonal", panel = 8 : i64}}}
  "tile.kernel"(%n, %n) ({
  ^bb0(%bx: index, %by: index):
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64, tile.rasterization = {order = "diagonal", panel = 8 : i64}} : (index, index) -> ()
  return
}

// -----

func.func @kernel_rasterization_one_dim_grid(%n: index) {
  // expected-error @+1 {{'tile.kernel' op 'tile.rasterization' needs a grid of 2 or 3 dims, got 1}}
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64, tile.rasterization = {order = "row", panel = 8 : i64}} : (index) -> ()
  return
}

// -----

func.func @kernel_too_many_threads(%n: index) {
  // expected-error @+1 {{'tile.kernel' op 'threads' must be in 1..1024, got 2048}}
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    "tile.yield"() : () -> ()
  }) {threads = 2048 : i64} : (index) -> ()
  return
}

// -----

func.func @kernel_zero_grid_extent(%n: index) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'tile.kernel' op grid extent #1 must be positive, got 0}}
  "tile.kernel"(%n, %c0) ({
  ^bb0(%bx: index, %by: index):
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index, index) -> ()
  return
}

// -----
// Hardware limits (tilemlir/hardware.py): grid extents, a thread's registers and local memory.

func.func @kernel_grid_x_too_large() {
  %c = arith.constant 1099511627776 : index
  // expected-error @+1 {{'tile.kernel' op grid extent #0 is 1099511627776, more than the 2147483647 blocks a grid has along x}}
  "tile.kernel"(%c) ({
  ^bb0(%bx: index):
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @kernel_grid_z_too_large(%n: index) {
  %c = arith.constant 65536 : index
  // expected-error @+1 {{'tile.kernel' op grid extent #2 is 65536, more than the 65535 blocks a grid has along z}}
  "tile.kernel"(%n, %n, %c) ({
  ^bb0(%bx: index, %by: index, %bz: index):
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index, index, index) -> ()
  return
}

// -----

func.func @fragment_beyond_the_registers(%n: index) {
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    // 128 x 256 f32 over 128 threads: 256 registers a thread, one more than there are
    // expected-error @+1 {{'tile.alloc_fragment' op needs at least 256 32-bit registers in each of the block's 128 threads (256 of its f32 elements a thread), more than the 255 a thread has: make the tile smaller and loop over the rest, or use more threads}}
    %f = "tile.alloc_fragment"() : () -> memref<128x256xf32, "fragment">
    %g = "tile.alloc_fragment"() : () -> memref<128x255xf32, "fragment">
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

func.func @local_beyond_a_thread(%n: index) {
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.alloc_local' op needs 4194304 bytes (4 MiB) in each thread, more than a thread can hold (525308 bytes: 255 32-bit registers and 512 KiB of local memory)}}
    %l = "tile.alloc_local"() : () -> memref<1048576xf32, "local">
    "tile.yield"() : () -> ()
  }) {threads = 128 : i64} : (index) -> ()
  return
}

// -----

func.func @thread_storage_summed(%n: index) {
  // Each buffer fits (the fragment in exactly 255 registers), their sum is 4 bytes too many.
  // expected-error @+1 {{'tile.kernel' op the block's fragments and local buffers need at least 525312 bytes (513 KiB) in each thread ('a' 262144 bytes, 'b' 262144 bytes, 'f' 1020 bytes, 'c' 4 bytes), more than a thread can hold (525308 bytes: 255 32-bit registers and 512 KiB of local memory)}}
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    %a = "tile.alloc_local"() {name = "a"} : () -> memref<65536xf32, "local">
    %b = "tile.alloc_local"() {name = "b"} : () -> memref<65536xf32, "local">
    %f = "tile.alloc_fragment"() {name = "f"} : () -> memref<32x255xi32, "fragment">
    %c = "tile.alloc_local"() {name = "c"} : () -> memref<1xf32, "local">
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----
// The kernel function's signature attributes (docs/ir.md), checked by the tile.kernel inside it.

// expected-error @+1 {{'func.func' op 'tile.arg_dims' entry #0 says 32 for dim #1 of memref<?x64xf32>, which needs 64}}
func.func @arg_dims_static_mismatch(%X: memref<?x64xf32>) attributes {tile.entry, tile.arg_names = ["X"],
    tile.arg_dims = [["M", 32]], tile.symbols = ["M"]} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

// expected-error @+1 {{'func.func' op 'tile.arg_dims' entry #0 says 64 for dim #0 of memref<?x64xf32>, which needs a symbol name}}
func.func @arg_dims_static_for_a_dynamic_dim(%X: memref<?x64xf32>) attributes {tile.arg_dims = [[64, 64]]} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

// expected-error @+1 {{'func.func' op 'tile.arg_dims' entry #1 gives 1 dims for an argument of type memref<4x64xf32>}}
func.func @arg_dims_rank(%X: memref<64xf32>, %Y: memref<4x64xf32>) attributes {tile.arg_dims = [[64], [64]]} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

// expected-error @+1 {{'func.func' op 'tile.arg_dims' entry #1 must be empty for the scalar argument of type f32, got [4]}}
func.func @arg_dims_of_a_scalar(%X: memref<64xf32>, %s: f32) attributes {tile.arg_dims = [[64], [4]]} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

// expected-error @+1 {{'func.func' op 'tile.arg_dims' must be an array with one entry per argument (2)}}
func.func @arg_dims_count(%X: memref<64xf32>, %s: f32) attributes {tile.arg_dims = [[64]]} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

// expected-error @+1 {{'func.func' op 'tile.symbols' must name each symbolic dim of 'tile.arg_dims' once, ['M', 'K'], got ['M']}}
func.func @symbol_missing(%X: memref<?x64xf32>, %Y: memref<?xf32>) attributes {tile.arg_dims = [["M", 64], ["K"]],
    tile.symbols = ["M"]} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

// expected-error @+1 {{'func.func' op 'tile.arg_dims' uses the symbolic dims ['M'], but the function has no 'tile.symbols'}}
func.func @symbols_absent(%X: memref<?x64xf32>) attributes {tile.arg_dims = [["M", 64]]} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

// expected-error @+1 {{'func.func' op 'tile.arg_names' has 1 entries for 2 arguments}}
func.func @arg_names_count(%X: memref<64xf32>, %s: f32) attributes {tile.arg_names = ["X"]} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

// expected-error @+1 {{'func.func' op 'tile.arg_dims' entry #0 names dim #0 'M+1', which is not a symbol name}}
func.func @arg_dims_not_a_name(%X: memref<?xf32>) attributes {tile.arg_dims = [["M+1"]], tile.symbols = ["M+1"]} {
  %c1 = arith.constant 1 : index
  "tile.kernel"(%c1) ({
  ^bb0(%bx: index):
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @kernel_missing_block_arg(%n: index) {
  // expected-error @+1 {{'tile.kernel' op region must have 2 block argument(s), one per grid dim, got 1}}
  "tile.kernel"(%n, %n) ({
  ^bb0(%bx: index):
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index, index) -> ()
  return
}

// -----

func.func @kernel_block_arg_not_index(%n: index) {
  // expected-error @+1 {{'tile.kernel' op block argument #0 must be of type index, got i32}}
  "tile.kernel"(%n) ({
  ^bb0(%bx: i32):
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @kernel_empty_region(%n: index) {
  // expected-error @+1 {{'tile.kernel' op region must have exactly one block, got 0}}
  "tile.kernel"(%n) ({
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----
// tile.alloc_*

func.func @alloc_shared_wrong_space(%n: index) {
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.alloc_shared' op result memory space must be "shared", got "fragment"}}
    %s = "tile.alloc_shared"() : () -> memref<4xf32, "fragment">
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @alloc_fragment_global(%n: index) {
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.alloc_fragment' op result memory space must be "fragment", got global}}
    %f = "tile.alloc_fragment"() : () -> memref<4xf32>
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @alloc_local_wrong_space(%n: index) {
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.alloc_local' op result memory space must be "local", got "shared"}}
    %l = "tile.alloc_local"() : () -> memref<4xf32, "shared">
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @alloc_dynamic_dim(%n: index) {
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.alloc_shared' op dim #1 of the result must be static: on-chip buffers need a compile-time shape}}
    %s = "tile.alloc_shared"() : () -> memref<4x?xf32, "shared">
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @alloc_zero_dim(%n: index) {
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.alloc_fragment' op dim #0 of the result must be positive, got 0}}
    %f = "tile.alloc_fragment"() : () -> memref<0x4xf32, "fragment">
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @alloc_outside_kernel() {
  // expected-error @+1 {{'tile.alloc_shared' op must be inside a tile.kernel}}
  %s = "tile.alloc_shared"() : () -> memref<4xf32, "shared">
  return
}

// -----

func.func @layout_on_shared(%n: index) {
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.alloc_shared' op only fragments carry a 'layout' attribute}}
    %s = "tile.alloc_shared"() {layout = #tile.layout<affine_map<(d0) -> (d0)>, affine_map<(d0) -> (0)>, 1 : i64>} : () -> memref<32xf32, "shared">
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----
// Layouts of fragments

func.func @layout_not_a_layout(%n: index) {
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.alloc_fragment' op 'layout' must be a #tile.layout attribute, got affine_map<(d0) -> (d0)>}}
    %f = "tile.alloc_fragment"() {layout = affine_map<(d0) -> (d0)>} : () -> memref<32xf32, "fragment">
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @layout_thread_map_arity(%n: index) {
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.alloc_fragment' op layout thread_map takes 1 dims but the fragment has rank 2}}
    %f = "tile.alloc_fragment"() {layout = #tile.layout<affine_map<(d0) -> (d0)>, affine_map<(d0, d1) -> (d1)>, 1 : i64>} : () -> memref<32x4xf32, "fragment">
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @layout_local_map_arity(%n: index) {
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.alloc_fragment' op layout local_map takes 3 dims but the fragment has rank 2}}
    %f = "tile.alloc_fragment"() {layout = #tile.layout<affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1, d2) -> (d1)>, 1 : i64>} : () -> memref<32x4xf32, "fragment">
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @layout_two_results(%n: index) {
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.alloc_fragment' op layout thread_map must have exactly one result, got 2}}
    %f = "tile.alloc_fragment"() {layout = #tile.layout<affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, 1 : i64>} : () -> memref<32x4xf32, "fragment">
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @layout_zero_replicate(%n: index) {
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.alloc_fragment' op layout replicate must be >= 1, got 0}}
    %f = "tile.alloc_fragment"() {layout = #tile.layout<affine_map<(d0) -> (d0)>, affine_map<(d0) -> (0)>, 0 : i64>} : () -> memref<32xf32, "fragment">
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @layout_replica_symbol_missing(%n: index) {
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.alloc_fragment' op layout thread_map must take 1 symbol(s) for replicate = 2, got 0}}
    %f = "tile.alloc_fragment"() {layout = #tile.layout<affine_map<(d0) -> (d0)>, affine_map<(d0) -> (0)>, 2 : i64>} : () -> memref<32xf32, "fragment">
    "tile.yield"() : () -> ()
  }) {threads = 64 : i64} : (index) -> ()
  return
}

// -----

func.func @layout_local_map_symbol(%n: index) {
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.alloc_fragment' op layout local_map must take no symbols}}
    %f = "tile.alloc_fragment"() {layout = #tile.layout<affine_map<(d0) -> (d0)>, affine_map<(d0)[s0] -> (s0)>, 1 : i64>} : () -> memref<32xf32, "fragment">
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----
// tile.parallel

func.func @parallel_no_extent(%n: index) {
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.parallel' op must have at least one extent}}
    "tile.parallel"() ({
    ^bb0:
      "tile.yield"() : () -> ()
    }) : () -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @parallel_outside_kernel(%n: index) {
  // expected-error @+1 {{'tile.parallel' op must be inside a tile.kernel}}
  "tile.parallel"(%n) ({
  ^bb0(%i: index):
    "tile.yield"() : () -> ()
  }) : (index) -> ()
  return
}

// -----

func.func @parallel_negative_extent(%n: index) {
  %c4 = arith.constant 4 : index
  %cm1 = arith.constant -1 : index
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.parallel' op extent #1 must be positive, got -1}}
    "tile.parallel"(%c4, %cm1) ({
    ^bb0(%i: index, %j: index):
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----

func.func @parallel_block_args(%n: index) {
  "tile.kernel"(%n) ({
  ^bb0(%bx: index):
    // expected-error @+1 {{'tile.parallel' op region must have 2 block argument(s), one per extent, got 1}}
    "tile.parallel"(%n, %n) ({
    ^bb0(%i: index):
      "tile.yield"() : () -> ()
    }) : (index, index) -> ()
    "tile.yield"() : () -> ()
  }) {threads = 32 : i64} : (index) -> ()
  return
}

// -----
// tile.pipelined

func.func @pipelined_zero_stages(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'tile.pipelined' op 'num_stages' must be >= 1, got 0}}
  "tile.pipelined"(%c0, %n, %c1) ({
  ^bb0(%k: index):
    "tile.yield"() : () -> ()
  }) {num_stages = 0 : i64} : (index, index, index) -> ()
  return
}

// -----

func.func @pipelined_zero_step(%n: index) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'tile.pipelined' op step must be positive, got 0}}
  "tile.pipelined"(%c0, %n, %c0) ({
  ^bb0(%k: index):
    "tile.yield"() : () -> ()
  }) {num_stages = 2 : i64} : (index, index, index) -> ()
  return
}

// -----

func.func @pipelined_block_args(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-error @+1 {{'tile.pipelined' op region must have 1 block argument(s), one per loop, got 2}}
  "tile.pipelined"(%c0, %n, %c1) ({
  ^bb0(%k: index, %extra: index):
    "tile.yield"() : () -> ()
  }) {num_stages = 2 : i64} : (index, index, index) -> ()
  return
}

// -----
// tile.copy

func.func @copy_offset_count(%X: memref<?x64xf32>, %s: memref<4x64xf32, "shared">, %i: index) {
  // expected-error @+1 {{'tile.copy' op expects 4 offsets (rank of src 2 + rank of dst 2), got 3}}
  "tile.copy"(%X, %s, %i, %i, %i) {shape = [4, 64]} : (memref<?x64xf32>, memref<4x64xf32, "shared">, index, index, index) -> ()
  return
}

// -----

func.func @copy_global_to_global(%X: memref<?x64xf32>, %Y: memref<?x64xf32>, %i: index) {
  // expected-error @+1 {{'tile.copy' op cannot copy global to global: one side must be shared, fragment or local}}
  "tile.copy"(%X, %Y, %i, %i, %i, %i) {shape = [4, 64]} : (memref<?x64xf32>, memref<?x64xf32>, index, index, index, index) -> ()
  return
}

// -----

func.func @copy_shape_not_integers(%X: memref<?x64xf32>, %s: memref<4x64xf32, "shared">, %i: index) {
  // expected-error @+1 {{'tile.copy' op 'shape' must be an array of integers}}
  "tile.copy"(%X, %s, %i, %i, %i, %i) {shape = ["4", 64]} : (memref<?x64xf32>, memref<4x64xf32, "shared">, index, index, index, index) -> ()
  return
}

// -----

func.func @copy_shape_empty(%X: memref<?x64xf32>, %s: memref<4x64xf32, "shared">, %i: index) {
  // expected-error @+1 {{'tile.copy' op 'shape' must not be empty}}
  "tile.copy"(%X, %s, %i, %i, %i, %i) {shape = []} : (memref<?x64xf32>, memref<4x64xf32, "shared">, index, index, index, index) -> ()
  return
}

// -----

func.func @copy_zero_extent(%X: memref<?x64xf32>, %s: memref<4x64xf32, "shared">, %i: index) {
  // expected-error @+1 {{'tile.copy' op copy box extent #1 must be positive, got 0}}
  "tile.copy"(%X, %s, %i, %i, %i, %i) {shape = [4, 0]} : (memref<?x64xf32>, memref<4x64xf32, "shared">, index, index, index, index) -> ()
  return
}

// -----

func.func @copy_box_rank_below_side(%X: memref<?x64xf32>, %s: memref<4x64xf32, "shared">, %i: index) {
  // expected-error @+1 {{'tile.copy' op src has rank 2 but the copy box [64] has rank 1}}
  "tile.copy"(%X, %s, %i, %i, %i, %i) {shape = [64]} : (memref<?x64xf32>, memref<4x64xf32, "shared">, index, index, index, index) -> ()
  return
}

// -----

func.func @copy_leading_dim_not_one(%X: memref<?x64xf32>, %l: memref<64xf32, "local">, %i: index) {
  // expected-error @+1 {{'tile.copy' op copy box dim #0 is 4, but dst (rank 1) only admits 1 there}}
  "tile.copy"(%X, %l, %i, %i, %i) {shape = [4, 64]} : (memref<?x64xf32>, memref<64xf32, "local">, index, index, index) -> ()
  return
}

// -----

func.func @copy_box_exceeds_src(%X: memref<?x32xf32>, %s: memref<4x64xf32, "shared">, %i: index) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'tile.copy' op copy box extent 64 at offset 0 exceeds dim #1 of src (memref<?x32xf32>), which is 32}}
  "tile.copy"(%X, %s, %i, %c0, %c0, %c0) {shape = [4, 64]} : (memref<?x32xf32>, memref<4x64xf32, "shared">, index, index, index, index) -> ()
  return
}

// -----

func.func @copy_box_exceeds_dst_at_offset(%X: memref<?x64xf32>, %s: memref<8x64xf32, "shared">, %i: index) {
  %c0 = arith.constant 0 : index
  %c6 = arith.constant 6 : index
  // expected-error @+1 {{'tile.copy' op copy box extent 4 at offset 6 exceeds dim #0 of dst (memref<8x64xf32, "shared">), which is 8}}
  "tile.copy"(%X, %s, %i, %c0, %c6, %c0) {shape = [4, 64]} : (memref<?x64xf32>, memref<8x64xf32, "shared">, index, index, index, index) -> ()
  return
}

// -----

func.func @copy_into_i1(%X: memref<?x64xi32>, %f: memref<4x64xi1, "fragment">, %i: index) {
  // expected-error @+1 {{'tile.copy' op cannot convert i32 to i1: a copy would truncate to the low bit; compare with zero in element code (arith.cmpi ne / arith.cmpf une)}}
  "tile.copy"(%X, %f, %i, %i, %i, %i) {shape = [4, 64]} : (memref<?x64xi32>, memref<4x64xi1, "fragment">, index, index, index, index) -> ()
  return
}

// -----
// tile.fill

func.func @fill_global(%X: memref<?x64xf32>, %v: f32) {
  // expected-error @+1 {{'tile.fill' op dst must be a shared, fragment or local buffer, got global memory}}
  "tile.fill"(%X, %v) : (memref<?x64xf32>, f32) -> ()
  return
}

// -----

func.func @fill_value_type(%s: memref<4xf32, "shared">, %v: f16) {
  // expected-error @+1 {{'tile.fill' op value type f16 must equal the dst element type f32}}
  "tile.fill"(%s, %v) : (memref<4xf32, "shared">, f16) -> ()
  return
}

// -----
// tile.reduce

func.func @reduce_global_src(%X: memref<4x64xf32>, %d: memref<4xf32, "fragment">) {
  // expected-error @+1 {{'tile.reduce' op src must be a fragment, shared or local buffer, got global memory}}
  "tile.reduce"(%X, %d) {kind = "sum", dim = 1 : i64, clear = true} : (memref<4x64xf32>, memref<4xf32, "fragment">) -> ()
  return
}

// -----

func.func @reduce_global_dst(%s: memref<4x64xf32, "fragment">, %Y: memref<4xf32>) {
  // expected-error @+1 {{'tile.reduce' op dst must be a fragment, shared or local buffer, got global memory}}
  "tile.reduce"(%s, %Y) {kind = "sum", dim = 1 : i64, clear = true} : (memref<4x64xf32, "fragment">, memref<4xf32>) -> ()
  return
}

// -----

func.func @reduce_clear_not_bool(%s: memref<4x64xf32, "fragment">, %d: memref<4xf32, "fragment">) {
  // expected-error @+1 {{'tile.reduce' op 'clear' must be a boolean}}
  "tile.reduce"(%s, %d) {kind = "sum", dim = 1 : i64, clear = 1 : i64} : (memref<4x64xf32, "fragment">, memref<4xf32, "fragment">) -> ()
  return
}

// -----

func.func @reduce_unknown_kind(%s: memref<4x64xf32, "fragment">, %d: memref<4xf32, "fragment">) {
  // expected-error @+1 {{'tile.reduce' op kind must be one of sum, max, min, abssum, absmax, got 'prod'}}
  "tile.reduce"(%s, %d) {kind = "prod", dim = 1 : i64, clear = true} : (memref<4x64xf32, "fragment">, memref<4xf32, "fragment">) -> ()
  return
}

// -----

func.func @reduce_dim_out_of_range(%s: memref<4x64xf32, "fragment">, %d: memref<4xf32, "fragment">) {
  // expected-error @+1 {{'tile.reduce' op dim must be in [0, 2) for a rank-2 src, got 2}}
  "tile.reduce"(%s, %d) {kind = "sum", dim = 2 : i64, clear = true} : (memref<4x64xf32, "fragment">, memref<4xf32, "fragment">) -> ()
  return
}

// -----

func.func @reduce_dst_shape(%s: memref<4x64xf32, "fragment">, %d: memref<64xf32, "fragment">) {
  // expected-error @+1 {{'tile.reduce' op dst shape [64] must equal the src shape [4, 64] without dim 1: [4]}}
  "tile.reduce"(%s, %d) {kind = "max", dim = 1 : i64, clear = true} : (memref<4x64xf32, "fragment">, memref<64xf32, "fragment">) -> ()
  return
}

// -----

func.func @reduce_narrowing(%s: memref<4x64xf32, "fragment">, %d: memref<4xf16, "fragment">) {
  // expected-error @+1 {{'tile.reduce' op dst element type f16 must equal or widen the src element type f32}}
  "tile.reduce"(%s, %d) {kind = "sum", dim = 1 : i64, clear = true} : (memref<4x64xf32, "fragment">, memref<4xf16, "fragment">) -> ()
  return
}

// -----
// tile.gemm

func.func @gemm_a_global(%A: memref<64x32xf16>, %B: memref<32x64xf16, "shared">, %C: memref<64x64xf32, "fragment">) {
  // expected-error @+1 {{'tile.gemm' op operand A must be a shared or fragment tile, got global memory}}
  "tile.gemm"(%A, %B, %C) : (memref<64x32xf16>, memref<32x64xf16, "shared">, memref<64x64xf32, "fragment">) -> ()
  return
}

// -----

func.func @gemm_b_local(%A: memref<64x32xf16, "shared">, %B: memref<32x64xf16, "local">, %C: memref<64x64xf32, "fragment">) {
  // expected-error @+1 {{'tile.gemm' op operand B must be a shared or fragment tile, got "local" memory}}
  "tile.gemm"(%A, %B, %C) : (memref<64x32xf16, "shared">, memref<32x64xf16, "local">, memref<64x64xf32, "fragment">) -> ()
  return
}

// -----

func.func @gemm_a_rank(%A: memref<2x64x32xf16, "fragment">, %B: memref<32x64xf16, "shared">, %C: memref<64x64xf32, "fragment">, %s: index) {
  // expected-error @+1 {{'tile.gemm' op operand A must be rank 2, got rank 3}}
  "tile.gemm"(%A, %B, %C, %s) : (memref<2x64x32xf16, "fragment">, memref<32x64xf16, "shared">, memref<64x64xf32, "fragment">, index) -> ()
  return
}

// -----

func.func @gemm_b_rank(%A: memref<64x32xf16, "shared">, %B: memref<64xf16, "shared">, %C: memref<64x64xf32, "fragment">) {
  // expected-error @+1 {{'tile.gemm' op operand B must be rank 2 (a shared ring of tiles: rank 3 or more), got rank 1}}
  "tile.gemm"(%A, %B, %C) : (memref<64x32xf16, "shared">, memref<64xf16, "shared">, memref<64x64xf32, "fragment">) -> ()
  return
}

// -----

func.func @gemm_ring_without_its_index(%A: memref<3x64x32xf16, "shared">, %B: memref<2x32x64xf16, "shared">, %C: memref<64x64xf32, "fragment">, %s: index) {
  // expected-error @+1 {{'tile.gemm' op expects 2 ring indices (A's 1 leading dims, then B's 1), got 1}}
  "tile.gemm"(%A, %B, %C, %s) {transpose_a = false, transpose_b = false} : (memref<3x64x32xf16, "shared">, memref<2x32x64xf16, "shared">, memref<64x64xf32, "fragment">, index) -> ()
  return
}

// -----

func.func @gemm_ring_k_mismatch(%A: memref<3x64x32xf16, "shared">, %B: memref<16x64xf16, "shared">, %C: memref<64x64xf32, "fragment">, %s: index) {
  // expected-error @+1 {{'tile.gemm' op K mismatch: A gives K = 32, B gives K = 16 (transpose_a = False, transpose_b = False)}}
  "tile.gemm"(%A, %B, %C, %s) {transpose_a = false, transpose_b = false} : (memref<3x64x32xf16, "shared">, memref<16x64xf16, "shared">, memref<64x64xf32, "fragment">, index) -> ()
  return
}

// -----

func.func @gemm_accumulator_shared(%A: memref<64x32xf16, "shared">, %B: memref<32x64xf16, "shared">, %C: memref<64x64xf32, "shared">) {
  // expected-error @+1 {{'tile.gemm' op accumulator C must be a fragment, got "shared" memory}}
  "tile.gemm"(%A, %B, %C) : (memref<64x32xf16, "shared">, memref<32x64xf16, "shared">, memref<64x64xf32, "shared">) -> ()
  return
}

// -----

func.func @gemm_accumulator_rank(%A: memref<64x32xf16, "shared">, %B: memref<32x64xf16, "shared">, %C: memref<4096xf32, "fragment">) {
  // expected-error @+1 {{'tile.gemm' op accumulator C must be rank 2, got rank 1}}
  "tile.gemm"(%A, %B, %C) : (memref<64x32xf16, "shared">, memref<32x64xf16, "shared">, memref<4096xf32, "fragment">) -> ()
  return
}

// -----

func.func @gemm_transpose_not_bool(%A: memref<64x32xf16, "shared">, %B: memref<32x64xf16, "shared">, %C: memref<64x64xf32, "fragment">) {
  // expected-error @+1 {{'tile.gemm' op 'transpose_a' and 'transpose_b' must be booleans}}
  "tile.gemm"(%A, %B, %C) {transpose_a = 0 : i64} : (memref<64x32xf16, "shared">, memref<32x64xf16, "shared">, memref<64x64xf32, "fragment">) -> ()
  return
}

// -----

func.func @gemm_k_mismatch(%A: memref<64x32xf16, "shared">, %B: memref<64x64xf16, "shared">, %C: memref<64x64xf32, "fragment">) {
  // expected-error @+1 {{'tile.gemm' op K mismatch: A gives K = 32, B gives K = 64 (transpose_a = False, transpose_b = False)}}
  "tile.gemm"(%A, %B, %C) : (memref<64x32xf16, "shared">, memref<64x64xf16, "shared">, memref<64x64xf32, "fragment">) -> ()
  return
}

// -----

// With transpose_b, B is N x K: a 32x64 B gives K = 64, not the 32 of A.
func.func @gemm_k_mismatch_transposed(%A: memref<64x32xf16, "shared">, %B: memref<32x64xf16, "shared">, %C: memref<64x64xf32, "fragment">) {
  // expected-error @+1 {{'tile.gemm' op K mismatch: A gives K = 32, B gives K = 64 (transpose_a = False, transpose_b = True)}}
  "tile.gemm"(%A, %B, %C) {transpose_a = false, transpose_b = true} : (memref<64x32xf16, "shared">, memref<32x64xf16, "shared">, memref<64x64xf32, "fragment">) -> ()
  return
}

// -----

// With transpose_a, A is K x M: C must be 32 x 64.
func.func @gemm_mn_mismatch_transposed(%A: memref<64x32xf16, "shared">, %B: memref<64x64xf16, "shared">, %C: memref<64x64xf32, "fragment">) {
  // expected-error @+1 {{'tile.gemm' op accumulator C must be 32x64 (M x N), got 64x64}}
  "tile.gemm"(%A, %B, %C) {transpose_a = true, transpose_b = false} : (memref<64x32xf16, "shared">, memref<64x64xf16, "shared">, memref<64x64xf32, "fragment">) -> ()
  return
}

// -----

func.func @gemm_input_types_differ(%A: memref<64x32xf16, "shared">, %B: memref<32x64xbf16, "shared">, %C: memref<64x64xf32, "fragment">) {
  // expected-error @+1 {{'tile.gemm' op A and B element types differ: f16 vs bf16}}
  "tile.gemm"(%A, %B, %C) : (memref<64x32xf16, "shared">, memref<32x64xbf16, "shared">, memref<64x64xf32, "fragment">) -> ()
  return
}

// -----

// fp8 kinds may mix (as wgmma's .e4m3 / .e5m2 do); fp8 with a 16-bit type may not.
func.func @gemm_fp8_with_bf16(%A: memref<64x32xf8E4M3FN, "shared">, %B: memref<32x64xbf16, "shared">, %C: memref<64x64xf32, "fragment">) {
  // expected-error @+1 {{'tile.gemm' op A and B element types differ: f8E4M3FN vs bf16}}
  "tile.gemm"(%A, %B, %C) : (memref<64x32xf8E4M3FN, "shared">, memref<32x64xbf16, "shared">, memref<64x64xf32, "fragment">) -> ()
  return
}

// -----

func.func @gemm_accumulator_type(%A: memref<64x32xbf16, "shared">, %B: memref<32x64xbf16, "shared">, %C: memref<64x64xf16, "fragment">) {
  // expected-error @+1 {{'tile.gemm' op accumulator element type f16 is not valid for bf16 inputs (expected f32)}}
  "tile.gemm"(%A, %B, %C) : (memref<64x32xbf16, "shared">, memref<32x64xbf16, "shared">, memref<64x64xf16, "fragment">) -> ()
  return
}

// -----
// tile.atomic_add

func.func @atomic_add_fragment_dst(%s: memref<64xf32, "fragment">, %v: f32, %i: index) {
  // expected-error @+1 {{'tile.atomic_add' op dst must be a global tensor or a shared buffer, got "fragment" memory}}
  "tile.atomic_add"(%s, %v, %i) : (memref<64xf32, "fragment">, f32, index) -> ()
  return
}

// -----

func.func @atomic_add_index_count(%Out: memref<?x64xf32>, %v: f32, %i: index) {
  // expected-error @+1 {{'tile.atomic_add' op expects 2 indices (rank of dst), got 1}}
  "tile.atomic_add"(%Out, %v, %i) : (memref<?x64xf32>, f32, index) -> ()
  return
}

// -----

func.func @atomic_add_global_value(%Out: memref<?x64xf32>, %In: memref<4x64xf32>, %i: index) {
  // expected-error @+1 {{'tile.atomic_add' op value must be a scalar or an on-chip buffer}}
  "tile.atomic_add"(%Out, %In, %i, %i) : (memref<?x64xf32>, memref<4x64xf32>, index, index) -> ()
  return
}

// -----

func.func @atomic_add_value_rank(%Out: memref<?x64xf32>, %acc: memref<2x4x64xf32, "fragment">, %i: index) {
  // expected-error @+1 {{'tile.atomic_add' op value rank 3 exceeds dst rank 2}}
  "tile.atomic_add"(%Out, %acc, %i, %i) : (memref<?x64xf32>, memref<2x4x64xf32, "fragment">, index, index) -> ()
  return
}

// -----

func.func @atomic_add_value_type(%Out: memref<?x64xf32>, %v: f16, %i: index) {
  // expected-error @+1 {{'tile.atomic_add' op value element type f16 must equal the dst element type f32}}
  "tile.atomic_add"(%Out, %v, %i, %i) : (memref<?x64xf32>, f16, index, index) -> ()
  return
}

// -----
// tile.assume

func.func @assume_not_i1(%n: i32) {
  // expected-error @+1 {{'tile.assume' op cond must be i1, got i32}}
  "tile.assume"(%n) {expr = "n > 0"} : (i32) -> ()
  return
}
