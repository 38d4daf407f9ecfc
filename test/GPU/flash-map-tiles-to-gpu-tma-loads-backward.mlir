// tma-loads on the tiled backward. The dK/dV kernel's query loop runs once
// per query head of a GQA group, inside the loop over the group; its bounds
// do not change between runs, so every run has the same trip count T and
// run k (of the outer loop) starts copy c's mbarrier at phase
// k * ceil((T - c) / 2): the wait's parity is (rel / 2 + k * uses) mod 2.
// RUN: flash-opt %s --flash-tile-attention="target=sm_90a" --flash-workspace-to-arguments --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=128 tensor-cores=wgmma load-stages=2 tma-loads=1" | FileCheck %s

// CHECK-LABEL: func.func @backward(
// The dQ kernel: its key loop runs once per launch.
// CHECK: gpu.launch
// CHECK: builtin.unrealized_conversion_cast %{{.*}} : memref<4xi64, #gpu.address_space<workgroup>> to !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
// CHECK: nvgpu.tma.async.load
// CHECK: scf.for %[[J:[^ ]*]] = %[[LB:[^ ]*]] to %{{[^ ]*}} step %{{[^ ]*}} iter_args
// CHECK-NOT: nvgpu.device_async_wait
// CHECK: %[[REL:.*]] = arith.subi %[[J]], %[[LB]]
// CHECK: nvgpu.tma.async.load
// CHECK-NOT: arith.ceildivui
// CHECK: nvgpu.mbarrier.try_wait.parity
// The dK/dV kernel.
// CHECK: gpu.launch
// CHECK: %[[BARS:.*]] = builtin.unrealized_conversion_cast %{{.*}} : memref<4xi64, #gpu.address_space<workgroup>> to !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
// CHECK: scf.for %[[H:[^ ]*]] = %[[HLB:[^ ]*]] to %{{[^ ]*}} step %[[HSTEP:[^ ]*]] iter_args
// Run k's first query block, before the query loop.
// CHECK: nvgpu.tma.async.load
// CHECK: scf.for %[[I:[^ ]*]] = %[[ILB:[^ ]*]] to %[[IUB:[^ ]*]] step %[[ISTEP:[^ ]*]] iter_args
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[IREL:.*]] = arith.subi %[[I]], %[[ILB]]
// CHECK-NOT: nvgpu.device_async_wait
// CHECK: nvgpu.tma.async.load
// CHECK: %[[COPY:.*]] = arith.remui %[[IREL]], %c2
// CHECK: %[[HALF:.*]] = arith.divui %[[IREL]], %c2
// CHECK: %[[SPAN:.*]] = arith.subi %[[IUB]], %[[ILB]]
// CHECK: %[[TRIPS:.*]] = arith.ceildivui %[[SPAN]], %[[ISTEP]]
// CHECK: %[[HREL:.*]] = arith.subi %[[H]], %[[HLB]]
// CHECK-DAG: %[[HSTEP32:.*]] = arith.index_castui %[[HSTEP]] : index to i32
// CHECK-DAG: %[[HREL32:.*]] = arith.index_castui %[[HREL]] : index to i32
// CHECK: %[[KTH32:.*]] = arith.divui %[[HREL32]], %[[HSTEP32]] : i32
// CHECK: %[[KTH:.*]] = arith.index_castui %[[KTH32]] : i32 to index
// CHECK: %[[TP1:.*]] = arith.addi %[[TRIPS]], %c1
// CHECK: %[[LEFT:.*]] = arith.subi %[[TP1]], %[[COPY]]
// CHECK: %[[USES:.*]] = arith.divui %[[LEFT]], %c2
// CHECK: %[[BEFORE:.*]] = arith.muli %[[KTH]], %[[USES]]
// CHECK: %[[PHASE:.*]] = arith.addi %[[HALF]], %[[BEFORE]]
// CHECK: %[[BIT:.*]] = arith.remui %[[PHASE]], %c2
// CHECK: %[[PARITY:.*]] = arith.cmpi ne, %[[BIT]], %c0
// CHECK: nvgpu.mbarrier.try_wait.parity %[[BARS]][%{{.*}}], %[[PARITY]]
// CHECK: nvgpu.mbarrier.try_wait.parity %[[BARS]][%{{.*}}], %[[PARITY]]

func.func @backward(%q: tensor<?x?x?x64xbf16>, %k: tensor<?x?x?x64xbf16>, %v: tensor<?x?x?x64xbf16>, %o: tensor<?x?x?x64xbf16>, %do: tensor<?x?x?x64xbf16>, %lse: tensor<?x?x?xf32>, %dq_out: tensor<?x?x?x64xbf16> {bufferization.writable = true}, %dk_out: tensor<?x?x?x64xbf16> {bufferization.writable = true}, %dv_out: tensor<?x?x?x64xbf16> {bufferization.writable = true}) -> (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, %do, %lse {causal} : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?xf32>
  %0 = bufferization.materialize_in_destination %dq in %dq_out : (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16>
  %1 = bufferization.materialize_in_destination %dk in %dk_out : (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16>
  %2 = bufferization.materialize_in_destination %dv in %dv_out : (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16>
  return %0, %1, %2 : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>
}
