// RUN: flash-opt %s --flash-fuse-attention-backward -split-input-file | FileCheck %s
// RUN: %python -m flash_mlir.fusion_check %s --fuse=--flash-fuse-attention-backward --expect fused | FileCheck %s --check-prefix=EXEC
// RUN: flash-opt %s --flash-fuse-attention-backward=report=true -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// Jointly traced training steps, (q, k, v, dO) -> (O, dQ, dK, dV), whose
// backward reads the probabilities P saved by the forward, written as
// autodiff emits it in each frontend's spelling. Each becomes
// flash.attention returning the LSE plus flash.attention_backward, with no
// M x N tensor left; every case runs unfused and fused on the CPU and must
// give the same O and gradients (EXEC).
// EXEC-NOT: FAIL
// EXEC: fusion_check: 0 failure(s)
// REPORT-COUNT-16: remark: fused attention backward within the function: gradients dQ dK dV
// REPORT-NOT: not fused


// 1a. torch-mlir style: [B*H, S, D] batch_matmuls with linalg.transpose, S / sqrt(D), softmax as generics; backward dV = bmm(P^T, dO), dP = bmm(dO, V^T), dS = P * (dP - rowsum(dP * P)), dS / sqrt(D), dQ = bmm(dS, K), dK = transpose(bmm(Q^T, dS)).
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
// CHECK-LABEL: func.func @torch_joint
// CHECK-NOT: x16x20x
// CHECK: %{{.*}}, %[[LSE:.*]] = flash.attention %arg0, %arg1, %arg2 {scale = 0.353553385 : f32}{{.*}} -> {{.*}}, tensor<2x2x16xf32>
// CHECK-NOT: x16x20x
// CHECK: flash.attention_backward {{.*}}{scale = 0.353553385 : f32}
// CHECK-NOT: x16x20x
// CHECK: return
func.func @torch_joint(%q: tensor<2x2x16x8xf32>, %k: tensor<2x2x20x8xf32>, %v: tensor<2x2x20x8xf32>, %do: tensor<2x2x16x8xf32>) -> (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x20x8xf32>, tensor<2x2x20x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 2.82842712 : f32
  %q3 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x2x16x8xf32> into tensor<4x16x8xf32>
  %k3 = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<2x2x20x8xf32> into tensor<4x20x8xf32>
  %v3 = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<2x2x20x8xf32> into tensor<4x20x8xf32>
  %do3 = tensor.collapse_shape %do [[0, 1], [2], [3]] : tensor<2x2x16x8xf32> into tensor<4x16x8xf32>
  // forward
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
  // backward
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
  %o4 = tensor.expand_shape %o3 [[0, 1], [2], [3]] output_shape [2, 2, 16, 8] : tensor<4x16x8xf32> into tensor<2x2x16x8xf32>
  %dq = tensor.expand_shape %dq3 [[0, 1], [2], [3]] output_shape [2, 2, 16, 8] : tensor<4x16x8xf32> into tensor<2x2x16x8xf32>
  %dk = tensor.expand_shape %dk3 [[0, 1], [2], [3]] output_shape [2, 2, 20, 8] : tensor<4x20x8xf32> into tensor<2x2x20x8xf32>
  %dv = tensor.expand_shape %dv3 [[0, 1], [2], [3]] output_shape [2, 2, 20, 8] : tensor<4x20x8xf32> into tensor<2x2x20x8xf32>
  return %o4, %dq, %dk, %dv : tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x20x8xf32>, tensor<2x2x20x8xf32>
}

// -----

// 1b. JAX (stablehlo-to-linalg) style: rank-4 einsums as 5-D generics, flax's q / sqrt(D) before Q K^T, softmax and its VJP via linalg.reduce/broadcast/map (dS = dP*P - P*sum(dP*P)), dQ = (dS K) / sqrt(D), dK = dS^T Qs (reads the scaled q).
#q = affine_map<(b, h, m, n, d) -> (b, h, m, d)>
#k = affine_map<(b, h, m, n, d) -> (b, h, n, d)>
#s = affine_map<(b, h, m, n, d) -> (b, h, m, n)>
#p = affine_map<(b, h, m, d, n) -> (b, h, m, n)>
#v = affine_map<(b, h, m, d, n) -> (b, h, n, d)>
#o = affine_map<(b, h, m, d, n) -> (b, h, m, d)>
#pt = affine_map<(b, h, n, d, m) -> (b, h, m, n)>
#dot = affine_map<(b, h, n, d, m) -> (b, h, m, d)>
#kv = affine_map<(b, h, n, d, m) -> (b, h, n, d)>
// CHECK-LABEL: func.func @jax_joint
// CHECK-NOT: x10x14x
// CHECK: %{{.*}}, %[[LSE:.*]] = flash.attention %arg0, %arg1, %arg2 {scale = 0.353553385 : f32}{{.*}} -> {{.*}}, tensor<2x2x10xf32>
// CHECK-NOT: x10x14x
// CHECK: flash.attention_backward %arg0, %arg1, %arg2, %{{.*}}, %arg3, %[[LSE]] {scale = 0.353553385 : f32}
// CHECK-NOT: x10x14x
// CHECK: return
func.func @jax_joint(%q: tensor<2x2x10x8xf32>, %k: tensor<2x2x14x8xf32>, %v: tensor<2x2x14x8xf32>, %do: tensor<2x2x10x8xf32>) -> (tensor<2x2x10x8xf32>, tensor<2x2x10x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x14x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  // forward
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
  // backward
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
  return %out, %dq, %dk, %dv : tensor<2x2x10x8xf32>, tensor<2x2x10x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x14x8xf32>
}

// -----

// 1c. Bottom-right causal (M = 12 < N = 16, keep j <= i + 4 via linalg.index, select -inf), rank-4 generics, S / sqrt(D); backward as 1a (dS = P * (dP - rowsum(dP * P))) plus the select's backward (masked entries of dS zeroed) before / sqrt(D).
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
// CHECK-LABEL: func.func @causal_joint
// CHECK-NOT: x12x16x
// CHECK: %{{.*}}, %[[LSE:.*]] = flash.attention %arg0, %arg1, %arg2 {causal, scale = 0.353553385 : f32}{{.*}} -> {{.*}}, tensor<2x2x12xf32>
// CHECK-NOT: x12x16x
// CHECK: flash.attention_backward %arg0, %arg1, %arg2, %{{.*}}, %arg3, %[[LSE]] {causal, scale = 0.353553385 : f32}
// CHECK-NOT: x12x16x
// CHECK: return
func.func @causal_joint(%q: tensor<2x2x12x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>, %do: tensor<2x2x12x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 2.82842712 : f32
  %c4 = arith.constant 4 : index
  // forward
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
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %last = arith.addi %i, %c4 : index
    %keep = arith.cmpi sle, %j, %last : index
    %sc = arith.divf %a, %c : f32
    %r = arith.select %keep, %sc, %ninf : f32
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
  // backward
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
  // backward of select(keep, S / sqrt(D), -inf): select(keep, dS, 0) / sqrt(D)
  %dss = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ds : tensor<2x2x12x16xf32>) outs(%s0 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %last = arith.addi %i, %c4 : index
    %keep = arith.cmpi sle, %j, %last : index
    %g = arith.select %keep, %a, %zero : f32
    %r = arith.divf %g, %c : f32
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
  return %out, %dq, %dk, %dv : tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>
}

// -----

