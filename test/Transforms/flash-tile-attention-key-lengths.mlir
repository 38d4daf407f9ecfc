// RUN: flash-opt %s --flash-tile-attention="block-rows=16 block-cols=16" -cse | FileCheck %s

// key_lengths: each (batch, head, query block) iteration reads its sequence's
// key count, clamps it to [0, N], and uses it for the loops' bounds, the
// ragged end of the last key block and the causal diagonal N_b - M: keys past
// N_b are never loaded.

// CHECK-LABEL: func @ragged
// CHECK-SAME: %[[K:[^:]*]]: tensor<3x2x?x32xf16>, %{{[^:]*}}: tensor<3x2x?x32xf16>, %[[L:[^:]*]]: tensor<3xi32>
// CHECK: %[[N:.*]] = tensor.dim %[[K]], %c2
// CHECK: scf.forall (%[[B:.*]], %[[H:.*]], %{{.*}}) in (%c3, %c8, %c1)
// CHECK: %[[RAW:.*]] = tensor.extract %[[L]][%[[B]]] : tensor<3xi32>
// CHECK: %[[IDX:.*]] = arith.index_cast %[[RAW]] : i32 to index
// CHECK: %[[POS:.*]] = arith.maxsi %[[IDX]], %c0
// CHECK: %[[NB:.*]] = arith.minsi %[[POS]], %[[N]]
// CHECK: %[[DIAG:.*]] = arith.subi %[[NB]], %c4
// CHECK: scf.for
// CHECK: arith.subi %[[NB]], %{{.*}} : index
// CHECK: scf.for
// CHECK: arith.cmpi sge, %{{.*}}, %[[NB]] : index
// CHECK: arith.addi %{{.*}}, %[[DIAG]] : index
func.func @ragged(%q: tensor<3x8x4x32xf16>, %k: tensor<3x2x?x32xf16>, %v: tensor<3x2x?x32xf16>, %l: tensor<3xi32>) -> tensor<3x8x4x32xf16> {
  %o = flash.attention %q, %k, %v key_lengths(%l : tensor<3xi32>) {causal} : tensor<3x8x4x32xf16>, tensor<3x2x?x32xf16>, tensor<3x2x?x32xf16> -> tensor<3x8x4x32xf16>
  return %o : tensor<3x8x4x32xf16>
}
