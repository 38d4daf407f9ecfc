// Attention from torch.compile with dynamic sizes, as flash_mlir.region
// exports it (the nanoGPT-style causal block of
// flash-fuse-attention-torch-graph.mlir): dynamic dims are `?`, and each
// argument's flash.sizes names torch's symbols. M = N = s0 makes the
// ~tril(ones(M, N)) mask provably bottom-right (causal); M = s0, N = s2
// does not, and the compiler says why.
// RUN: flash-opt %s -split-input-file --flash-fuse-attention --linalg-fuse-elementwise-ops --canonicalize | FileCheck %s
// RUN: flash-opt %s -split-input-file --flash-fuse-attention=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: %python -m flash_mlir.fusion_check %s | FileCheck %s --check-prefix=NUM
// NUM-NOT: FAIL
// NUM: fusion_check: 0 failure(s)

// REMARK: remark: fused attention: {{.*}} mask = causal
// CHECK-LABEL: func @same_symbol
// CHECK-NOT: linalg.
// CHECK: flash.attention %arg0, %arg1, %arg2 {causal, scale = 0.353553385 : f32} : tensor<?x2x?x8xf32>
// CHECK-NEXT: return
func.func @same_symbol(%arg0: tensor<?x2x?x8xf32> {flash.sizes = ["s1", 2, "s0", 8]}, %arg1: tensor<?x2x?x8xf32> {flash.sizes = ["s1", 2, "s0", 8]}, %arg2: tensor<?x2x?x8xf32> {flash.sizes = ["s1", 2, "s0", 8]}) -> tensor<?x2x?x8xf32> {
  %c1 = arith.constant 0 : index
  %d2 = tensor.dim %arg0, %c1 : tensor<?x2x?x8xf32>
  %c3 = arith.constant 2 : index
  %d4 = tensor.dim %arg0, %c3 : tensor<?x2x?x8xf32>
  %e5 = tensor.empty(%d2, %d4) : tensor<?x2x8x?xf32>
  %v6 = linalg.transpose ins(%arg1 : tensor<?x2x?x8xf32>) outs(%e5 : tensor<?x2x8x?xf32>) permutation = [0, 1, 3, 2]
  %c7 = arith.constant 0.0 : f32
  %e8 = tensor.empty(%d2, %d4, %d4) : tensor<?x2x?x?xf32>
  %v9 = linalg.fill ins(%c7 : f32) outs(%e8 : tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %v10 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %v6 : tensor<?x2x?x8xf32>, tensor<?x2x8x?xf32>) outs(%v9 : tensor<?x2x?x?xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x2x?x?xf32>
  %c11 = arith.constant 2.8284271247461903 : f32
  %e12 = tensor.empty(%d2, %d4, %d4) : tensor<?x2x?x?xf32>
  %v13 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v10 : tensor<?x2x?x?xf32>) outs(%e12 : tensor<?x2x?x?xf32>) {
  ^bb0(%a0: f32, %out: f32):
    %r = arith.divf %a0, %c11 : f32
    linalg.yield %r : f32
  } -> tensor<?x2x?x?xf32>
  %c14 = arith.constant true
  %e15 = tensor.empty(%d4, %d4) : tensor<?x?xi1>
  %v16 = linalg.fill ins(%c14 : i1) outs(%e15 : tensor<?x?xi1>) -> tensor<?x?xi1>
  %c17 = arith.constant false
  %e18 = tensor.empty(%d4, %d4) : tensor<?x?xi1>
  %v19 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v16 : tensor<?x?xi1>) outs(%e18 : tensor<?x?xi1>) {
  ^bb0(%a0: i1, %out: i1):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %dg = arith.constant 0 : index
    %last = arith.addi %i, %dg : index
    %keep = arith.cmpi sle, %j, %last : index
    %r = arith.select %keep, %a0, %c17 : i1
    linalg.yield %r : i1
  } -> tensor<?x?xi1>
  %c20 = arith.constant true
  %e21 = tensor.empty(%d4, %d4) : tensor<?x?xi1>
  %v22 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v19 : tensor<?x?xi1>) outs(%e21 : tensor<?x?xi1>) {
  ^bb0(%a0: i1, %out: i1):
    %r = arith.xori %a0, %c20 : i1
    linalg.yield %r : i1
  } -> tensor<?x?xi1>
  %c23 = arith.constant 0xFF800000 : f32
  %e24 = tensor.empty(%d2, %d4, %d4) : tensor<?x2x?x?xf32>
  %v25 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v13, %v22 : tensor<?x2x?x?xf32>, tensor<?x?xi1>) outs(%e24 : tensor<?x2x?x?xf32>) {
  ^bb0(%a0: f32, %a1: i1, %out: f32):
    %r = arith.select %a1, %c23, %a0 : f32
    linalg.yield %r : f32
  } -> tensor<?x2x?x?xf32>
  %e26 = tensor.empty(%d2, %d4, %d4) : tensor<?x2x?x?xf32>
  %v27 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v25 : tensor<?x2x?x?xf32>) outs(%e26 : tensor<?x2x?x?xf32>) {
  ^bb0(%a0: f32, %out: f32):
    linalg.yield %a0 : f32
  } -> tensor<?x2x?x?xf32>
  %e28 = tensor.empty(%d2, %d4, %d4) : tensor<?x2x?x?xf32>
  %v29 = linalg.softmax dimension(3) ins(%v27 : tensor<?x2x?x?xf32>) outs(%e28 : tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %e30 = tensor.empty(%d2, %d4, %d4) : tensor<?x2x?x?xf32>
  %v31 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v29 : tensor<?x2x?x?xf32>) outs(%e30 : tensor<?x2x?x?xf32>) {
  ^bb0(%a0: f32, %out: f32):
    linalg.yield %a0 : f32
  } -> tensor<?x2x?x?xf32>
  %c32 = arith.constant 0.0 : f32
  %e33 = tensor.empty(%d2, %d4) : tensor<?x2x?x8xf32>
  %v34 = linalg.fill ins(%c32 : f32) outs(%e33 : tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %v35 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%v31, %arg2 : tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) outs(%v34 : tensor<?x2x?x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x2x?x8xf32>
  return %v35 : tensor<?x2x?x8xf32>
}

