// flashgpu.warpgroup_mma's verifier: each inconsistency named.
// RUN: flash-opt %s -split-input-file -verify-diagnostics

func.func @n_not_multiple_of_8(%a: i32, %b: i32) -> vector<30xf32> {
  // expected-error @+1 {{n = 60 is not a multiple of 8}}
  %s = flashgpu.warpgroup_mma a_desc(%a) b_desc(%b) {n = 60 : i64, k_steps = 4 : i64, slices = 1 : i64, element_type = bf16, a_rows = 64 : i64, b_rows = 64 : i64, b_k_major} : vector<30xf32>
  return %s : vector<30xf32>
}

// -----

func.func @n_too_large(%a: i32, %b: i32) -> vector<132xf32> {
  // expected-error @+1 {{attribute 'n' failed to satisfy constraint}}
  %s = flashgpu.warpgroup_mma a_desc(%a) b_desc(%b) {n = 264 : i64, k_steps = 4 : i64, slices = 1 : i64, element_type = bf16, a_rows = 64 : i64, b_rows = 264 : i64, b_k_major} : vector<132xf32>
  return %s : vector<132xf32>
}

// -----

func.func @result_size(%a: i32, %b: i32) -> vector<32xf32> {
  // expected-error @+1 {{result holds 32 values per thread; 2 slice(s) of m64n64 hold 64}}
  %s = flashgpu.warpgroup_mma a_desc(%a) b_desc(%b) {n = 64 : i64, k_steps = 4 : i64, slices = 2 : i64, element_type = bf16, a_rows = 128 : i64, b_rows = 64 : i64, b_k_major} : vector<32xf32>
  return %s : vector<32xf32>
}

// -----

func.func @element_type(%a: i32, %b: i32) -> vector<32xf32> {
  // expected-error @+1 {{element type must be f16 or bf16, got 'f32'}}
  %s = flashgpu.warpgroup_mma a_desc(%a) b_desc(%b) {n = 64 : i64, k_steps = 4 : i64, slices = 1 : i64, element_type = f32, a_rows = 64 : i64, b_rows = 64 : i64, b_k_major} : vector<32xf32>
  return %s : vector<32xf32>
}

// -----

func.func @two_a_operands(%a: i32, %p: vector<16xi32>, %b: i32) -> vector<32xf32> {
  // expected-error @+1 {{needs A as exactly one of a shared-memory descriptor (a_desc) or register fragments (a_regs)}}
  %s = flashgpu.warpgroup_mma a_desc(%a) a_regs(%p : vector<16xi32>) b_desc(%b) {n = 64 : i64, k_steps = 4 : i64, slices = 1 : i64, element_type = bf16, a_rows = 64 : i64, b_rows = 64 : i64} : vector<32xf32>
  return %s : vector<32xf32>
}

// -----

func.func @no_a_rows(%a: i32, %b: i32) -> vector<32xf32> {
  // expected-error @+1 {{a_desc needs a_rows (the A tile's row count)}}
  %s = flashgpu.warpgroup_mma a_desc(%a) b_desc(%b) {n = 64 : i64, k_steps = 4 : i64, slices = 1 : i64, element_type = bf16, b_rows = 64 : i64, b_k_major} : vector<32xf32>
  return %s : vector<32xf32>
}

// -----

func.func @a_rows_short(%a: i32, %b: i32) -> vector<64xf32> {
  // expected-error @+1 {{a_rows = 64 has fewer rows than 2 slice(s) of 64}}
  %s = flashgpu.warpgroup_mma a_desc(%a) b_desc(%b) {n = 64 : i64, k_steps = 4 : i64, slices = 2 : i64, element_type = bf16, a_rows = 64 : i64, b_rows = 64 : i64, b_k_major} : vector<64xf32>
  return %s : vector<64xf32>
}

// -----

func.func @fragments(%acc: vector<64xf32>, %p: vector<8xi32>, %b: i32) -> vector<64xf32> {
  // expected-error @+1 {{a_regs holds 8 words; 1 slice(s) of 4 k step(s) need 16}}
  %o = flashgpu.warpgroup_mma acc(%acc) a_regs(%p : vector<8xi32>) b_desc(%b) {n = 128 : i64, k_steps = 4 : i64, slices = 1 : i64, element_type = f16, b_rows = 64 : i64} : vector<64xf32>
  return %o : vector<64xf32>
}

