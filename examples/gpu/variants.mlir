// Attention variants compiled by scripts/gpu_build.sh for the GPU check and
// benchmark, and by the GPU lit tests (ptxas for sm_80 and sm_90a).

func.func @attn_f16_d64(%q: tensor<?x?x?x64xf16>, %k: tensor<?x?x?x64xf16>, %v: tensor<?x?x?x64xf16>) -> tensor<?x?x?x64xf16> {
  %o = flash.attention %q, %k, %v : tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16> -> tensor<?x?x?x64xf16>
  return %o : tensor<?x?x?x64xf16>
}

func.func @attn_f16_d64_causal(%q: tensor<?x?x?x64xf16>, %k: tensor<?x?x?x64xf16>, %v: tensor<?x?x?x64xf16>) -> tensor<?x?x?x64xf16> {
  %o = flash.attention %q, %k, %v {causal} : tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16> -> tensor<?x?x?x64xf16>
  return %o : tensor<?x?x?x64xf16>
}

func.func @attn_f16_d128(%q: tensor<?x?x?x128xf16>, %k: tensor<?x?x?x128xf16>, %v: tensor<?x?x?x128xf16>) -> tensor<?x?x?x128xf16> {
  %o = flash.attention %q, %k, %v : tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16> -> tensor<?x?x?x128xf16>
  return %o : tensor<?x?x?x128xf16>
}

func.func @attn_f16_d128_causal(%q: tensor<?x?x?x128xf16>, %k: tensor<?x?x?x128xf16>, %v: tensor<?x?x?x128xf16>) -> tensor<?x?x?x128xf16> {
  %o = flash.attention %q, %k, %v {causal} : tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16> -> tensor<?x?x?x128xf16>
  return %o : tensor<?x?x?x128xf16>
}

