// RUN: flash-opt %s --flash-fuse-attention -split-input-file | FileCheck %s
// RUN: %python -m flash_mlir.fusion_check %s --expect fused --dynamic-size 6 | FileCheck %s --check-prefix=EXEC
// RUN: flash-opt %s --flash-fuse-attention=report=true -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=REPORT

// Attention as frontends emit it, each fused to exactly one flash.attention
// with the N x N intermediates gone; every case also runs unfused and fused
// on the CPU and must give the same numbers (EXEC).
// EXEC-NOT: FAIL
// EXEC: fusion_check: 0 failure(s)

// What the report says about each case, in order:
// REPORT: remark: fused attention: scale = 3.535534e-01, softmax = exp (max-subtracted), mask = none, bias = 0 tensor(s), batch dims = 1, GQA ratio = 1, Q/K/V f32
// REPORT: remark: fused attention: scale = 3.535534e-01, softmax = exp (max-subtracted), mask = causal, bias = 0 tensor(s), batch dims = 1, GQA ratio = 1, Q/K/V f32
// REPORT: remark: fused attention: scale = 1.250000e-01, softmax = linalg.softmax (max-subtracted), mask = none, bias = 0 tensor(s), batch dims = 0, GQA ratio = 1, Q/K/V f32
// REPORT: remark: fused attention: scale = 2.500000e-01, softmax = exp (max-subtracted), {{.*}} batch dims = 2, GQA ratio = 1, Q/K/V bf16
// REPORT: remark: fused attention: scale = 2.500000e-01, softmax = exp2 (max-subtracted)
// REPORT: remark: fused attention: scale = 2.500000e-01, softmax = exp (no max subtraction), mask = causal, bias = 1 tensor(s)
// REPORT: remark: fused attention: {{.*}} mask = 1 i1 tensor(s), {{.*}} GQA ratio = 2, Q/K/V f32
// REPORT: remark: fused attention: {{.*}} GQA ratio = 4, Q/K/V f16
// REPORT: remark: fused attention: scale = 5.000000e-01, {{.*}} mask = causal + window 3 + 1 i1 tensor(s)
// REPORT: remark: fused attention: scale = 3.535534e-01, softmax = linalg.softmax

// torch-mlir style: 4-D attention through 3-D batch matmuls, divide by
// sqrt(D), decomposed softmax as generics.
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#red3 = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func @torch_sdpa
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x4x16x8xf32>, %[[K:[^:]*]]: tensor<2x4x20x8xf32>, %[[V:[^:]*]]: tensor<2x4x20x8xf32>)
// CHECK-NOT: linalg.
// CHECK: %[[O:.*]] = flash.attention %[[Q]], %[[K]], %[[V]] {scale = 0.353553385 : f32} : tensor<2x4x16x8xf32>, tensor<2x4x20x8xf32>, tensor<2x4x20x8xf32> -> tensor<2x4x16x8xf32>
// CHECK-NEXT: return %[[O]]
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

// -----

