// Attention as PyTorch code writes it by hand (nanoGPT / minGPT style:
// q @ k.transpose(-1, -2) / sqrt(d), masked_fill(~tril(ones(M, N)), -inf),
// softmax in float32, cast back, @ v; here in f32 so that the CPU numbers
// compare tightly), exported one linalg op per torch op by
// flash_mlir.region (what the torch.compile backend sends to the compiler).
// The causal mask is built inside the graph (ones, tril, ~); the matcher reads
// its diagonal. A mask read from an argument reaches flash.attention as it is.
// RUN: flash-opt %s -split-input-file --flash-fuse-attention --linalg-fuse-elementwise-ops --canonicalize | FileCheck %s
// RUN: flash-opt %s -split-input-file --flash-fuse-attention=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: %python -m flash_mlir.fusion_check %s | FileCheck %s --check-prefix=NUM
// NUM-NOT: FAIL
// NUM: fusion_check: 0 failure(s)

// Causal mask from ~tril(ones(M, M)).
// REMARK: remark: fused attention: {{.*}} mask = causal
// CHECK-LABEL: func @causal_tril
// CHECK-NOT: linalg.
// CHECK: flash.attention %arg0, %arg1, %arg2 {causal, scale = 0.353553385 : f32}
// CHECK-NEXT: return
func.func @causal_tril(%arg0: tensor<1x2x24x8xf32>, %arg1: tensor<1x2x24x8xf32>, %arg2: tensor<1x2x24x8xf32>) -> tensor<1x2x24x8xf32> {
  %e1 = tensor.empty() : tensor<1x2x8x24xf32>
  %v2 = linalg.transpose ins(%arg1 : tensor<1x2x24x8xf32>) outs(%e1 : tensor<1x2x8x24xf32>) permutation = [0, 1, 3, 2]
  %c3 = arith.constant 0.0 : f32
  %e4 = tensor.empty() : tensor<1x2x24x24xf32>
  %v5 = linalg.fill ins(%c3 : f32) outs(%e4 : tensor<1x2x24x24xf32>) -> tensor<1x2x24x24xf32>
  %v6 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %v2 : tensor<1x2x24x8xf32>, tensor<1x2x8x24xf32>) outs(%v5 : tensor<1x2x24x24xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x2x24x24xf32>
  %c7 = arith.constant 2.8284271247461903 : f32
  %e8 = tensor.empty() : tensor<1x2x24x24xf32>
  %v9 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v6 : tensor<1x2x24x24xf32>) outs(%e8 : tensor<1x2x24x24xf32>) {
  ^bb0(%a0: f32, %out: f32):
    %r = arith.divf %a0, %c7 : f32
    linalg.yield %r : f32
  } -> tensor<1x2x24x24xf32>
  %c10 = arith.constant true
  %e11 = tensor.empty() : tensor<24x24xi1>
  %v12 = linalg.fill ins(%c10 : i1) outs(%e11 : tensor<24x24xi1>) -> tensor<24x24xi1>
  %c13 = arith.constant false
  %e14 = tensor.empty() : tensor<24x24xi1>
  %v15 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v12 : tensor<24x24xi1>) outs(%e14 : tensor<24x24xi1>) {
  ^bb0(%a0: i1, %out: i1):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %dg = arith.constant 0 : index
    %last = arith.addi %i, %dg : index
    %keep = arith.cmpi sle, %j, %last : index
    %r = arith.select %keep, %a0, %c13 : i1
    linalg.yield %r : i1
  } -> tensor<24x24xi1>
  %c16 = arith.constant true
  %e17 = tensor.empty() : tensor<24x24xi1>
  %v18 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v15 : tensor<24x24xi1>) outs(%e17 : tensor<24x24xi1>) {
  ^bb0(%a0: i1, %out: i1):
    %r = arith.xori %a0, %c16 : i1
    linalg.yield %r : i1
  } -> tensor<24x24xi1>
  %c19 = arith.constant 0xFF800000 : f32
  %e20 = tensor.empty() : tensor<1x2x24x24xf32>
  %v21 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v9, %v18 : tensor<1x2x24x24xf32>, tensor<24x24xi1>) outs(%e20 : tensor<1x2x24x24xf32>) {
  ^bb0(%a0: f32, %a1: i1, %out: f32):
    %r = arith.select %a1, %c19, %a0 : f32
    linalg.yield %r : f32
  } -> tensor<1x2x24x24xf32>
  %e22 = tensor.empty() : tensor<1x2x24x24xf32>
  %v23 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v21 : tensor<1x2x24x24xf32>) outs(%e22 : tensor<1x2x24x24xf32>) {
  ^bb0(%a0: f32, %out: f32):
    linalg.yield %a0 : f32
  } -> tensor<1x2x24x24xf32>
  %e24 = tensor.empty() : tensor<1x2x24x24xf32>
  %v25 = linalg.softmax dimension(3) ins(%v23 : tensor<1x2x24x24xf32>) outs(%e24 : tensor<1x2x24x24xf32>) -> tensor<1x2x24x24xf32>
  %e26 = tensor.empty() : tensor<1x2x24x24xf32>
  %v27 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v25 : tensor<1x2x24x24xf32>) outs(%e26 : tensor<1x2x24x24xf32>) {
  ^bb0(%a0: f32, %out: f32):
    linalg.yield %a0 : f32
  } -> tensor<1x2x24x24xf32>
  %c28 = arith.constant 0.0 : f32
  %e29 = tensor.empty() : tensor<1x2x24x8xf32>
  %v30 = linalg.fill ins(%c28 : f32) outs(%e29 : tensor<1x2x24x8xf32>) -> tensor<1x2x24x8xf32>
  %v31 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%v27, %arg2 : tensor<1x2x24x24xf32>, tensor<1x2x24x8xf32>) outs(%v30 : tensor<1x2x24x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x2x24x8xf32>
  return %v31 : tensor<1x2x24x8xf32>
}
// -----

