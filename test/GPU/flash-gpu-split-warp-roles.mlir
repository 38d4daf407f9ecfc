// --flash-gpu-split-warp-roles on its own, from the contract that
// --flash-map-tiles-to-gpu{warp-specialize} leaves: a launch tagged
// flash.warp_specialized = C (consumer threads) whose body holds the
// producer's scf.if (flash.warp_role = "producer") followed by the
// consumers' code. Everything after the producer becomes the consumers'
// branch (threads 0 ... C - 1), their block barriers named barrier 1 over C
// threads (and so is its flashgpu.last_arrival's), registers move with
// setmaxnreg, the block grows by the producer's
// 128 threads and the tag goes (a second run changes nothing).
// RUN: flash-opt %s --allow-unregistered-dialect --flash-gpu-split-warp-roles --split-input-file --verify-diagnostics | FileCheck %s
// RUN: flash-opt %s --allow-unregistered-dialect --flash-gpu-split-warp-roles --flash-gpu-split-warp-roles --split-input-file --verify-diagnostics | FileCheck %s
// With ping-pong the two consumer warpgroups' score MMAs take turns.
// RUN: flash-opt %s --allow-unregistered-dialect --flash-gpu-split-warp-roles=ping-pong=1 --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=PING

// CHECK-LABEL: func.func @roles(
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{[^ ]*}} = %c384,
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: scf.if %{{.*}} {
// CHECK-NEXT: nvvm.setmaxregister decrease 24
// CHECK-NEXT: "test.produce"()
// CHECK: } {flash.warp_role = "producer"}
// CHECK: %[[CTID:.*]] = gpu.thread_id x
// CHECK: %[[CONSUMER:.*]] = arith.cmpi ult, %[[CTID]], %c256
// CHECK: scf.if %[[CONSUMER]] {
// CHECK-NEXT: nvvm.setmaxregister increase 240
// CHECK-NOT: gpu.barrier
// CHECK: nvvm.barrier id = %c1_i32{{[_0-9]*}} number_of_threads = %c256_i32
// CHECK: scf.for
// CHECK-NOT: nvvm.barrier
// CHECK: flashgpu.warpgroup_mma
// CHECK: "test.use"
// The split-KV kernel's arrival at its end names the consumers' barrier.
// CHECK: flashgpu.last_arrival %{{.*}} {barrier_id = 1 : i32, barrier_threads = 256 : i32}
// CHECK: } {flash.warp_role = "consumer"}
// CHECK-NEXT: gpu.terminator
// CHECK-NOT: flash.warp_specialized
// CHECK-LABEL: func.func @untagged(
// CHECK-NOT: setmaxregister
// CHECK: gpu.barrier

// PING-LABEL: func.func @roles(
// PING: } {flash.warp_role = "producer"}
// PING: scf.if %{{.*}} {
// PING-NEXT: nvvm.setmaxregister increase 240
// PING: %[[GROUP:.*]] = arith.index_castui %{{.*}} : index to i32
// PING: %[[OWN:.*]] = arith.addi %[[GROUP]], %c2_i32
// Warpgroup 1 lets warpgroup 0 take the first turn.
// PING: arith.cmpi eq, %[[GROUP]], %c1_i32{{[_0-9]*}}
// PING: nvvm.barrier.arrive id = %c2_i32{{[_0-9]*}}
// PING: scf.for
// PING: nvvm.barrier id = %[[OWN]] number_of_threads = %c256_i32
// PING-NEXT: flashgpu.warpgroup_mma
// PING: nvvm.barrier.arrive id = %{{.*}} number_of_threads = %c256_i32
// Warpgroup 0 takes the last arrival.
// PING: arith.cmpi eq, %[[GROUP]], %c0_i32{{[_0-9]*}}
// PING: nvvm.barrier id = %c2_i32{{.*}} number_of_threads = %c256_i32
// PING: } {flash.warp_role = "consumer"}

func.func @roles(%out: memref<?xf32>, %counters: memref<?xi32>) {
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
    %c0 = arith.constant 0 : index
    %c4 = arith.constant 4 : index
    %n = arith.constant 256 : index
    %tid = gpu.thread_id x
    %producer = arith.cmpi uge, %tid, %n : index
    scf.if %producer {
      "test.produce"() : () -> ()
    } {flash.warp_role = "producer"}
    %desc = arith.constant 0 : i32
    gpu.barrier
    scf.for %j = %c0 to %c4 step %c1 {
      %s = flashgpu.warpgroup_mma a_desc(%desc) b_desc(%desc) {n = 16 : i64, k_steps = 2 : i64, slices = 1 : i64, element_type = bf16, a_rows = 128 : i64, b_rows = 16 : i64, b_k_major, flash.contraction = "scores"} : vector<8xf32>
      "test.use"(%s) : (vector<8xf32>) -> ()
    }
    %last = flashgpu.last_arrival %counters[%c0] of %c4 : memref<?xi32>
    "test.merge"(%last) : (i1) -> ()
    gpu.terminator
  } {flash.warp_specialized = 256 : i64}
  return
}

func.func @untagged() {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    gpu.barrier
    gpu.terminator
  }
  return
}

// -----

func.func @no_producer() {
  %c1 = arith.constant 1 : index
  // expected-error @below {{flash-gpu-split-warp-roles: a warp-specialised launch without its producer}}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    gpu.terminator
  } {flash.warp_specialized = 128 : i64}
  return
}
