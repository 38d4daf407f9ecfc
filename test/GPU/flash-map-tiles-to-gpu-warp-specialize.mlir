// warp-specialize (with tma-loads), completed by --flash-gpu-split-warp-roles
// (its own test: flash-gpu-split-warp-roles.mlir): a producer warpgroup, threads 256-383 of
// a 384-thread block, issues the K and V boxes of both causal key loops (the
// unmasked blocks, then the diagonal ones) into one ring of two copies per
// tile; thread 256 alone walks the iterations and first waits until every
// consumer released the copy (empty[r mod 2], parity (r / 2 + 1) mod 2,
// r = j - the first loop's lower bound). The consumers (threads 0-255, two
// warpgroups of 64 rows) wait for full[2 i + r mod 2] with parity
// (r / 2) mod 2 and arrive on empty[r mod 2] at the end of each iteration,
// with no block barrier in the loop; their barriers elsewhere are named
// barrier 1 over 256 threads. setmaxnreg moves registers from the producer
// (24) to the consumers (240). Q, loaded once before the loops, is the
// producer's too: its boxes go first, on a barrier of its own that the
// consumers wait for before their first loop. With ping-pong, warpgroup g waits on named
// barrier 2 + g before its S = Q Kᵀ MMA and arrives on the other's after.
// RUN: flash-opt %s --flash-tile-attention="block-rows=128 block-cols=128" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=256 tensor-cores=wgmma load-stages=2 tma-loads=1 warp-specialize=1" --flash-gpu-split-warp-roles="ping-pong=1" | FileCheck %s
// Three consumer warpgroups take turns in order: g waits on 2 + g and arrives
// on 2 + (g + 1) mod 3; warpgroup 2 lets warpgroup 0 start.
// RUN: flash-opt %s --flash-tile-attention="block-rows=192 block-cols=128" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=384 tensor-cores=wgmma load-stages=2 tma-loads=1 warp-specialize=1" --flash-gpu-split-warp-roles="ping-pong=1" | FileCheck %s --check-prefix=THREE
// Without TMA there is no producer: the block keeps its 256 threads.
// RUN: flash-opt %s --flash-tile-attention="block-rows=128 block-cols=128" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=256 tensor-cores=wgmma load-stages=2 tma-loads=0 warp-specialize=1" --flash-gpu-split-warp-roles | FileCheck %s --check-prefix=NOTMA
// And to PTX.
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_90a format=isa block-rows=128 block-cols=128 threads=256 load-stages=2 tma-loads=1 warp-specialize=1 ping-pong=1" | FileCheck %s --check-prefix=PTX

