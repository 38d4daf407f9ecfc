// RUN: flash-opt %s --flash-fuse-attention-backward -split-input-file | FileCheck %s
// RUN: %python -m flash_mlir.fusion_check %s --fuse=--flash-fuse-attention-backward --expect fused --dynamic-size 7 | FileCheck %s --check-prefix=EXEC
// RUN: flash-opt %s --flash-fuse-attention-backward=report=true -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// Training steps split across functions, as AOT autograd and JAX's
// partitioning emit them: a forward returning P as a saved activation and
// a backward taking it. P's result and argument become the fused
// forward's O and LSE in both signatures and at the call sites; nothing
// M x N crosses the boundary. The entry (first function of each chunk)
// runs unfused and fused on the CPU (EXEC).
// EXEC-NOT: FAIL
// EXEC: fusion_check: 0 failure(s)
// REPORT: remark: fused attention backward across @attn_fwd_torch and @attn_bwd_torch
// REPORT: remark: fused attention backward across @attn_fwd_jax and @attn_bwd_jax
// REPORT: remark: fused attention backward across @attn_fwd_perm and @attn_bwd_perm
// REPORT: remark: fused attention backward across @attn_fwd_causal and @attn_bwd_causal
// REPORT: remark: fused attention backward across @attn_fwd_bias and @attn_bwd_bias
// REPORT: remark: fused attention backward across @attn_fwd_gqa and @attn_bwd_gqa
// REPORT: remark: fused attention backward across @attn_fwd_dyn and @attn_bwd_dyn
// REPORT: remark: fused attention backward across @attn_fwd_bf16 and @attn_bwd_bf16
// REPORT: remark: fused attention backward across @attn_fwd_mb and @attn_bwd_mb
// REPORT-NOT: not fused


// S1. torch-mlir style (as 1a): @attn_fwd_torch(q, k, v) -> (o, P) saves P as the [B*H, M, N] batch_matmul operand; @attn_bwd_torch(q, k, v, P, dO) -> (dq, dk, dv) with dS = P * (dP - rowsum(dP * P)) and dS / sqrt(D).
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
// CHECK-LABEL: func.func @train_step_torch
// CHECK: %[[F:.*]]:3 = call @attn_fwd_torch(%arg0, %arg1, %arg2) : ({{.*}}) -> (tensor<2x2x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16xf32>)
// CHECK: call @attn_bwd_torch(%arg0, %arg1, %arg2, %[[F]]#1, %[[F]]#2, %arg3)
// CHECK-LABEL: func.func private @attn_fwd_torch
// CHECK-SAME: -> (tensor<2x2x16x8xf32>, tensor<4x16x8xf32>, tensor<4x16xf32>)
// CHECK-NOT: 16x20
// CHECK: flash.attention %arg0, %arg1, %arg2 {scale = 0.353553385 : f32}
// CHECK-NOT: 16x20
// CHECK-LABEL: func.func private @attn_bwd_torch
// CHECK-SAME: %arg3: tensor<4x16x8xf32>, %arg4: tensor<4x16xf32>, %arg5: tensor<2x2x16x8xf32>)
// CHECK-NOT: 16x20
// CHECK: flash.attention_backward
// CHECK-NOT: 16x20
// CHECK: return
func.func @train_step_torch(%q: tensor<2x2x16x8xf32>, %k: tensor<2x2x20x8xf32>, %v: tensor<2x2x20x8xf32>, %do: tensor<2x2x16x8xf32>) -> (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x20x8xf32>, tensor<2x2x20x8xf32>) {
  %o, %p = call @attn_fwd_torch(%q, %k, %v) : (tensor<2x2x16x8xf32>, tensor<2x2x20x8xf32>, tensor<2x2x20x8xf32>) -> (tensor<2x2x16x8xf32>, tensor<4x16x20xf32>)
  %dq, %dk, %dv = call @attn_bwd_torch(%q, %k, %v, %p, %do) : (tensor<2x2x16x8xf32>, tensor<2x2x20x8xf32>, tensor<2x2x20x8xf32>, tensor<4x16x20xf32>, tensor<2x2x16x8xf32>) -> (tensor<2x2x16x8xf32>, tensor<2x2x20x8xf32>, tensor<2x2x20x8xf32>)
  return %o, %dq, %dk, %dv : tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x20x8xf32>, tensor<2x2x20x8xf32>
}

