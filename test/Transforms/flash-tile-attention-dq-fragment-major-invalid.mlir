// --flash-tile-attention's dq-fragment-major needs head dims that are a
// multiple of 64 (the fragment-major strips' columns): a located error, not
// a silent fallback to rows.
// RUN: flash-opt %s --flash-tile-attention="target=sm_80 deterministic=false dq-fragment-major=1" -verify-diagnostics

func.func @narrow_head(%q: tensor<1x2x40x32xbf16>, %k: tensor<1x2x40x32xbf16>, %v: tensor<1x2x40x32xbf16>, %o: tensor<1x2x40x32xbf16>, %do: tensor<1x2x40x32xbf16>, %lse: tensor<1x2x40xf32>) -> tensor<1x2x40x32xbf16> {
  // expected-error @+1 {{a fragment-major dQ accumulator needs D a multiple of 64 and query blocks of whole 16-row strips}}
  %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, %do, %lse : tensor<1x2x40x32xbf16>, tensor<1x2x40x32xbf16>, tensor<1x2x40x32xbf16>, tensor<1x2x40x32xbf16>, tensor<1x2x40xf32>
  return %dq : tensor<1x2x40x32xbf16>
}
