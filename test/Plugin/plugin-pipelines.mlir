// The dialect plugin lets upstream mlir-opt parse flash ops; with the pass
// plugin it tiles them and lowers them to the LLVM dialect, printing what
// flash-opt prints, and the result runs.
// RUN: mlir-opt %s --load-dialect-plugin=%flash_plugin | FileCheck %s --check-prefix=PARSE
// RUN: mlir-opt %s --load-dialect-plugin=%flash_plugin --load-pass-plugin=%flash_plugin \
// RUN:   --pass-pipeline="builtin.module(flash-tile-attention)" > %t.tiled.upstream
// RUN: flash-opt %s --flash-tile-attention > %t.tiled.flash
// RUN: diff %t.tiled.upstream %t.tiled.flash
// RUN: mlir-opt %s --load-dialect-plugin=%flash_plugin --load-pass-plugin=%flash_plugin \
// RUN:   --pass-pipeline="builtin.module(flash-cpu-pipeline)" > %t.cpu.upstream
// RUN: flash-opt %s --flash-cpu-pipeline > %t.cpu.flash
// RUN: diff %t.cpu.upstream %t.cpu.flash
// RUN: FileCheck %s --check-prefix=LLVM < %t.cpu.upstream
// RUN: mlir-runner %t.cpu.upstream -e main -entry-point-result=void \
// RUN:   -shared-libs=%mlir_runner_libs | FileCheck %s --check-prefix=EXEC

// PARSE: flash.attention %{{.*}}, %{{.*}}, %{{.*}} {scale = 5.000000e-01 : f32}
// LLVM-NOT: flash.
// LLVM: llvm.func @main()

func.func private @printMemrefF32(tensor<*xf32>)

// Q = 0: every score is 0, each row of P is 1/4 and O is the mean of V's
// rows, exactly.
func.func @main() {
  %q = arith.constant dense<0.0> : tensor<1x1x2x4xf32>
  %k = arith.constant dense<[[[[1.0, 2.0, 3.0, 4.0], [0.5, 0.5, 0.5, 0.5], [-1.0, 0.0, 1.0, 2.0], [3.0, 1.0, 4.0, 1.0]]]]> : tensor<1x1x4x4xf32>
  %v = arith.constant dense<[[[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0], [13.0, 14.0, 15.0, 16.0]]]]> : tensor<1x1x4x4xf32>
  %o = flash.attention %q, %k, %v {scale = 0.5 : f32} : tensor<1x1x2x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32> -> tensor<1x1x2x4xf32>
  %u = tensor.cast %o : tensor<1x1x2x4xf32> to tensor<*xf32>
  // EXEC: rank = 4 offset = 0 sizes = [1, 1, 2, 4]
  // EXEC: [7,   8,   9,   10]
  // EXEC-NEXT: [7,   8,   9,   10]
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()
  return
}
