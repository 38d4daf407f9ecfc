// --flash-gpu-lower-tile-mma on its own, from the IR that
// --flash-gpu-carve-shared-memory leaves without register tiles: the tile
// contractions on shared tiles. Each warp takes the 16 x 8 tiles of C in
// turn (64 x 64 on 4 warps: 32 tiles, a loop from the warp index in steps
// of 4), reads A and B with ldmatrix and runs mma.sync over K; S = Q Kᵀ's
// zero fill right before it becomes zero accumulators, O += P V loads and
// stores its C. The atomic backward's dS K (C kept in accumulators, added
// to dQ) adds each lane's two adjacent columns per row straight from the
// accumulators with flashgpu.reduce_add, the staged dSᵀ read transposed.
// RUN: flash-opt %s --split-input-file --flash-gpu-lower-tile-mma | FileCheck %s
// With per-iteration-lanes the lane of each contraction in a loop comes
// from flashgpu.per_iteration, and its fragment coordinates from that; the
// contraction outside a loop keeps the thread's lane.
// RUN: flash-opt %s --split-input-file --flash-gpu-lower-tile-mma="per-iteration-lanes=1" | FileCheck %s --check-prefix=LANES

// LANES-LABEL: func.func @forward(
// LANES: scf.for
// LANES: %[[LANE:.*]] = arith.remui %thread_id_x, %c32 : index
// LANES-NEXT: %[[OWN:.*]] = flashgpu.per_iteration %[[LANE]]
// LANES: arith.remui %[[OWN]], %c8 : index
// LANES: nvgpu.ldmatrix
// LANES: flashgpu.per_iteration
// LANES: nvgpu.ldmatrix %{{.*}} {numTiles = 2 : i32, transpose = true}
// LANES-LABEL: func.func @grad_query_block(
// LANES-NOT: flashgpu.per_iteration
// LANES: flashgpu.reduce_add

// CHECK-LABEL: func.func @forward(
// CHECK-NOT: flashgpu.per_iteration
// CHECK: scf.for
// CHECK-NOT: linalg.fill
// CHECK: %[[WARP:.*]] = arith.divui %{{.*}}, %c32
// CHECK: scf.for %{{.*}} = %[[WARP]] to %c32{{.*}} step %c4{{.*}} {
// CHECK: nvgpu.ldmatrix %{{.*}} {numTiles = 2 : i32, transpose = false}
// CHECK: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = false}
// CHECK: nvvm.mma.sync A[{{.*}}]  B[{{.*}}]  C[%[[Z:.*]], %[[Z]], %[[Z]], %[[Z]]]
// CHECK-COUNT-4: memref.store
// CHECK: gpu.barrier
// P V: V is read transposed, C loaded first.
// CHECK: scf.for %{{.*}} step %c4{{.*}} {
// CHECK-COUNT-4: memref.load
// CHECK: nvgpu.ldmatrix %{{.*}} {numTiles = 2 : i32, transpose = true}
// CHECK: nvvm.mma.sync
// CHECK: gpu.barrier
// CHECK-NOT: flash.contraction

// B (K, [keys, D]) two 8-column tiles per ldmatrix.x4: no .x2 loads.
// CHECK-LABEL: func.func @grad_query_block(
// CHECK-NOT: memref.alloc
// CHECK-NOT: numTiles = 2
// CHECK: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK-NOT: numTiles = 2
// CHECK: nvgpu.ldmatrix %{{.*}} {numTiles = 4 : i32, transpose = true}
// CHECK-NOT: numTiles = 2
// CHECK: nvvm.mma.sync
// CHECK-NOT: nvgpu.ldmatrix
// CHECK: nvvm.mma.sync
// CHECK: scf.if
// CHECK: flashgpu.reduce_add %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : vector<2xf32>, memref<?x64xf32, strided<[64, 1]>>
// CHECK-NOT: flash.atomic_add

