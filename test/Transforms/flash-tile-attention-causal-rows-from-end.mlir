// RUN: flash-opt %s --flash-tile-attention="block-rows=32 block-cols=64 causal-rows-from-end" -cse | FileCheck %s
// RUN: flash-opt %s --flash-tile-attention="block-rows=32 block-cols=64" -cse | FileCheck %s --check-prefix=FIRST

// With causal-rows-from-end the query blocks of a causal op end at its last
// row: M = 100 in blocks of 32 is four blocks, block q ending at row
// 100 - 32 (3 - q), the first owning rows [0, 4) and computing [0, 32) (a
// plain slice of Q, padded only past the tensor's end) so that the block with
// fewer rows is the one with the shortest key loop. The row arithmetic is
// 32-bit. Results are written from each block's own rows only.

// CHECK-LABEL: func @causal
// CHECK: scf.forall (%[[B:.*]], %[[H:.*]], %[[QB:.*]]) in (%c2, %c4, %c4)
// CHECK: %[[QB32:.*]] = arith.index_cast %[[QB]] : index to i32
// CHECK: %[[LEFT:.*]] = arith.subi %c4{{.*}}, %[[QB32]] : i32
// CHECK: %[[BACK:.*]] = arith.muli %[[LEFT]], %c32{{.*}} : i32
// CHECK: %[[SHIFTED32:.*]] = arith.subi %c100{{.*}}, %[[BACK]] : i32
// CHECK: %[[SHIFTED:.*]] = arith.index_cast %[[SHIFTED32]] : i32 to index
// CHECK: %[[ROW0:.*]] = arith.maxsi %[[SHIFTED]], %c0 : index
// CHECK: %[[ROWS:.*]] = arith.minsi %{{.*}}, %c32 : index
// CHECK: %[[END:.*]] = arith.addi %[[SHIFTED]], %c32 : index
// CHECK: %[[OWN:.*]] = arith.subi %[[END]], %[[ROW0]] : index
// CHECK: tensor.extract_slice %{{.*}}[%[[B]], %[[H]], %[[ROW0]], 0] [1, 1, %[[ROWS]], 16]
// CHECK: %[[OPART:.*]] = tensor.extract_slice %{{.*}}[0, 0] [%[[OWN]], 16] [1, 1] : tensor<32x16xf32> to tensor<?x16xf32>
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %[[OPART]] into %{{.*}}[%[[B]], %[[H]], %[[ROW0]], 0] [1, 1, %[[OWN]], 16]

// Without the option the blocks start at row 0: block q computes and owns
// rows [32 q, min(32 q + 32, 100)).
// FIRST-LABEL: func @causal
// FIRST: %[[ROW0:.*]] = arith.muli %{{.*}}, %c32 : index
// FIRST-NOT: arith.index_cast
// FIRST: %[[ROWS:.*]] = arith.minsi %{{.*}}, %c32 : index
// FIRST: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%{{.*}}, %{{.*}}, %[[ROW0]], 0] [1, 1, %[[ROWS]], 16]
func.func @causal(%q: tensor<2x4x100x16xf32>, %k: tensor<2x4x100x16xf32>, %v: tensor<2x4x100x16xf32>) -> tensor<2x4x100x16xf32> {
  %o = flash.attention %q, %k, %v {causal} : tensor<2x4x100x16xf32>, tensor<2x4x100x16xf32>, tensor<2x4x100x16xf32> -> tensor<2x4x100x16xf32>
  return %o : tensor<2x4x100x16xf32>
}

// A non-causal op's blocks start at row 0 with the option too: their key
// loops are equal.
// CHECK-LABEL: func @plain
// CHECK-NOT: arith.index_cast
// CHECK: arith.muli %{{.*}}, %c32 : index
// CHECK-NOT: arith.index_cast
// CHECK: return
func.func @plain(%q: tensor<2x4x100x16xf32>, %k: tensor<2x4x100x16xf32>, %v: tensor<2x4x100x16xf32>) -> tensor<2x4x100x16xf32> {
  %o = flash.attention %q, %k, %v : tensor<2x4x100x16xf32>, tensor<2x4x100x16xf32>, tensor<2x4x100x16xf32> -> tensor<2x4x100x16xf32>
  return %o : tensor<2x4x100x16xf32>
}
