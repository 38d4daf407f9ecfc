// Score modifications kept symbolic (issue 18): ALiBi, a bias from index
// arithmetic and softcapping fuse into flash.attention's score_mod region,
// so that no M x N bias tensor is built. Each function is written in the
// style a frontend exports it in (named below); the fused program must give
// the unfused numbers on the CPU.
// RUN: flash-opt %s -split-input-file --flash-fuse-attention --canonicalize | FileCheck %s
// RUN: flash-opt %s -split-input-file --flash-fuse-attention=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: %python -m flash_mlir.fusion_check %s --expect fused | FileCheck %s --check-prefix=NUM
// NUM-NOT: FAIL
// NUM: fusion_check: 0 failure(s)

// torch-mlir (linalg-on-tensors) of FlexAttention's ALiBi example,
// `score + slopes[h] * (kv_idx - q_idx)` written out in eager torch: the
// bias [H, M, N] is built from aten.arange (linalg.index), a subtraction
// in i64, a cast to f32 and a per-head slope, then added to the scores
// before a causal masked_fill and the softmax.
#qk_q = affine_map<(b, h, m, n, d) -> (b, h, m, d)>
#qk_k = affine_map<(b, h, m, n, d) -> (b, h, n, d)>
#qk_s = affine_map<(b, h, m, n, d) -> (b, h, m, n)>
#id4 = affine_map<(b, h, m, n) -> (b, h, m, n)>
#hmn = affine_map<(b, h, m, n) -> (h, m, n)>
#mn4 = affine_map<(b, h, m, n) -> (m, n)>
#row = affine_map<(b, h, m, n) -> (b, h, m)>
#pv_p = affine_map<(b, h, m, d, n) -> (b, h, m, n)>
#pv_v = affine_map<(b, h, m, d, n) -> (b, h, n, d)>
#pv_o = affine_map<(b, h, m, d, n) -> (b, h, m, d)>
#id3 = affine_map<(h, m, n) -> (h, m, n)>
#h3 = affine_map<(h, m, n) -> (h)>
#id2 = affine_map<(m, n) -> (m, n)>
// REMARK: remark: fused attention: scale = 3.535534e-01, softmax = linalg.softmax (max-subtracted), mask = causal, bias = 0 tensor(s), score_mod = 1 computed term(s)
// CHECK-LABEL: func @alibi_torch
// CHECK-NOT: linalg.
// CHECK: %[[O:.*]] = flash.attention %arg0, %arg1, %arg2 {causal, scale = 0.353553385 : f32} : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32> -> tensor<2x4x16x8xf32> score_mod {
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %[[B:.*]]: index, %[[H:.*]]: index, %[[I:.*]]: index, %[[J:.*]]: index):
// CHECK: tensor.extract %arg3[%[[H]]] : tensor<4xf32>
// CHECK: arith.sitofp
// CHECK: flash.yield
// CHECK-NOT: linalg.
// CHECK: return %[[O]]
func.func @alibi_torch(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>, %v: tensor<2x4x16x8xf32>, %slopes: tensor<4xf32>) -> tensor<2x4x16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %sqrt_d = arith.constant 2.8284271247461903 : f32
  %e = tensor.empty() : tensor<2x4x16x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %qk = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x4x16x8xf32>, tensor<2x4x16x8xf32>) outs(%f : tensor<2x4x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x16xf32>
  %scaled = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk : tensor<2x4x16x16xf32>) outs(%e : tensor<2x4x16x16xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.divf %a, %sqrt_d : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x16xf32>
  // aten.arange(16) as kv_idx minus q_idx, in i64, then float.
  %e3 = tensor.empty() : tensor<4x16x16xf32>
  %alibi = linalg.generic {indexing_maps = [#h3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%slopes : tensor<4xf32>) outs(%e3 : tensor<4x16x16xf32>) {
  ^bb0(%slope: f32, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %i64 = arith.index_cast %i : index to i64
    %j64 = arith.index_cast %j : index to i64
    %d = arith.subi %j64, %i64 : i64
    %df = arith.sitofp %d : i64 to f32
    %r = arith.mulf %slope, %df : f32
    linalg.yield %r : f32
  } -> tensor<4x16x16xf32>
  %biased = linalg.generic {indexing_maps = [#id4, #hmn, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scaled, %alibi : tensor<2x4x16x16xf32>, tensor<4x16x16xf32>) outs(%e : tensor<2x4x16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x16xf32>
  // masked_fill(~tril(ones), -inf)
  %e2 = tensor.empty() : tensor<16x16xi1>
  %tril = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%e2 : tensor<16x16xi1>) {
  ^bb0(%out: i1):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %hide = arith.cmpi sgt, %j, %i : index
    linalg.yield %hide : i1
  } -> tensor<16x16xi1>
  %masked = linalg.generic {indexing_maps = [#id4, #mn4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%biased, %tril : tensor<2x4x16x16xf32>, tensor<16x16xi1>) outs(%e : tensor<2x4x16x16xf32>) {
  ^bb0(%a: f32, %c: i1, %out: f32):
    %r = arith.select %c, %ninf, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x16xf32>
  %sm = linalg.softmax dimension(3) ins(%masked : tensor<2x4x16x16xf32>) outs(%e : tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
  %eo = tensor.empty() : tensor<2x4x16x8xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x4x16x8xf32>) -> tensor<2x4x16x8xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%sm, %v : tensor<2x4x16x16xf32>, tensor<2x4x16x8xf32>) outs(%fo : tensor<2x4x16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<2x4x16x8xf32>
  return %o : tensor<2x4x16x8xf32>
}

// -----

// JAX (stablehlo-to-linalg) of Gemma 2's attention logit softcapping,
// `logits = tanh(logits / 50) * 50` on bf16 activations with the softmax
// in f32: every stablehlo op is its own generic, constants are splat
// tensors, and the query is pre-scaled by 1/sqrt(D) (query_pre_attn_scalar).
#id4 = affine_map<(b, h, m, n) -> (b, h, m, n)>
#qd = affine_map<(b, h, m, d) -> (b, h, m, d)>
#qk_q = affine_map<(b, h, m, n, d) -> (b, h, m, d)>
#qk_k = affine_map<(b, h, m, n, d) -> (b, h, n, d)>
#qk_s = affine_map<(b, h, m, n, d) -> (b, h, m, n)>
#row = affine_map<(b, h, m, n) -> (b, h, m)>
#pv_p = affine_map<(b, h, m, d, n) -> (b, h, m, n)>
#pv_v = affine_map<(b, h, m, d, n) -> (b, h, n, d)>
#pv_o = affine_map<(b, h, m, d, n) -> (b, h, m, d)>
// The scale folds the query's 1/4 and the cap's 1/50 (the region reads
// s = Q Kᵀ / 200); only O's f32 -> bf16 round trip of the graph is left.
// REMARK: remark: fused attention: scale = 5.000000e-03{{.*}} mask = none, bias = 0 tensor(s), score_mod = a function of the scores
// CHECK-LABEL: func @softcap_jax
// CHECK-NOT: linalg.
// CHECK: %[[CAP:.*]] = arith.constant 5.000000e+01 : f32
// CHECK: flash.attention %arg0, %arg1, %arg2 {scale = 5.000000e-03 : f32} : tensor<1x2x12x16xbf16>, tensor<1x2x20x16xbf16>, tensor<1x2x20x16xbf16> -> tensor<1x2x12x16xbf16> score_mod {
// CHECK-NEXT: ^bb0(%[[S:.*]]: f32, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// CHECK-NEXT: %[[T:.*]] = math.tanh %[[S]] : f32
// CHECK-NEXT: %[[R:.*]] = arith.mulf %[[T]], %[[CAP]] : f32
// CHECK-NEXT: flash.yield %[[R]] : f32
// CHECK-NOT: 12x20
func.func @softcap_jax(%q: tensor<1x2x12x16xbf16>, %k: tensor<1x2x20x16xbf16>, %v: tensor<1x2x20x16xbf16>) -> tensor<1x2x12x16xbf16> {
  %scale = arith.constant dense<0.25> : tensor<1x2x12x16xbf16>
  %cap = arith.constant dense<50.0> : tensor<1x2x12x20xf32>
  %zero = arith.constant 0.0 : f32
  %zbf = arith.constant 0.0 : bf16
  %ninf = arith.constant 0xFF800000 : f32
  %eq = tensor.empty() : tensor<1x2x12x16xbf16>
  %qs = linalg.generic {indexing_maps = [#qd, #qd, #qd], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%q, %scale : tensor<1x2x12x16xbf16>, tensor<1x2x12x16xbf16>) outs(%eq : tensor<1x2x12x16xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %out: bf16):
    %r = arith.mulf %a, %b : bf16
    linalg.yield %r : bf16
  } -> tensor<1x2x12x16xbf16>
  %e = tensor.empty() : tensor<1x2x12x20xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x2x12x20xf32>) -> tensor<1x2x12x20xf32>
  %qk = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%qs, %k : tensor<1x2x12x16xbf16>, tensor<1x2x20x16xbf16>) outs(%f : tensor<1x2x12x20xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %p = arith.mulf %a32, %b32 : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<1x2x12x20xf32>
  %div = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk, %cap : tensor<1x2x12x20xf32>, tensor<1x2x12x20xf32>) outs(%e : tensor<1x2x12x20xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x2x12x20xf32>
  %tanh = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%div : tensor<1x2x12x20xf32>) outs(%e : tensor<1x2x12x20xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = math.tanh %a : f32
    linalg.yield %r : f32
  } -> tensor<1x2x12x20xf32>
  %capped = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%tanh, %cap : tensor<1x2x12x20xf32>, tensor<1x2x12x20xf32>) outs(%e : tensor<1x2x12x20xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x2x12x20xf32>
  // jax.nn.softmax: max, subtract, exp, sum, divide.
  %er = tensor.empty() : tensor<1x2x12xf32>
  %fm = linalg.fill ins(%ninf : f32) outs(%er : tensor<1x2x12xf32>) -> tensor<1x2x12xf32>
  %mx = linalg.generic {indexing_maps = [#id4, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%capped : tensor<1x2x12x20xf32>) outs(%fm : tensor<1x2x12xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<1x2x12xf32>
  %ex = linalg.generic {indexing_maps = [#id4, #row, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%capped, %mx : tensor<1x2x12x20xf32>, tensor<1x2x12xf32>) outs(%e : tensor<1x2x12x20xf32>) {
  ^bb0(%a: f32, %m: f32, %out: f32):
    %d = arith.subf %a, %m : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<1x2x12x20xf32>
  %fs = linalg.fill ins(%zero : f32) outs(%er : tensor<1x2x12xf32>) -> tensor<1x2x12xf32>
  %sum = linalg.generic {indexing_maps = [#id4, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%ex : tensor<1x2x12x20xf32>) outs(%fs : tensor<1x2x12xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<1x2x12xf32>
  %ep = tensor.empty() : tensor<1x2x12x20xbf16>
  %p = linalg.generic {indexing_maps = [#id4, #row, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ex, %sum : tensor<1x2x12x20xf32>, tensor<1x2x12xf32>) outs(%ep : tensor<1x2x12x20xbf16>) {
  ^bb0(%a: f32, %s: f32, %out: bf16):
    %d = arith.divf %a, %s : f32
    %r = arith.truncf %d : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<1x2x12x20xbf16>
  %eo = tensor.empty() : tensor<1x2x12x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x2x12x16xf32>) -> tensor<1x2x12x16xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<1x2x12x20xbf16>, tensor<1x2x20x16xbf16>) outs(%fo : tensor<1x2x12x16xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %pr = arith.mulf %a32, %b32 : f32
    %r = arith.addf %acc, %pr : f32
    linalg.yield %r : f32
  } -> tensor<1x2x12x16xf32>
  %eob = tensor.empty() : tensor<1x2x12x16xbf16>
  %ob = linalg.generic {indexing_maps = [#qd, #qd], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%o : tensor<1x2x12x16xf32>) outs(%eob : tensor<1x2x12x16xbf16>) {
  ^bb0(%a: f32, %out: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<1x2x12x16xbf16>
  return %ob : tensor<1x2x12x16xbf16>
}
