// flash-compile takes attention sinks: the kernel's parameter `sinks` (f32
// [Hq], after the score operands), `"has_sinks": true` in the manifest, on
// sm_90a (the warp-specialised kernel, its persistent form and the general
// kernel) and sm_80, without spills. A backward with sinks is a located
// error that says what to do instead (dQ, dK, dV do not depend on them).
// RUN: rm -rf %t && flash-compile %s --chip sm_90a -o %t | FileCheck %s
// RUN: %python -m flash_mlir.manifest_check %t | FileCheck %s --check-prefix=MANIFEST
// RUN: %python -c "import json,sys; m=json.load(open(sys.argv[1])); print([p['name'] for p in m['params']], [p['shape'] for p in m['params'] if p['name'] == 'sinks'], m['has_sinks'])" %t/gpt.json | FileCheck %s --check-prefix=PARAMS
// RUN: %python -c "import json,sys; m=json.load(open(sys.argv[1])); print([p['name'] for p in m['params']], m['has_sinks'])" %t/gpt_lse_general.json | FileCheck %s --check-prefix=GENERAL
// RUN: rm -rf %t.80 && flash-compile %s --chip sm_80 -o %t.80 | FileCheck %s --check-prefix=SM80
// RUN: not flash-compile %S/Inputs/sinks-backward.mlir --chip sm_90a -o %t.bad 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK: gpt: {{.*}}.ptx, tiles {{[0-9]+}}x{{[0-9]+}}, {{[0-9]+}} threads, registers {{[0-9]+}}, spill bytes 0
// CHECK: gpt_lse: {{.*}}.ptx, tiles {{[0-9]+}}x{{[0-9]+}}, {{[0-9]+}} threads, registers {{[0-9]+}}, spill bytes 0
// CHECK: gpt_lse_general: {{.*}}, spill bytes 0
// MANIFEST: 0 spill
// PARAMS: ['tensor_maps', {{.*}}'v', 'sinks', 'o'] {{\[\[}}None]] True
// GENERAL: ['q', 'k', 'v', 'mask', 'sinks', 'o', 'lse'] True
// SM80: gpt: {{.*}}, spill bytes 0
// SM80: gpt_lse: {{.*}}, spill bytes 0
// BAD: sinks-backward.mlir:3:{{[0-9]+}}: error: flash-compile: the gradient of the sinks is not built into GPU kernels; dQ, dK and dV do not depend on the sinks

func.func @gpt(%q: tensor<?x?x?x64xbf16>, %k: tensor<?x?x?x64xbf16>, %v: tensor<?x?x?x64xbf16>, %s: tensor<?xf32>) -> tensor<?x?x?x64xbf16> {
  %o = flash.attention %q, %k, %v sinks(%s : tensor<?xf32>) {causal, window = 128 : i64} : tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16>, tensor<?x?x?x64xbf16> -> tensor<?x?x?x64xbf16>
  return %o : tensor<?x?x?x64xbf16>
}

func.func @gpt_lse(%q: tensor<?x?x?x128xf16>, %m: tensor<?x?x?x?xi1>, %s: tensor<?xbf16>) -> (tensor<?x?x?x128xf16>, tensor<?x?x?xf32>) {
  %o, %lse = flash.attention %q, %q, %q mask(%m : tensor<?x?x?x?xi1>) sinks(%s : tensor<?xbf16>) : tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16>, tensor<?x?x?x128xf16> -> tensor<?x?x?x128xf16>, tensor<?x?x?xf32>
  return %o, %lse : tensor<?x?x?x128xf16>, tensor<?x?x?xf32>
}
