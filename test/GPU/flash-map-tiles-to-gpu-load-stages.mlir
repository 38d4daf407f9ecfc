// load-stages=2: every tile loaded in a key-block loop (K and V) gets two
// copies in shared memory, used in turn. The tiles of iteration j + 1 are
// issued at the top of iteration j, right after the one wait and barrier of
// the iteration (which also mean every thread is past iteration j - 1, the
// last reader of that copy); the copy of iteration j is picked by the parity
// of j - lb, so the load issued for j + 1 writes the other one.
// RUN: flash-opt %s --flash-tile-attention="block-rows=128 block-cols=64" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=128 tensor-cores=wgmma load-stages=2" | FileCheck %s
// The same schedule on the mma.sync path (sm_80: padded tiles, ldmatrix).
// RUN: flash-opt %s --flash-tile-attention="block-rows=128 block-cols=64" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=128 chip=sm_80 load-stages=2 swizzle-ldmatrix=0" | FileCheck %s --check-prefix=SM80
// Where the second copies do not fit the chip's shared memory, the loop keeps
// FlashAttention-2's schedule (one copy, two waits per iteration): padded
// 128 x 128 tiles at D = 128 (swizzle-ldmatrix=0; swizzled, without the
// padding, their second copies fit: 163,840 B).
// RUN: flash-opt %s --flash-tile-attention="block-rows=128 block-cols=128" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=256 chip=sm_80 load-stages=2 swizzle-ldmatrix=0" | FileCheck %s --check-prefix=FULL
// RUN: flash-opt %s --flash-tile-attention="block-rows=128 block-cols=128" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=256 chip=sm_80 load-stages=2" | FileCheck %s --check-prefix=FULL-SWIZZLED
// FULL-SWIZZLED-LABEL: func.func @plain_d128(
// FULL-SWIZZLED: flash.shared_memory_bytes = 163840 : i64
// And through NVVM to PTX (flash-gpu-pipeline's load-stages).
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_90a format=isa block-rows=128 block-cols=64 load-stages=2" | FileCheck %s --check-prefix=PTX

// CHECK-LABEL: func.func @causal_d64(
// CHECK: %[[BASE:.*]] = gpu.dynamic_shared_memory
// Before the first loop: a barrier (the copies may share bytes with what ran
// before), then K and V of its first iteration.
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK: memref.view %[[BASE]][%{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy
// CHECK: %[[FIRST:.*]]:3 = scf.for %[[J:.*]] = %[[LB:[^ ]*]] to
// CHECK-NEXT: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// CHECK-NEXT: nvvm.fence.proxy
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[REL:.*]] = arith.subi %[[J]], %[[LB]]
// CHECK: %[[PARITY:.*]] = arith.remui %[[REL]], %c2
// K: the first copy at 16 KiB (after Q), the second 16 KiB further, at
// 32 KiB (after the carved 32 KiB of Q, K and V); V at 24 and 40 KiB.
// CHECK: %[[KSTEP:.*]] = arith.muli %[[PARITY]], %c16384
// CHECK: %[[KOFF:.*]] = arith.addi %c16384{{.*}}, %[[KSTEP]]
// CHECK: %[[K:.*]] = memref.view %[[BASE]][%[[KOFF]]][]
// CHECK: %[[VSTEP:.*]] = arith.muli %[[PARITY]], %c16384
// CHECK: %[[VOFF:.*]] = arith.addi %c24576{{.*}}, %[[VSTEP]]
// CHECK: %[[V:.*]] = memref.view %[[BASE]][%[[VOFF]]][]
// Iteration j + 1's K and V, issued now.
// CHECK: %[[NEXT:.*]] = arith.addi %[[J]], %c1
// CHECK: arith.cmpi slt, %[[NEXT]],
// CHECK-NEXT: scf.if
// CHECK: nvgpu.device_async_copy
// CHECK: scf.if
// CHECK: nvgpu.device_async_copy
// No other wait in the body: S = Q Kᵀ reads this iteration's K copy, P V its V copy.
// CHECK-NOT: nvgpu.device_async_wait
// CHECK: memref.extract_aligned_pointer_as_index %[[K]]
// CHECK-NOT: nvgpu.device_async_wait
// CHECK: flashgpu.warpgroup_mma a_desc
// CHECK-NOT: nvgpu.device_async_wait
// CHECK: memref.extract_aligned_pointer_as_index %[[V]]
// CHECK-NOT: nvgpu.device_async_wait
// CHECK: flashgpu.warpgroup_mma acc
// CHECK: scf.yield
// The diagonal blocks' loop: the same schedule, over the same second copies.
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}%[[FIRST]]#0
// CHECK-NEXT: nvgpu.device_async_wait
// CHECK: arith.remui
// CHECK: arith.muli %{{.*}}, %c16384
// CHECK: flash.shared_memory_bytes = 49152 : i64, flash.warp_register_tiles, flash.wgmma

// SM80-LABEL: func.func @causal_d64(
// SM80: scf.for
// SM80-NEXT: nvgpu.device_async_wait
// SM80-NEXT: gpu.barrier
// SM80: arith.remui
// Padded rows (72 elements, swizzle-ldmatrix=0): Q 18 KiB, K and V 9 KiB each, second copies from 36 KiB.
// SM80: arith.muli %{{.*}}, %c18432
// SM80: arith.addi %c18432{{.*}}, %{{.*}}
// SM80: memref.view
// SM80-SAME: memref<64x72xbf16, #gpu.address_space<workgroup>>
// SM80: arith.muli %{{.*}}, %c18432
// SM80: arith.addi %c27648{{.*}}, %{{.*}}
// SM80-NOT: nvgpu.device_async_wait
// SM80: nvvm.mma.sync
// SM80-NOT: nvgpu.device_async_wait
// SM80: scf.yield
// SM80: flash.shared_memory_bytes = 55296 : i64, flash.warp_register_tiles

// FULL-LABEL: func.func @plain_d128(
// FULL: scf.for
// FULL-NEXT: nvgpu.device_async_wait
// FULL: nvgpu.device_async_wait
// FULL: scf.yield
// FULL: flash.shared_memory_bytes = 104448 : i64

// PTX-LABEL: causal_d64
// PTX: cp.async.cg.shared.global
// PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16

func.func @causal_d64(%q: tensor<?x?x?x64xbf16>, %k: tensor<?x?x?x64xbf16>, %v: tensor<?x?x?x64xbf16>, %o: tensor<?x?x?x64xbf16> {bufferization.writable = true}) -> tensor<?x?x?x64xbf16> {
  %r = flash.attention %q, %k, %v {causal} : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16> -> tensor<?x?x?x64xbf16>
  %w = bufferization.materialize_in_destination %r in %o : (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16>
  return %w : tensor<?x?x?x64xbf16>
}

func.func @plain_d128(%q: tensor<?x?x?x128xf16>, %k: tensor<?x?x?x128xf16>, %v: tensor<?x?x?x128xf16>, %o: tensor<?x?x?x128xf16> {bufferization.writable = true}) -> tensor<?x?x?x128xf16> {
  %r = flash.attention %q, %k, %v : tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16> -> tensor<?x?x?x128xf16>
  %w = bufferization.materialize_in_destination %r in %o : (tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16>) -> tensor<?x?x?x128xf16>
  return %w : tensor<?x?x?x128xf16>
}
