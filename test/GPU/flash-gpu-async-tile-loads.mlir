// --flash-gpu-async-tile-loads on its own, from the IR that
// --flash-gpu-carve-shared-memory leaves for a reduced forward without
// register tiles: Q before the key-block loop and K, V in it, each a zero
// fill of a carved shared tile and a copy of its valid rows. The loads
// become 16-byte cp.async copies (rows past the valid ones zero-filled),
// one group per tile, waited for just before their first reader; the
// kernel checks at entry that the rows are contiguous and aligned.
// FlashAttention-2's schedule: K (read before V) one block ahead, issued
// before the loop and after its last reader; V at the top of its iteration.
// RUN: flash-opt %s --flash-gpu-async-tile-loads | FileCheck %s
// Two stages: K and V get second copies (the launch's shared memory grows
// from 65536 to 81920 bytes) and are issued a whole iteration ahead, one
// wait and one barrier per iteration.
// RUN: flash-opt %s --flash-gpu-async-tile-loads="load-stages=2" | FileCheck %s --check-prefix=STAGES
// RUN: not flash-opt %s --flash-gpu-async-tile-loads="load-stages=3" 2>&1 | FileCheck %s --check-prefix=BAD
// BAD: error: flash-gpu-async-tile-loads: load-stages must be 1 or 2 (copies of each key-block tile), not 3
// With per-iteration-lanes the copies in the loop take the thread index
// through flashgpu.per_iteration (rows and columns rebuilt per iteration);
// Q's, before the loop, keep the thread's.
// RUN: flash-opt %s --flash-gpu-async-tile-loads="per-iteration-lanes=1" | FileCheck %s --check-prefix=LANES
// LANES: %[[TID:.*]] = gpu.thread_id x
// LANES-NOT: flashgpu.per_iteration
// LANES: arith.divui %[[TID]], %{{.*}} : index
// LANES: nvgpu.device_async_copy
// LANES: scf.for
// LANES: %[[OWN:.*]] = flashgpu.per_iteration %{{.*}}
// LANES: arith.divui %[[OWN]], %{{.*}} : index
// LANES: nvgpu.device_async_copy

// CHECK-LABEL: func.func @forward(
// CHECK: memref.extract_strided_metadata
// CHECK: scf.if
// CHECK-NEXT: llvm.intr.trap
// CHECK: %[[QLOAD:.*]] = scf.execute_region -> !nvgpu.device.async.token {
// CHECK-COUNT-4: nvgpu.device_async_copy {{.*}}, 8, %{{.*}} {bypassL1}
// CHECK: nvgpu.device_async_create_group
// The first K block, issued before the loop.
// CHECK: scf.if
// CHECK: scf.execute_region -> !nvgpu.device.async.token {
// CHECK: nvgpu.device_async_wait %[[QLOAD]] {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier
// CHECK: scf.for
// CHECK-NEXT: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// CHECK-NEXT: gpu.barrier
// V of this block, then S = Q Kᵀ, then K of the next block.
// CHECK: scf.execute_region -> !nvgpu.device.async.token {
// CHECK: flash.contraction = "scores"
// CHECK: nvgpu.device_async_wait
// CHECK-NEXT: gpu.barrier
// CHECK: scf.if
// CHECK: scf.execute_region -> !nvgpu.device.async.token {
// CHECK: flash.contraction = "output"
// CHECK-NOT: linalg.map
// CHECK: } {flash.shared_memory_bytes = 65536 : i64}

// STAGES-LABEL: func.func @forward(
// STAGES: scf.for
// STAGES-NEXT: nvgpu.device_async_wait %{{.*}} {numGroups = 0 : i32}
// STAGES-NEXT: gpu.barrier
// STAGES: arith.remui %{{.*}}, %c2
// STAGES-NOT: gpu.barrier
// STAGES: flash.contraction = "scores"
// STAGES-NOT: gpu.barrier
// STAGES: flash.contraction = "output"
// STAGES: } {flash.shared_memory_bytes = 81920 : i64}

