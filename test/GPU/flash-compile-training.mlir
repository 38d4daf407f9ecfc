// flash-compile on a training step in linalg: the backward that reads the
// saved P is fused first, so the step compiles to the forward kernel (which
// now writes the LSE) and the two backward kernels, each with its general
// pair for unaligned rows.
// RUN: rm -rf %t && flash-compile %s --chip sm_90a -o %t | FileCheck %s
// RUN: %python -m flash_mlir.manifest_check %t | FileCheck %s --check-prefix=MANIFEST
// RUN: %python -c "import json,sys; m=json.load(open(sys.argv[1])); print(m['kind'], [l['entry'] for l in m['launches']], m['workspace'])" %t/named_softmax_backward.json | FileCheck %s --check-prefix=JSON
// --kv-block-rows / --kv-block-cols: the dK/dV launch's grid steps over 32
// key rows, its loop over 16 query rows (the default here: 64 key rows, 128 query columns).
// RUN: %python -c "import json,sys; m=json.load(open(sys.argv[1])); print(m['kv_block_cols'], m['launches'][1]['grid'][0])" %t/named_softmax_backward.json | FileCheck %s --check-prefix=KVDEFAULT
// RUN: rm -rf %t.kv && flash-compile %s --chip sm_90a --kv-block-rows=32 --kv-block-cols=16 -o %t.kv > /dev/null
// RUN: %python -c "import json,sys; m=json.load(open(sys.argv[1])); print(m['kv_block_cols'], m['launches'][1]['grid'][0])" %t.kv/named_softmax_backward.json | FileCheck %s --check-prefix=KV
// KVDEFAULT: 128 {'ceil_div': 64, 'dim': 2, 'tensor': 'k'}
// KV: 16 {'ceil_div': 32, 'dim': 2, 'tensor': 'k'}

// CHECK: named_softmax: {{.*}}, spill bytes 0
// CHECK: named_softmax_general: {{.*}}, spill bytes 0
// CHECK: named_softmax_backward launch 0 {{.*}}, spill bytes 0
// CHECK: named_softmax_backward launch 1 {{.*}}, spill bytes 0
// CHECK: named_softmax_backward_general launch 1 {{.*}}, spill bytes 0
// MANIFEST: 6 kernels assembled, 0 spill
// JSON: backward ['named_softmax_backward_kernel', 'named_softmax_backward_kernel'] [{'dtype': 'f32', 'like': 'lse', 'name': 'd'}]

#q = affine_map<(m, n, d) -> (m, d)>
#k = affine_map<(m, n, d) -> (n, d)>
#s = affine_map<(m, n, d) -> (m, n)>
#p2 = affine_map<(m, d, n) -> (m, n)>
#v2 = affine_map<(m, d, n) -> (n, d)>
#o2 = affine_map<(m, d, n) -> (m, d)>
#id = affine_map<(m, n) -> (m, n)>
#row = affine_map<(m, n) -> (m)>
#pt = affine_map<(n, d, m) -> (m, n)>
#dot = affine_map<(n, d, m) -> (m, d)>
#kv = affine_map<(n, d, m) -> (n, d)>
func.func @named_softmax(%q: tensor<12x16xf32>, %k: tensor<16x16xf32>, %v: tensor<16x16xf32>, %do: tensor<12x16xf32>) -> (tensor<12x16xf32>, tensor<12x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %s0 = tensor.empty() : tensor<12x16xf32>
  %sz = linalg.fill ins(%zero : f32) outs(%s0 : tensor<12x16xf32>) -> tensor<12x16xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "reduction"]} ins(%q, %k : tensor<12x16xf32>, tensor<16x16xf32>) outs(%sz : tensor<12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<12x16xf32>
  %c = arith.constant 0.125 : f32
  %x = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s : tensor<12x16xf32>) outs(%s0 : tensor<12x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  } -> tensor<12x16xf32>
  %p = linalg.softmax dimension(1) ins(%x : tensor<12x16xf32>) outs(%s0 : tensor<12x16xf32>) -> tensor<12x16xf32>
  %o0 = tensor.empty() : tensor<12x16xf32>
  %oz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<12x16xf32>) -> tensor<12x16xf32>
  %o = linalg.generic {indexing_maps = [#p2, #v2, #o2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%p, %v : tensor<12x16xf32>, tensor<16x16xf32>) outs(%oz : tensor<12x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<12x16xf32>
  // backward
  %kv0 = tensor.empty() : tensor<16x16xf32>
  %kvz = linalg.fill ins(%zero : f32) outs(%kv0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %dv = linalg.generic {indexing_maps = [#pt, #dot, #kv], iterator_types = ["parallel", "parallel", "reduction"]} ins(%p, %do : tensor<12x16xf32>, tensor<12x16xf32>) outs(%kvz : tensor<16x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<16x16xf32>
  %dp = linalg.matmul indexing_maps = [affine_map<(m, n, d) -> (m, d)>, affine_map<(m, n, d) -> (n, d)>, affine_map<(m, n, d) -> (m, n)>] ins(%do, %v : tensor<12x16xf32>, tensor<16x16xf32>) outs(%sz : tensor<12x16xf32>) -> tensor<12x16xf32>
  %t = linalg.mul ins(%dp, %p : tensor<12x16xf32>, tensor<12x16xf32>) outs(%s0 : tensor<12x16xf32>) -> tensor<12x16xf32>
  %r0 = tensor.empty() : tensor<12xf32>
  %rz = linalg.fill ins(%zero : f32) outs(%r0 : tensor<12xf32>) -> tensor<12xf32>
  %rs = linalg.reduce { arith.addf } ins(%t : tensor<12x16xf32>) outs(%rz : tensor<12xf32>) dimensions = [1]
  %rsb = linalg.broadcast ins(%rs : tensor<12xf32>) outs(%s0 : tensor<12x16xf32>) dimensions = [1]
  %prs = linalg.mul ins(%p, %rsb : tensor<12x16xf32>, tensor<12x16xf32>) outs(%s0 : tensor<12x16xf32>) -> tensor<12x16xf32>
  %ds = linalg.sub ins(%t, %prs : tensor<12x16xf32>, tensor<12x16xf32>) outs(%s0 : tensor<12x16xf32>) -> tensor<12x16xf32>
  %cs = arith.constant dense<0.125> : tensor<12x16xf32>
  %dss = linalg.mul ins(%ds, %cs : tensor<12x16xf32>, tensor<12x16xf32>) outs(%s0 : tensor<12x16xf32>) -> tensor<12x16xf32>
  %qz = linalg.fill ins(%zero : f32) outs(%o0 : tensor<12x16xf32>) -> tensor<12x16xf32>
  %dq = linalg.matmul ins(%dss, %k : tensor<12x16xf32>, tensor<16x16xf32>) outs(%qz : tensor<12x16xf32>) -> tensor<12x16xf32>
  %dk = linalg.matmul indexing_maps = [affine_map<(n, d, m) -> (m, n)>, affine_map<(n, d, m) -> (m, d)>, affine_map<(n, d, m) -> (n, d)>] ins(%dss, %q : tensor<12x16xf32>, tensor<12x16xf32>) outs(%kvz : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %o, %dq, %dk, %dv : tensor<12x16xf32>, tensor<12x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>
}
