// kv-block-rows and kv-block-cols of --flash-tile-attention: on GPU targets
// the backward is split into a dQ nest and a dK/dV nest, whose CTAs own
// kv-block-rows keys and step over kv-block-cols queries (transposed score
// tiles of kv-block-rows x kv-block-cols). M = 128 queries, N = 256 keys.
// RUN: flash-opt %s --flash-tile-attention="target=sm_90a" -cse | FileCheck %s --check-prefix=DEFAULT
// RUN: flash-opt %s --flash-tile-attention="target=sm_90a kv-block-rows=32 kv-block-cols=16" -cse | FileCheck %s --check-prefix=KV
// RUN: flash-opt %s --flash-tile-attention="target=sm_90a kv-block-rows=128" -cse | FileCheck %s --check-prefix=ROWS

// The dQ nest is the same in all three: 2 query blocks of 64.
// DEFAULT: scf.forall ({{.*}}) in (%c1, %c2, %c2)
// KV: scf.forall ({{.*}}) in (%c1, %c2, %c2)
// ROWS: scf.forall ({{.*}}) in (%c1, %c2, %c2)

// The target's choice at D = 64: 64 key rows per CTA (256 / 64 = 4 CTAs per
// head), 64 query columns per step (128 / 64 = 2 steps), inside the loop
// over the GQA group's heads (here 1): the steps of a CTA whose keys are
// not whole (none here, N being a multiple) masked, the rest not.
// DEFAULT: scf.forall ({{.*}}) in (%c1, %c2, %c4) shared_outs
// DEFAULT: %[[MASKED:.*]] = arith.select %{{.*}}, %c0, %c2 : index
// DEFAULT: linalg.fill {{.*}} -> tensor<64x64xf32>
// DEFAULT: scf.for %{{.*}} = %c0 to %c1 step %c1 iter_args({{.*}}) -> (tensor<64x64xf32>, tensor<64x64xf32>)
// DEFAULT: scf.for %{{.*}} = %c0 to %[[MASKED]] step %c1 iter_args({{.*}}) -> (tensor<64x64xf32>, tensor<64x64xf32>)
// DEFAULT: scf.for %{{.*}} = %[[MASKED]] to %{{.*}} step %c1 iter_args({{.*}}) -> (tensor<64x64xf32>, tensor<64x64xf32>)

// 32 key rows per CTA (8 CTAs per head), 16 query columns per step (8 steps),
// 32 x 16 score tiles; dK and dV stay [32, D].
// KV: scf.forall ({{.*}}) in (%c1, %c2, %c8) shared_outs
// KV: %[[MASKED:.*]] = arith.select %{{.*}}, %c0, %c8 : index
// KV: linalg.fill {{.*}} -> tensor<32x64xf32>
// KV: scf.for %{{.*}} = %c0 to %c1 step %c1 iter_args({{.*}}) -> (tensor<32x64xf32>, tensor<32x64xf32>)
// KV: scf.for %{{.*}} = %c0 to %[[MASKED]] step %c1 iter_args({{.*}}) -> (tensor<32x64xf32>, tensor<32x64xf32>)
// KV: scf.for %{{.*}} = %[[MASKED]] to %{{.*}} step %c1 iter_args({{.*}}) -> (tensor<32x64xf32>, tensor<32x64xf32>)
// KV: linalg.fill {{.*}} -> tensor<32x16xf32>

// kv-block-rows alone: 128 key rows per CTA (2 per head), columns as chosen.
// ROWS: scf.forall ({{.*}}) in (%c1, %c2, %c2) shared_outs
// ROWS: %[[MASKED:.*]] = arith.select %{{.*}}, %c0, %c2 : index
// ROWS: linalg.fill {{.*}} -> tensor<128x64xf32>
// ROWS: scf.for %{{.*}} = %c0 to %c1 step %c1 iter_args({{.*}}) -> (tensor<128x64xf32>, tensor<128x64xf32>)
// ROWS: scf.for %{{.*}} = %c0 to %[[MASKED]] step %c1 iter_args({{.*}}) -> (tensor<128x64xf32>, tensor<128x64xf32>)
// ROWS: scf.for %{{.*}} = %[[MASKED]] to %{{.*}} step %c1 iter_args({{.*}}) -> (tensor<128x64xf32>, tensor<128x64xf32>)

func.func @backward(%q: tensor<1x2x128x64xbf16>, %k: tensor<1x2x256x64xbf16>, %v: tensor<1x2x256x64xbf16>, %o: tensor<1x2x128x64xbf16>, %do: tensor<1x2x128x64xbf16>, %lse: tensor<1x2x128xf32>) -> (tensor<1x2x128x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>) {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, %do, %lse : tensor<1x2x128x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x128x64xbf16>, tensor<1x2x128xf32>
  return %dq, %dk, %dv : tensor<1x2x128x64xbf16>, tensor<1x2x256x64xbf16>, tensor<1x2x256x64xbf16>
}
