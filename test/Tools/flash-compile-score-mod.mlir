// The kernel manifest cannot describe a score modification yet: flash-compile
// refuses it with a located error naming the way out (flash-opt's GPU
// pipeline compiles it, see test/GPU/score-mod.mlir), with exit 1 and
// nothing written.
// RUN: rm -rf %t && not flash-compile %s --chip sm_90a -o %t 2>&1 | FileCheck %s
// RUN: %python %S/../Inputs/expect_exit.py 1 flash-compile %s --chip sm_90a -o %t
// RUN: not ls %t

// CHECK: flash-compile-score-mod.mlir:[[@LINE+2]]:8: error: flash-compile: a score modification (score_mod: softcap, ALiBi, a computed bias) is not described by the kernel manifest yet; compile it with flash-opt --flash-gpu-pipeline
func.func @softcap(%q: tensor<?x?x?x64xf16>) -> tensor<?x?x?x64xf16> {
  %o = flash.attention %q, %q, %q : tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16> -> tensor<?x?x?x64xf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %c = arith.constant 0.02 : f32
    %cap = arith.constant 50.0 : f32
    %x = arith.mulf %s, %c : f32
    %t = math.tanh %x : f32
    %r = arith.mulf %t, %cap : f32
    flash.yield %r : f32
  }
  return %o : tensor<?x?x?x64xf16>
}