func.func private @attn_fwd_torch(%q: tensor<2x2x16x8xf32>, %k: tensor<2x2x20x8xf32>, %v: tensor<2x2x20x8xf32>) -> (tensor<2x2x16x8xf32>, tensor<4x16x20xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 2.82842712 : f32
  %q3 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x2x16x8xf32> into tensor<4x16x8xf32>
  %k3 = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<2x2x20x8xf32> into tensor<4x20x8xf32>
  %v3 = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<2x2x20x8xf32> into tensor<4x20x8xf32>
  %kt0 = tensor.empty() : tensor<4x8x20xf32>
  %kt = linalg.transpose ins(%k3 : tensor<4x20x8xf32>) outs(%kt0 : tensor<4x8x20xf32>) permutation = [0, 2, 1]
  %s0 = tensor.empty() : tensor<4x16x20xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<4x16x20xf32>) -> tensor<4x16x20xf32>
  %s = linalg.batch_matmul ins(%q3, %kt : tensor<4x16x8xf32>, tensor<4x8x20xf32>) outs(%sz : tensor<4x16x20xf32>) -> tensor<4x16x20xf32>
  %x = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<4x16x20xf32>) outs(%s0 : tensor<4x16x20xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.divf %a, %c : f32
    linalg.yield %d : f32
  } -> tensor<4x16x20xf32>
  %m0 = tensor.empty() : tensor<4x16x1xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%m0 : tensor<4x16x1xf32>) -> tensor<4x16x1xf32>
  %mx = linalg.generic {indexing_maps = [#map3, #row3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<4x16x20xf32>) outs(%mi : tensor<4x16x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<4x16x1xf32>
  %e = linalg.generic {indexing_maps = [#map3, #row3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %mx : tensor<4x16x20xf32>, tensor<4x16x1xf32>) outs(%s0 : tensor<4x16x20xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<4x16x20xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%m0 : tensor<4x16x1xf32>) -> tensor<4x16x1xf32>
  %l = linalg.generic {indexing_maps = [#map3, #row3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%e : tensor<4x16x20xf32>) outs(%l0 : tensor<4x16x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<4x16x1xf32>
  %p = linalg.generic {indexing_maps = [#map3, #row3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%e, %l : tensor<4x16x20xf32>, tensor<4x16x1xf32>) outs(%s0 : tensor<4x16x20xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<4x16x20xf32>
  %o0 = tensor.empty() : tensor<4x16x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  %o3 = linalg.batch_matmul ins(%p, %v3 : tensor<4x16x20xf32>, tensor<4x20x8xf32>) outs(%oz : tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  %o = tensor.expand_shape %o3 [[0, 1], [2], [3]] output_shape [2, 2, 16, 8] : tensor<4x16x8xf32> into tensor<2x2x16x8xf32>
  return %o, %p : tensor<2x2x16x8xf32>, tensor<4x16x20xf32>
}

func.func private @attn_bwd_torch(%q: tensor<2x2x16x8xf32>, %k: tensor<2x2x20x8xf32>, %v: tensor<2x2x20x8xf32>, %p: tensor<4x16x20xf32>, %do: tensor<2x2x16x8xf32>) -> (tensor<2x2x16x8xf32>, tensor<2x2x20x8xf32>, tensor<2x2x20x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 2.82842712 : f32
  %q3 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x2x16x8xf32> into tensor<4x16x8xf32>
  %k3 = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<2x2x20x8xf32> into tensor<4x20x8xf32>
  %v3 = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<2x2x20x8xf32> into tensor<4x20x8xf32>
  %do3 = tensor.collapse_shape %do [[0, 1], [2], [3]] : tensor<2x2x16x8xf32> into tensor<4x16x8xf32>
  %s0 = tensor.empty() : tensor<4x16x20xf32>
  %m0 = tensor.empty() : tensor<4x16x1xf32>
  %kt0 = tensor.empty() : tensor<4x8x20xf32>
  // dV = bmm(P^T, dO)
  %pt0 = tensor.empty() : tensor<4x20x16xf32>
  %pt = linalg.transpose ins(%p : tensor<4x16x20xf32>) outs(%pt0 : tensor<4x20x16xf32>) permutation = [0, 2, 1]
  %dv0 = tensor.empty() : tensor<4x20x8xf32>
  %dvz = linalg.fill ins(%zero : f32) outs(%dv0 : tensor<4x20x8xf32>) -> tensor<4x20x8xf32>
  %dv3 = linalg.batch_matmul ins(%pt, %do3 : tensor<4x20x16xf32>, tensor<4x16x8xf32>) outs(%dvz : tensor<4x20x8xf32>) -> tensor<4x20x8xf32>
  // dP = bmm(dO, V^T)
  %vt0 = tensor.empty() : tensor<4x8x20xf32>
  %vt = linalg.transpose ins(%v3 : tensor<4x20x8xf32>) outs(%vt0 : tensor<4x8x20xf32>) permutation = [0, 2, 1]
  %dpz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<4x16x20xf32>) -> tensor<4x16x20xf32>
  %dp = linalg.batch_matmul ins(%do3, %vt : tensor<4x16x8xf32>, tensor<4x8x20xf32>) outs(%dpz : tensor<4x16x20xf32>) -> tensor<4x16x20xf32>
  // _softmax_backward_data(dP, P): dS = P * (dP - sum(dP * P, -1, keepdim))
  %t = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%dp, %p : tensor<4x16x20xf32>, tensor<4x16x20xf32>) outs(%s0 : tensor<4x16x20xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<4x16x20xf32>
  %rz = linalg.fill ins(%zero : f32) outs(%m0 : tensor<4x16x1xf32>) -> tensor<4x16x1xf32>
  %rs = linalg.generic {indexing_maps = [#map3, #row3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%t : tensor<4x16x20xf32>) outs(%rz : tensor<4x16x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<4x16x1xf32>
  %ds = linalg.generic {indexing_maps = [#map3, #map3, #row3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%p, %dp, %rs : tensor<4x16x20xf32>, tensor<4x16x20xf32>, tensor<4x16x1xf32>) outs(%s0 : tensor<4x16x20xf32>) {
  ^bb0(%pp: f32, %g: f32, %r: f32, %o: f32):
    %d = arith.subf %g, %r : f32
    %m = arith.mulf %pp, %d : f32
    linalg.yield %m : f32
  } -> tensor<4x16x20xf32>
  // backward of S / sqrt(D)
  %dss = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ds : tensor<4x16x20xf32>) outs(%s0 : tensor<4x16x20xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.divf %a, %c : f32
    linalg.yield %d : f32
  } -> tensor<4x16x20xf32>
  // dQ = bmm(dS, K)   (the transpose of K^T folded away)
  %dq0 = tensor.empty() : tensor<4x16x8xf32>
  %dqz = linalg.fill ins(%zero : f32) outs(%dq0 : tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  %dq3 = linalg.batch_matmul ins(%dss, %k3 : tensor<4x16x20xf32>, tensor<4x20x8xf32>) outs(%dqz : tensor<4x16x8xf32>) -> tensor<4x16x8xf32>
  // dK^T = bmm(Q^T, dS), dK = transpose(dK^T)
  %qt0 = tensor.empty() : tensor<4x8x16xf32>
  %qt = linalg.transpose ins(%q3 : tensor<4x16x8xf32>) outs(%qt0 : tensor<4x8x16xf32>) permutation = [0, 2, 1]
  %dktz = linalg.fill ins(%zero : f32) outs(%kt0 : tensor<4x8x20xf32>) -> tensor<4x8x20xf32>
  %dkt = linalg.batch_matmul ins(%qt, %dss : tensor<4x8x16xf32>, tensor<4x16x20xf32>) outs(%dktz : tensor<4x8x20xf32>) -> tensor<4x8x20xf32>
  %dk30 = tensor.empty() : tensor<4x20x8xf32>
  %dk3 = linalg.transpose ins(%dkt : tensor<4x8x20xf32>) outs(%dk30 : tensor<4x20x8xf32>) permutation = [0, 2, 1]
  %dq = tensor.expand_shape %dq3 [[0, 1], [2], [3]] output_shape [2, 2, 16, 8] : tensor<4x16x8xf32> into tensor<2x2x16x8xf32>
  %dk = tensor.expand_shape %dk3 [[0, 1], [2], [3]] output_shape [2, 2, 20, 8] : tensor<4x20x8xf32> into tensor<2x2x20x8xf32>
  %dv = tensor.expand_shape %dv3 [[0, 1], [2], [3]] output_shape [2, 2, 20, 8] : tensor<4x20x8xf32> into tensor<2x2x20x8xf32>
  return %dq, %dk, %dv : tensor<2x2x16x8xf32>, tensor<2x2x20x8xf32>, tensor<2x2x20x8xf32>
}

// -----

// S2. JAX style (as 1b): @attn_fwd_jax(q, k, v) -> (o, P, Qs) saves P and the scaled q = q / sqrt(D); @attn_bwd_jax(Qs, k, v, P, dO) -> (dq, dk, dv) with dS = dP*P - P*sum(dP*P), dQ = (dS K) / sqrt(D), dK = dS^T Qs.
#q = affine_map<(b, h, m, n, d) -> (b, h, m, d)>
#k = affine_map<(b, h, m, n, d) -> (b, h, n, d)>
#s = affine_map<(b, h, m, n, d) -> (b, h, m, n)>
#p = affine_map<(b, h, m, d, n) -> (b, h, m, n)>
#v = affine_map<(b, h, m, d, n) -> (b, h, n, d)>
#o = affine_map<(b, h, m, d, n) -> (b, h, m, d)>
#pt = affine_map<(b, h, n, d, m) -> (b, h, m, n)>
#dot = affine_map<(b, h, n, d, m) -> (b, h, m, d)>
#kv = affine_map<(b, h, n, d, m) -> (b, h, n, d)>
// CHECK-LABEL: func.func @train_step_jax
// CHECK: %[[F:.*]]:4 = call @attn_fwd_jax
// CHECK: call @attn_bwd_jax(%[[F]]#3, %arg1, %arg2, %[[F]]#1, %[[F]]#2, %arg3)
// CHECK-LABEL: func.func private @attn_fwd_jax
// CHECK-NOT: 10x14
// CHECK: flash.attention %arg0, %arg1, %arg2 {scale = 0.353553385 : f32}
// CHECK-NOT: 10x14
// CHECK-LABEL: func.func private @attn_bwd_jax
// CHECK-NOT: 10x14
// The backward's Q is the saved Q / sqrt(D), scaled back.
// CHECK: %[[Q:.*]] = linalg.generic
// CHECK: flash.attention_backward %[[Q]], %arg1, %arg2, %arg3, %arg5, %arg4 {scale = 0.353553385 : f32}
// CHECK-NOT: 10x14
// CHECK: return
func.func @train_step_jax(%q: tensor<2x2x10x8xf32>, %k: tensor<2x2x14x8xf32>, %v: tensor<2x2x14x8xf32>, %do: tensor<2x2x10x8xf32>) -> (tensor<2x2x10x8xf32>, tensor<2x2x10x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x14x8xf32>) {
  %o, %p, %qs = call @attn_fwd_jax(%q, %k, %v) : (tensor<2x2x10x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x14x8xf32>) -> (tensor<2x2x10x8xf32>, tensor<2x2x10x14xf32>, tensor<2x2x10x8xf32>)
  %dq, %dk, %dv = call @attn_bwd_jax(%qs, %k, %v, %p, %do) : (tensor<2x2x10x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x10x14xf32>, tensor<2x2x10x8xf32>) -> (tensor<2x2x10x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x14x8xf32>)
  return %o, %dq, %dk, %dv : tensor<2x2x10x8xf32>, tensor<2x2x10x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x14x8xf32>
}

func.func private @attn_fwd_jax(%q: tensor<2x2x10x8xf32>, %k: tensor<2x2x14x8xf32>, %v: tensor<2x2x14x8xf32>) -> (tensor<2x2x10x8xf32>, tensor<2x2x10x14xf32>, tensor<2x2x10x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %sq = arith.constant dense<2.82842712> : tensor<2x2x10x8xf32>
  %q0 = tensor.empty() : tensor<2x2x10x8xf32>
  %qs = linalg.map { arith.divf } ins(%q, %sq : tensor<2x2x10x8xf32>, tensor<2x2x10x8xf32>) outs(%q0 : tensor<2x2x10x8xf32>)
  %s0 = tensor.empty() : tensor<2x2x10x14xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x2x10x14xf32>) -> tensor<2x2x10x14xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%qs, %k : tensor<2x2x10x8xf32>, tensor<2x2x14x8xf32>) outs(%sz : tensor<2x2x10x14xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x10x14xf32>
  %r0 = tensor.empty() : tensor<2x2x10xf32>
  %ri = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<2x2x10xf32>) -> tensor<2x2x10xf32>
  %mx = linalg.reduce { arith.maximumf } ins(%s : tensor<2x2x10x14xf32>) outs(%ri : tensor<2x2x10xf32>) dimensions = [3]
  %mxb = linalg.broadcast ins(%mx : tensor<2x2x10xf32>) outs(%s0 : tensor<2x2x10x14xf32>) dimensions = [3]
  %d = linalg.map { arith.subf } ins(%s, %mxb : tensor<2x2x10x14xf32>, tensor<2x2x10x14xf32>) outs(%s0 : tensor<2x2x10x14xf32>)
  %e = linalg.map { math.exp } ins(%d : tensor<2x2x10x14xf32>) outs(%s0 : tensor<2x2x10x14xf32>)
  %li = linalg.fill ins(%zero : f32) outs(%r0 : tensor<2x2x10xf32>) -> tensor<2x2x10xf32>
  %l = linalg.reduce { arith.addf } ins(%e : tensor<2x2x10x14xf32>) outs(%li : tensor<2x2x10xf32>) dimensions = [3]
  %lb = linalg.broadcast ins(%l : tensor<2x2x10xf32>) outs(%s0 : tensor<2x2x10x14xf32>) dimensions = [3]
  %p = linalg.map { arith.divf } ins(%e, %lb : tensor<2x2x10x14xf32>, tensor<2x2x10x14xf32>) outs(%s0 : tensor<2x2x10x14xf32>)
  %o0 = tensor.empty() : tensor<2x2x10x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x2x10x8xf32>) -> tensor<2x2x10x8xf32>
  %out = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<2x2x10x14xf32>, tensor<2x2x14x8xf32>) outs(%oz : tensor<2x2x10x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x10x8xf32>
  return %out, %p, %qs : tensor<2x2x10x8xf32>, tensor<2x2x10x14xf32>, tensor<2x2x10x8xf32>
}

func.func private @attn_bwd_jax(%qs: tensor<2x2x10x8xf32>, %k: tensor<2x2x14x8xf32>, %v: tensor<2x2x14x8xf32>, %p: tensor<2x2x10x14xf32>, %do: tensor<2x2x10x8xf32>) -> (tensor<2x2x10x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x14x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %sq = arith.constant dense<2.82842712> : tensor<2x2x10x8xf32>
  %q0 = tensor.empty() : tensor<2x2x10x8xf32>
  %s0 = tensor.empty() : tensor<2x2x10x14xf32>
  %r0 = tensor.empty() : tensor<2x2x10xf32>
  // dV = einsum('bhmn,bhmd->bhnd', P, dO)
  %kv0 = tensor.empty() : tensor<2x2x14x8xf32>
  %dvz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<2x2x14x8xf32>) -> tensor<2x2x14x8xf32>
  %dv = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %do : tensor<2x2x10x14xf32>, tensor<2x2x10x8xf32>) outs(%dvz : tensor<2x2x14x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x14x8xf32>
  // dP = einsum('bhmd,bhnd->bhmn', dO, V)
  %dpz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x2x10x14xf32>) -> tensor<2x2x10x14xf32>
  %dp = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%do, %v : tensor<2x2x10x8xf32>, tensor<2x2x14x8xf32>) outs(%dpz : tensor<2x2x10x14xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x10x14xf32>
  // softmax VJP: t = dP * P; dS = t - P * sum(t)
  %t = linalg.map { arith.mulf } ins(%dp, %p : tensor<2x2x10x14xf32>, tensor<2x2x10x14xf32>) outs(%s0 : tensor<2x2x10x14xf32>)
  %ti = linalg.fill ins(%zero : f32) outs(%r0 : tensor<2x2x10xf32>) -> tensor<2x2x10xf32>
  %ts = linalg.reduce { arith.addf } ins(%t : tensor<2x2x10x14xf32>) outs(%ti : tensor<2x2x10xf32>) dimensions = [3]
  %tsb = linalg.broadcast ins(%ts : tensor<2x2x10xf32>) outs(%s0 : tensor<2x2x10x14xf32>) dimensions = [3]
  %pts = linalg.map { arith.mulf } ins(%p, %tsb : tensor<2x2x10x14xf32>, tensor<2x2x10x14xf32>) outs(%s0 : tensor<2x2x10x14xf32>)
  %ds = linalg.map { arith.subf } ins(%t, %pts : tensor<2x2x10x14xf32>, tensor<2x2x10x14xf32>) outs(%s0 : tensor<2x2x10x14xf32>)
  // dQs = einsum('bhmn,bhnd->bhmd', dS, K); dQ = dQs / sqrt(D)
  %dqz = linalg.fill ins(%zero : f32) outs(%q0 : tensor<2x2x10x8xf32>) -> tensor<2x2x10x8xf32>
  %dqs = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%ds, %k : tensor<2x2x10x14xf32>, tensor<2x2x14x8xf32>) outs(%dqz : tensor<2x2x10x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x10x8xf32>
  %dq = linalg.map { arith.divf } ins(%dqs, %sq : tensor<2x2x10x8xf32>, tensor<2x2x10x8xf32>) outs(%q0 : tensor<2x2x10x8xf32>)
  // dK = einsum('bhmn,bhmd->bhnd', dS, Qs)
  %dkz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<2x2x14x8xf32>) -> tensor<2x2x14x8xf32>
  %dk = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%ds, %qs : tensor<2x2x10x14xf32>, tensor<2x2x10x8xf32>) outs(%dkz : tensor<2x2x14x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x14x8xf32>
  return %dq, %dk, %dv : tensor<2x2x10x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x14x8xf32>
}

// -----

// S3. Rank-4 generics, S * 0.353553385, torch's dS = P * (dP - rowsum(dP * P)); the backward takes its operands in another order, @attn_bwd_perm(dO, P, v, k, q), and returns (dv, dk, dq).
#q = affine_map<(b, h, m, n, d) -> (b, h, m, d)>
#k = affine_map<(b, h, m, n, d) -> (b, h, n, d)>
#s = affine_map<(b, h, m, n, d) -> (b, h, m, n)>
#p = affine_map<(b, h, m, d, n) -> (b, h, m, n)>
#v = affine_map<(b, h, m, d, n) -> (b, h, n, d)>
#o = affine_map<(b, h, m, d, n) -> (b, h, m, d)>
#pt = affine_map<(b, h, n, d, m) -> (b, h, m, n)>
#dot = affine_map<(b, h, n, d, m) -> (b, h, m, d)>
#kv = affine_map<(b, h, n, d, m) -> (b, h, n, d)>
#id4 = affine_map<(b, h, m, n) -> (b, h, m, n)>
#row4 = affine_map<(b, h, m, n) -> (b, h, m)>
// CHECK-LABEL: func.func @train_step_permuted
// CHECK: %[[F:.*]]:3 = call @attn_fwd_perm
// CHECK: call @attn_bwd_perm(%arg3, %[[F]]#1, %[[F]]#2, %arg2, %arg1, %arg0)
// CHECK-LABEL: func.func private @attn_bwd_perm
// CHECK-NOT: 12x16
// CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = flash.attention_backward %arg5, %arg4, %arg3, %arg1, %arg0, %arg2
// CHECK-NOT: 12x16
// CHECK: return %[[DV]], %[[DK]], %[[DQ]]
func.func @train_step_permuted(%q: tensor<2x2x12x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>, %do: tensor<2x2x12x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) {
  %o, %p = call @attn_fwd_perm(%q, %k, %v) : (tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x12x16xf32>)
  %dv, %dk, %dq = call @attn_bwd_perm(%do, %p, %v, %k, %q) : (tensor<2x2x12x8xf32>, tensor<2x2x12x16xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x12x8xf32>) -> (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x12x8xf32>)
  return %o, %dq, %dk, %dv : tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>
}

func.func private @attn_fwd_perm(%q: tensor<2x2x12x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x12x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 0.353553385 : f32
  %s0 = tensor.empty() : tensor<2x2x12x16xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x2x12x16xf32>) -> tensor<2x2x12x16xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>) outs(%sz : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x16xf32>
  %x = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<2x2x12x16xf32>) outs(%s0 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x16xf32>
  %r0 = tensor.empty() : tensor<2x2x12xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<2x2x12xf32>) -> tensor<2x2x12xf32>
  %mx = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<2x2x12x16xf32>) outs(%mi : tensor<2x2x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12xf32>
  %e = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %mx : tensor<2x2x12x16xf32>, tensor<2x2x12xf32>) outs(%s0 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<2x2x12x16xf32>
  %li = linalg.fill ins(%zero : f32) outs(%r0 : tensor<2x2x12xf32>) -> tensor<2x2x12xf32>
  %l = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%e : tensor<2x2x12x16xf32>) outs(%li : tensor<2x2x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12xf32>
  %p = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%e, %l : tensor<2x2x12x16xf32>, tensor<2x2x12xf32>) outs(%s0 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<2x2x12x16xf32>
  %q0 = tensor.empty() : tensor<2x2x12x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%q0 : tensor<2x2x12x8xf32>) -> tensor<2x2x12x8xf32>
  %out = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<2x2x12x16xf32>, tensor<2x2x16x8xf32>) outs(%oz : tensor<2x2x12x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x8xf32>
  return %out, %p : tensor<2x2x12x8xf32>, tensor<2x2x12x16xf32>
}

func.func private @attn_bwd_perm(%do: tensor<2x2x12x8xf32>, %p: tensor<2x2x12x16xf32>, %v: tensor<2x2x16x8xf32>, %k: tensor<2x2x16x8xf32>, %q: tensor<2x2x12x8xf32>) -> (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x12x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 0.353553385 : f32
  %s0 = tensor.empty() : tensor<2x2x12x16xf32>
  %r0 = tensor.empty() : tensor<2x2x12xf32>
  %q0 = tensor.empty() : tensor<2x2x12x8xf32>
  // dV = P^T dO (contraction over the query axis)
  %kv0 = tensor.empty() : tensor<2x2x16x8xf32>
  %dvz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32>
  %dv = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %do : tensor<2x2x12x16xf32>, tensor<2x2x12x8xf32>) outs(%dvz : tensor<2x2x16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x16x8xf32>
  // dP = dO V^T
  %dpz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x2x12x16xf32>) -> tensor<2x2x12x16xf32>
  %dp = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%do, %v : tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>) outs(%dpz : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x16xf32>
  // dS = P * (dP - rowsum(dP * P))
  %t = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dp, %p : tensor<2x2x12x16xf32>, tensor<2x2x12x16xf32>) outs(%s0 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x16xf32>
  %rz = linalg.fill ins(%zero : f32) outs(%r0 : tensor<2x2x12xf32>) -> tensor<2x2x12xf32>
  %rs = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%t : tensor<2x2x12x16xf32>) outs(%rz : tensor<2x2x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12xf32>
  %ds = linalg.generic {indexing_maps = [#id4, #id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%p, %dp, %rs : tensor<2x2x12x16xf32>, tensor<2x2x12x16xf32>, tensor<2x2x12xf32>) outs(%s0 : tensor<2x2x12x16xf32>) {
  ^bb0(%pp: f32, %g: f32, %r: f32, %o: f32):
    %d = arith.subf %g, %r : f32
    %m = arith.mulf %pp, %d : f32
    linalg.yield %m : f32
  } -> tensor<2x2x12x16xf32>
  // backward of S * scale
  %dss = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ds : tensor<2x2x12x16xf32>) outs(%s0 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x16xf32>
  // dQ = dS K
  %dqz = linalg.fill ins(%zero : f32) outs(%q0 : tensor<2x2x12x8xf32>) -> tensor<2x2x12x8xf32>
  %dq = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%dss, %k : tensor<2x2x12x16xf32>, tensor<2x2x16x8xf32>) outs(%dqz : tensor<2x2x12x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x8xf32>
  // dK = dS^T Q
  %dkz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32>
  %dk = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%dss, %q : tensor<2x2x12x16xf32>, tensor<2x2x12x8xf32>) outs(%dkz : tensor<2x2x16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x16x8xf32>
  return %dv, %dk, %dq : tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x12x8xf32>
}

// -----

// S4. Long causal case as 1e (B=1, H=2, M=200, N=333, D=16, keep j <= i + 133, S * 0.25, JAX's softmax VJP) split into @attn_fwd_causal(q, k, v) -> (o, P) and @attn_bwd_causal(q, k, v, P, dO); the backward does not re-apply the mask.
#q = affine_map<(b, h, m, n, d) -> (b, h, m, d)>
#k = affine_map<(b, h, m, n, d) -> (b, h, n, d)>
#s = affine_map<(b, h, m, n, d) -> (b, h, m, n)>
#p = affine_map<(b, h, m, d, n) -> (b, h, m, n)>
#v = affine_map<(b, h, m, d, n) -> (b, h, n, d)>
#o = affine_map<(b, h, m, d, n) -> (b, h, m, d)>
#pt = affine_map<(b, h, n, d, m) -> (b, h, m, n)>
#dot = affine_map<(b, h, n, d, m) -> (b, h, m, d)>
#kv = affine_map<(b, h, n, d, m) -> (b, h, n, d)>
#id4 = affine_map<(b, h, m, n) -> (b, h, m, n)>
#row4 = affine_map<(b, h, m, n) -> (b, h, m)>
// CHECK-LABEL: func.func @train_step_causal_200x333
// CHECK-LABEL: func.func private @attn_fwd_causal
// CHECK-SAME: -> (tensor<1x2x200x16xf32>, tensor<1x2x200x16xf32>, tensor<1x2x200xf32>)
// CHECK: flash.attention {{.*}}causal
// CHECK-LABEL: func.func private @attn_bwd_causal
// CHECK-NOT: 200x333
// CHECK: flash.attention_backward %arg0, %arg1, %arg2, %arg3, %arg5, %arg4 {causal, scale = 2.500000e-01 : f32}
func.func @train_step_causal_200x333(%q: tensor<1x2x200x16xf32>, %k: tensor<1x2x333x16xf32>, %v: tensor<1x2x333x16xf32>, %do: tensor<1x2x200x16xf32>) -> (tensor<1x2x200x16xf32>, tensor<1x2x200x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x333x16xf32>) {
  %o, %p = call @attn_fwd_causal(%q, %k, %v) : (tensor<1x2x200x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x333x16xf32>) -> (tensor<1x2x200x16xf32>, tensor<1x2x200x333xf32>)
  %dq, %dk, %dv = call @attn_bwd_causal(%q, %k, %v, %p, %do) : (tensor<1x2x200x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x200x333xf32>, tensor<1x2x200x16xf32>) -> (tensor<1x2x200x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x333x16xf32>)
  return %o, %dq, %dk, %dv : tensor<1x2x200x16xf32>, tensor<1x2x200x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x333x16xf32>
}

func.func private @attn_fwd_causal(%q: tensor<1x2x200x16xf32>, %k: tensor<1x2x333x16xf32>, %v: tensor<1x2x333x16xf32>) -> (tensor<1x2x200x16xf32>, tensor<1x2x200x333xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 2.500000e-01 : f32
  %c133 = arith.constant 133 : index
  %s0 = tensor.empty() : tensor<1x2x200x333xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<1x2x200x333xf32>) -> tensor<1x2x200x333xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<1x2x200x16xf32>, tensor<1x2x333x16xf32>) outs(%sz : tensor<1x2x200x333xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x200x333xf32>
  %x = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x2x200x333xf32>) outs(%s0 : tensor<1x2x200x333xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %last = arith.addi %i, %c133 : index
    %keep = arith.cmpi sle, %j, %last : index
    %sc = arith.mulf %a, %c : f32
    %r = arith.select %keep, %sc, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<1x2x200x333xf32>
  %r0 = tensor.empty() : tensor<1x2x200xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<1x2x200xf32>) -> tensor<1x2x200xf32>
  %mx = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<1x2x200x333xf32>) outs(%mi : tensor<1x2x200xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x2x200xf32>
  %e = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %mx : tensor<1x2x200x333xf32>, tensor<1x2x200xf32>) outs(%s0 : tensor<1x2x200x333xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<1x2x200x333xf32>
  %li = linalg.fill ins(%zero : f32) outs(%r0 : tensor<1x2x200xf32>) -> tensor<1x2x200xf32>
  %l = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%e : tensor<1x2x200x333xf32>) outs(%li : tensor<1x2x200xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x2x200xf32>
  %p = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%e, %l : tensor<1x2x200x333xf32>, tensor<1x2x200xf32>) outs(%s0 : tensor<1x2x200x333xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<1x2x200x333xf32>
  %q0 = tensor.empty() : tensor<1x2x200x16xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%q0 : tensor<1x2x200x16xf32>) -> tensor<1x2x200x16xf32>
  %out = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<1x2x200x333xf32>, tensor<1x2x333x16xf32>) outs(%oz : tensor<1x2x200x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x200x16xf32>
  return %out, %p : tensor<1x2x200x16xf32>, tensor<1x2x200x333xf32>
}

