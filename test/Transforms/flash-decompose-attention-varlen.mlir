// RUN: flash-opt %s --flash-decompose-attention --canonicalize | FileCheck %s

// Packed sequences in the reference semantics: each row's sequence counts
// the offsets at or below it (a reduction over the offsets), S marking a row
// in none; the scores keep only pairs of one sequence, at positions within
// it (causal aligned to its own counts), and the score_mod runs only on
// such pairs; values of keys in no sequence are zeroed before P V.
// CHECK-DAG: #[[OFFSET:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[QROW:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d3)>
// CHECK-DAG: #[[KROW:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d4)>
// CHECK-LABEL: func @varlen
// CHECK-SAME: %[[CUQ:[a-z0-9]+]]: tensor<?xi32>, %[[CUK:[a-z0-9]+]]: tensor<?xi32>
// CHECK: %[[QCOUNT:.*]] = linalg.generic {indexing_maps = [#[[OFFSET]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[CUQ]] : tensor<?xi32>)
// CHECK: %[[QOWNER:.*]] = linalg.generic {{.*}} ins(%[[QCOUNT]] : tensor<?xindex>)
// CHECK: %[[KCOUNT:.*]] = linalg.generic {indexing_maps = [#[[OFFSET]], #[[ROW]]], iterator_types = ["parallel", "reduction"]} ins(%[[CUK]] : tensor<?xi32>)
// CHECK: %[[KOWNER:.*]] = linalg.generic {{.*}} ins(%[[KCOUNT]] : tensor<?xindex>)
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[QROW]], #[[KROW]], #{{.*}}]{{.*}} ins(%{{.*}}, %[[QOWNER]], %[[KOWNER]] :
// CHECK: ^bb0(%{{.*}}: f32, %[[SQ:.*]]: index, %[[SK:.*]]: index, %{{.*}}: f32):
// CHECK: %[[SAME:.*]] = arith.cmpi eq, %[[SQ]], %[[SK]]
// CHECK: %[[PAIR:.*]] = arith.andi %[[SAME]]
// CHECK: scf.if %[[PAIR]] -> (f32) {
// CHECK: tensor.extract %{{.*}} : tensor<4xf32>
// CHECK: arith.cmpi sgt
// CHECK: arith.select
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[KOWNER]] : tensor<1x2x?x16xf32>, tensor<?xindex>)
func.func @varlen(%q: tensor<4x?x16xf32>, %k: tensor<2x?x16xf32>, %cq: tensor<?xi32>, %ck: tensor<?xi32>, %slopes: tensor<4xf32>) -> tensor<4x?x16xf32> {
  %o = flash.attention %q, %k, %k cu_seqlens_q(%cq : tensor<?xi32>) cu_seqlens_k(%ck : tensor<?xi32>) {causal} : tensor<4x?x16xf32>, tensor<2x?x16xf32>, tensor<2x?x16xf32> -> tensor<4x?x16xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %slope = tensor.extract %slopes[%h] : tensor<4xf32>
    %r = arith.addf %s, %slope : f32
    flash.yield %r : f32
  }
  return %o : tensor<4x?x16xf32>
}
