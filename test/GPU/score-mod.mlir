// Score modifications on the GPU (flash-opt's pipeline; flash-compile refuses
// them until the manifest can describe them): ALiBi reads its slope per head
// from a kernel argument, softcap runs tanh on the scores; both keep the
// wgmma + register-tile kernel on sm_90a (the slope is one global load, not
// a shared-memory tile) and assemble with ptxas for sm_90a and sm_80.
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_90a format=isa block-rows=64 threads=128" | FileCheck %s
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_90a format=bin block-rows=64 threads=128" -o /dev/null
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_80 format=bin" -o /dev/null
// flash_mlir.gpu_module reads the kernels back as launch entries (how
// score_mod_check runs them on the H200): the function's memrefs in order, the
// slopes a rank-1 one, grid (query blocks, heads, batch) and shared memory.
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_90a format=isa block-rows=64 threads=128" | %python -m flash_mlir.gpu_module - --describe | FileCheck %s --check-prefix=ENTRY
// ENTRY: alibi: entry alibi_kernel, grid [2, 4, 1], block [128, 1, 1], shared 16384 B, memref ranks [4, 4, 4, 1, 4], PTX {{[0-9]+}} lines
// ENTRY: softcap: entry softcap_kernel, grid [2, 4, 1], block [128, 1, 1], shared 16384 B, memref ranks [4, 4, 4, 4], PTX {{[0-9]+}} lines

// CHECK: .visible .entry alibi_kernel(
// CHECK: ld.global.b32
// CHECK: cvt.rn.f32.s64
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// CHECK: .visible .entry softcap_kernel(
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
func.func @alibi(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x256x64xbf16>, %v: tensor<1x4x256x64xbf16>, %slopes: tensor<4xf32>, %o_out: tensor<1x4x128x64xbf16> {bufferization.writable = true}) -> tensor<1x4x128x64xbf16> {
  %o = flash.attention %q, %k, %v {causal} : tensor<1x4x128x64xbf16>, tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x128x64xbf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %slope = tensor.extract %slopes[%h] : tensor<4xf32>
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %t = arith.mulf %slope, %df : f32
    %r = arith.addf %s, %t : f32
    flash.yield %r : f32
  }
  %r = bufferization.materialize_in_destination %o in %o_out : (tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16>
  return %r : tensor<1x4x128x64xbf16>
}
func.func @softcap(%q: tensor<1x4x128x64xbf16>, %k: tensor<1x4x256x64xbf16>, %v: tensor<1x4x256x64xbf16>, %o_out: tensor<1x4x128x64xbf16> {bufferization.writable = true}) -> tensor<1x4x128x64xbf16> {
  %o = flash.attention %q, %k, %v : tensor<1x4x128x64xbf16>, tensor<1x4x256x64xbf16>, tensor<1x4x256x64xbf16> -> tensor<1x4x128x64xbf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 0.02 : f32
    %cap = arith.constant 50.0 : f32
    %x = arith.mulf %s, %c : f32
    %t = math.tanh %x : f32
    %r = arith.mulf %t, %cap : f32
    flash.yield %r : f32
  }
  %r = bufferization.materialize_in_destination %o in %o_out : (tensor<1x4x128x64xbf16>, tensor<1x4x128x64xbf16>) -> tensor<1x4x128x64xbf16>
  return %r : tensor<1x4x128x64xbf16>
}
