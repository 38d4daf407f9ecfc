// Additive bias in f32/f16/bf16 broadcast over batch and heads, and i1 masks with a fully masked row.
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 20 --n 30 --d 16 --bias 2x4x20x30 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 20 --n 30 --d 16 --bias 4x20x30 --bias-dtype f16 --seed 1 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --m 20 --n 30 --d 16 --bias 30 --bias-dtype bf16 --causal --seed 2 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 20 --n 30 --d 16 --mask 2x1x20x30 --masked-row --seed 3 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 2 --m 20 --n 30 --d 16 --mask 20x30 --masked-row --bias 20x30 --causal --seed 4 | FileCheck %s
// CHECK: PASS