func.func private @attn_bwd_causal(%q: tensor<1x2x200x16xf32>, %k: tensor<1x2x333x16xf32>, %v: tensor<1x2x333x16xf32>, %p: tensor<1x2x200x333xf32>, %do: tensor<1x2x200x16xf32>) -> (tensor<1x2x200x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x333x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 2.500000e-01 : f32
  %s0 = tensor.empty() : tensor<1x2x200x333xf32>
  %r0 = tensor.empty() : tensor<1x2x200xf32>
  %q0 = tensor.empty() : tensor<1x2x200x16xf32>
  // dV = P^T dO (contraction over the query axis)
  %kv0 = tensor.empty() : tensor<1x2x333x16xf32>
  %dvz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<1x2x333x16xf32>) -> tensor<1x2x333x16xf32>
  %dv = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %do : tensor<1x2x200x333xf32>, tensor<1x2x200x16xf32>) outs(%dvz : tensor<1x2x333x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x333x16xf32>
  // dP = dO V^T
  %dpz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<1x2x200x333xf32>) -> tensor<1x2x200x333xf32>
  %dp = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%do, %v : tensor<1x2x200x16xf32>, tensor<1x2x333x16xf32>) outs(%dpz : tensor<1x2x200x333xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x200x333xf32>
  // softmax VJP in JAX's spelling: t = dP * P; dS = t - P * rowsum(t)
  %t = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dp, %p : tensor<1x2x200x333xf32>, tensor<1x2x200x333xf32>) outs(%s0 : tensor<1x2x200x333xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x2x200x333xf32>
  %rz = linalg.fill ins(%zero : f32) outs(%r0 : tensor<1x2x200xf32>) -> tensor<1x2x200xf32>
  %rs = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%t : tensor<1x2x200x333xf32>) outs(%rz : tensor<1x2x200xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x2x200xf32>
  %ds = linalg.generic {indexing_maps = [#id4, #id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%t, %p, %rs : tensor<1x2x200x333xf32>, tensor<1x2x200x333xf32>, tensor<1x2x200xf32>) outs(%s0 : tensor<1x2x200x333xf32>) {
  ^bb0(%tt: f32, %pp: f32, %r: f32, %o: f32):
    %m = arith.mulf %pp, %r : f32
    %d = arith.subf %tt, %m : f32
    linalg.yield %d : f32
  } -> tensor<1x2x200x333xf32>
  // backward of S * 0.25 (the mask's select backward left out: P is 0 there)
  %dss = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ds : tensor<1x2x200x333xf32>) outs(%s0 : tensor<1x2x200x333xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x2x200x333xf32>
  // dQ = dS K
  %dqz = linalg.fill ins(%zero : f32) outs(%q0 : tensor<1x2x200x16xf32>) -> tensor<1x2x200x16xf32>
  %dq = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%dss, %k : tensor<1x2x200x333xf32>, tensor<1x2x333x16xf32>) outs(%dqz : tensor<1x2x200x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x200x16xf32>
  // dK = dS^T Q
  %dkz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<1x2x333x16xf32>) -> tensor<1x2x333x16xf32>
  %dk = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%dss, %q : tensor<1x2x200x333xf32>, tensor<1x2x200x16xf32>) outs(%dkz : tensor<1x2x333x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x333x16xf32>
  return %dq, %dk, %dv : tensor<1x2x200x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x333x16xf32>
}

