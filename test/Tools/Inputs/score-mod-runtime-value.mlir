// A softcap whose cap is a function argument: no kernel parameter carries it.
func.func @runtime_cap(%q: tensor<?x?x?x64xf16>, %cap: f32) -> tensor<?x?x?x64xf16> {
  %o = flash.attention %q, %q, %q : tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16> -> tensor<?x?x?x64xf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %x = arith.divf %s, %cap : f32
    %t = math.tanh %x : f32
    %r = arith.mulf %t, %cap : f32
    flash.yield %r : f32
  }
  return %o : tensor<?x?x?x64xf16>
}
