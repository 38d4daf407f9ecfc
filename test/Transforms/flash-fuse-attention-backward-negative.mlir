// RUN: flash-opt %s --flash-fuse-attention-backward -split-input-file | FileCheck %s
// RUN: %python -m flash_mlir.fusion_check %s --fuse=--flash-fuse-attention-backward --expect unfused | FileCheck %s --check-prefix=EXEC
// RUN: flash-opt %s --flash-fuse-attention-backward=report=true -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// Training graphs that must keep their saved P: it has another user, or
// the backward is a look-alike that is not the softmax gradient.
// EXEC-NOT: FAIL
// EXEC: fusion_check: 0 failure(s)
// REPORT: remark: backward not fused: P is also used by func.return, which is not part of its gradient
// REPORT: remark: backward not fused: a contraction's input is not the softmax gradient P (dP - rowsum(P dP))
// REPORT: remark: backward not fused: the softmax gradient does not read exactly one dP
// REPORT: remark: backward not fused: P is used at a call site by func.return, not by a backward function
// REPORT: remark: backward not fused: the gradient is zeroed where the forward does not mask
// REPORT: remark: backward not fused: dP = dO Vᵀ does not read the forward's V
// REPORT: remark: backward not fused: dS K does not read the forward's K
// REPORT: remark: backward not fused: the backward function is also called without a forward's P


// Na. Joint rank-4 graph (as 1c without the mask, S * 0.353553385) that also returns the saved P: P has a use besides the backward, so it must stay materialised.
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
// CHECK-LABEL: func.func @neg_p_returned
// CHECK-NOT: flash.
// CHECK: linalg.generic
func.func @neg_p_returned(%q: tensor<2x2x12x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>, %do: tensor<2x2x12x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x12x16xf32>) {
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
  return %out, %dq, %dk, %dv, %p : tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x12x16xf32>
}

// -----

