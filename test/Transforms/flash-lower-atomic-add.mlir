// --flash-lower-atomic-add: a bufferized flash.atomic_add becomes a parallel
// loop over the tile of memref.atomic_rmw addf; a tensor-form one is an error.
// RUN: flash-opt %s -split-input-file --flash-lower-atomic-add -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func @rows
// CHECK-SAME: (%[[T:.*]]: memref<?x64xf32>, %[[D:.*]]: memref<?x64xf32, strided<[?, ?], offset: ?>>)
// CHECK: %[[ROWS:.*]] = memref.dim %[[T]], %c0
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) = (%c0, %c0) to (%[[ROWS]], %c64) step (%c1, %c1)
// CHECK: %[[V:.*]] = memref.load %[[T]][%[[I]], %[[J]]]
// CHECK: memref.atomic_rmw addf %[[V]], %[[D]][%[[I]], %[[J]]]
// CHECK-NOT: flash.atomic_add
func.func @rows(%t: memref<?x64xf32>, %d: memref<?x64xf32, strided<[?, ?], offset: ?>>) {
  flash.atomic_add %t, %d : memref<?x64xf32>, memref<?x64xf32, strided<[?, ?], offset: ?>>
  return
}

// -----

func.func @tensor_tile(%t: tensor<16x64xf32>, %d: memref<16x64xf32>) {
  // expected-error @+1 {{flash-lower-atomic-add: the tile is not bufferized}}
  flash.atomic_add %t, %d : tensor<16x64xf32>, memref<16x64xf32>
  return
}
