// The input of test/Install: torch-mlir style attention (3-D batch matmuls
// on [B*H, S, D] views of [B, H, S, D] tensors, decomposed softmax).
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#red3 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @torch_sdpa(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x20x8xf32>, %v: tensor<2x4x20x8xf32>) -> tensor<2x4x16x8xf32> {
  %q3 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x4x16x8xf32> into tensor<8x16x8xf32>
  %k3 = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<2x4x20x8xf32> into tensor<8x20x8xf32>
  %v3 = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<2x4x20x8xf32> into tensor<8x20x8xf32>
  %kt0 = tensor.empty() : tensor<8x8x20xf32>
  %kt = linalg.transpose ins(%k3 : tensor<8x20x8xf32>) outs(%kt0 : tensor<8x8x20xf32>) permutation = [0, 2, 1]
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<8x16x20xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<8x16x20xf32>) -> tensor<8x16x20xf32>
  %s = linalg.batch_matmul ins(%q3, %kt : tensor<8x16x8xf32>, tensor<8x8x20xf32>) outs(%sz : tensor<8x16x20xf32>) -> tensor<8x16x20xf32>
  %c = arith.constant 2.82842712 : f32
  %x = linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s : tensor<8x16x20xf32>) outs(%s0 : tensor<8x16x20xf32>) {
  ^bb0(%a: f32, %o: f32):
    %d = arith.divf %a, %c : f32
    linalg.yield %d : f32
  } -> tensor<8x16x20xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %m0 = tensor.empty() : tensor<8x16x1xf32>
  %mi = linalg.fill ins(%ninf : f32) outs(%m0 : tensor<8x16x1xf32>) -> tensor<8x16x1xf32>
  %mx = linalg.generic {indexing_maps = [#map3, #row3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x : tensor<8x16x20xf32>) outs(%mi : tensor<8x16x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<8x16x1xf32>
  %e = linalg.generic {indexing_maps = [#map3, #row3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %mx : tensor<8x16x20xf32>, tensor<8x16x1xf32>) outs(%s0 : tensor<8x16x20xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %ex = math.exp %d : f32
    linalg.yield %ex : f32
  } -> tensor<8x16x20xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%m0 : tensor<8x16x1xf32>) -> tensor<8x16x1xf32>
  %l = linalg.generic {indexing_maps = [#map3, #row3], iterator_types = ["parallel", "parallel", "reduction"]} ins(%e : tensor<8x16x20xf32>) outs(%l0 : tensor<8x16x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<8x16x1xf32>
  %p = linalg.generic {indexing_maps = [#map3, #row3, #map3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%e, %l : tensor<8x16x20xf32>, tensor<8x16x1xf32>) outs(%s0 : tensor<8x16x20xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<8x16x20xf32>
  %o0 = tensor.empty() : tensor<8x16x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<8x16x8xf32>) -> tensor<8x16x8xf32>
  %o3 = linalg.batch_matmul ins(%p, %v3 : tensor<8x16x20xf32>, tensor<8x20x8xf32>) outs(%oz : tensor<8x16x8xf32>) -> tensor<8x16x8xf32>
  %o = tensor.expand_shape %o3 [[0, 1], [2], [3]] output_shape [2, 4, 16, 8] : tensor<8x16x8xf32> into tensor<2x4x16x8xf32>
  return %o : tensor<2x4x16x8xf32>
}