// -----

// REMARK: remark: not fused: a causal mask on dynamic sequence lengths cannot be proven to align bottom-right
// CHECK-LABEL: func @two_symbols
// CHECK-NOT: flash.attention
// CHECK: linalg.softmax
func.func @two_symbols(%arg0: tensor<?x2x?x8xf32> {flash.sizes = ["s1", 2, "s0", 8]}, %arg1: tensor<?x2x?x8xf32> {flash.sizes = ["s1", 2, "s2", 8]}, %arg2: tensor<?x2x?x8xf32> {flash.sizes = ["s1", 2, "s2", 8]}) -> tensor<?x2x?x8xf32> {
  %c1 = arith.constant 0 : index
  %d2 = tensor.dim %arg0, %c1 : tensor<?x2x?x8xf32>
  %c3 = arith.constant 2 : index
  %d4 = tensor.dim %arg0, %c3 : tensor<?x2x?x8xf32>
  %c5 = arith.constant 2 : index
  %d6 = tensor.dim %arg1, %c5 : tensor<?x2x?x8xf32>
  %e7 = tensor.empty(%d2, %d6) : tensor<?x2x8x?xf32>
  %v8 = linalg.transpose ins(%arg1 : tensor<?x2x?x8xf32>) outs(%e7 : tensor<?x2x8x?xf32>) permutation = [0, 1, 3, 2]
  %c9 = arith.constant 0.0 : f32
  %e10 = tensor.empty(%d2, %d4, %d6) : tensor<?x2x?x?xf32>
  %v11 = linalg.fill ins(%c9 : f32) outs(%e10 : tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %v12 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%arg0, %v8 : tensor<?x2x?x8xf32>, tensor<?x2x8x?xf32>) outs(%v11 : tensor<?x2x?x?xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x2x?x?xf32>
  %c13 = arith.constant 2.8284271247461903 : f32
  %e14 = tensor.empty(%d2, %d4, %d6) : tensor<?x2x?x?xf32>
  %v15 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v12 : tensor<?x2x?x?xf32>) outs(%e14 : tensor<?x2x?x?xf32>) {
  ^bb0(%a0: f32, %out: f32):
    %r = arith.divf %a0, %c13 : f32
    linalg.yield %r : f32
  } -> tensor<?x2x?x?xf32>
  %c16 = arith.constant true
  %e17 = tensor.empty(%d4, %d6) : tensor<?x?xi1>
  %v18 = linalg.fill ins(%c16 : i1) outs(%e17 : tensor<?x?xi1>) -> tensor<?x?xi1>
  %c19 = arith.constant false
  %e20 = tensor.empty(%d4, %d6) : tensor<?x?xi1>
  %v21 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v18 : tensor<?x?xi1>) outs(%e20 : tensor<?x?xi1>) {
  ^bb0(%a0: i1, %out: i1):
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %dg = arith.constant 0 : index
    %last = arith.addi %i, %dg : index
    %keep = arith.cmpi sle, %j, %last : index
    %r = arith.select %keep, %a0, %c19 : i1
    linalg.yield %r : i1
  } -> tensor<?x?xi1>
  %c22 = arith.constant true
  %e23 = tensor.empty(%d4, %d6) : tensor<?x?xi1>
  %v24 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%v21 : tensor<?x?xi1>) outs(%e23 : tensor<?x?xi1>) {
  ^bb0(%a0: i1, %out: i1):
    %r = arith.xori %a0, %c22 : i1
    linalg.yield %r : i1
  } -> tensor<?x?xi1>
  %c25 = arith.constant 0xFF800000 : f32
  %e26 = tensor.empty(%d2, %d4, %d6) : tensor<?x2x?x?xf32>
  %v27 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v15, %v24 : tensor<?x2x?x?xf32>, tensor<?x?xi1>) outs(%e26 : tensor<?x2x?x?xf32>) {
  ^bb0(%a0: f32, %a1: i1, %out: f32):
    %r = arith.select %a1, %c25, %a0 : f32
    linalg.yield %r : f32
  } -> tensor<?x2x?x?xf32>
  %e28 = tensor.empty(%d2, %d4, %d6) : tensor<?x2x?x?xf32>
  %v29 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v27 : tensor<?x2x?x?xf32>) outs(%e28 : tensor<?x2x?x?xf32>) {
  ^bb0(%a0: f32, %out: f32):
    linalg.yield %a0 : f32
  } -> tensor<?x2x?x?xf32>
  %e30 = tensor.empty(%d2, %d4, %d6) : tensor<?x2x?x?xf32>
  %v31 = linalg.softmax dimension(3) ins(%v29 : tensor<?x2x?x?xf32>) outs(%e30 : tensor<?x2x?x?xf32>) -> tensor<?x2x?x?xf32>
  %e32 = tensor.empty(%d2, %d4, %d6) : tensor<?x2x?x?xf32>
  %v33 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%v31 : tensor<?x2x?x?xf32>) outs(%e32 : tensor<?x2x?x?xf32>) {
  ^bb0(%a0: f32, %out: f32):
    linalg.yield %a0 : f32
  } -> tensor<?x2x?x?xf32>
  %c34 = arith.constant 0.0 : f32
  %e35 = tensor.empty(%d2, %d4) : tensor<?x2x?x8xf32>
  %v36 = linalg.fill ins(%c34 : f32) outs(%e35 : tensor<?x2x?x8xf32>) -> tensor<?x2x?x8xf32>
  %v37 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d4, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%v33, %arg2 : tensor<?x2x?x?xf32>, tensor<?x2x?x8xf32>) outs(%v36 : tensor<?x2x?x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<?x2x?x8xf32>
  return %v37 : tensor<?x2x?x8xf32>
}
