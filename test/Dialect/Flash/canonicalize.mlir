// RUN: flash-opt %s -canonicalize -split-input-file | FileCheck %s

// Rank-2 and rank-3 attention is normalised to the rank-4 form.

// CHECK-LABEL: func @rank2
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<7x16xf32>, %[[K:[^:]*]]: tensor<9x16xf32>, %[[V:[^:]*]]: tensor<9x8xf32>, %[[M:[^:]*]]: tensor<7x9xi1>)
// CHECK-DAG: %[[Q4:.*]] = tensor.expand_shape %[[Q]] {{\[}}[0, 1, 2], [3]] output_shape [1, 1, 7, 16] : tensor<7x16xf32> into tensor<1x1x7x16xf32>
// CHECK-DAG: %[[K4:.*]] = tensor.expand_shape %[[K]] {{\[}}[0, 1, 2], [3]] output_shape [1, 1, 9, 16]
// CHECK-DAG: %[[V4:.*]] = tensor.expand_shape %[[V]] {{\[}}[0, 1, 2], [3]] output_shape [1, 1, 9, 8]
// CHECK: %[[O:.*]], %[[L:.*]] = flash.attention %[[Q4]], %[[K4]], %[[V4]] mask(%[[M]] : tensor<7x9xi1>) {causal} : tensor<1x1x7x16xf32>, tensor<1x1x9x16xf32>, tensor<1x1x9x8xf32> -> tensor<1x1x7x8xf32>, tensor<1x1x7xf32>
// CHECK-DAG: %[[O2:.*]] = tensor.collapse_shape %[[O]] {{\[}}[0, 1, 2], [3]] : tensor<1x1x7x8xf32> into tensor<7x8xf32>
// CHECK-DAG: %[[L1:.*]] = tensor.collapse_shape %[[L]] {{\[}}[0, 1, 2]] : tensor<1x1x7xf32> into tensor<7xf32>
// CHECK: return %[[O2]], %[[L1]]
func.func @rank2(%q: tensor<7x16xf32>, %k: tensor<9x16xf32>, %v: tensor<9x8xf32>, %m: tensor<7x9xi1>) -> (tensor<7x8xf32>, tensor<7xf32>) {
  %o, %lse = flash.attention %q, %k, %v mask(%m : tensor<7x9xi1>) {causal} : tensor<7x16xf32>, tensor<9x16xf32>, tensor<9x8xf32> -> tensor<7x8xf32>, tensor<7xf32>
  return %o, %lse : tensor<7x8xf32>, tensor<7xf32>
}

// -----

// CHECK-LABEL: func @rank3_dynamic
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<?x?x16xf16>
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[H:.*]] = tensor.dim %[[Q]], %[[C0]]
// CHECK: tensor.expand_shape %[[Q]] {{\[}}[0, 1], [2], [3]] output_shape [1, %[[H]], %{{.*}}, 16] : tensor<?x?x16xf16> into tensor<1x?x?x16xf16>
// CHECK: flash.attention {{.*}} : tensor<1x?x?x16xf16>, tensor<1x?x?x16xf16>, tensor<1x?x?x16xf16> -> tensor<1x?x?x16xf16>
// CHECK: tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2], [3]] : tensor<1x?x?x16xf16> into tensor<?x?x16xf16>
func.func @rank3_dynamic(%q: tensor<?x?x16xf16>, %k: tensor<?x?x16xf16>) -> tensor<?x?x16xf16> {
  %o = flash.attention %q, %k, %k : tensor<?x?x16xf16>, tensor<?x?x16xf16>, tensor<?x?x16xf16> -> tensor<?x?x16xf16>
  return %o : tensor<?x?x16xf16>
}

// -----

// CHECK-LABEL: func @backward_rank3
// CHECK-COUNT-6: tensor.expand_shape
// CHECK: flash.attention_backward {{.*}} : tensor<1x4x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8xf32>
// CHECK-COUNT-3: tensor.collapse_shape
func.func @backward_rank3(%q: tensor<4x8x16xf32>, %k: tensor<2x8x16xf32>, %lse: tensor<4x8xf32>) -> (tensor<4x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>) {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %k, %q, %q, %lse : tensor<4x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8xf32>
  return %dq, %dk, %dv : tensor<4x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32>
}

// -----

// Rank-4 ops are left alone.
// CHECK-LABEL: func @rank4
// CHECK-NOT: tensor.expand_shape
// CHECK: flash.attention
func.func @rank4(%q: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %o = flash.attention %q, %q, %q : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32> -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// Sinks [H] stay as they are; grad_sinks keeps its type.
// CHECK-LABEL: func @sinks_rank3
// CHECK: flash.attention {{.*}} sinks(%{{.*}} : tensor<4xf32>) : tensor<1x4x8x16xf32>
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %[[DS:.*]] = flash.attention_backward {{.*}} sinks(%{{.*}} : tensor<4xf32>) : tensor<1x4x8x16xf32>, {{.*}} -> tensor<4xf32>
// CHECK: return {{.*}}, %[[DS]] : tensor<4x8x16xf32>, tensor<4xf32>
func.func @sinks_rank3(%q: tensor<4x8x16xf32>, %s: tensor<4xf32>) -> (tensor<4x8x16xf32>, tensor<4xf32>) {
  %o, %lse = flash.attention %q, %q, %q sinks(%s : tensor<4xf32>) : tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32> -> tensor<4x8x16xf32>, tensor<4x8xf32>
  %dq, %dk, %dv, %ds = flash.attention_backward %q, %q, %q, %o, %q, %lse sinks(%s : tensor<4xf32>) : tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8x16xf32>, tensor<4x8xf32> -> tensor<4xf32>
  return %dq, %ds : tensor<4x8x16xf32>, tensor<4xf32>
}
