// RUN: flash-opt %s --flash-decompose-attention -split-input-file | FileCheck %s

// Grouped-query attention with causal masking, a bias broadcast over batch
// and an LSE result. The query-head axis is split into (Hkv, G) = (2, 2).

// CHECK-DAG: #[[QK_Q:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d5)>
// CHECK-DAG: #[[QK_K:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, d5)>
// CHECK-DAG: #[[QK_S:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3, d4)>
// CHECK-DAG: #[[BIAS:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d1, d2, d3, d4)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[PV_V:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d5, d4)>

// CHECK-LABEL: func @gqa_causal_bias
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x4x8x16xf16>, %[[K:[^:]*]]: tensor<2x2x10x16xf16>, %[[V:[^:]*]]: tensor<2x2x10x32xf16>, %[[B:[^:]*]]: tensor<4x8x10xf32>)
// CHECK-NOT: flash.
// CHECK: %[[Q5:.*]] = tensor.expand_shape %[[Q]] {{\[}}[0], [1, 2], [3], [4]] output_shape [2, 2, 2, 8, 16] : tensor<2x4x8x16xf16> into tensor<2x2x2x8x16xf16>
// S = Q Kᵀ, accumulated in f32.
// CHECK: %[[S:.*]] = linalg.generic {indexing_maps = [#[[QK_Q]], #[[QK_K]], #[[QK_S]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[Q5]], %[[K]] : tensor<2x2x2x8x16xf16>, tensor<2x2x10x16xf16>) outs(%{{.*}} : tensor<2x2x2x8x10xf32>)
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: arith.mulf
// CHECK: arith.addf
// Scale, bias and the bottom-right causal diagonal (N - M = 2).
// CHECK: %[[B4:.*]] = tensor.expand_shape %[[B]] {{\[}}[0, 1], [2], [3]] output_shape [2, 2, 8, 10]
// CHECK: %[[SM:.*]] = linalg.generic {{.*}} ins(%[[S]], %[[B4]] : tensor<2x2x2x8x10xf32>, tensor<2x2x8x10xf32>)
// CHECK: arith.constant 2.500000e-01 : f32
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[I:.*]] = linalg.index 3 : index
// CHECK: %[[J:.*]] = linalg.index 4 : index
// CHECK: %[[LAST:.*]] = arith.addi %[[I]], %{{.*}} : index
// CHECK: %[[HID:.*]] = arith.cmpi sgt, %[[J]], %[[LAST]] : index
// CHECK: arith.select %[[HID]], %{{.*}}, %{{.*}} : f32
// Max-subtracted softmax.
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[SM]] : {{.*}}) outs(%{{.*}} : tensor<2x2x2x8xf32>)
// CHECK: arith.maximumf
// CHECK: %[[E:.*]] = linalg.generic {{.*}} ins(%[[SM]], %[[MAX]] :
// CHECK: math.exp
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[E]] :
// CHECK: arith.addf
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%[[E]], %[[SUM]] :
// CHECK: arith.divf
// O = P V, truncated to f16 and collapsed back to [B, Hq, M, Dv].
// CHECK: %[[O5:.*]] = linalg.generic {indexing_maps = [#[[QK_Q]], #[[PV_V]], #[[QK_S]]], {{.*}} ins(%[[P]], %[[V]] : tensor<2x2x2x8x10xf32>, tensor<2x2x10x32xf16>) outs(%{{.*}} : tensor<2x2x2x8x32xf32>)
// CHECK: %[[OH:.*]] = linalg.generic {{.*}} ins(%[[O5]] : tensor<2x2x2x8x32xf32>) outs(%{{.*}} : tensor<2x2x2x8x32xf16>)
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: %[[O:.*]] = tensor.collapse_shape %[[OH]] {{\[}}[0], [1, 2], [3], [4]] : tensor<2x2x2x8x32xf16> into tensor<2x4x8x32xf16>
// LSE = max + log(sum).
// CHECK: %[[L5:.*]] = linalg.generic {{.*}} ins(%[[MAX]], %[[SUM]] :
// CHECK: math.log
// CHECK: %[[L:.*]] = tensor.collapse_shape %[[L5]] {{\[}}[0], [1, 2], [3]] : tensor<2x2x2x8xf32> into tensor<2x4x8xf32>
// CHECK: return %[[O]], %[[L]]
func.func @gqa_causal_bias(%q: tensor<2x4x8x16xf16>, %k: tensor<2x2x10x16xf16>, %v: tensor<2x2x10x32xf16>, %b: tensor<4x8x10xf32>) -> (tensor<2x4x8x32xf16>, tensor<2x4x8xf32>) {
  %o, %lse = flash.attention %q, %k, %v bias(%b : tensor<4x8x10xf32>) {causal} : tensor<2x4x8x16xf16>, tensor<2x2x10x16xf16>, tensor<2x2x10x32xf16> -> tensor<2x4x8x32xf16>, tensor<2x4x8xf32>
  return %o, %lse : tensor<2x4x8x32xf16>, tensor<2x4x8xf32>
}