// An f32 bias [M, N] and an i1 mask [B, 1, M, N] (masked_fill(~mask)).
// REMARK: remark: fused attention: {{.*}} mask = 1 i1 tensor(s), bias = 1 tensor(s)
// CHECK-LABEL: func @bias_and_mask
// CHECK-NOT: linalg.
// CHECK: flash.attention %arg0, %arg1, %arg2 bias(%arg3 : tensor<16x16xf32>) mask(%arg4 : tensor<1x1x16x16xi1>) {scale = 0.353553385 : f32}
func.func @bias_and_mask(%arg0: tensor<1x2x16x8xf32>, %arg1: tensor<1x2x16x8xf32>, %arg2: tensor<1x2x16x8xf32>, %arg3: tensor<16x16xf32>, %arg4: tensor<1x1x16x16xi1>) -> tensor<1x2x16x8xf32> {
  %e1 = tensor.empty() : tensor<1x2x8x16xf32>
  %v2 = linalg.transpose ins(%arg1 : tensor<1x2x16x8xf32>) outs(%e1 : tensor<1x2x8x16xf32>) permutation = [0, 1, 3, 2]
  %c3 = arith.constant 0.0 : f32
  %e4 = tensor.empty() : tensor<1x2x16x16xf32>
  %v5 = linalg.fill ins(%c3 : f32) outs(%e4 : tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32>
  %v6 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %v2 : tensor<1x2x16x8xf32>, tensor<1x2x8x16xf32>) outs(%v5 : tensor<1x2x16x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x2x16x16xf32>
  %c7 = arith.constant 2.8284271247461903 : f32
  %e8 = tensor.empty() : tensor<1x2x16x16xf32>
  %v9 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v6 : tensor<1x2x16x16xf32>) outs(%e8 : tensor<1x2x16x16xf32>) {
  ^bb0(%a0: f32, %out: f32):
    %r = arith.divf %a0, %c7 : f32
    linalg.yield %r : f32
  } -> tensor<1x2x16x16xf32>
  %e10 = tensor.empty() : tensor<1x2x16x16xf32>
  %v11 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v9, %arg3 : tensor<1x2x16x16xf32>, tensor<16x16xf32>) outs(%e10 : tensor<1x2x16x16xf32>) {
  ^bb0(%a0: f32, %a1: f32, %out: f32):
    %r = arith.addf %a0, %a1 : f32
    linalg.yield %r : f32
  } -> tensor<1x2x16x16xf32>
  %c12 = arith.constant true
  %e13 = tensor.empty() : tensor<1x1x16x16xi1>
  %v14 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg4 : tensor<1x1x16x16xi1>) outs(%e13 : tensor<1x1x16x16xi1>) {
  ^bb0(%a0: i1, %out: i1):
    %r = arith.xori %a0, %c12 : i1
    linalg.yield %r : i1
  } -> tensor<1x1x16x16xi1>
  %c15 = arith.constant 0xFF800000 : f32
  %e16 = tensor.empty() : tensor<1x2x16x16xf32>
  %v17 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v11, %v14 : tensor<1x2x16x16xf32>, tensor<1x1x16x16xi1>) outs(%e16 : tensor<1x2x16x16xf32>) {
  ^bb0(%a0: f32, %a1: i1, %out: f32):
    %r = arith.select %a1, %c15, %a0 : f32
    linalg.yield %r : f32
  } -> tensor<1x2x16x16xf32>
  %e18 = tensor.empty() : tensor<1x2x16x16xf32>
  %v19 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v17 : tensor<1x2x16x16xf32>) outs(%e18 : tensor<1x2x16x16xf32>) {
  ^bb0(%a0: f32, %out: f32):
    linalg.yield %a0 : f32
  } -> tensor<1x2x16x16xf32>
  %e20 = tensor.empty() : tensor<1x2x16x16xf32>
  %v21 = linalg.softmax dimension(3) ins(%v19 : tensor<1x2x16x16xf32>) outs(%e20 : tensor<1x2x16x16xf32>) -> tensor<1x2x16x16xf32>
  %e22 = tensor.empty() : tensor<1x2x16x16xf32>
  %v23 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v21 : tensor<1x2x16x16xf32>) outs(%e22 : tensor<1x2x16x16xf32>) {
  ^bb0(%a0: f32, %out: f32):
    linalg.yield %a0 : f32
  } -> tensor<1x2x16x16xf32>
  %c24 = arith.constant 0.0 : f32
  %e25 = tensor.empty() : tensor<1x2x16x8xf32>
  %v26 = linalg.fill ins(%c24 : f32) outs(%e25 : tensor<1x2x16x8xf32>) -> tensor<1x2x16x8xf32>
  %v27 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%v23, %arg2 : tensor<1x2x16x16xf32>, tensor<1x2x16x8xf32>) outs(%v26 : tensor<1x2x16x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x2x16x8xf32>
  return %v27 : tensor<1x2x16x8xf32>
}
// -----