// The same with a bottom-right causal mask on the [B*H, M, N] scores: the
// diagonal's N - M is read through the transposed K (N = 20, not D = 8).
#map3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
#red3 = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func @torch_sdpa_causal
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x4x16x8xf32>, %[[K:[^:]*]]: tensor<2x4x20x8xf32>, %[[V:[^:]*]]: tensor<2x4x20x8xf32>)
// CHECK-NOT: linalg.
// CHECK: %[[O:.*]] = flash.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 0.353553385 : f32} : tensor<2x4x16x8xf32>, tensor<2x4x20x8xf32>, tensor<2x4x20x8xf32> -> tensor<2x4x16x8xf32>
// CHECK-NEXT: return %[[O]]
func.func @torch_sdpa_causal(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x20x8xf32>, %v: tensor<2x4x20x8xf32>) -> tensor<2x4x16x8xf32> {
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
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %c4 = arith.constant 4 : index
    %last = arith.addi %i, %c4 : index
    %keep = arith.cmpi sle, %j, %last : index
    %ninf0 = arith.constant 0xFF800000 : f32
    %r = arith.select %keep, %d, %ninf0 : f32
    linalg.yield %r : f32
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

// -----

// IREE input style: rank-2 single head, linalg.matmul with a transposing
// indexing map for K, linalg.softmax.
// CHECK-LABEL: func @iree_rank2
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<16x8xf32>, %[[K:[^:]*]]: tensor<20x8xf32>, %[[V:[^:]*]]: tensor<20x12xf32>)
// CHECK-NOT: linalg.
// CHECK: %[[O:.*]] = flash.attention %[[Q]], %[[K]], %[[V]] {scale = 1.250000e-01 : f32} : tensor<16x8xf32>, tensor<20x8xf32>, tensor<20x12xf32> -> tensor<16x12xf32>
// CHECK-NEXT: return %[[O]]
func.func @iree_rank2(%q: tensor<16x8xf32>, %k: tensor<20x8xf32>, %v: tensor<20x12xf32>) -> tensor<16x12xf32> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<16x20xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<16x20xf32>) -> tensor<16x20xf32>
  %s = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%q, %k : tensor<16x8xf32>, tensor<20x8xf32>) outs(%sz : tensor<16x20xf32>) -> tensor<16x20xf32>
  %sc = arith.constant dense<0.125> : tensor<16x20xf32>
  %x = linalg.map { arith.mulf } ins(%s, %sc : tensor<16x20xf32>, tensor<16x20xf32>) outs(%s0 : tensor<16x20xf32>)
  %p = linalg.softmax dimension(1) ins(%x : tensor<16x20xf32>) outs(%s0 : tensor<16x20xf32>) -> tensor<16x20xf32>
  %o0 = tensor.empty() : tensor<16x12xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<16x12xf32>) -> tensor<16x12xf32>
  %o = linalg.matmul ins(%p, %v : tensor<16x20xf32>, tensor<20x12xf32>) outs(%oz : tensor<16x12xf32>) -> tensor<16x12xf32>
  return %o : tensor<16x12xf32>
}

// -----

