// --flash-map-tiles-to-gpu{warp-specialize} where the key-block loops are
// not directly in the launch.
//
// The tiled backward (TMA, two stages, one consumer warpgroup): in the dQ
// kernel the key loop's first copies share bytes with tiles the consumers
// use before the loop (O and dO for D = rowsum(dO ∘ O)), so the consumers
// release both copies once right before the loop and the producer waits for
// phase r / 2 of position r's copy (not r / 2 - 1). In the dK/dV kernel the
// query loop runs once per query head of a GQA group: the ring's positions
// run on across the outer loop (its new iteration argument counts the
// positions of earlier heads), the producer walks the same outer loop with
// its own count, and the loops (the causal blocks that need a mask, then the
// mask-free ones: one ring) keep their top barrier because their threads
// also fill the shared LSE and D columns.
// RUN: flash-opt %s --flash-tile-attention="target=sm_90a" --flash-workspace-to-arguments --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=128 tensor-cores=wgmma load-stages=2 tma-loads=1 warp-specialize=1" | FileCheck %s

// CHECK-LABEL: func.func @backward(
// The dQ kernel.
// CHECK: gpu.launch
// CHECK: %[[EMPTY:.*]] = builtin.unrealized_conversion_cast %{{.*}} : memref<2xi64, #gpu.address_space<workgroup>> to !nvgpu.mbarrier.group<{{.*}}num_barriers = 2>
// CHECK: scf.if
// CHECK: scf.for %[[J:[^ ]*]] = %[[ORIGIN:[^ ]*]] to
// CHECK-NEXT: %[[R:.*]] = arith.subi %[[J]], %[[ORIGIN]]
// CHECK-NEXT: %{{.*}} = arith.constant 2
// CHECK-NEXT: %[[COPY:.*]] = arith.remui %[[R]]
// CHECK-NEXT: %{{.*}} = arith.constant 2
// CHECK-NEXT: %[[HALF:.*]] = arith.divui %[[R]]
// CHECK-NEXT: %{{.*}} = arith.constant 2
// CHECK-NEXT: %[[PHASE:.*]] = arith.remui %[[HALF]]
// CHECK: %[[PARITY:.*]] = arith.cmpi ne, %[[PHASE]]
// CHECK: nvgpu.mbarrier.try_wait.parity %[[EMPTY]][%[[COPY]]], %[[PARITY]]
// CHECK: } {flash.warp_role = "producer"}
// CHECK: nvgpu.mbarrier.arrive %[[EMPTY]][%c0
// CHECK-NEXT: arith.constant 1
// CHECK-NEXT: nvgpu.mbarrier.arrive %[[EMPTY]][%c1
// CHECK: scf.for
// CHECK-NOT: gpu.barrier
// CHECK: nvgpu.mbarrier.try_wait.parity
// CHECK: nvgpu.mbarrier.arrive %[[EMPTY]]
// CHECK-NEXT: scf.yield
// The dK/dV kernel.
// CHECK: gpu.launch
// CHECK: %[[EMPTY2:.*]] = builtin.unrealized_conversion_cast %{{.*}} : memref<2xi64, #gpu.address_space<workgroup>> to !nvgpu.mbarrier.group<{{.*}}num_barriers = 2>
// CHECK: %[[RUNS:.*]] = scf.for %{{[^ ]*}} = %{{[^ ]*}} to %{{[^ ]*}} step %{{[^ ]*}} iter_args(%[[PBASE:[^ ]*]] = %c0{{[_0-9]*}}) -> (index) {
// CHECK: scf.for %[[PJ:[^ ]*]] = %[[PLB:[^ ]*]] to %[[PMID:[^ ]*]] step
// CHECK-NEXT: %[[PREL:.*]] = arith.subi %[[PJ]], %[[PLB]]
// CHECK-NEXT: %[[PR:.*]] = arith.addi %[[PREL]], %[[PBASE]]
// CHECK: nvgpu.mbarrier.try_wait.parity %[[EMPTY2]]
// CHECK: nvgpu.tma.async.load
// The mask-free blocks' loop goes on from where the masked one ends, its ring
// positions from the same origin.
// CHECK: scf.for %[[PJ2:[^ ]*]] = %[[PMID]] to %[[PUB:[^ ]*]] step
// CHECK-NEXT: arith.subi %[[PJ2]], %[[PLB]]
// CHECK: nvgpu.tma.async.load
// CHECK: %[[PSPAN:.*]] = arith.subi %[[PUB]], %[[PLB]]
// CHECK-NEXT: %[[PNEXT:.*]] = arith.addi %[[PBASE]], %[[PSPAN]]
// CHECK-NEXT: scf.yield %[[PNEXT]] : index
// CHECK: } {flash.warp_role = "producer"}
// CHECK: scf.for %{{[^ ]*}} = {{.*}} iter_args({{.*}}, %[[BASE:[^ ]*]] = %c0{{[_0-9]*}}) -> (vector<32xf32>, vector<32xf32>, index) {
// CHECK: scf.for %[[I:[^ ]*]] = %[[ILB:[^ ]*]] to %[[IMID:[^ ]*]] step
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[IREL:.*]] = arith.subi %[[I]], %[[ILB]]
// CHECK-NEXT: %[[IR:.*]] = arith.addi %[[IREL]], %[[BASE]]
// CHECK-NOT: nvgpu.tma.async.load
// CHECK: nvgpu.mbarrier.try_wait.parity
// CHECK: nvgpu.mbarrier.arrive %[[EMPTY2]]
// CHECK: scf.for %[[I2:[^ ]*]] = %[[IMID]] to %[[IUB:[^ ]*]] step
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: arith.subi %[[I2]], %[[ILB]]
// CHECK-NOT: nvgpu.tma.async.load
// CHECK: nvgpu.mbarrier.arrive %[[EMPTY2]]
// CHECK: %[[SPAN:.*]] = arith.subi %[[IUB]], %[[ILB]]
// CHECK-NEXT: %[[NEXT:.*]] = arith.addi %[[BASE]], %[[SPAN]]
// CHECK-NEXT: scf.yield %{{.*}}, %{{.*}}, %[[NEXT]] : vector<32xf32>, vector<32xf32>, index

func.func @backward(%q: tensor<?x?x?x64xbf16>, %k: tensor<?x?x?x64xbf16>, %v: tensor<?x?x?x64xbf16>, %o: tensor<?x?x?x64xbf16>, %do: tensor<?x?x?x64xbf16>, %lse: tensor<?x?x?xf32>, %dq_out: tensor<?x?x?x64xbf16> {bufferization.writable = true}, %dk_out: tensor<?x?x?x64xbf16> {bufferization.writable = true}, %dv_out: tensor<?x?x?x64xbf16> {bufferization.writable = true}) -> (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, %do, %lse {causal} : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?xf32>
  %0 = bufferization.materialize_in_destination %dq in %dq_out : (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16>
  %1 = bufferization.materialize_in_destination %dk in %dk_out : (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16>
  %2 = bufferization.materialize_in_destination %dv in %dv_out : (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16>
  return %0, %1, %2 : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>
}
