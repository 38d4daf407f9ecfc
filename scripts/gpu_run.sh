#!/usr/bin/env bash
# On the GPU machine (no MLIR there): check and time the kernels that
# scripts/gpu_build.sh compiled, in one call. Logs and the markdown tables go
# to $OUT when set.
#   device run: carry gpu-kernels and python/flash_mlir/kernels;
#   command: bash scripts/gpu_run.sh
# FLASH_STEPS picks the steps (default check,torch,bench):
#   check   flash_mlir.check on every kernel of gpu-kernels/
#   torch   flash_mlir.torch_check: the PyTorch op, its bad calls,
#           torch.compile and the SDPA registration (prebuilt kernels)
#   bench   flash_mlir.bench (FLASH_BENCH_ARGS)
#   train   flash_mlir.train_bench, a GPT-style training step (FLASH_TRAIN_ARGS)
#   times   flash_mlir.launch_times: each backward launch alone, for the
#           training kernels FLASH_TIMES_NAMES (default train_bf16_d128) at
#           FLASH_TIMES_SEQ (default 4096)
# FLASH_SANITIZE=kernel1,kernel2 also runs compute-sanitizer memcheck and
# racecheck on those kernels (one small shape; FLASH_SANITIZE_SHAPE=
# B,HQ,HKV,M,N picks another, e.g. M % 4 == 0 for the fast kernel of a
# backward whose LSE rows come by TMA).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=${1:-gpu-kernels}
out=${OUT:-/tmp/flash-out}
steps=",${FLASH_STEPS:-check,torch,bench},"
mkdir -p "$out"
export PYTHONPATH=$PWD/python PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuDNN", torch.backends.cudnn.version())'
status=0
if [[ $steps == *,check,* ]]; then
  python3 -m flash_mlir.check "$dir" -v 2>&1 | tee "$out/check.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
# compute-sanitizer memcheck and racecheck on one small ragged shape.
if [ -n "${FLASH_SANITIZE:-}" ]; then
  sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  for tool in memcheck racecheck; do
    "$sanitizer" --tool "$tool" --error-exitcode 3 python3 -m flash_mlir.check "$dir" \
      --quick ${FLASH_SANITIZE_SHAPE:+--shape "$FLASH_SANITIZE_SHAPE"} \
      --kernels "$FLASH_SANITIZE" 2>&1 | tail -4 | tee -a "$out/sanitizer.log"
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
  done
fi
if [[ $steps == *,torch,* ]]; then
  python3 -m flash_mlir.torch_check ${FLASH_TORCH_ARGS:-} 2>&1 | tee "$out/torch_check.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
fi
if [[ $steps == *,bench,* ]]; then
  python3 -m flash_mlir.bench "$dir" ${FLASH_BENCH_ARGS:-} --markdown "$out/bench.md" 2>&1 | tee "$out/bench.log"
fi
if [[ $steps == *,train,* ]]; then
  python3 -m flash_mlir.train_bench ${FLASH_TRAIN_ARGS:-} --markdown "$out/train.md" 2>&1 | tee "$out/train.log"
fi
if [[ $steps == *,times,* ]]; then
  # shellcheck disable=SC2086
  python3 -m flash_mlir.launch_times "$dir" ${FLASH_TIMES_NAMES:-train_bf16_d128} \
    --seq "${FLASH_TIMES_SEQ:-4096}" 2>&1 | tee "$out/times.log"
fi
exit "$status"