// -----

// A4. Split with an additive f32 bias [1, H, M, N] (read as (0, h, m, n)) passed to the forward only: @attn_fwd_bias(q, k, v, bias) -> (o, P) with S * 0.353553385 + bias; @attn_bwd_bias(q, k, v, P, dO) -> (dq, dk, dv), torch's dS, then * 0.353553385.
#q = affine_map<(b, h, m, n, d) -> (b, h, m, d)>
#k = affine_map<(b, h, m, n, d) -> (b, h, n, d)>
#s = affine_map<(b, h, m, n, d) -> (b, h, m, n)>
#p = affine_map<(b, h, m, d, n) -> (b, h, m, n)>
#v = affine_map<(b, h, m, d, n) -> (b, h, n, d)>
#o = affine_map<(b, h, m, d, n) -> (b, h, m, d)>
#pt = affine_map<(b, h, n, d, m) -> (b, h, m, n)>
#dot = affine_map<(b, h, n, d, m) -> (b, h, m, d)>
#kv = affine_map<(b, h, n, d, m) -> (b, h, n, d)>
#id4 = affine_map<(b, h, m, n) -> (b, h, m, n)>
#row4 = affine_map<(b, h, m, n) -> (b, h, m)>
#bias = affine_map<(b, h, m, n) -> (0, h, m, n)>
// CHECK-LABEL: func.func @train_step_bias
// The bias crosses the boundary with O and LSE (it is an input, not a saved activation).
// CHECK: %[[F:.*]]:4 = call @attn_fwd_bias
// CHECK: call @attn_bwd_bias({{.*}}%[[F]]#1, %[[F]]#2, %[[F]]#3
// CHECK-LABEL: func.func private @attn_bwd_bias
// CHECK: flash.attention_backward {{.*}} bias(
func.func @train_step_bias(%q: tensor<2x2x12x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>, %do: tensor<2x2x12x8xf32>, %bias: tensor<1x2x12x16xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) {
  %o, %p = call @attn_fwd_bias(%q, %k, %v, %bias) : (tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<1x2x12x16xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x12x16xf32>)
  %dq, %dk, %dv = call @attn_bwd_bias(%q, %k, %v, %p, %do) : (tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x12x16xf32>, tensor<2x2x12x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>)
  return %o, %dq, %dk, %dv : tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>
}

func.func private @attn_fwd_bias(%q: tensor<2x2x12x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>, %bias: tensor<1x2x12x16xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x12x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 0.353553385 : f32
  %s0 = tensor.empty() : tensor<2x2x12x16xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x2x12x16xf32>) -> tensor<2x2x12x16xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>) outs(%sz : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x16xf32>
  %x = linalg.generic {indexing_maps = [#id4, #bias, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %bias : tensor<2x2x12x16xf32>, tensor<1x2x12x16xf32>) outs(%s0 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %sc = arith.mulf %a, %c : f32
    %r = arith.addf %sc, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x16xf32>
  %r0 = tensor.empty() : tensor<2x2x12xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<2x2x12xf32>) -> tensor<2x2x12xf32>
  %mx = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<2x2x12x16xf32>) outs(%mi : tensor<2x2x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12xf32>
  %e = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %mx : tensor<2x2x12x16xf32>, tensor<2x2x12xf32>) outs(%s0 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<2x2x12x16xf32>
  %li = linalg.fill ins(%zero : f32) outs(%r0 : tensor<2x2x12xf32>) -> tensor<2x2x12xf32>
  %l = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%e : tensor<2x2x12x16xf32>) outs(%li : tensor<2x2x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12xf32>
  %p = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%e, %l : tensor<2x2x12x16xf32>, tensor<2x2x12xf32>) outs(%s0 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<2x2x12x16xf32>
  %q0 = tensor.empty() : tensor<2x2x12x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%q0 : tensor<2x2x12x8xf32>) -> tensor<2x2x12x8xf32>
  %out = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<2x2x12x16xf32>, tensor<2x2x16x8xf32>) outs(%oz : tensor<2x2x12x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x8xf32>
  return %out, %p : tensor<2x2x12x8xf32>, tensor<2x2x12x16xf32>
}

