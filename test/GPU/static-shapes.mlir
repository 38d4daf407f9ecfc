// Static shapes with unit batch or a single row block: canonicalization drops
// those dims of the tiled scf.forall, and the mapping gives them grid size 1.
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_90a format=isa" | FileCheck %s

// CHECK: .visible .entry forward_kernel(
// CHECK: mma.sync.aligned.m16n8k16
func.func @forward(%q: tensor<1x2x20x64xbf16>, %o_out: tensor<1x2x20x64xbf16> {bufferization.writable = true}) -> tensor<1x2x20x64xbf16> {
  %o = flash.attention %q, %q, %q {causal} : tensor<1x2x20x64xbf16>, tensor<1x2x20x64xbf16>, tensor<1x2x20x64xbf16> -> tensor<1x2x20x64xbf16>
  %r = bufferization.materialize_in_destination %o in %o_out : (tensor<1x2x20x64xbf16>, tensor<1x2x20x64xbf16>) -> tensor<1x2x20x64xbf16>
  return %r : tensor<1x2x20x64xbf16>
}

// CHECK-COUNT-2: .visible .entry backward_kernel(
func.func @backward(%q: tensor<1x2x20x64xbf16>, %o: tensor<1x2x20x64xbf16>, %lse: tensor<1x2x20xf32>, %dq_out: tensor<1x2x20x64xbf16> {bufferization.writable = true}, %dk_out: tensor<1x2x20x64xbf16> {bufferization.writable = true}, %dv_out: tensor<1x2x20x64xbf16> {bufferization.writable = true}) -> (tensor<1x2x20x64xbf16>, tensor<1x2x20x64xbf16>, tensor<1x2x20x64xbf16>) {
  %dq, %dk, %dv = flash.attention_backward %q, %q, %q, %o, %o, %lse : tensor<1x2x20x64xbf16>, tensor<1x2x20x64xbf16>, tensor<1x2x20x64xbf16>, tensor<1x2x20x64xbf16>, tensor<1x2x20xf32>
  %0 = bufferization.materialize_in_destination %dq in %dq_out : (tensor<1x2x20x64xbf16>, tensor<1x2x20x64xbf16>) -> tensor<1x2x20x64xbf16>
  %1 = bufferization.materialize_in_destination %dk in %dk_out : (tensor<1x2x20x64xbf16>, tensor<1x2x20x64xbf16>) -> tensor<1x2x20x64xbf16>
  %2 = bufferization.materialize_in_destination %dv in %dv_out : (tensor<1x2x20x64xbf16>, tensor<1x2x20x64xbf16>) -> tensor<1x2x20x64xbf16>
  return %0, %1, %2 : tensor<1x2x20x64xbf16>, tensor<1x2x20x64xbf16>, tensor<1x2x20x64xbf16>
}
