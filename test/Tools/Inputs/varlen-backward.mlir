func.func @grad(%q: tensor<1x4x?x64xf16>, %k: tensor<1x2x?x64xf16>, %o: tensor<1x4x?x64xf16>, %lse: tensor<1x4x?xf32>, %cq: tensor<?xi32>, %ck: tensor<?xi32>) -> tensor<1x4x?x64xf16> {
  %dq, %dk, %dv = flash.attention_backward %q, %k, %k, %o, %o, %lse cu_seqlens_q(%cq : tensor<?xi32>) cu_seqlens_k(%ck : tensor<?xi32>) {causal} : tensor<1x4x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x2x?x64xf16>, tensor<1x4x?x64xf16>, tensor<1x4x?xf32>
  return %dq : tensor<1x4x?x64xf16>
}
