// flash-compile's varlen kernels: the offsets are parameters; the forward's
// grid is (blocks of the caller's max_seqlen_q, Hq, S + 1) with max_seqlen_q
// a host-side scalar of the call; the backward's launches count blocks of
// max_seqlen_q (dQ, D) and max_seqlen_k (dK/dV), in both of its forms, and
// nothing spills.
// RUN: rm -rf %t && flash-compile %s --chip sm_90a --ragged-tma=false -o %t | FileCheck %s
// RUN: %python -c "import json,sys; m=json.load(open(sys.argv[1])); print(m['grid'], m['grid_scalars'], [p['name'] for p in m['params']])" %t/prefill.json | FileCheck %s --check-prefix=GRID
// RUN: rm -rf %t.bwd && flash-compile %S/Inputs/varlen-backward.mlir --chip sm_90a -o %t.bwd | FileCheck %s --check-prefix=BWD
// RUN: %python -c "import json,sys; m=json.load(open(sys.argv[1])); print(m['grid_scalars'], m['workspace'], 'spills', m['spill_bytes'], json.load(open(sys.argv[1].replace('grad.json', 'grad_general.json')))['spill_bytes']); [print('launch', l['grid'], sorted(p['name'] for p in l['params'])) for l in m['launches']]" %t.bwd/grad.json | FileCheck %s --check-prefix=BWD-GRID
// The backward's key-loop tiles come by TMA too (the launches take the
// tensor maps), each with its rows past a sequence's end zeroed in shared
// memory (16-byte stores of zeros, then a fence towards the async proxy);
// with --ragged-tma=false they are cp.async copies, whose zero fill needs no
// stores.
// RUN: grep -c "cp.async.bulk.tensor" %t.bwd/grad.0.ptx %t.bwd/grad.1.ptx | FileCheck %s --check-prefix=BWD-TMA
// RUN: grep -c "st.shared.v4.b32.*{0, 0, 0, 0}" %t.bwd/grad.0.ptx %t.bwd/grad.1.ptx | FileCheck %s --check-prefix=BWD-TMA
// BWD-TMA: grad.0.ptx:{{[1-9]}}
// BWD-TMA: grad.1.ptx:{{[1-9]}}
// RUN: rm -rf %t.cp && flash-compile %S/Inputs/varlen-backward.mlir --chip sm_90a --ragged-tma=false -o %t.cp | FileCheck %s --check-prefix=BWD
// RUN: %python -c "import json,sys; m=json.load(open(sys.argv[1])); [print('launch', sorted(p['name'] for p in l['params'])) for l in m['launches']]" %t.cp/grad.json | FileCheck %s --check-prefix=BWD-CP
// RUN: not grep -q "cp.async.bulk.tensor" %t.cp/grad.0.ptx
// RUN: not grep -q "cp.async.bulk.tensor" %t.cp/grad.1.ptx
// BWD-CP: launch ['cu_seqlens_k', 'cu_seqlens_q', 'd', 'do', 'dq', 'k', 'lse', 'o', 'q', 'v']
// BWD-CP: launch ['cu_seqlens_k', 'cu_seqlens_q', 'd', 'dk', 'do', 'dv', 'k', 'lse', 'q', 'v']
// RUN: rm -rf %t.atomic && flash-compile %S/Inputs/varlen-backward.mlir --chip sm_90a --deterministic=false -o %t.atomic | FileCheck %s --check-prefix=BWD
// RUN: %python -c "import json,sys; m=json.load(open(sys.argv[1])); print('spills', m['spill_bytes'], json.load(open(sys.argv[1].replace('grad.json', 'grad_general.json')))['spill_bytes']); [print('launch', l['grid']) for l in m['launches']]" %t.atomic/grad.json | FileCheck %s --check-prefix=ATOMIC
// By default (--ragged-tma) the forward takes the warp-specialised TMA form;
// --ragged-tma=false (above) the cp.async one.
// RUN: rm -rf %t.tma && flash-compile %s --chip sm_90a -o %t.tma | FileCheck %s --check-prefix=TMA
// TMA: prefill: {{.*}}, tiles 128x176, 384 threads, {{.*}}spill bytes 0
// A block past its sequence's rows ends its CTA (PTX `exit`, beside the
// traps' `trap; exit;`); --exit-empty-tiles=false runs the empty tile.
// RUN: grep -c "^[[:space:]]*exit;$" %t.tma/prefill.ptx | FileCheck %s --check-prefix=EXIT
// RUN: rm -rf %t.noexit && flash-compile %s --chip sm_90a --exit-empty-tiles=false -o %t.noexit | FileCheck %s --check-prefix=TMA
// RUN: not grep -q "^[[:space:]]*exit;$" %t.noexit/prefill.ptx
// EXIT: {{[1-9]}}
// CHECK: prefill: {{.*}}spill bytes 0
// GRID: [{'ceil_div': 128, 'scalar': 'max_seqlen_q'}, {'dim': 1, 'tensor': 'q'}, {'dim': 0, 'tensor': 'cu_seqlens_q'}] ['max_seqlen_q'] ['q', 'k', 'v', 'cu_seqlens_q', 'cu_seqlens_k', 'o', 'lse']
// BWD: grad launch 1 {{.*}}spill bytes 0
// BWD-GRID: ['max_seqlen_q', 'max_seqlen_k'] [{'dtype': 'f32', 'like': 'lse', 'name': 'd'}] spills 0 0
// BWD-GRID: launch [{'ceil_div': {{[0-9]+}}, 'scalar': 'max_seqlen_q'}, {'dim': 1, 'tensor': 'q'}, {'dim': 0, 'tensor': 'cu_seqlens_q'}] ['cu_seqlens_k', 'cu_seqlens_q', 'd', 'do', 'dq', 'k', 'lse', 'o', 'q', 'tensor_maps', 'v']
// BWD-GRID: launch [{'ceil_div': {{[0-9]+}}, 'scalar': 'max_seqlen_k'}, {'dim': 1, 'tensor': 'k'}, {'dim': 0, 'tensor': 'cu_seqlens_q'}] ['cu_seqlens_k', 'cu_seqlens_q', 'd', 'dk', 'do', 'dv', 'k', 'lse', 'q', 'tensor_maps', 'v']
// ATOMIC: spills 0 0
// ATOMIC: launch [{'ceil_div': {{[0-9]+}}, 'scalar': 'max_seqlen_q'}
// ATOMIC: launch [{'ceil_div': {{[0-9]+}}, 'scalar': 'max_seqlen_k'}
// ATOMIC: launch [{'ceil_div': {{[0-9]+}}, 'scalar': 'max_seqlen_q'}

func.func @prefill(%q: tensor<1x16x?x128xbf16>, %k: tensor<1x4x?x128xbf16>, %cq: tensor<?xi32>, %ck: tensor<?xi32>) -> (tensor<1x16x?x128xbf16>, tensor<1x16x?xf32>) {
  %o, %lse = flash.attention %q, %k, %k cu_seqlens_q(%cq : tensor<?xi32>) cu_seqlens_k(%ck : tensor<?xi32>) {causal} : tensor<1x16x?x128xbf16>, tensor<1x4x?x128xbf16>, tensor<1x4x?x128xbf16> -> tensor<1x16x?x128xbf16>, tensor<1x16x?xf32>
  return %o, %lse : tensor<1x16x?x128xbf16>, tensor<1x16x?xf32>
}
