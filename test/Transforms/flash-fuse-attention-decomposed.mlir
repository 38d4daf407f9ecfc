// flash.attention decomposed into naive linalg (--flash-decompose-attention)
// fuses back to the same op: the matcher reads the decomposition's guarded
// softmax (select(max == -inf, 0, max), select(sum == 0, 0, e / sum)) and its
// mask arithmetic on sizes (j > i + (N - M) with N - M not yet folded).
// Fuzzer finding F5 (docs/Fuzzing.md).
// RUN: flash-opt %s -split-input-file --flash-decompose-attention | flash-opt -split-input-file --flash-fuse-attention --canonicalize | FileCheck %s
// RUN: flash-opt %s -split-input-file --flash-decompose-attention | flash-opt -split-input-file --flash-fuse-attention=report=true -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: %python -m flash_mlir.fusion_check %s --pre=--flash-decompose-attention | FileCheck %s --check-prefix=NUM
// NUM-NOT: FAIL
// NUM: fusion_check: 0 failure(s)

// REMARK: remark: fused attention: scale = 3.535534e-01, softmax = exp (max-subtracted), mask = none
// CHECK-LABEL: func @plain
// CHECK-NOT: linalg.
// CHECK: flash.attention %arg0, %arg1, %arg2 {scale = 0.353553385 : f32}
// CHECK-NEXT: return
func.func @plain(%q: tensor<1x2x16x8xf32>, %k: tensor<1x2x20x8xf32>, %v: tensor<1x2x20x8xf32>) -> tensor<1x2x16x8xf32> {
  %o = flash.attention %q, %k, %v : tensor<1x2x16x8xf32>, tensor<1x2x20x8xf32>, tensor<1x2x20x8xf32> -> tensor<1x2x16x8xf32>
  return %o : tensor<1x2x16x8xf32>
}

// -----

// REMARK: remark: fused attention: scale = 5.000000e-01, {{.*}} mask = causal, {{.*}} GQA ratio = 2
// CHECK-LABEL: func @causal_gqa
// CHECK-NOT: linalg.
// CHECK: flash.attention %arg0, %arg1, %arg2 {causal, scale = 5.000000e-01 : f32} : tensor<2x4x16x8xf32>, tensor<2x2x20x8xf32>, tensor<2x2x20x8xf32>
func.func @causal_gqa(%q: tensor<2x4x16x8xf32>, %k: tensor<2x2x20x8xf32>, %v: tensor<2x2x20x8xf32>) -> tensor<2x4x16x8xf32> {
  %o = flash.attention %q, %k, %v {causal, scale = 0.5 : f32} : tensor<2x4x16x8xf32>, tensor<2x2x20x8xf32>, tensor<2x2x20x8xf32> -> tensor<2x4x16x8xf32>
  return %o : tensor<2x4x16x8xf32>
}

// -----

// REMARK: remark: fused attention: {{.*}} mask = causal + window 5 + 1 i1 tensor(s), bias = 1 tensor(s)
// CHECK-LABEL: func @window_bias_mask
// CHECK-NOT: linalg.
// CHECK: flash.attention %arg0, %arg1, %arg2 bias({{.*}}) mask({{.*}}) {causal, scale = 0.353553385 : f32, window = 5 : i64}
func.func @window_bias_mask(%q: tensor<1x2x16x8xf32>, %k: tensor<1x2x20x8xf32>, %v: tensor<1x2x20x8xf32>, %b: tensor<16x20xf32>, %m: tensor<1x1x16x20xi1>) -> tensor<1x2x16x8xf32> {
  %o = flash.attention %q, %k, %v bias(%b : tensor<16x20xf32>) mask(%m : tensor<1x1x16x20xi1>) {causal, window = 5 : i64} : tensor<1x2x16x8xf32>, tensor<1x2x20x8xf32>, tensor<1x2x20x8xf32> -> tensor<1x2x16x8xf32>
  return %o : tensor<1x2x16x8xf32>
}

// -----

// REMARK: remark: fused attention: {{.*}} mask = causal, {{.*}} Q/K/V bf16
// CHECK-LABEL: func @bf16_causal
// CHECK-NOT: linalg.
// CHECK: flash.attention %arg0, %arg1, %arg2 {causal, scale = 0.353553385 : f32} : tensor<1x2x16x8xbf16>
func.func @bf16_causal(%q: tensor<1x2x16x8xbf16>, %k: tensor<1x2x20x8xbf16>, %v: tensor<1x2x20x8xbf16>) -> tensor<1x2x16x8xbf16> {
  %o = flash.attention %q, %k, %v {causal} : tensor<1x2x16x8xbf16>, tensor<1x2x20x8xbf16>, tensor<1x2x20x8xbf16> -> tensor<1x2x16x8xbf16>
  return %o : tensor<1x2x16x8xbf16>
}

// -----

// REMARK: remark: fused attention: {{.*}} mask = none
// CHECK-LABEL: func @dynamic
// CHECK-NOT: linalg.
// CHECK: flash.attention %arg0, %arg1, %arg2 {scale = 0.353553385 : f32} : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x16xf32>
func.func @dynamic(%q: tensor<?x2x?x8xf32>, %k: tensor<?x2x?x8xf32>, %v: tensor<?x2x?x16xf32>) -> tensor<?x2x?x16xf32> {
  %o = flash.attention %q, %k, %v : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x16xf32> -> tensor<?x2x?x16xf32>
  return %o : tensor<?x2x?x16xf32>
}
