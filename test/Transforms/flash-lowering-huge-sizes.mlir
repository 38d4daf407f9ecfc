// Static sizes whose products do not fit in 64 bits (2^62 and the like) are
// a located error naming the size, before any index or stride arithmetic
// wraps around (fuzzer finding F1): every tensor of the op, counted in f32
// and with sizes of 0 as 1 (strides still multiply the other sizes), must
// stay below 2^63 bytes. The decomposition also builds the M x N scores:
// test/Transforms/flash-decompose-attention-scores-size.mlir.
// RUN: flash-opt %s -split-input-file -verify-diagnostics --flash-tile-attention
// RUN: flash-opt %s -split-input-file -verify-diagnostics --flash-tile-attention=target=sm_80
// RUN: flash-opt %s -split-input-file -verify-diagnostics --flash-tile-attention=target=sm_90a
// RUN: flash-opt %s -split-input-file -verify-diagnostics --flash-decompose-attention
// RUN: not flash-opt %s -split-input-file --flash-cpu-pipeline=tile=false 2>&1 | FileCheck %s
// RUN: not flash-opt %s -split-input-file --flash-gpu-pipeline=chip=sm_90a 2>&1 | FileCheck %s
// CHECK: :[[@LINE+4]]:8: error: 'flash.attention' op cannot be lowered: the query 'tensor<1x2x4611686018427387904x8xf32>' would take 2^63 bytes or more in f32, past 64-bit offsets (dimension 2 = 4611686018427387904)

func.func @query_rows(%q: tensor<1x2x4611686018427387904x8xf32>, %k: tensor<1x2x16x8xf32>) -> tensor<1x2x4611686018427387904x8xf32> {
  // expected-error @+1 {{cannot be lowered: the query 'tensor<1x2x4611686018427387904x8xf32>' would take 2^63 bytes or more in f32, past 64-bit offsets (dimension 2 = 4611686018427387904)}}
  %o = flash.attention %q, %k, %k : tensor<1x2x4611686018427387904x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32> -> tensor<1x2x4611686018427387904x8xf32>
  return %o : tensor<1x2x4611686018427387904x8xf32>
}

// -----

// An empty batch does not make 2^62 rows of 8 fit.
func.func @empty_batch(%q: tensor<0x2x4611686018427387904x8xf16>, %k: tensor<0x2x16x8xf16>) -> tensor<0x2x4611686018427387904x8xf16> {
  // expected-error @+1 {{the query 'tensor<0x2x4611686018427387904x8xf16>' would take 2^63 bytes or more in f32, past 64-bit offsets (dimension 2 = 4611686018427387904)}}
  %o = flash.attention %q, %k, %k {causal} : tensor<0x2x4611686018427387904x8xf16>, tensor<0x2x16x8xf16>, tensor<0x2x16x8xf16> -> tensor<0x2x4611686018427387904x8xf16>
  return %o : tensor<0x2x4611686018427387904x8xf16>
}

// -----

func.func @key_rows(%q: tensor<?x?x?x8xbf16>, %k: tensor<?x?x4611686018427387904x8xbf16>) -> tensor<?x?x?x8xbf16> {
  // expected-error @+1 {{the key 'tensor<?x?x4611686018427387904x8xbf16>' would take 2^63 bytes or more in f32, past 64-bit offsets (dimension 2 = 4611686018427387904)}}
  %o = flash.attention %q, %k, %k {window = 9223372036854775807 : i64} : tensor<?x?x?x8xbf16>, tensor<?x?x4611686018427387904x8xbf16>, tensor<?x?x4611686018427387904x8xbf16> -> tensor<?x?x?x8xbf16>
  return %o : tensor<?x?x?x8xbf16>
}

// -----

func.func @mask(%q: tensor<?x?x?x8xf32>, %k: tensor<?x?x?x8xf32>, %m: tensor<4294967296x4294967296xi1>) -> tensor<?x?x?x8xf32> {
  // expected-error @+1 {{the mask 'tensor<4294967296x4294967296xi1>' would take 2^63 bytes or more in f32, past 64-bit offsets (dimension 0 = 4294967296)}}
  %o = flash.attention %q, %k, %k mask(%m : tensor<4294967296x4294967296xi1>) : tensor<?x?x?x8xf32>, tensor<?x?x?x8xf32>, tensor<?x?x?x8xf32> -> tensor<?x?x?x8xf32>
  return %o : tensor<?x?x?x8xf32>
}

// -----

func.func @backward_heads(%q: tensor<2x4611686018427387904x8x8xf32>, %lse: tensor<2x4611686018427387904x8xf32>) -> tensor<2x4611686018427387904x8x8xf32> {
  // expected-error @+1 {{'flash.attention_backward' op cannot be lowered: the query 'tensor<2x4611686018427387904x8x8xf32>' would take 2^63 bytes or more in f32, past 64-bit offsets (dimension 1 = 4611686018427387904)}}
  %dq, %dk, %dv = flash.attention_backward %q, %q, %q, %q, %q, %lse : tensor<2x4611686018427387904x8x8xf32>, tensor<2x4611686018427387904x8x8xf32>, tensor<2x4611686018427387904x8x8xf32>, tensor<2x4611686018427387904x8x8xf32>, tensor<2x4611686018427387904x8xf32>
  return %dq : tensor<2x4611686018427387904x8x8xf32>
}
