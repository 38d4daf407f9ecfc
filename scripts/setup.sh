#!/usr/bin/env bash
# Brings a Debian 12 machine to a built flash-mlir: installs the missing apt
# packages (as root, or through sudo), configures the build directory once and
# rebuilds incrementally. Sourced or run by scripts/demo.sh and scripts/test.sh.
set -euo pipefail

FLASH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FLASH_BUILD=${FLASH_BUILD_DIR:-$FLASH_ROOT/build}
LLVM_BIN=/usr/lib/llvm-22/bin

packages=(cmake ninja-build g++ ccache python3 python3-numpy
          llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -f "$FLASH_BUILD/build.ninja" ]; then
  echo "setup: configuring $FLASH_BUILD"
  cmake -G Ninja -S "$FLASH_ROOT" -B "$FLASH_BUILD" \
    -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE=/usr/bin/python3 >/dev/null
fi
echo "setup: building (ninja -C $FLASH_BUILD)"
ninja -C "$FLASH_BUILD" flash-opt flash-compile | grep -v '^\[' || true
test -x "$FLASH_BUILD/bin/flash-opt" && test -x "$FLASH_BUILD/bin/flash-compile"
