#!/usr/bin/env bash
# Regenerates docs/Passes.md from the pass definitions.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tblgen=/usr/lib/llvm-22/bin/mlir-tblgen
{
  echo "<!-- Generated from include/flash/Dialect/Flash/Transforms/Passes.td and include/flash/Conversion/Passes.td by scripts/gen_docs.sh; do not edit. -->"
  echo
  echo "# flash-mlir passes"
  echo
  for td in include/flash/Dialect/Flash/Transforms/Passes.td include/flash/Conversion/Passes.td; do
    "$tblgen" -gen-pass-doc -I include -I /usr/lib/llvm-22/include "$td"
  done
  echo
  echo "## Pipelines"
  echo
  echo '`--flash-map-tiles-to-gpu` (options `threads`, `chip`, `tensor-cores`, `register-tiles`, `async-copies`, `load-stages`, `tma-loads`, `warp-specialize`, `persistent`, `per-iteration-lanes`, `swizzle-ldmatrix`) is the GPU mapping as one pipeline of its steps, in order: `--flash-gpu-map-to-blocks`, `--flash-gpu-assign-tile-storage`, `--flash-gpu-carve-shared-memory`, `--flash-gpu-warp-register-tiles`, `--flash-gpu-async-tile-loads` (with `async-copies`), `--flash-gpu-lower-tile-mma`, `--flash-gpu-distribute-to-threads`; each step reads what the earlier ones wrote into the IR (the attributes in `include/flash/Conversion/Passes.h`).'
  echo
  echo '`--flash-cpu-pipeline` (options `tile`, `target`, `block-rows`, `block-cols`, `deterministic`, `causal-rows-from-end`, `overlap-products`), `--flash-gpu-pipeline` (options `chip`, `format`, `block-rows`, `block-cols`, `kv-block-rows`, `kv-block-cols`, `deterministic`, `threads`, `tensor-cores`, `register-tiles`, `async-copies`, `load-stages`, `tma-loads`, `warp-specialize`, `ping-pong` (the latter for `--flash-gpu-split-warp-roles`), `persistent`, `pipeline-key-loops`, `async-mma`, `overlap-products` (the tiling option, with `async-mma`), `causal-rows-from-end`, `staged-reductions`, `per-iteration-lanes`, `swizzle-ldmatrix`, `emulated-exp2-every`) and `--flash-tosa-to-attention` (TOSA lowered to linalg, then `--flash-fuse-attention`; option `report`): see `include/flash/Pipelines/Pipelines.h` and `flash-opt --help`.'
} > docs/Passes.md
