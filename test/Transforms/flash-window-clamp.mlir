// A window past M + N hides nothing more, so every lowering clamps it to
// M + N before forming the window edge i + (N - M) - W: with W near
// INT64_MAX the unclamped edge overflowed (fuzzer finding F2). M + N is
// compared unsigned (two sizes cannot wrap it as an unsigned number); with
// static sizes the clamp folds. The numbers: test/Fuzz/window-int64-max.test.

// RUN: flash-opt %s -split-input-file --flash-decompose-attention | FileCheck %s --check-prefix=NAIVE
// RUN: flash-opt %s -split-input-file --flash-tile-attention | FileCheck %s --check-prefixes=TILE,CPU
// RUN: flash-opt %s -split-input-file --flash-tile-attention=target=sm_90a | FileCheck %s --check-prefixes=TILE,GPU

// NAIVE-LABEL: func @dynamic
// NAIVE: %[[M:.*]] = tensor.dim %arg0, %c2
// NAIVE: %[[N:.*]] = tensor.dim %arg1, %c2
// NAIVE: %[[DIAG:.*]] = arith.subi %[[N]], %[[M]] : index
// NAIVE: %[[SUM:.*]] = arith.addi %[[M]], %[[N]] : index
// NAIVE: %[[W:.*]] = arith.constant 9223372036854775807 : index
// NAIVE: %[[CLAMPED:.*]] = arith.minui %[[W]], %[[SUM]] : index
// NAIVE: %[[START:.*]] = arith.subi %[[DIAG]], %[[CLAMPED]] : index
// NAIVE: linalg.generic
// NAIVE: %[[I:.*]] = linalg.index 3 : index
// NAIVE: %[[J:.*]] = linalg.index 4 : index
// NAIVE: %[[FIRST:.*]] = arith.addi %[[I]], %[[START]] : index
// NAIVE: arith.cmpi slt, %[[J]], %[[FIRST]] : index

// TILE-LABEL: func @dynamic
// TILE: %[[M:.*]] = tensor.dim %arg0, %c2
// TILE: %[[N:.*]] = tensor.dim %arg1, %c2
// TILE: %[[DIAG:.*]] = arith.subi %[[N]], %[[M]] : index
// TILE: %[[SUM:.*]] = arith.addi %[[M]], %[[N]] : index
// TILE: %[[CLAMPED:.*]] = arith.minui %c9223372036854775807, %[[SUM]] : index
// TILE: %[[START:.*]] = arith.subi %[[DIAG]], %[[CLAMPED]] : index
// TILE: scf.forall
// The first visible key block of the query block.
// TILE: arith.addi %{{.*}}, %[[START]] : index
// TILE: scf.for
// TILE: linalg.generic
// TILE: arith.addi %{{.*}}, %[[START]] : index
// TILE: arith.cmpi slt
func.func @dynamic(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  %o = flash.attention %q, %k, %k {window = 9223372036854775807 : i64} : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32> -> tensor<1x2x?x8xf32>
  return %o : tensor<1x2x?x8xf32>
}

// -----

// M = 3, N = 1: the window is 4 and row i sees keys from i - 6.

// NAIVE-LABEL: func @static
// NAIVE-NOT: 9223372036854775807
// NAIVE: %[[DIAG:.*]] = arith.subi %c1{{.*}}, %c3{{.*}} : index
// NAIVE: %[[START:.*]] = arith.subi %[[DIAG]], %c4 : index

// TILE-LABEL: func @static
// TILE-NOT: 9223372036854775807
// TILE: scf.forall
// TILE: arith.cmpi slt
// TILE-NOT: 9223372036854775807
func.func @static(%q: tensor<1x1x3x4xf32>, %k: tensor<1x1x1x4xf32>) -> tensor<1x1x3x4xf32> {
  %o = flash.attention %q, %k, %k {window = 9223372036854775807 : i64} : tensor<1x1x3x4xf32>, tensor<1x1x1x4xf32>, tensor<1x1x1x4xf32> -> tensor<1x1x3x4xf32>
  return %o : tensor<1x1x3x4xf32>
}

// -----

// The backward: the CPU form's query-block bound and hidden scores, the GPU
// form's key-block bound of the dQ nest and query-block bound of the dK/dV
// nest, all from the clamped window.

// NAIVE-LABEL: func @backward
// NAIVE: %[[SUM:.*]] = arith.addi
// NAIVE: arith.minui %{{.*}}, %[[SUM]] : index

// TILE-LABEL: func @backward
// TILE: %[[M:.*]] = tensor.dim %arg0, %c2
// TILE: %[[N:.*]] = tensor.dim %arg1, %c2
// TILE: %[[DIAG:.*]] = arith.subi %[[N]], %[[M]] : index
// TILE: %[[SUM:.*]] = arith.addi %[[M]], %[[N]] : index
// TILE: %[[W:.*]] = arith.minui %c9223372036854775807, %[[SUM]] : index
// CPU: scf.forall
// CPU: scf.for
// CPU: %[[LAST:.*]] = arith.subi %{{.*}}, %[[DIAG]] : index
// CPU: arith.addi %[[LAST]], %[[W]] : index
// CPU: linalg.generic
// CPU: %[[VIS:.*]] = arith.addi %{{.*}}, %[[DIAG]] : index
// CPU: %[[EDGE:.*]] = arith.subi %[[VIS]], %[[W]] : index
// CPU: arith.cmpi slt, %{{.*}}, %[[EDGE]] : index
// GPU: scf.forall
// GPU: %[[ROW:.*]] = arith.addi %{{.*}}, %[[DIAG]] : index
// GPU: arith.subi %[[ROW]], %[[W]] : index
// GPU: linalg.generic
// GPU: %[[VIS:.*]] = arith.addi %{{.*}}, %[[DIAG]] : index
// GPU: %[[EDGE:.*]] = arith.subi %[[VIS]], %[[W]] : index
// GPU: arith.cmpi slt, %{{.*}}, %[[EDGE]] : index
// GPU: scf.forall
// GPU: %[[LAST:.*]] = arith.subi %{{.*}}, %[[DIAG]] : index
// GPU: arith.addi %[[LAST]], %[[W]] : index
func.func @backward(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>, %o: tensor<1x2x?x8xf32>, %lse: tensor<1x2x?xf32>) -> (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %k, %o, %o, %lse {window = 9223372036854775807 : i64} : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?xf32>
  return %dq, %dk, %dv : tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>
}
