// flash.attention_backward (dQ, dK, dV) against the float64 analytic gradient.
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 2 --hq 4 --hkv 2 --m 20 --n 30 --d 16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 2 --hq 4 --hkv 2 --m 30 --n 20 --d 16 --causal --seed 1 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 1 --hq 4 --hkv 1 --m 25 --n 25 --d 8 --dv 16 --bias 25x25 --seed 2 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 2 --hq 2 --m 20 --n 30 --d 16 --mask 2x1x20x30 --masked-row --seed 3 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 2 --hq 4 --hkv 2 --m 33 --n 17 --d 16 --causal --dynamic bhmn --seed 4 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 1 --hq 4 --hkv 2 --m 24 --n 40 --d 16 --dtype f16 --causal --seed 5 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 1 --hq 2 --m 24 --n 40 --d 16 --dtype bf16 --seed 6 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --rank 2 --hq 1 --m 9 --n 20 --d 16 --causal --dynamic mn --seed 7 | FileCheck %s
// CHECK: PASS