#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map3 = affine_map<(d0, d1) -> (d0, d1)>
#map4 = affine_map<(d0, d1, d2) -> (d2, d1)>
func.func @forward(%arg0: memref<?x64xbf16>, %arg1: memref<?x64xbf16>, %arg2: memref<?x64xbf16>, %arg3: memref<?x64xbf16>, %arg4: index, %arg5: index, %arg6: index, %arg7: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %cst = arith.constant 0.000000e+00 : bf16
  %cst_0 = arith.constant 0.000000e+00 : f32
  %c65536_i32 = arith.constant 65536 : i32
  gpu.launch blocks(%arg8, %arg9, %arg10) in (%arg14 = %arg6, %arg15 = %c1, %arg16 = %c1) threads(%arg11, %arg12, %arg13) in (%arg17 = %c128, %arg18 = %c1, %arg19 = %c1) dynamic_shared_memory_size %c65536_i32 {
    %0 = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %c0_1 = arith.constant 0 : index
    %view = memref.view %0[%c0_1][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
    %memspacecast = memref.memory_space_cast %view : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16>
    %c8192 = arith.constant 8192 : index
    %view_2 = memref.view %0[%c8192][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xf32, #gpu.address_space<workgroup>>
    %memspacecast_3 = memref.memory_space_cast %view_2 : memref<64x64xf32, #gpu.address_space<workgroup>> to memref<64x64xf32>
    %c24576 = arith.constant 24576 : index
    %view_4 = memref.view %0[%c24576][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
    %memspacecast_5 = memref.memory_space_cast %view_4 : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16>
    %c32768 = arith.constant 32768 : index
    %view_6 = memref.view %0[%c32768][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
    %memspacecast_7 = memref.memory_space_cast %view_6 : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16>
    %c40960 = arith.constant 40960 : index
    %view_8 = memref.view %0[%c40960][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xf32, #gpu.address_space<workgroup>>
    %memspacecast_9 = memref.memory_space_cast %view_8 : memref<64x64xf32, #gpu.address_space<workgroup>> to memref<64x64xf32>
    %c57344 = arith.constant 57344 : index
    %view_10 = memref.view %0[%c57344][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
    %memspacecast_11 = memref.memory_space_cast %view_10 : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16>
    %c0_12 = arith.constant 0 : index
    %view_13 = memref.view %0[%c0_12][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
    %memspacecast_14 = memref.memory_space_cast %view_13 : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16>
    %1 = arith.muli %arg8, %c64 : index
    %2 = arith.subi %arg4, %1 : index
    %3 = arith.minsi %2, %c64 : index
    %subview = memref.subview %arg0[%1, 0] [%3, 64] [1, 1] : memref<?x64xbf16> to memref<?x64xbf16, strided<[64, 1], offset: ?>>
    linalg.map outs(%memspacecast : memref<64x64xbf16>)
      (%init: bf16) {
        linalg.yield %cst : bf16
      }
    %subview_15 = memref.subview %memspacecast[0, 0] [%3, 64] [1, 1] : memref<64x64xbf16> to memref<?x64xbf16, strided<[64, 1]>>
    memref.copy %subview, %subview_15 : memref<?x64xbf16, strided<[64, 1], offset: ?>> to memref<?x64xbf16, strided<[64, 1]>>
    linalg.fill ins(%cst_0 : f32) outs(%memspacecast_3 : memref<64x64xf32>)
    scf.for %arg20 = %c0 to %arg7 step %c1 {
      %4 = arith.muli %arg20, %c64 : index
      %5 = arith.subi %arg5, %4 : index
      %6 = arith.minsi %5, %c64 : index
      %subview_18 = memref.subview %arg1[%4, 0] [%6, 64] [1, 1] : memref<?x64xbf16> to memref<?x64xbf16, strided<[64, 1], offset: ?>>
      linalg.map outs(%memspacecast_5 : memref<64x64xbf16>)
        (%init: bf16) {
          linalg.yield %cst : bf16
        }
      %subview_19 = memref.subview %memspacecast_5[0, 0] [%6, 64] [1, 1] : memref<64x64xbf16> to memref<?x64xbf16, strided<[64, 1]>>
      memref.copy %subview_18, %subview_19 : memref<?x64xbf16, strided<[64, 1], offset: ?>> to memref<?x64xbf16, strided<[64, 1]>>
      %subview_20 = memref.subview %arg2[%4, 0] [%6, 64] [1, 1] : memref<?x64xbf16> to memref<?x64xbf16, strided<[64, 1], offset: ?>>
      linalg.map outs(%memspacecast_7 : memref<64x64xbf16>)
        (%init: bf16) {
          linalg.yield %cst : bf16
        }
      %subview_21 = memref.subview %memspacecast_7[0, 0] [%6, 64] [1, 1] : memref<64x64xbf16> to memref<?x64xbf16, strided<[64, 1]>>
      memref.copy %subview_20, %subview_21 : memref<?x64xbf16, strided<[64, 1], offset: ?>> to memref<?x64xbf16, strided<[64, 1]>>
      linalg.fill ins(%cst_0 : f32) outs(%memspacecast_9 : memref<64x64xf32>)
      linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%memspacecast, %memspacecast_5 : memref<64x64xbf16>, memref<64x64xbf16>) outs(%memspacecast_9 : memref<64x64xf32>) attrs =  {flash.contraction = "scores"} {
      ^bb0(%in: bf16, %in_22: bf16, %out: f32):
        %7 = arith.extf %in : bf16 to f32
        %8 = arith.extf %in_22 : bf16 to f32
        %9 = arith.mulf %7, %8 : f32
        %10 = arith.addf %out, %9 : f32
        linalg.yield %10 : f32
      }
      linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%memspacecast_9 : memref<64x64xf32>) outs(%memspacecast_11 : memref<64x64xbf16>) {
      ^bb0(%in: f32, %out: bf16):
        %7 = math.exp2 %in : f32
        %8 = arith.truncf %7 : f32 to bf16
        linalg.yield %8 : bf16
      }
      linalg.generic {indexing_maps = [#map, #map4, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%memspacecast_11, %memspacecast_7 : memref<64x64xbf16>, memref<64x64xbf16>) outs(%memspacecast_3 : memref<64x64xf32>) attrs =  {flash.contraction = "output"} {
      ^bb0(%in: bf16, %in_22: bf16, %out: f32):
        %7 = arith.extf %in : bf16 to f32
        %8 = arith.extf %in_22 : bf16 to f32
        %9 = arith.mulf %7, %8 : f32
        %10 = arith.addf %out, %9 : f32
        linalg.yield %10 : f32
      }
    }
    linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%memspacecast_3 : memref<64x64xf32>) outs(%memspacecast_14 : memref<64x64xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %4 = arith.truncf %in : f32 to bf16
      linalg.yield %4 : bf16
    }
    %subview_16 = memref.subview %memspacecast_14[0, 0] [%3, 64] [1, 1] : memref<64x64xbf16> to memref<?x64xbf16, strided<[64, 1]>>
    %subview_17 = memref.subview %arg3[%1, 0] [%3, 64] [1, 1] : memref<?x64xbf16> to memref<?x64xbf16, strided<[64, 1], offset: ?>>
    memref.copy %subview_16, %subview_17 : memref<?x64xbf16, strided<[64, 1]>> to memref<?x64xbf16, strided<[64, 1], offset: ?>>
    gpu.terminator
  } {flash.shared_memory_bytes = 65536 : i64}
  return
}


