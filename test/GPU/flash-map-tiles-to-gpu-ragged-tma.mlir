// ragged-tma (with tma-loads and warp-specialize): key tiles whose valid rows
// end before their tensor's take the TMA ring too. A ragged KV cache
// (key_lengths): the producer reads the sequence's length itself (a kernel
// argument the launch never writes) for its loops' bounds and issues K's and
// V's boxes whole; in the masked (last) key loop, once a position's boxes
// are in, the consumers zero V's rows past the block's valid ones (16-byte
// stores into both 64-column panels of the swizzled tile, a fence towards
// the async proxy, named barrier 1 over the 256 consumer threads) before
// P V, which reads that copy. The unmasked loop's blocks are whole: no
// zeroing there. K's tail is left (its scores are selected to -inf).
// RUN: flash-opt %s --flash-tile-attention="block-rows=128 block-cols=128" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=256 tensor-cores=wgmma load-stages=2 tma-loads=1 warp-specialize=1 ragged-tma=1" --flash-gpu-split-warp-roles="ping-pong=1" | FileCheck %s
// Without ragged-tma those tiles are no TMA boxes: no producer, no TMA.
// RUN: flash-opt %s --flash-tile-attention="block-rows=128 block-cols=128" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=256 tensor-cores=wgmma load-stages=2 tma-loads=1 warp-specialize=1" --flash-gpu-split-warp-roles="ping-pong=1" | FileCheck %s --check-prefix=OFF
// exit-empty-tiles=0: the tile's skip is dropped, the CTA runs its empty tile.
// RUN: flash-opt %s --flash-tile-attention="block-rows=128 block-cols=128" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=256 tensor-cores=wgmma load-stages=2 tma-loads=1 warp-specialize=1 ragged-tma=1 exit-empty-tiles=0" --flash-gpu-split-warp-roles="ping-pong=1" | FileCheck %s --check-prefix=NOEXIT
// And to PTX, where ptxas takes both kernels.
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_90a format=isa block-rows=128 block-cols=128 threads=256 load-stages=2 tma-loads=1 warp-specialize=1 ping-pong=1 ragged-tma=1" | FileCheck %s --check-prefix=PTX

// CHECK-LABEL: func.func @decode(
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{[^ ]*}} = %c384,
// CHECK: %[[LENGTH:.*]] = memref.load %arg3[%{{.*}}] : memref<?xi32
// CHECK: scf.for
// CHECK: nvgpu.tma.async.load
// CHECK: scf.for
// CHECK: nvgpu.tma.async.load
// CHECK: } {flash.warp_role = "producer"}
// The unmasked loop: waits, no zeroing.
// CHECK: scf.for
// CHECK: nvgpu.mbarrier.try_wait.parity
// CHECK-NOT: nvvm.fence.proxy
// CHECK: flash.contraction = "output"
// The masked loop.
// CHECK: scf.for
// K's copy, then V's.
// CHECK: memref.view %{{.*}} to memref<128x128xbf16, #gpu.address_space<workgroup>>
// CHECK: %[[VIEW:.*]] = memref.view %{{.*}} to memref<128x128xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.mbarrier.try_wait.parity
// CHECK: nvgpu.mbarrier.try_wait.parity
// CHECK: %[[VALID:.*]] = arith.minsi %{{.*}}, %c128
// CHECK: %[[RAGGED:.*]] = arith.cmpi ult, %[[VALID]], %c128
// CHECK-NEXT: scf.if %[[RAGGED]] {
// CHECK-NEXT: %[[FLAT:.*]] = memref.collapse_shape %[[VIEW]] {{\[\[}}0, 1]] : memref<128x128xbf16, #gpu.address_space<workgroup>> into memref<16384xbf16, #gpu.address_space<workgroup>>
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c256
// CHECK: vector.store %{{.*}}, %[[FLAT]][%{{.*}}] {alignment = 16 : i64} : memref<16384xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: vector.store %{{.*}}, %[[FLAT]][%{{.*}}] {alignment = 16 : i64} : memref<16384xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK: nvvm.barrier id = %c1_i32{{.*}} number_of_threads = %c256_i32
// CHECK: memref.extract_aligned_pointer_as_index %[[VIEW]]
// CHECK: flashgpu.warpgroup_mma {{.*}}flash.contraction = "output", flash.ragged_keys
// CHECK: } {flash.warp_role = "consumer"}

