// The warp mapping's stores of a register tile to global memory (O here):
// in kernels for aligned rows (async-copies), two adjacent columns per
// store through a view with contiguous rows; a target whose rows are not
// contiguous and pair-aligned stops the kernel (the runtime takes the
// general kernel for such tensors, whose element stores take any layout:
// async-copies=0). With wide-stores (flash-compile's forward kernels), 16
// bytes per store: the four lanes of a quad, which hold two adjacent
// columns of each 8-column block, exchange them (two butterfly steps of
// shuffles, lane ^ 2 then lane ^ 1, before the row's guard: every lane
// shuffles) so that each holds 8 adjacent columns, and the rows must be
// 16-byte aligned. Fewer than 32 columns per lane group (D = 16 here) keep
// stores of two adjacent columns.
// RUN: flash-opt %s --flash-tile-attention="block-rows=128 block-cols=64" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=128 tensor-cores=mma-sync wide-stores=1" | FileCheck %s --check-prefix=WIDE
// RUN: flash-opt %s --flash-tile-attention="block-rows=128 block-cols=64" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=128 tensor-cores=mma-sync" | FileCheck %s --check-prefix=PAIRS
// RUN: flash-opt %s --flash-tile-attention="block-rows=128 block-cols=64" --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=128 tensor-cores=mma-sync async-copies=0" | FileCheck %s --check-prefix=GENERAL

// PAIRS-LABEL: func.func @attention(
// PAIRS: arith.remui %{{.*}}, %c4
// PAIRS-NOT: gpu.shuffle  xor %{{.*}} : i32
// PAIRS: vector.store %{{.*}} {alignment = 4 : i64} : memref<?x64xbf16, strided<[?, 1], offset: ?>>, vector<2xbf16>
// PAIRS-NOT: vector<8xbf16>
// WIDE-LABEL: func.func @attention(
// WIDE: %[[ALIGNED:.*]] = memref.extract_aligned_pointer_as_index %[[O:[^ ]*]] : memref<?x64xbf16, strided<[?, ?], offset: ?>>
// WIDE: arith.remui %[[ALIGNED]], %c16
// WIDE: %[[OK:.*]] = arith.andi
// WIDE: %[[BAD:.*]] = arith.xori %[[OK]], %true
// WIDE-NEXT: scf.if %[[BAD]] {
// WIDE-NEXT: llvm.intr.trap
// WIDE: %[[ROWS:.*]] = memref.reinterpret_cast %{{.*}} to offset: [%{{.*}}], sizes: [%{{.*}}, 64], strides: [%{{.*}}#0, 1]
// WIDE: gpu.shuffle  xor %{{.*}}, %c2_i32{{.*}} : i32
// WIDE: gpu.shuffle  xor %{{.*}}, %c2_i32{{.*}} : i32
// WIDE: gpu.shuffle  xor %{{.*}}, %c1_i32{{.*}} : i32
// WIDE: gpu.shuffle  xor %{{.*}}, %c1_i32{{.*}} : i32
// WIDE: scf.if
// WIDE-NOT: gpu.shuffle
// WIDE: vector.store %{{.*}}, %[[ROWS]][%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x64xbf16, strided<[?, 1], offset: ?>>, vector<8xbf16>
// WIDE-NOT: memref.store %{{.*}}, %[[O]][
// WIDE-NOT: vector.store {{.*}}vector<2xbf16>
// WIDE-LABEL: func.func @narrow(
// WIDE: arith.remui %{{.*}}, %c4
// WIDE: vector.store %{{.*}} {alignment = 4 : i64} : memref<?x16xbf16, strided<[?, 1], offset: ?>>, vector<2xbf16>
// GENERAL-LABEL: func.func @attention(
// GENERAL-NOT: vector.store
// GENERAL: memref.store
// GENERAL-NOT: vector.store

func.func @attention(%q: tensor<?x?x?x64xbf16>, %k: tensor<?x?x?x64xbf16>, %v: tensor<?x?x?x64xbf16>, %o: tensor<?x?x?x64xbf16> {bufferization.writable = true}) -> tensor<?x?x?x64xbf16> {
  %r = flash.attention %q, %k, %v : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16> -> tensor<?x?x?x64xbf16>
  %w = bufferization.materialize_in_destination %r in %o : (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16>
  return %w : tensor<?x?x?x64xbf16>
}

func.func @narrow(%q: tensor<?x?x?x16xbf16>, %k: tensor<?x?x?x16xbf16>, %v: tensor<?x?x?x16xbf16>, %o: tensor<?x?x?x16xbf16> {bufferization.writable = true}) -> tensor<?x?x?x16xbf16> {
  %r = flash.attention %q, %k, %v : tensor<?x?x?x16xbf16>, tensor<?x?x?x16xbf16>, tensor<?x?x?x16xbf16> -> tensor<?x?x?x16xbf16>
  %w = bufferization.materialize_in_destination %r in %o : (tensor<?x?x?x16xbf16>, tensor<?x?x?x16xbf16>) -> tensor<?x?x?x16xbf16>
  return %w : tensor<?x?x?x16xbf16>
}
