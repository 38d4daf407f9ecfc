// Sliding-window attention, with and without causal, forward and backward.
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 2 --m 30 --n 40 --d 16 --window 5 --causal | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 2 --hkv 1 --m 40 --n 30 --d 16 --window 7 --seed 1 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 2 --m 30 --n 10 --d 16 --window 0 --causal --dynamic mn --seed 2 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 1 --hq 2 --m 30 --n 40 --d 16 --window 3 --causal --seed 3 | FileCheck %s
// CHECK: PASS
