// The warp mapping's stores of a register tile to global memory (O here):
// in kernels for aligned rows (async-copies), two adjacent columns per
// store through a view with contiguous rows; a target whose rows are not
// contiguous and pair-aligned stops the kernel (the runtime takes the
// general kernel for such tensors, whose element stores take any layout:
// async-copies=0).
// RUN: flash-opt %s --flash-tile-attention="block-rows=128 block-cols=64" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=128 tensor-cores=mma-sync" | FileCheck %s
// RUN: flash-opt %s --flash-tile-attention="block-rows=128 block-cols=64" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=128 tensor-cores=mma-sync async-copies=0" | FileCheck %s --check-prefix=GENERAL

// CHECK-LABEL: func.func @attention(
// CHECK: %[[ALIGNED:.*]] = memref.extract_aligned_pointer_as_index %[[O:[^ ]*]] : memref<?x64xbf16, strided<[?, ?], offset: ?>>
// CHECK: arith.remui %[[ALIGNED]], %c4
// CHECK: %[[OK:.*]] = arith.andi
// CHECK: %[[BAD:.*]] = arith.xori %[[OK]], %true
// CHECK-NEXT: scf.if %[[BAD]] {
// CHECK-NEXT: llvm.intr.trap
// CHECK: %[[ROWS:.*]] = memref.reinterpret_cast %{{.*}} to offset: [%{{.*}}], sizes: [%{{.*}}, 64], strides: [%{{.*}}#0, 1]
// CHECK: vector.store %{{.*}}, %[[ROWS]][%{{.*}}, %{{.*}}] {alignment = 4 : i64} : memref<?x64xbf16, strided<[?, 1], offset: ?>>, vector<2xbf16>
// CHECK-NOT: memref.store %{{.*}}, %[[O]][
// GENERAL-LABEL: func.func @attention(
// GENERAL-NOT: vector.store
// GENERAL: memref.store
// GENERAL-NOT: vector.store

func.func @attention(%q: tensor<?x?x?x64xbf16>, %k: tensor<?x?x?x64xbf16>, %v: tensor<?x?x?x64xbf16>, %o: tensor<?x?x?x64xbf16> {bufferization.writable = true}) -> tensor<?x?x?x64xbf16> {
  %r = flash.attention %q, %k, %v : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16> -> tensor<?x?x?x64xbf16>
  %w = bufferization.materialize_in_destination %r in %o : (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16>
  return %w : tensor<?x?x?x64xbf16>
}
