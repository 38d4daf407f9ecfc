// The nondeterministic backward (deterministic=false) through the GPU
// mapping on sm_80: three launches (pre-pass, dK/dV with dQ added, last
// pass); in the dK/dV kernel dSᵀ, a register tile, is copied into a shared
// tile of its own before every thread waits; dS K reads it with
// ldmatrix.trans into mma.sync with the accumulators in registers from zero
// (the fill of C is taken over, and C never goes to shared memory), and
// each lane adds its accumulators' adjacent column pairs to the f32 sums
// with one relaxed reduction per pair (rows past the valid ones skipped),
// after a check that the sums' rows are contiguous. Each step's LSE and D
// rows come by cp.async, one 4-byte element per thread. This run keeps the
// padded rows (swizzle-ldmatrix=0); SWIZZLED is the default, where the
// staged dSᵀ (a copy of a register tile) and the loaded tiles are swizzled:
// the lanes store their pairs at swizzled offsets of a flat view and
// ldmatrix.trans reads one.
// RUN: flash-opt %s --flash-tile-attention="target=sm_80 deterministic=false" --flash-workspace-to-arguments --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=128 chip=sm_80 swizzle-ldmatrix=0" | FileCheck %s
// RUN: flash-opt %s --flash-tile-attention="target=sm_80 deterministic=false" --flash-workspace-to-arguments --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=128 chip=sm_80" | FileCheck %s --check-prefix=SWIZZLED
// SWIZZLED: %[[STAGED:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0, 1]] : memref<64x64xbf16> into memref<4096xbf16>
// SWIZZLED: vector.store %{{.*}}, %[[STAGED]][%{{.*}}] {alignment = 4 : i64} : memref<4096xbf16>, vector<2xbf16>
// SWIZZLED: gpu.barrier
// SWIZZLED: nvgpu.ldmatrix %{{.*}} {flash.swizzled_128b, numTiles = 4 : i32, transpose = true} : memref<4096xbf16, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// With mask-under-branch the dK/dV step's P stays one register vector: the
// lane's 32 exponentials without a select, then under a branch on the query
// block lying outside the mask-free ones the 32 selects of the keys past N
// and across the diagonal (a uniform branch, not a select per element in
// every step).
// RUN: flash-opt %s --flash-tile-attention="target=sm_80 deterministic=false mask-under-branch=1" --flash-workspace-to-arguments --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=128 chip=sm_80" | FileCheck %s --check-prefix=BRANCH
// BRANCH: gpu.launch
// BRANCH: gpu.launch
// BRANCH: %[[OUTSIDE:.*]] = arith.ori %{{.*}}, %{{.*}} : i1
// BRANCH: math.exp2
// BRANCH: %[[P:.*]] = vector.insert %{{.*}}, %{{.*}} [31] : f32 into vector<32xf32>
// BRANCH-NEXT: %{{.*}} = scf.if %[[OUTSIDE]] -> (vector<32xf32>) {
// BRANCH-COUNT-32: arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// BRANCH: scf.yield %{{.*}} : vector<32xf32>
// BRANCH-NEXT: } else {
// BRANCH-NEXT: scf.yield %[[P]] : vector<32xf32>
// And through the whole pipeline to PTX.
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_80 format=isa deterministic=false" | FileCheck %s --check-prefix=PTX

// CHECK-LABEL: func.func @backward(
// CHECK-SAME: {flash.workspace = "d"}
// CHECK-SAME: {flash.workspace = "dq_accum"}
// CHECK: gpu.launch
// CHECK: gpu.launch
// CHECK: scf.for
// CHECK: scf.for
// CHECK: nvgpu.device_async_copy %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}], 1, %{{.*}} : memref<?xf32, strided<[1], offset: ?>> to memref<64xf32, #gpu.address_space<workgroup>>
// CHECK: nvgpu.device_async_copy %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}], 1, %{{.*}} : memref<?xf32, strided<[1], offset: ?>> to memref<64xf32, #gpu.address_space<workgroup>>
// The staged dSᵀ: per-lane stores of the register tile, then a barrier.
// CHECK: vector.store %{{.*}}, %{{.*}} : memref<64x64xbf16, strided<[?, 1], offset: ?>>, vector<2xbf16>
// CHECK: gpu.barrier
// CHECK: llvm.intr.trap
// CHECK: scf.for
// CHECK: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = true} : memref<64x64xbf16, strided<[72, 1]>, #gpu.address_space<workgroup>> -> vector<4x2xbf16>
// CHECK: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[%[[ZERO:[a-z_0-9]+]], %[[ZERO]], %[[ZERO]], %[[ZERO]]]
// CHECK-NOT: gpu.barrier
// CHECK: scf.if
// CHECK: flashgpu.reduce_add %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : vector<2xf32>, memref<?x64xf32, strided<[?, ?], offset: ?>>
// CHECK-NOT: vector<4xf32>
// CHECK: flash.warp_register_tiles
// CHECK: gpu.launch
// CHECK-NOT: flash.atomic_add

// PTX-COUNT-2: .entry
// PTX: red.relaxed.gpu.global.add.f32 [%g+0], %r{{[0-9]+}}; red.relaxed.gpu.global.add.f32 [%g+4]
// PTX: .entry

func.func @backward(%q: tensor<?x?x?x64xbf16>, %k: tensor<?x?x?x64xbf16>, %v: tensor<?x?x?x64xbf16>, %o: tensor<?x?x?x64xbf16>, %do: tensor<?x?x?x64xbf16>, %lse: tensor<?x?x?xf32>, %dq_out: tensor<?x?x?x64xbf16> {bufferization.writable = true}, %dk_out: tensor<?x?x?x64xbf16> {bufferization.writable = true}, %dv_out: tensor<?x?x?x64xbf16> {bufferization.writable = true}) -> (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, %do, %lse {causal} : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?xf32>
  %0 = bufferization.materialize_in_destination %dq in %dq_out : (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16>
  %1 = bufferization.materialize_in_destination %dk in %dk_out : (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16>
  %2 = bufferization.materialize_in_destination %dv in %dv_out : (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16>
  return %0, %1, %2 : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>
}