// A fragment-major destination (flash.atomic_add's fragment_major = 1): its
// rows as one run (a trap unless the strides are (64, 1)), the lane's
// offset 64 row + 16 col + 4 g + t2 / 2 once, then one scalar reduction
// per accumulator register at the offset plus a constant: 32 apart for a
// pair's two columns, 64 for the row 8 below, 128 per 8-column block.
// CHECK-LABEL: func.func @grad_query_block_fragment_major(
// CHECK: %[[META:.*]], %[[OFF:.*]], %[[SIZES:.*]]:2, %[[STRIDES:.*]]:2 = memref.extract_strided_metadata
// CHECK: arith.cmpi ne, %[[STRIDES]]#0, %c64
// CHECK: llvm.intr.trap
// CHECK: %[[FLAT:.*]] = memref.reinterpret_cast %[[META]] to offset: [%[[OFF]]], sizes: [%{{.*}}], strides: [1]
// CHECK: scf.for
// CHECK: nvvm.mma.sync
// CHECK: scf.if
// CHECK: %[[E0:.*]] = arith.addi %[[LANE:[0-9]+]], %c0
// CHECK-NEXT: flashgpu.reduce_add %{{.*}}, %[[FLAT]][%[[E0]]] : f32, memref<?xf32, strided<[1], offset: ?>>
// CHECK: %[[E1:.*]] = arith.addi %[[LANE]], %c32
// CHECK-NEXT: flashgpu.reduce_add %{{.*}}, %[[FLAT]][%[[E1]]] : f32
// CHECK: arith.addi %[[LANE]], %c128
// CHECK: arith.addi %[[LANE]], %c928
// CHECK: scf.if
// CHECK: arith.addi %[[LANE]], %c64
// CHECK: arith.addi %[[LANE]], %c96
// CHECK: arith.addi %[[LANE]], %c992
// CHECK-NOT: flash.atomic_add

// Groups of 4 (two pairs, sm_90a's vector reductions): the lane's offset
// takes 16 g + 2 t2; one reduction per two 8-column blocks, 256 apart, the
// row 8 below at 128.
// CHECK-LABEL: func.func @grad_query_block_fragment_major_fours(
// CHECK: %[[FLAT4:.*]] = memref.reinterpret_cast
// CHECK: scf.if
// CHECK: %[[F0:.*]] = arith.addi %[[LANE4:[0-9]+]], %c0
// CHECK-NEXT: flashgpu.reduce_add %{{.*}}, %[[FLAT4]][%[[F0]]] : vector<4xf32>, memref<?xf32, strided<[1], offset: ?>>
// CHECK: arith.addi %[[LANE4]], %c256
// CHECK: arith.addi %[[LANE4]], %c512
// CHECK: arith.addi %[[LANE4]], %c768
// CHECK: scf.if
// CHECK: arith.addi %[[LANE4]], %c128
// CHECK: arith.addi %[[LANE4]], %c896
// CHECK-NOT: flash.atomic_add
// CHECK-NOT: memref.alloc

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

