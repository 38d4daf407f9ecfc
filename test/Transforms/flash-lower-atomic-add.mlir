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

// fragment_major: each element at the position of the op's map, (r, c) ->
// (16 (r floordiv 16) + o floordiv 64, o mod 64) with o = 128 (c floordiv 8)
// + 64 ((r mod 16) floordiv 8) + 32 (c mod 2) + 4 (r mod 8) + (c mod 8)
// floordiv 2 here (W = 64, scalar groups); checked by the CPU float64 tests
// of the atomic backward (test/Integration/attention-backward.mlir).
// CHECK-LABEL: func @fragment_major
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) =
// CHECK: %[[V:.*]] = memref.load %{{.*}}[%[[I]], %[[J]]]
// CHECK-NOT: memref.atomic_rmw addf %[[V]], %{{.*}}[%[[I]], %[[J]]]
// CHECK: arith.remsi %{{.*}}, %c16
// CHECK: memref.atomic_rmw addf %[[V]], %{{.*}}[%{{.*}}, %{{.*}}]
func.func @fragment_major(%t: memref<?x64xf32>, %d: memref<?x64xf32, strided<[?, ?], offset: ?>>) {
  flash.atomic_add %t, %d {fragment_major = 1 : i64} : memref<?x64xf32>, memref<?x64xf32, strided<[?, ?], offset: ?>>
  return
}

// -----

func.func @tensor_tile(%t: tensor<16x64xf32>, %d: memref<16x64xf32>) {
  // expected-error @+1 {{flash-lower-atomic-add: the tile is not bufferized}}
  flash.atomic_add %t, %d : tensor<16x64xf32>, memref<16x64xf32>
  return
}
