// tma-loads (with load-stages=2 on wgmma kernels): the key-block loops' K
// and V tiles come by TMA. The function gets a last argument holding the
// tensor maps (flash.tensor_maps names the argument each maps, the box and
// the swizzle); one mbarrier per tile and copy, initialised by thread 0 at
// the launch's start; thread 0 expects each tile's bytes on its copy's
// mbarrier and issues one 64-column box per 128-byte panel (coordinates
// innermost first: column, key row, head, batch); every thread waits for
// the phase of its iteration's copy. Q, loaded once, stays on cp.async.
// RUN: flash-opt %s --flash-tile-attention="block-rows=128 block-cols=64" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=128 tensor-cores=wgmma load-stages=2 tma-loads=1" | FileCheck %s
// Without two stages there is no TMA: the loads stay on cp.async.
// RUN: flash-opt %s --flash-tile-attention="block-rows=128 block-cols=64" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=128 tensor-cores=wgmma load-stages=1 tma-loads=1" | FileCheck %s --check-prefix=ONE
// And to PTX.
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_90a format=isa block-rows=128 block-cols=64 load-stages=2 tma-loads=1" | FileCheck %s --check-prefix=PTX

// CHECK-LABEL: func.func @plain_d128(
// CHECK-SAME: %[[K:[^:]*]]: memref<?x?x?x128xf16
// CHECK-SAME: %[[MAPS:[^:]*]]: memref<?xi8> {flash.tensor_maps = [{box_cols = 64 : i64, box_rows = 64 : i64, row_dim = 2 : i64, swizzle_bytes = 128 : i64, tensor = 1 : i64}, {box_cols = 64 : i64, box_rows = 64 : i64, row_dim = 2 : i64, swizzle_bytes = 128 : i64, tensor = 2 : i64}]}
// CHECK: gpu.launch
// CHECK: memref.extract_aligned_pointer_as_index %[[MAPS]]
// CHECK: builtin.unrealized_conversion_cast %{{.*}} : !llvm.ptr to !nvgpu.tensormap.descriptor<tensor = memref<1x1x64x64xf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b
// CHECK: %[[LEADER:.*]] = arith.cmpi eq, %{{.*}}, %c0
// CHECK: %[[BARS:.*]] = builtin.unrealized_conversion_cast %{{.*}} : memref<4xi64, #gpu.address_space<workgroup>> to !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 4>
// CHECK: nvgpu.mbarrier.init %[[BARS]][%{{.*}}], %{{.*}}, predicate = %[[LEADER]]
// Q by cp.async.
// CHECK: nvgpu.device_async_copy
// The first iteration's K and V, after a barrier.
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[BARS]][%{{.*}}], %c16384, predicate = %[[LEADER]]
// CHECK: nvgpu.tma.async.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}], %[[BARS]][%{{.*}}] to %{{.*}}, predicate = %[[LEADER]]
// CHECK: nvgpu.tma.async.load
// CHECK: scf.for %[[J:.*]] = %[[LB:[^ ]*]] to
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[REL:.*]] = arith.subi %[[J]], %[[LB]]
// CHECK-NOT: nvgpu.device_async_wait
// Iteration j + 1's tiles into the other copies, then the wait for this
// iteration's: copy (j - lb) mod 2, phase parity ((j - lb) / 2) mod 2.
// CHECK: scf.if
// CHECK: nvgpu.tma.async.load
// CHECK: %[[COPY:.*]] = arith.remui %[[REL]], %c2
// CHECK: %[[HALF:.*]] = arith.divui %[[REL]], %c2
// CHECK: %[[PHASE:.*]] = arith.remui %[[HALF]], %c2
// CHECK: %[[PARITY:.*]] = arith.cmpi ne, %[[PHASE]], %c0
// CHECK: nvgpu.mbarrier.try_wait.parity %[[BARS]][%{{.*}}], %[[PARITY]]
// CHECK: nvgpu.mbarrier.try_wait.parity %[[BARS]][%{{.*}}], %[[PARITY]]
// CHECK: flashgpu.warpgroup_mma
// CHECK-NOT: nvgpu.device_async_copy
// CHECK: scf.yield

// ONE-LABEL: func.func @plain_d128(
// ONE-NOT: flash.tensor_maps
// ONE-NOT: nvgpu.tma.async.load
// ONE: nvgpu.device_async_copy

// PTX: .entry plain_d128_kernel(
// PTX: mbarrier.init.shared
// PTX: cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes
// PTX: mbarrier.try_wait.parity.shared

func.func @plain_d128(%q: tensor<?x?x?x128xf16>, %k: tensor<?x?x?x128xf16>, %v: tensor<?x?x?x128xf16>, %o: tensor<?x?x?x128xf16> {bufferization.writable = true}) -> tensor<?x?x?x128xf16> {
  %r = flash.attention %q, %k, %v : tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16> -> tensor<?x?x?x128xf16>
  %w = bufferization.materialize_in_destination %r in %o : (tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16>) -> tensor<?x?x?x128xf16>
  return %w : tensor<?x?x?x128xf16>
}