// -----
#map = affine_map<(d0, d1, d2) -> (d2, d0)>
#map1 = affine_map<(d0, d1, d2) -> (d2, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @grad_query_block(%arg0: memref<64x64xbf16>, %arg1: memref<64x64xbf16>, %arg2: memref<?x64xf32>, %arg3: index) {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %cst = arith.constant 0.000000e+00 : f32
  %c24576_i32 = arith.constant 24576 : i32
  gpu.launch blocks(%arg4, %arg5, %arg6) in (%arg10 = %c1, %arg11 = %c1, %arg12 = %c1) threads(%arg7, %arg8, %arg9) in (%arg13 = %c128, %arg14 = %c1, %arg15 = %c1) dynamic_shared_memory_size %c24576_i32 {
    %0 = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %c0 = arith.constant 0 : index
    %view = memref.view %0[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
    %memspacecast = memref.memory_space_cast %view : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16>
    %c8192 = arith.constant 8192 : index
    %view_0 = memref.view %0[%c8192][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
    %memspacecast_1 = memref.memory_space_cast %view_0 : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16>
    %c16384 = arith.constant 16384 : index
    %view_2 = memref.view %0[%c16384][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
    %memspacecast_3 = memref.memory_space_cast %view_2 : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16>
    memref.copy %arg0, %memspacecast : memref<64x64xbf16> to memref<64x64xbf16>
    memref.copy %arg1, %memspacecast_3 : memref<64x64xbf16> to memref<64x64xbf16>
    %alloc = memref.alloc() {flash.tile_storage = "accumulators"} : memref<64x64xf32>
    linalg.fill ins(%cst : f32) outs(%alloc : memref<64x64xf32>)
    memref.copy %memspacecast, %memspacecast_1 : memref<64x64xbf16> to memref<64x64xbf16>
    gpu.barrier
    linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%memspacecast_1, %memspacecast_3 : memref<64x64xbf16>, memref<64x64xbf16>) outs(%alloc : memref<64x64xf32>) attrs =  {flash.contraction = "grad_query_block"} {
    ^bb0(%in: bf16, %in_5: bf16, %out: f32):
      %1 = arith.extf %in : bf16 to f32
      %2 = arith.extf %in_5 : bf16 to f32
      %3 = arith.mulf %1, %2 : f32
      %4 = arith.addf %out, %3 : f32
      linalg.yield %4 : f32
    }
    %subview = memref.subview %alloc[0, 0] [%arg3, 64] [1, 1] : memref<64x64xf32> to memref<?x64xf32, strided<[64, 1]>>
    %subview_4 = memref.subview %arg2[0, 0] [%arg3, 64] [1, 1] : memref<?x64xf32> to memref<?x64xf32, strided<[64, 1]>>
    flash.atomic_add %subview, %subview_4 : memref<?x64xf32, strided<[64, 1]>>, memref<?x64xf32, strided<[64, 1]>>
    gpu.terminator
  } {flash.shared_memory_bytes = 24576 : i64}
  return
}

// -----
#map = affine_map<(d0, d1, d2) -> (d2, d0)>
#map1 = affine_map<(d0, d1, d2) -> (d2, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @grad_query_block_fragment_major(%arg0: memref<64x64xbf16>, %arg1: memref<64x64xbf16>, %arg2: memref<?x64xf32>, %arg3: index, %rows16: index) {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %cst = arith.constant 0.000000e+00 : f32
  %c24576_i32 = arith.constant 24576 : i32
  gpu.launch blocks(%arg4, %arg5, %arg6) in (%arg10 = %c1, %arg11 = %c1, %arg12 = %c1) threads(%arg7, %arg8, %arg9) in (%arg13 = %c128, %arg14 = %c1, %arg15 = %c1) dynamic_shared_memory_size %c24576_i32 {
    %0 = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %c0 = arith.constant 0 : index
    %view = memref.view %0[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
    %memspacecast = memref.memory_space_cast %view : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16>
    %c8192 = arith.constant 8192 : index
    %view_0 = memref.view %0[%c8192][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
    %memspacecast_1 = memref.memory_space_cast %view_0 : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16>
    %c16384 = arith.constant 16384 : index
    %view_2 = memref.view %0[%c16384][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
    %memspacecast_3 = memref.memory_space_cast %view_2 : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16>
    memref.copy %arg0, %memspacecast : memref<64x64xbf16> to memref<64x64xbf16>
    memref.copy %arg1, %memspacecast_3 : memref<64x64xbf16> to memref<64x64xbf16>
    %alloc = memref.alloc() {flash.tile_storage = "accumulators"} : memref<64x64xf32>
    linalg.fill ins(%cst : f32) outs(%alloc : memref<64x64xf32>)
    memref.copy %memspacecast, %memspacecast_1 : memref<64x64xbf16> to memref<64x64xbf16>
    gpu.barrier
    linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%memspacecast_1, %memspacecast_3 : memref<64x64xbf16>, memref<64x64xbf16>) outs(%alloc : memref<64x64xf32>) attrs =  {flash.contraction = "grad_query_block"} {
    ^bb0(%in: bf16, %in_5: bf16, %out: f32):
      %1 = arith.extf %in : bf16 to f32
      %2 = arith.extf %in_5 : bf16 to f32
      %3 = arith.mulf %1, %2 : f32
      %4 = arith.addf %out, %3 : f32
      linalg.yield %4 : f32
    }
    %subview = memref.subview %alloc[0, 0] [%arg3, 64] [1, 1] : memref<64x64xf32> to memref<?x64xf32, strided<[64, 1]>>
    %subview_4 = memref.subview %arg2[0, 0] [%rows16, 64] [1, 1] : memref<?x64xf32> to memref<?x64xf32, strided<[64, 1]>>
    flash.atomic_add %subview, %subview_4 {fragment_major = 1 : i64} : memref<?x64xf32, strided<[64, 1]>>, memref<?x64xf32, strided<[64, 1]>>
    gpu.terminator
  } {flash.shared_memory_bytes = 24576 : i64}
  return
}

// -----
#map = affine_map<(d0, d1, d2) -> (d2, d0)>
#map1 = affine_map<(d0, d1, d2) -> (d2, d1)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @grad_query_block_fragment_major_fours(%arg0: memref<64x64xbf16>, %arg1: memref<64x64xbf16>, %arg2: memref<?x64xf32>, %arg3: index, %rows16: index) {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %cst = arith.constant 0.000000e+00 : f32
  %c24576_i32 = arith.constant 24576 : i32
  gpu.launch blocks(%arg4, %arg5, %arg6) in (%arg10 = %c1, %arg11 = %c1, %arg12 = %c1) threads(%arg7, %arg8, %arg9) in (%arg13 = %c128, %arg14 = %c1, %arg15 = %c1) dynamic_shared_memory_size %c24576_i32 {
    %0 = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %c0 = arith.constant 0 : index
    %view = memref.view %0[%c0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
    %memspacecast = memref.memory_space_cast %view : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16>
    %c8192 = arith.constant 8192 : index
    %view_0 = memref.view %0[%c8192][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
    %memspacecast_1 = memref.memory_space_cast %view_0 : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16>
    %c16384 = arith.constant 16384 : index
    %view_2 = memref.view %0[%c16384][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
    %memspacecast_3 = memref.memory_space_cast %view_2 : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16>
    memref.copy %arg0, %memspacecast : memref<64x64xbf16> to memref<64x64xbf16>
    memref.copy %arg1, %memspacecast_3 : memref<64x64xbf16> to memref<64x64xbf16>
    %alloc = memref.alloc() {flash.tile_storage = "accumulators"} : memref<64x64xf32>
    linalg.fill ins(%cst : f32) outs(%alloc : memref<64x64xf32>)
    memref.copy %memspacecast, %memspacecast_1 : memref<64x64xbf16> to memref<64x64xbf16>
    gpu.barrier
    linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%memspacecast_1, %memspacecast_3 : memref<64x64xbf16>, memref<64x64xbf16>) outs(%alloc : memref<64x64xf32>) attrs =  {flash.contraction = "grad_query_block"} {
    ^bb0(%in: bf16, %in_5: bf16, %out: f32):
      %1 = arith.extf %in : bf16 to f32
      %2 = arith.extf %in_5 : bf16 to f32
      %3 = arith.mulf %1, %2 : f32
      %4 = arith.addf %out, %3 : f32
      linalg.yield %4 : f32
    }
    %subview = memref.subview %alloc[0, 0] [%arg3, 64] [1, 1] : memref<64x64xf32> to memref<?x64xf32, strided<[64, 1]>>
    %subview_4 = memref.subview %arg2[0, 0] [%rows16, 64] [1, 1] : memref<?x64xf32> to memref<?x64xf32, strided<[64, 1]>>
    flash.atomic_add %subview, %subview_4 {fragment_major = 4 : i64} : memref<?x64xf32, strided<[64, 1]>>, memref<?x64xf32, strided<[64, 1]>>
    gpu.terminator
  } {flash.shared_memory_bytes = 24576 : i64}
  return
}


