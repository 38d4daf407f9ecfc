// --flash-gpu-async-tile-loads with TMA, on its own, from the IR that
// --flash-gpu-carve-shared-memory leaves for a reduced sm_90a forward
// (warpgroup MMA: Q, K and V swizzled; K and V 16 x 64 tiles of the
// function's arguments, their rows clipped at the tensor's end). With two
// stages K and V come by TMA: the function gets the tensor-map buffer as a
// last argument (described by flash.tensor_maps), thread 0 initialises one
// mbarrier per tile and copy and issues each tile's box against it, every
// thread waits for its iteration's phase. Q (loaded once) stays on
// cp.async.
// RUN: flash-opt %s --flash-gpu-async-tile-loads="load-stages=2 tma-loads=1" | FileCheck %s
// With warp-specialize a producer warpgroup issues every iteration's boxes
// into a ring of two copies guarded by full/empty mbarriers; the consumers'
// loop only waits and releases, without a block barrier.
// RUN: flash-opt %s --flash-gpu-async-tile-loads="load-stages=2 tma-loads=1 warp-specialize=1" | FileCheck %s --check-prefix=WS

// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %[[MAPS:[^:]*]]: memref<?xi8> {flash.tensor_maps = [{box_cols = 64 : i64, box_rows = 16 : i64, row_dim = 0 : i64, swizzle_bytes = 128 : i64, tensor = 1 : i64}, {box_cols = 64 : i64, box_rows = 16 : i64, row_dim = 0 : i64, swizzle_bytes = 128 : i64, tensor = 2 : i64}]}
// CHECK: gpu.launch
// CHECK: memref.extract_aligned_pointer_as_index %[[MAPS]]
// CHECK: %[[LEADER:.*]] = arith.cmpi eq, %{{.*}}, %c0
// CHECK: %[[BARS:.*]] = builtin.unrealized_conversion_cast %{{.*}} : memref<4xi64, #gpu.address_space<workgroup>> to !nvgpu.mbarrier.group
// CHECK-COUNT-4: nvgpu.mbarrier.init %[[BARS]][%{{.*}}], %{{.*}}, predicate = %[[LEADER]]
// CHECK: nvgpu.device_async_copy
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[BARS]][%{{.*}}], %c2048, predicate = %[[LEADER]]
// CHECK: nvgpu.tma.async.load %{{.*}}[%{{.*}}, %{{.*}}], %[[BARS]][%{{.*}}] to %{{.*}}, predicate = %[[LEADER]] : <tensor = memref<16x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b
// CHECK: scf.for
// CHECK: nvgpu.tma.async.load
// CHECK: nvgpu.mbarrier.try_wait.parity %[[BARS]]
// CHECK: nvgpu.mbarrier.try_wait.parity %[[BARS]]
// CHECK: flash.contraction = "scores"
// CHECK: flash.contraction = "output"
// CHECK: } {flash.register_rows = 64 : i64, flash.shared_memory_bytes = 16416 : i64, flash.wgmma}

// WS-LABEL: func.func @forward(
// WS: scf.if
// WS: scf.for
// WS: nvgpu.mbarrier.try_wait.parity
// WS: nvgpu.tma.async.load
// WS: nvgpu.tma.async.load
// WS: } {flash.warp_role = "producer"}
// WS: scf.for
// WS-NOT: gpu.barrier
// WS: nvgpu.mbarrier.try_wait.parity
// WS: flash.contraction = "output"
// WS: nvgpu.mbarrier.arrive %{{.*}}[%{{.*}}] : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
// WS: } {flash.register_rows = 64 : i64, flash.shared_memory_bytes = 16432 : i64, flash.warp_specialized = 128 : i64, flash.wgmma}

