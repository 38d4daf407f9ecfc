// flash-compile's varlen forward kernels: the
// offsets are parameters, the grid is (blocks of the caller's max_seqlen_q,
// Hq, S + 1) with max_seqlen_q a host-side scalar of the call; the backward
// is not built yet (a located error).
// RUN: rm -rf %t && flash-compile %s --chip sm_90a -o %t | FileCheck %s
// RUN: %python -c "import json,sys; m=json.load(open(sys.argv[1])); print(m['grid'], m['grid_scalars'], [p['name'] for p in m['params']])" %t/prefill.json | FileCheck %s --check-prefix=GRID
// RUN: not flash-compile %S/Inputs/varlen-backward.mlir --chip sm_90a -o %t.bwd 2>&1 | FileCheck %s --check-prefix=BWD
// CHECK: prefill: {{.*}}spill bytes 0
// GRID: [{'ceil_div': 128, 'scalar': 'max_seqlen_q'}, {'dim': 1, 'tensor': 'q'}, {'dim': 0, 'tensor': 'cu_seqlens_q'}] ['max_seqlen_q'] ['q', 'k', 'v', 'cu_seqlens_q', 'cu_seqlens_k', 'o', 'lse']
// BWD: varlen-backward.mlir:2:{{[0-9]+}}: error: flash-compile: cu_seqlens (packed variable-length sequences) are not built into GPU kernels yet; the CPU pipeline runs them

func.func @prefill(%q: tensor<1x16x?x128xbf16>, %k: tensor<1x4x?x128xbf16>, %cq: tensor<?xi32>, %ck: tensor<?xi32>) -> (tensor<1x16x?x128xbf16>, tensor<1x16x?xf32>) {
  %o, %lse = flash.attention %q, %k, %k cu_seqlens_q(%cq : tensor<?xi32>) cu_seqlens_k(%ck : tensor<?xi32>) {causal} : tensor<1x16x?x128xbf16>, tensor<1x4x?x128xbf16>, tensor<1x4x?x128xbf16> -> tensor<1x16x?x128xbf16>, tensor<1x16x?xf32>
  return %o, %lse : tensor<1x16x?x128xbf16>, tensor<1x16x?xf32>
}
