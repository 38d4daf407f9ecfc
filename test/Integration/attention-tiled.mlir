// The tiled (online-softmax) form on the CPU against the float64 reference,
// with small forced tiles so that every edge is crossed: ragged M and N,
// M < N and M > N causal, sliding windows, GQA, bias, masks with a fully
// masked row, dynamic shapes, f16/bf16 (P rounded to V's type before P V).
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 77 --n 33 --d 16 --causal --block-rows 8 --block-cols 16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 33 --n 77 --d 16 --causal --block-rows 8 --block-cols 16 --dynamic bhmn --seed 1 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 2 --m 50 --n 61 --d 16 --window 7 --causal --block-rows 8 --block-cols 8 --seed 2 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 2 --m 61 --n 50 --d 16 --window 9 --block-rows 16 --block-cols 8 --dynamic mn --seed 3 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 1 --m 20 --n 30 --d 16 --dv 8 --bias 4x20x30 --dtype f16 --block-rows 8 --block-cols 8 --seed 4 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 20 --n 30 --d 16 --mask 2x1x20x30 --masked-row --dtype bf16 --block-rows 8 --block-cols 8 --seed 5 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 2 --m 20 --n 30 --d 16 --bias 30 --mask 20x1 --block-rows 8 --block-cols 8 --seed 6 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --rank 2 --hq 1 --m 1 --n 77 --d 16 --block-rows 16 --block-cols 16 --seed 7 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --rank 3 --hq 4 --hkv 2 --m 9 --n 20 --d 8 --dv 24 --block-rows 4 --block-cols 4 --seed 8 | FileCheck %s
// CHECK: PASS
