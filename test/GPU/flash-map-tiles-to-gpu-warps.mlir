// RUN: flash-opt %s --flash-tile-attention="block-rows=64 block-cols=32" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=64 swizzle-ldmatrix=0" | FileCheck %s
// RUN: flash-opt %s --flash-tile-attention="block-rows=64 block-cols=32" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=64" | FileCheck %s --check-prefix=SUMS
// RUN: flash-opt %s --flash-tile-attention="block-rows=64 block-cols=32" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=64 register-tiles=false async-copies=false" | FileCheck %s --check-prefix=SHARED
// RUN: flash-opt %s --flash-tile-attention="block-rows=64 block-cols=32" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=64 async-copies=false" | FileCheck %s --check-prefix=GENERAL
// RUN: flash-opt %s --flash-tile-attention="block-rows=64 block-cols=32" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=64 lazy-rescale=0" | FileCheck %s --check-prefix=EAGER

// The FlashAttention-2 mapping: 2 warps own 32 of the block's 64 query rows
// each; the scores, probabilities, running max/sum and accumulator live in
// registers (per lane: 4 row slots, 64 accumulator elements); Q, K and V
// tiles are loaded with cp.async into padded shared memory; K is loaded one
// key block ahead. The accumulator rescale is skipped behind a warp vote when
// no row max moved (with lazy-rescale, the default; without it the
// accumulator is multiplied every key block).
// The row sums stay per-lane partials through both key loops (each has
// only the row maxima's 2 x 4 shuffles) and are added over the quad once,
// before the division.
// SUMS-LABEL: func @attention
// SUMS: scf.for {{.*}} -> (vector<4xf32>, vector<4xf32>, vector<64xf32>)
// SUMS-COUNT-8: gpu.shuffle  xor
// SUMS-NOT: gpu.shuffle
// SUMS: scf.yield {{.*}} : vector<4xf32>, vector<4xf32>, vector<64xf32>
// SUMS: scf.for {{.*}} -> (vector<4xf32>, vector<4xf32>, vector<64xf32>)
// SUMS-COUNT-8: gpu.shuffle  xor
// SUMS-NOT: gpu.shuffle
// SUMS: scf.yield {{.*}} : vector<4xf32>, vector<4xf32>, vector<64xf32>
// SUMS-COUNT-8: gpu.shuffle  xor
// SUMS-NOT: gpu.shuffle
// SUMS: arith.divf
// EAGER-LABEL: func @attention
// EAGER: math.exp2
// EAGER-NOT: nvvm.vote.sync
// EAGER: nvvm.mma.sync
// EAGER-NOT: nvvm.vote.sync

