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
echo "== flash-opt --flash-decompose-attention (reference semantics as naive linalg)"
"$opt" "$input" --flash-decompose-attention -o "$work/decomposed.mlir"
echo "   ops: $(ops "$work/decomposed.mlir")"

echo
echo "== flash-opt --flash-cpu-pipeline (bufferize, loops, LLVM dialect)"
start=$(date +%s%N)
"$opt" "$input" --flash-cpu-pipeline -o "$work/llvm.mlir"
end=$(date +%s%N)
echo "   compiled in $(( (end - start) / 1000000 )) ms; ops: $(ops "$work/llvm.mlir")"

echo
echo "== mlir-runner -e main (CPU)"
"$LLVM_BIN/mlir-runner" "$work/llvm.mlir" -e main -entry-point-result=void \
  -shared-libs="/usr/lib/llvm-22/lib/libmlir_runner_utils.so,/usr/lib/llvm-22/lib/libmlir_c_runner_utils.so" |
  sed 's/^Unranked Memref base@ = 0x[0-9a-f]* /   memref /; s/^\([^ ]\)/   \1/'
echo
echo "The first memref is O[0, 0, 0, 0:8] of the fused op; the second is"
echo "max |frontend - fused| over all of O (0 or a few ulps: same function)."
echo "Not yet in the pipeline: fusion of the frontend form, tiling, GPU code."
