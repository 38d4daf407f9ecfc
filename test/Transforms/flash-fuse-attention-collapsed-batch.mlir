// Attention in the style of TensorFlow/Keras BERT as MLIR projects export it to
// linalg: Q, K, V with batch and heads collapsed ([B*H, S, D], 3-D batch
// matmuls), the scores expanded to [B, H, M, N] for a padding mask broadcast
// over the heads, and collapsed back for the second batch matmul. The mask is
// read through (b*h) floordiv H: the fused op splits B*H into (B, H) so that
// the mask reaches flash.attention as it is (no M x N copy).
// RUN: flash-opt %s -split-input-file --flash-fuse-attention | FileCheck %s
// RUN: flash-opt %s -split-input-file --flash-fuse-attention=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: %python -m flash_mlir.fusion_check %s | FileCheck %s --check-prefix=NUM
// NUM-NOT: FAIL
// NUM: fusion_check: 0 failure(s)

// An additive f32 padding mask [B, 1, M, N].
// REMARK: remark: fused attention: {{.*}} bias = 1 tensor(s)
// CHECK-LABEL: func @bert_additive_mask
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<8x16x8xf32>, %[[K:[^:]*]]: tensor<8x16x8xf32>, %[[V:[^:]*]]: tensor<8x16x8xf32>, %[[M:[^:]*]]: tensor<2x1x16x16xf32>)
// CHECK-DAG: %[[Q4:.*]] = tensor.expand_shape %[[Q]] {{\[}}[0, 1], [2], [3]] output_shape [2, 4, 16, 8]
// CHECK-DAG: %[[K4:.*]] = tensor.expand_shape %[[K]] {{\[}}[0, 1], [2], [3]] output_shape [2, 4, 16, 8]
// CHECK-DAG: %[[V4:.*]] = tensor.expand_shape %[[V]] {{\[}}[0, 1], [2], [3]] output_shape [2, 4, 16, 8]
// CHECK-NOT: linalg.
// CHECK: %[[O:.*]] = flash.attention %[[Q4]], %[[K4]], %[[V4]] bias(%[[M]] : tensor<2x1x16x16xf32>)
// CHECK: %[[O3:.*]] = tensor.collapse_shape %[[O]] {{\[}}[0, 1], [2], [3]] : tensor<2x4x16x8xf32> into tensor<8x16x8xf32>
// CHECK: return %[[O3]]
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#mask = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
func.func @bert_additive_mask(%q: tensor<8x16x8xf32>, %k: tensor<8x16x8xf32>, %v: tensor<8x16x8xf32>, %m: tensor<2x1x16x16xf32>) -> tensor<8x16x8xf32> {
  %kt0 = tensor.empty() : tensor<8x8x16xf32>
  %kt = linalg.transpose ins(%k : tensor<8x16x8xf32>) outs(%kt0 : tensor<8x8x16xf32>) permutation = [0, 2, 1]
  %z = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<8x16x16xf32>
  %sz = linalg.fill ins(%z : f32) outs(%s0 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<8x16x8xf32>, tensor<8x8x16xf32>) outs(%sz : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %c = arith.constant 0.353553385 : f32
  %ss = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<8x16x16xf32>) outs(%s0 : tensor<8x16x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<8x16x16xf32>
  %s4 = tensor.expand_shape %ss [[0, 1], [2], [3]] output_shape [2, 4, 16, 16] : tensor<8x16x16xf32> into tensor<2x4x16x16xf32>
  %e4 = tensor.empty() : tensor<2x4x16x16xf32>
  %sm = linalg.generic {indexing_maps = [#id4, #mask, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s4, %m : tensor<2x4x16x16xf32>, tensor<2x1x16x16xf32>) outs(%e4 : tensor<2x4x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x16xf32>
  %p4 = linalg.softmax dimension(3) ins(%sm : tensor<2x4x16x16xf32>) outs(%e4 : tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %p = tensor.collapse_shape %p4 [[0, 1], [2], [3]] : tensor<2x4x16x16xf32> into tensor<8x16x16xf32>
  %o0 = tensor.empty() : tensor<8x16x8xf32>
  %oz = linalg.fill ins(%z : f32) outs(%o0 : tensor<8x16x8xf32>) -> tensor<8x16x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<8x16x16xf32>, tensor<8x16x8xf32>) outs(%oz : tensor<8x16x8xf32>) -> tensor<8x16x8xf32>
  return %o : tensor<8x16x8xf32>
}

// -----

// A per-head bias [1, H, M, N] broadcast over the batch (read through
// (b*h) mod H).
// REMARK: remark: fused attention: {{.*}} bias = 1 tensor(s)
// CHECK-LABEL: func @bias_over_batch
// CHECK-NOT: linalg.
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} bias(%{{.*}} : tensor<1x4x16x16xf32>)
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#mask = affine_map<(d0, d1, d2, d3) -> (0, d1, d2, d3)>
func.func @bias_over_batch(%q: tensor<8x16x8xf32>, %k: tensor<8x16x8xf32>, %v: tensor<8x16x8xf32>, %m: tensor<1x4x16x16xf32>) -> tensor<8x16x8xf32> {
  %kt0 = tensor.empty() : tensor<8x8x16xf32>
  %kt = linalg.transpose ins(%k : tensor<8x16x8xf32>) outs(%kt0 : tensor<8x8x16xf32>) permutation = [0, 2, 1]
  %z = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<8x16x16xf32>
  %sz = linalg.fill ins(%z : f32) outs(%s0 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<8x16x8xf32>, tensor<8x8x16xf32>) outs(%sz : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %c = arith.constant 0.353553385 : f32
  %ss = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<8x16x16xf32>) outs(%s0 : tensor<8x16x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<8x16x16xf32>
  %s4 = tensor.expand_shape %ss [[0, 1], [2], [3]] output_shape [2, 4, 16, 16] : tensor<8x16x16xf32> into tensor<2x4x16x16xf32>
  %e4 = tensor.empty() : tensor<2x4x16x16xf32>
  %sm = linalg.generic {indexing_maps = [#id4, #mask, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s4, %m : tensor<2x4x16x16xf32>, tensor<1x4x16x16xf32>) outs(%e4 : tensor<2x4x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x16xf32>
  %p4 = linalg.softmax dimension(3) ins(%sm : tensor<2x4x16x16xf32>) outs(%e4 : tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %p = tensor.collapse_shape %p4 [[0, 1], [2], [3]] : tensor<2x4x16x16xf32> into tensor<8x16x16xf32>
  %o0 = tensor.empty() : tensor<8x16x8xf32>
  %oz = linalg.fill ins(%z : f32) outs(%o0 : tensor<8x16x8xf32>) -> tensor<8x16x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<8x16x16xf32>, tensor<8x16x8xf32>) outs(%oz : tensor<8x16x8xf32>) -> tensor<8x16x8xf32>
  return %o : tensor<8x16x8xf32>
}

// -----

// An i1 padding mask [B, 1, M, N] (true keeps).
// REMARK: remark: fused attention: {{.*}} mask = 1 i1 tensor(s)
// CHECK-LABEL: func @bert_i1_mask
// CHECK-NOT: linalg.
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} mask(%{{.*}} : tensor<2x1x16x16xi1>)
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#mask = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
func.func @bert_i1_mask(%q: tensor<8x16x8xf32>, %k: tensor<8x16x8xf32>, %v: tensor<8x16x8xf32>, %m: tensor<2x1x16x16xi1>) -> tensor<8x16x8xf32> {
  %kt0 = tensor.empty() : tensor<8x8x16xf32>
  %kt = linalg.transpose ins(%k : tensor<8x16x8xf32>) outs(%kt0 : tensor<8x8x16xf32>) permutation = [0, 2, 1]
  %z = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<8x16x16xf32>
  %sz = linalg.fill ins(%z : f32) outs(%s0 : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<8x16x8xf32>, tensor<8x8x16xf32>) outs(%sz : tensor<8x16x16xf32>) -> tensor<8x16x16xf32>
  %c = arith.constant 0.353553385 : f32
  %ss = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<8x16x16xf32>) outs(%s0 : tensor<8x16x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<8x16x16xf32>
  %s4 = tensor.expand_shape %ss [[0, 1], [2], [3]] output_shape [2, 4, 16, 16] : tensor<8x16x16xf32> into tensor<2x4x16x16xf32>
  %e4 = tensor.empty() : tensor<2x4x16x16xf32>
  %sm = linalg.generic {indexing_maps = [#id4, #mask, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s4, %m : tensor<2x4x16x16xf32>, tensor<2x1x16x16xi1>) outs(%e4 : tensor<2x4x16x16xf32>) {
  ^bb0(%a: f32, %b: i1, %o: f32):
    %ninf = arith.constant 0xFF800000 : f32
    %r = arith.select %b, %a, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x16xf32>
  %p4 = linalg.softmax dimension(3) ins(%sm : tensor<2x4x16x16xf32>) outs(%e4 : tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %p = tensor.collapse_shape %p4 [[0, 1], [2], [3]] : tensor<2x4x16x16xf32> into tensor<8x16x16xf32>
  %o0 = tensor.empty() : tensor<8x16x8xf32>
  %oz = linalg.fill ins(%z : f32) outs(%o0 : tensor<8x16x8xf32>) -> tensor<8x16x8xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<8x16x16xf32>, tensor<8x16x8xf32>) outs(%oz : tensor<8x16x8xf32>) -> tensor<8x16x8xf32>
  return %o : tensor<8x16x8xf32>
}
