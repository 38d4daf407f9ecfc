// The GPU form of the backward with deterministic=false (FlashAttention-2's
// own): a pre-pass over (batch, head, query block) writing D and zeroing the
// f32 dQ sums (two workspaces), the dK/dV nest over (batch, KV head, key
// block) adding each step's dS K = (dSᵀ)ᵀ K into the sums with
// flash.atomic_add through a buffer, and a last pass scaling the sums into
// dQ. S and P are computed once per tile pair. Each step's LSE and D rows
// are padded with zeros (the LSE too: padded query rows have Q = 0 and
// dO = 0, so they add nothing), which lets the GPU mapping load both by
// cp.async.
// RUN: flash-opt %s --flash-tile-attention="target=sm_80 deterministic=false" | FileCheck %s
// The default keeps the two nests (no atomics).
// RUN: flash-opt %s --flash-tile-attention="target=sm_80" | FileCheck %s --check-prefix=SPLIT

// CHECK-DAG: #[[AT:.*]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG: #[[KB:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-LABEL: func.func @backward
// CHECK: %[[D0:.*]] = tensor.empty({{.*}}) {flash.workspace = "d"} : tensor<?x?x?xf32>
// CHECK: %[[S0:.*]] = tensor.empty({{.*}}) {flash.workspace = "dq_accum"} : tensor<?x?x?x64xf32>
// CHECK: %[[PRE:.*]]:2 = scf.forall ({{.*}}) in ({{.*}}) shared_outs(%{{.*}} = %[[D0]], %{{.*}} = %[[S0]])
// CHECK:   linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<64x64xf32>)
// CHECK:   scf.forall.in_parallel
// CHECK:     tensor.parallel_insert_slice
// CHECK:     tensor.parallel_insert_slice
// CHECK: %[[BUF:.*]] = bufferization.to_buffer %[[PRE]]#1 : tensor<?x?x?x64xf32> to memref<?x?x?x64xf32, strided<[?, ?, ?, ?], offset: ?>>
// CHECK: scf.forall
// CHECK:   scf.for
// CHECK:     scf.for
// CHECK:       %[[LSEPAD:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:       tensor.pad %{{.*}} low[0] high[%{{.*}}] {
// CHECK-NEXT:  ^bb0
// CHECK-NEXT:    tensor.yield %[[LSEPAD]] : f32
// CHECK-NEXT:  } : tensor<?xf32> to tensor<64xf32>
// CHECK:       %[[DPAD:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:       tensor.pad %{{.*}} low[0] high[%{{.*}}] {
// CHECK-NEXT:  ^bb0
// CHECK-NEXT:    tensor.yield %[[DPAD]] : f32
// CHECK:       flash.contraction = "scores_transposed"
// CHECK:       flash.contraction = "grad_value"
// CHECK:       flash.contraction = "grad_probs_transposed"
// CHECK:       flash.contraction = "grad_key"
// dS K with dSᵀ [key rows, query columns] read transposed.
// CHECK:       %[[PART:.*]] = linalg.generic {indexing_maps = [#[[AT]], #[[KB]], #{{.*}}], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME:    flash.contraction = "grad_query_block"
// CHECK:       %[[ROWS:.*]] = tensor.extract_slice %[[PART]][0, 0] [%{{.*}}, 64] [1, 1]
// CHECK:       %[[INTO:.*]] = memref.subview %[[BUF]][%{{.*}}, %{{.*}}, %{{.*}}, 0] [1, 1, %{{.*}}, 64] [1, 1, 1, 1]
// CHECK:       flash.atomic_add %[[ROWS]], %[[INTO]] : tensor<?x64xf32>, memref<?x64xf32, strided<[?, ?], offset: ?>>
// CHECK: %[[SUMS:.*]] = bufferization.to_tensor %[[BUF]] restrict
// CHECK: scf.forall
// CHECK:   tensor.extract_slice %[[SUMS]]
// CHECK:   arith.truncf
// CHECK-NOT: flash.attention_backward

// SPLIT-LABEL: func.func @backward
// SPLIT-NOT: flash.atomic_add
// SPLIT-NOT: dq_accum
// SPLIT: flash.contraction = "grad_query"
// SPLIT-NOT: flash.atomic_add

func.func @backward(%q: tensor<2x4x100x64xbf16>, %k: tensor<2x2x90x64xbf16>, %v: tensor<2x2x90x64xbf16>, %o: tensor<2x4x100x64xbf16>, %do: tensor<2x4x100x64xbf16>, %lse: tensor<2x4x100xf32>) -> (tensor<2x4x100x64xbf16>, tensor<2x2x90x64xbf16>, tensor<2x2x90x64xbf16>) {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, %do, %lse {causal} : tensor<2x4x100x64xbf16>, tensor<2x2x90x64xbf16>, tensor<2x2x90x64xbf16>, tensor<2x4x100x64xbf16>, tensor<2x4x100xf32>
  return %dq, %dk, %dv : tensor<2x4x100x64xbf16>, tensor<2x2x90x64xbf16>, tensor<2x2x90x64xbf16>
}
