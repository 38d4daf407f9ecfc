// Malformed attention IR through every flash pass and pipeline: a located
// diagnostic and exit status 1, never a crash.
// RUN: not flash-opt %s -split-input-file --flash-decompose-attention 2>&1 | FileCheck %s
// RUN: not flash-opt %s -split-input-file --flash-decompose-aggregates 2>&1 | FileCheck %s
// RUN: not flash-opt %s -split-input-file --flash-cpu-pipeline 2>&1 | FileCheck %s
// RUN: not flash-opt %s -split-input-file -canonicalize 2>&1 | FileCheck %s
// RUN: %python %S/../Inputs/expect_exit.py 1 flash-opt %s --flash-cpu-pipeline
// RUN: %python %S/../Inputs/expect_exit.py 1 flash-opt %s --flash-decompose-attention

func.func @gqa_ratio(%q: tensor<1x6x8x16xf16>, %k: tensor<1x4x8x16xf16>) -> tensor<1x6x8x16xf16> {
  // CHECK: bad-input.mlir:[[@LINE+1]]:8: error: 'flash.attention' op expects the number of query heads (6) to be a multiple of the number of key/value heads (4)
  %o = flash.attention %q, %k, %k : tensor<1x6x8x16xf16>, tensor<1x4x8x16xf16>, tensor<1x4x8x16xf16> -> tensor<1x6x8x16xf16>
  return %o : tensor<1x6x8x16xf16>
}

// -----

func.func @head_dim(%q: tensor<1x2x8x64xf16>, %k: tensor<1x2x8x32xf16>) -> tensor<1x2x8x32xf16> {
  // CHECK: bad-input.mlir:[[@LINE+1]]:8: error: 'flash.attention' op expects query and key to share the head dimension D, got 64 and 32
  %o = flash.attention %q, %k, %k : tensor<1x2x8x64xf16>, tensor<1x2x8x32xf16>, tensor<1x2x8x32xf16> -> tensor<1x2x8x32xf16>
  return %o : tensor<1x2x8x32xf16>
}

// -----

func.func @lse(%q: tensor<2x8x16xf32>) -> tensor<2x8xf16> {
  // CHECK: bad-input.mlir:[[@LINE+1]]:14: error: 'flash.attention' op expects an lse of shape [2, 8] and element type 'f32', got 'tensor<2x8xf16>'
  %o, %lse = flash.attention %q, %q, %q : tensor<2x8x16xf32>, tensor<2x8x16xf32>, tensor<2x8x16xf32> -> tensor<2x8x16xf32>, tensor<2x8xf16>
  return %lse : tensor<2x8xf16>
}

// -----

func.func @bias(%q: tensor<8x16xf32>, %b: tensor<9x8xf32>) -> tensor<8x16xf32> {
  // CHECK: bad-input.mlir:[[@LINE+1]]:8: error: 'flash.attention' op expects a bias broadcastable to the scores [8, 8], got 'tensor<9x8xf32>'
  %o = flash.attention %q, %q, %q bias(%b : tensor<9x8xf32>) : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
  return %o : tensor<8x16xf32>
}

// -----

func.func @ranks(%q: tensor<8x16xf32>, %k: tensor<1x8x16xf32>) -> tensor<8x16xf32> {
  // CHECK: bad-input.mlir:[[@LINE+1]]:19: error: 'flash.attention_backward' op expects query, key and value of equal rank 2, 3 or 4, got ranks 2, 3 and 3
  %dq, %dk, %dv = flash.attention_backward %q, %k, %k, %q, %q, %q : tensor<8x16xf32>, tensor<1x8x16xf32>, tensor<1x8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
  return %dq : tensor<8x16xf32>
}