// 1d. Mixed precision: bf16 Q/K/V/dO and additive bf16 bias [1, 1, M, N] on the scaled scores, contractions accumulate in f32 (extf in bodies), softmax in f32, P saved in bf16 (truncf); backward dS = P * (dP - rowsum(dP * P)) in f32, scaled and rounded to bf16 before dQ / dK; gradients rounded to bf16.
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
// CHECK-LABEL: func.func @bias_bf16_joint
// CHECK-NOT: 2x2x8x12x
// CHECK: %{{.*}}, %[[LSE:.*]] = flash.attention %arg0, %arg1, %arg2 bias({{.*}} -> {{.*}}, tensor<2x2x8xf32>
// CHECK-NOT: 2x2x8x12x
// CHECK: flash.attention_backward %arg0, %arg1, %arg2, %{{.*}}, %arg3, %[[LSE]] bias(%{{.*}} : tensor<1x1x8x12xbf16>)
// CHECK-NOT: 2x2x8x12x
// CHECK: return
func.func @bias_bf16_joint(%q: tensor<2x2x8x8xbf16>, %k: tensor<2x2x12x8xbf16>, %v: tensor<2x2x12x8xbf16>, %do: tensor<2x2x8x8xbf16>, %bias: tensor<1x1x8x12xbf16>) -> (tensor<2x2x8x8xbf16>, tensor<2x2x8x8xbf16>, tensor<2x2x12x8xbf16>, tensor<2x2x12x8xbf16>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 0.353553385 : f32
  // forward
  %s0 = tensor.empty() : tensor<2x2x8x12xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x2x8x12xf32>) -> tensor<2x2x8x12xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x2x8x8xbf16>, tensor<2x2x12x8xbf16>) outs(%sz : tensor<2x2x8x12xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %m = arith.mulf %a32, %b32 : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x8x12xf32>
  %x = linalg.generic {indexing_maps = [#id4, #bias, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %bias : tensor<2x2x8x12xf32>, tensor<1x1x8x12xbf16>) outs(%s0 : tensor<2x2x8x12xf32>) {
  ^bb0(%a: f32, %b: bf16, %o: f32):
    %sc = arith.mulf %a, %c : f32
    %b32 = arith.extf %b : bf16 to f32
    %r = arith.addf %sc, %b32 : f32
    linalg.yield %r : f32
  } -> tensor<2x2x8x12xf32>
  %r0 = tensor.empty() : tensor<2x2x8xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
  %mx = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<2x2x8x12xf32>) outs(%mi : tensor<2x2x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x2x8xf32>
  %e = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %mx : tensor<2x2x8x12xf32>, tensor<2x2x8xf32>) outs(%s0 : tensor<2x2x8x12xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<2x2x8x12xf32>
  %li = linalg.fill ins(%zero : f32) outs(%r0 : tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
  %l = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%e : tensor<2x2x8x12xf32>) outs(%li : tensor<2x2x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x2x8xf32>
  %p0 = tensor.empty() : tensor<2x2x8x12xbf16>
  %p = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%e, %l : tensor<2x2x8x12xf32>, tensor<2x2x8xf32>) outs(%p0 : tensor<2x2x8x12xbf16>) {
  ^bb0(%a: f32, %b: f32, %o: bf16):
    %d = arith.divf %a, %b : f32
    %t = arith.truncf %d : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<2x2x8x12xbf16>
  %q0 = tensor.empty() : tensor<2x2x8x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%q0 : tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %of = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<2x2x8x12xbf16>, tensor<2x2x12x8xbf16>) outs(%oz : tensor<2x2x8x8xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %m = arith.mulf %a32, %b32 : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x8x8xf32>
  %qb0 = tensor.empty() : tensor<2x2x8x8xbf16>
  %out = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%of : tensor<2x2x8x8xf32>) outs(%qb0 : tensor<2x2x8x8xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<2x2x8x8xbf16>
  // backward
  // dV = P^T dO, accumulated in f32, rounded to bf16
  %kv0 = tensor.empty() : tensor<2x2x12x8xf32>
  %dvz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<2x2x12x8xf32>) -> tensor<2x2x12x8xf32>
  %dvf = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %do : tensor<2x2x8x12xbf16>, tensor<2x2x8x8xbf16>) outs(%dvz : tensor<2x2x12x8xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %m = arith.mulf %a32, %b32 : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x8xf32>
  %kvb0 = tensor.empty() : tensor<2x2x12x8xbf16>
  %dv = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dvf : tensor<2x2x12x8xf32>) outs(%kvb0 : tensor<2x2x12x8xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<2x2x12x8xbf16>
  // dP = dO V^T in f32
  %dpz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x2x8x12xf32>) -> tensor<2x2x8x12xf32>
  %dp = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%do, %v : tensor<2x2x8x8xbf16>, tensor<2x2x12x8xbf16>) outs(%dpz : tensor<2x2x8x12xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %m = arith.mulf %a32, %b32 : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x8x12xf32>
  // dS = P * (dP - rowsum(dP * P)) in f32
  %gp = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dp, %p : tensor<2x2x8x12xf32>, tensor<2x2x8x12xbf16>) outs(%s0 : tensor<2x2x8x12xf32>) {
  ^bb0(%a: f32, %b: bf16, %o: f32):
    %b32 = arith.extf %b : bf16 to f32
    %r = arith.mulf %a, %b32 : f32
    linalg.yield %r : f32
  } -> tensor<2x2x8x12xf32>
  %rz = linalg.fill ins(%zero : f32) outs(%r0 : tensor<2x2x8xf32>) -> tensor<2x2x8xf32>
  %rs = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%gp : tensor<2x2x8x12xf32>) outs(%rz : tensor<2x2x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x2x8xf32>
  %ds = linalg.generic {indexing_maps = [#id4, #id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%p, %dp, %rs : tensor<2x2x8x12xbf16>, tensor<2x2x8x12xf32>, tensor<2x2x8xf32>) outs(%s0 : tensor<2x2x8x12xf32>) {
  ^bb0(%pp: bf16, %g: f32, %r: f32, %o: f32):
    %p32 = arith.extf %pp : bf16 to f32
    %d = arith.subf %g, %r : f32
    %m = arith.mulf %p32, %d : f32
    linalg.yield %m : f32
  } -> tensor<2x2x8x12xf32>
  // backward of S * scale, rounded to bf16 for the two matmuls
  %dsb = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ds : tensor<2x2x8x12xf32>) outs(%p0 : tensor<2x2x8x12xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %m = arith.mulf %a, %c : f32
    %t = arith.truncf %m : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<2x2x8x12xbf16>
  // dQ = dS K
  %dqz = linalg.fill ins(%zero : f32) outs(%q0 : tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
  %dqf = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%dsb, %k : tensor<2x2x8x12xbf16>, tensor<2x2x12x8xbf16>) outs(%dqz : tensor<2x2x8x8xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %m = arith.mulf %a32, %b32 : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x8x8xf32>
  %dq = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dqf : tensor<2x2x8x8xf32>) outs(%qb0 : tensor<2x2x8x8xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<2x2x8x8xbf16>
  // dK = dS^T Q
  %dkz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<2x2x12x8xf32>) -> tensor<2x2x12x8xf32>
  %dkf = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%dsb, %q : tensor<2x2x8x12xbf16>, tensor<2x2x8x8xbf16>) outs(%dkz : tensor<2x2x12x8xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %m = arith.mulf %a32, %b32 : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x8xf32>
  %dk = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dkf : tensor<2x2x12x8xf32>) outs(%kvb0 : tensor<2x2x12x8xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<2x2x12x8xbf16>
  return %out, %dq, %dk, %dv : tensor<2x2x8x8xbf16>, tensor<2x2x8x8xbf16>, tensor<2x2x12x8xbf16>, tensor<2x2x12x8xbf16>
}

// -----

// 1e. Long causal case B=1, H=2, M=200, N=333, D=16 (keep j <= i + 133), rank-4 generics, S * 0.25; backward with JAX's softmax VJP (t = dP * P; dS = t - P * rowsum(t)) and the mask's select backward, then * 0.25.
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
// CHECK-LABEL: func.func @causal_200x333_joint
// CHECK-NOT: x200x333x
// CHECK: %{{.*}}, %[[LSE:.*]] = flash.attention %arg0, %arg1, %arg2 {causal, scale = 2.500000e-01 : f32}{{.*}} -> {{.*}}, tensor<1x2x200xf32>
// CHECK-NOT: x200x333x
// CHECK: flash.attention_backward %arg0, %arg1, %arg2, %{{.*}}, %arg3, %[[LSE]] {causal, scale = 2.500000e-01 : f32}
// CHECK-NOT: x200x333x
// CHECK: return
func.func @causal_200x333_joint(%q: tensor<1x2x200x16xf32>, %k: tensor<1x2x333x16xf32>, %v: tensor<1x2x333x16xf32>, %do: tensor<1x2x200x16xf32>) -> (tensor<1x2x200x16xf32>, tensor<1x2x200x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x333x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 2.500000e-01 : f32
  %c133 = arith.constant 133 : index
  // forward
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
  // backward
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
  // backward of select(keep, S * 0.25, -inf): select(keep, dS, 0) * 0.25
  %dss = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ds : tensor<1x2x200x333xf32>) outs(%s0 : tensor<1x2x200x333xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %last = arith.addi %i, %c133 : index
    %keep = arith.cmpi sle, %j, %last : index
    %g = arith.select %keep, %a, %zero : f32
    %r = arith.mulf %g, %c : f32
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
  return %out, %dq, %dk, %dv : tensor<1x2x200x16xf32>, tensor<1x2x200x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x333x16xf32>
}

// -----

// A1. Dynamic batch and sequence lengths: Q/dO tensor<?x2x?x8xf32>, K/V tensor<?x2x?x8xf32>, tensor.empty sized by tensor.dim, rank-4 generics, no mask, S * 0.35355339; torch's dS = P * (dP - rowsum(dP * P)), then * 0.35355339.
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
// CHECK-LABEL: func.func @dynamic_joint
// CHECK-NOT: ?x?xf32
// CHECK: %{{.*}}, %[[LSE:.*]] = flash.attention %arg0, %arg1, %arg2 {scale = 0.353553385 : f32}{{.*}} -> {{.*}}, tensor<?x2x?xf32>
// CHECK-NOT: ?x?xf32
// CHECK: flash.attention_backward %arg0, %arg1, %arg2, %{{.*}}, %arg3, %[[LSE]] {scale = 0.353553385 : f32}
// CHECK-NOT: ?x?xf32
// CHECK: return
func.func @dynamic_joint(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>, %v: tensor<?x2x?x8xf32>, %do: tensor<?x2x?x8xf32>) -> (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 0.35355339 : f32
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %bq = tensor.dim %q, %c0 : tensor<?x2x?x8xf32>
  %mq = tensor.dim %q, %c2 : tensor<?x2x?x8xf32>
  %bk = tensor.dim %k, %c0 : tensor<?x2x?x8xf32>
  %nk = tensor.dim %k, %c2 : tensor<?x2x?x8xf32>
  // forward
  %s0 = tensor.empty(%bq, %mq, %nk) : tensor<?x2x?x?xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) outs(%sz : tensor<?x2x?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<?x2x?x?xf32>
  %x = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<?x2x?x?xf32>) outs(%s0 : tensor<?x2x?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<?x2x?x?xf32>
  %r0 = tensor.empty(%bq, %mq) : tensor<?x2x?xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<?x2x?xf32>) -> tensor<?x2x?xf32>
  %mx = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<?x2x?x?xf32>) outs(%mi : tensor<?x2x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<?x2x?xf32>
  %e = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %mx : tensor<?x2x?x?xf32>, tensor<?x2x?xf32>) outs(%s0 : tensor<?x2x?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<?x2x?x?xf32>
  %li = linalg.fill ins(%zero : f32) outs(%r0 : tensor<?x2x?xf32>) -> tensor<?x2x?xf32>
  %l = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%e : tensor<?x2x?x?xf32>) outs(%li : tensor<?x2x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<?x2x?xf32>
  %p = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%e, %l : tensor<?x2x?x?xf32>, tensor<?x2x?xf32>) outs(%s0 : tensor<?x2x?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<?x2x?x?xf32>
  %q0 = tensor.empty(%bq, %mq) : tensor<?x2x?x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%q0 : tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %out = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) outs(%oz : tensor<?x2x?x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<?x2x?x8xf32>
  // backward
  // dV = P^T dO (contraction over the query axis)
  %kv0 = tensor.empty(%bk, %nk) : tensor<?x2x?x8xf32>
  %dvz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %dv = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %do : tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) outs(%dvz : tensor<?x2x?x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<?x2x?x8xf32>
  // dP = dO V^T
  %dpz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %dp = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%do, %v : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) outs(%dpz : tensor<?x2x?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<?x2x?x?xf32>
  // dS = P * (dP - rowsum(dP * P))
  %t = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dp, %p : tensor<?x2x?x?xf32>, tensor<?x2x?x?xf32>) outs(%s0 : tensor<?x2x?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<?x2x?x?xf32>
  %rz = linalg.fill ins(%zero : f32) outs(%r0 : tensor<?x2x?xf32>) -> tensor<?x2x?xf32>
  %rs = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%t : tensor<?x2x?x?xf32>) outs(%rz : tensor<?x2x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<?x2x?xf32>
  %ds = linalg.generic {indexing_maps = [#id4, #id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%p, %dp, %rs : tensor<?x2x?x?xf32>, tensor<?x2x?x?xf32>, tensor<?x2x?xf32>) outs(%s0 : tensor<?x2x?x?xf32>) {
  ^bb0(%pp: f32, %g: f32, %r: f32, %o: f32):
    %d = arith.subf %g, %r : f32
    %m = arith.mulf %pp, %d : f32
    linalg.yield %m : f32
  } -> tensor<?x2x?x?xf32>
  // backward of S * scale
  %dss = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ds : tensor<?x2x?x?xf32>) outs(%s0 : tensor<?x2x?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<?x2x?x?xf32>
  // dQ = dS K
  %dqz = linalg.fill ins(%zero : f32) outs(%q0 : tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %dq = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%dss, %k : tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) outs(%dqz : tensor<?x2x?x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<?x2x?x8xf32>
  // dK = dS^T Q
  %dkz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %dk = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%dss, %q : tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) outs(%dkz : tensor<?x2x?x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<?x2x?x8xf32>
  return %out, %dq, %dk, %dv : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>
}

// -----

// A2. GQA the torch way: Hq = 4, Hkv = 2, K/V repeated to the query heads (repeat_kv: expand_shape to [B, Hkv, 1, N, D], broadcast generic to G = 2, collapse_shape to [B, Hq, N, D]), S * 0.353553385; backward computes dK_rep / dV_rep for the repeated heads and sums them over the group (expand_shape to [B, Hkv, G, N, D], reduction generic over G).
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
#rep_in = affine_map<(b, h, g, n, d) -> (b, h, 0, n, d)>
#rep_out = affine_map<(b, h, g, n, d) -> (b, h, g, n, d)>
#grp = affine_map<(b, h, g, n, d) -> (b, h, n, d)>
// CHECK-LABEL: func.func @gqa_repeat_kv_joint
// CHECK-NOT: x10x14x
// CHECK: %{{.*}}, %[[LSE:.*]] = flash.attention %arg0, %arg1, %arg2 {scale = 0.353553385 : f32} : tensor<2x4x10x8xf32>, tensor<2x2x14x8xf32>{{.*}} -> {{.*}}, tensor<2x4x10xf32>
// CHECK-NOT: x10x14x
// CHECK: flash.attention_backward {{.*}} {scale = 0.353553385 : f32} : tensor<2x4x10x8xf32>, tensor<2x4x14x8xf32>
// CHECK-NOT: x10x14x
// CHECK: return
func.func @gqa_repeat_kv_joint(%q: tensor<2x4x10x8xf32>, %k: tensor<2x2x14x8xf32>, %v: tensor<2x2x14x8xf32>, %do: tensor<2x4x10x8xf32>) -> (tensor<2x4x10x8xf32>, tensor<2x4x10x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x14x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 0.353553385 : f32
  // repeat_kv: [B, Hkv, N, D] -> [B, Hkv, 1, N, D] -> broadcast to G = 2 -> [B, Hkv * G, N, D]
  %k5 = tensor.expand_shape %k [[0], [1, 2], [3], [4]] output_shape [2, 2, 1, 14, 8] : tensor<2x2x14x8xf32> into tensor<2x2x1x14x8xf32>
  %v5 = tensor.expand_shape %v [[0], [1, 2], [3], [4]] output_shape [2, 2, 1, 14, 8] : tensor<2x2x14x8xf32> into tensor<2x2x1x14x8xf32>
  %g0 = tensor.empty() : tensor<2x2x2x14x8xf32>
  %kr = linalg.generic {indexing_maps = [#rep_in, #rep_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%k5 : tensor<2x2x1x14x8xf32>) outs(%g0 : tensor<2x2x2x14x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x2x2x14x8xf32>
  %vr = linalg.generic {indexing_maps = [#rep_in, #rep_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%v5 : tensor<2x2x1x14x8xf32>) outs(%g0 : tensor<2x2x2x14x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x2x2x14x8xf32>
  %k4 = tensor.collapse_shape %kr [[0], [1, 2], [3], [4]] : tensor<2x2x2x14x8xf32> into tensor<2x4x14x8xf32>
  %v4 = tensor.collapse_shape %vr [[0], [1, 2], [3], [4]] : tensor<2x2x2x14x8xf32> into tensor<2x4x14x8xf32>
  // forward
  %s0 = tensor.empty() : tensor<2x4x10x14xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x4x10x14xf32>) -> tensor<2x4x10x14xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k4 : tensor<2x4x10x8xf32>, tensor<2x4x14x8xf32>) outs(%sz : tensor<2x4x10x14xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x10x14xf32>
  %x = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x10x14xf32>) outs(%s0 : tensor<2x4x10x14xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x4x10x14xf32>
  %r0 = tensor.empty() : tensor<2x4x10xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<2x4x10xf32>) -> tensor<2x4x10xf32>
  %mx = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<2x4x10x14xf32>) outs(%mi : tensor<2x4x10xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x4x10xf32>
  %e = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %mx : tensor<2x4x10x14xf32>, tensor<2x4x10xf32>) outs(%s0 : tensor<2x4x10x14xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<2x4x10x14xf32>
  %li = linalg.fill ins(%zero : f32) outs(%r0 : tensor<2x4x10xf32>) -> tensor<2x4x10xf32>
  %l = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%e : tensor<2x4x10x14xf32>) outs(%li : tensor<2x4x10xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x4x10xf32>
  %p = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%e, %l : tensor<2x4x10x14xf32>, tensor<2x4x10xf32>) outs(%s0 : tensor<2x4x10x14xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<2x4x10x14xf32>
  %q0 = tensor.empty() : tensor<2x4x10x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%q0 : tensor<2x4x10x8xf32>) -> tensor<2x4x10x8xf32>
  %out = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v4 : tensor<2x4x10x14xf32>, tensor<2x4x14x8xf32>) outs(%oz : tensor<2x4x10x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x10x8xf32>
  // backward (on the repeated heads)
  // dV = P^T dO (contraction over the query axis)
  %kv0 = tensor.empty() : tensor<2x4x14x8xf32>
  %dvz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<2x4x14x8xf32>) -> tensor<2x4x14x8xf32>
  %dvr = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %do : tensor<2x4x10x14xf32>, tensor<2x4x10x8xf32>) outs(%dvz : tensor<2x4x14x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x14x8xf32>
  // dP = dO V^T
  %dpz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x4x10x14xf32>) -> tensor<2x4x10x14xf32>
  %dp = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%do, %v4 : tensor<2x4x10x8xf32>, tensor<2x4x14x8xf32>) outs(%dpz : tensor<2x4x10x14xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x10x14xf32>
  // dS = P * (dP - rowsum(dP * P))
  %t = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dp, %p : tensor<2x4x10x14xf32>, tensor<2x4x10x14xf32>) outs(%s0 : tensor<2x4x10x14xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x4x10x14xf32>
  %rz = linalg.fill ins(%zero : f32) outs(%r0 : tensor<2x4x10xf32>) -> tensor<2x4x10xf32>
  %rs = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%t : tensor<2x4x10x14xf32>) outs(%rz : tensor<2x4x10xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x4x10xf32>
  %ds = linalg.generic {indexing_maps = [#id4, #id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%p, %dp, %rs : tensor<2x4x10x14xf32>, tensor<2x4x10x14xf32>, tensor<2x4x10xf32>) outs(%s0 : tensor<2x4x10x14xf32>) {
  ^bb0(%pp: f32, %g: f32, %r: f32, %o: f32):
    %d = arith.subf %g, %r : f32
    %m = arith.mulf %pp, %d : f32
    linalg.yield %m : f32
  } -> tensor<2x4x10x14xf32>
  // backward of S * scale
  %dss = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ds : tensor<2x4x10x14xf32>) outs(%s0 : tensor<2x4x10x14xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x4x10x14xf32>
  // dQ = dS K
  %dqz = linalg.fill ins(%zero : f32) outs(%q0 : tensor<2x4x10x8xf32>) -> tensor<2x4x10x8xf32>
  %dq = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%dss, %k4 : tensor<2x4x10x14xf32>, tensor<2x4x14x8xf32>) outs(%dqz : tensor<2x4x10x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x10x8xf32>
  // dK = dS^T Q
  %dkz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<2x4x14x8xf32>) -> tensor<2x4x14x8xf32>
  %dkr = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%dss, %q : tensor<2x4x10x14xf32>, tensor<2x4x10x8xf32>) outs(%dkz : tensor<2x4x14x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x14x8xf32>
  // backward of repeat_kv: sum dK_rep over the group
  %dk5 = tensor.expand_shape %dkr [[0], [1, 2], [3], [4]] output_shape [2, 2, 2, 14, 8] : tensor<2x4x14x8xf32> into tensor<2x2x2x14x8xf32>
  %dkh0 = tensor.empty() : tensor<2x2x14x8xf32>
  %dkhz = linalg.fill ins(%zero : f32) outs(%dkh0 : tensor<2x2x14x8xf32>) -> tensor<2x2x14x8xf32>
  %dk = linalg.generic {indexing_maps = [#rep_out, #grp], iterator_types = ["parallel", "parallel", "reduction", "parallel", "parallel"]} ins(%dk5 : tensor<2x2x2x14x8xf32>) outs(%dkhz : tensor<2x2x14x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x2x14x8xf32>
  // backward of repeat_kv: sum dV_rep over the group
  %dv5 = tensor.expand_shape %dvr [[0], [1, 2], [3], [4]] output_shape [2, 2, 2, 14, 8] : tensor<2x4x14x8xf32> into tensor<2x2x2x14x8xf32>
  %dvh0 = tensor.empty() : tensor<2x2x14x8xf32>
  %dvhz = linalg.fill ins(%zero : f32) outs(%dvh0 : tensor<2x2x14x8xf32>) -> tensor<2x2x14x8xf32>
  %dv = linalg.generic {indexing_maps = [#rep_out, #grp], iterator_types = ["parallel", "parallel", "reduction", "parallel", "parallel"]} ins(%dv5 : tensor<2x2x2x14x8xf32>) outs(%dvhz : tensor<2x2x14x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x2x14x8xf32>
  return %out, %dq, %dk, %dv : tensor<2x4x10x8xf32>, tensor<2x4x10x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x14x8xf32>
}

// -----

// A3. Boolean mask input tensor<2x1x12x16xi1> (read as (b, 0, m, n)): forward select(mask, S * 0.353553385, -inf), backward select(mask, dS, 0) * 0.353553385; torch's dS = P * (dP - rowsum(dP * P)).
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
#mask = affine_map<(b, h, m, n) -> (b, 0, m, n)>
// CHECK-LABEL: func.func @mask_i1_joint
// CHECK-NOT: 2x2x12x16x
// CHECK: %{{.*}}, %[[LSE:.*]] = flash.attention %arg0, %arg1, %arg2 mask(%{{.*}} : tensor<2x1x12x16xi1>){{.*}} -> {{.*}}, tensor<2x2x12xf32>
// CHECK-NOT: 2x2x12x16x
// CHECK: flash.attention_backward %arg0, %arg1, %arg2, %{{.*}}, %arg3, %[[LSE]] mask(%{{.*}} : tensor<2x1x12x16xi1>)
// CHECK-NOT: 2x2x12x16x
// CHECK: return
func.func @mask_i1_joint(%q: tensor<2x2x12x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>, %do: tensor<2x2x12x8xf32>, %mask: tensor<2x1x12x16xi1>) -> (tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 0.353553385 : f32
  // forward
  %s0 = tensor.empty() : tensor<2x2x12x16xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x2x12x16xf32>) -> tensor<2x2x12x16xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>) outs(%sz : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x16xf32>
  %x = linalg.generic {indexing_maps = [#id4, #mask, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %mask : tensor<2x2x12x16xf32>, tensor<2x1x12x16xi1>) outs(%s0 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %keep: i1, %o: f32):
    %sc = arith.mulf %a, %c : f32
    %r = arith.select %keep, %sc, %ninf : f32
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
  // backward
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
  // backward of select(mask, S * scale, -inf): select(mask, dS, 0) * scale
  %dss = linalg.generic {indexing_maps = [#id4, #mask, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ds, %mask : tensor<2x2x12x16xf32>, tensor<2x1x12x16xi1>) outs(%s0 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %keep: i1, %o: f32):
    %g = arith.select %keep, %a, %zero : f32
    %r = arith.mulf %g, %c : f32
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
  return %out, %dq, %dk, %dv : tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>
}

// -----

// A5. Two attention layers in one function, o1 = attn(q, k1, v1), o2 = attn(o1, k2, v2) (S * 0.353553385 each), and both backwards: layer 2's from dO (dq2 = dO of layer 1, dk2, dv2), then layer 1's from dq2; returns (o2, dq, dk1, dv1, dk2, dv2).
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
// CHECK-LABEL: func.func @two_layer_joint
// CHECK-NOT: x12x16x
// CHECK-NOT: x12x20x
// CHECK: %[[O1:.*]], %{{.*}} = flash.attention %arg0, %arg1, %arg2
// CHECK: %[[O2:.*]], %{{.*}} = flash.attention %[[O1]], %arg3, %arg4
// CHECK: %[[DQ2:.*]], %{{.*}}, %{{.*}} = flash.attention_backward %[[O1]], %arg3, %arg4, %[[O2]], %arg5
// CHECK: flash.attention_backward %arg0, %arg1, %arg2, %[[O1]], %[[DQ2]]
// CHECK-NOT: x12x16x
// CHECK-NOT: x12x20x
// CHECK: return
func.func @two_layer_joint(%q: tensor<2x2x12x8xf32>, %k1: tensor<2x2x16x8xf32>, %v1: tensor<2x2x16x8xf32>, %k2: tensor<2x2x20x8xf32>, %v2: tensor<2x2x20x8xf32>, %do: tensor<2x2x12x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x20x8xf32>, tensor<2x2x20x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 0.353553385 : f32
  // layer 1 forward
  %s01 = tensor.empty() : tensor<2x2x12x16xf32>
  %sz1 = linalg.fill ins(%zero : f32) outs(%s01 : tensor<2x2x12x16xf32>) -> tensor<2x2x12x16xf32>
  %s1 = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k1 : tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>) outs(%sz1 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x16xf32>
  %x1 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s1 : tensor<2x2x12x16xf32>) outs(%s01 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x16xf32>
  %r01 = tensor.empty() : tensor<2x2x12xf32>
  %mi1 = linalg.fill ins(%ninf : f32) outs(%r01 : tensor<2x2x12xf32>) -> tensor<2x2x12xf32>
  %mx1 = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x1 : tensor<2x2x12x16xf32>) outs(%mi1 : tensor<2x2x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12xf32>
  %e1 = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x1, %mx1 : tensor<2x2x12x16xf32>, tensor<2x2x12xf32>) outs(%s01 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<2x2x12x16xf32>
  %li1 = linalg.fill ins(%zero : f32) outs(%r01 : tensor<2x2x12xf32>) -> tensor<2x2x12xf32>
  %l1 = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%e1 : tensor<2x2x12x16xf32>) outs(%li1 : tensor<2x2x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12xf32>
  %p1 = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%e1, %l1 : tensor<2x2x12x16xf32>, tensor<2x2x12xf32>) outs(%s01 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<2x2x12x16xf32>
  %q01 = tensor.empty() : tensor<2x2x12x8xf32>
  %oz1 = linalg.fill ins(%zero : f32) outs(%q01 : tensor<2x2x12x8xf32>) -> tensor<2x2x12x8xf32>
  %out1 = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p1, %v1 : tensor<2x2x12x16xf32>, tensor<2x2x16x8xf32>) outs(%oz1 : tensor<2x2x12x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x8xf32>
  // layer 2 forward (q = o1)
  %s02 = tensor.empty() : tensor<2x2x12x20xf32>
  %sz2 = linalg.fill ins(%zero : f32) outs(%s02 : tensor<2x2x12x20xf32>) -> tensor<2x2x12x20xf32>
  %s2 = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%out1, %k2 : tensor<2x2x12x8xf32>, tensor<2x2x20x8xf32>) outs(%sz2 : tensor<2x2x12x20xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x20xf32>
  %x2 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s2 : tensor<2x2x12x20xf32>) outs(%s02 : tensor<2x2x12x20xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x20xf32>
  %r02 = tensor.empty() : tensor<2x2x12xf32>
  %mi2 = linalg.fill ins(%ninf : f32) outs(%r02 : tensor<2x2x12xf32>) -> tensor<2x2x12xf32>
  %mx2 = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%x2 : tensor<2x2x12x20xf32>) outs(%mi2 : tensor<2x2x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12xf32>
  %e2 = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x2, %mx2 : tensor<2x2x12x20xf32>, tensor<2x2x12xf32>) outs(%s02 : tensor<2x2x12x20xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<2x2x12x20xf32>
  %li2 = linalg.fill ins(%zero : f32) outs(%r02 : tensor<2x2x12xf32>) -> tensor<2x2x12xf32>
  %l2 = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%e2 : tensor<2x2x12x20xf32>) outs(%li2 : tensor<2x2x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12xf32>
  %p2 = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%e2, %l2 : tensor<2x2x12x20xf32>, tensor<2x2x12xf32>) outs(%s02 : tensor<2x2x12x20xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<2x2x12x20xf32>
  %q02 = tensor.empty() : tensor<2x2x12x8xf32>
  %oz2 = linalg.fill ins(%zero : f32) outs(%q02 : tensor<2x2x12x8xf32>) -> tensor<2x2x12x8xf32>
  %out2 = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p2, %v2 : tensor<2x2x12x20xf32>, tensor<2x2x20x8xf32>) outs(%oz2 : tensor<2x2x12x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x8xf32>
  // layer 2 backward (dO given)
  // dV = P^T dO (contraction over the query axis)
  %kv02 = tensor.empty() : tensor<2x2x20x8xf32>
  %dvz2 = linalg.fill ins(%zero : f32) outs(%kv02 : tensor<2x2x20x8xf32>) -> tensor<2x2x20x8xf32>
  %dv2 = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p2, %do : tensor<2x2x12x20xf32>, tensor<2x2x12x8xf32>) outs(%dvz2 : tensor<2x2x20x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x20x8xf32>
  // dP = dO V^T
  %dpz2 = linalg.fill ins(%zero : f32) outs(%s02 : tensor<2x2x12x20xf32>) -> tensor<2x2x12x20xf32>
  %dp2 = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%do, %v2 : tensor<2x2x12x8xf32>, tensor<2x2x20x8xf32>) outs(%dpz2 : tensor<2x2x12x20xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x20xf32>
  // dS = P * (dP - rowsum(dP * P))
  %t2 = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dp2, %p2 : tensor<2x2x12x20xf32>, tensor<2x2x12x20xf32>) outs(%s02 : tensor<2x2x12x20xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x20xf32>
  %rz2 = linalg.fill ins(%zero : f32) outs(%r02 : tensor<2x2x12xf32>) -> tensor<2x2x12xf32>
  %rs2 = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%t2 : tensor<2x2x12x20xf32>) outs(%rz2 : tensor<2x2x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12xf32>
  %ds2 = linalg.generic {indexing_maps = [#id4, #id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%p2, %dp2, %rs2 : tensor<2x2x12x20xf32>, tensor<2x2x12x20xf32>, tensor<2x2x12xf32>) outs(%s02 : tensor<2x2x12x20xf32>) {
  ^bb0(%pp: f32, %g: f32, %r: f32, %o: f32):
    %d = arith.subf %g, %r : f32
    %m = arith.mulf %pp, %d : f32
    linalg.yield %m : f32
  } -> tensor<2x2x12x20xf32>
  // backward of S * scale
  %dss2 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ds2 : tensor<2x2x12x20xf32>) outs(%s02 : tensor<2x2x12x20xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x20xf32>
  // dQ = dS K
  %dqz2 = linalg.fill ins(%zero : f32) outs(%q02 : tensor<2x2x12x8xf32>) -> tensor<2x2x12x8xf32>
  %dq2 = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%dss2, %k2 : tensor<2x2x12x20xf32>, tensor<2x2x20x8xf32>) outs(%dqz2 : tensor<2x2x12x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x8xf32>
  // dK = dS^T Q
  %dkz2 = linalg.fill ins(%zero : f32) outs(%kv02 : tensor<2x2x20x8xf32>) -> tensor<2x2x20x8xf32>
  %dk2 = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%dss2, %out1 : tensor<2x2x12x20xf32>, tensor<2x2x12x8xf32>) outs(%dkz2 : tensor<2x2x20x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x20x8xf32>
  // layer 1 backward (dO = dq2)
  // dV = P^T dO (contraction over the query axis)
  %kv01 = tensor.empty() : tensor<2x2x16x8xf32>
  %dvz1 = linalg.fill ins(%zero : f32) outs(%kv01 : tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32>
  %dv1 = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p1, %dq2 : tensor<2x2x12x16xf32>, tensor<2x2x12x8xf32>) outs(%dvz1 : tensor<2x2x16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x16x8xf32>
  // dP = dO V^T
  %dpz1 = linalg.fill ins(%zero : f32) outs(%s01 : tensor<2x2x12x16xf32>) -> tensor<2x2x12x16xf32>
  %dp1 = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%dq2, %v1 : tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>) outs(%dpz1 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x16xf32>
  // dS = P * (dP - rowsum(dP * P))
  %t1 = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%dp1, %p1 : tensor<2x2x12x16xf32>, tensor<2x2x12x16xf32>) outs(%s01 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x16xf32>
  %rz1 = linalg.fill ins(%zero : f32) outs(%r01 : tensor<2x2x12xf32>) -> tensor<2x2x12xf32>
  %rs1 = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%t1 : tensor<2x2x12x16xf32>) outs(%rz1 : tensor<2x2x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12xf32>
  %ds1 = linalg.generic {indexing_maps = [#id4, #id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%p1, %dp1, %rs1 : tensor<2x2x12x16xf32>, tensor<2x2x12x16xf32>, tensor<2x2x12xf32>) outs(%s01 : tensor<2x2x12x16xf32>) {
  ^bb0(%pp: f32, %g: f32, %r: f32, %o: f32):
    %d = arith.subf %g, %r : f32
    %m = arith.mulf %pp, %d : f32
    linalg.yield %m : f32
  } -> tensor<2x2x12x16xf32>
  // backward of S * scale
  %dss1 = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ds1 : tensor<2x2x12x16xf32>) outs(%s01 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x16xf32>
  // dQ = dS K
  %dqz1 = linalg.fill ins(%zero : f32) outs(%q01 : tensor<2x2x12x8xf32>) -> tensor<2x2x12x8xf32>
  %dq1 = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%dss1, %k1 : tensor<2x2x12x16xf32>, tensor<2x2x16x8xf32>) outs(%dqz1 : tensor<2x2x12x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x8xf32>
  // dK = dS^T Q
  %dkz1 = linalg.fill ins(%zero : f32) outs(%kv01 : tensor<2x2x16x8xf32>) -> tensor<2x2x16x8xf32>
  %dk1 = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%dss1, %q : tensor<2x2x12x16xf32>, tensor<2x2x12x8xf32>) outs(%dkz1 : tensor<2x2x16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x16x8xf32>
  return %out2, %dq1, %dk1, %dv1, %dk2, %dv2 : tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x20x8xf32>, tensor<2x2x20x8xf32>
}

// -----

#q = affine_map<(m, n, d) -> (m, d)>
#k = affine_map<(m, n, d) -> (n, d)>
#s = affine_map<(m, n, d) -> (m, n)>
#p2 = affine_map<(m, d, n) -> (m, n)>
#v2 = affine_map<(m, d, n) -> (n, d)>
#o2 = affine_map<(m, d, n) -> (m, d)>
#id = affine_map<(m, n) -> (m, n)>
#row = affine_map<(m, n) -> (m)>
#pt = affine_map<(n, d, m) -> (m, n)>
#dot = affine_map<(n, d, m) -> (m, d)>
#kv = affine_map<(n, d, m) -> (n, d)>
// Single head (rank 2) in named ops: linalg.softmax forward; backward with
// linalg.matmul (transposing maps), linalg.mul/sub/reduce/broadcast and a
// splat-constant scale.
// CHECK-LABEL: func.func @named_softmax
// CHECK-NOT: 12x16
// CHECK: flash.attention
// CHECK-NOT: 12x16
// CHECK: flash.attention_backward
// CHECK-NOT: 12x16
// CHECK: return
func.func @named_softmax(%q: tensor<12x8xf32>, %k: tensor<16x8xf32>, %v: tensor<16x8xf32>, %do: tensor<12x8xf32>) -> (tensor<12x8xf32>, tensor<12x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<12x16xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<12x16xf32>) -> tensor<12x16xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "reduction"]} ins(%q, %k : tensor<12x8xf32>, tensor<16x8xf32>) outs(%sz : tensor<12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<12x16xf32>
  %c = arith.constant 0.125 : f32
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<12x16xf32>) outs(%s0 : tensor<12x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<12x16xf32>
  %p = linalg.softmax dimension(1) ins(%x : tensor<12x16xf32>) outs(%s0 : tensor<12x16xf32>) -> tensor<12x16xf32>
  %o0 = tensor.empty() : tensor<12x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<12x8xf32>) -> tensor<12x8xf32>
  %o = linalg.generic {indexing_maps = [#p2, #v2, #o2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%p, %v : tensor<12x16xf32>, tensor<16x8xf32>) outs(%oz : tensor<12x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<12x8xf32>
  // backward
  %kv0 = tensor.empty() : tensor<16x8xf32>
  %kvz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<16x8xf32>) -> tensor<16x8xf32>
  %dv = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "reduction"]} ins(%p, %do : tensor<12x16xf32>, tensor<12x8xf32>) outs(%kvz : tensor<16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<16x8xf32>
  %dp = linalg.matmul indexing_maps = [affine_map<(m, n, d) -> (m, d)>, affine_map<(m, n, d) -> (n, d)>, affine_map<(m, n, d) -> (m, n)>] ins(%do, %v : tensor<12x8xf32>, tensor<16x8xf32>) outs(%sz : tensor<12x16xf32>) -> tensor<12x16xf32>
  %t = linalg.mul ins(%dp, %p : tensor<12x16xf32>, tensor<12x16xf32>) outs(%s0 : tensor<12x16xf32>) -> tensor<12x16xf32>
  %r0 = tensor.empty() : tensor<12xf32>
  %rz = linalg.fill ins(%zero : f32) outs(%r0 : tensor<12xf32>) -> tensor<12xf32>
  %rs = linalg.reduce { arith.addf } ins(%t : tensor<12x16xf32>) outs(%rz : tensor<12xf32>) dimensions = [1]
  %rsb = linalg.broadcast ins(%rs : tensor<12xf32>) outs(%s0 : tensor<12x16xf32>) dimensions = [1]
  %prs = linalg.mul ins(%p, %rsb : tensor<12x16xf32>, tensor<12x16xf32>) outs(%s0 : tensor<12x16xf32>) -> tensor<12x16xf32>
  %ds = linalg.sub ins(%t, %prs : tensor<12x16xf32>, tensor<12x16xf32>) outs(%s0 : tensor<12x16xf32>) -> tensor<12x16xf32>
  %cs = arith.constant dense<0.125> : tensor<12x16xf32>
  %dss = linalg.mul ins(%ds, %cs : tensor<12x16xf32>, tensor<12x16xf32>) outs(%s0 : tensor<12x16xf32>) -> tensor<12x16xf32>
  %qz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<12x8xf32>) -> tensor<12x8xf32>
  %dq = linalg.matmul ins(%dss, %k : tensor<12x16xf32>, tensor<16x8xf32>) outs(%qz : tensor<12x8xf32>) -> tensor<12x8xf32>
  %dk = linalg.matmul indexing_maps = [affine_map<(n, d, m) -> (m, n)>, affine_map<(n, d, m) -> (m, d)>, affine_map<(n, d, m) -> (n, d)>] ins(%dss, %q : tensor<12x16xf32>, tensor<12x8xf32>) outs(%kvz : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %o, %dq, %dk, %dv : tensor<12x8xf32>, tensor<12x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>
}

// -----

// Grouped-query attention training steps (forward + backward from the saved
// P) in JAX's grouped iteration space, as jax.nn.dot_product_attention /
// flax GQA emit them through stablehlo-to-linalg: (q [B, Hq, M, D], k, v
// [B, Hkv, N, D], do [B, Hq, M, D]) -> (o, dq, dk, dv). Q and dO are
// expanded to [B, Hkv, G, M, D]; K / V are never repeated; dK / dV reduce
// over both g and m.

// G1. B=2, Hkv=2, G=2 (Hq=4), M=10, N=14, D=8, f32, no mask: S = einsum('bhgmd,bhnd->bhgmn') as a 6-loop generic (b,h,g,m,n,d), X = S * 0.353553385 (linalg.map with a splat constant), softmax / its VJP via linalg.reduce/broadcast/map (dX = dP*P - P*sum_n(dP*P)), dS = dX * 0.353553385; dV, dK are generics with two reduction loops (g, m); O, dQ collapsed to [B, Hq, M, D].
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
// CHECK-LABEL: func.func @gqa_joint
// CHECK-NOT: x10x14x
// CHECK: %{{.*}}, %[[LSE:.*]] = flash.attention %arg0, %arg1, %arg2 {{.*}} -> {{.*}}, tensor<2x4x10xf32>
// CHECK-NOT: x10x14x
// CHECK: flash.attention_backward %arg0, %arg1, %arg2, %{{.*}}, %arg3, %[[LSE]]
// CHECK-NOT: x10x14x
// CHECK: return
func.func @gqa_joint(%q: tensor<2x4x10x8xf32>, %k: tensor<2x2x14x8xf32>, %v: tensor<2x2x14x8xf32>, %do: tensor<2x4x10x8xf32>) -> (tensor<2x4x10x8xf32>, tensor<2x4x10x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x14x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %cs = arith.constant dense<0.353553385> : tensor<2x2x2x10x14xf32>
  // forward
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
  // backward (from the saved P)
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
  return %out, %dq, %dk, %dv : tensor<2x4x10x8xf32>, tensor<2x4x10x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x14x8xf32>
}

// -----

// G2. As G1 plus a bottom-right causal mask (keep n <= m + 4 via linalg.index 3 / 4 compare in the generic on S, X = select(keep, S * 0.353553385, -inf)); softmax and VJP via linalg.reduce/broadcast/map; backward select(keep, dX, 0) then * 0.353553385.
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
// CHECK-LABEL: func.func @gqa_causal_joint
// CHECK-NOT: x10x14x
// CHECK: %{{.*}}, %[[LSE:.*]] = flash.attention %arg0, %arg1, %arg2 {{.*}} -> {{.*}}, tensor<2x4x10xf32>
// CHECK-NOT: x10x14x
// CHECK: flash.attention_backward %arg0, %arg1, %arg2, %{{.*}}, %arg3, %[[LSE]]
// CHECK-NOT: x10x14x
// CHECK: return
func.func @gqa_causal_joint(%q: tensor<2x4x10x8xf32>, %k: tensor<2x2x14x8xf32>, %v: tensor<2x2x14x8xf32>, %do: tensor<2x4x10x8xf32>) -> (tensor<2x4x10x8xf32>, tensor<2x4x10x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x14x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 0.353553385 : f32
  %coff = arith.constant 4 : index
  // forward
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
  // X = select(n <= m + 4, S * scale, -inf) (bottom-right causal, iota compare)
  %x = linalg.generic {indexing_maps = [#id5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<2x2x2x10x14xf32>) outs(%s0 : tensor<2x2x2x10x14xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 3 : index
    %j = linalg.index 4 : index
    %last = arith.addi %i, %coff : index
    %keep = arith.cmpi sle, %j, %last : index
    %sc = arith.mulf %a, %c : f32
    %r = arith.select %keep, %sc, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<2x2x2x10x14xf32>
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
  // backward (from the saved P)
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
  // backward of the mask and the scale: dS = select(keep, dX, 0) * scale
  %dm = linalg.generic {indexing_maps = [#id5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%dx : tensor<2x2x2x10x14xf32>) outs(%s0 : tensor<2x2x2x10x14xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 3 : index
    %j = linalg.index 4 : index
    %last = arith.addi %i, %coff : index
    %keep = arith.cmpi sle, %j, %last : index
    %r = arith.select %keep, %a, %zero : f32
    linalg.yield %r : f32
  } -> tensor<2x2x2x10x14xf32>
  %ds = linalg.generic {indexing_maps = [#id5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%dm : tensor<2x2x2x10x14xf32>) outs(%s0 : tensor<2x2x2x10x14xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<2x2x2x10x14xf32>
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
  return %out, %dq, %dk, %dv : tensor<2x4x10x8xf32>, tensor<2x4x10x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x14x8xf32>
}

// -----

// G3. Long causal GQA: B=1, Hkv=2, G=2 (Hq=4), M=200, N=333, D=16 (keep n <= m + 133), S * 0.25; softmax and its VJP as generics over (b,h,g,m,n); backward select(keep, dX, 0) then * 0.25; dV, dK with two reduction loops (g, m).
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
// CHECK-LABEL: func.func @gqa_causal_200x333_joint
// CHECK-NOT: x200x333x
// CHECK: %{{.*}}, %[[LSE:.*]] = flash.attention %arg0, %arg1, %arg2 {{.*}} -> {{.*}}, tensor<1x4x200xf32>
// CHECK-NOT: x200x333x
// CHECK: flash.attention_backward %arg0, %arg1, %arg2, %{{.*}}, %arg3, %[[LSE]]
// CHECK-NOT: x200x333x
// CHECK: return
func.func @gqa_causal_200x333_joint(%q: tensor<1x4x200x16xf32>, %k: tensor<1x2x333x16xf32>, %v: tensor<1x2x333x16xf32>, %do: tensor<1x4x200x16xf32>) -> (tensor<1x4x200x16xf32>, tensor<1x4x200x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x333x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 2.500000e-01 : f32
  %coff = arith.constant 133 : index
  // forward
  // Q [B, Hq, M, D] -> [B, Hkv, G, M, D] (Hq = 4 = 2 * 2); K / V stay [B, Hkv, N, D]
  %q5 = tensor.expand_shape %q [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 200, 16] : tensor<1x4x200x16xf32> into tensor<1x2x2x200x16xf32>
  %s0 = tensor.empty() : tensor<1x2x2x200x333xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<1x2x2x200x333xf32>) -> tensor<1x2x2x200x333xf32>
  // S = einsum('bhgmd,bhnd->bhgmn', Q5, K)
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q5, %k : tensor<1x2x2x200x16xf32>, tensor<1x2x333x16xf32>) outs(%sz : tensor<1x2x2x200x333xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x2x200x333xf32>
  // X = select(n <= m + 133, S * scale, -inf) (bottom-right causal, iota compare)
  %x = linalg.generic {indexing_maps = [#id5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<1x2x2x200x333xf32>) outs(%s0 : tensor<1x2x2x200x333xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 3 : index
    %j = linalg.index 4 : index
    %last = arith.addi %i, %coff : index
    %keep = arith.cmpi sle, %j, %last : index
    %sc = arith.mulf %a, %c : f32
    %r = arith.select %keep, %sc, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<1x2x2x200x333xf32>
  // P = softmax over n (max-subtracted)
  %r0 = tensor.empty() : tensor<1x2x2x200xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<1x2x2x200xf32>) -> tensor<1x2x2x200xf32>
  %li = linalg.fill ins(%zero : f32) outs(%r0 : tensor<1x2x2x200xf32>) -> tensor<1x2x2x200xf32>
  %mx = linalg.generic {indexing_maps = [#id5, #row5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%x : tensor<1x2x2x200x333xf32>) outs(%mi : tensor<1x2x2x200xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x2x2x200xf32>
  %e = linalg.generic {indexing_maps = [#id5, #row5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%x, %mx : tensor<1x2x2x200x333xf32>, tensor<1x2x2x200xf32>) outs(%s0 : tensor<1x2x2x200x333xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<1x2x2x200x333xf32>
  %l = linalg.generic {indexing_maps = [#id5, #row5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%e : tensor<1x2x2x200x333xf32>) outs(%li : tensor<1x2x2x200xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x2x2x200xf32>
  %p = linalg.generic {indexing_maps = [#id5, #row5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%e, %l : tensor<1x2x2x200x333xf32>, tensor<1x2x2x200xf32>) outs(%s0 : tensor<1x2x2x200x333xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<1x2x2x200x333xf32>
  %o0 = tensor.empty() : tensor<1x2x2x200x16xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<1x2x2x200x16xf32>) -> tensor<1x2x2x200x16xf32>
  // O5 = einsum('bhgmn,bhnd->bhgmd', P, V)
  %o5 = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<1x2x2x200x333xf32>, tensor<1x2x333x16xf32>) outs(%oz : tensor<1x2x2x200x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x2x200x16xf32>
  %out = tensor.collapse_shape %o5 [[0], [1, 2], [3], [4]] : tensor<1x2x2x200x16xf32> into tensor<1x4x200x16xf32>
  // backward (from the saved P)
  %do5 = tensor.expand_shape %do [[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 200, 16] : tensor<1x4x200x16xf32> into tensor<1x2x2x200x16xf32>
  %kv0 = tensor.empty() : tensor<1x2x333x16xf32>
  %dvz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<1x2x333x16xf32>) -> tensor<1x2x333x16xf32>
  // dV = einsum('bhgmn,bhgmd->bhnd', P, dO5) (reduction over g and m)
  %dv = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%p, %do5 : tensor<1x2x2x200x333xf32>, tensor<1x2x2x200x16xf32>) outs(%dvz : tensor<1x2x333x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x333x16xf32>
  %dpz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<1x2x2x200x333xf32>) -> tensor<1x2x2x200x333xf32>
  // dP = einsum('bhgmd,bhnd->bhgmn', dO5, V)
  %dp = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%do5, %v : tensor<1x2x2x200x16xf32>, tensor<1x2x333x16xf32>) outs(%dpz : tensor<1x2x2x200x333xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x2x200x333xf32>
  // softmax VJP: t = dP * P; dX = t - P * sum_n(t)
  %tz = linalg.fill ins(%zero : f32) outs(%r0 : tensor<1x2x2x200xf32>) -> tensor<1x2x2x200xf32>
  %t = linalg.generic {indexing_maps = [#id5, #id5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%dp, %p : tensor<1x2x2x200x333xf32>, tensor<1x2x2x200x333xf32>) outs(%s0 : tensor<1x2x2x200x333xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x2x2x200x333xf32>
  %ts = linalg.generic {indexing_maps = [#id5, #row5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%t : tensor<1x2x2x200x333xf32>) outs(%tz : tensor<1x2x2x200xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<1x2x2x200xf32>
  %dx = linalg.generic {indexing_maps = [#id5, #id5, #row5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%t, %p, %ts : tensor<1x2x2x200x333xf32>, tensor<1x2x2x200x333xf32>, tensor<1x2x2x200xf32>) outs(%s0 : tensor<1x2x2x200x333xf32>) {
  ^bb0(%tt: f32, %pp: f32, %r: f32, %o: f32):
    %m = arith.mulf %pp, %r : f32
    %d = arith.subf %tt, %m : f32
    linalg.yield %d : f32
  } -> tensor<1x2x2x200x333xf32>
  // backward of the mask and the scale: dS = select(keep, dX, 0) * scale
  %dm = linalg.generic {indexing_maps = [#id5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%dx : tensor<1x2x2x200x333xf32>) outs(%s0 : tensor<1x2x2x200x333xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 3 : index
    %j = linalg.index 4 : index
    %last = arith.addi %i, %coff : index
    %keep = arith.cmpi sle, %j, %last : index
    %r = arith.select %keep, %a, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1x2x2x200x333xf32>
  %ds = linalg.generic {indexing_maps = [#id5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%dm : tensor<1x2x2x200x333xf32>) outs(%s0 : tensor<1x2x2x200x333xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<1x2x2x200x333xf32>
  %dqz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<1x2x2x200x16xf32>) -> tensor<1x2x2x200x16xf32>
  // dQ5 = einsum('bhgmn,bhnd->bhgmd', dS, K)
  %dq5 = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%ds, %k : tensor<1x2x2x200x333xf32>, tensor<1x2x333x16xf32>) outs(%dqz : tensor<1x2x2x200x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x2x200x16xf32>
  %dq = tensor.collapse_shape %dq5 [[0], [1, 2], [3], [4]] : tensor<1x2x2x200x16xf32> into tensor<1x4x200x16xf32>
  %dkz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<1x2x333x16xf32>) -> tensor<1x2x333x16xf32>
  // dK = einsum('bhgmn,bhgmd->bhnd', dS, Q5) (reduction over g and m)
  %dk = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%ds, %q5 : tensor<1x2x2x200x333xf32>, tensor<1x2x2x200x16xf32>) outs(%dkz : tensor<1x2x333x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<1x2x333x16xf32>
  return %out, %dq, %dk, %dv : tensor<1x4x200x16xf32>, tensor<1x4x200x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x333x16xf32>
}

// -----

// T4. torch-mlir style as 1a ([B*H, S, D] linalg.batch_matmul + linalg.transpose, softmax as generics) but B=1, H=2, M=200, N=333, D=16, S / 4.0, bottom-right causal on the [B*H, M, N] scores via linalg.index 1 / 2 (keep n <= m + 133, select -inf); backward dS = P * (dP - rowsum(dP * P)), then select(keep, dS, 0) / 4.0; dK = transpose(bmm(Q^T, dS)). The causal diagonal is read through the transposed K (its key length is N = 333, not D).
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
// CHECK-LABEL: func.func @torch_causal_200x333_joint
// CHECK-NOT: x200x333x
// CHECK: flash.attention {{.*}}causal
// CHECK-NOT: x200x333x
// CHECK: flash.attention_backward {{.*}}causal
// CHECK-NOT: x200x333x
// CHECK: return
func.func @torch_causal_200x333_joint(%q: tensor<1x2x200x16xf32>, %k: tensor<1x2x333x16xf32>, %v: tensor<1x2x333x16xf32>, %do: tensor<1x2x200x16xf32>) -> (tensor<1x2x200x16xf32>, tensor<1x2x200x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x333x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 4.000000e+00 : f32
  %c133 = arith.constant 133 : index
  %q3 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<1x2x200x16xf32> into tensor<2x200x16xf32>
  %k3 = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<1x2x333x16xf32> into tensor<2x333x16xf32>
  %v3 = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<1x2x333x16xf32> into tensor<2x333x16xf32>
  %do3 = tensor.collapse_shape %do [[0, 1], [2], [3]] : tensor<1x2x200x16xf32> into tensor<2x200x16xf32>
  // forward
  %kt0 = tensor.empty() : tensor<2x16x333xf32>
  %kt = linalg.transpose ins(%k3 : tensor<2x333x16xf32>) outs(%kt0 : tensor<2x16x333xf32>) permutation = [0, 2, 1]
  %s0 = tensor.empty() : tensor<2x200x333xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x200x333xf32>) -> tensor<2x200x333xf32>
  %s = linalg.batch_matmul ins(%q3, %kt : tensor<2x200x16xf32>, tensor<2x16x333xf32>) outs(%sz : tensor<2x200x333xf32>) -> tensor<2x200x333xf32>
  %x = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<2x200x333xf32>) outs(%s0 : tensor<2x200x333xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %last = arith.addi %i, %c133 : index
    %keep = arith.cmpi sle, %j, %last : index
    %sc = arith.divf %a, %c : f32
    %r = arith.select %keep, %sc, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<2x200x333xf32>
  %m0 = tensor.empty() : tensor<2x200x1xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%m0 : tensor<2x200x1xf32>) -> tensor<2x200x1xf32>
  %mx = linalg.generic {indexing_maps = [#map3, #row3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<2x200x333xf32>) outs(%mi : tensor<2x200x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x200x1xf32>
  %e = linalg.generic {indexing_maps = [#map3, #row3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %mx : tensor<2x200x333xf32>, tensor<2x200x1xf32>) outs(%s0 : tensor<2x200x333xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<2x200x333xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%m0 : tensor<2x200x1xf32>) -> tensor<2x200x1xf32>
  %l = linalg.generic {indexing_maps = [#map3, #row3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%e : tensor<2x200x333xf32>) outs(%l0 : tensor<2x200x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x200x1xf32>
  %p = linalg.generic {indexing_maps = [#map3, #row3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%e, %l : tensor<2x200x333xf32>, tensor<2x200x1xf32>) outs(%s0 : tensor<2x200x333xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<2x200x333xf32>
  %o0 = tensor.empty() : tensor<2x200x16xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x200x16xf32>) -> tensor<2x200x16xf32>
  %o3 = linalg.batch_matmul ins(%p, %v3 : tensor<2x200x333xf32>, tensor<2x333x16xf32>) outs(%oz : tensor<2x200x16xf32>) -> tensor<2x200x16xf32>
  // backward
  // dV = bmm(P^T, dO)
  %pt0 = tensor.empty() : tensor<2x333x200xf32>
  %pt = linalg.transpose ins(%p : tensor<2x200x333xf32>) outs(%pt0 : tensor<2x333x200xf32>) permutation = [0, 2, 1]
  %dv0 = tensor.empty() : tensor<2x333x16xf32>
  %dvz = linalg.fill ins(%zero : f32) outs(%dv0 : tensor<2x333x16xf32>) -> tensor<2x333x16xf32>
  %dv3 = linalg.batch_matmul ins(%pt, %do3 : tensor<2x333x200xf32>, tensor<2x200x16xf32>) outs(%dvz : tensor<2x333x16xf32>) -> tensor<2x333x16xf32>
  // dP = bmm(dO, V^T)
  %vt0 = tensor.empty() : tensor<2x16x333xf32>
  %vt = linalg.transpose ins(%v3 : tensor<2x333x16xf32>) outs(%vt0 : tensor<2x16x333xf32>) permutation = [0, 2, 1]
  %dpz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x200x333xf32>) -> tensor<2x200x333xf32>
  %dp = linalg.batch_matmul ins(%do3, %vt : tensor<2x200x16xf32>, tensor<2x16x333xf32>) outs(%dpz : tensor<2x200x333xf32>) -> tensor<2x200x333xf32>
  // _softmax_backward_data(dP, P): dS = P * (dP - sum(dP * P, -1, keepdim))
  %t = linalg.generic {indexing_maps = [#map3, #map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%dp, %p : tensor<2x200x333xf32>, tensor<2x200x333xf32>) outs(%s0 : tensor<2x200x333xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.mulf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x200x333xf32>
  %rz = linalg.fill ins(%zero : f32) outs(%m0 : tensor<2x200x1xf32>) -> tensor<2x200x1xf32>
  %rs = linalg.generic {indexing_maps = [#map3, #row3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%t : tensor<2x200x333xf32>) outs(%rz : tensor<2x200x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x200x1xf32>
  %ds = linalg.generic {indexing_maps = [#map3, #map3, #row3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%p, %dp, %rs : tensor<2x200x333xf32>, tensor<2x200x333xf32>, tensor<2x200x1xf32>) outs(%s0 : tensor<2x200x333xf32>) {
  ^bb0(%pp: f32, %g: f32, %r: f32, %o: f32):
    %d = arith.subf %g, %r : f32
    %m = arith.mulf %pp, %d : f32
    linalg.yield %m : f32
  } -> tensor<2x200x333xf32>
  // backward of masked_fill / where(keep, S / sqrt(D), -inf): where(keep, dS, 0) / sqrt(D)
  %dss = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%ds : tensor<2x200x333xf32>) outs(%s0 : tensor<2x200x333xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %last = arith.addi %i, %c133 : index
    %keep = arith.cmpi sle, %j, %last : index
    %g = arith.select %keep, %a, %zero : f32
    %d = arith.divf %g, %c : f32
    linalg.yield %d : f32
  } -> tensor<2x200x333xf32>
  // dQ = bmm(dS, K)
  %dq0 = tensor.empty() : tensor<2x200x16xf32>
  %dqz = linalg.fill ins(%zero : f32) outs(%dq0 : tensor<2x200x16xf32>) -> tensor<2x200x16xf32>
  %dq3 = linalg.batch_matmul ins(%dss, %k3 : tensor<2x200x333xf32>, tensor<2x333x16xf32>) outs(%dqz : tensor<2x200x16xf32>) -> tensor<2x200x16xf32>
  // dK^T = bmm(Q^T, dS), dK = transpose(dK^T)
  %qt0 = tensor.empty() : tensor<2x16x200xf32>
  %qt = linalg.transpose ins(%q3 : tensor<2x200x16xf32>) outs(%qt0 : tensor<2x16x200xf32>) permutation = [0, 2, 1]
  %dktz = linalg.fill ins(%zero : f32) outs(%kt0 : tensor<2x16x333xf32>) -> tensor<2x16x333xf32>
  %dkt = linalg.batch_matmul ins(%qt, %dss : tensor<2x16x200xf32>, tensor<2x200x333xf32>) outs(%dktz : tensor<2x16x333xf32>) -> tensor<2x16x333xf32>
  %dk30 = tensor.empty() : tensor<2x333x16xf32>
  %dk3 = linalg.transpose ins(%dkt : tensor<2x16x333xf32>) outs(%dk30 : tensor<2x333x16xf32>) permutation = [0, 2, 1]
  %o4 = tensor.expand_shape %o3 [[0, 1], [2], [3]] output_shape [1, 2, 200, 16] : tensor<2x200x16xf32> into tensor<1x2x200x16xf32>
  %dq = tensor.expand_shape %dq3 [[0, 1], [2], [3]] output_shape [1, 2, 200, 16] : tensor<2x200x16xf32> into tensor<1x2x200x16xf32>
  %dk = tensor.expand_shape %dk3 [[0, 1], [2], [3]] output_shape [1, 2, 333, 16] : tensor<2x333x16xf32> into tensor<1x2x333x16xf32>
  %dv = tensor.expand_shape %dv3 [[0, 1], [2], [3]] output_shape [1, 2, 333, 16] : tensor<2x333x16xf32> into tensor<1x2x333x16xf32>
  return %o4, %dq, %dk, %dv : tensor<1x2x200x16xf32>, tensor<1x2x200x16xf32>, tensor<1x2x333x16xf32>, tensor<1x2x333x16xf32>
}

// -----

// T6. Joint with the loss gradient inside the step: rank-4 generics, S * 0.353553385, torch's dS; dO = 2 * (O - target) (d/dO of sum((O - target)^2)) computed from the forward's O and the entry argument %target, so the backward's dO depends on O.
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
#id4q = affine_map<(b, h, m, d) -> (b, h, m, d)>
// CHECK-LABEL: func.func @mse_joint
// CHECK-NOT: x12x16x
// CHECK: %[[O:.*]], %[[LSE:.*]] = flash.attention %arg0, %arg1, %arg2
// The loss gradient 2 (O - target) is computed from the fused forward's O.
// CHECK: %[[DO:.*]] = linalg.generic {{.*}} ins(%[[O]], %arg3
// CHECK: flash.attention_backward %arg0, %arg1, %arg2, %[[O]], %[[DO]], %[[LSE]]
// CHECK-NOT: x12x16x
// CHECK: return
func.func @mse_joint(%q: tensor<2x2x12x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>, %target: tensor<2x2x12x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 0.353553385 : f32
  %two = arith.constant 2.0 : f32
  // forward
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
  // loss gradient: dO = 2 * (O - target)
  %do = linalg.generic {indexing_maps = [#id4q, #id4q, #id4q], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%out, %target : tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>) outs(%q0 : tensor<2x2x12x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = arith.mulf %d, %two : f32
    linalg.yield %r : f32
  } -> tensor<2x2x12x8xf32>
  // backward
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
  return %out, %dq, %dk, %dv : tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>
}
