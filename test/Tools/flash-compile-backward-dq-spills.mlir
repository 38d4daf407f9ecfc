// The softcap varlen backward's general kernel, whose dQ launch spilled 20
// bytes at 64 keys per dQ step before mask-free blocks (session 30: the
// search then narrowed it to 32 keys, or rebuilt it with per-iteration
// lanes). Without the per-element select of P in its unmasked key loop it
// assembles at 64 keys without spills either way, and every kernel without
// spills: its dK/dV launch spills at 64 query rows per step with hoisted
// addresses and with per-iteration lanes (since its dK and dV stores take
// 16-byte vectors where the rows align), and the search narrows the step
// (with 64-bit shared addresses, as it was built then).
// RUN: rm -rf %t && flash-compile %s --chip sm_90a --per-iteration-lanes=false --shared-pointers-32=false -o %t | FileCheck %s
// RUN: %python -c "import json,sys; [print(n, json.load(open(sys.argv[1] + '/' + n + '.json'))['spill_bytes']) for n in ('grad', 'grad_general')]" %t | FileCheck %s --check-prefix=SPILLS
// RUN: rm -rf %t.lanes && flash-compile %s --chip sm_90a --shared-pointers-32=false -o %t.lanes | FileCheck %s --check-prefix=LANES
// RUN: %python -c "import json,sys; [print(n, json.load(open(sys.argv[1] + '/' + n + '.json'))['spill_bytes']) for n in ('grad', 'grad_general')]" %t.lanes | FileCheck %s --check-prefix=SPILLS
// CHECK-NOT: the dQ launch spills
// CHECK: grad_general launch 0 {{.*}}spill bytes 0, shared memory 69888 B, warp registers
// CHECK: grad_general: spills {{[0-9]+}} bytes; narrower dK/dV steps
// CHECK: grad_general launch 1 {{.*}}spill bytes 0, shared memory 43712 B
// LANES-NOT: the dQ launch spills
// LANES: grad_general launch 0 {{.*}}spill bytes 0, shared memory 69888 B, warp registers
// LANES: grad_general: spills {{[0-9]+}} bytes; narrower dK/dV steps
// LANES: grad_general launch 1 {{.*}}spill bytes 0, shared memory 43712 B
// LANES-NOT: spills
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
