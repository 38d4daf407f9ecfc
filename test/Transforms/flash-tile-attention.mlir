// RUN: flash-opt %s --flash-tile-attention="block-rows=32 block-cols=64" -cse -split-input-file | FileCheck %s

// Causal GQA attention with M = 100 < N = 300 (diagonal offset N - M = 200),
// f16 in, Dv = 32. Tiles are 32 x 64; no M x N tensor is left.

// CHECK-LABEL: func @causal_gqa
// CHECK-NOT: {{tensor<([0-9]+x)*(100x300|300x100|100x100|300x300)}}
// CHECK-DAG: %[[C100:.*]] = arith.constant 100 : index
// CHECK-DAG: %[[C300:.*]] = arith.constant 300 : index
// CHECK-DAG: %[[DIAG:.*]] = arith.constant 200 : index
// Parallel over (batch, query head, query block) = (2, 8, ceil(100 / 32)).
// CHECK: %[[R:.*]]:2 = scf.forall (%[[B:.*]], %[[H:.*]], %[[QB:.*]]) in (%c2, %c8, %c4) shared_outs(%[[O:.*]] = %{{.*}}, %[[L:.*]] = %{{.*}}) -> (tensor<2x8x100x32xf16>, tensor<2x8x100xf32>)
// Query head h reads KV head h / 4.
// CHECK: %[[HKV:.*]] = arith.divui %[[H]], %c4 : index
// CHECK: %[[ROW0:.*]] = arith.muli %[[QB]], %c32 : index
// CHECK: %[[ROWS:.*]] = arith.minsi %{{.*}}, %c32 : index
// CHECK: %[[QS:.*]] = tensor.extract_slice %{{.*}}[%[[B]], %[[H]], %[[ROW0]], 0] [1, 1, %[[ROWS]], 64] [1, 1, 1, 1] : tensor<2x8x100x64xf16> to tensor<?x64xf16>
// CHECK: %[[QT:.*]] = tensor.pad %[[QS]] low[0, 0] high[%{{.*}}, 0]
// CHECK: } : tensor<?x64xf16> to tensor<32x64xf16>
// Visible key blocks end at ceil((min(lastRow + 200, 299) + 1) / 64); the
// blocks every row sees entirely end at floor((min(row0 + 200, 299) + 1) / 64).
// CHECK: %[[END:.*]] = arith.maxsi %{{.*}}, %c0 : index
// CHECK: %[[FULLEND:.*]] = arith.minsi %{{.*}}, %[[END]] : index
// Running max, sum and accumulator.
// CHECK: %[[M0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<32xf32>)
// CHECK: %[[ACC0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<32x32xf32>)
// Unmasked blocks first: no index comparison in the score tile.
// CHECK: %[[FULL:.*]]:3 = scf.for %[[KB:.*]] = %c0 to %[[FULLEND]] step %c1 iter_args(%{{.*}} = %[[M0]], %{{.*}} = %{{.*}}, %{{.*}} = %[[ACC0]]) -> (tensor<32xf32>, tensor<32xf32>, tensor<32x32xf32>)
// CHECK: tensor.extract_slice %{{.*}}[%[[B]], %[[HKV]], %{{.*}}, 0] [1, 1, %{{.*}}, 64] [1, 1, 1, 1] : tensor<2x2x300x64xf16> to tensor<?x64xf16>
// CHECK: } : tensor<?x64xf16> to tensor<64x64xf16>
// CHECK: tensor.extract_slice %{{.*}}[%[[B]], %[[HKV]], %{{.*}}, 0] [1, 1, %{{.*}}, 32] [1, 1, 1, 1] : tensor<2x2x300x32xf16> to tensor<?x32xf16>
// CHECK: } : tensor<?x32xf16> to tensor<64x32xf16>
// S = Q Kᵀ in f32. Without a bias the scale goes into the exponent: the
// unmasked blocks take the row max of S directly, then scale it by
// scale * log2(e) (0.125 * 1.4427).
// CHECK: %[[S:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[QT]], %{{.*}} : tensor<32x64xf16>, tensor<64x64xf16>) outs(%{{.*}} : tensor<32x64xf32>)
// CHECK: linalg.generic {{.*}} ins(%[[S]] : tensor<32x64xf32>) outs(%{{.*}} : tensor<32xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: arith.maximumf
// CHECK: %[[C:.*]] = arith.constant 0.180336878 : f32
// CHECK-NEXT: %{{.*}} = arith.mulf %{{.*}}, %[[C]] : f32
// m' = max(m, c rowmax S), alpha = exp2(m - m'), P = exp2(c S - m') with
// the multiply and subtract contractible into one FMA.
// CHECK: arith.maximumf
// CHECK: math.exp2
// CHECK: arith.mulf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK: arith.subf %{{.*}}, %{{.*}} fastmath<contract> : f32
// CHECK-NEXT: math.exp2
// P in f16 before P V; acc accumulates in f32.
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: %[[PV:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<32x64xf16>, tensor<64x32xf16>) outs(%{{.*}} : tensor<32x32xf32>)
// CHECK: scf.yield %{{.*}}, %{{.*}}, %[[PV]] : tensor<32xf32>, tensor<32xf32>, tensor<32x32xf32>
// Then the blocks that straddle the diagonal or the ragged end of N, masked.
// CHECK: %[[LAST:.*]]:3 = scf.for %{{.*}} = %[[FULLEND]] to %[[END]] step %c1 iter_args(%{{.*}} = %[[FULL]]#0, %{{.*}} = %[[FULL]]#1, %{{.*}} = %[[FULL]]#2)
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<32x64xf32>)
// CHECK: %[[I:.*]] = arith.addi %[[ROW0]], %{{.*}} : index
// CHECK: %[[J:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK: arith.cmpi sge, %[[J]], %[[C300]] : index
// CHECK: %[[LASTKEY:.*]] = arith.addi %[[I]], %[[DIAG]] : index
// CHECK: arith.cmpi sgt, %[[J]], %[[LASTKEY]] : index
// CHECK: arith.select
// CHECK: scf.yield
// O = acc * (1 / l), LSE = m ln 2 + ln l; the valid rows go to the shared outputs.
// CHECK: arith.divf
// CHECK: math.log
// CHECK: %[[OPART:.*]] = tensor.extract_slice %{{.*}}[0, 0] [%[[ROWS]], 32] [1, 1] : tensor<32x32xf16> to tensor<?x32xf16>
// CHECK: %[[LPART:.*]] = tensor.extract_slice %{{.*}}[0] [%[[ROWS]]] [1] : tensor<32xf32> to tensor<?xf32>
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %[[OPART]] into %[[O]][%[[B]], %[[H]], %[[ROW0]], 0] [1, 1, %[[ROWS]], 32] [1, 1, 1, 1]
// CHECK-NEXT: tensor.parallel_insert_slice %[[LPART]] into %[[L]][%[[B]], %[[H]], %[[ROW0]]] [1, 1, %[[ROWS]]] [1, 1, 1]
// CHECK: return %[[R]]#0, %[[R]]#1
func.func @causal_gqa(%q: tensor<2x8x100x64xf16>, %k: tensor<2x2x300x64xf16>, %v: tensor<2x2x300x32xf16>) -> (tensor<2x8x100x32xf16>, tensor<2x8x100xf32>) {
  %o, %l = flash.attention %q, %k, %v {causal} : tensor<2x8x100x64xf16>, tensor<2x2x300x64xf16>, tensor<2x2x300x32xf16> -> tensor<2x8x100x32xf16>, tensor<2x8x100xf32>
  return %o, %l : tensor<2x8x100x32xf16>, tensor<2x8x100xf32>
}

