// The backward with a score modification on the GPU (flash-opt's pipeline):
// softcap's derivative 1 - tanh^2 joins dS in both kernels (dQ, and dK/dV on
// the transposed tiles), which keep their register-tile mappings and
// assemble with ptxas for sm_90a and sm_80. Numbers: the CPU forms of both
// targets in test/Integration/attention-score-mod.mlir.
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_90a format=isa" | FileCheck %s
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_90a format=bin" -o /dev/null
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_80 format=bin" -o /dev/null
// CHECK-COUNT-2: .visible .entry softcap_backward_kernel
func.func @softcap_backward(%q: tensor<1x4x128x64xbf16>, %o: tensor<1x4x128x64xbf16>, %lse: tensor<1x4x128xf32>, %dq_out: tensor<1x4x128x64xbf16> {bufferization.writable = true}, %dk_out: tensor<1x4x128x64xbf16> {bufferization.writable = true}, %dv_out: tensor<1x4x128x64xbf16> {bufferization.writable = true}) -> (tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>) {
  %dq, %dk, %dv = flash.attention_backward %q, %q, %q, %o, %o, %lse {causal} : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128xf32> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 0.02 : f32
    %cap = arith.constant 50.0 : f32
    %x = arith.mulf %s, %c : f32
    %t = math.tanh %x : f32
    %r = arith.mulf %t, %cap : f32
    flash.yield %r : f32
  }
  %0 = bufferization.materialize_in_destination %dq in %dq_out : (tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16>
  %1 = bufferization.materialize_in_destination %dk in %dk_out : (tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16>
  %2 = bufferization.materialize_in_destination %dv in %dv_out : (tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16>
  return %0, %1, %2 : tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>
}
