// A ptxas that exits 0 without writing a cubin (here /bin/true) is an error,
// not a manifest naming a cubin that is not there (issue 18); a cubin left
// by an earlier run does not count for this one.
// RUN: rm -rf %t && mkdir -p %t && echo stale > %t/f.cubin
// RUN: not flash-compile %s --chip sm_80 --ptxas=/bin/true -o %t 2>&1 | FileCheck %s
// RUN: not ls %t/f.cubin %t/f.json
// RUN: %python %S/../Inputs/expect_exit.py 1 flash-compile %s --chip sm_80 --ptxas=/bin/true -o %t

// CHECK: flash-compile-ptxas.mlir:[[@LINE+3]]:8: error: flash-compile: /bin/true exited 0 but wrote no cubin at {{.*}}f.cubin

func.func @f(%q: tensor<1x2x64x64xf16>) -> tensor<1x2x64x64xf16> {
  %o = flash.attention %q, %q, %q {causal} : tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16> -> tensor<1x2x64x64xf16>
  return %o : tensor<1x2x64x64xf16>
}