#map = affine_map<(d0, d1, d2) -> (d0, d2)>
#map1 = affine_map<(d0, d1, d2) -> (d1, d2)>
#map2 = affine_map<(d0, d1, d2) -> (d0, d1)>
#map3 = affine_map<(d0, d1) -> (d0, d1)>
#map4 = affine_map<(d0, d1, d2) -> (d2, d1)>
func.func @forward(%arg0: memref<?x64xbf16>, %arg1: memref<?x64xbf16>, %arg2: memref<?x64xbf16>, %arg3: memref<?x64xbf16>, %arg4: index, %arg5: index, %arg6: index) {
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %c12288_i32 = arith.constant 12288 : i32
  gpu.launch blocks(%arg7, %arg8, %arg9) in (%arg13 = %arg5, %arg14 = %c1, %arg15 = %c1) threads(%arg10, %arg11, %arg12) in (%arg16 = %c128, %arg17 = %c1, %arg18 = %c1) dynamic_shared_memory_size %c12288_i32 {
    %0 = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
    %intptr = memref.extract_aligned_pointer_as_index %0 : memref<?xi8, #gpu.address_space<workgroup>> -> index
    %c0 = arith.constant 0 : index
    %c1024 = arith.constant 1024 : index
    %1 = arith.remui %intptr, %c1024 : index
    %2 = arith.cmpi ne, %1, %c0 : index
    scf.if %2 {
      llvm.intr.trap
    }
    %c0_0 = arith.constant 0 : index
    %view = memref.view %0[%c0_0][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<64x64xbf16, #gpu.address_space<workgroup>>
    %memspacecast = memref.memory_space_cast %view {flash.swizzled_128b} : memref<64x64xbf16, #gpu.address_space<workgroup>> to memref<64x64xbf16>
    %c8192 = arith.constant 8192 : index
    %view_1 = memref.view %0[%c8192][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<16x64xbf16, #gpu.address_space<workgroup>>
    %memspacecast_2 = memref.memory_space_cast %view_1 {flash.swizzled_128b} : memref<16x64xbf16, #gpu.address_space<workgroup>> to memref<16x64xbf16>
    %c10240 = arith.constant 10240 : index
    %view_3 = memref.view %0[%c10240][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<16x64xbf16, #gpu.address_space<workgroup>>
    %memspacecast_4 = memref.memory_space_cast %view_3 {flash.swizzled_128b} : memref<16x64xbf16, #gpu.address_space<workgroup>> to memref<16x64xbf16>
    %c0_5 = arith.constant 0 : index
    %c1_6 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %cst = arith.constant 0.000000e+00 : bf16
    %cst_7 = arith.constant 0.000000e+00 : f32
    %dim = memref.dim %arg1, %c0_5 : memref<?x64xbf16>
    %3 = arith.muli %arg7, %c64 : index
    %4 = arith.subi %arg4, %3 : index
    %5 = arith.minsi %4, %c64 : index
    %subview = memref.subview %arg0[%3, 0] [%5, 64] [1, 1] : memref<?x64xbf16> to memref<?x64xbf16, strided<[64, 1], offset: ?>>
    linalg.map outs(%memspacecast : memref<64x64xbf16>)
      (%init: bf16) {
        linalg.yield %cst : bf16
      }
    %subview_8 = memref.subview %memspacecast[0, 0] [%5, 64] [1, 1] : memref<64x64xbf16> to memref<?x64xbf16, strided<[64, 1]>>
    memref.copy %subview, %subview_8 : memref<?x64xbf16, strided<[64, 1], offset: ?>> to memref<?x64xbf16, strided<[64, 1]>>
    %alloc = memref.alloc() {flash.tile_storage = "registers"} : memref<64x64xf32>
    linalg.fill ins(%cst_7 : f32) outs(%alloc : memref<64x64xf32>)
    %alloc_9 = memref.alloc() {flash.tile_storage = "registers"} : memref<64x16xf32>
    %alloc_10 = memref.alloc() {flash.tile_storage = "registers"} : memref<64x16xbf16>
    scf.for %arg19 = %c0_5 to %arg6 step %c1_6 {
      %6 = arith.muli %arg19, %c16 : index
      %7 = arith.subi %dim, %6 : index
      %8 = arith.minsi %7, %c16 : index
      %subview_14 = memref.subview %arg1[%6, 0] [%8, 64] [1, 1] : memref<?x64xbf16> to memref<?x64xbf16, strided<[64, 1], offset: ?>>
      linalg.map outs(%memspacecast_2 : memref<16x64xbf16>)
        (%init: bf16) {
          linalg.yield %cst : bf16
        }
      %subview_15 = memref.subview %memspacecast_2[0, 0] [%8, 64] [1, 1] : memref<16x64xbf16> to memref<?x64xbf16, strided<[64, 1]>>
      memref.copy %subview_14, %subview_15 : memref<?x64xbf16, strided<[64, 1], offset: ?>> to memref<?x64xbf16, strided<[64, 1]>>
      %subview_16 = memref.subview %arg2[%6, 0] [%8, 64] [1, 1] : memref<?x64xbf16> to memref<?x64xbf16, strided<[64, 1], offset: ?>>
      linalg.map outs(%memspacecast_4 : memref<16x64xbf16>)
        (%init: bf16) {
          linalg.yield %cst : bf16
        }
      %subview_17 = memref.subview %memspacecast_4[0, 0] [%8, 64] [1, 1] : memref<16x64xbf16> to memref<?x64xbf16, strided<[64, 1]>>
      memref.copy %subview_16, %subview_17 : memref<?x64xbf16, strided<[64, 1], offset: ?>> to memref<?x64xbf16, strided<[64, 1]>>
      linalg.fill ins(%cst_7 : f32) outs(%alloc_9 : memref<64x16xf32>)
      linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%memspacecast, %memspacecast_2 : memref<64x64xbf16>, memref<16x64xbf16>) outs(%alloc_9 : memref<64x16xf32>) attrs =  {flash.contraction = "scores"} {
      ^bb0(%in: bf16, %in_18: bf16, %out: f32):
        %9 = arith.extf %in : bf16 to f32
        %10 = arith.extf %in_18 : bf16 to f32
        %11 = arith.mulf %9, %10 : f32
        %12 = arith.addf %out, %11 : f32
        linalg.yield %12 : f32
      }
      linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%alloc_9 : memref<64x16xf32>) outs(%alloc_10 : memref<64x16xbf16>) {
      ^bb0(%in: f32, %out: bf16):
        %9 = math.exp2 %in : f32
        %10 = arith.truncf %9 : f32 to bf16
        linalg.yield %10 : bf16
      }
      linalg.generic {indexing_maps = [#map, #map4, #map2], iterator_types = ["parallel", "parallel", "reduction"]} ins(%alloc_10, %memspacecast_4 : memref<64x16xbf16>, memref<16x64xbf16>) outs(%alloc : memref<64x64xf32>) attrs =  {flash.contraction = "output"} {
      ^bb0(%in: bf16, %in_18: bf16, %out: f32):
        %9 = arith.extf %in : bf16 to f32
        %10 = arith.extf %in_18 : bf16 to f32
        %11 = arith.mulf %9, %10 : f32
        %12 = arith.addf %out, %11 : f32
        linalg.yield %12 : f32
      }
    }
    %alloc_11 = memref.alloc() {flash.tile_storage = "registers"} : memref<64x64xbf16>
    linalg.generic {indexing_maps = [#map3, #map3], iterator_types = ["parallel", "parallel"]} ins(%alloc : memref<64x64xf32>) outs(%alloc_11 : memref<64x64xbf16>) {
    ^bb0(%in: f32, %out: bf16):
      %6 = arith.truncf %in : f32 to bf16
      linalg.yield %6 : bf16
    }
    %subview_12 = memref.subview %alloc_11[0, 0] [%5, 64] [1, 1] : memref<64x64xbf16> to memref<?x64xbf16, strided<[64, 1]>>
    %subview_13 = memref.subview %arg3[%3, 0] [%5, 64] [1, 1] : memref<?x64xbf16> to memref<?x64xbf16, strided<[64, 1], offset: ?>>
    memref.copy %subview_12, %subview_13 : memref<?x64xbf16, strided<[64, 1]>> to memref<?x64xbf16, strided<[64, 1], offset: ?>>
    gpu.terminator
  } {flash.register_rows = 64 : i64, flash.shared_memory_bytes = 12288 : i64, flash.wgmma}
  return
}


