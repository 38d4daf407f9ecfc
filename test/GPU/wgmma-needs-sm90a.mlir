// Warpgroup MMA exists on sm_90a only: asking for it on another chip is a
// located error, not PTX that ptxas rejects later.
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_80 format=isa tensor-cores=wgmma" -verify-diagnostics
// And tensor-cores=auto on sm_80 stays on mma.sync.
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_80 format=isa block-rows=128 block-cols=64" | FileCheck %s
// CHECK: .target sm_80
// CHECK-NOT: wgmma
// CHECK: mma.sync.aligned.m16n8k16
func.func @forward(%q: tensor<?x?x?x64xbf16>, %o_out: tensor<?x?x?x64xbf16> {bufferization.writable = true}) -> tensor<?x?x?x64xbf16> {
  // expected-error @+1 {{flash-gpu-assign-tile-storage: tensor-cores=wgmma needs chip=sm_90a (Hopper's warpgroup MMA), not sm_80}}
  %o = flash.attention %q, %q, %q : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16> -> tensor<?x?x?x64xbf16>
  %r = bufferization.materialize_in_destination %o in %o_out : (tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16>
  return %r : tensor<?x?x?x64xbf16>
}
