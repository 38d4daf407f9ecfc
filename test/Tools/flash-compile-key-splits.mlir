// flash-compile's split-KV (FlashDecoding) kernels: a function marked
// `flash.key_splits` (or --key-splits) gets two launches, the split forward
// (grid: query blocks times the run count, the o_split workspace's leading
// size) and the merge; the manifest names the partial results as workspaces
// the runtime allocates with a leading run count. The general kernel is split
// too. Functions without the mark keep one launch. Nothing spills.
// RUN: rm -rf %t && flash-compile %s --chip sm_90a -o %t | FileCheck %s
// RUN: %python -m flash_mlir.manifest_check %t | FileCheck %s --check-prefix=MANIFEST
// RUN: %python -c "import json,sys; m=json.load(open(sys.argv[1])); print(m['key_splits'], m['has_lse'], m['has_sinks'], [w['name'] + ':' + w['like'] + ':' + str(w.get('like_dims')) for w in m['workspace']]); [print(l['grid'], l['block'], l.get('programmatic_dependent_launch'), [p['name'] for p in l['params']]) for l in m['launches']]" %t/decode.json | FileCheck %s --check-prefix=SPLIT
// RUN: %python -c "import json,sys; m=json.load(open(sys.argv[1])); print(m.get('key_splits'), 'launches' in m, m['grid'][0])" %t/plain.json | FileCheck %s --check-prefix=PLAIN
// RUN: rm -rf %t.80 && flash-compile %s --chip sm_80 -o %t.80 | FileCheck %s --check-prefix=SM80

// CHECK: decode merge (decode_kernel): registers {{[0-9]+}}, spill bytes 0
// CHECK: decode: {{.*}}decode.0.ptx, tiles 64x128, {{[0-9]+}} threads, registers {{[0-9]+}}, spill bytes 0
// CHECK: decode_general merge (decode_general_kernel): registers {{[0-9]+}}, spill bytes 0
// CHECK: decode_general: {{.*}}decode_general.0.ptx, {{.*}}spill bytes 0
// CHECK: plain: {{.*}}plain.ptx, {{.*}}spill bytes 0
// MANIFEST: 0 spill

// SPLIT: True True True ['o_split:o:None', 'lse_split:q:3']
// A decode step's few rows: 64-row tiles on a producer and one consumer
// warpgroup; the merge a thread per element of its 2 x 128 tile, launched
// as a programmatic dependent of the split kernel (sm_90a).
// SPLIT-NEXT: [{'product': [{'ceil_div': 64, 'dim': 2, 'tensor': 'q'}, {'dim': 0, 'tensor': 'o_split'}]}, {'dim': 1, 'tensor': 'q'}, {'dim': 0, 'tensor': 'q'}] [256, 1, 1] None ['tensor_maps', {{.*}}'o_split'{{.*}}'lse_split'{{.*}}]
// SPLIT-NEXT: [{'ceil_div': 2, 'dim': 2, 'tensor': 'q'}, {'dim': 1, 'tensor': 'q'}, {'dim': 0, 'tensor': 'q'}] [256, 1, 1] True [{{.*}}'o_split', 'lse_split', 'sinks', 'o', 'lse']

// PLAIN: None False {'ceil_div': {{[0-9]+}}, 'dim': 2, 'tensor': 'q'}

// SM80: decode merge (decode_kernel): registers {{[0-9]+}}, spill bytes 0
// SM80: decode: {{.*}}decode.0.ptx, {{.*}}spill bytes 0

func.func @decode(%q: tensor<?x?x?x128xbf16>, %k: tensor<?x?x?x128xbf16>, %v: tensor<?x?x?x128xbf16>, %s: tensor<?xf32>) -> (tensor<?x?x?x128xbf16>, tensor<?x?x?xf32>) attributes {flash.key_splits} {
  %o, %lse = flash.attention %q, %k, %v sinks(%s : tensor<?xf32>) : tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16>, tensor<?x?x?x128xbf16> -> tensor<?x?x?x128xbf16>, tensor<?x?x?xf32>
  return %o, %lse : tensor<?x?x?x128xbf16>, tensor<?x?x?xf32>
}

func.func @plain(%q: tensor<?x?x?x64xf16>, %k: tensor<?x?x?x64xf16>, %v: tensor<?x?x?x64xf16>) -> tensor<?x?x?x64xf16> {
  %o = flash.attention %q, %k, %v {causal} : tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16> -> tensor<?x?x?x64xf16>
  return %o : tensor<?x?x?x64xf16>
}