// -----

// expected-note @+1 {{prior use here}}
func.func @accumulator_type(%acc: vector<64xf32>, %p: vector<16xi32>, %b: i32) -> vector<32xf32> {
  // expected-error @+1 {{use of value '%acc' expects different type than prior uses: 'vector<32xf32>' vs 'vector<64xf32>'}}
  %o = flashgpu.warpgroup_mma acc(%acc) a_regs(%p : vector<16xi32>) b_desc(%b) {n = 64 : i64, k_steps = 4 : i64, slices = 1 : i64, element_type = f16, b_rows = 64 : i64} : vector<32xf32>
  return %o : vector<32xf32>
}

// -----

func.func @b_rows_k_major(%a: i32, %b: i32) -> vector<64xf32> {
  // expected-error @+1 {{b_rows = 64 is less than the 128 rows that n reads}}
  %s = flashgpu.warpgroup_mma a_desc(%a) b_desc(%b) {n = 128 : i64, k_steps = 4 : i64, slices = 1 : i64, element_type = bf16, a_rows = 64 : i64, b_rows = 64 : i64, b_k_major} : vector<64xf32>
  return %s : vector<64xf32>
}

// -----

func.func @b_rows_n_major(%acc: vector<64xf32>, %p: vector<16xi32>, %b: i32) -> vector<64xf32> {
  // expected-error @+1 {{b_rows = 32 is less than the 64 rows that k = 16 * k_steps reads}}
  %o = flashgpu.warpgroup_mma acc(%acc) a_regs(%p : vector<16xi32>) b_desc(%b) {n = 128 : i64, k_steps = 4 : i64, slices = 1 : i64, element_type = f16, b_rows = 32 : i64} : vector<64xf32>
  return %o : vector<64xf32>
}

// -----

func.func @a_rows_unaligned(%a: i32, %b: i32) -> vector<32xf32> {
  // expected-error @+1 {{a_rows = 65 is not a multiple of 8}}
  %s = flashgpu.warpgroup_mma a_desc(%a) b_desc(%b) {n = 64 : i64, k_steps = 4 : i64, slices = 1 : i64, element_type = bf16, a_rows = 65 : i64, b_rows = 64 : i64, b_k_major} : vector<32xf32>
  return %s : vector<32xf32>
}

// -----

func.func @a_rows_with_registers(%acc: vector<64xf32>, %p: vector<16xi32>, %b: i32) -> vector<64xf32> {
  // expected-error @+1 {{a_rows describes a shared A tile; A is in registers}}
  %o = flashgpu.warpgroup_mma acc(%acc) a_regs(%p : vector<16xi32>) b_desc(%b) {n = 128 : i64, k_steps = 4 : i64, slices = 1 : i64, element_type = f16, a_rows = 64 : i64, b_rows = 64 : i64} : vector<64xf32>
  return %o : vector<64xf32>
}

// -----

func.func @async_result_used_directly(%a: i32, %b: i32) -> vector<8xf32> {
  // expected-error @+1 {{is async: its result may only be used by flashgpu.warpgroup_mma_wait, not by func.return}}
  %s = flashgpu.warpgroup_mma a_desc(%a) b_desc(%b) {n = 16 : i64, k_steps = 4 : i64, slices = 1 : i64, element_type = bf16, a_rows = 64 : i64, b_rows = 16 : i64, b_k_major, async} : vector<8xf32>
  return %s : vector<8xf32>
}

// -----

func.func @wait_without_async_mma(%v: vector<8xf32>) -> vector<8xf32> {
  // expected-error @+1 {{returns no async flashgpu.warpgroup_mma result}}
  %w = flashgpu.warpgroup_mma_wait %v {pending = 0 : i64} : vector<8xf32>
  return %w : vector<8xf32>
}

// -----

func.func @wait_negative_pending(%a: i32, %b: i32) -> vector<8xf32> {
  %s = flashgpu.warpgroup_mma a_desc(%a) b_desc(%b) {n = 16 : i64, k_steps = 4 : i64, slices = 1 : i64, element_type = bf16, a_rows = 64 : i64, b_rows = 16 : i64, b_k_major, async} : vector<8xf32>
  // expected-error @+1 {{attribute 'pending' failed to satisfy constraint}}
  %w = flashgpu.warpgroup_mma_wait %s {pending = -1 : i64} : vector<8xf32>
  return %w : vector<8xf32>
}

