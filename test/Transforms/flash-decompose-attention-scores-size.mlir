// The decomposition builds the [B, Hq, M, N] scores in f32: M = N = 2^32 is
// a located error there (test/Transforms/flash-lowering-huge-sizes.mlir has
// the operands' rule), while the tiling, which holds Br x Bc tiles only,
// takes the op.
// RUN: flash-opt %s -verify-diagnostics --flash-decompose-attention
// RUN: flash-opt %s --flash-tile-attention | FileCheck %s
// RUN: not flash-opt %s --flash-cpu-pipeline=tile=false 2>&1 | FileCheck %s --check-prefix=PIPELINE
// PIPELINE: :[[@LINE+7]]:8: error: 'flash.attention' op cannot be lowered: the scores [B, Hq, M, N] would take 2^63 bytes or more in f32, past 64-bit offsets (M = 4294967296)

// CHECK-LABEL: func @long
// CHECK: scf.forall
// CHECK-NOT: flash.attention
func.func @long(%q: tensor<4294967296x8xf16>) -> tensor<4294967296x8xf16> {
  // expected-error @+1 {{cannot be lowered: the scores [B, Hq, M, N] would take 2^63 bytes or more in f32, past 64-bit offsets (M = 4294967296)}}
  %o = flash.attention %q, %q, %q {causal} : tensor<4294967296x8xf16>, tensor<4294967296x8xf16>, tensor<4294967296x8xf16> -> tensor<4294967296x8xf16>
  return %o : tensor<4294967296x8xf16>
}
