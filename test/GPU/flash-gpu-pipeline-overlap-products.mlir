// --flash-gpu-pipeline's overlap-products: the atomic backward's dK/dV step
// tiled with dPᵀ right after Sᵀ (--flash-tile-attention overlap-products)
// and each warpgroup MMA waited for at its first use (async-mma, implied):
// both score products are in flight before the exponentials (`wait_group 1`).
// Without the option every MMA is waited for at once (`wait_group 0` only).
// The dK/dV step of flash-compile's widest atomic choice: 128 keys per CTA,
// 64 query rows per step (kv-block-rows, kv-block-cols), two warpgroups, two
// stages of Q and dO by TMA.
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_90a format=isa deterministic=false kv-block-rows=128 kv-block-cols=64 threads=256 load-stages=2 tma-loads=true overlap-products=true" | FileCheck %s --check-prefix=OVERLAP
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_90a format=isa deterministic=false kv-block-rows=128 kv-block-cols=64 threads=256 load-stages=2 tma-loads=true" | FileCheck %s --check-prefix=SEQ

// OVERLAP-COUNT-2: wgmma.wait_group.sync.aligned 1;
// SEQ-NOT: wgmma.wait_group.sync.aligned 1;
// SEQ: wgmma.wait_group.sync.aligned 0;

func.func @backward(%q: tensor<?x?x?x128xbf16>, %k: tensor<?x?x?x128xbf16>, %v: tensor<?x?x?x128xbf16>, %o: tensor<?x?x?x128xbf16>, %do: tensor<?x?x?x128xbf16>, %lse: tensor<?x?x?xf32>, %dq_out: tensor<?x?x?x128xbf16> {bufferization.writable = true}, %dk_out: tensor<?x?x?x128xbf16> {bufferization.writable = true}, %dv_out: tensor<?x?x?x128xbf16> {bufferization.writable = true}) -> (tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>) {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, %do, %lse : tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>, tensor<?x?x?xf32>
  %0 = bufferization.materialize_in_destination %dq in %dq_out : (tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>) -> tensor<?x?x?x128xbf16>
  %1 = bufferization.materialize_in_destination %dk in %dk_out : (tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>) -> tensor<?x?x?x128xbf16>
  %2 = bufferization.materialize_in_destination %dv in %dv_out : (tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>) -> tensor<?x?x?x128xbf16>
  return %0, %1, %2 : tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>
}