// -----

func.func @reduce_add_indices(%x: f32, %d: memref<16x128xf32>, %i: index) {
  // expected-error @+1 {{takes one index per dimension of its destination (2), got 1}}
  flashgpu.reduce_add %x, %d[%i] : f32, memref<16x128xf32>
  return
}

// -----

func.func @reduce_add_width(%x: vector<3xf32>, %d: memref<16x128xf32>, %i: index) {
  // expected-error @+1 {{adds 1, 2 or 4 adjacent elements, not 3}}
  flashgpu.reduce_add %x, %d[%i, %i] : vector<3xf32>, memref<16x128xf32>
  return
}

// -----

func.func @reduce_add_shared(%x: f32, %d: memref<16x128xf32, #gpu.address_space<workgroup>>, %i: index) {
  // expected-error @+1 {{reduces into global memory, not #gpu.address_space<workgroup>}}
  flashgpu.reduce_add %x, %d[%i, %i] : f32, memref<16x128xf32, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @m_major_a_in_registers(%acc: vector<4xf32>, %p: vector<4xi32>, %b: i32) -> vector<4xf32> {
  // expected-error @+1 {{a_m_major describes a shared A tile; A is in registers}}
  %s = flashgpu.warpgroup_mma acc(%acc) a_regs(%p : vector<4xi32>) b_desc(%b) {n = 8 : i64, k_steps = 1 : i64, slices = 1 : i64, element_type = f16, b_rows = 16 : i64, a_m_major} : vector<4xf32>
  return %s : vector<4xf32>
}

// -----

func.func @m_major_a_too_few_rows(%a: i32, %b: i32) -> vector<32xf32> {
  // expected-error @+1 {{a_rows = 16 has fewer rows than 2 k step(s) of 16}}
  %s = flashgpu.warpgroup_mma a_desc(%a) b_desc(%b) {n = 64 : i64, k_steps = 2 : i64, slices = 1 : i64, element_type = bf16, a_rows = 16 : i64, b_rows = 128 : i64, a_m_major} : vector<32xf32>
  return %s : vector<32xf32>
}

// -----

func.func @last_arrival_indices(%c: memref<?x?x?xi32>, %i: index) -> i1 {
  // expected-error @+1 {{takes one index per dimension of its counter (3), got 2}}
  %l = flashgpu.last_arrival %c[%i, %i] of %i : memref<?x?x?xi32>
  return %l : i1
}

// -----

func.func @last_arrival_shared(%c: memref<4xi32, #gpu.address_space<workgroup>>, %i: index) -> i1 {
  // expected-error @+1 {{counts in global memory, not #gpu.address_space<workgroup>}}
  %l = flashgpu.last_arrival %c[%i] of %i : memref<4xi32, #gpu.address_space<workgroup>>
  return %l : i1
}

// -----

func.func @last_arrival_half_barrier(%c: memref<4xi32>, %i: index) -> i1 {
  // expected-error @+1 {{names a barrier by both its id and its threads, or by neither (the CTA's)}}
  %l = flashgpu.last_arrival %c[%i] of %i {barrier_id = 1 : i32} : memref<4xi32>
  return %l : i1
}

// -----

func.func @last_arrival_warps(%c: memref<4xi32>, %i: index) -> i1 {
  // expected-error @+1 {{synchronises whole warps of a CTA (at most 1024 threads), not 100 threads}}
  %l = flashgpu.last_arrival %c[%i] of %i {barrier_id = 1 : i32, barrier_threads = 100 : i32} : memref<4xi32>
  return %l : i1
}

// -----

func.func @last_arrival_barrier_id(%c: memref<4xi32>, %i: index) -> i1 {
  // expected-error @+1 {{names barrier 16; a CTA has 0 to 15}}
  %l = flashgpu.last_arrival %c[%i] of %i {barrier_id = 16 : i32, barrier_threads = 128 : i32} : memref<4xi32>
  return %l : i1
}
