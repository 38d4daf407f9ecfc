// Grouped-query attention with a dynamic group count (torch's repeat_kv on
// dynamic shapes, as torch-mlir exports it: expand_shape to [B, Hkv, 1, N, D],
// a broadcast to G = Hq / Hkv computed at run time, collapse_shape): the fused
// op reads the unrepeated K and V (query head h reads kv head h / (Hq / Hkv),
// whatever G is).
// RUN: flash-opt %s --flash-fuse-attention | FileCheck %s
// RUN: flash-opt %s --flash-fuse-attention=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: %python -m flash_mlir.fusion_check %s --expect fused | FileCheck %s --check-prefix=NUM
// NUM: PASS @gqa_dynamic_groups (fused)
// REMARK: remark: fused attention: {{.*}} GQA ratio = dynamic
// CHECK-LABEL: func @gqa_dynamic_groups
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<?x?x?x8xf32>, %[[K:[^:]*]]: tensor<?x?x?x8xf32>, %[[V:[^:]*]]: tensor<?x?x?x8xf32>)
// CHECK-NOT: linalg.
// CHECK: flash.attention %[[Q]], %[[K]], %[[V]] {scale = 1.000000e+00 : f32}
#q = affine_map<(b, h, m, n, d) -> (b, h, m, d)>
#k = affine_map<(b, h, m, n, d) -> (b, h, n, d)>
#s = affine_map<(b, h, m, n, d) -> (b, h, m, n)>
#p = affine_map<(b, h, m, d, n) -> (b, h, m, n)>
#v = affine_map<(b, h, m, d, n) -> (b, h, n, d)>
#o = affine_map<(b, h, m, d, n) -> (b, h, m, d)>
#rep_in = affine_map<(b, h, g, n, d) -> (b, h, 0, n, d)>
#rep_out = affine_map<(b, h, g, n, d) -> (b, h, g, n, d)>
func.func @gqa_dynamic_groups(%q: tensor<?x?x?x8xf32>, %k: tensor<?x?x?x8xf32>, %v: tensor<?x?x?x8xf32>) -> tensor<?x?x?x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %k, %c0 : tensor<?x?x?x8xf32>
  %hkv = tensor.dim %k, %c1 : tensor<?x?x?x8xf32>
  %n = tensor.dim %k, %c2 : tensor<?x?x?x8xf32>
  %hq = tensor.dim %q, %c1 : tensor<?x?x?x8xf32>
  %m = tensor.dim %q, %c2 : tensor<?x?x?x8xf32>
  %g = arith.divui %hq, %hkv : index
  %k5 = tensor.expand_shape %k [[0], [1, 2], [3], [4]] output_shape [%b, %hkv, 1, %n, 8] : tensor<?x?x?x8xf32> into tensor<?x?x1x?x8xf32>
  %v5 = tensor.expand_shape %v [[0], [1, 2], [3], [4]] output_shape [%b, %hkv, 1, %n, 8] : tensor<?x?x?x8xf32> into tensor<?x?x1x?x8xf32>
  %g0 = tensor.empty(%b, %hkv, %g, %n) : tensor<?x?x?x?x8xf32>
  %kr = linalg.generic {indexing_maps = [#rep_in, #rep_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%k5 : tensor<?x?x1x?x8xf32>) outs(%g0 : tensor<?x?x?x?x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<?x?x?x?x8xf32>
  %vr = linalg.generic {indexing_maps = [#rep_in, #rep_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%v5 : tensor<?x?x1x?x8xf32>) outs(%g0 : tensor<?x?x?x?x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<?x?x?x?x8xf32>
  %k4 = tensor.collapse_shape %kr [[0], [1, 2], [3], [4]] : tensor<?x?x?x?x8xf32> into tensor<?x?x?x8xf32>
  %v4 = tensor.collapse_shape %vr [[0], [1, 2], [3], [4]] : tensor<?x?x?x?x8xf32> into tensor<?x?x?x8xf32>
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty(%b, %hq, %m, %n) : tensor<?x?x?x?xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k4 : tensor<?x?x?x8xf32>, tensor<?x?x?x8xf32>) outs(%sz : tensor<?x?x?x?xf32>) {
  ^bb0(%a: f32, %bb: f32, %acc: f32):
    %mul = arith.mulf %a, %bb : f32
    %add = arith.addf %acc, %mul : f32
    linalg.yield %add : f32
  } -> tensor<?x?x?x?xf32>
  %p = linalg.softmax dimension(3) ins(%s : tensor<?x?x?x?xf32>) outs(%s0 : tensor<?x?x?x?xf32>) -> tensor<?x?x?x?xf32>
  %o0 = tensor.empty(%b, %hq, %m) : tensor<?x?x?x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<?x?x?x8xf32>) -> tensor<?x?x?x8xf32>
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v4 : tensor<?x?x?x?xf32>, tensor<?x?x?x8xf32>) outs(%oz : tensor<?x?x?x8xf32>) {
  ^bb0(%a: f32, %bb: f32, %acc: f32):
    %mul = arith.mulf %a, %bb : f32
    %add = arith.addf %acc, %mul : f32
    linalg.yield %add : f32
  } -> tensor<?x?x?x8xf32>
  return %o : tensor<?x?x?x8xf32>
}
