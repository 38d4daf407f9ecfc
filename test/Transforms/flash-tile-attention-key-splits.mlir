// RUN: flash-opt %s --split-input-file --flash-tile-attention="block-rows=16 block-cols=16 key-splits=3" -cse | FileCheck %s
// RUN: flash-opt %s --split-input-file --flash-tile-attention="block-rows=16 block-cols=16" -cse | FileCheck %s --check-prefix=RUNTIME
// RUN: flash-opt %s --split-input-file --flash-tile-attention="block-rows=16 block-cols=16 key-splits=3 causal-rows-from-end=1" -cse | FileCheck %s --check-prefix=FROMEND

// Split-KV: with key-splits=3 the forward is two nests. The first runs over
// (batch, head, query block x split), split s = iv mod 3 of query block
// iv / 3 taking the s-th third of the visible key blocks (every loop's
// bounds clamped to it, each loop starting where the previous one ends), and
// writes its normalised O (f32) and LSE into the workspaces o_split
// [3, B, Hq, M, Dv] and lse_split [3, B, Hq, M]. The second merges them per
// (batch, head, block of 4 rows), reading every split's partial results in
// place (no copies): a parallel loop over (row, group of 4 columns), each
// walking the splits sixteen at a time (an online max and sum over their
// LSEs), the chunk's loads (an LSE and four columns per split, clamped to
// the last split, those past it weighing nothing) before any update; the
// groups' columns then go into O's rows in place.

// CHECK-LABEL: func @decode
// CHECK-DAG: %[[OS:.*]] = tensor.empty({{.*}}) {flash.workspace = "o_split"} : tensor<3x?x?x?x32xf32>
// CHECK-DAG: %[[LS:.*]] = tensor.empty({{.*}}) {flash.workspace = "lse_split"} : tensor<3x?x?x?xf32>
// CHECK: %[[PART:.*]]:2 = scf.forall (%[[B:.*]], %[[H:.*]], %[[Z:.*]]) in (%c2, %c8, %c3) shared_outs(%{{.*}} = %[[OS]], %{{.*}} = %[[LS]])
// CHECK: %[[QB:.*]] = arith.divui %[[Z]], %c3 : index
// CHECK: %[[S:.*]] = arith.remui %[[Z]], %c3 : index
// CHECK: %[[CHUNK:.*]] = arith.ceildivsi %{{.*}}, %c3 : index
// CHECK: %[[FROM:.*]] = arith.muli %[[S]], %[[CHUNK]] : index
// CHECK: %[[FIRST:[0-9]+]]:3 = scf.for %{{.*}} = %[[LB:.*]] to %[[MID:.*]] step %c1
// CHECK-NOT: flash.contraction = "output"
// CHECK: flash.contraction = "output"
// CHECK: scf.for %{{.*}} = %[[MID]] to %{{.*}} step %c1 iter_args(%{{.*}} = %[[FIRST]]#0
// CHECK: math.log
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%[[S]], %[[B]], %[[H]], %{{.*}}, 0] [1, 1, 1, %{{.*}}, 32] {{.*}} : tensor<?x32xf32> into tensor<3x?x?x?x32xf32>
// CHECK-NEXT: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[%[[S]], %[[B]], %[[H]], %{{.*}}] [1, 1, 1, %{{.*}}] {{.*}} : tensor<?xf32> into tensor<3x?x?x?xf32>
// The split nest says its query blocks' rows (the GPU mapping's merge in
// the last run's CTA maps them to the merge's row blocks).
// CHECK: } {flash.key_split_rows = 16 : i64}
// CHECK: scf.forall (%[[B2:.*]], %[[H2:.*]], %{{.*}}) in (%c2, %c8, %c1) shared_outs(%{{.*}} = %{{.*}}) -> (tensor<2x8x1x32xbf16>)
// CHECK-NOT: tensor.pad
// CHECK-DAG: %[[LSE:.*]] = tensor.extract_slice %[[PART]]#1[0, %[[B2]], %[[H2]], %{{.*}}] [%c3, 1, 1, %{{.*}}] {{.*}} to tensor<?x?xf32>
// CHECK-DAG: %[[OUT:.*]] = tensor.extract_slice %[[PART]]#0[0, %[[B2]], %[[H2]], %{{.*}}, 0] [%c3, 1, 1, %{{.*}}, 32] {{.*}} to tensor<?x?x32xf32>
// CHECK: %[[GROUPS:.*]]:5 = linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]} outs(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xbf16>, tensor<4x8xf32>)
// CHECK: %[[ROW:.*]] = arith.minsi
// CHECK: %[[GROUP:.*]] = linalg.index 1
// CHECK: %[[COL0:.*]] = arith.muli %[[GROUP]], %c4
// CHECK: scf.for %{{.*}} = %c0 to %c3 step %c16 iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32)
// CHECK-COUNT-4: tensor.extract %[[OUT]][%{{.*}}, %[[ROW]], %{{.*}}]
// CHECK: arith.maximumf
// CHECK: math.exp2
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: math.log
// Column c of O from group tile c mod 4, written into the nest's output.
// CHECK: %[[ORows:.*]] = tensor.extract_slice %[[SHARED:.*]][%[[B2]], %[[H2]], %{{.*}}, 0] [1, 1, %{{.*}}, 32]
// CHECK: %[[O:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>, tensor<?x8xbf16>) outs(%[[ORows]] : tensor<?x32xbf16>)
// CHECK: arith.remui %{{.*}}, %c4
// A thread per group of 4 columns of the merged 4 x 32 tile; the merge
// reads only the split nest's results (its launch may start before that
// one's ends):
// CHECK: scf.forall.in_parallel
// CHECK-NEXT: tensor.parallel_insert_slice %[[O]] into %[[SHARED]][%[[B2]], %[[H2]], %{{.*}}, 0] [1, 1, %{{.*}}, 32]
// CHECK: } {flash.block_threads = 32 : i64, flash.dependent_launch, flash.merge_rows = 4 : i64}
func.func @decode(%q: tensor<2x8x1x32xbf16>, %k: tensor<2x2x?x32xbf16>, %v: tensor<2x2x?x32xbf16>) -> tensor<2x8x1x32xbf16> {
  %o = flash.attention %q, %k, %v : tensor<2x8x1x32xbf16>, tensor<2x2x?x32xbf16>, tensor<2x2x?x32xbf16> -> tensor<2x8x1x32xbf16>
  return %o : tensor<2x8x1x32xbf16>
}