// tril(ones(M, N)) with M != N keeps j <= i (top-left), not flash.attention's bottom-right causal: not fused, with the reason.
// REMARK: remark: not fused: the causal diagonal j - i <= 0 is not flash.attention's bottom-right alignment (N - M = 8)
// CHECK-LABEL: func @no_top_left_tril
// CHECK-NOT: flash.attention
func.func @no_top_left_tril(%arg0: tensor<1x2x8x8xf32>, %arg1: tensor<1x2x16x8xf32>, %arg2: tensor<1x2x16x8xf32>) -> tensor<1x2x8x8xf32> {
  %e1 = tensor.empty() : tensor<1x2x8x16xf32>
  %v2 = linalg.transpose ins(%arg1 : tensor<1x2x16x8xf32>) outs(%e1 : tensor<1x2x8x16xf32>) permutation = [0, 1, 3, 2]
  %c3 = arith.constant 0.0 : f32
  %e4 = tensor.empty() : tensor<1x2x8x16xf32>
  %v5 = linalg.fill ins(%c3 : f32) outs(%e4 : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %v6 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %v2 : tensor<1x2x8x8xf32>, tensor<1x2x8x16xf32>) outs(%v5 : tensor<1x2x8x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x2x8x16xf32>
  %c7 = arith.constant 2.8284271247461903 : f32
  %e8 = tensor.empty() : tensor<1x2x8x16xf32>
  %v9 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v6 : tensor<1x2x8x16xf32>) outs(%e8 : tensor<1x2x8x16xf32>) {
  ^bb0(%a0: f32, %out: f32):
    %r = arith.divf %a0, %c7 : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  %c10 = arith.constant true
  %e11 = tensor.empty() : tensor<8x16xi1>
  %v12 = linalg.fill ins(%c10 : i1) outs(%e11 : tensor<8x16xi1>) -> tensor<8x16xi1>
  %c13 = arith.constant false
  %e14 = tensor.empty() : tensor<8x16xi1>
  %v15 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v12 : tensor<8x16xi1>) outs(%e14 : tensor<8x16xi1>) {
  ^bb0(%a0: i1, %out: i1):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %dg = arith.constant 0 : index
    %last = arith.addi %i, %dg : index
    %keep = arith.cmpi sle, %j, %last : index
    %r = arith.select %keep, %a0, %c13 : i1
    linalg.yield %r : i1
  } -> tensor<8x16xi1>
  %c16 = arith.constant true
  %e17 = tensor.empty() : tensor<8x16xi1>
  %v18 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v15 : tensor<8x16xi1>) outs(%e17 : tensor<8x16xi1>) {
  ^bb0(%a0: i1, %out: i1):
    %r = arith.xori %a0, %c16 : i1
    linalg.yield %r : i1
  } -> tensor<8x16xi1>
  %c19 = arith.constant 0xFF800000 : f32
  %e20 = tensor.empty() : tensor<1x2x8x16xf32>
  %v21 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v9, %v18 : tensor<1x2x8x16xf32>, tensor<8x16xi1>) outs(%e20 : tensor<1x2x8x16xf32>) {
  ^bb0(%a0: f32, %a1: i1, %out: f32):
    %r = arith.select %a1, %c19, %a0 : f32
    linalg.yield %r : f32
  } -> tensor<1x2x8x16xf32>
  %e22 = tensor.empty() : tensor<1x2x8x16xf32>
  %v23 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v21 : tensor<1x2x8x16xf32>) outs(%e22 : tensor<1x2x8x16xf32>) {
  ^bb0(%a0: f32, %out: f32):
    linalg.yield %a0 : f32
  } -> tensor<1x2x8x16xf32>
  %e24 = tensor.empty() : tensor<1x2x8x16xf32>
  %v25 = linalg.softmax dimension(3) ins(%v23 : tensor<1x2x8x16xf32>) outs(%e24 : tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  %e26 = tensor.empty() : tensor<1x2x8x16xf32>
  %v27 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v25 : tensor<1x2x8x16xf32>) outs(%e26 : tensor<1x2x8x16xf32>) {
  ^bb0(%a0: f32, %out: f32):
    linalg.yield %a0 : f32
  } -> tensor<1x2x8x16xf32>
  %c28 = arith.constant 0.0 : f32
  %e29 = tensor.empty() : tensor<1x2x8x8xf32>
  %v30 = linalg.fill ins(%c28 : f32) outs(%e29 : tensor<1x2x8x8xf32>) -> tensor<1x2x8x8xf32>
  %v31 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%v27, %arg2 : tensor<1x2x8x16xf32>, tensor<1x2x16x8xf32>) outs(%v30 : tensor<1x2x8x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<1x2x8x8xf32>
  return %v31 : tensor<1x2x8x8xf32>
}