// -----

// A sliding window adds a masked loop over the blocks left of the window
// edge: three loops, masked / unmasked / masked.

// CHECK-LABEL: func @window
// CHECK: scf.forall
// CHECK: %[[A:.*]]:3 = scf.for %{{.*}} = %{{.*}} to %[[FB:.*]] step
// CHECK: arith.cmpi slt
// CHECK: %[[B:.*]]:3 = scf.for %{{.*}} = %[[FB]] to %[[FE:.*]] step %{{.*}} iter_args(%{{.*}} = %[[A]]#0
// CHECK-NOT: arith.cmpi
// CHECK: scf.yield
// CHECK: scf.for %{{.*}} = %[[FE]] to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[B]]#0
// CHECK: arith.cmpi sge
// CHECK: arith.cmpi slt
func.func @window(%q: tensor<1x2x256x16xf32>) -> tensor<1x2x256x16xf32> {
  %o = flash.attention %q, %q, %q {window = 100 : i64} : tensor<1x2x256x16xf32>, tensor<1x2x256x16xf32>, tensor<1x2x256x16xf32> -> tensor<1x2x256x16xf32>
  return %o : tensor<1x2x256x16xf32>
}

// -----

// Dynamic sizes, bias broadcast over heads and an i1 mask over keys: their
// tiles are sliced per block and padded to the static tile shape.