// JAX (stablehlo-to-linalg) style: dot_general as 5-D generics over
// [B, H, M, N, D], bf16 operands accumulating in f32, softmax through
// linalg.reduce + linalg.broadcast + linalg.map, multiplication by the
// reciprocal of the sum, P rounded to bf16 before the second dot.
#q = affine_map<(b, h, m, n, d) -> (b, h, m, d)>
#k = affine_map<(b, h, m, n, d) -> (b, h, n, d)>
#s = affine_map<(b, h, m, n, d) -> (b, h, m, n)>
#p = affine_map<(b, h, m, d, n) -> (b, h, m, n)>
#v = affine_map<(b, h, m, d, n) -> (b, h, n, d)>
#o = affine_map<(b, h, m, d, n) -> (b, h, m, d)>
// CHECK-LABEL: func @jax_bf16
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x3x10x16xbf16>, %[[K:[^:]*]]: tensor<2x3x14x16xbf16>, %[[V:[^:]*]]: tensor<2x3x14x16xbf16>)
// CHECK-NOT: linalg.reduce
// CHECK-NOT: math.exp
// CHECK: %[[O:.*]] = flash.attention %[[Q]], %[[K]], %[[V]] {scale = 2.500000e-01 : f32} : tensor<2x3x10x16xbf16>, tensor<2x3x14x16xbf16>, tensor<2x3x14x16xbf16> -> tensor<2x3x10x16xbf16>
// The f32 result of the second dot is the bf16 result widened, then rounded
// back by the frontend's own truncf.
// CHECK: linalg.generic {{.*}} ins(%[[O]] : tensor<2x3x10x16xbf16>) outs(%{{.*}} : tensor<2x3x10x16xf32>)
// CHECK: arith.extf
// CHECK: linalg.map
// CHECK: arith.truncf
// CHECK-NOT: tensor<2x3x10x14x
func.func @jax_bf16(%q: tensor<2x3x10x16xbf16>, %k: tensor<2x3x14x16xbf16>, %v: tensor<2x3x14x16xbf16>) -> tensor<2x3x10x16xbf16> {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<2x3x10x14xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x3x10x14xf32>) -> tensor<2x3x10x14xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x3x10x16xbf16>, tensor<2x3x14x16xbf16>) outs(%sz : tensor<2x3x10x14xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %m = arith.mulf %a32, %b32 : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x3x10x14xf32>
  %scale = arith.constant dense<0.25> : tensor<2x3x10x14xf32>
  %x = linalg.map { arith.mulf } ins(%s, %scale : tensor<2x3x10x14xf32>, tensor<2x3x10x14xf32>) outs(%s0 : tensor<2x3x10x14xf32>)
  %ninf = arith.constant 0xFF800000 : f32
  %r0 = tensor.empty() : tensor<2x3x10xf32>
  %ri = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<2x3x10xf32>) -> tensor<2x3x10xf32>
  %mx = linalg.reduce { arith.maximumf } ins(%x : tensor<2x3x10x14xf32>) outs(%ri : tensor<2x3x10xf32>) dimensions = [3]
  %mxb = linalg.broadcast ins(%mx : tensor<2x3x10xf32>) outs(%s0 : tensor<2x3x10x14xf32>) dimensions = [3]
  %d = linalg.map { arith.subf } ins(%x, %mxb : tensor<2x3x10x14xf32>, tensor<2x3x10x14xf32>) outs(%s0 : tensor<2x3x10x14xf32>)
  %e = linalg.map { math.exp } ins(%d : tensor<2x3x10x14xf32>) outs(%s0 : tensor<2x3x10x14xf32>)
  %li = linalg.fill ins(%zero : f32) outs(%r0 : tensor<2x3x10xf32>) -> tensor<2x3x10xf32>
  %l = linalg.reduce { arith.addf } ins(%e : tensor<2x3x10x14xf32>) outs(%li : tensor<2x3x10xf32>) dimensions = [3]
  %one = arith.constant dense<1.0> : tensor<2x3x10xf32>
  %rl = linalg.map { arith.divf } ins(%one, %l : tensor<2x3x10xf32>, tensor<2x3x10xf32>) outs(%r0 : tensor<2x3x10xf32>)
  %rlb = linalg.broadcast ins(%rl : tensor<2x3x10xf32>) outs(%s0 : tensor<2x3x10x14xf32>) dimensions = [3]
  %pf = linalg.map { arith.mulf } ins(%e, %rlb : tensor<2x3x10x14xf32>, tensor<2x3x10x14xf32>) outs(%s0 : tensor<2x3x10x14xf32>)
  %pb0 = tensor.empty() : tensor<2x3x10x14xbf16>
  %pb = linalg.map ins(%pf : tensor<2x3x10x14xf32>) outs(%pb0 : tensor<2x3x10x14xbf16>)
    (%in: f32, %init: bf16) {
      %t = arith.truncf %in : f32 to bf16
      linalg.yield %t : bf16
    }
  %o0 = tensor.empty() : tensor<2x3x10x16xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x3x10x16xf32>) -> tensor<2x3x10x16xf32>
  %of = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%pb, %v : tensor<2x3x10x14xbf16>, tensor<2x3x14x16xbf16>) outs(%oz : tensor<2x3x10x16xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %a32 = arith.extf %a : bf16 to f32
    %b32 = arith.extf %b : bf16 to f32
    %m = arith.mulf %a32, %b32 : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x3x10x16xf32>
  %ob0 = tensor.empty() : tensor<2x3x10x16xbf16>
  %ob = linalg.map ins(%of : tensor<2x3x10x16xf32>) outs(%ob0 : tensor<2x3x10x16xbf16>)
    (%in: f32, %init: bf16) {
      %t = arith.truncf %in : f32 to bf16
      linalg.yield %t : bf16
    }
  return %ob : tensor<2x3x10x16xbf16>
}

// -----

// Triton style: exp2 with log2(e) folded into the scale, reciprocal sum.
#id = affine_map<(b, m, n) -> (b, m, n)>
#row = affine_map<(b, m, n) -> (b, m)>
// CHECK-LABEL: func @exp2_folded
// CHECK-NOT: math.exp2
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 2.500000e-01 : f32} : tensor<3x12x16xf32>, tensor<3x12x16xf32>, tensor<3x12x16xf32> -> tensor<3x12x16xf32>
// CHECK-NOT: linalg.
func.func @exp2_folded(%q: tensor<3x12x16xf32>, %k: tensor<3x12x16xf32>, %v: tensor<3x12x16xf32>) -> tensor<3x12x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %kt0 = tensor.empty() : tensor<3x16x12xf32>
  %kt = linalg.transpose ins(%k : tensor<3x12x16xf32>) outs(%kt0 : tensor<3x16x12xf32>) permutation = [0, 2, 1]
  %s0 = tensor.empty() : tensor<3x12x12xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<3x12x12xf32>) -> tensor<3x12x12xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<3x12x16xf32>, tensor<3x16x12xf32>) outs(%sz : tensor<3x12x12xf32>) -> tensor<3x12x12xf32>
  // 0.25 * log2(e)
  %c = arith.constant 0.360673760 : f32
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