func.func @attn_bf16_d64(%q: tensor<?x?x?x64xbf16>, %k: tensor<?x?x?x64xbf16>, %v: tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16> {
  %o = flash.attention %q, %k, %v : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16> -> tensor<?x?x?x64xbf16>
  return %o : tensor<?x?x?x64xbf16>
}

func.func @attn_bf16_d64_causal(%q: tensor<?x?x?x64xbf16>, %k: tensor<?x?x?x64xbf16>, %v: tensor<?x?x?x64xbf16>) -> tensor<?x?x?x64xbf16> {
  %o = flash.attention %q, %k, %v {causal} : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16> -> tensor<?x?x?x64xbf16>
  return %o : tensor<?x?x?x64xbf16>
}

func.func @attn_bf16_d128(%q: tensor<?x?x?x128xbf16>, %k: tensor<?x?x?x128xbf16>, %v: tensor<?x?x?x128xbf16>) -> tensor<?x?x?x128xbf16> {
  %o = flash.attention %q, %k, %v : tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16> -> tensor<?x?x?x128xbf16>
  return %o : tensor<?x?x?x128xbf16>
}

func.func @attn_bf16_d128_causal(%q: tensor<?x?x?x128xbf16>, %k: tensor<?x?x?x128xbf16>, %v: tensor<?x?x?x128xbf16>) -> tensor<?x?x?x128xbf16> {
  %o = flash.attention %q, %k, %v {causal} : tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16> -> tensor<?x?x?x128xbf16>
  return %o : tensor<?x?x?x128xbf16>
}

// D = 96 with a sliding window: any multiple of 16 up to 256 is correct.
func.func @attn_f16_d96_window(%q: tensor<?x?x?x96xf16>, %k: tensor<?x?x?x96xf16>, %v: tensor<?x?x?x96xf16>) -> tensor<?x?x?x96xf16> {
  %o = flash.attention %q, %k, %v {causal, window = 100 : i64} : tensor<?x?x?x96xf16>, tensor<?x?x?x96xf16>, tensor<?x?x?x96xf16> -> tensor<?x?x?x96xf16>
  return %o : tensor<?x?x?x96xf16>
}

// D = 256 and D = 32 (tiles chosen to fit), a broadcast f32 bias [M, N] on f16
// inputs, and the log-sum-exp output.
func.func @attn_f16_d256(%q: tensor<?x?x?x256xf16>, %k: tensor<?x?x?x256xf16>, %v: tensor<?x?x?x256xf16>) -> tensor<?x?x?x256xf16> {
  %o = flash.attention %q, %k, %v : tensor<?x?x?x256xf16>, tensor<?x?x?x256xf16>, tensor<?x?x?x256xf16> -> tensor<?x?x?x256xf16>
  return %o : tensor<?x?x?x256xf16>
}

func.func @attn_f16_d256_causal(%q: tensor<?x?x?x256xf16>, %k: tensor<?x?x?x256xf16>, %v: tensor<?x?x?x256xf16>) -> tensor<?x?x?x256xf16> {
  %o = flash.attention %q, %k, %v {causal} : tensor<?x?x?x256xf16>, tensor<?x?x?x256xf16>, tensor<?x?x?x256xf16> -> tensor<?x?x?x256xf16>
  return %o : tensor<?x?x?x256xf16>
}

func.func @attn_bf16_d32(%q: tensor<?x?x?x32xbf16>, %k: tensor<?x?x?x32xbf16>, %v: tensor<?x?x?x32xbf16>) -> tensor<?x?x?x32xbf16> {
  %o = flash.attention %q, %k, %v : tensor<?x?x?x32xbf16>, tensor<?x?x?x32xbf16>, tensor<?x?x?x32xbf16> -> tensor<?x?x?x32xbf16>
  return %o : tensor<?x?x?x32xbf16>
}

func.func @attn_f16_d64_bias_lse(%q: tensor<?x?x?x64xf16>, %k: tensor<?x?x?x64xf16>, %v: tensor<?x?x?x64xf16>, %b: tensor<?x?xf32>) -> (tensor<?x?x?x64xf16>, tensor<?x?x?xf32>) {
  %o, %lse = flash.attention %q, %k, %v bias(%b : tensor<?x?xf32>) : tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16> -> tensor<?x?x?x64xf16>, tensor<?x?x?xf32>
  return %o, %lse : tensor<?x?x?x64xf16>, tensor<?x?x?xf32>
}

// Head dimensions that are multiples of 16 but not powers of two.
func.func @attn_f16_d80_causal(%q: tensor<?x?x?x80xf16>, %k: tensor<?x?x?x80xf16>, %v: tensor<?x?x?x80xf16>) -> tensor<?x?x?x80xf16> {
  %o = flash.attention %q, %k, %v {causal} : tensor<?x?x?x80xf16>, tensor<?x?x?x80xf16>, tensor<?x?x?x80xf16> -> tensor<?x?x?x80xf16>
  return %o : tensor<?x?x?x80xf16>
}

func.func @attn_bf16_d160(%q: tensor<?x?x?x160xbf16>, %k: tensor<?x?x?x160xbf16>, %v: tensor<?x?x?x160xbf16>) -> tensor<?x?x?x160xbf16> {
  %o = flash.attention %q, %k, %v : tensor<?x?x?x160xbf16>, tensor<?x?x?x160xbf16>, tensor<?x?x?x160xbf16> -> tensor<?x?x?x160xbf16>
  return %o : tensor<?x?x?x160xbf16>
}

func.func @attn_bf16_d224_causal(%q: tensor<?x?x?x224xbf16>, %k: tensor<?x?x?x224xbf16>, %v: tensor<?x?x?x224xbf16>) -> tensor<?x?x?x224xbf16> {
  %o = flash.attention %q, %k, %v {causal} : tensor<?x?x?x224xbf16>, tensor<?x?x?x224xbf16>, tensor<?x?x?x224xbf16> -> tensor<?x?x?x224xbf16>
  return %o : tensor<?x?x?x224xbf16>
}
