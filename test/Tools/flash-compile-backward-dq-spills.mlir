// The backward's search narrows the dQ launch's key blocks where that launch
// spills (narrower dK/dV steps do not change it), keeping the dK/dV nest's
// tiles: the softcap varlen backward's general kernel spilled 20 bytes at 64
// keys per dQ step and none at 32 (with the fragment addresses hoisted out of
// the key loop, --per-iteration-lanes=false). Every kernel assembles without
// spills. With per-iteration lanes (the default) the dQ launch, which spills
// with hoisted addresses, is rebuilt with them and keeps its 64 keys per step
// without spills.
// RUN: rm -rf %t && flash-compile %s --chip sm_90a --per-iteration-lanes=false -o %t | FileCheck %s
// RUN: %python -c "import json,sys; [print(n, json.load(open(sys.argv[1] + '/' + n + '.json'))['spill_bytes']) for n in ('grad', 'grad_general')]" %t | FileCheck %s --check-prefix=SPILLS
// RUN: rm -rf %t.lanes && flash-compile %s --chip sm_90a -o %t.lanes | FileCheck %s --check-prefix=LANES
// RUN: %python -c "import json,sys; [print(n, json.load(open(sys.argv[1] + '/' + n + '.json'))['spill_bytes']) for n in ('grad', 'grad_general')]" %t.lanes | FileCheck %s --check-prefix=SPILLS
// CHECK: grad_general: the dQ launch spills {{[0-9]+}} bytes; 32 keys per dQ step
// CHECK: grad_general launch 0 {{.*}}spill bytes 0
// LANES-NOT: the dQ launch spills
// LANES: grad_general launch 0: spills {{[1-9][0-9]*}} bytes with hoisted lane addresses; 0 with per-iteration lanes
// LANES: grad_general launch 0 {{.*}}spill bytes 0, shared memory 69888 B, warp registers, per-iteration lanes
// LANES-NOT: the dQ launch spills
// SPILLS: grad 0
// SPILLS-NEXT: grad_general 0

func.func @grad(%q: tensor<1x?x?x128xbf16>, %k: tensor<1x?x?x128xbf16>, %v: tensor<1x?x?x128xbf16>, %o: tensor<1x?x?x128xbf16>, %do: tensor<1x?x?x128xbf16>, %lse: tensor<1x?x?xf32>, %cq: tensor<?xi32>, %ck: tensor<?xi32>) -> (tensor<1x?x?x128xbf16>, tensor<1x?x?x128xbf16>, tensor<1x?x?x128xbf16>) {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, %do, %lse cu_seqlens_q(%cq : tensor<?xi32>) cu_seqlens_k(%ck : tensor<?xi32>) {causal} : tensor<1x?x?x128xbf16>, tensor<1x?x?x128xbf16>, tensor<1x?x?x128xbf16>, tensor<1x?x?x128xbf16>, tensor<1x?x?xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %cap = arith.constant 3.000000e+01 : f32
    %x = arith.divf %s, %cap : f32
    %t = math.tanh %x : f32
    %capped = arith.mulf %t, %cap : f32
    flash.yield %capped : f32
  }
  return %dq, %dk, %dv : tensor<1x?x?x128xbf16>, tensor<1x?x?x128xbf16>, tensor<1x?x?x128xbf16>
}
