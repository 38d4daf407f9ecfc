// RUN: flash-opt %s --flash-tile-attention="target=sm_90a deterministic=false overlap-products" | FileCheck %s
// RUN: flash-opt %s --flash-tile-attention="target=sm_90a deterministic=false" | FileCheck %s --check-prefix=SEQUENTIAL

// With overlap-products the atomic form's dK/dV step builds dPᵀ = V dOᵀ right
// after Sᵀ = K Qᵀ, before Pᵀ's exponentials and dV: with warpgroup MMAs
// waited for at first use the two score products are in flight together
// (FlashAttention-3's order). Without it dV comes first (fewer registers).
// CHECK-LABEL: func.func @backward
// CHECK: flash.contraction = "scores_transposed"
// CHECK-NOT: flash.contraction
// CHECK: flash.contraction = "grad_probs_transposed"
// CHECK: math.exp2
// CHECK: flash.contraction = "grad_value"
// CHECK: flash.contraction = "grad_key"
// CHECK: flash.contraction = "grad_query_block"
// CHECK: flash.atomic_add
// SEQUENTIAL-LABEL: func.func @backward
// SEQUENTIAL: flash.contraction = "scores_transposed"
// SEQUENTIAL: math.exp2
// SEQUENTIAL: flash.contraction = "grad_value"
// SEQUENTIAL-NOT: math.exp2
// SEQUENTIAL: flash.contraction = "grad_probs_transposed"
// SEQUENTIAL: flash.contraction = "grad_key"
func.func @backward(%q: tensor<2x4x100x64xbf16>, %k: tensor<2x2x90x64xbf16>, %v: tensor<2x2x90x64xbf16>, %o: tensor<2x4x100x64xbf16>, %do: tensor<2x4x100x64xbf16>, %lse: tensor<2x4x100xf32>) -> (tensor<2x4x100x64xbf16>, tensor<2x2x90x64xbf16>, tensor<2x2x90x64xbf16>) {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, %do, %lse {causal} : tensor<2x4x100x64xbf16>, tensor<2x2x90x64xbf16>, tensor<2x2x90x64xbf16>, tensor<2x4x100x64xbf16>, tensor<2x4x100xf32>
  return %dq, %dk, %dv : tensor<2x4x100x64xbf16>, tensor<2x2x90x64xbf16>, tensor<2x2x90x64xbf16>
}
