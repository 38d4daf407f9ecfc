// Causal attention, bottom-right aligned: M < N, M = N and M > N (rows 0..M-N-1 fully masked: O = 0, LSE = -inf).
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 2 --m 33 --n 77 --d 16 --causal | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 2 --m 40 --n 40 --d 16 --causal --seed 1 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 2 --m 77 --n 33 --d 16 --causal --seed 2 | FileCheck %s
// CHECK: PASS
