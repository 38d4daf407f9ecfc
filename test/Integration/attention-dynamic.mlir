// Dynamic B, H, M and N (ragged sizes), forward.
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 33 --n 77 --d 16 --causal --dynamic bhmn | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 3 --hq 2 --m 1 --n 5 --d 8 --dynamic mn --seed 1 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 2 --m 50 --n 19 --d 16 --dynamic m --bias 50x19 --seed 2 | FileCheck %s
// CHECK: PASS
