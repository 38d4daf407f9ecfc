// flash.attention with attention sinks (one logit per query head in every
// row's softmax, as in gpt-oss) and flash.attention_backward with their
// gradient, on the CPU against the float64 reference: the naive
// decomposition and the tiled forms of every target (the sink folded into
// the row statistics after the key loop), f32/f16/bf16 inputs and sinks,
// GQA, causal, window and mask with a fully masked row (O = 0, LSE = the
// sink), M != N, many key blocks, dynamic sizes, rank 3 and 2, a run-time
// and a huge scale (natural-unit statistics), softcap, N = 0.
// RUN: %python -m flash_mlir.cpu_check --sinks --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --sinks --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 --no-tile | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --sinks --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 --target sm_90a --dtype bf16 --sinks-dtype bf16 --dynamic bhmn | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --sinks --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 --target sm_80 --dtype f16 --sinks-dtype f16 --causal --mask 2x4x33x47 --masked-row | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --sinks --hq 2 --m 40 --n 40 --d 16 --softcap 1.5 --window 5 --causal --target sm_90a | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --sinks --rank 3 --hq 4 --m 33 --n 47 --causal | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --sinks --rank 2 --hq 1 --m 20 --n 300 --block-cols 16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --sinks --hq 4 --m 9 --n 13 --scale 1e10 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --sinks --hq 4 --m 9 --n 13 --runtime-scale --target sm_90a | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --sinks --hq 4 --m 5 --n 0 | FileCheck %s
// The gradient of the sinks beside dQ, dK and dV, on every backward form.
// RUN: %python -m flash_mlir.cpu_check --sinks --mode bwd --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --sinks --mode bwd --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 --no-tile --dynamic h | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --sinks --mode bwd --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 --target sm_90a --causal --mask 2x4x33x47 --masked-row | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --sinks --mode bwd --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 --target sm_90a --nondeterministic --overlap-products --dtype bf16 --sinks-dtype bf16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --sinks --mode bwd --rank 3 --hq 4 --hkv 2 --m 33 --n 47 --target sm_80 --dtype f16 --dynamic hm | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --sinks --mode bwd --hq 4 --m 5 --n 0 | FileCheck %s
// CHECK: PASS
