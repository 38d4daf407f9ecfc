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
// dq-fragment-major: the sums in strips of 16 rows in mma.sync fragment
// order (M = 100 -> 112 rows), zeroed and added in whole strips, read back
// by the last pass through the op's map.
// RUN: flash-opt %s --flash-tile-attention="target=sm_80 deterministic=false dq-fragment-major=1" | FileCheck %s --check-prefix=FRAG
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
// The dK/dV nest's first key blocks are its heaviest (under a causal mask
// key block 0 sees every query block): the GPU mapping launches them first.
// CHECK: } {flash.heaviest_first}
// CHECK: %[[SUMS:.*]] = bufferization.to_tensor %[[BUF]] restrict
// CHECK: scf.forall
// CHECK:   tensor.extract_slice %[[SUMS]]
// CHECK:   arith.truncf
// CHECK-NOT: flash.attention_backward

// FRAG-DAG: #[[FRAGMAP:.*]] = affine_map<(d0, d1) -> ((d0 floordiv 16) * 16 + (d1 floordiv 8) * 2 + (d0 mod 16) floordiv 8 + ((d1 mod 2) * 32 + (d0 mod 8) * 4 + (d1 mod 8) floordiv 2) floordiv 64, ((d1 mod 2) * 32 + (d0 mod 8) * 4 + (d1 mod 8) floordiv 2) mod 64)>
// FRAG-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// FRAG-LABEL: func.func @backward
// FRAG: tensor.empty(%{{.*}}, %{{.*}}, %c112) {flash.workspace = "dq_accum"} : tensor<?x?x?x64xf32>
// FRAG: %[[PROWS:.*]] = arith.ceildivui %{{.*}}, %c16
// FRAG: %[[PSTRIPS:.*]] = arith.muli %[[PROWS]], %c16
// FRAG: tensor.extract_slice %{{.*}}[0, 0] [%[[PSTRIPS]], 64] [1, 1] : tensor<64x64xf32> to tensor<?x64xf32>
// FRAG: %[[STEP:.*]] = arith.ceildivui %{{.*}}, %c16
// FRAG: %[[SROWS:.*]] = arith.muli %[[STEP]], %c16
// FRAG: flash.contraction = "grad_query_block"
// FRAG: %[[INTO:.*]] = memref.subview %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, 0] [1, 1, %[[SROWS]], 64] [1, 1, 1, 1]
// FRAG: flash.atomic_add %{{.*}}, %[[INTO]] {fragment_major = 1 : i64} : tensor<?x64xf32>, memref<?x64xf32, strided<[?, ?], offset: ?>>
// FRAG: scf.forall
// FRAG: %[[LAST:.*]] = arith.ceildivui %{{.*}}, %c16
// FRAG: %[[LROWS:.*]] = arith.muli %[[LAST]], %c16
// FRAG: tensor.extract_slice %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, 0] [1, 1, %[[LROWS]], 64] [1, 1, 1, 1] : tensor<?x?x?x64xf32> to tensor<?x64xf32>
// FRAG: linalg.generic {indexing_maps = [#[[FRAGMAP]], #[[ID]]], iterator_types = ["parallel", "parallel"]} ins(%{{.*}} : tensor<64x64xf32>) outs(%{{.*}} : tensor<64x64xbf16>)
// FRAG: arith.truncf

// SPLIT-LABEL: func.func @backward
// SPLIT-NOT: flash.atomic_add
// SPLIT-NOT: dq_accum
// SPLIT: flash.contraction = "grad_query"
// SPLIT-NOT: flash.atomic_add

func.func @backward(%q: tensor<2x4x100x64xbf16>, %k: tensor<2x2x90x64xbf16>, %v: tensor<2x2x90x64xbf16>, %o: tensor<2x4x100x64xbf16>, %do: tensor<2x4x100x64xbf16>, %lse: tensor<2x4x100xf32>) -> (tensor<2x4x100x64xbf16>, tensor<2x2x90x64xbf16>, tensor<2x2x90x64xbf16>) {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, %do, %lse {causal} : tensor<2x4x100x64xbf16>, tensor<2x2x90x64xbf16>, tensor<2x2x90x64xbf16>, tensor<2x4x100x64xbf16>, tensor<2x4x100xf32>
  return %dq, %dk, %dv : tensor<2x4x100x64xbf16>, tensor<2x2x90x64xbf16>, tensor<2x2x90x64xbf16>
}