// -----

// No max subtraction, a causal mask from index comparison (M = N), an
// additive bias broadcast over the batch, and scale applied to Q first.
#id = affine_map<(b, m, n) -> (b, m, n)>
#row = affine_map<(b, m, n) -> (b, m)>
#bias = affine_map<(b, m, n) -> (m, n)>
// CHECK-LABEL: func @causal_bias_no_max
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x12x16xf32>, %[[K:[^:]*]]: tensor<2x12x16xf32>, %[[V:[^:]*]]: tensor<2x12x16xf32>, %[[B:[^:]*]]: tensor<12x12xf32>)
// CHECK-NOT: linalg.
// CHECK: flash.attention %[[Q]], %[[K]], %[[V]] bias(%[[B]] : tensor<12x12xf32>) {causal, scale = 2.500000e-01 : f32}
// CHECK-NOT: linalg.
func.func @causal_bias_no_max(%q: tensor<2x12x16xf32>, %k: tensor<2x12x16xf32>, %v: tensor<2x12x16xf32>, %bias: tensor<12x12xf32>) -> tensor<2x12x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %qs0 = tensor.empty() : tensor<2x12x16xf32>
  %c = arith.constant 0.25 : f32
  %qs = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%q : tensor<2x12x16xf32>) outs(%qs0 : tensor<2x12x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %c : f32
    linalg.yield %m : f32
  } -> tensor<2x12x16xf32>
  %s0 = tensor.empty() : tensor<2x12x12xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x12x12xf32>) -> tensor<2x12x12xf32>
  %s = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, d) -> (b, m, d)>, affine_map<(b, m, n, d) -> (b, n, d)>, affine_map<(b, m, n, d) -> (b, m, n)>]
      ins(%qs, %k : tensor<2x12x16xf32>, tensor<2x12x16xf32>) outs(%sz : tensor<2x12x12xf32>) -> tensor<2x12x12xf32>
  %x = linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %bias : tensor<2x12x12xf32>, tensor<12x12xf32>) outs(%s0 : tensor<2x12x12xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %i = linalg.index 1 : index
    %j = linalg.index 2 : index
    %hide = arith.cmpi ugt, %j, %i : index
    %t = arith.addf %a, %b : f32
    %r = arith.select %hide, %ninf, %t : f32
    linalg.yield %r : f32
  } -> tensor<2x12x12xf32>
  %e = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x : tensor<2x12x12xf32>) outs(%s0 : tensor<2x12x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.exp %a : f32
    linalg.yield %r : f32
  } -> tensor<2x12x12xf32>
  %r0 = tensor.empty() : tensor<2x12xf32>
  %li = linalg.fill ins(%zero : f32) outs(%r0 : tensor<2x12xf32>) -> tensor<2x12xf32>
  %l = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]} ins(%e : tensor<2x12x12xf32>) outs(%li : tensor<2x12xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<2x12xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%e, %l : tensor<2x12x12xf32>, tensor<2x12xf32>) outs(%s0 : tensor<2x12x12xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x12x12xf32>
  %o0 = tensor.empty() : tensor<2x12x16xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x12x16xf32>) -> tensor<2x12x16xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x12x12xf32>, tensor<2x12x16xf32>) outs(%oz : tensor<2x12x16xf32>) -> tensor<2x12x16xf32>
  return %o : tensor<2x12x16xf32>
}

// -----

