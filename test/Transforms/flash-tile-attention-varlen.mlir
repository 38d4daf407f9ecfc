// RUN: flash-opt %s --flash-tile-attention="block-rows=64 block-cols=32" --canonicalize --split-input-file --verify-diagnostics | FileCheck %s

// Packed sequences: the query blocks of the longest sequence (the rows past
// the last one counted as one more) for each of the S + 1 iterations of the
// sequence axis; each iteration's Q rows start at cu_seqlens_q[s] and its
// keys at cu_seqlens_k[s], and its part of O and the LSE goes to its rows.
// A block past its sequence's rows has none, and says so before its tiles
// (flash.skip_tile: the iteration computes nothing past it).
// CHECK-LABEL: func @varlen
// CHECK-SAME: %[[CUQ:[a-z0-9]+]]: tensor<?xi32>, %[[CUK:[a-z0-9]+]]: tensor<?xi32>
// CHECK: %[[OFFSETS:.*]] = tensor.dim %[[CUQ]], %c0
// CHECK: %[[LONGEST:.*]] = scf.for %{{.*}} = %c0 to %[[OFFSETS]] step %c1 iter_args(%{{.*}} = %c0) -> (index)
// CHECK: tensor.extract %[[CUQ]]
// CHECK: %[[BLOCKS:.*]] = arith.ceildivsi %[[LONGEST]], %c64
// CHECK: scf.forall (%[[S:.*]], %[[H:.*]], %[[QB:.*]]) in (%[[OFFSETS]], 8, %[[BLOCKS]])
// CHECK: tensor.extract %[[CUQ]][%[[S]]]
// CHECK: tensor.extract %[[CUK]][%[[S]]]
// CHECK: %[[ROW:.*]] = arith.muli %[[QB]], %c64
// CHECK: %[[EMPTY:.*]] = arith.cmpi eq, %[[QROWS:.*]], %c0
// CHECK-NEXT: flash.skip_tile %[[EMPTY]]
// CHECK: %[[QSUM:.*]] = arith.addi %{{.*}}, %[[ROW]]
// CHECK: %[[QAT:.*]] = arith.minsi %[[QSUM]], %{{.*}}
// CHECK: tensor.extract_slice %{{.*}}[0, %[[H]], %[[QAT]], 0] [1, 1, %[[QROWS]], 64]
// CHECK: scf.for
// CHECK: %[[KSUM:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: %[[KAT:.*]] = arith.minsi %[[KSUM]], %{{.*}}
// CHECK: tensor.extract_slice %{{.*}}[0, %{{.*}}, %[[KAT]], 0]
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[0, %[[H]], %[[OUT:.*]], 0]
// CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[0, %[[H]], %[[OUT]]]
func.func @varlen(%q: tensor<8x?x64xf16>, %k: tensor<2x?x64xf16>, %v: tensor<2x?x64xf16>, %cq: tensor<?xi32>, %ck: tensor<?xi32>) -> (tensor<8x?x64xf16>, tensor<8x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v cu_seqlens_q(%cq : tensor<?xi32>) cu_seqlens_k(%ck : tensor<?xi32>) {causal} : tensor<8x?x64xf16>, tensor<2x?x64xf16>, tensor<2x?x64xf16> -> tensor<8x?x64xf16>, tensor<8x?xf32>
  return %o, %lse : tensor<8x?x64xf16>, tensor<8x?xf32>
}

// -----

// The CPU backward: one iteration per (sequence, KV head) and one for the
// rows past the last sequence, whose dQ, dK and dV rows are written as 0.
// CHECK-LABEL: func @varlen_backward
// CHECK-SAME: %[[CUQ:[a-z0-9]+]]: tensor<4xi32>, %[[CUK:[a-z0-9]+]]: tensor<4xi32>
// CHECK: scf.forall (%[[S:.*]], %[[H:.*]]) in (4, 2)
// CHECK: tensor.extract %[[CUQ]][%[[S]]]
// CHECK: tensor.extract %[[CUK]][%[[S]]]
// CHECK: linalg.fill ins(%{{.*}} : f16)
// CHECK: scf.forall.in_parallel
func.func @varlen_backward(%q: tensor<1x4x?x64xf16>, %k: tensor<1x2x?x64xf16>, %o: tensor<1x4x?x64xf16>, %lse: tensor<1x4x?xf32>, %cq: tensor<4xi32>, %ck: tensor<4xi32>) -> tensor<1x4x?x64xf16> {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %k, %o, %o, %lse cu_seqlens_q(%cq : tensor<4xi32>) cu_seqlens_k(%ck : tensor<4xi32>) {causal} : tensor<1x4x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x4x?x64xf16>, tensor<1x4x?xf32>
  return %dq : tensor<1x4x?x64xf16>
}

// -----

// The caller's bound (FlashAttention's max_seqlen_q) gives the query blocks:
// no loop over the offsets.
// CHECK-LABEL: func @varlen_bounded
// CHECK-SAME: %[[MAXQ:[a-z0-9]+]]: i32 {flash.max_seqlen_q}
// CHECK-NOT: scf.for
// CHECK: %[[ROWS:.*]] = arith.index_cast %[[MAXQ]] : i32 to index
// CHECK: %[[BLOCKS:.*]] = arith.ceildivsi %[[ROWS]], %c64
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}}, 8, %[[BLOCKS]])
func.func @varlen_bounded(%q: tensor<8x?x64xf16>, %k: tensor<2x?x64xf16>, %cq: tensor<?xi32>, %ck: tensor<?xi32>, %maxq: i32 {flash.max_seqlen_q}) -> tensor<8x?x64xf16> {
  %o = flash.attention %q, %k, %k cu_seqlens_q(%cq : tensor<?xi32>) cu_seqlens_k(%ck : tensor<?xi32>) : tensor<8x?x64xf16>, tensor<2x?x64xf16>, tensor<2x?x64xf16> -> tensor<8x?x64xf16>
  return %o : tensor<8x?x64xf16>
}

// -----

func.func @varlen_float_bound(%q: tensor<8x?x64xf16>, %k: tensor<2x?x64xf16>, %cq: tensor<?xi32>, %ck: tensor<?xi32>, %maxq: f32 {flash.max_seqlen_q}) -> tensor<8x?x64xf16> {
  // expected-error @+1 {{takes the function argument tagged flash.max_seqlen_q as a bound on its packed sequences' rows, which must be an index or integer scalar, got 'f32'}}
  %o = flash.attention %q, %k, %k cu_seqlens_q(%cq : tensor<?xi32>) cu_seqlens_k(%ck : tensor<?xi32>) : tensor<8x?x64xf16>, tensor<2x?x64xf16>, tensor<2x?x64xf16> -> tensor<8x?x64xf16>
  return %o : tensor<8x?x64xf16>
}
