#!/usr/bin/env bash
# The main job on the shipped example: compile an attention block as far as
# the flash-mlir pipeline goes today and run it on the CPU, saying what each
# stage did. Usage: scripts/demo.sh [INPUT.mlir]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

input=${1:-$FLASH_ROOT/examples/attention_block.mlir}
opt=$FLASH_BUILD/bin/flash-opt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

ops() { # histogram of the ops in an MLIR file, by dialect
  grep -v '^ *//' "$1" |
    grep -oE '\b(flash|linalg|tensor|arith|math|memref|scf|cf|func|llvm)\.[a-z_0-9.]+' |
    sed 's/\..*//' | sort | uniq -c | sort -rn | awk '{printf "%s %s, ", $1, $2}' |
    sed 's/, $//'
}

echo
echo "== input: $input"
echo "   ops: $(ops "$input")"

echo
echo "== flash-opt --flash-fuse-attention=report=true (find matmul -> softmax -> matmul)"
"$opt" "$input" --flash-fuse-attention=report=true -o "$work/fused.mlir" 2>&1 |
  grep -E 'remark' | sed 's/^.*remark: /   /'
echo "   ops: $(ops "$work/fused.mlir")"

echo
echo "== flash-opt --flash-tile-attention=report=true (online softmax, Br x Bc tiles)"
"$opt" "$work/fused.mlir" --flash-tile-attention=report=true -o "$work/tiled.mlir" 2>&1 |
  grep -E 'remark' | sed 's/^.*remark: /   /'
echo "   ops: $(ops "$work/tiled.mlir")"
echo "   largest tensor types: $(grep -oE 'tensor<[0-9x]+x[a-z0-9]+>' "$work/tiled.mlir" |
  awk -F'[<x>]' '{n=1; for(i=2;i<NF-1;i++) n*=$i; print n, $0}' | sort -rn | uniq | head -3 |
  awk '{print $2}' | paste -sd ' ')"

echo
echo "== flash-opt --flash-cpu-pipeline (bufferize, loops, LLVM dialect)"
start=$(date +%s%N)
"$opt" "$work/fused.mlir" --flash-cpu-pipeline -o "$work/llvm.mlir"
end=$(date +%s%N)
echo "   compiled in $(( (end - start) / 1000000 )) ms; ops: $(ops "$work/llvm.mlir")"

echo
echo "== mlir-runner -e main (CPU)"
"$LLVM_BIN/mlir-runner" "$work/llvm.mlir" -e main -entry-point-result=void \
  -shared-libs="/usr/lib/llvm-22/lib/libmlir_runner_utils.so,/usr/lib/llvm-22/lib/libmlir_c_runner_utils.so" |
  sed 's/^Unranked Memref base@ = 0x[0-9a-f]* /   memref /; s/^\([^ ]\)/   \1/'
echo
echo "The first memref is O[0, 0, 0, 0:8] of the hand-written flash.attention; the second"
echo "is max |frontend - hand-written| over all of O: both were fused and tiled, so it is"
echo "0 or a few ulps. On a GPU machine the same file goes through flash-compile"
echo "(scripts/gpu_build.sh, scripts/gpu_run.sh); training steps through"
echo "--flash-fuse-attention-backward (test/Transforms/flash-fuse-attention-backward*.mlir)."
