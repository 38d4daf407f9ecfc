// Kernel files are named after the op's function, and each op writes
// <name> and <name>_general: when two ops' files would share a name the run
// fails before writing anything, naming both, rather than one kernel
// silently replacing the other's files.
// RUN: rm -rf %t && not flash-compile %s --chip sm_80 -o %t 2>&1 | FileCheck %s
// RUN: %python %S/../Inputs/expect_exit.py 1 flash-compile %s --chip sm_80 -o %t
// RUN: not ls %t

// CHECK: flash-compile-names.mlir:[[@LINE+9]]:8: error: flash-compile: the kernel files 'f_general' of this op in @f_general would overwrite those of an op in @f; rename one of the functions
// CHECK: flash-compile-names.mlir:[[@LINE+3]]:8: note: the other op

func.func @f(%q: tensor<1x2x64x64xf16>) -> tensor<1x2x64x64xf16> {
  %o = flash.attention %q, %q, %q {causal} : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16> -> tensor<1x2x64x64xf16>
  return %o : tensor<1x2x64x64xf16>
}

func.func @f_general(%q: tensor<1x2x64x32xbf16>) -> tensor<1x2x64x32xbf16> {
  %o = flash.attention %q, %q, %q : tensor<1x2x64x32xbf16>, tensor<1x2x64x32xbf16>, tensor<1x2x64x32xbf16> -> tensor<1x2x64x32xbf16>
  return %o : tensor<1x2x64x32xbf16>
}
