// Split-KV (--flash-tile-attention key-splits=S) on the CPU against the
// float64 reference: the keys of each query block cut into S runs whose
// partial O and LSE a second nest merges, eight runs at a time (19 runs:
// three chunks, the last partial). More runs than key blocks (empty runs), GQA, causal with M > N (fully masked rows: O = 0, LSE = -inf),
// windows (runs before the window empty), a mask with a fully masked row,
// sinks (joined in the merge), softcap, bias, a run-time and a huge scale,
// dynamic sizes, rank 3, N = 0, f16/bf16, and an op without the LSE.
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 5 --n 147 --d 16 --passes '--flash-tile-attention="key-splits=3 block-rows=16 block-cols=16" --flash-cpu-pipeline="tile=false"' | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 20 --n 300 --d 16 --dtype bf16 --passes '--flash-tile-attention="key-splits=19 block-rows=16 block-cols=16" --flash-cpu-pipeline="tile=false"' | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 5 --n 40 --d 16 --passes '--flash-tile-attention="key-splits=7 block-rows=16 block-cols=16" --flash-cpu-pipeline="tile=false"' | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 4 --hkv 1 --m 33 --n 200 --d 16 --causal --dtype bf16 --passes '--flash-tile-attention="key-splits=4 block-rows=16 block-cols=16" --flash-cpu-pipeline="tile=false"' | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 40 --n 20 --d 16 --causal --dynamic bhmn --passes '--flash-tile-attention="key-splits=5 block-rows=16 block-cols=16" --flash-cpu-pipeline="tile=false"' | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --hq 2 --m 3 --n 90 --d 16 --window 20 --causal --sinks --passes '--flash-tile-attention="key-splits=3 block-rows=16 block-cols=16" --flash-cpu-pipeline="tile=false"' | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 2 --m 7 --n 64 --d 16 --mask 2x2x7x64 --masked-row --sinks --sinks-dtype bf16 --dtype bf16 --passes '--flash-tile-attention="key-splits=2 block-rows=16 block-cols=16" --flash-cpu-pipeline="tile=false"' | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --hq 4 --hkv 2 --m 9 --n 100 --d 16 --softcap 2.0 --alibi --runtime-scale --dtype f16 --passes '--flash-tile-attention="key-splits=3 block-rows=16 block-cols=16" --flash-cpu-pipeline="tile=false"' | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --hq 2 --m 4 --n 100 --d 16 --scale 1e10 --passes '--flash-tile-attention="key-splits=3 block-rows=16 block-cols=16" --flash-cpu-pipeline="tile=false"' | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --rank 3 --hq 4 --hkv 2 --m 6 --n 90 --d 16 --dynamic hm --passes '--flash-tile-attention="key-splits=3 block-rows=16 block-cols=16" --flash-cpu-pipeline="tile=false"' | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --hq 2 --m 3 --n 0 --d 16 --sinks --passes '--flash-tile-attention="key-splits=3 block-rows=16 block-cols=16" --flash-cpu-pipeline="tile=false"' | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 3 --hq 8 --hkv 2 --m 1 --n 1000 --d 32 --dtype bf16 --target sm_90a --passes '--flash-tile-attention="target=sm_90a key-splits=6" --flash-cpu-pipeline="tile=false"' | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check %S/Inputs/decode-no-lse.mlir --dynamic-size 300 --passes '--flash-tile-attention="key-splits=4 block-rows=16 block-cols=16" --flash-cpu-pipeline="tile=false"' | FileCheck %s --check-prefix=NOLSE
// CHECK: PASS
// CHECK-NOT: FAIL
// NOLSE: PASS @decode
// NOLSE: 0 failure(s)
