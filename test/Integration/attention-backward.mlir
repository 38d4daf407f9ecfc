// flash.attention_backward (dQ, dK, dV) against the float64 analytic gradient.
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 2 --hq 4 --hkv 2 --m 20 --n 30 --d 16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 2 --hq 4 --hkv 2 --m 30 --n 20 --d 16 --causal --seed 1 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 1 --hq 4 --hkv 1 --m 25 --n 25 --d 8 --dv 16 --bias 25x25 --seed 2 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 2 --hq 2 --m 20 --n 30 --d 16 --mask 2x1x20x30 --masked-row --seed 3 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 2 --hq 4 --hkv 2 --m 33 --n 17 --d 16 --causal --dynamic bhmn --seed 4 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 1 --hq 4 --hkv 2 --m 24 --n 40 --d 16 --dtype f16 --causal --seed 5 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 1 --hq 2 --m 24 --n 40 --d 16 --dtype bf16 --seed 6 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --rank 2 --hq 1 --m 9 --n 20 --d 16 --causal --dynamic mn --seed 7 | FileCheck %s
// Tiled (the CPU pipeline's default) with small tiles: ragged blocks on both
// sides, window, bias and mask tiles, a fully masked row, dynamic sizes; and
// the 200 x 333 causal GQA case with the target's tiles.
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 1 --hq 4 --hkv 2 --m 200 --n 333 --d 16 --causal | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 1 --hq 2 --m 77 --n 100 --d 16 --window 20 --block-rows 16 --block-cols 32 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 2 --hq 4 --hkv 1 --m 37 --n 50 --d 8 --dv 16 --bias 1x4x37x50 --block-rows 8 --block-cols 16 --seed 3 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 1 --hq 2 --m 40 --n 33 --d 16 --mask 1x1x40x33 --masked-row --causal --block-rows 16 --block-cols 16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 2 --hq 4 --hkv 2 --m 45 --n 29 --d 16 --causal --dynamic bhmn --block-rows 16 --block-cols 8 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 1 --hq 2 --m 50 --n 70 --d 16 --dtype f16 --window 10 --block-rows 16 --block-cols 16 | FileCheck %s
// And through the naive decomposition.
// RUN: %python -m flash_mlir.cpu_check --mode bwd --b 2 --hq 4 --hkv 2 --m 30 --n 20 --d 16 --causal --no-tile | FileCheck %s
// The GPU form (target sm_90a: a dQ nest that also writes D, and a dK/dV
// nest over key blocks with transposed tiles), small tiles, on the CPU.
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_90a --block-rows 16 --block-cols 16 --b 2 --hq 4 --hkv 2 --m 30 --n 20 --d 16 --causal --seed 1 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_90a --block-rows 16 --block-cols 32 --b 1 --hq 2 --m 77 --n 100 --d 16 --window 20 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_90a --block-rows 16 --block-cols 16 --b 1 --hq 4 --hkv 1 --m 25 --n 25 --d 8 --dv 16 --bias 25x25 --seed 2 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_90a --block-rows 16 --block-cols 16 --b 2 --hq 2 --m 20 --n 30 --d 16 --mask 2x1x20x30 --masked-row --seed 3 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_90a --block-rows 16 --block-cols 16 --b 2 --hq 4 --hkv 2 --m 33 --n 17 --d 16 --causal --dynamic bhmn --seed 4 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_90a --block-rows 16 --block-cols 16 --b 1 --hq 2 --m 24 --n 40 --d 16 --dtype bf16 --seed 6 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_90a --b 1 --hq 4 --hkv 2 --m 200 --n 333 --d 16 --causal | FileCheck %s
// FlashAttention-2's backward (deterministic=false): a pre-pass (D, zeroed dQ
// sums), the dK/dV nest adding each step's dS K with flash.atomic_add, and a
// last pass scaling the sums into dQ.
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_90a --nondeterministic --block-rows 16 --block-cols 16 --b 2 --hq 4 --hkv 2 --m 30 --n 20 --d 16 --causal --seed 1 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_80 --nondeterministic --block-rows 16 --block-cols 32 --b 1 --hq 2 --m 77 --n 100 --d 16 --window 20 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_90a --nondeterministic --block-rows 16 --block-cols 16 --b 2 --hq 2 --m 20 --n 30 --d 16 --mask 2x1x20x30 --masked-row --seed 3 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_80 --nondeterministic --block-rows 16 --block-cols 16 --b 2 --hq 4 --hkv 2 --m 33 --n 17 --d 16 --causal --dynamic bhmn --seed 4 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_90a --nondeterministic --b 1 --hq 4 --hkv 2 --m 200 --n 333 --d 16 --dtype bf16 --causal | FileCheck %s
// The atomic form with dPᵀ built right after Sᵀ (overlap-products, what
// flash-compile takes on sm_90a where it fits): the same gradients.
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_90a --nondeterministic --overlap-products --block-rows 16 --block-cols 16 --b 2 --hq 4 --hkv 2 --m 30 --n 20 --d 16 --causal --seed 5 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_90a --nondeterministic --overlap-products --b 1 --hq 2 --m 77 --n 100 --d 16 --dtype bf16 --window 20 --seed 6 | FileCheck %s
// The atomic form's dQ sums in mma.sync fragment order (dq-fragment-major:
// strips of 16 rows, the accumulator's rows rounded up to them, read back
// through the op's map by the last pass), scalar and pair groups; ragged
// and dynamic rows, GQA, a fully masked row, the overlapped step.
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_80 --nondeterministic --dq-fragment-major 1 --block-rows 16 --block-cols 16 --b 2 --hq 4 --hkv 2 --m 37 --n 29 --d 64 --causal --dynamic bhmn --seed 8 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_90a --nondeterministic --dq-fragment-major 2 --block-rows 32 --block-cols 16 --b 1 --hq 2 --m 50 --n 40 --d 128 --mask 1x1x50x40 --masked-row --seed 9 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_80 --nondeterministic --dq-fragment-major 1 --b 1 --hq 4 --hkv 2 --m 200 --n 333 --d 64 --dtype bf16 --causal | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_90a --nondeterministic --overlap-products --dq-fragment-major 2 --block-rows 16 --block-cols 16 --b 2 --hq 2 --m 16 --n 30 --d 64 --seed 10 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_90a --nondeterministic --dq-fragment-major 4 --block-rows 16 --block-cols 16 --b 2 --hq 4 --hkv 1 --m 45 --n 29 --d 64 --causal --dynamic bhmn --seed 11 | FileCheck %s
// The blocks in one masked loop per nest (mask-free-blocks=false), and
// mask-free blocks between a window's two masked runs (atomic and not).
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_80 --nondeterministic --one-masked-loop --block-rows 16 --block-cols 16 --b 2 --hq 4 --hkv 2 --m 33 --n 17 --d 16 --causal --dynamic bhmn --seed 12 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_90a --one-masked-loop --block-rows 16 --block-cols 16 --b 2 --hq 2 --m 20 --n 30 --d 16 --mask 2x1x20x30 --masked-row --seed 13 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_90a --nondeterministic --block-rows 16 --block-cols 16 --b 1 --hq 2 --m 90 --n 120 --d 16 --window 40 --masked-row --mask 1x1x90x120 --seed 14 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_80 --block-rows 16 --block-cols 16 --b 1 --hq 2 --hkv 1 --m 100 --n 70 --d 16 --window 30 --causal --seed 15 | FileCheck %s
// One loop per nest with the mask under a branch (mask-under-branch): causal
// with ragged blocks and GQA (atomic, both chips' fragment orders), a window
// between masked runs, an op mask with a fully masked row (deterministic).
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_90a --nondeterministic --mask-under-branch --b 1 --hq 4 --hkv 2 --m 200 --n 333 --d 16 --dtype bf16 --causal --seed 16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_80 --nondeterministic --mask-under-branch --dq-fragment-major 1 --block-rows 16 --block-cols 16 --b 2 --hq 4 --hkv 2 --m 37 --n 29 --d 64 --causal --dynamic bhmn --seed 17 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_90a --nondeterministic --overlap-products --mask-under-branch --block-rows 16 --block-cols 16 --b 1 --hq 2 --m 90 --n 120 --d 16 --window 40 --seed 18 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --target sm_90a --mask-under-branch --block-rows 16 --block-cols 16 --b 2 --hq 2 --m 20 --n 30 --d 16 --mask 2x1x20x30 --masked-row --causal --seed 19 | FileCheck %s
// CHECK: PASS
