// ragged-tma on the tiled backward of packed sequences (cu_seqlens): the
// key-loop tiles that its products read past a sequence's end come by TMA
// too, whatever the tensor holds there (the next sequence) zeroed once the
// boxes are in, in every block of the loop (a run-time test skips whole
// tiles): 16-byte stores of zeros into both 64-column panels of the
// swizzled tile, a fence towards the async proxy, a barrier. That is the
// zero fill the cp.async copy gave them and the backward's arithmetic needs
// (a key past the end has P = 0, which dQ += dS K meets with a zero row of
// K, not NaN; a query row past the end has a finite P, which dV += Pᵀ dO
// and dK += dSᵀ Q meet with zero rows of dO and Q). The dQ kernel's K and V
// (its Q stays a cp.async head tile), the dK/dV kernel's Q and dO (LSE and
// D stay cp.async row vectors, whose zero fill they need).
// RUN: flash-opt %s --flash-tile-attention="target=sm_90a" --flash-workspace-to-arguments --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=128 tensor-cores=wgmma load-stages=2 tma-loads=1 ragged-tma=1" | FileCheck %s
// Without ragged-tma the ragged tiles are cp.async copies.
// RUN: flash-opt %s --flash-tile-attention="target=sm_90a" --flash-workspace-to-arguments --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=128 tensor-cores=wgmma load-stages=2 tma-loads=1" | FileCheck %s --check-prefix=OFF

// CHECK-LABEL: func.func @varlen_backward(
// The dQ kernel.
// CHECK: gpu.launch
// CHECK: nvgpu.device_async_copy
// CHECK: nvgpu.tma.async.load
// CHECK: scf.for
// CHECK: nvgpu.tma.async.load
// CHECK: nvgpu.mbarrier.try_wait.parity
// CHECK: %[[VALID:.*]] = arith.minsi %{{.*}}, %c64
// CHECK: %[[RAGGED:.*]] = arith.cmpi ult, %[[VALID]], %{{.*}} : index
// CHECK-NEXT: scf.if %[[RAGGED]] {
// CHECK: scf.for
// CHECK: vector.store %{{.*}} : memref<8192xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: vector.store %{{.*}} : memref<8192xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: nvvm.fence.proxy
// CHECK-NEXT: gpu.barrier
// CHECK: scf.if
// CHECK: vector.store %{{.*}} : memref<8192xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: nvvm.fence.proxy
// CHECK: flash.contraction = "scores"
// The dK/dV kernel.
// CHECK: gpu.launch
// CHECK: scf.for
// CHECK: nvgpu.tma.async.load
// CHECK: nvgpu.mbarrier.try_wait.parity
// CHECK: %[[QRAGGED:.*]] = arith.cmpi ult
// CHECK-NEXT: scf.if %[[QRAGGED]] {
// CHECK: vector.store %{{.*}} : memref<4096xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: nvvm.fence.proxy
// CHECK: scf.if
// CHECK: vector.store %{{.*}} : memref<4096xbf16, #gpu.address_space<workgroup>>, vector<8xbf16>
// CHECK: nvvm.fence.proxy
// CHECK: flash.contraction = "scores_transposed"

// OFF-LABEL: func.func @varlen_backward(
// OFF-NOT: nvgpu.tma.async.load
// OFF: return

func.func @varlen_backward(%q: tensor<1x4x?x128xbf16>, %k: tensor<1x4x?x128xbf16>, %v: tensor<1x4x?x128xbf16>, %o: tensor<1x4x?x128xbf16>, %do: tensor<1x4x?x128xbf16>, %lse: tensor<1x4x?xf32>, %cq: tensor<?xi32>, %ck: tensor<?xi32>, %maxq: i64 {flash.max_seqlen_q}, %maxk: i64 {flash.max_seqlen_k}, %dq_out: tensor<1x4x?x128xbf16> {bufferization.writable = true}, %dk_out: tensor<1x4x?x128xbf16> {bufferization.writable = true}, %dv_out: tensor<1x4x?x128xbf16> {bufferization.writable = true}) -> (tensor<1x4x?x128xbf16>, tensor<1x4x?x128xbf16>, tensor<1x4x?x128xbf16>) {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, %do, %lse cu_seqlens_q(%cq : tensor<?xi32>) cu_seqlens_k(%ck : tensor<?xi32>) {causal} : tensor<1x4x?x128xbf16>, tensor<1x4x?x128xbf16>, tensor<1x4x?x128xbf16>, tensor<1x4x?x128xbf16>, tensor<1x4x?xf32>
  %0 = bufferization.materialize_in_destination %dq in %dq_out : (tensor<1x4x?x128xbf16>, tensor<1x4x?x128xbf16>) -> tensor<1x4x?x128xbf16>
  %1 = bufferization.materialize_in_destination %dk in %dk_out : (tensor<1x4x?x128xbf16>, tensor<1x4x?x128xbf16>) -> tensor<1x4x?x128xbf16>
  %2 = bufferization.materialize_in_destination %dv in %dv_out : (tensor<1x4x?x128xbf16>, tensor<1x4x?x128xbf16>) -> tensor<1x4x?x128xbf16>
  return %0, %1, %2 : tensor<1x4x?x128xbf16>, tensor<1x4x?x128xbf16>, tensor<1x4x?x128xbf16>
}
