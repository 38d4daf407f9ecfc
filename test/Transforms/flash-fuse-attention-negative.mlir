// RUN: flash-opt %s --flash-fuse-attention=report=true -split-input-file -verify-diagnostics | FileCheck %s

// Look-alikes of attention that compute another function: never fused, and
// the report says why.

#mkn_q = affine_map<(m, n, d) -> (m, d)>
#mkn_k = affine_map<(m, n, d) -> (n, d)>
#mkn_s = affine_map<(m, n, d) -> (m, n)>

// CHECK-LABEL: func @no_softmax_over_queries
// CHECK-NOT: flash.attention
// Softmax over the query axis (dimension 0) is not attention.
func.func @no_softmax_over_queries(%q: tensor<8x4xf32>, %k: tensor<12x4xf32>, %v: tensor<12x4xf32>) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<8x12xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  %s = linalg.matmul indexing_maps = [#mkn_q, #mkn_k, #mkn_s] ins(%q, %k : tensor<8x4xf32>, tensor<12x4xf32>) outs(%sz : tensor<8x12xf32>) -> tensor<8x12xf32>
  %p = linalg.softmax dimension(0) ins(%s : tensor<8x12xf32>) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  %o0 = tensor.empty() : tensor<8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<8x4xf32>) -> tensor<8x4xf32>
  // expected-remark @+1 {{not fused: the softmax is not over the key axis that the second contraction reduces}}
  %o = linalg.matmul ins(%p, %v : tensor<8x12xf32>, tensor<12x4xf32>) outs(%oz : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

#id = affine_map<(m, n) -> (m, n)>
#mkn_q = affine_map<(m, n, d) -> (m, d)>
#mkn_k = affine_map<(m, n, d) -> (n, d)>
#mkn_s = affine_map<(m, n, d) -> (m, n)>
// CHECK-LABEL: func @no_unnormalised_exp
// CHECK-NOT: flash.attention
// exp(S) V without dividing by the row sum.
func.func @no_unnormalised_exp(%q: tensor<8x4xf32>, %k: tensor<12x4xf32>, %v: tensor<12x4xf32>) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<8x12xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  %s = linalg.matmul indexing_maps = [#mkn_q, #mkn_k, #mkn_s] ins(%q, %k : tensor<8x4xf32>, tensor<12x4xf32>) outs(%sz : tensor<8x12xf32>) -> tensor<8x12xf32>
  %e = linalg.map { math.exp } ins(%s : tensor<8x12xf32>) outs(%s0 : tensor<8x12xf32>)
  %o0 = tensor.empty() : tensor<8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<8x4xf32>) -> tensor<8x4xf32>
  // expected-remark @+1 {{not fused: the exponentials are not normalised by their sum over the key axis}}
  %o = linalg.matmul ins(%e, %v : tensor<8x12xf32>, tensor<12x4xf32>) outs(%oz : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

#mkn_q = affine_map<(m, n, d) -> (m, d)>
#mkn_k = affine_map<(m, n, d) -> (n, d)>
#mkn_s = affine_map<(m, n, d) -> (m, n)>
#pt = affine_map<(n, d, m) -> (m, n)>
#x = affine_map<(n, d, m) -> (m, d)>
#out = affine_map<(n, d, m) -> (n, d)>
// CHECK-LABEL: func @no_transposed_second_contraction
// CHECK-NOT: flash.attention
// Pᵀ X reduces over the query axis (the shape of a backward pass).
func.func @no_transposed_second_contraction(%q: tensor<8x4xf32>, %k: tensor<12x4xf32>, %x: tensor<8x4xf32>) -> tensor<12x4xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<8x12xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  %s = linalg.matmul indexing_maps = [#mkn_q, #mkn_k, #mkn_s] ins(%q, %k : tensor<8x4xf32>, tensor<12x4xf32>) outs(%sz : tensor<8x12xf32>) -> tensor<8x12xf32>
  %p = linalg.softmax dimension(1) ins(%s : tensor<8x12xf32>) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  %o0 = tensor.empty() : tensor<12x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<12x4xf32>) -> tensor<12x4xf32>
  // expected-remark @+1 {{not fused: the softmax is not over the key axis that the second contraction reduces}}
  %o = linalg.generic {indexing_maps = [#pt, #x, #out], iterator_types = ["parallel", "parallel", "reduction"]} ins(%p, %x : tensor<8x12xf32>, tensor<8x4xf32>) outs(%oz : tensor<12x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<12x4xf32>
  return %o : tensor<12x4xf32>
}

// -----

#mkn_q = affine_map<(m, n, d) -> (m, d)>
#mkn_k = affine_map<(m, n, d) -> (n, d)>
#mkn_s = affine_map<(m, n, d) -> (m, n)>
// CHECK-LABEL: func @no_probabilities_used_elsewhere
// CHECK-NOT: flash.attention
// The attention weights are returned too: fusing would not remove them.
func.func @no_probabilities_used_elsewhere(%q: tensor<8x4xf32>, %k: tensor<12x4xf32>, %v: tensor<12x4xf32>) -> (tensor<8x4xf32>, tensor<8x12xf32>) {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<8x12xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  %s = linalg.matmul indexing_maps = [#mkn_q, #mkn_k, #mkn_s] ins(%q, %k : tensor<8x4xf32>, tensor<12x4xf32>) outs(%sz : tensor<8x12xf32>) -> tensor<8x12xf32>
  %p = linalg.softmax dimension(1) ins(%s : tensor<8x12xf32>) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  %o0 = tensor.empty() : tensor<8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<8x4xf32>) -> tensor<8x4xf32>
  // expected-remark @+1 {{not fused: an intermediate (linalg.softmax) has users outside the attention}}
  %o = linalg.matmul ins(%p, %v : tensor<8x12xf32>, tensor<12x4xf32>) outs(%oz : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %o, %p : tensor<8x4xf32>, tensor<8x12xf32>
}

// -----

#mkn_q = affine_map<(m, n, d) -> (m, d)>
#mkn_k = affine_map<(m, n, d) -> (n, d)>
#mkn_s = affine_map<(m, n, d) -> (m, n)>
// CHECK-LABEL: func @no_scores_used_elsewhere
// CHECK-NOT: flash.attention
func.func @no_scores_used_elsewhere(%q: tensor<8x4xf32>, %k: tensor<12x4xf32>, %v: tensor<12x4xf32>) -> (tensor<8x4xf32>, tensor<8x12xf32>) {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<8x12xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  %s = linalg.matmul indexing_maps = [#mkn_q, #mkn_k, #mkn_s] ins(%q, %k : tensor<8x4xf32>, tensor<12x4xf32>) outs(%sz : tensor<8x12xf32>) -> tensor<8x12xf32>
  %p = linalg.softmax dimension(1) ins(%s : tensor<8x12xf32>) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  %o0 = tensor.empty() : tensor<8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<8x4xf32>) -> tensor<8x4xf32>
  // expected-remark @+1 {{not fused: an intermediate (linalg.matmul) has users outside the attention}}
  %o = linalg.matmul ins(%p, %v : tensor<8x12xf32>, tensor<12x4xf32>) outs(%oz : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %o, %s : tensor<8x4xf32>, tensor<8x12xf32>
}

// -----

#id = affine_map<(m, n) -> (m, n)>
#mkn_q = affine_map<(m, n, d) -> (m, d)>
#mkn_k = affine_map<(m, n, d) -> (n, d)>
#mkn_s = affine_map<(m, n, d) -> (m, n)>
// CHECK-LABEL: func @no_finite_mask_fill
// CHECK-NOT: flash.attention
// Masking with -1e9: a fully masked row averages V instead of giving 0.
func.func @no_finite_mask_fill(%q: tensor<8x4xf32>, %k: tensor<12x4xf32>, %v: tensor<12x4xf32>, %m: tensor<8x12xi1>) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %big = arith.constant -1.0e9 : f32
  %s0 = tensor.empty() : tensor<8x12xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  %s = linalg.matmul indexing_maps = [#mkn_q, #mkn_k, #mkn_s] ins(%q, %k : tensor<8x4xf32>, tensor<12x4xf32>) outs(%sz : tensor<8x12xf32>) -> tensor<8x12xf32>
  %x = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%s, %m : tensor<8x12xf32>, tensor<8x12xi1>) outs(%s0 : tensor<8x12xf32>) {
  ^bb0(%a: f32, %keep: i1, %o: f32):
    %r = arith.select %keep, %a, %big : f32
    linalg.yield %r : f32
  } -> tensor<8x12xf32>
  %p = linalg.softmax dimension(1) ins(%x : tensor<8x12xf32>) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  %o0 = tensor.empty() : tensor<8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<8x4xf32>) -> tensor<8x4xf32>
  // expected-remark @+1 {{not fused: the mask fills masked scores with -1000000000.000000 instead of -inf: fully masked rows would average instead of giving 0}}
  %o = linalg.matmul ins(%p, %v : tensor<8x12xf32>, tensor<12x4xf32>) outs(%oz : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

#id = affine_map<(m, n) -> (m, n)>
#mkn_q = affine_map<(m, n, d) -> (m, d)>
#mkn_k = affine_map<(m, n, d) -> (n, d)>
#mkn_s = affine_map<(m, n, d) -> (m, n)>
// CHECK-LABEL: func @no_top_left_causal
// CHECK-NOT: flash.attention
// j <= i with M = 8 != N = 12 is top-left aligned; flash.attention's causal
// is bottom-right (j <= i + 4).
func.func @no_top_left_causal(%q: tensor<8x4xf32>, %k: tensor<12x4xf32>, %v: tensor<12x4xf32>) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %s0 = tensor.empty() : tensor<8x12xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  %s = linalg.matmul indexing_maps = [#mkn_q, #mkn_k, #mkn_s] ins(%q, %k : tensor<8x4xf32>, tensor<12x4xf32>) outs(%sz : tensor<8x12xf32>) -> tensor<8x12xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<8x12xf32>) outs(%s0 : tensor<8x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %hide = arith.cmpi sgt, %j, %i : index
    %r = arith.select %hide, %ninf, %a : f32
    linalg.yield %r : f32
  } -> tensor<8x12xf32>
  %p = linalg.softmax dimension(1) ins(%x : tensor<8x12xf32>) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  %o0 = tensor.empty() : tensor<8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<8x4xf32>) -> tensor<8x4xf32>
  // expected-remark @+1 {{not fused: the causal diagonal j - i <= 0 is not flash.attention's bottom-right alignment (N - M = 4)}}
  %o = linalg.matmul ins(%p, %v : tensor<8x12xf32>, tensor<12x4xf32>) outs(%oz : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

#id = affine_map<(m, n) -> (m, n)>
#mkn_q = affine_map<(m, n, d) -> (m, d)>
#mkn_k = affine_map<(m, n, d) -> (n, d)>
#mkn_s = affine_map<(m, n, d) -> (m, n)>
// CHECK-LABEL: func @no_dynamic_causal
// CHECK-NOT: flash.attention
// With dynamic M and N, j <= i cannot be shown to be the bottom-right diagonal.
func.func @no_dynamic_causal(%q: tensor<?x4xf32>, %k: tensor<?x4xf32>, %v: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c0 = arith.constant 0 : index
  %m = tensor.dim %q, %c0 : tensor<?x4xf32>
  %n = tensor.dim %k, %c0 : tensor<?x4xf32>
  %s0 = tensor.empty(%m, %n) : tensor<?x?xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<?x?xf32>) -> tensor<?x?xf32>
  %s = linalg.matmul indexing_maps = [#mkn_q, #mkn_k, #mkn_s] ins(%q, %k : tensor<?x4xf32>, tensor<?x4xf32>) outs(%sz : tensor<?x?xf32>) -> tensor<?x?xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<?x?xf32>) outs(%s0 : tensor<?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %keep = arith.cmpi ule, %j, %i : index
    %r = arith.select %keep, %a, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<?x?xf32>
  %p = linalg.softmax dimension(1) ins(%x : tensor<?x?xf32>) outs(%s0 : tensor<?x?xf32>) -> tensor<?x?xf32>
  %o0 = tensor.empty(%m) : tensor<?x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<?x4xf32>) -> tensor<?x4xf32>
  // expected-remark @+1 {{not fused: a causal mask on dynamic sequence lengths cannot be proven to align bottom-right (j <= i + N - M)}}
  %o = linalg.matmul ins(%p, %v : tensor<?x?xf32>, tensor<?x4xf32>) outs(%oz : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %o : tensor<?x4xf32>
}

// -----

#id = affine_map<(m, n) -> (m, n)>
#mkn_q = affine_map<(m, n, d) -> (m, d)>
#mkn_k = affine_map<(m, n, d) -> (n, d)>
#mkn_s = affine_map<(m, n, d) -> (m, n)>
// CHECK-LABEL: func @two_runtime_scales
// CHECK-NOT: flash.attention
// One run-time factor becomes the op's runtime_scale
// (flash-fuse-attention-runtime-scale.mlir); two are left alone.
func.func @two_runtime_scales(%q: tensor<8x4xf32>, %k: tensor<12x4xf32>, %v: tensor<12x4xf32>, %c: f32, %t: f32) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<8x12xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  %s = linalg.matmul indexing_maps = [#mkn_q, #mkn_k, #mkn_s] ins(%q, %k : tensor<8x4xf32>, tensor<12x4xf32>) outs(%sz : tensor<8x12xf32>) -> tensor<8x12xf32>
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<8x12xf32>) outs(%s0 : tensor<8x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    %r2 = arith.mulf %r, %t : f32
    linalg.yield %r2 : f32
  } -> tensor<8x12xf32>
  %p = linalg.softmax dimension(1) ins(%x : tensor<8x12xf32>) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  %o0 = tensor.empty() : tensor<8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<8x4xf32>) -> tensor<8x4xf32>
  // expected-remark @+1 {{not fused: the scores are scaled by two values known only at run time}}
  %o = linalg.matmul ins(%p, %v : tensor<8x12xf32>, tensor<12x4xf32>) outs(%oz : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

#id = affine_map<(m, n) -> (m, n)>
#row = affine_map<(m, n) -> (m)>
#mkn_q = affine_map<(m, n, d) -> (m, d)>
#mkn_k = affine_map<(m, n, d) -> (n, d)>
#mkn_s = affine_map<(m, n, d) -> (m, n)>
// CHECK-LABEL: func @no_sum_of_other_values
// CHECK-NOT: flash.attention
// exp(S) divided by the row sum of S: not a softmax.
func.func @no_sum_of_other_values(%q: tensor<8x4xf32>, %k: tensor<12x4xf32>, %v: tensor<12x4xf32>) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<8x12xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  %s = linalg.matmul indexing_maps = [#mkn_q, #mkn_k, #mkn_s] ins(%q, %k : tensor<8x4xf32>, tensor<12x4xf32>) outs(%sz : tensor<8x12xf32>) -> tensor<8x12xf32>
  %e = linalg.map { math.exp } ins(%s : tensor<8x12xf32>) outs(%s0 : tensor<8x12xf32>)
  %r0 = tensor.empty() : tensor<8xf32>
  %ri = linalg.fill ins(%zero : f32) outs(%r0 : tensor<8xf32>) -> tensor<8xf32>
  %l = linalg.reduce { arith.addf } ins(%s : tensor<8x12xf32>) outs(%ri : tensor<8xf32>) dimensions = [1]
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%e, %l : tensor<8x12xf32>, tensor<8xf32>) outs(%s0 : tensor<8x12xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<8x12xf32>
  %o0 = tensor.empty() : tensor<8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<8x4xf32>) -> tensor<8x4xf32>
  // expected-remark @+1 {{not fused: the exponentials are not normalised by their sum over the key axis}}
  %o = linalg.matmul ins(%p, %v : tensor<8x12xf32>, tensor<12x4xf32>) outs(%oz : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

#mkn_q = affine_map<(m, n, d) -> (m, d)>
#mkn_k = affine_map<(m, n, d) -> (n, d)>
#mkn_s = affine_map<(m, n, d) -> (m, n)>
// CHECK-LABEL: func @no_accumulating_output
// CHECK-NOT: flash.attention
// O = X + P V: the second contraction accumulates into a live tensor.
func.func @no_accumulating_output(%q: tensor<8x4xf32>, %k: tensor<12x4xf32>, %v: tensor<12x4xf32>, %acc: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<8x12xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  %s = linalg.matmul indexing_maps = [#mkn_q, #mkn_k, #mkn_s] ins(%q, %k : tensor<8x4xf32>, tensor<12x4xf32>) outs(%sz : tensor<8x12xf32>) -> tensor<8x12xf32>
  %p = linalg.softmax dimension(1) ins(%s : tensor<8x12xf32>) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  // expected-remark @+1 {{not fused: a contraction accumulates into a tensor that is not zero}}
  %o = linalg.matmul ins(%p, %v : tensor<8x12xf32>, tensor<12x4xf32>) outs(%acc : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

#mkn_q = affine_map<(m, n, d) -> (m, d)>
#mkn_k = affine_map<(m, n, d) -> (n, d)>
#mkn_s = affine_map<(m, n, d) -> (m, n)>
#mn = affine_map<(m, n) -> (m, n)>
// CHECK-LABEL: func @no_score_mod_of_a_score_tensor
// CHECK-NOT: flash.attention
// A bias tensor over (M, N) inside the softcap's tanh cannot be kept
// symbolic (nor be the op's bias, which is added after the modification).
func.func @no_score_mod_of_a_score_tensor(%q: tensor<8x4xf32>, %k: tensor<12x4xf32>, %v: tensor<12x4xf32>, %bias: tensor<8x12xf32>) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %cap = arith.constant 5.0 : f32
  %s0 = tensor.empty() : tensor<8x12xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  %s = linalg.matmul indexing_maps = [#mkn_q, #mkn_k, #mkn_s] ins(%q, %k : tensor<8x4xf32>, tensor<12x4xf32>) outs(%sz : tensor<8x12xf32>) -> tensor<8x12xf32>
  %capped = linalg.generic {indexing_maps = [#mn, #mn, #mn], iterator_types = ["parallel", "parallel"]} ins(%s, %bias : tensor<8x12xf32>, tensor<8x12xf32>) outs(%s0 : tensor<8x12xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %x = arith.addf %a, %b : f32
    %y = arith.divf %x, %cap : f32
    %t = math.tanh %y : f32
    %r = arith.mulf %t, %cap : f32
    linalg.yield %r : f32
  } -> tensor<8x12xf32>
  %p = linalg.softmax dimension(1) ins(%capped : tensor<8x12xf32>) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  %o0 = tensor.empty() : tensor<8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<8x4xf32>) -> tensor<8x4xf32>
  // expected-remark @+1 {{not fused: a score modification reads a tensor over both the query and the key axis (give it as a bias tensor instead)}}
  %o = linalg.matmul ins(%p, %v : tensor<8x12xf32>, tensor<12x4xf32>) outs(%oz : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

#mkn_q = affine_map<(m, n, d) -> (m, d)>
#mkn_k = affine_map<(m, n, d) -> (n, d)>
#mkn_s = affine_map<(m, n, d) -> (m, n)>
#mn = affine_map<(m, n) -> (m, n)>
// CHECK-LABEL: func @no_score_mod_after_runtime_scale
// CHECK-NOT: flash.attention
// The op's run-time scale multiplies Q Kᵀ before anything else; a softcap of
// the unscaled scores applied before it cannot be expressed.
func.func @no_score_mod_after_runtime_scale(%q: tensor<8x4xf32>, %k: tensor<12x4xf32>, %v: tensor<12x4xf32>, %scale: f32) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %cap = arith.constant 5.0 : f32
  %s0 = tensor.empty() : tensor<8x12xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  %s = linalg.matmul indexing_maps = [#mkn_q, #mkn_k, #mkn_s] ins(%q, %k : tensor<8x4xf32>, tensor<12x4xf32>) outs(%sz : tensor<8x12xf32>) -> tensor<8x12xf32>
  %capped = linalg.generic {indexing_maps = [#mn, #mn], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<8x12xf32>) outs(%s0 : tensor<8x12xf32>) {
  ^bb0(%a: f32, %out: f32):
    %y = arith.divf %a, %cap : f32
    %t = math.tanh %y : f32
    %r = arith.mulf %t, %scale : f32
    linalg.yield %r : f32
  } -> tensor<8x12xf32>
  %p = linalg.softmax dimension(1) ins(%capped : tensor<8x12xf32>) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  %o0 = tensor.empty() : tensor<8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<8x4xf32>) -> tensor<8x4xf32>
  // expected-remark @+1 {{not fused: the scores are modified before a scale known only at run time is applied}}
  %o = linalg.matmul ins(%p, %v : tensor<8x12xf32>, tensor<12x4xf32>) outs(%oz : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %o : tensor<8x4xf32>
}

// -----

#mkn_q = affine_map<(m, n, d) -> (m, d)>
#mkn_k = affine_map<(m, n, d) -> (n, d)>
#mkn_s = affine_map<(m, n, d) -> (m, n)>
#mn = affine_map<(m, n) -> (m, n)>
// CHECK-LABEL: func @no_probabilities_used_elsewhere_after_scaling
// CHECK-NOT: flash.attention
// As @no_probabilities_used_elsewhere with a scale between Q Kᵀ and the
// softmax: every op from Q Kᵀ on serves only the attention, however far
// from Q Kᵀ it is.
func.func @no_probabilities_used_elsewhere_after_scaling(%q: tensor<8x4xf32>, %k: tensor<12x4xf32>, %v: tensor<12x4xf32>) -> (tensor<8x4xf32>, tensor<8x12xf32>) {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %s0 = tensor.empty() : tensor<8x12xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  %s = linalg.matmul indexing_maps = [#mkn_q, #mkn_k, #mkn_s] ins(%q, %k : tensor<8x4xf32>, tensor<12x4xf32>) outs(%sz : tensor<8x12xf32>) -> tensor<8x12xf32>
  %scaled = linalg.generic {indexing_maps = [#mn, #mn], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<8x12xf32>) outs(%s0 : tensor<8x12xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.mulf %a, %half : f32
    linalg.yield %r : f32
  } -> tensor<8x12xf32>
  %p = linalg.softmax dimension(1) ins(%scaled : tensor<8x12xf32>) outs(%s0 : tensor<8x12xf32>) -> tensor<8x12xf32>
  %o0 = tensor.empty() : tensor<8x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<8x4xf32>) -> tensor<8x4xf32>
  // expected-remark @+1 {{not fused: an intermediate (linalg.softmax) has users outside the attention}}
  %o = linalg.matmul ins(%p, %v : tensor<8x12xf32>, tensor<12x4xf32>) outs(%oz : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %o, %p : tensor<8x4xf32>, tensor<8x12xf32>
}