// CHECK-LABEL: func.func @causal_d128(
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{[^ ]*}} = %c384,
// The mbarriers are words of the dynamic shared memory, after the tiles.
// CHECK: %[[WINDOW:.*]] = gpu.dynamic_shared_memory
// CHECK: %[[LEADER:.*]] = arith.cmpi eq, %{{.*}}, %c0
// CHECK: %[[FULLW:.*]] = memref.view %[[WINDOW]][%c163840{{.*}}] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4xi64, #gpu.address_space<workgroup>>
// CHECK: %[[FULL:.*]] = builtin.unrealized_conversion_cast %[[FULLW]] : memref<4xi64, #gpu.address_space<workgroup>> to !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
// CHECK-COUNT-4: nvgpu.mbarrier.init %[[FULL]][%{{.*}}], %c1{{.*}}, predicate = %[[LEADER]]
// CHECK: %[[EMPTYW:.*]] = memref.view %[[WINDOW]][%c163872{{.*}}] : memref<?xi8, #gpu.address_space<workgroup>> to memref<2xi64, #gpu.address_space<workgroup>>
// CHECK: %[[EMPTY:.*]] = builtin.unrealized_conversion_cast %[[EMPTYW]] : memref<2xi64, #gpu.address_space<workgroup>> to !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
// CHECK-COUNT-2: nvgpu.mbarrier.init %[[EMPTY]][%{{.*}}], %c256{{.*}}, predicate = %[[LEADER]]
// Q's: one arrival (the producer's expect_tx).
// CHECK: %[[QFULLW:.*]] = memref.view %[[WINDOW]][%c163888{{.*}}] : memref<?xi8, #gpu.address_space<workgroup>> to memref<1xi64, #gpu.address_space<workgroup>>
// CHECK: %[[QFULL:.*]] = builtin.unrealized_conversion_cast %[[QFULLW]]
// CHECK: nvgpu.mbarrier.init %[[QFULL]][%{{.*}}], %c1{{.*}}, predicate = %[[LEADER]]
// CHECK-NEXT: gpu.barrier
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[PRODUCER:.*]] = arith.cmpi uge, %[[TID]], %c256
// CHECK: scf.if %[[PRODUCER]] {
// CHECK-NEXT: nvvm.setmaxregister decrease 24
// CHECK: %[[ISSUER:.*]] = arith.cmpi eq, %[[TID]], %c256
// CHECK: scf.if %[[ISSUER]] {
// Q first: two 64-column boxes of 128 rows on its barrier.
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[QFULL]][%{{.*}}], %c32768{{.*}}, predicate = %true
// CHECK-COUNT-2: nvgpu.tma.async.load %{{.*}}, %[[QFULL]]
// CHECK: scf.for %[[J:[^ ]*]] = %[[ORIGIN:[^ ]*]] to %[[MID:[^ ]*]] step
// CHECK: %[[R:.*]] = arith.subi %[[J]], %[[ORIGIN]]
// CHECK: %[[COPY:.*]] = arith.remui %[[R]], %c2
// CHECK: %[[HALF:.*]] = arith.divui %[[R]], %c2
// CHECK: %[[NEXT:.*]] = arith.addi %[[HALF]], %c1
// CHECK: %[[PHASE:.*]] = arith.remui %[[NEXT]], %c2
// CHECK: %[[PARITY:.*]] = arith.cmpi ne, %[[PHASE]], %c0
// CHECK: nvgpu.mbarrier.try_wait.parity %[[EMPTY]][%[[COPY]]], %[[PARITY]]
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[FULL]][%{{.*}}], %c32768{{.*}}, predicate = %true
// CHECK-COUNT-2: nvgpu.tma.async.load
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[FULL]][%{{.*}}], %c32768{{.*}}, predicate = %true
// CHECK-COUNT-2: nvgpu.tma.async.load
// The second (masked) loop continues the ring.
// CHECK: scf.for %[[J2:[^ ]*]] = %[[MID]] to
// CHECK: arith.subi %[[J2]], %[[ORIGIN]]
// CHECK: nvgpu.mbarrier.try_wait.parity %[[EMPTY]]
// CHECK: nvgpu.tma.async.load
// CHECK: } {flash.warp_role = "producer"}
// CHECK: %[[CONSUMER:.*]] = arith.cmpi ult, %{{.*}}, %c256
// CHECK: scf.if %[[CONSUMER]] {
// CHECK-NEXT: nvvm.setmaxregister increase 240
// Warpgroup 1 lets warpgroup 0 take the first turn.
// CHECK: nvvm.barrier.arrive id = %c2_i32{{.*}} number_of_threads = %c256_i32
// The consumers copy nothing: Q's phase 0, a barrier of theirs (their
// warpgroups leave the wait together), then the loops.
// CHECK-NOT: nvgpu.tma.async.load
// CHECK-NOT: nvgpu.device_async_copy
// CHECK-NOT: gpu.barrier
// CHECK: nvgpu.mbarrier.try_wait.parity %[[QFULL]][%{{.*}}], %false
// CHECK: nvvm.barrier id = %c1_i32{{.*}} number_of_threads = %c256_i32
// (The producer computes the loops' bounds again for itself.)
// CHECK-NEXT: scf.for %[[I:[^ ]*]] = %[[CORIGIN:[^ ]*]] to %[[CMID:[^ ]*]] step
// CHECK-NOT: barrier id = %c1
// CHECK: %[[CR:.*]] = arith.subi %[[I]], %[[CORIGIN]]
// CHECK: %[[CCOPY:.*]] = arith.remui %[[CR]], %c2
// CHECK: %[[CHALF:.*]] = arith.divui %[[CR]], %c2
// CHECK: %[[CPHASE:.*]] = arith.remui %[[CHALF]], %c2
// CHECK: %[[CPARITY:.*]] = arith.cmpi ne, %[[CPHASE]], %c0
// CHECK: nvgpu.mbarrier.try_wait.parity %[[FULL]][%{{.*}}], %[[CPARITY]]
// CHECK: nvgpu.mbarrier.try_wait.parity %[[FULL]][%{{.*}}], %[[CPARITY]]
// CHECK: nvvm.barrier id = %[[OWN:[^ ]*]] number_of_threads = %c256
// CHECK-NEXT: flashgpu.warpgroup_mma {{.*}}flash.contraction = "scores"
// CHECK: nvvm.barrier.arrive id = %[[OTHER:[^ ]*]] number_of_threads = %c256
// CHECK: flashgpu.warpgroup_mma {{.*}}flash.contraction = "output"
// The position's copy, released once the body is done with it.
// CHECK: %[[RCOPY:.*]] = arith.remui %[[CR]], %c2
// CHECK: nvgpu.mbarrier.arrive %[[EMPTY]][%[[RCOPY]]]
// CHECK-NEXT: scf.yield
// CHECK: scf.for %{{[^ ]*}} = %[[CMID]] to
// CHECK: nvgpu.mbarrier.try_wait.parity %[[FULL]]
// CHECK: nvvm.barrier id = %[[OWN]]
// CHECK: nvgpu.mbarrier.arrive %[[EMPTY]]
// Warpgroup 0 takes warpgroup 1's last arrival.
// CHECK: nvvm.barrier id = %c2_i32{{.*}} number_of_threads = %c256_i32
// CHECK: } {flash.warp_role = "consumer"}
// CHECK-NEXT: gpu.terminator