// Packed sequences: a block past its sequence's rows ends the CTA once the
// barriers are set up, before the roles split (flash.skip_tile; its rows
// from cu_seqlens_q); the producer reads the offsets; Q (a ragged head tile)
// stays on cp.async in the consumers' code; V's tail is zeroed as above.
// CHECK-LABEL: func.func @prefill(
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{[^ ]*}} = %c384,
// CHECK: gpu.barrier
// CHECK: memref.load %arg3
// CHECK: %[[EMPTY:.*]] = arith.cmpi eq, %{{.*}}, %c0
// CHECK-NEXT: scf.if %[[EMPTY]] {
// CHECK-NEXT: flashgpu.exit
// CHECK-NEXT: }
// CHECK-NEXT: scf.if
// CHECK: memref.load %arg4
// CHECK: nvgpu.tma.async.load
// CHECK: } {flash.warp_role = "producer"}
// CHECK: nvgpu.device_async_copy
// CHECK: scf.if
// CHECK: vector.store
// CHECK: nvvm.fence.proxy
// CHECK: } {flash.warp_role = "consumer"}

// NOEXIT-LABEL: func.func @prefill(
// NOEXIT-NOT: flashgpu.exit
// NOEXIT-NOT: flash.skip_tile
// NOEXIT: } {flash.warp_role = "producer"}

// OFF-LABEL: func.func @decode(
// OFF: gpu.launch {{.*}} threads({{.*}}) in (%{{[^ ]*}} = %c256,
// OFF-NOT: nvgpu.tma.async.load
// OFF-LABEL: func.func @prefill(
// OFF: gpu.launch {{.*}} threads({{.*}}) in (%{{[^ ]*}} = %c256,
// OFF-NOT: nvgpu.tma.async.load

// In each kernel: the producer's boxes, and in the consumers' masked loop the
// zero stores (both panels), the fence, named barrier 1 over the 256
// consumers, then the ping-pong's turn barrier before S = Q Kᵀ.
// PTX: .entry decode_kernel(
// PTX-SAME: cp.async.bulk.tensor.4d
// PTX-SAME: st.shared.v4.b32 \09[{{[^]]*}}], {0, 0, 0, 0};\0A\09st.shared.v4.b32 \09[{{[^]]*}}], {0, 0, 0, 0};
// PTX-SAME: fence.proxy.async.shared::cta;\0A\09bar.sync \091, 256;
// PTX-SAME: bar.sync \09%r{{[0-9]+}}, 256;
// PTX: .entry prefill_kernel(
// PTX-SAME: cp.async.bulk.tensor.4d
// PTX-SAME: st.shared.v4.b32 \09[{{[^]]*}}], {0, 0, 0, 0};
// PTX-SAME: fence.proxy.async.shared::cta;\0A\09bar.sync \091, 256;

func.func @decode(%q: tensor<?x8x1x128xbf16>, %k: tensor<?x2x?x128xbf16>, %v: tensor<?x2x?x128xbf16>, %l: tensor<?xi32>, %o: tensor<?x8x1x128xbf16> {bufferization.writable = true}) -> tensor<?x8x1x128xbf16> {
  %r = flash.attention %q, %k, %v key_lengths(%l : tensor<?xi32>) : tensor<?x8x1x128xbf16>, tensor<?x2x?x128xbf16>, tensor<?x2x?x128xbf16> -> tensor<?x8x1x128xbf16>
  %w = bufferization.materialize_in_destination %r in %o : (tensor<?x8x1x128xbf16>, tensor<?x8x1x128xbf16>) -> tensor<?x8x1x128xbf16>
  return %w : tensor<?x8x1x128xbf16>
}

func.func @prefill(%q: tensor<1x8x?x128xbf16>, %k: tensor<1x2x?x128xbf16>, %v: tensor<1x2x?x128xbf16>, %cq: tensor<?xi32>, %ck: tensor<?xi32>, %maxq: i64 {flash.max_seqlen_q}, %o: tensor<1x8x?x128xbf16> {bufferization.writable = true}) -> tensor<1x8x?x128xbf16> {
  %r = flash.attention %q, %k, %v cu_seqlens_q(%cq : tensor<?xi32>) cu_seqlens_k(%ck : tensor<?xi32>) {causal} : tensor<1x8x?x128xbf16>, tensor<1x2x?x128xbf16>, tensor<1x2x?x128xbf16> -> tensor<1x8x?x128xbf16>
  %w = bufferization.materialize_in_destination %r in %o : (tensor<1x8x?x128xbf16>, tensor<1x8x?x128xbf16>) -> tensor<1x8x?x128xbf16>
  return %w : tensor<1x8x?x128xbf16>
}