// GQA as frontends spell repeat_kv: K/V [B, Hkv, N, D] expanded with a unit
// group dim, broadcast to G = 2 and collapsed to Hq = 4 heads; 4-D
// contractions as generics; i1 padding mask over keys.
#q = affine_map<(b, h, m, n, d) -> (b, h, m, d)>
#k = affine_map<(b, h, m, n, d) -> (b, h, n, d)>
#s = affine_map<(b, h, m, n, d) -> (b, h, m, n)>
#p = affine_map<(b, h, m, d, n) -> (b, h, m, n)>
#v = affine_map<(b, h, m, d, n) -> (b, h, n, d)>
#o = affine_map<(b, h, m, d, n) -> (b, h, m, d)>
#id4 = affine_map<(b, h, m, n) -> (b, h, m, n)>
#row4 = affine_map<(b, h, m, n) -> (b, h, m)>
#keys = affine_map<(b, h, m, n) -> (b, n)>
#rep_in = affine_map<(b, h, g, n, d) -> (b, h, 0, n, d)>
#rep_out = affine_map<(b, h, g, n, d) -> (b, h, g, n, d)>
// CHECK-LABEL: func @gqa_repeat_kv
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x4x10x8xf32>, %[[K:[^:]*]]: tensor<2x2x14x8xf32>, %[[V:[^:]*]]: tensor<2x2x14x8xf32>, %[[M:[^:]*]]: tensor<2x14xi1>)
// The key mask is read as [B, 1, 1, N].
// CHECK: %[[MASK:.*]] = linalg.generic {{.*}} ins(%[[M]] : tensor<2x14xi1>) outs(%{{.*}} : tensor<2x1x1x14xi1>)
// CHECK: flash.attention %[[Q]], %[[K]], %[[V]] mask(%[[MASK]] : tensor<2x1x1x14xi1>) {scale = 0.353553385 : f32} : tensor<2x4x10x8xf32>, tensor<2x2x14x8xf32>, tensor<2x2x14x8xf32> -> tensor<2x4x10x8xf32>
// CHECK-NOT: linalg.softmax
func.func @gqa_repeat_kv(%q: tensor<2x4x10x8xf32>, %k: tensor<2x2x14x8xf32>, %v: tensor<2x2x14x8xf32>, %mask: tensor<2x14xi1>) -> tensor<2x4x10x8xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %k5 = tensor.expand_shape %k [[0], [1, 2], [3], [4]] output_shape [2, 2, 1, 14, 8] : tensor<2x2x14x8xf32> into tensor<2x2x1x14x8xf32>
  %v5 = tensor.expand_shape %v [[0], [1, 2], [3], [4]] output_shape [2, 2, 1, 14, 8] : tensor<2x2x14x8xf32> into tensor<2x2x1x14x8xf32>
  %r0 = tensor.empty() : tensor<2x2x2x14x8xf32>
  %kr = linalg.generic {indexing_maps = [#rep_in, #rep_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%k5 : tensor<2x2x1x14x8xf32>) outs(%r0 : tensor<2x2x2x14x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x2x2x14x8xf32>
  %vr = linalg.generic {indexing_maps = [#rep_in, #rep_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%v5 : tensor<2x2x1x14x8xf32>) outs(%r0 : tensor<2x2x2x14x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  } -> tensor<2x2x2x14x8xf32>
  %k4 = tensor.collapse_shape %kr [[0], [1, 2], [3], [4]] : tensor<2x2x2x14x8xf32> into tensor<2x4x14x8xf32>
  %v4 = tensor.collapse_shape %vr [[0], [1, 2], [3], [4]] : tensor<2x2x2x14x8xf32> into tensor<2x4x14x8xf32>
  %s0 = tensor.empty() : tensor<2x4x10x14xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<2x4x10x14xf32>) -> tensor<2x4x10x14xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k4 : tensor<2x4x10x8xf32>, tensor<2x4x14x8xf32>) outs(%sz : tensor<2x4x10x14xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x10x14xf32>
  %x = linalg.generic {indexing_maps = [#id4, #keys, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %mask : tensor<2x4x10x14xf32>, tensor<2x14xi1>) outs(%s0 : tensor<2x4x10x14xf32>) {
  ^bb0(%a: f32, %keep: i1, %o: f32):
    %c = arith.constant 0.353553385 : f32
    %sc = arith.mulf %a, %c : f32
    %r = arith.select %keep, %sc, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<2x4x10x14xf32>
  %e0 = tensor.empty() : tensor<2x4x10x14xf32>
  %p = linalg.softmax dimension(3) ins(%x : tensor<2x4x10x14xf32>) outs(%e0 : tensor<2x4x10x14xf32>) -> tensor<2x4x10x14xf32>
  %o0 = tensor.empty() : tensor<2x4x10x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<2x4x10x8xf32>) -> tensor<2x4x10x8xf32>
  %o = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v4 : tensor<2x4x10x14xf32>, tensor<2x4x14x8xf32>) outs(%oz : tensor<2x4x10x8xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x4x10x8xf32>
  return %o : tensor<2x4x10x8xf32>
}

// -----

// MQA through an indexing map (K and V have no head dim), dynamic B, M, N,
// f16 operands with f32 scores, P rounded to f16, output accumulated in f32
// and rounded back.
#q = affine_map<(b, h, m, n, d) -> (b, h, m, d)>
#k = affine_map<(b, h, m, n, d) -> (b, n, d)>
#s = affine_map<(b, h, m, n, d) -> (b, h, m, n)>
#p = affine_map<(b, h, m, d, n) -> (b, h, m, n)>
#v = affine_map<(b, h, m, d, n) -> (b, n, d)>
#o = affine_map<(b, h, m, d, n) -> (b, h, m, d)>
#id4 = affine_map<(b, h, m, n) -> (b, h, m, n)>
#row4 = affine_map<(b, h, m, n) -> (b, h, m)>
// CHECK-LABEL: func @mqa_dynamic_f16
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<?x4x?x16xf16>, %[[K:[^:]*]]: tensor<?x?x16xf16>, %[[V:[^:]*]]: tensor<?x?x16xf16>)
// K and V get a unit head dim: one KV head for 4 query heads.
// CHECK: %[[K4:.*]] = linalg.generic {{.*}} ins(%[[K]] : tensor<?x?x16xf16>) outs(%{{.*}} : tensor<?x1x?x16xf16>)
// CHECK: %[[V4:.*]] = linalg.generic {{.*}} ins(%[[V]] : tensor<?x?x16xf16>) outs(%{{.*}} : tensor<?x1x?x16xf16>)
// CHECK: flash.attention %[[Q]], %[[K4]], %[[V4]] {scale = 1.000000e+00 : f32} : tensor<?x4x?x16xf16>, tensor<?x1x?x16xf16>, tensor<?x1x?x16xf16> -> tensor<?x4x?x16xf16>
// CHECK-NOT: math.exp
func.func @mqa_dynamic_f16(%q: tensor<?x4x?x16xf16>, %k: tensor<?x?x16xf16>, %v: tensor<?x?x16xf16>) -> tensor<?x4x?x16xf16> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %b = tensor.dim %q, %c0 : tensor<?x4x?x16xf16>
  %m = tensor.dim %q, %c2 : tensor<?x4x?x16xf16>
  %n = tensor.dim %k, %c1 : tensor<?x?x16xf16>
  %s0 = tensor.empty(%b, %m, %n) : tensor<?x4x?x?xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<?x4x?x?xf32>) -> tensor<?x4x?x?xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<?x4x?x16xf16>, tensor<?x?x16xf16>) outs(%sz : tensor<?x4x?x?xf32>) {
  ^bb0(%a: f16, %bb: f16, %acc: f32):
    %a32 = arith.extf %a : f16 to f32
    %b32 = arith.extf %bb : f16 to f32
    %mm = arith.mulf %a32, %b32 : f32
    %r = arith.addf %acc, %mm : f32
    linalg.yield %r : f32
  } -> tensor<?x4x?x?xf32>
  %r0 = tensor.empty(%b, %m) : tensor<?x4x?xf32>
  %ri = linalg.fill ins(%ninf : f32) outs(%r0 : tensor<?x4x?xf32>) -> tensor<?x4x?xf32>
  %mx = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%s : tensor<?x4x?x?xf32>) outs(%ri : tensor<?x4x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.maximumf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<?x4x?xf32>
  %e = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s, %mx : tensor<?x4x?x?xf32>, tensor<?x4x?xf32>) outs(%s0 : tensor<?x4x?x?xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %d = arith.subf %a, %bb : f32
    %x = math.exp %d : f32
    linalg.yield %x : f32
  } -> tensor<?x4x?x?xf32>
  %li = linalg.fill ins(%zero : f32) outs(%r0 : tensor<?x4x?xf32>) -> tensor<?x4x?xf32>
  %l = linalg.generic {indexing_maps = [#id4, #row4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%e : tensor<?x4x?x?xf32>) outs(%li : tensor<?x4x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.addf %a, %o : f32
    linalg.yield %r : f32
  } -> tensor<?x4x?xf32>
  %p0 = tensor.empty(%b, %m, %n) : tensor<?x4x?x?xf16>
  %p = linalg.generic {indexing_maps = [#id4, #row4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%e, %l : tensor<?x4x?x?xf32>, tensor<?x4x?xf32>) outs(%p0 : tensor<?x4x?x?xf16>) {
  ^bb0(%a: f32, %bb: f32, %o: f16):
    %d = arith.divf %a, %bb : f32
    %t = arith.truncf %d : f32 to f16
    linalg.yield %t : f16
  } -> tensor<?x4x?x?xf16>
  %o0 = tensor.empty(%b, %m) : tensor<?x4x?x16xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<?x4x?x16xf32>) -> tensor<?x4x?x16xf32>
  %of = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%p, %v : tensor<?x4x?x?xf16>, tensor<?x?x16xf16>) outs(%oz : tensor<?x4x?x16xf32>) {
  ^bb0(%a: f16, %bb: f16, %acc: f32):
    %a32 = arith.extf %a : f16 to f32
    %b32 = arith.extf %bb : f16 to f32
    %mm = arith.mulf %a32, %b32 : f32
    %r = arith.addf %acc, %mm : f32
    linalg.yield %r : f32
  } -> tensor<?x4x?x16xf32>
  %oh0 = tensor.empty(%b, %m) : tensor<?x4x?x16xf16>
  %oh = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%of : tensor<?x4x?x16xf32>) outs(%oh0 : tensor<?x4x?x16xf16>) {
  ^bb0(%a: f32, %o: f16):
    %t = arith.truncf %a : f32 to f16
    linalg.yield %t : f16
  } -> tensor<?x4x?x16xf16>
  return %oh : tensor<?x4x?x16xf16>
}

