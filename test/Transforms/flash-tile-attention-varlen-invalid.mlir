// RUN: flash-opt %s --flash-tile-attention=target=sm_90a --verify-diagnostics

// The tensor-core backward (a dQ nest and a dK/dV nest) does not take packed
// sequences yet: a located error, not a wrong result.
func.func @varlen_backward(%q: tensor<1x4x?x64xf16>, %k: tensor<1x2x?x64xf16>, %o: tensor<1x4x?x64xf16>, %lse: tensor<1x4x?xf32>, %cq: tensor<4xi32>, %ck: tensor<4xi32>) -> tensor<1x4x?x64xf16> {
  // expected-error @+1 {{cannot be tiled for a tensor-core target with cu_seqlens yet (the dQ and dK/dV nests of packed sequences); target=cpu tiles it}}
  %dq, %dk, %dv = flash.attention_backward %q, %k, %k, %o, %o, %lse cu_seqlens_q(%cq : tensor<4xi32>) cu_seqlens_k(%ck : tensor<4xi32>) {causal} : tensor<1x4x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x4x?x64xf16>, tensor<1x4x?xf32>
  return %dq : tensor<1x4x?x64xf16>
}
