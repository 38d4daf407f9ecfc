// RUN: flash-opt %s --flash-tile-attention="block-rows=16 block-cols=64" -cse | FileCheck %s

// A paged KV cache: each key block's rows come from the page that holds
// them, block_table[b, keyStart / page_size] at row keyStart % page_size;
// key blocks of 64 are narrowed to 16, the page size, so that a block never
// straddles two pages. The sequences' keys end at their own key_lengths
// (clamped to P x page_size = 4 x 16).

// CHECK-LABEL: func @paged
// CHECK-SAME: %[[K:[^:]*]]: tensor<?x2x16x32xf16>, %{{[^:]*}}: tensor<?x2x16x32xf16>, %[[L:[^:]*]]: tensor<2xi32>, %[[T:[^:]*]]: tensor<2x4xi32>
// CHECK: scf.forall (%[[B:.*]], %[[H:.*]], %{{.*}}) in (%c2, %c8, %c1)
// CHECK: %[[KVH:.*]] = arith.divui %[[H]], %c4
// CHECK: tensor.extract %[[L]][%[[B]]]
// CHECK: %[[NB:.*]] = arith.minsi %{{.*}}, %c64 : index
// CHECK: scf.for %[[KB:.*]] = %{{.*}} to %{{.*}} step %c1
// CHECK: %[[START:.*]] = arith.muli %[[KB]], %c16
// CHECK: %[[SLOT:.*]] = arith.divui %[[START]], %c16
// CHECK: %[[ENTRY:.*]] = tensor.extract %[[T]][%[[B]], %[[SLOT]]] : tensor<2x4xi32>
// CHECK: %[[PAGE:.*]] = arith.index_cast %[[ENTRY]] : i32 to index
// CHECK: %[[ROW:.*]] = arith.remui %[[START]], %c16
// CHECK: tensor.extract_slice %[[K]][%[[PAGE]], %[[KVH]], %[[ROW]], 0] [1, 1, %{{.*}}, 32]
// CHECK: tensor<?x32xf16> to tensor<16x32xf16>
func.func @paged(%q: tensor<2x8x1x32xf16>, %k: tensor<?x2x16x32xf16>, %v: tensor<?x2x16x32xf16>, %l: tensor<2xi32>, %t: tensor<2x4xi32>) -> tensor<2x8x1x32xf16> {
  %o = flash.attention %q, %k, %v key_lengths(%l : tensor<2xi32>) block_table(%t : tensor<2x4xi32>) : tensor<2x8x1x32xf16>, tensor<?x2x16x32xf16>, tensor<?x2x16x32xf16> -> tensor<2x8x1x32xf16>
  return %o : tensor<2x8x1x32xf16>
}