// -----

// Bottom-right causal with M = 6 < N = 10 written as j <= i + 4, a sliding
// window j >= i + 4 - 3, and a constant triangular i1 mask tensor.
#id = affine_map<(m, n) -> (m, n)>
// CHECK-LABEL: func @bottom_right_window_const_mask
// CHECK: %[[MASK:.*]] = arith.constant dense<
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} mask(%[[MASK]] : tensor<6x10xi1>) {causal, scale = 5.000000e-01 : f32, window = 3 : i64} : tensor<6x4xf32>, tensor<10x4xf32>, tensor<10x4xf32> -> tensor<6x4xf32>
// CHECK-NOT: linalg.softmax
func.func @bottom_right_window_const_mask(%q: tensor<6x4xf32>, %k: tensor<10x4xf32>, %v: tensor<10x4xf32>) -> tensor<6x4xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  %tri = arith.constant dense<[[true, true, true, true, true, false, true, true, true, true],
                               [true, true, true, true, true, true, true, true, true, true],
                               [true, false, true, true, true, true, true, true, true, true],
                               [true, true, true, true, true, true, true, true, true, true],
                               [true, true, true, true, true, true, true, true, false, true],
                               [true, true, true, true, true, true, true, true, true, true]]> : tensor<6x10xi1>
  %s0 = tensor.empty() : tensor<6x10xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<6x10xf32>) -> tensor<6x10xf32>
  %s = linalg.matmul indexing_maps = [affine_map<(m, n, d) -> (m, d)>, affine_map<(m, n, d) -> (n, d)>, affine_map<(m, n, d) -> (m, n)>]
      ins(%q, %k : tensor<6x4xf32>, tensor<10x4xf32>) outs(%sz : tensor<6x10xf32>) -> tensor<6x10xf32>
  %x = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%s, %tri : tensor<6x10xf32>, tensor<6x10xi1>) outs(%s0 : tensor<6x10xf32>) {
  ^bb0(%a: f32, %t: i1, %o: f32):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %last = arith.addi %i, %c4 : index
    %first = arith.subi %last, %c1 : index
    %first3 = arith.subi %first, %c1 : index
    %first2 = arith.subi %first3, %c1 : index
    %inside = arith.cmpi sle, %j, %last : index
    %recent = arith.cmpi sge, %j, %first2 : index
    %keep0 = arith.andi %inside, %recent : i1
    %keep = arith.andi %keep0, %t : i1
    %c = arith.constant 0.5 : f32
    %sc = arith.mulf %a, %c : f32
    %r = arith.select %keep, %sc, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<6x10xf32>
  %p = linalg.softmax dimension(1) ins(%x : tensor<6x10xf32>) outs(%s0 : tensor<6x10xf32>) -> tensor<6x10xf32>
  %o0 = tensor.empty() : tensor<6x4xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<6x4xf32>) -> tensor<6x4xf32>
  %o = linalg.matmul ins(%p, %v : tensor<6x10xf32>, tensor<10x4xf32>) outs(%oz : tensor<6x4xf32>) -> tensor<6x4xf32>
  return %o : tensor<6x4xf32>
}

