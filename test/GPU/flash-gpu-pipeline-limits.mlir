// Sizes no kernel can run are rejected up front with the limit named, in
// well under a second (fuzzer finding F3, docs/Fuzzing.md): threads above
// CUDA's 1024 per block (they were accepted and written as .maxntid 1025 or
// 4096), threads = 0, and block sizes past 2^16 (2^31 ran out of time and
// memory in the mapping), and blocks of part of a warp (one thread took 28 s
// to compile the backward in flash-compile: the fuzzer's --seed 5000 run).
// RUN: not flash-opt %s --flash-gpu-pipeline="chip=sm_80 threads=1025" 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not flash-opt %s --flash-gpu-pipeline="chip=sm_90a threads=4096" 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not flash-opt %s --flash-gpu-pipeline="chip=sm_80 threads=0" 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: %python %S/../Inputs/expect_exit.py 1 flash-opt %s --flash-gpu-pipeline="chip=sm_80 threads=1025"
// RUN: not flash-opt %s --flash-gpu-pipeline="chip=sm_80 threads=1" 2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not flash-opt %s --flash-gpu-pipeline="chip=sm_80 threads=33" 2>&1 | FileCheck %s --check-prefix=THREADS
// THREADS: error: flash-gpu-map-to-blocks: threads must be a multiple of 32 (whole warps) between 32 and 1024 (CUDA's limit per block), not
// RUN: not flash-opt %s --flash-gpu-pipeline="chip=sm_80 block-rows=2147483648" 2>&1 | FileCheck %s --check-prefix=BLOCKS
// RUN: not flash-opt %s --flash-gpu-pipeline="chip=sm_90a block-cols=4611686018427387904" 2>&1 | FileCheck %s --check-prefix=BLOCKS
// RUN: %python %S/../Inputs/expect_exit.py 1 flash-opt %s --flash-gpu-pipeline="chip=sm_80 block-rows=2147483648"
// BLOCKS: error: flash-tile-attention: block-rows, block-cols, kv-block-rows and kv-block-cols must be between 1 and 65536
// RUN: not flash-opt %s --flash-gpu-pipeline="chip=sm_90a load-stages=3" 2>&1 | FileCheck %s --check-prefix=STAGES
// RUN: not flash-opt %s --flash-gpu-pipeline="chip=sm_90a load-stages=0" 2>&1 | FileCheck %s --check-prefix=STAGES
// STAGES: error: flash-gpu-async-tile-loads: load-stages must be 1 or 2 (copies of each key-block tile), not
// RUN: flash-opt %s --flash-gpu-pipeline="chip=sm_80 threads=1024" | FileCheck %s --check-prefix=OK
// OK: .maxntid 1024, 1, 1

func.func @forward(%q: tensor<1x2x64x64xf16>, %o_out: tensor<1x2x64x64xf16> {bufferization.writable = true}) -> tensor<1x2x64x64xf16> {
  %o = flash.attention %q, %q, %q : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16> -> tensor<1x2x64x64xf16>
  %r = bufferization.materialize_in_destination %o in %o_out : (tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>) -> tensor<1x2x64x64xf16>
  return %r : tensor<1x2x64x64xf16>
}
