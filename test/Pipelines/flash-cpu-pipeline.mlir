// RUN: flash-opt %s --flash-cpu-pipeline | FileCheck %s --check-prefix=LLVM
// RUN: flash-opt %s --flash-cpu-pipeline | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs | FileCheck %s --check-prefix=EXEC

// The pipeline leaves nothing but the LLVM dialect, for flash ops and for
// the upstream tensor-level ops around them (linalg.softmax included).
// LLVM-NOT: flash.
// LLVM-NOT: linalg.
// LLVM-NOT: tensor.
// LLVM-NOT: memref.
// LLVM-NOT: bufferization.
// LLVM-NOT: scf.
// LLVM-NOT: math.
// LLVM-LABEL: llvm.func @main()
// LLVM-NOT: func.func

func.func private @printMemrefF32(tensor<*xf32>)

// linalg.softmax with known probabilities: softmax([0, ln 2, ln 5]) is
// [1/8, 2/8, 5/8] and a constant row is uniform.
func.func @main() {
  %s = arith.constant dense<[[0.0, 0.693147181, 1.609437912], [-1.0, -1.0, -1.0]]> : tensor<2x3xf32>
  %e = tensor.empty() : tensor<2x3xf32>
  %p = linalg.softmax dimension(1) ins(%s : tensor<2x3xf32>) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
  %u = tensor.cast %p : tensor<2x3xf32> to tensor<*xf32>
  // EXEC: rank = 2 offset = 0 sizes = [2, 3]
  // EXEC-NEXT: [0.125,   0.25,   0.625]
  // EXEC-NEXT: [0.333333,   0.333333,   0.333333]
  call @printMemrefF32(%u) : (tensor<*xf32>) -> ()

  // A fully masked row through flash.attention: O = 0 and LSE = -inf. Row 1
  // sees key 0 only, so it returns V[0] = [1, 2] with LSE = 0.5 * 1.
  %q = arith.constant dense<[[1.0, 0.0], [1.0, 0.0]]> : tensor<2x2xf32>
  %k = arith.constant dense<[[1.0, 1.0], [2.0, 2.0]]> : tensor<2x2xf32>
  %v = arith.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %m = arith.constant dense<[[false, false], [true, false]]> : tensor<2x2xi1>
  %o, %lse = flash.attention %q, %k, %v mask(%m : tensor<2x2xi1>) {scale = 0.5 : f32}
      : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32> -> tensor<2x2xf32>, tensor<2xf32>
  %ou = tensor.cast %o : tensor<2x2xf32> to tensor<*xf32>
  // EXEC: rank = 2 offset = 0 sizes = [2, 2]
  // EXEC-NEXT: [0,   0]
  // EXEC-NEXT: [1,   2]
  call @printMemrefF32(%ou) : (tensor<*xf32>) -> ()
  %lu = tensor.cast %lse : tensor<2xf32> to tensor<*xf32>
  // EXEC: rank = 1 offset = 0 sizes = [2]
  // EXEC-NEXT: [-inf,  0.5]
  call @printMemrefF32(%lu) : (tensor<*xf32>) -> ()
  return
}
