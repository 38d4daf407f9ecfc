// RUN: flash-opt %s --flash-tile-attention="target=sm_80 report=true" -split-input-file -verify-diagnostics -o /dev/null
// RUN: flash-opt %s --flash-tile-attention="target=sm_90a report=true" -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=SM90
// RUN: flash-opt %s --flash-tile-attention="target=cpu report=true" -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=CPU
// RUN: flash-opt %s --flash-tile-attention="target=cpu block-rows=16 report=true" -split-input-file -o /dev/null 2>&1 | FileCheck %s --check-prefix=FORCED
// RUN: not flash-opt %s --flash-tile-attention="target=sm_70" 2>&1 | FileCheck %s --check-prefix=BADTARGET
// RUN: not flash-opt %s --flash-tile-attention="block-cols=-4" 2>&1 | FileCheck %s --check-prefix=BADTILE
// RUN: not flash-opt %s --flash-tile-attention="kv-block-cols=-1" 2>&1 | FileCheck %s --check-prefix=BADTILE
// RUN: %python %S/../Inputs/expect_exit.py 1 flash-opt %s --flash-tile-attention="target=sm_70"
// RUN: %python %S/../Inputs/expect_exit.py 1 flash-opt %s --flash-tile-attention="kv-block-rows=-1"

// Tensor-core rule on sm_80/sm_90a: Br x Dv accumulator and Br x Bc scores in
// the registers of 128 threads, Q and two K/V stages in shared memory.
// The paper's rule for cpu, Bc = ceil(M / 4d) and Br = min(Bc, d) with the
// 32 KiB L1 as M.

// SM90: Br = 128, Bc = 128 (tensor-core rule, target sm_90a); tiles use 81920 of 232448 on-chip bytes
// CPU: Br = 64, Bc = 64 (paper rule, target cpu)
// FORCED: Br = 16, Bc = 64 (forced rule, target cpu)
// BADTARGET: for the --target option: Cannot find option named 'sm_70'!
// BADTILE: error: flash-tile-attention: block-rows, block-cols, kv-block-rows and kv-block-cols must be between 1 and 65536 (or 0 for the target's choice)
func.func @d64(%q: tensor<1x16x4096x64xf16>) -> tensor<1x16x4096x64xf16> {
  // expected-remark @+1 {{tiled with Br = 128, Bc = 128 (tensor-core rule, target sm_80); tiles use 81920 of 167936 on-chip bytes; HBM bytes per (batch, head): 34603008 tiled vs 136314880 naive (naive / tiled = 3.9)}}
  %o = flash.attention %q, %q, %q : tensor<1x16x4096x64xf16>, tensor<1x16x4096x64xf16>, tensor<1x16x4096x64xf16> -> tensor<1x16x4096x64xf16>
  return %o : tensor<1x16x4096x64xf16>
}

// -----

// SM90: Br = 128, Bc = 64 (tensor-core rule, target sm_90a)
// CPU: Br = 32, Bc = 32 (paper rule, target cpu)
func.func @d128(%q: tensor<1x16x4096x128xbf16>) -> tensor<1x16x4096x128xbf16> {
  // expected-remark @+1 {{tiled with Br = 128, Bc = 64 (tensor-core rule, target sm_80); tiles use 98304 of 167936 on-chip bytes; HBM bytes per (batch, head): 69206016 tiled vs 138412032 naive (naive / tiled = 2.0)}}
  %o = flash.attention %q, %q, %q : tensor<1x16x4096x128xbf16>, tensor<1x16x4096x128xbf16>, tensor<1x16x4096x128xbf16> -> tensor<1x16x4096x128xbf16>
  return %o : tensor<1x16x4096x128xbf16>
}

// -----

// SM90: Br = 64, Bc = 64 (tensor-core rule, target sm_90a)
func.func @d256_dynamic(%q: tensor<1x16x?x256xf16>) -> tensor<1x16x?x256xf16> {
  // expected-remark @+1 {{tiled with Br = 64, Bc = 64 (tensor-core rule, target sm_80); tiles use 163840 of 167936 on-chip bytes; HBM traffic per (batch, head): Theta(N^2 d^2 / M_sram) tiled vs Theta(N d + N^2) naive (sequence lengths are dynamic)}}
  %o = flash.attention %q, %q, %q : tensor<1x16x?x256xf16>, tensor<1x16x?x256xf16>, tensor<1x16x?x256xf16> -> tensor<1x16x?x256xf16>
  return %o : tensor<1x16x?x256xf16>
}
