// flash-compile's split-KV (FlashDecoding) kernels: a function marked
// `flash.key_splits` (or --key-splits) gets a split forward whose grid is the
// query blocks times the run count (the o_split workspace's leading size);
// the manifest names the partial results as workspaces the runtime allocates
// with a leading run count. On sm_90a the runs of a query block are merged
// by the CTA of the last to finish (one launch; arrival counters in a third
// workspace that stays zero between calls); with --merge-in-last-cta=false,
// and on sm_80, a second launch merges. The general kernel is split too.
// Functions without the mark keep one launch. Nothing spills.
// RUN: rm -rf %t && flash-compile %s --chip sm_90a -o %t | FileCheck %s
// RUN: %python -m flash_mlir.manifest_check %t | FileCheck %s --check-prefix=MANIFEST
// RUN: %python -c "import json,sys; m=json.load(open(sys.argv[1])); print(m['key_splits'], m['has_lse'], m['has_sinks'], [w['name'] + ':' + w['like'] + ':' + str(w.get('like_dims')) + ':' + w['dtype'] + ':' + str(w.get('zero_between_calls')) for w in m['workspace']]); [print(l['grid'], l['block'], l.get('programmatic_dependent_launch'), [p['name'] for p in l['params']]) for l in m['launches']]" %t/decode.json | FileCheck %s --check-prefix=SPLIT
// RUN: %python -c "import json,sys; m=json.load(open(sys.argv[1])); print(m.get('key_splits'), 'launches' in m, m['grid'][0])" %t/plain.json | FileCheck %s --check-prefix=PLAIN
// RUN: rm -rf %t.pair && flash-compile %s --chip sm_90a --merge-in-last-cta=false -o %t.pair | FileCheck %s --check-prefix=PAIR
// RUN: %python -c "import json,sys; m=json.load(open(sys.argv[1])); print([w['name'] for w in m['workspace']]); [print(l['grid'], l['block'], l.get('programmatic_dependent_launch'), [p['name'] for p in l['params']]) for l in m['launches']]" %t.pair/decode.json | FileCheck %s --check-prefix=PAIR-MANIFEST
// RUN: rm -rf %t.80 && flash-compile %s --chip sm_80 -o %t.80 | FileCheck %s --check-prefix=SM80

// CHECK-NOT: merge
// CHECK: decode: {{.*}}decode.0.ptx, tiles 64x128, 256 threads, registers {{[0-9]+}}, spill bytes 0
// CHECK-NOT: merge
// CHECK: decode_general: {{.*}}decode_general.0.ptx, {{.*}}spill bytes 0
// CHECK: plain: {{.*}}plain.ptx, {{.*}}spill bytes 0
// Packed sequences' query blocks start at each sequence's offset: their
// merge stays a second launch.
// CHECK: vdecode merge (vdecode_kernel): registers {{[0-9]+}}, spill bytes 0
// CHECK: vdecode: {{.*}}vdecode.0.ptx, {{.*}}spill bytes 0
// MANIFEST: 0 spill

// SPLIT: True True True ['o_split:o:None:f32:None', 'lse_split:q:3:f32:None', 'split_counters:q:3:i32:True']
// A decode step's few rows: 64-row tiles on a producer and one consumer
// warpgroup, one launch that reads the counters.
// SPLIT-NEXT: [{'product': [{'ceil_div': 64, 'dim': 2, 'tensor': 'q'}, {'dim': 0, 'tensor': 'o_split'}]}, {'dim': 1, 'tensor': 'q'}, {'dim': 0, 'tensor': 'q'}] [256, 1, 1] None ['tensor_maps', {{.*}}'o_split'{{.*}}'lse_split', 'split_counters', 'sinks', 'o', 'lse']
// SPLIT-NOT: [

// PLAIN: None False {'ceil_div': {{[0-9]+}}, 'dim': 2, 'tensor': 'q'}

// PAIR: decode merge (decode_kernel): registers {{[0-9]+}}, spill bytes 0
// PAIR: decode: {{.*}}decode.0.ptx, tiles 64x128, 256 threads, registers {{[0-9]+}}, spill bytes 0
// PAIR: decode_general merge (decode_general_kernel): registers {{[0-9]+}}, spill bytes 0
// PAIR-MANIFEST: ['o_split', 'lse_split']
// The merge a thread per four columns of each row of its 4 x 128 tile,
// launched as a programmatic dependent of the split kernel.
// PAIR-MANIFEST-NEXT: [{'product': [{'ceil_div': 64, 'dim': 2, 'tensor': 'q'}, {'dim': 0, 'tensor': 'o_split'}]}, {'dim': 1, 'tensor': 'q'}, {'dim': 0, 'tensor': 'q'}] [256, 1, 1] None ['tensor_maps', {{.*}}'o_split'{{.*}}'lse_split']
// PAIR-MANIFEST-NEXT: [{'ceil_div': 4, 'dim': 2, 'tensor': 'q'}, {'dim': 1, 'tensor': 'q'}, {'dim': 0, 'tensor': 'q'}] [128, 1, 1] True [{{.*}}'o_split', 'lse_split', 'sinks', 'o', 'lse']

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

func.func @vdecode(%q: tensor<1x16x?x128xbf16>, %k: tensor<1x4x?x128xbf16>, %cq: tensor<?xi32>, %ck: tensor<?xi32>) -> (tensor<1x16x?x128xbf16>, tensor<1x16x?xf32>) attributes {flash.key_splits} {
  %o, %lse = flash.attention %q, %k, %k cu_seqlens_q(%cq : tensor<?xi32>) cu_seqlens_k(%ck : tensor<?xi32>) : tensor<1x16x?x128xbf16>, tensor<1x4x?x128xbf16>, tensor<1x4x?x128xbf16> -> tensor<1x16x?x128xbf16>, tensor<1x16x?xf32>
  return %o, %lse : tensor<1x16x?x128xbf16>, tensor<1x16x?xf32>
}
