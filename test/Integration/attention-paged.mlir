// flash.attention over a paged KV cache (block_table with key_lengths) on
// the CPU against the float64 reference on each sequence's own keys: K and V
// are a shuffled pool of pages, and what must never be read is poisoned
// (rows past a sequence's length and unused pages are NaN, table entries
// past its last page name page 2^30). The naive decomposition (a gather of
// the pages) and the tiled forms (each key block's rows from its page; key
// blocks wider than a page narrowed to divide it), GQA, causal, window,
// sinks, split-KV, bf16/f16, dynamic sizes.
// RUN: %python -m flash_mlir.cpu_check --paged 16 --key-lengths edges --b 4 --hq 4 --hkv 2 --m 3 --n 64 --d 16 --no-tile | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --paged 16 --key-lengths edges --b 4 --hq 4 --hkv 2 --m 3 --n 64 --d 16 --causal --block-rows 16 --block-cols 16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --paged 16 --key-lengths random --b 3 --hq 4 --hkv 1 --m 5 --n 96 --d 16 --causal --window 20 --sinks --block-rows 16 --block-cols 64 --dtype bf16 | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --paged 32 --key-lengths edges --b 4 --hq 2 --m 2 --n 128 --d 16 --dtype f16 --dynamic b --target sm_90a | FileCheck %s
// RUN: %python -m flash_mlir.cpu_check --paged 16 --key-lengths random --b 2 --hq 8 --hkv 2 --m 1 --n 160 --d 16 --dtype bf16 --passes '--flash-tile-attention="key-splits=3 block-rows=16 block-cols=32" --flash-cpu-pipeline="tile=false"' | FileCheck %s
// RUN: not %python -m flash_mlir.cpu_check --paged 16 --b 2 --m 4 --n 64 --d 16 2>&1 | FileCheck %s --check-prefix=USAGE
// CHECK: PASS
// CHECK-NOT: FAIL
// USAGE: cpu_check: --paged needs --key-lengths, rank 4 and N a multiple of the page size
