// --flash-gpu-fast-exp2: f32 exp2 inside a kernel goes to MUFU
// (ex2.approx.ftz); other element types and host code are left alone.
// RUN: flash-opt %s --flash-gpu-fast-exp2 | FileCheck %s

// CHECK-LABEL: func @kernel
// CHECK: math.exp2 %{{.*}} : f32
// CHECK: gpu.launch
// CHECK: %[[F:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%{{.*}}) : (f32) -> f32
// CHECK-NOT: math.exp2 %{{.*}} : f32
// CHECK: math.exp2 %{{.*}} : f16
// CHECK: memref.store %[[F]]
func.func @kernel(%x: f32, %h: f16, %out: memref<2xf32>, %outh: memref<f16>) {
  %host = math.exp2 %x : f32
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %d = arith.subf %x, %host : f32
    %e = math.exp2 %d : f32
    %eh = math.exp2 %h : f16
    memref.store %eh, %outh[] : memref<f16>
    memref.store %e, %out[%c0] : memref<2xf32>
    gpu.terminator
  }
  return
}
