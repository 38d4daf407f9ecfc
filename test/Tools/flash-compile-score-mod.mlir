// flash-compile takes score modifications: the region is cloned into the
// kernel, its constant scalars with it, and each tensor it reads (ALiBi's
// slopes) becomes a kernel parameter mod0, mod1, ... that the manifest lists
// (the runtime passes it by name); the manifest prints the region under
// "score_mod". A value known only at run time (a scalar argument) is a
// located error naming what a kernel takes.
// RUN: rm -rf %t && flash-compile %s --chip sm_90a -o %t | FileCheck %s
// RUN: %python -m flash_mlir.manifest_check %t | FileCheck %s --check-prefix=MANIFEST
// RUN: %python -c "import json,sys; m=json.load(open(sys.argv[1])); ps={p['name']: p for p in m['params']}; print([p['name'] for p in m['params']], ps['mod0']['shape'], [x['tensor'] for x in ps['tensor_maps']['maps']], m['score_mod'])" %t/alibi.json | FileCheck %s --check-prefix=ALIBI
// RUN: %python -c "import json,sys; m=json.load(open(sys.argv[1])); print(m['score_mod'])" %t/softcap.json | FileCheck %s --check-prefix=SOFTCAP
// RUN: not flash-compile %S/Inputs/score-mod-runtime-value.mlir --chip sm_90a -o %t.bad 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: %python %S/../Inputs/expect_exit.py 1 flash-compile %S/Inputs/score-mod-runtime-value.mlir --chip sm_90a -o %t.bad

// CHECK: softcap: {{.*}}.ptx, tiles {{[0-9]+}}x{{[0-9]+}}, {{[0-9]+}} threads, registers {{[0-9]+}}, spill bytes 0
// CHECK: alibi: {{.*}}.ptx, tiles {{[0-9]+}}x{{[0-9]+}}, {{[0-9]+}} threads, registers {{[0-9]+}}, spill bytes 0
// MANIFEST: 0 spill
// The TMA loads' tensor maps (K and V, and Q from the producer) come in a
// parameter of their own.
// ALIBI: ['tensor_maps', 'q', 'k', 'v', 'mod0', 'o'] [16] ['k', 'v', 'q'] %extracted = tensor.extract %{{.*}}[%h] : tensor<16xf32>; {{.*}} flash.yield
// SOFTCAP: math.tanh
// BAD: score-mod-runtime-value.mlir:{{[0-9]+}}:8: error: flash-compile: the score_mod reads f32 value from outside the op; a kernel takes constant scalars and tensors (as parameters mod0, mod1, ...)

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

func.func @alibi(%q: tensor<?x16x?x64xbf16>, %slopes: tensor<16xf32>) -> tensor<?x16x?x64xbf16> {
  %o = flash.attention %q, %q, %q {causal} : tensor<?x16x?x64xbf16>, tensor<?x16x?x64xbf16>, tensor<?x16x?x64xbf16> -> tensor<?x16x?x64xbf16> score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %slope = tensor.extract %slopes[%h] : tensor<16xf32>
    %d = arith.subi %j, %i : index
    %di = arith.index_cast %d : index to i64
    %df = arith.sitofp %di : i64 to f32
    %t = arith.mulf %slope, %df : f32
    %r = arith.addf %s, %t : f32
    flash.yield %r : f32
  }
  return %o : tensor<?x16x?x64xbf16>
}