// -----

// An i1 mask broadcast over the query axis; f32 needs no conversions, and
// no LSE means no log.

// CHECK-DAG: #[[MASK:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, 0, 0, d4)>
// CHECK-LABEL: func @mask_f32
// CHECK-SAME: %[[M:[^:]*]]: tensor<2x1x1x9xi1>
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[MASK]], #{{.*}}]{{.*}} ins(%{{.*}}, %[[M]] :
// CHECK: %[[TRUE:.*]] = arith.constant true
// CHECK: %[[HIDDEN:.*]] = arith.xori %{{.*}}, %[[TRUE]] : i1
// CHECK: arith.select %[[HIDDEN]]
// CHECK-NOT: arith.truncf
// CHECK-NOT: math.log
// CHECK: return
func.func @mask_f32(%q: tensor<2x3x7x8xf32>, %k: tensor<2x3x9x8xf32>, %m: tensor<2x1x1x9xi1>) -> tensor<2x3x7x8xf32> {
  %o = flash.attention %q, %k, %k mask(%m : tensor<2x1x1x9xi1>) : tensor<2x3x7x8xf32>, tensor<2x3x9x8xf32>, tensor<2x3x9x8xf32> -> tensor<2x3x7x8xf32>
  return %o : tensor<2x3x7x8xf32>
}

// -----

// Dynamic head counts: the group size Hq / Hkv is computed at run time and
// the query heads are gathered into the grouped layout.

// CHECK-LABEL: func @dynamic_gqa
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<?x?x?x16xf32>, %[[K:[^:]*]]: tensor<?x?x?x16xf32>
// CHECK-DAG: %[[HQ:.*]] = tensor.dim %[[Q]], %c1
// CHECK-DAG: %[[HKV:.*]] = tensor.dim %[[K]], %c1
// CHECK: %[[G:.*]] = arith.divui %[[HQ]], %[[HKV]] : index
// CHECK: %[[EMPTY:.*]] = tensor.empty(%{{.*}}, %[[HKV]], %[[G]], %{{.*}}) : tensor<?x?x?x?x16xf32>
// CHECK: %[[Q5:.*]] = linalg.generic {{.*}} outs(%[[EMPTY]] : tensor<?x?x?x?x16xf32>)
// CHECK: %[[HK:.*]] = linalg.index 1 : index
// CHECK: %[[GI:.*]] = linalg.index 2 : index
// CHECK: %[[BASE:.*]] = arith.muli %[[HK]], %[[G]] : index
// CHECK: %[[H:.*]] = arith.addi %[[BASE]], %[[GI]] : index
// CHECK: tensor.extract %[[Q]][%{{.*}}, %[[H]], %{{.*}}, %{{.*}}] : tensor<?x?x?x16xf32>
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2], [3], [4]] : tensor<?x?x?x?x16xf32> into tensor<?x?x?x16xf32>
func.func @dynamic_gqa(%q: tensor<?x?x?x16xf32>, %k: tensor<?x?x?x16xf32>, %v: tensor<?x?x?x16xf32>) -> tensor<?x?x?x16xf32> {
  %o = flash.attention %q, %k, %v : tensor<?x?x?x16xf32>, tensor<?x?x?x16xf32>, tensor<?x?x?x16xf32> -> tensor<?x?x?x16xf32>
  return %o : tensor<?x?x?x16xf32>
}

// -----

// Rank-2 attention is normalised to rank 4 first.

