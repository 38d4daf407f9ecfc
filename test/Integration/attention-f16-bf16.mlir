// f16 and bf16 inputs (f32 scores and statistics), output in the input type.
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 40 --n 50 --d 32 --dtype f16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 40 --n 50 --d 32 --dtype f16 --causal --dynamic mn --seed 1 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 40 --n 50 --d 32 --dtype bf16 --seed 2 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 2 --m 30 --n 20 --d 16 --dtype bf16 --causal --mask 30x20 --masked-row --seed 3 | FileCheck %s
// CHECK: PASS
