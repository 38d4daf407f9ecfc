// Score modifications kept symbolic (issue 18): ALiBi, a bias from index
// arithmetic and softcapping fuse into flash.attention's score_mod region,
// so that no M x N bias tensor is built. Each function is written in the
// style a frontend exports it in (named below); the fused program must give
// the unfused numbers on the CPU.
// RUN: flash-opt %s -split-input-file --flash-fuse-attention --canonicalize | FileCheck %s
// RUN: flash-opt %s -split-input-file --flash-fuse-attention=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: flash-opt %s -split-input-file --flash-decompose-attention --canonicalize --flash-fuse-attention --canonicalize | FileCheck %s --check-prefix=ROUND
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

// -----

// torch-mlir of HF BLOOM's attention (two layers): the ALiBi tensor is
// built once per model, `slopes[h] * key position` over [B, H, N] viewed as
// [B*H, 1, N], and every layer adds it to its bmm scores (baddbmm, spelled
// as bmm, a scale and an add) on the collapsed [B*H, M, N] batch before a
// causal masked_fill (with -inf; HF fills finfo.min, which would average a
// fully masked row) and a float32 softmax. Both layers fuse; the shared
// ALiBi builder stays only as long as something else reads it (nothing
// here).
#bnj = affine_map<(b, h, j) -> (b, h, j)>
#h3 = affine_map<(b, h, j) -> (h)>
#id3 = affine_map<(x, m, n) -> (x, m, n)>
#al = affine_map<(x, m, n) -> (x, 0, n)>
#id4 = affine_map<(b, h, m, n) -> (b, h, m, n)>
#mn4 = affine_map<(b, h, m, n) -> (m, n)>
#id2 = affine_map<(m, n) -> (m, n)>
// REMARK-COUNT-2: remark: fused attention: scale = 3.535534e-01, softmax = linalg.softmax (max-subtracted), mask = causal, bias = 0 tensor(s), score_mod = 1 computed term(s)
// CHECK-LABEL: func @bloom_two_layers
// CHECK-NOT: linalg.batch_matmul
// CHECK-NOT: linalg.softmax
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, scale = 0.353553385 : f32} : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32> score_mod {
// CHECK: tensor.extract %arg6[%{{.*}}] : tensor<2xf32>
// CHECK: flash.yield
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, scale = 0.353553385 : f32} : tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32> -> tensor<1x4x8x8xf32> score_mod {
// CHECK: tensor.extract %arg6[%{{.*}}] : tensor<2xf32>
// CHECK-NOT: linalg.
// CHECK: return
func.func @bloom_two_layers(%q1: tensor<4x8x8xf32>, %kt1: tensor<4x8x8xf32>, %v1: tensor<4x8x8xf32>, %q2: tensor<4x8x8xf32>, %kt2: tensor<4x8x8xf32>, %v2: tensor<4x8x8xf32>, %slopes: tensor<2xf32>) -> (tensor<4x8x8xf32>, tensor<4x8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %alpha = arith.constant 0.35355339059327373 : f32
  // build_alibi_tensor: slopes[h] * arange(N), [B, H, N] -> [B*H, 1, N].
  %ea = tensor.empty() : tensor<2x2x8xf32>
  %alibi3 = linalg.generic {indexing_maps = [#h3, #bnj], iterator_types = ["parallel", "parallel", "parallel"]} ins(%slopes : tensor<2xf32>) outs(%ea : tensor<2x2x8xf32>) {
  ^bb0(%s: f32, %out: f32):
    %j = linalg.index 2 : index
    %j64 = arith.index_cast %j : index to i64
    %jf = arith.sitofp %j64 : i64 to f32
    %r = arith.mulf %s, %jf : f32
    linalg.yield %r : f32
  } -> tensor<2x2x8xf32>
  %alibi2 = tensor.collapse_shape %alibi3 [[0, 1], [2]] : tensor<2x2x8xf32> into tensor<4x8xf32>
  %alibi = tensor.expand_shape %alibi2 [[0], [1, 2]] output_shape [4, 1, 8] : tensor<4x8xf32> into tensor<4x1x8xf32>
  // The causal mask, shared too.
  %em = tensor.empty() : tensor<8x8xi1>
  %hide = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel"]} outs(%em : tensor<8x8xi1>) {
  ^bb0(%out: i1):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %c = arith.cmpi sgt, %j, %i : index
    linalg.yield %c : i1
  } -> tensor<8x8xi1>
  %e3 = tensor.empty() : tensor<4x8x8xf32>
  %e4 = tensor.empty() : tensor<2x2x8x8xf32>
  // layer 1: baddbmm(alibi, q, kᵀ, beta=1, alpha=1/sqrt(D)).
  %f1 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %qk1 = linalg.batch_matmul ins(%q1, %kt1 : tensor<4x8x8xf32>, tensor<4x8x8xf32>) outs(%f1 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %scaled1 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%qk1 : tensor<4x8x8xf32>) outs(%e3 : tensor<4x8x8xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.mulf %a, %alpha : f32
    linalg.yield %r : f32
  } -> tensor<4x8x8xf32>
  %biased1 = linalg.generic {indexing_maps = [#id3, #al, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%scaled1, %alibi : tensor<4x8x8xf32>, tensor<4x1x8xf32>) outs(%e3 : tensor<4x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x8x8xf32>
  %view1 = tensor.expand_shape %biased1 [[0, 1], [2], [3]] output_shape [2, 2, 8, 8] : tensor<4x8x8xf32> into tensor<2x2x8x8xf32>
  %masked1 = linalg.generic {indexing_maps = [#id4, #mn4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%view1, %hide : tensor<2x2x8x8xf32>, tensor<8x8xi1>) outs(%e4 : tensor<2x2x8x8xf32>) {
  ^bb0(%a: f32, %c: i1, %out: f32):
    %r = arith.select %c, %ninf, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x2x8x8xf32>
  %sm1 = linalg.softmax dimension(3) ins(%masked1 : tensor<2x2x8x8xf32>) outs(%e4 : tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %p1 = tensor.collapse_shape %sm1 [[0, 1], [2], [3]] : tensor<2x2x8x8xf32> into tensor<4x8x8xf32>
  %fo1 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %o1 = linalg.batch_matmul ins(%p1, %v1 : tensor<4x8x8xf32>, tensor<4x8x8xf32>) outs(%fo1 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  // layer 2: baddbmm(alibi, q, kᵀ, beta=1, alpha=1/sqrt(D)).
  %f2 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %qk2 = linalg.batch_matmul ins(%q2, %kt2 : tensor<4x8x8xf32>, tensor<4x8x8xf32>) outs(%f2 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %scaled2 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%qk2 : tensor<4x8x8xf32>) outs(%e3 : tensor<4x8x8xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.mulf %a, %alpha : f32
    linalg.yield %r : f32
  } -> tensor<4x8x8xf32>
  %biased2 = linalg.generic {indexing_maps = [#id3, #al, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%scaled2, %alibi : tensor<4x8x8xf32>, tensor<4x1x8xf32>) outs(%e3 : tensor<4x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x8x8xf32>
  %view2 = tensor.expand_shape %biased2 [[0, 1], [2], [3]] output_shape [2, 2, 8, 8] : tensor<4x8x8xf32> into tensor<2x2x8x8xf32>
  %masked2 = linalg.generic {indexing_maps = [#id4, #mn4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%view2, %hide : tensor<2x2x8x8xf32>, tensor<8x8xi1>) outs(%e4 : tensor<2x2x8x8xf32>) {
  ^bb0(%a: f32, %c: i1, %out: f32):
    %r = arith.select %c, %ninf, %a : f32
    linalg.yield %r : f32
  } -> tensor<2x2x8x8xf32>
  %sm2 = linalg.softmax dimension(3) ins(%masked2 : tensor<2x2x8x8xf32>) outs(%e4 : tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %p2 = tensor.collapse_shape %sm2 [[0, 1], [2], [3]] : tensor<2x2x8x8xf32> into tensor<4x8x8xf32>
  %fo2 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %o2 = linalg.batch_matmul ins(%p2, %v2 : tensor<4x8x8xf32>, tensor<4x8x8xf32>) outs(%fo2 : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  return %o1, %o2 : tensor<4x8x8xf32>, tensor<4x8x8xf32>
}

// -----

// torch-mlir of MosaicML MPT's non-causal ALiBi (build_alibi_bias with
// full=True): float aranges of the key and query positions, `-|j - i|`
// times a slope per head from a [H, 1, 1] tensor, added to the scores.
#qk_q = affine_map<(b, h, m, n, d) -> (b, h, m, d)>
#qk_k = affine_map<(b, h, m, n, d) -> (b, h, n, d)>
#qk_s = affine_map<(b, h, m, n, d) -> (b, h, m, n)>
#id4 = affine_map<(b, h, m, n) -> (b, h, m, n)>
#hmn4 = affine_map<(b, h, m, n) -> (h, m, n)>
#pv_p = affine_map<(b, h, m, d, n) -> (b, h, m, n)>
#pv_v = affine_map<(b, h, m, d, n) -> (b, h, n, d)>
#pv_o = affine_map<(b, h, m, d, n) -> (b, h, m, d)>
#v1 = affine_map<(n) -> (n)>
#mn_j = affine_map<(m, n) -> (n)>
#mn_i = affine_map<(m, n) -> (m)>
#mn = affine_map<(m, n) -> (m, n)>
#s_h = affine_map<(h, m, n) -> (h, 0, 0)>
#s_mn = affine_map<(h, m, n) -> (m, n)>
#hmn = affine_map<(h, m, n) -> (h, m, n)>
// REMARK: remark: fused attention: scale = 2.500000e-01, softmax = linalg.softmax (max-subtracted), mask = none, bias = 0 tensor(s), score_mod = 1 computed term(s)
// CHECK-LABEL: func @mpt_alibi_full
// CHECK-NOT: linalg.
// CHECK: flash.attention %arg0, %arg1, %arg2 {scale = 2.500000e-01 : f32} : tensor<1x3x10x16xf32>, tensor<1x3x10x16xf32>, tensor<1x3x10x16xf32> -> tensor<1x3x10x16xf32> score_mod {
// CHECK: math.absf
// CHECK: tensor.extract %arg3[%{{.*}}, %{{.*}}, %{{.*}}] : tensor<3x1x1xf32>
// CHECK: flash.yield
// CHECK-NOT: linalg.
func.func @mpt_alibi_full(%q: tensor<1x3x10x16xf32>, %k: tensor<1x3x10x16xf32>, %v: tensor<1x3x10x16xf32>, %slopes: tensor<3x1x1xf32>) -> tensor<1x3x10x16xf32> {
  %zero = arith.constant 0.0 : f32
  %one_minus_s = arith.constant -9.0 : f32
  %minus_one = arith.constant -1.0 : f32
  %e = tensor.empty() : tensor<1x3x10x10xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x3x10x10xf32>) -> tensor<1x3x10x10xf32>
  %qk = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<1x3x10x16xf32>, tensor<1x3x10x16xf32>) outs(%f : tensor<1x3x10x10xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<1x3x10x10xf32>
  %scaled = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk : tensor<1x3x10x10xf32>) outs(%e : tensor<1x3x10x10xf32>) {
  ^bb0(%a: f32, %out: f32):
    %c = arith.constant 0.25 : f32
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x3x10x10xf32>
  // torch.arange(1 - S, 1, dtype=float32)
  %ea = tensor.empty() : tensor<10xf32>
  %arange = linalg.generic {indexing_maps = [#v1], iterator_types = ["parallel"]} outs(%ea : tensor<10xf32>) {
  ^bb0(%out: f32):
    %n = linalg.index 0 : index
    %n64 = arith.index_cast %n : index to i64
    %nf = arith.sitofp %n64 : i64 to f32
    %r = arith.addf %nf, %one_minus_s : f32
    linalg.yield %r : f32
  } -> tensor<10xf32>
  // (arange.view(1, S) - arange.view(S, 1)).abs().mul(-1)
  %ed = tensor.empty() : tensor<10x10xf32>
  %diff = linalg.generic {indexing_maps = [#mn_j, #mn_i, #mn], iterator_types = ["parallel", "parallel"]} ins(%arange, %arange : tensor<10xf32>, tensor<10xf32>) outs(%ed : tensor<10x10xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<10x10xf32>
  %abs = linalg.generic {indexing_maps = [#mn, #mn], iterator_types = ["parallel", "parallel"]} ins(%diff : tensor<10x10xf32>) outs(%ed : tensor<10x10xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = math.absf %a : f32
    linalg.yield %r : f32
  } -> tensor<10x10xf32>
  %neg = linalg.generic {indexing_maps = [#mn, #mn], iterator_types = ["parallel", "parallel"]} ins(%abs : tensor<10x10xf32>) outs(%ed : tensor<10x10xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.mulf %a, %minus_one : f32
    linalg.yield %r : f32
  } -> tensor<10x10xf32>
  // alibi_bias * slopes.view(H, 1, 1)
  %eh = tensor.empty() : tensor<3x10x10xf32>
  %alibi = linalg.generic {indexing_maps = [#s_h, #s_mn, #hmn], iterator_types = ["parallel", "parallel", "parallel"]} ins(%slopes, %neg : tensor<3x1x1xf32>, tensor<10x10xf32>) outs(%eh : tensor<3x10x10xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.mulf %b, %a : f32
    linalg.yield %r : f32
  } -> tensor<3x10x10xf32>
  %biased = linalg.generic {indexing_maps = [#id4, #hmn4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%scaled, %alibi : tensor<1x3x10x10xf32>, tensor<3x10x10xf32>) outs(%e : tensor<1x3x10x10xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x3x10x10xf32>
  %sm = linalg.softmax dimension(3) ins(%biased : tensor<1x3x10x10xf32>) outs(%e : tensor<1x3x10x10xf32>) -> tensor<1x3x10x10xf32>
  %eo = tensor.empty() : tensor<1x3x10x16xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<1x3x10x16xf32>) -> tensor<1x3x10x16xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%sm, %v : tensor<1x3x10x10xf32>, tensor<1x3x10x16xf32>) outs(%fo : tensor<1x3x10x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<1x3x10x16xf32>
  return %o : tensor<1x3x10x16xf32>
}

// -----

// The decomposition of a grouped attention with softcap and ALiBi (as
// --flash-decompose-attention spells it: the region cloned into the scores'
// generic on the (b, kv head, group, i, j) space) fuses back into the same
// op: the slope index kv head * G + group reads as h again.
// ROUND-LABEL: func @decomposed_round_trip
// ROUND-NOT: linalg.
// ROUND: flash.attention %arg0, %arg1, %arg2 {causal, scale = 1.250000e-01 : f32} : tensor<2x4x33x16xf32>, tensor<2x2x47x16xf32>, tensor<2x2x47x16xf32> -> tensor<2x4x33x16xf32> score_mod {
// ROUND-NEXT: ^bb0(%[[S:.*]]: f32, %{{.*}}: index, %[[H:.*]]: index, %[[I:.*]]: index, %[[J:.*]]: index):
// ROUND-NEXT: %[[T:.*]] = math.tanh %[[S]] : f32
// ROUND-NEXT: %[[C:.*]] = arith.mulf %[[T]], %{{.*}} : f32
// ROUND-NEXT: %[[SLOPE:.*]] = tensor.extract %arg3[%[[H]]] : tensor<4xf32>
// ROUND-NEXT: %[[D:.*]] = arith.subi %[[J]], %[[I]] : index
// ROUND: flash.yield
// ROUND-NOT: linalg.
// CHECK-LABEL: func @decomposed_round_trip
func.func @decomposed_round_trip(%q: tensor<2x4x33x16xf32>, %k: tensor<2x2x47x16xf32>, %v: tensor<2x2x47x16xf32>, %alibi: tensor<4xf32>) -> tensor<2x4x33x16xf32> {
  %o = flash.attention %q, %k, %v {causal} : tensor<2x4x33x16xf32>, tensor<2x2x47x16xf32>, tensor<2x2x47x16xf32> -> tensor<2x4x33x16xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %cap = arith.constant 2.0 : f32
    %x = arith.divf %s, %cap : f32
    %t = math.tanh %x : f32
    %capped = arith.mulf %t, %cap : f32
    %slope = tensor.extract %alibi[%h] : tensor<4xf32>
    %rel = arith.subi %j, %i : index
    %rel64 = arith.index_cast %rel : index to i64
    %relf = arith.sitofp %rel64 : i64 to f32
    %term = arith.mulf %slope, %relf : f32
    %biased = arith.addf %capped, %term : f32
    flash.yield %biased : f32
  }
  return %o : tensor<2x4x33x16xf32>
}

// -----

// torch-mlir of HF T5's relative position bias (bidirectional, 32 buckets,
// max distance 128): the bucket of j - i is integer arithmetic with a log
// (not affine), gathered from the learned [buckets, H] table by
// nn.Embedding, permuted to [1, H, M, N] and added to the unscaled scores.
// The bucket computation and the gather become the region; no [M, N] bucket
// tensor or [1, H, M, N] bias is built.
// REMARK: remark: fused attention: scale = 1.000000e+00, softmax = linalg.softmax (max-subtracted), mask = none, bias = 0 tensor(s), score_mod = 1 computed term(s)
// CHECK-LABEL: func @t5_relative_bias
// CHECK-NOT: linalg.
// CHECK: flash.attention %arg0, %arg1, %arg2 {scale = 1.000000e+00 : f32} : tensor<2x4x12x8xf32>, tensor<2x4x20x8xf32>, tensor<2x4x20x8xf32> -> tensor<2x4x12x8xf32> score_mod {
// CHECK: math.absi
// CHECK: math.log
// CHECK: arith.fptosi
// CHECK: arith.minsi
// CHECK: %[[BUCKET:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: tensor.extract %arg3[%[[BUCKET]], %{{.*}}] : tensor<32x4xf32>
// CHECK: flash.yield
// CHECK-NOT: linalg.
#qk_q = affine_map<(b, h, m, n, d) -> (b, h, m, d)>
#qk_k = affine_map<(b, h, m, n, d) -> (b, h, n, d)>
#qk_s = affine_map<(b, h, m, n, d) -> (b, h, m, n)>
#id4 = affine_map<(b, h, m, n) -> (b, h, m, n)>
#mn4 = affine_map<(b, h, m, n) -> (m, n)>
#pv_p = affine_map<(b, h, m, d, n) -> (b, h, m, n)>
#pv_v = affine_map<(b, h, m, d, n) -> (b, h, n, d)>
#pv_o = affine_map<(b, h, m, d, n) -> (b, h, m, d)>
#mn = affine_map<(m, n) -> (m, n)>
func.func @t5_relative_bias(%q: tensor<2x4x12x8xf32>, %k: tensor<2x4x20x8xf32>, %v: tensor<2x4x20x8xf32>, %table: tensor<32x4xf32>) -> tensor<2x4x12x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c0_i64 = arith.constant 0 : i64
  %c16_i64 = arith.constant 16 : i64
  %c8_i64 = arith.constant 8 : i64
  %c15_i64 = arith.constant 15 : i64
  %c8_f = arith.constant 8.0 : f32
  %log16 = arith.constant 2.7725887222397811 : f32
  %e = tensor.empty() : tensor<2x4x12x20xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x12x20xf32>) -> tensor<2x4x12x20xf32>
  %qk = linalg.generic {indexing_maps = [#qk_q, #qk_k, #qk_s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x4x12x8xf32>, tensor<2x4x20x8xf32>) outs(%f : tensor<2x4x12x20xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<2x4x12x20xf32>
  // memory_position - context_position
  %ei = tensor.empty() : tensor<12x20xi64>
  %rp = linalg.generic {indexing_maps = [#mn], iterator_types = ["parallel", "parallel"]} outs(%ei : tensor<12x20xi64>) {
  ^bb0(%out: i64):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %i64 = arith.index_cast %i : index to i64
    %j64 = arith.index_cast %j : index to i64
    %r = arith.subi %j64, %i64 : i64
    linalg.yield %r : i64
  } -> tensor<12x20xi64>
  // (relative_position > 0).to(long) * num_buckets
  %pos = linalg.generic {indexing_maps = [#mn, #mn], iterator_types = ["parallel", "parallel"]} ins(%rp : tensor<12x20xi64>) outs(%ei : tensor<12x20xi64>) {
  ^bb0(%x: i64, %out: i64):
    %gt = arith.cmpi sgt, %x, %c0_i64 : i64
    %g = arith.extui %gt : i1 to i64
    %r = arith.muli %g, %c16_i64 : i64
    linalg.yield %r : i64
  } -> tensor<12x20xi64>
  %abs = linalg.generic {indexing_maps = [#mn, #mn], iterator_types = ["parallel", "parallel"]} ins(%rp : tensor<12x20xi64>) outs(%ei : tensor<12x20xi64>) {
  ^bb0(%x: i64, %out: i64):
    %r = math.absi %x : i64
    linalg.yield %r : i64
  } -> tensor<12x20xi64>
  // max_exact + (log(rp / max_exact) / log(max_distance / max_exact) * (num_buckets - max_exact)).to(long), clamped
  %large = linalg.generic {indexing_maps = [#mn, #mn], iterator_types = ["parallel", "parallel"]} ins(%abs : tensor<12x20xi64>) outs(%ei : tensor<12x20xi64>) {
  ^bb0(%x: i64, %out: i64):
    %xf = arith.sitofp %x : i64 to f32
    %d = arith.divf %xf, %c8_f : f32
    %l = math.log %d : f32
    %n = arith.divf %l, %log16 : f32
    %s = arith.mulf %n, %c8_f : f32
    %t = arith.fptosi %s : f32 to i64
    %a = arith.addi %t, %c8_i64 : i64
    %r = arith.minsi %a, %c15_i64 : i64
    linalg.yield %r : i64
  } -> tensor<12x20xi64>
  %buckets = linalg.generic {indexing_maps = [#mn, #mn, #mn, #mn], iterator_types = ["parallel", "parallel"]} ins(%pos, %abs, %large : tensor<12x20xi64>, tensor<12x20xi64>, tensor<12x20xi64>) outs(%ei : tensor<12x20xi64>) {
  ^bb0(%p: i64, %x: i64, %lg: i64, %out: i64):
    %small = arith.cmpi slt, %x, %c8_i64 : i64
    %w = arith.select %small, %x, %lg : i64
    %r = arith.addi %p, %w : i64
    linalg.yield %r : i64
  } -> tensor<12x20xi64>
  // relative_attention_bias(buckets).permute([2, 0, 1]).unsqueeze(0)
  %eb = tensor.empty() : tensor<1x4x12x20xf32>
  %bias = linalg.generic {indexing_maps = [affine_map<(b, h, m, n) -> (m, n)>, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%buckets : tensor<12x20xi64>) outs(%eb : tensor<1x4x12x20xf32>) {
  ^bb0(%bk: i64, %out: f32):
    %h = linalg.index 1 : index
    %bi = arith.index_cast %bk : i64 to index
    %r = tensor.extract %table[%bi, %h] : tensor<32x4xf32>
    linalg.yield %r : f32
  } -> tensor<1x4x12x20xf32>
  // T5 does not scale the scores.
  %biased = linalg.generic {indexing_maps = [#id4, affine_map<(b, h, m, n) -> (0, h, m, n)>, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk, %bias : tensor<2x4x12x20xf32>, tensor<1x4x12x20xf32>) outs(%e : tensor<2x4x12x20xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x4x12x20xf32>
  %sm = linalg.softmax dimension(3) ins(%biased : tensor<2x4x12x20xf32>) outs(%e : tensor<2x4x12x20xf32>) -> tensor<2x4x12x20xf32>
  %eo = tensor.empty() : tensor<2x4x12x8xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x4x12x8xf32>) -> tensor<2x4x12x8xf32>
  %o = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%sm, %v : tensor<2x4x12x20xf32>, tensor<2x4x20x8xf32>) outs(%fo : tensor<2x4x12x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<2x4x12x8xf32>
  return %o : tensor<2x4x12x8xf32>
}
