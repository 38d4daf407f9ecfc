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

// With emulate-every=2 every second f32 exp2 of a block is computed on the
// FMA pipes: x clamped to -127, rounded by adding and subtracting 1.5 * 2^23,
// a degree-4 polynomial in f = x - round(x) (constant term exactly 1), and
// round(x) added to its exponent bits. The others stay on MUFU.
// RUN: flash-opt %s --flash-gpu-fast-exp2=emulate-every=2 | FileCheck %s --check-prefix=EMU
// EMU-LABEL: func @four
// EMU: gpu.launch
// EMU: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%[[X0:.*]]) : (f32) -> f32
// EMU-NOT: llvm.call_intrinsic
// EMU: %[[C:.*]] = arith.maximumf %[[X1:.*]], %{{.*}} : f32
// EMU-NEXT: %[[SHIFTER:.*]] = arith.constant 0x4B400000 : f32
// EMU-NEXT: %[[SH:.*]] = arith.addf %[[C]], %[[SHIFTER]] : f32
// EMU-NEXT: %[[R:.*]] = arith.subf %[[SH]], %[[SHIFTER]] : f32
// EMU-NEXT: %[[F:.*]] = arith.subf %[[C]], %[[R]] : f32
// EMU-COUNT-4: math.fma %{{.*}}, %[[F]], %{{.*}} : f32
// EMU: %[[SHI:.*]] = arith.bitcast %[[SH]] : f32 to i32
// EMU: %[[E:.*]] = arith.shli %[[SHI]], %{{.*}} : i32
// EMU: %[[PI:.*]] = arith.bitcast %{{.*}} : f32 to i32
// EMU: %[[B:.*]] = arith.addi %[[PI]], %[[E]] : i32
// EMU: arith.bitcast %[[B]] : i32 to f32
// EMU: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// EMU-NOT: llvm.call_intrinsic
// EMU: arith.maximumf
// EMU: gpu.terminator
func.func @four(%x: f32, %out: memref<4xf32>) {
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %y = arith.negf %x : f32
    %e0 = math.exp2 %x : f32
    %e1 = math.exp2 %y : f32
    %e2 = math.exp2 %e0 : f32
    %e3 = math.exp2 %e1 : f32
    memref.store %e0, %out[%c0] : memref<4xf32>
    memref.store %e1, %out[%c1] : memref<4xf32>
    memref.store %e2, %out[%c2] : memref<4xf32>
    memref.store %e3, %out[%c3] : memref<4xf32>
    gpu.terminator
  }
  return
}