// -----

// Arguments tagged o_split and lse_split are the partial results instead
// (whatever key-splits says): the runs are as many as their leading size, a
// run-time value (flash-compile's split kernels: the runtime chooses it).

// CHECK-LABEL: func @runtime
// CHECK-SAME: %[[OS:[^:]*]]: tensor<?x1x8x4x32xf32> {flash.workspace = "o_split"}, %[[LS:[^:]*]]: tensor<?x1x8x4xf32> {flash.workspace = "lse_split"}
// CHECK-NOT: tensor.empty{{.*}}workspace
// CHECK: %[[N:.*]] = tensor.dim %[[OS]], %c0
// CHECK: scf.forall ({{.*}}) in (%c1, %c8, %[[N]]) shared_outs(%{{.*}} = %[[OS]], %{{.*}} = %[[LS]])
// CHECK: tensor.extract_slice %{{.*}}[0, %{{.*}}, %{{.*}}, %{{.*}}] [%[[N]], 1, 1, %{{.*}}] {{.*}} : tensor<?x1x8x4xf32> to tensor<?x?xf32>
// RUNTIME-LABEL: func @runtime
// RUNTIME: %[[N:.*]] = tensor.dim %arg3, %c0
// RUNTIME: scf.forall ({{.*}}) in (%c1, %c8, %[[N]])
func.func @runtime(%q: tensor<1x8x4x32xf16>, %k: tensor<1x2x?x32xf16>, %v: tensor<1x2x?x32xf16>, %os: tensor<?x1x8x4x32xf32> {flash.workspace = "o_split"}, %ls: tensor<?x1x8x4xf32> {flash.workspace = "lse_split"}) -> tensor<1x8x4x32xf16> {
  %o = flash.attention %q, %k, %v : tensor<1x8x4x32xf16>, tensor<1x2x?x32xf16>, tensor<1x2x?x32xf16> -> tensor<1x8x4x32xf16>
  return %o : tensor<1x8x4x32xf16>
}

// -----

// Causal blocks aligned to the last row are not [q Br, (q + 1) Br): the split
// nest does not say its rows (the GPU mapping keeps its merge a nest of its
// own); without the alignment it does.
// FROMEND-LABEL: func @causal_decode
// FROMEND: scf.forall
// FROMEND-NOT: flash.key_split_rows
// FROMEND: flash.merge_rows = 4
// CHECK-LABEL: func @causal_decode
// CHECK: } {flash.key_split_rows = 16 : i64}
func.func @causal_decode(%q: tensor<1x2x40x32xbf16>, %k: tensor<1x2x?x32xbf16>, %v: tensor<1x2x?x32xbf16>) -> tensor<1x2x40x32xbf16> {
  %o = flash.attention %q, %k, %v {causal} : tensor<1x2x40x32xbf16>, tensor<1x2x?x32xbf16>, tensor<1x2x?x32xbf16> -> tensor<1x2x40x32xbf16>
  return %o : tensor<1x2x40x32xbf16>
}
