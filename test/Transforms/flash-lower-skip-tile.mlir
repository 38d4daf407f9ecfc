// --flash-lower-skip-tile: the ops after a flash.skip_tile in its block (but
// the terminator) go under scf.if on its negated condition; before
// bufferization, where those ops define values the terminator uses, it is
// an error and nothing changes.
// RUN: flash-opt %s -split-input-file --flash-lower-skip-tile -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func @iteration
// CHECK: scf.forall (%[[I:.*]]) in (%{{.*}})
// CHECK:   %[[ROWS:.*]] = memref.load %{{.*}}[%[[I]]]
// CHECK:   %[[EMPTY:.*]] = arith.cmpi eq, %[[ROWS]], %c0
// CHECK:   %[[TRUE:.*]] = arith.constant true
// CHECK:   %[[NOT:.*]] = arith.xori %[[EMPTY]], %[[TRUE]]
// CHECK:   scf.if %[[NOT]] {
// CHECK:     %[[ALLOC:.*]] = memref.alloc(%[[ROWS]])
// CHECK:     linalg.fill ins(%{{.*}} : f32) outs(%[[ALLOC]]
// CHECK:     memref.copy %[[ALLOC]]
// CHECK:   }
// CHECK-NEXT: }
// CHECK-NOT: flash.skip_tile
func.func @iteration(%rows: memref<?xindex>, %out: memref<?x?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  scf.forall (%i) in (%n) {
    %r = memref.load %rows[%i] : memref<?xindex>
    %empty = arith.cmpi eq, %r, %c0 : index
    flash.skip_tile %empty
    %tile = memref.alloc(%r) : memref<?xf32>
    linalg.fill ins(%one : f32) outs(%tile : memref<?xf32>)
    %dst = memref.subview %out[%i, 0] [1, %r] [1, 1] : memref<?x?xf32> to memref<?xf32, strided<[1], offset: ?>>
    memref.copy %tile, %dst : memref<?xf32> to memref<?xf32, strided<[1], offset: ?>>
  }
  return
}

// -----

func.func @tensors(%rows: tensor<?xindex>, %out: tensor<?x4xf32>, %n: index) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %r = scf.forall (%i) in (%n) shared_outs(%o = %out) -> (tensor<?x4xf32>) {
    %k = tensor.extract %rows[%i] : tensor<?xindex>
    %empty = arith.cmpi eq, %k, %c0 : index
    // expected-error @below {{flash.skip_tile: the rest of the block defines}}
    flash.skip_tile %empty
    %t = tensor.empty() : tensor<1x4xf32>
    %f = linalg.fill ins(%one : f32) outs(%t : tensor<1x4xf32>) -> tensor<1x4xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %f into %o[%i, 0] [1, 4] [1, 1] : tensor<1x4xf32> into tensor<?x4xf32>
    }
  }
  return %r : tensor<?x4xf32>
}
