// The GPU form of the tiled backward through the GPU mapping: two launches,
// both with their tiles in warp registers (mma.sync accumulator layout).
// RUN: flash-opt %s --flash-tile-attention="target=sm_90a" --flash-workspace-to-arguments --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=128 async-copies=false" | FileCheck %s
// And the whole pipeline to PTX.
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_90a format=isa" | FileCheck %s --check-prefix=PTX
// With wgmma (cp.async loads) both kernels run their contractions on it.
// RUN: flash-opt %s --flash-tile-attention="target=sm_90a" --flash-workspace-to-arguments --canonicalize --cse --eliminate-empty-tensors --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" --canonicalize --buffer-loop-hoisting --cse --flash-map-tiles-to-gpu="threads=128 tensor-cores=wgmma" | FileCheck %s --check-prefix=WGMMA

// WGMMA-LABEL: func.func @backward(
// The dQ kernel reads dO element by element for D = rowsum(dO ∘ O): at
// swizzled offsets, since dO is also an MMA operand.
// WGMMA: gpu.launch
// WGMMA: memref.collapse_shape %{{.*}} {{\[\[}}0, 1]] : memref<64x64xbf16> into memref<4096xbf16>
// WGMMA: arith.xori
// WGMMA: memref.load %collapse_shape
// S = Q Kᵀ and dP = dO Vᵀ from shared memory; dQ += dS K with dS from
// registers and K read transposed.
// WGMMA-COUNT-2: flashgpu.warpgroup_mma a_desc(
// WGMMA: flashgpu.warpgroup_mma acc(%{{.*}}) a_regs(
// WGMMA: flash.wgmma}
// The dK/dV kernel: Sᵀ = K Qᵀ, dV += Pᵀ dO, dPᵀ = V dOᵀ, dK += dSᵀ Q.
// WGMMA: gpu.launch
// WGMMA: flashgpu.warpgroup_mma a_desc(
// WGMMA: flashgpu.warpgroup_mma acc(%{{.*}}) a_regs(
// WGMMA: flashgpu.warpgroup_mma a_desc(
// WGMMA: flashgpu.warpgroup_mma acc(%{{.*}}) a_regs(
// WGMMA: flash.wgmma}

// D = rowsum(dO O) passes from the first kernel to the second through a
// workspace argument that the caller allocates.
// CHECK-LABEL: func.func @backward(
// CHECK-SAME: %[[D:[^:]*]]: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>> {flash.workspace = "d"})

// The dQ kernel: (query block, head, batch); D by row sums in registers
// (two xor shuffles), then the key loop carries only dQ [64, 64] f32 (16
// rows per warp: 32 floats per lane); S, dP and dQ on tensor cores, P by
// exp2 against the LSE broadcast along rows (--flash-gpu-fast-exp2 puts it
// on MUFU: test/GPU/flash-gpu-fast-exp2.mlir).
// CHECK: gpu.launch
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32
// CHECK: gpu.shuffle  xor %{{.*}}, %c2_i32
// CHECK: scf.for {{.*}} iter_args(%{{[^ ]*}} = %{{[^ ]*}}) -> (vector<32xf32>) {
// CHECK: nvgpu.ldmatrix
// CHECK: nvvm.mma.sync
// CHECK: math.exp2 %{{.*}} : f32
// CHECK: gpu.terminator

// The dK/dV kernel: (key block, kv head, batch); dK and dV [64, 64] f32 in
// registers across the group's heads and the query blocks; the LSE and D
// tiles are read per column from shared memory (the scores are Sᵀ: key rows,
// query columns).
// CHECK: gpu.launch
// CHECK: scf.for {{.*}} iter_args(%{{[^ ]*}} = %{{[^ ]*}}, %{{[^ ]*}} = %{{[^ ]*}}) -> (vector<32xf32>, vector<32xf32>) {
// CHECK: scf.for
// CHECK: nvvm.mma.sync
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<64xf32>
// CHECK: math.exp2 %{{.*}} : f32
// CHECK: nvvm.mma.sync
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch

// The PTX has the two kernels.
// PTX-COUNT-2: .visible .entry backward_kernel(
func.func @backward(%q: tensor<?x?x?x64xbf16>, %k: tensor<?x?x?x64xbf16>, %v: tensor<?x?x?x64xbf16>, %o: tensor<?x?x?x64xbf16>, %do: tensor<?x?x?x64xbf16>, %lse: tensor<?x?x?xf32>, %dq_out: tensor<?x?x?x64xbf16> {bufferization.writable = true}, %dk_out: tensor<?x?x?x64xbf16> {bufferization.writable = true}, %dv_out: tensor<?x?x?x64xbf16> {bufferization.writable = true}) -> (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, %do, %lse {causal} : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?xf32>
  %0 = bufferization.materialize_in_destination %dq in %dq_out : (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16>
  %1 = bufferization.materialize_in_destination %dk in %dk_out : (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16>
  %2 = bufferization.materialize_in_destination %dv in %dv_out : (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16>
  return %0, %1, %2 : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>
}
