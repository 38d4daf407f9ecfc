#!/usr/bin/env bash
# Builds the GPU kernels of examples/gpu/variants.mlir (or $1) into
# gpu-kernels/ (or $2) with flash-compile, for the check and the benchmark
# that scripts/gpu_run.sh runs on the GPU machine.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
ninja -C "$FLASH_BUILD" flash-compile | grep -v '^\[' || true
input=${1:-$FLASH_ROOT/examples/gpu/variants.mlir}
out=${2:-$FLASH_ROOT/gpu-kernels}
chip=${FLASH_CHIP:-sm_90a}
rm -rf "$out"
"$FLASH_BUILD/bin/flash-compile" "$input" --chip "$chip" -o "$out"
