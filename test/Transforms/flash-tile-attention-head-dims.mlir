// Head dimensions the tile rules cannot take are a located error, not a
// division by zero or an overflowing byte count (fuzzer finding F1,
// docs/Fuzzing.md): D = 0, Dv = 0, and D = 2^62 (4 D wraps to 0).
// RUN: flash-opt %s -split-input-file -verify-diagnostics --flash-tile-attention
// RUN: flash-opt %s -split-input-file -verify-diagnostics --flash-tile-attention=target=sm_80
// RUN: not flash-opt %s -split-input-file --flash-cpu-pipeline 2>&1 | FileCheck %s
// CHECK: error: 'flash.attention' op cannot be tiled with head dimension D = 0: it must be at least 1

func.func @zero_head_dim(%q: tensor<?x?x?x0xf16>) -> tensor<?x?x?x0xf16> {
  // expected-error @+1 {{cannot be tiled with head dimension D = 0: it must be at least 1}}
  %o = flash.attention %q, %q, %q : tensor<?x?x?x0xf16>, tensor<?x?x?x0xf16>, tensor<?x?x?x0xf16> -> tensor<?x?x?x0xf16>
  return %o : tensor<?x?x?x0xf16>
}

// -----

func.func @zero_value_dim(%q: tensor<4x16xf32>, %v: tensor<4x0xf32>) -> tensor<4x0xf32> {
  // expected-error @+1 {{cannot be tiled with head dimension Dv = 0: it must be at least 1}}
  %o = flash.attention %q, %q, %v : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x0xf32> -> tensor<4x0xf32>
  return %o : tensor<4x0xf32>
}

// -----

func.func @huge_head_dim(%q: tensor<1x4611686018427387904xf16>) -> tensor<1x4611686018427387904xf16> {
  // expected-error @+1 {{cannot be tiled with head dimension D = 4611686018427387904: four rows of 4611686018427387904 elements exceed the}}
  %o = flash.attention %q, %q, %q : tensor<1x4611686018427387904xf16>, tensor<1x4611686018427387904xf16>, tensor<1x4611686018427387904xf16> -> tensor<1x4611686018427387904xf16>
  return %o : tensor<1x4611686018427387904xf16>
}

// -----

func.func @backward_zero_head_dim(%q: tensor<8x0xf32>, %lse: tensor<8xf32>) -> tensor<8x0xf32> {
  // expected-error @+1 {{cannot be tiled with head dimension D = 0: it must be at least 1}}
  %dq, %dk, %dv = flash.attention_backward %q, %q, %q, %q, %q, %lse : tensor<8x0xf32>, tensor<8x0xf32>, tensor<8x0xf32>, tensor<8x0xf32>, tensor<8xf32>
  return %dq : tensor<8x0xf32>
}
