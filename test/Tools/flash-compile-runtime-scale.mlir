// The GPU kernels compile the scale in: a runtime_scale is a located error
// naming the way out, with exit 1 and nothing written.
// RUN: rm -rf %t && not flash-compile %s --chip sm_90a -o %t 2>&1 | FileCheck %s
// RUN: %python %S/../Inputs/expect_exit.py 1 flash-compile %s --chip sm_90a -o %t
// RUN: not ls %t

// CHECK: flash-compile-runtime-scale.mlir:[[@LINE+2]]:8: error: flash-compile: a scale known only at run time (runtime_scale) is not supported by the GPU kernels; give the scale as a constant
func.func @f(%q: tensor<?x?x?x64xf16>, %s: f32) -> tensor<?x?x?x64xf16> {
  %o = flash.attention %q, %q, %q runtime_scale(%s) : tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16>, tensor<?x?x?x64xf16> -> tensor<?x?x?x64xf16>
  return %o : tensor<?x?x?x64xf16>
}
