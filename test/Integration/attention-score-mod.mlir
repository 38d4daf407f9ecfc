// flash.attention and flash.attention_backward with a score_mod region, on
// the CPU against the float64 reference: softcapping (c tanh(s / c), Gemma 2) and ALiBi (slope[h] (j - i),
// FlexAttention's example, the slopes read from a tensor argument), alone and
// together, through the naive decomposition and the tiled forms of every
// target, with GQA, causal and window masks, a fully masked row, dynamic
// sizes, rank 3 and many key blocks.
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 --softcap 3.0 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 --softcap 3.0 --no-tile | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 --softcap 3.0 --target sm_80 --dtype f16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 --alibi --target sm_90a --dtype bf16 --dynamic mn | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 --alibi --no-tile | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 --alibi --softcap 2 --causal --target sm_80 --dtype f16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 --alibi --mask 2x4x33x47 --masked-row | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --hq 2 --m 40 --n 40 --d 16 --softcap 1.5 --window 5 --causal | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --rank 3 --hq 4 --m 33 --n 47 --d 16 --alibi --causal | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --hq 4 --m 1 --n 300 --d 16 --alibi --block-cols 64 | FileCheck %s
// The backward (flash.attention_backward with the same region; dS times the
// region's derivative, 1 - tanh^2 for softcap, 1 for ALiBi) on every path.
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 --softcap 3.0 --no-tile | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 --softcap 3.0 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 --softcap 3.0 --target sm_80 --dtype f16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 --alibi --target sm_90a --dtype bf16 --dynamic mn | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 --alibi --softcap 2 --causal --target sm_90a | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --hq 2 --m 40 --n 40 --d 16 --softcap 1.5 --window 5 --causal --mask 1x2x40x40 --masked-row --target sm_80 | FileCheck %s
// CHECK: PASS