// CHECK-LABEL: func @attention
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %c64{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}})
// cp.async needs contiguous 16-byte aligned rows: checked on the arguments
// at entry (the runtime takes the general kernel otherwise).
// CHECK: memref.extract_strided_metadata %{{.*}} : memref<?x?x?x64xbf16, strided<[?, ?, ?, ?], offset: ?>>
// CHECK: scf.if
// CHECK-NEXT: llvm.intr.trap
// With swizzle-ldmatrix=0 (this run), 64-element (128-byte) rows padded to
// 72 elements: ldmatrix rows hit different banks (by default such tiles are
// swizzled instead: flash-gpu-assign-tile-storage.mlir).
// CHECK: memref.view {{.*}} to memref<64x72xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[Q:.*]] = memref.subview %{{.*}}[0, 0] [64, 64] [1, 1] : {{.*}} to memref<64x64xbf16, strided<[72, 1]>, #gpu.address_space<workgroup>>
// CHECK: %[[K:.*]] = memref.subview %{{.*}}[0, 0] [32, 64] [1, 1] : {{.*}} to memref<32x64xbf16, strided<[72, 1]>, #gpu.address_space<workgroup>>
// CHECK: %[[V:.*]] = memref.subview %{{.*}}[0, 0] [32, 64] [1, 1] : {{.*}} to memref<32x64xbf16, strided<[72, 1]>, #gpu.address_space<workgroup>>
// Q: 16-byte copies with zero fill past the valid rows.
// CHECK: %[[QLOAD:.*]] = scf.execute_region -> !nvgpu.device.async.token {
// CHECK: nvgpu.device_async_copy %{{.*}}[%{{.*}}, %{{.*}}], %[[Q]][%{{.*}}, %{{.*}}], 8, %{{.*}} {bypassL1}
// CHECK: nvgpu.device_async_create_group
// The first K block is issued before the loop.
// CHECK: scf.if
// CHECK: nvgpu.device_async_copy %{{.*}}, %[[K]]
// CHECK: nvgpu.device_async_wait %[[QLOAD]] {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier
// m, l and the accumulator are carried in registers; S and P are not.
// CHECK: scf.for %{{.*}} iter_args(%{{.*}}, %{{.*}}, %{{.*}}) -> (vector<4xf32>, vector<4xf32>, vector<64xf32>)
// CHECK-NEXT: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier
// V of this block is issued at the top.
// CHECK: nvgpu.device_async_copy %{{.*}}, %[[V]]
// S = Q Kᵀ: ldmatrix.x4 fragments, mma.sync m16n8k16, two 16-row slices per
// warp sharing each K fragment.
// CHECK: nvgpu.ldmatrix %[[Q]]{{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK: nvgpu.ldmatrix %[[K]]{{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK: nvvm.mma.sync {{.*}} {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>}
// After the last read of K: wait for V, then issue the next K block.
// CHECK: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK: scf.if
// CHECK: nvgpu.device_async_copy %{{.*}}, %[[K]]
// Row max over the lane's columns, then across the quad.
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32
// exp2 per element (on MUFU after --flash-gpu-fast-exp2).
// CHECK: math.exp2 %{{.*}} : f32
// CHECK: nvvm.vote.sync any
// CHECK: scf.if %{{.*}} -> (vector<64xf32>)
// P V with P from registers, V through ldmatrix.trans.
// CHECK: nvgpu.ldmatrix %[[V]]{{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK: nvvm.mma.sync
// CHECK: scf.yield %{{.*}}, %{{.*}}, %{{.*}} : vector<4xf32>, vector<4xf32>, vector<64xf32>
// O = acc * (1 / l), stored by each lane for its valid rows, two adjacent
// columns per store (flash-map-tiles-to-gpu-pair-stores.mlir).
// CHECK: arith.divf %cst{{.*}}, %{{.*}} : f32
// CHECK: arith.mulf
// CHECK: scf.if
// CHECK: vector.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : memref<?x64xbf16, strided<[?, 1], offset: ?>>, vector<2xbf16>
// CHECK: flash.shared_memory_bytes = {{[0-9]+}} : i64, flash.warp_register_tiles

// The general kernel (flash-compile's `_general`): the same registers, element
// copies that take any strides, no entry check, a barrier after each copy.
// GENERAL-LABEL: func @attention
// GENERAL-NOT: llvm.intr.trap
// GENERAL-NOT: nvgpu.device_async_copy
// GENERAL: scf.for %{{.*}} iter_args(%{{.*}}, %{{.*}}, %{{.*}}) -> (vector<4xf32>, vector<4xf32>, vector<64xf32>)
// GENERAL-NEXT: gpu.barrier
// GENERAL: memref.load %{{.*}} : memref<?x64xbf16, strided<[?, ?], offset: ?>>
// GENERAL: memref.store %{{.*}} : memref<?x64xbf16, strided<[72, 1]>>
// GENERAL: gpu.barrier
// GENERAL: nvvm.mma.sync
// GENERAL: flash.warp_register_tiles

// Without them: every tile in shared memory, element copies, no entry check.
// SHARED-LABEL: func @attention
// SHARED-NOT: llvm.intr.trap
// SHARED-NOT: nvgpu.device_async_copy
// SHARED-NOT: gpu.shuffle
// SHARED: memref.view {{.*}} to memref<64x64xbf16, #gpu.address_space<workgroup>>
// SHARED-NOT: flash.warp_register_tiles
func.func @attention(%q: tensor<?x?x?x64xbf16>, %k: tensor<?x?x?x64xbf16>, %v: tensor<?x?x?x64xbf16>, %o: tensor<?x?x?x64xbf16> {bufferization.writable = true}) -> tensor<?x?x?x64xbf16> {
  %r = flash.attention %q, %k, %v : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16> -> tensor<?x?x?x64xbf16>
  %w = bufferization.materialize_in_destination %r in %o : (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16>
  return %w : tensor<?x?x?x64xbf16>
}
