// flash.attention with key_lengths (a KV cache of ragged sequences: sequence
// b has its own N_b keys, causal and window aligned to its last key) on the
// CPU against the float64 reference, which computes each sequence on its
// own keys alone: the naive decomposition and the tiled forms (the key
// loops end at N_b), with N_b = 0 (O = 0, LSE = -inf; the sink with sinks),
// N_b = N, 1 and random lengths, GQA, causal with M > N_b, windows, a mask
// and a bias cut to each sequence's keys, sinks, softcap, split-KV, i64
// lengths, dynamic sizes.
// RUN: %python -m flash_mlir.cpu_check --key-lengths edges --b 4 --hq 4 --hkv 2 --m 5 --n 47 --d 16 --no-tile | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --key-lengths edges --b 4 --hq 4 --hkv 2 --m 5 --n 47 --d 16 --causal | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --key-lengths edges --b 4 --hq 4 --hkv 2 --m 33 --n 70 --d 16 --causal --window 9 --no-tile | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --key-lengths random --b 5 --hq 4 --hkv 1 --m 33 --n 70 --d 16 --causal --window 9 --target sm_90a --dtype bf16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --key-lengths edges --b 4 --hq 2 --m 6 --n 64 --d 16 --mask 4x2x6x64 --masked-row --bias 1x6x64 --sinks --target sm_80 --dtype f16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --key-lengths edges --b 4 --hq 2 --m 6 --n 64 --d 16 --sinks --softcap 2.0 --key-lengths-dtype i64 --no-tile | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --key-lengths random --b 3 --hq 4 --hkv 2 --m 4 --n 300 --d 16 --dtype bf16 --dynamic bn --passes '--flash-tile-attention="key-splits=5 block-rows=16 block-cols=16" --flash-cpu-pipeline="tile=false"' | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --key-lengths edges --b 4 --hq 2 --m 3 --n 150 --d 16 --causal --sinks --passes '--flash-tile-attention="key-splits=3 block-rows=16 block-cols=16" --flash-cpu-pipeline="tile=false"' | FileCheck %s
// RUN: not %python -m flash_mlir.cpu_check --key-lengths edges --mode bwd --b 2 --m 4 --n 8 --d 16 2>&1 | FileCheck %s --check-prefix=BWD
// RUN: %python -m flash_mlir.cpu_check --key-lengths edges --b 4 --hq 2 --m 6 --n 64 --d 16 --batch-bias --causal | FileCheck %s
// CHECK: PASS
// CHECK-NOT: FAIL
// BWD: cpu_check: key_lengths has no backward
