// flash-compile does not build packed variable-length sequences into GPU
// kernels yet: a located error that says so (forward and backward).
// RUN: not flash-compile %s --chip sm_90a -o %t 2>&1 | FileCheck %s
// RUN: not flash-compile %S/Inputs/varlen-backward.mlir --chip sm_90a -o %t 2>&1 | FileCheck %s --check-prefix=BWD
// CHECK: flash-compile-varlen.mlir:9:{{[0-9]+}}: error: flash-compile: cu_seqlens (packed variable-length sequences) are not built into GPU kernels yet; the CPU pipeline runs them
// BWD: varlen-backward.mlir:2:{{[0-9]+}}: error: flash-compile: cu_seqlens (packed variable-length sequences) are not built into GPU kernels yet; the CPU pipeline runs them

func.func @prefill(%q: tensor<8x?x64xbf16>, %k: tensor<2x?x64xbf16>, %cq: tensor<?xi32>, %ck: tensor<?xi32>) -> tensor<8x?x64xbf16> {
  %o = flash.attention %q, %k, %k cu_seqlens_q(%cq : tensor<?xi32>) cu_seqlens_k(%ck : tensor<?xi32>) {causal} : tensor<8x?x64xbf16>, tensor<2x?x64xbf16>, tensor<2x?x64xbf16> -> tensor<8x?x64xbf16>
  return %o : tensor<8x?x64xbf16>
}
