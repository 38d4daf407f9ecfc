// The forward with its key-block loops pipelined (--flash-pipeline-key-loops,
// FlashAttention-3's two stages one block apart) against float64: the GPU
// tilings (sm_90a: Br 128 x Bc 64 scaled down to the sizes here), GQA,
// causal with M > N (blocks whose loops do not run), a sliding window, dynamic
// sizes, fully masked rows, ragged blocks, LSE.
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 70 --n 150 --d 16 --dtype bf16 --passes '--flash-tile-attention="target=sm_90a block-rows=32 block-cols=32" --flash-pipeline-key-loops --flash-cpu-pipeline="tile=false"' | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 150 --n 40 --d 16 --dtype f16 --causal --passes '--flash-tile-attention="target=sm_90a block-rows=32 block-cols=16" --flash-pipeline-key-loops --flash-cpu-pipeline="tile=false"' | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 2 --m 64 --n 200 --d 32 --dtype bf16 --causal --dynamic bhmn --passes '--flash-tile-attention="target=sm_90a block-rows=32 block-cols=32" --flash-pipeline-key-loops --flash-cpu-pipeline="tile=false"' | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 2 --m 90 --n 90 --d 16 --window 7 --causal --passes '--flash-tile-attention="target=sm_90a block-rows=16 block-cols=16" --flash-pipeline-key-loops --flash-cpu-pipeline="tile=false"' | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 2 --m 33 --n 47 --d 16 --mask 2x1x33x47 --masked-row --passes '--flash-tile-attention="target=sm_80 block-rows=16 block-cols=16" --flash-pipeline-key-loops --flash-cpu-pipeline="tile=false"' | FileCheck %s
// CHECK-NOT: FAIL
// CHECK: PASS
