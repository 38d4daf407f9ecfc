// Score modifications at a benchmark size (B = 4, H = 16, S = 2048, D = 128, bf16),
// with the plain attention of the same configuration beside each: compiled by
// flash-opt's GPU pipeline (flash-compile does not take score_mod yet), run on the H200
// by python/flash_mlir/score_mod_check.py through flash_mlir.gpu_module (see
// scripts/gpu_build.sh and docs/GPU-NOTES.md).
func.func @plain(%q: tensor<4x16x2048x128xbf16>, %k: tensor<4x16x2048x128xbf16>, %v: tensor<4x16x2048x128xbf16>, %o_out: tensor<4x16x2048x128xbf16> {bufferization.writable = true}) -> tensor<4x16x2048x128xbf16> {
  %o = flash.attention %q, %k, %v : tensor<4x16x2048x128xbf16>, tensor<4x16x2048x128xbf16>, tensor<4x16x2048x128xbf16> -> tensor<4x16x2048x128xbf16>
  %r = bufferization.materialize_in_destination %o in %o_out : (tensor<4x16x2048x128xbf16>, tensor<4x16x2048x128xbf16>) -> tensor<4x16x2048x128xbf16>
  return %r : tensor<4x16x2048x128xbf16>
}
func.func @softcap(%q: tensor<4x16x2048x128xbf16>, %k: tensor<4x16x2048x128xbf16>, %v: tensor<4x16x2048x128xbf16>, %o_out: tensor<4x16x2048x128xbf16> {bufferization.writable = true}) -> tensor<4x16x2048x128xbf16> {
  %o = flash.attention %q, %k, %v : tensor<4x16x2048x128xbf16>, tensor<4x16x2048x128xbf16>, tensor<4x16x2048x128xbf16> -> tensor<4x16x2048x128xbf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 0.02 : f32
    %cap = arith.constant 50.0 : f32
    %x = arith.mulf %s, %c : f32
    %t = math.tanh %x : f32
    %r = arith.mulf %t, %cap : f32
    flash.yield %r : f32
  }
  %r = bufferization.materialize_in_destination %o in %o_out : (tensor<4x16x2048x128xbf16>, tensor<4x16x2048x128xbf16>) -> tensor<4x16x2048x128xbf16>
  return %r : tensor<4x16x2048x128xbf16>
}
func.func @plain_causal(%q: tensor<4x16x2048x128xbf16>, %k: tensor<4x16x2048x128xbf16>, %v: tensor<4x16x2048x128xbf16>, %o_out: tensor<4x16x2048x128xbf16> {bufferization.writable = true}) -> tensor<4x16x2048x128xbf16> {
  %o = flash.attention %q, %k, %v {causal} : tensor<4x16x2048x128xbf16>, tensor<4x16x2048x128xbf16>, tensor<4x16x2048x128xbf16> -> tensor<4x16x2048x128xbf16>
  %r = bufferization.materialize_in_destination %o in %o_out : (tensor<4x16x2048x128xbf16>, tensor<4x16x2048x128xbf16>) -> tensor<4x16x2048x128xbf16>
  return %r : tensor<4x16x2048x128xbf16>
}
func.func @alibi_causal(%q: tensor<4x16x2048x128xbf16>, %k: tensor<4x16x2048x128xbf16>, %v: tensor<4x16x2048x128xbf16>, %slopes: tensor<16xf32>, %o_out: tensor<4x16x2048x128xbf16> {bufferization.writable = true}) -> tensor<4x16x2048x128xbf16> {
  %o = flash.attention %q, %k, %v {causal} : tensor<4x16x2048x128xbf16>, tensor<4x16x2048x128xbf16>, tensor<4x16x2048x128xbf16> -> tensor<4x16x2048x128xbf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %slope = tensor.extract %slopes[%h] : tensor<16xf32>
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %t = arith.mulf %slope, %df : f32
    %r = arith.addf %s, %t : f32
    flash.yield %r : f32
  }
  %r = bufferization.materialize_in_destination %o in %o_out : (tensor<4x16x2048x128xbf16>, tensor<4x16x2048x128xbf16>) -> tensor<4x16x2048x128xbf16>
  return %r : tensor<4x16x2048x128xbf16>
}