// THREE-LABEL: func.func @causal_d128(
// THREE: gpu.launch {{.*}} threads({{.*}}) in (%{{[^ ]*}} = %c512,
// THREE: scf.if %{{.*}} {
// THREE-NEXT: nvvm.setmaxregister decrease 24
// THREE: } {flash.warp_role = "producer"}
// THREE: nvvm.setmaxregister increase 160
// THREE: %[[GROUP:.*]] = arith.index_castui %{{.*}} : index to i32
// THREE: %[[OWN:.*]] = arith.addi %[[GROUP]], %c2_i32
// THREE: %[[PLUS:.*]] = arith.addi %[[GROUP]], %c1_i32
// THREE: %[[MOD:.*]] = arith.remui %[[PLUS]], %c3_i32
// THREE: %[[NEXT:.*]] = arith.addi %[[MOD]], %c2_i32
// THREE: %[[LAST:.*]] = arith.cmpi eq, %[[GROUP]], %c2_i32
// THREE: scf.if %[[LAST]] {
// THREE: %[[FIRST:.*]] = arith.constant 2 : i32
// THREE-NEXT: nvvm.barrier.arrive id = %[[FIRST]]
// THREE: nvvm.barrier id = %[[OWN]] number_of_threads =
// THREE-NEXT: flashgpu.warpgroup_mma {{.*}}flash.contraction = "scores"
// THREE: nvvm.barrier.arrive id = %[[NEXT]] number_of_threads =

// NOTMA-LABEL: func.func @causal_d128(
// NOTMA: gpu.launch {{.*}} threads({{.*}}) in (%{{[^ ]*}} = %c256,
// NOTMA-NOT: flash.warp_role
// NOTMA-NOT: setmaxregister

// The PTX is one escaped string (a tab is \09).
// PTX: .entry causal_d128_kernel(
// PTX: .maxntid 384, 1, 1
// PTX: setmaxnreg.dec.sync.aligned.u32 \0924;
// PTX: mbarrier.try_wait.parity.shared
// PTX: cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes
// PTX: setmaxnreg.inc.sync.aligned.u32 \09240;
// PTX: bar.sync \091, 256;
// PTX: bar.sync \09%r{{[0-9]+}}, 256;
// PTX: wgmma.mma_async
// PTX: bar.arrive %r{{[0-9]+}}, %r{{[0-9]+}};
// PTX: mbarrier.arrive.shared.b64

func.func @causal_d128(%q: tensor<?x?x?x128xf16>, %k: tensor<?x?x?x128xf16>, %v: tensor<?x?x?x128xf16>, %o: tensor<?x?x?x128xf16> {bufferization.writable = true}) -> tensor<?x?x?x128xf16> {
  %r = flash.attention %q, %k, %v {causal} : tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16> -> tensor<?x?x?x128xf16>
  %w = bufferization.materialize_in_destination %r in %o : (tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16>) -> tensor<?x?x?x128xf16>
  return %w : tensor<?x?x?x128xf16>
}
