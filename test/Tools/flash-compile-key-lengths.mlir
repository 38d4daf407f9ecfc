// flash-compile does not build key_lengths (nor block_table, which needs
// them) into GPU kernels yet: a located error that says so.
// RUN: not flash-compile %s --chip sm_90a -o %t 2>&1 | FileCheck %s
// CHECK: flash-compile-key-lengths.mlir:7:{{[0-9]+}}: error: flash-compile: key_lengths and block_table (ragged and paged KV caches) are not built into GPU kernels yet; the CPU pipeline runs them

func.func @decode(%q: tensor<?x8x1x64xbf16>, %k: tensor<?x2x?x64xbf16>, %l: tensor<?xi32>) -> tensor<?x8x1x64xbf16> {
  %o = flash.attention %q, %k, %k key_lengths(%l : tensor<?xi32>) : tensor<?x8x1x64xbf16>, tensor<?x2x?x64xbf16>, tensor<?x2x?x64xbf16> -> tensor<?x8x1x64xbf16>
  return %o : tensor<?x8x1x64xbf16>
}
