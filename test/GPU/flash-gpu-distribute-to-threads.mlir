// --flash-gpu-distribute-to-threads on its own: what the earlier steps of
// the mapping left in a launch is spread over its threads. A linalg op
// becomes a parallel loop and, like an element copy, one loop over the
// flattened iteration space from the thread index in steps of the block's
// threads, followed by a barrier; a flash.atomic_add of a tile becomes one flat loop
// of relaxed f32 reductions, four adjacent columns each (the destination's
// rows must be contiguous: checked at run time).
// RUN: flash-opt %s --flash-gpu-distribute-to-threads | FileCheck %s

// CHECK-LABEL: func.func @rest(
// CHECK: gpu.launch
// The copy: 64 x 16 elements over 64 threads.
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: scf.for %[[I:.*]] = %[[TID]] to %c1024{{.*}} step %c64{{.*}} {
// CHECK: arith.remui %[[I]], %c16
// CHECK: memref.load
// CHECK: memref.store
// CHECK: }
// CHECK-NEXT: gpu.barrier
// The scaling generic.
// CHECK: gpu.thread_id x
// CHECK: scf.for
// CHECK: arith.mulf
// CHECK: gpu.barrier
// The atomic addition: a trap unless dQ's rows are contiguous, then 64 x 4
// vector reductions.
// CHECK: memref.extract_strided_metadata %[[DQ:[^ ]*]]
// CHECK: scf.if
// CHECK-NEXT: llvm.intr.trap
// CHECK: scf.for %{{.*}} = %{{.*}} to %c256{{.*}} step %c64{{.*}} {
// CHECK: vector.load %{{.*}} : memref<64x16xf32>, vector<4xf32>
// CHECK: flashgpu.reduce_add %{{.*}}, %[[DQ]][%{{.*}}, %{{.*}}] : vector<4xf32>, memref<64x16xf32, strided<[?, ?], offset: ?>>
// CHECK: gpu.barrier
// CHECK-NOT: linalg.
// CHECK-NOT: flash.atomic_add
func.func @rest(%in: memref<64x16xbf16>, %dq: memref<64x16xf32, strided<[?, ?], offset: ?>>) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %two = arith.constant 2.0 : f32
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %tile = memref.alloc() : memref<64x16xbf16>
    memref.copy %in, %tile : memref<64x16xbf16> to memref<64x16xbf16>
    %sums = memref.alloc() : memref<64x16xf32>
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%tile : memref<64x16xbf16>) outs(%sums : memref<64x16xf32>) {
    ^bb0(%x: bf16, %out: f32):
      %xf = arith.extf %x : bf16 to f32
      %y = arith.mulf %xf, %two : f32
      linalg.yield %y : f32
    }
    flash.atomic_add %sums, %dq : memref<64x16xf32>, memref<64x16xf32, strided<[?, ?], offset: ?>>
    gpu.terminator
  }
  return
}

// A fragment-major destination (flash.atomic_add's fragment_major): one
// scalar reduction per element, at the position of the op's map.
// CHECK-LABEL: func.func @fragment_major(
// CHECK: gpu.barrier
// CHECK-NOT: vector.load
// CHECK: scf.for %{{.*}} = %{{.*}} to %c1024{{.*}} step %c64{{.*}} {
// CHECK: %[[V:.*]] = memref.load %{{.*}} : memref<16x64xf32>
// CHECK: arith.remsi %{{.*}}, %c16
// CHECK: flashgpu.reduce_add %[[V]], %{{.*}}[%{{.*}}, %{{.*}}] : f32, memref<16x64xf32, strided<[?, ?], offset: ?>>
// CHECK: gpu.barrier
// CHECK-NOT: flash.atomic_add
func.func @fragment_major(%sums_in: memref<16x64xf32>, %dq: memref<16x64xf32, strided<[?, ?], offset: ?>>) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %sums = memref.alloc() : memref<16x64xf32>
    memref.copy %sums_in, %sums : memref<16x64xf32> to memref<16x64xf32>
    flash.atomic_add %sums, %dq {fragment_major = 1 : i64} : memref<16x64xf32>, memref<16x64xf32, strided<[?, ?], offset: ?>>
    gpu.terminator
  }
  return
}