func.func private @attn_bwd_bias(%q: tensor<2x2x12x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>, %p: tensor<2x2x12x16xf32>, %do: tensor<2x2x12x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 0.353553385 : f32
  %s0 = tensor.empty() : tensor<2x2x12x16xf32>
  %r0 = tensor.empty() : tensor<2x2x12xf32>
  %q0 = tensor.empty() : tensor<2x2x12x8xf32>
  // dV = P^T dO (contraction over the query axis)
  %kv0 = tensor.empty() : tensor<2x2x16x8xf32>
  %dvz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32>
  %dv = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %do : tensor<2x2x12x16xf32>, tensor<2x2x12x8xf32>) outs(%dvz : tensor<2x2x16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x16x8xf32>
  // dP = dO V^T
  %dpz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x2x12x16xf32>) -> tensor<2x2x12x16xf32>
  %dp = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%do, %v : tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>) outs(%dpz : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x16xf32>
  // dS = P * (dP - rowsum(dP * P))
  %t = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dp, %p : tensor<2x2x12x16xf32>, tensor<2x2x12x16xf32>) outs(%s0 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x16xf32>
  %rz = linalg.fill ins(%zero : f32) outs(%r0 : tensor<2x2x12xf32>) -> tensor<2x2x12xf32>
  %rs = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%t : tensor<2x2x12x16xf32>) outs(%rz : tensor<2x2x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12xf32>
  %ds = linalg.generic {indexing_maps = [#id4, #id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%p, %dp, %rs : tensor<2x2x12x16xf32>, tensor<2x2x12x16xf32>, tensor<2x2x12xf32>) outs(%s0 : tensor<2x2x12x16xf32>) {
  ^bb0(%pp: f32, %g: f32, %r: f32, %o: f32):
    %d = arith.subf %g, %r : f32
    %m = arith.mulf %pp, %d : f32
    linalg.yield %m : f32
  } -> tensor<2x2x12x16xf32>
  // backward of S * scale
  %dss = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ds : tensor<2x2x12x16xf32>) outs(%s0 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x16xf32>
  // dQ = dS K
  %dqz = linalg.fill ins(%zero : f32) outs(%q0 : tensor<2x2x12x8xf32>) -> tensor<2x2x12x8xf32>
  %dq = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%dss, %k : tensor<2x2x12x16xf32>, tensor<2x2x16x8xf32>) outs(%dqz : tensor<2x2x12x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x8xf32>
  // dK = dS^T Q
  %dkz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32>
  %dk = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%dss, %q : tensor<2x2x12x16xf32>, tensor<2x2x12x8xf32>) outs(%dkz : tensor<2x2x16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x16x8xf32>
  return %dq, %dk, %dv : tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>
}

// -----

// T1. Split GQA in JAX's grouped space (as gqa.mlir G1: B=2, Hkv=2, G=2, M=10, N=14, D=8, S * 0.353553385 as linalg.map with a splat, softmax / VJP via linalg.reduce/broadcast/map): @attn_fwd_gqa(q, k, v) -> (o, P [B, Hkv, G, M, N]); @attn_bwd_gqa(q, k, v, P, dO) -> (dq, dk, dv) re-expands Q and dO; dK / dV reduce over g and m.
#q = affine_map<(b, h, g, m, n, d) -> (b, h, g, m, d)>
#k = affine_map<(b, h, g, m, n, d) -> (b, h, n, d)>
#s = affine_map<(b, h, g, m, n, d) -> (b, h, g, m, n)>
#p = affine_map<(b, h, g, m, d, n) -> (b, h, g, m, n)>
#v = affine_map<(b, h, g, m, d, n) -> (b, h, n, d)>
#o = affine_map<(b, h, g, m, d, n) -> (b, h, g, m, d)>
#pt = affine_map<(b, h, n, d, g, m) -> (b, h, g, m, n)>
#dot = affine_map<(b, h, n, d, g, m) -> (b, h, g, m, d)>
#kv = affine_map<(b, h, n, d, g, m) -> (b, h, n, d)>
#id5 = affine_map<(b, h, g, m, n) -> (b, h, g, m, n)>
#row5 = affine_map<(b, h, g, m, n) -> (b, h, g, m)>
// CHECK-LABEL: func.func @train_step_gqa
// CHECK-LABEL: func.func private @attn_fwd_gqa
// CHECK-NOT: x10x14x
// CHECK: flash.attention %arg0, %arg1, %arg2 {{.*}} : tensor<2x4x10x8xf32>, tensor<2x2x14x8xf32>
// CHECK-LABEL: func.func private @attn_bwd_gqa
// CHECK-NOT: x10x14x
// CHECK: flash.attention_backward {{.*}} : tensor<2x4x10x8xf32>, tensor<2x2x14x8xf32>
func.func @train_step_gqa(%q: tensor<2x4x10x8xf32>, %k: tensor<2x2x14x8xf32>, %v: tensor<2x2x14x8xf32>, %do: tensor<2x4x10x8xf32>) -> (tensor<2x4x10x8xf32>, tensor<2x4x10x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x14x8xf32>) {
  %o, %p = call @attn_fwd_gqa(%q, %k, %v) : (tensor<2x4x10x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x14x8xf32>) -> (tensor<2x4x10x8xf32>, tensor<2x2x2x10x14xf32>)
  %dq, %dk, %dv = call @attn_bwd_gqa(%q, %k, %v, %p, %do) : (tensor<2x4x10x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x2x10x14xf32>, tensor<2x4x10x8xf32>) -> (tensor<2x4x10x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x14x8xf32>)
  return %o, %dq, %dk, %dv : tensor<2x4x10x8xf32>, tensor<2x4x10x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x14x8xf32>
}

func.func private @attn_fwd_gqa(%q: tensor<2x4x10x8xf32>, %k: tensor<2x2x14x8xf32>, %v: tensor<2x2x14x8xf32>) -> (tensor<2x4x10x8xf32>, tensor<2x2x2x10x14xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %cs = arith.constant dense<0.353553385> : tensor<2x2x2x10x14xf32>
  // Q [B, Hq, M, D] -> [B, Hkv, G, M, D] (Hq = 4 = 2 * 2); K / V stay [B, Hkv, N, D]
  %q5 = tensor.expand_shape %q [[0], [1, 2], [3], [4]] output_shape [2, 2, 2, 10, 8] : tensor<2x4x10x8xf32> into tensor<2x2x2x10x8xf32>
  %s0 = tensor.empty() : tensor<2x2x2x10x14xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x2x2x10x14xf32>) -> tensor<2x2x2x10x14xf32>
  // S = einsum('bhgmd,bhnd->bhgmn', Q5, K)
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q5, %k : tensor<2x2x2x10x8xf32>, tensor<2x2x14x8xf32>) outs(%sz : tensor<2x2x2x10x14xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x2x10x14xf32>
  // X = S * scale
  %x = linalg.map { arith.mulf } ins(%s, %cs : tensor<2x2x2x10x14xf32>, tensor<2x2x2x10x14xf32>) outs(%s0 : tensor<2x2x2x10x14xf32>)
  // P = softmax over n (max-subtracted)
  %r0 = tensor.empty() : tensor<2x2x2x10xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<2x2x2x10xf32>) -> tensor<2x2x2x10xf32>
  %li = linalg.fill ins(%zero : f32) outs(%r0 : tensor<2x2x2x10xf32>) -> tensor<2x2x2x10xf32>
  %mx = linalg.reduce { arith.maximumf } ins(%x : tensor<2x2x2x10x14xf32>) outs(%mi : tensor<2x2x2x10xf32>) dimensions = [4]
  %mxb = linalg.broadcast ins(%mx : tensor<2x2x2x10xf32>) outs(%s0 : tensor<2x2x2x10x14xf32>) dimensions = [4]
  %d = linalg.map { arith.subf } ins(%x, %mxb : tensor<2x2x2x10x14xf32>, tensor<2x2x2x10x14xf32>) outs(%s0 : tensor<2x2x2x10x14xf32>)
  %e = linalg.map { math.exp } ins(%d : tensor<2x2x2x10x14xf32>) outs(%s0 : tensor<2x2x2x10x14xf32>)
  %l = linalg.reduce { arith.addf } ins(%e : tensor<2x2x2x10x14xf32>) outs(%li : tensor<2x2x2x10xf32>) dimensions = [4]
  %lb = linalg.broadcast ins(%l : tensor<2x2x2x10xf32>) outs(%s0 : tensor<2x2x2x10x14xf32>) dimensions = [4]
  %p = linalg.map { arith.divf } ins(%e, %lb : tensor<2x2x2x10x14xf32>, tensor<2x2x2x10x14xf32>) outs(%s0 : tensor<2x2x2x10x14xf32>)
  %o0 = tensor.empty() : tensor<2x2x2x10x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x2x2x10x8xf32>) -> tensor<2x2x2x10x8xf32>
  // O5 = einsum('bhgmn,bhnd->bhgmd', P, V)
  %o5 = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<2x2x2x10x14xf32>, tensor<2x2x14x8xf32>) outs(%oz : tensor<2x2x2x10x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x2x10x8xf32>
  %out = tensor.collapse_shape %o5 [[0], [1, 2], [3], [4]] : tensor<2x2x2x10x8xf32> into tensor<2x4x10x8xf32>
  return %out, %p : tensor<2x4x10x8xf32>, tensor<2x2x2x10x14xf32>
}