// -----

// torch-mlir's SDPA decomposition: 3-D batch matmuls over [B*H, S, D], with
// the scores expanded to [B, H, M, N] for a 4-D softmax and collapsed back.
// CHECK-LABEL: func @torch_4d_softmax_between_3d_bmm
// CHECK-SAME: (%[[Q:[^:]*]]: tensor<2x3x10x8xf32>, %[[K:[^:]*]]: tensor<2x3x12x8xf32>, %[[V:[^:]*]]: tensor<2x3x12x8xf32>)
// CHECK-NOT: linalg.
// CHECK: %[[O:.*]] = flash.attention %[[Q]], %[[K]], %[[V]] {scale = 0.353553385 : f32} : tensor<2x3x10x8xf32>, tensor<2x3x12x8xf32>, tensor<2x3x12x8xf32> -> tensor<2x3x10x8xf32>
// CHECK-NEXT: return %[[O]]
func.func @torch_4d_softmax_between_3d_bmm(%q: tensor<2x3x10x8xf32>, %k: tensor<2x3x12x8xf32>, %v: tensor<2x3x12x8xf32>) -> tensor<2x3x10x8xf32> {
  %zero = arith.constant 0.0 : f32
  %q3 = tensor.collapse_shape %q [[0, 1], [2], [3]] : tensor<2x3x10x8xf32> into tensor<6x10x8xf32>
  %k3 = tensor.collapse_shape %k [[0, 1], [2], [3]] : tensor<2x3x12x8xf32> into tensor<6x12x8xf32>
  %v3 = tensor.collapse_shape %v [[0, 1], [2], [3]] : tensor<2x3x12x8xf32> into tensor<6x12x8xf32>
  %kt0 = tensor.empty() : tensor<6x8x12xf32>
  %kt = linalg.transpose ins(%k3 : tensor<6x12x8xf32>) outs(%kt0 : tensor<6x8x12xf32>) permutation = [0, 2, 1]
  %s0 = tensor.empty() : tensor<6x10x12xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<6x10x12xf32>) -> tensor<6x10x12xf32>
  %s = linalg.batch_matmul ins(%q3, %kt : tensor<6x10x8xf32>, tensor<6x8x12xf32>) outs(%sz : tensor<6x10x12xf32>) -> tensor<6x10x12xf32>
  %s4 = tensor.expand_shape %s [[0, 1], [2], [3]] output_shape [2, 3, 10, 12] : tensor<6x10x12xf32> into tensor<2x3x10x12xf32>
  %c = arith.constant dense<0.353553385> : tensor<2x3x10x12xf32>
  %e0 = tensor.empty() : tensor<2x3x10x12xf32>
  %x = linalg.map { arith.mulf } ins(%s4, %c : tensor<2x3x10x12xf32>, tensor<2x3x10x12xf32>) outs(%e0 : tensor<2x3x10x12xf32>)
  %p4 = linalg.softmax dimension(3) ins(%x : tensor<2x3x10x12xf32>) outs(%e0 : tensor<2x3x10x12xf32>) -> tensor<2x3x10x12xf32>
  %p = tensor.collapse_shape %p4 [[0, 1], [2], [3]] : tensor<2x3x10x12xf32> into tensor<6x10x12xf32>
  %o0 = tensor.empty() : tensor<6x10x8xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<6x10x8xf32>) -> tensor<6x10x8xf32>
  %o3 = linalg.batch_matmul ins(%p, %v3 : tensor<6x10x12xf32>, tensor<6x12x8xf32>) outs(%oz : tensor<6x10x8xf32>) -> tensor<6x10x8xf32>
  %o = tensor.expand_shape %o3 [[0, 1], [2], [3]] output_shape [2, 3, 10, 8] : tensor<6x10x8xf32> into tensor<2x3x10x8xf32>
  return %o : tensor<2x3x10x8xf32>
}
