// A scale known only at run time (a scalar f32 argument, as exported when
// the softmax scale is an input of the model function, e.g. JAX's
// `scale` argument or a torch module's learned temperature) becomes the
// fused op's runtime_scale operand (issue 18). It must scale Q Kᵀ before any
// bias or mask: a mask applied first would be multiplied by a value of
// unknown sign.
// RUN: flash-opt %s -split-input-file --flash-fuse-attention | FileCheck %s
// RUN: flash-opt %s -split-input-file --flash-fuse-attention=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: %python -m flash_mlir.fusion_check %s | FileCheck %s --check-prefix=NUM
// NUM-NOT: FAIL
// NUM: fusion_check: 0 failure(s)

#s = affine_map<(b, h, m, n, d) -> (b, h, m, d)>
#k = affine_map<(b, h, m, n, d) -> (b, h, n, d)>
#o = affine_map<(b, h, m, n, d) -> (b, h, m, n)>
#id = affine_map<(b, h, m, n) -> (b, h, m, n)>
#row = affine_map<(b, h, m, n) -> (b, h, m)>
#pv_p = affine_map<(b, h, m, d, n) -> (b, h, m, n)>
#pv_v = affine_map<(b, h, m, d, n) -> (b, h, n, d)>
#pv_o = affine_map<(b, h, m, d, n) -> (b, h, m, d)>
// REMARK: remark: fused attention: scale = 1.000000e+00 * a run-time value
// CHECK-LABEL: func @runtime_scale
// CHECK-NOT: linalg.
// CHECK: flash.attention %arg0, %arg1, %arg2 runtime_scale(%arg3) :
// CHECK-NEXT: return
func.func @runtime_scale(%q: tensor<2x3x16x8xf32>, %kk: tensor<2x3x20x8xf32>, %v: tensor<2x3x20x8xf32>, %scale: f32) -> tensor<2x3x16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x16x20xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x16x20xf32>) -> tensor<2x3x16x20xf32>
  %qk = linalg.generic {indexing_maps = [#s, #k, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %kk : tensor<2x3x16x8xf32>, tensor<2x3x20x8xf32>) outs(%f : tensor<2x3x16x20xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<2x3x16x20xf32>
  %e2 = tensor.empty() : tensor<2x3x16x20xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk : tensor<2x3x16x20xf32>) outs(%e2 : tensor<2x3x16x20xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.mulf %a, %scale : f32
    linalg.yield %r : f32
  } -> tensor<2x3x16x20xf32>
  %e3 = tensor.empty() : tensor<2x3x16x20xf32>
  %sm = linalg.softmax dimension(3) ins(%scaled : tensor<2x3x16x20xf32>) outs(%e3 : tensor<2x3x16x20xf32>) -> tensor<2x3x16x20xf32>
  %e4 = tensor.empty() : tensor<2x3x16x8xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<2x3x16x8xf32>) -> tensor<2x3x16x8xf32>
  %out = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%sm, %v : tensor<2x3x16x20xf32>, tensor<2x3x20x8xf32>) outs(%f4 : tensor<2x3x16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<2x3x16x8xf32>
  return %out : tensor<2x3x16x8xf32>
}

// -----

