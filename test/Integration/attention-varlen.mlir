// Packed variable-length sequences (cu_seqlens_q / cu_seqlens_k) on the CPU
// against the float64 reference, which computes each sequence on its own:
// the naive decomposition and the tiled forms (a forall over the sequences
// and the rows past the last one), forward and backward, with empty
// sequences (no queries, no keys: O = 0 and LSE = -inf, or the sink), more
// keys than queries and fewer, GQA, causal (bottom-right per sequence),
// windows, sinks, softcap, ALiBi at the positions within each sequence,
// seqused_k (key_lengths), split-KV, i64 offsets, rank 3, dynamic sizes and
// no sequence at all. The rows past the last sequence (and the keys past
// each seqused_k) are NaN: they must never be read.
// RUN: %python -m flash_mlir.cpu_check --varlen 5,0,17,1,9 --varlen-keys 7,3,0,20,9 --b 1 --hq 4 --hkv 2 --d 16 --no-tile | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --varlen 5,0,17,1,9 --varlen-keys 7,3,0,20,9 --b 1 --hq 4 --hkv 2 --d 16 --causal --block-rows 4 --block-cols 8 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --varlen 5,0,17,1,9 --varlen-keys 7,3,0,20,9 --b 1 --hq 4 --hkv 2 --d 16 --causal --window 3 --no-tile | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --varlen 33,2,40 --varlen-keys 20,70,40 --b 1 --hq 4 --hkv 1 --d 16 --causal --window 5 --target sm_90a --dtype bf16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --varlen 6,3,11,4 --varlen-keys 30,5,64,17 --b 1 --hq 2 --d 16 --sinks --softcap 2.0 --key-lengths edges --varlen-dtype i64 --key-lengths-dtype i64 --target sm_80 --dtype f16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --varlen 6,3,11,4 --varlen-keys 30,5,64,17 --b 1 --hq 2 --d 16 --sinks --key-lengths random --causal --no-tile | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --varlen 12,0,7 --varlen-keys 12,4,20 --b 1 --hq 4 --hkv 2 --rank 3 --d 16 --alibi --causal --block-rows 4 --block-cols 4 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --varlen 12,0,7 --varlen-keys 12,4,20 --b 1 --hq 4 --hkv 2 --rank 3 --d 16 --alibi --no-tile | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --varlen 9,1,30,2 --varlen-keys 40,6,30,100 --b 1 --hq 4 --hkv 2 --d 16 --dtype bf16 --dynamic hmns --sinks --pad-rows 5 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --varlen 3,1,2 --varlen-keys 150,40,0 --b 1 --hq 4 --hkv 2 --d 16 --causal --sinks --passes '--flash-tile-attention="key-splits=3 block-rows=16 block-cols=16" --flash-cpu-pipeline="tile=false"' | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --varlen "" --b 1 --hq 2 --d 16 --sinks --pad-rows 4 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --varlen "" --b 1 --hq 2 --d 16 --pad-rows 4 --no-tile | FileCheck %s
//
// The backward: each sequence differentiated on its own, zero gradients for
// the rows in no sequence (whose Q, K, V and dO are NaN).
// RUN: %python -m flash_mlir.cpu_check --mode bwd --varlen 5,0,17,1,9 --varlen-keys 7,3,0,20,9 --b 1 --hq 4 --hkv 2 --d 16 --causal --no-tile | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --varlen 5,0,17,1,9 --varlen-keys 7,3,0,20,9 --b 1 --hq 4 --hkv 2 --d 16 --causal --block-rows 4 --block-cols 8 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --varlen 12,3,7 --varlen-keys 12,8,20 --b 1 --hq 2 --d 16 --window 4 --softcap 3.0 --sinks --dtype f16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --varlen 12,3,7 --varlen-keys 12,8,20 --b 1 --hq 2 --d 16 --window 4 --softcap 3.0 --sinks --dtype f16 --no-tile | FileCheck %s
// The mask under a branch (mask-under-branch) on packed sequences: the atomic
// form with causal blocks, and a window with softcap and sinks.
// RUN: %python -m flash_mlir.cpu_check --mode bwd --varlen 5,0,17,1,9 --varlen-keys 7,3,0,20,9 --b 1 --hq 4 --hkv 2 --d 16 --causal --block-rows 4 --block-cols 8 --target sm_90a --nondeterministic --mask-under-branch | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --varlen 12,3,7 --varlen-keys 12,8,20 --b 1 --hq 2 --d 16 --window 4 --softcap 3.0 --sinks --dtype f16 --target sm_80 --mask-under-branch | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --varlen 10,0,6 --varlen-keys 4,5,30 --b 1 --hq 4 --hkv 2 --rank 3 --d 16 --alibi --dynamic hmns | FileCheck %s
// The tensor-core form (a dQ nest and a dK/dV nest over the sequences, and
// FlashAttention-2's atomic dQ).
// RUN: %python -m flash_mlir.cpu_check --mode bwd --varlen 5,0,17,1,9 --varlen-keys 7,3,0,20,9 --b 1 --hq 4 --hkv 2 --d 16 --causal --target sm_90a --block-rows 4 --block-cols 8 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --varlen 12,3,7 --varlen-keys 12,8,20 --b 1 --hq 2 --d 16 --window 4 --softcap 3.0 --sinks --dtype bf16 --target sm_80 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --varlen 10,0,6,33 --varlen-keys 4,5,30,20 --b 1 --hq 4 --hkv 2 --rank 3 --d 16 --alibi --causal --dynamic hmns --target sm_90a --nondeterministic | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --varlen 10,0,6,33 --varlen-keys 4,5,30,20 --b 1 --hq 4 --hkv 2 --d 16 --target sm_80 --nondeterministic --overlap-products --block-rows 8 --block-cols 16 | FileCheck %s
// The bounds a caller knows (FlashAttention's max_seqlen_q/_k) as tagged
// function arguments, which the tiling takes instead of its scalar loop.
// RUN: %python -m flash_mlir.cpu_check --varlen 5,0,17,1,9 --varlen-keys 7,3,0,20,9 --b 1 --hq 4 --hkv 2 --d 16 --causal --block-rows 4 --block-cols 8 --max-seqlen-args index | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --varlen 5,0,17,1,9 --varlen-keys 7,3,0,20,9 --b 1 --hq 4 --hkv 2 --d 16 --causal --block-rows 4 --block-cols 8 --max-seqlen-args i32 --target sm_90a --pad-rows 30 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --varlen 5,0,17,1,9 --varlen-keys 7,3,0,20,9 --b 1 --hq 4 --hkv 2 --d 16 --max-seqlen-args i64 --target sm_80 --nondeterministic --sinks | FileCheck %s
// A score_mod that reads b (the sequence): one shift per sequence, which
// the LSE shows.
// RUN: %python -m flash_mlir.cpu_check --varlen 5,0,17,1,9 --varlen-keys 7,3,0,20,9 --b 1 --hq 4 --hkv 2 --d 16 --causal --batch-bias --no-tile | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --varlen 5,0,17,1,9 --varlen-keys 7,3,0,20,9 --b 1 --hq 4 --hkv 2 --d 16 --causal --batch-bias --block-rows 4 --block-cols 8 --passes '--flash-tile-attention="key-splits=3 block-rows=4 block-cols=8" --flash-cpu-pipeline="tile=false"' | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --varlen 10,0,6,33 --varlen-keys 4,5,30,20 --b 1 --hq 4 --hkv 2 --d 16 --batch-bias --softcap 2.0 --target sm_90a | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --mode bwd --varlen 10,0,6,33 --varlen-keys 4,5,30,20 --b 1 --hq 4 --hkv 2 --d 16 --batch-bias --softcap 2.0 | FileCheck %s
// CHECK: PASS
// CHECK-NOT: FAIL
