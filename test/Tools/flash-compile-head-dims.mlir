// flash-compile at large head dims (fuzzer finding F4, docs/Fuzzing.md): the
// tile search skips, before lowering anything to PTX, the configurations
// whose tiles do not fit the chip's shared memory (the GPU pipeline says so
// before it unrolls them) and those whose warp register tiles must spill
// (at D = 256, 128 x 64 tiles on 128 threads keep 256 accumulator floats per
// lane, more than a thread's 255 registers). Each used to be lowered to PTX
// and assembled first: 98 s at D = 256 with a bias on a loaded machine, 77 s
// at D = 1024, 154 s to reject D = 2048; now one kernel is built per kernel
// written, in seconds. Without ptxas (as here) the choice is the one ptxas's
// spill report used to make.
// RUN: rm -rf %t && split-file %s %t
// RUN: timeout 60 flash-compile %t/fits.mlir --chip=sm_80 --ptxas=%t/no-ptxas -o %t/out | FileCheck %s
// CHECK: d256_bias: {{.*}}, tiles 128x64, 256 threads,
// CHECK: d256_bias_general: {{.*}}, tiles 128x64, 256 threads,
// CHECK: d1024: {{.*}}, tiles 16x16, 128 threads,
// CHECK: d1024_general: {{.*}}, tiles 16x16, 128 threads,

// When not even the smallest tiles fit, the pipeline's error names the
// limit, on the op, exit status 1.
// RUN: not flash-compile %t/too-large.mlir --chip=sm_80 --ptxas=%t/no-ptxas -o %t/out 2>&1 | FileCheck %s --check-prefix=LARGE
// RUN: %python %S/../Inputs/expect_exit.py 1 timeout 60 flash-compile %t/too-large.mlir --chip=sm_80 --ptxas=%t/no-ptxas -o %t/out
// LARGE: too-large.mlir:2:8: error: flash-gpu-carve-shared-memory: the tiles need 329984 B of shared memory, more than the 166912 B a CTA may use on sm_80
// LARGE: too-large.mlir:2:8: error: flash-compile: building the kernel failed

//--- fits.mlir
func.func @d256_bias(%q: tensor<1x16x?x256xf16>) -> tensor<1x16x?x256xf16> {
  %o = flash.attention %q, %q, %q bias(%q : tensor<1x16x?x256xf16>) : tensor<1x16x?x256xf16>, tensor<1x16x?x256xf16>, tensor<1x16x?x256xf16> -> tensor<1x16x?x256xf16>
  return %o : tensor<1x16x?x256xf16>
}
func.func @d1024(%q: tensor<1x16x?x1024xf16>) -> tensor<1x16x?x1024xf16> {
  %o = flash.attention %q, %q, %q : tensor<1x16x?x1024xf16>, tensor<1x16x?x1024xf16>, tensor<1x16x?x1024xf16> -> tensor<1x16x?x1024xf16>
  return %o : tensor<1x16x?x1024xf16>
}

//--- too-large.mlir
func.func @d2048(%q: tensor<1x16x?x2048xf16>) -> tensor<1x16x?x2048xf16> {
  %o = flash.attention %q, %q, %q : tensor<1x16x?x2048xf16>, tensor<1x16x?x2048xf16>, tensor<1x16x?x2048xf16> -> tensor<1x16x?x2048xf16>
  return %o : tensor<1x16x?x2048xf16>
}