func.func private @attn_bwd_gqa(%q: tensor<2x4x10x8xf32>, %k: tensor<2x2x14x8xf32>, %v: tensor<2x2x14x8xf32>, %p: tensor<2x2x2x10x14xf32>, %do: tensor<2x4x10x8xf32>) -> (tensor<2x4x10x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x14x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %cs = arith.constant dense<0.353553385> : tensor<2x2x2x10x14xf32>
  %q5 = tensor.expand_shape %q [[0], [1, 2], [3], [4]] output_shape [2, 2, 2, 10, 8] : tensor<2x4x10x8xf32> into tensor<2x2x2x10x8xf32>
  %s0 = tensor.empty() : tensor<2x2x2x10x14xf32>
  %r0 = tensor.empty() : tensor<2x2x2x10xf32>
  %o0 = tensor.empty() : tensor<2x2x2x10x8xf32>
  %do5 = tensor.expand_shape %do [[0], [1, 2], [3], [4]] output_shape [2, 2, 2, 10, 8] : tensor<2x4x10x8xf32> into tensor<2x2x2x10x8xf32>
  %kv0 = tensor.empty() : tensor<2x2x14x8xf32>
  %dvz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<2x2x14x8xf32>) -> tensor<2x2x14x8xf32>
  // dV = einsum('bhgmn,bhgmd->bhnd', P, dO5) (reduction over g and m)
  %dv = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%p, %do5 : tensor<2x2x2x10x14xf32>, tensor<2x2x2x10x8xf32>) outs(%dvz : tensor<2x2x14x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x14x8xf32>
  %dpz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x2x2x10x14xf32>) -> tensor<2x2x2x10x14xf32>
  // dP = einsum('bhgmd,bhnd->bhgmn', dO5, V)
  %dp = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%do5, %v : tensor<2x2x2x10x8xf32>, tensor<2x2x14x8xf32>) outs(%dpz : tensor<2x2x2x10x14xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x2x10x14xf32>
  // softmax VJP: t = dP * P; dX = t - P * sum_n(t)
  %tz = linalg.fill ins(%zero : f32) outs(%r0 : tensor<2x2x2x10xf32>) -> tensor<2x2x2x10xf32>
  %t = linalg.map { arith.mulf } ins(%dp, %p : tensor<2x2x2x10x14xf32>, tensor<2x2x2x10x14xf32>) outs(%s0 : tensor<2x2x2x10x14xf32>)
  %ts = linalg.reduce { arith.addf } ins(%t : tensor<2x2x2x10x14xf32>) outs(%tz : tensor<2x2x2x10xf32>) dimensions = [4]
  %tsb = linalg.broadcast ins(%ts : tensor<2x2x2x10xf32>) outs(%s0 : tensor<2x2x2x10x14xf32>) dimensions = [4]
  %pts = linalg.map { arith.mulf } ins(%p, %tsb : tensor<2x2x2x10x14xf32>, tensor<2x2x2x10x14xf32>) outs(%s0 : tensor<2x2x2x10x14xf32>)
  %dx = linalg.map { arith.subf } ins(%t, %pts : tensor<2x2x2x10x14xf32>, tensor<2x2x2x10x14xf32>) outs(%s0 : tensor<2x2x2x10x14xf32>)
  // backward of the scale: dS = dX * scale
  %ds = linalg.map { arith.mulf } ins(%dx, %cs : tensor<2x2x2x10x14xf32>, tensor<2x2x2x10x14xf32>) outs(%s0 : tensor<2x2x2x10x14xf32>)
  %dqz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x2x2x10x8xf32>) -> tensor<2x2x2x10x8xf32>
  // dQ5 = einsum('bhgmn,bhnd->bhgmd', dS, K)
  %dq5 = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%ds, %k : tensor<2x2x2x10x14xf32>, tensor<2x2x14x8xf32>) outs(%dqz : tensor<2x2x2x10x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x2x10x8xf32>
  %dq = tensor.collapse_shape %dq5 [[0], [1, 2], [3], [4]] : tensor<2x2x2x10x8xf32> into tensor<2x4x10x8xf32>
  %dkz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<2x2x14x8xf32>) -> tensor<2x2x14x8xf32>
  // dK = einsum('bhgmn,bhgmd->bhnd', dS, Q5) (reduction over g and m)
  %dk = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%ds, %q5 : tensor<2x2x2x10x14xf32>, tensor<2x2x2x10x8xf32>) outs(%dkz : tensor<2x2x14x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x14x8xf32>
  return %dq, %dk, %dv : tensor<2x4x10x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x14x8xf32>
}

// -----

// T2. Split torch-mlir style (as split.mlir S1 / joint.mlir 1a) with dynamic batch and sequence lengths: entry and callees take tensor<?x2x?x8xf32>, collapsed to [B*H, S, D] = tensor<?x?x8xf32>; P saved as tensor<?x?x?xf32>; every tensor.empty sized by tensor.dim of the collapsed tensors; linalg.transpose + linalg.batch_matmul, S / 2.82842712, dS = P * (dP - rowsum(dP * P)) / 2.82842712; results expanded with output_shape [%bq, 2, %mq, 8].
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
// CHECK-LABEL: func.func @train_step_torch_dynamic
// CHECK-LABEL: func.func private @attn_fwd_dyn
// CHECK-SAME: -> (tensor<?x2x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?xf32>)
// CHECK: flash.attention
// CHECK-LABEL: func.func private @attn_bwd_dyn
// CHECK: flash.attention_backward
func.func @train_step_torch_dynamic(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>, %v: tensor<?x2x?x8xf32>, %do: tensor<?x2x?x8xf32>) -> (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) {
  %o, %p = call @attn_fwd_dyn(%q, %k, %v) : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> (tensor<?x2x?x8xf32>, tensor<?x?x?xf32>)
  %dq, %dk, %dv = call @attn_bwd_dyn(%q, %k, %v, %p, %do) : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x?x?xf32>, tensor<?x2x?x8xf32>) -> (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>)
  return %o, %dq, %dk, %dv : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>
}

