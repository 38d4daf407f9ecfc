// RUN: flash-opt %s --flash-tile-attention="block-rows=32 block-cols=32" --canonicalize --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --convert-linalg-to-parallel-loops --canonicalize --flash-map-tiles-to-gpu | FileCheck %s
// RUN: flash-opt %s --flash-gpu-pipeline | FileCheck %s --check-prefix=PTX

// The tiled loop nest becomes one CTA per (query block, head, batch), tiles
// in dynamic shared memory, every parallel loop strided over 128 threads and
// followed by a barrier; the outputs are written in place into %o.

// CHECK-LABEL: func @attention
// CHECK-SAME: %[[Q:[^:]*]]: memref<?x?x?x64xf16, strided<[?, ?, ?, ?], offset: ?>>
// CHECK-SAME: %[[O:[^:]*]]: memref<?x?x?x64xf16, strided<[?, ?, ?, ?], offset: ?>>
// CHECK: %[[QB:.*]] = arith.ceildivsi
// CHECK: gpu.launch blocks(%[[BX:.*]], %[[BY:.*]], %[[BZ:.*]]) in (%{{.*}} = %[[QB]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%{{.*}}) in (%{{.*}} = %c128, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) dynamic_shared_memory_size %[[SMEM:.*]]
// CHECK: %[[BASE:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: %[[VIEW:.*]] = memref.view %[[BASE]][%{{.*}}][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<32x64xf16, #gpu.address_space<workgroup>>
// CHECK: memref.memory_space_cast %[[VIEW]] : memref<32x64xf16, #gpu.address_space<workgroup>> to memref<32x64xf16>
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: scf.for %{{.*}} = %[[TID]] to %{{.*}} step %c128
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: %[[TID2:.*]] = gpu.thread_id x
// CHECK: scf.for %{{.*}} = %[[TID2]] to %{{.*}} step %c128
// CHECK: gpu.barrier
// CHECK: memref.subview %[[O]]
// CHECK: gpu.terminator
// CHECK: flash.shared_memory_bytes =

// PTX: gpu.binary @attention_kernel [#gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx81">{{.*}}assembly = "{{.*}}.target sm_90a
func.func @attention(%q: tensor<?x?x?x64xf16>, %k: tensor<?x?x?x64xf16>, %v: tensor<?x?x?x64xf16>, %o: tensor<?x?x?x64xf16> {bufferization.writable = true}) -> tensor<?x?x?x64xf16> {
  %r = flash.attention %q, %k, %v {causal} : tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16> -> tensor<?x?x?x64xf16>
  %w = bufferization.materialize_in_destination %r in %o : (tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>) -> tensor<?x?x?x64xf16>
  return %w : tensor<?x?x?x64xf16>
}
