// Tiles chosen by the CPU target (paper rule), over sizes that are not
// multiples of any tile: M = 200, N = 333, D = 16 (causal, GQA, bias, f16),
// M = N = 1000, and M = 4097 with N = 1 and the reverse.
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 4 --hkv 2 --m 200 --n 333 --d 16 --causal --bias 200x333 --dtype f16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 2 --m 200 --n 333 --d 16 --causal --dynamic mn --dtype bf16 --seed 1 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 1 --m 1000 --n 1000 --d 16 --causal --seed 2 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 1 --m 4097 --n 1 --d 16 --causal --seed 3 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 1 --m 1 --n 4097 --d 16 --causal --seed 4 | FileCheck %s
// CHECK: PASS
