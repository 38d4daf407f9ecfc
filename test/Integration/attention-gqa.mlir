// Grouped-query and multi-query attention, static and dynamic head counts.
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 8 --hkv 2 --m 20 --n 31 --d 16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 6 --hkv 1 --m 20 --n 31 --d 16 --causal --seed 1 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 20 --n 31 --d 16 --dynamic h --seed 2 | FileCheck %s
// CHECK: PASS
