// Forward attention on the CPU against the float64 reference: plain, scale, rank-2/3 forms, D != Dv.
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 3 --m 17 --n 23 --d 16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 2 --m 64 --n 64 --d 32 --scale 0.3 --seed 1 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --rank 3 --hq 4 --hkv 2 --m 9 --n 20 --d 8 --dv 24 --seed 2 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --rank 2 --hq 1 --m 1 --n 77 --d 16 --seed 3 | FileCheck %s
// CHECK: PASS
