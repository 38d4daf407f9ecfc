#!/usr/bin/env bash
# On the GPU machine (no MLIR there): check and time the kernels that
# scripts/gpu_build.sh compiled, in one call. Logs and the markdown table go
# to $OUT when set.
#   device run: carry gpu-kernels; command: bash scripts/gpu_run.sh
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
python3 -m flash_mlir.bench "$dir" ${FLASH_BENCH_ARGS:-} --markdown "$out/bench.md" 2>&1 | tee "$out/bench.log"
exit "$check"
