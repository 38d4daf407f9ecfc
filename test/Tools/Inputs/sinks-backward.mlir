func.func @train(%q: tensor<?x?x?x64xbf16>, %s: tensor<?xf32>, %do: tensor<?x?x?x64xbf16>) -> (tensor<?x?x?x64xbf16>, tensor<?xf32>) {
  %o, %lse = flash.attention %q, %q, %q sinks(%s : tensor<?xf32>) : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16> -> tensor<?x?x?x64xbf16>, tensor<?x?x?xf32>
  %dq, %dk, %dv, %ds = flash.attention_backward %q, %q, %q, %o, %do, %lse sinks(%s : tensor<?xf32>) : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?xf32> -> tensor<?xf32>
  return %dq, %ds : tensor<?x?x?x64xbf16>, tensor<?xf32>
}
