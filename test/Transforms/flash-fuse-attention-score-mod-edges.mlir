// Edge cases of score_mod fusion (found by review): each runs unfused and fused
// on the CPU.
// - @fold: a rank-3 [B*H, M, D] attention whose operands are collapsed from
//   [B, H, M, D] folds to rank 4; the region's h (the collapsed index) becomes
//   b * H + h.
// - @transposed, @twofactors, @rtinside: P in [B, M, H, N] order; the scale
//   peeled from tanh(S * 0.1) * 10 + S * 0.05 with a pre-scaled K; a run-time
//   scalar inside the modification.
// - @cmpi_bool: an i1 comparison with a constant `true` inside a computed bias
//   (the constant takes the i1 type, and is not sign-extended).
// - @deep_dag: y_{k+1} = y_k + tanh(y_k) over 34 levels fuses without walking
//   the shared nodes once per path (it hung; so did the search for an
//   exponential in it, Inputs/deep-dag-no-exp.mlir).
// RUN: flash-opt %s -split-input-file --flash-fuse-attention --canonicalize | FileCheck %s
// RUN: %python -m flash_mlir.fusion_check %s --expect fused | FileCheck %s --check-prefix=NUM
// RUN: timeout 20 flash-opt %S/Inputs/deep-dag-no-exp.mlir --flash-tosa-to-attention -o /dev/null
// RUN: timeout 20 flash-opt %S/Inputs/deep-dag-no-exp.mlir --flash-fuse-attention=report=true -o /dev/null
// NUM-NOT: FAIL
// NUM: fusion_check: 0 failure(s)

