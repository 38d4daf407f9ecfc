// flash.attention with its scale as the runtime_scale operand (an f32
// function argument), on the CPU against the float64 reference: the naive
// decomposition, the tiled forms of every target, dynamic sizes, masks, a
// negative scale under a causal mask (masks apply after scaling) and a huge
// one (scaled before the row max).
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 --scale 0.37 --runtime-scale --dtype bf16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 --scale 0.37 --runtime-scale --no-tile | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 --scale 0.37 --runtime-scale --dtype f16 --target sm_80 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 33 --n 47 --d 16 --scale 0.37 --runtime-scale --dtype bf16 --target sm_90a --dynamic mn --causal | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --hq 2 --m 40 --n 40 --d 16 --scale 0.2 --runtime-scale --window 5 --causal --seed 1 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --m 20 --d 16 --scale -0.5 --runtime-scale --causal --seed 2 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --m 20 --d 16 --scale 1e10 --runtime-scale --seed 3 | FileCheck %s
// RUN: not %python -m flash_mlir.cpu_check --mode bwd --m 8 --d 16 --runtime-scale 2>&1 | FileCheck %s --check-prefix=BWD
// CHECK: PASS
// BWD: --runtime-scale is for the forward
