// The naive decomposition through the CPU pipeline (tile=false) stays
// executable: it is the reference that the tiled form is checked against.
// RUN: %python -m flash_mlir.cpu_check --no-tile --b 2 --hq 4 --hkv 2 --m 33 --n 77 --d 16 --causal --dynamic bhmn | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --no-tile --b 1 --hq 2 --m 30 --n 20 --d 16 --dtype f16 --mask 30x20 --masked-row --window 4 --seed 1 | FileCheck %s
// CHECK: PASS
