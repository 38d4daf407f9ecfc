// --flash-gpu-dependent-launches on its own: a launch tagged
// flash.dependent_launch (the split-KV merge's) waits for the grid before it
// at its start, and that launch lets its dependents start once each of its
// CTAs has begun (programmatic dependent launch; both do nothing under a
// plain launch). Untagged launches are left alone.
// RUN: flash-opt %s --split-input-file --flash-gpu-dependent-launches -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @pair(
// CHECK: gpu.launch
// CHECK-NEXT: nvvm.griddepcontrol launch_dependents
// CHECK-NEXT: memref.store %{{.*}}, %{{.*}}[%c0] : memref<4xf32>
// CHECK: gpu.launch
// CHECK-NEXT: nvvm.griddepcontrol wait
// CHECK-NEXT: memref.load %{{.*}}[%c0] : memref<4xf32>
// CHECK: } {flash.dependent_launch}
// CHECK: gpu.launch
// CHECK-NOT: nvvm.griddepcontrol
// CHECK: return
func.func @pair(%n: index, %partial: memref<4xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = arith.constant 1.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    memref.store %x, %partial[%c0] : memref<4xf32>
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = memref.load %partial[%c0] : memref<4xf32>
    memref.store %v, %out[%c0] : memref<4xf32>
    gpu.terminator
  } {flash.dependent_launch}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    memref.store %x, %out[%c0] : memref<4xf32>
    gpu.terminator
  }
  return
}

// -----

func.func @alone(%out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = arith.constant 1.0 : f32
  // expected-error @+1 {{flash-gpu-dependent-launches: a launch tagged flash.dependent_launch needs a launch before it in its block}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    memref.store %x, %out[%c0] : memref<4xf32>
    gpu.terminator
  } {flash.dependent_launch}
  return
}
