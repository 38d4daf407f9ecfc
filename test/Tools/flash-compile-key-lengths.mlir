// flash-compile's KV-cache kernels: key_lengths
// and block_table are parameters (paged K/V keep their page size), with and
// without split-KV; nothing spills. With --ragged-tma=false they take the
// cp.async forms (GPU-NOTES 76).
// RUN: rm -rf %t && flash-compile %s --chip sm_90a --ragged-tma=false -o %t | FileCheck %s
// RUN: %python -c "import json,sys; m=json.load(open(sys.argv[1])); print([(p['name'], p['dtype'], p['shape']) for p in m['params']])" %t/paged.json | FileCheck %s --check-prefix=PAGED
// CHECK-DAG: decode: {{.*}}spill bytes 0
// CHECK-DAG: paged: {{.*}}spill bytes 0
// Keys per step divide the page size (the tiler would cut a block of 48 keys
// to gcd(48, 128) = 16 so that none straddles two pages).
// CHECK-DAG: paged128: {{.*}}, tiles 128x{{(128|64|32|16)}}, {{.*}}spill bytes 0
// By default (--ragged-tma) the key tiles come by TMA, so every kernel takes a
// warp-specialised form (a producer warpgroup: 128 threads more than its
// consumers), the paged one's producer at 40 registers (it reads the table
// per key block), and nothing spills.
// RUN: rm -rf %t.tma && flash-compile %s --chip sm_90a -o %t.tma | FileCheck %s --check-prefix=TMA
// TMA-DAG: decode: {{.*}}, tiles 192x128, 512 threads, {{.*}}spill bytes 0
// TMA-DAG: paged: {{.*}}, tiles 128x64, 384 threads, {{.*}}spill bytes 0
// TMA-DAG: paged128: {{.*}}, 384 threads, {{.*}}spill bytes 0
// Split-KV (decode) kernels hold a decode step's few rows: 64-row tiles on
// one consumer warpgroup, 64-key steps on pages of 64.
// TMA-DAG: paged_split: {{.*}}, tiles 64x64, 256 threads, {{.*}}spill bytes 0
// RUN: grep -c "setmaxnreg.dec.sync.aligned.u32 	40" %t.tma/paged.ptx | FileCheck %s --check-prefix=PRODUCER
// PRODUCER: 1
// PAGED: ('k', 'bf16', [None, None, 64, 128]), ('v', 'bf16', [None, None, 64, 128]), ('block_table', 'i32', [None, None]), ('key_lengths', 'i32', [None])

func.func @decode(%q: tensor<?x8x1x64xbf16>, %k: tensor<?x2x?x64xbf16>, %l: tensor<?xi32>) -> tensor<?x8x1x64xbf16> {
  %o = flash.attention %q, %k, %k key_lengths(%l : tensor<?xi32>) : tensor<?x8x1x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x1x64xbf16>
  return %o : tensor<?x8x1x64xbf16>
}

func.func @paged(%q: tensor<?x8x1x128xbf16>, %k: tensor<?x2x64x128xbf16>, %l: tensor<?xi32>, %t: tensor<?x?xi32>) -> (tensor<?x8x1x128xbf16>, tensor<?x8x1xf32>) {
  %o, %lse = flash.attention %q, %k, %k key_lengths(%l : tensor<?xi32>) block_table(%t : tensor<?x?xi32>) : tensor<?x8x1x128xbf16>, tensor<?x2x64x128xbf16>, tensor<?x2x64x128xbf16> -> tensor<?x8x1x128xbf16>, tensor<?x8x1xf32>
  return %o, %lse : tensor<?x8x1x128xbf16>, tensor<?x8x1xf32>
}

func.func @paged128(%q: tensor<?x?x?x128xbf16>, %k: tensor<?x?x128x128xbf16>, %v: tensor<?x?x128x128xbf16>, %l: tensor<?xi32>, %t: tensor<?x?xi32>) -> tensor<?x?x?x128xbf16> {
  %o = flash.attention %q, %k, %v key_lengths(%l : tensor<?xi32>) block_table(%t : tensor<?x?xi32>) : tensor<?x?x?x128xbf16>, tensor<?x?x128x128xbf16>, tensor<?x?x128x128xbf16> -> tensor<?x?x?x128xbf16>
  return %o : tensor<?x?x?x128xbf16>
}

func.func @paged_split(%q: tensor<?x8x4x128xbf16>, %k: tensor<?x8x64x128xbf16>, %l: tensor<?xi32>, %t: tensor<?x?xi32>) -> (tensor<?x8x4x128xbf16>, tensor<?x8x4xf32>) attributes {flash.key_splits} {
  %o, %lse = flash.attention %q, %k, %k key_lengths(%l : tensor<?xi32>) block_table(%t : tensor<?x?xi32>) : tensor<?x8x4x128xbf16>, tensor<?x8x64x128xbf16>, tensor<?x8x64x128xbf16> -> tensor<?x8x4x128xbf16>, tensor<?x8x4xf32>
  return %o, %lse : tensor<?x8x4x128xbf16>, tensor<?x8x4xf32>
}
