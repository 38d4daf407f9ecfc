// --flash-gpu-async-mma: each warpgroup MMA is issued async and waited for
// right before the first op that needs it done.
// RUN: flash-opt %s --flash-gpu-async-mma | FileCheck %s
// Printed as PTX: the async MMA without its wait, the wait as its own block
// whose outputs are tied to its inputs.
// RUN: flash-opt %s --flash-gpu-async-mma --convert-flashgpu-to-llvm | FileCheck %s --check-prefix=ASM

// FlashAttention-3's loop body: S = Q Kᵀ of block j, then P V of block j - 1,
// then the softmax of block j (stood for by a multiply, a store to global
// memory and a shuffle) runs while P V is in flight; a store to shared memory
// needs P V done (its tiles may be what the MMA reads), and so would a store
// through a generic pointer.
// CHECK-LABEL: func.func @overlap(
// CHECK: %[[S:.*]] = flashgpu.warpgroup_mma a_desc(%{{.*}}) b_desc(%{{.*}}) {a_rows = 128 : i64, async,
// CHECK-NEXT: %[[O:.*]] = flashgpu.warpgroup_mma acc(%{{.*}}) a_regs(%[[P:.*]] : vector<4xi32>) b_desc(%{{.*}}) {async,
// S is needed first, P V (issued after it) may stay in flight: pending 1.
// CHECK-NEXT: %[[SW:.*]] = flashgpu.warpgroup_mma_wait %[[S]] {pending = 1 : i64} : vector<16xf32>
// CHECK-NEXT: vector.extract %[[SW]][0]
// CHECK-NEXT: arith.mulf
// CHECK-NEXT: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<16xf32, #gpu.address_space<global>>
// CHECK-NEXT: gpu.shuffle
// CHECK-NEXT: %[[OW:.*]]:2 = flashgpu.warpgroup_mma_wait %[[O]], %[[P]] {pending = 0 : i64} : vector<4xf32>, vector<4xi32>
// CHECK-NEXT: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<16xf32, #gpu.address_space<workgroup>>
// Later uses of P read the wait's copy.
// CHECK-NEXT: vector.extract %[[OW]]#1[0]
// CHECK: return %[[OW]]#0
func.func @overlap(%a: i32, %b: i32, %acc: vector<4xf32>, %p: vector<4xi32>, %x: f32, %g: memref<16xf32, #gpu.address_space<global>>, %smem: memref<16xf32, #gpu.address_space<workgroup>>) -> (vector<4xf32>, i32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : i32
  %c32 = arith.constant 32 : i32
  %s = flashgpu.warpgroup_mma a_desc(%a) b_desc(%b) {n = 16 : i64, k_steps = 8 : i64, slices = 2 : i64, element_type = bf16, a_rows = 128 : i64, b_rows = 16 : i64, b_k_major} : vector<16xf32>
  %o = flashgpu.warpgroup_mma acc(%acc) a_regs(%p : vector<4xi32>) b_desc(%b) {n = 8 : i64, k_steps = 1 : i64, slices = 1 : i64, element_type = bf16, b_rows = 16 : i64} : vector<4xf32>
  %e = vector.extract %s[0] : f32 from vector<16xf32>
  %y = arith.mulf %e, %x : f32
  memref.store %y, %g[%c0] : memref<16xf32, #gpu.address_space<global>>
  %r, %ok = gpu.shuffle xor %y, %c1, %c32 : f32
  memref.store %r, %smem[%c0] : memref<16xf32, #gpu.address_space<workgroup>>
  %q = vector.extract %p[0] : i32 from vector<4xi32>
  return %o, %q : vector<4xf32>, i32
}

// A barrier lets the other threads overwrite the tiles: the wait comes
// before it even when nothing reads the result yet.
// CHECK-LABEL: func.func @barrier(
// CHECK: flashgpu.warpgroup_mma {{.*}}async
// CHECK-NEXT: flashgpu.warpgroup_mma_wait
// CHECK-NEXT: gpu.barrier
func.func @barrier(%a: i32, %b: i32) -> vector<16xf32> {
  %s = flashgpu.warpgroup_mma a_desc(%a) b_desc(%b) {n = 16 : i64, k_steps = 8 : i64, slices = 2 : i64, element_type = bf16, a_rows = 128 : i64, b_rows = 16 : i64, b_k_major} : vector<16xf32>
  gpu.barrier
  return %s : vector<16xf32>
}

// A wait never leaves the block: an MMA in a loop body is done by its yield.
// CHECK-LABEL: func.func @loop(
// CHECK: scf.for
// CHECK: flashgpu.warpgroup_mma acc({{.*}}async
// CHECK-NEXT: %[[W:.*]]:2 = flashgpu.warpgroup_mma_wait %{{.*}}, %{{.*}} {pending = 0 : i64}
// CHECK-NEXT: scf.yield %[[W]]#0
func.func @loop(%acc: vector<4xf32>, %p: vector<4xi32>, %b: i32, %n: index) -> vector<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%o = %acc) -> vector<4xf32> {
    %next = flashgpu.warpgroup_mma acc(%o) a_regs(%p : vector<4xi32>) b_desc(%b) {n = 8 : i64, k_steps = 1 : i64, slices = 1 : i64, element_type = bf16, b_rows = 16 : i64} : vector<4xf32>
    scf.yield %next : vector<4xf32>
  }
  return %r : vector<4xf32>
}

// The warp mapping moves an MMA's result into its fragment layout right after
// it (vector.extract / insert); those moves go down to the first op that
// computes with the result, and the wait with them.
// CHECK-LABEL: func.func @moves(
// CHECK: %[[M:.*]] = flashgpu.warpgroup_mma {{.*}}async
// CHECK-NEXT: arith.mulf %arg2, %arg2
// CHECK-NEXT: %[[W:.*]] = flashgpu.warpgroup_mma_wait %[[M]] {pending = 0 : i64}
// CHECK-NEXT: vector.extract %[[W]][0]
// CHECK-NEXT: vector.insert
// CHECK-NEXT: vector.reduction <add>
func.func @moves(%a: i32, %b: i32, %x: f32, %into: vector<2xf32>) -> (f32, f32) {
  %s = flashgpu.warpgroup_mma a_desc(%a) b_desc(%b) {n = 16 : i64, k_steps = 8 : i64, slices = 2 : i64, element_type = bf16, a_rows = 128 : i64, b_rows = 16 : i64, b_k_major} : vector<16xf32>
  %e = vector.extract %s[0] : f32 from vector<16xf32>
  %v = vector.insert %e, %into [1] : f32 into vector<2xf32>
  %y = arith.mulf %x, %x : f32
  %r = vector.reduction <add>, %v : vector<2xf32> into f32
  return %r, %y : f32, f32
}

// ASM-LABEL: func.func @overlap(
// ASM: llvm.inline_asm has_side_effects {{.*}}wgmma.commit_group.sync.aligned;\0A}"
// ASM: llvm.inline_asm has_side_effects {{.*}}wgmma.commit_group.sync.aligned;\0A}"
// ASM: llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 1;", "=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,=f,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,~{memory}"
// ASM: llvm.inline_asm has_side_effects asm_dialect = att "wgmma.wait_group.sync.aligned 0;", "=f,=f,=f,=f,=r,=r,=r,=r,0,1,2,3,4,5,6,7,~{memory}"
