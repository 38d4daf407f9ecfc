// The backward has no GPU mapping yet: a located error from the pipeline and
// flash-compile, not a crash or a wrong kernel.
// RUN: not flash-opt %s --flash-gpu-pipeline 2>&1 | FileCheck %s
// RUN: not flash-compile %s -o %t 2>&1 | FileCheck %s --check-prefix=COMPILE

func.func @bwd(%q: tensor<1x2x20x16xf16>, %o: tensor<1x2x20x16xf16>, %lse: tensor<1x2x20xf32>) -> tensor<1x2x20x16xf16> {
  // CHECK: backward-not-mapped.mlir:[[@LINE+2]]:19: error: flash-map-tiles-to-gpu maps the bufferized 3-D scf.forall (batch, head, query block) of the tiled forward; this one has rank {{[0-9]}} (the tiled backward has no GPU mapping yet)
  // COMPILE: backward-not-mapped.mlir:[[@LINE+1]]:19: warning: flash-compile: flash.attention_backward has no GPU kernel yet
  %dq, %dk, %dv = flash.attention_backward %q, %q, %q, %o, %o, %lse : tensor<1x2x20x16xf16>, tensor<1x2x20x16xf16>, tensor<1x2x20x16xf16>, tensor<1x2x20x16xf16>, tensor<1x2x20xf32>
  return %dq : tensor<1x2x20x16xf16>
}