#s = affine_map<(b, h, m, n, d) -> (b, h, m, d)>
#k = affine_map<(b, h, m, n, d) -> (b, h, n, d)>
#o = affine_map<(b, h, m, n, d) -> (b, h, m, n)>
#id = affine_map<(b, h, m, n) -> (b, h, m, n)>
#row = affine_map<(b, h, m, n) -> (b, h, m)>
#pv_p = affine_map<(b, h, m, d, n) -> (b, h, m, n)>
#pv_v = affine_map<(b, h, m, d, n) -> (b, h, n, d)>
#pv_o = affine_map<(b, h, m, d, n) -> (b, h, m, d)>
// REMARK: remark: fused attention: scale = 1.000000e+00 / a run-time value
// CHECK-LABEL: func @runtime_divisor
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[S:.*]] = arith.divf %[[ONE]], %arg3 : f32
// CHECK: flash.attention %arg0, %arg1, %arg2 runtime_scale(%[[S]]) :
func.func @runtime_divisor(%q: tensor<2x3x16x8xf32>, %kk: tensor<2x3x20x8xf32>, %v: tensor<2x3x20x8xf32>, %scale: f32) -> tensor<2x3x16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x16x20xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x16x20xf32>) -> tensor<2x3x16x20xf32>
  %qk = linalg.generic {indexing_maps = [#s, #k, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %kk : tensor<2x3x16x8xf32>, tensor<2x3x20x8xf32>) outs(%f : tensor<2x3x16x20xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<2x3x16x20xf32>
  %e2 = tensor.empty() : tensor<2x3x16x20xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk : tensor<2x3x16x20xf32>) outs(%e2 : tensor<2x3x16x20xf32>) {
  ^bb0(%a: f32, %out: f32):
    %r = arith.divf %a, %scale : f32
    linalg.yield %r : f32
  } -> tensor<2x3x16x20xf32>
  %e3 = tensor.empty() : tensor<2x3x16x20xf32>
  %sm = linalg.softmax dimension(3) ins(%scaled : tensor<2x3x16x20xf32>) outs(%e3 : tensor<2x3x16x20xf32>) -> tensor<2x3x16x20xf32>
  %e4 = tensor.empty() : tensor<2x3x16x8xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<2x3x16x8xf32>) -> tensor<2x3x16x8xf32>
  %out = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%sm, %v : tensor<2x3x16x20xf32>, tensor<2x3x20x8xf32>) outs(%f4 : tensor<2x3x16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<2x3x16x8xf32>
  return %out : tensor<2x3x16x8xf32>
}

// -----

#s = affine_map<(b, h, m, n, d) -> (b, h, m, d)>
#k = affine_map<(b, h, m, n, d) -> (b, h, n, d)>
#o = affine_map<(b, h, m, n, d) -> (b, h, m, n)>
#id = affine_map<(b, h, m, n) -> (b, h, m, n)>
#row = affine_map<(b, h, m, n) -> (b, h, m)>
#pv_p = affine_map<(b, h, m, d, n) -> (b, h, m, n)>
#pv_v = affine_map<(b, h, m, d, n) -> (b, h, n, d)>
#pv_o = affine_map<(b, h, m, d, n) -> (b, h, m, d)>
// REMARK: remark: not fused: a bias or mask is applied before the run-time scale
// CHECK-LABEL: func @mask_before_runtime_scale
// CHECK-NOT: flash.attention
func.func @mask_before_runtime_scale(%q: tensor<2x3x16x8xf32>, %kk: tensor<2x3x20x8xf32>, %v: tensor<2x3x20x8xf32>, %scale: f32) -> tensor<2x3x16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x16x20xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3x16x20xf32>) -> tensor<2x3x16x20xf32>
  %qk = linalg.generic {indexing_maps = [#s, #k, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %kk : tensor<2x3x16x8xf32>, tensor<2x3x20x8xf32>) outs(%f : tensor<2x3x16x20xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<2x3x16x20xf32>
  %e2 = tensor.empty() : tensor<2x3x16x20xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%qk : tensor<2x3x16x20xf32>) outs(%e2 : tensor<2x3x16x20xf32>) {
  ^bb0(%a: f32, %out: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 3 : index
    %hide = arith.cmpi sgt, %j, %i : index
    %ninf = arith.constant 0xFF800000 : f32
    %m = arith.select %hide, %ninf, %a : f32
    %r = arith.mulf %m, %scale : f32
    linalg.yield %r : f32
  } -> tensor<2x3x16x20xf32>
  %e3 = tensor.empty() : tensor<2x3x16x20xf32>
  %sm = linalg.softmax dimension(3) ins(%scaled : tensor<2x3x16x20xf32>) outs(%e3 : tensor<2x3x16x20xf32>) -> tensor<2x3x16x20xf32>
  %e4 = tensor.empty() : tensor<2x3x16x8xf32>
  %f4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<2x3x16x8xf32>) -> tensor<2x3x16x8xf32>
  %out = linalg.generic {indexing_maps = [#pv_p, #pv_v, #pv_o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%sm, %v : tensor<2x3x16x20xf32>, tensor<2x3x20x8xf32>) outs(%f4 : tensor<2x3x16x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<2x3x16x8xf32>
  return %out : tensor<2x3x16x8xf32>
}
