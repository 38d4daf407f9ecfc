#!/usr/bin/env bash
# On the GPU machine (no MLIR there): check and time the kernels that
# scripts/gpu_build.sh compiled, in one call. Logs and the markdown table go
# to $OUT when set.
#   device run: carry gpu-kernels; command: bash scripts/gpu_run.sh
# FLASH_SANITIZE=kernel1,kernel2 also runs compute-sanitizer memcheck and
# racecheck on those kernels (one small shape).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=${1:-gpu-kernels}
out=${OUT:-/tmp/flash-out}
mkdir -p "$out"
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuDNN", torch.backends.cudnn.version())'
python3 -m flash_mlir.check "$dir" -v 2>&1 | tee "$out/check.log"
check=${PIPESTATUS[0]}
# compute-sanitizer memcheck and racecheck on one small ragged shape.
if [ -n "${FLASH_SANITIZE:-}" ]; then
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in memcheck racecheck; do
    "$sanitizer" --tool "$tool" --error-exitcode 3 python3 -m flash_mlir.check "$dir" \
      --quick --kernels "$FLASH_SANITIZE" 2>&1 | tail -4 | tee -a "$out/sanitizer.log"
    [ "${PIPESTATUS[0]}" = 0 ] || check=1
  done
fi
python3 -m flash_mlir.bench "$dir" ${FLASH_BENCH_ARGS:-} --markdown "$out/bench.md" 2>&1 | tee "$out/bench.log"
exit "$check"