// CHECK-DAG: #[[KEYS:.*]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-LABEL: func @dynamic_bias_mask
// CHECK-SAME: %[[BIAS:[^:]*]]: tensor<?x1x?x?xf32>, %[[MASK:[^:]*]]: tensor<1x?xi1>
// CHECK: %[[M:.*]] = tensor.dim %{{.*}}, %c2 : tensor<?x?x?x16xf32>
// CHECK: %[[N:.*]] = tensor.dim %{{.*}}, %c2 : tensor<?x?x?x16xf32>
// CHECK: scf.forall
// CHECK: scf.for
// CHECK: %[[BT:.*]] = tensor.extract_slice %[[BIAS]][%{{.*}}, 0, %{{.*}}, %{{.*}}] [1, 1, %{{.*}}, %{{.*}}] [1, 1, 1, 1] : tensor<?x1x?x?xf32> to tensor<?x?xf32>
// CHECK: } : tensor<?x?xf32> to tensor<32x64xf32>
// CHECK: %[[MT:.*]] = tensor.extract_slice %[[MASK]][0, %{{.*}}] [1, %{{.*}}] [1, 1] : tensor<1x?xi1> to tensor<1x?xi1>
// CHECK: } : tensor<1x?xi1> to tensor<1x64xi1>
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #[[KEYS]], #{{.*}}]
// CHECK: arith.xori
func.func @dynamic_bias_mask(%q: tensor<?x?x?x16xf32>, %k: tensor<?x?x?x16xf32>, %b: tensor<?x1x?x?xf32>, %m: tensor<1x?xi1>) -> tensor<?x?x?x16xf32> {
  %o = flash.attention %q, %k, %k bias(%b : tensor<?x1x?x?xf32>) mask(%m : tensor<1x?xi1>) : tensor<?x?x?x16xf32>, tensor<?x?x?x16xf32>, tensor<?x?x?x16xf32> -> tensor<?x?x?x16xf32>
  return %o : tensor<?x?x?x16xf32>
}

// -----

// The backward: D = rowsum(dO * O), then parallel over (batch, KV head) =
// (2, 2); key blocks ceil(300 / 64) = 5; the group's 2 query heads; causal
// (diagonal N - M = 200): key block j is seen from query block
// floor(max(64 j - 200, 0) / 32) on. P is recomputed with exp(S - LSE); P
// and dS are rounded to f16 for their products; nothing is M x N.

// CHECK-LABEL: func @backward
// CHECK-NOT: {{tensor<([0-9]+x)*(100x300|300x100)}}
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<2x4x100x16xf16>, tensor<2x4x100x16xf16>)
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (%c2, %c2) shared_outs
// CHECK: %[[KEYS:.*]]:3 = scf.for %{{.*}} = %c0 to %c5 step %c1 iter_args({{.*}}) -> (tensor<?x?x16xf32>, tensor<?x16xf16>, tensor<?x16xf16>)
// CHECK: arith.floordivsi %{{.*}}, %c32 : index
// CHECK-NEXT: %[[FIRST:.*]] = arith.minsi %{{.*}}, %c4 : index
// CHECK: scf.for %{{.*}} = %c0 to %c2 step %c1 iter_args({{.*}}) -> (tensor<64x16xf32>, tensor<64x16xf32>, tensor<?x?x16xf32>)
// CHECK: scf.for %{{.*}} = %[[FIRST]] to %c4 step %c1
// CHECK: math.exp
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}} : tensor<?x16xf32> into tensor<?x?x16xf32>
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} [1, %c2, %c100, 16]
// CHECK-NEXT: tensor.parallel_insert_slice %[[KEYS]]#1
// CHECK-NEXT: tensor.parallel_insert_slice %[[KEYS]]#2
func.func @backward(%q: tensor<2x4x100x16xf16>, %k: tensor<2x2x300x16xf16>, %v: tensor<2x2x300x16xf16>, %o: tensor<2x4x100x16xf16>, %do: tensor<2x4x100x16xf16>, %lse: tensor<2x4x100xf32>) -> (tensor<2x4x100x16xf16>, tensor<2x2x300x16xf16>, tensor<2x2x300x16xf16>) {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, %do, %lse {causal} : tensor<2x4x100x16xf16>, tensor<2x2x300x16xf16>, tensor<2x2x300x16xf16>, tensor<2x4x100x16xf16>, tensor<2x4x100xf32>
  return %dq, %dk, %dv : tensor<2x4x100x16xf16>, tensor<2x2x300x16xf16>, tensor<2x2x300x16xf16>
}

// -----

// Plain attention with N = 200 not a multiple of Bc = 64: blocks [0, 3) are
// unmasked, block 3 (keys 192..199, padded to 64) is masked for j >= N only.

// CHECK-LABEL: func @plain_ragged
// CHECK: scf.forall (%{{.*}}, %{{.*}}, %{{.*}}) in (%c1, %c2, %c2)
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK: scf.for %{{.*}} = %c0 to %[[C3]] step
// CHECK-NOT: arith.cmpi
// CHECK: scf.yield
// CHECK: scf.for %{{.*}} = %[[C3]] to %[[C4]] step
// CHECK: arith.cmpi sge
// CHECK-NOT: arith.cmpi
// CHECK: scf.yield
func.func @plain_ragged(%q: tensor<1x2x50x16xf32>, %k: tensor<1x2x200x16xf32>) -> tensor<1x2x50x16xf32> {
  %o = flash.attention %q, %k, %k : tensor<1x2x50x16xf32>, tensor<1x2x200x16xf32>, tensor<1x2x200x16xf32> -> tensor<1x2x50x16xf32>
  return %o : tensor<1x2x50x16xf32>
}
