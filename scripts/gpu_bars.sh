#!/usr/bin/env bash
# The issues' speed bars in one place: the grids that issues 13, 14, 15 and 17
# name (bf16 and f16, D = 64 and 128, causal and not, seq 4k and 16k; D = 256;
# decode), built here and timed on the GPU machine in the same run as torch
# SDPA's backends, so that each session measures the same kernels the same way.
#
#   bash scripts/gpu_bars.sh build        here (needs flash-compile): writes
#                                          gpu-bars/ (about 21 MB: carry it)
#   bash scripts/gpu_bars.sh grid fwd|train  prints the grid's MLIR
#   bash scripts/gpu_bars.sh run [GRID..]  on the GPU machine; GRID is any of
#       fwd90    issue 13: sm_90a forwards against cuDNN
#       train90  issue 14: sm_90a fwd+bwd, the atomic backward, against cuDNN
#       det90    issue 14: the deterministic backward against FA2 (bar 1.2x)
#       fwd80    issue 17: sm_80 forwards against FA2 (the PTX, JIT-compiled
#                on a newer GPU)
#       train80  issue 17: sm_80 fwd+bwd, the atomic backward, against FA2
#       decode   issue 15: decode steps (bf16 D = 128, Hq 32, Hkv 8, M = 1)
#       check    flash_mlir.check on every grid kernel
#     (default: all but check). Markdown tables go to $OUT (or /tmp/gpu-bars).
# FLASH_BARS_SEQS (4096,16384) and FLASH_BARS_ROUNDS (3) set the bench.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bars=${FLASH_BARS:-$root/gpu-bars}

# The grid as MLIR: one forward and one training function per combination.
grid_mlir() {
  local kind=$1 dtype d causal attr suffix
  for dtype in bf16 f16; do
    for d in 64 128 256; do
      for causal in 0 1; do
        attr=""; suffix=""
        [ "$causal" = 1 ] && { attr=" {causal}"; suffix="_causal"; }
        local t="tensor<?x?x?x${d}x${dtype}>"
        if [ "$kind" = fwd ]; then
          # D = 256 in f16 only (cuDNN's and FlashAttention's common case).
          [ "$d" = 256 ] && [ "$dtype" = bf16 ] && continue
          echo "func.func @attn_${dtype}_d${d}${suffix}(%q: $t, %k: $t, %v: $t) -> $t {"
          echo "  %o = flash.attention %q, %k, %v${attr} : $t, $t, $t -> $t"
          echo "  return %o : $t"
          echo "}"
        else
          [ "$d" = 256 ] && continue
          echo "func.func @train_${dtype}_d${d}${suffix}(%q: $t, %k: $t, %v: $t, %do: $t) -> ($t, $t, $t, $t) {"
          echo "  %o, %lse = flash.attention %q, %k, %v${attr} : $t, $t, $t -> $t, tensor<?x?x?xf32>"
          echo "  %dq, %dk, %dv = flash.attention_backward %q, %k, %v, %o, %do, %lse${attr} : $t, $t, $t, $t, tensor<?x?x?xf32>"
          echo "  return %o, %dq, %dk, %dv : $t, $t, $t, $t"
          echo "}"
        fi
      done
    done
  done
}

names() { # kind -> comma-separated kernel names of the grid
  grid_mlir "$1" | sed -n 's/^func.func @\([a-z0-9_]*\)(.*/\1/p' |
    if [ "$1" = train ]; then sed 's/.*/&,&_backward/'; else cat; fi |
    paste -sd, -
}

build() {
  source "$root/scripts/setup.sh"
  local compile="$FLASH_BUILD/bin/flash-compile"
  rm -rf "$bars"
  mkdir -p "$bars"
  grid_mlir fwd > "$bars/forward.mlir"
  grid_mlir train > "$bars/training.mlir"
  set -e
  "$compile" --chip sm_90a -o "$bars/fwd90" "$bars/forward.mlir" > "$bars/fwd90.log"
  "$compile" --chip sm_90a --deterministic=false -o "$bars/train90" \
    "$bars/training.mlir" > "$bars/train90.log"
  "$compile" --chip sm_90a -o "$bars/det90" "$bars/training.mlir" > "$bars/det90.log"
  "$compile" --chip sm_80 -o "$bars/fwd80" "$bars/forward.mlir" > "$bars/fwd80.log"
  "$compile" --chip sm_80 --deterministic=false -o "$bars/train80" \
    "$bars/training.mlir" > "$bars/train80.log"
  PYTHONPATH="$root/python" python3 -m flash_mlir.kernels --chip sm_90a \
    --flash-compile "$compile" -o "$bars/decode" bf16:d128 bf16:d128:paged=64 > "$bars/decode.log"
  set +e
  # sm_90a cubins run where the bars are measured; sm_80 keeps its PTX (the
  # H100/H200 JIT-compile it).
  rm -f "$bars"/fwd90/*.ptx "$bars"/train90/*.ptx "$bars"/det90/*.ptx \
    "$bars"/decode/*.ptx
  du -sh "$bars"
}

run() {
  local out=${OUT:-/tmp/gpu-bars} seqs=${FLASH_BARS_SEQS:-4096,16384}
  local rounds=${FLASH_BARS_ROUNDS:-3} status=0 grid
  mkdir -p "$out"
  export PYTHONPATH=$root/python PYTHONUNBUFFERED=1
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  python3 -c 'import torch; print("torch", torch.__version__, "cuDNN", torch.backends.cudnn.version())'
  local grids=("$@")
  [ ${#grids[@]} -gt 0 ] || grids=(fwd90 train90 det90 fwd80 train80 decode)
  for grid in "${grids[@]}"; do
    echo "== $grid ($(date -u +%H:%M:%S))"
    case $grid in
    fwd90 | fwd80)
      python3 -m flash_mlir.bench "$bars/$grid" --seqs "$seqs" --rounds "$rounds" \
        --kernels "$(names fwd)" --markdown "$out/$grid.md" 2>&1 | grep "^|" ;;
    train90 | det90 | train80)
      python3 -m flash_mlir.bench "$bars/$grid" --seqs "$seqs" --rounds "$rounds" \
        --kernels "$(names train)" --markdown "$out/$grid.md" 2>&1 | grep "^|" ;;
    decode)
      python3 -m flash_mlir.decode_bench "$bars/decode" --splits 8 2>&1 | tee "$out/decode.log" ;;
    check)
      for d in fwd90 train90 det90 fwd80 train80; do
        python3 -m flash_mlir.check "$bars/$d" 2>&1 | tail -3 | tee -a "$out/check.log"
        [ "${PIPESTATUS[0]}" = 0 ] || status=1
      done ;;
    *) echo "gpu_bars: unknown grid $grid" >&2; status=2 ;;
    esac
  done
  return "$status"
}

case ${1:-} in
build) build ;;
run) shift; run "$@" ;;
names) names "${2:-fwd}" ;;
grid) grid_mlir "${2:-fwd}" ;;
*) sed -n '2,20p' "$0"; exit 2 ;;
esac
