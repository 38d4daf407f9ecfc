// The warp register tiles on Hopper's warpgroup MMA (tensor-cores=wgmma):
// Q, K and V are stored in shared memory with the 128-byte swizzle (written
// by cp.async at swizzled offsets), read by wgmma.mma_async through matrix
// descriptors; each contraction is one flashgpu.warpgroup_mma (the MMAs of
// every 64-row slice and k step between a fence and a wait), printed as PTX
// by --convert-flashgpu-to-llvm (test/GPU/convert-flashgpu-to-llvm.mlir).
// RUN: flash-opt %s --flash-tile-attention="block-rows=128 block-cols=64" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=128 tensor-cores=wgmma" | FileCheck %s
// Two warpgroups (8 warps) split the 128 rows: one 64-row slice each.
// RUN: flash-opt %s --flash-tile-attention="block-rows=128 block-cols=64" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=256 tensor-cores=wgmma" | FileCheck %s --check-prefix=GROUPS
// And through NVVM to PTX for sm_90a.
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_90a format=isa block-rows=128 block-cols=64 tensor-cores=wgmma" | FileCheck %s --check-prefix=PTX

// CHECK-LABEL: func.func @attention(
// The swizzle pattern repeats every 1024 bytes from a 1024-byte aligned base.
// CHECK: %[[BASE:.*]] = gpu.dynamic_shared_memory
// CHECK: memref.extract_aligned_pointer_as_index %[[BASE]]
// CHECK: arith.remui %{{.*}}, %c1024
// CHECK: llvm.intr.trap
// Q [128, 64], K and V [64, 64] (K and V once per key-block loop), unpadded.
// CHECK: memref.memory_space_cast %{{.*}} {flash.swizzled_128b} : memref<128x64xbf16, #gpu.address_space<workgroup>> to memref<128x64xbf16>
// CHECK-COUNT-4: memref.memory_space_cast %{{.*}} {flash.swizzled_128b} : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16>
// Q's 16-byte chunks land at (row, chunk ^ row % 8) through a flat view.
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0, 1]] : memref<128x64xbf16, #gpu.address_space<workgroup>> into memref<8192xbf16, #gpu.address_space<workgroup>>
// CHECK: arith.xori
// CHECK: nvgpu.device_async_copy %{{.*}}, %[[FLAT]][%{{.*}}], 8
// Each wait is fenced towards the async proxy before the barrier.
// CHECK: scf.for
// CHECK: nvgpu.device_async_wait
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: gpu.barrier
// S = Q Kᵀ: A and B by descriptor (K-major), two 64-row slices, a fresh
// accumulator (S is not read: no acc operand), four k steps of 16.
// CHECK: flashgpu.warpgroup_mma a_desc(%{{.*}}) b_desc(%{{.*}}) {a_rows = 128 : i64, b_k_major, b_rows = 64 : i64, element_type = bf16, flash.contraction = "scores", k_steps = 4 : i64, n = 64 : i64, slices = 2 : i64} : vector<64xf32>
// The next K block is issued only after the MMA that reads K through its
// descriptor.
// CHECK-NEXT: nvgpu.device_async_wait
// CHECK-NEXT: nvvm.fence.proxy
// CHECK-NEXT: gpu.barrier
// CHECK: scf.if
// CHECK: nvgpu.device_async_copy
// P V: P from registers (four i32 per slice and k step), V as [k, n] rows
// (not K-major), accumulating into O.
// CHECK: flashgpu.warpgroup_mma acc(%{{.*}}) a_regs(%{{.*}} : vector<32xi32>) b_desc(%{{.*}}) {b_rows = 64 : i64, element_type = bf16, flash.contraction = "output", k_steps = 4 : i64, n = 64 : i64, slices = 2 : i64} : vector<64xf32>
// CHECK: flash.shared_memory_bytes = 32768 : i64, flash.warp_register_tiles, flash.wgmma

// GROUPS-LABEL: func.func @attention(
// Warpgroup g starts at row 64 g: 512 x 16 bytes into Q.
// GROUPS: arith.divui %{{.*}}, %c4
// GROUPS: arith.muli %{{.*}}, %c512
// GROUPS: flashgpu.warpgroup_mma a_desc(%{{.*}}) b_desc(%{{.*}}) {a_rows = 128 : i64, b_k_major, b_rows = 64 : i64, element_type = bf16, flash.contraction = "scores", k_steps = 4 : i64, n = 64 : i64, slices = 1 : i64} : vector<32xf32>

// PTX: .target sm_90a
// PTX: fence.proxy.async.shared::cta;
// PTX: wgmma.fence.sync.aligned;
// PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// PTX: wgmma.wait_group.sync.aligned 0;
func.func @attention(%q: tensor<?x?x?x64xbf16>, %k: tensor<?x?x?x64xbf16>, %v: tensor<?x?x?x64xbf16>, %o: tensor<?x?x?x64xbf16> {bufferization.writable = true}) -> tensor<?x?x?x64xbf16> {
  %r = flash.attention %q, %k, %v : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16> -> tensor<?x?x?x64xbf16>
  %w = bufferization.materialize_in_destination %r in %o : (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16>
  return %w : tensor<?x?x?x64xbf16>
}

// D = 96 is not a whole number of 64-column swizzle panels: this launch stays
// on mma.sync with padded tiles.
// CHECK-LABEL: func.func @attention_d96(
// CHECK-NOT: flash.swizzled_128b
// CHECK-NOT: flashgpu.warpgroup_mma
// CHECK: nvvm.mma.sync
// CHECK-NOT: flash.wgmma
// CHECK: flash.shared_memory_bytes = {{[0-9]+}} : i64, flash.warp_register_tiles}
func.func @attention_d96(%q: tensor<?x?x?x96xf16>, %k: tensor<?x?x?x96xf16>, %v: tensor<?x?x?x96xf16>, %o: tensor<?x?x?x96xf16> {bufferization.writable = true}) -> tensor<?x?x?x96xf16> {
  %r = flash.attention %q, %k, %v : tensor<?x?x?x96xf16>, tensor<?x?x?x96xf16>, tensor<?x?x?x96xf16> -> tensor<?x?x?x96xf16>
  %w = bufferization.materialize_in_destination %r in %o : (tensor<?x?x?x96xf16>, tensor<?x?x?x96xf16>) -> tensor<?x?x?x96xf16>
  return %w : tensor<?x?x?x96xf16>
}