// CHECK-LABEL: func @rank2
// CHECK: tensor.expand_shape %{{.*}} {{\[}}[0, 1, 2], [3]] output_shape [1, 1, 5, 8]
// CHECK-NOT: flash.attention
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1, 2], [3]] : tensor<1x1x5x8xf32> into tensor<5x8xf32>
func.func @rank2(%q: tensor<5x8xf32>, %k: tensor<6x8xf32>) -> tensor<5x8xf32> {
  %o = flash.attention %q, %k, %k {scale = 2.0 : f32} : tensor<5x8xf32>, tensor<6x8xf32>, tensor<6x8xf32> -> tensor<5x8xf32>
  return %o : tensor<5x8xf32>
}

// -----

// The backward op: P is recomputed from LSE; dV = Pᵀ dO and dK = scale dSᵀ Q
// reduce over (g, m), so grouped query heads are summed into their KV head.

// CHECK-DAG: #[[PT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, d5, d2)>
// CHECK-DAG: #[[DOT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, d5, d3)>
// CHECK-DAG: #[[KV:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func @backward_gqa
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<1x4x6x8xf32>, %[[K:[^:]*]]: tensor<1x2x5x8xf32>, %[[V:[^:]*]]: tensor<1x2x5x8xf32>, %[[O:[^:]*]]: tensor<1x4x6x8xf32>, %[[DO:[^:]*]]: tensor<1x4x6x8xf32>, %[[LSE:[^:]*]]: tensor<1x4x6xf32>)
// CHECK-DAG: %[[Q5:.*]] = tensor.expand_shape %[[Q]]
// CHECK-DAG: %[[DO5:.*]] = tensor.expand_shape %[[DO]]
// CHECK-DAG: %[[L5:.*]] = tensor.expand_shape %[[LSE]]
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[L5]] :
// CHECK: math.exp
// CHECK: %[[DV:.*]] = linalg.generic {indexing_maps = [#[[PT]], #[[DOT]], #[[KV]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%[[P]], %[[DO5]] : {{.*}}) outs(%{{.*}} : tensor<1x2x5x8xf32>)
// CHECK: %[[DS:.*]] = linalg.generic {{.*}} ins(%[[P]], %{{.*}}, %{{.*}} :
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: linalg.generic {{.*}} ins(%[[DS]], %[[K]] :
// CHECK: %[[DK:.*]] = linalg.generic {indexing_maps = [#[[PT]], #[[DOT]], #[[KV]]], {{.*}} ins(%[[DS]], %[[Q5]] : {{.*}}) outs(%{{.*}} : tensor<1x2x5x8xf32>)
// CHECK: %[[DQ:.*]] = tensor.collapse_shape
// CHECK: %[[DKS:.*]] = linalg.generic {{.*}} ins(%[[DK]] :
// CHECK: return %[[DQ]], %[[DKS]], %[[DV]]
func.func @backward_gqa(%q: tensor<1x4x6x8xf32>, %k: tensor<1x2x5x8xf32>, %v: tensor<1x2x5x8xf32>, %o: tensor<1x4x6x8xf32>, %do: tensor<1x4x6x8xf32>, %lse: tensor<1x4x6xf32>) -> (tensor<1x4x6x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>) {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, %do, %lse : tensor<1x4x6x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>, tensor<1x4x6x8xf32>, tensor<1x4x6xf32>
  return %dq, %dk, %dv : tensor<1x4x6x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>
}

// -----

// A sliding window hides keys left of i + (N - M) - W.

// CHECK-LABEL: func @window
// CHECK: %[[DIAG:.*]] = arith.subi %c12, %c8 : index
// CHECK: %[[START:.*]] = arith.subi %[[DIAG]], %c3 : index
// CHECK: linalg.generic
// CHECK: %[[I:.*]] = linalg.index 3 : index
// CHECK: %[[J:.*]] = linalg.index 4 : index
// CHECK: %[[FIRST:.*]] = arith.addi %[[I]], %[[START]] : index
// CHECK: %[[LEFT:.*]] = arith.cmpi slt, %[[J]], %[[FIRST]] : index
// CHECK: arith.select %[[LEFT]]
func.func @window(%q: tensor<1x1x8x4xf32>, %k: tensor<1x1x12x4xf32>) -> tensor<1x1x8x4xf32> {
  %o = flash.attention %q, %k, %k {window = 3 : i64} : tensor<1x1x8x4xf32>, tensor<1x1x12x4xf32>, tensor<1x1x12x4xf32> -> tensor<1x1x8x4xf32>
  return %o : tensor<1x1x8x4xf32>
}
