// Causal row blocks aligned to the last row (--flash-tile-attention
// causal-rows-from-end, an option of the tiling and of both pipelines): the
// partial block is the first, which computes a whole block from row 0 and
// writes only its own rows. Against the float64 reference on the CPU: M not a
// multiple of Br with M = N, M > N (fully masked leading rows), M < N, M < Br
// (one block), a sliding window, GQA with a bias, f16 with the LSE through the
// backward, and dynamic sizes.
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 2 --m 77 --n 77 --d 16 --causal --block-rows 24 --block-cols 16 --causal-rows-from-end | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 2 --m 77 --n 33 --d 16 --causal --block-rows 8 --block-cols 16 --causal-rows-from-end --seed 1 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 2 --m 33 --n 77 --d 16 --causal --block-rows 12 --block-cols 16 --causal-rows-from-end --dynamic bhmn --seed 2 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 2 --m 5 --n 40 --d 16 --causal --block-rows 12 --block-cols 8 --causal-rows-from-end --seed 3 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 1 --hq 2 --m 50 --n 61 --d 16 --window 7 --causal --block-rows 12 --block-cols 8 --causal-rows-from-end --seed 4 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --b 2 --hq 4 --hkv 1 --m 45 --n 45 --d 16 --dv 8 --bias 4x45x45 --causal --dtype f16 --block-rows 12 --block-cols 8 --causal-rows-from-end --seed 5 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 1 --hq 2 --m 45 --n 45 --d 16 --causal --block-rows 12 --block-cols 8 --causal-rows-from-end --seed 6 | FileCheck %s
// CHECK: PASS
