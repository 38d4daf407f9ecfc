// The Triton-style exp2 spelling of test/Transforms/flash-fuse-attention.mlir's
// @exp2_folded with 1e30 for scale * log2(e): fused, it is flash.attention
// with scale = 6.9e29 (test/Transforms/flash-tile-attention-large-scale.mlir).
#id = affine_map<(b, m, n) -> (b, m, n)>
#row = affine_map<(b, m, n) -> (b, m)>
func.func @exp2_large_constant(%q: tensor<3x12x16xf32>, %k: tensor<3x12x16xf32>, %v: tensor<3x12x16xf32>) -> tensor<3x12x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %kt0 = tensor.empty() : tensor<3x16x12xf32>
  %kt = linalg.transpose ins(%k : tensor<3x12x16xf32>) outs(%kt0 : tensor<3x16x12xf32>) permutation = [0, 2, 1]
  %s0 = tensor.empty() : tensor<3x12x12xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<3x12x12xf32>) -> tensor<3x12x12xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<3x12x16xf32>, tensor<3x16x12xf32>) outs(%sz : tensor<3x12x12xf32>) -> tensor<3x12x12xf32>
  // 6.9e29 * log2(e)
  %c = arith.constant 1.0e+30 : f32
  %r0 = tensor.empty() : tensor<3x12xf32>
  %ri = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<3x12xf32>) -> tensor<3x12xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<3x12x12xf32>) outs(%s0 : tensor<3x12x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %c : f32
    linalg.yield %m : f32
  } -> tensor<3x12x12xf32>
  %mx = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%y : tensor<3x12x12xf32>) outs(%ri : tensor<3x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maxnumf %a, %o : f32
    linalg.yield %m : f32
  } -> tensor<3x12xf32>
  // exp2 and its row sum in one generic with two results.
  %li = linalg.fill ins(%zero : f32) outs(%r0 : tensor<3x12xf32>) -> tensor<3x12xf32>
  %e = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%y, %mx : tensor<3x12x12xf32>, tensor<3x12xf32>) outs(%s0 : tensor<3x12x12xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %x = math.exp2 %d : f32
    linalg.yield %x : f32
  } -> tensor<3x12x12xf32>
  %l = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%y, %mx : tensor<3x12x12xf32>, tensor<3x12xf32>) outs(%li : tensor<3x12xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %x = math.exp2 %d : f32
    %r = arith.addf %o, %x : f32
    linalg.yield %r : f32
  } -> tensor<3x12xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%e, %l : tensor<3x12x12xf32>, tensor<3x12xf32>) outs(%s0 : tensor<3x12x12xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %one = arith.constant 1.0 : f32
    %r = arith.divf %one, %b : f32
    %x = arith.mulf %a, %r : f32
    linalg.yield %x : f32
  } -> tensor<3x12x12xf32>
  %o0 = tensor.empty() : tensor<3x12x16xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<3x12x16xf32>) -> tensor<3x12x16xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<3x12x12xf32>, tensor<3x12x16xf32>) outs(%oz : tensor<3x12x16xf32>) -> tensor<3x12x16xf32>
  return %o : tensor<3x12x16xf32>
}