// Nb. Look-alike backward: dS = P * dP, the - rowsum(dP * P) term is missing (not the softmax gradient).
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
// CHECK-LABEL: func.func @neg_ds_no_rowsum
// CHECK-NOT: flash.
// CHECK: linalg.generic
func.func @neg_ds_no_rowsum(%q: tensor<2x2x12x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>, %do: tensor<2x2x12x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) {
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
  // look-alike: dS = P * dP (no rowsum(dP * P) term)
  %ds = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%p, %dp : tensor<2x2x12x16xf32>, tensor<2x2x12x16xf32>) outs(%s0 : tensor<2x2x12x16xf32>) {
  ^bb0(%pp: f32, %g: f32, %o: f32):
    %m = arith.mulf %pp, %g : f32
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

// -----

// Nc. Look-alike backward: dS = P * (dP - rowsum(dP)), the row sum is over dP instead of dP * P.
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
// CHECK-LABEL: func.func @neg_ds_rowsum_of_dp
// CHECK-NOT: flash.
// CHECK: linalg.generic
func.func @neg_ds_rowsum_of_dp(%q: tensor<2x2x12x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>, %do: tensor<2x2x12x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) {
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
  // look-alike: dS = P * (dP - rowsum(dP)) (rowsum of dP, not of dP * P)
  %rz = linalg.fill ins(%zero : f32) outs(%r0 : tensor<2x2x12xf32>) -> tensor<2x2x12xf32>
  %rs = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%dp : tensor<2x2x12x16xf32>) outs(%rz : tensor<2x2x12xf32>) {
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

// -----

// Nd. Split torch-style case (as S1) whose entry also returns the P produced by the forward call, next to passing it to the backward call.
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
// CHECK-LABEL: func.func @neg_split_p_returned
// CHECK-NOT: flash.
// CHECK: call @attn_fwd_neg({{.*}}) -> (tensor<2x2x16x8xf32>, tensor<4x16x20xf32>)
func.func @neg_split_p_returned(%q: tensor<2x2x16x8xf32>, %k: tensor<2x2x20x8xf32>, %v: tensor<2x2x20x8xf32>, %do: tensor<2x2x16x8xf32>) -> (tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x20x8xf32>, tensor<2x2x20x8xf32>, tensor<4x16x20xf32>) {
  %o, %p = call @attn_fwd_neg(%q, %k, %v) : (tensor<2x2x16x8xf32>, tensor<2x2x20x8xf32>, tensor<2x2x20x8xf32>) -> (tensor<2x2x16x8xf32>, tensor<4x16x20xf32>)
  %dq, %dk, %dv = call @attn_bwd_neg(%q, %k, %v, %p, %do) : (tensor<2x2x16x8xf32>, tensor<2x2x20x8xf32>, tensor<2x2x20x8xf32>, tensor<4x16x20xf32>, tensor<2x2x16x8xf32>) -> (tensor<2x2x16x8xf32>, tensor<2x2x20x8xf32>, tensor<2x2x20x8xf32>)
  return %o, %dq, %dk, %dv, %p : tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x20x8xf32>, tensor<2x2x20x8xf32>, tensor<4x16x20xf32>
}

func.func private @attn_fwd_neg(%q: tensor<2x2x16x8xf32>, %k: tensor<2x2x20x8xf32>, %v: tensor<2x2x20x8xf32>) -> (tensor<2x2x16x8xf32>, tensor<4x16x20xf32>) {
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

func.func private @attn_bwd_neg(%q: tensor<2x2x16x8xf32>, %k: tensor<2x2x20x8xf32>, %v: tensor<2x2x20x8xf32>, %p: tensor<4x16x20xf32>, %do: tensor<2x2x16x8xf32>) -> (tensor<2x2x16x8xf32>, tensor<2x2x20x8xf32>, tensor<2x2x20x8xf32>) {
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

// NB1. Forward keeps the bottom-right causal band j <= i + 4 (M = 12, N = 16), S * 0.353553385; the backward zeroes dS with select(j <= i + 2, dS, 0), i.e. more than the forward masks.
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
// CHECK-LABEL: func.func @neg_bwd_mask_tighter
// CHECK-NOT: flash.
// CHECK: linalg.generic
func.func @neg_bwd_mask_tighter(%q: tensor<2x2x12x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>, %do: tensor<2x2x12x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 0.353553385 : f32
  %c2 = arith.constant 2 : index
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
  // select(j <= i + 2, dS, 0) * scale: zeroes j = i + 3, i + 4 too, which the forward keeps
  %dss = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%ds : tensor<2x2x12x16xf32>) outs(%s0 : tensor<2x2x12x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %last = arith.addi %i, %c2 : index
    %keep = arith.cmpi sle, %j, %last : index
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

// NB2. Look-alike: dP = dO Kᵀ instead of dO Vᵀ (K and V have the same shape [2, 2, 16, 8]); rank-4 generics, no mask, S * 0.353553385, torch's dS.
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
// CHECK-LABEL: func.func @neg_dp_reads_k
// CHECK-NOT: flash.
// CHECK: linalg.generic
func.func @neg_dp_reads_k(%q: tensor<2x2x12x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>, %do: tensor<2x2x12x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) {
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
  // dP = dO K^T
  %dpz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x2x12x16xf32>) -> tensor<2x2x12x16xf32>
  %dp = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%do, %k : tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>) outs(%dpz : tensor<2x2x12x16xf32>) {
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

// -----

// NB3. Look-alike: "dQ" = dS V instead of dS K; otherwise as NB2 with the right dP, S * 0.353553385.
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
// CHECK-LABEL: func.func @neg_dq_reads_v
// CHECK-NOT: flash.
// CHECK: linalg.generic
func.func @neg_dq_reads_v(%q: tensor<2x2x12x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>, %do: tensor<2x2x12x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) {
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
  // dQ = dS V
  %dqz = linalg.fill ins(%zero : f32) outs(%q0 : tensor<2x2x12x8xf32>) -> tensor<2x2x12x8xf32>
  %dq = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%dss, %v : tensor<2x2x12x16xf32>, tensor<2x2x16x8xf32>) outs(%dqz : tensor<2x2x12x8xf32>) {
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

// NB4. Split rank-4 case (as S3 in natural operand order): the entry calls @attn_bwd_twice once with the forward's P and once with a separately passed tensor %p2, returning that call's dq as a fifth result.
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
func.func @neg_split_bwd_other_p(%q: tensor<2x2x12x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>, %do: tensor<2x2x12x8xf32>, %p2: tensor<2x2x12x16xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x12x8xf32>) {
  %o, %p = call @attn_fwd_twice(%q, %k, %v) : (tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x12x16xf32>)
  %dq, %dk, %dv = call @attn_bwd_twice(%q, %k, %v, %p, %do) : (tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x12x16xf32>, tensor<2x2x12x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>)
  %dq2, %dk2, %dv2 = call @attn_bwd_twice(%q, %k, %v, %p2, %do) : (tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x12x16xf32>, tensor<2x2x12x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>)
  return %o, %dq, %dk, %dv, %dq2 : tensor<2x2x12x8xf32>, tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x12x8xf32>
}

func.func private @attn_fwd_twice(%q: tensor<2x2x12x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x12x16xf32>) {
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

func.func private @attn_bwd_twice(%q: tensor<2x2x12x8xf32>, %k: tensor<2x2x16x8xf32>, %v: tensor<2x2x16x8xf32>, %p: tensor<2x2x12x16xf32>, %do: tensor<2x2x12x8xf32>) -> (tensor<2x2x12x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>) {
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
