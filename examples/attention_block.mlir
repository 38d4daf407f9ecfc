// An attention block as frontends emit it today (IREE-input / torch-mlir
// style linalg: batch matmul, scale, linalg.softmax, batch matmul over
// [B*H, S, D]), next to the same computation as one flash.attention op.
// scripts/demo.sh compiles both through flash-opt and runs them on the CPU.

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

func.func private @printMemrefF32(tensor<*xf32>)

// softmax(Q Kᵀ / sqrt(D)) V, heads flattened into the batch.
func.func @attention_frontend(%q: tensor<2x4x64x32xf32>, %k: tensor<2x4x64x32xf32>,
                              %v: tensor<2x4x64x32xf32>) -> tensor<2x4x64x32xf32> {
  %q3 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x4x64x32xf32> into tensor<8x64x32xf32>
  %k3 = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<2x4x64x32xf32> into tensor<8x64x32xf32>
  %v3 = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<2x4x64x32xf32> into tensor<8x64x32xf32>
  %kt_init = tensor.empty() : tensor<8x32x64xf32>
  %kt = linalg.transpose ins(%k3 : tensor<8x64x32xf32>) outs(%kt_init : tensor<8x32x64xf32>) permutation = [0, 2, 1]
  %zero = arith.constant 0.0 : f32
  %s_init = tensor.empty() : tensor<8x64x64xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_init : tensor<8x64x64xf32>) -> tensor<8x64x64xf32>
  %s = linalg.batch_matmul ins(%q3, %kt : tensor<8x64x32xf32>, tensor<8x32x64xf32>) outs(%s_zero : tensor<8x64x64xf32>) -> tensor<8x64x64xf32>
  %scale = arith.constant 0.176776695 : f32
  %scaled = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<8x64x64xf32>) outs(%s_init : tensor<8x64x64xf32>) {
  ^bb0(%x: f32, %out: f32):
    %y = arith.mulf %x, %scale : f32
    linalg.yield %y : f32
  } -> tensor<8x64x64xf32>
  %p = linalg.softmax dimension(2) ins(%scaled : tensor<8x64x64xf32>) outs(%s_init : tensor<8x64x64xf32>) -> tensor<8x64x64xf32>
  %o_init = tensor.empty() : tensor<8x64x32xf32>
  %o_zero = linalg.fill ins(%zero : f32) outs(%o_init : tensor<8x64x32xf32>) -> tensor<8x64x32xf32>
  %o3 = linalg.batch_matmul ins(%p, %v3 : tensor<8x64x64xf32>, tensor<8x64x32xf32>) outs(%o_zero : tensor<8x64x32xf32>) -> tensor<8x64x32xf32>
  %o = tensor.expand_shape %o3 [[0, 1], [2], [3]] output_shape [2, 4, 64, 32] : tensor<8x64x32xf32> into tensor<2x4x64x32xf32>
  return %o : tensor<2x4x64x32xf32>
}

// The same function as the fused op.
func.func @attention_fused(%q: tensor<2x4x64x32xf32>, %k: tensor<2x4x64x32xf32>,
                           %v: tensor<2x4x64x32xf32>) -> tensor<2x4x64x32xf32> {
  %o = flash.attention %q, %k, %v
      : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32> -> tensor<2x4x64x32xf32>
  return %o : tensor<2x4x64x32xf32>
}

// Deterministic pseudo-random inputs in [-0.5, 0.5): the fractional part of
// 43758.5453 * sin(12.9898 * (flat index + seed)).
func.func @make_input(%seed: f32) -> tensor<2x4x64x32xf32> {
  %init = tensor.empty() : tensor<2x4x64x32xf32>
  %t = linalg.generic {indexing_maps = [#id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%init : tensor<2x4x64x32xf32>) {
  ^bb0(%out: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %i3 = linalg.index 3 : index
    %c4 = arith.constant 4 : index
    %c64 = arith.constant 64 : index
    %c32 = arith.constant 32 : index
    %a = arith.muli %i0, %c4 : index
    %b = arith.addi %a, %i1 : index
    %c = arith.muli %b, %c64 : index
    %d = arith.addi %c, %i2 : index
    %e = arith.muli %d, %c32 : index
    %flat = arith.addi %e, %i3 : index
    %fi = arith.index_cast %flat : index to i32
    %ff = arith.sitofp %fi : i32 to f32
    %shifted = arith.addf %ff, %seed : f32
    %mul = arith.constant 12.9898 : f32
    %arg = arith.mulf %shifted, %mul : f32
    %sin = math.sin %arg : f32
    %big = arith.constant 43758.5453 : f32
    %h = arith.mulf %sin, %big : f32
    %fl = math.floor %h : f32
    %fr = arith.subf %h, %fl : f32
    %half = arith.constant 0.5 : f32
    %x = arith.subf %fr, %half : f32
    linalg.yield %x : f32
  } -> tensor<2x4x64x32xf32>
  return %t : tensor<2x4x64x32xf32>
}

func.func @main() {
  %s0 = arith.constant 0.0 : f32
  %s1 = arith.constant 0.5 : f32
  %s2 = arith.constant 0.25 : f32
  %q = call @make_input(%s0) : (f32) -> tensor<2x4x64x32xf32>
  %k = call @make_input(%s1) : (f32) -> tensor<2x4x64x32xf32>
  %v = call @make_input(%s2) : (f32) -> tensor<2x4x64x32xf32>
  %a = call @attention_frontend(%q, %k, %v) : (tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>) -> tensor<2x4x64x32xf32>
  %b = call @attention_fused(%q, %k, %v) : (tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>) -> tensor<2x4x64x32xf32>
  // max |a - b| over all elements.
  %zero = arith.constant 0.0 : f32
  %acc_init = tensor.empty() : tensor<f32>
  %acc = linalg.fill ins(%zero : f32) outs(%acc_init : tensor<f32>) -> tensor<f32>
  %diff = linalg.generic {indexing_maps = [#id4, #id4, affine_map<(d0, d1, d2, d3) -> ()>],
                          iterator_types = ["reduction", "reduction", "reduction", "reduction"]}
      ins(%a, %b : tensor<2x4x64x32xf32>, tensor<2x4x64x32xf32>) outs(%acc : tensor<f32>) {
  ^bb0(%x: f32, %y: f32, %m: f32):
    %d = arith.subf %x, %y : f32
    %ad = math.absf %d : f32
    %mx = arith.maximumf %m, %ad : f32
    linalg.yield %mx : f32
  } -> tensor<f32>
  %row = tensor.extract_slice %b[0, 0, 0, 0] [1, 1, 1, 8] [1, 1, 1, 1] : tensor<2x4x64x32xf32> to tensor<8xf32>
  %row_u = tensor.cast %row : tensor<8xf32> to tensor<*xf32>
  call @printMemrefF32(%row_u) : (tensor<*xf32>) -> ()
  %diff_u = tensor.cast %diff : tensor<f32> to tensor<*xf32>
  call @printMemrefF32(%diff_u) : (tensor<*xf32>) -> ()
  return
}
