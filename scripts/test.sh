#!/usr/bin/env bash
# Runs every flash-mlir test (the lit suite: FileCheck tests of each pass and
# op, diagnostics tests, and executing tests compared with a float64
# reference) after setting up and building. Ends with "N passed, M failed".
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
# The rest of the default target (the mlir-opt plugin): test/Install installs
# the whole build tree.
ninja -C "$FLASH_BUILD" | grep -v '^\[' || true

log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
"$LLVM_BIN/lit" -v "$FLASH_BUILD/test" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e

count() { sed -n "s/^ *$1: *\([0-9]*\).*/\1/p" "$log" | head -n 1; }
passed=$(( $(count 'Passed' || true)+0 + $(count 'Expectedly Failed' || true)+0 ))
failed=$(( $(count 'Failed' || true)+0 + $(count 'Unresolved' || true)+0 +
           $(count 'Timed Out' || true)+0 + $(count 'Unexpectedly Passed' || true)+0 ))
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
  failed=1 # lit itself failed (e.g. a configuration error)
fi
echo "$passed passed, $failed failed"
exit "$status"