func.func private @attn_fwd_dyn(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>, %v: tensor<?x2x?x8xf32>) -> (tensor<?x2x?x8xf32>, tensor<?x?x?xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 2.82842712 : f32
  %q3 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<?x2x?x8xf32> into tensor<?x?x8xf32>
  %k3 = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<?x2x?x8xf32> into tensor<?x?x8xf32>
  %v3 = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<?x2x?x8xf32> into tensor<?x?x8xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %bq = tensor.dim %q, %c0 : tensor<?x2x?x8xf32>
  %bh = tensor.dim %q3, %c0 : tensor<?x?x8xf32>
  %mq = tensor.dim %q3, %c1 : tensor<?x?x8xf32>
  %nk = tensor.dim %k3, %c1 : tensor<?x?x8xf32>
  %kt0 = tensor.empty(%bh, %nk) : tensor<?x8x?xf32>
  %kt = linalg.transpose ins(%k3 : tensor<?x?x8xf32>) outs(%kt0 : tensor<?x8x?xf32>) permutation = [0, 2, 1]
  %s0 = tensor.empty(%bh, %mq, %nk) : tensor<?x?x?xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %s = linalg.batch_matmul ins(%q3, %kt : tensor<?x?x8xf32>, tensor<?x8x?xf32>) outs(%sz : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %x = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<?x?x?xf32>) outs(%s0 : tensor<?x?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.divf %a, %c : f32
    linalg.yield %d : f32
  } -> tensor<?x?x?xf32>
  %m0 = tensor.empty(%bh, %mq) : tensor<?x?x1xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%m0 : tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
  %mx = linalg.generic {indexing_maps = [#map3, #row3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<?x?x?xf32>) outs(%mi : tensor<?x?x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<?x?x1xf32>
  %e = linalg.generic {indexing_maps = [#map3, #row3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %mx : tensor<?x?x?xf32>, tensor<?x?x1xf32>) outs(%s0 : tensor<?x?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<?x?x?xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%m0 : tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
  %l = linalg.generic {indexing_maps = [#map3, #row3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%e : tensor<?x?x?xf32>) outs(%l0 : tensor<?x?x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<?x?x1xf32>
  %p = linalg.generic {indexing_maps = [#map3, #row3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%e, %l : tensor<?x?x?xf32>, tensor<?x?x1xf32>) outs(%s0 : tensor<?x?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<?x?x?xf32>
  %o0 = tensor.empty(%bh, %mq) : tensor<?x?x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %o3 = linalg.batch_matmul ins(%p, %v3 : tensor<?x?x?xf32>, tensor<?x?x8xf32>) outs(%oz : tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %o = tensor.expand_shape %o3 [[0, 1], [2], [3]] output_shape [%bq, 2, %mq, 8] : tensor<?x?x8xf32> into tensor<?x2x?x8xf32>
  return %o, %p : tensor<?x2x?x8xf32>, tensor<?x?x?xf32>
}

func.func private @attn_bwd_dyn(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>, %v: tensor<?x2x?x8xf32>, %p: tensor<?x?x?xf32>, %do: tensor<?x2x?x8xf32>) -> (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 2.82842712 : f32
  %q3 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<?x2x?x8xf32> into tensor<?x?x8xf32>
  %k3 = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<?x2x?x8xf32> into tensor<?x?x8xf32>
  %v3 = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<?x2x?x8xf32> into tensor<?x?x8xf32>
  %do3 = tensor.collapse_shape %do [[0, 1], [2], [3]] : tensor<?x2x?x8xf32> into tensor<?x?x8xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %bq = tensor.dim %q, %c0 : tensor<?x2x?x8xf32>
  %bh = tensor.dim %q3, %c0 : tensor<?x?x8xf32>
  %mq = tensor.dim %q3, %c1 : tensor<?x?x8xf32>
  %nk = tensor.dim %k3, %c1 : tensor<?x?x8xf32>
  %bk = tensor.dim %k, %c0 : tensor<?x2x?x8xf32>
  %s0 = tensor.empty(%bh, %mq, %nk) : tensor<?x?x?xf32>
  %m0 = tensor.empty(%bh, %mq) : tensor<?x?x1xf32>
  %kt0 = tensor.empty(%bh, %nk) : tensor<?x8x?xf32>
  // dV = bmm(P^T, dO)
  %pt0 = tensor.empty(%bh, %nk, %mq) : tensor<?x?x?xf32>
  %pt = linalg.transpose ins(%p : tensor<?x?x?xf32>) outs(%pt0 : tensor<?x?x?xf32>) permutation = [0, 2, 1]
  %dv0 = tensor.empty(%bh, %nk) : tensor<?x?x8xf32>
  %dvz = linalg.fill ins(%zero : f32) outs(%dv0 : tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %dv3 = linalg.batch_matmul ins(%pt, %do3 : tensor<?x?x?xf32>, tensor<?x?x8xf32>) outs(%dvz : tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  // dP = bmm(dO, V^T)
  %vt0 = tensor.empty(%bh, %nk) : tensor<?x8x?xf32>
  %vt = linalg.transpose ins(%v3 : tensor<?x?x8xf32>) outs(%vt0 : tensor<?x8x?xf32>) permutation = [0, 2, 1]
  %dpz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  %dp = linalg.batch_matmul ins(%do3, %vt : tensor<?x?x8xf32>, tensor<?x8x?xf32>) outs(%dpz : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  // _softmax_backward_data(dP, P): dS = P * (dP - sum(dP * P, -1, keepdim))
  %t = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%dp, %p : tensor<?x?x?xf32>, tensor<?x?x?xf32>) outs(%s0 : tensor<?x?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<?x?x?xf32>
  %rz = linalg.fill ins(%zero : f32) outs(%m0 : tensor<?x?x1xf32>) -> tensor<?x?x1xf32>
  %rs = linalg.generic {indexing_maps = [#map3, #row3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%t : tensor<?x?x?xf32>) outs(%rz : tensor<?x?x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<?x?x1xf32>
  %ds = linalg.generic {indexing_maps = [#map3, #map3, #row3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%p, %dp, %rs : tensor<?x?x?xf32>, tensor<?x?x?xf32>, tensor<?x?x1xf32>) outs(%s0 : tensor<?x?x?xf32>) {
  ^bb0(%pp: f32, %g: f32, %r: f32, %o: f32):
    %d = arith.subf %g, %r : f32
    %m = arith.mulf %pp, %d : f32
    linalg.yield %m : f32
  } -> tensor<?x?x?xf32>
  // backward of S / sqrt(D)
  %dss = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ds : tensor<?x?x?xf32>) outs(%s0 : tensor<?x?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.divf %a, %c : f32
    linalg.yield %d : f32
  } -> tensor<?x?x?xf32>
  // dQ = bmm(dS, K)
  %dq0 = tensor.empty(%bh, %mq) : tensor<?x?x8xf32>
  %dqz = linalg.fill ins(%zero : f32) outs(%dq0 : tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  %dq3 = linalg.batch_matmul ins(%dss, %k3 : tensor<?x?x?xf32>, tensor<?x?x8xf32>) outs(%dqz : tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  // dK^T = bmm(Q^T, dS), dK = transpose(dK^T)
  %qt0 = tensor.empty(%bh, %mq) : tensor<?x8x?xf32>
  %qt = linalg.transpose ins(%q3 : tensor<?x?x8xf32>) outs(%qt0 : tensor<?x8x?xf32>) permutation = [0, 2, 1]
  %dktz = linalg.fill ins(%zero : f32) outs(%kt0 : tensor<?x8x?xf32>) -> tensor<?x8x?xf32>
  %dkt = linalg.batch_matmul ins(%qt, %dss : tensor<?x8x?xf32>, tensor<?x?x?xf32>) outs(%dktz : tensor<?x8x?xf32>) -> tensor<?x8x?xf32>
  %dk30 = tensor.empty(%bh, %nk) : tensor<?x?x8xf32>
  %dk3 = linalg.transpose ins(%dkt : tensor<?x8x?xf32>) outs(%dk30 : tensor<?x?x8xf32>) permutation = [0, 2, 1]
  %dq = tensor.expand_shape %dq3 [[0, 1], [2], [3]] output_shape [%bq, 2, %mq, 8] : tensor<?x?x8xf32> into tensor<?x2x?x8xf32>
  %dk = tensor.expand_shape %dk3 [[0, 1], [2], [3]] output_shape [%bk, 2, %nk, 8] : tensor<?x?x8xf32> into tensor<?x2x?x8xf32>
  %dv = tensor.expand_shape %dv3 [[0, 1], [2], [3]] output_shape [%bk, 2, %nk, 8] : tensor<?x?x8xf32> into tensor<?x2x?x8xf32>
  return %dq, %dk, %dv : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>
}

// -----

// T3. Split mixed precision, long and causal: bf16 Q/K/V/dO (B=1, H=2, M=200, N=333, D=16), f32 additive bias [1, 1, M, N] (read as (0, 0, m, n)) passed to the forward only, X = where(n <= m + 133, S * 0.25 + bias, -inf); contractions accumulate in f32 (extf in bodies), softmax in f32, P saved in bf16 (truncf) as in joint.mlir 1d; @attn_bwd_bf16(q, k, v, P, dO): dS = P * (dP - rowsum(dP * P)) in f32, where(keep, dS, 0) * 0.25 rounded to bf16 before dQ / dK; gradients rounded to bf16.
#q = affine_map<(b, h, m, n, d) -> (b, h, m, d)>
#k = affine_map<(b, h, m, n, d) -> (b, h, n, d)>
#s = affine_map<(b, h, m, n, d) -> (b, h, m, n)>
#p = affine_map<(b, h, m, d, n) -> (b, h, m, n)>
#v = affine_map<(b, h, m, d, n) -> (b, h, n, d)>
#o = affine_map<(b, h, m, d, n) -> (b, h, m, d)>
#pt = affine_map<(b, h, n, d, m) -> (b, h, m, n)>
#dot = affine_map<(b, h, n, d, m) -> (b, h, m, d)>
#kv = affine_map<(b, h, n, d, m) -> (b, h, n, d)>
#id4 = affine_map<(b, h, m, n) -> (b, h, m, n)>
#row4 = affine_map<(b, h, m, n) -> (b, h, m)>
#bias = affine_map<(b, h, m, n) -> (0, 0, m, n)>
// CHECK-LABEL: func.func @train_step_bf16_bias_causal
// CHECK-LABEL: func.func private @attn_fwd_bf16
// CHECK: flash.attention {{.*}} bias({{.*}}) {causal
// CHECK-LABEL: func.func private @attn_bwd_bf16
// CHECK-NOT: 200x333xbf16
// CHECK: flash.attention_backward {{.*}} bias({{.*}}) {causal
func.func @train_step_bf16_bias_causal(%q: tensor<1x2x200x16xbf16>, %k: tensor<1x2x333x16xbf16>, %v: tensor<1x2x333x16xbf16>, %do: tensor<1x2x200x16xbf16>, %bias: tensor<1x1x200x333xf32>) -> (tensor<1x2x200x16xbf16>, tensor<1x2x200x16xbf16>, tensor<1x2x333x16xbf16>, tensor<1x2x333x16xbf16>) {
  %o, %p = call @attn_fwd_bf16(%q, %k, %v, %bias) : (tensor<1x2x200x16xbf16>, tensor<1x2x333x16xbf16>, tensor<1x2x333x16xbf16>, tensor<1x1x200x333xf32>) -> (tensor<1x2x200x16xbf16>, tensor<1x2x200x333xbf16>)
  %dq, %dk, %dv = call @attn_bwd_bf16(%q, %k, %v, %p, %do) : (tensor<1x2x200x16xbf16>, tensor<1x2x333x16xbf16>, tensor<1x2x333x16xbf16>, tensor<1x2x200x333xbf16>, tensor<1x2x200x16xbf16>) -> (tensor<1x2x200x16xbf16>, tensor<1x2x333x16xbf16>, tensor<1x2x333x16xbf16>)
  return %o, %dq, %dk, %dv : tensor<1x2x200x16xbf16>, tensor<1x2x200x16xbf16>, tensor<1x2x333x16xbf16>, tensor<1x2x333x16xbf16>
}

func.func private @attn_fwd_bf16(%q: tensor<1x2x200x16xbf16>, %k: tensor<1x2x333x16xbf16>, %v: tensor<1x2x333x16xbf16>, %bias: tensor<1x1x200x333xf32>) -> (tensor<1x2x200x16xbf16>, tensor<1x2x200x333xbf16>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 2.500000e-01 : f32
  %c133 = arith.constant 133 : index
  %s0 = tensor.empty() : tensor<1x2x200x333xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<1x2x200x333xf32>) -> tensor<1x2x200x333xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<1x2x200x16xbf16>, tensor<1x2x333x16xbf16>) outs(%sz : tensor<1x2x200x333xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %m = arith.mulf %a32, %b32 : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x200x333xf32>
  // X = where(n <= m + 133, S * 0.25 + bias, -inf)
  %x = linalg.generic {indexing_maps = [#id4, #bias, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %bias : tensor<1x2x200x333xf32>, tensor<1x1x200x333xf32>) outs(%s0 : tensor<1x2x200x333xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %last = arith.addi %i, %c133 : index
    %keep = arith.cmpi sle, %j, %last : index
    %sc = arith.mulf %a, %c : f32
    %sb = arith.addf %sc, %b : f32
    %r = arith.select %keep, %sb, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<1x2x200x333xf32>
  %r0 = tensor.empty() : tensor<1x2x200xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<1x2x200xf32>) -> tensor<1x2x200xf32>
  %mx = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<1x2x200x333xf32>) outs(%mi : tensor<1x2x200xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x2x200xf32>
  %e = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %mx : tensor<1x2x200x333xf32>, tensor<1x2x200xf32>) outs(%s0 : tensor<1x2x200x333xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<1x2x200x333xf32>
  %li = linalg.fill ins(%zero : f32) outs(%r0 : tensor<1x2x200xf32>) -> tensor<1x2x200xf32>
  %l = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%e : tensor<1x2x200x333xf32>) outs(%li : tensor<1x2x200xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x2x200xf32>
  %p0 = tensor.empty() : tensor<1x2x200x333xbf16>
  %p = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%e, %l : tensor<1x2x200x333xf32>, tensor<1x2x200xf32>) outs(%p0 : tensor<1x2x200x333xbf16>) {
  ^bb0(%a: f32, %b: f32, %o: bf16):
    %d = arith.divf %a, %b : f32
    %t = arith.truncf %d : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<1x2x200x333xbf16>
  %q0 = tensor.empty() : tensor<1x2x200x16xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%q0 : tensor<1x2x200x16xf32>) -> tensor<1x2x200x16xf32>
  %of = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<1x2x200x333xbf16>, tensor<1x2x333x16xbf16>) outs(%oz : tensor<1x2x200x16xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %m = arith.mulf %a32, %b32 : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x200x16xf32>
  %qb0 = tensor.empty() : tensor<1x2x200x16xbf16>
  %out = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%of : tensor<1x2x200x16xf32>) outs(%qb0 : tensor<1x2x200x16xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<1x2x200x16xbf16>
  return %out, %p : tensor<1x2x200x16xbf16>, tensor<1x2x200x333xbf16>
}

func.func private @attn_bwd_bf16(%q: tensor<1x2x200x16xbf16>, %k: tensor<1x2x333x16xbf16>, %v: tensor<1x2x333x16xbf16>, %p: tensor<1x2x200x333xbf16>, %do: tensor<1x2x200x16xbf16>) -> (tensor<1x2x200x16xbf16>, tensor<1x2x333x16xbf16>, tensor<1x2x333x16xbf16>) {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 2.500000e-01 : f32
  %c133 = arith.constant 133 : index
  %s0 = tensor.empty() : tensor<1x2x200x333xf32>
  %r0 = tensor.empty() : tensor<1x2x200xf32>
  %p0 = tensor.empty() : tensor<1x2x200x333xbf16>
  %q0 = tensor.empty() : tensor<1x2x200x16xf32>
  %qb0 = tensor.empty() : tensor<1x2x200x16xbf16>
  // dV = P^T dO, accumulated in f32, rounded to bf16
  %kv0 = tensor.empty() : tensor<1x2x333x16xf32>
  %dvz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<1x2x333x16xf32>) -> tensor<1x2x333x16xf32>
  %dvf = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %do : tensor<1x2x200x333xbf16>, tensor<1x2x200x16xbf16>) outs(%dvz : tensor<1x2x333x16xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %m = arith.mulf %a32, %b32 : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x333x16xf32>
  %kvb0 = tensor.empty() : tensor<1x2x333x16xbf16>
  %dv = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dvf : tensor<1x2x333x16xf32>) outs(%kvb0 : tensor<1x2x333x16xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<1x2x333x16xbf16>
  // dP = dO V^T in f32
  %dpz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<1x2x200x333xf32>) -> tensor<1x2x200x333xf32>
  %dp = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%do, %v : tensor<1x2x200x16xbf16>, tensor<1x2x333x16xbf16>) outs(%dpz : tensor<1x2x200x333xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %m = arith.mulf %a32, %b32 : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x200x333xf32>
  // dS = P * (dP - rowsum(dP * P)) in f32
  %gp = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dp, %p : tensor<1x2x200x333xf32>, tensor<1x2x200x333xbf16>) outs(%s0 : tensor<1x2x200x333xf32>) {
  ^bb0(%a: f32, %b: bf16, %o: f32):
    %b32 = arith.extf %b : bf16 to f32
    %r = arith.mulf %a, %b32 : f32
    linalg.yield %r : f32
  } -> tensor<1x2x200x333xf32>
  %rz = linalg.fill ins(%zero : f32) outs(%r0 : tensor<1x2x200xf32>) -> tensor<1x2x200xf32>
  %rs = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%gp : tensor<1x2x200x333xf32>) outs(%rz : tensor<1x2x200xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x2x200xf32>
  %ds = linalg.generic {indexing_maps = [#id4, #id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%p, %dp, %rs : tensor<1x2x200x333xbf16>, tensor<1x2x200x333xf32>, tensor<1x2x200xf32>) outs(%s0 : tensor<1x2x200x333xf32>) {
  ^bb0(%pp: bf16, %g: f32, %r: f32, %o: f32):
    %p32 = arith.extf %pp : bf16 to f32
    %d = arith.subf %g, %r : f32
    %m = arith.mulf %p32, %d : f32
    linalg.yield %m : f32
  } -> tensor<1x2x200x333xf32>
  // backward of where(keep, S * 0.25 + bias, -inf): where(keep, dS, 0) * 0.25, rounded to bf16 for the two matmuls
  %dsb = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ds : tensor<1x2x200x333xf32>) outs(%p0 : tensor<1x2x200x333xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %last = arith.addi %i, %c133 : index
    %keep = arith.cmpi sle, %j, %last : index
    %g = arith.select %keep, %a, %zero : f32
    %m = arith.mulf %g, %c : f32
    %t = arith.truncf %m : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<1x2x200x333xbf16>
  // dQ = dS K
  %dqz = linalg.fill ins(%zero : f32) outs(%q0 : tensor<1x2x200x16xf32>) -> tensor<1x2x200x16xf32>
  %dqf = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%dsb, %k : tensor<1x2x200x333xbf16>, tensor<1x2x333x16xbf16>) outs(%dqz : tensor<1x2x200x16xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %m = arith.mulf %a32, %b32 : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x200x16xf32>
  %dq = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dqf : tensor<1x2x200x16xf32>) outs(%qb0 : tensor<1x2x200x16xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<1x2x200x16xbf16>
  // dK = dS^T Q
  %dkz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<1x2x333x16xf32>) -> tensor<1x2x333x16xf32>
  %dkf = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%dsb, %q : tensor<1x2x200x333xbf16>, tensor<1x2x200x16xbf16>) outs(%dkz : tensor<1x2x333x16xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %m = arith.mulf %a32, %b32 : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x333x16xf32>
  %dk = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dkf : tensor<1x2x333x16xf32>) outs(%kvb0 : tensor<1x2x333x16xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<1x2x333x16xbf16>
  return %dq, %dk, %dv : tensor<1x2x200x16xbf16>, tensor<1x2x333x16xbf16>, tensor<1x2x333x16xbf16>
}

// -----

// T5. Split, two microbatches sharing K / V (rank-4 generics as split.mlir S3 in natural operand order, S * 0.353553385, torch's dS): the entry calls @attn_fwd_mb(q1) and @attn_fwd_mb(q2), then @attn_bwd_mb with P2 / dO2 first and P1 / dO1 second (LIFO), each with its own forward's P; returns (o1, dq1, dk1, dv1, o2, dq2, dk2, dv2).
#q = affine_map<(b, h, m, n, d) -> (b, h, m, d)>
#k = affine_map<(b, h, m, n, d) -> (b, h, n, d)>
#s = affine_map<(b, h, m, n, d) -> (b, h, m, n)>
#p = affine_map<(b, h, m, d, n) -> (b, h, m, n)>
#v = affine_map<(b, h, m, d, n) -> (b, h, n, d)>
#o = affine_map<(b, h, m, d, n) -> (b, h, m, d)>
#pt = affine_map<(b, h, n, d, m) -> (b, h, m, n)>
#dot = affine_map<(b, h, n, d, m) -> (b, h, m, d)>
#kv = affine_map<(b, h, n, d, m) -> (b, h, n, d)>
#id4 = affine_map<(b, h, m, n) -> (b, h, m, n)>
#row4 = affine_map<(b, h, m, n) -> (b, h, m)>
// CHECK-LABEL: func.func @train_step_two_microbatches
// Each backward call gets the O and LSE of its own forward call.
// CHECK: %[[F1:.*]]:3 = call @attn_fwd_mb(%arg0,
// CHECK: %[[F2:.*]]:3 = call @attn_fwd_mb(
// CHECK: call @attn_bwd_mb({{.*}}%[[F2]]#1, %[[F2]]#2
// CHECK: call @attn_bwd_mb({{.*}}%[[F1]]#1, %[[F1]]#2
func.func @train_step_two_microbatches(%q1: tensor<2x2x12x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>, %do1: tensor<2x2x12x8xf32>, %q2: tensor<2x2x12x8xf32>, %do2: tensor<2x2x12x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) {
  %o1, %p1 = call @attn_fwd_mb(%q1, %k, %v) : (tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x12x16xf32>)
  %o2, %p2 = call @attn_fwd_mb(%q2, %k, %v) : (tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x12x16xf32>)
  %dq2, %dk2, %dv2 = call @attn_bwd_mb(%q2, %k, %v, %p2, %do2) : (tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x12x16xf32>, tensor<2x2x12x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>)
  %dq1, %dk1, %dv1 = call @attn_bwd_mb(%q1, %k, %v, %p1, %do1) : (tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x12x16xf32>, tensor<2x2x12x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>)
  return %o1, %dq1, %dk1, %dv1, %o2, %dq2, %dk2, %dv2 : tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>
}

func.func private @attn_fwd_mb(%q: tensor<2x2x12x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x12x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 0.353553385 : f32
  %s0 = tensor.empty() : tensor<2x2x12x16xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x2x12x16xf32>) -> tensor<2x2x12x16xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>) outs(%sz : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x16xf32>
  %x = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<2x2x12x16xf32>) outs(%s0 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x16xf32>
  %r0 = tensor.empty() : tensor<2x2x12xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<2x2x12xf32>) -> tensor<2x2x12xf32>
  %mx = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<2x2x12x16xf32>) outs(%mi : tensor<2x2x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12xf32>
  %e = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %mx : tensor<2x2x12x16xf32>, tensor<2x2x12xf32>) outs(%s0 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<2x2x12x16xf32>
  %li = linalg.fill ins(%zero : f32) outs(%r0 : tensor<2x2x12xf32>) -> tensor<2x2x12xf32>
  %l = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%e : tensor<2x2x12x16xf32>) outs(%li : tensor<2x2x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12xf32>
  %p = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%e, %l : tensor<2x2x12x16xf32>, tensor<2x2x12xf32>) outs(%s0 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<2x2x12x16xf32>
  %q0 = tensor.empty() : tensor<2x2x12x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%q0 : tensor<2x2x12x8xf32>) -> tensor<2x2x12x8xf32>
  %out = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<2x2x12x16xf32>, tensor<2x2x16x8xf32>) outs(%oz : tensor<2x2x12x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x8xf32>
  return %out, %p : tensor<2x2x12x8xf32>, tensor<2x2x12x16xf32>
}

func.func private @attn_bwd_mb(%q: tensor<2x2x12x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>, %p: tensor<2x2x12x16xf32>, %do: tensor<2x2x12x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 0.353553385 : f32
  %s0 = tensor.empty() : tensor<2x2x12x16xf32>
  %r0 = tensor.empty() : tensor<2x2x12xf32>
  %q0 = tensor.empty() : tensor<2x2x12x8xf32>
  // dV = P^T dO (contraction over the query axis)
  %kv0 = tensor.empty() : tensor<2x2x16x8xf32>
  %dvz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32>
  %dv = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %do : tensor<2x2x12x16xf32>, tensor<2x2x12x8xf32>) outs(%dvz : tensor<2x2x16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x16x8xf32>
  // dP = dO V^T
  %dpz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x2x12x16xf32>) -> tensor<2x2x12x16xf32>
  %dp = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%do, %v : tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>) outs(%dpz : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x16xf32>
  // dS = P * (dP - rowsum(dP * P))
  %t = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dp, %p : tensor<2x2x12x16xf32>, tensor<2x2x12x16xf32>) outs(%s0 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x16xf32>
  %rz = linalg.fill ins(%zero : f32) outs(%r0 : tensor<2x2x12xf32>) -> tensor<2x2x12xf32>
  %rs = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%t : tensor<2x2x12x16xf32>) outs(%rz : tensor<2x2x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12xf32>
  %ds = linalg.generic {indexing_maps = [#id4, #id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%p, %dp, %rs : tensor<2x2x12x16xf32>, tensor<2x2x12x16xf32>, tensor<2x2x12xf32>) outs(%s0 : tensor<2x2x12x16xf32>) {
  ^bb0(%pp: f32, %g: f32, %r: f32, %o: f32):
    %d = arith.subf %g, %r : f32
    %m = arith.mulf %pp, %d : f32
    linalg.yield %m : f32
  } -> tensor<2x2x12x16xf32>
  // backward of S * scale
  %dss = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ds : tensor<2x2x12x16xf32>) outs(%s0 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x16xf32>
  // dQ = dS K
  %dqz = linalg.fill ins(%zero : f32) outs(%q0 : tensor<2x2x12x8xf32>) -> tensor<2x2x12x8xf32>
  %dq = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%dss, %k : tensor<2x2x12x16xf32>, tensor<2x2x16x8xf32>) outs(%dqz : tensor<2x2x12x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x8xf32>
  // dK = dS^T Q
  %dkz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32>
  %dk = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%dss, %q : tensor<2x2x12x16xf32>, tensor<2x2x12x8xf32>) outs(%dkz : tensor<2x2x16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x16x8xf32>
  return %dq, %dk, %dv : tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>
}
