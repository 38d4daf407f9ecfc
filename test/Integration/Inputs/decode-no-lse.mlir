// A decode-shaped forward without the LSE result (inference): bf16, GQA
// with four query heads per KV head, one query row, dynamic keys.
func.func @decode(%q: tensor<2x8x1x64xbf16>, %k: tensor<2x2x?x64xbf16>, %v: tensor<2x2x?x64xbf16>) -> tensor<2x8x1x64xbf16> {
  %o = flash.attention %q, %k, %v : tensor<2x8x1x64xbf16>, tensor<2x2x?x64xbf16>, tensor<2x2x?x64xbf16> -> tensor<2x8x1x64xbf16>
  return %o : tensor<2x8x1x64xbf16>
}
