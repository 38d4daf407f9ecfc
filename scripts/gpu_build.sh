#!/usr/bin/env bash
# Builds the GPU kernels of examples/gpu/variants.mlir and
# examples/gpu/training.mlir (or the files given) into gpu-kernels/ (or
# $FLASH_KERNELS) with flash-compile, for the check and the benchmark that
# scripts/gpu_run.sh runs on the GPU machine; and the PyTorch op's prebuilt
# kernels (the common variants and those flash_mlir.torch_check uses) into
# python/flash_mlir/kernels/<chip>. FLASH_COMPILE_FLAGS adds flash-compile
# options for the example files (e.g. "--deterministic=false
# --staged-reductions" for an A/B of the backward's forms).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
ninja -C "$FLASH_BUILD" flash-compile | grep -v '^\[' || true
inputs=("$@")
[ ${#inputs[@]} -gt 0 ] || inputs=("$FLASH_ROOT/examples/gpu/variants.mlir"
                                  "$FLASH_ROOT/examples/gpu/training.mlir")
out=${FLASH_KERNELS:-$FLASH_ROOT/gpu-kernels}
chip=${FLASH_CHIP:-sm_90a}
rm -rf "$out"
for input in "${inputs[@]}"; do
  # shellcheck disable=SC2086
  "$FLASH_BUILD/bin/flash-compile" "$input" --chip "$chip" ${FLASH_COMPILE_FLAGS:-} -o "$out"
done
PYTHONPATH="$FLASH_ROOT/python" python3 -m flash_mlir.kernels --chip "$chip" \
  --common --check-set --flash-compile "$FLASH_BUILD/bin/flash-compile"