// CHECK-LABEL: func @fold
// CHECK: flash.attention {{.*}} : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x2x8x4xf32> score_mod {
// CHECK-NEXT: ^bb0(%{{.*}}: f32, %[[B:.*]]: index, %[[H:.*]]: index, %{{.*}}: index, %{{.*}}: index):
// CHECK: %[[T:.*]] = arith.muli %[[B]], %{{.*}} : index
// CHECK: %[[X:.*]] = arith.addi %[[T]], %[[H]] : index
// CHECK: tensor.extract %arg3[%[[X]]] : tensor<4xf32>
#q3 = affine_map<(x, m, n, d) -> (x, m, d)>
#k3 = affine_map<(x, m, n, d) -> (x, n, d)>
#s3 = affine_map<(x, m, n, d) -> (x, m, n)>
#id3 = affine_map<(x, m, n) -> (x, m, n)>
#x3 = affine_map<(x, m, n) -> (x)>
#pp = affine_map<(x, m, d, n) -> (x, m, n)>
#pv = affine_map<(x, m, d, n) -> (x, n, d)>
#po = affine_map<(x, m, d, n) -> (x, m, d)>
func.func @fold(%q4: tensor<2x2x8x4xf32>, %k4: tensor<2x2x8x4xf32>, %v4: tensor<2x2x8x4xf32>, %t: tensor<4xf32>) -> tensor<4x8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %q = tensor.collapse_shape %q4 [[0, 1], [2], [3]] : tensor<2x2x8x4xf32> into tensor<4x8x4xf32>
  %k = tensor.collapse_shape %k4 [[0, 1], [2], [3]] : tensor<2x2x8x4xf32> into tensor<4x8x4xf32>
  %v = tensor.collapse_shape %v4 [[0, 1], [2], [3]] : tensor<2x2x8x4xf32> into tensor<4x8x4xf32>
  %e = tensor.empty() : tensor<4x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %qk = linalg.generic {indexing_maps = [#q3, #k3, #s3], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<4x8x4xf32>, tensor<4x8x4xf32>) outs(%f : tensor<4x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<4x8x8xf32>
  %biased = linalg.generic {indexing_maps = [#id3, #x3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%qk, %t : tensor<4x8x8xf32>, tensor<4xf32>) outs(%e : tensor<4x8x8xf32>) {
  ^bb0(%s: f32, %sl: f32, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %d = arith.subi %j, %i : index
    %d64 = arith.index_cast %d : index to i64
    %df = arith.sitofp %d64 : i64 to f32
    %m = arith.mulf %sl, %df : f32
    %r = arith.addf %s, %m : f32
    linalg.yield %r : f32
  } -> tensor<4x8x8xf32>
  %sm = linalg.softmax dimension(2) ins(%biased : tensor<4x8x8xf32>) outs(%e : tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %eo = tensor.empty() : tensor<4x8x4xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<4x8x4xf32>) -> tensor<4x8x4xf32>
  %o = linalg.generic {indexing_maps = [#pp, #pv, #po], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%sm, %v : tensor<4x8x8xf32>, tensor<4x8x4xf32>) outs(%fo : tensor<4x8x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<4x8x4xf32>
  return %o : tensor<4x8x4xf32>
}

// -----

#q4 = affine_map<(b, m, h, n, d) -> (b, m, h, d)>
#k4 = affine_map<(b, m, h, n, d) -> (b, n, h, d)>
#s4 = affine_map<(b, m, h, n, d) -> (b, m, h, n)>
#id4 = affine_map<(b, m, h, n) -> (b, m, h, n)>
#h4 = affine_map<(b, m, h, n) -> (h)>
#pp = affine_map<(b, m, h, d, n) -> (b, m, h, n)>
#pv = affine_map<(b, m, h, d, n) -> (b, n, h, d)>
#po = affine_map<(b, m, h, d, n) -> (b, m, h, d)>
#kd = affine_map<(b, n, h, d) -> (b, n, h, d)>
func.func @transposed(%q: tensor<2x7x3x4xf32>, %k: tensor<2x8x3x4xf32>, %v: tensor<2x8x3x4xf32>, %t: tensor<3xf32>) -> tensor<2x7x3x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x7x3x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x7x3x8xf32>) -> tensor<2x7x3x8xf32>
  %qk = linalg.generic {indexing_maps = [#q4, #k4, #s4], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x7x3x4xf32>, tensor<2x8x3x4xf32>) outs(%f : tensor<2x7x3x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<2x7x3x8xf32>
  %x = linalg.generic {indexing_maps = [#id4, #h4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk, %t : tensor<2x7x3x8xf32>, tensor<3xf32>) outs(%e : tensor<2x7x3x8xf32>) {
  ^bb0(%s: f32, %sl: f32, %out: f32):
    %b = linalg.index 0 : index
    %i = linalg.index 1 : index
    %j = linalg.index 3 : index
    %d = arith.subi %j, %i : index
    %d2 = arith.addi %d, %b : index
    %d64 = arith.index_cast %d2 : index to i64
    %df = arith.sitofp %d64 : i64 to f32
    %m = arith.mulf %sl, %df : f32
    %r = arith.addf %s, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x7x3x8xf32>
  %sm = linalg.softmax dimension(3) ins(%x : tensor<2x7x3x8xf32>) outs(%e : tensor<2x7x3x8xf32>) -> tensor<2x7x3x8xf32>
  %eo = tensor.empty() : tensor<2x7x3x4xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x7x3x4xf32>) -> tensor<2x7x3x4xf32>
  %o = linalg.generic {indexing_maps = [#pp, #pv, #po], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%sm, %v : tensor<2x7x3x8xf32>, tensor<2x8x3x4xf32>) outs(%fo : tensor<2x7x3x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<2x7x3x4xf32>
  return %o : tensor<2x7x3x4xf32>
}

// -----
#q4 = affine_map<(b, m, h, n, d) -> (b, m, h, d)>
#k4 = affine_map<(b, m, h, n, d) -> (b, n, h, d)>
#s4 = affine_map<(b, m, h, n, d) -> (b, m, h, n)>
#id4 = affine_map<(b, m, h, n) -> (b, m, h, n)>
#h4 = affine_map<(b, m, h, n) -> (h)>
#pp = affine_map<(b, m, h, d, n) -> (b, m, h, n)>
#pv = affine_map<(b, m, h, d, n) -> (b, n, h, d)>
#po = affine_map<(b, m, h, d, n) -> (b, m, h, d)>
#kd = affine_map<(b, n, h, d) -> (b, n, h, d)>
func.func @twofactors(%q: tensor<2x7x3x4xf32>, %k: tensor<2x8x3x4xf32>, %v: tensor<2x8x3x4xf32>) -> tensor<2x7x3x4xf32> {
  %zero = arith.constant 0.0 : f32
  %eK = tensor.empty() : tensor<2x8x3x4xf32>
  %ks = linalg.generic {indexing_maps = [#kd, #kd], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%k : tensor<2x8x3x4xf32>) outs(%eK : tensor<2x8x3x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %half = arith.constant 0.5 : f32
    %r = arith.mulf %a, %half : f32
    linalg.yield %r : f32
  } -> tensor<2x8x3x4xf32>
  %e = tensor.empty() : tensor<2x7x3x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x7x3x8xf32>) -> tensor<2x7x3x8xf32>
  %qk = linalg.generic {indexing_maps = [#q4, #k4, #s4], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %ks : tensor<2x7x3x4xf32>, tensor<2x8x3x4xf32>) outs(%f : tensor<2x7x3x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<2x7x3x8xf32>
  %x = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk : tensor<2x7x3x8xf32>) outs(%e : tensor<2x7x3x8xf32>) {
  ^bb0(%s: f32, %out: f32):
    %c1 = arith.constant 0.1 : f32
    %c2 = arith.constant 10.0 : f32
    %c3 = arith.constant 0.05 : f32
    %a = arith.mulf %s, %c1 : f32
    %t = math.tanh %a : f32
    %u = arith.mulf %t, %c2 : f32
    %w = arith.mulf %s, %c3 : f32
    %r = arith.addf %u, %w : f32
    linalg.yield %r : f32
  } -> tensor<2x7x3x8xf32>
  %sm = linalg.softmax dimension(3) ins(%x : tensor<2x7x3x8xf32>) outs(%e : tensor<2x7x3x8xf32>) -> tensor<2x7x3x8xf32>
  %eo = tensor.empty() : tensor<2x7x3x4xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x7x3x4xf32>) -> tensor<2x7x3x4xf32>
  %o = linalg.generic {indexing_maps = [#pp, #pv, #po], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%sm, %v : tensor<2x7x3x8xf32>, tensor<2x8x3x4xf32>) outs(%fo : tensor<2x7x3x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<2x7x3x4xf32>
  return %o : tensor<2x7x3x4xf32>
}

// -----
#q4 = affine_map<(b, m, h, n, d) -> (b, m, h, d)>
#k4 = affine_map<(b, m, h, n, d) -> (b, n, h, d)>
#s4 = affine_map<(b, m, h, n, d) -> (b, m, h, n)>
#id4 = affine_map<(b, m, h, n) -> (b, m, h, n)>
#h4 = affine_map<(b, m, h, n) -> (h)>
#pp = affine_map<(b, m, h, d, n) -> (b, m, h, n)>
#pv = affine_map<(b, m, h, d, n) -> (b, n, h, d)>
#po = affine_map<(b, m, h, d, n) -> (b, m, h, d)>
#kd = affine_map<(b, n, h, d) -> (b, n, h, d)>
func.func @rtinside(%q: tensor<2x7x3x4xf32>, %k: tensor<2x8x3x4xf32>, %v: tensor<2x8x3x4xf32>, %rt: f32) -> tensor<2x7x3x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x7x3x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x7x3x8xf32>) -> tensor<2x7x3x8xf32>
  %qk = linalg.generic {indexing_maps = [#q4, #k4, #s4], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x7x3x4xf32>, tensor<2x8x3x4xf32>) outs(%f : tensor<2x7x3x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<2x7x3x8xf32>
  %x = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk : tensor<2x7x3x8xf32>) outs(%e : tensor<2x7x3x8xf32>) {
  ^bb0(%s: f32, %out: f32):
    %c2 = arith.constant 2.0 : f32
    %a = arith.mulf %s, %rt : f32
    %t = math.tanh %a : f32
    %u = arith.mulf %t, %c2 : f32
    linalg.yield %u : f32
  } -> tensor<2x7x3x8xf32>
  %sm = linalg.softmax dimension(3) ins(%x : tensor<2x7x3x8xf32>) outs(%e : tensor<2x7x3x8xf32>) -> tensor<2x7x3x8xf32>
  %eo = tensor.empty() : tensor<2x7x3x4xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x7x3x4xf32>) -> tensor<2x7x3x4xf32>
  %o = linalg.generic {indexing_maps = [#pp, #pv, #po], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%sm, %v : tensor<2x7x3x8xf32>, tensor<2x8x3x4xf32>) outs(%fo : tensor<2x7x3x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<2x7x3x4xf32>
  return %o : tensor<2x7x3x4xf32>
}

// -----
#q4 = affine_map<(b, m, h, n, d) -> (b, m, h, d)>
#k4 = affine_map<(b, m, h, n, d) -> (b, n, h, d)>
#s4 = affine_map<(b, m, h, n, d) -> (b, m, h, n)>
#id4 = affine_map<(b, m, h, n) -> (b, m, h, n)>
#h4 = affine_map<(b, m, h, n) -> (h)>
#pp = affine_map<(b, m, h, d, n) -> (b, m, h, n)>
#pv = affine_map<(b, m, h, d, n) -> (b, n, h, d)>
#po = affine_map<(b, m, h, d, n) -> (b, m, h, d)>
#kd = affine_map<(b, n, h, d) -> (b, n, h, d)>
func.func @cmpi_bool(%q: tensor<2x7x3x4xf32>, %k: tensor<2x8x3x4xf32>, %v: tensor<2x8x3x4xf32>) -> tensor<2x7x3x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x7x3x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x7x3x8xf32>) -> tensor<2x7x3x8xf32>
  %qk = linalg.generic {indexing_maps = [#q4, #k4, #s4], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x7x3x4xf32>, tensor<2x8x3x4xf32>) outs(%f : tensor<2x7x3x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<2x7x3x8xf32>
  %x = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk : tensor<2x7x3x8xf32>) outs(%e : tensor<2x7x3x8xf32>) {
  ^bb0(%s: f32, %out: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 3 : index
    %c = arith.cmpi sgt, %j, %i : index
    %tr = arith.constant true
    %e2 = arith.cmpi eq, %c, %tr : i1
    %m2 = arith.constant -2.0 : f32
    %z = arith.constant 0.0 : f32
    %bb = arith.select %e2, %m2, %z : f32
    %r = arith.addf %s, %bb : f32
    linalg.yield %r : f32
  } -> tensor<2x7x3x8xf32>
  %sm = linalg.softmax dimension(3) ins(%x : tensor<2x7x3x8xf32>) outs(%e : tensor<2x7x3x8xf32>) -> tensor<2x7x3x8xf32>
  %eo = tensor.empty() : tensor<2x7x3x4xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x7x3x4xf32>) -> tensor<2x7x3x4xf32>
  %o = linalg.generic {indexing_maps = [#pp, #pv, #po], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%sm, %v : tensor<2x7x3x8xf32>, tensor<2x8x3x4xf32>) outs(%fo : tensor<2x7x3x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<2x7x3x4xf32>
  return %o : tensor<2x7x3x4xf32>
}

// -----


#q4 = affine_map<(b, m, h, n, d) -> (b, m, h, d)>
#k4 = affine_map<(b, m, h, n, d) -> (b, n, h, d)>
#s4 = affine_map<(b, m, h, n, d) -> (b, m, h, n)>
#id4 = affine_map<(b, m, h, n) -> (b, m, h, n)>
#h4 = affine_map<(b, m, h, n) -> (h)>
#pp = affine_map<(b, m, h, d, n) -> (b, m, h, n)>
#pv = affine_map<(b, m, h, d, n) -> (b, n, h, d)>
#po = affine_map<(b, m, h, d, n) -> (b, m, h, d)>
#kd = affine_map<(b, n, h, d) -> (b, n, h, d)>
func.func @deep_dag(%q: tensor<2x7x3x4xf32>, %k: tensor<2x8x3x4xf32>, %v: tensor<2x8x3x4xf32>) -> tensor<2x7x3x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x7x3x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x7x3x8xf32>) -> tensor<2x7x3x8xf32>
  %qk = linalg.generic {indexing_maps = [#q4, #k4, #s4], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x7x3x4xf32>, tensor<2x8x3x4xf32>) outs(%f : tensor<2x7x3x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<2x7x3x8xf32>
  %x = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk : tensor<2x7x3x8xf32>) outs(%e : tensor<2x7x3x8xf32>) {
  ^bb0(%s: f32, %out: f32):
    %c1 = arith.constant 0.1 : f32
    %y0 = arith.mulf %s, %c1 : f32
    %t0 = math.tanh %y0 : f32
    %y1 = arith.addf %y0, %t0 : f32
    %t1 = math.tanh %y1 : f32
    %y2 = arith.addf %y1, %t1 : f32
    %t2 = math.tanh %y2 : f32
    %y3 = arith.addf %y2, %t2 : f32
    %t3 = math.tanh %y3 : f32
    %y4 = arith.addf %y3, %t3 : f32
    %t4 = math.tanh %y4 : f32
    %y5 = arith.addf %y4, %t4 : f32
    %t5 = math.tanh %y5 : f32
    %y6 = arith.addf %y5, %t5 : f32
    %t6 = math.tanh %y6 : f32
    %y7 = arith.addf %y6, %t6 : f32
    %t7 = math.tanh %y7 : f32
    %y8 = arith.addf %y7, %t7 : f32
    %t8 = math.tanh %y8 : f32
    %y9 = arith.addf %y8, %t8 : f32
    %t9 = math.tanh %y9 : f32
    %y10 = arith.addf %y9, %t9 : f32
    %t10 = math.tanh %y10 : f32
    %y11 = arith.addf %y10, %t10 : f32
    %t11 = math.tanh %y11 : f32
    %y12 = arith.addf %y11, %t11 : f32
    %t12 = math.tanh %y12 : f32
    %y13 = arith.addf %y12, %t12 : f32
    %t13 = math.tanh %y13 : f32
    %y14 = arith.addf %y13, %t13 : f32
    %t14 = math.tanh %y14 : f32
    %y15 = arith.addf %y14, %t14 : f32
    %t15 = math.tanh %y15 : f32
    %y16 = arith.addf %y15, %t15 : f32
    %t16 = math.tanh %y16 : f32
    %y17 = arith.addf %y16, %t16 : f32
    %t17 = math.tanh %y17 : f32
    %y18 = arith.addf %y17, %t17 : f32
    %t18 = math.tanh %y18 : f32
    %y19 = arith.addf %y18, %t18 : f32
    %t19 = math.tanh %y19 : f32
    %y20 = arith.addf %y19, %t19 : f32
    %t20 = math.tanh %y20 : f32
    %y21 = arith.addf %y20, %t20 : f32
    %t21 = math.tanh %y21 : f32
    %y22 = arith.addf %y21, %t21 : f32
    %t22 = math.tanh %y22 : f32
    %y23 = arith.addf %y22, %t22 : f32
    %t23 = math.tanh %y23 : f32
    %y24 = arith.addf %y23, %t23 : f32
    %t24 = math.tanh %y24 : f32
    %y25 = arith.addf %y24, %t24 : f32
    %t25 = math.tanh %y25 : f32
    %y26 = arith.addf %y25, %t25 : f32
    %t26 = math.tanh %y26 : f32
    %y27 = arith.addf %y26, %t26 : f32
    %t27 = math.tanh %y27 : f32
    %y28 = arith.addf %y27, %t27 : f32
    %t28 = math.tanh %y28 : f32
    %y29 = arith.addf %y28, %t28 : f32
    %t29 = math.tanh %y29 : f32
    %y30 = arith.addf %y29, %t29 : f32
    %t30 = math.tanh %y30 : f32
    %y31 = arith.addf %y30, %t30 : f32
    %t31 = math.tanh %y31 : f32
    %y32 = arith.addf %y31, %t31 : f32
    %t32 = math.tanh %y32 : f32
    %y33 = arith.addf %y32, %t32 : f32
    %t33 = math.tanh %y33 : f32
    %y34 = arith.addf %y33, %t33 : f32
    linalg.yield %y34 : f32
  } -> tensor<2x7x3x8xf32>
  %sm = linalg.softmax dimension(3) ins(%x : tensor<2x7x3x8xf32>) outs(%e : tensor<2x7x3x8xf32>) -> tensor<2x7x3x8xf32>
  %eo = tensor.empty() : tensor<2x7x3x4xf32>
  %fo = linalg.fill ins(%zero : f32) outs(%eo : tensor<2x7x3x4xf32>) -> tensor<2x7x3x4xf32>
  %o = linalg.generic {indexing_maps = [#pp, #pv, #po], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%sm, %v : tensor<2x7x3x8xf32>, tensor<2x8x3x4xf32>) outs(%fo : tensor<2x7x3x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<2x7x3x4xf32>
  return %o : tensor<2x7x3x4xf32>
}

