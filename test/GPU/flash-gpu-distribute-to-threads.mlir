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

// A tile stored out of the launch (a copy into memory the kernel is
// passed) whose rows are 16-byte multiples: where both sides' rows are
// contiguous and 16-byte aligned at run time, one 16-byte vector per thread
// and iteration (64 x 128 bf16: 1024 vectors over 256 threads), else
// element by element.
// CHECK-LABEL: func.func @store_out(
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: memref.extract_aligned_pointer_as_index %[[TILE:.*]] :
// CHECK: memref.extract_aligned_pointer_as_index %[[OUT:[^ ]*]] :
// CHECK: scf.if %{{.*}} {
// CHECK: %[[VIEW:.*]] = memref.reinterpret_cast %{{.*}} to offset: [%{{.*}}], sizes: [64, 128], strides: [%{{.*}}, 1]
// CHECK: scf.for %[[I:.*]] = %[[TID]] to %c1024{{.*}} step %c256{{.*}} {
// CHECK: %[[COL:.*]] = arith.remui %[[I]], %c16
// CHECK: %[[ROW:.*]] = arith.divui %[[I]], %c16
// CHECK: %[[C:.*]] = arith.muli %[[COL]], %c8
// CHECK: %[[V:.*]] = vector.load %[[TILE]][%[[ROW]], %[[C]]] {alignment = 16 : i64} : memref<64x128xbf16>, vector<8xbf16>
// CHECK: vector.store %[[V]], %[[VIEW]][%[[ROW]], %[[C]]] {alignment = 16 : i64} : memref<64x128xbf16, strided<[?, 1], offset: ?>>, vector<8xbf16>
// CHECK: } else {
// CHECK: scf.for %{{.*}} = %[[TID]] to %c8192{{.*}} step %c256{{.*}} {
// CHECK: memref.load %[[TILE]]
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK: gpu.barrier
// A load into the launch stays an element copy.
// CHECK-NOT: vector.load
// CHECK: gpu.barrier
func.func @store_out(%in: memref<64x128xbf16, strided<[?, ?], offset: ?>>, %out: memref<64x128xbf16, strided<[?, ?], offset: ?>>) {
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
    %tile = memref.alloc() : memref<64x128xbf16>
    memref.copy %tile, %out : memref<64x128xbf16> to memref<64x128xbf16, strided<[?, ?], offset: ?>>
    memref.copy %in, %tile : memref<64x128xbf16, strided<[?, ?], offset: ?>> to memref<64x128xbf16>
    gpu.terminator
  }
  return
}

// A row sum (D = rowsum(dO O) of the atomic backward's pre-pass) over the
// block's warps: warp w takes rows w, w + 8, ..., lane l the columns
// l, l + 32, ... of a row (consecutive lanes, consecutive columns), the
// lanes' partial sums combined by xor shuffles, and lane 0 adds the total
// to the output. The reduced element's body is cloned per column.
// CHECK-LABEL: func.func @row_sum(
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[WARP:.*]] = arith.divui %[[TID]], %c32
// CHECK: %[[LANE:.*]] = arith.remui %[[TID]], %c32
// CHECK: scf.for %[[ROW:.*]] = %[[WARP]] to %c64{{.*}} step %c8{{.*}} {
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[PART:.*]] = scf.for %[[COL:.*]] = %[[LANE]] to %c128{{.*}} step %c32{{.*}} iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (f32) {
// CHECK: memref.load %{{.*}}[%[[ROW]], %[[COL]]] : memref<64x128xbf16>
// CHECK: memref.load %{{.*}}[%[[ROW]], %[[COL]]] : memref<64x128xbf16>
// CHECK: arith.mulf
// CHECK: %[[SUM:.*]] = arith.addf %[[ACC]], %{{.*}} : f32
// CHECK: scf.yield %[[SUM]] : f32
// CHECK: gpu.shuffle xor %[[PART]], %c16_i32, %c32_i32{{.*}} : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c8_i32, %c32_i32{{.*}} : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c4_i32, %c32_i32{{.*}} : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c2_i32, %c32_i32{{.*}} : f32
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32, %c32_i32{{.*}} : f32
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %c0
// CHECK: scf.if %[[FIRST]] {
// CHECK: %[[OLD:.*]] = memref.load %[[D:.*]][%[[ROW]]] : memref<64xf32>
// CHECK: %[[NEW:.*]] = arith.addf %[[OLD]], %{{.*}} : f32
// CHECK: memref.store %[[NEW]], %[[D]][%[[ROW]]] : memref<64xf32>
// CHECK: gpu.barrier
// A product over the columns is not a sum or maximum: one thread per row.
// CHECK: %[[TID2:.*]] = gpu.thread_id x
// CHECK: scf.for %{{.*}} = %[[TID2]] to %c64{{.*}} step %c256{{.*}} {
// CHECK: scf.for
// CHECK: arith.mulf
// CHECK: gpu.barrier
func.func @row_sum(%o: memref<64x128xbf16>, %do: memref<64x128xbf16>, %d: memref<64xf32>, %p: memref<64xf32>) {
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
    %ot = memref.alloc() : memref<64x128xbf16>
    %dot = memref.alloc() : memref<64x128xbf16>
    %dt = memref.alloc() : memref<64xf32>
    %pt = memref.alloc() : memref<64xf32>
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%ot, %dot : memref<64x128xbf16>, memref<64x128xbf16>) outs(%dt : memref<64xf32>) {
    ^bb0(%a: bf16, %b: bf16, %acc: f32):
      %af = arith.extf %a : bf16 to f32
      %bf = arith.extf %b : bf16 to f32
      %m = arith.mulf %af, %bf : f32
      %s = arith.addf %m, %acc : f32
      linalg.yield %s : f32
    }
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%ot : memref<64x128xbf16>) outs(%pt : memref<64xf32>) {
    ^bb0(%a: bf16, %acc: f32):
      %af = arith.extf %a : bf16 to f32
      %m = arith.mulf %af, %acc : f32
      linalg.yield %m : f32
    }
    gpu.terminator
  }
  return
}
