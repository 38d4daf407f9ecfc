// --flash-gpu-split-warp-roles: how the SM's registers are shared. One
// consumer warpgroup whose shared memory lets two CTAs share an SM gets 232
// registers per consumer thread (the producer keeps 24) and the launch
// bound of two CTAs (flashgpu.ctas_per_sm, made .minnctapersm after
// outlining); with more shared memory one CTA's 256 threads may all have
// 255 registers and nothing moves. A persistent producer (it walks the
// tiles, in 32-bit arithmetic) keeps 56, and two consumer warpgroups get 224
// (168 x 384 registers at launch).
// RUN: flash-opt %s --allow-unregistered-dialect --flash-gpu-split-warp-roles | FileCheck %s

// CHECK-LABEL: func.func @two_per_sm(
// CHECK: gpu.launch
// CHECK-NEXT: flashgpu.ctas_per_sm 2
// CHECK: nvvm.setmaxregister decrease 24
// CHECK: nvvm.setmaxregister increase 232
// CHECK-LABEL: func.func @one_per_sm(
// CHECK-NOT: flashgpu.ctas_per_sm
// CHECK-NOT: nvvm.setmaxregister
// CHECK: "test.consume"
// CHECK-LABEL: func.func @persistent_one_group(
// CHECK-NOT: flashgpu.ctas_per_sm
// CHECK-NOT: nvvm.setmaxregister
// CHECK: "test.consume"
// CHECK-LABEL: func.func @persistent_two_groups(
// CHECK-NOT: flashgpu.ctas_per_sm
// CHECK: nvvm.setmaxregister decrease 56
// CHECK: nvvm.setmaxregister increase 224

func.func @two_per_sm() {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %n = arith.constant 128 : index
    %tid = gpu.thread_id x
    %producer = arith.cmpi uge, %tid, %n : index
    scf.if %producer {
      "test.produce"() : () -> ()
    } {flash.warp_role = "producer"}
    "test.consume"() : () -> ()
    gpu.terminator
  } {flash.shared_memory_bytes = 100000 : i64, flash.warp_specialized = 128 : i64}
  return
}

func.func @one_per_sm() {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %n = arith.constant 128 : index
    %tid = gpu.thread_id x
    %producer = arith.cmpi uge, %tid, %n : index
    scf.if %producer {
      "test.produce"() : () -> ()
    } {flash.warp_role = "producer"}
    "test.consume"() : () -> ()
    gpu.terminator
  } {flash.shared_memory_bytes = 200000 : i64, flash.warp_specialized = 128 : i64}
  return
}

func.func @persistent_one_group() {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c128, %sy = %c1, %sz = %c1) {
    %n = arith.constant 128 : index
    %tid = gpu.thread_id x
    %producer = arith.cmpi uge, %tid, %n : index
    scf.if %producer {
      "test.produce"() : () -> ()
    } {flash.warp_role = "producer"}
    "test.consume"() : () -> ()
    gpu.terminator
  } {flash.persistent, flash.shared_memory_bytes = 100000 : i64, flash.warp_specialized = 128 : i64}
  return
}

func.func @persistent_two_groups() {
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
    %n = arith.constant 256 : index
    %tid = gpu.thread_id x
    %producer = arith.cmpi uge, %tid, %n : index
    scf.if %producer {
      "test.produce"() : () -> ()
    } {flash.warp_role = "producer"}
    "test.consume"() : () -> ()
    gpu.terminator
  } {flash.persistent, flash.shared_memory_bytes = 160000 : i64, flash.warp_specialized = 256 : i64}
  return
}
